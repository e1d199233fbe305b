"""Stand-in for a user's model: writes a small dump of .npy tensors, one per "op".

--perturb OP adds an error to that op's output and every op after it, like a
graph-mode defect would. --fail-with-exception makes it crash like a broken script.
"""

import argparse
import os
import sys
import time

OPS = ["embedding", "linear", "relu", "softmax", "output"]

parser = argparse.ArgumentParser()
parser.add_argument("--dump", required=True)
parser.add_argument("--mode", default="eager")
parser.add_argument("--perturb", default="")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--fail-with-exception", action="store_true")
parser.add_argument("--log", default="", help="append '<mode> start/end <time>' lines here")
args = parser.parse_args()


def log(event):
    if args.log:
        with open(args.log, "a") as f:
            f.write(f"{args.mode} {event} {time.time():.6f} {os.getpid()}\n")


log("start")
print(f"model: mode={args.mode} dump={args.dump}", flush=True)
time.sleep(args.sleep)
import numpy as np  # noqa: E402  (after "start": the timing tests should not measure numpy's import)

if args.fail_with_exception:
    print("Traceback (most recent call last):", file=sys.stderr)
    print("RuntimeError: stand-in model crashed on purpose", file=sys.stderr)
    sys.exit(1)

os.makedirs(args.dump, exist_ok=True)
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 8)).astype(np.float32)
broken = False
for position, op in enumerate(OPS):
    x = np.tanh(x * 1.1 + 0.1).astype(np.float32)
    if op == args.perturb:
        broken = True
    y = x + np.float32(0.5) if broken else x
    # Numbered names keep execution order in an npy directory.
    np.save(os.path.join(args.dump, f"{position:02d}_{op}.npy"), y)
log("end")
print("model: done", flush=True)
