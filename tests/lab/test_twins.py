"""The inline twins (pyqueue.lab.common.twins, csrc/adapters/pyq_twin.h): every twin and
its adapter row run end to end on small counts, deliver every sequence number
and report their regime counts; the twin builds the very queue its adapter row
does; no indirect call is left in a twin's loops.  No timings.

Set PYQ_REQUIRE_PEERS=1 to make a peer that is not built a failure.
"""
import os
import platform
import re
import shutil
import subprocess
import sys

import pytest

import pyqueue.lab.peers as peers
import pyqueue.lab.common.twins as twins
from pyqueue.lab.common import regime as bench_regime
from pyqueue.errors import UnsupportedError
from pyqueue.lab._lab import ffi, lib

import support

REQUIRE = os.environ.get("PYQ_REQUIRE_PEERS") == "1"
TWO_CPUS = support.TWO_CPUS
W, R = (0, 1) if TWO_CPUS else (-1, -1)
N = 200_000
WINDOW = 1 << 14
TRIPS = 200
STATUS = peers.available()


def _need(row, table):
    lib_name = table[row].library
    if lib_name in peers.PEERS and STATUS[lib_name] != "built":
        if REQUIRE:
            pytest.fail("PYQ_REQUIRE_PEERS=1 but %s is %s" % (lib_name, STATUS[lib_name]))
        pytest.skip("%s: %s" % (lib_name, STATUS[lib_name]))


def _check_counts(r, n):
    assert r["messages"] == n
    assert 0 <= r["empty_polls"] <= r["polls"]
    assert r["polls"] >= 1 and r["full_retries"] >= 0
    assert r["elapsed_ns"] > 0 and r["mmsg_s"] > 0
    assert r["regime"]["regime"] in bench_regime.REGIMES
    assert r["regime"]["messages"] == n


# --- every row, twin and adapter ------------------------------------------------

def test_every_bench_row_has_a_twin():
    bench_tput = {"pyqueue", "pyqueue_stream", "pyqueue_burst32", "pyqueue_stream_burst32",
                  "pyqueue_direct", "yardstick", "mutex", "dpdk_burst32"} | set(peers.PEERS)
    bench_rt = {"ring_floor", "pyqueue_each", "pyqueue_scan", "pyqueue_each_direct",
                "pyqueue_scan_direct", "mutex"} | set(peers.PEERS)
    assert bench_tput <= set(twins.THROUGHPUT)
    assert bench_rt <= set(twins.ROUNDTRIP)
    st = twins.available()
    for spec in list(twins.THROUGHPUT.values()) + list(twins.ROUNDTRIP.values()):
        assert st[spec.twin] == "built" or "not installed" in st[spec.twin] \
            or "build failed" in st[spec.twin], (spec.twin, st[spec.twin])


@pytest.mark.parametrize("row", sorted(twins.THROUGHPUT))
def test_twin_throughput_verifies_every_message(row):
    _need(row, twins.THROUGHPUT)
    r = twins.throughput(row, N, W, R, window=WINDOW)
    _check_counts(r, N)
    assert len(r["windows"]) == N // WINDOW
    assert sum(w["messages"] for w in r["windows"]) == (N // WINDOW) * WINDOW
    assert sum(w["empty_polls"] for w in r["windows"]) <= r["empty_polls"]
    assert all(w["ns"] >= 0 for w in r["windows"])
    assert r["window_regime"]["regime"] in bench_regime.REGIMES
    if twins.describe(row)["blocking"]:
        assert r["empty_polls"] == r["full_retries"] == 0


@pytest.mark.parametrize("row", sorted(r for r, s in twins.THROUGHPUT.items() if s.adapter))
def test_adapter_row_throughput_reports_its_regime(row):
    _need(row, twins.THROUGHPUT)
    r = twins.adapter_throughput(row, N, W, R)
    _check_counts(r, N)
    assert "windows" not in r


@pytest.mark.parametrize("row", sorted(twins.ROUNDTRIP))
def test_twin_roundtrip(row):
    _need(row, twins.ROUNDTRIP)
    r = twins.roundtrip(row, TRIPS, W, R)
    assert r["trips"] == TRIPS and len(r["samples_ns"]) == TRIPS
    assert 0 < r["p50_ns"] <= r["p99_ns"] <= r["p999_ns"]


@pytest.mark.parametrize("row", sorted(r for r, s in twins.ROUNDTRIP.items() if s.adapter))
def test_adapter_row_roundtrip(row):
    _need(row, twins.ROUNDTRIP)
    r = twins.adapter_roundtrip(row, TRIPS, W, R)
    assert r["trips"] == TRIPS and r["p50_ns"] > 0


def test_roundtrip_leaves_the_callers_affinity_alone():
    before = os.sched_getaffinity(0)
    twins.roundtrip("ring_floor", TRIPS, W, R)
    twins.adapter_roundtrip("ring_floor", TRIPS, W, R)
    assert os.sched_getaffinity(0) == before


def test_touch_after_write_is_reported_and_settable():
    # The queue's default (off), the burst study's setting (on) as a row of its
    # own, an explicit override, and no setting at all for a peer.
    assert twins.roundtrip("pyqueue_each", TRIPS, W, R)["touch_after_write"] is False
    assert twins.roundtrip("pyqueue_each_touch", TRIPS, W, R)["touch_after_write"] is True
    r = twins.roundtrip("pyqueue_each", TRIPS, W, R, touch_after_write=True)
    assert r["touch_after_write"] is True
    assert twins.adapter_roundtrip("pyqueue_each_direct", TRIPS, W, R,
                                   touch_after_write=True)["touch_after_write"] is True
    assert twins.adapter_throughput("pyqueue", 20_000, W, R)["touch_after_write"] is False
    assert twins.throughput("pyqueue", 20_000, W, R)["touch_after_write"] is False
    assert twins.roundtrip("ring_floor", TRIPS, W, R)["touch_after_write"] is None


# --- the chasing regime on purpose ----------------------------------------------

@pytest.mark.parametrize("row", ["mutex", "ck", "pyqueue", "dpdk_burst32", "yardstick"])
def test_paced_writer_runs_twin_and_adapter(row):
    _need(row, twins.THROUGHPUT)
    t = twins.throughput(row, 50_000, W, R, gap_ns=50, window=WINDOW)
    a = twins.adapter_throughput(row, 50_000, W, R, gap_ns=50)
    assert t["gap_ticks"] == a["gap_ticks"] > 0
    _check_counts(t, 50_000)
    _check_counts(a, 50_000)


def test_pyqueue_direct_paces_its_own_loop_and_bad_rows_are_refused():
    """pyqueue_direct's loop in bench.c takes the twins' pace (pyq_bench_queue_paced):
    every message delivered, in order (the reader checks each), the pace recorded."""
    r = twins.adapter_throughput("pyqueue_direct", 50_000, W, R, gap_ns=200)
    assert r["messages"] == 50_000 and r["gap_ticks"] == twins.gap_ticks(200) > 0
    assert r["regime"]["regime"] in bench_regime.REGIMES
    with pytest.raises(ValueError, match="no adapter row"):
        twins.adapter_throughput("pyqueue_read_one", 1000)
    with pytest.raises(ValueError, match="gap_ns"):
        twins.gap_ticks(-1)


# --- the twin builds the adapter's queue ------------------------------------------

@pytest.mark.parametrize("row", ["mutex", "ring_floor"] + list(peers.PEERS))
def test_twin_queue_is_the_adapter_queue(row):
    table = dict(twins.THROUGHPUT, ring_floor=twins.ROUNDTRIP["ring_floor"])
    _need(row, table)
    spec = table[row]
    p = twins._params(spec, twins.BUDGET, twins.YARDSTICK_SLOTS, {})
    a = peers.get(spec.adapter)
    h = ffi.new("void **")
    assert a.create(p, h) == 0
    try:
        cap = a.capacity(h[0])
    finally:
        a.destroy(h[0])
    if row == "ring_floor":
        tw = twins._table("ring_floor", None)["ring_floor"]
        tp = ffi.new("pyq_twin_params_t *")
        tp.queue = p[0]
        tp.messages, tp.writer_cpu, tp.reader_cpu = 1000, -1, -1
        r = ffi.new("pyq_twin_result_t *")
        assert tw.throughput(tp, ffi.NULL, 0, r) == 0
        assert r.capacity == cap
    else:
        assert twins.throughput(row, 1000, -1, -1, window=0)["capacity"] == cap


def test_compile_time_capacity_at_the_bench_budget_and_run_time_otherwise():
    for name in ("boost", "atomic_queue"):
        if STATUS[name] != "built":
            continue
        for budget, slots in ((1 << 20, 32768), (1 << 16, 2048 if name == "boost" else 4096)):
            r = twins.throughput(name, 10_000, -1, -1, budget_bytes=budget, window=0)
            assert r["capacity"] == slots, (name, budget)


# --- the C interface --------------------------------------------------------------

def _twin(library, name):
    return twins._table(library, None)[name]


def test_twin_refuses_bad_parameters():
    tw = _twin("ring_floor", "ring_floor")
    p = ffi.new("pyq_twin_params_t *")
    lib.pyq_adapter_params_init(ffi.addressof(p.queue))
    p.messages, p.writer_cpu, p.reader_cpu = 10, -1, -1
    r = ffi.new("pyq_twin_result_t *")
    p.burst = 32                       # ring_floor has no burst call
    assert tw.throughput(p, ffi.NULL, 0, r) == lib.PYQ_EINVAL == r.error
    p.burst, p.window = 0, 3           # not a power of two
    assert tw.throughput(p, ffi.NULL, 0, r) == lib.PYQ_EINVAL
    p.window = 0
    p.queue.msg_size = 64              # the adapter's create refuses it
    assert tw.throughput(p, ffi.NULL, 0, r) == lib.PYQ_EINVAL
    p.queue.msg_size = 32
    p.writer_cpu = 1 << 20             # beyond CPU_SETSIZE
    assert tw.throughput(p, ffi.NULL, 0, r) == lib.PYQ_EINVAL


def test_twin_get_names_its_failures():
    out = ffi.new("const pyq_twin_table_t **")
    folder = peers.peer_dir().encode()
    assert lib.pyq_twin_get(b"pyqueue", folder, out) == lib.PYQ_ENOTSUP
    assert b"pyq_twin_bench" in ffi.string(lib.pyq_twin_error())
    assert lib.pyq_twin_get(b"No Such", folder, out) == lib.PYQ_EINVAL
    assert lib.pyq_twin_get(b"mutex", ffi.NULL, out) == 0 and out[0].abi == lib.PYQ_TWIN_ABI


def test_missing_peer_twin_is_unsupported(tmp_path):
    name = next((p for p in peers.PEERS if STATUS[p] == "built"), None)
    if name is None:
        pytest.skip("no peer built")
    with pytest.raises(UnsupportedError):
        twins.throughput(name, 10, peer_dir=str(tmp_path))
    assert "not installed" in twins.available(str(tmp_path))[name]


def test_paced_driver_refuses_null_and_paces():
    r = ffi.new("pyq_bench_result_t *")
    assert lib.pyq_bench_adapter_paced(ffi.NULL, ffi.NULL, 10, 0, 5, -1, -1, r) == lib.PYQ_EINVAL
    a = peers.get("mutex")
    p = peers.params(32, 65536, adapter="mutex")
    h = ffi.new("void **")
    assert a.create(p, h) == 0
    try:
        assert lib.pyq_bench_adapter_paced(a, h[0], 10_000, 0, 10, -1, -1, r) == 0
        assert r.messages == 10_000 and r.polls >= 1
        assert r.empty_runs <= r.empty_polls and r.full_runs <= r.full_retries
        # The same queue, flat out, through the unpaced entry point: left usable.
        assert lib.pyq_bench_adapter_throughput(a, h[0], 10_000, 0, -1, -1, r) == 0
        assert r.messages == 10_000
        assert lib.pyq_bench_warm(a, h[0]) == 0
    finally:
        a.destroy(h[0])


def test_burst_rows_read_in_bursts_where_the_adapter_can():
    """read_burst exists for the queues whose library has a bulk read, and the
    driver's burst rows deliver every message through it, checked."""
    has = {"pyqueue": True, "mutex": False, "ring_floor": False}
    has.update({"boost": True, "dpdk": True, "ck": False, "rwq": False, "atomic_queue": False})
    r = ffi.new("pyq_bench_result_t *")
    for name, want in has.items():
        if name in peers.PEERS and STATUS[name] != "built":
            continue
        a = peers.get(name)
        assert (a.read_burst != ffi.NULL) == want, name
        if not want or a.try_write_burst == ffi.NULL:
            continue
        p = peers.params(32, 1 << 16, adapter=name, hot_blocks=4, spill_blocks=12)
        h = ffi.new("void **")
        assert a.create(p, h) == 0
        try:
            assert lib.pyq_bench_adapter_paced(a, h[0], 100_003, 32, 0, W, R, r) == 0, name
            assert r.messages == 100_003 and r.polls >= 100_003 // 32, name
        finally:
            a.destroy(h[0])


def test_per_message_rows_read_each_where_the_library_takes_one_at_a_time():
    """read_each exists for the queues whose library hands out one message per
    call (ck, rwq, atomic_queue, the mutex queue): up to max messages into the caller's array,
    FIFO, every byte, 0 when empty, in order with poll; and the driver's
    per-message rows deliver every message through it, checked."""
    has = {"pyqueue": True, "mutex": True, "ring_floor": False}
    has.update({"boost": False, "dpdk": False, "ck": True, "rwq": True, "atomic_queue": True})
    r = ffi.new("pyq_bench_result_t *")
    got = []

    @ffi.callback("int(void *, const void *, uint32_t)")
    def keep(ctx, msg, n):
        got.append(bytes(ffi.buffer(msg, n)))
        return 0

    for name, want in has.items():
        if name in peers.PEERS and STATUS[name] != "built":
            continue
        a = peers.get(name)
        assert (a.read_each != ffi.NULL) == want, name
        if not want:
            continue
        p = peers.params(32, 1 << 16, adapter=name)
        h = ffi.new("void **")
        assert a.create(p, h) == 0
        try:
            msgs = [bytes([k]) * 32 for k in range(40)]
            for m in msgs:
                assert a.try_write(h[0], m, 32) == 0
            a.flush(h[0])
            out = ffi.new("uint8_t[]", 32 * 32)
            assert a.read_each(h[0], out, 32, 32) == 32, name
            del got[:]
            assert a.poll(h[0], 3, keep, ffi.NULL) == 3, name
            assert a.read_each(h[0], out + 0, 32, 32) == 5, name
            first = bytes(ffi.buffer(out, 5 * 32))
            assert got == msgs[32:35] and first == b"".join(msgs[35:]), name
            assert a.read_each(h[0], out, 32, 32) == 0, name
            assert lib.pyq_bench_adapter_paced(a, h[0], 100_003, 0, 0, W, R, r) == 0, name
            assert r.messages == 100_003 and r.polls >= 100_003 // 32, name
        finally:
            a.destroy(h[0])


@pytest.mark.parametrize("kw", [{}, {"publish": "each"}, {"scan_current": True, "publish": "each"}],
                         ids=["max", "each", "scan"])
def test_pyqueue_read_each_copies_runs_across_blocks_and_refuses_other_sizes(kw):
    """pyqueue's read_each (pyq_reader_poll_inline, a copy as its callback):
    every message of runs that cross block boundaries, FIFO with poll's, in
    calls of at most max; a message of another size ends a call with
    PYQ_ERANGE (consumed: the rows' runs fail on it), a len other than 32 is
    PYQ_EINVAL."""
    a = peers.get("pyqueue")
    p = peers.params(32, 4096 * 16, adapter="pyqueue", hot_blocks=16, spill_blocks=0, **kw)
    h = ffi.new("void **")
    assert a.create(p, h) == 0
    got = []

    @ffi.callback("int(void *, const void *, uint32_t)")
    def keep(ctx, msg, n):
        got.append(bytes(ffi.buffer(msg, n)))
        return 0

    try:
        msgs = [k.to_bytes(8, "little") * 4 for k in range(600)]  # ~5 blocks of 4 KiB
        for m in msgs:
            assert a.try_write(h[0], m, 32) == 0
        a.flush(h[0])
        out = ffi.new("uint8_t[]", 32 * 32)
        assert a.read_each(h[0], out, 32, 16) == lib.PYQ_EINVAL
        seen = []
        while len(seen) < len(msgs):
            k = a.read_each(h[0], out, 32 if len(seen) % 3 else 7, 32)
            assert 0 < k <= 32
            seen += [bytes(ffi.buffer(out + 32 * j, 32)) for j in range(k)]
            if len(seen) < len(msgs):
                del got[:]
                assert a.poll(h[0], 1, keep, ffi.NULL) == 1
                seen += got
        assert seen == msgs
        assert a.read_each(h[0], out, 32, 32) == 0
        assert a.try_write(h[0], b"x" * 16, 16) == 0
        assert a.try_write(h[0], msgs[0], 32) == 0
        a.flush(h[0])
        assert a.read_each(h[0], out, 32, 32) == lib.PYQ_ERANGE
        assert a.read_each(h[0], out, 32, 32) == 1 and bytes(ffi.buffer(out, 32)) == msgs[0]
    finally:
        a.destroy(h[0])


def test_write_each_writes_in_order_and_stops_when_full():
    """Every contender's write_each (the per-message rows' streaming writer):
    up to n messages, FIFO with try_write's, a short count when the queue
    fills, 0 when it is full; the driver's streaming run delivers through it."""
    r = ffi.new("pyq_bench_result_t *")
    names = ["pyqueue", "mutex"] + [n for n in peers.PEERS if STATUS[n] == "built"]
    for name in names:
        a = peers.get(name)
        assert a.write_each != ffi.NULL, name
        p = peers.params(32, 4096 * 6, adapter=name, hot_blocks=1, spill_blocks=1)
        h = ffi.new("void **")
        assert a.create(p, h) == 0
        try:
            cap = int(a.capacity(h[0]))
            msgs = b"".join(i.to_bytes(8, "little") * 4 for i in range(cap + 64))
            wrote = a.write_each(h[0], msgs, 32, 32)
            assert wrote == 32, name
            while True:
                k = a.write_each(h[0], msgs[wrote * 32:], 32, 32)
                assert 0 <= k <= 32, (name, k)
                if k == 0:
                    break
                wrote += k
            assert a.write_each(h[0], msgs[wrote * 32:], 32, 32) == 0, name   # still full
            a.flush(h[0])
            out = ffi.new("uint8_t[]", 32)
            got = []

            @ffi.callback("int(void *, const void *, uint32_t)")
            def keep(ctx, msg, n):
                got.append(int.from_bytes(ffi.buffer(msg, 8)[:], "little"))
                return 0

            while a.poll(h[0], 1 << 20, keep, ffi.NULL) > 0:
                pass
            assert got == list(range(wrote)) and wrote >= min(cap, 32), name
            assert lib.pyq_bench_adapter_throughput(a, h[0], 100_003, 0, W, R, r) == 0, name
            assert r.messages == 100_003, name
        finally:
            a.destroy(h[0])


@ffi.callback("int(void *, const void *, uint32_t)")
def _discard(ctx, msg, n):
    return 0


def test_read_spin_takes_one_message_or_stops():
    """Every contender's read_spin (the round trip's receive, spun in the
    adapter's own file, the sequence number checked in the read's callback):
    one message, FIFO, 1 each when its first 8 bytes are the sequence number
    asked for; another number is PYQ_EBADMSG, that message consumed; on an
    empty queue it returns 0 once the stop word is set, taking nothing; and the
    driver's round trip goes through it."""
    names = ["pyqueue", "mutex", "ring_floor"] + [n for n in peers.PEERS if STATUS[n] == "built"]
    for name in names:
        a = peers.get(name)
        assert a.read_spin != ffi.NULL, name
        p = peers.params(32, 1 << 16, adapter=name)
        h = ffi.new("void **")
        assert a.create(p, h) == 0
        try:
            for k in (7, 8, 9, 11, 10):
                assert a.try_write(h[0], k.to_bytes(8, "little") + bytes([k]) * 24, 32) == 0
            a.flush(h[0])
            stop = ffi.new("int *", 0)
            assert [a.read_spin(h[0], k, stop) for k in (7, 8, 9)] == [1, 1, 1], name
            assert a.read_spin(h[0], 10, stop) == lib.PYQ_EBADMSG, name   # 11 came first
            assert a.read_spin(h[0], 10, stop) == 1, name                 # 11 is gone
            stop[0] = 1
            assert a.read_spin(h[0], 12, stop) == 0, name   # empty: stopped, not stuck
            assert a.poll(h[0], 10, _discard, ffi.NULL) == 0, name
        finally:
            a.destroy(h[0])
    for row in ("ck", "ring_floor"):   # the driver's round trip, through read_spin
        if row in peers.PEERS and STATUS[row] != "built":
            continue
        r = twins.adapter_roundtrip(row, trips=200, cpu_a=W, cpu_b=R)
        assert len(r["samples_ns"]) == 200 and min(r["samples_ns"]) > 0, row


def test_bench_loops_count_their_regime():
    r = ffi.new("pyq_bench_result_t *")
    y = lib.pyq_bench_yardstick()
    h = ffi.new("void **")
    assert y.create(peers.params(32, 1024 * 32, adapter="yardstick"), h) == 0
    try:
        assert y.capacity(h[0]) == 1024
        assert lib.pyq_bench_adapter_paced(y, h[0], 100_000, 0, 0, W, R, r) == 0
        assert r.messages == 100_000 and 0 <= r.empty_polls <= r.polls
        assert r.empty_runs <= r.empty_polls
    finally:
        y.destroy(h[0])
    q = twins._queue.Queue(publish="max", hot_blocks=4, spill_blocks=60)
    try:
        assert lib.pyq_bench_queue_throughput(q.c_handle, 100_000, 32, W, R, r) == 0
        assert r.polls >= 1 and r.empty_polls <= r.polls
        assert r.empty_runs <= r.empty_polls
    finally:
        q.close()


# --- nothing indirect in a twin's loops --------------------------------------------

_LOOP = re.compile(r"twin_(writer|reader|echo|timed)")
# A call left to one of a queue's own operations (pyqueue's public API excepted:
# it lives in another translation unit, so its twins call it directly).
_OP = re.compile(r"<(?:\(anonymous namespace\)::)?(?!pyq_)\w+_(try_write|try_write_burst|poll|read_burst|read_each|write_each|read_spin|flush)\b")


def _calls_left(path):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", path],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    bad, func, seen = [], None, 0
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            func = m.group(1)
            seen += bool(_LOOP.search(func))
        elif func and _LOOP.search(func) and "\tcall" in line:
            if re.search(r"\tcall\s+\*", line) or _OP.search(line):
                bad.append((func, line.strip()))
    if not seen:
        pytest.skip("%s has no symbols for its twin loops (stripped)" % path)
    return bad


@pytest.mark.skipif(not shutil.which("objdump"), reason="needs objdump (binutils)")
def test_twin_loops_inline_the_queue():
    """No indirect call, and no call to the queue's own operations, is left in a
    twin's writer, reader, echo or timed loop."""
    import pyqueue.lab._lab as ext   # the twins and the drivers live in the lab's extension
    libs = [ext.__file__]
    libs += [os.path.join(peers.peer_dir(), "libpyq_peer_%s.so" % p)
             for p in peers.PEERS if STATUS[p] == "built"]
    for path in libs:
        assert _calls_left(path) == [], path


# --- streaming episodes (backlog runs) -------------------------------------------

_EPISODE_CHILD = r"""
import json, sys
import pyqueue.lab.peers as peers
import pyqueue.lab.common.twins as twins
W, R, N = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out = {}
for row in twins.bench_rows(twins.THROUGHPUT, peers.available()):
    b = twins.stream_backlog(row)
    runs = {"twin": twins.throughput(row, N, W, R, backlog=b, window=0)} if b else {}
    if b and twins.THROUGHPUT[row].adapter:
        runs["driver"] = twins.adapter_throughput(row, N, W, R, backlog=b)
    out[row] = {"backlog": b, "runs": {k: {"messages": v["messages"], "stream": v["stream"]}
                                       for k, v in runs.items()}}
# A backlog beyond the queue: the writer releases the reader when the queue fills.
for row in ("yardstick", "pyqueue"):
    big = twins.stream_backlog(row) * 8
    out[row + "_oversize"] = {"backlog": big, "runs": {
        "twin": {"messages": twins.throughput(row, N, W, R, backlog=big, window=0)["messages"]},
        "driver": {"messages": twins.adapter_throughput(row, N, W, R, backlog=big)["messages"]}}}
print(json.dumps(out))
"""


def test_streaming_episodes_deliver_every_message_driver_and_twin_alike():
    """Every throughput row, its driver and its twin, in backlog episodes: every
    message arrives in order (the runs verify each), each run records episodes
    the classification accepts, and a backlog larger than the queue cannot
    deadlock the held reader.  In a subprocess: a protocol bug would hang."""
    import json
    import sys
    p = subprocess.run([sys.executable, "-c", _EPISODE_CHILD, str(W), str(R), str(N)],
                       capture_output=True, text=True, timeout=240, env=support.subprocess_env())
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["yardstick"]["backlog"] > 0
    assert out["atomic_queue_optimist"]["backlog"] == 0 if "atomic_queue_optimist" in out else True
    for row, r in out.items():
        for who, run in r["runs"].items():
            assert run["messages"] == N, (row, who)
            st = run.get("stream")
            if st is None:
                continue
            assert st["episodes"] >= 1 and 0 <= st["counted"] <= st["episodes"], (row, who)
            assert st["regime"] in (bench_regime.STREAMING, bench_regime.CHASING), (row, who)
            assert (st["mmsg_s"] is None) == (st["counted"] == 0), (row, who)


def test_backlog_runs_refuse_a_pace_and_no_room():
    with pytest.raises(ValueError, match="backlog"):
        twins.throughput("yardstick", 1000, -1, -1, gap_ns=10, backlog=100)
    with pytest.raises(ValueError, match="backlog"):
        twins.adapter_throughput("yardstick", 1000, -1, -1, gap_ns=10, backlog=100)
    r = ffi.new("pyq_bench_result_t *")
    y = lib.pyq_bench_yardstick()
    h = ffi.new("void **")
    assert y.create(peers.params(32, 1024 * 32, adapter="yardstick"), h) == 0
    try:
        ep = ffi.new("pyq_twin_episode_t[]", 4)
        assert lib.pyq_bench_adapter_stream(y, h[0], 10, 0, 0, ep, 4, -1, -1, r) == lib.PYQ_EINVAL
        assert lib.pyq_bench_adapter_stream(y, h[0], 10, 0, 8, ffi.NULL, 4, -1, -1, r) == \
            lib.PYQ_EINVAL
        assert lib.pyq_bench_adapter_stream(y, h[0], 10_000, 0, 256, ep, 4, -1, -1, r) == 0
        assert r.messages == 10_000 and 1 <= r.episodes <= 4
        assert ep[0].go_written == 256 and ep[0].start_read == 0
    finally:
        y.destroy(h[0])


@pytest.mark.skipif(not TWO_CPUS or not shutil.which("cc") or platform.machine() != "x86_64"
                    or STATUS.get("ck") != "built", reason="needs ck, cc, x86-64 and CPUs 0, 1")
def test_ck_spin_variants_diagnostic_builds_and_runs(tmp_path):
    """benchmarks/twins/ck_spin_variants.c (BENCHMARKS cites its figures) still
    builds against the installed ck and prints one p50 line per variant."""
    src = os.path.join(support.ROOT, "benchmarks", "twins", "ck_spin_variants.c")
    exe = str(tmp_path / "ck_spin")
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-o", exe, src, "-lck", "-lpthread"],
                   check=True, timeout=120)
    out = subprocess.run([exe, "1"], capture_output=True, text=True, timeout=60, check=True).stdout
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [r[0] for r in rows] == ["inline", "send-ptr", "poll-ptr", "spin-ptr", "inline-chead"]
    assert all(float(r[3]) > 0 for r in rows)


@pytest.mark.skipif(not TWO_CPUS, reason="needs CPUs 0 and 1")
def test_twin_rows_tags_each_slice_and_reports_per_placement():
    """benchmarks/peers/twin_rows.py (DESIGN and BENCHMARKS cite its figures):
    every slice is printed with its two probes and their placement, and the
    summary gives each row, a variant included, its median and its ratio to
    --against under the placement its slices had."""
    script = os.path.join(support.ROOT, "benchmarks", "peers", "twin_rows.py")
    out = subprocess.run([sys.executable, script, "--episodes", "--messages", "200000",
                          "--rounds", "2", "--rows", "pyqueue,yardstick",
                          "--variant", "pf0=pyqueue:prefetch=0"],
                         capture_output=True, text=True, timeout=240, check=True,
                         env=support.subprocess_env()).stdout
    slices = re.findall(r"^round (\d) (\S+) +([\d.]+)  probe (\d+)/(\d+) ns \((near|far|moved)\)",
                        out, re.M)
    assert sorted((r, name) for r, name, *_ in slices) == sorted(
        (r, name) for r in "01" for name in ("pyqueue", "yardstick", "pf0"))
    assert all(float(v) > 0 for _, _, v, *_ in slices)
    places = {p for *_, p in slices}
    for place in places:
        assert re.search(r"^%s: writer in episodes" % place, out, re.M), out
    for name in ("pyqueue", "yardstick", "pf0"):
        assert re.search(r"^  %s +[\d.]+ \(\d\)  reader +[\d.]+  (ratio -|[\d.]+x \(\d\))  "
                         r"regimes: \w" % name, out, re.M), out
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run([sys.executable, script, "--rows", "pyqueue", "--against", "nope"],
                       capture_output=True, timeout=60, check=True, env=support.subprocess_env())


def _episode_phases():
    import importlib.util
    path = os.path.join(support.ROOT, "benchmarks", "twins", "episode_phases.py")
    spec = importlib.util.spec_from_file_location("episode_phases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_episode_phases_splits_each_episode_into_fill_and_stream():
    """benchmarks/twins/episode_phases.py (BENCHMARKS cites its figures): the fill
    of episode k runs from the reader's catch-up ending k-1 to the release of k;
    the episode and reader columns are the bench's (regime.episode_intervals:
    an episode the run ended runs the writer to its own end; one too short to
    count is left out); an episode ended by the run's end starts no fill."""
    import numpy as np
    recs = np.zeros(4, twins._EPISODE_DTYPE)
    # episode 0: released at 1000 ns with 100 written, caught up at 3000 with 300 read
    recs[0] = (1000, 100, 1010, 0, 3000, 300, 1, 0)
    # fill 1: 300 -> 500 written in 3000 -> 3200 ns (1000 M msg/s); episode 1: 500 -> 700
    recs[1] = (3200, 500, 3210, 300, 5200, 700, 1, 0)
    # fill 2: 700 -> 710 in 5200 -> 5220 (500); episode 2: 10 messages, too few to count
    recs[2] = (5220, 710, 5230, 700, 7300, 720, 1, 0)
    # fill 3: 720 -> 1000 in 7300 -> 7440 (2000); episode 3 ended by the run: the
    # writer's 2000 messages end at 9440 ns, the reader's at 9500 (no fill after)
    recs[3] = (7440, 1000, 7450, 720, 9500, 2000, 0, 0)
    fill, ep, rd = _episode_phases().phases(recs, 2000, 9440)
    assert fill == pytest.approx(np.median([1000.0, 500.0, 2000.0]))
    assert ep == pytest.approx(np.median([200 / 2000 * 1e3, 200 / 2000 * 1e3,
                                          1000 / 2000 * 1e3]))
    assert rd == pytest.approx(np.median([300 / 1990 * 1e3, 400 / 1990 * 1e3,
                                          1280 / 2050 * 1e3]))


@pytest.mark.skipif(not TWO_CPUS, reason="needs CPUs 0 and 1")
def test_episode_phases_runs_twins_and_drivers():
    """The script runs a twin and a driver and prints a row per row measured in
    the near pairs (none when the host kept every pair far)."""
    script = os.path.join(support.ROOT, "benchmarks", "twins", "episode_phases.py")
    for extra in ([], ["--driver"]):
        out = subprocess.run([sys.executable, script, "--pairs", "2", "--messages", "300000",
                              "--rows", "pyqueue,yardstick"] + extra,
                             capture_output=True, text=True, timeout=240, check=True,
                             env=support.subprocess_env()).stdout
        m = re.search(r"^(twins|drivers), (\d) of 2 pairs near", out, re.M)
        assert m and m.group(1) == ("drivers" if extra else "twins"), out
        rows = re.findall(r"^(pyqueue|yardstick) +([\d.]+|nan) +([\d.]+) +([\d.]+)$", out, re.M)
        assert len(rows) == (2 if int(m.group(2)) else 0), out


def test_episode_phases_takes_configured_rows_and_any_placement():
    """A row may carry its queue's fields (ROW:FIELD=VALUE;...), run with them;
    --near-ns widens the placement filter, so every pair counts; a field
    without a value is refused."""
    mod = _episode_phases()
    assert mod.parse_row("pyqueue") == ("pyqueue", {})
    assert mod.parse_row("pyqueue_stream:block_size=8192;hot_blocks=128;spill_blocks=0") == (
        "pyqueue_stream", {"block_size": 8192, "hot_blocks": 128, "spill_blocks": 0})
    with pytest.raises(SystemExit, match="needs =VALUE"):
        mod.parse_row("pyqueue:prefetch")
    if not TWO_CPUS:
        return
    script = os.path.join(support.ROOT, "benchmarks", "twins", "episode_phases.py")
    row = "pyqueue_stream:block_size=8192;hot_blocks=128;spill_blocks=0"
    out = subprocess.run([sys.executable, script, "--pairs", "2", "--messages", "300000",
                          "--near-ns", "1e9", "--rows", row + ",yardstick"],
                         capture_output=True, text=True, timeout=240, check=True,
                         env=support.subprocess_env()).stdout
    assert re.search(r"^twins, 2 of 2 pairs near \(< 1e\+09 ns\)", out, re.M), out
    assert re.search(r"^%s +([\d.]+|nan) +[\d.]+ +[\d.]+$" % re.escape(row), out, re.M), out


@pytest.mark.skipif(not TWO_CPUS, reason="needs CPUs 0 and 1")
def test_ab_builds_runs_a_peer_through_each_builds_driver():
    """benchmarks/peers/ab_builds.py --peer NAME (BENCHMARKS cites its A/Bs):
    the peer's per-message row runs once through each build's driver, beside
    pyqueue's rows, in every round; a peer that is not built here, or a round
    trip asked of one, is refused before anything runs."""
    script = os.path.join(support.ROOT, "benchmarks", "peers", "ab_builds.py")
    import pyqueue.lab._lab as ext   # the twins and the drivers live in the lab's extension
    so = ext.__file__  # the same build as both sides
    out = subprocess.run([sys.executable, script, so, so, "--mode", "throughput", "--rounds", "2",
                          "--messages", "100000", "--peer", "mutex"],
                         capture_output=True, text=True, timeout=240, check=True,
                         cwd=support.ROOT, env=support.subprocess_env()).stdout
    rounds = re.findall(r"^round \d probe .*$", out, re.M)
    assert len(rounds) == 2, out
    for line in rounds:
        got = dict(re.findall(r"(\w+) ([\d.]+)(?=  |$)", line.split(": ", 1)[1]))
        assert {"base_mutex", "new_mutex", "base_default", "new_default", "yardstick"} <= set(got)
        assert all(float(v) > 0 for v in got.values()), line
    bad = subprocess.run([sys.executable, script, so, so, "--rounds", "1", "--peer", "nope"],
                         capture_output=True, text=True, timeout=120, cwd=support.ROOT,
                         env=support.subprocess_env())
    assert bad.returncode != 0 and "peer 'nope' is not built here" in bad.stderr, bad.stderr
    rt = subprocess.run([sys.executable, script, so, so, "--mode", "roundtrip", "--peer", "mutex"],
                        capture_output=True, text=True, timeout=120, cwd=support.ROOT,
                        env=support.subprocess_env())
    assert rt.returncode == 2 and "--peer runs a peer's throughput row" in rt.stderr, rt.stderr


@pytest.mark.skipif(not TWO_CPUS, reason="needs CPUs 0 and 1")
def test_ab_builds_sets_the_hot_tiers_and_the_pace():
    """ab_builds.py --hot N,N: pyqueue's rows for each hot tier (4 and 256 keep
    their names, any other is hotN), per message and in bursts, on both sides;
    --gap-ns paces the throughput runs (a 2,000 ns pace over 20,000 messages
    runs at no more than the pace allows); --cfg sets a field on both sides;
    bad values are refused before anything runs."""
    script = os.path.join(support.ROOT, "benchmarks", "peers", "ab_builds.py")
    import pyqueue.lab._lab as ext   # the twins and the drivers live in the lab's extension
    so = ext.__file__

    def ab(*args, check=True):
        return subprocess.run([sys.executable, script, so, so] + list(args),
                              capture_output=True, text=True, timeout=240, check=check,
                              cwd=support.ROOT, env=support.subprocess_env())

    out = ab("--mode", "throughput", "--rounds", "1", "--messages", "20000", "--hot", "4,16",
             "--gap-ns", "2000").stdout
    line = re.search(r"^round 0 probe .*$", out, re.M).group(0)
    got = {k: float(v) for k, v in re.findall(r"(\w+) ([\d.]+)(?=  |$)", line.split(": ", 1)[1])}
    want = {"%s_%s" % (side, row) for side in ("base", "new")
            for row in ("default", "default32", "hot16", "hot1632")}
    assert want <= set(got) and not any(k.endswith("stream") for k in got), line
    # One message per 2 us is at most 0.5 M msg/s, whatever the machine.
    assert all(0 < got[k] <= 0.5 * 1.05 for k in want), line
    # --cfg on both sides, --new-cfg over it on the new side: 64 KiB blocks.
    out = ab("--mode", "throughput", "--rounds", "1", "--messages", "20000", "--hot", "4",
             "--cfg", "block_size=65536", "--new-cfg", "flush_hot_kib=0").stdout
    assert re.search(r"new_default ([\d.]+)", out), out
    for args, why in ((("--cfg", "nope=1"), "has no field 'nope'"),
                      (("--cfg", "block_size=x"), "take FIELD=INTEGER"),
                      (("--hot", "0,4"), "--hot takes"), (("--hot", "4,4"), "--hot takes"),
                      (("--hot", "x"), "--hot takes"),
                      (("--mode", "episodes", "--gap-ns", "20"), "--gap-ns paces"),
                      (("--gap-ns", "-1"), "--gap-ns takes")):
        bad = ab("--rounds", "1", *args, check=False)
        assert bad.returncode == 2 and why in bad.stderr, (args, bad.stderr)
