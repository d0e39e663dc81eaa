"""The output folder of DESIGN §6.8 (pyqueue.lab.common.output): round trip, checksums, partial runs."""
import gzip
import json
import math

import numpy as np
import pytest

from pyqueue.lab.common import output as out
from pyqueue.lab.common.environment import cpu_list_text


def _folder(tmp_path, **kw):
    kw.setdefault("total", 3)
    return out.OutputFolder(tmp_path / "run", "burst_tail", {"rounds": 3, "msg": 32},
                            argv=["pyqueue", "burst-tail", "--quick"], **kw)


def test_round_trip(tmp_path):
    f = _folder(tmp_path, pinning={"producer_cpu": 0, "consumer_cpu": 1})
    groups = np.array([5, 1, 10**9, 3], dtype=np.int64)      # slow sample kept as is
    cpus = np.array([[0, 0], [0, 1]], dtype=np.int16)
    paths = f.save_samples("yield0", group_ns=groups, cpus=cpus)
    assert paths == ["samples/yield0/group_ns.npy.gz", "samples/yield0/cpus.npy.gz"]
    f.save_text("table.md", "| a |\n")
    status = f.finish({"p99": np.float64(12.5), "n": np.int64(4), "ok": np.bool_(True),
                       "per_round": np.array([1.0, 2.0])}, done=3)
    assert status == "complete"
    assert out.verify(f.path) == []

    r = out.load(f.path)
    assert r.status == "complete" and r.complete and r.problems == []
    assert r.results == {"p99": 12.5, "n": 4, "ok": True, "per_round": [1.0, 2.0]}
    assert r.params == {"rounds": 3, "msg": 32}
    assert r.summary["experiment"] == "burst_tail"
    assert r.summary["progress"] == {"done": 3, "total": 3, "unit": "rounds"}
    np.testing.assert_array_equal(r.samples["yield0"]["group_ns"], groups)
    assert r.samples["yield0"]["group_ns"].dtype == np.int64
    np.testing.assert_array_equal(r.samples["yield0"]["cpus"], cpus)
    assert r.environment["pinning"] == {"producer_cpu": 0, "consumer_cpu": 1}


def test_sample_files_are_plain_gzip_npy(tmp_path):
    f = _folder(tmp_path)
    f.save_samples("c", x=np.arange(7, dtype=np.float32))
    raw = (f.path / "samples/c/x.npy.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b"                        # gzip magic
    arr = np.load(gzip.open(f.path / "samples/c/x.npy.gz"), allow_pickle=False)
    assert arr.dtype == np.float32 and arr.tolist() == list(range(7))


def test_index_lists_every_file_with_sha256_and_size(tmp_path):
    f = _folder(tmp_path)
    f.save_samples("c", x=np.zeros(3))
    index = json.loads((f.path / "index.json").read_text())
    assert index["format"] == out.FORMAT and index["algorithm"] == "sha256"
    assert set(index["files"]) == {"summary.json", "environment.json",
                                   "samples/c/x.npy.gz"}
    for rel, entry in index["files"].items():
        assert entry["size"] == (f.path / rel).stat().st_size
        assert len(entry["sha256"]) == 64


def test_environment_contents(tmp_path):
    env = json.loads((_folder(tmp_path).path / "environment.json").read_text())
    for key in ("cpu_model", "kernel", "cpu_count", "allowed_cpus", "pinning", "governor",
                "versions", "git", "command"):
        assert key in env
    assert set(env["versions"]) >= {"python", "numpy", "cffi", "pyqueue"}
    assert env["command"]["argv"] == ["pyqueue", "burst-tail", "--quick"]
    assert env["pinning"] == "not stated"
    assert env["governor"] == "not readable" or isinstance(env["governor"], dict)
    assert "hostname" not in json.dumps(env) and "nodename" not in env["kernel"]


def test_cpu_list_text():
    assert cpu_list_text([3, 0, 1, 2, 6, 8, 9]) == "0-3,6,8-9"
    assert cpu_list_text([5]) == "5" and cpu_list_text([]) == ""


@pytest.mark.parametrize("tamper", ["edit", "delete", "extra"])
def test_verify_detects_tampering(tmp_path, tamper):
    f = _folder(tmp_path)
    f.save_samples("c", x=np.arange(100))
    f.finish({"p50": 1.0}, 3)
    assert out.verify(f.path) == []
    target = f.path / "samples/c/x.npy.gz"
    if tamper == "edit":
        data = bytearray(target.read_bytes())
        data[-5] ^= 0xFF                                  # same size, different bytes
        target.write_bytes(bytes(data))
        expected = "samples/c/x.npy.gz: SHA-256 mismatch"
    elif tamper == "delete":
        target.unlink()
        expected = "samples/c/x.npy.gz: missing"
    else:
        (f.path / "notes.txt").write_text("hand-edited")
        expected = "notes.txt: not in index"
    assert out.verify(f.path) == [expected]
    with pytest.raises(ValueError, match="does not verify"):
        out.load(f.path)
    assert out.load(f.path, check=False).problems == [expected]


def test_verify_summary_edit_and_missing_index(tmp_path):
    f = _folder(tmp_path)
    s = json.loads((f.path / "summary.json").read_text())
    s["results"] = {"p99": 1}
    (f.path / "summary.json").write_text(json.dumps(s))
    assert out.verify(f.path)[0].startswith("summary.json: size")
    (f.path / "index.json").unlink()
    assert out.verify(f.path) == ["index.json: missing"]


def test_interrupted_run_leaves_a_valid_partial_folder(tmp_path):
    """Simulate the experiment loop: checkpoint per round, Ctrl-C during round 3."""
    f = _folder(tmp_path)
    rounds, total, done = [], 3, 0
    try:
        for r in range(total):
            if r == 2:
                raise KeyboardInterrupt                  # as delivered mid-round
            rounds.append(np.arange(10) * (r + 1))
            f.save_samples("yield0", **{"round%d" % r: rounds[-1]})
            done = r + 1
            f.checkpoint({"rounds_done": done}, done)
            # a run killed right here (no finish) still verifies and says how far it got
            assert out.verify(f.path) == []
            assert out.load(f.path).status == "interrupted after %d of 3 rounds" % done
    except KeyboardInterrupt:
        f.finish({"rounds_done": done}, done)
    assert out.verify(f.path) == []
    r = out.load(f.path)
    assert r.status == "interrupted after 2 of 3 rounds" and not r.complete
    assert sorted(r.samples["yield0"]) == ["round0", "round1"]


def test_failed_status(tmp_path):
    f = _folder(tmp_path)
    assert f.finish({}, 1, error=RuntimeError("consumer found a gap")) == \
        "failed: consumer found a gap"
    assert out.verify(f.path) == []
    assert out.load(f.path).summary["progress"] == {"done": 1, "total": 3, "unit": "rounds"}
    with pytest.raises(ValueError, match="done"):
        f.checkpoint({}, 4)


def test_started_folder_is_valid(tmp_path):
    f = _folder(tmp_path, unit="runs")
    assert out.verify(f.path) == []
    assert out.load(f.path).status == "interrupted after 0 of 3 runs"


def test_older_status_words_load_in_todays(tmp_path):
    f = _folder(tmp_path)
    for old, new in (("incomplete after 2 of 3 rounds", "interrupted after 2 of 3 rounds"),
                     ("partial: 1 of 2 slices", "interrupted after 1 of 2 slices"),
                     ("failed after 1 of 3 rounds: a gap", "failed: a gap"),
                     ("complete", "complete")):
        f._write_summary({}, old, 0)
        assert out.load(f.path).status == new


def test_nan_and_inf_become_null_with_a_note(tmp_path):
    f = _folder(tmp_path)
    f.finish({"p999": math.nan, "rate": [1.0, math.inf, -math.inf],
              "per_round": np.array([[1.0, np.nan], [np.nan, 2.0]])}, 3)
    r = out.load(f.path)
    assert r.results == {"p999": None, "rate": [1.0, None, None],
                         "per_round": [[1.0, None], [None, 2.0]]}
    assert r.summary["notes"] == [
        "results.p999: 1 NaN value written as null",
        "results.per_round[*][*]: 2 NaN values written as null",
        "results.rate[*]: 1 +inf value written as null",
        "results.rate[*]: 1 -inf value written as null",
    ]
    def refuse(token):
        raise AssertionError("non-JSON constant %s in summary.json" % token)
    json.loads((f.path / "summary.json").read_text(), parse_constant=refuse)


def test_to_jsonable_refuses_unknown_types():
    with pytest.raises(TypeError, match=r"\$\.x"):
        out.to_jsonable({"x": object()})
    with pytest.raises(TypeError, match="key"):
        out.to_jsonable({(1, 2): 3})
    assert out.to_jsonable({np.int64(3): (1, np.float32(0.5))}) == {"3": [1, 0.5]}


def test_refuses_to_overwrite(tmp_path):
    f = _folder(tmp_path)
    f.finish({"first": True}, 3)
    with pytest.raises(FileExistsError, match="not empty"):
        _folder(tmp_path)
    g = _folder(tmp_path, overwrite=True)                # a previous output folder: ok
    assert out.load(g.path).status == "interrupted after 0 of 3 rounds"
    other = tmp_path / "precious"
    other.mkdir()
    (other / "thesis.tex").write_text("years of work")
    with pytest.raises(FileExistsError, match="refusing"):
        out.OutputFolder(other, "x", total=1, overwrite=True)
    assert (other / "thesis.tex").exists()
    (tmp_path / "empty").mkdir()
    out.OutputFolder(tmp_path / "empty", "x", total=1)   # an empty folder is fine


def test_bad_names_and_arrays(tmp_path):
    f = _folder(tmp_path)
    for bad in ("../x", ".hidden", "a/b", ""):
        with pytest.raises(ValueError):
            f.save_samples(bad, x=np.zeros(1))
    with pytest.raises(TypeError, match="object"):
        f.save_samples("c", x=np.array([object()]))
    with pytest.raises(ValueError, match="reserved"):
        f.save_text("index.json", "{}")


def test_checksums_are_deterministic(tmp_path):
    a = out.OutputFolder(tmp_path / "a", "x", total=1)
    b = out.OutputFolder(tmp_path / "b", "x", total=1)
    a.save_samples("c", x=np.arange(1000))
    b.save_samples("c", x=np.arange(1000))
    ia = json.loads((a.path / "index.json").read_text())["files"]["samples/c/x.npy.gz"]
    ib = json.loads((b.path / "index.json").read_text())["files"]["samples/c/x.npy.gz"]
    assert ia == ib


def test_extra_json(tmp_path):
    f = _folder(tmp_path)
    assert f.save_json("pacing_table.json", {"p_max": [1.0, math.inf]}) == \
        ["pacing_table.json.p_max[*]: 1 +inf value written as null"]
    assert out.verify(f.path) == []


def test_ctrl_c_during_the_rename_cannot_tear_the_folder(tmp_path, monkeypatch):
    import os
    import signal
    f = _folder(tmp_path)
    real_replace = os.replace

    def replace_with_ctrl_c(src, dst):
        os.kill(os.getpid(), signal.SIGINT)          # arrives between file and index
        real_replace(src, dst)
    monkeypatch.setattr(out.os, "replace", replace_with_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        f.save_samples("c", x=np.arange(10))
    monkeypatch.setattr(out.os, "replace", real_replace)
    assert out.verify(f.path) == []
    assert out.load(f.path).samples["c"]["x"].tolist() == list(range(10))


def test_graceful_stop_loop_writes_partial_folder(tmp_path):
    """The loop shape common/session.py runs: flag checked between slices, then finish()."""
    import io
    from pyqueue.lab.common.progress import GracefulInterrupt, Progress
    f = _folder(tmp_path)
    total, done = 3, 0
    with GracefulInterrupt(stream=io.StringIO()) as stop, \
            Progress(total=total * 4, stream=io.StringIO()) as bar:
        for r in range(total):
            for s in range(4):
                if r == 1 and s == 2:
                    stop.request()                       # what the first Ctrl-C does
                if stop.requested:
                    break
                bar.update()
            if stop.requested:
                break                                    # round 1 is incomplete: not kept
            f.save_samples("c", **{"round%d" % r: np.arange(4)})
            done += 1
            f.checkpoint({"done": done}, done)
        f.finish({"done": done}, done)
    r = out.load(f.path)
    assert r.status == "interrupted after 1 of 3 rounds" and list(r.samples["c"]) == ["round0"]
