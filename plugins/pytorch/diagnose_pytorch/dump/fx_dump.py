"""FX-level dumping: the graph Dynamo and AOT Autograd produced (ATen nodes) executed node by
node by an FX Interpreter, with TorchAir's FX-dump names: op_key `{node}-{target}`, so a
tensor is `{node}-{target}.OUTPUT.{i}`."""

from __future__ import annotations

import functools
import operator
import re
import time
import weakref

import torch
from torch.utils import _pytree

from .. import compat
from .dump_writer import nonfinite_constant

# Backends whose graph AOT Autograd makes with Inductor's decompositions and partitioner. A user
# backend (`module:function`) is taken to be built on Inductor, as the compiled-level dump takes
# it (inductor_dump.inductor_backend with the user's backend as compiler), so that the golden's
# ATen nodes are the ones the user's compile_fx makes of the same Dynamo nodes.
_INDUCTOR_STYLE = ("aot_eager_decomp_partition", "inductor")


def aot_options(backend: str) -> dict:
    """AOT Autograd's decompositions and partitioner for `backend`, so that the dumped graph is
    the one that backend would hand to its compiler."""
    if backend in _INDUCTOR_STYLE or ":" in backend:
        # compile_fx, not decomposition: some decompositions need the lowerings it imports
        return {
            "decompositions": compat.select_decomp_table(),
            "partition_fn": functools.partial(compat.min_cut_rematerialization_partition, compiler="inductor"),
        }
    return {"partition_fn": compat.min_cut_rematerialization_partition, "keep_inference_input_mutations": True}


def fx_node_key(node: torch.fx.Node) -> str:
    return f"{node.name}-{node.target}"


def graph_values(gm: torch.fx.GraphModule) -> tuple[int, int]:
    """The bytes and elements of the tensors the graph's nodes compute in one call (their example
    values): what an op-by-op dump of that call keeps, known before anything is dumped
    (graph_dump_compare's `localisation: auto` weighs it against the dump budget)."""
    total_bytes = total_elements = 0
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        for value in _pytree.tree_leaves(node.meta.get("example_value")):
            if isinstance(value, torch.Tensor):
                total_bytes += value.numel() * value.element_size()
                total_elements += value.numel()
    return total_bytes, total_elements


def module_path(node: torch.fx.Node) -> str | None:
    """The innermost module of the node, written as named_modules() spells it."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    return _spelled(list(stack.values())[-1][0])


def _spelled(path: str) -> str:
    """A module path of nn_module_stack (L['self'].layers[0]) as named_modules() spells it."""
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']+)'\]", r".\1", path)
    path = re.sub(r"^_modules\.|\._modules\.", ".", path)
    return path.strip(".")


def _module_paths(node: torch.fx.Node) -> list[str]:
    """The node's modules, outermost first (the root left out)."""
    return [p for entry in (node.meta.get("nn_module_stack") or {}).values() if (p := _spelled(entry[0]))]


def _inside(path: str, scope: str) -> bool:
    return path == scope or path.startswith(scope + ".")


_parents: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _parent_scopes(graph: torch.fx.Graph) -> set[str]:
    """The graph's modules that hold another module of it."""
    if graph not in _parents:
        paths = {p for n in graph.nodes for p in _module_paths(n)}
        _parents[graph] = {p for p in paths if any(q != p and _inside(q, p) for q in paths)}
    return _parents[graph]


def module_boundary(node: torch.fx.Node) -> bool:
    """Whether the node's value leaves one of its modules that holds modules of its own (a
    decoder layer, its attention, its MLP; not a Linear or a norm): a user of it, or the
    graph's output, lies outside that module. These are a model's module outputs, what the
    coarse pass of `localisation: modules_first` dumps; a node outside every module is one too."""
    users = _readers(node)
    return not _module_paths(node) or any(u.op == "output" for u in users) or bool(_modules_left(node, users))


def left_module(node: torch.fx.Node) -> str | None:
    """The innermost module holding modules of its own that the node's value leaves (a reader of
    it, or the graph's output, lies outside it): the module a failing module output says
    diverged, whose ops graph_dump_compare's op-by-op pass then dumps; None when it leaves none."""
    left = _modules_left(node, _readers(node))
    return max(left, key=len) if left else None


def _modules_left(node: torch.fx.Node, users: list[torch.fx.Node]) -> list[str]:
    """The node's modules holding modules of their own that its value leaves: one of `users` (its
    readers) is the graph's output or lies outside the module."""
    parents = _parent_scopes(node.graph)
    return [
        p
        for p in _module_paths(node)
        if p in parents and any(u.op == "output" or not _inside(module_path(u) or "", p) for u in users)
    ]


def _readers(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes that read the node's value: its users, and through a view of it (a Linear's
    output is the view of its mm, which compiled code never materialises) the view's readers."""
    readers = []
    for user in node.users:
        readers.append(user)
        if _is_view(user):
            readers.extend(_readers(user))
    return readers


def value_of(node: torch.fx.Node, graph_nodes: dict[str, list[str]]) -> str | None:
    """The Dynamo-graph node whose value the node's is (up to a view: a Linear's output is the
    view of its mm), by provenance: the node comes from that one Dynamo node alone and its value
    leaves that node's ATen nodes (a reader comes from another node, or is the graph's output).
    None for a value inside a Dynamo node (a step of a decomposed softmax) or of several."""
    own = graph_nodes.get(node.name)
    if not own or len(own) != 1:
        return None
    for reader in _readers(node):
        if reader.op == "output" or (not _is_view(reader) and graph_nodes.get(reader.name) != own):
            return own[0]
    return None


def _is_view(node: torch.fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return (
        node.op == "call_function"
        and schema is not None
        and any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
    )


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _user_op(node: torch.fx.Node) -> str | None:
    """The op the user called, when it is a custom op (torch.library): `namespace::name`, from
    the node's target or from the call Dynamo traced it from (source_fn_stack)."""
    candidates = [node.target]
    if node.meta.get("source_fn_stack"):
        candidates.append(node.meta["source_fn_stack"][-1][1])
    for fn in candidates:
        fn = getattr(fn, "_opoverload", fn)  # a torch.library.custom_op's CustomOpDef
        schema = getattr(fn, "_schema", None)  # an OpOverload
        if schema is None and isinstance(fn, compat.OpOverloadPacket):
            schema = fn.default._schema if "default" in fn.overloads() else None
        if schema is not None and schema.name.split("::")[0] not in ("aten", "prim", "prims"):
            return schema.name
    return None


def node_source(node: torch.fx.Node) -> dict:
    """Where an FX node came from in the user's code: its module path (`module`, "" for the
        root), the custom op it belongs to (`custom_op`), and the innermost frame of its stack
        trace (`line`: file name and line, `code`: that line's text), and `nonfinite_constant` when its
    arguments hold a non-finite constant (dump_writer.nonfinite_constant); keys without a value are left out."""
    source = {"node": node.name, "module": module_path(node), "custom_op": _user_op(node)}
    if nonfinite_constant(node.args, node.kwargs):
        source["nonfinite_constant"] = True
    trace = node.meta.get("stack_trace") or ""
    lines = trace.rstrip().splitlines()
    frames = [(i, m) for i, line in enumerate(lines) if (m := _FRAME.search(line))]
    if frames:
        i, frame = frames[-1]
        source["line"] = f"{frame.group(1).rsplit('/', 1)[-1]}:{frame.group(2)}"
        if i + 1 < len(lines) and not _FRAME.search(lines[i + 1]):
            source["code"] = lines[i + 1].strip()
    return {k: v for k, v in source.items() if v is not None}


class DumpingInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, session, graph_id: int, graph_nodes: dict[str, list[str]]):
        super().__init__(gm, garbage_collect_values=True)
        self.session = session
        self.graph_id = graph_id
        self.graph_nodes = graph_nodes  # node name -> the Dynamo nodes it was traced from

    def run(self, *args, **kwargs):
        try:
            return super().run(*args, **kwargs)
        finally:
            if self.session.shadows is not None:
                self.session.shadows.settle()

    def run_node(self, node: torch.fx.Node):
        session = self.session
        if node.op != "call_function" or not session.dumping():
            return super().run_node(node)
        shadows = session.shadows if session.shadowing() else None
        # getitem only selects output k of its producer, already dumped as OUTPUT.k (and
        # shadowed with it)
        if node.target is operator.getitem or (shadows is None and not session.dumping_ops()):
            return super().run_node(node)
        op_key = fx_node_key(node)
        op = str(node.target)
        module = module_path(node)
        dumped = (
            session.dumping_ops()
            and session.selected(op_key, op, module or "")
            and (not session.spec.dump.boundaries or module_boundary(node))
        )
        if shadows is None and not dumped:
            return super().run_node(node)
        with self._set_current_node(node):
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            # graph inputs get their shadows here, lazily; the table outlives the graph
            pending = shadows.prepare(node.target, args, kwargs) if shadows is not None else None
            seq = session.next_seq() if dumped else None
            fields = {
                "op": op,
                "module": module,
                "fx_nodes": [node.name],
                "sources": [node_source(node)],
                "graph": self.graph_id,
            }
            if self.graph_nodes.get(node.name):
                fields["graph_nodes"] = self.graph_nodes[node.name]
                if value := value_of(node, self.graph_nodes):
                    fields["value_of"] = value
            if session.spec.dump.boundaries and (left := left_module(node)):
                fields["leaves"] = left
            if dumped and session.wants_io("input"):
                session.write_args(args, seq=seq, op_key=op_key, io="input", **fields)
            out = self.call_function(node.target, args, kwargs)
            if pending is not None:
                shadows.complete(pending, out)
        if dumped and session.wants_io("output"):
            outs = out if isinstance(out, (list, tuple)) else (out,)
            session.write_args(outs, seq=seq, op_key=op_key, io="output", **fields)
        return out


def dumping_backend(session, backend: str):
    """A torch.compile backend that runs AOT Autograd (with `backend`'s decompositions and
    partitioner) and then interprets the forward graph node by node, dumping each node.
    Backward graphs run undumped."""

    def backend_fn(gm: torch.fx.GraphModule, example_inputs):
        graph_id = session.new_graph()

        def forward_compiler(fx_gm, _inputs):
            graph_nodes = {n.name: session.provenance.graph_nodes([n]) for n in fx_gm.graph.nodes}

            def run(args):
                return DumpingInterpreter(fx_gm, session, graph_id, graph_nodes).boxed_run(args)

            run._boxed_call = True
            return run

        def backward_compiler(fx_gm, _inputs):
            return compat.make_boxed_func(fx_gm.forward)

        started = time.perf_counter()
        compiled = compat.aot_autograd(
            fw_compiler=forward_compiler, bw_compiler=backward_compiler, **aot_options(backend)
        )(gm, example_inputs)
        session.status.record_compile_seconds(time.perf_counter() - started)
        return compiled

    return backend_fn
