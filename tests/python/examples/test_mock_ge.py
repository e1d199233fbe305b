"""examples/mock_ge.py, the mocked GE the example backends share: a rule's own switch beats its
group's ALL and rules not named stay on; a malformed fusion switch file is refused with an error
naming the file and what is wrong."""

import json
import sys

import pytest

from example_runs import EXAMPLES

sys.path.append(str(EXAMPLES))
import mock_ge  # noqa: E402


def test_a_rules_own_entry_beats_all_and_unnamed_rules_stay_on(tmp_path):
    path = tmp_path / "switch.cfg"
    path.write_text(json.dumps({"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"}, "UBFusion": {}}}))
    switches = mock_ge.read_switches(str(path))
    ub_rule = mock_ge.PatternRule("TbeEltwiseFusionPass", "UBFusion", pattern=None, fused=None)
    rules = (mock_ge.MATMUL_BIAS_ADD, mock_ge.GELU, mock_ge.LAYER_NORM, mock_ge.SOFTMAX, ub_rule)
    assert [r.name for r in rules if mock_ge.rule_enabled(r, switches)] == ["SoftmaxFusionPass", "TbeEltwiseFusionPass"]


@pytest.mark.parametrize(
    "content,why",
    [
        ("{not json", "Expecting"),
        ('{"GraphFusion": {}}', "Switch"),
        ('{"Switch": {"VectorFusion": {}}}', "unknown group"),
        ('{"Switch": {"GraphFusion": {"GeluFusionPass": "disabled"}}}', "on"),
    ],
)
def test_malformed_switch_file_names_the_file(tmp_path, content, why):
    path = tmp_path / "bad_switch.json"
    path.write_text(content)
    with pytest.raises(mock_ge.FusionConfigError, match="bad_switch.json") as error:
        mock_ge.read_switches(str(path))
    assert why in str(error.value)
