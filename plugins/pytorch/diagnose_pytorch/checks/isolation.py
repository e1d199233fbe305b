"""Subgraph isolation: the trial process of the `subgraph_isolate` step.

The run's backend is wrapped in a splitting backend. Every call_function / call_method /
call_module node of each graph Dynamo hands it (graph k, in compile order) is a candidate,
`g<k>.<node name>`. The candidates the spec's `isolation.eager_nodes` names run eagerly as
plain FX code; every maximal contiguous run of the others (in graph order) is compiled with the
real backend as a subgraph of its own ("piece"). Nothing is split when the whole graph is
compiled (the backend gets Dynamo's graph and inputs, as in a plain run) or runs eagerly.

A split piece is compiled when Dynamo hands over its graph, inside Dynamo's tracing context, as
Dynamo's own graph splitting (the DDP optimizer) compiles its submodules: on what Dynamo gave the
backend for the graph's inputs, and on Dynamo's `example_value` (fake tensors and symbolic sizes
of Dynamo's own FakeTensorMode and ShapeEnv) for the values earlier pieces make. So a piece is as
dynamic as the whole graph (one compile serves every shape the graph's guards admit), and a
scalar Dynamo reads from a tensor input (`.item()` of a float it wrapped, such as a rotary
scaling under `dynamic=True`) keeps the symbol Dynamo gave it, where fake tensors made afresh
from a first call's real inputs make it a data-dependent value AOT Autograd cannot trace.

Pieces pass tensors: a getitem that selects an element of a multi-output node's tuple (listed
with `follows`: that node) stays in its producer's piece, whatever eager_nodes says, and a node
that computes scalars is computed again in each piece that reads it; neither is in `compiled`
(they are no choice of their own). status.json's `isolation` says which nodes exist, which were
compiled and how the graphs were split; with `isolation.repro` the compiled pieces' first inputs
are kept for the standalone repro (repro_writer.py).

`isolation.eager_writes` names state by its path in the state records (`buffers.k_cache`,
`inputs.args.1`; call_state.py): every node that writes one of them in place (an in-place method
such as `index_copy_` or `add_`, an item assignment, an op whose schema writes an argument, on
the graph input or a view of it) runs eagerly too, so the write happens as in eager whatever the
backend does with it; the culprit confirmation of a state defect forces the lost write so.
Dynamo hands the backend the call's own tensors, so a graph input is that state when it shares
its memory. `forced_writes` in the report lists each path's nodes.

`isolation.observe` names eager nodes whose value each call records, as the eager piece computes
it on what the compiled pieces before it made: observed/<id>/<step>.npy, listed in the report's
`observed` (id -> steps). A masked culprit's confirmation judges that value against the golden's
float64 truth of the same node. A compiled node is never observed: returning its value from its
piece would change what is compiled."""

from __future__ import annotations

import itertools
import operator
import re
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import fx

from .. import compat
from ..compat import pytree
from ..dump.call_state import storage_key
from ..dump.dump_writer import dumpable, to_numpy
from ..dump.fx_dump import node_source
from ..dump.provenance import CANDIDATE_OPS, node_id
from .repro_writer import ReproError, write_repro


@dataclass
class Piece:
    graph: int
    nodes: list[fx.Node]
    compiled: bool
    inputs: list[fx.Node] = field(default_factory=list)  # values from outside, in first-use order
    outputs: list[fx.Node] = field(default_factory=list)  # values used after the piece
    module: fx.GraphModule | None = None  # a pristine copy, for the repro
    recorded: list | None = None  # the inputs of its first call, for the repro
    grad_enabled: bool = False  # the grad mode of that call

    def ids(self) -> list[str]:
        return [node_id(self.graph, n) for n in self.nodes]

    def record(self, values) -> None:
        self.recorded = pytree.tree_map_only(torch.Tensor, _kept, list(values))
        self.grad_enabled = torch.is_grad_enabled()


def _kept(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().clone().requires_grad_(tensor.requires_grad)


def readable_op(node: fx.Node) -> str:
    if node.op == "call_method":
        return f"method {node.target}"
    if node.op == "call_module":
        return f"module {node.target}"
    if isinstance(node.target, compat.OpOverload):
        return str(node.target)
    try:
        name = fx.node._get_qualified_name(node.target)
    except (AttributeError, RuntimeError, TypeError):
        return str(node.target)
    return re.sub(r"^_operator\.", "operator.", name)


def selection_source(node: fx.Node) -> fx.Node | None:
    """The multi-output node whose tuple `node` picks an element of, if it does."""
    if node.target is not operator.getitem or not isinstance(node.args[0], fx.Node):
        return None
    producer = node.args[0]
    if producer.op not in CANDIDATE_OPS or not isinstance(producer.meta.get("example_value"), (tuple, list)):
        return None
    return selection_source(producer) or producer


def describe(graph: int, node: fx.Node) -> dict:
    where = node_source(node)
    entry = {
        "id": node_id(graph, node),
        "graph": graph,
        "op": readable_op(node),
        "module": where.get("module", ""),
        "source": where.get("line", ""),
    }
    if "custom_op" in where:
        entry["custom_op"] = where["custom_op"]
    source = selection_source(node)
    if source is not None:
        entry["follows"] = node_id(graph, source)
    return entry


# ops whose result is a view of their first argument: a write into it writes that argument
_VIEWS = frozenset(
    {"view", "view_as", "reshape", "transpose", "permute", "select", "narrow", "unsqueeze", "squeeze", "expand"}
    | {"flatten", "unflatten", "t", "diagonal", "as_strided", "movedim", "__getitem__", "getitem", "slice"}
)


def _name(node: fx.Node) -> str:
    if node.op == "call_method":
        return node.target
    return getattr(node.target, "__name__", "") if node.op == "call_function" else ""


def written_input(node: fx.Node) -> fx.Node | None:
    """The graph input (placeholder) that `node` writes in place, directly or through views of it."""
    if node.op not in ("call_method", "call_function") or not node.args:
        return None
    name = _name(node)
    schema = getattr(node.target, "_schema", None)
    if schema is not None:
        written = [
            value
            for arg, value in zip(schema.arguments, node.args)
            if arg.alias_info is not None and arg.alias_info.is_write
        ]
    elif node.target is operator.setitem or (name.endswith("_") and not name.startswith("_")):
        written = [node.args[0]]
    else:
        return None
    target = written[0] if written and isinstance(written[0], fx.Node) else None
    while target is not None and target.op != "placeholder":
        if _name(target) not in _VIEWS or not target.args or not isinstance(target.args[0], fx.Node):
            return None
        target = target.args[0]
    return target


def _memory(value) -> tuple | None:
    """The memory a real tensor lives in (call_state.storage_key); None for anything else."""
    if not isinstance(value, torch.Tensor) or isinstance(value, compat.FakeTensor) or value.device.type == "meta":
        return None
    try:
        return storage_key(value)
    except (RuntimeError, NotImplementedError):  # a tensor without storage of its own
        return None


def computes_scalars(node: fx.Node) -> bool:
    """A node whose value holds no tensor: a size, an `.item()`, arithmetic on them."""
    value = node.meta.get("example_value")
    return value is not None and not any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(value))


def plan(graph: int, candidates: list[fx.Node], eager_ids: set[str]) -> list[Piece]:
    """Maximal contiguous runs of candidates alike (compiled or eager); each selection joins the
    piece of the node it selects from (placed after it: a valid order, it reads nothing else).
    A node that computes scalars is no choice either: each piece that reads one computes it again
    (with the scalars it reads in turn), so only tensors and the graph's own inputs cross pieces,
    never a scalar a piece read from a tensor (compiled, that is a data-dependent output; the
    graph's output reads its scalars from the last piece)."""
    scalars = {n for n in candidates if computes_scalars(n)}
    sources = {n: selection_source(n) for n in candidates if n not in scalars}
    own = [n for n, source in sources.items() if source is None]
    pieces = [
        Piece(graph, list(run), compiled)
        for compiled, run in itertools.groupby(own, key=lambda n: node_id(graph, n) not in eager_ids)
    ]
    if not pieces:
        return pieces
    piece_of = {n: p for p in pieces for n in p.nodes}
    order = {n: i for i, n in enumerate(candidates)}
    for node, source in sources.items():
        if source is not None:
            piece_of[source].nodes.append(node)
    pieces[-1].nodes.extend(n for n in scalars if any(u.op == "output" for u in n.users))
    for piece in pieces:
        piece.nodes.extend(_scalars_read(piece.nodes, scalars))
        piece.nodes.sort(key=order.__getitem__)
        members = set(piece.nodes)
        inputs = {a: None for n in piece.nodes for a in n.all_input_nodes if a not in members and a.op != "get_attr"}
        piece.inputs = list(inputs)
        piece.outputs = [
            n for n in piece.nodes if any(u not in members and (n not in scalars or u.op == "output") for u in n.users)
        ]
    return pieces


def _scalars_read(nodes: list[fx.Node], scalars: set[fx.Node]) -> set[fx.Node]:
    """The scalar nodes `nodes` read, directly or through other scalar nodes, not among them."""
    found: set[fx.Node] = set()
    pending = list(nodes)
    while pending:
        for value in pending.pop().all_input_nodes:
            if value in scalars and value not in found:
                found.add(value)
                pending.append(value)
    return found - set(nodes)


def extract(gm: fx.GraphModule, piece: Piece) -> fx.GraphModule:
    """The piece as a GraphModule of its own: its inputs as placeholders, its outputs as a tuple
    (as Dynamo's graphs return), the attributes it reads taken from `gm`."""
    graph = fx.Graph()
    env = {}
    for value in piece.inputs:
        env[value] = graph.placeholder(value.name)
        env[value].meta = dict(value.meta)

    def lookup(value: fx.Node) -> fx.Node:
        if value not in env:  # a get_attr: copied into each piece that reads it
            env[value] = graph.node_copy(value)
        return env[value]

    for node in piece.nodes:
        env[node] = graph.node_copy(node, lookup)
    graph.output(tuple(env[n] for n in piece.outputs))
    return fx.GraphModule(gm, graph, class_name="Piece")


class Isolation:
    def __init__(self, session):
        self.session = session
        self.spec = session.spec.isolation
        self.eager_ids = set(self.spec.eager_nodes)
        self.graphs = 0
        self.order: dict[str, int] = {}
        self.pieces: list[Piece] = []
        self.compiled: set[str] = set()
        self.report = {"graphs": 0, "nodes": [], "compiled": [], "pieces": [], "unmatched": []}
        if self.spec.eager_writes:
            self.report["forced_writes"] = {path: [] for path in self.spec.eager_writes}
        if self.spec.observe:
            self.report["observed"] = {}
        session.status.record_isolation(self.report)

    def splitting_backend(self, backend):
        def backend_fn(gm: fx.GraphModule, example_inputs):
            return self._split(gm, example_inputs, backend)

        return backend_fn

    def _split(self, gm: fx.GraphModule, example_inputs, backend):
        """A compile that raises (Dynamo restarting its analysis, or failing) leaves no trace: the
        graph that replaces it takes its index, as in the dump (provenance.Snapshots)."""
        kept = (len(self.report["nodes"]), len(self.pieces), set(self.compiled), set(self.eager_ids))
        forced = {path: list(ids) for path, ids in self.report.get("forced_writes", {}).items()}
        try:
            compiled = self._compile(self.graphs, gm, example_inputs, backend)
        except BaseException:
            nodes, pieces, self.compiled, self.eager_ids = kept
            if forced:
                self.report["forced_writes"] = forced
            for entry in self.report["nodes"][nodes:]:
                del self.order[entry["id"]]
            del self.report["nodes"][nodes:]
            del self.pieces[pieces:]
            self._update_report()
            raise
        self.graphs += 1
        self._update_report()
        return compiled

    def _compile(self, graph: int, gm: fx.GraphModule, example_inputs, backend):
        candidates = [n for n in gm.graph.nodes if n.op in CANDIDATE_OPS]
        for node in candidates:
            self.order[node_id(graph, node)] = len(self.order)
            self.report["nodes"].append(describe(graph, node))
        if self.spec.eager_writes:
            self._force_writes(graph, gm, candidates, example_inputs)
        pieces = plan(graph, candidates, self.eager_ids)
        for piece in pieces:
            if piece.compiled and self.spec.repro:
                piece.module = extract(gm, piece)  # before the backend's passes change gm
        self.pieces.extend(pieces)
        self._update_report()
        if not pieces or (len(pieces) == 1 and pieces[0].compiled):
            return self._whole(gm, example_inputs, backend, pieces)
        observed = self._observed(pieces)
        if len(pieces) == 1 and not observed:  # every node eager
            return gm.forward
        given = dict(zip((n for n in gm.graph.nodes if n.op == "placeholder"), example_inputs))
        return SplitGraph(gm, [self._runner(gm, p, backend, given) for p in pieces], pieces, observed, self.observe)

    def _observed(self, pieces: list[Piece]) -> dict[fx.Node, str]:
        """The observed nodes of the eager pieces (by id), each made an output of its piece."""
        observed = {}
        for piece in pieces:
            if piece.compiled:
                continue
            for node in piece.nodes:
                if node_id(piece.graph, node) in self.spec.observe:
                    observed[node] = node_id(piece.graph, node)
                    if node not in piece.outputs:
                        piece.outputs.append(node)
        return observed

    def observe(self, node: str, value) -> None:
        """Records an observed node's value of this call."""
        if not dumpable(value):
            return
        folder = self.session.spec.run_dir / "observed" / node
        folder.mkdir(parents=True, exist_ok=True)
        step = self.session.step
        np.save(folder / f"{step}.npy", to_numpy(value))
        self.report["observed"].setdefault(node, []).append(step)
        self._update_report()

    def _force_writes(self, graph: int, gm: fx.GraphModule, candidates: list[fx.Node], example_inputs) -> None:
        """The nodes that write the state `eager_writes` names in place join the eager ones."""
        state = self.session.call_state
        tensors = state.tensors() if state is not None else []
        paths = {_memory(s.tensor): s.path for s in tensors if s.path in self.spec.eager_writes}
        paths.pop(None, None)
        given = dict(zip((n for n in gm.graph.nodes if n.op == "placeholder"), example_inputs))
        for node in candidates:
            path = paths.get(_memory(given.get(written_input(node))))
            if path is not None:
                self.eager_ids.add(node_id(graph, node))
                self.report["forced_writes"][path].append(node_id(graph, node))

    def _whole(self, gm, example_inputs, backend, pieces):
        """Every node compiled: the backend gets Dynamo's graph, as without isolation."""
        compiled = backend(gm, example_inputs)
        if not pieces:
            return compiled
        self.note_compiled(pieces[0])
        if not self.spec.repro:
            return compiled
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]

        def recording(*args):
            if pieces[0].recorded is None:
                values = dict(zip(placeholders, args))
                pieces[0].record(values[n] for n in pieces[0].inputs)
            return compiled(*args)

        return recording

    def _runner(self, gm, piece: Piece, backend, given: dict):
        return CompiledPiece(self, gm, piece, backend, given) if piece.compiled else extract(gm, piece)

    def note_compiled(self, piece: Piece) -> None:
        # a selection goes where its producer goes, a scalar where it is read: no choices of their
        # own, so not reported
        self.compiled.update(
            node_id(piece.graph, n) for n in piece.nodes if selection_source(n) is None and not computes_scalars(n)
        )
        self._update_report()

    def _update_report(self) -> None:
        self.report["graphs"] = self.graphs
        self.report["compiled"] = sorted(self.compiled, key=self.order.__getitem__)
        self.report["pieces"] = [{"graph": p.graph, "nodes": p.ids(), "compiled": p.compiled} for p in self.pieces]
        self.report["unmatched"] = sorted(self.eager_ids - set(self.order))

    def close(self) -> None:
        """At the end of the run: the repro of the compiled pieces, when asked for."""
        self._update_report()
        if not self.spec.repro:
            return
        pieces = [p for p in self.pieces if p.compiled and p.recorded is not None]
        if not pieces:
            self.report["repro_error"] = "no compiled piece ran: nothing to reproduce"
            return
        try:
            path = write_repro(self.session.spec.run_dir / "repro", pieces, self.session.spec)
        except ReproError as e:
            self.report["repro_error"] = str(e)
            return
        self.report["repro"] = str(path.relative_to(self.session.spec.run_dir))


class CompiledPiece:
    """A compiled piece: compiled with the backend on what Dynamo gave the graph for the graph's
    inputs and on Dynamo's example values for the others (the module docstring says why); its
    first call's inputs are kept for the repro."""

    def __init__(self, isolation: Isolation, gm: fx.GraphModule, piece: Piece, backend, given: dict):
        self.isolation = isolation
        self.piece = piece
        example_inputs = [given[v] if v in given else v.meta["example_value"] for v in piece.inputs]
        self.compiled = backend(extract(gm, piece), example_inputs)
        isolation.note_compiled(piece)

    def __call__(self, *args):
        if self.isolation.spec.repro and self.piece.recorded is None:
            self.piece.record(args)
        return self.compiled(*args)


class SplitGraph:
    """Runs a graph's pieces in order, each on the values the earlier ones produced; a value is
    dropped after the last piece that reads it."""

    def __init__(self, gm: fx.GraphModule, runners: list, pieces: list[Piece], observed: dict, record):
        self.observed = observed  # node -> id: values recorded with `record(id, value)`
        self.record = record
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        output = next(n for n in gm.graph.nodes if n.op == "output")
        self.result = output.args[0]
        kept = set(output.all_input_nodes)
        last_reader = {value: i for i, piece in enumerate(pieces) for value in piece.inputs}
        self.steps = [
            (runner, piece.inputs, piece.outputs, [v for v in piece.inputs if last_reader[v] == i and v not in kept])
            for i, (runner, piece) in enumerate(zip(runners, pieces))
        ]

    def __call__(self, *args):
        env = dict(zip(self.placeholders, args))
        for run, inputs, outputs, done in self.steps:
            values = run(*[env[n] for n in inputs])
            env.update(zip(outputs, values))
            for node, value in zip(outputs, values):
                if node in self.observed:
                    self.record(self.observed[node], value)
            for value in done:
                del env[value]
        return fx.node.map_arg(self.result, env.__getitem__)
