"""examples/bf16_more_accurate: in bfloat16, Inductor (fp32 intermediates in fused kernels) is
closer to an fp64 referee than eager bfloat16 is, although the two differ from each other."""

import numpy as np

from example_runs import example_cache, example_runs, needs  # noqa: F401


@needs("bf16/eager-bf16", "bf16/inductor-bf16", "bf16/eager-fp64")
def test_inductor_bf16_is_closer_to_the_fp64_referee_than_eager_bf16(example_runs):
    referee = example_runs.get("bf16/eager-fp64").output_arrays()[0]
    eager = example_runs.get("bf16/eager-bf16").output_arrays()[0]
    inductor = example_runs.get("bf16/inductor-bf16").output_arrays()[0]
    assert referee.dtype == np.float64
    assert not np.allclose(eager, inductor, rtol=1e-3, atol=1e-3)
    eager_error, inductor_error = np.abs(eager - referee), np.abs(inductor - referee)
    assert inductor_error.mean() < 0.8 * eager_error.mean()
    assert inductor_error.max() <= eager_error.max()
