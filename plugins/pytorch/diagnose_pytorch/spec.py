"""The run spec: one JSON document telling the plugin how to run and what to dump.

The schema is documented in plugins/pytorch/README.md; `RunSpec.from_dict` rejects unknown
keys so that a typo in the orchestrator fails loudly instead of being ignored."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .inductor_rules import RULES, unknown

SPEC_ENV = "DIAGNOSE_RUN_SPEC"
# switches.fusion_switch_file's absolute path, for any backend but TorchAir (README.md)
FUSION_SWITCH_FILE_ENV = "DIAGNOSE_FUSION_SWITCH_FILE"
BUILTIN_BACKENDS = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor", "torchair")
DUMP_LEVELS = ("none", "aten", "fx", "compiled")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")


class SpecError(ValueError):
    pass


@dataclass
class DumpSpec:
    level: str = "auto"  # none | aten | fx | compiled | auto (see resolved_level)
    ops: bool = True  # op / FX node / compiled buffer records
    modules: bool = False  # module output records (eager only)
    final: bool = True  # final output records
    io: list[str] = field(default_factory=lambda: ["input", "output"])
    include: list[str] = field(default_factory=list)  # regexes on op_key, op or module
    exclude: list[str] = field(default_factory=list)
    steps: list[int] | None = None  # None: every step
    stats_only: bool = False
    # sides whose records keep their tensor files; the other sides' records keep statistics only
    tensor_io: list[str] = field(default_factory=lambda: ["input", "output"])
    # byte budget for tensor files (None: none): docs/dump-format.md says why this default
    max_bytes: int | None = 512 << 20
    truth: bool = False  # float64 shadow execution: a truth file beside each floating record
    boundaries: bool = False  # op records at module boundaries only (fx_dump.module_boundary)


@dataclass
class Switches:
    inductor: dict = field(default_factory=dict)  # torch._inductor.config overrides
    fusion_switch_file: str | None = None  # TorchAir / GE fusion switch file
    inductor_off: list[str] = field(default_factory=list)  # inductor_rules.RULES turned off
    torchair: dict = field(default_factory=dict)  # dotted CompilerConfig fields -> values


@dataclass
class Checks:
    meta: bool = False  # eager, aten level: each op's fake outputs vs its real ones


@dataclass
class Isolation:
    """Subgraph isolation (isolation.py): the candidate nodes that run eagerly; the others are
    compiled with the backend, each contiguous run of them as its own subgraph."""

    eager_nodes: list[str] = field(default_factory=list)  # node ids g<graph>.<node name>
    # state paths (buffers.k_cache, inputs.args.1): the nodes that write them in place run eagerly
    eager_writes: list[str] = field(default_factory=list)
    repro: bool = False  # write repro/ for the compiled pieces at the end of the run
    # eager nodes whose value each call records (observed/<id>/<step>.npy): a masked culprit's
    # confirmation judges it against the golden's float64 truth
    observe: list[str] = field(default_factory=list)


@dataclass
class RunSpec:
    output_dir: str
    mode: str = "compiled"  # eager | compiled
    backend: str = "inductor"
    device: str = "cpu"
    dtype: str | None = None  # cast the model and its floating inputs
    autocast: str | None = None  # run calls under torch.autocast with this dtype
    dynamic: bool | None = None
    fullgraph: bool = False
    switches: Switches = field(default_factory=Switches)
    dump: DumpSpec = field(default_factory=DumpSpec)
    checks: Checks = field(default_factory=Checks)
    seed: int | None = 0
    deterministic: bool = False
    isolation: Isolation | None = None
    version: int = 1

    @classmethod
    def from_dict(cls, data: dict) -> "RunSpec":
        data = dict(data)
        nested = {"switches": Switches, "dump": DumpSpec, "checks": Checks, "isolation": Isolation}
        for key, kind in nested.items():
            if key in data:
                data[key] = _build(kind, data[key], key)
        spec = _build(cls, data, "spec")
        spec.validate()
        return spec

    @classmethod
    def load(cls, path: str | os.PathLike) -> "RunSpec":
        with open(path) as f:
            return cls.from_dict(json.load(f))

    @classmethod
    def from_env(cls) -> "RunSpec":
        path = os.environ.get(SPEC_ENV)
        if not path:
            raise SpecError(f"no run spec: set {SPEC_ENV} to the path of a JSON run spec")
        return cls.load(path)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def validate(self) -> None:
        if self.version != 1:
            raise SpecError(f"run spec version {self.version} is not supported (this plugin reads 1)")
        if self.mode not in ("eager", "compiled"):
            raise SpecError(f"mode must be 'eager' or 'compiled', not {self.mode!r}")
        if self.backend not in BUILTIN_BACKENDS and ":" not in self.backend:
            raise SpecError(f"backend must be one of {BUILTIN_BACKENDS} or 'module:function', not {self.backend!r}")
        for name in ("dtype", "autocast"):
            value = getattr(self, name)
            if value is not None and value not in FLOAT_DTYPES:
                raise SpecError(f"{name} must be one of {FLOAT_DTYPES}, not {value!r}")
        if self.dump.level not in DUMP_LEVELS + ("auto",):
            raise SpecError(f"dump.level must be one of {DUMP_LEVELS} or 'auto'")
        for name in ("io", "tensor_io"):
            if not set(getattr(self.dump, name)) <= {"input", "output"}:
                raise SpecError(f"dump.{name} may only hold 'input' and 'output'")
        if self.isolation is not None:
            self._validate_isolation()
        level = self.dump_level()
        if self.mode == "eager" and level in ("fx", "compiled"):
            raise SpecError(f"dump.level {level!r} needs mode 'compiled'")
        if level == "compiled" and self.backend not in ("inductor", "torchair") and ":" not in self.backend:
            raise SpecError(
                "dump.level 'compiled' exists for inductor, torchair and user "
                f"backends built on Inductor; use 'fx' for {self.backend!r}"
            )
        if self.mode == "compiled" and level == "aten":
            raise SpecError("dump.level 'aten' needs mode 'eager' (use 'fx' or 'compiled')")
        if self.dump.truth and not self.shadows_ops():
            raise SpecError(
                "dump.truth needs ops the plugin runs itself: mode 'eager' (dump.level 'aten' or 'none': the "
                f"final outputs' truth) or dump.level 'fx' (not backend 'torchair'), not mode {self.mode!r} "
                f"with level {level!r} and backend {self.backend!r}"
            )
        if self.checks.meta and level != "aten":
            raise SpecError("checks.meta needs mode 'eager' with dump.level 'aten' (or 'auto')")
        if self.switches.inductor_off:
            if self.backend != "inductor" and ":" not in self.backend:
                raise SpecError(
                    "switches.inductor_off needs backend 'inductor' or a user backend built on Inductor "
                    "(module:function)"
                )
            if unknown(self.switches.inductor_off):
                raise SpecError(
                    f"switches.inductor_off: unknown rule(s) "
                    f"{', '.join(unknown(self.switches.inductor_off))}; known: {', '.join(RULES)}"
                )
        if self.switches.fusion_switch_file and not Path(self.switches.fusion_switch_file).is_file():
            raise SpecError(f"fusion switch file not found: {self.switches.fusion_switch_file}")

    def _validate_isolation(self) -> None:
        nodes = self.isolation.eager_nodes
        if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
            raise SpecError("isolation.eager_nodes must be a list of node ids (strings like 'g0.mul_1')")
        writes = self.isolation.eager_writes
        if not isinstance(writes, list) or not all(isinstance(w, str) for w in writes):
            raise SpecError("isolation.eager_writes must be a list of state paths (strings like 'buffers.k_cache')")
        observe = self.isolation.observe
        if not isinstance(observe, list) or not all(isinstance(n, str) for n in observe):
            raise SpecError("isolation.observe must be a list of node ids (strings like 'g0.mul_1')")
        if not isinstance(self.isolation.repro, bool):
            raise SpecError("isolation.repro must be true or false")
        if self.mode != "compiled":
            raise SpecError("isolation needs mode 'compiled'")
        if self.dump.level not in ("auto", "none"):
            raise SpecError(
                f"isolation runs with dump.level 'none' (final outputs only), not {self.dump.level!r}: "
                "per-op dumps of split graphs are not supported"
            )

    def dump_level(self) -> str:
        """`auto` means: ATen ops in eager mode; the compiled code's buffers for Inductor and
        TorchAir (GE dump); the FX graph node by node for the other builtin backends (which
        run that same graph eagerly); final outputs only for a user backend, which an FX-level
        dump would replace, and under isolation."""
        if self.dump.level != "auto":
            return self.dump.level
        if self.isolation is not None:
            return "none"
        if self.mode == "eager":
            return "aten"
        if self.backend in ("inductor", "torchair"):
            return "compiled"
        return "none" if ":" in self.backend else "fx"

    def shadows_ops(self) -> bool:
        """Whether the plugin sees every op itself, as float64 shadow execution needs: eager
        mode (through a dispatch mode, also without an op dump) or the FX interpreter."""
        level = self.dump_level()
        if self.mode == "eager":
            return level in ("aten", "none")
        return level == "fx" and self.backend != "torchair"

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir)


def _build(kind, data, where: str):
    if not isinstance(data, dict):
        raise SpecError(f"{where} must be a JSON object")
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SpecError(f"unknown key(s) in {where}: {', '.join(unknown)}")
    try:
        return kind(**data)
    except TypeError as e:
        raise SpecError(f"{where}: {e}") from None
