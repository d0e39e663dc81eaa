"""The benchmark's --quick mode end to end (never an assertion on speed): every
row measured or marked not installed, the output folder valid."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import pyqueue.lab.peers as peers
from pyqueue import VerificationError
from pyqueue.errors import check
from pyqueue.lab._lab import ffi, lib
from pyqueue.lab.experiments import bench as B
from pyqueue.lab.experiments import rows
from pyqueue.lab.common import output as _output
from pyqueue.lab.common import placement as pl
from pyqueue.lab.common import regime
from pyqueue.lab.common import twins
from pyqueue.lab.reports import bench as report

import support

ROOT = support.ROOT
CPUS = support.ALLOWED_CPUS

TINY = dict(rounds=1, messages=20_000, trips=300, py_messages=2_000, progress=False,
            chasing_messages=20_000, settle_rounds=0, flat_messages=20_000, flat_seconds=0.0)


def _rows(summary, section):
    if section == "throughput":      # {regime: {placement: {row: cell}}}
        return {n for by_place in summary[section].values() for d in by_place.values()
                for n in d}
    return {n for d in summary[section].values() for n in d}


@pytest.mark.two_cpus
def test_quick_cli_end_to_end(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "pyqueue", "bench", "--quick", "--no-progress",
                        "--markdown", "--writer-cpu", str(CPUS[0]), "--reader-cpu", str(CPUS[1]),
                        "--out", str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stdout
    assert "command: python -m pyqueue bench --quick" in p.stdout
    assert re.search(r"^\| target +\| goal +\|", p.stdout, re.M), p.stdout
    assert _output.verify(out) == []
    loaded = _output.load(out)
    assert loaded.complete
    res = loaded.results
    status = peers.available()
    tput = _rows(res, "throughput")
    lat = _rows(res, "roundtrip_ns")
    for name in peers.NAMES:
        if status[name] != "built":
            assert "%s: not installed" % name in p.stdout or "build failed" in p.stdout
        else:
            assert name in tput and (name in lat or name == "pyqueue")
    assert {"pyqueue_direct", "py_batch", "yardstick", "pyqueue", "pyqueue_stream",
            "pyqueue_burst32", "pyqueue_stream_burst32"} <= tput
    assert {"pingpong", "ring_floor", "pyqueue_each", "pyqueue_scan", "pyqueue_each_direct",
            "pyqueue_scan_direct", "pyqueue_each_touch"} <= lat
    # Every row ran beside its twin (or says why it has none), in both passes.
    slices_ = json.load(open(out / "slices.json"))["data"]
    for kind, table in ((B.FLAT_OUT, twins.THROUGHPUT), ("throughput", twins.THROUGHPUT),
                        ("chasing", twins.THROUGHPUT), ("roundtrip", twins.ROUNDTRIP)):
        got = [s for s in slices_ if s["extra"]["kind"] == kind]
        want = set(twins.bench_rows(table, status))
        if kind == "chasing":
            want -= set(twins.UNPACED)
        assert want <= {s["contender"] for s in got}, kind
        for s in got:
            e = s["extra"]
            assert "touch_after_write" in e
            if e.get("no_twin"):
                assert s["contender"] in twins.NO_TWIN
            else:
                assert e["twin"] and ("ratio" in e or e.get("twin_only"))
            if kind != "roundtrip":
                assert e["regime"] in regime.REGIMES + (B.UNMEASURED,)
                assert e.get("twin_regime", "mixed") in regime.REGIMES + (B.UNMEASURED,)
                if s["contender"] == "atomic_queue_optimist":   # spins inside push/pop
                    assert e["twin_regime"] == B.UNMEASURED
    # Driver and twin take turns going first: each row's two --quick slices (one
    # per round) ran in both orders.
    for kind in (B.FLAT_OUT, "throughput", "chasing", "roundtrip"):
        order = {}
        for s in slices_:
            if s["extra"]["kind"] == kind and "ratio" in s["extra"]:
                order.setdefault(s["contender"], []).append(s["extra"]["twin_first"])
        assert order and all(set(v) == {False, True} for v in order.values()), (kind, order)
    from pyqueue.lab.experiments.bench_python import PythonAPI
    assert _rows(res, "python_mmsg_s") == set(PythonAPI.contenders(None))   # its own module's rows
    # The ring_floor yardstick: measured with samples, named as a yardstick, never a peer.
    assert "ring_floor" not in status and "ring_floor" not in tput
    assert loaded.results["ring_floor_slots"] == lib.PYQ_RING_FLOOR_SLOTS
    rf = loaded.samples["ring_floor"]["roundtrip_ns"]
    assert rf.size == loaded.params["rounds"] * loaded.params["trips"] and rf.min() > 0
    assert re.search(r"^\| ring_floor \(yardstick\) +\|", p.stdout, re.M) and "a yardstick, not a peer" in p.stdout
    for label in ("ring_floor / ping-pong floor, round-trip p50",
                  "pyqueue_each / ring_floor, round-trip p50",
                  "pyqueue_scan / ring_floor, round-trip p50"):
        assert res["ratios"][label] and label in p.stdout
    # A throughput target once per pass (flat out, streaming, chasing), the others once.
    assert len(res["targets"]) == sum(len(report.PASSES) + 1 if t[1] == "throughput" else 1
                                      for t in B.TARGETS)
    for t in res["targets"]:
        for e in t["by_placement"].values():
            assert e["median"] > 0 and (isinstance(e["met"], bool) or
                                        (e["met"] is None and e["pace_bound"]))
    slices = json.load(open(out / "slices.json"))["data"]
    assert all(s["probe_before_ns"] > 0 and s["probe_after_ns"] > 0 for s in slices)
    # Adapter rows say which side set the pace: the writer's own span beside the slice's.
    adapter_rows = [s for s in slices if s["extra"]["kind"] == "throughput"
                    and "writer_ns" in s["extra"]]
    assert {s["contender"] for s in adapter_rows} >= {"pyqueue", "pyqueue_stream"}
    for s in adapter_rows:
        assert s["extra"]["writer_ns"] > 0 and s["extra"]["elapsed_ns"] > 0
        # A count (how many try_writes found the queue full); its size depends on
        # the machine, so only its presence and type are behaviour.
        assert type(s["extra"]["full_retries"]) is int


@pytest.mark.two_cpus
def test_missing_peer_is_listed_not_dropped(tmp_path):
    """Simulate a machine without one peer: copy the peer folder, remove a library."""
    src = peers.peer_dir()
    status = peers.available()
    built = [n for n in peers.PEERS if status[n] == "built"]
    if not built:
        pytest.skip("no peer built here: the missing-peer path is the normal one")
    gone = "dpdk" if "dpdk" in built else built[0]
    dst = tmp_path / "peers"
    shutil.copytree(src, dst)
    os.remove(dst / (peers.LIB_PATTERN % gone))
    res = B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[1], peer_dir=str(dst), **TINY)
    s = res.summary
    assert s["peers"][gone].startswith("not installed")
    assert gone not in _rows(s, "throughput") and gone not in _rows(s, "roundtrip_ns")
    if gone == "dpdk":
        assert "dpdk_burst32" not in _rows(s, "throughput")
    for other in built:
        if other != gone:
            assert other in _rows(s, "throughput") and other in _rows(s, "roundtrip_ns")
    text, md = res.table(), B.format_markdown(s, res.params)
    assert "%s: not installed" % gone in text
    assert re.search(r"^\| %s +\| not installed" % gone, md, re.M), md


def test_fresh_result_has_to_pandas_like_a_loaded_one(tmp_path):
    import pyqueue.lab as lab
    res = B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[1], out=str(tmp_path / "run"), **TINY)
    loaded = lab.load(tmp_path / "run")
    # The params are the fields, nothing else; what the run measured is the summary's.
    fields = {k: v for k, v in TINY.items() if k != "progress"}
    assert res.params == loaded.params == \
        B.BenchParams.of(writer_cpu=CPUS[0], reader_cpu=CPUS[1], **fields).to_json()
    assert set(B.RUN_KEYS) <= set(res.summary) and set(B.RUN_KEYS) <= set(loaded.summary)
    assert res.out == loaded.out == str(tmp_path / "run")
    assert sorted(res.samples) == sorted(loaded.samples) and "pingpong" in res.samples
    for row, arrays in res.samples.items():
        assert np.array_equal(arrays["roundtrip_ns"], loaded.samples[row]["roundtrip_ns"])
    # Fresh, the result has the loaded one's to_pandas() (pandas is an optional extra).
    if importlib.util.find_spec("pandas"):
        assert res.to_pandas().equals(loaded.to_pandas())
    else:
        with pytest.raises(ImportError, match="pandas"):
            res.to_pandas()


def test_one_parameter_list_with_the_old_spellings():
    """BenchParams: the CLI's flags and bench()'s keywords are its fields; the old
    keyword config= and the old flags --fifo and --slice-limit still work, hidden."""
    import argparse
    from pyqueue import QueueConfig
    from pyqueue.lab.cli import bench as cli
    with pytest.warns(DeprecationWarning, match="config is now called queue"):
        p = B.BenchParams.of(config=QueueConfig(touch_after_write=True))
    assert p.queue == QueueConfig(touch_after_write=True)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--fifo", "5", "--slice-limit", "60", "--touch-after-write"])
    assert B.BenchParams.from_args(args) == B.BenchParams(
        fifo_priority=5, slice_limit_s=60.0, queue=QueueConfig(touch_after_write=True))
    text = parser.format_help()
    assert "--fifo-priority PRIO" in text and "--slice-limit-s S" in text
    assert "--fifo " not in text and "--slice-limit " not in text
    # --quick: the smoke run's sizes, no settle pass unless one is asked for.
    q = B.BenchParams.quick()
    assert (q.rounds, q.messages, q.chasing_messages, q.trips, q.py_messages,
            q.settle_rounds) == (3, 100_000, 100_000, 2_000, 10_000, 0)
    assert B.BenchParams.quick(settle_rounds=3).settle_rounds == 3
    assert B.BenchParams.from_args(parser.parse_args(["--quick", "--settle-rounds", "3"])) \
        == B.BenchParams.quick(settle_rounds=3)
    # A queue setting every row sets itself is refused, not silently ignored.
    with pytest.raises(ValueError, match="hot_blocks: every pyqueue row sets its own tiers"):
        B.BenchParams(queue=QueueConfig(hot_blocks=8))
    with pytest.raises(ValueError, match="writer_cpu must be a CPU id >= 0"):
        B.BenchParams(writer_cpu=-1)


def test_bad_cpu_is_refused():
    with pytest.raises(ValueError, match="writer_cpu=%d: .* not in this process's allowed CPUs"
                       % (max(CPUS) + 1000)):
        B.bench(writer_cpu=max(CPUS) + 1000, **TINY)


def _roundtrip(ab, ba, trips):
    """pyq_bench_adapter_roundtrip on CPUs 0/1 of this process, as the bench runs it."""
    s = np.zeros(trips, np.uint64)
    with rows.Pinned(-1):
        check(lib.pyq_bench_adapter_roundtrip(ab.a, ab.h, ba.h, CPUS[0], CPUS[1], trips,
                                              B._u64(s)), "round trip")
    return s


@pytest.mark.two_cpus
@pytest.mark.parametrize("adapter", ["pyqueue", "ring_floor"])
def test_roundtrip_echo_side_error_is_raised(adapter):
    """A stray message in A->B: the echo side sees sequence 99 where it expects 0,
    and the driver must report that (it used to come back as PYQ_EINTR)."""
    ab, ba = (B._AdapterQueue(adapter, 1 << 20, publish="each") for _ in "ab")
    try:
        stray = ffi.new("uint8_t[32]", [99])
        assert ab.a.try_write(ab.h, stray, 32) == 0
        ab.a.flush(ab.h)
        with pytest.raises(VerificationError) as e:
            _roundtrip(ab, ba, 100)
        assert e.value.code == lib.PYQ_EBADMSG
    finally:
        ab.close()
        ba.close()


def _ring_pair():
    return tuple(B._AdapterQueue("ring_floor", 1 << 20) for _ in "ab")


@pytest.mark.two_cpus
def test_ring_floor_roundtrip_delivers_in_order():
    """Many laps of the 256-slot ring through the bench's round-trip driver, which
    checks every sequence number on both sides (a wrong one raises)."""
    ab, ba = _ring_pair()
    try:
        assert ab.a.capacity(ab.h) == lib.PYQ_RING_FLOOR_SLOTS
        s = _roundtrip(ab, ba, 20 * lib.PYQ_RING_FLOOR_SLOTS + 7)
        assert (s > 0).all()
    finally:
        ab.close()
        ba.close()


@pytest.mark.two_cpus
def test_ring_floor_verify_every_byte():
    """Writer and reader threads flat out (the ring full most of the time): FIFO,
    length and every payload byte checked by pyq_adapter_verify."""
    out = peers.verify("ring_floor", 300_000, writer_cpu=CPUS[0], reader_cpu=CPUS[1])
    assert out["verified"] == out["written"] == 300_000


def test_ring_floor_single_thread_wraps_and_refuses_when_full():
    ab = B._AdapterQueue("ring_floor", 8 * 64)       # the budget caps the ring at 8 slots
    got = []
    take = ffi.callback("int(void *, const void *, uint32_t)",
                        lambda ctx, m, n: got.append(bytes(ffi.buffer(m, n))) or 0)
    try:
        n = ab.a.capacity(ab.h)
        assert n == 8
        sent = []
        for lap in range(3):
            for i in range(n):
                m = bytes([lap, i]) * 16
                assert ab.a.try_write(ab.h, m, 32) == 0
                sent.append(m)
            assert ab.a.try_write(ab.h, b"x" * 32, 32) == lib.PYQ_EAGAIN
            assert ab.a.poll(ab.h, 3, take, ffi.NULL) == 3
            assert ab.a.poll(ab.h, 2**64 - 1, take, ffi.NULL) == n - 3
            assert ab.a.poll(ab.h, 1, take, ffi.NULL) == 0
        assert got == sent
    finally:
        ab.close()


@pytest.mark.parametrize("budget, msg", [(64, 32), (1 << 20, 16), (1 << 20, 64)])
def test_ring_floor_bad_arguments(budget, msg):
    """Under 2 slots of budget, or any message size but 32 bytes: refused."""
    a = peers.get("ring_floor")
    h = ffi.new("void **")
    assert a.create(peers.params(msg, budget, adapter="ring_floor"), h) == lib.PYQ_EINVAL
    with pytest.raises(ValueError):
        peers.verify("ring_floor", 10, msg_size=msg, capacity_bytes=max(budget, msg))


def test_ring_floor_roundtrip_same_queue_refused():
    ab, ba = _ring_pair()
    try:
        with pytest.raises(ValueError):
            _roundtrip(ab, ab, 10)
    finally:
        ab.close()
        ba.close()


# ---- the pairing and the regime tables, on synthetic data ---------------------------

def test_every_bench_row_has_a_twin_or_says_why_not():
    """Every row the bench runs (all peers built) is a row of the twin tables with a
    twin that is built, or one of the rows with no twin and a reason."""
    status = dict.fromkeys(peers.NAMES, "built")
    built = twins.available()
    for table in (twins.THROUGHPUT, twins.ROUNDTRIP):
        for row in twins.bench_rows(table, status):
            assert table[row].twin in built, row
    for row, why in twins.NO_TWIN.items():
        assert row not in twins.THROUGHPUT and row not in twins.ROUNDTRIP
        assert why.startswith("no twin: ")
    # A peer that is not installed takes its rows (bursts included) out.
    gone = dict(status, dpdk="not installed: test")
    rows = twins.bench_rows(twins.THROUGHPUT, gone)
    assert "dpdk" not in rows and "dpdk_burst32" not in rows and "ck" in rows
    assert {"boost_burst32", "atomic_queue", "atomic_queue_optimist"} <= set(
        twins.bench_rows(twins.THROUGHPUT, status))


def _slice(row, value, regime_, twin, twin_regime, place="near", r=0, kind="throughput"):
    return pl.Slice(r, row, value, 50.0, 50.0, place,
                    {"kind": kind, "regime": regime_, "twin": row, "twin_mmsg_s": twin,
                     "twin_regime": twin_regime, "ratio": value / twin,
                     "touch_after_write": None})


def test_streaming_and_chasing_never_share_a_cell():
    sl = [_slice("ck", 100.0, "streaming", 100.0, "streaming", r=0),
          _slice("ck", 10.0, "chasing", 10.0, "chasing", r=1),
          # the adapter streamed, the twin chased: two cells, no ratio
          _slice("ck", 90.0, "streaming", 12.0, "chasing", r=2),
          _slice("ck", 200.0, "streaming", 100.0, "streaming", place="far", r=3)]
    cells = report.regime_cells(sl)
    st, ch = cells["streaming"]["near"]["ck"], cells["chasing"]["near"]["ck"]
    assert st["adapter"] == {"min": 90.0, "p50": 95.0, "max": 100.0, "n": 2}
    assert st["twin"] == {"min": 100.0, "p50": 100.0, "max": 100.0, "n": 1}
    assert st["ratio"]["n"] == 1 and st["regime_differs"] == 1 and st["flag"] == "ok"
    assert ch["adapter"]["max"] == 10.0 and ch["twin"]["max"] == 12.0
    assert ch["ratio"]["n"] == 1
    # The far slice is its own cell; its ratio 2.0, one slice, shows no defect yet.
    far = cells["streaming"]["far"]["ck"]
    assert far["adapter"]["n"] == 1
    assert far["flag"] == ("outside 0.85-1.15, not settled: 1 slice, too few for the "
                           "median's interval")
    # The tables print one regime and one placement at a time.
    keys = [(reg, place) for reg, place, row, c in report._tput_rows({"throughput": cells})]
    assert keys == [("streaming", "near"), ("streaming", "far"), ("chasing", "near")]


def test_targets_take_only_slices_of_their_pass_regime():
    """A throughput target in the streaming pass uses no chasing slice."""
    sl = {"throughput": [_slice("pyqueue", 50.0, "streaming", 50.0, "streaming"),
                         _slice("ck", 10.0, "streaming", 10.0, "streaming"),
                         _slice("rwq", 1.0, "chasing", 1.0, "chasing")],
          "chasing": [_slice("pyqueue", 5.0, "chasing", 5.0, "chasing", kind="chasing"),
                      _slice("ck", 10.0, "chasing", 10.0, "chasing", kind="chasing")]}
    s = report.summarize(sl, {})
    by = {t["label"]: t for t in s["targets"]}
    st = by["pyqueue / best per-message peer, 32 B throughput [streaming]"]
    ch = by["pyqueue / best per-message peer, 32 B throughput [chasing]"]
    assert st["by_placement"]["near"]["median"] == 5.0
    assert st["by_placement"]["near"]["against"] == [("ck", 1)]
    assert ch["by_placement"]["near"]["median"] == 0.5
    # Python's batch writer is taken in its own regime (it chases: it is the slower
    # side) against the C writer's streaming slices only.
    sl = {"throughput": [_slice("py_batch", 30.0, "chasing", 30.0, "chasing", r=0),
                         _slice("pyqueue_direct", 60.0, "streaming", 60.0, "streaming", r=0),
                         _slice("py_batch", 30.0, "chasing", 30.0, "chasing", r=1),
                         _slice("pyqueue_direct", 20.0, "chasing", 20.0, "chasing", r=1)]}
    by = {t["label"]: t for t in report.summarize(sl, {})["targets"]}
    py = by["Python write_batch / C writer, throughput [Python writer in any regime / "
            "C writer streaming]"]["by_placement"]["near"]
    assert (py["median"], py["rounds"]) == (0.5, 1)


def test_a_ratio_on_a_row_its_twin_check_flagged_says_so():
    """pyqueue / yardstick over slices where the yardstick's driver read a third
    of its twin (a DRIVER DEFECT verdict, 6 slices, all alike): the ratio is
    printed with the flagged row named, in the targets too when one of their
    rows is flagged; a ratio on rows the check passed carries nothing."""
    sl = []
    for r in range(6):
        sl += [_slice("pyqueue", 300.0, "streaming", 300.0, "streaming", r=r),
               _slice("yardstick", 150.0, "streaming", 450.0, "streaming", r=r),
               _slice("rwq", 350.0, "streaming", 340.0, "streaming", r=r),
               _slice("pyqueue_stream", 280.0, "streaming", 280.0, "streaming", r=r)]
    s = report.summarize({"throughput": sl}, {})
    assert s["throughput"]["streaming"]["near"]["yardstick"]["flag"].startswith("DRIVER DEFECT")
    ys = s["ratios"]["pyqueue / yardstick [streaming]"]["near"]
    assert ys["median"] == 2.0 and ys["driver_defects"] == ["yardstick"]
    assert s["ratios"]["pyqueue / rwq [streaming]"]["near"]["driver_defects"] == []
    best = {t["label"]: t for t in s["targets"]}[
        "pyqueue / best per-message peer, 32 B throughput [streaming]"]["by_placement"]["near"]
    assert best["against"] == [("rwq", 6)] and best["driver_defects"] == []
    md = report.format_markdown(s, {"settle_rounds": 0})
    assert "2.00x (6 rounds; driver defect: yardstick)" in md
    assert "0.86x (6 rounds)" in md          # pyqueue / rwq: no mark
    text = report.format_summary(s, dict(writer_cpu=0, reader_cpu=1, rounds=6,
                                         budget_bytes=1 << 20, split_ns=100.0,
                                         settle_rounds=0))
    assert "2.00x (6 rounds; driver defect: yardstick)" in text


def test_a_chasing_row_held_at_the_pace_gets_no_verdict():
    """Paced at 50 ns (20 M msg/s): pyqueue at the pace and the best peer at it
    too read 1.0x, which says nothing of the 1.5x goal -- 'pace-bound', no
    verdict; a row below the pace that misses is a miss; one above its goal is met."""
    def paced(row, v, r, place="near"):
        s = _slice(row, v, "chasing", v, "chasing", place=place, r=r, kind="chasing")
        s.extra["gap_ns"] = 50
        return s
    sl = {"chasing": [paced("pyqueue", 19.8, 0), paced("ck", 19.7, 0),
                      paced("pyqueue", 19.9, 1), paced("ck", 19.8, 1),
                      paced("pyqueue", 9.0, 2, "far"), paced("ck", 8.0, 2, "far")]}
    s = report.summarize(sl, {})
    by = {t["label"]: t for t in s["targets"]}
    ch = by["pyqueue / best per-message peer, 32 B throughput [chasing]"]["by_placement"]
    assert ch["near"]["met"] is None and ch["near"]["pace_bound"]
    assert ch["near"]["pace_mmsg_s"] == pytest.approx(20.0)
    assert ch["far"]["met"] is False and "pace_bound" not in ch["far"]
    # pyqueue / rte_ring burst-32 >= 1.0: no rte_ring slices, no cell at all.
    assert by["pyqueue / rte_ring burst-32, 32 B throughput [chasing]"]["by_placement"] == {}
    md = report.format_markdown(s, {"settle_rounds": 0})
    assert "1.01x pace-bound (2 rounds)" in md and "1.12x **missed** (1 rounds)" in md
    assert "pace-bound: the row ran at >= 95 % of the chasing pass's pace" in md
    assert "(pace 20.0 M msg/s)" in md
    # Unpaced slices (older runs, the streaming pass) keep their verdicts.
    for e in sl["chasing"]:
        e.extra.pop("gap_ns")
    ch = {t["label"]: t for t in report.summarize(sl, {})["targets"]}[
        "pyqueue / best per-message peer, 32 B throughput [chasing]"]["by_placement"]
    assert ch["near"]["met"] is False


def test_twin_flag_band():
    assert report.twin_flag(1.0) == "ok" and report.twin_flag(0.85) == "ok"
    assert report.twin_flag(1.16).startswith("DRIVER DEFECT")
    assert report.twin_flag(None) == "no ratio"
    assert report.twin_flag(6.9, "moved") == "moved: no verdict"   # placement changed inside
    assert report.twin_flag(6.9, "far").startswith("DRIVER DEFECT")


def _rt_slice(row, p50, floor, r, place="far"):
    s = pl.Slice(r, row, p50, 300.0, 300.0, place)
    s.extra.update({"kind": "roundtrip", "p99_ns": p50, "p999_ns": p50, "twin_p50_ns": p50,
                    "ratio": 1.0, "touch_after_write": False})
    if floor is not None:
        s.extra["floor_p50_ns"] = floor
    return s


def test_roundtrip_over_the_floor_is_taken_inside_each_slice():
    """The floor moved between slices (400 ns in the pingpong slice, 300 beside
    the row): the target takes the floor measured in the row's own slice."""
    lat = [_rt_slice("pingpong", 400.0, None, 0), _rt_slice("pyqueue_each", 330.0, 300.0, 0),
           _rt_slice("pingpong", 400.0, None, 1), _rt_slice("pyqueue_each", 360.0, 300.0, 1),
           _rt_slice("pyqueue_each", 999.0, 300.0, 2, place="moved")]
    s = report.summarize({"roundtrip": lat}, {})
    t = {t["label"]: t for t in s["targets"]}["pyqueue_each / ping-pong floor, round-trip p50"]
    far = t["by_placement"]["far"]
    assert far["median"] == pytest.approx(1.15) and far["rounds"] == 2 and far["met"]
    assert t["moved_rounds"] == 1
    # Slices without an in-slice floor (older runs) still pair rows by round.
    old = [_rt_slice("pingpong", 400.0, None, 0), _rt_slice("pyqueue_each", 440.0, None, 0)]
    t = {t["label"]: t for t in report.summarize({"roundtrip": old}, {})["targets"]}
    assert t["pyqueue_each / ping-pong floor, round-trip p50"]["by_placement"]["far"][
        "median"] == pytest.approx(1.1)


def test_fifo_priority_is_checked_first():
    with pytest.raises(ValueError, match="fifo_priority"):
        B.bench(fifo_priority=100, **TINY)
    with pytest.raises(TypeError, match="fifo_priority"):
        B.bench(fifo_priority=1.5, **TINY)


def test_fifo_refused_by_the_os_is_a_clear_error():
    """A child without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 (setpriv drops the
    capability even for root): the bench refuses before it measures anything."""
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))\n"
            "from pyqueue.lab.experiments import bench as B\n"
            "try:\n"
            "    B.bench(rounds=1, messages=1000, trips=10, py_messages=10, progress=False,\n"
            "            chasing_messages=1000, fifo_priority=10)\n"
            "except PermissionError as e:\n"
            "    print('refused:', e); sys.exit(0)\n"
            "sys.exit(1)\n")
    cmd = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root, and no setpriv to drop CAP_SYS_NICE")
        cmd = ["setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice"] + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60, env=support.subprocess_env())
    assert p.returncode == 0, p.stdout
    assert "SCHED_FIFO priority 10 refused" in p.stdout and "CAP_SYS_NICE" in p.stdout


@pytest.mark.two_cpus
def test_fifo_run_end_to_end_when_allowed():
    ok, why = __import__("pyqueue.lab.runtime.cpu", fromlist=["probe_fifo"]).probe_fifo(10)
    if not ok:
        pytest.skip(why)
    old = os.sched_getscheduler(0)
    res = B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[1], fifo_priority=10, **TINY)
    assert res.params["fifo_priority"] == 10 and res.status == "complete"
    assert os.sched_getscheduler(0) == old       # the interpreter is not left real-time
    lat = {s.contender for s in res.slices if s.extra.get("kind") == "roundtrip"}
    assert "pyqueue_each" in lat and "pingpong" in lat


class _Counter:
    """A group of rows as another module would add one: its own loop, no C."""

    def __init__(self, ctx):
        self.ctx, self.closed = ctx, False

    def contenders(self):
        return ["count_a", "count_b"]

    def warm_up(self):
        return ["count_a"]

    def run(self, name):
        n = sum(1 for _ in range(1000))
        return float(n), {"cpu": self.ctx.writer_cpu}

    def close(self):
        self.closed = True


def test_another_module_adds_a_group_of_rows(monkeypatch):
    made = []
    monkeypatch.setattr(B, "_EXTRA_GROUPS", {})
    B.add_group("counting", lambda ctx: made.append(_Counter(ctx)) or made[-1])
    res = B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[-1], **TINY)
    assert res.status == "complete" and made and made[0].closed
    mine = [s for s in res.slices if s.extra.get("kind") == "counting"]
    assert sorted(s.contender for s in mine) == ["count_a", "count_b"]
    assert all(s.value == 1000.0 and s.extra["cpu"] == CPUS[0] for s in mine)
    assert {r for d in res.summary["groups"]["counting"].values() for r in d} == \
        {"count_a", "count_b"}
    with pytest.raises(ValueError, match="new group name"):
        B.add_group("roundtrip", _Counter)
    with pytest.raises(TypeError, match="callable"):
        B.add_group("other", None)


def test_slices_text_lists_each_runs_evidence():
    a = _slice("ck", 10.0, "chasing", 11.0, "chasing", kind="chasing")
    a.extra["rates"] = {"empty_per_msg": 0.5, "full_per_msg": 0.7, "catchups_per_msg": 0.2,
                        "waits_per_msg": 1e-6}
    a.extra["twin_rates"] = dict(a.extra["rates"], catchups_per_msg=None, waits_per_msg=None)
    a.extra["twin_window_share"] = {"streaming": 0.0, "chasing": 0.95, "mixed": 0.05}
    b = _slice("pingpong", 300.0, None, 300.0, None, kind="roundtrip")
    lines = report.format_slices([a, b]).splitlines()
    assert len(lines) == 4                       # header, rule, ck's driver, ck's twin
    assert set(lines[1]) == {"-", " "}
    assert lines[2].split()[:4] == ["paced", "0", "near", "ck"]
    assert "driver" in lines[2] and "catch-ups 2.00e-01 waits 1.00e-06" in lines[2]
    assert "twin" in lines[3] and "catch-ups" not in lines[3]
    assert "chasing 95%" in lines[3] and "mixed 5%" in lines[3]
    assert "summary" not in report.format_slices([])


@pytest.mark.two_cpus
def test_only_runs_the_named_rows_in_every_group_that_has_them(monkeypatch):
    """bench(only=...) runs the named rows and nothing else, each in every group
    that has it (ck: flat out, streaming, chasing, round trip); the other targets are not
    measured; an unknown name is refused with the list of rows."""
    # The settle pass, forced on one row: two more rounds of it, numbered on.
    monkeypatch.setattr(B, "unsettled", lambda slices: [("roundtrip", "ck")])
    res = B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[1], only="ck,py_write_poll",
                  **dict(TINY, settle_rounds=2))
    assert res.status == "complete"
    got = {(s.extra["kind"], s.contender) for s in res.slices}
    assert got == {(B.FLAT_OUT, "ck"), ("throughput", "ck"), ("chasing", "ck"),
                   ("roundtrip", "ck"), ("python", "py_write_poll")}
    assert res.params["only"] == ["ck", "py_write_poll"]
    settled = [(s.extra["kind"], s.contender, s.round) for s in res.slices
               if s.extra.get("settle")]
    assert settled == [("roundtrip", "ck", 1), ("roundtrip", "ck", 2)]
    assert res.summary["settle"] == {"rows": [["roundtrip", "ck"]], "rounds_done": 2,
                                     "rounds": 2}
    assert sum(c["ratio"]["n"] for c in res.summary["roundtrip_twins"].values()
               for c in [c["ck"]]) == 3
    assert sum(d["ck"]["slices"] for d in res.summary["roundtrip_ns"].values()) == 1
    assert "Settle pass: roundtrip ck had an open twin verdict" in res.table()
    with pytest.raises(ValueError, match=r"unknown row\(s\) nope; the rows are: .*\bck\b"):
        B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[1], only="ck,nope", **TINY)


_HANGS = r"""
import ctypes, sys
from pyqueue.lab.experiments import bench as B
from pyqueue.lab.experiments import rows

class Hang:
    def __init__(self, ctx): pass
    def contenders(self): return ["fine", "hangs"]
    def warm_up(self): return []
    def run(self, name):
        if name == "hangs":          # a C call that never comes back, GIL released
            ctypes.CDLL(None).sleep(600)
        return 1.0, {}
    def close(self): pass

B.add_group("hanging", Hang)
B.bench(writer_cpu=0, reader_cpu=int(sys.argv[2]), rounds=2, progress=False, out=sys.argv[1],
        only=["fine", "hangs"], slice_limit_s=1.5)
print("returned")
"""


def test_a_slice_that_never_returns_ends_the_run_with_its_partial_output(tmp_path):
    """The slice watchdog: a slice stuck in C (where neither Ctrl-C nor a stop
    flag reaches it) past the slice limit names itself and the Python stacks on
    stderr, leaves a valid output folder whose status says which slice hung and
    keeps the slices measured before it, and ends the process with exit 3."""
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-c", _HANGS, str(out), str(CPUS[-1])],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=120, env=support.subprocess_env())
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "returned" not in p.stdout
    assert "slice hanging hangs, round 1 ran past the slice limit of 1.5 s" in p.stderr
    assert "Thread" in p.stderr and "run" in p.stderr          # the Python stacks
    # ... and every OS thread: the slice's (here sleeping in C) took no CPU time.
    assert "OS threads over 1 s" in p.stderr
    assert re.search(r"^  \d+ \S.*: S, CPU \d+, OTHER, 0\.00 s$", p.stderr, re.M), p.stderr
    assert _output.verify(out) == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"].startswith("failed: slice hanging hangs, round 1 ran past")
    kept = json.loads((out / "slices.json").read_text())["data"]
    assert [s["contender"] for s in kept] == ["fine"]


def test_thread_report_tells_a_spinning_thread_from_a_sleeping_one():
    """The hang report's OS threads: one that spins took about all of the
    sample's CPU time, the sleeping one none."""
    from pyqueue.lab.common import watchdog
    stop, asleep = threading.Event(), threading.Event()

    def spin():
        while not stop.is_set():
            pass

    def sleep():
        asleep.wait()
    threads = [threading.Thread(target=spin), threading.Thread(target=sleep)]
    for t in threads:
        t.start()
    try:
        lines = watchdog.thread_report(0.5)
    finally:
        stop.set()
        asleep.set()
        for t in threads:
            t.join()
    assert lines[0] == "OS threads over 0.5 s (tid name: state, last CPU, policy, CPU time taken):"
    by_tid = {int(ln.split()[0]): ln for ln in lines[1:]}
    took = {t: float(by_tid[t.native_id].rsplit(", ", 1)[1][:-2]) for t in threads}
    assert took[threads[0]] >= 0.1 and took[threads[1]] == 0.0, lines
    assert ", OTHER, " in by_tid[threads[1].native_id]


def test_slice_limit_is_checked_before_anything_runs():
    with pytest.raises(ValueError, match="slice_limit_s"):
        B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[-1], slice_limit_s=-1, **TINY)


@pytest.mark.parametrize("slots, why", [(1000, "not a power of two"), (1, "yardstick_slots"),
                                        (1 << 27, "yardstick_slots")])
def test_yardstick_slots_are_checked_before_anything_runs(slots, why):
    with pytest.raises(ValueError, match=why):
        B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[-1], yardstick_slots=slots, **TINY)


def test_cli_yardstick_slots_reach_the_run_and_a_bad_one_is_refused(tmp_path):
    """--yardstick-slots sets the ring the yardstick rows use (the run's params
    say so); a size that is not a power of two ends with an error naming it,
    before anything runs."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "pyqueue", "bench", "--quick", "--no-progress", "--only",
           "yardstick", "--writer-cpu", str(CPUS[0]), "--reader-cpu", str(CPUS[-1])]
    p = subprocess.run(cmd + ["--yardstick-slots", "1000"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode != 0 and "yardstick_slots=1000: not a power of two" in p.stderr, p.stderr
    out = tmp_path / "run"
    p = subprocess.run(cmd + ["--yardstick-slots", "32768", "--out", str(out)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(out / "summary.json") as f:
        assert json.load(f)["params"]["yardstick_slots"] == 32768


def test_median_interval_is_the_order_statistics_of_its_coverage():
    assert report.median_ci([1.0] * 5) is None                # n < 6: no 95 % interval
    ci = report.median_ci([float(k) for k in range(10, 0, -1)])
    assert (ci["lo"], ci["hi"]) == (2.0, 9.0) and abs(ci["level"] - 0.9785) < 1e-3
    ci = report.median_ci(list(range(6)))
    assert (ci["lo"], ci["hi"]) == (0, 5) and abs(ci["level"] - 0.96875) < 1e-9


def test_twin_flag_says_when_the_spread_leaves_it_unsettled():
    wide = report.median_ci([0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8])
    assert report.twin_flag(1.35, "far", wide).startswith("outside 0.85-1.15, not settled")
    assert "1.00-1.70" in report.twin_flag(1.35, "far", wide)
    tight = report.median_ci([1.3, 1.31, 1.32, 1.33, 1.34, 1.35, 1.36, 1.37, 1.38, 1.39])
    assert report.twin_flag(1.35, "far", tight).startswith("DRIVER DEFECT")
    assert report.twin_flag(1.0, "far", wide) == "ok"
    assert "not settled: 5 slices, too few" in report.twin_flag(1.35, "far", None, 5)
    assert report.twin_flag(1.35, "far", None, 6).startswith("DRIVER DEFECT")


def test_settle_pass_takes_the_open_verdicts_and_stays_out_of_the_targets():
    """unsettled() names the rows whose interval reaches back inside the band or
    that have too few slices for one (not a shown defect); the settle pass's
    slices count in the twin verdicts and in no median or target."""
    wide = [0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8]
    sl = {"throughput": [_slice("ck", 10.0 * x, "streaming", 10.0, "streaming", r=r)
                         for r, x in enumerate(wide)]
                        + [_slice("rwq", 13.0, "streaming", 10.0, "streaming", r=r)
                           for r in range(10)]                     # shown: 1.3 every slice
                        + [_slice("boost", 20.0, "streaming", 10.0, "streaming", "far")],
          "roundtrip": []}
    assert report.unsettled(sl) == [("throughput", "boost"), ("throughput", "ck")]
    extra = [_slice("ck", 10.0, "streaming", 10.0, "streaming", r=10 + r) for r in range(10)]
    for s in extra:
        s.extra["settle"] = True
    sl["throughput"] = [s for s in sl["throughput"] if s.contender != "boost"] + extra
    summ = report.summarize(sl, {})
    assert summ["throughput"]["streaming"]["near"]["ck"]["flag"] == "ok"
    assert summ["throughput"]["streaming"]["near"]["ck"]["ratio"]["n"] == 20
    by = {t["label"]: t for t in summ["targets"]}
    rounds = by["pyqueue / best per-message peer, 32 B throughput [streaming]"]
    assert rounds["by_placement"] == {}                             # no pyqueue slice at all
    assert report.unsettled(sl) == []
    # A settle pass an interrupt cut short says so; a whole one does not.
    st = {"settle": {"rows": [["throughput", "ck"]], "rounds_done": 3, "rounds": 10}}
    cut = report.settle_note(dict(st, interrupted=True))
    assert "ran 3 of 10 more rounds -- cut short by an interrupt" in cut
    whole = dict(st, interrupted=False, settle=dict(st["settle"], rounds_done=10))
    assert "cut short" not in report.settle_note(whole)
    assert report.settle_note({"settle": {"rows": [], "rounds_done": 0, "rounds": 0}}) == \
        "Settle pass: off (rows left 'not settled' stay so)."
