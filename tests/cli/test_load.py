"""pyqueue.lab.load round-trips every experiment's output folder into the result
object the experiment returns, verified first; to_pandas turns its arrays into rows."""
import gzip
import json
import shutil

import numpy as np
import pytest

import pyqueue.lab as lab

CLASSES = {"bench": "BenchResult", "burst-tail": "BurstTailResult", "c2c": "CoreToCoreResult",
           "drain-rate": "DrainResult", "ownership": "OwnershipResult", "pacing": "PacingResult",
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
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["group", "name", "message", "slice", "value"]
    n = sum(a.size for a in res.latency_ns.values())
    assert (df["name"] == "latency_ns").sum() == n
    assert lab.to_pandas(res).equals(df)


@pytest.mark.parametrize("command", sorted(CLASSES))
def test_every_loaded_result_has_to_pandas_with_named_axes(quick_runs, command):
    pytest.importorskip("pandas")
    res = lab.load(quick_runs[command][1])
    df = res.to_pandas()
    arrays = [(g, n, a) for g, d in res.samples.items() for n, a in d.items()] if all(
        isinstance(v, dict) for v in res.samples.values()) else \
        [(k.rpartition("/")[0], k.rpartition("/")[2], a) for k, a in res.samples.items()]
    assert len(df) == sum(np.asarray(a).size for _, _, a in arrays)
    assert not [c for c in df.columns if c.startswith("axis")], list(df.columns)
    for group, name, arr in arrays[:3]:
        rows = df[(df["group"] == group) & (df["name"] == name)]
        assert np.array_equal(rows["value"].to_numpy(), np.asarray(arr).ravel())


def test_burst_tail_axes_are_round_window_group(quick_runs):
    pytest.importorskip("pandas")
    res = lab.load(quick_runs["burst-tail"][1])
    df = res.to_pandas()
    g = res.samples["yield0"]["group_ns"]
    rows = df[(df["group"] == "yield0") & (df["name"] == "group_ns")]
    last = rows.iloc[-1]
    assert (last["round"], last["window"], last["group_index"]) == tuple(s - 1 for s in g.shape)
    assert last["value"] == g[-1, -1, -1]


def test_loaded_bench_has_its_slices_as_records(quick_runs):
    from pyqueue.lab.common.placement import Slice
    _, out = quick_runs["bench"]
    res = lab.load(out)
    saved = json.loads((out / "slices.json").read_text())["data"]
    assert res.slices and all(isinstance(s, Slice) for s in res.slices)
    assert [s.as_dict() for s in res.slices] == saved


def test_loaded_pacing_has_its_runs_as_bursts(quick_runs, tmp_path):
    from pyqueue.lab.common.pacing_rig import Burst
    _, out = quick_runs["pacing"]
    res = lab.load(out)
    assert res.drain.runs and res.paced and res.checks and res.streams
    assert all(isinstance(b, Burst) for b in res.runs)
    saved = json.loads((out / "runs.json").read_text())["data"]
    assert sorted((b.meta() for b in res.runs), key=lambda m: m["label"]) == \
        sorted(saved, key=lambda m: m["label"])
    b = res.drain.runs[0]
    assert np.array_equal(b.delay_ns, res.samples[b.label]["delay_ns"])
    assert res.drain.d == res.results["drain"]["d_typical"]
    assert "Drain rate D" in res.drain.summary and res.paced_summary.startswith("Paced bursts")
    assert res.summary == res.drain.summary + "\n\n" + res.paced_summary
    # The drain phase's parameters are pacing's that are the drain rate's too.
    from pyqueue.lab import PacingParams
    assert res.drain.params == PacingParams.from_json(res.params).drain().to_json()
    res.to_json(tmp_path / "again.json")           # what the experiment's result can do
    assert "|---" in res.text(markdown=True)


def test_a_hand_edited_runs_json_is_one_clear_error(quick_runs, tmp_path):
    _, out = quick_runs["pacing"]
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / "runs.json").write_text('{"data": [{"label": "drain_n20000_r0"}], "notes": []}')
    with pytest.raises(ValueError, match="not a valid pyqueue output folder"):
        lab.load(bad, check=False)


def test_load_array_reads_what_numpy_load_cannot(quick_runs):
    _, out = quick_runs["pipeline"]
    f = next((out / "samples").glob("*/latency_ns.npy.gz"))
    with pytest.raises(Exception):
        np.load(f)
    assert lab.load_array(f).dtype.kind in "iuf"
