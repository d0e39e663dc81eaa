"""The ownership control (DESIGN §6.2): end to end, output folder, CPUs, PMU mode.

No assertion here is about timing: only shapes, checksums, statuses and errors.
"""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pyqueue.lab._lab import ffi, lib
from pyqueue.lab.common import output as _output
from pyqueue.lab import OwnershipParams, ownership
from pyqueue.lab.experiments.ownership import COUNTER_NAMES

import support

ROOT = support.ROOT
CPUS = support.ALLOWED_CPUS
W, C = (CPUS + [0, 0])[:2]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.two_cpus(reason="the ownership control needs two CPUs")
def test_quick_run_end_to_end(tmp_path):
    r = ownership(reader_cpu=W, writer_cpu=C, windows=60, rounds=3, slice_windows=25,
                  out=tmp_path / "run", progress=False)
    assert r.complete and r.status == "complete"
    c = r.summary["checksums"]
    assert c["equal"] and c["mismatches"] == 0 and c["windows_compared"] == 180
    for arm in ("self", "other"):
        assert r.samples[arm + "/window_ns"].shape == (180,)
        assert r.samples[arm + "/window_ns"].dtype == np.uint64
        assert r.samples[arm + "/group_ns"].shape == (180, 4)
        assert r.samples[arm + "/worker_cpu"].shape == (180, 2)
        assert (r.samples[arm + "/window_ns"] > 0).all()
        # the groups partition the window (each ns is rounded separately)
        diff = r.samples[arm + "/group_ns"].astype(np.int64).sum(axis=1) - \
            r.samples[arm + "/window_ns"].astype(np.int64)
        assert np.abs(diff).max() <= 4
        assert (r.samples[arm + "/worker_cpu"] == W).all()
        assert (r.samples[arm + "/helper_cpu"] == C).all()
        assert r.samples[arm + "/probe_ns"].shape == (180,) and (r.samples[arm + "/probe_ns"] > 0).all()
        assert r.summary["arms"][arm]["window_ns"]["counts"] == [60, 60, 60]
    np.testing.assert_array_equal(r.samples["self/checksum"], r.samples["other/checksum"])
    assert len(set(r.samples["self/checksum"].tolist())) == 180      # windows differ
    assert r.summary["counters"] == "not measured"
    tags = r.summary["placement"]["tags"]
    assert set(tags) <= {"near", "far", "moved"}
    assert sum(t["slice_pairs"] for t in tags.values()) == 9
    assert sum(t["windows_per_arm"] for t in tags.values()) == 180
    assert set(r.samples["slices/placement"].tolist()) <= {0, 1, 2}
    assert "nearest-rank" in r.table and "checksums" in r.table and "equal" in r.table
    # slices: 3 rounds x 3 slice pairs, interleaved, with ordered timestamps
    assert r.samples["slices/arm"].tolist()[:4] == [0, 1, 1, 0]
    starts = r.samples["slices/start_ns"]
    assert len(starts) == 18 and (np.diff(starts) > 0).all()

    assert _output.verify(tmp_path / "run") == []
    loaded = _output.load(tmp_path / "run")
    assert loaded.complete and loaded.summary["experiment"] == "ownership"
    assert loaded.results["checksums"]["equal"] is True
    np.testing.assert_array_equal(loaded.samples["other"]["window_ns"], r.samples["other/window_ns"])
    assert (tmp_path / "run" / "table.md").read_text().startswith("Ownership control")

    r.to_json(tmp_path / "r.json")
    body = json.loads((tmp_path / "r.json").read_text())
    assert body["status"] == "complete" and body["summary"]["nodes"] == 768
    # the params are exactly the fields
    assert body["params"] == loaded.params == OwnershipParams(
        reader_cpu=W, writer_cpu=C, windows=60, rounds=3, slice_windows=25).to_json()


@pytest.mark.two_cpus(reason="the ownership control needs two CPUs")
def test_pmu_mode_runs_with_or_without_counters():
    r = ownership(reader_cpu=W, writer_cpu=C, windows=20, rounds=1, slice_windows=10,
                  pmu=True, progress=False)
    cnt = r.summary["counters"]
    assert set(cnt["available"]) | set(cnt["unavailable"]) == set(COUNTER_NAMES)
    assert cnt["hardware"].startswith(("available", "unavailable"))
    assert r.samples["pmu-self/counters"].shape == (20, 8)
    assert r.summary["checksums"]["windows_compared"] == 40 and r.summary["checksums"]["equal"]
    for name in cnt["available"]:
        assert name in cnt["per_arm"]["other"]
    if cnt["available"]:
        assert cnt["read_cost_ns"]["median"] > 0
    assert "counters:" in r.table
    assert r.summary["arms"]["self"]["windows"] == 20          # the table's wall slices


def test_bad_cpus_and_arguments_raise_clearly():
    bad = max(CPUS) + 1
    if len(CPUS) >= 2:
        with pytest.raises(ValueError, match=r"writer_cpu=%d: CPU %d is not in this process's "
                                             r"allowed CPUs" % (bad, bad)):
            ownership(reader_cpu=W, writer_cpu=bad, windows=1, progress=False)
        with pytest.raises(ValueError, match="reader_cpu=%d" % bad):
            ownership(reader_cpu=bad, writer_cpu=C, windows=1, progress=False)
        with pytest.raises(ValueError, match="must differ"):
            ownership(reader_cpu=W, writer_cpu=W, windows=1, progress=False)
        with pytest.raises(ValueError, match="writer_cpu must be a CPU id >= 0"):
            ownership(writer_cpu=-1, progress=False)          # the helper is pinned
    with pytest.raises(ValueError, match="groups must divide queries"):
        ownership(queries=64, groups=5, progress=False)
    with pytest.raises(ValueError, match="windows must be in"):
        ownership(windows=0, progress=False)
    with pytest.raises(TypeError, match="data_kib must be an integer"):
        ownership(data_kib=1.5, progress=False)
    with pytest.raises(TypeError, match="unknown parameter argv"):
        ownership(argv=["x"], progress=False)


@pytest.mark.two_cpus(reason="the ownership control needs two CPUs")
def test_one_parameter_list_old_names_warn():
    p = OwnershipParams()
    assert (p.writer_cpu, p.reader_cpu, p.windows, p.slice_windows) == (0, 1, 10_000, 100)
    assert OwnershipParams.quick().windows == 1000
    with pytest.warns(DeprecationWarning) as w:
        assert OwnershipParams.of(worker_cpu=W, other_cpu=C) == \
            OwnershipParams(reader_cpu=W, writer_cpu=C)
    assert {str(x.message) for x in w} == {"worker_cpu is now called reader_cpu",
                                           "other_cpu is now called writer_cpu"}


def test_one_cpu_says_two_are_needed():
    code = ("import os; os.sched_setaffinity(0, {%d}); from pyqueue.lab import ownership\n"
            "ownership(windows=1, progress=False)" % CPUS[0])
    p = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode != 0
    assert "needs two CPUs" in p.stderr and "only on CPU %d" % CPUS[0] in p.stderr


def test_c_pin_failure_names_the_cpu():
    """Past Python's check (e.g. the affinity changed): the C run reports the CPU."""
    bad = max(CPUS) + 1
    cfg = ffi.new("pyq_ownership_config_t *", {"worker_cpu": CPUS[0], "other_cpu": bad,
                                               "data_bytes": 4096, "seed": 1, "queries": 8,
                                               "groups": 2})
    h = ffi.new("pyq_ownership_t **")
    assert lib.pyq_ownership_create(cfg, h) == 0
    try:
        arrs = [np.zeros(4, np.uint64) for _ in range(3)]
        out = ffi.new("pyq_ownership_out_t *")
        keep = [ffi.cast("uint64_t *", ffi.from_buffer(a, require_writable=True)) for a in arrs]
        out.window_ns, out.checksum, out.data_checksum = keep
        sl = ffi.new("pyq_ownership_slice_t *")
        assert lib.pyq_ownership_run(h[0], lib.PYQ_OWNERSHIP_OTHER, 0, 4, 0, out, sl) == lib.PYQ_EINVAL
        assert sl.failed_cpu == bad and sl.windows == 0
        assert lib.pyq_ownership_run(h[0], 7, 0, 4, 0, out, sl) == lib.PYQ_EINVAL   # bad arm
    finally:
        lib.pyq_ownership_destroy(h[0])
    cfg.other_cpu = cfg.worker_cpu
    assert lib.pyq_ownership_create(cfg, h) == lib.PYQ_EINVAL                   # same CPU


@pytest.mark.two_cpus(reason="the ownership control needs two CPUs")
def test_ctrl_c_leaves_a_valid_partial_folder(tmp_path):
    folder = tmp_path / "partial"
    p = subprocess.Popen([sys.executable, "-m", "pyqueue", "ownership", "--windows", "1000000",
                          "--rounds", "1", "--reader-cpu", str(W), "--writer-cpu", str(C),
                          "--out", str(folder), "--no-progress"],
                         env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (folder / "summary.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=30)      # a hang fails here
    assert p.returncode == 130, stderr
    assert _output.verify(folder) == []
    loaded = _output.load(folder)
    assert loaded.status.startswith("interrupted after") and not loaded.complete
    done = loaded.summary["progress"]["done"]
    assert 0 < done < 1000000
    assert loaded.results["checksums"]["equal"] is True
    assert len(loaded.samples["self"]["window_ns"]) >= done
    assert "interrupted" in stdout
