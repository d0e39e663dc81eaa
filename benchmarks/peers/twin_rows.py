"""pyqueue's inline twins beside the minimal ring and the peers' fastest twins,
interleaved in one run (the order rotated each round), as ratios' raw material.

    python benchmarks/peers/twin_rows.py [--messages 4000000] [--rounds 5] [--gap-ns 0]
                                         [--episodes] [--variant NAME=ROW[:FIELD=VALUE,...]]
                                         [--rows ROW,...] [--fifo PRIO]

Every row is a twin of pyqueue.lab.common.twins (csrc/bench/twins.c, the peers'
twin tables): 32-byte messages, writer CPU 0, reader CPU 1, every sequence
number checked.  Prints the median M msg/s per row, each round's figure and the
regimes the rounds were in (DESIGN §8: report which).  --gap-ns > 0 paces every
writer (the chasing pass).  --episodes runs the streaming regime on purpose
(DESIGN §8.4: the reader held while the writer gets half the capacity ahead,
twins.stream_backlog) and prints the writer's rate inside the episodes and the
reader's.  --variant adds a row of ROW's twin with queue settings of its own
(e.g. ``ntall=pyqueue:nontemporal_backlog_kib=0``), an A/B of a configuration
lever in the same run.  --fifo runs each slice under SCHED_FIFO at PRIO (its
threads inherit it) and rests outside it after, as the bench's --fifo does."""
import argparse
import os
import time

import numpy as np

import pyqueue.lab.common.twins as twins

ROWS = ["pyqueue", "pyqueue_stream", "pyqueue_burst32", "pyqueue_stream_burst32",
        "pyqueue_read_one", "yardstick", "dpdk_burst32", "atomic_queue_optimist"]


def variant(text):
    """NAME=ROW[:FIELD=VALUE,...] -> (NAME, ROW, {FIELD: int})."""
    name, _, spec = text.partition("=")
    row, _, fields = spec.partition(":")
    if not name or not row:
        raise argparse.ArgumentTypeError("a variant is NAME=ROW[:FIELD=VALUE,...], got %r" % text)
    kw = {k: int(v) for k, v in (f.split("=", 1) for f in fields.split(",") if f)}
    return name, row, kw


def slice_run(row, kw, args, backlog):
    old = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    if args.fifo:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.fifo))
    t0 = time.monotonic()
    try:
        return twins.throughput(row, args.messages, gap_ns=args.gap_ns, window=0,
                                backlog=backlog, **kw)
    finally:
        if args.fifo:
            os.sched_setscheduler(0, old[0], os.sched_param(old[1]))
            time.sleep(4 * (time.monotonic() - t0))  # the real-time throttle's share, and more


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=4_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--gap-ns", type=int, default=0)
    ap.add_argument("--episodes", action="store_true", help="streaming episodes (DESIGN §8.4)")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated twin rows")
    ap.add_argument("--variant", type=variant, action="append", default=[],
                    help="NAME=ROW[:FIELD=VALUE,...]: ROW with queue settings (repeatable)")
    ap.add_argument("--fifo", type=int, default=0, help="SCHED_FIFO priority per slice (0: off)")
    args = ap.parse_args()
    rows = [(r, r, {}) for r in args.rows.split(",") if r] + args.variant
    backlog = {name: twins.stream_backlog(row, **kw) if args.episodes else 0
               for name, row, kw in rows}
    got = {name: [] for name, _, _ in rows}
    read = {name: [] for name, _, _ in rows}
    regimes = {name: set() for name, _, _ in rows}
    for k in range(args.rounds):
        for name, row, kw in rows[k % len(rows):] + rows[:k % len(rows)]:
            try:
                t = slice_run(row, kw, args, backlog[name])
            except twins.UnsupportedError as e:
                print("%-24s not measured: %s" % (name, e))
                continue
            if backlog[name]:
                s = t["stream"]
                got[name].append(s["mmsg_s"] or 0.0)
                read[name].append(s["reader_mmsg_s"] or 0.0)
                regimes[name].add(s["regime"])
            else:
                got[name].append(t["mmsg_s"])
                regimes[name].add(t["regime"]["regime"])
    what = "writer in episodes" if args.episodes else "median"
    for name, _, _ in rows:
        if got[name]:
            extra = "  reader %7.1f" % np.median(read[name]) if read[name] else ""
            print("%-24s %s %7.1f M msg/s%s  (%s)  regimes: %s" % (
                name, what, np.median(got[name]), extra, " ".join("%.0f" % v for v in got[name]),
                ", ".join(sorted(regimes[name]))))


if __name__ == "__main__":
    main()
