"""The summary and the text table of an ownership run (experiments/ownership.py):
per-round percentiles of each arm and their ratio, checksums, drift between
slice pairs, placement tags and counters.  Nothing here measures."""
import errno as _errno
import os

import numpy as np

from .._lab import ffi, lib
from ..common import placement as _placement
from ..common.stats import (NOT_ENOUGH, NOT_MEASURED, format_table, honest_rank,
                            per_round_then_mean, percentile_label)

ARMS = ("self", "other")
PS = (50.0, 99.0, 99.9)
NCOUNTERS = lib.PYQ_OWNERSHIP_NCOUNTERS
COUNTER_NAMES = tuple(ffi.string(lib.pyq_perf_name(i)).decode() for i in range(NCOUNTERS))
HARDWARE_COUNTERS = COUNTER_NAMES[:lib.PYQ_PERF_CONTEXT_SWITCHES]


def _counter_reason(status):
    if status == 0:
        return ""
    code = -int(status)
    name = _errno.errorcode.get(code, str(code))
    if code in (_errno.ENOENT, _errno.EOPNOTSUPP, _errno.ENODEV):
        return "%s: the (virtual) CPU exposes no such event" % name
    return "%s: %s" % (name, os.strerror(code))


def _by_round(values, windows, rounds):
    return [values[r * windows:(r + 1) * windows] for r in range(rounds)]


def summarize(params, data, slices):
    """The summary of a run of OwnershipParams ``params`` (its JSON)."""
    _tag_pairs(slices, params["split_ns"])
    W, R, Q = params["windows"], params["rounds"], params["queries"]
    per_query = lambda x: None if x is None or not np.isfinite(x) else x / Q
    arms = {}
    for arm in ARMS:
        a = data["wall", arm]
        d = a.done
        rp = per_round_then_mean(_by_round(a.window_ns[:d], W, R), PS)
        groups = a.group_ns[:d].astype(np.float64) / (Q // params["groups"])
        gp = per_round_then_mean(_by_round(groups, W, R), PS)
        arms[arm] = {"windows": d, "window_ns": rp.to_dict(),
                     "per_query_ns": {percentile_label(p): per_query(rp.mean[i])
                                      for i, p in enumerate(PS)},
                     "group_mean_ns_per_query": gp.to_dict(),
                     "worker_off_cpu_windows": int(np.count_nonzero(
                         (a.worker_cpu[:d] != params["reader_cpu"]).any(axis=1))),
                     "helper_off_cpu_windows": int(np.count_nonzero(
                         a.helper_cpu[:d] != params["writer_cpu"]))}
    ratio = {}
    s_rp, o_rp = (per_round_then_mean(_by_round(data["wall", a].window_ns[:data["wall", a].done],
                                                W, R), PS) for a in ARMS)
    for i, p in enumerate(PS):
        per_round = [o / s if s > 0 else None for o, s in zip(o_rp.per_round[:, i], s_rp.per_round[:, i])
                     if np.isfinite(o) and np.isfinite(s)]
        ratio[percentile_label(p)] = {
            "of_means": (o_rp.mean[i] / s_rp.mean[i]) if s_rp.mean[i] > 0 else None,
            "per_round": per_round}
    return {"nodes": params["data_kib"] * 1024 // lib.PYQ_BUSINESS_NODE_SIZE,
            "arms": arms, "ratio_other_over_self": ratio,
            "checksums": _checksums(data), "drift": _drift(slices),
            "placement": _by_placement(params, data, slices),
            "counters": _counters(params, data, slices) if params["pmu"] else NOT_MEASURED,
            "clock": {"ticks_per_ns": slices[0]["ticks_per_ns"] if slices else None,
                      "timing": ("cycle counter (lfence+rdtsc / isb+cntvct) converted to ns"
                                 if slices and slices[0]["ticks_per_ns"] > 0
                                 else "CLOCK_MONOTONIC")},
            "method": ("per arm: nearest-rank p50/p99/p999 of the per-window ns (%d queries) per "
                       "round, mean over rounds, min/max across rounds; ratio = other/self of "
                       "those means; counter-free slices only" % Q)}


def _checksums(data):
    out = {"equal": True, "windows_compared": 0, "mismatches": 0}
    for mode in sorted({m for m, _ in data}):
        s, o = data[mode, "self"], data[mode, "other"]
        n = min(s.done, o.done)
        bad = np.count_nonzero((s.checksum[:n] != o.checksum[:n]) |
                               (s.data_checksum[:n] != o.data_checksum[:n]))
        out["windows_compared"] += n
        out["mismatches"] += int(bad)
    out["equal"] = out["mismatches"] == 0 and out["windows_compared"] > 0
    return out


def _pairs(slices):
    """Adjacent (self, other) wall slices of the same windows, in run order."""
    pairs = {}
    for s in slices:
        if s["mode"] == "wall":
            pairs.setdefault((s["round"], s["first_window"]), {})[s["arm"]] = s
    return [p for _, p in sorted(pairs.items()) if len(p) == 2]


def _tag_pairs(slices, split_ns):
    """Tag both slices of each pair 'near' / 'far' when their placement probes agree
    (placement.classify on the slices' median one-way probe), else 'moved'."""
    for p in _pairs(slices):
        tag = _placement.classify(p["self"]["probe_one_way_ns"], p["other"]["probe_one_way_ns"],
                                  split_ns)
        p["self"]["placement"] = p["other"]["placement"] = tag


def _drift(slices):
    """other/self ratio of slice medians for each adjacent wall pair, with its time."""
    ratios, times = [], []
    for p in _pairs(slices):
        if p["self"]["median_ns"] > 0:
            ratios.append(p["other"]["median_ns"] / p["self"]["median_ns"])
            times.append(min(p["self"]["start_ns"], p["other"]["start_ns"]) / 1e9)
    if not ratios:
        return {"pairs": 0}
    r = np.array(ratios)
    return {"pairs": len(ratios), "slice_pair_median_ratio": {
                "min": float(r.min()), "median": float(np.median(r)), "max": float(r.max())},
            "span_s": float(times[-1] - times[0]) if len(times) > 1 else 0.0,
            "note": "other/self ratio of slice medians per adjacent slice pair; the per-slice "
                    "timestamps are in samples/slices"}


def _by_placement(params, data, slices):
    """Per placement tag: pooled nearest-rank percentiles per arm and their ratio."""
    rows = {}
    for p in _pairs(slices):
        tag = p["self"].get("placement") or "moved"
        e = rows.setdefault(tag, {"pairs": 0, "probe": [], "self": [], "other": []})
        e["pairs"] += 1
        for arm in ARMS:
            lo, hi = p[arm]["rows"]
            e[arm].append(data["wall", arm].window_ns[lo:hi])
            e["probe"].append(p[arm]["probe_one_way_ns"])
    out = {}
    for tag in _placement.TAGS:
        if tag not in rows:
            continue
        e = rows[tag]
        # Pooled over the slices of a tag; NaN where fewer than 10 windows lie beyond.
        pct = {arm: honest_rank(np.concatenate(e[arm]), PS)[0] for arm in ARMS}
        out[tag] = {"slice_pairs": e["pairs"], "windows_per_arm": int(sum(map(len, e["self"]))),
                    "probe_one_way_ns_median": float(np.median(e["probe"])),
                    **{arm: {percentile_label(q): float(pct[arm][i]) for i, q in enumerate(PS)}
                       for arm in ARMS},
                    "ratio_other_over_self": {percentile_label(q): float(pct["other"][i] /
                                                                         pct["self"][i])
                                              for i, q in enumerate(PS)}}
    return {"split_one_way_ns": params["split_ns"], "tags": out,
            "method": "each adjacent self/other slice pair is tagged near/far by the median "
                      "no-op hand-over round trip (/2) of each slice, 'moved' when the two "
                      "disagree; nearest-rank over the pooled windows of each tag (not per "
                      "round: the placement changes within rounds)"}


def _counters(params, data, slices):
    pmu_slices = [s for s in slices if s["mode"] == "pmu"]
    if not pmu_slices:
        return NOT_MEASURED
    status = pmu_slices[0]["perf_status"]
    avail = [n for n, st in zip(COUNTER_NAMES, status) if st == 0]
    unavailable = {n: _counter_reason(st) for n, st in zip(COUNTER_NAMES, status) if st != 0}
    reads = [s["perf_read_ns"] for s in pmu_slices if s["perf_read_ns"] >= 0]
    W, R = params["windows"], params["rounds"]
    per_arm = {}
    for arm in ARMS:
        a = data["pmu", arm]
        per_arm[arm] = {"window_ns_p50_perturbed": per_round_then_mean(
            _by_round(a.window_ns[:a.done], W, R), (50.0,)).mean[0]}
        for i, name in enumerate(COUNTER_NAMES):
            if name not in avail:
                continue
            med = [float(np.median(c)) if c.size else None
                   for c in _by_round(a.counters[:a.done, i], W, R)]
            got = [m for m in med if m is not None]
            per_arm[arm][name] = {"per_round_median": med,
                                  "mean_of_round_medians": float(np.mean(got)) if got else None,
                                  "windows_nonzero": int(np.count_nonzero(a.counters[:a.done, i]))}
    hw = [n for n in HARDWARE_COUNTERS if n in avail]
    return {"available": avail, "unavailable": unavailable,
            "hardware": "available: " + ", ".join(hw) if hw else
                        "unavailable: this machine exposes no hardware PMU (cycles: %s)"
                        % unavailable.get("cycles", "?"),
            "read_cost_ns": {"median": float(np.median(reads)) if reads else None,
                             "what": "one pyq_perf_read() of every open counter (one read() "
                                     "each), mean of 200, median over slices"},
            "per_arm": per_arm,
            "note": "counters read just before and after each %d-query window, in separate "
                    "slices; their windows are perturbed and not used for the latency table"
                    % params["queries"]}


def _fmt(x, digits=1):
    return NOT_MEASURED if x is None or not np.isfinite(x) else "%.*f" % (digits, x)


def _q(x, digits=1):
    """A percentile (or ratio of two) that may not be reported: too few samples beyond it."""
    return NOT_ENOUGH if x is None or not np.isfinite(x) else "%.*f" % (digits, x)


def table(params, summary, status, markdown=False):
    from ..common.stats import RoundPercentiles
    rows = {}
    for arm in ARMS:
        d = summary["arms"][arm]["window_ns"]
        rows[arm] = RoundPercentiles.from_dict(d)
    q = params["queries"]
    lines = ["Ownership control: worker on CPU %d runs pyq_business_query on %d KiB "
             "(%d nodes), %d queries per timed window; data warmed and modified by the worker "
             "itself (self) or by a helper on CPU %d and handed over (other). Warm-up and "
             "hand-over untimed. Status: %s." % (params["reader_cpu"], params["data_kib"],
                                                summary["nodes"], q, params["writer_cpu"], status),
             "", format_table(rows, unit="ns/window", label="arm", markdown=markdown), ""]
    ratio = summary["ratio_other_over_self"]
    lines.append("other/self: " + ", ".join(
        "%s %s×" % (k, _q(v["of_means"], 2)) for k, v in ratio.items()) +
        " (ratio of the round-mean percentiles)")
    lines.append("per query at p50: self %s ns, other %s ns" % tuple(
        _fmt(summary["arms"][a]["per_query_ns"]["p50"]) for a in ARMS))
    c = summary["checksums"]
    lines.append("checksums (query chain and data, per window): %s in %d compared windows" % (
        "equal" if c["equal"] else "%d MISMATCHES" % c["mismatches"], c["windows_compared"]))
    dr = summary["drift"]
    if dr.get("pairs"):
        m = dr["slice_pair_median_ratio"]
        lines.append("drift: other/self of slice medians over %d adjacent slice pairs in %.1f s: "
                     "min %.2f×, median %.2f×, max %.2f×" % (dr["pairs"], dr["span_s"], m["min"],
                                                            m["median"], m["max"]))
    pl = summary["placement"]
    for tag, e in pl["tags"].items():
        lines.append("placement %-5s (%d slice pairs, probe one-way ~%.0f ns): self p50 %s / p99 %s, "
                     "other p50 %s / p99 %s ns; other/self p50 %s×, p99 %s×" % (
                         tag, e["slice_pairs"], e["probe_one_way_ns_median"],
                         _q(e["self"]["p50"], 0), _q(e["self"]["p99"], 0),
                         _q(e["other"]["p50"], 0), _q(e["other"]["p99"], 0),
                         _q(e["ratio_other_over_self"]["p50"], 2),
                         _q(e["ratio_other_over_self"]["p99"], 2)))
    if pl["tags"]:
        lines.append("  (placement rows: pooled nearest-rank over the windows of slice pairs "
                     "whose hand-over probes agree; split at %.0f ns one-way)"
                     % pl["split_one_way_ns"])
    off = sum(summary["arms"][a]["worker_off_cpu_windows"] for a in ARMS)
    if off:
        lines.append("warning: %d windows saw the worker off CPU %d" % (off, params["reader_cpu"]))
    cnt = summary["counters"]
    if cnt == NOT_MEASURED:
        lines.append("counters: not measured (pmu=False / --pmu)")
    else:
        lines.append("counters: hardware %s; counter read cost %s ns (median); "
                     "per-window medians, mean over rounds:" % (
                         cnt["hardware"], _fmt(cnt["read_cost_ns"]["median"])))
        lines.append("  %-24s self %s  other %s  (these windows are perturbed by the reads)"
                     % ("window p50 ns", *(_fmt(cnt["per_arm"][a]["window_ns_p50_perturbed"])
                                          for a in ARMS)))
        for name in cnt["available"]:
            lines.append("  %-24s self %s  other %s  (nonzero in %d / %d windows)" % (name, *(
                _fmt(cnt["per_arm"][a][name]["mean_of_round_medians"]) for a in ARMS), *(
                cnt["per_arm"][a][name]["windows_nonzero"] for a in ARMS)))
        for name, why in cnt["unavailable"].items():
            lines.append("  %-24s unavailable (%s)" % (name, why))
    return "\n".join(lines)
