"""report.html opened in a real headless Chromium (Debian's package): a passing run (the bundled
example dumps against themselves, plus an empty tensor) and a diagnosed fusion defect (the
example dumps, whose planted error is at add-aten.add.Tensor, and a real `diagnose bisect` of a
stand-in with a faulty rule), checked in the DOM Chromium parsed, in what it laid out at 1000
and 1400 px (nothing scrolls sideways, spills, is cut or overlaps) and printed to PDF.
Screenshots of the whole page at both widths are kept under build/test-results/report/
($DIAGNOSE_TEST_RESULTS)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fixtures.chromium import ROOT, check_fits, dump_dom, elements, find, print_pdf
from fixtures.workflow_run import run_workflow

EXAMPLES = ROOT / "examples" / "dumps"
RULES = [
    "MatMulBiasAddFusionPass",
    "SoftmaxFusionPass",
    "LayerNormFusionPass",
    "ConvBatchnormFusionPass",
    "TbeEltwiseFusionPass",
    "MulAddFusionPass",
    "TransposeReshapeFusionPass",
    "ConcatFusionPass",
    "GeluFusionPass",
    "CastRemoveFusionPass",
]
# Fails (exit 1) unless the trial's fusion switch file turns LayerNormFusionPass off.
STAND_IN = (
    "import json, sys; switch = json.load(open(sys.argv[1])); "
    "off = {rule for section in switch['Switch'].values() for rule, state in section.items() if state == 'off'}; "
    "sys.exit(0 if 'LayerNormFusionPass' in off else 1)"
)


def check_links(run_dir: Path, dom_elements) -> None:
    """Every link is relative and points at a file the run left."""
    hrefs = [e.attrs["href"] for e in find(dom_elements, "a") if not e.attrs.get("href", "#").startswith("#")]
    assert hrefs
    for href in hrefs:
        assert not href.startswith(("/", "http:", "https:", "file:")), href
        assert (run_dir / href).exists(), f"broken link {href}"


@pytest.fixture(scope="module")
def passing_run(diagnose_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("pass")
    dumps = work / "dumps"
    shutil.copytree(EXAMPLES / "fx", dumps)
    step = dumps / "worldsize1_global_rank0" / "graph_0" / "0"
    np.save(step / "empty-aten.zeros.default.OUTPUT.0.20240125031118000009.npy", np.zeros((0, 4), np.float32))
    done, run_dir = run_workflow(
        diagnose_bin,
        work,
        f"""
name: report-pass
model:
  argv: [{sys.executable}, -c, "print('the model ran')"]
steps:
  - id: model
    kind: run
  - id: compare
    kind: compare
    golden: {dumps}
    target: {dumps}
""",
    )
    assert done.returncode == 0, done.stderr
    return run_dir


@pytest.fixture(scope="module")
def defect_run(diagnose_bin, tmp_path_factory):
    done, run_dir = run_workflow(
        diagnose_bin,
        tmp_path_factory.mktemp("defect"),
        f"""
name: report-defect
model:
  argv: [{sys.executable}, -c, "pass"]
steps:
  - id: compare
    kind: compare
    golden: {EXAMPLES / "fx"}
    target: {EXAMPLES / "ge"}
    diagnoses: localized_op_defect
    on_failure: continue
  - id: fusion
    kind: run
    description: a real fusion-rule bisection (diagnose bisect) of a stand-in that fails while LayerNormFusionPass is on
    argv: [{diagnose_bin}, bisect, -o, "${{step.dir}}/bisect", --slots, "2",
           --rules, "{",".join(RULES)}", --, {sys.executable}, -c, "{STAND_IN}", "$${{switch_file}}"]
    fail_exit_code: 1            # diagnose bisect: 1 = culprits found
    diagnoses: fusion_defect
    on_failure: continue
  - id: never
    kind: assert
    when: steps.compare.status == pass
    fail_if: steps.compare.failed > 0
""",
    )
    assert done.returncode == 1, done.stderr
    return run_dir


def test_passing_run_in_chromium(passing_run, tmp_path):
    html = passing_run / "report.html"
    dom = elements(dump_dom(html))
    verdict = find(dom, "section", id="verdict")[0]
    assert verdict.attrs["data-category"] == "no_precision_problem"
    assert "No precision problem found" in verdict.text
    boxes = {e.attrs["data-step"]: e.attrs["data-status"] for e in find(dom, "g", class_="box")}
    assert boxes == {"model": "pass", "compare": "pass"}
    charts = [e.attrs["data-chart"] for e in find(dom, "svg") if "data-chart" in e.attrs]
    assert charts == ["compare-cosine", "compare-relative-error"]
    assert not find(dom, "g", class_="first-divergence")
    check_links(passing_run, dom)

    # The empty tensor passes and is no error: not drawn, and the axis says so.
    empty = [e for e in find(dom, "circle") if "empty-aten.zeros.default" in e.text]
    assert not empty
    assert any("1 empty tensors not drawn" in e.text for e in find(dom, "text", class_="axis-label"))

    for facts in check_fits(html, tmp_path, "passing-run"):
        assert facts["verdict"]["y"] < 200 and facts["verdict"]["h"] > 40
        assert facts["verdict"]["border"] == "rgb(26, 127, 55)"  # green
        assert {a["href"] for a in facts["anchors"]} == {"#step-model", "#step-compare"}
        for chart in facts["charts"]:
            assert chart["w"] > 600 and chart["h"] > 150, chart
            assert chart["points"] >= 20 and chart["fail_points"] == 0


def test_diagnosed_defect_in_chromium(defect_run, tmp_path):
    html = defect_run / "report.html"
    dom_text = dump_dom(html)
    dom = elements(dom_text)
    verdict = find(dom, "section", id="verdict")[0]
    assert verdict.attrs["data-category"] == "fusion_defect"
    assert "fusion" in find(dom, "p", class_="verdict-sentence")[0].text
    boxes = {e.attrs["data-step"]: e.attrs["data-status"] for e in find(dom, "g", class_="box")}
    assert boxes == {"compare": "fail", "fusion": "fail", "never": "skipped"}
    conditions = " ".join(e.text for e in find(dom, "text", class_="when"))  # wrapped at spaces to fit the box
    assert "when steps.compare.status == pass" in conditions

    first = find(dom, "g", class_="first-divergence")
    assert len(first) == 2  # on both charts
    assert all("first divergence: add-aten.add.Tensor (source op)" in e.text for e in first)
    worst = find(dom, "table", class_="worst-rows")[0]
    assert "add-aten.add.Tensor" in worst.text and "relu-aten.relu.default" in worst.text
    # Every failing row's cosine in enough digits to tell it from 1.
    worst_dom = elements(dom_text.split('class="worst-rows"', 1)[1].split("</table>", 1)[0])
    headers = [e.text for e in find(worst_dom, "th")]
    cells = [e.text for e in find(worst_dom, "td")]
    cosines = cells[headers.index("cosine") :: len(headers)]
    assert cosines and all(float(c) < 1 for c in cosines), cosines
    assert "rank0/Mul_9" in "".join(e.text for e in find(dom, "table"))  # unmatched op listed
    assert find(dom, "pre", class_="replay")

    narrowing = find(dom, "svg", data_chart="bisection-narrowing")
    assert len(narrowing) == 1
    assert [e.text for e in find(dom, "text", class_="culprit-label")] == ["LayerNormFusionPass"]
    assert len(find(dom, "g", class_="trial")) >= 8
    trials = find(dom, "table", class_="trials")[0]
    assert trials.text.count("fail") >= 2 and "pass" in trials.text
    check_links(defect_run, dom)

    for facts in check_fits(html, tmp_path, "diagnosed-defect"):
        assert facts["verdict"]["border"] == "rgb(207, 34, 46)"  # red
        assert 1 <= facts["verdict"]["findings"] <= 5
        compare_charts = [c for c in facts["charts"] if c["kind"].startswith("compare")]
        assert len(compare_charts) == 2
        for chart in compare_charts:
            assert chart["fail_points"] >= 9 and chart["fail_fill"] == "rgb(207, 34, 46)"
            assert chart["w"] > 600
        first = [m for m in facts["markers"] if "first-divergence" in m["class"]]
        assert first and first[0]["stroke"] == "rgb(207, 34, 46)"
        chart = compare_charts[0]
        assert (
            chart["x"] <= first[0]["x"] <= chart["x"] + chart["w"]
            and chart["y"] <= first[0]["y"] <= chart["y"] + chart["h"]
        )
        fills = {b["step"]: b["fill"] for b in facts["boxes"]}
        assert fills["compare"] == fills["fusion"] == "rgb(255, 235, 233)"

    pdf = print_pdf(html, tmp_path / "report.pdf")
    data = pdf.read_bytes()
    assert (
        data.startswith(b"%PDF")
        and data.count(b"/Type /Page\n") + data.count(b"/Type /Page/") + data.count(b"/Type /Page ") >= 1
    )


def test_diagnose_report_renders_the_html_again(diagnose_bin, defect_run):
    html = defect_run / "report.html"
    first = html.read_text()
    html.unlink()
    done = subprocess.run(
        [str(diagnose_bin), "report", str(defect_run), "-q"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    again = html.read_text()
    assert again == first
