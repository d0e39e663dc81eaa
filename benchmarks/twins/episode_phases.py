"""The writer alone and the pair together, inside one streaming run: each episode's
fill (the reader held while the writer writes the next backlog) against the
episode itself (both flat out), for twins or the bench's drivers, in alternating
near pairs (docs/BENCHMARKS.md, "What the driver got wrong": the cold latch).

    chrt -f 50 python benchmarks/twins/episode_phases.py [--pairs 20]
        [--rows pyqueue,pyqueue_stream,yardstick] [--driver] [--messages 4000000]
        [--near-ns 100]

A row may carry pyqueue configuration fields for its queue, ROW:FIELD=VALUE;...
(e.g. "pyqueue_stream:block_size=65536;hot_blocks=16;spill_blocks=0").

Per episode k >= 1 of a run (pyq_twin_episode_t, DESIGN §8.4): the fill is the
writer's messages from the reader's catch-up that ended episode k-1 to its
release of k, over that time (the reader spins on the release and shares
nothing with the writer then); the episode is the writer's messages from its
release to the reader's catch-up (or its own end), over that time, and the
reader's drain rate beside: both as the bench takes them, over the episodes it
counts (regime.episode_intervals).  Medians over a
run's episodes, then over the pairs whose one-way probes, before and after the
pair, were both near (< --near-ns, 100 ns; a large value keeps every pair, for a
machine whose placements are all far).  --driver runs the bench's driver
(twins.adapter_throughput) instead of the twin (twins.throughput)."""
import argparse
import time

import numpy as np

from pyqueue.lab.runtime import blas as _blas
from pyqueue.lab.common import regime, twins
from pyqueue.lab.experiments.bench import probe_one_way_ns

NEAR_NS = 100.0


def parse_row(text):
    """ROW or ROW:FIELD=VALUE;... -> (row, {field: int})."""
    row, _, fields = text.partition(":")
    cfg = {}
    for item in filter(None, fields.split(";")):
        field, eq, value = item.partition("=")
        if not eq:
            raise SystemExit("episode_phases: %r: a field needs =VALUE" % item)
        cfg[field] = int(value)
    return row, cfg


def phases(recs, messages, writer_end_ns):
    """(fill, episode, reader) M msg/s, medians over a run's episode records: the
    episode and reader columns are the bench's own (regime.episode_intervals,
    counted episodes), the fill this script's."""
    fill_n = recs["go_written"][1:].astype(float) - recs["end_read"][:-1]
    fill_ns = recs["go_ns"][1:].astype(float) - recs["end_ns"][:-1]
    ok = (recs["caught_up"][:-1] == 1) & (fill_ns > 0)
    eps = [e for e in regime.episode_intervals(recs, messages, writer_end_ns) if e["counted"]]
    ep = [e["writer_messages"] / e["writer_ns"] * 1e3 for e in eps]
    rd = [e["reader_messages"] / e["reader_ns"] * 1e3 for e in eps if e["reader_ns"]]
    return (float(np.median(fill_n[ok] / fill_ns[ok] * 1e3)) if ok.any() else float("nan"),
            float(np.median(ep)) if ep else float("nan"),
            float(np.median(rd)) if rd else float("nan"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--rows", default="pyqueue,pyqueue_stream,yardstick")
    ap.add_argument("--messages", type=int, default=4_000_000)
    ap.add_argument("--driver", action="store_true")
    ap.add_argument("--near-ns", type=float, default=NEAR_NS)
    a = ap.parse_args()
    _blas.single_thread()
    rows = a.rows.split(",")
    specs = {r: parse_row(r) for r in rows}
    run = twins.adapter_throughput if a.driver else twins.throughput
    # The records of the run just made: twins._stream sees them before it
    # summarises them (the result keeps only the summary).
    seen = {}
    summarise = twins._stream

    def keep(out, episodes, count, writer_end_ns):
        seen["run"] = (episodes.records(count), out["messages"], writer_end_ns)
        return summarise(out, episodes, count, writer_end_ns)

    twins._stream = keep
    got = {r: [] for r in rows}
    for i in range(a.pairs):
        before = probe_one_way_ns(0, 1)
        pair = {}
        for row in rows if i % 2 == 0 else rows[::-1]:
            name, cfg = specs[row]
            run(name, a.messages, backlog=twins.stream_backlog(name, **cfg), **cfg)
            pair[row] = phases(*seen["run"])
            time.sleep(0.02)
        if before < a.near_ns and probe_one_way_ns(0, 1) < a.near_ns:
            for row in rows:
                got[row].append(pair[row])
    print("%s, %d of %d pairs near (< %g ns); M msg/s, medians" % (
        "drivers" if a.driver else "twins", len(got[rows[0]]), a.pairs, a.near_ns))
    print("%-24s %10s %10s %10s" % ("row", "alone", "episode", "reader"))
    for row in rows:
        if got[row]:
            print("%-24s %10.0f %10.0f %10.0f" % ((row,) + tuple(np.nanmedian(np.array(got[row]),
                                                                            axis=0))))


if __name__ == "__main__":
    main()
