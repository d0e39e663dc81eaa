"""The text tables of the drain-rate and pacing experiments (experiments/pacing.py).

Each table starts with the lines that say how its numbers were computed.
"""
import math
import statistics

from ..common.pacing_rig import STALL_NS

__all__ = ["drain_text", "pacing_text", "grid", "ms", "rate", "ratio_text", "median"]


def median(xs):
    """Median of the finite values of xs, or None when there are none."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.median(xs) if xs else None


def grid(head, rows):
    """Plain aligned columns: header, rule, rows (a list of lines)."""
    rows = [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in [tuple(head)] + rows) for i in range(len(head))]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    return [(fmt % tuple(head)).rstrip(), "  ".join("-" * w for w in widths)] + \
        [(fmt % r).rstrip() for r in rows]


def ms(ns, unit=True):
    """ns -> '54.1 ms' / '612 µs' (unit=False: always ms, no unit); None -> '-'."""
    if ns is None or not math.isfinite(ns):
        return "-"
    if not unit:
        return "%.3g" % (ns * 1e-6)
    if abs(ns) >= 1e5:
        return "%.3g ms" % (ns * 1e-6)
    return "%.3g µs" % (ns * 1e-3)


def rate(per_s):
    """msg/s -> '1.634 M/s'; None -> '-'."""
    if per_s is None or not math.isfinite(per_s):
        return "-" if per_s is None or math.isnan(per_s) else "inf"
    return "%.3f M/s" % (per_s * 1e-6)


def ratio_text(median_ratio, worst_ratio):
    """'0.93 [1.12]' (median [worst]); '-' when not measured."""
    if median_ratio is None:
        return "-"
    return "%.2f [%.2f]" % (median_ratio, worst_ratio)


def _setup_line(p):
    pol = "SCHED_FIFO %d" % p["fifo_priority"] if p["fifo_priority"] else "SCHED_OTHER"
    cpu = lambda c: "unpinned" if c < 0 else "CPU %d" % c
    return ("Consumer cost per %d-byte message: spin %d ns on the cycle counter%s; producer %s "
            "-> consumer %s, %s; publish 'each'." % (
                p["size"], p["work_ns"], " + verify" if p["verify"] else "",
                cpu(p["producer_cpu"]), cpu(p["consumer_cpu"]), pol))


def drain_text(res, p):
    lines = ["Drain rate D (SPEC §6.5).  " + _setup_line(p),
             "Unpaced bursts: every message is scheduled at the burst's ready time; delay = "
             "dequeue - scheduled (CLOCK_MONOTONIC).",
             "D_max = N / max delay (seed 004's method); D_fit = 1 / slope of the least-squares "
             "line of delay vs position; stalls = gaps > %d us without a dequeue, from the first "
             "scheduled send (kept); steal = host steal on the consumer CPU (10 ms ticks)."
             % (STALL_NS // 1000)]
    if not res.runs:
        return "\n".join(lines + ["", "not measured (no run finished)"])
    t0 = res.runs[0].start_ns
    rows = [("%s" % "{:,}".format(b.n), b.round + 1, "%.2f" % ((b.start_ns - t0) * 1e-9),
             ms(b.metrics["max_delay_ns"]), rate(b.metrics["d_max"]), rate(b.metrics["d_fit"]),
             "%d (%s)" % (b.metrics["stalls"], ms(b.metrics["stall_ns"])), _steal(b))
            for b in res.runs]
    lines += [""] + grid(("N", "rep", "t (s)", "max delay", "D_max", "D_fit", "stalls", "steal"),
                         rows)
    r = res.results
    rows = [("{:,}".format(int(n)), v["runs"], rate(v["d_max_median"]), rate(v["d_fit_median"]),
             rate(v["d_max_min"]), "%.1f %%" % (100 * v["spread"]) if v["spread"] is not None else "-")
            for n, v in r["by_size"].items()]
    lines += ["", "Per burst size (median over reps):"]
    lines += grid(("N", "runs", "D_max", "D_fit", "lowest D_max", "spread max/min"), rows)
    ag = r.get("agreement")
    if ag:
        lines += ["", "Agreement of the two sizes |D(big)/D(small) - 1|: D_max %s, D_fit %s -> "
                  "%s" % (_pct(ag["d_max"]), _pct(ag["d_fit"]),
                          "within 10 %" if ag["within_10pct"] else "NOT within 10 %")]
    lines.append("D typical = %s (median D_max of the largest bursts), conservative = %s "
                 "(their lowest)." % (rate(r["d_typical"]), rate(r["d_conservative"])))
    return "\n".join(lines)


def _steal(b):
    st = b.metrics.get("steal_ms", {}).get("consumer")
    return "-" if st is None else "%g ms" % st


def _pct(x):
    return "-" if x is None else "%.1f %%" % (100 * x)


def pacing_text(res, params):
    r = res.results
    n = params["n"]
    if not r.get("targets"):
        return "Paced bursts: not measured (D unknown: the drain phase did not finish)."
    how = params["pace_with"] + (" - %g %%" % (100 * params["d_margin"]) if params["d_margin"] else "")
    lines = ["Paced bursts of N = %s at P_max = D/(1 - T·D/N) with D = %s (%s), pacer burst 1, "
             "%d round(s).  Delay from each message's scheduled time." % (
                 "{:,}".format(n), rate(r["d_pace"]), how, params["rounds"]),
             "model@D_typ: max_delay(N, P, D typical); model@D_run: with the rate the consumer "
             "delivered in that burst ((N-1)/(last - first dequeue)), median over rounds.",
             "measured: max delay of the burst, median [worst] over rounds; pacer late = worst "
             "(offer - scheduled); stalls and steal: summed over rounds."]
    rows = []
    for t in r["targets"]:
        meas = t["measured_max_s"]
        rows.append((ms(t["t"] * 1e9), "unpaced" if math.isinf(t["p_max"]) else rate(t["p_max"]),
                     "inf" if math.isinf(t["p_max"]) else "%.3f" % t["p_over_d"],
                     ms(t["model_at_d_typical"] * 1e9),
                     ms(median(t["model_at_d_run"]) * 1e9 if median(t["model_at_d_run"]) is not None else None),
                     "%s [%s]" % (ms(median(meas) * 1e9 if meas else None),
                                  ms(max(meas) * 1e9 if meas else None)),
                     ratio_text(t["ratio_median"], t["ratio_worst"]),
                     # unpaced: every message is scheduled at once, lateness is the send loop
                     "n/a" if math.isinf(t["p_max"]) else
                     ms(max(t["offer_late_max_ns"]) if t["offer_late_max_ns"] else None),
                     "%d (%s)" % (sum(t["stalls"]), ms(sum(t["stall_ns"]))),
                     "-" if None in t["steal_ms"] else "%g ms" % sum(t["steal_ms"])))
    lines += [""] + grid(("T", "P", "P/D_pace", "model@D_typ", "model@D_run", "measured max",
                          "measured/T", "pacer late", "stalls", "steal"), rows)
    if r.get("checks"):
        t0 = res.runs[0].start_ns
        lines += ["", "Drift: unpaced check burst of N each round (t = s since the first run): " +
                  ", ".join("t=%.1f %s" % ((c["start_ns"] - t0) * 1e-9, rate(c["d_max"]))
                            for c in r["checks"])]
    if r.get("streams"):
        lines += ["", "Sustained streams of %s messages at P = f·D typical; max delay in each of "
                  "%d consecutive segments; growth = fitted d(delay)/d(time), model 1 - D/P "
                  "above D, 0 below." % ("{:,}".format(params["stream_messages"]),
                                         params["stream_segments"])]
        rows = []
        for st in r["streams"]:
            for i, segs in enumerate(st["segment_max_ns"]):
                g = st["growth_per_s"][i]
                rows.append(("%.2f" % st["factor"], rate(st["rate"]), i + 1,
                             " ".join(ms(x, unit=False) for x in segs),
                             ms(st["model_max_delay_s"] * 1e9), "%.3f" % g if g is not None else "-",
                             "%.3f" % st["model_growth_per_s"]))
        lines += grid(("f", "P", "round", "segment max delays (ms)", "model max", "growth",
                       "model growth"), rows)
    return "\n".join(lines)
