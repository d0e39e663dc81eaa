"""The tables of a core-to-core run (experiments/c2c.py): per-pair matrices,
the queue against the two-line floor, the pair over time.  Nothing here measures.

One-way latency = ping-pong round trip / 2, nearest rank per round, mean over rounds.
"""
import numpy as np

from ..runtime.topology import RELATION_LABELS as RELATION_NAMES
from ..common import placement
from ..common.stats import NOT_ENOUGH, honest_rank, per_round_then_mean
from pyqueue.table import render

__all__ = ["one_way", "matrix_tables", "queue_summary", "summary_text"]


def one_way(ticks, tpn, ps=(50.0, 99.0)):
    """Nearest-rank one-way percentiles (ticks, ns) of round-trip tick samples; NaN
    for a percentile with fewer than 10 samples beyond it (stats.reported)."""
    t = honest_rank(ticks, ps)[0] / 2.0
    return t, t / tpn


def _cell_stats(rounds_ticks, tpn):
    """Per round nearest-rank p50/p99 of one-way ticks, mean over rounds."""
    rp = per_round_then_mean([np.asarray(r, dtype=np.float64) / 2.0 for r in rounds_ticks],
                             (50.0, 99.0))
    return rp.mean, rp.min, rp.max


def matrix_tables(cpus, relations, mode_cells, tpn):
    n = len(cpus)
    out = {}
    for mode, cells in mode_cells.items():
        m = {k: np.full((n, n), np.nan) for k in ("median_cycles", "p99_cycles",
                                                  "median_min_cycles", "median_max_cycles")}
        for (i, j), rounds in cells.items():
            if not rounds:
                continue
            mean, lo, hi = _cell_stats(rounds, tpn)
            m["median_cycles"][i, j], m["p99_cycles"][i, j] = mean
            m["median_min_cycles"][i, j], m["median_max_cycles"][i, j] = lo[0], hi[0]
        for k in list(m):
            m[k.replace("cycles", "ns")] = m[k] / tpn
        out[mode] = {k: v.tolist() for k, v in m.items()}
    return out


def _f(x, digits=1):
    """A figure, or what stands in for one that is not reported (NaN / null)."""
    if x is None or not np.isfinite(x):
        return NOT_ENOUGH
    return "%.*f" % (digits, x)


def summary_text(res, markdown=False):
    lines = ["Core-to-core one-way latency (ping-pong round trip / 2), cycle counter at "
             "%.3f GHz; nearest-rank per round, mean over rounds" % res.ticks_per_ns]
    step = res.timer_step_ticks
    if step and step > 1:
        lines.append("The cycle counter moves %d ticks (%.1f ns) at a time here: one-way figures "
                     "are multiples of %.1f ns." % (step, step / res.ticks_per_ns,
                                                    step / res.ticks_per_ns / 2))
    cpus = res.cpus
    for mode, m in res.matrix.items():
        lines.append("")
        lines.append("%s: median ns [p99 ns]" % mode)
        # The diagonal is NaN in memory, null once loaded from summary.json.
        rows = [["cpu%d" % a] + ["-" if m["median_ns"][i][j] is None
                                 or not np.isfinite(m["median_ns"][i][j]) else
                                 "%s [%s]" % (_f(m["median_ns"][i][j]), _f(m["p99_ns"][i][j]))
                                 for j, _ in enumerate(cpus)] for i, a in enumerate(cpus)]
        lines.append(render(["from\\to"] + ["cpu%d" % c for c in cpus], rows, markdown=markdown))
    lines.append("")
    lines.append("relations: " + "; ".join(
        "%d-%d %s" % (a, b, RELATION_NAMES.get(res.relations[i][j], res.relations[i][j]))
        for i, a in enumerate(cpus) for j, b in enumerate(cpus) if i < j))
    q = res.queue
    if q.get("variants"):
        lines.append("")
        lines.append("pyqueue round trip vs the two-line floor on CPUs %d->%d "
                     "(same rounds, interleaved):" % tuple(q["pair"]))
        rows = [[name, _f(v["median_ns"]), _f(v["p99_ns"]),
                 "%s / %s" % (_f(v["median_cycles"], 0), _f(v["p99_cycles"], 0))]
                + (["", "", ""] if name == "two_lines" else
                   ["%.2fx" % v["ratio_median"], _fmt_ratio(v["ratio_by_placement"].get("near")),
                    _fmt_ratio(v["ratio_by_placement"].get("far"))])
                for name, v in q["variants"].items()]
        lines.append(render(["variant", "one-way median ns", "p99 ns", "cycles median / p99",
                             "ratio (per-round median)", "near", "far"], rows,
                            markdown=markdown))
    ot = res.over_time
    if ot.get("t_s"):
        lines.append("")
        lines.append("same pair over time (CPUs %d->%d, %d slices over %.1f s):"
                     % (ot["pair"][0], ot["pair"][1], len(ot["t_s"]), ot["t_s"][-1]))
        for mode in ot["modes"]:
            med = np.asarray(ot[mode]["median_ns"], dtype=float)
            lines.append("  %-10s slice medians min %.1f  median %.1f  max %.1f ns  "
                         "(max/min %.2fx)" % (mode, med.min(), np.median(med), med.max(),
                                              med.max() / med.min()))
    lines.append("")
    lines.append("status: %s" % res.status)
    return "\n".join(lines)


def _fmt_ratio(entry):
    if not entry or entry.get("median") is None:
        return "-"
    return "%.2fx/%d" % (entry["median"], len(entry["ratios"]))


def queue_summary(pair, qslices, qmeta, tpn, split_ns):
    if not qslices or not qslices.get("two_lines"):
        return {"pair": list(pair), "variants": {}}
    out = {"pair": list(pair), "variants": {}, "rounds": len(qslices["two_lines"]),
           "method": "one-way = round trip / 2; ratio = variant median / two-line median of "
                     "the same round (slices interleaved, order rotated per round); rounds "
                     "grouped by the floor's placement (near < %.0f ns one-way)" % split_ns}
    floor_round = [float(one_way(s, tpn)[1][0]) for s in qslices["two_lines"]]
    for name, rounds in qslices.items():
        allr = np.concatenate(rounds)
        # Rounds pooled; a percentile with fewer than 10 round trips beyond it: NaN.
        t, why = honest_rank(allr, (50.0, 99.0))
        t = t / 2.0
        ns = t / tpn
        per_round = [float(one_way(s, tpn)[1][0]) for s in rounds]
        v = {"median_ns": float(ns[0]), "p99_ns": float(ns[1]), "median_cycles": float(t[0]),
             "p99_cycles": float(t[1]), "round_median_ns": per_round}
        if why:
            v["not_reported"] = {{"p50": "median_ns", "p99": "p99_ns"}[k]: w
                                 for k, w in why.items()}
        if name != "two_lines":
            ratios = [x / f for x, f in zip(per_round, floor_round)]
            v["ratios"] = ratios
            v["ratio_median"] = float(np.median(ratios))
            by = {}
            for x, f in zip(ratios, floor_round):
                by.setdefault(placement.tag(f, split_ns), []).append(x)
            v["ratio_by_placement"] = {k: {"ratios": r, "median": float(np.median(r))}
                                       for k, r in by.items()}
        out["variants"][name] = v
    out["timer_ticks"] = [m["two_lines"]["timer_ticks"] for m in qmeta]
    return out
