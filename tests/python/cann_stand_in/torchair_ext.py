"""Stand-in for torchair.core._torchair, the extension through which torchair drives GE: the
module-level symbols torchair reads, with the graph engine of graph_engine.py behind
InitializeGraphEngine, AclmdlSetDump and TorchNpuGraphBase."""

from __future__ import annotations

import enum

from . import graph_engine


class TorchDataType(enum.IntEnum):
    BOOL = 0
    UINT8 = 1
    INT8 = 2
    INT16 = 3
    UINT16 = 4
    INT32 = 5
    UINT32 = 6
    INT64 = 7
    UINT64 = 8
    BF16 = 9
    FLOAT16 = 10
    FLOAT32 = 11
    FLOAT64 = 12
    COMPLEX64 = 13
    COMPLEX128 = 14


def InitializeGraphEngine(options):  # noqa: N802 (the extension's names)
    graph_engine.initialize(dict(options))


def FinalizeGraphEngine():  # noqa: N802
    graph_engine.finalize()


def AclmdlSetDump(config_path):  # noqa: N802
    graph_engine.set_dump_config(config_path)


def check_cann_compat(op_type, optional_inputs, optional_attrs):
    return ""  # every IR this torchair knows is "supported"


def get_registered_ir_def(op_type):
    return "ERROR", [], [], []  # no IR registry: torchair then uses its own converters only


def SetDebugLogPath(path):  # noqa: N802
    pass


def InitDeviceStdoutChannel(device_id):  # noqa: N802
    pass


def StupidRepeat(word, times):  # noqa: N802
    return word * times


def GetSocName():  # noqa: N802
    return "cpu_stand_in"


def _needs_device(name):
    def missing(*args, **kwargs):
        raise RuntimeError(f"CANN stand-in: {name} needs an Ascend device; this machine has none")

    return missing


export = _needs_device("export")
AclopStartDumpArgs = _needs_device("AclopStartDumpArgs")
AclopStopDumpArgs = _needs_device("AclopStopDumpArgs")
as_torch_tensors = _needs_device("as_torch_tensors")


class TorchNpuGraphBase:
    def __init__(self, name=""):
        self._graph = graph_engine.Graph(str(name))

    def load(self, serialized_model, options, input_placements=None, output_dtypes=None, executor_type=None):
        self._graph.load(serialized_model, dict(options))

    def set_hint_shape(self, input_shapes, output_shapes):
        pass

    def compile(self):
        self._graph.compile()

    def auto_tune(self, args):
        pass

    def run(self, args):
        inputs, assigned_outputs, _stream = args
        return self._graph.run(list(inputs), list(assigned_outputs or []))
