"""Every notebook runs end to end on its small parameters and draws its plots, and
analyses a saved run (the output folder of a quick CLI run) the same way.

Every figure a notebook shows goes through pyqueue.lab.reports.plots.show, which checks
it (a unit on every axis, distinct colours, no legend on data points, log axes where
values span more than 10x, one colour scale across heat maps, no panel's text in
another) and prints "FIGURE PROBLEM: ..." for each failure: none may appear.  Every
sentence stating a finding is printed by pyqueue.lab.reports.findings ("Finding: ...",
worded from the run's numbers); the notebooks' own text uses none of its verdict words.
Each notebook prints the CPUs, placement and parameters it ran with.

Each runs from a temporary working directory with PYTHONPATH pointing at the
pyqueue under test, so the kernel never imports the source tree by accident.
Notebooks are kept in git without outputs.  No test asserts a measured value.

PYQUEUE_RENDER_DIR=DIR keeps each executed notebook (DIR/<name>) and its figures
(DIR/<name>-figN.png): how to look at the rendered figures.
"""
import base64
import json
import os
import re
import subprocess
import sys

import pytest

import pyqueue
from pyqueue.lab.reports import findings, plots

import support

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")
pytest.importorskip("ipykernel")

NOTEBOOKS = os.path.join(support.ROOT, "notebooks")

# notebook -> (images it must draw at least, text its outputs must contain, findings)
EXPECT = {
    "01_burst_tail.ipynb": (4, ("complete", "p99", "nearest rank"), 4),
    "02_pacing.ipynb": (3, ("Drain rate D", "Paced bursts of N"), 3),
    "03_core_to_core.ipynb": (3, (), 4),
}
# What every notebook prints of the run it shows (plots.run_header).
HEADER = ("CPUs: ", "allowed CPUs", "placement: ", "parameters: ")


def test_every_notebook_is_covered():
    assert sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")) == sorted(EXPECT)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_stored_without_outputs(name):
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, name


# notebook -> {variable: the quick command whose output folder it loads instead}
SAVED = {
    "01_burst_tail.ipynb": {"RUN_DIR": ["burst-tail", "--quick", "--classes", "yield0,none",
                                        "--rounds", "2", "--windows", "20"]},
    "02_pacing.ipynb": {"RUN_DIR": ["pacing", "--quick", "--rounds", "1"]},
    "03_core_to_core.ipynb": {"RUN_DIR": ["c2c", "--quick", "--false-sharing",
                                          "--increments", "1000000"],
                              "PIPE_DIR": ["pipeline", "--quick", "--variants",
                                           "mutex_condvar,pinned_backoff"]},
}
# c2c --false-sharing writes its second folder beside the first.
DERIVED = {"03_core_to_core.ipynb": {"FS_DIR": ("RUN_DIR", "-false-sharing")}}


def _execute(nb, workdir, monkeypatch, log):
    root = os.path.dirname(os.path.dirname(os.path.abspath(pyqueue.__file__)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYQUEUE_FIGURE_LOG", str(log))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


def _render(name, nb, outputs, tag):
    """With PYQUEUE_RENDER_DIR set: the executed notebook and its figures, kept there."""
    where = os.environ.get("PYQUEUE_RENDER_DIR")
    if not where:
        return
    os.makedirs(where, exist_ok=True)
    base = name[:-len(".ipynb")] + tag
    nbformat.write(nb, os.path.join(where, base + ".ipynb"))
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    for k, png in enumerate(pngs, 1):
        with open(os.path.join(where, "%s-fig%d.png" % (base, k)), "wb") as f:
            f.write(base64.b64decode(png))


def _check(name, nb, outputs, workdir, log):
    images, texts, n_findings = EXPECT[name]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= images
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    for t in texts + HEADER:
        assert t in text, (name, t)
    # Every figure shown went through plots.show and passed its checks.
    assert plots.PROBLEM not in text, [l for l in text.splitlines() if plots.PROBLEM in l]
    shown = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(shown) >= images and all(f["problems"] == [] for f in shown), shown
    # Findings are the computed sentences; the notebook's own text states none.
    found = [l for l in text.splitlines() if l.startswith(findings.FINDING)]
    assert len(found) >= n_findings, found
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            words = [w for w in findings.VERDICT_WORDS if w in cell.source.lower()]
            assert not words, (name, words, cell.source[:80])
    assert not list(workdir.iterdir()), "a notebook wrote files into its working directory"


@pytest.mark.two_cpus(reason="the experiments need two CPUs")
@pytest.mark.parametrize("name", sorted(EXPECT))
def test_runs_and_plots(name, tmp_path_factory, monkeypatch):
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    workdir, log = tmp_path_factory.mktemp("cwd"), tmp_path_factory.mktemp("log") / "figures"
    outputs = _execute(nb, workdir, monkeypatch, log)
    _render(name, nb, outputs, "")
    _check(name, nb, outputs, workdir, log)


def test_every_notebook_can_load_a_saved_run():
    assert sorted(SAVED) == sorted(EXPECT)


# By default one notebook analyses a saved run (02: the pacing runs rebuilt as
# Bursts); the other two do it in the slow run, each costing a notebook's time again.
@pytest.mark.two_cpus(reason="the experiments need two CPUs")
@pytest.mark.parametrize("name", [n if n == "02_pacing.ipynb" else
                                  pytest.param(n, marks=pytest.mark.slow) for n in sorted(SAVED)])
def test_analyses_a_saved_run(name, tmp_path_factory, monkeypatch):
    tmp_path = tmp_path_factory.mktemp("cwd")
    saved = tmp_path_factory.mktemp("saved")
    dirs = {}
    for var, argv in SAVED[name].items():
        dirs[var] = str(saved / var.lower())
        p = subprocess.run([sys.executable, "-m", "pyqueue", *argv, "--no-progress",
                            "--out", dirs[var]], capture_output=True, text=True,
                           env=support.subprocess_env(), timeout=300, cwd=support.ROOT)
        assert p.returncode == 0, p.stderr
    for var, (base, suffix) in DERIVED.get(name, {}).items():
        dirs[var] = dirs[base] + suffix
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    for cell in nb.cells:
        for var, path in dirs.items():
            # The notebook's own switch: "VAR = None" becomes the folder to load.
            cell.source = re.sub(r"^%s = None\b" % var, "%s = %r" % (var, path), cell.source,
                                 flags=re.M)
    assert all(any("%s = %r" % (v, p) in c.source for c in nb.cells) for v, p in dirs.items())
    log = tmp_path_factory.mktemp("log") / "figures"
    outputs = _execute(nb, tmp_path, monkeypatch, log)
    _render(name, nb, outputs, "-saved")
    _check(name, nb, outputs, tmp_path, log)
