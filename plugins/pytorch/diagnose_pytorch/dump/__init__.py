"""Writing the diagnose dump: the format writer and the dumps at each level (ATen, FX, Inductor's
compiled buffers, TorchAir's aclgraph files), the final outputs, the state between calls and the
float64 truth."""
