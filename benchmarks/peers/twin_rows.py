"""pyqueue's inline twins beside the minimal ring and the peers' fastest twins,
interleaved in one run (the order rotated each round), as ratios' raw material.

    python benchmarks/peers/twin_rows.py [--messages 4000000] [--rounds 5] [--gap-ns 0]
                                         [--episodes] [--variant NAME=ROW[:FIELD=VALUE,...]]
                                         [--rows ROW,...] [--against ROW] [--fifo PRIO]

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
threads inherit it) and rests outside it after, as the bench's --fifo does.

Each slice is bracketed by the bench's one-way ping-pong probe (DESIGN §8.2,
pyqueue.lab.common.placement): the host moves the two vCPUs between a near and
a far placement mid-run, so the medians are printed per placement, slices whose
two probes disagree apart as "moved", and each row's ratio to --against (the
median of per-round ratios, rounds whose slices all share one placement) beside
them; a round's every slice is also printed."""
import argparse
import os
import time

import pyqueue.lab.common.placement as placement
import pyqueue.lab.common.twins as twins
from pyqueue.lab.experiments.bench import probe_one_way_ns

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
    ap.add_argument("--against", default=None,
                    help="the row ratios are taken to (default: yardstick when run, else the first)")
    ap.add_argument("--fifo", type=int, default=0, help="SCHED_FIFO priority per slice (0: off)")
    args = ap.parse_args()
    rows = [(r, r, {}) for r in args.rows.split(",") if r] + args.variant
    spec = {name: (row, kw) for name, row, kw in rows}
    against = args.against or ("yardstick" if "yardstick" in spec else rows[0][0])
    if against not in spec:
        ap.error("--against %r is none of the rows" % against)
    backlog = {name: twins.stream_backlog(row, **kw) if args.episodes else 0
               for name, row, kw in rows}

    def run_slice(name):
        row, kw = spec[name]
        try:
            t = slice_run(row, kw, args, backlog[name])
        except twins.UnsupportedError as e:
            return float("nan"), {"error": str(e)}
        if backlog[name]:
            st = t["stream"]
            return st["mmsg_s"] or 0.0, {"reader": st["reader_mmsg_s"] or 0.0,
                                         "regime": st["regime"]}
        return t["mmsg_s"], {"regime": t["regime"]["regime"]}

    def show(sl):
        print("round %d %-22s %7.1f  probe %.0f/%.0f ns (%s)%s" % (
            sl.round, sl.contender, sl.value, sl.probe_before_ns, sl.probe_after_ns,
            sl.placement, ("  not measured: " + sl.extra["error"]) if "error" in sl.extra
            else ""), flush=True)

    slices = placement.interleave(list(spec), args.rounds, run_slice,
                                  lambda: probe_one_way_ns(0, 1), on_slice=show)
    slices = [sl for sl in slices if "error" not in sl.extra]
    what = "writer in episodes" if args.episodes else "median"
    reader = placement.medians_by_placement(slices, key=lambda sl: sl.extra.get("reader", 0.0))
    for place, meds in sorted(placement.medians_by_placement(slices).items()):
        print("%s: %s, M msg/s (slices); ratio to %s per round (rounds)" % (place, what, against))
        for name in spec:
            if name not in meds:
                continue
            med, n = meds[name]
            rat = placement.ratios_by_placement(slices, name, against).get(place, {})
            regimes = sorted({sl.extra["regime"] for sl in slices
                              if sl.contender == name and sl.placement == place})
            print("  %-22s %7.1f (%d)%s  %s  regimes: %s" % (
                name, med, n,
                "  reader %7.1f" % reader[place][name][0] if args.episodes else "",
                "%.2fx (%d)" % (rat["median"], len(rat["ratios"])) if rat.get("median")
                else "ratio -", ", ".join(regimes)))


if __name__ == "__main__":
    main()
