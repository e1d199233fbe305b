"""Stand-in for the PyTorch plugin (plugins/pytorch), without torch: the same commands and
files, with behaviour chosen by environment variables, for the step kinds' focused tests.

  run SCRIPT ARGS   writes status.json, dump/ and outputs/ (one "op", the model's output) and,
                    with checks.meta, meta_check.json ($STAND_IN_META: JSON list of its ops);
                    $STAND_IN_WRONG_BACKEND=B makes backend B's output wrong,
                    $STAND_IN_FAIL_BACKEND=B makes it exit 1 (FX-level dumps run the graph
                    eagerly: always right); $STAND_IN_SCALE scales every run's output;
                    graph breaks: $STAND_IN_BREAKS; a spec's isolation (subgraph_isolate):
                    the graph's nodes $STAND_IN_NODES, wrong while every one of
                    $STAND_IN_CULPRIT_NODES is compiled (status.json isolation; repro/repro.py),
                    right otherwise whatever the backend; $STAND_IN_CALLS calls (outputs/
                    by step), those of $STAND_IN_RIGHT_CALLS (steps) right; the op record's graph_nodes:
                    $STAND_IN_GRAPH_NODES; a compiled run's graphs compute
                    $STAND_IN_VALUE_BYTES bytes (status.json graphs.value_bytes); a
                    dump.boundaries dump's record leaves module $STAND_IN_LEAVES
  ops --from DIR    prints $STAND_IN_OPS (comma-separated) as the op inventory
  single-op ...     checks each --ops op: $STAND_IN_CRASH_OPS kill the process (SIGKILL),
                    $STAND_IN_WRONG_OPS give a wrong graph result, $STAND_IN_ERROR_OPS a
                    compile error; appends each op's events to $STAND_IN_LOG;
                    $STAND_IN_SKIP_OPS are skipped as random; $STAND_IN_RULE_OPS
                    (op:Rule,...) are wrong while fusion rule Rule is on (the --switches file's
                    fusion_switch_file), and Rule and TbeEltwiseFusionPass fire on them
                    (./fusion_result.json, as GE writes it); with --backend inductor Rule is
                    an Inductor switch (the --switches file's inductor_off) and it and
                    split_reductions fire (OUT/status.json inductor_rules.fired)
"""

import json
import os
import signal
import sys

import numpy as np


def env_list(name):
    return [item for item in os.environ.get(name, "").split(",") if item]


class Dump:
    def __init__(self, directory):
        os.makedirs(os.path.join(directory, "tensors"), exist_ok=True)
        self.directory = directory
        self.manifest = open(os.path.join(directory, "manifest.jsonl"), "w")
        self.manifest.write(json.dumps({"type": "header", "format": "diagnose-dump", "version": 1}) + "\n")
        self.seq = 0

    def write(self, op, op_key, value, kind="op", graph_nodes=(), leaves=None, step=0):
        name = f"tensors/{self.seq:07d}.output.0.npy"
        np.save(os.path.join(self.directory, name), value)
        record = {
            "type": "tensor",
            "seq": self.seq,
            "kind": kind,
            "op_key": op_key,
            "op": op,
            "io": "output",
            "index": 0,
            "file": name,
            "dtype": "torch.float32",
            "shape": list(value.shape),
            "step": step,
        }
        if graph_nodes:
            record["graph_nodes"] = list(graph_nodes)
        if leaves:
            record["leaves"] = leaves
        self.manifest.write(json.dumps(record) + "\n")
        self.manifest.flush()
        self.seq += 1


def value(scale=1.0):
    return (np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0 + 0.5) * scale


def isolate(out, isolation):
    """status.json's isolation for a run with `isolation.eager_nodes`, and whether the run is
    wrong: every culprit node compiled. The repro exits 1 when wrong, 0 with --backend."""
    nodes = env_list("STAND_IN_NODES")
    compiled = [node for node in nodes if node not in isolation.get("eager_nodes", [])]
    culprits = env_list("STAND_IN_CULPRIT_NODES")
    wrong = bool(culprits) and all(node in compiled for node in culprits)
    if isolation.get("repro"):
        os.makedirs(os.path.join(out, "repro"), exist_ok=True)
        with open(os.path.join(out, "repro", "repro.py"), "w") as f:
            f.write(f"import sys\nsys.exit(0 if '--backend' in sys.argv else {int(wrong)})\n")
    infos = [{"id": n, "graph": 0, "op": "aten." + n[3:], "module": "", "source": "model.py:1"} for n in nodes]
    return {"nodes": infos, "compiled": compiled, "pieces": [], "repro": "repro/repro.py"}, wrong


def run(argv):
    with open(os.environ["DIAGNOSE_RUN_SPEC"]) as f:
        spec = json.load(f)
    out = spec["output_dir"]
    mode, backend = spec.get("mode", "compiled"), spec.get("backend", "inductor")
    compiled_backend = backend if mode == "compiled" else None
    if compiled_backend and compiled_backend == os.environ.get("STAND_IN_FAIL_BACKEND"):
        print("stand-in: backend fails on purpose", file=sys.stderr)
        return 1
    wrong = (
        compiled_backend is not None
        and compiled_backend == os.environ.get("STAND_IN_WRONG_BACKEND")
        and spec.get("dump", {}).get("level") != "fx"
    )
    isolation = None
    if "isolation" in spec:
        isolation, wrong_subgraph = isolate(out, spec["isolation"])
        wrong = wrong_subgraph if env_list("STAND_IN_CULPRIT_NODES") else wrong or wrong_subgraph
    result = value((1.5 if wrong else 1.0) * float(os.environ.get("STAND_IN_SCALE", "1")))
    if spec.get("dump", {}).get("level") != "none":
        Dump(os.path.join(out, "dump")).write(
            "aten.mul.Tensor",
            "mul-aten.mul.Tensor",
            result,
            graph_nodes=env_list("STAND_IN_GRAPH_NODES"),
            leaves=os.environ.get("STAND_IN_LEAVES") if spec["dump"].get("boundaries") else None,
        )
    outputs = Dump(os.path.join(out, "outputs"))
    for step in range(int(os.environ.get("STAND_IN_CALLS", "1"))):
        right = str(step) in env_list("STAND_IN_RIGHT_CALLS")
        outputs.write("output", "output.0", value() if right else result, kind="final", step=step)
    if spec.get("checks", {}).get("meta"):
        with open(os.path.join(out, "meta_check.json"), "w") as f:
            json.dump({"ops": json.loads(os.environ.get("STAND_IN_META", "[]"))}, f)
    breaks = env_list("STAND_IN_BREAKS") if compiled_backend else []
    status = {
        "format": "diagnose-run-status",
        "state": "ok",
        "spec": spec,
        "argv": argv,
        "graphs": {"count": 1 + len(breaks), "graph_breaks": len(breaks), "graph_break_reasons": breaks},
    }
    if compiled_backend and os.environ.get("STAND_IN_VALUE_BYTES"):
        status["graphs"]["value_bytes"] = status["graphs"]["value_elements"] = int(os.environ["STAND_IN_VALUE_BYTES"])
    if isolation is not None:
        status["isolation"] = isolation
    with open(os.path.join(out, "status.json"), "w") as f:
        json.dump(status, f)
    return 0


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def rules_off(args):
    """The rules the --switches file turns off: Inductor's inductor_off, else those its fusion
    switch file turns off ("ALL": every rule)."""
    switches = json.load(open(option(args, "--switches"))) if option(args, "--switches") else {}
    if option(args, "--backend") == "inductor":
        return set(switches.get("inductor_off", []))
    fusion_switch = json.load(open(switches["fusion_switch_file"])) if "fusion_switch_file" in switches else {}
    return {rule for group in fusion_switch.get("Switch", {}).values() for rule, on in group.items() if on == "off"}


def fire_rules(args):
    """The rules that fire on this run's ops, into their report; returns the ops a rule breaks."""
    rule_of = dict(item.split(":") for item in env_list("STAND_IN_RULE_OPS"))
    inductor = option(args, "--backend") == "inductor"
    innocent = "split_reductions" if inductor else "TbeEltwiseFusionPass"
    off = rules_off(args)
    fired, breaking = [], {}
    for op in option(args, "--ops").split(","):
        if op not in rule_of:
            continue
        fired += [rule for rule in (rule_of[op], innocent) if rule not in off and "ALL" not in off]
        if rule_of[op] in fired:
            breaking[op] = rule_of[op]
    if inductor:
        status = {"format": "diagnose-run-status", "inductor_rules": {"fired": sorted(set(fired))}}
        with open(os.path.join(option(args, "--out"), "status.json"), "w") as f:
            json.dump(status, f)
    elif rule_of:
        groups = {"graph_fusion": {}, "ub_fusion": {}}
        for rule in fired:
            group = groups["ub_fusion" if rule == innocent else "graph_fusion"]
            group[rule] = {"match_times": "1", "effect_times": "1"}
        with open("fusion_result.json", "w") as f:
            json.dump({"session_and_graph_id_0_0": groups}, f)
    return breaking


def single_op(args):
    out = option(args, "--out")
    os.makedirs(out, exist_ok=True)
    eager, graph = Dump(os.path.join(out, "eager")), Dump(os.path.join(out, "graph"))
    progress = open(os.path.join(out, "progress.jsonl"), "a")
    log = open(os.environ["STAND_IN_LOG"], "a") if os.environ.get("STAND_IN_LOG") else None
    results = []
    broken_by_rule = fire_rules(args)

    def event(op, kind, message="", **extra):
        progress.write(json.dumps({"op": op, "event": kind, "message": message, **extra}) + "\n")
        progress.flush()
        if log:
            log.write(f"{op} {kind} {option(args, '--backend')}\n")
            log.flush()

    for op in option(args, "--ops").split(","):
        event(op, "start")
        if op in env_list("STAND_IN_CRASH_OPS"):
            os.kill(os.getpid(), signal.SIGKILL)
        if op in env_list("STAND_IN_ERROR_OPS"):
            results.append({"op": op, "status": "compile_error", "message": "stand-in lowering failed"})
            event(op, "error", "stand-in lowering failed")
            continue
        if op in env_list("STAND_IN_SKIP_OPS"):
            results.append({"op": op, "status": "skipped", "reason": "random"})
            event(op, "skipped", "results depend on the RNG", reason="random")
            continue
        eager.write(op, op + "#0", value())
        wrong = op in env_list("STAND_IN_WRONG_OPS") or op in broken_by_rule
        graph.write(op, op + "#0", value(1.25 if wrong else 1.0))
        settled = op in env_list("STAND_IN_SETTLED_OPS")  # as if by a batched compile
        results.append(
            {"op": op, "status": "ok", "compile_s": 0.5, "run_s": 0.01, "compiles": 0 if settled else 1}
            | {"settled_in_batched_compile": settled}
        )
        event(op, "done")
    batched = [{"graphs": 2}] if any(r.get("settled_in_batched_compile") for r in results) else []
    with open(os.path.join(out, "single_op.json"), "w") as f:
        json.dump({"ops": results, "batched_compiles": batched}, f)
    return 0


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "run":
        return run(args)
    if command == "ops":
        print(json.dumps([{"op": op, "calls": 1} for op in env_list("STAND_IN_OPS")]))
        return 0
    if command == "single-op":
        return single_op(args)
    print(f"stand-in plugin: unknown command {command}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
