"""Summaries and tables of the burst-tail study (experiments/burst_tail.py).

Latency figures are the original study's: the mean ns/query of each group of 16 measured
queries; p50/p99/p999 of those group means by nearest rank within each round,
then averaged over rounds (min–max across rounds kept).  Migration evidence: a
window "migrated" when the writer's CPU id at the end of the warm-up differs from
the one at the end of the send (both sampled outside the timed groups).
"""
import math

import numpy as np

from ..common.stats import NOT_MEASURED, nearest_rank, per_round_then_mean
from ..common.table import render

PS = (50.0, 99.0, 99.9)
LABELS = ("p50", "p99", "p999")
NONE = "none"               # the no-burst baseline class
# How far a class's mean backlog at window start may be from its target and
# still follow the protocol (fraction of capacity).
BACKLOG_TOLERANCE = 0.02


def _group_ns(c, params, r):
    n = c.done[r]
    return (c.rec["group_ticks"][r, :n].astype(np.float64)
            / params["ticks_per_ns"] / params["group_queries"])


def _slowest_share(group_ns, migrated, frac=0.01):
    """Share of the slowest `frac` of groups that fall in migrated windows."""
    flat = group_ns.ravel()
    if flat.size == 0:
        return None
    k = max(1, int(math.ceil(frac * flat.size)))
    slow = np.argpartition(flat, flat.size - k)[flat.size - k:]
    return float(migrated.repeat(group_ns.shape[1])[slow].mean())


def summarize(state, params, missing):
    """JSON-ready summary of every class (see the module doc for the method)."""
    rounds = params["rounds"]
    classes = {}
    for c in state:
        by_round = [_group_ns(c, params, r).ravel() for r in range(rounds)]
        rp = per_round_then_mean(by_round, PS)
        mig_rounds, slow_rounds, move_rounds = [], [], []
        backlog = []
        for r in range(rounds):
            n = c.done[r]
            if n == 0:
                continue
            warm, send = c.rec["cpu_warm"][r, :n], c.rec["cpu_send"][r, :n]
            cpus = np.stack([c.rec[k][r, :n] for k in ("cpu_start", "cpu_warm", "cpu_send", "cpu_end")])
            migrated = warm != send
            mig_rounds.append(float(migrated.mean()))
            move_rounds.append(float((cpus != cpus[0]).any(axis=0).mean()))
            slow_rounds.append(_slowest_share(_group_ns(c, params, r), migrated))
            backlog.append(c.rec["backlog"][r, :n].astype(np.float64) / max(c.capacity, 1))
        bl = np.concatenate(backlog) if backlog else np.zeros(0)
        sent_round, verified_round = _per_round_counts(c, params)
        send_ns = [c.rec["send_ticks"][r, :c.done[r]].astype(np.float64) / params["ticks_per_ns"]
                   for r in range(rounds)]
        send_all = np.concatenate(send_ns) if send_ns else np.zeros(0)
        t = c.totals() if c.ptr is not None else (c.round_totals[-1] if c.round_totals else {})
        classes[c.name] = {
            "adapter": c.adapter,
            "retry_yield_every": c.retry_yield_every,
            "spill_nontemporal": c.spill_nontemporal,
            "queue": c.queue,
            "latency_ns_per_query": rp.to_dict(),
            "windows_per_round": list(c.done),
            "migrated_window_share": _mean_or_none(mig_rounds),
            "migrated_window_share_per_round": mig_rounds,
            "any_cpu_change_share": _mean_or_none(move_rounds),
            "slowest_1pct_in_migrated_share": _mean_or_none([s for s in slow_rounds if s is not None]),
            "slowest_1pct_in_migrated_per_round": slow_rounds,
            "backlog_fraction": {"target": params["backlog_target"],
                                 "mean": _stat(bl, np.mean), "min": _stat(bl, np.min),
                                 "max": _stat(bl, np.max)},
            "capacity_messages": int(c.capacity),
            "backlog_target_messages": int(c.target),
            "messages_sent_per_round": sent_round,
            "messages_verified_per_round": verified_round,
            "messages_sent_total": int(t.get("sent", 0)),
            "messages_verified_total": int(t.get("verified", 0)),
            "all_verified": bool(t.get("sent", -1) == t.get("verified", -2) and not t.get("error")),
            "write_retries": int(t.get("retries", 0)),
            "yields": int(t.get("yields", 0)),
            "send_ns_median": _stat(send_all, np.median),
            "topup_messages": int(sum(int(c.rec["topup"][r, :c.done[r]].sum()) for r in range(rounds))),
            "business_checksum": int(t.get("checksum", 0)),
        }
        classes[c.name]["protocol_problems"] = _protocol(c, classes[c.name], bl)
    base = classes.get(NONE, {}).get("latency_ns_per_query")
    for name, d in classes.items():
        d["x_no_burst"] = ([_ratio(d["latency_ns_per_query"]["mean"][i], base["mean"][i])
                            for i in range(len(PS))] if base else None)
    return {"method": ("per-group mean ns/query (groups of %d measured queries after each "
                       "%d-byte send); nearest-rank p50/p99/p999 per round, mean over rounds, "
                       "min/max across rounds" % (params["group_queries"], params["send_bytes"])),
            "classes": classes,
            "not_installed": dict(missing),
            "protocol_not_met": {n: "; ".join(d["protocol_problems"])
                                 for n, d in classes.items() if d["protocol_problems"]},
            "ticks_per_ns": params["ticks_per_ns"]}


def _protocol(c, d, backlog):
    """What this class did that the protocol says it must not: a mean backlog at
    window start off its target, or sends that met a full queue when target +
    send fits the queue (or none that did when it cannot)."""
    problems = []
    target = c.target / max(c.capacity, 1)
    if backlog.size and abs(float(backlog.mean()) - target) > BACKLOG_TOLERANCE:
        problems.append("backlog %.1f%% of capacity, target %.1f%%"
                        % (100 * backlog.mean(), 100 * target))
    windows = sum(c.done)
    hit = sum(int((c.rec["retries"][r, :n] > 0).sum()) for r, n in enumerate(c.done))
    must_fit = c.target + c.send_messages <= c.capacity
    if windows and must_fit and hit:
        problems.append("the send met a full queue in %d of %d windows" % (hit, windows))
    elif windows and not must_fit and hit < windows:
        problems.append("the send fit in the queue in %d of %d windows (target + send exceed "
                        "the capacity)" % (windows - hit, windows))
    return problems


def _ratio(x, base):
    if x is None or base is None or not base or any(math.isnan(v) for v in (x, base)):
        return None
    return float(x / base)


def _per_round_counts(c, params):
    """Messages the windows' sends wrote in each round (the untimed top-ups are
    counted apart), and those the consumer verified during it."""
    sent = [int(c.done[r] * c.send_messages) for r in range(params["rounds"])]
    verified = []
    prev = c.fill_totals["verified"] if c.fill_totals else 0
    for t in c.round_totals:
        verified.append(int(t["verified"] - prev))
        prev = t["verified"]
    return sent, verified


def _mean_or_none(xs):
    return float(np.mean(xs)) if xs else None


def _stat(arr, fn):
    return float(fn(arr)) if arr.size else None


def _cell(d, i, digits=1):
    mean = d["mean"][i]
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return NOT_MEASURED
    text = "%.*f" % (digits, mean)
    lo, hi = d["min"][i], d["max"][i]
    if d.get("counts") and sum(1 for n in d["counts"] if n) > 1:
        text += " [%.*f–%.*f]" % (digits, lo, digits, hi)
    return text


def _x(ratios):
    if not ratios:
        return NOT_MEASURED
    return "/".join(NOT_MEASURED if r is None else "%.1f" % r for r in ratios)


def _pct(x):
    return "n/a" if x is None else "%.1f%%" % (100 * x)


def table(summary, params, markdown=False):
    """The study's table: one row per class; the classes not installed, and why, under it."""
    head = ["class", "p50 ns/query", "p99 ns/query", "p999 ns/query", "x no-burst p50/p99/p999",
            "migrated windows", "slowest 1% in migrated", "backlog (mean of cap)", "protocol",
            "sent = verified"]
    rows = []
    for name, d in summary["classes"].items():
        lat = d["latency_ns_per_query"]
        rows.append([name] + [_cell(lat, i) for i in range(3)] + [_x(d.get("x_no_burst"))] +
                    [_pct(d["migrated_window_share"]), _pct(d["slowest_1pct_in_migrated_share"]),
                     _pct(d["backlog_fraction"]["mean"]),
                     "NOT MET" if d.get("protocol_problems") else "ok",
                     "%s (%s)" % ("yes" if d["all_verified"] else "NO",
                                  "{:,}".format(d["messages_verified_total"]))])
    # The reason already starts "not installed" and names the Debian package.
    missing = ["%s: %s" % (name, why if why.startswith("not installed") else "not installed: " + why)
               for name, why in summary.get("not_installed", {}).items()]
    lines = render(head, rows, markdown=markdown, notes=missing).splitlines()
    rounds = params["rounds"]
    lines += ["",
              "Latency: mean ns/query of each group of %d queries measured right after a %s send; "
              "p50/p99/p999 by nearest rank (rank = ceil(p/100*n)) within each round, averaged over "
              "%d round%s; [min–max] across rounds." % (
                  params["group_queries"], _bytes(params["send_bytes"]), rounds, "s" * (rounds > 1)),
              "Migrated window: the writer's CPU id at the end of the warm-up differs from the one at "
              "the end of the send. Backlog: messages queued at window start / queue capacity "
              "(target %.0f%%)." % (100 * params["backlog_target"]),
              "x no-burst: the class's percentile / the same percentile of class 'none' (the same "
              "windows with no send)%s." % ("" if NONE in summary["classes"] else
                                            " -- not measured: 'none' was not among the classes"),
              "Protocol: before each window, untimed, the backlog is brought to the target (wait "
              "while above, top up with the consumer held while below); a class whose mean backlog "
              "is more than %.0f points off, or whose sends met a full queue the protocol keeps "
              "them from, is NOT MET." % (100 * BACKLOG_TOLERANCE),
              "Writer CPU %s, consumer CPU %s; %d windows per class per round in slices of %d, "
              "classes interleaved." % (_cpu(params["writer_cpu"]), _cpu(params["consumer_cpu"]),
                                         params["windows"], params["slice_windows"])]
    bad = summary.get("protocol_not_met") or {}
    if bad:
        lines += ["", "PROTOCOL NOT MET for: " + "; ".join("%s (%s)" % kv for kv in bad.items())]
    pmu = summary.get("pmu")
    if pmu:
        lines += ["", pmu_table(pmu)]
    return "\n".join(l.rstrip() for l in lines)


def _cpu(c):
    return "unpinned" if c < 0 else str(c)


def _bytes(n):
    return "%d MiB" % (n >> 20) if n % (1 << 20) == 0 else "%d B" % n


def pmu_summary(pmu, window_ns, names, opened, read_ns):
    """Counters of the PMU pass: per counter, the median over the middle 50% of
    windows (by time) and over the slowest 1%, or 'unavailable'."""
    out = {"counters_opened": bin(int(opened)).count("1"),
           "read_cost_ns": read_ns if read_ns >= 0 else None, "counters": {}}
    n = len(window_ns)
    if n == 0:
        return out
    order = np.argsort(window_ns)
    mid = order[n // 4: max(n // 4 + 1, 3 * n // 4)]
    slow = order[n - max(1, int(math.ceil(0.01 * n))):]
    out["window_ns"] = {"middle_50pct_median": float(np.median(window_ns[mid])),
                        "slowest_1pct_median": float(np.median(window_ns[slow]))}
    for i, name in enumerate(names):
        col = pmu[:, i]
        if not (int(opened) >> i) & 1:
            out["counters"][name] = "unavailable (perf_event_open refused it here)"
            continue
        out["counters"][name] = {"middle_50pct_median": float(np.median(col[mid])),
                                 "slowest_1pct_median": float(np.median(col[slow]))}
    return out


def pmu_table(pmu):
    lines = ["PMU pass (%d separate windows per class; counters read around the 64 measured "
             "queries only; medians, middle 50%% vs slowest 1%% of windows by time):" % pmu["windows"]]
    for name, d in pmu["classes"].items():
        cost = d.get("read_cost_ns")
        lines.append("  %s: %d counter(s) open, one read %s" % (
            name, d["counters_opened"], "%.0f ns" % cost if cost else "not measured"))
        for cname, v in d["counters"].items():
            if isinstance(v, str):
                lines.append("    %-24s %s" % (cname, v))
            else:
                lines.append("    %-24s %.1f -> %.1f" % (cname, v["middle_50pct_median"],
                                                         v["slowest_1pct_median"]))
    return "\n".join(lines)
