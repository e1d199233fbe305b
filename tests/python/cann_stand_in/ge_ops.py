"""GE ops in torch: what each op type of the GE IR computes, for the ops torchair's converters
emit for the bundled examples and a Llama-style block (fp32/fp16/bf16, static and dynamic
shapes). An op runs in the dtype of its inputs, as its kernel would; `run_op` raises
UnknownGeOp naming the op type for any other type."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


class UnknownGeOp(NotImplementedError):
    pass


class Attrs:
    """The attributes of one OpDef, read by kind."""

    def __init__(self, op):
        self._attr = op.attr

    def i(self, key, default=0):
        return self._attr[key].i if key in self._attr else default

    def f(self, key, default=0.0):
        return self._attr[key].f if key in self._attr else default

    def b(self, key, default=False):
        return self._attr[key].b if key in self._attr else default

    def ints(self, key, default=()):
        return list(self._attr[key].list.i) if key in self._attr else list(default)

    def dtype(self, key):
        from torchair.ge._ge_graph import ge_type_to_torch_type  # torchair imports this package first

        return ge_type_to_torch_type(self._attr[key].i)


def proto_dtype(desc_dtype) -> torch.dtype | None:
    """The torch dtype of a TensorDescriptor's proto dtype (None when undefined)."""
    from torchair.ge._ge_graph import _ge_proto_dtype_to_ge_dtype, ge_type_to_torch_type

    try:
        return ge_type_to_torch_type(_ge_proto_dtype_to_ge_dtype(desc_dtype))
    except (AssertionError, RuntimeError, ValueError, KeyError):
        return None


def const_value(op) -> torch.Tensor:
    tensor = op.attr["value"].t
    dtype = proto_dtype(tensor.desc.dtype)
    shape = list(tensor.desc.shape.dim)
    data = bytearray(tensor.data) or bytearray(torch.zeros((), dtype=dtype).numpy().tobytes())
    flat = torch.frombuffer(data, dtype=dtype)
    return flat.reshape(shape) if flat.numel() == math.prod(shape) else flat.expand(shape).clone()


def _ints(t) -> list[int]:
    return [int(v) for v in t.reshape(-1).tolist()]


def _axes(t, rank) -> list[int]:
    return [a % rank if rank else 0 for a in _ints(t)]


def _matmul(x1, x2, t1, t2, bias=None):
    out = torch.matmul(x1.transpose(-1, -2) if t1 else x1, x2.transpose(-1, -2) if t2 else x2)
    return out if bias is None else out + bias


def _transposes(a):
    return a.b("transpose_x1"), a.b("transpose_x2")


def _slice(x, offsets, sizes):
    return x[tuple(slice(o, o + s if s >= 0 else None) for o, s in zip(offsets, sizes))]


def _gather(x, indices, axis):
    axis %= x.dim()
    picked = torch.index_select(x, axis, indices.reshape(-1).long())
    return picked.reshape(list(x.shape[:axis]) + list(indices.shape) + list(x.shape[axis + 1 :]))


def _conv2d(a, x, w, bias=None, offset_w=None):
    if a._attr["data_format"].s.decode() != "NCHW":
        raise UnknownGeOp("CANN stand-in: Conv2D is emulated for data_format NCHW only")
    strides, pads, dilations = a.ints("strides"), a.ints("pads"), a.ints("dilations", [1, 1, 1, 1])
    top, bottom, left, right = pads
    x = F.pad(x, (left, right, top, bottom))
    return [F.conv2d(x, w, bias, strides[2:], 0, dilations[2:], a.i("groups", 1))]


def _bn_infer(a, x, scale, offset, mean, variance):
    shape = [1, -1] + [1] * (x.dim() - 2)
    rstd = torch.rsqrt(variance.reshape(shape) + a.f("epsilon"))
    return [(x - mean.reshape(shape)) * rstd * scale.reshape(shape) + offset.reshape(shape)]


def _max_pool_with_argmax(a, x):
    (_, kh, kw, _), (_, sh, sw, _) = a.ints("ksize"), a.ints("strides")
    (_, ph, pw, _), (_, dh, dw, _) = a.ints("pads"), a.ints("dilation", [1, 1, 1, 1])
    y, index = F.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw), (dh, dw), a.b("ceil_mode"), return_indices=True)
    return [y, index]


def _strided_slice(x, begin, end, axes, strides):
    begin, end = _ints(begin), _ints(end)
    axes = _ints(axes) if axes is not None else list(range(len(begin)))
    strides = _ints(strides) if strides is not None else [1] * len(begin)
    index = [slice(None)] * x.dim()
    for b, e, a, s in zip(begin, end, axes, strides):
        index[a % x.dim()] = slice(b, e, s)
    return x[tuple(index)]


def _layer_norm(x, normalized_shape, gamma, beta, eps):
    dims = _ints(normalized_shape)
    axes = list(range(x.dim() - len(dims), x.dim()))
    compute = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    mean = compute.mean(axes, keepdim=True)
    rstd = torch.rsqrt(compute.var(axes, unbiased=False, keepdim=True) + eps)
    y = (compute - mean) * rstd
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return [y.to(x.dtype), mean, rstd]


def _split(x, sizes, dim):
    sizes = _ints(sizes)
    dim = int(dim.reshape(-1)[0]) % x.dim()
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[dim] - (sum(sizes) + 1)
    return list(torch.split(x, sizes, dim))


def _unary(fn):
    return lambda a, x: [fn(x)]


def _binary(fn):
    return lambda a, x, y: [fn(x, y)]


def _gelu(a, x):
    return [F.gelu(x)]


OPS = {
    "Identity": _unary(lambda x: x),
    "Neg": _unary(torch.neg),
    "Abs": _unary(torch.abs),
    "Exp": _unary(torch.exp),
    "Log": _unary(torch.log),
    "Sqrt": _unary(torch.sqrt),
    "Rsqrt": _unary(torch.rsqrt),
    "Square": _unary(torch.square),
    "Reciprocal": _unary(torch.reciprocal),
    "Sigmoid": _unary(torch.sigmoid),
    "Tanh": _unary(torch.tanh),
    "Relu": _unary(torch.relu),
    "Sin": _unary(torch.sin),
    "Cos": _unary(torch.cos),
    "Erf": _unary(torch.erf),
    "LogicalNot": _unary(torch.logical_not),
    "ZerosLike": _unary(torch.zeros_like),
    "OnesLike": _unary(torch.ones_like),
    "Gelu": _gelu,
    "Swish": lambda a, x: [x * torch.sigmoid(a.f("scale", 1.0) * x)],
    "Muls": lambda a, x: [x * a.f("value")],
    "Adds": lambda a, x: [x + a.f("value")],
    "Add": _binary(torch.add),
    "AddV2": _binary(torch.add),
    "Sub": _binary(torch.sub),
    "Mul": _binary(torch.mul),
    "RealDiv": _binary(torch.div),
    "Div": _binary(torch.div),
    "Pow": _binary(torch.pow),
    "Maximum": _binary(torch.maximum),
    "Minimum": _binary(torch.minimum),
    "Equal": _binary(torch.eq),
    "NotEqual": _binary(torch.ne),
    "Less": _binary(torch.lt),
    "LessEqual": _binary(torch.le),
    "Greater": _binary(torch.gt),
    "GreaterEqual": _binary(torch.ge),
    "LogicalAnd": _binary(torch.logical_and),
    "LogicalOr": _binary(torch.logical_or),
    "Cast": lambda a, x: [x.to(a.dtype("dst_type"))],
    "Transpose": lambda a, x, perm: [x.permute(_ints(perm)).contiguous()],
    "Reshape": lambda a, x, shape: [x.reshape(_ints(shape))],
    "Squeeze": lambda a, x: [x.squeeze(a.ints("axis")) if a.ints("axis") else x.squeeze()],
    "Unsqueeze": lambda a, x: [x.reshape(_unsqueezed(x.shape, a.ints("axes")))],
    "ExpandDims": lambda a, x, axis: [x.unsqueeze(int(axis.reshape(-1)[0]))],
    "BroadcastTo": lambda a, x, shape: [x.expand(_ints(shape)).contiguous()],
    "Expand": lambda a, x, shape: [x.expand(_ints(shape)).contiguous()],
    "Fill": lambda a, dims, value: [value.expand(_ints(dims)).contiguous()],
    "Shape": lambda a, x: [torch.tensor(list(x.shape), dtype=a.dtype("dtype") if "dtype" in a._attr else torch.int64)],
    "Pack": lambda a, *xs: [torch.stack(xs, a.i("axis"))],
    "ConcatV2": lambda a, *xs: [torch.cat(xs[:-1], int(xs[-1].reshape(-1)[0]))],
    "ConcatD": lambda a, *xs: [torch.cat(xs, a.i("concat_dim"))],
    "SplitV": lambda a, x, sizes, dim: _split(x, sizes, dim),
    "Split": lambda a, dim, x: list(torch.chunk(x, a.i("num_split"), int(dim.reshape(-1)[0]))),
    "StridedSliceV2": lambda a, x, begin, end, axes=None, strides=None: [_strided_slice(x, begin, end, axes, strides)],
    "Slice": lambda a, x, offsets, size: [_slice(x, _ints(offsets), _ints(size))],
    "Gather": lambda a, x, indices: [x[indices.long()]],
    "GatherV2": lambda a, x, indices, axis: [_gather(x, indices, int(axis.reshape(-1)[0]))],
    "Range": lambda a, start, limit, delta: [torch.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)],
    "Tril": lambda a, x: [torch.tril(x, a.i("diagonal"))],
    "Triu": lambda a, x: [torch.triu(x, a.i("diagonal"))],
    "MaskedFill": lambda a, x, mask, value: [x.masked_fill(mask, value.to(x.dtype).reshape(()))],
    "SelectV2": lambda a, c, x, y: [torch.where(c, x, y)],
    "Select": lambda a, c, x, y: [torch.where(c, x, y)],
    "ReduceMean": lambda a, x, axes: [x.mean(_axes(axes, x.dim()), keepdim=a.b("keep_dims"))],
    "ReduceSum": lambda a, x, axes: [x.sum(_axes(axes, x.dim()), keepdim=a.b("keep_dims"))],
    "ReduceMax": lambda a, x, axes: [x.amax(_axes(axes, x.dim()), keepdim=a.b("keep_dims"))],
    "SoftmaxV2": lambda a, x: [torch.softmax(x, a.ints("axes", [-1])[0])],
    "LogSoftmaxV2": lambda a, x: [torch.log_softmax(x, a.ints("axes", [-1])[0])],
    "LayerNormV4": lambda a, x, shape, gamma=None, beta=None: _layer_norm(x, shape, gamma, beta, a.f("epsilon", 1e-5)),
    "Conv2D": _conv2d,
    "BNInfer": _bn_infer,
    "MaxPoolWithArgmaxV1": _max_pool_with_argmax,
    "MatMul": lambda a, x1, x2, bias=None: [_matmul(x1, x2, *_transposes(a), bias)],
    "MatMulV2": lambda a, x1, x2, bias=None, offset_w=None: [_matmul(x1, x2, *_transposes(a), bias)],
    "BatchMatMul": lambda a, x1, x2: [_matmul(x1, x2, a.b("adj_x1"), a.b("adj_x2"))],
    "BatchMatMulV2": lambda a, x1, x2, bias=None, offset_w=None: [_matmul(x1, x2, a.b("adj_x1"), a.b("adj_x2"), bias)],
}


def _unsqueezed(shape, axes):
    out = list(shape)
    for axis in sorted(a % (len(shape) + len(axes)) for a in axes):
        out.insert(axis, 1)
    return out


def run_op(op, inputs: list) -> list:
    """Outputs of one GE op (`op` an OpDef) on its inputs (None for an empty optional input)."""
    fn = OPS.get(op.type)
    if fn is None:
        raise UnknownGeOp(f"CANN stand-in: no CPU implementation of GE op type {op.type!r} (op {op.name!r})")
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    return fn(Attrs(op), *inputs)
