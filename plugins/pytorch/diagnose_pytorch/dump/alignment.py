"""The names a compiled-level dump of a user backend built on Inductor gives its buffers: the
golden's, matched by provenance, never by name.

The golden (fx_dump) runs AOT Autograd on the graph Dynamo made; the user's backend runs its own
pass first, then compile_fx's AOT Autograd, so the ATen graph it compiles names its nodes
differently as soon as the pass adds or removes one (`cat_3` here is not the golden's `cat_3`).
Each ATen node is keyed by provenance instead: (the Dynamo node it was traced from, unchanged
(provenance.DynamoGraph.traced_from), its ATen target, its ordinal among the ATen nodes of that
Dynamo node and target). Before the user's backend runs, the golden's own ATen graph is traced
from a copy of Dynamo's graph (fx_dump's AOT options, fake tensors: nothing runs) and keyed
alike; each node of the target's ATen graph then takes the golden name of its key. A node with
no key (one the user's pass created, or whose target it changed), or whose Dynamo node makes
another number of ATen nodes of its target here than in the golden (the pass changed what it
computes), takes none: its buffer is not dumped, and status.json says why (`inductor_unmapped`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from torch import fx

from .. import compat
from .fx_dump import aot_options
from .provenance import DynamoGraph

Key = tuple[str, str, int]  # Dynamo node, ATen target, ordinal


def provenance_keys(graph: fx.Graph, dynamo: DynamoGraph) -> tuple[dict[str, Key | str], Counter]:
    """Each call_function node's key, or why it has none; and how many nodes each (Dynamo node,
    target) has."""
    keys: dict[str, Key | str] = {}
    counts: Counter = Counter()
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        root = dynamo.traced_from(node)
        if root is None:
            keys[node.name] = "traced from no unchanged node of Dynamo's graph (a node a graph pass created or changed)"
            continue
        group = (root, str(node.target))
        keys[node.name] = (*group, counts[group])
        counts[group] += 1
    return keys, counts


def golden_forward(gm: fx.GraphModule, example_inputs, backend: str) -> tuple[fx.GraphModule, DynamoGraph]:
    """The forward ATen graph fx_dump makes of Dynamo's `gm` for `backend`, traced from a copy of
    `gm` (the user's pass may change `gm` itself), and the copy's snapshot."""
    graph = fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    copy = fx.GraphModule(gm, graph)
    snapshot = DynamoGraph.snapshot(0, copy)
    captured = []

    def forward_compiler(fx_gm, _inputs):
        captured.append(fx_gm)
        return fx_gm

    compat.aot_autograd(fw_compiler=forward_compiler, **aot_options(backend))(copy, example_inputs)
    return captured[0], snapshot


@dataclass
class Alignment:
    golden: dict[Key, str]
    golden_counts: Counter
    names: dict[str, str] = field(default_factory=dict)  # target ATen node -> golden node
    reasons: dict[str, str] = field(default_factory=dict)  # target ATen node -> why it has none
    aligned: bool = False
    failure: str = ""  # why there are no golden names at all

    @classmethod
    def failed(cls, why: str) -> Alignment:
        return cls({}, Counter(), failure=why)

    @classmethod
    def of_golden(cls, forward: fx.GraphModule, snapshot: DynamoGraph) -> Alignment:
        keys, counts = provenance_keys(forward.graph, snapshot)
        return cls({key: name for name, key in keys.items() if isinstance(key, tuple)}, counts)

    def align(self, graph: fx.Graph, dynamo: DynamoGraph) -> None:
        """Names the nodes of the target's ATen graph (as AOT Autograd made it, before Inductor's
        post-grad passes)."""
        keys, counts = provenance_keys(graph, dynamo)
        for name, key in keys.items():
            if isinstance(key, str):
                self.reasons[name] = key
            elif counts[key[:2]] != self.golden_counts[key[:2]]:
                self.reasons[name] = (
                    f"{key[0]} makes {counts[key[:2]]} {key[1]} node(s) here, {self.golden_counts[key[:2]]} in "
                    "the golden graph (a graph pass changed what it computes)"
                )
            else:
                self.names[name] = self.golden[key]
        self.aligned = True

    def name_of(self, node: fx.Node) -> str | None:
        return self.names.get(node.name)

    def reason(self, node: fx.Node) -> str:
        if self.failure:
            return self.failure
        if node.op != "call_function":
            return "a graph input: the golden dumps none"
        return self.reasons.get(node.name, "created by Inductor's post-grad passes: no node of the golden graph")
