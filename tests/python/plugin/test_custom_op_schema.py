"""The meta check's schema check of custom ops (custom_op_schema.schema_check, torch.library.opcheck's
test_schema): an undeclared in-place write or alias is named with the input it concerns; a
custom op that keeps to its schema, and torch's own ops, have no violation."""

import json

import torch

from diagnose_pytorch.checks.meta_check import MetaChecker
from diagnose_pytorch.custom_op_schema import schema_check

_library = torch.library.Library("diagnose_schema_test", "FRAGMENT")


@torch.library.custom_op("diagnose_schema_test::scale_in_place", mutates_args=())
def scale_in_place(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2.0)
    return x + 1.0


@scale_in_place.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("diagnose_schema_test::declared_scale", mutates_args=("x",))
def declared_scale(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2.0)
    return x + 1.0


# torch.library.custom_op refuses to return a view of an input, the lower-level API does not
_library.define("flatten_view(Tensor x) -> Tensor")
_library.impl("flatten_view", lambda x: x.view(-1), "CompositeExplicitAutograd")


def test_undeclared_mutation_names_the_input_and_leaves_the_real_input_alone():
    x = torch.ones(3)
    checked = schema_check(torch.ops.diagnose_schema_test.scale_in_place.default, (x,), {})
    assert checked == {
        "schema": "diagnose_schema_test::scale_in_place(Tensor x) -> Tensor",
        "violations": [
            {
                "check": "schema",
                "kind": "undeclared mutation",
                "message": "writes its input `x` in place, which the schema does not declare "
                "(custom_op: mutates_args=('x',))",
            }
        ],
    }
    assert torch.equal(x, torch.ones(3))  # the check ran on copies


def test_undeclared_alias_is_a_violation_and_a_declared_mutation_is_not():
    aliased = schema_check(torch.ops.diagnose_schema_test.flatten_view.default, (torch.ones(2, 2),), {})
    assert [v["kind"] for v in aliased["violations"]] == ["undeclared aliasing"]
    assert "`x`" in aliased["violations"][0]["message"]
    declared = schema_check(torch.ops.diagnose_schema_test.declared_scale.default, (torch.ones(3),), {})
    assert declared["violations"] == []
    assert schema_check(torch.ops.aten.add_.Tensor, (torch.ones(3), torch.ones(3)), {}) is None


def test_schema_check_keeps_the_generator_state():
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    schema_check(torch.ops.diagnose_schema_test.scale_in_place.default, (torch.rand(3),), {})
    torch.manual_seed(0)
    assert torch.equal(torch.rand(2), expected)


def test_meta_check_entry_carries_the_violations_and_stops_checking_the_op(tmp_path):
    checker = MetaChecker(tmp_path / "meta_check.json")
    op = torch.ops.diagnose_schema_test.scale_in_place.default
    args = (torch.ones(4),)
    assert checker.wants(str(op), args, {})
    checker.record(str(op), f"{op}#0", checker.fake_run(op, args, {}), op(*args), schema_check(op, args, {}))
    assert not checker.wants(str(op), (torch.ones(5),), {})  # failed: no more calls checked
    checker.save()
    (entry,) = json.loads((tmp_path / "meta_check.json").read_text())["ops"]
    assert entry["status"] == "ok"  # the fake implementation itself is right
    assert entry["schema"] == "diagnose_schema_test::scale_in_place(Tensor x) -> Tensor"
    assert [v["kind"] for v in entry["violations"]] == ["undeclared mutation"]
