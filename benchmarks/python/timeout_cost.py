"""What ``timeout=`` costs a call that need not wait (issue 46: within 1.15x).

Each loop writes one 32-byte message and reads it back, N times; one side
spelt with a timeout, the other without, so a pair's time is the call's
plus the other side's.  The loops run interleaved (the order rotated every
round) on one CPU; printed: each loop's median ns per pair over the rounds, and
the median of the per-round ratios.  SimpleQueue's get(timeout=5) beside it.

    python benchmarks/python/timeout_cost.py [--rounds 15] [--messages 200000] [--cpu 0]
"""
import argparse
import os
import queue
import statistics
import sys
import time

import pyqueue as pq

MSG = b"x" * 32


def _loop(put, get, put_kw, get_kw, n):
    # The four spellings as separate loops: a keyword dict (**kw) would add its
    # own cost to the call it measures.
    if put_kw and get_kw:
        raise ValueError("one side at a time")
    t0 = time.perf_counter_ns()
    if put_kw:
        for _ in range(n):
            put(MSG, timeout=5)
            get()
    elif get_kw:
        for _ in range(n):
            put(MSG)
            get(timeout=5)
    else:
        for _ in range(n):
            put(MSG)
            get()
    return time.perf_counter_ns() - t0


def loops(q, sq):
    w, r = q.writer, q.reader
    return {
        "get()": (w.put_nowait, r.get, False, False),
        "get(timeout=5)": (w.put_nowait, r.get, False, True),
        "read()": (w.put_nowait, r.read, False, False),
        "read(timeout=5)": (w.put_nowait, r.read, False, True),
        "put(m)": (w.put, r.get_nowait, False, False),
        "put(m, timeout=5)": (w.put, r.get_nowait, True, False),
        "write(m)": (w.write, r.get_nowait, False, False),
        "write(m, timeout=5)": (w.write, r.get_nowait, True, False),
        "SimpleQueue get()": (sq.put, sq.get, False, False),
        "SimpleQueue get(timeout=5)": (sq.put, sq.get, False, True),
    }


PAIRS = [("get(timeout=5)", "get()"), ("read(timeout=5)", "read()"),
         ("put(m, timeout=5)", "put(m)"), ("write(m, timeout=5)", "write(m)"),
         ("SimpleQueue get(timeout=5)", "SimpleQueue get()")]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python benchmarks/python/timeout_cost.py")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--cpu", type=int, default=0, help="pin to this CPU (-1: not pinned)")
    args = ap.parse_args(argv)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    with pq.Queue() as q:              # publish 'each', the Python default
        table = loops(q, queue.SimpleQueue())
        names = list(table)
        got = {k: [] for k in names}
        for name in names:             # warm-up
            _loop(*table[name], n=args.messages // 10)
        for rnd in range(args.rounds):
            k = rnd % len(names)
            for name in names[k:] + names[:k]:
                got[name].append(_loop(*table[name], n=args.messages) / args.messages)
    print("command: python %s" % " ".join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])))
    print("ns per write+read pair, median of %d interleaved rounds of %d:"
          % (args.rounds, args.messages))
    for name in names:
        print("  %-28s %7.1f" % (name, statistics.median(got[name])))
    print("with a timeout / without (median of per-round ratios; goal <= 1.15x):")
    for a, b in PAIRS:
        ratio = statistics.median(x / y for x, y in zip(got[a], got[b]))
        print("  %-28s %.3fx" % (a, ratio))


if __name__ == "__main__":
    main()
