"""Stand-in for torchair.core._npu_graph_executor: its one symbol."""


def GetNpuStorageSizes(tensor):  # noqa: N802 (the extension's name)
    raise RuntimeError("CANN stand-in: GetNpuStorageSizes needs an NPU tensor; this machine has none")
