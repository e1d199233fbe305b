"""A user compile backend for `module:function` run specs: records the ops of every graph it
is given into the file named by $USER_BACKEND_RECORD, then runs the graph as is."""

import json
import os


def recording_backend(gm, example_inputs):
    ops = [str(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_module", "call_method")]
    with open(os.environ["USER_BACKEND_RECORD"], "a") as f:
        f.write(json.dumps({"ops": ops, "inputs": len(example_inputs)}) + "\n")
    return gm.forward
