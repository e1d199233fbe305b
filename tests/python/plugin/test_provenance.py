"""dump/provenance.py and dump/alignment.py in process: Dynamo graphs snapshotted, then a user's
pass and AOT Autograd (no Inductor, no model process: quick), each ATen node tied to the Dynamo
node it came from and named after the golden's node of the same provenance."""

from __future__ import annotations

import operator
from collections.abc import Callable

import pytest
import torch
from torch import fx

from diagnose_pytorch import compat
from diagnose_pytorch.dump.alignment import Alignment, golden_forward
from diagnose_pytorch.dump.fx_dump import aot_options
from diagnose_pytorch.dump.provenance import Snapshots


def _model(x, w):
    h = torch.relu(x @ w)
    y = torch.cat([h, x], dim=-1)
    return torch.softmax(y * 2, dim=-1)


def _identity_inserted_after(target) -> Callable[[fx.GraphModule], None]:
    """A user's pass: a new node (no meta) after each call of `target`, which shifts AOT's names
    after it."""

    def insert(gm: fx.GraphModule) -> None:
        for node in list(gm.graph.nodes):
            if node.op == "call_function" and node.target is target:
                with gm.graph.inserting_after(node):
                    identity = gm.graph.call_function(operator.mul, (node, 1.0))
                node.replace_all_uses_with(identity)
                identity.args = (node, 1.0)
        gm.recompile()

    return insert


_insert_identity_after_relu = _identity_inserted_after(torch.relu)
_insert_identity_after_cat = _identity_inserted_after(torch.cat)


class _Rewrite(fx.Transformer):
    """A user's pass through fx.Transformer: a new graph, every node recreated."""


def _compile(fn, args, user_pass=None, dynamic=False, calls=None):
    """Runs `fn` compiled with AOT Autograd behind the snapshot; returns, per Dynamo graph, the
    AOT forward graph and {ATen node name: graph_nodes}."""
    snapshots = Snapshots()
    graphs = []

    def backend(gm, example_inputs):
        if user_pass is not None:
            gm = user_pass(gm) or gm

        def forward(fx_gm, _inputs):
            graphs.append((fx_gm, {n.name: snapshots.graph_nodes([n]) for n in fx_gm.graph.nodes}))
            return fx_gm

        return compat.aot_autograd(fw_compiler=forward)(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=snapshots.wrapping(backend), dynamic=dynamic)
    with torch.no_grad():
        for call in calls or [args]:
            compiled(*call)
    return graphs


ARGS = (torch.randn(3, 4), torch.randn(4, 4))


def _traced(graphs) -> dict[str, list[str]]:
    return {name: ids for _, table in graphs for name, ids in table.items() if ids}


def test_each_aten_node_names_the_dynamo_node_it_came_from():
    traced = _traced(_compile(_model, ARGS))
    assert traced["mm"] == ["g0.matmul"] and traced["relu"] == ["g0.h"]
    assert traced["cat"] == ["g0.y"] and traced["mul"] == ["g0.mul"]
    assert {ids[0] for ids in traced.values()} == {"g0.matmul", "g0.h", "g0.y", "g0.mul", "g0.softmax"}


def test_a_node_the_users_pass_created_names_none_and_shifts_no_other():
    graphs = _compile(_model, ARGS, user_pass=_insert_identity_after_relu)
    traced = _traced(graphs)
    # AOT's `mul` is now the pass's multiply: tied to no Dynamo node; `mul_1` is y * 2
    assert "mul" not in traced and traced["mul_1"] == ["g0.mul"]
    assert traced["relu"] == ["g0.h"] and traced["cat"] == ["g0.y"]


def test_a_transformer_pass_keeps_the_chain():
    traced = _traced(_compile(_model, ARGS, user_pass=lambda gm: _Rewrite(gm).transform()))
    assert traced["relu"] == ["g0.h"] and traced["mul"] == ["g0.mul"]


def _decode(x, cache):
    keys = torch.cat([cache, x], dim=0)
    scores = x @ keys.transpose(0, 1)
    return torch.softmax(scores, dim=-1) @ keys


def test_dynamic_shapes_each_graph_its_own_index():
    # dynamic=True: SymInt inputs; a graph break (the prefill, then the one-token decode) in
    # separate compiles: the second graph is g1 whatever its names
    def step(x, cache):
        out = _decode(x, cache)
        torch._dynamo.graph_break()
        return _decode(out[-1:], cache)

    graphs = _compile(step, (torch.randn(5, 4), torch.randn(7, 4)), dynamic=True)
    assert len(graphs) == 2
    for k, (gm, table) in enumerate(graphs):
        assert any(isinstance(n.meta.get("val"), torch.SymInt) for n in gm.graph.nodes)
        ids = {i for nodes in table.values() for i in nodes}
        assert ids and all(i.startswith(f"g{k}.") for i in ids)
        cat = next(n.name for n in gm.graph.nodes if n.target is torch.ops.aten.cat.default)
        assert table[cat] == [f"g{k}.keys"]
        # SymInt arithmetic and sizes: no tensor of a candidate's, never a borrowed name
        for node in gm.graph.nodes:
            if isinstance(node.meta.get("val"), torch.SymInt) and node.op == "placeholder":
                assert table[node.name] == []


def test_outside_a_compile_nothing_is_known():
    node = next(iter(fx.symbolic_trace(lambda x: x + 1).graph.nodes))
    assert Snapshots().graph_nodes([node]) == []


@pytest.mark.parametrize("layout", ["node_source", "tuples"])
def test_ancestors_nearest_first(layout):
    graph = fx.Graph()
    x = graph.placeholder("x")
    root = graph.call_function(torch.relu, (x,))
    middle = graph.call_function(torch.relu, (root,))
    leaf = graph.call_function(torch.relu, (middle,))
    if layout == "tuples":  # torch 2.5: oldest first, no graph ids
        leaf.meta["from_node"] = [("relu", torch.relu), ("relu_1", torch.relu)]
        expected = [("relu_1", str(torch.relu), None), ("relu", str(torch.relu), None)]
    else:
        NodeSource = fx.traceback.NodeSource
        middle.meta["from_node"] = [NodeSource(root, "a_pass")]
        leaf.meta["from_node"] = [NodeSource(middle, "another")]
        expected = [("relu_1", str(torch.relu), id(graph)), ("relu", str(torch.relu), id(graph))]
    assert compat.node_ancestors(leaf) == expected
    assert compat.node_ancestors(root) == []


def _aligned(fn, args_list, user_pass, dynamic=False) -> list[Alignment]:
    """Per Dynamo graph: the golden's names traced before `user_pass`, then the target's ATen
    graph (the pass's output through Inductor's AOT options) aligned to them."""
    snapshots = Snapshots()
    alignments = []

    def backend(gm, example_inputs):
        dynamo = snapshots.current
        alignment = Alignment.of_golden(*golden_forward(gm, example_inputs, "inductor"))
        alignments.append(alignment)
        user_pass(gm)

        def forward(fx_gm, _inputs):
            alignment.align(fx_gm.graph, dynamo)
            return fx_gm

        return compat.aot_autograd(fw_compiler=forward, **aot_options("inductor"))(gm, example_inputs)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=snapshots.wrapping(backend), dynamic=dynamic)
    with torch.no_grad():
        for args in args_list:
            compiled(*args)
    return alignments


def test_alignment_across_a_users_pass_names_by_provenance_not_by_name():
    (alignment,) = _aligned(_model, [ARGS], _insert_identity_after_relu)
    # the target's AOT graph: mm, relu, mul (the pass's), cat, mul_1 (y * 2)...; the golden's:
    # mm, relu, cat, mul (y * 2)
    assert alignment.names["mul_1"] == "mul" and alignment.names["cat"] == "cat"
    assert alignment.names["relu"] == "relu" and alignment.names["mm"] == "mm"
    assert "mul" not in alignment.names and "traced from no unchanged node" in alignment.reasons["mul"]


def _change_a_constant(gm: fx.GraphModule) -> None:
    """A pass that changes one node's arguments in place (y * 2 becomes y * 3, its target
    stays): still that node, compared as the golden's (where a planted defect shows)."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.mul:
            node.args = (node.args[0], 3)
    gm.recompile()


def _retarget_softmax(gm: fx.GraphModule) -> None:
    """A pass that swaps a node's target in place: no longer the golden's node."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.softmax:
            node.target = torch.log_softmax
    gm.recompile()


def test_a_node_whose_target_the_pass_changed_takes_no_golden_name():
    (kept,) = _aligned(_model, [ARGS], _change_a_constant)
    assert not kept.reasons and set(kept.names) == set(kept.names.values()) and "mul" in kept.names
    (changed,) = _aligned(_model, [ARGS], _retarget_softmax)
    softmax_nodes = [name for name, why in changed.reasons.items() if "changed" in why]
    assert softmax_nodes and not set(softmax_nodes) & set(changed.names)
    assert changed.names["cat"] == "cat"


def _decode_step(x, cache):
    out = _decode(x, cache)
    torch._dynamo.graph_break()
    return _decode(out[-1:], cache)


def test_alignment_with_dynamic_shapes_each_graph_its_own_golden():
    # dynamic=True: a prompt of 5 then of 3 tokens (one graph each side of the break serves both)
    calls = [(torch.randn(n, 4), torch.randn(7, 4)) for n in (5, 3)]
    alignments = _aligned(_decode_step, calls, _insert_identity_after_cat, dynamic=True)
    assert len(alignments) == 2
    for alignment in alignments:
        cat_names = {t for t, g in alignment.names.items() if g.startswith("cat")}
        assert cat_names and all(alignment.names[t] == t for t in cat_names)
        # after the pass's node, the target's names shift by one; the golden's do not
        shifted = {t: g for t, g in alignment.names.items() if t != g}
        assert shifted and all(g in alignment.golden.values() for g in shifted.values())
        assert any("traced from no unchanged node" in why for why in alignment.reasons.values())


def test_a_pre_grad_custom_pass_is_aligned_like_a_users_backend(monkeypatch):
    # Inductor runs config.pre_grad_custom_pass on Dynamo's graph before AOT names its nodes:
    # a node it adds shifts the names as a user backend's pass does (the test above)
    from diagnose_pytorch.dump.inductor_dump import renames_nodes

    monkeypatch.setattr(compat.inductor_config, "pre_grad_custom_pass", None)
    assert not renames_nodes(None) and renames_nodes(lambda gm, inputs: gm)
    monkeypatch.setattr(compat.inductor_config, "pre_grad_custom_pass", lambda graph: None)
    assert renames_nodes(None)


def test_an_unmapped_buffer_names_its_graph_nodes_and_the_dumped_buffers_that_read_it():
    # status.json's inductor_unmapped: a buffer of a node the user's pass made is listed with the
    # Dynamo nodes it was traced from, where in the code, and which dumped buffers read it (the
    # confirmation's candidate when their rows fail first); a reduction's partial sum only by name
    from types import SimpleNamespace

    from diagnose_pytorch.dump.inductor_dump import MAX_LISTED, BufferInfo, GraphBuffers

    norm = {"node": "add_1", "module": "layers.0.norm", "line": "model.py:9", "code": "h = self.norm(x)"}
    table = GraphBuffers()
    table.by_buffer = {
        "buf0": BufferInfo("buf0", "buf0", "", 0, ["var_mean"], []),
        "buf3": BufferInfo(
            "buf3",
            "mul_9",
            "",
            0,
            ["var_mean", "add_1"],
            [{**norm, "node": "var_mean"}, norm],
            unmapped_because="traced from no unchanged node of Dynamo's graph",
            nodes=[SimpleNamespace(name="mul_9", op="call_function")],
            graph_nodes=["g0.embedding", "g0.layer_norm"],
        ),
        "buf2": BufferInfo(  # a graph input's copy (the cache a cat extends): no candidate
            "buf2",
            "keys",
            "",
            0,
            ["cat_4"],
            [],
            unmapped_because="a graph input: the golden dumps none",
            nodes=[SimpleNamespace(name="keys", op="placeholder")],
            graph_nodes=["g1.keys"],
        ),
        "buf4": BufferInfo("buf4", "addmm", "aten.addmm.default", 0, ["addmm"], []),
        "buf5": BufferInfo("buf5", "addmm_1", "aten.addmm.default", 0, ["addmm_1"], []),
        "buf6": BufferInfo("buf6", "addmm", "aten.addmm.default", 1, ["addmm"], []),
    }
    table.copies = {"buf5"}
    table.readers = {"buf3": ["buf4", "buf5", "buf6", "buf0"], "buf0": ["buf3"]}
    partial, made, cache = table.unmapped()
    assert cache == {"buffer": "buf2", "fx_nodes": ["cat_4"], "reason": "a graph input: the golden dumps none"}
    assert partial == {"buffer": "buf0", "fx_nodes": ["var_mean"]}
    assert made == {
        "buffer": "buf3",
        "fx_nodes": ["var_mean", "add_1"],
        "reason": "traced from no unchanged node of Dynamo's graph",
        "graph_nodes": ["g0.embedding", "g0.layer_norm"],
        "sources": [norm],  # each place once, the last node's (whose value the buffer holds) first
        "read_by": ["addmm-aten.addmm.default"],  # dumped readers' op keys, once; no copy, no unmapped one
    }
    table.readers["buf3"] = [f"r{i}" for i in range(2 * MAX_LISTED)]
    table.by_buffer.update({f"r{i}": BufferInfo(f"r{i}", f"mm_{i}", "aten.mm.default", 0, [], []) for i in range(20)})
    assert len(table.unmapped()[1]["read_by"]) == MAX_LISTED
