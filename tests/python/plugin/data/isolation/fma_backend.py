"""A compile backend with a planted graph-only defect: it runs the graph node by node and, where
an add reads a multiply of the same graph (a "fused multiply-add"), adds an error. Every op alone
is right; so is a multiply whose add is in another graph."""

import operator

import torch

ERROR = 0.05
MULTIPLIES = {operator.mul, torch.mul, torch.ops.aten.mul.Tensor}
ADDS = {operator.add, torch.add, torch.ops.aten.add.Tensor}


def _is_multiply(value) -> bool:
    return isinstance(value, torch.fx.Node) and value.op == "call_function" and value.target in MULTIPLIES


class FusedMultiplyAdd(torch.fx.Interpreter):
    def run_node(self, node):
        result = super().run_node(node)
        if node.op == "call_function" and node.target in ADDS and any(_is_multiply(a) for a in node.args):
            return result + ERROR
        return result


def fma_backend(gm, example_inputs):
    def run(*args):
        return FusedMultiplyAdd(gm).run(*args)

    return run
