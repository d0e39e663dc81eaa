"""Inline twins of the benchmark rows, and the rows themselves run once.

A row of ``python -m pyqueue bench`` that goes through the shared adapter
driver is only as good as that driver.  Its twin (csrc/adapters/pyq_twin.h)
runs the same work -- the same queue built by the adapter's own create(), the
same 32-byte message with its sequence number, the same check, pinning,
full-queue and empty-queue policy -- as a minimal two-thread loop compiled in
the queue's own translation unit with its calls inlined.  Run a row and its
twin in the same placement and compare::

    import pyqueue.lab.common.twins as twins
    t = twins.throughput("ck", 20_000_000)           # the twin, streaming
    a = twins.adapter_throughput("ck", 20_000_000)   # the bench's driver, same queue
    a["mmsg_s"] / t["mmsg_s"], t["regime"]["regime"], a["regime"]["regime"]
    twins.throughput("ck", 2_000_000, gap_ns=20)     # chasing, on purpose
    twins.roundtrip("pyqueue_each", 20_000)["p50_ns"]

Every run reports its throughput regime (pyqueue.lab.common.regime): the reader's
empty polls, the writer's full retries and, for twins, one record per
``window`` messages, so streaming and chasing figures are never mixed.
``gap_ns`` > 0 paces the writer (one message per gap on a schedule,
``pyq_twin_pace``; the adapter rows through ``pyq_bench_adapter_paced``, the same
pace in the driver's own
writer loop) to put the reader in the chasing regime; ``backlog`` > 0 builds the
streaming regime in episodes (the reader held while the writer gets that many
messages ahead, then both flat out until the reader finds the queue empty; the
adapter rows through ``pyq_bench_adapter_stream``, the twins through the same
protocol), and the run's ``stream`` says how fast both sides streamed.

The row names are the bench's; ``THROUGHPUT`` and ``ROUNDTRIP`` say which twin
and which queue each one uses.  A peer whose library is not built is reported
by ``available`` and refused by the runs with UnsupportedError.
"""
import os
from dataclasses import dataclass, field

import numpy as np

from . import regime as bench_regime
from .. import peers as _peers
from pyqueue import queue as _queue
from pyqueue import validate
from pyqueue.errors import UnsupportedError, VerificationError, check
from .._lab import ffi, lib

MSG = 32
BUDGET = 1 << 20          # the bench's memory budget per queue
YARDSTICK_SLOTS = 16384   # the bench's yardstick ring
RECORD_RING_BYTES = 1 << 16   # the flat-out floor: a 64 KiB ring of 32-byte records
WINDOW = 1 << 16          # messages per window record
BLOCK = 4096


@dataclass(frozen=True)
class Row:
    twin: str                  # the twin's name in its table
    library: str               # where the twin lives: "bench" (pyq_twin_bench) or an adapter
    burst: int = 0             # writer burst of the row
    queue: str = "peer"        # how the queue is configured: peer, tiers, stream, yardstick,
                               # record (RECORD_RING_BYTES, whatever the budget)
    kw: dict = field(default_factory=dict)  # pyqueue keyword arguments of the row
    adapter: str = None        # the adapter the bench row drives (None: no adapter row)


def _peer_rows():
    rows = {"mutex": Row("mutex", "mutex", adapter="mutex")}
    for p in _peers.PEERS:
        rows[p] = Row(p, p, adapter=p)
    return rows


# The bench's throughput rows (pyqueue/lab/bench.py), plus the bursts of every
# peer with a burst call and the twins without an adapter row.
THROUGHPUT = dict(
    pyqueue=Row("pyqueue", "bench", 0, "tiers", dict(publish="max"), "pyqueue"),
    pyqueue_stream=Row("pyqueue", "bench", 0, "stream", dict(publish="max"), "pyqueue"),
    pyqueue_burst32=Row("pyqueue", "bench", 32, "tiers", dict(publish="max"), "pyqueue"),
    pyqueue_stream_burst32=Row("pyqueue", "bench", 32, "stream", dict(publish="max"), "pyqueue"),
    pyqueue_direct=Row("pyqueue_direct", "bench", 0, "tiers", dict(publish="max"), "direct"),
    pyqueue_read_one=Row("pyqueue_read_one", "bench", 0, "tiers", dict(publish="max")),
    yardstick=Row("yardstick", "bench", 0, "yardstick", {}, "yardstick"),
    # The flat-out floor (SPEC §8): 32-byte records, no queue logic but two indices.
    record_ring=Row("record_ring", "record_ring", 0, "record", adapter="record_ring"),
    dpdk_burst32=Row("dpdk", "dpdk", 32, adapter="dpdk"),
    boost_burst32=Row("boost", "boost", 32, adapter="boost"),
    atomic_queue_optimist=Row("atomic_queue_optimist", "atomic_queue"),
    **_peer_rows())

# The bench's round-trip rows (pingpong is the floor itself: no twin).  The
# *_direct rows run pyqueue's own API in the bench; their twin is pyqueue's.
ROUNDTRIP = dict(
    ring_floor=Row("ring_floor", "ring_floor", adapter="ring_floor"),
    pyqueue_each=Row("pyqueue", "bench", 0, "tiers", dict(publish="each"), "pyqueue"),
    pyqueue_scan=Row("pyqueue", "bench", 0, "tiers", dict(publish="max", scan_current=True),
                     "pyqueue"),
    pyqueue_each_direct=Row("pyqueue", "bench", 0, "tiers", dict(publish="each"), "direct"),
    pyqueue_scan_direct=Row("pyqueue", "bench", 0, "tiers",
                            dict(publish="max", scan_current=True), "direct"),
    # The burst-tail study's setting beside the queue's default, in the same run.
    pyqueue_each_touch=Row("pyqueue", "bench", 0, "tiers",
                           dict(publish="each", touch_after_write=True), "pyqueue"),
    pyqueue_read_one_each=Row("pyqueue_read_one", "bench", 0, "tiers", dict(publish="each")),
    atomic_queue_optimist=Row("atomic_queue_optimist", "atomic_queue"),
    **_peer_rows())


# Bench rows that have no twin, and why (every other bench row has one).
NO_TWIN = {
    "py_batch": "no twin: Python-driven (write_batch from the interpreter), no C loop to inline",
    "pingpong": "no twin: it is already the minimal loop (two lines, no queue)",
}
# Rows whose adapter-side loop takes no pace, and why (none today: pyqueue_direct's
# loop in bench.c paces itself, pyq_bench_queue_paced).
UNPACED = {}


def bench_rows(table, peers_status=None):
    """The bench's rows of ``table`` (THROUGHPUT or ROUNDTRIP) in order: those with
    an adapter row, then the twin-only ones; a row whose peer is not built is left
    out (the bench lists the peer as not installed)."""
    st = peers_status or {}
    ok = lambda spec: spec.library not in _peers.PEERS or st.get(spec.library, "built") == "built"
    rows = [n for n, spec in table.items() if spec.adapter and ok(spec)]
    return rows + [n for n, spec in table.items() if not spec.adapter and ok(spec)]


def touch_of(spec, params):
    """The touch_after_write a row ran: True/False for a pyqueue queue, None for
    a queue that has no such setting (the peers, the yardsticks)."""
    if spec.queue not in ("tiers", "stream"):
        return None
    return bool(params.queue.touch_after_write)


# ---- finding twins -------------------------------------------------------------

def _table(library, peer_dir):
    """{twin name: const pyq_twin_t *} of one library; raises UnsupportedError."""
    if library == "bench":
        t = lib.pyq_twin_bench()
    else:
        if library in _peers.PEERS:
            _peers.get(library, peer_dir)   # "not installed: why" for a missing peer
        out = ffi.new("const pyq_twin_table_t **")
        folder = (peer_dir or _peers.peer_dir()).encode()
        rc = lib.pyq_twin_get(library.encode(), folder, out)
        if rc != 0:
            why = ffi.string(lib.pyq_twin_error()).decode(errors="replace")
            if rc == lib.PYQ_ENOTSUP:
                raise UnsupportedError("twins of %r: %s" % (library, why), rc)
            check(rc, "twins of %r: %s" % (library, why))
        t = out[0]
    return {ffi.string(t.twins[i].name).decode(): t.twins[i] for i in range(t.count)}


def _lookup(row, table, peer_dir):
    if not isinstance(row, str):
        raise TypeError("row must be a str, got %s" % type(row).__name__)
    if row not in table:
        raise ValueError("unknown row %r; rows: %s" % (row, ", ".join(sorted(table))))
    spec = table[row]
    twins = _table(spec.library, peer_dir)
    if spec.twin not in twins:
        raise UnsupportedError("%s has no twin %r (rebuild pyqueue)" % (spec.library, spec.twin),
                               lib.PYQ_ENOTSUP)
    return spec, twins[spec.twin]


def available(peer_dir=None):
    """Every twin -> "built", or why not ("not installed: ...", "build failed: ...")."""
    out = {}
    for spec in list(THROUGHPUT.values()) + list(ROUNDTRIP.values()):
        if spec.twin in out:
            continue
        try:
            names = _table(spec.library, peer_dir)
            out[spec.twin] = "built" if spec.twin in names else "not built: rebuild pyqueue"
        except UnsupportedError as e:
            out[spec.twin] = str(e)
    return out


def describe(row, peer_dir=None):
    """What a row's twin calls, and its flags, as a dict."""
    spec, tw = _lookup(row, dict(THROUGHPUT, **ROUNDTRIP), peer_dir)
    return {"row": row, "twin": spec.twin, "calls": ffi.string(tw.calls).decode(),
            "burst": bool(tw.flags & lib.PYQ_TWIN_HAS_BURST),
            "adapter_row": spec.adapter,
            "blocking": bool(tw.flags & lib.PYQ_TWIN_BLOCKING)}


# ---- the queue of a row ---------------------------------------------------------

def queue_kw(spec, budget_bytes, queue):
    """pyqueue keyword arguments of a row (the bench's tiers: 4 hot blocks and
    the rest of the budget spill; stream: the whole budget hot)."""
    kw = dict(spec.kw, **queue)
    block = kw.get("block_size", BLOCK)
    if spec.queue == "tiers":
        kw.setdefault("hot_blocks", 4)
        kw.setdefault("spill_blocks", max(0, budget_bytes // block - kw["hot_blocks"]))
    elif spec.queue == "stream":
        kw.setdefault("hot_blocks", max(1, budget_bytes // block))
        kw.setdefault("spill_blocks", 0)
    return kw


def _params(spec, budget_bytes, yardstick_slots, queue):
    """The pyq_adapter_params_t * of a row, as the bench builds its queue."""
    if spec.queue == "yardstick":
        return _peers.params(MSG, yardstick_slots * MSG, adapter="yardstick")
    if spec.queue == "record":
        return _peers.params(MSG, RECORD_RING_BYTES, adapter="record_ring")
    return _peers.params(MSG, budget_bytes, adapter=spec.adapter or "twin",
                         **queue_kw(spec, budget_bytes, queue))


def _ticks_per_ns():
    info = ffi.new("pyq_clock_info_t *")
    lib.pyq_clock_calibrate(0, 0, info)
    return info.ticks_per_ns if info.has_cycles else 0.0


def gap_ticks(gap_ns):
    """The writer's pace in cycle-counter ticks (ns where there is no counter)."""
    gap_ns = validate.number("gap_ns", gap_ns, 0, float("inf"), hi_open=True)
    tpn = _ticks_per_ns()
    return int(round(gap_ns * tpn)) if tpn else int(round(gap_ns))


class _Restore:
    """The round trips pin the calling thread; put its affinity back after."""

    def __enter__(self):
        self.old = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None

    def __exit__(self, *exc):
        if self.old is not None:
            os.sched_setaffinity(0, self.old)


# ---- results ----------------------------------------------------------------------

_WINDOW_DTYPE = np.dtype([("reader_ns", "u8"), ("empty_polls", "u8"),
                          ("writer_ns", "u8"), ("full_retries", "u8"),
                          ("empty_runs", "u8"), ("full_runs", "u8")])
_EPISODE_DTYPE = np.dtype([("go_ns", "u8"), ("go_written", "u8"), ("start_ns", "u8"),
                           ("start_read", "u8"), ("end_ns", "u8"), ("end_read", "u8"),
                           ("caught_up", "u4"), ("reserved", "u4")])
# Share of a row's capacity the writer gets ahead of a held reader: a large
# backlog (long episodes), safely short of full (pyqueue's capacity is an
# estimate, and its direct writer waits for room inside the queue).
BACKLOG_SHARE = 0.5
MAX_EPISODES = 1 << 14


class _Episodes:
    """Room for the episode records of one backlog run (none when backlog is 0),
    in the package's extension or another build's (its ``ffi``: ab_builds.py)."""

    def __init__(self, messages, backlog, ffi_=ffi):
        self.backlog = validate.integer("backlog", backlog, 0, 2**62)
        self.n = min(MAX_EPISODES, messages // self.backlog + 2) if self.backlog else 0
        self._ffi = ffi_
        self.c = ffi_.new("pyq_twin_episode_t[]", max(self.n, 1))

    def records(self, count):
        buf = self._ffi.buffer(self.c, max(self.n, 1) * _EPISODE_DTYPE.itemsize)
        return np.frombuffer(buf, _EPISODE_DTYPE)[:min(count, self.n)].copy()


def _stream(out, episodes, count, writer_end_ns):
    """Add the run's streaming figure (regime.classify_episodes) to its result."""
    if episodes.backlog:
        recs = episodes.records(count)
        out["backlog"] = episodes.backlog
        out["stream"] = bench_regime.classify_episodes(recs, out["messages"], writer_end_ns)
    return out


def _tput_result(kind, row, r, n, gap, window, records=None):
    if r.messages != n:
        raise VerificationError("%s %s delivered %d of %d messages" % (kind, row, r.messages, n),
                                lib.PYQ_EBADMSG)
    out = {"row": row, "kind": kind, "messages": int(r.messages),
           "elapsed_ns": int(r.elapsed_ns), "mmsg_s": r.messages / max(r.elapsed_ns, 1) * 1e3,
           "writer_ns": int(r.writer_ns), "full_retries": int(r.full_retries),
           "polls": int(r.polls), "empty_polls": int(r.empty_polls), "gap_ticks": gap,
           "empty_runs": int(r.empty_runs), "full_runs": int(r.full_runs),
           "regime": bench_regime.classify(int(r.messages), int(r.empty_polls),
                                           int(r.full_retries), int(r.empty_runs),
                                           int(r.full_runs)).as_dict()}
    if records is not None and len(records):
        out["windows"] = bench_regime.window_deltas(records, window, start_ns=int(r.start_ns))
        out["window_regime"] = bench_regime.classify_windows(out["windows"],
                                                             skip=1 if len(records) > 1 else 0)
    return out


def _rt_result(kind, row, samples_ns, touch):
    p50, p99, p999 = np.percentile(samples_ns, (50, 99, 99.9), method="inverted_cdf")
    return {"row": row, "kind": kind, "trips": len(samples_ns), "samples_ns": samples_ns,
            "p50_ns": float(p50), "p99_ns": float(p99), "p999_ns": float(p999),
            "touch_after_write": touch}


# ---- twins -------------------------------------------------------------------------

def throughput(row, messages=2_000_000, writer_cpu=0, reader_cpu=1, budget_bytes=BUDGET,
               yardstick_slots=YARDSTICK_SLOTS, gap_ns=0, window=WINDOW, peer_dir=None,
               backlog=0, **queue):
    """Run the twin of throughput row ``row`` once: ``messages`` 32-byte messages
    from a writer pinned to writer_cpu to a reader pinned to reader_cpu, every
    sequence number checked.  ``queue`` overrides the row's pyqueue settings.
    ``backlog`` > 0 runs streaming episodes of that backlog (not with gap_ns).
    Returns a dict: mmsg_s, the counts, the regime, per-window counts, pace and
    regime (``window`` messages each, 0 for none) and, with a backlog,
    ``stream`` (regime.classify_episodes)."""
    spec, tw = _lookup(row, THROUGHPUT, peer_dir)
    messages = validate.integer("messages", messages, 1, 2**62)
    eps = _Episodes(messages, backlog)
    window = validate.integer("window", window, 0, 2**40)
    if window & (window - 1):
        raise ValueError("window must be a power of two (or 0), got %d" % window)
    p = ffi.new("pyq_twin_params_t *")
    p.queue = _params(spec, budget_bytes, yardstick_slots, queue)[0]
    p.messages, p.burst, p.window = messages, spec.burst, window
    p.gap_ticks = gap_ticks(gap_ns)
    if eps.backlog and p.gap_ticks:
        raise ValueError("backlog builds the streaming regime: it takes no gap_ns")
    p.backlog, p.episodes, p.max_episodes = eps.backlog, eps.c, eps.n
    p.writer_cpu = validate.cpu("writer_cpu", writer_cpu)
    p.reader_cpu = validate.cpu("reader_cpu", reader_cpu)
    nwin = messages // window if window else 0
    win = ffi.new("pyq_twin_window_t[]", max(nwin, 1))
    r = ffi.new("pyq_twin_result_t *")
    rc = tw.throughput(p, win, nwin, r)
    if rc == lib.PYQ_EBADMSG:
        raise VerificationError("twin %s: message %d was lost, reordered or corrupted"
                                % (row, r.first_bad), rc)
    check(rc, "twin %s" % row)
    records = np.frombuffer(ffi.buffer(win, nwin * _WINDOW_DTYPE.itemsize),
                            _WINDOW_DTYPE)[:r.windows].copy()
    out = _tput_result("twin", row, r, messages, int(p.gap_ticks), window, records)
    out["twin"], out["capacity"] = spec.twin, int(r.capacity)
    out["touch_after_write"] = touch_of(spec, p.queue)
    return _stream(out, eps, r.episodes, int(r.start_ns + r.writer_ns))


def roundtrip(row, trips=20_000, cpu_a=0, cpu_b=1, budget_bytes=BUDGET, peer_dir=None, **queue):
    """Run the twin of round-trip row ``row``: one 32-byte message A -> B and back,
    ``trips`` timed trips after 1,000 untimed ones.  Returns a dict with the
    samples in ns and p50 / p99 / p99.9."""
    spec, tw = _lookup(row, ROUNDTRIP, peer_dir)
    trips = validate.integer("trips", trips, 1, 2**31 - 1)
    p = ffi.new("pyq_twin_params_t *")
    params = _params(spec, budget_bytes, YARDSTICK_SLOTS, queue)
    p.queue = params[0]
    p.round_trips = trips
    p.writer_cpu, p.reader_cpu = validate.cpu("cpu_a", cpu_a), validate.cpu("cpu_b", cpu_b)
    s = np.zeros(trips, np.uint64)
    r = ffi.new("pyq_twin_result_t *")
    with _Restore():
        rc = tw.roundtrip(p, ffi.from_buffer("uint64_t[]", s, require_writable=True), r)
    check(rc, "twin %s round trip" % row)
    ns = s.astype(float)
    if r.samples_in_ticks:
        ns = np.floor(ns / _ticks_per_ns() + 0.5)
    return _rt_result("twin", row, ns, touch_of(spec, params))


# ---- the bench's rows, run once beside their twins ---------------------------------

class _Handle:
    def __init__(self, a, p):
        self.a = a
        h = ffi.new("void **")
        check(a.create(p, h), "create")
        self.h = h[0]
        check(lib.pyq_bench_warm(a, self.h), "warm-up")

    def close(self):
        if self.h is not None:
            self.a.destroy(self.h)
            self.h = None


def adapter_throughput(row, messages=2_000_000, writer_cpu=0, reader_cpu=1,
                       budget_bytes=BUDGET, yardstick_slots=YARDSTICK_SLOTS, gap_ns=0,
                       peer_dir=None, backlog=0, **queue):
    """Run bench row ``row`` once through the bench's own driver, on the same
    queue as its twin (built fresh and warmed the same way), and report the same
    counts and regime (no windows: the driver keeps totals only).  ``gap_ns``
    paces the writer through ``pyq_bench_adapter_paced`` (``pyq_bench_queue_paced`` for
    ``pyqueue_direct``);
    ``backlog`` runs the twins' streaming episodes (``pyq_bench_adapter_stream``,
    ``pyq_bench_queue_stream``)."""
    spec, _ = _lookup(row, THROUGHPUT, peer_dir)
    messages = validate.integer("messages", messages, 1, 2**62)
    eps = _Episodes(messages, backlog)
    w, rd = validate.cpu("writer_cpu", writer_cpu), validate.cpu("reader_cpu", reader_cpu)
    params = _params(spec, budget_bytes, yardstick_slots, queue)
    gap = gap_ticks(gap_ns)
    r = ffi.new("pyq_bench_result_t *")
    if spec.adapter is None:
        raise ValueError("row %r has no adapter row (its twin stands alone)" % row)
    if eps.backlog and gap:
        raise ValueError("backlog builds the streaming regime: it takes no gap_ns")
    if spec.adapter == "direct":
        q = _queue.Queue(**queue_kw(spec, budget_bytes, queue))
        try:
            if eps.backlog:
                rc = lib.pyq_bench_queue_stream(q.c_handle, messages, MSG, eps.backlog, eps.c,
                                                eps.n, w, rd, r)
            else:
                rc = lib.pyq_bench_queue_paced(q.c_handle, messages, MSG, gap, w, rd, r)
            check(rc, row)
        finally:
            q.close()
    else:
        a = lib.pyq_bench_yardstick() if spec.adapter == "yardstick" else \
            _peers.get(spec.adapter, peer_dir)
        hq = _Handle(a, params)
        try:
            if eps.backlog:
                rc = lib.pyq_bench_adapter_stream(hq.a, hq.h, messages, spec.burst, eps.backlog,
                                                  eps.c, eps.n, w, rd, r)
            else:
                rc = lib.pyq_bench_adapter_paced(hq.a, hq.h, messages, spec.burst, gap, w, rd, r)
            check(rc, row)
        finally:
            hq.close()
    out = dict(_tput_result("bench", row, r, messages, gap, 0),
               touch_after_write=touch_of(spec, params))
    return _stream(out, eps, r.episodes, int(r.end_ns - r.elapsed_ns + r.writer_ns))


def stream_backlog(row, budget_bytes=BUDGET, yardstick_slots=YARDSTICK_SLOTS, peer_dir=None,
                   **queue):
    """The backlog of row ``row``'s streaming episodes: BACKLOG_SHARE of what its
    queue holds (the adapter's capacity(); pyqueue's rows ask the pyqueue
    adapter about the same configuration), and 0 for a twin that waits inside
    the library (its reader never finds the queue empty)."""
    spec, tw = _lookup(row, THROUGHPUT, peer_dir)
    if tw.flags & lib.PYQ_TWIN_BLOCKING:
        return 0
    if spec.queue == "yardstick":
        a = lib.pyq_bench_yardstick()
    else:
        a = _peers.get(spec.adapter if spec.adapter not in (None, "direct") else
                       ("pyqueue" if spec.queue in ("tiers", "stream") else spec.library),
                       peer_dir)
    h = ffi.new("void **")
    check(a.create(_params(spec, budget_bytes, yardstick_slots, queue), h), "create")
    try:               # no warm-up: capacity() is all it is built for
        cap = int(a.capacity(h[0]))
    finally:
        a.destroy(h[0])
    return max(1, int(cap * BACKLOG_SHARE))


def adapter_roundtrip(row, trips=20_000, cpu_a=0, cpu_b=1, budget_bytes=BUDGET, peer_dir=None,
                      **queue):
    """Run bench round-trip row ``row`` once through the bench's own driver."""
    spec, _ = _lookup(row, ROUNDTRIP, peer_dir)
    trips = validate.integer("trips", trips, 1, 2**31 - 1)
    a_cpu, b_cpu = validate.cpu("cpu_a", cpu_a), validate.cpu("cpu_b", cpu_b)
    if spec.adapter is None:
        raise ValueError("row %r has no adapter row (its twin stands alone)" % row)
    params = _params(spec, budget_bytes, YARDSTICK_SLOTS, queue)
    s = np.zeros(trips, np.uint64)
    buf = ffi.from_buffer("uint64_t[]", s, require_writable=True)
    with _Restore():
        if spec.adapter == "direct":
            kw = queue_kw(spec, budget_bytes, queue)
            ab, ba = _queue.Queue(**kw), _queue.Queue(**kw)
            try:
                check(lib.pyq_bench_queue_roundtrip(ab.c_handle, ba.c_handle, a_cpu, b_cpu,
                                                    trips, buf), row)
            finally:
                ab.close()
                ba.close()
        else:
            a = _peers.get(spec.adapter, peer_dir)
            ab = _Handle(a, params)
            ba = _Handle(a, params)
            try:
                check(lib.pyq_bench_adapter_roundtrip(a, ab.h, ba.h, a_cpu, b_cpu, trips, buf),
                      row)
            finally:
                ab.close()
                ba.close()
    return _rt_result("bench", row, s.astype(float), touch_of(spec, params))
