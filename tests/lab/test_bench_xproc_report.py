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
    keys = set()
    for row in X.ROWS:
        sizes = X.FRAME_SIZES + (1, X.FRAME_MAX) if row.kind == "frames" else X.SIZES
        for size in sizes:
            assert _NAME.match(X.key(row.id, size))
            assert X.split_key(X.key(row.id, size)) == (row.id, size)
            keys.add(X.key(row.id, size))
    assert len(X.BY_ID) == len(X.ROWS)
    # No frame row's slice has the name of another row's (the peers run at both).
    assert len(keys) == sum(len(X.FRAME_SIZES) + 2 if r.kind == "frames" else len(X.SIZES)
                            for r in X.ROWS)


@pytest.mark.two_cpus(reason="the defaults pin to CPUs 0 and 1")
def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="writer_cpu and reader_cpu"):
        X.bench_xproc(writer_cpu=0, reader_cpu=0)
    with pytest.raises(ValueError, match="messages"):
        X.bench_xproc(messages=(1, 2, 3))
    with pytest.raises(ValueError, match="only="):
        X.bench_xproc(only=["no-such-row"])
    for bad in ([0], [1024, 1024], [X.FRAME_MAX + 1]):
        with pytest.raises(ValueError, match="frame_sizes"):
            X.bench_xproc(frame_sizes=bad)
    for bad in ((1, 2, 3), (0,)):
        with pytest.raises(ValueError, match="frame_messages"):
            X.bench_xproc(frame_messages=bad)


def test_frame_counts_by_size_one_for_all_or_one_each_and_quick_caps_them():
    P = X.BenchXprocParams
    assert X.frame_counts(P()) == {1024: 50_000, 65536: 16384, 1 << 20: 1024, 16 << 20: 64}
    assert X.frame_counts(P(frame_sizes=[1 << 20, 4096], frame_messages=[7])) == \
        {1 << 20: 7, 4096: 7}
    assert X.frame_counts(P(frame_sizes=[1 << 20, 4096], frame_messages=[7, 9])) == \
        {1 << 20: 7, 4096: 9}
    # --quick: about 32 MiB a slice (a few dozen 1 MiB frames, four of 16 MiB), counts
    # given kept where they are smaller; the old rows' counts as before.
    assert P.quick().frame_messages == (2000, 512, 32, 4)
    assert P.quick(frame_sizes=[1 << 20, 65536], frame_messages=[10]).frame_messages == (10, 10)
    assert P.quick(frame_sizes=[1 << 20], frame_messages=[100]).frame_messages == (32,)
    assert P.quick().messages == X.QUICK["messages"]
    assert P.quick().to_json()["frame_messages"] == [2000, 512, 32, 4]
    assert P().to_json()["frame_messages"] is None


def test_frame_rows_only_at_frame_sizes_and_a_size_a_row_cannot_do_says_why():
    runs, reasons = X._selected(["py-bytes-blocks-", "c-shared-msg", "py-bytes-blocks"], (32,),
                                (65536, 16 << 20))
    assert set(runs) == {"c-shared-msg-32", "py-bytes-blocks-65536",
                         "py-bytes-blocks-fill-65536", "py-bytes-blocks-fill-sum-65536"}
    assert set(reasons) == {"py-bytes-blocks-16777216", "py-bytes-blocks-fill-16777216",
                            "py-bytes-blocks-fill-sum-16777216"}
    assert all(r.startswith("not measured: a block holds at most") for r in reasons.values())
    # A kind selects its rows; a kind's name is matched whole.
    runs, _ = X._selected(["frames"], (32, 1024), (4096,))
    assert {X.split_key(k)[0] for k in runs} <= {r.id for r in X.ROWS if r.kind == "frames"}
    assert all(X.split_key(k)[1] == 4096 for k in runs)


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


def _frame_rows(*ids, sizes=(65536, 1 << 20)):
    return _rows(*ids, sizes=sizes)


def test_frames_table_and_ratios_are_computed_from_the_slices():
    M = 1 << 20
    rows = _frame_rows("py-view", "py-bytes-blocks", "faster-fifo-frames", "iceoryx2-frames",
                       "py-array")
    reasons = {X.key("iceoryx2-frames", s): "not installed: blocked" for s in (65536, M)}
    msgs = {"py-view": 9000.0, "py-bytes-blocks": 6000.0, "faster-fifo-frames": 1000.0,
            "py-array": 8000.0}
    slices = []
    for r in range(3):     # every round the same ratios, its figures scaled: a drifting host
        for row_id, v in msgs.items():
            slices.append(_slice(r, row_id, v * (1 + r), size=M))
            slices.append(_slice(r, row_id, v * 16 * (1 + r), size=65536))
    slices.append(_slice(3, "py-view", 1.0, "moved", size=M))   # in no ratio, its own table
    s = report.summarize(slices, {}, reasons, rows, (), (65536, M))
    e = s["frames"][str(M)]["py-view"]
    assert e["slices"] == 4 and e["by_placement"]["near"]["slices"] == 3
    assert e["by_placement"]["near"]["mb_s"] == pytest.approx(18000.0 * M / 1e6)
    assert e["by_placement"]["moved"]["slices"] == 1
    assert s["frames"]["65536"]["iceoryx2-frames"]["reason"] == "not installed: blocked"
    by = {(t["numerator"], t["denominator"], t["size"]): t for t in s["frame_ratios"]}
    near = e["by_placement"]["near"]["median"]
    t = by[("py-view", "py-bytes-blocks", M)]
    assert t["ratio"] == pytest.approx(
        near / s["frames"][str(M)]["py-bytes-blocks"]["by_placement"]["near"]["median"])
    assert (t["goal"], t["met"], t["placement"], t["rounds"]) == (2.0, False, "near", 3)
    assert by[("py-view", "faster-fifo-frames", 65536)]["met"] is True
    assert by[("py-view", "faster-fifo-frames", 65536)]["ratio"] == pytest.approx(9.0)
    assert by[("py-view", "py-bytes-blocks", 65536)]["goal"] is None     # 1 MiB only
    assert by[("py-array", "py-view", M)]["met"] is False               # 8/9 < 1/1.1
    assert by[("py-view", "iceoryx2-frames", M)]["not_measured"] == "not installed: blocked"
    assert by[("py-view", "py-bytes", M)]["not_measured"] == "not selected"
    text = report.text({"writer_cpu": 0, "reader_cpu": 1, "rounds": 3}, s, "complete")
    assert "frames, MB/s, near slices (n)" in text and "frames, MB/s, moved slices (n)" in text
    assert "{:,.0f} (3)".format(18000.0 * M / 1e6) in text
    ratios = text[text.index("frames, ratio within a round"):]
    line = next(ln for ln in ratios.splitlines() if ln.startswith("claim / view over write / "
                                                                 "get as it was"))
    assert "%.2f (near, 3)" % (9000.0 / 6000.0) in line and ">= 2: MISSES" in line
    assert "%.2f (near, 3) >= 4: meets" % 9.0 in ratios
    names = {ln.split("  ")[0] for ln in ratios.splitlines()}
    assert "claim / view over write / get" not in names    # py-bytes not selected
    assert "not installed: blocked" in text and "not measured: not installed" not in text


def test_only_a_row_id_selects_that_row_alone():
    """--only: a row's id picks that row (the README's 'mp-queue' stays the 32 B / 1 KiB
    row, not also its frame row); other text picks by substring or kind."""
    from pyqueue.lab.experiments import bench_xproc as b

    def picked(only):
        runs, reasons = b._selected(only, (32,), (1024,))
        return {b.split_key(k)[0] for k in list(runs) + list(reasons)}
    assert picked(["mp-queue", "faster-fifo"]) == {"mp-queue", "faster-fifo"}
    assert picked(["py-view"]) == {"py-view"}
    assert {"py-view", "py-view-fill", "py-view-fill-sum"} <= picked(["py-view-"]) | {"py-view"}
    assert "mp-queue-frames" in picked(["frames"]) and "mp-queue" not in picked(["frames"])
    assert picked(["c-shared"]) == {"c-shared-msg", "c-shared-batch", "rt-c-shared"}
