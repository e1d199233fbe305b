"""examples/device_kernel_defect: with EXAMPLE_KERNEL=fast the eager model is already wrong,
and the first op whose output diverges while its inputs agree is the custom RMSNorm."""

import numpy as np

from example_runs import example_cache, example_runs, needs  # noqa: F401
from fixtures.dump_reader import read_dump


def tensors(run):
    dump = run.run_dir / "dump"
    return {
        (r["op_key"], r["io"], r["index"], r.get("item")): (r, np.load(dump / r["file"]).reshape(r["shape"]))
        for r in read_dump(dump).tensors
        if r.get("kind") == "op"
    }


@needs("device/cpu", "device/fast")
def test_fast_kernel_diverges_first_at_the_custom_rms_norm(example_runs):
    cpu, fast = example_runs.get("device/cpu"), example_runs.get("device/fast")
    assert np.abs(cpu.output_arrays()[0] - fast.output_arrays()[0]).max() > 1e-3
    golden, target = tensors(cpu), tensors(fast)
    assert golden.keys() == target.keys()
    diverging = [
        (record["seq"], key)
        for key, (record, value) in golden.items()
        if not np.allclose(value, target[key][1], rtol=1e-5, atol=1e-6)
    ]
    seq, first = min(diverging)
    assert first[:2] == ("diagnose_example.rms_norm.default#0", "output")
    inputs = [k for k, (r, _) in golden.items() if r["seq"] == seq and k[1] == "input"]
    assert len(inputs) == 2 and all(np.array_equal(golden[k][1], target[k][1]) for k in inputs)
