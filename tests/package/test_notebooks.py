"""Every notebook runs end to end on its small parameters and draws its plots.

Each runs from a temporary working directory with PYTHONPATH pointing at the
pyqueue under test, so the kernel never imports the source tree by accident.
Notebooks are kept in git without outputs.  No test asserts a measured value.
"""
import os

import pytest

import pyqueue

import support

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")
pytest.importorskip("ipykernel")

NOTEBOOKS = os.path.join(support.ROOT, "notebooks")

# notebook -> (images it must draw at least, text its outputs must contain)
EXPECT = {
    "01_burst_tail.ipynb": (3, ("complete", "p99", "nearest rank")),
    "02_pacing.ipynb": (1, ("Drain rate D", "Paced bursts of N")),
    "03_core_to_core.ipynb": (1, ()),
}


def test_every_notebook_is_covered():
    assert sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")) == sorted(EXPECT)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_stored_without_outputs(name):
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, name


@pytest.mark.two_cpus(reason="the experiments need two CPUs")
@pytest.mark.parametrize("name", sorted(EXPECT))
def test_runs_and_plots(name, tmp_path, monkeypatch):
    root = os.path.dirname(os.path.dirname(os.path.abspath(pyqueue.__file__)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images, texts = EXPECT[name]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= images
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    for t in texts:
        assert t in text, (name, t)
    assert not list(tmp_path.iterdir()), "a notebook wrote files into its working directory"
