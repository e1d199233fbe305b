"""The float64 truth of shadow execution (`dump: {truth: true}`, diagnose_pytorch/dump/shadow.py):
every floating record of an eager (aten) or FX-level dump carries its truth (`truth_delta_file`:
truth - value in float32) and `precision`;
the truth of the final output is the model computed in float64 from the same weights and
inputs; a float32 intermediate of a bf16 model has precision bfloat16; random records carry no
truth; after a graph break the shadows flow into the next graph. Then the algorithm itself,
in process: views, in-place and out= ops, integer tensors, random ops, ops that raise in
float64, tensors changed behind the shadows' back, and the writer's budget."""

from __future__ import annotations

import gc
import importlib.util
import json

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from conftest import CATALOG, HERE, RunConfig, ok_run, uses
from diagnose_pytorch.dump.dump_writer import DumpWriter
from diagnose_pytorch.dump.shadow import Call, Shadows, _attention_in_float64, lower
from diagnose_pytorch.spec import RunSpec, SpecError
from fixtures.dump_reader import read_dump

SCRIPT = HERE / "scripts" / "truth_model.py"
# Runs of this file, added to the shared catalog (so the session pool runs them with the rest).
RUNS = {
    "truth/eager-fp32": RunConfig(str(SCRIPT), {"mode": "eager", "dump": {"truth": True}}),
    "truth/eager-bf16": RunConfig(str(SCRIPT), {"mode": "eager", "dtype": "bfloat16", "dump": {"truth": True}}),
    "truth/eager-bf16-outputs": RunConfig(
        str(SCRIPT), {"mode": "eager", "dtype": "bfloat16", "dump": {"level": "none", "truth": True}}
    ),
    "truth/fx-bf16-break": RunConfig(
        str(SCRIPT),
        {"backend": "inductor", "dtype": "bfloat16", "dump": {"level": "fx", "truth": True}},
        args=["--graph-break", "--calls", "2"],
        cost=2,
    ),
}
CATALOG.update(RUNS)
FLOATING = ("torch.float", "torch.bfloat16", "torch.complex")


def floating(record: dict) -> bool:
    return record["dtype"].startswith(FLOATING)


def truth(dump, record: dict) -> np.ndarray:
    """The record's float64 truth: its value plus the stored difference, or the truth file read
    as float64 (the full truth, or the value's own file where they are equal)."""
    if "truth_file" in record:
        whole = dump.load(record, "truth_file")
        return whole.astype(np.complex128 if np.iscomplexobj(whole) else np.float64)
    delta = dump.load(record, "truth_delta_file")
    return dump.load(record).astype(np.complex128 if np.iscomplexobj(delta) else np.float64) + delta


def has_truth(record: dict) -> bool:
    return "truth_delta_file" in record or "truth_file" in record


def assert_compact_truth_close(got: np.ndarray, reference: np.ndarray, value: np.ndarray) -> None:
    """A compact truth is the float64 truth within 2^-24 of its distance from the value."""
    bound = 2.0**-24 * np.abs(reference - value.astype(np.float64)) + 1e-12 * np.abs(reference)
    assert (np.abs(got - reference) <= bound).all()


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a.astype(np.float64) - b) ** 2)))


def random_op(name: str) -> bool:
    namespace, op, overload = name.split(".")
    return torch.Tag.nondeterministic_seeded in getattr(getattr(getattr(torch.ops, namespace), op), overload).tags


def script_module():
    spec = importlib.util.spec_from_file_location("truth_model", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def float64_reference(dtype: torch.dtype) -> np.ndarray:
    """The script's model in float64 from the run's weights and input (rounded to `dtype`)."""
    module = script_module()
    model, x = module.make()
    model = model.to(dtype).double()
    model.norm.upcast = torch.float64
    with torch.no_grad():
        out, _ = model(x.to(dtype).double())
    return out.numpy()


def final_output(run) -> tuple:
    outputs = run.outputs
    first = next(r for r in outputs.tensors if r["index"] == 0)
    return outputs, first


# --- eager (aten) dumps -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["truth/eager-fp32", "truth/eager-bf16"])
@uses("truth/eager-fp32", "truth/eager-bf16")
def test_every_floating_record_has_a_truth_of_its_shape(plugin_runs, name):
    dump = ok_run(plugin_runs, name).dump
    assert dump.header["truth"] is True
    records = [r for r in dump.tensors if floating(r)]
    assert len(records) > 40
    # the dropout's random mask carries no truth: as its op's output and as the next op's input
    randoms = [r for r in records if r["io"] == "output" and r.get("op") and random_op(r["op"])]
    assert randoms and not any(has_truth(r) for r in randoms)
    random_data = {r["stats"]["hash"] for r in randoms}
    for record in records:
        assert "precision" in record, record["op_key"]
        if not has_truth(record):
            assert record["stats"]["hash"] in random_data, record["op_key"]
            continue
        if "truth_file" in record:
            # the truth equals the value (an input cast up): the value's file; or a difference
            # float32 cannot hold (an uninitialised buffer's garbage): the whole float64 truth
            assert record["truth_file"] in (record["file"], record["file"].replace(".npy", ".truth.npy")), record
        else:
            assert record["truth_delta_file"].endswith(".truth_delta.npy")
            delta = np.load(dump.root / record["truth_delta_file"], allow_pickle=False)
            assert delta.dtype == (np.complex64 if record["dtype"].startswith("torch.complex") else np.float32)
            assert delta.any(), record["op_key"]
        value = truth(dump, record)
        assert value.dtype == np.float64 and list(value.shape) == record["shape"], record["op_key"]
        assert value.flags.c_contiguous
    assert sum(not has_truth(r) for r in records) <= 2 * len(randoms)
    # integer records (the dropout's mask is bool) carry neither field
    for record in dump.tensors:
        if not floating(record):
            assert not has_truth(record) and "precision" not in record


@pytest.mark.parametrize(
    "name, dtype",
    [
        ("truth/eager-fp32", torch.float32),
        ("truth/eager-bf16", torch.bfloat16),
        ("truth/eager-bf16-outputs", torch.bfloat16),  # no op dump: the final outputs' truth alone
    ],
)
@uses("truth/eager-fp32", "truth/eager-bf16", "truth/eager-bf16-outputs")
def test_final_truth_is_the_model_in_float64(plugin_runs, name, dtype):
    run = ok_run(plugin_runs, name)
    outputs, first = final_output(run)
    assert outputs.header["truth"] is True
    assert first["precision"] == str(dtype)
    reference = float64_reference(dtype)
    got = truth(outputs, first)
    assert_compact_truth_close(got, reference, outputs.load(first))
    if (run.run_dir / "dump").exists():  # the same truth in the op dump's final record
        final = next(r for r in run.dump.tensors if r.get("kind") == "final" and r["index"] == 0)
        np.testing.assert_array_equal(truth(run.dump, final), got)
    else:
        assert run.status["ran"]["dump_level"] == "none"
    # the side output computed from the dropout's real values has a truth; the dropout itself none
    noise = next(r for r in outputs.tensors if r["index"] == 1)
    assert has_truth(noise)


@uses("truth/eager-fp32", "truth/eager-bf16")
def test_a_float32_intermediate_of_a_bf16_model_has_bf16_precision(plugin_runs):
    dump = ok_run(plugin_runs, "truth/eager-bf16").dump
    (upcast,) = [r for r in dump.ops() if r["op_key"] == "norm/aten._to_copy.default#0"]
    assert upcast["dtype"] == "torch.float32" and upcast["precision"] == "torch.bfloat16"
    # every record inside the norm computed in float32 inherits it
    inner = [r for r in dump.ops() if r.get("module") == "norm" and r["dtype"] == "torch.float32"]
    assert len(inner) >= 5 and {r["precision"] for r in inner} == {"torch.bfloat16"}
    # in the fp32 model (where the upcast is no op) the same records are float32 all through
    fp32 = ok_run(plugin_runs, "truth/eager-fp32").dump
    inner = [r for r in fp32.ops() if r.get("module") == "norm"]
    assert len(inner) >= 5 and {r["precision"] for r in inner} == {"torch.float32"}


@uses("truth/eager-fp32", "truth/eager-bf16")
def test_fp32_is_closer_to_the_truth_than_bf16(plugin_runs):
    errors = {}
    for name in ("truth/eager-fp32", "truth/eager-bf16"):
        outputs, first = final_output(ok_run(plugin_runs, name))
        errors[name] = rmse(outputs.load(first), truth(outputs, first))
    assert 0 < errors["truth/eager-fp32"] < errors["truth/eager-bf16"] / 100


@uses("truth/eager-bf16")
def test_the_in_place_op_through_a_view_reaches_the_truth(plugin_runs):
    """The op after the in-place mul (the norm's upcast) reads the mutated tensor: its truth
    input is 1.5x the Linear's truth output on the mutated rows, unchanged on the others."""
    dump = ok_run(plugin_runs, "truth/eager-bf16").dump
    linear = next(r for r in dump.ops() if r["op_key"] == "fc/aten.addmm.default#0")
    read = next(r for r in dump.ops("input") if r["op_key"] == "norm/aten._to_copy.default#0")
    before, after = truth(dump, linear), truth(dump, read)
    expected = before.reshape(-1, 2, before.shape[-1]).copy()
    expected[:, 0] *= 1.5
    # each compact truth within 2^-24 of its distance from the bf16 value: 2^-32 relative
    np.testing.assert_allclose(after, expected.reshape(before.shape), rtol=1e-9)


# --- FX-level dump with a graph break ---------------------------------------------------


@uses("truth/fx-bf16-break")
def test_fx_dump_has_truth_for_every_node_across_the_graph_break(plugin_runs):
    run = ok_run(plugin_runs, "truth/fx-bf16-break")
    assert run.status["graphs"]["graph_breaks"] >= 1
    dump = run.dump
    assert dump.header["truth"] is True and dump.header["level"] == "fx"
    nodes = [r for r in dump.ops() if floating(r)]
    randoms = 0
    assert {r["graph"] for r in nodes} >= {0, 1}
    assert {r["step"] for r in nodes} == {0, 1}
    for record in nodes:
        if random_op(record["op"]):
            assert not has_truth(record), record["op_key"]
            randoms += 1
        else:
            assert list(truth(dump, record).shape) == record["shape"], record["op_key"]
    assert randoms
    # graph 1 starts from graph 0's shadows (not from its real inputs cast up): a bf16 input
    # computed by graph 0 differs from its truth
    carried = [
        r
        for r in dump.ops("input")
        if r.get("graph") == 1 and floating(r) and r["dtype"] == "torch.bfloat16" and has_truth(r)
    ]
    assert any(rmse(dump.load(r), truth(dump, r)) > 0 for r in carried)
    # both calls' final outputs carry their truth
    finals = [r for r in run.outputs.tensors if r["index"] == 0]
    assert len(finals) == 2 and all(has_truth(r) for r in finals)
    assert run.status["truth"]["ops_without_truth"], "the dropout's random op is listed"


# --- the algorithm, in process ----------------------------------------------------------


class ShadowMode(TorchDispatchMode):
    """What the eager dumper does, without the dump."""

    def __init__(self):
        super().__init__()
        self.shadows = Shadows()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        call = self.shadows.prepare(func, args, kwargs)
        out = func(*args, **kwargs)
        self.shadows.complete(call, out)
        return out

    def entry(self, tensor):
        self.shadows.settle()
        return self.shadows.lookup(tensor, create=False)


def test_views_in_place_and_out_ops_keep_the_shadows_right():
    x = torch.randn(4, 6, dtype=torch.bfloat16)
    mode = ShadowMode()
    with mode:
        y = x * 3
        y.view(2, 12)[:, :5].add_(0.1)  # through a view, reaching y's shadow
        y.t()[1].mul_(0.3)
        z = torch.empty(4, 6, dtype=torch.bfloat16)
        torch.add(y, 1.0, out=z)
        s = z.float().sum(dtype=torch.bfloat16)
    expected = x.double() * 3
    expected.view(2, 12)[:, :5].add_(0.1)
    expected.t()[1].mul_(0.3)
    for tensor, want in ((y, expected), (z, expected + 1), (s, (expected + 1).sum())):
        entry = mode.entry(tensor)
        assert entry is not None and entry.truth and entry.shadow.dtype == torch.float64
        torch.testing.assert_close(entry.shadow, want, rtol=1e-15, atol=0)
    assert mode.entry(s).precision == torch.bfloat16
    assert not torch.equal(mode.entry(y).shadow, y.double())  # bf16 rounding is visible


def test_integer_tensors_are_real_and_written_once():
    mode = ShadowMode()
    i = torch.arange(4)
    x = torch.randn(4)
    with mode:
        i.add_(1)
        h = i * 0.5  # a float from an int: its truth
        values, index = torch.sort(x)
        idx = x.argmax()
        picked = x[index]
    assert i.tolist() == [1, 2, 3, 4]
    assert mode.shadows.peek(i) is None and mode.shadows.peek(index) is None and mode.shadows.peek(idx) is None
    torch.testing.assert_close(mode.entry(h).shadow, h.double())
    torch.testing.assert_close(mode.entry(values).shadow, x.double().sort().values)
    torch.testing.assert_close(mode.entry(picked).shadow, x.double()[index])


def test_random_ops_keep_the_generator_and_carry_no_truth():
    mode = ShadowMode()
    torch.manual_seed(3)
    plain = torch.rand(5), torch.randn(3).uniform_()
    torch.manual_seed(3)
    with mode:
        r = torch.rand(5)
        u = torch.randn(3)
        u.uniform_()
        after = r * 2
    assert torch.equal(r, plain[0]) and torch.equal(u, plain[1])  # the shadow drew nothing
    for tensor in (r, u):
        entry = mode.entry(tensor)
        assert not entry.truth and torch.equal(entry.shadow, tensor.double())
    assert mode.entry(after).truth  # computed from the real random values
    assert set(mode.shadows.summary()["ops_without_truth"]) >= {"aten.rand.default", "aten.uniform_.default"}


def test_an_op_that_raises_in_float64_falls_back_without_truth():
    @torch.library.custom_op("truth_test::halve_f32", mutates_args=())
    def halve(x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError("float32 only")
        return x / 2

    x = torch.randn(4)
    mode = ShadowMode()
    with mode:
        y = halve(x)
        z = y + 1
    assert not mode.entry(y).truth and torch.equal(mode.entry(y).shadow, y.double())
    assert mode.entry(z).truth
    reasons = mode.shadows.summary()["ops_without_truth"]["truth_test.halve_f32.default"]
    assert reasons == {"float64 raised TypeError": 1}


def test_attention_without_dropout_is_shadowed():
    """The fused attention ops are tagged random (for their dropout): with dropout_p 0 they are
    not, and a kernel without float64 (flash/efficient on GPUs) is replaced by the math one."""
    q, k, v = (torch.randn(2, 4, 8, 16, dtype=torch.bfloat16) for _ in range(3))
    mode = ShadowMode()
    with mode:
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    entry = mode.entry(out)
    assert entry.truth and entry.precision == torch.bfloat16
    want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    torch.testing.assert_close(entry.shadow, want, rtol=1e-12, atol=1e-12)
    assert not mode.shadows.summary()["ops_without_truth"]
    # the math kernel stands in for one without float64 (memory-efficient attention: no CPU kernel)
    call = Call(
        torch.ops.aten._scaled_dot_product_efficient_attention.default,
        [q.double(), k.double(), v.double(), None, True],
        {"is_causal": True},
        [],
        None,
        None,
    )
    first, *rest = _attention_in_float64(call, 2)
    torch.testing.assert_close(first, want, rtol=1e-12, atol=1e-12)
    assert rest == [None]


def test_a_tensor_changed_behind_the_shadows_back_is_cast_again():
    weight = torch.randn(3)
    mode = ShadowMode()
    with mode:
        a = weight * 2
    with torch.no_grad():
        weight.add_(1)  # an optimizer step: outside the mode
    with mode:
        b = weight * 2
    torch.testing.assert_close(mode.entry(a).shadow, (weight.double() - 1) * 2)
    torch.testing.assert_close(mode.entry(b).shadow, weight.double() * 2)


def test_shadows_live_as_long_as_their_tensors():
    mode = ShadowMode()
    x = torch.randn(64)
    with mode:
        ys = [x + i for i in range(10)]
    assert len(mode.shadows.entries) == 11
    del ys
    gc.collect()
    assert len(mode.shadows.entries) == 1


def test_complex_shadows_and_precision_order():
    mode = ShadowMode()
    c = torch.randn(3, dtype=torch.complex64)
    with mode:
        d = c * (1 + 2j)
        r = torch.view_as_real(d)
    assert mode.entry(d).shadow.dtype == torch.complex128
    assert mode.entry(r).shadow.dtype == torch.float64
    assert lower(torch.float16, torch.bfloat16) == torch.bfloat16
    assert lower(torch.float32, torch.float16) == torch.float16
    assert lower(torch.float8_e4m3fn, torch.bfloat16) == torch.float8_e4m3fn
    assert lower(None, torch.float64) == torch.float64


def test_the_writer_counts_truth_in_the_budget(tmp_path):
    x, y = torch.randn(10), torch.randn(10)
    writer = DumpWriter(tmp_path / "d", {"truth": True}, max_bytes=40 + 40 + 40)
    for seq, value in enumerate((x, y)):
        record = {"seq": seq, "op_key": "op", "io": "output", "index": 0}
        writer.write_tensor(value, record, truth=value.double() + 1e-9, precision=x.dtype)
    writer.close()
    dump = read_dump(tmp_path / "d")
    first, second = dump.tensors
    assert first["truth_delta_file"] == "tensors/0000000.output.0.truth_delta.npy"
    assert first["precision"] == "torch.float32"
    assert_compact_truth_close(truth(dump, first), x.double().numpy() + 1e-9, x.numpy())
    # the second pair does not fit: neither file (a record holds both or neither)
    assert "file" not in second and not has_truth(second) and second["precision"] == "torch.float32"
    assert second["not_kept"] == "budget"
    assert dump.budget == {"type": "budget", "limit_bytes": 120, "written_bytes": 80}
    stats = DumpWriter(tmp_path / "s", {}, stats_only=True)
    stats.write_tensor(x, {"seq": 0, "op_key": "op", "io": "output", "index": 0}, truth=x.double(), precision=x.dtype)
    stats.close()
    (record,) = read_dump(tmp_path / "s").tensors
    assert not has_truth(record) and record["precision"] == "torch.float32"
    assert json.loads((tmp_path / "s" / "manifest.jsonl").read_text().splitlines()[0])["type"] == "header"


def test_a_truth_float32_cannot_hold_as_a_difference_is_stored_whole(tmp_path):
    """Where the value overflowed (inf) but the truth is finite, or the value is NaN and the truth
    is not, truth - value is not finite: the record gets the full float64 `truth_file`; equal
    infinities and NaN on both sides still make a compact truth."""
    writer = DumpWriter(tmp_path, {"truth": True})
    overflowed = torch.tensor([float("inf"), 1.0])
    agreeing = torch.tensor([float("inf"), float("nan"), 1.0])
    writer.write_tensor(
        overflowed,
        {"seq": 0, "op_key": "a", "io": "output", "index": 0},
        truth=torch.tensor([4e38, 1.0], dtype=torch.float64),
    )
    writer.write_tensor(
        agreeing,
        {"seq": 1, "op_key": "b", "io": "output", "index": 0},
        truth=torch.tensor([float("inf"), float("nan"), 1.5], dtype=torch.float64),
    )
    writer.close()
    dump = read_dump(tmp_path)
    whole, compact = dump.tensors
    assert "truth_delta_file" not in whole
    np.testing.assert_array_equal(truth(dump, whole), [4e38, 1.0])
    assert "truth_file" not in compact
    np.testing.assert_array_equal(truth(dump, compact), [float("inf"), float("nan"), 1.5])


def test_a_scalar_has_a_compact_truth(tmp_path):
    writer = DumpWriter(tmp_path, {"truth": True})
    writer.write_tensor(
        torch.tensor(2.5),
        {"seq": 0, "op_key": "max", "io": "output", "index": 0},
        truth=torch.tensor(2.5 + 1e-8, dtype=torch.float64),
    )
    writer.close()
    dump = read_dump(tmp_path)
    (record,) = dump.tensors
    assert record["shape"] == [] and "truth_delta_file" in record
    np.testing.assert_allclose(truth(dump, record), 2.5 + 1e-8, rtol=1e-15)


def test_a_truth_equal_to_its_value_is_the_value_file(tmp_path):
    """A parameter or input cast up to float64 is its own truth: no second file."""
    writer = DumpWriter(tmp_path, {"truth": True})
    weight = torch.randn(8).to(torch.bfloat16)
    writer.write_tensor(weight, {"seq": 0, "op_key": "w", "io": "input", "index": 0}, truth=weight.double())
    writer.close()
    dump = read_dump(tmp_path)
    (record,) = dump.tensors
    assert record["truth_file"] == record["file"] and "truth_delta_file" not in record
    assert len(list((tmp_path / "tensors").iterdir())) == 1
    np.testing.assert_array_equal(truth(dump, record), weight.double().numpy())


@pytest.mark.parametrize(
    "spec",
    [
        {"mode": "eager"},
        {"backend": "aot_eager"},
        {"backend": "inductor", "dump": {"level": "fx"}},
        {"mode": "eager", "dump": {"level": "none"}},
    ],
)
def test_truth_is_for_aten_and_fx_dumps_and_eager_outputs(spec):
    dump = {**spec.get("dump", {}), "truth": True}
    assert RunSpec.from_dict({"output_dir": "x", **spec, "dump": dump}).dump.truth
    assert not RunSpec.from_dict({"output_dir": "x", **spec}).dump.truth


@pytest.mark.parametrize(
    "spec",
    [
        {"backend": "inductor"},
        {"backend": "aot_eager", "dump": {"level": "none"}},
        {"backend": "torchair", "dump": {"level": "fx"}},
    ],
)
def test_truth_is_refused_where_no_op_is_shadowed(spec):
    with pytest.raises(SpecError, match="dump.truth needs"):
        RunSpec.from_dict({"output_dir": "x", **spec, "dump": {**spec.get("dump", {}), "truth": True}})
