"""The ownership control of SPEC §6.2 (seed 000, third evidence).

No queue.  One worker thread, pinned to ``worker_cpu``, runs the same C function
(``pyq_business_query``: 8 dependent visits that modify random nodes of 48 KiB
of linked cache lines) on the same data, for ``queries`` queries per timed
window, after either

* **self**:  the worker warmed and modified all the data itself, or
* **other**: a helper thread pinned to ``other_cpu`` warmed and modified it and
  handed it over (release/acquire; see csrc/ownership.c).

Warm-up and hand-over are not timed.  A window's data and query stream depend on
(seed, window) only, so each window gives the same checksums in both arms; the
run checks it.  The arms run in short interleaved slices (self, other, other,
self, ...) with a timestamp per slice, because the host moves this VM's vCPUs
and cross-core costs drift over seconds.  With ``pmu=True`` every slice pair is
followed by a pair whose windows are bracketed by counter reads; the latency
table always comes from the counter-free slices.

    from pyqueue import lab
    r = lab.ownership(windows=2000)
    print(r)                    # the table, and how it was computed
    r.samples["other/window_ns"]
"""
import errno as _errno
import json
import os

import time


import numpy as np

from .._pyq import ffi, lib
from ._output import OutputFolder, to_jsonable
from ._progress import GracefulInterrupt, Progress
from . import placement as _placement
from ._callable import callable_module
from ._stats import (NOT_MEASURED, format_table, nearest_rank, per_round_then_mean,
                     percentile_label)

__all__ = ["ownership", "OwnershipResult", "ARMS", "DEFAULT_SEED"]

ARMS = ("self", "other")
_ARM_CODE = {"self": lib.PYQ_OWNERSHIP_SELF, "other": lib.PYQ_OWNERSHIP_OTHER}
DEFAULT_SEED = 0x0FDC1D457E3ECA21          # seed 000's id
PS = (50.0, 99.0, 99.9)
NCOUNTERS = lib.PYQ_OWNERSHIP_NCOUNTERS
COUNTER_NAMES = tuple(ffi.string(lib.pyq_perf_name(i)).decode() for i in range(NCOUNTERS))
HARDWARE_COUNTERS = COUNTER_NAMES[:lib.PYQ_PERF_CONTEXT_SWITCHES]
_PLACES = ("near", "far", "moved")        # samples/slices/placement codes 0-2; 3 = untagged


def _int(name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s must be an integer, got %r" % (name, value))
    if value < lo or (hi is not None and value > hi):
        raise ValueError("%s must be in [%d, %s], got %d" % (name, lo, "∞" if hi is None else hi, value))
    return int(value)


def _check_cpus(worker_cpu, other_cpu):
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise RuntimeError("the ownership control needs two CPUs (a worker and a helper on "
                           "another core); this process may run only on CPU %s" % allowed[0])
    for name, cpu in (("worker_cpu", worker_cpu), ("other_cpu", other_cpu)):
        if cpu not in allowed:
            raise ValueError("%s=%d: CPU %d is not available to this process (allowed: %s)"
                             % (name, cpu, cpu, ",".join(map(str, allowed))))
    if worker_cpu == other_cpu:
        raise ValueError("worker_cpu and other_cpu must differ (both are %d)" % worker_cpu)


def _counter_reason(status):
    if status == 0:
        return ""
    code = -int(status)
    name = _errno.errorcode.get(code, str(code))
    if code in (_errno.ENOENT, _errno.EOPNOTSUPP, _errno.ENODEV):
        return "%s: the (virtual) CPU exposes no such event" % name
    return "%s: %s" % (name, os.strerror(code))


class _Arrays:
    """One arm's samples in one mode, allocated by Python, filled by C."""

    def __init__(self, total, groups, counters):
        self.window_ns = np.zeros(total, np.uint64)
        self.group_ns = np.zeros((total, groups), np.uint64)
        self.checksum = np.zeros(total, np.uint64)
        self.data_checksum = np.zeros(total, np.uint64)
        self.worker_cpu = np.full((total, 2), -1, np.int32)
        self.helper_cpu = np.full(total, -1, np.int32)
        self.counters = np.zeros((total, NCOUNTERS), np.uint64) if counters else None
        self.probe_ns = np.zeros(total, np.uint64)
        self.done = 0

    def out_struct(self, start, n):
        """A pyq_ownership_out_t over rows [start, start+n); returns (struct, keepalive)."""
        keep = []

        def ptr(arr, ctype):
            view = arr[start:start + n]
            if not (view.flags.c_contiguous and view.flags.writeable) or view.shape[0] != n:
                raise AssertionError("sample view is not a writable contiguous block")
            p = ffi.cast(ctype + " *", ffi.from_buffer(view, require_writable=True))
            keep.append(p)
            return p

        out = ffi.new("pyq_ownership_out_t *")
        out.window_ns = ptr(self.window_ns, "uint64_t")
        out.group_ns = ptr(self.group_ns, "uint64_t")
        out.checksum = ptr(self.checksum, "uint64_t")
        out.data_checksum = ptr(self.data_checksum, "uint64_t")
        out.worker_cpu = ptr(self.worker_cpu, "int32_t")
        out.helper_cpu = ptr(self.helper_cpu, "int32_t")
        out.counters = ptr(self.counters, "uint64_t") if self.counters is not None else ffi.NULL
        out.probe_ns = ptr(self.probe_ns, "uint64_t")
        return out, keep

    def filled(self, windows):
        d = self.done
        out = {"window_ns": self.window_ns[:d], "group_ns": self.group_ns[:d],
               "checksum": self.checksum[:d], "data_checksum": self.data_checksum[:d],
               "worker_cpu": self.worker_cpu[:d], "helper_cpu": self.helper_cpu[:d],
               "probe_ns": self.probe_ns[:d], "round": (np.arange(d) // windows).astype(np.uint16)}
        if self.counters is not None:
            out["counters"] = self.counters[:d]
        return out


class OwnershipResult:
    """What ``ownership()`` returns: ``summary`` (dict), ``samples`` (numpy arrays
    keyed "<arm>/<name>", "pmu-<arm>/<name>" and "slices/<name>"), ``status``,
    ``table`` (text; also ``str(result)``) and ``to_json(path)``."""

    def __init__(self, params, summary, samples, status, table, folder=None):
        self.params, self.summary, self.samples = params, summary, samples
        self.status, self.table, self.folder = status, table, folder

    @property
    def complete(self):
        return self.status == "complete"

    def to_json(self, path):
        """Write params, status and summary (not the samples) as JSON to ``path``."""
        body = to_jsonable({"experiment": "ownership", "status": self.status,
                            "params": self.params, "summary": self.summary})
        with open(path, "w") as f:
            json.dump(body, f, indent=1, allow_nan=False)
            f.write("\n")
        return path

    def __str__(self):
        return self.table

    def __repr__(self):
        return "<OwnershipResult %s>" % self.status


def ownership(worker_cpu=0, other_cpu=1, windows=10_000, rounds=3, data_kib=48, queries=64,
              groups=4, slice_windows=100, pmu=False, out=None, progress=True,
              seed=DEFAULT_SEED, overwrite=False, argv=None,
              placement_split_ns=_placement.DEFAULT_SPLIT_NS):
    """Run the ownership control; returns an :class:`OwnershipResult`.

    windows: timed windows per arm per round; rounds: rounds (percentiles are
    taken per round, then averaged); data_kib: business data (48 KiB = 768
    nodes); queries / groups: queries per timed window and the timed groups it
    is split into; slice_windows: windows per C call (one slice of one arm);
    pmu: also run counter-bracketed slices (cycles, instructions, L1D misses
    where the machine has a PMU; software counters otherwise); out: write the
    SPEC §6 output folder there.  The first Ctrl-C stops after the current
    slice and leaves a valid partial result/folder; a second aborts.
    """
    worker_cpu = _int("worker_cpu", worker_cpu, 0)
    other_cpu = _int("other_cpu", other_cpu, 0)
    windows = _int("windows", windows, 1, 10**8)
    rounds = _int("rounds", rounds, 1, 1000)
    data_kib = _int("data_kib", data_kib, 1, 1 << 20)
    queries = _int("queries", queries, 1, 1 << 20)
    groups = _int("groups", groups, 1, lib.PYQ_OWNERSHIP_MAX_GROUPS)
    if queries % groups:
        raise ValueError("groups must divide queries (queries=%d, groups=%d)" % (queries, groups))
    slice_windows = _int("slice_windows", slice_windows, 1, 1 << 20)
    seed = _int("seed", seed, 0, (1 << 64) - 1)
    _check_cpus(worker_cpu, other_cpu)
    params = {"worker_cpu": worker_cpu, "other_cpu": other_cpu, "windows": windows,
              "rounds": rounds, "data_kib": data_kib, "nodes": data_kib * 1024 // 64,
              "queries": queries, "groups": groups, "slice_windows": slice_windows,
              "pmu": bool(pmu), "seed": seed, "placement_split_ns": float(placement_split_ns)}

    cfg = ffi.new("pyq_ownership_config_t *", {
        "worker_cpu": worker_cpu, "other_cpu": other_cpu, "data_bytes": data_kib * 1024,
        "seed": seed, "queries": queries, "groups": groups})
    handle = ffi.new("pyq_ownership_t **")
    rc = lib.pyq_ownership_create(cfg, handle)
    if rc:
        raise (MemoryError if rc == lib.PYQ_ENOMEM else ValueError)(
            "ownership: could not set up the experiment (%s)" % os.strerror(-rc))
    o = ffi.gc(handle[0], lib.pyq_ownership_destroy)

    total = rounds * windows
    modes = ("wall", "pmu") if pmu else ("wall",)
    data = {(m, a): _Arrays(total, groups, m == "pmu") for m in modes for a in ARMS}
    slices = []
    folder = None
    if out is not None:
        folder = OutputFolder(out, "ownership", params, overwrite=overwrite, argv=argv,
                              pinning={"worker_cpu": worker_cpu, "other_cpu": other_cpu})
    t_start = time.monotonic_ns()
    status, error = None, None
    bar = Progress(total=total * len(data), desc="ownership", unit="windows", enabled=progress)
    try:
        with GracefulInterrupt() as stop, bar:
            step = 0
            for r in range(rounds):
                for first in range(0, windows, slice_windows):
                    n = min(slice_windows, windows - first)
                    order = ARMS if step % 2 == 0 else ARMS[::-1]   # self/other, other/self, ...
                    step += 1
                    for mode in modes:
                        for arm in order:
                            if stop.requested:
                                break
                            slices.append(_run_slice(o, data[mode, arm], mode, arm, r,
                                                     r * windows + first, n, t_start))
                            bar.update(n, status="round %d/%d %s" % (r + 1, rounds, arm))
                    if stop.requested:
                        break
                if stop.requested:
                    break
                if folder is not None and r + 1 < rounds:
                    summary = _summarize(params, data, slices)
                    _save(folder, data, slices, windows)
                    folder.checkpoint(summary, _done(data), total, "windows per arm")
            status = "interrupted" if stop.requested else "complete"
    except BaseException as e:
        error = e
        raise
    finally:
        summary = _summarize(params, data, slices)
        done = _done(data)
        table = _table(params, summary, status or "failed")
        if folder is not None:
            _save(folder, data, slices, windows)
            folder.save_text("table.md", table + "\n")
            if isinstance(error, KeyboardInterrupt):
                error = "aborted by a second Ctrl-C"
            folder.finish(summary, done, total, "windows per arm", error=error)
    samples = {}
    for (mode, arm), arrays in data.items():
        prefix = arm if mode == "wall" else "pmu-" + arm
        for name, arr in arrays.filled(windows).items():
            samples["%s/%s" % (prefix, name)] = arr
    for name, arr in _slice_arrays(slices).items():
        samples["slices/" + name] = arr
    if status == "interrupted":
        status = "interrupted after %d of %d windows per arm" % (done, total)
    return OwnershipResult(params, summary, samples, status, table, folder and folder.path)


def _done(data):
    return min(a.done for a in data.values())


def _run_slice(o, arrays, mode, arm, rnd, first_window, n, t_start):
    c_out, keep = arrays.out_struct(arrays.done, n)
    sl = ffi.new("pyq_ownership_slice_t *")
    rc = lib.pyq_ownership_run(o, _ARM_CODE[arm], first_window, n,
                               lib.PYQ_PERF_ALL if mode == "pmu" else 0, c_out, sl)
    del keep
    if rc:
        if sl.failed_cpu >= 0:
            raise ValueError("ownership: could not pin a thread to CPU %d (is it online and "
                             "allowed?)" % sl.failed_cpu)
        raise OSError(-rc, "ownership: slice failed: %s" % os.strerror(-rc))
    lo, arrays.done = arrays.done, arrays.done + sl.windows
    w = arrays.window_ns[lo:arrays.done]
    return {"rows": (lo, arrays.done),
            "probe_one_way_ns": float(np.median(arrays.probe_ns[lo:arrays.done])) / 2,"round": rnd, "arm": arm, "mode": mode, "first_window": first_window,
            "windows": int(sl.windows), "start_ns": int(sl.start_ns) - t_start,
            "end_ns": int(sl.end_ns) - t_start, "median_ns": float(np.median(w)),
            "perf_read_ns": float(sl.perf_read_ns), "perf_status": list(sl.perf_status),
            "ticks_per_ns": float(sl.ticks_per_ns)}


def _slice_arrays(slices):
    return {"round": np.array([s["round"] for s in slices], np.uint16),
            "arm": np.array([ARMS.index(s["arm"]) for s in slices], np.uint8),
            "pmu": np.array([s["mode"] == "pmu" for s in slices], np.uint8),
            "first_window": np.array([s["first_window"] for s in slices], np.uint64),
            "windows": np.array([s["windows"] for s in slices], np.uint32),
            "start_ns": np.array([s["start_ns"] for s in slices], np.int64),
            "end_ns": np.array([s["end_ns"] for s in slices], np.int64),
            "median_window_ns": np.array([s["median_ns"] for s in slices], np.float64),
            "probe_one_way_ns": np.array([s["probe_one_way_ns"] for s in slices], np.float64),
            "placement": np.array([_PLACES.index(s["placement"]) if s.get("placement") else 3
                                   for s in slices], np.uint8)}


def _save(folder, data, slices, windows):
    for (mode, arm), arrays in data.items():
        folder.save_samples(arm if mode == "wall" else "pmu-" + arm, **arrays.filled(windows))
    folder.save_samples("slices", **_slice_arrays(slices))


def _by_round(values, windows, rounds):
    return [values[r * windows:(r + 1) * windows] for r in range(rounds)]


def _summarize(params, data, slices):
    _tag_pairs(slices, params["placement_split_ns"])
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
                         (a.worker_cpu[:d] != params["worker_cpu"]).any(axis=1))),
                     "helper_off_cpu_windows": int(np.count_nonzero(
                         a.helper_cpu[:d] != params["other_cpu"]))}
    ratio = {}
    s_rp, o_rp = (per_round_then_mean(_by_round(data["wall", a].window_ns[:data["wall", a].done],
                                                W, R), PS) for a in ARMS)
    for i, p in enumerate(PS):
        per_round = [o / s if s > 0 else None for o, s in zip(o_rp.per_round[:, i], s_rp.per_round[:, i])
                     if np.isfinite(o) and np.isfinite(s)]
        ratio[percentile_label(p)] = {
            "of_means": (o_rp.mean[i] / s_rp.mean[i]) if s_rp.mean[i] > 0 else None,
            "per_round": per_round}
    return {"arms": arms, "ratio_other_over_self": ratio,
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
    for tag in _PLACES:
        if tag not in rows:
            continue
        e = rows[tag]
        pct = {arm: nearest_rank(np.concatenate(e[arm]), PS) for arm in ARMS}
        out[tag] = {"slice_pairs": e["pairs"], "windows_per_arm": int(sum(map(len, e["self"]))),
                    "probe_one_way_ns_median": float(np.median(e["probe"])),
                    **{arm: {percentile_label(q): float(pct[arm][i]) for i, q in enumerate(PS)}
                       for arm in ARMS},
                    "ratio_other_over_self": {percentile_label(q): float(pct["other"][i] /
                                                                         pct["self"][i])
                                              for i, q in enumerate(PS)}}
    return {"split_one_way_ns": params["placement_split_ns"], "tags": out,
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


def _table(params, summary, status):
    from ._stats import RoundPercentiles
    rows = {}
    for arm in ARMS:
        d = summary["arms"][arm]["window_ns"]
        rows[arm] = RoundPercentiles(ps=tuple(d["ps"]), per_round=np.array(d["per_round"]),
                                     counts=tuple(d["counts"]), mean=np.array(d["mean"]),
                                     min=np.array(d["min"]), max=np.array(d["max"]))
    q = params["queries"]
    lines = ["Ownership control (SPEC §6.2): worker on CPU %d runs pyq_business_query on %d KiB "
             "(%d nodes), %d queries per timed window; data warmed and modified by the worker "
             "itself (self) or by a helper on CPU %d and handed over (other). Warm-up and "
             "hand-over untimed. Status: %s." % (params["worker_cpu"], params["data_kib"],
                                                params["nodes"], q, params["other_cpu"], status),
             "", format_table(rows, unit="ns/window", label="arm"), ""]
    ratio = summary["ratio_other_over_self"]
    lines.append("other/self: " + ", ".join(
        "%s %s×" % (k, _fmt(v["of_means"], 2)) for k, v in ratio.items()) +
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
                     "other p50 %s / p99 %s ns; other/self p50 %.2f×, p99 %.2f×" % (
                         tag, e["slice_pairs"], e["probe_one_way_ns_median"],
                         _fmt(e["self"]["p50"], 0), _fmt(e["self"]["p99"], 0),
                         _fmt(e["other"]["p50"], 0), _fmt(e["other"]["p99"], 0),
                         e["ratio_other_over_self"]["p50"], e["ratio_other_over_self"]["p99"]))
    if pl["tags"]:
        lines.append("  (placement rows: pooled nearest-rank over the windows of slice pairs "
                     "whose hand-over probes agree; split at %.0f ns one-way)"
                     % pl["split_one_way_ns"])
    off = sum(summary["arms"][a]["worker_off_cpu_windows"] for a in ARMS)
    if off:
        lines.append("warning: %d windows saw the worker off CPU %d" % (off, params["worker_cpu"]))
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


callable_module(__name__, ownership)
