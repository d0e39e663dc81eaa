"""pyqueue against its peers (DESIGN §6.6): throughput and round trip of 32-byte
messages in short interleaved slices, each bracketed by a placement probe.

Throughput (writer pinned to one CPU, reader to the other, M msg/s), in three
passes: FLAT OUT first, the headline (SPEC §8: both sides start together on an
empty queue and run unpaced for at least ``flat_messages`` and ``flat_seconds``,
the figure messages / elapsed, never filtered, the regime each run fell into and
the share of the reader's polls that found the queue empty kept beside it; under
--fifo the kernel's real-time throttle may stop both threads for up to 50 ms a
second inside a run, every row alike), then the two that explain it: episodes (streaming on purpose)
and paced (chasing on purpose).
  pyqueue         pyqueue through the adapter driver (publish 'max'): the SAME
                  writer/reader loop as every peer (csrc/bench/bench_adapter.c); the
                  default tiers (4 hot 4 KiB blocks, the rest of the budget spill)
  pyqueue_stream  the same with the whole budget in the hot tier (256 blocks for
                  1 MiB, no spill): a block comes back to the writer only after the
                  rest of the pool has been used, long after the reader's cache let
                  go of its lines (see docs/BENCHMARKS.md)
  pyqueue_burst32 pyqueue with try_write_burst of 32 (write_batch), the
                  counterpart of dpdk_burst32
  pyqueue_stream_burst32  pyqueue_stream with try_write_burst of 32
  mutex ck dpdk rwq boost   the peers through that driver, try_write per message
  dpdk_burst32    DPDK rte_ring with try_write_burst of 32
  pyqueue_direct  the C writer on pyqueue's own API (pyq_writer_write, waits inside)
  py_batch        Python ``write_batch`` (64 Ki-row chunks) to a C reader thread
  yardstick       a per-message ring of 32-byte slots with cached indices (rigtorp)
  record_ring     YARDSTICK, the flat-out floor: a 64 KiB ring of 32-byte records,
                  each side's index cached and published once a call of up to 32
                  (csrc/adapters/record_ring.c)
Round trip (one 32-byte message there and back, p50/p99/p99.9 per slice, ns):
  pingpong        the raw two-line ping-pong floor (same timer as the queues)
  ring_floor      YARDSTICK, not a peer: a minimal ring of 64-byte slots (sequence
                  word + payload in one line, each message in a FRESH line; 256
                  slots = 16 KiB, pyqueue's hot tier) through the same adapter
                  driver as pyqueue_each: what a plain ring pays over the same-line
                  floor; pyqueue_each / ring_floor is what pyqueue adds (or saves:
                  a ring that takes its next line ahead can beat it)
  pyqueue_each    pyqueue, publish 'each';  pyqueue_scan: 'max' + flush, scan_current
  mutex ck dpdk rwq boost   the peers, through the same round-trip driver
  pyqueue_each_direct, pyqueue_scan_direct   the same two through pyqueue's own C
                  API (no adapter vtable): what a C program using pyqueue runs
Python API (M msg/s): the rows of bench_python.py (one thread, a block at a
  time, two threads; 32 B and 1 KiB) against queue.SimpleQueue, queue.Queue, deque
Every queue has the same memory budget (``budget_bytes``); peers whose library
is missing are listed as "not installed", never dropped.  Ratios come only from
rounds whose probes agree on the placement (common/placement.py).

    import pyqueue.lab as lab
    res = lab.bench(rounds=3, only="ck,pingpong")   # the defaults, but for these
    lab.bench(lab.BenchParams.quick())              # what --quick runs

Its parameters are one list, BenchParams, from which the CLI's flags, bench()'s
keywords, the output folder's params and their checks all come.
"""
import os
import time
from dataclasses import dataclass, field
from typing import Tuple

import numpy as np

from ..runtime import clock as _clock
from ..runtime import cpu as _cpu
from .. import peers as _peers
from pyqueue import queue as _queue
from pyqueue import validate
from pyqueue.errors import VerificationError, check
from .._lab import ffi, lib
from pyqueue.config import DEFAULTS as QUEUE_DEFAULTS, QueueConfig
from ..common import placement as pl
from ..common import regime as _regime
from ..common import status as _status
from ..common import twins
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..common.watchdog import DEFAULT_SLICE_LIMIT_S, SliceHung, SliceWatchdog
from ..common.frames import ToPandas
from . import bench_python
from ..reports.bench_python import format_ratios
from .rows import ROW_SET, Pinned, row_queue, seq_rows
from ..reports.bench import (EXTRA_RATIOS, PEERS, PER_MESSAGE_PEERS, TARGETS,  # noqa: F401
                             format_markdown, format_slices, format_summary, summarize,
                             unsettled)
from ..common.stats import nearest_rank

MSG = 32
# The chasing pass paces every writer to one message per DEFAULT_GAP_NS (on a
# schedule: pyq_twin_pace), below what the readers of the fast rows take; a row
# whose reader is slower than that streams anyway, and its slices say so (they
# are tagged with the regime measured, not the one intended).  The pace must stay
# well below a cache-line hand-off, or a slot ring's writer, which pays one per
# message to a chasing reader, sits at the pace itself and the regime's point --
# what a reader close behind costs the writer -- does not show (BENCHMARKS.md,
# "Moved from code comments (pyqueue/)").
DEFAULT_GAP_NS = 50
# The flat-out pass first: the headline regime (SPEC §8); the episodes
# ("throughput") and paced ("chasing") passes explain it.
FLAT_OUT = _regime.FLAT_OUT
KINDS = (FLAT_OUT, "throughput", "chasing", "roundtrip", "python")
# Groups of rows other modules add to every run (add_group): kind -> make(ctx).
_EXTRA_GROUPS = {}


@dataclass(frozen=True)
class RunContext:
    """What a group of rows gets to build itself from (add_group)."""
    writer_cpu: int
    reader_cpu: int
    rounds: int
    params: dict           # the run's params: BenchParams.to_json()
    base: QueueConfig      # the configuration every pyqueue row starts from
    peers: dict            # adapter -> "built" / "not installed: ..."
    peer_dir: str = None


def add_group(kind, make):
    """Add a group of rows to every bench run, beside the built-in ones (e.g.
    Python fast-path rows, cross-process rows).  ``make(ctx)`` gets a RunContext
    once per run and returns an object with ``contenders()`` (row names),
    ``warm_up()`` (rows to run once untimed), ``run(name) -> (value, extra dict)``
    and ``close()``; its slices are interleaved, probed and stored under ``kind``
    like the built-in groups' (slices.json), and summarised per placement in
    ``summary["groups"][kind]``.  Registering a kind again replaces it."""
    if not isinstance(kind, str) or not kind or kind in KINDS:
        raise ValueError("kind must be a new group name (not one of %s), got %r"
                         % (", ".join(KINDS), kind))
    if not callable(make):
        raise TypeError("make must be callable, got %r" % (make,))
    _EXTRA_GROUPS[kind] = make


# A streaming slice runs n messages (20 M by default) or, for a row slower than
# that, about this long at its last rate: under --fifo, shorter than the 950 ms
# the kernel lets a real-time thread run without a break (_Fifo).
STREAM_SECONDS = 0.5
# A flat-out run is sized from the row's last rate to last this many times the
# flat_seconds it must reach, so that a row that speeds up between slices still
# runs long enough (a run that comes out shorter is kept and marked "short":
# dropping it would drop the fast runs).
FLAT_MARGIN = 1.5
# Rest outside SCHED_FIFO after a stretch under it: this many times the share
# the kernel's real-time throttle requires.
REST_SHARE = 4.0
RATE_PROBE = 1 << 20      # messages of the untimed run that first sizes a row's slices
UNMEASURED = "unmeasured"  # the regime of a twin that waits inside the library
PY_BATCH_MAX = 4_000_000  # py_batch's rows are built in memory (32 B each) beforehand
PROBE_TRIPS = 2000
CHUNK = 65536
LOCAL_CHUNK = 1024


def _u64(arr):
    return ffi.from_buffer("uint64_t[]", arr, require_writable=True)


def _rt_throttle():
    """(runtime, period) in seconds of the kernel's real-time throttle
    (/proc/sys/kernel/sched_rt_*_us), or None where it is off or unreadable."""
    try:
        with open("/proc/sys/kernel/sched_rt_runtime_us") as f:
            runtime = int(f.read())
        with open("/proc/sys/kernel/sched_rt_period_us") as f:
            period = int(f.read())
    except (OSError, ValueError):
        return None
    return None if runtime < 0 or runtime >= period else (runtime / 1e6, period / 1e6)


class _Fifo:
    """SCHED_FIFO at ``priority`` for the calling thread while one slice runs --
    the C threads it starts inherit it, and it is round trips' side A -- then its
    old policy again, so the interpreter is never real-time between slices.
    priority 0: nothing changes.

    The kernel throttles real-time threads: once they have run ``runtime`` of a
    ``period`` (950 ms of 1 s by default) on a CPU, they stop until the period
    ends -- a 50 ms stall inside whichever run is going (it cost a paced
    2 M-message slice a quarter of its figure, one slice in four).  So every
    stretch under FIFO is followed by a rest outside it (``rest()`` between the
    runs of a slice, and before the next stretch) REST_SHARE times what the
    throttle allows for it (real time at most ~83 % of the time where the throttle
    allows 95 %); no run lasts as long as a whole ``runtime`` (STREAM_SECONDS)."""

    def __init__(self, priority):
        self.priority = priority
        self.throttle = _rt_throttle() if priority else None
        self.rest_until = 0.0
        self.t_in = None

    def _rest_after(self, seconds):
        if self.throttle:
            runtime, period = self.throttle
            self.rest_until = time.monotonic() + seconds * REST_SHARE * (period - runtime) / runtime

    def __enter__(self):
        if self.priority:
            wait = self.rest_until - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self.old = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
            _cpu.set_fifo_self(self.priority)
            self.t_in = time.monotonic()

    def __exit__(self, *exc):
        if self.priority:
            os.sched_setscheduler(0, self.old[0], os.sched_param(self.old[1]))
            self._rest_after(time.monotonic() - self.t_in)

    def call(self, fn, *args):
        with self:
            return fn(*args)

    def rest(self):
        """Between two runs of one slice: leave FIFO, rest, take it again."""
        if self.priority and self.t_in is not None:
            self.__exit__(None, None, None)
            self.__enter__()


def probe_one_way_ns(cpu_a, cpu_b, trips=PROBE_TRIPS):
    """Median one-way ns of a two-line ping-pong between cpu_a and cpu_b."""
    s = np.zeros(trips, np.uint64)
    with Pinned(-1):
        check(lib.pyq_bench_pingpong(cpu_a, cpu_b, trips, _u64(s)), "ping-pong probe")
    return float(np.median(s)) / 2.0


def _rates(reg):
    """Per-message evidence of a run's regime, as the slice records keep it."""
    return {k: reg[k] for k in ("empty_per_msg", "full_per_msg", "catchups_per_msg",
                                "waits_per_msg")}


def _turn(turns, row):
    """Whether this slice of ``row`` swaps its usual order (every other slice)."""
    turns[row] = turns.get(row, 0) + 1
    return turns[row] % 2 == 0


def _ratio(adapter, twin):
    return adapter / twin if twin else None


def _figure(run):
    """(M msg/s, regime) of one throughput run: with streaming episodes, the
    writer's median rate inside them when they streamed (regime.classify_episodes),
    else the run's own figure and the regime its episodes of waiting say."""
    st = run.get("stream")
    if st is not None:
        if st["regime"] == _regime.STREAMING:
            return st["mmsg_s"], _regime.STREAMING
        return run["mmsg_s"], st["regime"]
    return run["mmsg_s"], run["regime"]["regime"]


def _stream_extra(st):
    """What a slice keeps of a run's episodes."""
    return {k: st[k] for k in ("regime", "mmsg_s", "reader_mmsg_s", "pooled_mmsg_s",
                               "episodes", "counted", "messages", "spread")}


class _AdapterQueue:
    """One queue of an adapter, created once and reused by every slice (so no
    slice pays for first-touch page faults after the warm-up)."""

    def __init__(self, name, budget_bytes, peer_dir=None, config=None, **queue):
        self.a = _peers.get(name, peer_dir)
        self.p = _peers.params(MSG, budget_bytes, adapter=name, config=config, **queue)
        h = ffi.new("void **")
        check(self.a.create(self.p, h), "create %s" % name)
        self.h = h[0]

    def close(self):
        if self.h is not None:
            self.a.destroy(self.h)
            self.h = None


@dataclass
class BenchResult(ToPandas):
    params: dict                                     # BenchParams.to_json()
    peers: dict                                      # adapter -> "built" / "not installed: ..."
    slices: list = field(default_factory=list)       # Slice records, unfiltered
    summary: dict = field(default_factory=dict)
    status: str = _status.COMPLETE
    samples: dict = field(default_factory=dict)      # row -> {"roundtrip_ns": array}
    out: str = None                                  # the output folder, if one was written

    def table(self):
        return format_summary(self.summary, self.params) + "\n" + format_ratios(self.summary)

    def to_json(self, path):
        import json
        with open(path, "w") as f:
            json.dump({"params": self.params, "summary": self.summary,
                       "slices": [s.as_dict() for s in self.slices]}, f, indent=1, default=float)


class _Throughput:
    """The throughput rows (common/twins.py THROUGHPUT), each slice the bench's
    driver and then the row's inline twin on a queue of the same build, back to
    back inside one pair of probes.  ``gap_ns`` 0 streams on purpose (episodes of a
    backlog, twins.stream_backlog); > 0 paces both writers (chasing, on purpose).
    ``flat_seconds`` not None: the flat-out pass instead -- both sides start
    together on an empty queue and run unpaced for at least ``n`` messages and
    ``flat_seconds`` (sized from the row's last rate), the figure messages over
    elapsed time, whatever regime the run fell into.  Every slice carries the
    measured regime of both runs."""

    def __init__(self, n, wcpu, rcpu, yard_slots, budget_bytes, status, peer_dir, base,
                 gap_ns=0, fifo=None, flat_seconds=None):
        self.n, self.wcpu, self.rcpu, self.slots = n, wcpu, rcpu, yard_slots
        self.budget, self.peer_dir, self.base, self.gap = budget_bytes, peer_dir, base, gap_ns
        self.flat, self.flat_s = flat_seconds is not None, flat_seconds or 0.0
        self.fifo = fifo or _Fifo(0)
        self.backlog = {}          # row -> its streaming episodes' backlog (streaming pass)
        self.rows = twins.bench_rows(twins.THROUGHPUT, status)
        if gap_ns:
            self.rows = [r for r in self.rows if r not in twins.UNPACED]
        else:
            self.rows.insert(0, "py_batch")
        self.q = None
        self.rate = {}             # row -> M msg/s of its last run (sizes its next slice)
        self._blocks = {}          # row -> its twin waits inside the library
        self.turns = {}            # row -> slices run so far (who goes first: _turn)
        if not gap_ns:
            spec = twins.THROUGHPUT["pyqueue"]
            self.q = _queue.Queue(**twins.queue_kw(spec, budget_bytes, row_queue(spec, base)))
            # The rows are built in memory beforehand: py_batch's slice is capped
            # (flat out: the rows are reused, each chunk stamped before it is
            # written, as the C writers stamp theirs, and the count is sized).
            self.py_n = min(n, PY_BATCH_MAX)
            self.data = seq_rows(CHUNK if self.flat else self.py_n)

    def contenders(self):
        return list(self.rows)

    def warm_up(self):
        """The rows to run once untimed: only py_batch keeps its queue between slices
        (every other row builds its queue and warms it in C, twin and driver alike)."""
        return [r for r in self.rows if r == "py_batch"]

    def close(self):
        if self.q is not None:
            self.q.close()

    def messages(self, row):
        """Messages of a slice of ``row``.  Streaming: ``n``, or fewer when ``n``
        would take over STREAM_SECONDS at the row's last rate; its figure comes
        from the episodes inside (each starts from a backlog: none is start-up).
        Chasing: always ``n``.  Flat out: ``n``, or more when ``n`` would take
        less than flat_seconds (times FLAT_MARGIN) at the row's last rate."""
        if self.flat:
            want = int(self.rate.get(row, 0.0) * 1e6 * self.flat_s * FLAT_MARGIN)
            return max(self.n, -(-want // twins.WINDOW) * twins.WINDOW)
        if self.gap or row not in self.rate:
            return self.n
        want = int(self.rate[row] * 1e6 * STREAM_SECONDS)
        return min(self.n, max(twins.WINDOW * 4, -(-want // twins.WINDOW) * twins.WINDOW))

    def _kw(self, row, messages=None):
        spec = twins.THROUGHPUT[row]
        return dict(messages=messages or self.messages(row), writer_cpu=self.wcpu,
                    reader_cpu=self.rcpu,
                    budget_bytes=self.budget, yardstick_slots=self.slots, gap_ns=self.gap,
                    peer_dir=self.peer_dir, **row_queue(spec, self.base))

    def _flat_extra(self, run, prefix=""):
        """What a flat-out slice keeps beside a run's figure: the share of the
        reader's polls that found the queue empty, and whether the run came out
        shorter than flat_seconds."""
        return {prefix + "empty_poll_share": run["empty_polls"] / max(run["polls"], 1),
                prefix + "short": run["elapsed_ns"] < self.flat_s * 1e9}

    def run(self, name):
        if name == "py_batch":
            r = ffi.new("pyq_bench_result_t *")
            n = self.messages(name) if self.flat else self.py_n
            self._python_batch(r, n)
            if r.messages != n:
                raise VerificationError("py_batch delivered %d of %d messages"
                                        % (r.messages, n), lib.PYQ_EBADMSG)
            reg = _regime.classify(int(r.messages), int(r.empty_polls), int(r.full_retries),
                                   int(r.empty_runs), int(r.full_runs))
            value = r.messages / r.elapsed_ns * 1e3
            extra = {"elapsed_ns": int(r.elapsed_ns), "polls": int(r.polls), "messages": n,
                     "empty_polls": int(r.empty_polls), "regime": reg.regime,
                     "rates": _rates(reg.as_dict()),
                     "touch_after_write": bool(self.q.config.touch_after_write),
                     "twin": None, "no_twin": twins.NO_TWIN["py_batch"]}
            if self.flat:
                self.rate[name] = value
                extra.update(self._flat_extra({"empty_polls": r.empty_polls, "polls": r.polls,
                                               "elapsed_ns": r.elapsed_ns}))
            return value, extra
        spec = twins.THROUGHPUT[name]
        kw = self._kw(name)
        if self.flat and name not in self.rate and self.flat_s:
            # Untimed: the row's flat-out rate, so that its runs can be sized in seconds.
            self.rate[name] = twins.throughput(name, **dict(kw, messages=RATE_PROBE))["mmsg_s"]
            kw["messages"] = self.messages(name)
        if not self.gap and not self.flat:
            # The streaming pass builds the regime on purpose: episodes of a backlog
            # (twins.stream_backlog), driver and twin alike.
            if name not in self.backlog:
                self.backlog[name] = twins.stream_backlog(
                    name, **{k: kw[k] for k in ("budget_bytes", "yardstick_slots", "peer_dir")},
                    **row_queue(spec, self.base))
            kw["backlog"] = self.backlog[name]
        if not self.gap and not self.flat and name not in self.rate and self.n > RATE_PROBE:
            # Untimed: the row's rate, so that its slices can be sized in seconds.
            self.rate[name] = twins.throughput(name, **dict(kw, messages=RATE_PROBE))["mmsg_s"]
            self.fifo.rest()
            kw["messages"] = self.messages(name)
        n = kw["messages"]
        extra = {"gap_ns": self.gap, "messages": n}
        value = None
        # The driver and the twin take turns going first, slice by slice (twin_first
        # in the record): an effect of going first (the host's state after the
        # rest, the caches) then spreads both ways instead of biasing the ratio.
        first_twin = bool(spec.adapter) and _turn(self.turns, name)
        if first_twin:
            t = twins.throughput(name, **kw)
            self.fifo.rest()
        if spec.adapter:
            a = twins.adapter_throughput(name, **kw)
            value, reg = _figure(a)
            extra.update(elapsed_ns=a["elapsed_ns"], polls=a["polls"],
                         empty_polls=a["empty_polls"], regime=reg,
                         rates=_rates(a["regime"]), touch_after_write=a["touch_after_write"],
                         run_mmsg_s=a["mmsg_s"], twin_first=first_twin)
            if "stream" in a:
                extra.update(backlog=a["backlog"], stream=_stream_extra(a["stream"]))
            if a["writer_ns"]:
                # The writer's own span and its full-queue retries: which side set the
                # pace (the loops of bench.c keep no writer span).
                extra.update(writer_ns=a["writer_ns"], full_retries=a["full_retries"])
            if not first_twin:
                self.fifo.rest()
        if not first_twin:
            t = twins.throughput(name, **kw)
        rates = (t["mmsg_s"], a["mmsg_s"] if value is not None else t["mmsg_s"])
        # Streaming: the slower side under STREAM_SECONDS; flat out: the faster
        # one over flat_seconds.
        self.rate[name] = max(rates) if self.flat else min(rates)
        t_value, t_reg = _figure(t)
        if self.flat:
            extra.update(self._flat_extra(t, "twin_"), twin_elapsed_ns=t["elapsed_ns"],
                         flat_seconds=self.flat_s)
            if value is not None:
                extra.update(self._flat_extra(a))
        # The twin's regime from the same evidence as the driver's: its episodes in
        # the streaming pass, else its totals of catch-ups and waits.  (Its windows,
        # kept as twin_window_share, split a slice whose threads lost their CPU now
        # and then into "streaming" and "chasing" windows on a loaded host, so a
        # share-of-windows rule would file it as mixed beside a chasing driver.)
        if self._blocking(name):
            # It waits inside the library's own push/pop: no empty poll or full
            # retry to count, so its regime is not measured (not "streaming").
            t_reg = UNMEASURED
        extra.update(twin=t["twin"], twin_mmsg_s=t_value, twin_regime=t_reg,
                     twin_empty_polls=t["empty_polls"], twin_full_retries=t["full_retries"],
                     twin_rates=_rates(t["regime"]), twin_run_mmsg_s=t["mmsg_s"],
                     twin_window_share=t.get("window_regime", {}).get("share"),
                     twin_windows=[w.get("mmsg_s") for w in t.get("windows", [])])
        if "stream" in t:
            extra["twin_stream"] = _stream_extra(t["stream"])
        if value is None:          # a twin-only row: the twin is the figure
            value = t_value
            extra.update(regime=t_reg, touch_after_write=t["touch_after_write"],
                         twin_only=True)
        else:
            extra["ratio"] = _ratio(value, t_value)
        return value, extra

    def _blocking(self, row):
        if row not in self._blocks:
            self._blocks[row] = twins.describe(row, self.peer_dir)["blocking"]
        return self._blocks[row]

    def _python_batch(self, r, n):
        h = ffi.new("pyq_bench_reader_t **")
        check(lib.pyq_bench_reader_start(self.q.c_handle, n, MSG, self.rcpu, h),
              "C reader for write_batch")
        try:
            with Pinned(self.wcpu):
                t0 = time.monotonic_ns()
                if self.flat:
                    # One chunk of rows reused: each chunk's sequence numbers stamped
                    # before it is written (inside the timed part, as the C writers'
                    # stamps are).
                    seq = self.data[:, :8].view(np.uint64)[:, 0]
                    step = np.arange(CHUNK, dtype=np.uint64)
                    for i in range(0, n, CHUNK):
                        k = min(CHUNK, n - i)
                        np.add(step[:k], np.uint64(i), out=seq[:k])
                        self.q.writer.write_batch(self.data[:k])
                else:
                    for i in range(0, n, CHUNK):
                        self.q.writer.write_batch(self.data[i:i + CHUNK])
                self.q.writer.flush()
        except BaseException:
            lib.pyq_bench_reader_stop(h[0])
            lib.pyq_bench_reader_join(h[0], r)
            raise
        check(lib.pyq_bench_reader_join(h[0], r), "C reader for write_batch")
        # Same span as the C writer's figure: writer start to last delivery.
        r.elapsed_ns = r.end_ns - t0


class _RoundTrip:
    """The round-trip rows (common/twins.py ROUNDTRIP) and the ping-pong floor;
    each slice the bench's driver then the row's twin, inside one pair of probes."""

    def __init__(self, trips, cpu_a, cpu_b, budget_bytes, status, peer_dir, base):
        self.trips, self.a, self.b = trips, cpu_a, cpu_b
        self.budget, self.peer_dir, self.base = budget_bytes, peer_dir, base
        self.samples = {}
        self.turns = {}            # row -> slices run so far (who goes first: _turn)
        self.rows = ["pingpong"] + twins.bench_rows(twins.ROUNDTRIP, status)

    def contenders(self):
        return list(self.rows)

    def warm_up(self):
        return []        # every queue is built and warmed in C for its slice

    def ring_floor_slots(self):
        ab = _AdapterQueue("ring_floor", self.budget, self.peer_dir)
        try:
            return int(ab.a.capacity(ab.h))
        finally:
            ab.close()

    def close(self):
        pass

    def _pingpong(self):
        s = np.zeros(self.trips, np.uint64)
        with Pinned(-1):
            check(lib.pyq_bench_pingpong(self.a, self.b, self.trips, _u64(s)), "ping-pong")
        return s

    def run(self, name):
        if name == "pingpong":
            s = self._pingpong()
            self.samples.setdefault(name, []).append(s)
            p50, p99, p999 = nearest_rank(s, (50, 99, 99.9))
            return float(p50), {"p99_ns": float(p99), "p999_ns": float(p999), "twin": None,
                                "no_twin": twins.NO_TWIN["pingpong"],
                                "touch_after_write": None}
        spec = twins.ROUNDTRIP[name]
        kw = dict(trips=self.trips, cpu_a=self.a, cpu_b=self.b, budget_bytes=self.budget,
                  peer_dir=self.peer_dir, **row_queue(spec, self.base))
        # The floor again inside this slice, right before the row: a ratio to the
        # floor of another slice mixes in whatever the host did in between.
        floor = float(nearest_rank(self._pingpong(), (50,))[0])
        # Twin and driver take turns going first (as the throughput rows).
        adapter_first = bool(spec.adapter) and _turn(self.turns, name)
        if adapter_first:
            a = twins.adapter_roundtrip(name, **kw)
        t = twins.roundtrip(name, **kw)
        extra = {"twin": spec.twin, "twin_p50_ns": t["p50_ns"], "twin_p99_ns": t["p99_ns"],
                 "twin_p999_ns": t["p999_ns"], "touch_after_write": t["touch_after_write"],
                 "floor_p50_ns": floor}
        if not spec.adapter:
            return t["p50_ns"], dict(extra, p99_ns=t["p99_ns"], p999_ns=t["p999_ns"],
                                     twin_only=True)
        if not adapter_first:
            a = twins.adapter_roundtrip(name, **kw)
        self.samples.setdefault(name, []).append(a["samples_ns"])
        extra.update(p99_ns=a["p99_ns"], p999_ns=a["p999_ns"], twin_first=not adapter_first,
                     ratio=_ratio(a["p50_ns"], t["p50_ns"]))
        return a["p50_ns"], extra


def _settle(groups, slices, settle, settle_rounds, rounds, session, run_round):
    """bench's settle pass: the rows whose twin verdict is open after the rounds
    (reports.bench.unsettled) run ``settle_rounds`` more rounds, numbered on from
    ``rounds``; ``settle`` records which rows and how many rounds ran."""
    settle["rows"] = unsettled(slices)
    by_kind = {}
    for kind, row in settle["rows"]:
        by_kind.setdefault(kind, set()).add(row)
    todo = [(kind, _Some(g, by_kind[kind])) for kind, g in groups if kind in by_kind]
    todo = [(kind, g) for kind, g in todo if g.contenders()]
    if not todo:
        return
    session.bar.extend(settle_rounds * sum(len(g.contenders()) for _, g in todo))
    for i in range(settle_rounds):
        for kind, g in todo:
            if len(run_round(kind, g, rounds + i)) < len(g.contenders()):
                return
        settle["rounds"] = i + 1


class _Some:
    """One group of rows, only the chosen ones run (bench's ``only``)."""

    def __init__(self, group, names):
        self.group, self.names = group, names

    def contenders(self):
        return [n for n in self.group.contenders() if n in self.names]

    def warm_up(self):
        return [n for n in self.group.warm_up() if n in self.names]

    def run(self, name):
        return self.group.run(name)

    def close(self):
        self.group.close()


def _only(groups, only):
    """The groups reduced to the rows named in ``only`` (a string "a,b" or a
    collection of names); groups left with no row are dropped."""
    names = set(only.split(",") if isinstance(only, str) else only)
    names.discard("")
    known = {n for _, g in groups for n in g.contenders()}
    if not names or names - known:
        raise ValueError("only=%r: unknown row(s) %s; the rows are: %s"
                         % (only, ", ".join(sorted(names - known)) or "(none given)",
                            ", ".join(sorted(known))))
    kept = [(kind, _Some(g, names)) for kind, g in groups]
    return [(kind, g) for kind, g in kept if g.contenders()]


# What a run derives or measures beside its parameters, kept in its summary
# (in its params before BenchParams: results.load() moves them over).
RUN_KEYS = ("message_size", "timer", "timer_step_ns", "ring_floor_slots", "unpaced", "no_twin")


def _no_settle(settle_rounds):
    """--quick's settle pass: none unless one was asked for (a smoke run's two
    slices a row settle nothing)."""
    return 0 if settle_rounds is None else settle_rounds


@dataclass(frozen=True)
class BenchParams(Params):
    """bench's parameters: one list for the CLI's flags, bench()'s keywords, the
    output folder's params and their checks (common/params.py)."""

    EXPERIMENT, COMMAND, FUNCTION = "bench", "bench", "bench"
    ALIASES = {"config": "queue"}

    # --quick: 3 rounds, the fewest per-round ratios compare judges a change from.
    rounds: int = param(10, "rounds of interleaved slices, every row once a round", lo=1,
                        quick=3)
    messages: int = param(20_000_000, "messages per streaming throughput slice (fewer for a row "
                          "that would take over %g s at its last rate)" % STREAM_SECONDS, lo=1,
                          quick=100_000)
    chasing_messages: int = param(2_000_000, "messages per chasing throughput slice", lo=1,
                                  quick=100_000)
    flat_messages: int = param(20_000_000, "at least this many messages per flat-out run "
                               "(both sides start together on an empty queue, unpaced; the "
                               "figure is messages / elapsed, never filtered)", lo=1,
                               quick=200_000)
    flat_seconds: float = param(1.0, "and at least this long: a flat-out run is sized from "
                                "the row's last rate (an untimed run first); a run that came "
                                "out shorter is kept and marked short (0: messages only)",
                                lo=0.0, quick=0.0)
    gap_ns: float = param(float(DEFAULT_GAP_NS), "the chasing pass paces every writer to one "
                          "message per GAP_NS", lo=0.0, lo_open=True)
    trips: int = param(20_000, "round trips per latency slice", lo=1, quick=2_000)
    py_messages: int = param(200_000, "messages per Python-API slice", lo=1, quick=10_000)
    budget_bytes: int = param(1 << 20, lambda: "memory budget of every queue (pyqueue: %d hot "
                              "%d-byte blocks + spill)" % (QUEUE_DEFAULTS["hot_blocks"],
                                                          QUEUE_DEFAULTS["block_size"]), lo=MSG)
    yardstick_slots: int = param(twins.YARDSTICK_SLOTS, "slots of %d bytes in the yardstick "
                                 "ring, a power of two (16384: 512 KiB, half the budget; 32768 "
                                 "gives it the 1 MiB every queue has)" % MSG, lo=2, hi=1 << 26)
    split_ns: float = param(pl.DEFAULT_SPLIT_NS, "one-way probe threshold between 'near' and "
                            "'far' placements", lo=0.0, lo_open=True)
    only: Tuple[str, ...] = param(None, "run only these rows, comma-separated (e.g. "
                                  "ck,rwq,pingpong: each in every group that has it); the "
                                  "targets of the others read 'not measured' (default: every "
                                  "row)", kind="names", none_ok=True, metavar="ROWS")
    settle_rounds: int = param(None, "after the rounds, the rows whose twin verdict the slices "
                               "left open ('not settled') run N more rounds, then the verdict "
                               "is final (default: as many as --rounds, none with --quick; 0: "
                               "no settle pass)", kind="int", lo=0, none_ok=True,
                               quick=_no_settle)
    slice_limit_s: float = param(float(DEFAULT_SLICE_LIMIT_S), "a slice still running after "
                                 "this many seconds has hung: its name and the Python stacks "
                                 "are printed, the partial output written, and the process "
                                 "exits with code 3 (0: no limit)", lo=0.0, none_ok=True,
                                 cli_aliases=("--slice-limit",), metavar="S")
    fifo_priority: int = param(0, "run every slice SCHED_FIFO at this priority, so that other "
                               "jobs cannot preempt it on a shared host (0: SCHED_OTHER; needs "
                               "root or CAP_SYS_NICE)", lo=0, hi=validate.FIFO_MAX,
                               cli_aliases=("--fifo",), metavar="PRIO")
    peer_dir: str = param(None, "folder of the peer libraries (default: the package's); a peer "
                          "not there is listed as not installed", kind="str", none_ok=True,
                          metavar="DIR")
    writer_cpu: int = param(WRITER_CPU, "CPU of the writer (and of the Python rows' thread)",
                            kind="cpu", lo=0, group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the reader", kind="cpu", lo=0, group="CPUs")
    queue: QueueConfig = param(QueueConfig(), "every pyqueue row's queue but its tiers and "
                               "publish policy, which the row sets")

    def check(self):
        if self.yardstick_slots & (self.yardstick_slots - 1):
            raise ValueError("yardstick_slots=%d: not a power of two" % self.yardstick_slots)
        for name in ROW_SET:       # a value no row would use: refused, not ignored
            if getattr(self.queue, name) != QUEUE_DEFAULTS[name]:
                raise ValueError("%s: every pyqueue row sets its own %s; leave it at %r"
                                 % (name, "publish policy" if name == "publish" else
                                    "tiers from budget_bytes", QUEUE_DEFAULTS[name]))


def bench(params=None, *, out=None, overwrite=False, progress=True, **kwargs):
    """Run the interleaved benchmark; returns a BenchResult (see module doc).

    ``params``: a BenchParams (None: the defaults), and/or its fields as keywords
    (the queue's own fields too: ``touch_after_write=True``); ``BenchParams.quick()``
    is what --quick runs.  The fields' help says what each does; in short:

    peer_dir: where to look for peer libraries (default: the package's); a peer
    that is not there is reported as not installed.  queue: the QueueConfig every
    pyqueue row starts from (default: the queue defaults); each row sets its
    publish policy and splits budget_bytes into its tiers.
    messages: per streaming slice (long enough to leave start-up);
    chasing_messages and gap_ns: the chasing pass, every writer paced to one
    message per gap_ns so that a reader faster than that chases it.
    fifo_priority > 0: every slice (its probes, its C threads, the round trips'
    calling thread) runs SCHED_FIFO at that priority, so that other jobs on a
    shared host cannot preempt it; PermissionError at once when the OS refuses.
    out: the output folder; a non-empty one is refused before anything runs unless
    overwrite=True (and then only a pyqueue output folder is replaced).
    only: row names to run (in every group that has them, e.g. "ck" runs its
    throughput, chasing and round-trip rows); None runs every row.  An unknown
    name is a ValueError before anything runs; the targets of rows left out read
    "not measured".
    slice_limit_s: a slice (or probe) still running after this many seconds has
    hung: its name and the Python stacks go to stderr, the partial output is
    written (status "failed: slice ... ran past the slice limit"), and the process
    exits with code 3 (common/watchdog.py); 0 or None: no limit.
    settle_rounds: after the rounds, every row whose twin verdict the slices
    left open (a ratio median outside the band whose 95 % interval reaches back
    inside, or from too few slices for one: reports.bench.unsettled) runs this
    many more rounds, alone with its twin as before -- a second stage fixed in
    advance, decided once, not a stop-when-it-looks-good loop; its slices carry
    extra["settle"], count in the twin verdicts and stay out of the medians and
    targets (summary["settle"] says which rows ran it).  None: as many as
    ``rounds``; 0: no settle pass.

    ``result.params`` is ``BenchParams.to_json()``; what the run derives or
    measures besides (the timer and its step, ring_floor's slots, the rows without
    a twin or a pace) is in ``result.summary``."""
    p = BenchParams.of(params, **kwargs)
    writer_cpu, reader_cpu, rounds = p.writer_cpu, p.reader_cpu, p.rounds
    budget_bytes, peer_dir, split_ns = p.budget_bytes, p.peer_dir, p.split_ns
    settle_rounds = rounds if p.settle_rounds is None else p.settle_rounds
    fifo = _Fifo(p.fifo_priority)
    with fifo:   # refused here, before anything runs, when the OS does not allow it
        pass
    base = p.queue
    params = p.to_json()
    # What the run measures or derives beside its parameters: the summary's.
    run_info = dict(message_size=MSG, timer=ffi.string(lib.pyq_clock_name(
        lib.PYQ_CLOCK_CYCLES)).decode(), timer_step_ns=_clock.step_ns("cycles"),
        unpaced=dict(twins.UNPACED), no_twin=dict(twins.NO_TWIN))
    peers = _peers.available(peer_dir)
    res = BenchResult(params, peers)
    fo = tp = ch = rt = py = None
    extra = []           # groups added by other modules (add_group)
    slices = {}
    settle = {"rows": [], "rounds": 0}   # the settle pass, once decided
    watchdog = SliceWatchdog(p.slice_limit_s or 0,
                             on_hang=lambda why: session.finish(SliceHung(why)))
    probe = lambda: watchdog.run("probe (%s)" % where[0], fifo.call, probe_one_way_ns,
                                 writer_cpu, reader_cpu)
    where = ["before the first slice"]   # what the probe brackets, for the watchdog

    def watched(kind, g, r):
        def run(name):
            where[0] = "%s %s, round %d" % (kind, name, r + 1)
            return watchdog.run(where[0], fifo.call, g.run, name)
        return run

    def keep_slice(kind, s, settling=False):
        # Each slice is kept as soon as it ends, so that a later one that hangs
        # (the watchdog writes the output then) leaves it in.
        s.extra["kind"] = kind
        if settling:
            s.extra["settle"] = True
        slices.setdefault(kind, []).append(s)
        session.advance(1, "%s %.4g" % (s.contender, s.value))

    def record(folder, status, final):
        res.slices = [s for kind in KINDS + tuple(_EXTRA_GROUPS)
                      for s in slices.get(kind, [])]
        res.summary = summarize(slices, peers, trips=p.trips)
        res.summary["groups"] = {
            kind: {place: {k: {"median": v, "slices": n} for k, (v, n) in d.items()}
                   for place, d in pl.medians_by_placement(slices.get(kind, [])).items()}
            for kind in _EXTRA_GROUPS}
        res.summary["rounds_done"] = session.done
        res.summary["settle"] = {"rows": [list(kr) for kr in settle["rows"]],
                                 "rounds_done": settle["rounds"], "rounds": settle_rounds}
        res.summary["interrupted"] = bool(session.stop.requested)
        res.summary.update(run_info)
        res.status = status
        res.samples = {name: {"roundtrip_ns": np.concatenate(arrs)}
                       for name, arrs in rt.samples.items()}
        if folder is not None:
            folder.save_json("slices.json", [s.as_dict() for s in res.slices])
            for name, arrays in res.samples.items():
                folder.save_samples(name, **arrays)
            folder.save_text("table.txt", res.table())
            folder.save_text("slices.txt", format_slices(res.slices))
            folder.save_text("table.md", format_markdown(res.summary, params))
            res.out = str(folder.path)
        return res.summary

    try:
        # Under --fifo a flat-out run of a second or more meets the kernel's
        # real-time throttle inside it: both threads stop for up to the period's
        # rest (50 ms a second by default), every row alike -- a few per cent of
        # every run, where SCHED_OTHER on a shared host loses to the other jobs
        # whatever they take.  The rest after each run (_Fifo) restores the budget.
        fo = _Throughput(p.flat_messages, writer_cpu, reader_cpu, p.yardstick_slots,
                         budget_bytes, peers, peer_dir, base, flat_seconds=p.flat_seconds,
                         fifo=fifo)
        tp = _Throughput(p.messages, writer_cpu, reader_cpu, p.yardstick_slots, budget_bytes,
                         peers, peer_dir, base, fifo=fifo)
        ch = _Throughput(p.chasing_messages, writer_cpu, reader_cpu, p.yardstick_slots,
                         budget_bytes, peers, peer_dir, base, gap_ns=p.gap_ns, fifo=fifo)
        rt = _RoundTrip(p.trips, writer_cpu, reader_cpu, budget_bytes, peers, peer_dir, base)
        run_info["ring_floor_slots"] = rt.ring_floor_slots()
        py = bench_python.PythonAPI(p.py_messages, writer_cpu, budget_bytes, base, reader_cpu)
        groups = [(FLAT_OUT, fo), ("throughput", tp), ("chasing", ch), ("roundtrip", rt),
                  ("python", py)]
        ctx = RunContext(writer_cpu, reader_cpu, rounds, params, base, peers, peer_dir)
        for kind, make in _EXTRA_GROUPS.items():
            groups.append((kind, make(ctx)))
            extra.append(groups[-1][1])
        if p.only is not None:
            groups = _only(groups, p.only)
        # No checkpoint between rounds: the folder is written once, after the last slice.
        with Session("bench", params, rounds, "rounds", record=record, out=out or None,
                     overwrite=overwrite, progress=progress,
                     bar_total=rounds * sum(len(g.contenders()) for _, g in groups),
                     bar_unit="slices",
                     pinning={"writer_cpu": writer_cpu, "reader_cpu": reader_cpu}) as session, \
                watchdog:
            for kind, g in groups:       # untimed warm-up: fault in every kept queue's pages
                for name in g.warm_up():
                    watchdog.run("%s %s, warm-up" % (kind, name), g.run, name)
            rt.samples.clear()
            for r in range(rounds):      # one round of every group, then the next round
                ran = 0
                for kind, g in groups:
                    got = pl.interleave(g.contenders(), 1, watched(kind, g, r),
                                        probe, split_ns,
                                        should_stop=lambda: session.stopping,
                                        on_slice=lambda s, kind=kind: keep_slice(kind, s),
                                        first_round=r)
                    ran += len(got) == len(g.contenders())
                if ran < len(groups):
                    break
                session.done = r + 1
                if session.stopping:
                    break
            if session.done == rounds and settle_rounds and not session.stopping:
                _settle(groups, slices, settle, settle_rounds, rounds, session,
                        lambda kind, g, r: pl.interleave(
                            g.contenders(), 1, watched("settle " + kind, g, r), probe,
                            split_ns, should_stop=lambda: session.stopping,
                            on_slice=lambda s: keep_slice(kind, s, settling=True), first_round=r))
    finally:
        for g in [fo, tp, ch, rt, py] + extra:
            if g is not None:
                g.close()
    return res
