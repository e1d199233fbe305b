"""Module boundaries (`dump: {boundaries: true}`, fx_dump.module_boundary): the FX nodes whose value
leaves a module that holds modules of its own (a layer, its MLP) or reaches the graph's output,
on the graph Dynamo traces and on the ATen graph AOT Autograd makes of it, a value read through a
view of it included; the nodes inside a module, and the outputs of leaf modules used in their
parent, are not; each boundary value says which module it leaves (fx_dump.left_module)."""

from __future__ import annotations

import torch
from torch import nn

from diagnose_pytorch import compat
from diagnose_pytorch.dump.fx_dump import left_module, module_boundary, module_path


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.mlp = Mlp()

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def graphs(aten: bool) -> list[torch.fx.GraphModule]:
    seen = []

    def backend(gm, example_inputs):
        if not aten:
            seen.append(gm)
            return gm.forward

        def forward_compiler(fx_gm, _inputs):
            seen.append(fx_gm)
            return fx_gm.forward

        return compat.aot_autograd(fw_compiler=forward_compiler)(gm, example_inputs)

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(Model(), backend=backend)(torch.randn(2, 8))
    return seen


def boundaries(gm: torch.fx.GraphModule) -> dict[str, set[str]]:
    """The module paths of the call_function nodes, split into boundary and inside."""
    out = {"boundary": set(), "inside": set()}
    for node in gm.graph.nodes:
        if node.op == "call_function":
            out["boundary" if module_boundary(node) else "inside"].add(module_path(node) or "")
    return out


def test_dynamo_graph_boundaries_are_module_outputs():
    (gm,) = graphs(aten=False)
    found = boundaries(gm)
    # the MLP's output (its down projection) and each layer's residual add, and the head that
    # the graph returns; not the up projection, the activation or the norm, used where they are
    assert found["boundary"] == {"layers.0.mlp.down", "layers.0", "layers.1.mlp.down", "layers.1", "head"}
    assert {"layers.0.mlp.up", "layers.0.mlp", "layers.0.norm"} <= found["inside"]
    # the module each boundary value leaves (the innermost holding modules): what the op-by-op
    # pass after a failing module output dumps the ops of
    left = {module_path(n): left_module(n) for n in gm.graph.nodes if n.op == "call_function" and module_boundary(n)}
    assert left["layers.0.mlp.down"] == "layers.0.mlp" and left["layers.1"] == "layers.1"
    assert left["head"] is None  # a leaf module at the root: it leaves no module holding modules


def test_aten_graph_keeps_the_same_boundaries():
    (gm,) = graphs(aten=True)
    found = boundaries(gm)
    assert {"layers.0.mlp.down", "layers.0", "layers.1.mlp.down", "layers.1", "head"} <= found["boundary"]
    assert "layers.0.mlp.up" not in found["boundary"] and "layers.0.norm" not in found["boundary"]
    # the down projection's matmul, which compiled code materialises, leaves the MLP through its view
    matmuls = [n for n in gm.graph.nodes if n.op == "call_function" and "mm" in str(n.target)]
    down = [n for n in matmuls if module_path(n) == "layers.0.mlp.down"]
    assert down and all(module_boundary(n) for n in down)
    assert not any(module_boundary(n) for n in matmuls if module_path(n) == "layers.0.mlp.up")
