"""notebooks/01_burst_tail.ipynb runs on its small parameters and draws its plots."""
import os
import tempfile

import pytest

import pyqueue

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "notebooks", "01_burst_tail.ipynb")


def test_notebook_executes_and_plots(monkeypatch):
    # The kernel imports the same pyqueue as this test, from outside the checkout.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [os.path.dirname(os.path.dirname(pyqueue.__file__))] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "commit the notebook with outputs stripped"
    with tempfile.TemporaryDirectory() as cwd:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": cwd}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert len(images) >= 3
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "complete" in text and "p99" in text
