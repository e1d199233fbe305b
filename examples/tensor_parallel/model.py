"""A tensor-parallel MLP block as Megatron splits it, run by two ranks (torchrun
--nproc_per_node 2, gloo on CPU) and compiled with torch.compile: the up projection split by
output columns (column-parallel), a bias-GELU custom op on each rank's shard, the down
projection split by input rows (row-parallel), and an all_reduce (a functional collective) that
sums the ranks' partial outputs, so that every rank holds the same output.

The hidden width, 28, is split into shards of 16 columns, the last holding the rest: rank 0
holds 16 columns, rank 1 holds 12. Run alone it compiles with blocked_gelu_backend.py, whose
custom Inductor pass swaps the bias-GELU for a kernel that gets a partial block of 8 columns
wrong, so only rank 1's compiled block is wrong (see README.md); --backend inductor is clean.

    torchrun --nproc_per_node 2 examples/tensor_parallel/model.py [--backend blocked|inductor] [--out OUT.pt]
"""

import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import blocked_gelu_backend  # noqa: E402
import example_loop  # noqa: E402

DIM, HIDDEN, SHARD = 16, 28, 16


@torch.library.custom_op("diagnose_example::bias_gelu", mutates_args=())
def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x + bias)


@bias_gelu.register_fake
def _(x, bias):
    return torch.empty_like(x)


class ParallelMLP(nn.Module):
    def __init__(self, rank: int, hidden: int):
        super().__init__()
        full_up, full_down = nn.Linear(DIM, hidden), nn.Linear(hidden, DIM)  # the same seed on every rank
        columns = slice(rank * SHARD, min((rank + 1) * SHARD, hidden))
        self.up_weight = nn.Parameter(full_up.weight.detach()[columns].clone())
        self.up_bias = nn.Parameter(full_up.bias.detach()[columns].clone())
        self.down_weight = nn.Parameter(full_down.weight.detach()[:, columns].clone())
        self.down_bias = nn.Parameter(full_down.bias.detach().clone())

    def forward(self, x):
        hidden = bias_gelu(x @ self.up_weight.t(), self.up_bias)  # column-parallel
        partial = hidden @ self.down_weight.t()  # row-parallel: a partial sum of the output
        return funcol.all_reduce(partial, "sum", dist.group.WORLD) + self.down_bias


if __name__ == "__main__":
    args = example_loop.parser(backends=("blocked", "inductor")).parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    backend = blocked_gelu_backend.backend if args.backend == "blocked" else "inductor"
    compiled = torch.compile(ParallelMLP(dist.get_rank(), HIDDEN).eval(), backend=backend)
    example_loop.run(f"tensor_parallel rank {dist.get_rank()}", compiled, (4, DIM), args)
    dist.destroy_process_group()
