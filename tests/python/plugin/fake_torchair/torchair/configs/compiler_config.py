"""CompilerConfig as torchair shapes it: option objects whose assignment is validated, grouped
in sub-configs; reading a field gives the option object, its `.value` the setting."""

from __future__ import annotations


class OptionValue:
    def __init__(self, default, allowed=None):
        self.allowed = allowed
        self.value = default

    def __setattr__(self, name, value):
        if name == "value" and self.__dict__.get("allowed") is not None and value not in self.allowed:
            raise ValueError(f"{value!r} is not one of {self.allowed}")
        object.__setattr__(self, name, value)


class NpuBaseConfig:
    def __setattr__(self, name, value):
        current = self.__dict__.get(name)
        if isinstance(current, OptionValue):
            current.value = value
        elif name in self.__dict__ or name.startswith("__"):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}")

    def _add(self, name, value):
        object.__setattr__(self, name, value)


class _GraphDump(NpuBaseConfig):
    def __init__(self):
        self._add("type", OptionValue(None, [None, "txt", "pbtxt", "py"]))
        self._add("_path", OptionValue("./"))


class _DataDump(NpuBaseConfig):
    def __init__(self):
        self._add("type", OptionValue(None, [None, "npy"]))
        self._add("path", OptionValue("./"))
        self._add("filter", None)


class _FxSummary(NpuBaseConfig):
    def __init__(self):
        self._add("type", OptionValue(None, [None, "csv"]))


class _Debug(NpuBaseConfig):
    def __init__(self):
        self._add("graph_dump", _GraphDump())
        self._add("data_dump", _DataDump())
        self._add("fx_summary", _FxSummary())
        self._add("run_eagerly", OptionValue(False, [True, False]))


class _DumpConfig(NpuBaseConfig):
    def __init__(self):
        self._add("enable_dump", OptionValue(False, [True, False]))
        self._add("dump_path", OptionValue("./"))
        self._add("dump_mode", OptionValue("all", ["input", "output", "all"]))
        self._add("dump_step", OptionValue(None))
        self._add("dump_layer", OptionValue(None))
        self._add("dump_data", OptionValue("tensor", ["tensor", "stats"]))


class _FusionConfig(NpuBaseConfig):
    def __init__(self):
        self._add("fusion_switch_file", OptionValue(None))


class _GeConfig(NpuBaseConfig):
    def __init__(self):
        self._add("oo_level", OptionValue("O3", ["O1", "O3"]))
        self._add("optimization_switch", OptionValue(None))
        self._add("export_compile_stat", OptionValue("2", ["0", "1", "2"]))


class _ExperimentalConfig(NpuBaseConfig):
    def __init__(self):
        self._add("pattern_fusion_pass", OptionValue(True, [True, False]))
        self._add("remove_noop_ops", OptionValue(True, [True, False]))
        self._add("enable_view_optimize", OptionValue(True, [True, False]))


class CompilerConfig(NpuBaseConfig):
    def __init__(self):
        self._add("debug", _Debug())
        self._add("dump_config", _DumpConfig())
        self._add("fusion_config", _FusionConfig())
        self._add("ge_config", _GeConfig())
        self._add("experimental_config", _ExperimentalConfig())
