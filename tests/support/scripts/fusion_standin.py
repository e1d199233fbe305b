"""Stand-in for a model compiled with named fusion rules (no torch): reads a TorchAir switch
file, "fires" every rule left on, writes GE's fusion_result.json into the working directory,
and misbehaves as --faults says:
  wrong:R    output off by 0.5 and exit status 1 when R fires
  pair:A+B   the same, only when A and B both fire
  crash:R    abort (SIGABRT) when R fires, before the report is written
  sticky:R   R fires even when switched off
  flip:K     the K-th finished run (from 0, counted in --log) reports the opposite outcome
--rule-count N fires the rules Rule00...Rule<N-1> instead of the eight named ones.
--dump DIR writes the output as DIR/out.npy (float32); --log FILE appends one line per
finished run (the working directory's name) so that tests can count runs.
"""

import argparse
import json
import os
import struct
import sys
import time

RULES = [
    "MatMulBiasAddFusionPass",
    "GeluFusionPass",
    "LayerNormFusionPass",
    "SoftmaxFusionPass",
    "ConvBatchnormFusionPass",
    "TransposeReshapeFusionPass",
    "PadConv2dFusionPass",
    "TbeEltwiseFusionPass",
]
UB_RULES = {"TbeEltwiseFusionPass"}

parser = argparse.ArgumentParser()
parser.add_argument("--switch-file", default=os.environ.get("STANDIN_SWITCH_FILE", ""))
parser.add_argument("--faults", default="")
parser.add_argument("--dump", default="")
parser.add_argument("--log", default="")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--rule-count", type=int, default=0)
args = parser.parse_args()
if args.rule_count:
    RULES = [f"Rule{i:02d}" for i in range(args.rule_count)]


def switched_on():
    on = set(RULES)
    if not args.switch_file:
        return on
    with open(args.switch_file) as f:
        switch = json.load(f)["Switch"]
    for section in ("GraphFusion", "UBFusion"):
        entries = switch.get(section, {})
        members = [r for r in RULES if (r in UB_RULES) == (section == "UBFusion")]
        for rule in members:
            state = entries.get(rule, entries.get("ALL", "on"))
            if state == "off":
                on.discard(rule)
    return on


faults = [f.split(":", 1) for f in args.faults.split(",") if f]
fired = switched_on() | {rule for kind, rule in faults if kind == "sticky"}
time.sleep(args.sleep)
for kind, rule in faults:
    if kind == "crash" and rule in fired:
        sys.stderr.write(f"standin: {rule} crashed the compiler\n")
        sys.stderr.flush()
        os.abort()

wrong = any(
    (kind == "wrong" and rule in fired) or (kind == "pair" and set(rule.split("+")) <= fired) for kind, rule in faults
)
if args.log:
    finished_runs = 0
    if os.path.exists(args.log):
        with open(args.log) as f:
            finished_runs = len(f.readlines())
    wrong ^= any(kind == "flip" and int(rule) == finished_runs for kind, rule in faults)
report = {"graph_fusion": {}, "ub_fusion": {}}
for rule in RULES:
    if rule in fired:
        section = "ub_fusion" if rule in UB_RULES else "graph_fusion"
        report[section][rule] = {"match_times": "1", "effect_times": "1"}
with open("fusion_result.json", "w") as f:
    json.dump({"session_and_graph_id_0_0": report}, f)

if args.dump:
    os.makedirs(args.dump, exist_ok=True)
    values = [0.25 * i + (0.5 if wrong else 0.0) for i in range(16)]
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(os.path.join(args.dump, "out.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<16f", *values))
if args.log:
    with open(args.log, "a") as f:
        f.write(os.path.basename(os.getcwd()) + "\n")
print("standin: fired " + ",".join(sorted(fired)) + (" (wrong)" if wrong else ""))
sys.exit(1 if wrong and not args.dump else 0)
