"""An MLP that pools its hidden features into buckets with a custom scatter-add whose
accumulation order changes from call to call, as atomics-based GPU kernels' does
(examples/nondeterministic_op/README.md). Two runs of the same script give different bits.

    python examples/nondeterministic_op/model.py [--out OUT.pt] [--steps N]
"""

import os
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


@torch.library.custom_op("diagnose_example::bucket_sum", mutates_args=())
def bucket_sum(values: torch.Tensor, bucket: torch.Tensor, buckets: int) -> torch.Tensor:
    # planted: the rows are added in an order drawn from os.urandom on every call, as atomic
    # adds land in whatever order the threads reach them; float32 addition is not associative
    order = torch.randperm(values.shape[0], generator=torch.Generator().manual_seed(int.from_bytes(os.urandom(8))))
    out = values.new_zeros((buckets, *values.shape[1:]))
    return out.index_add_(0, bucket[order], values[order])


@bucket_sum.register_fake
def _(values, bucket, buckets):
    return values.new_empty((buckets, *values.shape[1:]))


class BucketPoolMLP(nn.Module):
    def __init__(self, features=32, hidden=256, buckets=4, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(buckets, classes)
        self.register_buffer("bucket", torch.arange(hidden) % buckets)
        self.buckets = buckets

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # [batch, hidden]
        pooled = bucket_sum(h.t().contiguous(), self.bucket, self.buckets)  # [buckets, batch]
        return torch.log_softmax(self.fc2(pooled.t()), dim=-1)


if __name__ == "__main__":
    args = example_loop.parser().parse_args()
    torch.manual_seed(0)
    model = BucketPoolMLP().eval()
    example_loop.run("nondeterministic_op", torch.compile(model), (8, 32), args)
