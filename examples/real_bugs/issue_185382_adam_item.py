"""pytorch/pytorch#185382: an Adam step whose .item() breaks the graph, called in a loop: Inductor's
addcdiv_/addcmul_ results go wrong from the third iteration on (aot_eager is right)."""

import torch


def adam_step(param, grad, m, v, step_t):
    step_t.add_(1)
    m.mul_(0.9).add_(grad, alpha=0.1)
    v.mul_(0.999).addcmul_(grad, grad, value=0.001)
    step = step_t.item()  # graph break
    bc1 = 1 - 0.9**step
    bc2 = 1 - 0.999**step
    step_size = 0.001 / bc1
    denom = (v.sqrt() / (bc2**0.5)).add_(1e-8)
    param.addcdiv_(m, denom, value=-step_size)


def train(param, grad):
    param = param.clone()
    m, v, step = torch.zeros_like(param), torch.zeros_like(param), torch.zeros(())
    for _ in range(5):
        adam_step(param, grad, m, v, step)
    return param


generator = torch.Generator().manual_seed(0)
param, grad = torch.randn(16, generator=generator), torch.randn(16, generator=generator)
print(torch.compile(train)(param, grad))
