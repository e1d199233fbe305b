"""Shadow execution: a float64 truth for every tensor a dumped run computes, aligned with the
dump's records by construction (docs/dump-format.md, "Truth").

Every floating tensor of the run has a float64 "shadow" (complex: complex128) and a
"precision" (the lowest floating precision its value was computed from). Each op the dumpers
see is also run, right after the real op and in the same process, on the shadows of its
inputs: the same OpOverload, with floating dtype arguments widened, so a cast to a lower
precision keeps the shadow in float64. Integer and bool tensors have no shadow (the real value
takes part in the shadow computation), so control flow, indices and shapes are the real run's.

State (explicit, per session, kept across graphs and calls):
- `entries`: a WeakIdKeyDictionary from a real tensor to its `Entry` (shadow, precision,
  whether its records carry a truth, the tensor's version when the shadow was last in sync).
  A shadow lives exactly as long as its tensor.
- A tensor with no entry (parameters, inputs, buffers, tensors made where nothing was
  watching) gets one lazily: a view of its base's shadow when it is a view of a shadowed
  tensor, else its real value cast up. A tensor changed behind the shadows' back (an
  optimizer step, an undumped step) is noticed by its version counter and cast up again.
- In-place and out= ops mutate the shadow of the mutated argument (running the op on the
  shadows does that); view ops run on the shadows too, so a shadow view aliases its base's
  shadow and a mutation through a view reaches the base's shadow.

Ops that draw random numbers (tagged `nondeterministic_seeded`; running them again would also
move the generator; attention with dropout_p 0 draws nothing and is shadowed), reinterpret
bits (`view.dtype`), are not ATen operators, take a tensor that cannot be shadowed, or raise
in float64 (a fused attention kernel is then replaced by the math one): the shadow of each
output is the real output cast up, and that tensor's records carry no truth (it would equal
the real value)."""

from __future__ import annotations

import collections

import torch
from torch.utils.weak import WeakIdKeyDictionary

from .. import compat

# Unit roundoff of each floating dtype (2^-(mantissa bits + 1)): the order of "precision".
_UNIT_ROUNDOFF = {
    torch.float64: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
    torch.complex128: 2.0**-53,
    torch.complex64: 2.0**-24,
    torch.complex32: 2.0**-11,
}
for _name, _u in (
    ("float8_e4m3fn", 2.0**-4),
    ("float8_e4m3fnuz", 2.0**-4),
    ("float8_e5m2", 2.0**-3),
    ("float8_e5m2fnuz", 2.0**-3),
    ("float8_e8m0fnu", 1.0),
):
    if hasattr(torch, _name):
        _UNIT_ROUNDOFF[getattr(torch, _name)] = _u

# Ops whose dtype argument reinterprets bits: widening it would change the meaning.
_BITCASTS = {torch.ops.aten.view.dtype}
# Ops that overwrite their first argument without reading it: its precision does not count.
_OVERWRITES = {
    torch.ops.aten.copy_.default,
    torch.ops.aten.fill_.Scalar,
    torch.ops.aten.fill_.Tensor,
    torch.ops.aten.zero_.default,
}
_RANDOM = torch.Tag.nondeterministic_seeded


def unit_roundoff(dtype: torch.dtype) -> float:
    return _UNIT_ROUNDOFF.get(dtype, 2.0**-24)


def lower(a: torch.dtype | None, b: torch.dtype | None) -> torch.dtype | None:
    """The lower of two precisions (None: no floating value)."""
    if a is None:
        return b
    if b is None:
        return a
    return b if unit_roundoff(b) > unit_roundoff(a) else a


def truth_dtype(dtype: torch.dtype) -> torch.dtype | None:
    """float64 for floating dtypes, complex128 for complex ones, None for the rest."""
    if dtype.is_complex:
        return torch.complex128
    if dtype.is_floating_point:
        return torch.float64
    return None


def _widened(value):
    if isinstance(value, torch.dtype):
        return truth_dtype(value) or value
    if isinstance(value, (list, tuple)):
        return type(value)(_widened(v) for v in value)
    return value


def _floating(value) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


def _shadowable(tensor: torch.Tensor) -> bool:
    """A plain dense tensor holding data (not a subclass, fake, meta, sparse or quantized)."""
    return (
        type(tensor) in (torch.Tensor, torch.nn.Parameter)
        and tensor.layout == torch.strided
        and not tensor.is_quantized
        and tensor.device.type != "meta"
    )


def _version(tensor: torch.Tensor) -> int | None:
    try:
        return tensor._version
    except RuntimeError:  # inference tensors have no version counter
        return None


def _tensors(value):
    """The tensors of an op's output (a tensor, or nested tuples/lists of them)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


class _Guard:
    """Shadow computations run without autograd and without autocast (the FX interpreter runs
    under the caller's autocast; the eager dump mode is already below it)."""

    def __enter__(self):
        self._no_grad = torch.no_grad()
        self._no_autocast = compat.DisableAutocast()
        self._no_grad.__enter__()
        self._no_autocast.__enter__()

    def __exit__(self, *exc):
        self._no_autocast.__exit__(*exc)
        self._no_grad.__exit__(*exc)


class Entry:
    __slots__ = ("shadow", "precision", "truth", "version")

    def __init__(self, shadow: torch.Tensor, precision: torch.dtype, truth: bool, version: int | None):
        self.shadow = shadow
        self.precision = precision
        self.truth = truth  # False: the shadow is the real value cast up (random op...)
        self.version = version


class Call:
    """One op between `prepare` (before the real op) and `complete` (after it)."""

    __slots__ = ("func", "args", "kwargs", "written", "precision", "reason")

    def __init__(self, func, args, kwargs, written, precision, reason):
        self.func, self.args, self.kwargs = func, args, kwargs
        self.written = written  # floating tensors the op writes
        self.precision = precision  # lowest precision among the floating inputs it reads
        self.reason = reason  # why the op gets no float64 computation, or None


class Shadows:
    def __init__(self):
        self.entries = WeakIdKeyDictionary()
        # op -> {reason: calls}: ops whose outputs got no truth
        self.without_truth: dict[str, collections.Counter] = {}
        self._pending: list[torch.Tensor] = []  # written by the last op; version bumped after it

    # --- looking up -------------------------------------------------------------------
    def settle(self) -> None:
        """The tensors the last op wrote: their version counters have moved past the value
        the op saw (autograd bumps them after the op returns), and their shadows are in sync."""
        for tensor in self._pending:
            entry = self.entries.get(tensor)
            if entry is not None:
                entry.version = _version(tensor)
        self._pending.clear()

    def lookup(self, tensor: torch.Tensor, create: bool = True) -> Entry | None:
        """The tensor's entry, in sync with its real value; created lazily when `create`
        (None for a tensor that cannot be shadowed, or, without `create`, has no valid one)."""
        if not (_floating(tensor) and _shadowable(tensor)):
            return None
        entry = self.entries.get(tensor)
        version = _version(tensor)
        if entry is not None and (version is None or entry.version == version):
            return entry
        if not create:
            return None
        with _Guard():
            entry = self._view_entry(tensor, version) or Entry(_cast_up(tensor), tensor.dtype, True, version)
        self.entries[tensor] = entry
        return entry

    def peek(self, tensor) -> Entry | None:
        """The entry as it is (for writing a record while its op runs)."""
        if not isinstance(tensor, torch.Tensor):
            return None
        return self.entries.get(tensor)

    def _view_entry(self, tensor: torch.Tensor, version) -> Entry | None:
        """A view of a shadowed base: the same view of the base's shadow, so both stay aliased."""
        base = tensor._base
        if base is None:
            return None
        base_entry = self.lookup(base)
        if base_entry is None:
            return None
        shadow = _view_of(base_entry.shadow, base, tensor)
        if shadow is None:
            return None
        return Entry(shadow, lower(base_entry.precision, tensor.dtype), base_entry.truth, version)

    # --- one op -------------------------------------------------------------------------
    def prepare(self, func, args, kwargs) -> Call:
        """Before the real op: the shadows of its inputs (created where missing)."""
        self.settle()
        reason = None
        if not isinstance(func, compat.OpOverload):
            reason = "not an ATen operator"
        elif _draws_random(func, args, kwargs):
            reason = "random"
        elif func in _BITCASTS:
            reason = "reinterprets bits"
        schema = func._schema.arguments if isinstance(func, compat.OpOverload) else []
        by_name = {a.name: a for a in schema}
        state = {"precision": None, "unshadowable": False, "written": []}

        def convert(value, argument, position):
            write = argument is not None and argument.alias_info is not None and argument.alias_info.is_write
            read = not (write and (argument.is_out or (position == 0 and func in _OVERWRITES)))
            return self._shadow_arg(value, write, read, state)

        sargs = [convert(v, schema[i] if i < len(schema) else None, i) for i, v in enumerate(args)]
        skwargs = {k: convert(v, by_name.get(k), -1) for k, v in kwargs.items()}
        if reason is None and state["unshadowable"]:
            reason = "an input cannot be shadowed"
        if reason is None and func not in _BITCASTS:
            sargs, skwargs = _widened(sargs), {k: _widened(v) for k, v in skwargs.items()}
        return Call(func, sargs, skwargs, state["written"], state["precision"], reason)

    def _shadow_arg(self, value, write: bool, read: bool, state: dict):
        if isinstance(value, (list, tuple)):
            return type(value)(self._shadow_arg(v, write, read, state) for v in value)
        if not isinstance(value, torch.Tensor):
            return value
        if not _floating(value):
            # the real value takes part; a copy where the op writes it, so it is written once
            return value.clone() if write else value
        entry = self.lookup(value)
        if entry is None:
            state["unshadowable"] = True
            return value
        if read:
            state["precision"] = lower(state["precision"], entry.precision)
        if write:
            state["written"].append(value)
        return entry.shadow

    def complete(self, call: Call, out) -> None:
        """After the real op: run it on the shadows, and register the outputs' shadows."""
        outs = list(_tensors(out))
        if not call.written and not any(_floating(r) for r in outs):
            return  # nothing floating comes out (sizes, indices, .item()...)
        shadows = []
        if call.reason is None:
            try:
                with _Guard():
                    shadows = list(_tensors(call.func(*call.args, **call.kwargs)))
            except Exception as e:  # an op without a float64 kernel, a device without float64...
                shadows = _attention_in_float64(call, len(outs))
                if shadows is None:
                    call.reason = f"float64 raised {type(e).__name__}"
        if call.reason is None and len(shadows) != len(outs):
            call.reason = "float64 outputs differ in number"
        if call.reason is not None:
            self._fall_back(call, outs)
            return
        written = {id(t) for t in call.written}
        for real, shadow in zip(outs, shadows):
            if not _floating(real) or id(real) in written or not _shadowable(real):
                continue
            if shadow is None or shadow.shape != real.shape:
                self._count(call, "no float64 output" if shadow is None else "float64 output shape differs")
                with _Guard():
                    self.entries[real] = Entry(_cast_up(real), lower(call.precision, real.dtype), False, _version(real))
                continue
            if shadow.dtype != truth_dtype(real.dtype):
                with _Guard():
                    shadow = shadow.to(truth_dtype(real.dtype))
            self.entries[real] = Entry(shadow, lower(call.precision, real.dtype), True, _version(real))
        self._written(call, truth=True)

    def _count(self, call: Call, reason: str) -> None:
        self.without_truth.setdefault(str(call.func), collections.Counter())[reason] += 1

    def _fall_back(self, call: Call, outs) -> None:
        """The real outputs cast up, without truth; written tensors resynced in place."""
        self._count(call, call.reason)
        written = {id(t) for t in call.written}
        with _Guard():
            for real in outs:
                if _floating(real) and _shadowable(real) and id(real) not in written:
                    self.entries[real] = Entry(_cast_up(real), lower(call.precision, real.dtype), False, _version(real))
            for tensor in call.written:
                entry = self.entries.get(tensor)
                if entry is not None:
                    entry.shadow.copy_(tensor)
        self._written(call, truth=False)

    def _written(self, call: Call, truth: bool) -> None:
        for tensor in call.written:
            entry = self.entries.get(tensor)
            if entry is None:
                continue
            entry.precision = lower(call.precision, tensor.dtype)
            entry.truth = truth
            # the version counter (shared with the base) moves once the op returns
            self._pending.append(tensor)
            base = tensor._base
            if base is not None:
                base_entry = self.entries.get(base)
                if base_entry is not None and _same_storage(base_entry.shadow, entry.shadow):
                    self._pending.append(base)
                # else the base's shadow did not see the write: its version check recasts it

    def summary(self) -> dict:
        return {"ops_without_truth": {op: dict(reasons) for op, reasons in self.without_truth.items()}}


def _named(func, args, kwargs) -> dict:
    """The op's arguments by schema name, defaults filled in."""
    schema = func._schema.arguments
    defaults = {a.name: a.default_value for a in schema if a.has_default_value()}
    return {**defaults, **dict(zip((a.name for a in schema), args)), **kwargs}


def _draws_random(func, args, kwargs) -> bool:
    """Tagged random, and not one of the ops that draw only for a dropout they are told to
    skip (attention with dropout_p 0, native_dropout with p 0 or train False)."""
    if _RANDOM not in func.tags:
        return False
    named = _named(func, args, kwargs)
    if "dropout_p" in named:
        return named["dropout_p"] != 0
    if func.name() == "aten::native_dropout":
        return named.get("p") != 0 and named.get("train") is not False
    return True


_ATTENTION_MASKS = ("attn_mask", "attn_bias")


def _attention_in_float64(call: Call, count: int) -> list | None:
    """The fused attention kernels (flash, memory-efficient, cuDNN) have no float64 version on
    most devices: their first output, the attention itself, is computed by the math kernel
    from the same shadows; their other outputs (logsumexp, seeds) get none (None each)."""
    func = call.func
    if not func.name().startswith("aten::_scaled_dot_product_") or count < 1:
        return None
    named = _named(func, call.args, call.kwargs)
    if named.get("dropout_p", 0) != 0:
        return None
    query, key = named["query"], named["key"]
    mask = next((named[m] for m in _ATTENTION_MASKS if named.get(m) is not None), None)
    try:
        with _Guard():
            out, _ = torch.ops.aten._scaled_dot_product_attention_math(
                query,
                key,
                named["value"],
                attn_mask=mask,
                is_causal=bool(named.get("is_causal", False)),
                scale=named.get("scale"),
                enable_gqa=query.shape[-3] != key.shape[-3],
            )
    except Exception:
        return None
    return [out] + [None] * (count - 1)


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _cast_up(tensor: torch.Tensor) -> torch.Tensor:
    """The real value in float64 (complex128), with the same strides where they are dense,
    so views of it can be rebuilt on the shadow."""
    dtype = truth_dtype(tensor.dtype)
    value = tensor.detach()
    try:
        shadow = torch.empty_like(value, dtype=dtype)
        if shadow.stride() == value.stride():
            return shadow.copy_(value)
    except RuntimeError:
        pass
    return value.to(dtype)


def _view_of(base_shadow: torch.Tensor, base: torch.Tensor, view: torch.Tensor) -> torch.Tensor | None:
    """`view`'s geometry applied to the shadow of its base, when it lies inside that shadow."""
    if (
        base_shadow.shape != base.shape
        or base_shadow.stride() != base.stride()
        or base_shadow.dtype != truth_dtype(view.dtype)
        or base_shadow.device != view.device
    ):
        return None
    offset = base_shadow.storage_offset() + view.storage_offset() - base.storage_offset()
    last = offset + sum((n - 1) * s for n, s in zip(view.shape, view.stride()) if n > 0)
    size = base_shadow.untyped_storage().nbytes() // base_shadow.element_size()
    if offset < 0 or any(s < 0 for s in view.stride()) or (view.numel() and last >= size):
        return None
    return base_shadow.as_strided(view.shape, view.stride(), offset)
