"""The dump writer against the format document, in process (no compile needed)."""

import hashlib
import json
import os

import numpy as np
import pytest
import torch

from diagnose_pytorch.dump.dump_writer import DumpWriter
from fixtures.dump_reader import read_dump


def write(tmp_path, tensors, **options):
    writer = DumpWriter(tmp_path, {"mode": "eager"}, **options)
    for seq, tensor in enumerate(tensors):
        writer.write_tensor(tensor, {"seq": seq, "op_key": f"op{seq}", "io": "output", "index": 0})
    writer.close()
    return read_dump(tmp_path)


def test_records_files_and_stats_follow_the_format(tmp_path):
    x = torch.tensor([[1.0, -2.0, float("nan")], [float("inf"), 0.5, 3.0]])
    dump = write(tmp_path, [x])
    assert dump.header["format"] == "diagnose-dump" and dump.header["version"] == 1
    assert dump.end == {"type": "end", "records": 1}
    (record,) = dump.tensors
    assert record["dtype"] == "torch.float32" and record["shape"] == [2, 3]
    assert record["stride"] == [3, 1]
    stored = dump.load(record)
    np.testing.assert_array_equal(stored, x.numpy())
    finite = np.array([1.0, -2.0, 0.5, 3.0])
    assert record["stats"]["min"] == -2.0 and record["stats"]["max"] == 3.0
    assert record["stats"]["mean"] == pytest.approx(finite.mean())
    assert record["stats"]["l2"] == pytest.approx(np.linalg.norm(finite))
    assert (record["stats"]["nan"], record["stats"]["inf"]) == (1, 1)
    assert record["stats"]["hash"] == hashlib.blake2b(stored.tobytes(), digest_size=16).hexdigest()


def test_bfloat16_is_widened_losslessly_and_keeps_its_dtype(tmp_path):
    x = torch.randn(64, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    (record,) = write(tmp_path, [x]).tensors
    stored = np.load(tmp_path / record["file"])
    assert record["dtype"] == "torch.bfloat16" and stored.dtype == np.float32
    assert torch.equal(torch.from_numpy(stored).to(torch.bfloat16), x)


def test_non_contiguous_tensor_is_stored_in_logical_order(tmp_path):
    x = torch.arange(12.0).reshape(3, 4).t()
    (record,) = write(tmp_path, [x]).tensors
    assert record["stride"] == [1, 4]
    stored = np.load(tmp_path / record["file"])
    np.testing.assert_array_equal(stored, x.numpy())
    assert stored.flags.c_contiguous  # C order, as readers of the format expect


def test_statistics_of_each_dtype_are_those_of_its_float64_values(tmp_path):
    """Floating values are counted and bounded in their own dtype, the sums taken in float64:
    the statistics are those of the values widened to float64 (NaN, infinities, a transposed
    view, integers and booleans included), whether every element is finite (one walk, in
    memory order) or not (the careful walk), float32's largest values included."""
    generator = torch.Generator().manual_seed(4)
    tensors = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        finite = torch.randn(12, 9, generator=generator).to(dtype)
        value = finite.clone()
        value[2, 3], value[4, 1], value[5, 5] = float("nan"), float("inf"), -float("inf")
        tensors += [value, value.t(), torch.full((3,), float("nan"), dtype=dtype)]
        tensors += [finite, finite.t(), finite.reshape(3, 4, 9).permute(2, 0, 1)]
    tensors.append(torch.tensor([3e38, 3e38, -3e38]))
    tensors += [torch.arange(-5, 7), torch.tensor([True, False, True])]
    for tensor, record in zip(tensors, write(tmp_path, tensors).tensors):
        wide = tensor.to(torch.float64).numpy().reshape(-1)
        finite = wide[np.isfinite(wide)]
        stats = record["stats"]
        assert (stats["nan"], stats["inf"]) == (int(np.isnan(wide).sum()), int(np.isinf(wide).sum()))
        if not finite.size:
            assert stats["min"] is stats["max"] is stats["mean"] is stats["l2"] is None
            continue
        assert (stats["min"], stats["max"]) == (finite.min(), finite.max())
        assert stats["mean"] == pytest.approx(finite.mean(), rel=1e-12)
        assert stats["l2"] == pytest.approx(np.linalg.norm(finite), rel=1e-12)


def test_zero_dim_values_agreeing_with_their_truth_in_infinity_or_nan_have_no_truth_file(tmp_path):
    writer = DumpWriter(tmp_path, {"mode": "eager"})
    for seq, value in enumerate((float("-inf"), float("nan"), 2.0)):
        tensor = torch.tensor(value)
        writer.write_tensor(
            tensor, {"seq": seq, "op_key": f"op{seq}", "io": "output", "index": 0}, truth=tensor.double()
        )
    writer.close()
    for record in read_dump(tmp_path).tensors:
        assert record["truth_file"] == record["file"] and "truth_delta_file" not in record


def test_statistics_only_writes_no_tensor_file(tmp_path):
    dump = write(tmp_path, [torch.ones(4), torch.zeros(2)], stats_only=True)
    assert [r["stats"]["l2"] for r in dump.tensors] == [2.0, 0.0]
    assert all("file" not in r and r["not_kept"] == "stats_only" for r in dump.tensors)
    assert not list((tmp_path / "tensors").iterdir())


def test_tensor_io_keeps_the_other_sides_records_as_statistics(tmp_path):
    """graph_dump_compare's golden against Inductor's buffers (outputs only): its inputs stay
    statistics, which the comparison still reads (input scales, NaN origins)."""
    writer = DumpWriter(tmp_path, {"mode": "compiled"}, tensor_io=["output"])
    for io in ("input", "output"):
        writer.write_tensor(torch.full((4,), 2.0), {"seq": 0, "op_key": "mul", "io": io, "index": 0})
    writer.close()
    given, made = read_dump(tmp_path).tensors
    assert "file" not in given and given["not_kept"] == "stats_only" and given["stats"]["l2"] == 4.0
    assert "not_kept" not in made and np.load(tmp_path / made["file"]).tolist() == [2.0] * 4
    assert writer.not_kept == {"stats_only": 1, "budget": 0}


def test_byte_budget_stops_tensor_files_and_says_so(tmp_path):
    tensors = [torch.full((16,), float(i)) for i in range(5)]  # 64 bytes each
    dump = write(tmp_path, tensors, max_bytes=150)
    assert [("file" in r) for r in dump.tensors] == [True, True, False, False, False]
    assert [r.get("not_kept") for r in dump.tensors] == [None, None, "budget", "budget", "budget"]
    assert dump.budget == {"type": "budget", "limit_bytes": 150, "written_bytes": 128}
    assert all("stats" in r for r in dump.tensors)
    lines = [json.loads(line)["type"] for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert lines == ["header", "tensor", "tensor", "budget", "tensor", "tensor", "tensor", "end"]


def test_small_tensors_that_still_fit_after_the_budget_is_reached_are_kept(tmp_path):
    """A record left out by the budget (the logits) does not stop a later one that still fits
    (a rotary-frequency buffer): each record that no longer fits says so (`not_kept`), the
    others keep their files; a value and its truth are kept both or neither."""
    writer = DumpWriter(tmp_path, {"mode": "compiled"}, max_bytes=200)
    generator = torch.Generator().manual_seed(4)
    plan = [(16, False), (64, False), (8, True), (8, False), (16, True), (4, False)]  # (floats, with truth)
    for seq, (size, with_truth) in enumerate(plan):
        value = torch.randn(size, generator=generator)
        truth = value.double() + 1e-3 if with_truth else None
        writer.write_tensor(value, {"seq": seq, "op_key": f"op{seq}", "io": "output", "index": 0}, truth=truth)
    writer.close()
    dump = read_dump(tmp_path)
    # 64 bytes; 256 left out; 32 + 32 of truth; 32; 64 + 64 of truth left out (160 + 128 > 200); 16
    assert [r.get("not_kept") for r in dump.tensors] == [None, "budget", None, None, "budget", None]
    assert [("truth_delta_file" in r) for r in dump.tensors] == [False, False, True, False, False, False]
    assert dump.budget == {"type": "budget", "limit_bytes": 200, "written_bytes": 64}
    assert writer.written_bytes == 64 + 64 + 32 + 16 and writer.not_kept == {"stats_only": 0, "budget": 2}
    lines = [json.loads(line)["type"] for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert lines.count("budget") == 1 and lines.index("budget") == 2  # before the first record left out


def test_needed_records_take_the_reserve_and_pass_a_record_too_large(tmp_path):
    """What a check cannot do without (the inputs of an op signature's first call) may use the
    reserved part of the budget and is kept whenever it fits; a needed record too large for what
    is left is left out alone. Ordinary records may use only what the needed ones leave of the
    reserve, also after one was left out."""
    writer = DumpWriter(tmp_path, {"mode": "eager"}, max_bytes=256, reserved_bytes=128)
    plan = [(16, False), (16, False), (16, True), (64, True), (16, True), (16, False)]  # (floats, needed)
    for seq, (size, needed) in enumerate(plan):
        record = {"seq": seq, "op_key": f"op{seq}", "io": "input", "index": 0}
        writer.write_tensor(torch.full((size,), float(seq)), record, needed=needed)
    writer.close()
    dump = read_dump(tmp_path)
    # 64 + 64 ordinary bytes reach the ordinary limit (256 - 128); the needed 64 bytes fit in the
    # reserve, the needed 256 do not (and stop nothing), the last needed 64 fit, the ordinary 64
    # no longer do
    assert [r.get("not_kept") for r in dump.tensors] == [None, None, None, "budget", None, "budget"]
    assert writer.written_bytes == 256 and writer.needed_bytes == 128 and writer.budget_reached

    # the needed records used 32 of the 128 reserved bytes: ordinary ones may go up to 256 - 96
    writer = DumpWriter(tmp_path / "partly", {"mode": "eager"}, max_bytes=256, reserved_bytes=128)
    for seq, (size, needed) in enumerate([(8, True), (16, False), (16, False), (8, False), (8, True)]):
        record = {"seq": seq, "op_key": f"op{seq}", "io": "input", "index": 0}
        writer.write_tensor(torch.full((size,), float(seq)), record, needed=needed)
    writer.close()
    kept = [r.get("not_kept") for r in read_dump(tmp_path / "partly").tensors]
    assert kept == [None, None, None, "budget", None] and writer.written_bytes == 192
    lines = [json.loads(line)["type"] for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert lines.count("budget") == 1


def test_equal_contents_share_one_file_that_costs_the_budget_once(tmp_path):
    """An op's input is mostly an earlier op's output: the same bytes are one file, named by
    both records; the same bytes as another dtype are a file of their own."""
    x = torch.randn(16, generator=torch.Generator().manual_seed(2))
    dump = write(tmp_path, [x, x.clone(), x.view(torch.int32), x + 1], max_bytes=3 * 64)
    first, again, as_int, other = dump.tensors
    assert again["file"] == first["file"] and again["stats"]["hash"] == first["stats"]["hash"]
    assert len({first["file"], as_int["file"], other["file"]}) == 3
    assert dump.budget is None and len(list((tmp_path / "tensors").iterdir())) == 3
    np.testing.assert_array_equal(dump.load(again), x.numpy())


def test_a_tensor_viewed_at_another_shape_shares_its_file_and_truth(tmp_path):
    """lm_head's logits row [S, V] and the final output that is its view [1, S, V] hold the same
    bytes: one file (with the first record's shape in its header) and one truth difference,
    which cost the budget once; each record keeps its own shape and is read at it."""
    generator = torch.Generator().manual_seed(5)
    row = torch.randn(8, 6, generator=generator).to(torch.bfloat16)
    truth = row.double() + 1e-3 * torch.randn(8, 6, generator=generator, dtype=torch.float64)
    writer = DumpWriter(tmp_path, {"mode": "compiled"}, max_bytes=2 * 48 * 4)  # the value and its truth once
    record = {"op_key": "mm", "io": "output", "index": 0}
    writer.write_tensor(row, {"seq": 0, **record}, truth=truth)
    writer.write_tensor(row.view(1, 8, 6), {"seq": 1, **record, "op_key": "view"}, truth=truth.view(1, 8, 6))
    writer.write_tensor(row.t(), {"seq": 2, **record, "op_key": "t"})  # other bytes in C order
    writer.close()
    dump = read_dump(tmp_path)
    mm, view, transposed = dump.tensors
    assert (view["file"], view["truth_delta_file"]) == (mm["file"], mm["truth_delta_file"])
    assert view["shape"] == [1, 8, 6] and np.load(tmp_path / view["file"]).shape == (8, 6)
    assert writer.written_bytes == dump.budget["written_bytes"] == 2 * 48 * 4  # reached at the third
    np.testing.assert_array_equal(dump.load(view), row.float().view(1, 8, 6).numpy())
    assert dump.load(view, "truth_delta_file").shape == (1, 8, 6)
    assert transposed["not_kept"] == "budget"


def test_large_tensors_walked_in_pieces_give_the_records_of_one_piece(tmp_path, monkeypatch):
    """Statistics, hash and truth of a tensor larger than a piece (stats.PIECE_ELEMENTS) are
    computed piece by piece, so a large weight is never held in float64 whole: the records are
    those of one piece (statistics equal to rounding), a transposed view and NaN included."""
    from diagnose_pytorch.dump import stats

    generator = torch.Generator().manual_seed(3)
    value = torch.randn(1, 40, 30, generator=generator).to(torch.bfloat16)
    value[0, 7, 3] = float("nan")
    truth = value.double() + 1e-4 * torch.randn(1, 40, 30, generator=generator, dtype=torch.float64)
    weight = torch.randn(30, 50, generator=generator).to(torch.bfloat16).t()  # a transposed view
    dumps = {}
    for name, elements in (("whole", 1 << 22), ("pieces", 64)):
        monkeypatch.setattr(stats, "PIECE_ELEMENTS", elements)
        writer = DumpWriter(tmp_path / name, {"mode": "eager"})
        writer.write_tensor(value, {"seq": 0, "op_key": "op0", "io": "output", "index": 0}, truth=truth)
        writer.write_tensor(weight, {"seq": 1, "op_key": "op1", "io": "input", "index": 0}, truth=weight.double())
        writer.close()
        dumps[name] = read_dump(tmp_path / name)
    for whole, piecewise in zip(dumps["whole"].tensors, dumps["pieces"].tensors):
        assert piecewise["stats"]["hash"] == whole["stats"]["hash"]
        for key in ("min", "max", "nan", "inf"):
            assert piecewise["stats"][key] == whole["stats"][key]
        for key in ("mean", "l2"):
            assert piecewise["stats"][key] == pytest.approx(whole["stats"][key], rel=1e-12)
        assert piecewise.get("truth_delta_file") == whole.get("truth_delta_file")
        assert piecewise.get("truth_file") == whole.get("truth_file")
    (first, second) = dumps["pieces"].tensors
    delta = np.load(tmp_path / "pieces" / first["truth_delta_file"])
    expected = np.load(tmp_path / "whole" / first["truth_delta_file"])
    np.testing.assert_array_equal(delta, expected)
    assert second["truth_file"] == second["file"]  # a value cast up: its delta is zero, no file


def test_a_run_written_again_in_its_folder_replaces_its_files_never_writes_into_them(tmp_path):
    """The engine links equal tensor files of a diagnosis's runs (docs/workflow.md): a run done
    again in its folder (--resume) must leave the other links' contents as they were."""
    write(tmp_path, [torch.ones(4)])
    (first,) = (tmp_path / "tensors").iterdir()
    linked = tmp_path / "elsewhere.npy"
    os.link(first, linked)
    write(tmp_path, [torch.zeros(4)])
    assert np.load(linked).tolist() == [1.0] * 4
    assert np.load(first).tolist() == [0.0] * 4
