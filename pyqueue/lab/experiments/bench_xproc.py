"""bench-xproc: a shared queue across processes (DESIGN §3.9) vs the same
queue in one process and vs Python's cross-process queues, side by side.

Every row moves ``messages`` messages of one size from a writer to a reader
and is timed by the reader, from the go signal to the last message; the
writer is a forked process pinned to ``writer_cpu`` (a thread of this process
for the in-process rows), the reader is this process pinned to
``reader_cpu``.  Rounds interleave the rows, so the machine's drift hits each
alike, and every figure is reported next to multiprocessing.Queue's in the
same run (a ratio, DESIGN §8.1).  A row whose library is not installed says
"not installed: <why>".  Round trips: one message there and back through two
queues, p50/p99 over the samples of every round.

Throughput rows stream (the writer runs ahead while the reader drains: the
streaming regime of DESIGN §8.4); the round trips are the empty-queue regime.
"""
import json
import multiprocessing as mp
import os
import threading
import time

import numpy as np

from ... import Queue
from ..common import table

SIZES = (32, 1024)
_FORK = mp.get_context("fork")
_SMALL_SHM = dict(block_size=65536, hot_blocks=4, spill_blocks=60)


def _pin(cpu):
    if cpu is not None and cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


# --- writers: each sends n messages of msg after go, in the writer's process or thread ---

def _w_pyq_message(q, msg, n):
    w = q.writer.write
    for _ in range(n):
        w(msg)
    q.writer.flush()


def _w_pyq_batch(q, msg, n):
    arr = np.frombuffer(msg * min(n, 4096), np.uint8).reshape(-1, len(msg))
    left = n
    while left:
        k = min(left, len(arr))
        q.writer.write_batch(arr[:k])
        left -= k
    q.writer.flush()


def _w_put(q, msg, n):
    put = q.put
    for _ in range(n):
        put(msg)


def _w_zmq(addr, msg, n):
    import zmq
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    s.setsockopt(zmq.SNDHWM, 100000)
    s.connect(addr)
    send = s.send
    for _ in range(n):
        send(msg)
    s.close(linger=-1)
    ctx.term()


# --- readers: receive n messages, in this process ---

def _r_pyq_message(q, n, size):
    got, poll = 0, q.reader.poll
    while got < n:
        if poll(1):
            got += 1


def _r_pyq_batch(q, n, size):
    out = np.empty((4096, size), np.uint8)
    got = 0
    while got < n:
        got += q.reader.poll_into(out[:min(4096, n - got)])


def _r_get(q, n, size):
    get = q.get
    for _ in range(n):
        get()


def _r_get_many(q, n, size):
    got = 0
    while got < n:
        got += len(q.get_many(max_messages_to_get=4096, timeout=10))


def _child(pin, ready, go, fn, args):
    _pin(pin)
    ready.set()
    go.wait()
    fn(*args)


def _timed(writer_fn, wargs, reader_fn, rargs, writer_cpu, thread=False):
    """Run one slice: the writer (a forked process, or a thread), this process
    reading; seconds from go to the last message."""
    lib = threading if thread else _FORK
    ready, go = lib.Event(), lib.Event()
    if thread:
        # sched_setaffinity(0) pins the calling thread only: the writer thread its own CPU.
        t = threading.Thread(target=_child, args=(writer_cpu, ready, go, writer_fn, wargs),
                             daemon=True)
    else:
        t = _FORK.Process(target=_child, args=(writer_cpu, ready, go, writer_fn, wargs),
                          daemon=True)
    t.start()
    # The writer starts on the reader's CPU (inherited): under SCHED_FIFO it would never
    # get there to move while this process spins, so wait (sleeping) until it has moved.
    if not ready.wait(60):
        raise RuntimeError("the writer did not start")
    t0 = time.perf_counter()
    go.set()
    reader_fn(*rargs)
    dt = time.perf_counter() - t0
    t.join(60)
    return dt


# --- the rows: name -> (available or "not installed: ...", slice function) ---

def _pyq_row(shared, batch):
    def run(size, n, writer_cpu):
        q = Queue(shared=shared, **_SMALL_SHM)
        try:
            if shared:
                q.take("reader")
            msg = bytes(i & 0xFF for i in range(size))
            w = _w_pyq_batch if batch else _w_pyq_message
            r = _r_pyq_batch if batch else _r_pyq_message
            return _timed(w, (q, msg, n), r, (q, n, size), writer_cpu, thread=not shared)
        finally:
            q.close()
    return run


def _put_get_row(make, read):
    """A row of a put/get queue: ``make()`` builds it, ``read`` drains it."""
    def run(size, n, writer_cpu):
        q = make()
        try:
            return _timed(_w_put, (q, b"x" * size, n), read, (q, n, size), writer_cpu)
        finally:
            q.close()
    return run


def _mp_row(kind):
    return _put_get_row(_FORK.Queue if kind == "queue" else _FORK.SimpleQueue, _r_get)


def _faster_fifo_row():
    try:
        import faster_fifo
    except ImportError as e:
        return "not installed: %s" % e
    return _put_get_row(lambda: faster_fifo.Queue(max_size_bytes=64 << 20), _r_get_many)


def _zmq_row():
    try:
        import zmq
    except ImportError as e:
        return "not installed: %s" % e

    def run(size, n, writer_cpu):
        ctx = zmq.Context()
        s = ctx.socket(zmq.PULL)
        s.setsockopt(zmq.RCVHWM, 100000)
        addr = "ipc:///tmp/pyq-bench-xproc-%d.ipc" % os.getpid()
        s.bind(addr)
        try:
            def read(n_, size_):
                recv = s.recv
                for _ in range(n_):
                    recv()
            return _timed(_w_zmq, (addr, b"x" * size, n), read, (n, size), writer_cpu)
        finally:
            s.close(linger=0)
            ctx.term()
    return run


def _iceoryx2_row():
    try:
        import iceoryx2  # noqa: F401
    except ImportError as e:
        return "not installed: %s" % e
    return "not measured: installed, but no adapter for it yet"


def rows():
    return {
        "pyqueue shared, write / poll(1)": _pyq_row(True, False),
        "pyqueue in-process (thread), write / poll(1)": _pyq_row(False, False),
        "pyqueue shared, write_batch / poll_into": _pyq_row(True, True),
        "pyqueue in-process (thread), write_batch / poll_into": _pyq_row(False, True),
        "multiprocessing.Queue put / get": _mp_row("queue"),
        "multiprocessing.SimpleQueue put / get": _mp_row("simple"),
        "faster-fifo put / get_many": _faster_fifo_row(),
        "pyzmq ipc PUSH / PULL": _zmq_row(),
        "iceoryx2": _iceoryx2_row(),
    }


# --- round trips ---

def _echo(a, b, n, pin, ready):
    _pin(pin)
    ready.set()
    for _ in range(n):
        b.writer.write(a.reader.read(timeout=30))
    b.writer.flush()


def _round_trips(shared, n, writer_cpu):
    a = Queue(shared=shared, publish="each", block_size=4096, hot_blocks=4, spill_blocks=4)
    b = Queue(shared=shared, publish="each", block_size=4096, hot_blocks=4, spill_blocks=4)
    try:
        if shared:
            a.take("writer")
            b.take("reader")
            ready = _FORK.Event()
            t = _FORK.Process(target=_echo, args=(a, b, n, writer_cpu, ready), daemon=True)
        else:
            ready = threading.Event()
            t = threading.Thread(target=_echo, args=(a, b, n, writer_cpu, ready), daemon=True)
        t.start()
        if not ready.wait(60):   # see _timed
            raise RuntimeError("the echo side did not start")
        out = np.empty(n, np.int64)
        w, r, now = a.writer.write, b.reader.read, time.perf_counter_ns
        msg = b"x" * 32
        for i in range(n):
            t0 = now()
            w(msg)
            r(timeout=30)
            out[i] = now() - t0
        t.join(60)
        return out
    finally:
        a.close()
        b.close()


class Result:
    def __init__(self, throughput, roundtrip, meta):
        self.throughput, self.roundtrip, self.meta = throughput, roundtrip, meta

    @property
    def summary(self):
        return self.text()

    def text(self, markdown=False):
        lines = []
        for size in self.meta["sizes"]:
            base = self.throughput.get(("multiprocessing.Queue put / get", size))
            head = ["%d-byte messages" % size, "M msg/s (median of rounds)",
                    "x multiprocessing.Queue"]
            body = []
            for name in self.meta["rows"]:
                v = self.throughput.get((name, size))
                if isinstance(v, str):
                    body.append([name, v, ""])
                else:
                    med = float(np.median(v))
                    body.append([name, "%.3f" % (med / 1e6),
                                 "%.1f" % (med / float(np.median(base))) if base and
                                 not isinstance(base, str) else ""])
            lines.append(table.render(head, body, markdown=markdown))
        rt = [[k, "%.1f" % (np.percentile(v, 50) / 1e3), "%.1f" % (np.percentile(v, 99) / 1e3)]
              for k, v in self.roundtrip.items()]
        if rt:
            lines.append(table.render(["round trip (32 B, publish each)", "p50 us", "p99 us"], rt,
                                      markdown=markdown))
        lines.append("writer CPU %s, reader CPU %s, %d rounds, %d messages a slice (%d for 1 KiB)"
                     % (self.meta["writer_cpu"], self.meta["reader_cpu"], self.meta["rounds"],
                        self.meta["messages"], self.meta["messages_1k"]))
        return "\n\n".join(lines)

    def to_json(self, path):
        doc = {"meta": self.meta,
               "throughput": [{"row": k[0], "size": k[1],
                               "msgs_per_s": v if isinstance(v, str) else list(map(float, v))}
                              for k, v in self.throughput.items()],
               "roundtrip_ns": {k: {"p50": float(np.percentile(v, 50)),
                                    "p99": float(np.percentile(v, 99)), "n": int(len(v))}
                                for k, v in self.roundtrip.items()}}
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)


def bench_xproc(messages=200_000, messages_1k=50_000, rounds=3, sizes=SIZES, writer_cpu=0,
                reader_cpu=1, round_trips=5000, only=None):
    """Run every row ``rounds`` times, interleaved; returns a Result (``summary``,
    ``to_json``).  ``only``: substrings selecting rows."""
    table_rows = {k: v for k, v in rows().items()
                  if not only or any(o in k for o in only)}
    old = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    _pin(reader_cpu)
    thr = {}
    rts = {}
    try:
        for rnd in range(rounds):
            for size in sizes:
                n = messages if size <= 64 else messages_1k
                for name, run in table_rows.items():
                    if isinstance(run, str):
                        thr[(name, size)] = run
                        continue
                    dt = run(size, n, writer_cpu)
                    thr.setdefault((name, size), []).append(n / dt)
            if round_trips:
                for shared in (True, False):
                    key = "pyqueue %s" % ("shared (two processes)" if shared else
                                          "in-process (two threads)")
                    v = _round_trips(shared, round_trips, writer_cpu)
                    rts[key] = np.concatenate([rts[key], v]) if key in rts else v
    finally:
        if old is not None:
            os.sched_setaffinity(0, old)
    return Result(thr, rts, {"rows": list(table_rows), "sizes": list(sizes), "rounds": rounds,
                             "messages": messages, "messages_1k": messages_1k,
                             "writer_cpu": writer_cpu, "reader_cpu": reader_cpu})
