"""bench-xproc's C-level rows (csrc/bench/xproc.c): a C writer and a C reader,
a C round trip and the futex wake-up, each side's loop in C with the GIL
released.  Cross-process, the other side is a forked process pinned to
``writer_cpu`` over a shared queue; in-process it is a thread of this process
over an in-process queue, running the same C function -- so the two differ by
the process boundary only (DESIGN §3.9).

Row functions have the signature of bench_xproc_rows: ``run(size, n,
writer_cpu) -> (value, extra, samples)``.
"""
import mmap
import os
import threading

import numpy as np

from pyqueue import Queue
from pyqueue.errors import check, strerror
from .._lab import ffi, lib
from ..common import regime as _regime
from .bench_xproc_rows import FORK, RT_QUEUE, SMALL_SHM, batch_of, pin

TIMEOUT_NS = 10_000_000_000   # a side that hears nothing for 10 s gives up (PYQ_EAGAIN)
WAKE_GAP_NS = 1_000_000       # the waker sleeps this long first: the sleeper is on its futex
def _u64(arr):
    return ffi.cast("uint64_t *", ffi.from_buffer(arr, require_writable=True))


def _other_side(shared, writer_cpu, fn):
    """Start ``fn()`` (the other side's C loop, returning its code) in a forked
    process or a thread pinned to writer_cpu, and wait until it has moved there:
    it starts on this process's CPU, where under SCHED_FIFO this side's spinning
    would never let it run.  Returns a join() that raises on its failure."""
    box = {}
    ready = FORK.Event() if shared else threading.Event()

    def side():
        pin(writer_cpu)
        ready.set()
        return fn()
    if shared:
        def child():
            rc = side()
            os._exit(0 if rc == 0 else min(255, 100 - rc))  # PYQ_E* = -errno: 100 + errno
        t = FORK.Process(target=child, daemon=True)
    else:
        t = threading.Thread(target=lambda: box.update(rc=side()), daemon=True)
    t.start()
    if not ready.wait(60):
        raise RuntimeError("the other side did not start")

    def join(what):
        t.join(60)
        if shared:
            rc = 100 - t.exitcode if t.exitcode and t.exitcode > 100 else t.exitcode
        else:
            rc = box.get("rc", 1)
        if rc:
            raise RuntimeError("%s failed: %s" % (what, strerror(rc)
                                                  if rc < 0 else "exit code %s" % rc))
    return join


def throughput_row(shared, batch):
    """n messages C writer -> C reader: per message (pyq_writer_write /
    pyq_reader_read_one) or by batch (write_batch / poll_fixed)."""
    def run(size, n, writer_cpu):
        b = batch_of(size) if batch else 0
        with Queue(shared=shared, **SMALL_SHM) as q:
            if shared:
                q.take("reader")

            def writer():
                if shared:
                    q.take("writer")
                return lib.pyq_xproc_write(q.c_handle, size, n, b, TIMEOUT_NS)
            join = _other_side(shared, writer_cpu, writer)
            out = ffi.new("pyq_xproc_read_t *")
            rc = lib.pyq_xproc_read(q.c_handle, size, n, b, TIMEOUT_NS, out)
            join("the C writer")
            check(rc, "bench-xproc: C reader")
            st = q.stats()
        # The clock starts at the first delivery: the messages after it over its time.
        first = min(b or 1, n)
        reg = _regime.classify(out.messages, out.empty_polls, st["retries"], out.empty_runs,
                               st["full_events"])
        return (out.messages - first) / (out.ns / 1e9) if out.ns else float("nan"), \
            reg.as_dict(), None
    return run


def round_trip_row(shared, process=None):
    """One message there and back through two queues (publish "each"), both
    sides spinning in C.  ``process`` (default: ``shared``): the echo side is a
    forked process, else a thread -- a shared queue between two threads of one
    process tells the shared hot path's cost from the process boundary's."""
    process = shared if process is None else process

    def run(size, n, writer_cpu):
        with Queue(shared=shared, **RT_QUEUE) as a, Queue(shared=shared, **RT_QUEUE) as b:
            if shared:
                a.take("writer")
                b.take("reader")

            def echo():
                if shared:
                    a.take("reader")
                    b.take("writer")
                return lib.pyq_xproc_echo(a.c_handle, b.c_handle, size, n, TIMEOUT_NS)
            join = _other_side(process, writer_cpu, echo)
            out = np.zeros(n, np.uint64)
            rc = lib.pyq_xproc_ping(a.c_handle, b.c_handle, size, n, TIMEOUT_NS, _u64(out))
            join("the C echo side")
            check(rc, "bench-xproc: C round trip")
        return float(np.median(out)), {"p99_ns": float(np.percentile(out, 99))}, \
            out.astype(np.int64)
    return run


def wakeup_row(sleeper):
    """Futex wake-up latency across processes: ``sleeper`` ("reader": asleep on
    an empty queue; "writer": asleep on a full one) in a forked process, this
    process waking it; from the waker's hand-over to the sleeper's return.
    Only samples in which the sleeper slept (a voluntary context switch) count."""
    side = lib.PYQ_SIDE_READER if sleeper == "reader" else lib.PYQ_SIDE_WRITER
    waker = "writer" if sleeper == "reader" else "reader"

    def run(size, n, writer_cpu):
        # The reader asleep: publish "each" wakes it per message.  The writer
        # asleep: one message fills a block (size is ignored), so each read returns one.
        kw = dict(publish="each", block_size=4096, hot_blocks=4, spill_blocks=4, max_message=0) \
            if sleeper == "reader" else dict(publish="max", block_size=4096, hot_blocks=2,
                                             spill_blocks=0, max_message=0)
        shm = mmap.mmap(-1, 8 * 3 * (n + 1))   # MAP_SHARED: the forked sleeper writes it
        arr = np.frombuffer(shm, np.uint64).reshape(3, n + 1)
        ack, t_ret, slept = arr[0], arr[1], arr[2]
        t_pub = np.zeros(n, np.uint64)
        with Queue(shared=True, **kw) as q:
            q.take(waker)

            def sleep_side():
                q.take(sleeper)
                return lib.pyq_xproc_wake_sleeper(q.c_handle, side, n, TIMEOUT_NS, _u64(ack),
                                                  _u64(t_ret), _u64(slept))
            join = _other_side(True, writer_cpu, sleep_side)
            rc = lib.pyq_xproc_wake_waker(q.c_handle, side, n, WAKE_GAP_NS, TIMEOUT_NS,
                                          _u64(ack), _u64(t_pub))
            join("the sleeping side")
            check(rc, "bench-xproc: futex wake-up")
        asleep = slept[:n] > 0
        lat = (t_ret[:n].astype(np.int64) - t_pub.astype(np.int64))[asleep]
        del ack, t_ret, slept, arr
        shm.close()
        extra = {"slept": int(asleep.sum()), "samples": n,
                 "p99_ns": float(np.percentile(lat, 99)) if lat.size else float("nan")}
        return (float(np.median(lat)) if lat.size else float("nan")), extra, lat
    return run
