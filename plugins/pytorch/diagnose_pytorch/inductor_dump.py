"""Compiled-level dumping for Inductor: the buffers the generated code really materialises,
taken through Inductor's intermediate-value hooks and mapped back to the FX nodes they compute.

What torch 2.13 emits by itself with `config.generate_intermediate_hooks` is not enough:
`run_intermediate_hooks(origin_node_name, buf)` is written only after extern kernels that
allocate their output (ExternKernelAlloc); C++ (CPU) kernels and `out=` extern kernels
(addmm, mm, convolution on CPU) get no hook, and the Triton path compares operation names
("op3") with buffer names ("buf3") so it never fires. While a dumping compile runs, this module
adds the missing calls: after every kernel launch, one hook call per buffer the launched kernel
computed that still exists at that point of the wrapper (buffers fused away or overwritten in
place are never bound), and one after every `out=` extern kernel. Only the wrapper gains lines;
scheduling and fusion are untouched, so the compiled kernels are the same as without dumping.

Each buffer's identity comes from the scheduler: its origin node (op_key `{node}-{target}`, as
in FX-level dumps) and all FX nodes fused into it (`fx_nodes`)."""

from __future__ import annotations

import contextlib
import functools
import operator
import time
from dataclasses import dataclass, field

import torch
from torch._inductor import config as inductor_config
from torch._inductor import hooks

from . import inductor_rules


@dataclass
class BufferInfo:
    buffer: str
    origin: str  # origin FX node name; the buffer name when there is none
    target: str  # the origin node's target; "" when there is none
    index: int  # position among the buffers computed by the same origin node
    fx_nodes: list[str]

    @property
    def op_key(self) -> str:
        return f"{self.origin}-{self.target}" if self.target else self.origin


@dataclass
class GraphBuffers:
    by_buffer: dict[str, BufferInfo] = field(default_factory=dict)
    by_origin: dict[str, list[BufferInfo]] = field(default_factory=dict)

    def add(self, buffer: str, origin: torch.fx.Node | None, origins) -> None:
        """A buffer with an origin node holds that node's value: op_key `{node}-{target}`;
        output k of a multi-output node (origin `getitem(node, k)`) is named after `node`,
        index k, as in FX-level dumps. A buffer without one holds a partial result (a
        reduction's running sum...) equal to no FX node: its op_key is the buffer name."""
        nodes = {n for n in origins if n.op == "call_function"} | ({origin} if origin else set())
        if buffer in self.by_buffer or not nodes:
            return
        order = {n: i for i, n in enumerate(next(iter(nodes)).graph.nodes)}
        fx_nodes = sorted((n for n in nodes if n in order), key=order.__getitem__)
        index = None
        if origin is not None and origin.target is operator.getitem and isinstance(origin.args[0], torch.fx.Node):
            origin, index = origin.args[0], origin.args[1]
            if origin not in fx_nodes:
                fx_nodes = sorted([*fx_nodes, origin], key=order.__getitem__)
        name, target = (origin.name, str(origin.target)) if origin is not None else (buffer, "")
        same_origin = self.by_origin.setdefault(name, [])
        info = BufferInfo(
            buffer, name, target, len(same_origin) if index is None else index, [n.name for n in fx_nodes]
        )
        same_origin.append(info)
        self.by_buffer[buffer] = info

    def lookup(self, name: str) -> BufferInfo | None:
        info = self.by_buffer.get(name)
        if info is None and self.by_origin.get(name):
            info = self.by_origin[name][0]
        return info


_collecting: GraphBuffers | None = None
_pending: list[str] = []


def _describe_scheduler(scheduler) -> None:
    for node in scheduler.nodes:
        for snode in node.get_nodes():
            ir_node = snode.node
            if ir_node is None:
                continue
            origin = ir_node.get_origin_node()
            for buffer in snode.get_outputs():
                _collecting.add(buffer.get_name(), origin, ir_node.get_origins())


def _emit_hook(wrapper, buffer: str) -> None:
    if getattr(wrapper, "supports_intermediate_hooks", False):
        wrapper.writeline(f"if {buffer!r} in locals(): run_intermediate_hooks({buffer!r}, {buffer})")


@contextlib.contextmanager
def _patched(owner, name: str, make):
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def emitting_hooks(table: GraphBuffers):
    """Active around one Inductor compile: collects the buffer table and adds hook calls."""
    global _collecting
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.simd import SIMDScheduling
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.scheduler import Scheduler

    def scheduler_codegen(original):
        @functools.wraps(original)
        def codegen(self):
            _describe_scheduler(self)
            _pending.clear()
            return original(self)

        return codegen

    def remembering(original):
        @functools.wraps(original)
        def codegen_node(self, node, *args, **kwargs):
            _pending.extend(b.get_name() for snode in node.get_nodes() for b in snode.get_outputs())
            return original(self, node, *args, **kwargs)

        return codegen_node

    def after_kernel_call(original):
        @functools.wraps(original)
        def generate_kernel_call(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            for buffer in _pending:
                _emit_hook(self, buffer)
            _pending.clear()
            return result

        return generate_kernel_call

    def after_extern_out(original):
        @functools.wraps(original)
        def generate_extern_kernel_out(self, node):
            result = original(self, node)
            if node.get_origin_node() is not None:
                _emit_hook(self, node.get_name())
            return result

        return generate_extern_kernel_out

    _collecting = table
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_patched(Scheduler, "codegen", scheduler_codegen))
            for scheduling in (CppScheduling, SIMDScheduling):
                stack.enter_context(_patched(scheduling, "codegen_node", remembering))
                stack.enter_context(_patched(scheduling, "codegen_template", remembering))
            stack.enter_context(_patched(PythonWrapperCodegen, "generate_kernel_call", after_kernel_call))
            stack.enter_context(_patched(PythonWrapperCodegen, "generate_extern_kernel_out", after_extern_out))
            yield
    finally:
        _collecting = None
        _pending.clear()


def _on_buffer(session, graph_id: int, table: GraphBuffers, name: str, value) -> None:
    if not session.dumping_ops():
        return
    info = table.lookup(name)
    values = value if isinstance(value, (list, tuple)) else (value,)
    if info is None:
        op_key, fields, first = name, {"buffer": name}, 0
    else:
        op_key = info.op_key
        fields = {"op": info.target or None, "fx_nodes": info.fx_nodes, "buffer": info.buffer}
        first = info.index
    if not session.selected(op_key, fields.get("op") or "", "") or not session.wants_io("output"):
        return
    seq = session.next_seq()
    for offset, tensor in enumerate(values):
        session.write(tensor, seq=seq, op_key=op_key, io="output", index=first + offset, graph=graph_id, **fields)


def inductor_backend(session, dump: bool, compiler=None):
    """torch.compile backend: Inductor with the spec's config overrides; with `dump`, the
    compiled code reports its buffers into the session's dump. `compiler` replaces compile_fx:
    a user backend that calls Inductor itself (after its own graph passes) is dumped alike."""
    overrides = dict(session.spec.switches.inductor)
    overrides.update(inductor_rules.overrides_off(session.spec.switches.inductor_off))

    def backend_fn(gm: torch.fx.GraphModule, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        graph_id = session.new_graph()
        table = GraphBuffers()
        patches = dict(overrides)
        if dump:
            # The buffer table is built while Inductor generates the wrapper, which a graph
            # cache hit skips. Compiled kernels stay cached: dumping does not change them.
            patches.update(generate_intermediate_hooks=True, fx_graph_cache=False)
        started = time.perf_counter()
        with inductor_config.patch(patches), emitting_hooks(table) if dump else contextlib.nullcontext():
            inductor_rules.note_compile()
            compiled = (compiler or compile_fx)(gm, example_inputs)
        session.status.data["graphs"]["compile_seconds"].append(round(time.perf_counter() - started, 6))
        if not dump:
            return compiled
        session.status.data.setdefault("inductor_buffers", {})[str(graph_id)] = len(table.by_buffer)
        hook = functools.partial(_on_buffer, session, graph_id, table)

        @functools.wraps(compiled)
        def run(*args):
            with hooks.intermediate_hook(hook):
                return compiled(*args)

        return run

    return backend_fn
