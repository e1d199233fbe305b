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
in FX-level dumps) and all FX nodes fused into it (`fx_nodes`). Three kinds of buffers get no
hook from Inductor and no origin node, and are handled here:
- a multi-output extern kernel's outputs (`buf22 = buf21[0]`, the output of
  `_scaled_dot_product_flash_attention_for_cpu`, a fallback kernel): a hook after the
  `MultiOutput` line, named after the `getitem` that selects it (output k of the node);
- a concatenation (`ConcatKernel`): no kernel computes it, its inputs write into its storage;
  a hook once all of them are computed, named after the `cat` node; each input buffer without
  an origin node is named after the `cat` node's argument it holds;
- an input realised for an extern kernel (the query, key, value and mask copies made for the
  attention kernel): named after the FX node of the kernel's argument it holds.
A name found this way is taken only when that FX node's shape and dtype are the buffer's.
Buffers that still hold no FX node's value (a reduction's partial result: the sum a `mean`
divides, Welford's m2 that `var` scales; an input converted to another dtype for an extern
kernel) equal nothing the FX-level dump has: they are not dumped, and status.json lists them
(`inductor_unmapped`). A buffer found to hold a value already dumped under the same name (a
copy with other strides) is dumped once. Names use each node's target as AOT Autograd made the
graph (what the FX-level dump interprets): Inductor's post-grad passes change some targets in
place (`view_to_reshape`: `aten.view` becomes `aten.reshape`). Under a user backend built on
Inductor, or with a pass in Inductor's pre-grad custom slot, names are the golden's for the node
of the same provenance (alignment.py)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import operator
import time
from dataclasses import dataclass, field

import torch

from .. import compat, inductor_rules_fired
from ..collectives import is_collective
from ..compat import pytree
from ..switches import inductor_overrides
from .alignment import Alignment, golden_forward
from .fx_dump import left_module, module_boundary, module_path, node_source
from .provenance import DynamoGraph


@dataclass
class BufferInfo:
    buffer: str
    origin: str  # origin FX node name; the buffer name when there is none
    target: str  # the origin node's target; "" when there is none
    index: int  # output k of the origin node
    fx_nodes: list[str]
    sources: list[dict]  # fx_dump.node_source of each of fx_nodes
    found_by: str = ""  # how the FX node of a buffer without origin node was found
    dumped: str = ""  # the name it is dumped under (the golden's, alignment.py), when not origin
    unmapped_because: str = ""  # why it holds no golden node's value, when it has an origin node
    nodes: list = field(default_factory=list)  # the fx.Nodes of fx_nodes
    graph_nodes: list[str] = field(default_factory=list)  # provenance.DynamoGraph.graph_nodes of nodes

    @property
    def op_key(self) -> str:
        return f"{self.dumped or self.origin}-{self.target}" if self.target else self.origin

    @property
    def mapped(self) -> bool:
        return bool(self.target)

    def computed_by_a_node(self) -> bool:
        """Whether an op node of the graph computes it (not a graph input's copy)."""
        return any(n.name == self.origin and n.op == "call_function" for n in self.nodes)


@dataclass
class GraphBuffers:
    by_buffer: dict[str, BufferInfo] = field(default_factory=dict)
    by_origin: dict[str, list[BufferInfo]] = field(default_factory=dict)
    # ConcatKernel buffer -> the buffers its inputs are written into
    concats: dict[str, list[str]] = field(default_factory=dict)
    # buffers holding a value another buffer of the same name already holds (not dumped)
    copies: set[str] = field(default_factory=set)
    # buffer -> the buffers whose kernels read it
    readers: dict[str, list[str]] = field(default_factory=dict)
    # each FX node's target as AOT Autograd made the graph, before Inductor's post-grad passes
    # changed some in place (aten.view becomes aten.reshape): the FX-level dump's names
    targets: dict[str, str] = field(default_factory=dict)
    dynamo: DynamoGraph | None = None  # the graph Dynamo handed to the backend, if known
    # a user backend's: the golden's names for its nodes (None: the nodes' own names)
    alignment: Alignment | None = None

    def named(self, node: torch.fx.Node) -> tuple[str | None, str]:
        """The name `node`'s value is dumped under, or None and why it has none."""
        if self.alignment is None:
            return node.name, ""
        name = self.alignment.name_of(node)
        return name, "" if name is not None else self.alignment.reason(node)

    def described(self, nodes: list[torch.fx.Node]) -> tuple[list[str], list[dict]]:
        """fx_nodes and sources of `nodes`, by the names they are dumped under (a node without
        one left out)."""
        names, sources = [], []
        for node in nodes:
            name = self.named(node)[0]
            if name is not None:
                names.append(name)
                sources.append({**node_source(node), "node": name})
        return names, sources

    def graph_nodes(self, nodes) -> list[str]:
        return self.dynamo.graph_nodes(nodes) if self.dynamo is not None else []

    def target_of(self, node: torch.fx.Node) -> str:
        return self.targets.get(node.name, str(node.target))

    def add(self, buffer: str, origin: torch.fx.Node | None, origins, index: int | None = None) -> None:
        """A buffer with an origin node holds that node's value: op_key `{node}-{target}`;
        output k of a multi-output node (origin `getitem(node, k)`) is named after `node`,
        index k, as in FX-level dumps. A buffer without one holds a partial result (a
        reduction's running sum...) equal to no FX node unless `derive` finds the node."""
        nodes = {n for n in origins if n.op == "call_function"} | ({origin} if origin else set())
        if buffer in self.by_buffer or not nodes:
            return
        order = {n: i for i, n in enumerate(next(iter(nodes)).graph.nodes)}
        fx_nodes = sorted((n for n in nodes if n in order), key=order.__getitem__)
        if origin is not None and origin.target is operator.getitem and isinstance(origin.args[0], torch.fx.Node):
            origin, index = origin.args[0], origin.args[1]
            if origin not in fx_nodes:
                fx_nodes = sorted([*fx_nodes, origin], key=order.__getitem__)
        name, target = (origin.name, self.target_of(origin)) if origin is not None else (buffer, "")
        dumped, why = self.named(origin) if origin is not None else (None, "")
        same_origin = self.by_origin.setdefault(name, [])
        info = BufferInfo(
            buffer,
            name,
            target if dumped is not None else "",
            len(same_origin) if index is None else index,
            *self.described(fx_nodes),
            dumped=dumped if dumped not in (None, name) else "",
            unmapped_because=why,
            nodes=fx_nodes,
            graph_nodes=self.graph_nodes(fx_nodes),
        )
        same_origin.append(info)
        self.by_buffer[buffer] = info

    def name_after(self, buffer: str, node: torch.fx.Node, found_by: str) -> None:
        """The buffer (without origin node) holds output 0 of `node`."""
        info = self.by_buffer[buffer]
        self.by_origin.pop(info.origin, None)
        if any(other.index == 0 for other in self.by_origin.get(node.name, [])):
            self.copies.add(buffer)
        dumped, why = self.named(node)
        info.origin, info.index, info.found_by = node.name, 0, found_by
        info.target = self.target_of(node) if dumped is not None else ""
        info.dumped, info.unmapped_because = (dumped if dumped not in (None, node.name) else ""), why
        if node not in info.nodes:
            info.nodes = [*info.nodes, node]
            info.fx_nodes, info.sources = self.described(info.nodes)
            info.graph_nodes = self.graph_nodes(info.nodes)
        self.by_origin.setdefault(node.name, []).append(info)

    def lookup(self, name: str) -> BufferInfo | None:
        info = self.by_buffer.get(name)
        if info is None and self.by_origin.get(name):
            info = self.by_origin[name][0]
        return info

    def unmapped(self) -> list[dict]:
        """The buffers that hold no golden node's value. One that the alignment left unmapped (a
        user pass's node, `reason`), computed by an op node, also says which Dynamo nodes made it (`graph_nodes`), where
        (`sources`, its last node's first: the buffer holds that node's value) and which dumped
        buffers read it (`read_by`, their op keys): a defect of that pass shows first in those
        readers' rows, and its producer is a culprit candidate that the confirmation can run
        eagerly (docs/workflow.md, How a culprit is confirmed)."""
        entries = []
        for i in self.by_buffer.values():
            if i.mapped:
                continue
            entry = {"buffer": i.buffer, "fx_nodes": i.fx_nodes}
            if i.unmapped_because:
                entry["reason"] = i.unmapped_because
                if i.graph_nodes and i.computed_by_a_node():
                    entry["graph_nodes"] = i.graph_nodes
                    entry["sources"] = _distinct_places(i.sources[::-1])[:MAX_LISTED]
                    entry["read_by"] = self.dumped_readers(i.buffer)[:MAX_LISTED]
            entries.append(entry)
        return entries

    def dumped_readers(self, buffer: str) -> list[str]:
        """The op keys of the dumped buffers whose kernels read `buffer`, in schedule order."""
        keys = []
        for reader in self.readers.get(buffer, ()):
            info = self.by_buffer.get(reader)
            if info is not None and info.mapped and reader not in self.copies and info.op_key not in keys:
                keys.append(info.op_key)
        return keys


# At most this many sources and readers are listed for an unmapped buffer (status.json stays small).
MAX_LISTED = 8


def _distinct_places(sources: list[dict]) -> list[dict]:
    """The sources that name a place in the user's code, each place once."""
    places, seen = [], set()
    for source in sources:
        place = (source.get("module"), source.get("line"))
        if source.get("line") and place not in seen:
            seen.add(place)
            places.append(source)
    return places


_collecting: GraphBuffers | None = None
_pending: list[str] = []
_computed: set[str] = set()  # buffers whose hook the wrapper has by now (for concatenations)


def _value_of(node) -> torch.Tensor | None:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _holds(ir_node, node) -> bool:
    """Whether an IR buffer has the shape and dtype of FX node `node`'s value."""
    value = _value_of(node)
    if value is None or ir_node.get_dtype() != value.dtype:
        return False
    size = list(ir_node.get_size())
    if len(size) != value.dim():
        return False
    expr = [d.node.expr if isinstance(d, torch.SymInt) else d for d in value.shape]
    try:
        return all(compat.V.graph.sizevars.statically_known_equals(a, b) for a, b in zip(size, expr))
    except Exception:  # another shape environment: judge by the printed sizes
        return [str(a) for a in size] == [str(b) for b in expr]


def _kernel_node(ir_node, consumers) -> torch.fx.Node | None:
    """The FX node an extern kernel computes: its origin node; else the node of the
    `getitem` selecting one of its outputs; else the origin whose target is its op."""
    origin = ir_node.get_origin_node()
    if origin is not None:
        return origin
    for user in consumers.get(ir_node.get_name(), ()):
        node = user.get_origin_node()
        if node is not None and node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
            return node.args[0]
    op = getattr(ir_node, "op_overload", None)
    found = [n for n in ir_node.get_origins() if op is not None and n.target is op]
    return found[0] if len(found) == 1 else None


def _describe_scheduler(scheduler) -> None:
    ir = compat.inductor_ir
    table = _collecting
    irs = {}
    for node in scheduler.nodes:
        for snode in node.get_nodes():
            ir_node = snode.node
            if ir_node is None or isinstance(getattr(ir_node, "layout", None), ir.MultiOutputLayout):
                continue  # a multi-output kernel's tuple: its MultiOutput buffers hold the tensors
            origin = ir_node.get_origin_node()
            for buffer in snode.get_outputs():
                irs[buffer.get_name()] = ir_node
                table.add(buffer.get_name(), origin, ir_node.get_origins())
            for dep in snode.read_writes.reads:
                for buffer in snode.get_outputs():
                    table.readers.setdefault(dep.name, []).append(buffer.get_name())
    # which FX node each buffer without origin node holds, from the kernel that reads it
    consumers: dict[str, list] = {}
    for node in scheduler.nodes:
        for snode in node.get_nodes():
            if isinstance(snode.node, ir.MultiOutput):
                for inp in snode.node.inputs:
                    consumers.setdefault(inp.get_name(), []).append(snode.node)
    for node in scheduler.nodes:
        for snode in node.get_nodes():
            kernel = snode.node
            if isinstance(kernel, ir.ConcatKernel):
                cat = kernel.get_origin_node()
                inputs = [inp.get_name() for inp in kernel.inputs]
                table.concats[kernel.get_name()] = inputs
                args = cat.args[0] if cat is not None and isinstance(cat.args[0], (list, tuple)) else ()
                for name, arg in zip(inputs, args) if len(args) == len(inputs) else ():
                    _derive(table, irs, name, arg, "input of a concatenation")
            elif isinstance(kernel, ir.ExternKernel) and not isinstance(kernel, ir.MultiOutput):
                fx_node = _kernel_node(kernel, consumers)
                if fx_node is None:
                    continue
                leaves = [a for a in pytree.tree_leaves((fx_node.args, fx_node.kwargs)) if _value_of(a) is not None]
                inputs = [inp for inp in kernel.inputs if isinstance(inp, ir.IRNode)]
                if len(leaves) != len(inputs):
                    continue
                for inp, arg in zip(inputs, leaves):
                    if isinstance(inp, ir.Buffer):  # the buffer itself, not a view of it
                        _derive(table, irs, inp.get_name(), arg, f"input of {fx_node.target}")


def _derive(table: GraphBuffers, irs: dict, buffer: str, node, found_by: str) -> None:
    info = table.by_buffer.get(buffer)
    if info is None or info.mapped or info.unmapped_because or buffer not in irs or not _holds(irs[buffer], node):
        return
    table.name_after(buffer, node, found_by)


# The hook after a collective's wait (all_reduce_ writes its buffer in place, after the kernel that
# computed its input reported it): "buf3@waited".
_WAITED = "@waited"


def _emit_hook(wrapper, buffer: str) -> None:
    if getattr(wrapper, "supports_intermediate_hooks", False):
        wrapper.writeline(f"if {buffer!r} in locals(): run_intermediate_hooks({buffer!r}, {buffer})")
    _computed.add(buffer)
    table = _collecting
    if table is None:
        return
    for concat, inputs in list(table.concats.items()):
        if inputs and concat not in _computed and all(name in _computed for name in inputs):
            _emit_hook(wrapper, concat)


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
    wrapper = compat.wrapper_codegen()

    def scheduler_codegen(original):
        @functools.wraps(original)
        def codegen(self):
            _describe_scheduler(self)
            _pending.clear()
            _computed.clear()
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

    def remembering_targets(original):
        @functools.wraps(original)
        def view_to_reshape(gm):
            for node in gm.graph.nodes:
                if node.op == "call_function":
                    table.targets.setdefault(node.name, str(node.target))
            if table.alignment is not None and not table.alignment.aligned and table.dynamo is not None:
                table.alignment.align(gm.graph, table.dynamo)
            return original(gm)

        return view_to_reshape

    def after_multi_output(original):
        @functools.wraps(original)
        def codegen_multi_output(self, node):
            result = original(self, node)
            _emit_hook(self, node.get_name())
            return result

        return codegen_multi_output

    def after_wait(original):
        @functools.wraps(original)
        def codegen(self, wrapper):
            result = original(self, wrapper)
            buffer = self.inputs[0].get_name()
            if getattr(wrapper, "supports_intermediate_hooks", False):
                hook = buffer + _WAITED
                wrapper.writeline(f"if {buffer!r} in locals(): run_intermediate_hooks({hook!r}, {buffer})")
            return result

        return codegen

    _collecting = table
    try:
        with contextlib.ExitStack() as stack:
            wait_kernel = getattr(importlib.import_module("torch._inductor.ir"), "_WaitKernel", None)
            if wait_kernel is not None:
                stack.enter_context(_patched(wait_kernel, "codegen", after_wait))
            stack.enter_context(_patched(compat.compile_fx_module, "view_to_reshape", remembering_targets))
            stack.enter_context(_patched(compat.Scheduler, "codegen", scheduler_codegen))
            for scheduling in (compat.CppScheduling, compat.SIMDScheduling):
                stack.enter_context(_patched(scheduling, "codegen_node", remembering))
                stack.enter_context(_patched(scheduling, "codegen_template", remembering))
            stack.enter_context(_patched(wrapper, "generate_kernel_call", after_kernel_call))
            stack.enter_context(_patched(wrapper, "generate_extern_kernel_out", after_extern_out))
            stack.enter_context(_patched(wrapper, "codegen_multi_output", after_multi_output))
            yield
    finally:
        _collecting = None
        _pending.clear()
        _computed.clear()


def _on_buffer(session, graph_id: int, table: GraphBuffers, seen: set, name: str, value) -> None:
    """One hook call of the compiled code. `seen`: the (op_key, index) written in this call
    of the graph (Inductor's own hook and ours may both report an extern kernel's output)."""
    if not session.dumping_ops():
        return
    waited = name.endswith(_WAITED)
    info = table.lookup(name.removesuffix(_WAITED))
    if info is None or not info.mapped or info.buffer in table.copies:
        return  # holds no FX node's value (status.json: inductor_unmapped), or a copy
    if is_collective(info.target) and not waited:
        return  # the input of a collective that writes the buffer in place, reported before it ran
    values = value if isinstance(value, (list, tuple)) else (value,)
    op_key = info.op_key
    fields = {"op": info.target, "fx_nodes": info.fx_nodes, "sources": info.sources, "buffer": info.buffer}
    if info.graph_nodes:
        fields["graph_nodes"] = info.graph_nodes
    origin = next((n for n in info.nodes if n.name == info.origin), None)
    module = (module_path(origin) if origin is not None else None) or ""
    if not session.selected(op_key, info.target, module) or not session.wants_io("output"):
        return
    if session.spec.dump.boundaries:
        if origin is None or not module_boundary(origin):
            return
        if left := left_module(origin):
            fields["leaves"] = left
    # a tuple reported under its node's name (Inductor's hook of a multi-output kernel) holds
    # outputs 0, 1...; a buffer holds output `index`
    first = 0 if isinstance(value, (list, tuple)) and name not in table.by_buffer else info.index
    indexed = [(first + offset, tensor) for offset, tensor in enumerate(values)]
    todo = [(index, tensor) for index, tensor in indexed if (op_key, index) not in seen]
    if not todo:
        return
    seq = session.next_seq()
    for index, tensor in todo:
        seen.add((op_key, index))
        session.write(tensor, seq=seq, op_key=op_key, io="output", index=index, graph=graph_id, **fields)


def renames_nodes(compiler) -> bool:
    """Whether the ATen graph Inductor compiles may name its nodes otherwise than the golden's:
    a user backend's own pass before compile_fx, or a pass in Inductor's pre-grad slot
    (`config.pre_grad_custom_pass` runs on Dynamo's graph before AOT Autograd names the nodes;
    a post-grad pass runs after, on names already given)."""
    return compiler is not None or compat.inductor_config.pre_grad_custom_pass is not None


def _golden_alignment(gm: torch.fx.GraphModule, example_inputs, session) -> Alignment:
    """The golden's names for the ATen nodes the user's backend will compile (alignment.py),
    traced before that backend's pass runs."""
    if session.provenance.current is None:
        return Alignment.failed("the graph Dynamo handed to the backend is unknown")
    try:
        return Alignment.of_golden(*golden_forward(gm, example_inputs, session.spec.backend))
    except compat.TorchDynamoException:
        raise  # Dynamo's own control flow (a restart of the analysis), as the golden's compile raises it
    except Exception as e:  # noqa: BLE001 — no golden names: nothing is dumped under one
        return Alignment.failed(f"the golden graph could not be traced: {type(e).__name__}: {e}")


def inductor_backend(session, dump: bool, compiler=None):
    """torch.compile backend: Inductor with the spec's config overrides; with `dump`, the
    compiled code reports its buffers into the session's dump. `compiler` replaces compile_fx:
    a user backend that calls Inductor itself (after its own graph passes) is dumped alike, and
    runs under the same overrides with the Inductor compiles inside it noted (it may make none).
    On a torch whose Inductor internals the dump cannot hook into (compat: compiled_dump), the
    compiled code runs undumped: only its final outputs are dumped, and status.json says why."""
    dump = dump and compat.feature("compiled_dump").available
    overrides = inductor_overrides(session.spec.switches)

    def backend_fn(gm: torch.fx.GraphModule, example_inputs):
        graph_id = session.new_graph()
        table = GraphBuffers(dynamo=session.provenance.current)
        if dump and renames_nodes(compiler):
            table.alignment = _golden_alignment(gm, example_inputs, session)
        patches = dict(overrides)
        if dump:
            # The buffer table is built while Inductor generates the wrapper, which a graph
            # cache hit skips. Compiled kernels stay cached: dumping does not change them.
            patches.update(generate_intermediate_hooks=True, fx_graph_cache=False)
        started = time.perf_counter()
        with (
            compat.inductor_config.patch(patches),
            emitting_hooks(table) if dump else contextlib.nullcontext(),
            inductor_rules_fired.noting_compiles() if compiler else contextlib.nullcontext(),
        ):
            if compiler is None:  # Inductor itself: it compiles this graph, or its caches hand it back
                inductor_rules_fired.note_compile()
            compiled = (compiler or compat.compile_fx)(gm, example_inputs)
        session.status.record_compile_seconds(time.perf_counter() - started)
        if not dump:
            return compiled
        session.status.record_inductor_buffers(graph_id, len(table.by_buffer), table.unmapped())

        @functools.wraps(compiled)
        def run(*args):
            on_buffer = functools.partial(_on_buffer, session, graph_id, table, set())
            with compat.inductor_hooks.intermediate_hook(on_buffer):
                return compiled(*args)

        return run

    return backend_fn
