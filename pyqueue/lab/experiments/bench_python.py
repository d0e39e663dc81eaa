"""The bench's Python rows (DESIGN §6.6, §8.5): pyqueue's per-message calls
against the standard library's queues, in the same interleaved run as the C
rows, M msg/s, every message checked.

One thread (pinned to the writer CPU), each message written and read back
before the next -- the call path, not a hand-off between cores:
  py_write_poll       Writer.write(m) then Reader.poll(1), publish 'each'
  py_put_get          Writer.put_nowait(m) then Reader.get_nowait()
  simplequeue         queue.SimpleQueue put(m) then get()
  deque               collections.deque append(m) then popleft()
  py_batch_local      write_batch(1024 rows) then poll_into(1024 rows)
  py_write_poll_1k, py_put_get_1k, simplequeue_1k   the same with 1 KiB messages
  py_get, py_get_timeout   put_nowait(m) then get() / get(timeout=5): what a
                      timeout costs a call that need not wait (queue.Queue's spelling)
  py_put, py_put_timeout   put(m) / put(m, timeout=5) then get_nowait()
  simplequeue_timeout      SimpleQueue put(m) then get(timeout=5)
A block's worth at a time (only the reading is timed: the writes before it and
the release of the list read are not):
  py_poll_block       Reader.poll() of one full 4 KiB block of 32-byte messages
  simplequeue_get_block   a loop of SimpleQueue.get() over as many messages
Two Python threads (a producer thread on the writer CPU, the consumer on the
reader CPU), ending with end of stream or a sentinel; one consumer loop for
every queue (``for m in q.reader`` / ``iter(q.get, None)``, compared in C),
timed from the producer's start to its join (making and closing the queue are
not):
  py_threads          write(m) / ``for m in reader``, publish 'max' (the reader
                      takes a block's messages per wake-up)
  py_threads_each     the same with publish 'each' (under backlog the spill tier's
                      streaming stores are fenced per message: the writer slows)
  simplequeue_threads, queue_threads   SimpleQueue / queue.Queue put / get
  py_threads_get      put(m) / a get() per message (``iter(r.get, b"")``, an
                      empty message last), publish 'each' (Python's default)
  py_threads_get_timeout, simplequeue_threads_timeout   the same with
                      get(timeout=5), README's idiom, and SimpleQueue's
  py_threads_1k, simplequeue_threads_1k   the same with 1 KiB messages
The two-thread rows' floor under the GIL, which runs one Python thread at a
time: each side's loop alone, on a queue that holds every message (publish
'max', the rest of py_threads' queue), timed alone:
  py_produce_alone    py_threads' producer loop (write(m) per message), no reader
  py_consume_alone    py_threads' consumer (_consume of ``q.reader``) over a queue
                      filled and detached beforehand (untimed)
  py_threads_floor    the two in one slice, their times added: the rate two
                      threads could reach if the hand-over cost nothing
"""
import collections
import functools
import operator
import queue as _stdqueue
import threading
import time

import numpy as np

from pyqueue import queue as _queue
from pyqueue.errors import VerificationError
from .._lab import lib
from ..common import twins
from ..reports.bench_python import RATIOS, format_ratios, ratios  # noqa: F401
from ..common.twins import MSG
from .rows import Pinned, row_queue, seq_rows

LOCAL_CHUNK = 1024
KIB = 1024



def _messages(n, size):
    """n distinct messages of size bytes (a sequence number first)."""
    rows = np.zeros((n, size), np.uint8)
    rows[:, :8] = np.arange(n, dtype=np.uint64).view(np.uint8).reshape(n, 8)
    return [bytes(r) for r in rows]


class PythonAPI:
    """The Python rows as one group of the bench's interleaved slices."""

    def __init__(self, n, cpu, budget_bytes, base, reader_cpu=-1):
        self.n, self.cpu, self.rcpu = n, cpu, reader_cpu
        self.msgs = _messages(n, MSG)
        self.msgs_1k = _messages(n, KIB)
        each, batch = twins.ROUNDTRIP["pyqueue_each"], twins.THROUGHPUT["pyqueue"]
        self.each_kw = twins.queue_kw(each, budget_bytes, row_queue(each, base))
        self.max_kw = twins.queue_kw(batch, budget_bytes, row_queue(batch, base))
        # py_threads' queue with room for every message (records of 8 + 32 bytes).
        per_block = (self.max_kw["block_size"] - 8) // 40
        self.all_kw = dict(self.max_kw, spill_blocks=n // per_block + 2)
        self.q1 = _queue.Queue(**self.each_kw)
        self.qb = _queue.Queue(**self.max_kw)
        # One 4 KiB block of 32-byte messages ('max': published when full).
        self.qblock = _queue.Queue(block_size=4096, hot_blocks=4, spill_blocks=0, publish="max")
        self.per_block = (4096 - 8) // 40      # records of 8 + 32 bytes, the last padded out
        self.rows = seq_rows(n)
        self.out = np.zeros((LOCAL_CHUNK, MSG), np.uint8)

    def contenders(self):
        return ["py_write_poll", "py_put_get", "simplequeue", "deque", "py_batch_local",
                "py_write_poll_1k", "py_put_get_1k", "simplequeue_1k",
                "py_get", "py_get_timeout", "py_put", "py_put_timeout", "simplequeue_timeout",
                "py_poll_block", "simplequeue_get_block",
                "py_threads", "py_threads_each", "simplequeue_threads", "queue_threads",
                "py_threads_get", "py_threads_get_timeout", "simplequeue_threads_timeout",
                "py_threads_1k", "simplequeue_threads_1k",
                "py_produce_alone", "py_consume_alone", "py_threads_floor"]

    def warm_up(self):
        return self.contenders()

    def close(self):
        for q in (self.q1, self.qb, self.qblock):
            q.close()

    def run(self, name):
        kib = name.endswith("_1k")
        msgs = self.msgs_1k if kib else self.msgs
        base = name[:-3] if kib else name
        with Pinned(self.cpu):
            t0 = time.perf_counter_ns()
            got, dt = getattr(self, "_" + base)(msgs)
            dt = dt if dt is not None else time.perf_counter_ns() - t0
        if got != self.n:
            raise VerificationError("%s: %d of %d messages came back intact" % (name, got, self.n),
                                    lib.PYQ_EBADMSG)
        return self.n / dt * 1e3, {"ns_per_msg": dt / self.n}

    # --- one thread -------------------------------------------------------
    def _py_write_poll(self, msgs):
        w, r, ok = self.q1.writer.write, self.q1.reader.poll, 0
        for m in msgs:
            w(m)
            ok += r(1)[0] == m
        return ok, None

    def _py_put_get(self, msgs):
        return self._put_get(msgs, self.q1.writer.put_nowait, self.q1.reader.get_nowait), None

    def _simplequeue(self, msgs):
        q = _stdqueue.SimpleQueue()
        return self._put_get(msgs, q.put, q.get), None

    def _deque(self, msgs):
        d = collections.deque()
        return self._put_get(msgs, d.append, d.popleft), None

    @staticmethod
    def _put_get(msgs, put, get):
        """Each message put, then got back: the loop the one-thread rows time."""
        ok = 0
        for m in msgs:
            put(m)
            ok += get() == m
        return ok

    # --- timeout= on a call that need not wait (the plain call's twin) -----
    def _py_get(self, msgs):
        return self._put_get(msgs, self.q1.writer.put_nowait, self.q1.reader.get), None

    def _py_get_timeout(self, msgs):
        return self._put_get_timeout(msgs, self.q1.writer.put_nowait, self.q1.reader.get), None

    def _py_put(self, msgs):
        return self._put_get(msgs, self.q1.writer.put, self.q1.reader.get_nowait), None

    def _py_put_timeout(self, msgs):
        put, get, ok = self.q1.writer.put, self.q1.reader.get_nowait, 0
        for m in msgs:
            put(m, timeout=5)
            ok += get() == m
        return ok, None

    def _simplequeue_timeout(self, msgs):
        q = _stdqueue.SimpleQueue()
        return self._put_get_timeout(msgs, q.put, q.get), None

    @staticmethod
    def _put_get_timeout(msgs, put, get):
        """_put_get with get(timeout=5): the keyword as a call site spells it."""
        ok = 0
        for m in msgs:
            put(m)
            ok += get(timeout=5) == m
        return ok

    def _py_batch_local(self, msgs):
        w, r, out, ok = self.qb.writer, self.qb.reader, self.out, 0
        for i in range(0, self.n, LOCAL_CHUNK):
            chunk = self.rows[i:i + LOCAL_CHUNK]
            w.write_batch(chunk)
            w.flush()
            k = r.poll_into(out)
            ok += k if k == len(chunk) and np.array_equal(out[:k], chunk) else 0
        return ok, None

    # --- a block at a time (reads timed) ----------------------------------
    def _py_poll_block(self, msgs):
        w, poll, k = self.qblock.writer.write, self.qblock.reader.poll, self.per_block
        ok, dt = 0, 0
        for i in range(0, len(msgs), k):
            part = msgs[i:i + k]
            for m in part:
                w(m)
            self.qblock.writer.flush()
            t0 = time.perf_counter_ns()
            got = poll()
            dt += time.perf_counter_ns() - t0
            ok += len(got) if got == part else 0
            del got   # its release is not reading: outside the timed part, as for SimpleQueue
        return ok, dt

    def _simplequeue_get_block(self, msgs):
        q, k = _stdqueue.SimpleQueue(), self.per_block
        ok, dt = 0, 0
        for i in range(0, len(msgs), k):
            part = msgs[i:i + k]
            for m in part:
                q.put(m)
            get = q.get
            t0 = time.perf_counter_ns()
            got = [get() for _ in part]
            dt += time.perf_counter_ns() - t0
            ok += len(got) if got == part else 0
            del got
        return ok, dt

    # --- two threads ------------------------------------------------------
    def _producer(self, target):
        def run():
            with Pinned(self.cpu):
                target()
        t = threading.Thread(target=run, name="bench-python-producer")
        t.start()
        return t

    def _py_threads(self, msgs, kw=None):
        with _queue.Queue(**(kw or self.max_kw)) as q, Pinned(self.rcpu):
            w = q.writer

            def produce():
                write = w.write
                for m in msgs:
                    write(m)
                w.detach()
            t0 = time.perf_counter_ns()
            t = self._producer(produce)
            ok = _consume(q.reader, msgs)
            t.join()
            dt = time.perf_counter_ns() - t0
        return ok, dt

    def _py_threads_each(self, msgs):
        return self._py_threads(msgs, self.each_kw)

    # --- the two-thread rows' floor: each side alone -------------------------
    def _alone(self, msgs):
        """py_threads' producer loop, then its consumer, each alone and timed on
        its CPU: (messages back intact, producer ns, consumer ns)."""
        with _queue.Queue(**self.all_kw) as q:
            write = q.writer.write
            t0 = time.perf_counter_ns()
            for m in msgs:
                write(m)
            tp = time.perf_counter_ns() - t0
            q.writer.detach()
            with Pinned(self.rcpu):
                t0 = time.perf_counter_ns()
                ok = _consume(q.reader, msgs)
                tc = time.perf_counter_ns() - t0
        return ok, tp, tc

    def _py_produce_alone(self, msgs):
        ok, tp, _ = self._alone(msgs)
        return ok, tp

    def _py_consume_alone(self, msgs):
        ok, _, tc = self._alone(msgs)
        return ok, tc

    def _py_threads_floor(self, msgs):
        ok, tp, tc = self._alone(msgs)
        return ok, tp + tc

    def _simplequeue_threads(self, msgs, q=None):
        q = q if q is not None else _stdqueue.SimpleQueue()

        def produce():
            put = q.put
            for m in msgs:
                put(m)
            put(None)
        with Pinned(self.rcpu):
            t0 = time.perf_counter_ns()
            t = self._producer(produce)
            ok = _consume(iter(q.get, None), msgs)
            t.join()
            dt = time.perf_counter_ns() - t0
        return ok, dt

    def _queue_threads(self, msgs):
        return self._simplequeue_threads(msgs, _stdqueue.Queue())

    def _py_threads_get(self, msgs, timeout=None):
        """A get() per message, as queue.Queue code reads: ``iter(get, b"")``,
        the producer's last message empty (SimpleQueue's rows end on None)."""
        with _queue.Queue(**self.each_kw) as q, Pinned(self.rcpu):
            w = q.writer

            def produce():
                put = w.put
                for m in msgs:
                    put(m)
                put(b"")
            get = q.reader.get if timeout is None else functools.partial(q.reader.get,
                                                                         timeout=timeout)
            t0 = time.perf_counter_ns()
            t = self._producer(produce)
            ok = _consume(iter(get, b""), msgs)
            t.join()
            dt = time.perf_counter_ns() - t0
        return ok, dt

    def _py_threads_get_timeout(self, msgs):
        return self._py_threads_get(msgs, 5)

    def _simplequeue_threads_timeout(self, msgs):
        q = _stdqueue.SimpleQueue()

        def produce():
            put = q.put
            for m in msgs:
                put(m)
            put(None)
        with Pinned(self.rcpu):
            t0 = time.perf_counter_ns()
            t = self._producer(produce)
            ok = _consume(iter(functools.partial(q.get, timeout=5), None), msgs)
            t.join()
            dt = time.perf_counter_ns() - t0
        return ok, dt


def _consume(messages, expected):
    """The two-thread rows' one consumer loop, whatever the queue: every
    message compared with the one sent, in C (map), so that the row measures
    the queue's hand-over rather than a Python loop around it."""
    return sum(map(operator.eq, messages, expected))


def main(argv=None):
    """``python -m pyqueue.lab.experiments.bench_python [--rounds R] [--messages N]``:
    only these rows, interleaved (the order rotated every round), pinned to
    CPUs 0 (writer) and 1 (reader); prints each row's median M msg/s and the
    ratios.  ``python -m pyqueue bench`` runs them with every other row."""
    import argparse
    import statistics

    from pyqueue.config import QueueConfig
    ap = argparse.ArgumentParser(prog="python -m pyqueue.lab.experiments.bench_python")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--writer-cpu", type=int, default=0)
    ap.add_argument("--reader-cpu", type=int, default=1)
    args = ap.parse_args(argv)
    g = PythonAPI(args.messages, args.writer_cpu, 1 << 20, QueueConfig.of(None), args.reader_cpu)
    names, got = g.contenders(), collections.defaultdict(list)
    try:
        for name in g.warm_up():
            g.run(name)
        for r in range(args.rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                got[name].append(g.run(name)[0])
    finally:
        g.close()
    rows = {n: {"median": statistics.median(v), "slices": len(v)} for n, v in got.items()}
    for n in names:
        print("  %-24s %8.3f M msg/s  (median of %d)" % (n, rows[n]["median"], rows[n]["slices"]))
    print(format_ratios({"python_mmsg_s": {"pinned %d/%d" % (args.writer_cpu, args.reader_cpu): rows}}))


if __name__ == "__main__":
    main()
