"""Where two Python threads' time goes: a producer thread writes N 32-byte
messages, the main thread consumes them (iteration or a get() per message), on
several queues beside SimpleQueue; each row's M msg/s, its ratio to
SimpleQueue (median of per-round ratios), each thread's CPU time per message
(time.thread_time), the consumer's voluntary context switches (the GIL
hand-overs it slept for) and the queue's full events.  Rows run interleaved,
the order rotated every round; the producer on CPU 0, the consumer on CPU 1.

    python benchmarks/python/two_threads.py [--rounds 11] [--messages 200000] [--rows a,b]

Under the GIL the two loops run one at a time: a slice is the producer's CPU,
the consumer's CPU and the hand-overs (docs/BENCHMARKS.md, "Two threads").
"""
import argparse
import operator
import os
import queue
import statistics
import sys
import threading
import time

import pyqueue as pq

BENCH = dict(block_size=4096, hot_blocks=4, spill_blocks=252)     # the bench's 1 MiB budget
ROWS = {
    "simplequeue": (None, "iter"),
    "bench-max-iter": (dict(BENCH, publish="max"), "iter"),
    "bench-each-iter": (dict(BENCH, publish="each"), "iter"),
    "bench-each-get": (dict(BENCH, publish="each"), "get"),
    "default-iter": ({}, "iter"),
    "default-get": ({}, "get"),
    "hot4m-prefault-iter": (dict(hot_blocks=1024, spill_blocks=0, prefault=True), "iter"),
    "tiers4m-prefault-iter": (dict(hot_blocks=4, spill_blocks=1020, prefault=True), "iter"),
}


def _switches(tid):
    with open("/proc/self/task/%d/status" % tid) as f:
        return int(next(line for line in f if line.startswith("voluntary_ctxt")).split()[1])


def run(kw, consumer, msgs):
    """One slice: (ns, producer CPU ns, consumer CPU ns, consumer switches, full events)."""
    q = queue.SimpleQueue() if kw is None else pq.Queue(**kw)
    put = q.put if kw is None else q.writer.put
    cpu = {}

    def produce():
        os.sched_setaffinity(0, {0})
        t0 = time.thread_time_ns()
        for m in msgs:
            put(m)
        put(None if kw is None else b"")       # the end: a sentinel, or an empty message
        if kw is not None:
            q.writer.flush()                   # publish 'max': the last block too
        cpu["p"] = time.thread_time_ns() - t0
    os.sched_setaffinity(0, {1})
    sw0, c0, t0 = _switches(threading.get_native_id()), time.thread_time_ns(), time.perf_counter_ns()
    t = threading.Thread(target=produce)
    t.start()
    if kw is None:
        got = iter(q.get, None)
    elif consumer == "get":
        got = iter(q.reader.get, b"")
    else:
        got = iter(q.reader.__next__, b"")
    ok = sum(map(operator.eq, got, msgs))
    t.join()
    dt = time.perf_counter_ns() - t0
    c, sw = time.thread_time_ns() - c0, _switches(threading.get_native_id()) - sw0
    full = 0 if kw is None else q.stats()["full_events"]
    if kw is not None:
        q.close()
    os.sched_setaffinity(0, {0, 1})
    if ok != len(msgs):
        raise RuntimeError("%d of %d messages came back" % (ok, len(msgs)))
    return dt, cpu["p"], c, sw, full


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python benchmarks/python/two_threads.py")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--rows", default=",".join(ROWS))
    args = ap.parse_args(argv)
    names = args.rows.split(",")
    if names[0] != "simplequeue":
        names.insert(0, "simplequeue")
    n = args.messages
    msgs = [i.to_bytes(8, "little") * 4 for i in range(n)]
    got = {k: [] for k in names}
    for k in names:                           # warm-up
        run(*ROWS[k], msgs[: n // 10])
    for r in range(args.rounds):
        k0 = r % len(names)
        for k in names[k0:] + names[:k0]:
            got[k].append(run(*ROWS[k], msgs))
    print("command: python %s" % " ".join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])))
    print("%-22s %8s %8s %10s %10s %9s %6s" % ("row", "M msg/s", "x SQ", "prod ns/m", "cons ns/m",
                                               "switches", "full"))
    for k in names:
        col = list(zip(*got[k]))
        ratio = statistics.median(b[0] / a[0] for a, b in zip(got[k], got["simplequeue"]))
        print("%-22s %8.2f %8.2f %10.1f %10.1f %9d %6d"
              % (k, n / statistics.median(col[0]) * 1e3, ratio, statistics.median(col[1]) / n,
                 statistics.median(col[2]) / n, statistics.median(col[3]), statistics.median(col[4])))


if __name__ == "__main__":
    main()
