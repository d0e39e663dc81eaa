"""Summaries and tables of the burst-tail study (experiments/burst_tail.py).

Latency figures are the original study's: the mean ns/query of each group of 16 measured
queries; p50/p99/p999 of those group means by nearest rank within each round,
then averaged over rounds (min–max across rounds kept).  Migration evidence: a
window "migrated" when the writer's CPU id at the end of the warm-up differs from
the one at the end of the send (both sampled outside the timed groups).
"""
import math

import numpy as np

from ..common.stats import (NOT_ENOUGH, NOT_MEASURED, nearest_rank, per_round_then_mean,
                            short_reason)
from pyqueue.table import render

PS = (50.0, 99.0, 99.9)
LABELS = ("p50", "p99", "p999")
NONE = "none"               # the no-burst baseline class
TWIN = "-twin"              # a peer's class through its inline twin
DEFAULT_CLASS = "yield1024"  # pyqueue's default strategy (retry_yield_every 1024)
GAP = "none+gap"            # the no-send class idle as long as a send (none+gap or none+gap=G)
# The study's goals for the default class, as (what, percentile index, of, at most):
# against the best peer and no burst (the first study's), against the writer
# merely away as long as its send (issue 45's, with p99 / best peer's <= 0.7).
TARGETS = (("p99 / best peer's p99", 1, "peer", 0.7), ("p999 / best peer's p999", 2, "peer", 0.5),
           ("p99 / none's p99", 1, NONE, 2.0), ("p99 / none+gap's p99", 1, GAP, 1.1))
# How far a class's mean backlog at window start may be from its target and
# still follow the protocol (fraction of capacity).
BACKLOG_TOLERANCE = 0.02


# A quantile p is reported only where at least this many samples lie beyond it
# (n * (1 - p) >= 10, SPEC §6); else it is "not enough samples" (None in JSON).
BEYOND = 10


def quantile_or_none(samples, p):
    """The nearest-rank percentile p of ``samples``, or None when fewer than
    BEYOND of them lie beyond it (or there are none)."""
    arr = np.asarray(samples, dtype=np.float64).ravel()
    if arr.size == 0 or arr.size * (1.0 - p / 100.0) < BEYOND - 1e-9:
        return None
    return float(nearest_rank(arr, p))


def send_stats(by_round):
    """Each round's send duration (ns): its median and p99 (None where a round
    has too few windows for a p99: quantile_or_none), and the mean of each over
    the rounds that have it."""
    p50 = [quantile_or_none(r, 50.0) for r in by_round]
    p99 = [quantile_or_none(r, 99.0) for r in by_round]

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return float(np.mean(xs)) if xs else None
    return {"p50_per_round": p50, "p99_per_round": p99, "p50": mean(p50), "p99": mean(p99),
            "windows_per_round": [int(np.asarray(r).size) for r in by_round]}


def _group_ns(c, params, r, first=False):
    n = c.done[r]
    ticks = c.rec["group_ticks"][r, :n, :1] if first else c.rec["group_ticks"][r, :n]
    return ticks.astype(np.float64) / params["ticks_per_ns"] / params["group_queries"]


def _slowest_share(group_ns, migrated, frac=0.01):
    """Share of the slowest `frac` of groups that fall in migrated windows."""
    flat = group_ns.ravel()
    if flat.size == 0:
        return None
    k = max(1, int(math.ceil(frac * flat.size)))
    slow = np.argpartition(flat, flat.size - k)[flat.size - k:]
    return float(migrated.repeat(group_ns.shape[1])[slow].mean())


# A send "ran long" when it took more than this times its round's median send.
STRETCH = 1.2


def _by_pace(c, params):
    """The tail split by how long each window's send took (a breakdown, issue 45):
    per round, the windows whose send took at most STRETCH x the round's median
    ("usual") and the rest ("long"); the share of long ones and the p99 of the
    group means after each kind (quantile_or_none: None where too few lie beyond
    it), then the mean over the rounds that have it.  none has every window
    usual; none+gap's gaps are long where they followed long sends."""
    share, usual, long_ = [], [], []
    for r in range(params["rounds"]):
        n = c.done[r]
        if n == 0:
            continue
        send = c.rec["send_ticks"][r, :n].astype(np.float64)
        g = _group_ns(c, params, r)
        med = float(np.median(send))
        is_long = send > STRETCH * med if med > 0 else np.zeros(n, bool)
        share.append(float(is_long.mean()))
        usual.append(quantile_or_none(g[~is_long], 99.0))
        long_.append(quantile_or_none(g[is_long], 99.0))
    return {"stretch": STRETCH, "long_share": _mean_or_none(share), "long_share_per_round": share,
            "p99_after_usual": _mean_or_none([x for x in usual if x is not None]),
            "p99_after_usual_per_round": usual,
            "p99_after_long": _mean_or_none([x for x in long_ if x is not None]),
            "p99_after_long_per_round": long_}


def summarize(state, params, missing):
    """JSON-ready summary of every class (see the module doc for the method)."""
    rounds = params["rounds"]
    classes = {}
    for c in state:
        by_round = [_group_ns(c, params, r).ravel() for r in range(rounds)]
        rp = per_round_then_mean(by_round, PS)
        first = per_round_then_mean([_group_ns(c, params, r, True).ravel() for r in range(rounds)],
                                    PS)
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
        windows = [c.rec[k][r, :c.done[r]] for k in ("retries", "yields", "faults")
                   for r in range(rounds)]
        classes[c.name] = {
            "adapter": c.adapter,
            "driver": "twin" if c.name.endswith(TWIN) else "adapter",
            "driver_calls": c.driver,
            "retry_yield_every": c.retry_yield_every,
            "spill_nontemporal": c.spill_nontemporal,
            "queue": c.queue,
            "latency_ns_per_query": rp.to_dict(),
            "first_group_latency_ns_per_query": first.to_dict(),
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
            "by_send_pace": _by_pace(c, params),
            "send_ns": send_stats(send_ns),
            # The idle gap in place of the send of a class that sends nothing (ns;
            # None for a class that sends), and the class it was matched to.
            "gap_ns": getattr(c, "gap_ns", None),
            "gap_matched_to": ((params.get("gap_match") or {}).get("class")
                               if c.name == NONE + "+gap" else None),
            "retries_per_window": _stat(np.concatenate(windows[:rounds]).astype(np.float64), np.mean),
            "yields_per_window": _stat(np.concatenate(windows[rounds:2 * rounds]).astype(np.float64),
                                       np.mean),
            "page_faults_per_window": _stat(np.concatenate(windows[2 * rounds:]).astype(np.float64),
                                            np.mean),
            "windows_with_page_faults": int(sum(int((w > 0).sum()) for w in windows[2 * rounds:])),
            "topup_messages": int(sum(int(c.rec["topup"][r, :c.done[r]].sum()) for r in range(rounds))),
            "business_checksum": int(t.get("checksum", 0)),
        }
        classes[c.name]["protocol_problems"] = _protocol(c, classes[c.name], bl)
    base = classes.get(NONE, {}).get("latency_ns_per_query")
    for name, d in classes.items():
        d["x_no_burst"] = ([_ratio(d["latency_ns_per_query"]["mean"][i], base["mean"][i])
                            for i in range(len(PS))] if base else None)
    peers = _peer_drivers(classes)
    return {"method": ("per-group mean ns/query (groups of %d measured queries after each "
                       "%d-byte send); nearest-rank p50/p99/p999 per round, mean over rounds, "
                       "min/max across rounds" % (params["group_queries"], params["send_bytes"])),
            "classes": classes,
            "not_installed": dict(missing),
            "protocol_not_met": {n: "; ".join(d["protocol_problems"])
                                 for n, d in classes.items() if d["protocol_problems"]},
            "peers": peers,
            "targets": _targets(classes, peers),
            "gap_match": params.get("gap_match"),
            "ticks_per_ns": params["ticks_per_ns"], "clock": params.get("clock")}


def _p(d, i):
    v = d["latency_ns_per_query"]["mean"][i]
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _peer_drivers(classes):
    """Per peer measured through its adapter, its twin or both: the class the
    comparison uses (the lower p99: the faster driver), and twin / adapter."""
    out = {}
    for name, d in classes.items():
        if d["adapter"] == "pyqueue":
            continue
        peer = name[:-len(TWIN)] if name.endswith(TWIN) else name
        out.setdefault(peer, {})[d["driver"]] = name
    for peer, drivers in out.items():
        both = [drivers[k] for k in ("adapter", "twin") if k in drivers]
        used = min(both, key=lambda n: (_p(classes[n], 1) is None, _p(classes[n], 1) or 0))
        drivers["used"] = used
        if len(both) == 2:
            a, t = classes[drivers["adapter"]], classes[drivers["twin"]]
            drivers["twin_over_adapter"] = [_ratio(_p(t, i), _p(a, i)) for i in range(len(PS))]
    return out


def _targets(classes, peers):
    """The default class against the best peer (its faster driver) and none."""
    if DEFAULT_CLASS not in classes or not peers and NONE not in classes:
        return None
    used = [d["used"] for d in peers.values() if _p(classes[d["used"]], 1) is not None]
    best = min(used, key=lambda n: _p(classes[n], 1)) if used else None
    out = {"class": DEFAULT_CLASS, "best_peer": best, "rows": []}
    gap = GAP if GAP in classes else next((n for n in classes if n.startswith(GAP + "=")), None)
    for what, i, of, goal in TARGETS:
        if of == GAP and gap is None:
            continue            # no idle-gap class in this run: nothing to hold it against
        ref = best if of == "peer" else gap if of == GAP else (NONE if NONE in classes else None)
        r = _ratio(_p(classes[DEFAULT_CLASS], i), _p(classes[ref], i)) if ref else None
        row = {"what": what, "of": ref, "ratio": r, "goal": goal,
               "met": None if r is None else r <= goal}
        # Not reported (too few samples) rather than not measured: the class's own
        # percentile, its reference's, or (no best peer) every peer's.
        refs = (DEFAULT_CLASS, ref) if ref else (DEFAULT_CLASS,) + tuple(
            d["used"] for d in peers.values()) if of == "peer" else ()
        if r is None and any(LABELS[i] in (classes[n]["latency_ns_per_query"].get(
                "not_reported") or {}) for n in refs):
            row["not_reported"] = "not reported (%s)" % NOT_ENOUGH
        out["rows"].append(row)
    return out


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


def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def _why(d, i):
    """Why percentile i of a RoundPercentiles dict is not reported (table-cell form)."""
    label = d["labels"][i] if d.get("labels") else LABELS[i]
    return short_reason((d.get("not_reported") or {}).get(label)) or NOT_MEASURED


def _cell(d, i, digits=1, show_range=True):
    mean = d["mean"][i]
    if _missing(mean):
        return _why(d, i)
    text = "%.*f" % (digits, mean)
    lo, hi = d["min"][i], d["max"][i]
    used = sum(1 for r in d.get("per_round") or () if i < len(r) and not _missing(r[i]))
    if show_range and used > 1:
        text += " [%.*f–%.*f]" % (digits, lo, digits, hi)
    return text


def _x(ratios):
    if not ratios:
        return NOT_MEASURED
    return "/".join("–" if r is None else "%.1f" % r for r in ratios)


def _pct(x):
    return "n/a" if x is None else "%.1f%%" % (100 * x)


def table(summary, params, markdown=False):
    """The study's table: one row per class; the classes not installed, and why, under it."""
    head = ["class", "send p50 / p99 µs", "p50 ns/query", "p99 ns/query", "p999 ns/query",
            "x no-burst p50/p99/p999",
            "1st group p50/p99/p999", "retries/yields per window", "page faults per window",
            "migrated windows",
            "slowest 1% in migrated", "backlog (mean of cap)", "protocol", "sent = verified"]
    rows = []
    used = {d["used"] for d in (summary.get("peers") or {}).values() if "twin" in d and
            "adapter" in d}
    for name, d in summary["classes"].items():
        lat = d["latency_ns_per_query"]
        rows.append([name + (" (used)" if name in used else ""), _send_cell(d)] +
                    [_cell(lat, i) for i in range(3)] +
                    [_x(d.get("x_no_burst")), _triple(d.get("first_group_latency_ns_per_query")),
                     _waits(d), _faults(d)] +
                    [_pct(d["migrated_window_share"]), _pct(d["slowest_1pct_in_migrated_share"]),
                     _pct(d["backlog_fraction"]["mean"]),
                     "NOT MET" if d.get("protocol_problems") else "ok",
                     "%s (%s)" % ("yes" if d["all_verified"] else "NO",
                                  "{:,}".format(d["messages_verified_total"]))])
    # The reason already starts "not installed" and names the Debian package.
    missing = ["%s: %s" % (name, why if why.startswith("not installed") else "not installed: " + why)
               for name, why in summary.get("not_installed", {}).items()]
    lines = render(head, rows, markdown=markdown, notes=missing).splitlines()
    rounds = _rounds_run(summary)
    lines += ["",
              "Latency: mean ns/query of each group of %d queries measured right after a %s send; "
              "p50/p99/p999 by nearest rank (rank = ceil(p/100*n)) within each round, averaged over "
              "%d round%s%s; [min–max] across rounds." % (
                  params["group_queries"], _bytes(params["send_bytes"]), rounds, "s" * (rounds != 1),
                  "" if rounds == params["rounds"] else
                  " (the rounds run, of %d asked: the run was interrupted)" % params["rounds"]),
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
              "classes interleaved." % (_cpu(params["writer_cpu"]), _cpu(params["reader_cpu"]),
                                         params["windows"], params["slice_windows"])]
    lines += _unreported_line(summary)
    lines += [_send_line(summary)] + _pace_lines(summary) + _driver_lines(summary) + \
        _target_lines(summary)
    bad = summary.get("protocol_not_met") or {}
    if bad:
        lines += ["", "PROTOCOL NOT MET for: " + "; ".join("%s (%s)" % kv for kv in bad.items())]
    pmu = summary.get("pmu")
    if pmu:
        lines += ["", pmu_table(pmu)]
    return "\n".join(l.rstrip() for l in lines)


def _us(ns):
    return "n<%d" % (100 * BEYOND) if ns is None else "%.0f" % (ns / 1e3) if ns >= 1e5 \
        else "%.1f" % (ns / 1e3)


def _send_cell(d):
    """The send's median and p99 per round, mean over rounds, µs ('-' for none)."""
    st = d.get("send_ns")
    if not st or st.get("p50") is None or (d.get("gap_ns") == 0):
        return "-"
    return "%s / %s" % (_us(st["p50"]), _us(st["p99"]))


def _send_line(summary):
    """What the send column is, and how none+gap's gap was matched."""
    text = ("Send: the writer's time from the end of the warm-up to the first timed query -- the "
            "%s send, or a no-send class's idle gap -- median and p99 over each round's windows, "
            "mean over rounds, µs (a p99 needs %d windows a round beyond it)."
            % ("burst's", BEYOND))
    g = summary.get("gap_match")
    if g:
        text += (" none+gap idles where the send would be, as long as %s's median send: "
                 "%.1f µs over %d windows measured before the rounds (its p99 there %s µs)%s, "
                 "so it tells the writer's absence from the send's disturbance of the data."
                 % (g["class"], g["gap_ns"] / 1e3, g["windows"],
                    "n/a" if g["send_ns_p99"] is None else "%.1f" % (g["send_ns_p99"] / 1e3),
                    "" if not g.get("follow_windows") else
                    ", then, before each of its slices, over %s's last %d windows (the gap "
                    "follows the host's slow and fast states)" % (g["class"],
                                                                   g["follow_windows"])))
    return text


def _pace_lines(summary):
    """The tail after usual and after long sends, class by class (summarize, _by_pace)."""
    rows = []
    for name, d in summary["classes"].items():
        b = d.get("by_send_pace")
        if not b or (d.get("send_ns") or {}).get("p50") is None:
            continue
        sends = name != NONE            # none+gap's gap follows the sends: it can run long too
        rows.append("  %-20s %-9s %-22s %s" % (
            name, _pct(b["long_share"]) if sends else "-",
            _ns(b["p99_after_usual"]), _ns(b["p99_after_long"]) if sends else "-"))
    if not rows:
        return []
    return (["", "Tail by send pace: a send (or none+gap's idle gap, which follows the sends) "
             "is long when it took more than %.1fx its round's median. p99 ns/query of the "
             "groups after usual and after long sends, per round, mean over rounds ('–' where "
             "fewer than %d groups lie beyond it in every round):" % (STRETCH, BEYOND),
             "  %-20s %-9s %-22s %s" % ("class", "long", "p99 after usual send", "p99 after long send")]
            + rows)


def _ns(x):
    return "–" if x is None else "%.1f" % x


def _rounds_run(summary):
    """Rounds with at least one window of some class: an interrupted run's table
    averages over those, not over the rounds it was asked for."""
    return max((sum(1 for n in d["windows_per_round"] if n) for d in summary["classes"].values()),
               default=0)


def _triple(d):
    if not d:
        return NOT_MEASURED
    return "/".join("–" if _missing(d["mean"][i]) else _cell(d, i, 0, show_range=False)
                    for i in range(3))


def _unreported_line(summary):
    """What '–' and 'not enough samples' stand for, with the counts of this run."""
    notes = {}
    for d in summary["classes"].values():
        for key in ("latency_ns_per_query", "first_group_latency_ns_per_query"):
            for label, why in ((d.get(key) or {}).get("not_reported") or {}).items():
                if why and why.startswith(NOT_ENOUGH):
                    notes.setdefault((key, label), why)
    if not notes:
        return []
    what = {"latency_ns_per_query": "all groups", "first_group_latency_ns_per_query":
            "first groups"}
    return ["Not reported (a percentile needs at least 10 samples beyond it in each round; "
            "'–' in the ratio columns): " + "; ".join(
                "%s of %s: %s" % (label, what[key], why[len(NOT_ENOUGH) + 2:-1])
                for (key, label), why in sorted(notes.items()))
            + "."]


def _waits(d):
    r, y = d.get("retries_per_window"), d.get("yields_per_window")
    return NOT_MEASURED if r is None else "%.0f / %.1f" % (r, y)


def _faults(d):
    f = d.get("page_faults_per_window")
    return NOT_MEASURED if f is None else "%.1f (%d windows)" % (f, d["windows_with_page_faults"])


def _driver_lines(summary):
    """Each peer's two drivers side by side, and which one the comparison uses."""
    out = []
    for peer, d in (summary.get("peers") or {}).items():
        if "twin_over_adapter" not in d:
            continue
        lower = "the lower p99" if (d["twin_over_adapter"] or [None] * 2)[1] is not None else \
            "p99 not reported: the adapter's"
        out.append("  %s: twin / adapter p50/p99/p999 = %s; used: %s (%s)"
                   % (peer, _x(d["twin_over_adapter"]), d["used"], lower))
    if out:
        out = ["", "Drivers: <peer> runs through the adapter's table (an indirect call per "
               "message and a callback per message read), <peer>-twin the same loops with the "
               "library's calls inlined in the peer's own translation unit:"] + out
    return out


def _target_lines(summary):
    t = summary.get("targets")
    if not t:
        return []
    out = ["", "Targets for %s (best peer: %s, through its faster driver):"
           % (t["class"], t["best_peer"] or ("none with p99 reported" if any(
               r.get("not_reported") for r in t["rows"]) else "none measured"))]
    for row in t["rows"]:
        gone = row.get("not_reported") or NOT_MEASURED
        out.append("  %-26s %s (goal <= %.1f): %s" % (
            row["what"], gone if row["ratio"] is None else "%.2f" % row["ratio"],
            row["goal"], gone if row["met"] is None else ("met" if row["met"] else "missed")))
    return out


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
