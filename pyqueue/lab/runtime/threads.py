"""Producer and consumer threads that run a queue entirely in C (DESIGN §4.1, §4.7).

The loops are C pthreads; Python only starts them, waits (in short slices, so
Ctrl-C is delivered), stops and joins them.  While one runs it owns its side of
the queue (the Writer or Reader lock), so ``Queue.close()`` wakes it and waits
for it instead of unmapping memory under it.  A verification failure in C comes
back as ``VerificationError`` from ``join()``::

    with pq.Queue() as q:
        c = ConsumerThread(q, count=10_000, work="loop64", idle="backoff").start()
        p = ProducerThread(q, count=10_000, size=32, burst_bytes=1 << 20).start()
        p.join(); r = c.join()          # ThreadResult; raises on a C-side error

Sample arrays (``dequeue_ns``, ``scheduled_ns``, ``offer_ns``, ``burst_cpu``) are
1-D C-contiguous writable ``numpy.uint64`` arrays that Python allocates and C
fills in place; each holds CLOCK_MONOTONIC ns (``burst_cpu``: CPU ids).
"""
import threading
import time
from dataclasses import dataclass, field

from . import counters as _counters
from . import cpu as _cpu
from pyqueue import cstruct, validate
from pyqueue.errors import QueueError, check, error_for, strerror
from .._lab import ffi, lib
from pyqueue.cpulist import format_cpulist
from .samples import sample_buffer

# wait() sleeps in slices this long so KeyboardInterrupt reaches the main thread.
_WAIT_SLICE_S = 0.1
# After a stop request, how long join-on-interrupt waits for the C loop to end.
_STOP_GRACE_S = 5.0

IDLE = {"spin": lib.PYQ_IDLE_SPIN, "relax": lib.PYQ_IDLE_RELAX,
        "yield": lib.PYQ_IDLE_YIELD, "backoff": lib.PYQ_IDLE_BACKOFF}
WORK = {"none": lib.PYQ_WORK_NONE, "loop64": lib.PYQ_WORK_LOOP64, "spin_ns": lib.PYQ_WORK_SPIN_NS}
FAULTS = {"corrupt": lib.PYQ_FAULT_CORRUPT, "skip": lib.PYQ_FAULT_SKIP}
_END = {lib.PYQ_END_RUNNING: "running", lib.PYQ_END_DONE: "done", lib.PYQ_END_STOPPED: "stopped",
        lib.PYQ_END_CLOSED: "closed", lib.PYQ_END_ERROR: "error"}
_STEP = {lib.PYQ_STEP_NONE: "", lib.PYQ_STEP_CREATE: "create", lib.PYQ_STEP_PIN: "pin",
         lib.PYQ_STEP_SCHED: "sched", lib.PYQ_STEP_RUN: "run"}
_POLICY = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE"}
_U64 = 2**64 - 1

# The idle strategy's tunables: every field of pyq_idle_config_t but the strategy,
# each a ConsumerThread keyword idle_<field>; and what ThreadResult.idle counts.
IDLE_FIELDS = tuple(f for f in cstruct.fields("pyq_idle_config_t", ffi) if f != "strategy")
IDLE_STATS = cstruct.fields("pyq_idle_stats_t", ffi)
# What pyq_idle_init() requires beyond the C type's range (C checks it again):
# a str bound is that other field's value, None the type's own bound.
_IDLE_BOUNDS = {"yield_every": (1, None), "sleep_min_ns": (1, 10**9),
                "sleep_cap_ns": ("sleep_min_ns", 10**9)}


def _size_param(name, size, max_message):
    """int -> (n, n); (lo, hi) -> (lo, hi)."""
    if isinstance(size, tuple) and len(size) == 2:
        lo = validate.integer(name + "[0]", size[0], 0, max_message)
        hi = validate.integer(name + "[1]", size[1], lo, max_message)
        return lo, hi
    if isinstance(size, tuple):
        raise ValueError("%s must be an int or a (lo, hi) tuple, got %r" % (name, size))
    n = validate.integer(name, size, 0, max_message)
    return n, n


def idle_config(cfg, idle, overrides, what="ConsumerThread"):
    """Fill ``cfg``, a ``pyq_idle_config_t *``, and return it: pyq_idle_config_init()'s
    defaults for strategy ``idle`` (a name of IDLE), then the idle_<field>
    keywords in ``overrides``, each checked.  Any thread that runs an idle
    strategy in C takes its tunables this way (``what`` names it in a
    TypeError for a keyword that is not one of them)."""
    lib.pyq_idle_config_init(cfg, IDLE[validate.choice("idle", idle, tuple(IDLE))])
    unknown = sorted(set(overrides) - {"idle_" + f for f in IDLE_FIELDS})
    if unknown:
        raise TypeError("unknown %s parameter%s %s; the idle ones are %s"
                        % (what, "s" if len(unknown) > 1 else "", ", ".join(unknown),
                           ", ".join("idle_" + f for f in IDLE_FIELDS)))
    for f in IDLE_FIELDS:
        type_lo, type_hi = cstruct.int_range("pyq_idle_config_t", f, ffi)
        lo, hi = _IDLE_BOUNDS.get(f, (type_lo, type_hi))
        lo = getattr(cfg, lo) if isinstance(lo, str) else lo  # a field set before this one
        value = overrides.get("idle_" + f, getattr(cfg, f))
        setattr(cfg, f, validate.integer("idle_" + f, value, lo, type_hi if hi is None else hi))
    return cfg


@dataclass
class ThreadResult:
    """What a C thread did (pyq_thread_result_t in Python terms)."""
    kind: str                   # "consumer" or "producer"
    end: str                    # "done", "stopped", "closed" or "error"
    messages: int
    bytes: int
    error: int                  # 0 or the first PYQ_E* code
    error_seq: object           # seq of the failing message, or None
    failed_step: str            # "", "pin", "sched", "run"
    policy: str
    cpu_start: int
    cpu_end: int
    cpu_changes: int            # sched_getcpu() samples that differed from the previous one
    bursts: int
    full_waits: int
    start_ns: int
    end_ns: int
    sink: int
    idle: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)        # name -> value or None
    counter_status: dict = field(default_factory=dict)  # name -> CounterStatus

    @property
    def elapsed_ns(self):
        return self.end_ns - self.start_ns

    @classmethod
    def from_c(cls, kind, r, perf_mask):
        names = _counters.NAMES
        status = {names[i]: _counters.status_of(i, r.perf_status[i])
                  for i in range(len(names)) if perf_mask & (1 << i)}
        return cls(kind=kind, end=_END.get(r.end, str(r.end)), messages=int(r.messages),
                   bytes=int(r.bytes), error=int(r.first_error),
                   error_seq=None if r.error_seq == _U64 else int(r.error_seq),
                   failed_step=_STEP.get(r.failed_step, str(r.failed_step)),
                   policy=_POLICY.get(r.policy, str(r.policy)), cpu_start=int(r.cpu_start),
                   cpu_end=int(r.cpu_end), cpu_changes=int(r.cpu_changes), bursts=int(r.bursts),
                   full_waits=int(r.full_waits), start_ns=int(r.start_ns), end_ns=int(r.end_ns),
                   sink=int(r.sink),
                   idle=cstruct.as_dict(r.idle, IDLE_STATS),
                   counters={n: (int(r.perf_values[names.index(n)]) if s.available else None)
                             for n, s in status.items()},
                   counter_status=status)


class _Run:
    """One started C thread: its handle, everything C points into (kept alive
    here until the thread is joined), and the reaper that joins it."""

    def __init__(self, kind, handle, keep, side_lock, perf_mask):
        self.kind = kind
        self.handle = handle
        self.keep = keep
        self.side_lock = side_lock
        self.perf_mask = perf_mask
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.result = None
        self.reaper = threading.Thread(target=self._reap, name="pyqueue-%s-reaper" % kind, daemon=True)
        self.reaper.start()

    def _reap(self):
        res = ffi.new("pyq_thread_result_t *")
        try:
            lib.pyq_thread_join(self.handle, 0, res)  # blocks with the GIL released
            self.result = ThreadResult.from_c(self.kind, res, self.perf_mask)
            with self.lock:
                lib.pyq_thread_destroy(self.handle)
                self.handle = None
        finally:
            self.keep = None
            self.side_lock.release()  # the queue side is free again (Queue.close may go on)
            self.finished.set()

    def stop(self):
        with self.lock:  # never after pyq_thread_destroy()
            if self.handle is not None:
                lib.pyq_thread_stop(self.handle)

    def messages(self):
        with self.lock:
            if self.handle is not None:
                return int(lib.pyq_thread_messages(self.handle))
        return self.result.messages if self.result else 0


class _CThread:
    """Common part of ConsumerThread and ProducerThread."""
    kind = None

    def __init__(self, queue):
        self._queue = queue
        self._run = None
        self._keep = []
        self._perf_mask = 0

    # --- subclasses fill these ---
    def _side(self):
        raise NotImplementedError

    def _start_c(self, handle_out, step_out):
        raise NotImplementedError

    # --- life cycle ---
    def start(self):
        """Start the C thread; returns self once it is pinned/scheduled as asked."""
        if self._run is not None:
            raise RuntimeError("%s thread already started" % self.kind)
        self._queue.c_handle  # QueueClosed if closed
        lock = self._side().side_lock
        if not lock.acquire(blocking=False):
            raise QueueError("the queue's %s side is in use (another thread or call owns it)"
                             % ("reader" if self.kind == "consumer" else "writer"))
        try:
            handle = ffi.new("pyq_thread_t **")
            step = ffi.new("int *")
            rc = self._start_c(handle, step)
            if rc != 0:
                self._raise_start(rc, step[0])
        except BaseException:
            lock.release()
            raise
        self._run = _Run(self.kind, handle[0], self._keep, lock, self._perf_mask)
        return self

    def _raise_start(self, rc, step):
        what = "%s thread" % self.kind
        if step == lib.PYQ_STEP_PIN:
            raise ValueError("%s_cpu=%d: the %s cannot be pinned to CPU %d (%s; allowed CPUs: %s)"
                             % (self.kind, self._cpu, what, self._cpu, strerror(rc),
                                format_cpulist(_cpu.allowed_cpus())))
        if step == lib.PYQ_STEP_SCHED:
            raise _cpu.fifo_refused(self._prio, "%s SCHED_FIFO" % what)
        check(rc, "starting the %s" % what, {
            lib.PYQ_ETOOBIG: "%s: message size above a block's worth (%d bytes)"
                             % (what, self._queue.block_size - 8)})

    def wait(self, timeout=None):
        """Wait up to ``timeout`` s (None: no limit) for the C loop to end; True if it
        has.  Ctrl-C stops the thread, waits for it and re-raises KeyboardInterrupt."""
        if self._run is None:
            raise RuntimeError("%s thread not started" % self.kind)
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        try:
            while not self._run.finished.is_set():
                left = _WAIT_SLICE_S if deadline is None else min(_WAIT_SLICE_S, deadline - time.monotonic())
                if left <= 0:
                    return False
                self._run.finished.wait(left)
            return True
        except KeyboardInterrupt:
            self._run.stop()
            self._run.finished.wait(_STOP_GRACE_S)
            raise

    def stop(self):
        """Ask the C loop to end (it does within one message, idle wait or 10 ms)."""
        if self._run is not None:
            self._run.stop()

    def join(self, timeout=None, stop=False):
        """Wait for the end (stopping first if ``stop``) and return the ThreadResult;
        raise VerificationError / QueueClosed / QueueError when C reported an error,
        TimeoutError when still running after ``timeout`` s."""
        if stop:
            self.stop()
        if not self.wait(timeout):
            raise TimeoutError("%s thread still running after %s s (%d messages so far)"
                               % (self.kind, timeout, self.messages))
        res = self._run.result
        if res.error:
            raise self._error(res)
        return res

    def _error(self, res):
        what = "%s thread" % self.kind
        exc = error_for(res.error, "%s at seq %s" % (what, res.error_seq), {
            lib.PYQ_EBADMSG: "%s: verification failed at seq %s after %d good messages: %s"
                             % (what, res.error_seq, res.messages, strerror(res.error)),
            lib.PYQ_ECLOSED: "%s: the queue was closed after %d of its messages"
                             % (what, res.messages)})
        exc.seq = res.error_seq
        exc.result = res
        return exc

    @property
    def started(self):
        return self._run is not None

    @property
    def done(self):
        return self._run is not None and self._run.finished.is_set()

    @property
    def result(self):
        """The ThreadResult once done (no exception raised), else None."""
        return self._run.result if self.done else None

    @property
    def messages(self):
        """Messages handled so far (live)."""
        return self._run.messages() if self._run else 0

    def __enter__(self):
        if self._run is None:
            self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        if exc_type is None:
            self.join()
        else:
            self.wait(_STOP_GRACE_S)

    def __del__(self):
        run = getattr(self, "_run", None)
        if run is not None and not run.finished.is_set():
            run.stop()  # an abandoned thread must not spin forever

    # --- shared parameter handling ---
    def _sched(self, cpu, fifo_priority):
        self._cpu = validate.cpu("%s_cpu" % self.kind, cpu)
        self._prio = validate.priority("%s fifo_priority" % self.kind, fifo_priority)
        return self._cpu, self._prio

    def _buffer(self, arr, name, needed):
        buf = sample_buffer(arr, name, needed)
        self._keep.extend((arr, buf))  # alive until the C thread is joined
        return buf, arr.shape[0]


class ConsumerThread(_CThread):
    """A C thread reading ``queue``: per message the chosen ``work`` ("none",
    "loop64": the burst study's 64-iteration loop, "spin_ns": spin ``work_ns``), then,
    if ``verify``, a check of every byte against message seq first_seq, +1, ...;
    ``idle`` ("spin", "relax", "yield", "backoff") when the queue is empty.
    ``count`` 0 = until stopped or the queue is closed and drained.  ``size``
    (int or (lo, hi), with ``size_salt``) also checks each length as the producer
    chose it.  ``dequeue_ns``: optional uint64 array of delivery times.  ``perf``:
    True or counter names, read over the run on the thread.  ``idle_<field>``
    sets a field of pyq_idle_config_t (IDLE_FIELDS: idle_spins, idle_yield_every,
    idle_sleep_min_ns, idle_sleep_cap_ns); the rest keep its defaults."""
    kind = "consumer"

    def __init__(self, queue, count=0, *, verify=True, work="none", work_ns=0,
                 idle="backoff", size=None, size_salt=0, first_seq=0, poll_batch=256,
                 cpu=-1, fifo_priority=0, perf=False, dequeue_ns=None, **idle_fields):
        super().__init__(queue)
        cfg = ffi.new("pyq_consumer_config_t *")
        lib.pyq_consumer_config_init(cfg)
        cfg.cpu, cfg.fifo_priority = self._sched(cpu, fifo_priority)
        cfg.count = validate.integer("count", count, 0, _U64)
        cfg.first_seq = validate.integer("first_seq", first_seq, 0, _U64 - 1)
        cfg.verify = bool(verify)
        cfg.work = WORK[validate.choice("work", work, tuple(WORK))]
        cfg.work_ns = validate.integer("work_ns", work_ns, 0, 10**9)
        idle_config(ffi.addressof(cfg, "idle"), idle, idle_fields)
        if size is not None:
            lo, hi = _size_param("size", size, queue.block_size - 8)
            if lo == 0:
                raise ValueError("size must be >= 1 to be checked (None: any length)")
            cfg.size_lo, cfg.size_hi = lo, hi
        cfg.size_salt = validate.integer("size_salt", size_salt, 0, _U64)
        cfg.poll_batch = validate.integer("poll_batch", poll_batch, 1, 2**32 - 1)
        self._perf_mask = cfg.perf_mask = _counters.mask_of(perf)
        if dequeue_ns is not None:
            cfg.dequeue_ns, cfg.samples_cap = self._buffer(dequeue_ns, "dequeue_ns", max(count, 1))
        self._cfg = cfg

    def _side(self):
        return self._queue.reader

    def _start_c(self, handle_out, step_out):
        return lib.pyq_consumer_start(self._queue.c_handle, self._cfg, handle_out, step_out)


class ProducerThread(_CThread):
    """A C thread writing ``count`` pyq_pattern messages (seq first_seq, +1, ...)
    of ``size`` bytes (int, or (lo, hi) for sizes pyq_pattern_len picks with
    ``size_salt``), in bursts of ``burst_bytes`` (0: one burst) each ready
    ``gap_ns`` after the previous burst's last scheduled time, paced by a token
    bucket of ``rate`` messages/s (0: unpaced) and ``pacer_burst`` tokens.
    ``scheduled_ns`` / ``offer_ns``: optional uint64 arrays (>= count) of each
    message's scheduled time and the time its write began; ``burst_cpu``: CPU
    after each burst.  ``fault``: ("corrupt" | "skip", seq) for tests."""
    kind = "producer"

    def __init__(self, queue, count, *, size=32, size_salt=0, burst_bytes=0, gap_ns=0,
                 rate=0.0, pacer_burst=1, flush_each_burst=True, start_delay_ns=0,
                 first_seq=0, cpu=-1, fifo_priority=0, perf=False, fault=None,
                 scheduled_ns=None, offer_ns=None, burst_cpu=None):
        super().__init__(queue)
        cfg = ffi.new("pyq_producer_config_t *")
        lib.pyq_producer_config_init(cfg)
        cfg.cpu, cfg.fifo_priority = self._sched(cpu, fifo_priority)
        cfg.count = validate.integer("count", count, 1, _U64 - 1)
        cfg.first_seq = validate.integer("first_seq", first_seq, 0, _U64 - 1)
        # The C loops frame messages in blocks: a block's worth at most.
        cfg.size_lo, cfg.size_hi = _size_param("size", size, queue.block_size - 8)
        cfg.size_salt = validate.integer("size_salt", size_salt, 0, _U64)
        cfg.burst_bytes = validate.integer("burst_bytes", burst_bytes, 0, _U64)
        cfg.gap_ns = validate.integer("gap_ns", gap_ns, 0, 10**12)
        cfg.rate = validate.number("rate (messages/s, 0: unpaced)", rate, 0, 1e12)
        cfg.pacer_burst = validate.integer("pacer_burst", pacer_burst, 1, 2**32 - 1)
        cfg.flush_each_burst = bool(flush_each_burst)
        cfg.start_delay_ns = validate.integer("start_delay_ns", start_delay_ns, 0, 10**12)
        if fault is not None:
            if not (isinstance(fault, tuple) and len(fault) == 2 and fault[0] in FAULTS):
                raise ValueError("fault must be None or ('corrupt' | 'skip', seq), got %r" % (fault,))
            cfg.fault = FAULTS[fault[0]]
            cfg.fault_seq = validate.integer("fault seq", fault[1], 0, _U64 - 1)
        self._perf_mask = cfg.perf_mask = _counters.mask_of(perf)
        if (scheduled_ns is None) != (offer_ns is None):
            raise ValueError("scheduled_ns and offer_ns go together: pass both or neither")
        if scheduled_ns is not None:
            cfg.scheduled_ns, n1 = self._buffer(scheduled_ns, "scheduled_ns", count)
            cfg.offer_ns, n2 = self._buffer(offer_ns, "offer_ns", count)
            cfg.samples_cap = min(n1, n2)
        if burst_cpu is not None:
            cfg.burst_cpu, cfg.bursts_cap = self._buffer(burst_cpu, "burst_cpu", 1)
        self._cfg = cfg

    def _side(self):
        return self._queue.writer

    def _start_c(self, handle_out, step_out):
        return lib.pyq_producer_start(self._queue.c_handle, self._cfg, handle_out, step_out)
