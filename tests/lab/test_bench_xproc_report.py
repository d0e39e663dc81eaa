"""bench-xproc's summary on synthetic slices: ratios only within a round and one
placement, each target met, missed or "not measured" with the reason, rows that
could not run carried with their reason into the tables.  No process is started."""
import numpy as np
import pytest

from pyqueue.lab.common.placement import Slice
from pyqueue.lab.experiments import bench_xproc as X
from pyqueue.lab.reports import bench_xproc as report


def _rows(*ids, sizes=(32,)):
    return {X.key(i, s): (i, s, X.BY_ID[i].label, X.BY_ID[i].kind) for i in ids for s in sizes}


def _slice(r, row_id, value, place="near", size=32, **extra):
    return Slice(r, X.key(row_id, size), value, 1.0, 1.0, place, extra)


def test_batch_target_is_a_per_round_ratio_in_one_placement():
    slices = [_slice(0, "c-shared-batch", 90.0, regime="streaming"),
              _slice(0, "c-local-batch", 100.0, regime="streaming"),
              _slice(1, "c-shared-batch", 80.0), _slice(1, "c-local-batch", 100.0),
              _slice(2, "c-shared-batch", 50.0, "moved"), _slice(2, "c-local-batch", 100.0)]
    s = report.summarize(slices, {}, {}, _rows("c-shared-batch", "c-local-batch"), (32,))
    (t,) = [t for t in s["targets"] if t["numerator"] == "c-shared-batch"]
    assert t["ratio"] == pytest.approx(0.85) and t["placement"] == "near" and t["rounds"] == 2
    assert t["met"] is False and t["rounds_by_placement"] == {"near": 2, "moved": 1}
    assert s["throughput"]["32"]["c-shared-batch"]["regimes"] == ["streaming"]
    assert s["throughput"]["32"]["c-local-batch"]["median"] == 100.0


def test_round_trip_target_uses_p50_and_lower_is_better():
    slices = [_slice(0, "rt-c-shared", 500.0), _slice(0, "rt-c-local", 480.0)]
    samples = {X.key("rt-c-shared", 32): [np.array([400, 500, 600])],
               X.key("rt-c-local", 32): [np.array([480])]}
    s = report.summarize(slices, samples, {}, _rows("rt-c-shared", "rt-c-local"), (32,))
    (t,) = [t for t in s["targets"]
            if (t["numerator"], t["denominator"]) == ("rt-c-shared", "rt-c-local")]
    assert t["met"] is True and t["ratio"] == pytest.approx(500 / 480)
    # Three samples hold no percentile honestly (p50 needs 20: 10 beyond it).
    e = s["roundtrip"]["32"]["rt-c-shared"]
    assert e["p50_ns"] is None and e["not_reported"]["p50"].startswith("not enough samples (n=3")
    samples[X.key("rt-c-shared", 32)] = [np.arange(1, 1001)]
    e = report.summarize(slices, samples, {}, _rows("rt-c-shared", "rt-c-local"),
                         (32,))["roundtrip"]["32"]["rt-c-shared"]
    assert (e["p50_ns"], e["p99_ns"]) == (500.0, 990.0) and "not_reported" not in e
    assert s["roundtrip"]["32"]["rt-c-shared"]["samples"] == 3


def test_a_missing_peer_is_reported_and_its_targets_not_measured():
    rows = _rows("rt-py-shared", "rt-iceoryx2", "py-shared-msg", "mp-queue")
    reasons = {X.key("rt-iceoryx2", 32): "not installed: No module named 'iceoryx2'"}
    slices = [_slice(0, "rt-py-shared", 2000.0), _slice(0, "py-shared-msg", 1e6),
              _slice(0, "mp-queue", 6e4, "far")]
    s = report.summarize(slices, {X.key("rt-py-shared", 32): [np.array([2000])]}, reasons,
                         rows, (32,))
    assert s["roundtrip"]["32"]["rt-iceoryx2"]["reason"].startswith("not installed")
    iox = [t for t in s["targets"] if t["denominator"] == "rt-iceoryx2"]
    assert iox[0]["not_measured"] == reasons[X.key("rt-iceoryx2", 32)]
    (mp,) = [t for t in s["targets"] if t["denominator"] == "mp-queue"]
    assert mp["not_measured"] == "no round with both in one placement"   # near vs far
    ff = [t for t in s["targets"] if t["denominator"] == "faster-fifo"]
    assert ff[0]["not_measured"] == "not selected"
    text = report.text({"writer_cpu": 0, "reader_cpu": 1, "rounds": 1}, s, "complete",
                       markdown=True)
    assert "not installed: No module named 'iceoryx2'" in text and "|---" in text


def test_row_keys_are_output_folder_names_and_split_back():
    from pyqueue.lab.common.output import _NAME
    for row in X.ROWS:
        for size in X.SIZES:
            assert _NAME.match(X.key(row.id, size))
            assert X.split_key(X.key(row.id, size)) == (row.id, size)
    assert len(X.BY_ID) == len(X.ROWS)


@pytest.mark.two_cpus(reason="the defaults pin to CPUs 0 and 1")
def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="writer_cpu and reader_cpu"):
        X.bench_xproc(writer_cpu=0, reader_cpu=0)
    with pytest.raises(ValueError, match="messages"):
        X.bench_xproc(messages=(1, 2, 3))
    with pytest.raises(ValueError, match="only="):
        X.bench_xproc(only=["no-such-row"])


def test_idle_rows_report_cpu_against_the_goal_and_the_asyncio_target_is_a_ratio():
    rows = _rows("idle-aio-shared", "idle-zmq-aio", "rt-aio-shared", "rt-zmq-aio")
    slices = [_slice(0, "idle-aio-shared", 0.3), _slice(1, "idle-aio-shared", 1.5),
              _slice(0, "idle-zmq-aio", 0.1),
              _slice(0, "rt-aio-shared", 30e3), _slice(0, "rt-zmq-aio", 80e3)]
    samples = {X.key("rt-aio-shared", 32): [np.full(100, 30e3)],
               X.key("rt-zmq-aio", 32): [np.full(100, 80e3)]}
    s = report.summarize(slices, samples, {}, rows, (32,))
    e = s["idle"]["32"]["idle-aio-shared"]
    assert e["median"] == pytest.approx(0.9) and e["max"] == 1.5 and e["met"] is False
    assert "goal_pct" not in s["idle"]["32"]["idle-zmq-aio"]   # a peer has no goal
    (t,) = [t for t in s["targets"] if t["numerator"] == "rt-aio-shared"]
    assert t["ratio"] == pytest.approx(30 / 80) and t["met"] is True
    text = report.text({"writer_cpu": 0, "reader_cpu": 1, "rounds": 2}, s, "complete")
    assert "an idle await" in text and "MISSES" in text
