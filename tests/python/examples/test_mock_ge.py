"""examples/mock_ge.py, the mocked GE the example backends share: a malformed fusion switch file
is refused with an error naming the file and what is wrong."""

import sys

import pytest

from example_runs import EXAMPLES

sys.path.append(str(EXAMPLES))
import mock_ge  # noqa: E402


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
