"""pyqueue.lab.load round-trips every experiment's output folder into the result
object the experiment returns, verified first; to_pandas turns its arrays into rows."""
import gzip
import json
import shutil

import numpy as np
import pytest

import pyqueue.lab as lab

CLASSES = {"bench": "BenchResult", "burst-tail": "BurstTailResult", "c2c": "CoreToCoreResult",
           "ownership": "OwnershipResult", "pacing": "PacingResult",
           "pipeline": "PipelineResult", "soak": "SoakResult"}


@pytest.mark.parametrize("command", sorted(CLASSES))
def test_load_gives_the_experiments_result(quick_runs, command):
    p, out = quick_runs[command]
    assert p.returncode == 0, p.stderr
    res = lab.load(out)
    assert type(res).__name__ == CLASSES[command]
    assert res.status == "complete"
    saved = json.loads((out / "summary.json").read_text())
    assert res.params == saved["params"]
    for group in (out / "samples").glob("*") if (out / "samples").is_dir() else ():
        for f in group.glob("*.npy.gz"):
            with gzip.open(f) as g:
                want = np.load(g)
            name = f.name[:-len(".npy.gz")]
            have = res.samples.get(group.name, {}).get(name) if isinstance(
                res.samples.get(group.name), dict) else res.samples["%s/%s" % (group.name, name)]
            assert np.array_equal(have, want), (group.name, name)


def test_load_refuses_a_folder_that_does_not_verify(quick_runs, tmp_path):
    _, out = quick_runs["pipeline"]
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / "summary.json").write_text((bad / "summary.json").read_text() + " ")
    with pytest.raises(ValueError, match="does not verify"):
        lab.load(bad)


def test_to_pandas_has_one_row_per_sample(quick_runs):
    pd = pytest.importorskip("pandas")
    res = lab.load(quick_runs["pipeline"][1])
    df = lab.to_pandas(res)
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["group", "name", "index", "value"]
    n = sum(a.size for a in res.latency_ns.values())
    assert (df["name"] == "latency_ns").sum() == n


def test_load_array_reads_what_numpy_load_cannot(quick_runs):
    _, out = quick_runs["pipeline"]
    f = next((out / "samples").glob("*/latency_ns.npy.gz"))
    with pytest.raises(Exception):
        np.load(f)
    assert lab.load_array(f).dtype.kind in "iuf"
