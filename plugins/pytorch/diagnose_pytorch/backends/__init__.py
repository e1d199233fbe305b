"""The torch.compile backends a run compiles with: the one the spec names, TorchAir, Inductor's
named precision rules."""
