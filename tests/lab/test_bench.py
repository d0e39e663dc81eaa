"""The benchmark's --quick mode end to end (never an assertion on speed): every
row measured or marked not installed, the output folder valid."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import pyqueue.peers as peers
from pyqueue import VerificationError
from pyqueue._errors import check
from pyqueue._pyq import ffi, lib
from pyqueue.lab.experiments import bench as B
from pyqueue.lab.common import output as _output

import support

ROOT = support.ROOT
CPUS = support.ALLOWED_CPUS

TINY = dict(rounds=1, messages=20_000, trips=300, py_messages=2_000, progress=False)


def _rows(summary, section):
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
    assert "| target | goal |" in p.stdout
    assert _output.verify(out) == []
    loaded = _output.load(out)
    assert loaded.complete
    res = loaded.results
    status = peers.available()
    tput = _rows(res, "throughput_mmsg_s")
    lat = _rows(res, "roundtrip_ns")
    for name in peers.NAMES:
        if status[name] != "built":
            assert "not installed" in p.stdout or "build failed" in p.stdout
        elif name in B.PEERS + ("pyqueue",):  # atomic_queue: a peer before it is a bench row
            assert name in tput and (name in lat or name == "pyqueue")
    assert {"pyqueue_direct", "py_batch", "yardstick", "pyqueue", "pyqueue_stream",
            "pyqueue_burst32", "pyqueue_stream_burst32"} <= tput
    assert {"pingpong", "ring_floor", "pyqueue_each", "pyqueue_scan", "pyqueue_each_direct",
            "pyqueue_scan_direct"} <= lat
    assert _rows(res, "python_mmsg_s") == {"py_write_poll", "py_batch_local", "simplequeue", "deque"}
    # The ring_floor yardstick: measured with samples, named as a yardstick, never a peer.
    assert "ring_floor" not in status and "ring_floor" not in tput
    assert loaded.params["ring_floor_slots"] == lib.PYQ_RING_FLOOR_SLOTS
    rf = loaded.samples["ring_floor"]["roundtrip_ns"]
    assert rf.size == 2 * loaded.params["trips"] and rf.min() > 0
    assert "| ring_floor (yardstick) |" in p.stdout and "a yardstick, not a peer" in p.stdout
    for label in ("ring_floor / ping-pong floor, round-trip p50",
                  "pyqueue_each / ring_floor, round-trip p50",
                  "pyqueue_scan / ring_floor, round-trip p50"):
        assert res["ratios"][label] and label in p.stdout
    assert len(res["targets"]) == len(B.TARGETS)
    for t in res["targets"]:
        for e in t["by_placement"].values():
            assert e["median"] > 0 and isinstance(e["met"], bool)
    slices = json.load(open(out / "slices.json"))["data"]
    assert all(s["probe_before_ns"] > 0 and s["probe_after_ns"] > 0 for s in slices)
    # Adapter rows say which side set the pace: the writer's own span beside the slice's.
    adapter_rows = [s for s in slices if s["contender"] in tput and "writer_ns" in s["extra"]]
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
    built = [n for n in peers.PEERS if status[n] == "built" and n in B.PEERS]
    if not built:
        pytest.skip("no peer built here: the missing-peer path is the normal one")
    gone = "dpdk" if "dpdk" in built else built[0]
    dst = tmp_path / "peers"
    shutil.copytree(src, dst)
    os.remove(dst / (peers.LIB_PATTERN % gone))
    res = B.bench(CPUS[0], CPUS[1], peer_dir=str(dst), **TINY)
    s = res.summary
    assert s["peers"][gone].startswith("not installed")
    assert gone not in _rows(s, "throughput_mmsg_s") and gone not in _rows(s, "roundtrip_ns")
    if gone == "dpdk":
        assert "dpdk_burst32" not in _rows(s, "throughput_mmsg_s")
    for other in built:
        if other != gone:
            assert other in _rows(s, "throughput_mmsg_s") and other in _rows(s, "roundtrip_ns")
    text, md = res.table(), B.format_markdown(s, res.params)
    assert "%s: not installed" % gone in text
    assert "| %s | not installed" % gone in md


def test_bad_cpu_is_refused():
    with pytest.raises(ValueError, match="writer_cpu=%d: .* not in this process's allowed CPUs"
                       % (max(CPUS) + 1000)):
        B.bench(writer_cpu=max(CPUS) + 1000, **TINY)


def _roundtrip(ab, ba, trips):
    """pyq_bench_adapter_roundtrip on CPUs 0/1 of this process, as the bench runs it."""
    s = np.zeros(trips, np.uint64)
    with B._Pinned(-1):
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
