"""A torch.compile backend for the scale benchmark's planted variant: Inductor plus one post-grad
custom pass (Inductor's own slot, compiled code only) that scales the product act(gate) * up of
one decoder layer's MLP by 1.125, as a wrong kernel would. The layer is LAYER (set by the model
script); the op is the first aten.mul.Tensor whose module stack is `model.layers.{LAYER}.mlp`."""

from __future__ import annotations

import torch
from torch._inductor import config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

LAYER = 17
SCALE = 1.125


def _in_planted_mlp(node: torch.fx.Node) -> bool:
    stack = node.meta.get("nn_module_stack") or {}
    suffix = f"layers.{LAYER}.mlp"
    return any(str(path).endswith(suffix) or f"{suffix}." in str(path) for path, _ in stack.values())


class ScaleOneMlpProduct(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.op == "call_function" and node.target == torch.ops.aten.mul.Tensor and _in_planted_mlp(node):
                with graph.inserting_after(node):
                    scaled = graph.call_function(torch.ops.aten.mul.Tensor, (node, SCALE))
                node.replace_all_uses_with(scaled, delete_user_cb=lambda user, new=scaled: user is not new)
                scaled.meta.update(node.meta)
                return

    def uuid(self) -> str:
        return f"diagnose-scale-bench-planted-mlp-{LAYER}-{SCALE}"


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch(post_grad_custom_post_pass=ScaleOneMlpProduct()):
        return compile_fx(gm, example_inputs)
