"""The `call` field of eager records: an op call's arguments written as JSON and rebuilt for
replay by the single-op check."""

import json

import pytest
import torch

from diagnose_pytorch.dump.call_args import NotReplayable, decode_call, encode_call


def test_call_round_trips_through_json_with_tensor_references():
    a, b, c = torch.ones(2), torch.zeros(2), torch.full((2,), 3.0)
    args = ([a, b], 0, float("-inf"), torch.float16, torch.device("cpu"), None, c)
    call = json.loads(json.dumps(encode_call(args, {"memory_format": torch.contiguous_format, "alpha": 0.5})))
    assert call["args"][0] == [{"input": 0, "item": 0}, {"input": 0, "item": 1}]
    assert call["args"][6] == {"input": 6}
    inputs = {(0, 0): a, (0, 1): b, (6, None): c}
    decoded, kwargs = decode_call(call, inputs)
    assert decoded[0][0] is a and decoded[0][1] is b and decoded[6] is c
    assert decoded[1:6] == [0, float("-inf"), torch.float16, torch.device("cpu"), None]
    assert kwargs == {"memory_format": torch.contiguous_format, "alpha": 0.5}
    assert decode_call(call, inputs, device="meta")[0][4] == torch.device("meta")


def test_replayed_cat_matches_the_original_call():
    x, y = torch.randn(2, 3), torch.randn(1, 3)
    call = encode_call(([x, y], 0), {})
    args, kwargs = decode_call(call, {(0, 0): x.clone(), (0, 1): y.clone()})
    torch.testing.assert_close(torch.ops.aten.cat.default(*args, **kwargs), torch.cat([x, y]))


@pytest.mark.parametrize(
    "args,kwargs,why",
    [
        ((torch.ones(1),), {"weight": torch.ones(1)}, "keyword or nested tensor"),
        ((torch.ones(1), object()), {}, "object"),
    ],
)
def test_calls_the_dump_cannot_replay_say_why(args, kwargs, why):
    call = json.loads(json.dumps(encode_call(args, kwargs)))
    with pytest.raises(NotReplayable, match=why):
        decode_call(call, {(0, None): torch.ones(1)})


def test_a_missing_input_record_is_not_replayable():
    call = encode_call((torch.ones(1), torch.ones(1)), {})
    with pytest.raises(NotReplayable, match="input 1 was not dumped"):
        decode_call(call, {(0, None): torch.ones(1)})
