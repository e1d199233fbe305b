"""Stand-in for torchair.core._npu_utils: its one symbol."""


def NpuFormatCastViaCpu(tensor, acl_format, customize_dtype=None, input_dtype=None):  # noqa: N802
    raise RuntimeError("CANN stand-in: NpuFormatCastViaCpu needs an NPU; this machine has none")
