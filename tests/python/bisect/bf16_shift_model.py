"""A bf16 block whose compiled result differs from eager only through Inductor's fused
precision: eager rounds `h + 64` to bf16 (steps of 0.5 there) before the shift is taken back
out, fused code keeps it in fp32. emulate_precision_casts restores eager's rounding."""

import torch

torch.manual_seed(0)


class ShiftedResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, x):
        h = self.proj(x)
        return ((h + 64.0) * 0.5 - 32.0) * 2.0


model = ShiftedResidual().to(torch.bfloat16)
compiled = torch.compile(model)
with torch.no_grad():
    print(compiled(torch.randn(16, 32, dtype=torch.bfloat16)).float().abs().sum().item())
