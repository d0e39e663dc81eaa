"""bench's flat-out pass (SPEC §8, issue 45) and its floor, the record_ring
yardstick: present for every throughput row in the JSON, with its fields and
their types; --only runs a subset and refuses unknown rows.  Bounded quick runs;
never an assertion on speed."""
import json
import os
import subprocess
import sys

import pytest

import pyqueue.lab.peers as peers
from pyqueue.lab._lab import ffi, lib
from pyqueue.lab.common import output as _output
from pyqueue.lab.common import regime
from pyqueue.lab.common import twins
from pyqueue.lab.experiments import bench as B
from pyqueue.lab.reports import bench as report

import support

CPUS = support.ALLOWED_CPUS
TINY = dict(rounds=1, messages=20_000, trips=300, py_messages=2_000, progress=False,
            chasing_messages=20_000, settle_rounds=0, flat_messages=30_000, flat_seconds=0.0)


def _cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=support.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "pyqueue", "bench"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout, env=env)


def _spread(e):
    assert set(e) == {"min", "p50", "max", "n"}
    assert all(isinstance(e[k], float) for k in ("min", "p50", "max")) and e["n"] >= 1


@pytest.mark.two_cpus
def test_flat_out_is_in_the_json_for_every_throughput_row(tmp_path):
    """One quick round of every throughput row: results.throughput["flat-out"]
    [placement][row] holds each, with the other regimes' fields and the empty-poll
    share beside them; the printed table leads with flat out."""
    out = tmp_path / "run"
    p = _cli("--quick", "--rounds", "1", "--no-progress", "--writer-cpu", str(CPUS[0]),
             "--reader-cpu", str(CPUS[1]), "--only", ",".join(
                 twins.bench_rows(twins.THROUGHPUT, peers.available()) + ["py_batch"]),
             "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert _output.verify(out) == []
    res = _output.load(out).results
    flat = res["throughput"]["flat-out"]
    rows = {r for d in flat.values() for r in d}
    want = set(twins.bench_rows(twins.THROUGHPUT, peers.available())) | {"py_batch"}
    assert want <= rows and "record_ring" in rows
    streaming_fields = {k for d in res["throughput"].values() for cells in d.values()
                        for c in cells.values() for k in c
                        if d is not flat}
    for place, cells in flat.items():
        for row, c in cells.items():
            assert streaming_fields - {"twin_only", "no_twin"} <= set(c), row
            assert c["passes"] == ["flat-out"]
            _spread(c["adapter"]) if row in twins.THROUGHPUT and \
                twins.THROUGHPUT[row].adapter or row == "py_batch" else None
            if row == "py_batch":
                assert c["flag"] == "no twin" and c["twin"] is None
            else:
                _spread(c["twin"])
                assert isinstance(c["flag"], str)
                assert 0.0 <= c["empty_poll_share"]["twin"]["p50"] <= 1.0
                assert set(c["regimes"]["twin"]) <= set(regime.REGIMES) | {B.UNMEASURED}
            if c["adapter"] is not None:
                assert 0.0 <= c["empty_poll_share"]["adapter"]["p50"] <= 1.0
                assert set(c["regimes"]["adapter"]) <= set(regime.REGIMES) | {B.UNMEASURED}
                assert sum(c["regimes"]["adapter"].values()) == c["adapter"]["n"]
            assert isinstance(c["short"], int)
    # Every flat-out slice: never paced, no episodes, the run's own figure.
    slices = json.load(open(out / "slices.json"))["data"]
    fo = [s for s in slices if s["extra"]["kind"] == "flat-out"]
    assert {s["contender"] for s in fo} == rows
    for s in fo:
        e = s["extra"]
        assert e.get("gap_ns", 0) == 0 and "stream" not in e and "backlog" not in e
        assert e["messages"] >= 30_000
        if "run_mmsg_s" in e:       # an adapter row: its figure is its whole run
            assert s["value"] == e["run_mmsg_s"]
            assert isinstance(e["empty_poll_share"], float) and isinstance(e["short"], bool)
    # The table leads with flat out, and says which regime each run fell into.
    text = p.stdout
    assert text.index("FLAT OUT") < text.index("The explanation")
    assert "record_ring" in text.split("The explanation")[0]
    # The flat-out targets are taken, each in flat out only.
    labels = [t["label"] for t in res["targets"]]
    assert "pyqueue / record_ring floor, 32 B throughput [flat-out]" in labels
    assert "pyqueue / rte_ring burst-32, 32 B throughput [flat-out]" in labels


@pytest.mark.two_cpus
def test_flat_out_runs_are_sized_to_the_seconds_asked():
    """flat_seconds > 0: the runs are sized from the row's untimed first run to
    last at least that long (a shorter one is kept, marked short)."""
    res = B.bench(writer_cpu=CPUS[0], reader_cpu=CPUS[1], only="record_ring",
                  **dict(TINY, flat_seconds=0.05))
    fo = [s for s in res.slices if s.extra["kind"] == "flat-out"]
    assert len(fo) == 1
    e = fo[0].extra
    assert e["flat_seconds"] == 0.05 and e["messages"] > 30_000
    assert (e["elapsed_ns"] < 0.05e9) == e["short"]
    assert (e["twin_elapsed_ns"] < 0.05e9) == e["twin_short"]


def test_cli_only_refuses_an_unknown_row_with_the_list():
    p = _cli("--quick", "--only", "pyqueue,nosuch_row", "--no-progress", timeout=120)
    assert p.returncode == 2
    err = p.stderr
    assert "nosuch_row" in err and "record_ring" in err and "pyqueue_burst32" in err


@pytest.mark.two_cpus
def test_cli_only_runs_just_those_rows(tmp_path):
    out = tmp_path / "run"
    p = _cli("--quick", "--rounds", "1", "--only", "record_ring,pingpong", "--no-progress",
             "--writer-cpu", str(CPUS[0]), "--reader-cpu", str(CPUS[1]), "--out", str(out))
    assert p.returncode == 0, p.stderr
    slices = json.load(open(out / "slices.json"))["data"]
    assert {(s["extra"]["kind"], s["contender"]) for s in slices} == {
        ("flat-out", "record_ring"), ("throughput", "record_ring"), ("chasing", "record_ring"),
        ("roundtrip", "pingpong")}


def test_flat_cells_keep_every_run_whatever_its_regime():
    """A flat-out figure is never filtered: a chasing and a streaming run of one
    row share its cell, and each run's regime is counted beside it."""
    from pyqueue.lab.common.placement import Slice

    def sl(value, reg, twin, twin_reg, share):
        return Slice(contender="pyqueue", round=0, placement="near", value=value,
                     probe_before_ns=50.0, probe_after_ns=50.0,
                     extra={"kind": "flat-out", "regime": reg, "twin_regime": twin_reg,
                            "twin_mmsg_s": twin, "ratio": value / twin,
                            "empty_poll_share": share, "twin_empty_poll_share": share,
                            "short": False, "twin_short": reg == regime.CHASING,
                            "touch_after_write": False})

    cells = report.flat_cells([sl(100.0, regime.STREAMING, 100.0, regime.STREAMING, 0.0),
                               sl(50.0, regime.CHASING, 60.0, regime.MIXED, 0.5)])
    c = cells["near"]["pyqueue"]
    assert c["adapter"]["n"] == 2 and c["twin"]["n"] == 2 and c["ratio"]["n"] == 2
    assert c["regimes"] == {"adapter": {regime.STREAMING: 1, regime.CHASING: 1},
                            "twin": {regime.STREAMING: 1, regime.MIXED: 1}}
    assert c["empty_poll_share"]["adapter"]["max"] == 0.5 and c["short"] == 1


# ---- the floor: record_ring ---------------------------------------------------------

@pytest.mark.two_cpus
def test_record_ring_verify_every_byte():
    """Writer and reader threads flat out, per message and in bursts: FIFO, length
    and every payload byte checked by pyq_adapter_verify."""
    for burst in (0, 32):
        out = peers.verify("record_ring", 300_000, writer_cpu=CPUS[0], reader_cpu=CPUS[1],
                           capacity_bytes=twins.RECORD_RING_BYTES, burst=burst)
        assert out["verified"] == out["written"] == 300_000


def test_record_ring_single_thread_wraps_and_refuses_when_full():
    a = peers.get("record_ring")
    h = ffi.new("void **")
    assert a.create(peers.params(32, 8 * 32, adapter="record_ring"), h) == 0
    got = []
    take = ffi.callback("int(void *, const void *, uint32_t)",
                        lambda ctx, m, n: got.append(bytes(ffi.buffer(m, n))) or 0)
    try:
        n = a.capacity(h[0])
        assert n == 8
        sent = []
        for lap in range(3):
            msgs = b"".join(bytes([lap, i]) * 16 for i in range(n + 2))
            assert a.write_each(h[0], msgs, 5, 32) == 5
            assert a.write_each(h[0], msgs[5 * 32:], n - 2, 32) == 3    # room for 3 more
            assert a.try_write(h[0], b"x" * 32, 32) == lib.PYQ_EAGAIN
            sent += [msgs[i * 32:(i + 1) * 32] for i in range(n)]
            out = ffi.new("char[]", 32 * n)
            assert a.read_each(h[0], out, 3, 32) == 3
            got += [bytes(ffi.buffer(out, 96))[i * 32:(i + 1) * 32] for i in range(3)]
            assert a.poll(h[0], 2**64 - 1, take, ffi.NULL) == n - 3
            assert a.read_each(h[0], out, 4, 32) == 0 and a.poll(h[0], 1, take, ffi.NULL) == 0
        assert got == sent
    finally:
        a.destroy(h[0])


def test_record_ring_twin_is_in_the_rows():
    d = twins.describe("record_ring")
    assert d["adapter_row"] == "record_ring" and not d["blocking"]
    assert twins.available()["record_ring"] == "built"
