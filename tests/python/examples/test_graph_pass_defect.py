"""examples/graph_pass_defect: the custom Inductor pass negates the centring `sub`; the
compiled-level dump of the user backend localises it: the buffers before it match eager, the
buffer computing `sub` is exactly the negated eager value."""

import numpy as np

from example_runs import example_cache, example_runs, needs  # noqa: F401
from fixtures.dump_reader import read_dump


def by_key(run, kind="op"):
    dump = run.run_dir / "dump"
    return {
        r["op_key"]: (r, np.load(dump / r["file"]).reshape(r["shape"]))
        for r in read_dump(dump).tensors
        if r.get("kind") == kind and r["io"] == "output"
    }


@needs("graph_pass/eager", "graph_pass/compiled")
def test_compiled_dump_localises_the_negated_sub(example_runs):
    eager, compiled = example_runs.get("graph_pass/eager"), example_runs.get("graph_pass/compiled")
    assert np.abs(eager.output_arrays()[0] - compiled.output_arrays()[0]).max() > 0.1
    golden, target = by_key(eager), by_key(compiled)
    assert compiled.status["graphs"]["count"] == 1 and compiled.status["inductor_buffers"]["0"] > 0
    np.testing.assert_allclose(
        target["addmm-aten.addmm.default"][1], golden["up/aten.addmm.default#0"][1], rtol=1e-5, atol=1e-6
    )
    record, centred_times_two = target["mul-aten.mul.Tensor"]
    assert "sub" in record["fx_nodes"]
    np.testing.assert_allclose(centred_times_two, -golden["aten.mul.Tensor#0"][1], rtol=1e-5, atol=1e-6)
