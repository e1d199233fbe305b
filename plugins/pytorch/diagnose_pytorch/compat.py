"""Every torch internal the plugin uses, and the torch versions it exists in. The plugin supports
torch 2.5.1 through 2.14 (scripts/torch_versions.sh runs it on 2.5.1 and 2.14.1 beside the
pinned 2.13.0); nothing else in it imports a private torch module (torch._*, torch.utils._*).

Two kinds of internals:
- those unchanged over that range are named in STABLE and imported on first use
  (`compat.counters`): Dynamo and Inductor take seconds to import, which an eager run does
  without;
- those that changed within it are probed: `feature(name)` says whether the feature resting on
  them (FEATURES) works on the running torch and, when not, why. Every probed feature is
  listed in the run's status.json (`features`), and the workflow's steps say in their summary
  which were unavailable."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

import torch

from .inductor_rules import RULES

# name: (module, attribute; None for the module itself). Each exists in 2.5.1 through 2.14.
STABLE = {
    "pytree": ("torch.utils._pytree", None),
    "TorchDispatchMode": ("torch.utils._python_dispatch", "TorchDispatchMode"),
    "disable_current_modes": ("torch.utils._python_dispatch", "_disable_current_modes"),
    "FakeTensor": ("torch._subclasses.fake_tensor", "FakeTensor"),
    "FakeTensorMode": ("torch._subclasses.fake_tensor", "FakeTensorMode"),
    "DataDependentOutputException": ("torch._subclasses.fake_tensor", "DataDependentOutputException"),
    "DynamicOutputShapeException": ("torch._subclasses.fake_tensor", "DynamicOutputShapeException"),
    "UnsupportedOperatorException": ("torch._subclasses.fake_tensor", "UnsupportedOperatorException"),
    "is_builtin": ("torch._library.utils", "is_builtin"),
    "OpOverload": ("torch._ops", "OpOverload"),
    "OpOverloadPacket": ("torch._ops", "OpOverloadPacket"),
    "DisableAutocast": ("torch._C", "_DisableAutocast"),
    "DropoutNd": ("torch.nn.modules.dropout", "_DropoutNd"),
    "dynamo_config": ("torch._dynamo.config", None),
    "dynamo_reset": ("torch._dynamo", "reset"),
    "lookup_backend": ("torch._dynamo", "lookup_backend"),
    "TorchDynamoException": ("torch._dynamo.exc", "TorchDynamoException"),
    "counters": ("torch._dynamo.utils", "counters"),
    "guard_failures": ("torch._dynamo.utils", "guard_failures"),
    "same": ("torch._dynamo.utils", "same"),
    "aot_autograd": ("torch._dynamo.backends.common", "aot_autograd"),
    "make_boxed_func": ("torch._functorch.aot_autograd", "make_boxed_func"),
    "min_cut_rematerialization_partition": ("torch._functorch.partitioners", "min_cut_rematerialization_partition"),
    "inductor_config": ("torch._inductor.config", None),
    "inductor_hooks": ("torch._inductor.hooks", None),
    "inductor_ir": ("torch._inductor.ir", None),
    "compile_fx_module": ("torch._inductor.compile_fx", None),
    "compile_fx": ("torch._inductor.compile_fx", "compile_fx"),
    "select_decomp_table": ("torch._inductor.compile_fx", "select_decomp_table"),
    "V": ("torch._inductor.virtualized", "V"),
    "GraphLowering": ("torch._inductor.graph", "GraphLowering"),
    "Scheduler": ("torch._inductor.scheduler", "Scheduler"),
    "CppScheduling": ("torch._inductor.codegen.cpp", "CppScheduling"),
    "SIMDScheduling": ("torch._inductor.codegen.simd", "SIMDScheduling"),
}


def __getattr__(name: str):
    if name not in STABLE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attribute = STABLE[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def wrapper_codegen():
    """Inductor's Python wrapper code generator: PythonWrapperCodegen since 2.6, WrapperCodeGen
    in 2.5."""
    module = importlib.import_module("torch._inductor.codegen.wrapper")
    found = getattr(module, "PythonWrapperCodegen", None) or getattr(module, "WrapperCodeGen", None)
    if found is None:
        raise AttributeError(f"{module.__name__} has neither PythonWrapperCodegen nor WrapperCodeGen")
    return found


def is_non_overlapping_and_dense(tensor: torch.Tensor) -> bool:
    """torch._prims_common's is_non_overlapping_and_dense_or_false (2.13, 2.14; not in 2.5 or
    2.7), else is_non_overlapping_and_dense (2.5, 2.7; gone by 2.13), which answers the same for
    a real tensor."""
    prims_common = importlib.import_module("torch._prims_common")
    check = getattr(prims_common, "is_non_overlapping_and_dense_or_false", None)
    return (check or prims_common.is_non_overlapping_and_dense)(tensor)


def node_ancestors(node: torch.fx.Node) -> list[tuple[str, str, int | None]]:
    """The nodes `node` was traced or rewritten from (FX's `from_node`), nearest first, as (name,
    str(target), id() of its graph). Since 2.6 `from_node` holds fx.traceback.NodeSource
    chains; 2.5 writes a flat list of (name, target) tuples, oldest first, without graph ids
    (None: feature `provenance`)."""
    chain = list(node.meta.get("from_node") or ())
    if chain and isinstance(chain[0], tuple):
        return [(name, str(target), None) for name, target in reversed(chain)]
    found = []
    pending = list(reversed(chain))
    while pending:
        source = pending.pop()
        found.append((source.name, source.target, source.graph_id))
        pending.extend(reversed(source.from_node))
    return found


@dataclass(frozen=True)
class Feature:
    name: str
    available: bool
    reason: str = ""  # why not: the internal missing or changed on this torch, and its version


def _missing(owner, *names: str) -> str:
    absent = [n for n in names if not hasattr(owner, n)]
    if not absent:
        return ""
    where = owner.__name__ if inspect.ismodule(owner) else f"{owner.__module__}.{owner.__qualname__}"
    return f"{where} has no {', '.join(absent)}"


def _compiled_dump() -> str:
    """What inductor_dump.emitting_hooks patches and calls."""
    wrapper = wrapper_codegen()
    parameters = list(inspect.signature(wrapper.generate_extern_kernel_out).parameters)
    if parameters != ["self", "node"]:
        return f"{wrapper.__qualname__}.generate_extern_kernel_out takes ({', '.join(parameters)}), not (self, node)"
    scheduler = importlib.import_module("torch._inductor.scheduler")
    checks = (
        (wrapper, "generate_kernel_call", "codegen_multi_output", "writeline"),
        (scheduler.Scheduler, "codegen"),
        (scheduler.BaseSchedulerNode, "get_outputs", "get_nodes"),
        (__getattr__("CppScheduling"), "codegen_node", "codegen_template"),
        (__getattr__("SIMDScheduling"), "codegen_node", "codegen_template"),
        (__getattr__("compile_fx_module"), "view_to_reshape"),
        (__getattr__("inductor_hooks"), "intermediate_hook"),
        (__getattr__("inductor_config"), "generate_intermediate_hooks"),
        (__getattr__("inductor_ir"), "MultiOutputLayout", "MultiOutput", "ConcatKernel", "ExternKernel", "Buffer"),
    )
    return next((reason for reason in (_missing(*check) for check in checks) if reason), "")


def _output_tree() -> str:
    """What output_tree reads of pytree's registry."""
    return _missing(__getattr__("pytree"), "_get_node_type", "SUPPORTED_NODES")


def _inductor_rules() -> str:
    """The config switches inductor_rules turns off."""
    return _missing(__getattr__("inductor_config"), *(rule.config for rule in RULES.values()))


def _provenance() -> str:
    """What node_ancestors reads of a NodeSource."""
    traceback = importlib.import_module("torch.fx.traceback")
    return _missing(traceback, "NodeSource") or _missing(traceback.NodeSource, "name", "target", "graph_id")


# name: (what it does, what is done without it, the probe: "" when available, else why not)
FEATURES = {
    "compiled_dump": (
        "Inductor's materialised buffers dumped from the compiled code (graph_dump_compare's target)",
        "the compiled run dumps its final outputs only: the compare cannot localise, and the "
        "flowchart goes on to fusion_bisect and subgraph_isolate",
        _compiled_dump,
    ),
    "inductor_rules": (
        "every Inductor rule of inductor_rules.py can be turned off (fusion_bisect with knob inductor)",
        "the rules without a switch on this torch are no candidates",
        _inductor_rules,
    ),
    "provenance": (
        "dumped FX nodes tied to the nodes of the Dynamo graph they were traced from by FX's from_node "
        "chain, graph object included (records' graph_nodes)",
        "tied by node name and target alone",
        _provenance,
    ),
    "output_tree": (
        "final outputs inside containers a library registered with pytree, named by pytree's keys",
        "those containers are walked by their public attributes",
        _output_tree,
    ),
}

# every feature probed in this process, as status.json lists it
probed: dict[str, dict] = {}


def feature(name: str) -> Feature:
    """Whether feature `name` works on the running torch; probed once per process."""
    if name not in probed:
        what, without, probe = FEATURES[name]
        try:
            reason = probe()
        except Exception as e:  # noqa: BLE001 — an internal that is gone fails its probe in any way
            reason = f"{type(e).__name__}: {e}"
        entry = {"available": not reason, "what": what}
        if reason:
            entry.update(reason=f"{reason} (torch {torch.__version__})", without=without)
        probed[name] = entry
    entry = probed[name]
    return Feature(name, entry["available"], entry.get("reason", ""))
