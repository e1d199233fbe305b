"""A stand-in for Ascend's `torchair`, importable only in the plugin tests (there is no NPU
here). It has the API surface diagnose uses — `get_npu_backend(compiler_config=...)` and
`CompilerConfig` with the dump_config / debug / fusion_config / ge_config /
experimental_config fields of the reference (torchair-debug.md) — and writes what TorchAir and
GE would write, in their documented formats: FX npy dumps, GE dump binaries, graph txt files
and fusion_result.json. The graph itself runs eagerly on the CPU.

Knob for tests of the flowchart: FAKE_TORCHAIR_DEFECT="RuleName=0.01" makes every op matched by
that fusion rule (when the rule is on) produce outputs scaled by (1 + 0.01), as a faulty GE
fusion would."""

from ._backend import get_npu_backend
from .configs.compiler_config import CompilerConfig

__all__ = ["CompilerConfig", "get_npu_backend"]
