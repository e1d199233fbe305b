"""examples/custom_op_mutation: the custom op writes its input in place while its schema says it
writes nothing; Inductor, trusting the schema, reads that input after the call where eager read
it before, so compiled differs from eager; the meta check's schema check names the op and the
input it writes, and finds nothing else wrong."""

import json

import numpy as np

from example_runs import example_cache, example_runs, needs  # noqa: F401

GATE = "diagnose_example.scaled_gate.default"


@needs("custom_op/eager-meta", "custom_op/inductor")
def test_inductor_differs_and_the_schema_check_names_the_written_input(example_runs):
    eager, compiled = example_runs.get("custom_op/eager-meta"), example_runs.get("custom_op/inductor")
    assert np.abs(eager.output_arrays()[0] - compiled.output_arrays()[0]).max() > 0.1
    entries = {e["op"]: e for e in json.loads((eager.run_dir / "meta_check.json").read_text())["ops"]}
    gate = entries.pop(GATE)
    assert gate["status"] == "ok"  # its fake implementation is right
    assert gate["schema"] == "diagnose_example::scaled_gate(Tensor x, Tensor scale) -> Tensor"
    assert gate["violations"] == [
        {
            "check": "schema",
            "kind": "undeclared mutation",
            "message": "writes its input `x` in place, which the schema does not declare "
            "(custom_op: mutates_args=('x',))",
        }
    ]
    assert all(e["status"] == "ok" and "violations" not in e for e in entries.values()), entries
