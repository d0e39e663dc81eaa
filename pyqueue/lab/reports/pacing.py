"""The figures and text tables of the drain-rate and pacing experiments
(experiments/pacing.py), computed from their Bursts; nothing here measures.

Each table starts with the lines that say how its numbers were computed.
"""
import math
import statistics

import numpy as np

from pyqueue import pacing as model
from ..common.pacing_rig import STALL_NS, fit_line
from pyqueue.table import render

__all__ = ["drain_results", "pace_plan", "pacing_results", "drain_text", "pacing_text", "grid",
           "ms", "rate", "ratio_text", "median"]


def median(xs):
    """Median of the finite values of xs, or None when there are none."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.median(xs) if xs else None


def grid(head, rows, markdown=False):
    """A table (common/table.py, the one formatter) as a list of lines."""
    return render(head, rows, markdown=markdown).splitlines()


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
    return ("Consumer cost per %d-byte message: spin %d ns on the cycle counter%s; writer "
            "(producer) %s -> reader (consumer) %s, %s; publish %s." % (
                p["msg_size"], p["work_ns"], " + verify" if p["verify"] else "",
                cpu(p["writer_cpu"]), cpu(p["reader_cpu"]), pol, _publish(p)))


def _publish(p):
    queue = p.get("queue") or {}
    return "'%s'" % queue.get("publish", "each")


def drain_text(res, p, markdown=False):
    lines = ["Drain rate D.  " + _setup_line(p),
             "Unpaced bursts: every message is scheduled at the burst's ready time; delay = "
             "dequeue - scheduled (CLOCK_MONOTONIC).",
             "D_max = N / max delay; D_fit = 1 / slope of the least-squares "
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
                         rows, markdown=markdown)
    r = res.results
    rows = [("{:,}".format(int(n)), v["runs"], rate(v["d_max_median"]), rate(v["d_fit_median"]),
             rate(v["d_max_min"]), "%.1f %%" % (100 * v["spread"]) if v["spread"] is not None else "-")
            for n, v in r["by_size"].items()]
    lines += ["", "Per burst size (median over reps):"]
    lines += grid(("N", "runs", "D_max", "D_fit", "lowest D_max", "spread max/min"), rows,
                  markdown=markdown)
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


def pacing_text(res, params, markdown=False):
    r = res.results
    n = params["burst"]
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
                          "measured/T", "pacer late", "stalls", "steal"), rows, markdown=markdown)
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
                       "model growth"), rows, markdown=markdown)
    return "\n".join(lines)


# ------------------------------------------------------------- the figures ----

def drain_results(runs, sizes):
    by = {}
    for n in sizes:
        rs = [b for b in runs if b.n == n]
        dmax = [b.metrics["d_max"] for b in rs]
        dfit = [b.metrics["d_fit"] for b in rs]
        by[str(n)] = dict(runs=len(rs), d_max=dmax, d_fit=dfit,
                          max_delay_ns=[b.metrics["max_delay_ns"] for b in rs],
                          d_max_median=median(dmax), d_fit_median=median(dfit),
                          d_max_min=min(dmax) if dmax else None,
                          spread=(max(dmax) / min(dmax) - 1) if dmax else None)
    big, small = str(max(sizes)), str(min(sizes))
    out = dict(by_size=by, d_typical=by[big]["d_max_median"], d_conservative=by[big]["d_max_min"],
               d_fit=by[big]["d_fit_median"])
    if big != small:
        agree = {}
        for k in ("d_max_median", "d_fit_median"):
            a, b = by[big][k], by[small][k]
            agree[k[:-7]] = abs(a / b - 1) if a and b else None
        agree["within_10pct"] = (all(v is not None and v <= 0.10 for v in agree.values())
                                 if agree else None)
        out["agreement"] = agree
    return out


def pace_plan(res, params):
    """{target: P_max (inf: unpaced)} from the D chosen by pace_with, or None."""
    d = res.drain.results.get("d_" + params["pace_with"])
    if not d or not math.isfinite(d):
        return None, None
    d *= 1.0 - params["d_margin"]
    return d, {t: model.p_max(d, t, params["burst"]) for t in params["targets"]}


def pacing_results(res, params):
    n = params["burst"]
    d_pace, plan = pace_plan(res, params)
    d_typ = res.drain.d
    out = dict(drain=res.drain.results, d_pace=d_pace, d_typical=d_typ, targets=[])
    if plan is None:
        return out
    for t in params["targets"]:
        bs = [b for b in res.paced if b.target_s == t]
        pm = plan[t]
        measured = [b.metrics["max_delay_ns"] * 1e-9 for b in bs]
        d_runs = [b.metrics["d_run"] for b in bs]
        at_run = [model.max_delay(n, pm, d) if d and math.isfinite(d) else None for d in d_runs]
        out["targets"].append(dict(
            t=t, p_max=pm, p_over_d=pm / d_pace, tight_loop_ok=bool(n <= d_pace * t),
            model_at_d_pace=model.max_delay(n, pm, d_pace),
            model_at_d_typical=model.max_delay(n, pm, d_typ),
            measured_max_s=measured, ratio=[m / t for m in measured],
            ratio_median=median([m / t for m in measured]),
            ratio_worst=max([m / t for m in measured]) if measured else None,
            d_run=d_runs, model_at_d_run=at_run,
            offer_late_max_ns=[b.metrics["offer_late_max_ns"] for b in bs],
            stalls=[b.metrics["stalls"] for b in bs], stall_ns=[b.metrics["stall_ns"] for b in bs],
            first_delay_ns=[b.metrics["first_delay_ns"] for b in bs],
            steal_ms=[b.metrics["steal_ms"]["consumer"] for b in bs]))
    out["checks"] = [dict(round=b.round, start_ns=b.start_ns, utc=b.utc, d_max=b.metrics["d_max"],
                          d_fit=b.metrics["d_fit"]) for b in res.checks]
    streams = []
    for f in params["stream_factors"]:
        bs = [b for b in res.streams if b.metrics["factor"] == f]
        pred = 1 - 1 / f if f > 1 else 0.0      # d(delay)/d(time) = 1 - D/P above D
        streams.append(dict(factor=f, rate=f * d_typ, messages=params["stream_messages"],
                            segment_max_ns=[[int(x.max()) for x in np.array_split(
                                b.delay_ns, params["stream_segments"])] for b in bs],
                            max_delay_ns=[b.metrics["max_delay_ns"] for b in bs],
                            model_max_delay_s=model.max_delay(params["stream_messages"],
                                                              f * d_typ, d_typ),
                            model_growth_per_s=pred,
                            growth_per_s=[_growth(b) for b in bs]))
    out["streams"] = streams
    return out


def _growth(b):
    """Fitted slope of delay vs scheduled time (s of delay per s of stream)."""
    slope, _ = fit_line(b.delay_ns)                 # ns per message
    return slope * b.rate * 1e-9 if b.rate else None
