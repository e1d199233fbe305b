"""Which nodes of the graph Dynamo handed to the backend an FX node was traced from.

Before any backend pass (the user's, Inductor's, AOT Autograd's) changes it, each Dynamo graph
is snapshotted: its index k in compile order (subgraph isolation numbers graphs alike, so
`g<k>.<name>` is the isolation candidate id) and the name and target of its nodes. A node of a
later graph (the user's pass's output, AOT's ATen graph, Inductor's post-grad graph) is tied to
a Dynamo node through its provenance (compat.node_ancestors: FX's `from_node` chain, which
fx.Interpreter-based tracing such as AOT Autograd's extends), the ancestor being a snapshotted
node of the same graph object with the same target; failing that (a pass that copied a node's
meta into a node of its own, a torch whose chain lacks graph ids), through the Dynamo node
name that Dynamo itself wrote into `source_fn_stack`."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from torch import fx

from .. import compat

CANDIDATE_OPS = ("call_function", "call_method", "call_module")


def node_id(graph: int, node: fx.Node | str) -> str:
    """The id of a Dynamo graph's node: `g<graph>.<name>`."""
    return f"g{graph}.{node if isinstance(node, str) else node.name}"


def _source_fn(node: fx.Node):
    stack = node.meta.get("source_fn_stack")
    return stack[-1] if stack else None


@dataclass
class DynamoGraph:
    index: int
    graph_id: int  # id() of the graph object: what from_node's entries name
    targets: dict[str, str]  # candidate node name -> str(target), as from_node writes it
    source_fns: dict[str, tuple]  # candidate node name -> its own source_fn_stack entry
    order: dict[str, int]

    @classmethod
    def snapshot(cls, index: int, gm: fx.GraphModule) -> DynamoGraph:
        nodes = [n for n in gm.graph.nodes if n.op in CANDIDATE_OPS]
        return cls(
            index,
            id(gm.graph),
            {n.name: str(n.target) for n in nodes},
            {n.name: entry for n in nodes if (entry := _source_fn(n)) is not None},
            {n.name: i for i, n in enumerate(nodes)},
        )

    def traced_from(self, node: fx.Node) -> str | None:
        """The Dynamo node `node`'s provenance chain reaches, unchanged (same target); None when
        it reaches none (a node a pass created, or whose target it changed)."""
        for name, target, graph_id in compat.node_ancestors(node):
            if graph_id in (None, self.graph_id) and self.targets.get(name) == target:
                return name
        return None

    def root(self, node: fx.Node) -> str | None:
        """The Dynamo node `node` was traced from: traced_from, else the Dynamo node that
        `source_fn_stack` names."""
        found = self.traced_from(node)
        if found is None:
            entry = _source_fn(node)
            if entry is not None and self.source_fns.get(entry[0]) == entry:
                found = entry[0]
        return found

    def graph_nodes(self, nodes) -> list[str]:
        """The candidate ids of the Dynamo nodes `nodes` were traced from, in graph order."""
        roots = {root for n in nodes if (root := self.root(n)) is not None}
        return [node_id(self.index, name) for name in sorted(roots, key=self.order.__getitem__)]


class Snapshots:
    """The Dynamo graph being compiled (`current`), while the backend compiles it."""

    def __init__(self):
        self.count = 0
        self.current: DynamoGraph | None = None

    def wrapping(self, backend):
        """`backend`, with each graph Dynamo hands it snapshotted first."""

        def backend_fn(gm: fx.GraphModule, example_inputs, **kwargs):
            with self.compiling(gm):
                return backend(gm, example_inputs, **kwargs)

        return backend_fn

    @contextlib.contextmanager
    def compiling(self, gm: fx.GraphModule):
        compat.feature("provenance")
        saved = self.current
        self.current = DynamoGraph.snapshot(self.count, gm)
        try:
            yield self.current
        finally:
            self.current = saved
        # only a compile that returns takes an index: one Dynamo abandons (the backend raised: its
        # analysis restarts, as a float it cannot keep symbolic makes it) leaves it to the graph
        # that replaces it, so whichever compiles restart, one run's ids name another's graphs
        self.count += 1

    def graph_nodes(self, nodes) -> list[str]:
        return self.current.graph_nodes(nodes) if self.current is not None else []
