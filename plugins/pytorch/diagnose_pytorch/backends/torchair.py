"""TorchAir (torch.compile on Ascend NPUs): msit's two config helpers, and the backend a run
spec with `backend: torchair` uses. Only the documented CompilerConfig fields are touched
(torchair-debug.md), so the real torchair and a stand-in of the same shape behave alike."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
from pathlib import Path

from ..switches import fusion_switch_path

GE_DUMP_DIR = "ge_dump"
FX_DUMP_DIR = "fx_dump"
_DUMP_MODES = ("input", "output", "all")


def _compiler_config_class():
    from torchair.configs.compiler_config import CompilerConfig  # torchair exists on NPU hosts only

    return CompilerConfig


def _new_config(compiler_config):
    cls = _compiler_config_class()
    if compiler_config is None:
        return cls()
    if not isinstance(compiler_config, cls):
        raise TypeError(f"compiler_config must be a torchair CompilerConfig, not {type(compiler_config)}")
    return compiler_config


def _dump_dir(dump_path: str, name: str) -> str:
    if not isinstance(dump_path, str):
        raise TypeError(f"dump_path must be a string, not {type(dump_path)}")
    path = os.path.realpath(os.path.join(dump_path, name))
    os.makedirs(path, mode=0o750, exist_ok=True)
    return path


def get_ge_dump_config(
    dump_path: str = "",
    dump_mode: str = "all",
    fusion_switch_file=None,
    dump_token=None,
    dump_layer=None,
    compiler_config=None,
):
    """A CompilerConfig that dumps GE's tensors (every op, or the ops in `dump_layer`, at the
    tokens in `dump_token`) and the graph structure txt files into {dump_path}/ge_dump, with
    the fusion rules of `fusion_switch_file`."""
    if dump_mode not in _DUMP_MODES:
        raise ValueError(f"dump_mode must be one of {_DUMP_MODES}, not {dump_mode!r}")
    path = _dump_dir(dump_path, GE_DUMP_DIR)
    config = _new_config(compiler_config)
    config.debug.graph_dump.type = "txt"
    # torchair's graph_dump has a private _path (and, in some versions, a public path too).
    if hasattr(config.debug.graph_dump, "_path"):
        config.debug.graph_dump._path = path
    else:
        config.debug.graph_dump.path = path
    if fusion_switch_file is not None:
        if not os.path.isfile(fusion_switch_file):
            raise FileNotFoundError(f"fusion_switch_file not found: {fusion_switch_file}")
        config.fusion_config.fusion_switch_file = os.path.realpath(fusion_switch_file)
    config.dump_config.enable_dump = True
    config.dump_config.dump_mode = dump_mode
    config.dump_config.dump_path = path
    if dump_token is not None:
        set_field(config, "dump_config.dump_step", "|".join(str(t) for t in dump_token))
    if dump_layer is not None:
        set_field(config, "dump_config.dump_layer", " ".join(dump_layer))
    return config


def get_fx_dump_config(dump_path: str = "", compiler_config=None):
    """A CompilerConfig that skips GE and runs the FX graph eagerly, dumping every node's
    positional inputs and outputs as npy files into {dump_path}/fx_dump."""
    path = _dump_dir(dump_path, FX_DUMP_DIR)
    config = _new_config(compiler_config)
    config.debug.data_dump.type = "npy"
    if hasattr(config.debug.data_dump, "path"):
        config.debug.data_dump.path = path
    return config


def set_field(config, dotted: str, value) -> None:
    """Sets a CompilerConfig field by its dotted path, e.g. 'ge_config.oo_level'. What torchair
    rejects (a value outside the option's choices, a path that does not exist, a dump_step or
    dump_layer that does not match its pattern) is raised as a ValueError naming the field."""
    *parents, name = dotted.split(".")
    target = config
    for part in parents:
        target = getattr(target, part, None)
        if target is None:
            raise AttributeError(f"CompilerConfig has no field {dotted!r}")
    if not hasattr(target, name):
        raise AttributeError(f"CompilerConfig has no field {dotted!r}")
    try:
        setattr(target, name, value)
    except (ValueError, TypeError, FileNotFoundError) as e:
        reason = str(e).split("\n")[0]  # torchair appends its traceback to the message
        raise ValueError(f"torchair rejects CompilerConfig {dotted} = {value!r}: {reason}") from None


def import_torchair():
    """torchair, imported so that the process can still be stopped: on import it installs a
    SIGTERM/SIGINT handler that finalises GE and then sends the signal again with the signal
    ignored, so the process never ends. Its handlers are replaced by one that finalises GE the
    same way and then lets the signal end the process."""
    import torchair  # on NPU hosts only

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            if getattr(signal.getsignal(signum), "__module__", None) == "torchair.core._backend":
                signal.signal(signum, _finalize_then_end)
    return torchair


def _finalize_then_end(signum, frame):
    from torchair.core._backend import finalize_graph_engine  # on NPU hosts only

    try:
        finalize_graph_engine()
    finally:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _check_side_file_directory() -> None:
    """With GE dumps on, torchair writes GE's dump options to $CWD/ge_dump_data_json/ and fails
    when it cannot."""
    if not os.access(os.getcwd(), os.W_OK):
        raise PermissionError(
            f"torchair writes GE's dump options to {os.getcwd()}/ge_dump_data_json/ when GE dumps are on, "
            "and the working directory is not writable: run the model from a writable directory"
        )


def npu_backend(session):
    """TorchAir's backend as the spec sets it up (spec_backend counts and times it)."""
    torchair = import_torchair()

    spec = session.spec
    config = _new_config(None)
    dump_dir = str(session.dump_dir)
    if session.level == "fx":
        get_fx_dump_config(dump_path=dump_dir, compiler_config=config)
        if hasattr(config.debug.data_dump, "filter"):  # else every call is dumped, and compared by its step
            config.debug.data_dump.filter = _chosen_calls_only(session)
    elif session.level == "compiled":
        modes = set(spec.dump.io)
        get_ge_dump_config(
            dump_path=dump_dir,
            dump_mode="all" if len(modes) == 2 else modes.pop(),
            dump_token=_ge_tokens(spec.dump.steps),
            compiler_config=config,
        )
        if spec.dump.stats_only:
            config.dump_config.dump_data = "stats"
        config.post_grad_custom_post_pass = _graph_node_recorder(session, Path(dump_dir) / GE_DUMP_DIR)
        _check_side_file_directory()
    backend = torchair.get_npu_backend(compiler_config=_switched(config, spec.switches))
    if session.level != "compiled":
        return backend
    return _graph_call_recorder(session, Path(dump_dir) / GE_DUMP_DIR, backend)


def _chosen_calls_only(session):
    """TorchAir's FX dump filter (a node to dump, or None to run it undumped) that dumps the calls
    `dump.steps` chooses and no other. The dumper still numbers a graph's step directories by the
    graph's own runs, as GE numbers its tokens, so a chosen call's directory pairs with its GE run."""
    return lambda node: node if session.step_chosen() else None


def _ge_tokens(steps: list[int] | None) -> list[str] | None:
    """GE's dump_step for the model calls `steps`: GE chooses by each graph's own run number
    (token), not by call, and which graph runs which call is known only as the model runs. A
    graph's k-th run is call k or later, so tokens 0 to the last chosen call hold every chosen
    call; the record of calls leaves the others out of the compare (_graph_call_recorder)."""
    return None if steps is None else [f"0-{max(steps)}"]


GRAPH_NODES_FILE = "diagnose_graph_nodes_rank_{rank}.json"
GRAPH_CALLS_FILE = "diagnose_graph_calls_rank_{rank}.json"


def _torchair_graph_id() -> int | None:
    """The id of the graph TorchAir compiled last (graph_<N>, dynamo_original_graph_<N>); None
    for a torchair that keeps it elsewhere."""
    graph_id = getattr(sys.modules.get("torchair.npu_fx_compiler"), "_GLOBAL_GRAPH_ID", None)
    return graph_id if isinstance(graph_id, int) else None


def _graph_node_recorder(session, ge_dump_dir: Path):
    """TorchAir's post_grad_custom_post_pass that writes, beside the GE dump, which nodes of the
    graph Dynamo handed the backend each node of the ATen graph TorchAir converts to GE comes from
    (dump/provenance.py), by TorchAir graph id (graph_<N>, the id in dynamo_original_graph_<N>):
    GE's dump names only those ATen nodes (_fx_tensor_name), and an intervention run needs Dynamo's
    (docs/dump-format.md, "GE graph nodes"). The pass runs after TorchAir took the graph's id; a
    torchair that keeps it elsewhere gets no map, and its GE ops stay unconfirmable."""
    path = ge_dump_dir / GRAPH_NODES_FILE.format(rank=session.rank)
    graphs: dict[str, dict[str, list[str]]] = {}

    def record(gm, example_inputs=None, config=None):
        graph_id = _torchair_graph_id()
        if graph_id is None:
            return
        nodes = {n.name: session.provenance.graph_nodes([n]) for n in gm.graph.nodes if n.op == "call_function"}
        graphs[str(graph_id)] = {name: ids for name, ids in nodes.items() if ids}
        with open(path, "w") as f:
            json.dump({"graphs": graphs}, f, indent=1)

    return record


def _graph_call_recorder(session, ge_dump_dir: Path, backend):
    """`backend`, each graph it compiles recording, beside the GE dump, which model call (the
    session's step) each of its runs belongs to, by TorchAir graph id: GE numbers a graph's
    dump directories by its own runs (token k is the graph's k-th run), so with several graphs
    (a prefill graph and a decode graph, recompiles under dynamic shapes) token k of one graph
    is not call k (docs/dump-format.md, "GE graph calls"). Dynamo hands the backend one graph
    and TorchAir compiles it to one GE graph before returning (inference), so the graph id
    TorchAir took while compiling it is this graph's; a graph that took none runs no GE graph.
    A run in a call `dump.steps` leaves out is recorded as null: GE may have dumped it (GE
    chooses by token: _ge_tokens), and the compare skips it."""
    path = ge_dump_dir / GRAPH_CALLS_FILE.format(rank=session.rank)
    graphs: dict[str, list[int | None]] = {}

    def backend_fn(gm, example_inputs, **kwargs):
        before = _torchair_graph_id()
        compiled = backend(gm, example_inputs, **kwargs)
        graph_id = _torchair_graph_id()
        if graph_id is None or graph_id == before:
            return compiled
        runs = graphs.setdefault(str(graph_id), [])

        @functools.wraps(compiled)
        def run(*args):
            runs.append(session.step if session.step_chosen() else None)
            with open(path, "w") as f:
                json.dump({"graphs": graphs}, f)
            return compiled(*args)

        return run

    return backend_fn


def fusion_result(cwd: Path | None = None) -> dict | list | None:
    """GE's fusion_result.json of this process: in the working directory, or under
    $ASCEND_WORK_PATH/FE/<pid>/."""
    candidates = [Path(cwd or os.getcwd()) / "fusion_result.json"]
    if os.environ.get("ASCEND_WORK_PATH"):
        candidates.insert(0, Path(os.environ["ASCEND_WORK_PATH"]) / "FE" / str(os.getpid()) / "fusion_result.json")
    for path in candidates:
        if path.is_file():
            with open(path) as f:
                return json.load(f)
    return None


def switched_npu_backend(switches):
    """TorchAir's backend with a spec's global switches and no dump (the single-op check)."""
    torchair = import_torchair()
    return torchair.get_npu_backend(compiler_config=_switched(_new_config(None), switches))


def _switched(config, switches):
    """`config` with the spec's fusion switch file and CompilerConfig fields
    (status.json records them: switches.py)."""
    if switches.fusion_switch_file:
        config.fusion_config.fusion_switch_file = fusion_switch_path(switches)
    for dotted, value in switches.torchair.items():
        set_field(config, dotted, value)
    return config
