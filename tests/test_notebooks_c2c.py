"""Execute notebooks/03_core_to_core.ipynb and check it drew something.

Runs from a temporary working directory, so the package comes from the install
or PYTHONPATH, never from the repository root by accident.  No timing checks.
"""
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "03_core_to_core.ipynb"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two allowed CPUs")
def test_notebook_03_runs(tmp_path, monkeypatch):
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "outputs must be stripped in git"
    monkeypatch.chdir(tmp_path)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert len(images) >= 1
