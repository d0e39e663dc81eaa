"""One burst through the queue in C, and what its per-message delays say (DESIGN §6.5).

A run starts a C consumer with a fixed per-message cost (spin ``work_ns`` on the
cycle counter, then verify the message) and a C producer that sends ``n``
messages, unpaced or paced by the C token bucket at ``rate`` msg/s.  Three
CLOCK_MONOTONIC arrays come back: each message's *scheduled* send time, the time
its write began (offer) and the time the consumer dequeued it.

Queueing delay = dequeue - scheduled.  It is measured from the intended send
time, so a producer that falls behind never hides the wait (no coordinated
omission).  In an unpaced burst every message is scheduled at the burst's ready
time, so message i waits about i/D: the pacing article's "delay rises linearly with the
position in the burst to N/D".
"""
import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from pyqueue.errors import VerificationError
from .._lab import lib
from pyqueue.config import QueueConfig
from pyqueue.queue import Queue
from ..runtime.threads import ConsumerThread, ProducerThread
from .stats import nearest_rank

__all__ = ["Rig", "Burst", "STALL_NS", "QUEUE", "MIN_MSG"]

# A gap between two consecutive dequeues longer than this (tens of service times
# of the default consumer, whose work_ns is 500) means the consumer was not
# running: preempted, interrupted, or its vCPU descheduled by the host.  Counted,
# never removed.
STALL_NS = 20_000
# The first burst is ready this long after the producer thread started, so both
# threads are pinned and running before the first message is scheduled.
START_DELAY_NS = 100_000


@dataclass
class Burst:
    """One C run: its raw arrays (unfiltered) and the figures derived from them."""
    kind: str            # "warmup", "drain", "paced", "check" or "stream"
    label: str           # its group name in the output folder
    round: int
    n: int
    rate: float          # offered rate, msg/s (0: unpaced)
    target_s: float      # the delay target it was paced for (None: not paced for one)
    utc: str             # wall-clock start, for lining up with other logs
    scheduled_ns: np.ndarray = field(repr=False)
    offer_ns: np.ndarray = field(repr=False)
    dequeue_ns: np.ndarray = field(repr=False)
    producer: object = field(repr=False)   # threads.ThreadResult
    consumer: object = field(repr=False)
    metrics: dict = field(default_factory=dict)

    @property
    def delay_ns(self):
        """Queueing delay of each message: dequeue - scheduled (int64 ns)."""
        return self.dequeue_ns.astype(np.int64) - self.scheduled_ns.astype(np.int64)

    @property
    def start_ns(self):
        """CLOCK_MONOTONIC of the first scheduled send (the run's timestamp)."""
        return int(self.scheduled_ns[0])

    def meta(self):
        """Everything but the arrays, as plain values (runs.json / to_json)."""
        p, c = self.producer, self.consumer
        return dict(kind=self.kind, label=self.label, round=self.round, n=self.n,
                    rate=self.rate, target_s=self.target_s, utc=self.utc,
                    start_ns=self.start_ns,
                    producer_cpu=[p.cpu_start, p.cpu_end], consumer_cpu=[c.cpu_start, c.cpu_end],
                    producer_policy=p.policy, consumer_policy=c.policy,
                    consumer_cpu_changes=c.cpu_changes, full_waits=p.full_waits,
                    metrics=self.metrics)


def fit_line(y):
    """Least-squares line through (i, y[i]): (slope per position, intercept)."""
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    if n < 2:
        return math.nan, math.nan
    x = np.arange(n, dtype=np.float64) - (n - 1) / 2.0
    slope = float(np.dot(x, y - y.mean()) / np.dot(x, x))
    return slope, float(y.mean() - slope * (n - 1) / 2.0)


def analyse(b):
    """Fill ``b.metrics``: delays, drain-rate estimates, pacer lateness, stalls."""
    delay = b.delay_ns
    n = delay.size
    late = b.offer_ns.astype(np.int64) - b.scheduled_ns.astype(np.int64)
    # from the first scheduled send: a consumer that starts late stalls too
    gaps = np.diff(b.dequeue_ns.astype(np.int64), prepend=np.int64(b.scheduled_ns[0]))
    stalls = gaps[gaps > STALL_NS]
    slope, intercept = fit_line(delay)
    max_delay = int(delay.max())
    busy_ns = int(b.dequeue_ns[-1]) - int(b.dequeue_ns[0])
    p50, p99 = nearest_rank(delay, (50, 99))
    lp99 = nearest_rank(late, 99)
    b.metrics = dict(
        max_delay_ns=max_delay, p50_delay_ns=float(p50), p99_delay_ns=float(p99),
        # the pacing article's estimate: the last message waited for the whole burst to drain
        d_max=n / (max_delay * 1e-9) if max_delay > 0 else math.nan,
        # slope of delay vs position = 1/D (ns per message)
        d_fit=1e9 / slope if slope > 0 else math.nan, fit_intercept_ns=intercept,
        # the rate the consumer actually delivered over the run; the drain rate only
        # while it never ran dry (unpaced bursts, paced at P > D)
        d_run=(n - 1) / (busy_ns * 1e-9) if busy_ns > 0 else math.nan,
        offer_span_ns=int(b.offer_ns[-1]) - int(b.offer_ns[0]),
        offer_late_p99_ns=float(lp99), offer_late_max_ns=int(late.max()),
        stalls=int(stalls.size), stall_ns=int(stalls.sum()),
        longest_gap_ns=int(gaps.max()), first_delay_ns=int(delay[0]))
    return b


_TICK_MS = 1000.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def steal_ms(cpus):
    """{cpu: ms the hypervisor ran something else on it} from /proc/stat ("steal",
    in USER_HZ ticks: 10 ms steps); {} where unreadable."""
    out = {}
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, *vals = line.split()
                if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus \
                        and len(vals) >= 8:
                    out[int(name[3:])] = int(vals[7]) * _TICK_MS
    except OSError:
        pass
    return out


@contextmanager
def _main_thread_on(cpu):
    """Keep the waiting Python thread off the consumer's CPU while C runs.

    Pinned only for the wait: the C threads must be started from a thread that
    may run on both CPUs (a thread can only pin itself within its allowed set).
    """
    if cpu < 0 or not hasattr(os, "sched_setaffinity"):
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


# The rig's queue unless told otherwise: the queue defaults with publish 'each' (every
# message is visible the moment it is written, so the queue adds no batching delay of
# its own) and prefault (no page fault lands inside a measured burst).
QUEUE = QueueConfig(publish="each", prefault=True, max_message=0)
# A message's first 8 bytes carry its sequence number (common/pyq_pattern.h): a shorter
# one could be verified only by its pattern bytes, which do not prove order or no loss.
MIN_MSG = 8


class Rig:
    """A queue sized for the largest run and the fixed consumer/producer setup.

    ``queue``: the QueueConfig as run (``sized()`` of the one asked for); the values
    are the experiment's parameters, checked at its door and trusted here.
    """

    @staticmethod
    def sized(queue, max_messages, msg_size):
        """``queue`` with its spill tier sized for a burst of ``max_messages`` messages of
        ``msg_size`` bytes (which its blocks hold: at most block_size - 8)."""
        frame = 8 + (msg_size + 7) // 8 * 8              # record header + padded payload
        per_block = max(1, (queue.block_size - 64) // frame)
        return queue.replace(spill_blocks=int(math.ceil(max_messages / per_block * 1.25)) + 16)

    def __init__(self, queue, *, msg_size, work_ns, writer_cpu, reader_cpu, fifo_priority,
                 verify):
        self.msg_size, self.work_ns, self.verify = msg_size, work_ns, verify
        self.writer_cpu, self.reader_cpu = writer_cpu, reader_cpu
        self.fifo_priority = fifo_priority
        self.queue = Queue(queue)

    def close(self):
        self.queue.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def run(self, kind, label, n, rate=0.0, *, round=0, target_s=None):
        """One burst of ``n`` messages at ``rate`` (0: unpaced); returns an analysed Burst."""
        sched, offer, deq = (np.zeros(n, np.uint64) for _ in range(3))
        utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cpus = (self.writer_cpu, self.reader_cpu)
        steal0 = steal_ms(cpus)
        cons = ConsumerThread(self.queue, n, verify=self.verify, work="spin_ns",
                              work_ns=self.work_ns, idle="spin", size=self.msg_size,
                              cpu=self.reader_cpu, fifo_priority=self.fifo_priority,
                              dequeue_ns=deq).start()
        try:
            prod = ProducerThread(self.queue, n, size=self.msg_size, rate=float(rate),
                                  pacer_burst=1, start_delay_ns=START_DELAY_NS, cpu=self.writer_cpu,
                                  fifo_priority=self.fifo_priority,
                                  scheduled_ns=sched, offer_ns=offer).start()
            with _main_thread_on(self.writer_cpu):
                pres = prod.join()
                cres = cons.join()
        except BaseException:
            cons.stop()
            cons.wait(5.0)
            raise
        if pres.messages != n or cres.messages != n:
            raise VerificationError("%s: %d sent, %d received of %d" % (
                label, pres.messages, cres.messages, n), lib.PYQ_EBADMSG)
        steal1 = steal_ms(cpus)
        b = analyse(Burst(kind=kind, label=label, round=round, n=n, rate=float(rate),
                          target_s=target_s, utc=utc, scheduled_ns=sched, offer_ns=offer,
                          dequeue_ns=deq, producer=pres, consumer=cres))
        # host steal over the run (thread starts included): vCPU descheduled by the host
        b.metrics["steal_ms"] = {"producer": _diff(steal0, steal1, self.writer_cpu),
                                 "consumer": _diff(steal0, steal1, self.reader_cpu)}
        return b


def _diff(a, b, cpu):
    return b[cpu] - a[cpu] if cpu in a and cpu in b else None
