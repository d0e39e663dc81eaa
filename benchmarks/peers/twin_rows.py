"""pyqueue's inline twins beside the minimal ring and the peers' fastest twins,
interleaved in one run (the order rotated each round), as ratios' raw material.

    python benchmarks/peers/twin_rows.py [--messages 4000000] [--rounds 5] [--gap-ns 0]

Every row is a twin of pyqueue.lab.common.twins (csrc/bench/twins.c, the peers'
twin tables): 32-byte messages, writer CPU 0, reader CPU 1, every sequence
number checked.  Prints the median M msg/s per row, each round's figure and the
regimes the rounds were in (DESIGN §8: report which).  --gap-ns > 0 paces every
writer (the chasing pass)."""
import argparse

import numpy as np

import pyqueue.lab.common.twins as twins

ROWS = ["pyqueue", "pyqueue_stream", "pyqueue_burst32", "pyqueue_stream_burst32",
        "pyqueue_read_one", "yardstick", "dpdk_burst32", "atomic_queue_optimist"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=4_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--gap-ns", type=int, default=0)
    args = ap.parse_args()
    got = {r: [] for r in ROWS}
    regimes = {r: set() for r in ROWS}
    for k in range(args.rounds):
        for row in ROWS[k % len(ROWS):] + ROWS[:k % len(ROWS)]:
            try:
                t = twins.throughput(row, args.messages, gap_ns=args.gap_ns, window=0)
            except twins.UnsupportedError as e:
                print("%-24s not measured: %s" % (row, e))
                continue
            got[row].append(t["mmsg_s"])
            regimes[row].add(t["regime"]["regime"])
    for row in ROWS:
        if got[row]:
            print("%-24s median %7.1f M msg/s  (%s)  regimes: %s" % (
                row, np.median(got[row]), " ".join("%.0f" % v for v in got[row]),
                ", ".join(sorted(regimes[row]))))


if __name__ == "__main__":
    main()
