"""torch.compile backends for the single-op tests: they run the graph as is, except for graphs
holding a tanh, which they refuse (an exception) or crash on (SIGABRT)."""

import os


def _has_tanh(gm) -> bool:
    return any("tanh" in str(node.target) for node in gm.graph.nodes)


def refusing_backend(gm, example_inputs):
    if _has_tanh(gm):
        raise RuntimeError("refusing_backend: no tanh here")
    return gm.forward


def aborting_backend(gm, example_inputs):
    if _has_tanh(gm):
        os.abort()
    return gm.forward
