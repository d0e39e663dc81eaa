"""The figures ``compare`` judges, per experiment: each recomputed from an output
folder's raw samples exactly as its table computes it, with where its redraws come
from (docs/OUTPUT.md, "Comparing runs").

- burst-tail: per class, p50/p99/p999 ns/query (per-round nearest rank of the group
  means, mean over rounds; a window and its groups are one unit) and the same over
  class ``none`` ("x no-burst", what the burst costs);
- pipeline: per variant, latency p50/p99/p99.9 µs (per slice, mean over slices; a
  message is a unit); context switches per message (one count: not judged);
- c2c: the queue ping-pong variants' median and p99 one-way ns (rounds pooled, as
  the table) and the matrix's median one-way ns per ordered CPU pair;
- bench: the ratios of its targets within one placement (the median of per-round
  ratios; "far" is never held against "near");
- pacing: the typical drain rate D (median over the drain runs, higher is better)
  and, per delay target, the median over rounds of measured max delay / target.
"""
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..common.resample import RoundsSampler, ValuesSampler
from ..common.stats import NOT_MEASURED, not_enough, percentile_label

__all__ = ["LOWER", "HIGHER", "Figure", "figures", "EXPERIMENTS", "RUN_OF"]

LOWER, HIGHER = "lower", "higher"        # which way is better
# The array compare adds where several runs of a side are pooled: each round's run.
RUN_OF = "_run_of"


@dataclass
class Figure:
    """One figure of one folder: ``value`` (None: not reported, ``reason`` says why),
    which way is ``better``, and where its replicates come from (``draw(b, rng)``
    -> 1-D array; None: nothing to redraw, ``reason`` says why it is not judged)."""
    value: Optional[float]
    better: str
    draw: Optional[object] = None
    reason: Optional[str] = None


class _Column:
    """Column ``k`` of a sampler's replicates, drawn once per comparison."""

    def __init__(self, sampler, k, cache):
        self.sampler, self.k, self.cache = sampler, k, cache
        # What the figure rests on: its rounds (or per-round values), for judge().
        self.rounds = (sampler.replicates_of if hasattr(sampler, "replicates_of") else
                       int(sampler.data.size))

    def __call__(self, b, rng):
        key = id(self.sampler)
        if key not in self.cache:
            self.cache[key] = self.sampler.replicates(b, rng)
        return self.cache[key][:, self.k]


class _Ratio:
    def __init__(self, num, den):
        self.num, self.den = num, den
        self.rounds = min(num.rounds, den.rounds)

    def __call__(self, b, rng):
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.num(b, rng) / self.den(b, rng)


def _value(v):
    return None if v is None or not math.isfinite(v) else float(v)


def _rounds_figures(out, prefix, suffix, rounds, ps, cache, better=LOWER, pooled=False,
                    scale=1.0, labels=None, run_of=None):
    """Figures '<prefix> <label><suffix>' of a RoundsSampler; returns the sampler.
    ``run_of``: the run of each round, where several runs of a side are pooled."""
    s = RoundsSampler(rounds, ps, pooled=pooled, scale=scale, run_of=run_of)
    sizes = [r.size for r in s.rounds]
    for i, p in enumerate(ps):
        value = _value(s.values[i])
        reason = None
        if value is None:
            if not sizes:
                reason = NOT_MEASURED
            elif pooled:
                reason = not_enough(sum(sizes), p)
            else:
                reason = not_enough((min(sizes), max(sizes)), p, per_round=True)
        label = labels[i] if labels else percentile_label(p)
        out["%s %s%s" % (prefix, label, suffix)] = Figure(
            value, better, _Column(s, i, cache) if value is not None else None, reason)
    return s


# ---- the figures of each experiment ------------------------------------------------

_BURST_PS, _BURST_LABELS = (50.0, 99.0, 99.9), ("p50", "p99", "p999")


def _burst_tail(d, cache):
    out = {}
    cols = {}
    for name, c in (d.results.get("classes") or {}).items():
        arrays = d.samples.get(name) or {}
        g = arrays.get("group_ns")
        if g is None or np.ndim(g) != 3:
            for label in _BURST_LABELS:
                out["%s %s ns/query" % (name, label)] = Figure(None, LOWER,
                                                               reason="no group_ns samples")
            continue
        done = arrays.get("windows_done")
        done = list(done) if done is not None else list(c.get("windows_per_round") or
                                                        [g.shape[1]] * g.shape[0])
        run_of = arrays.get(RUN_OF)
        run_of = list(run_of) if run_of is not None else [0] * g.shape[0]
        keep = [r for r in range(g.shape[0]) if done[r] > 0]
        _rounds_figures(out, name, " ns/query", [g[r, :int(done[r])] for r in keep], _BURST_PS,
                        cache, labels=_BURST_LABELS, run_of=[run_of[r] for r in keep])
        cols[name] = ["%s %s ns/query" % (name, label) for label in _BURST_LABELS]
    if "none" in cols:
        for name in cols:
            if name == "none":
                continue
            for label, mine, base in zip(_BURST_LABELS, cols[name], cols["none"]):
                a, b = out[mine], out[base]
                key = "%s %s x no-burst" % (name, label)
                if a.value is None or b.value is None:
                    out[key] = Figure(None, LOWER, reason=a.reason or b.reason)
                else:
                    out[key] = Figure(a.value / b.value, LOWER, _Ratio(a.draw, b.draw))
    return out


def _split(flat, lengths):
    """The rounds of a concatenated array (empty ones kept: _runs lines up with them)."""
    flat = np.asarray(flat)
    if lengths is None:
        return [flat]
    lengths = [int(n) for n in lengths]
    return list(np.split(flat, np.cumsum(lengths)[:-1]))


def _runs(arrays, lengths):
    """The run of each round where several runs were pooled (RUN_OF), else None."""
    run_of = arrays.get(RUN_OF)
    if run_of is None or arrays.get(lengths) is None:
        return None
    return list(run_of)


def _pipeline(d, cache):
    out = {}
    for variant, t in (d.results.get("table") or {}).items():
        arrays = d.samples.get(variant) or {}
        lat = arrays.get("latency_ns")
        if lat is None:
            for p in (50.0, 99.0, 99.9):
                out["%s latency %s us" % (variant, percentile_label(p))] = Figure(
                    None, LOWER, reason="no latency_ns samples")
        else:
            _rounds_figures(out, "%s latency" % variant, " us",
                            _split(lat, arrays.get("slice_lengths")), (50.0, 99.0, 99.9), cache,
                            scale=1e-3, run_of=_runs(arrays, "slice_lengths"))
        if t.get("messages") and t.get("context_switches") is not None:
            out["%s context switches/message" % variant] = Figure(
                t["context_switches"] / t["messages"], LOWER,
                reason="one count per run: nothing to redraw")
    return out


def _c2c(d, cache):
    out = {}
    r = d.results
    tpn = r.get("ticks_per_ns")
    if not tpn:
        return out
    for variant in (r.get("queue") or {}).get("variants", {}):
        arrays = d.samples.get("pair_%s" % variant) or {}
        ticks = arrays.get("round_trip_ticks")
        names = ("median_ns", "p99_ns")
        if ticks is None:
            for n in names:
                out["queue %s %s" % (variant, n)] = Figure(None, LOWER,
                                                           reason="no round_trip_ticks samples")
            continue
        _rounds_figures(out, "queue %s" % variant, "", _split(ticks, arrays.get("round_lengths")),
                        (50.0, 99.0), cache, pooled=True, scale=0.5 / tpn, labels=names)
    cpus = r.get("cpus") or []
    for mode, m in (r.get("matrix") or {}).items():
        for i, row in enumerate(m.get("median_ns") or []):
            for j, value in enumerate(row):
                if i == j or i >= len(cpus) or j >= len(cpus):
                    continue
                arrays = d.samples.get("%s_%d_%d" % (mode, cpus[i], cpus[j])) or {}
                ticks = arrays.get("round_trip_ticks")
                if ticks is None:
                    if value is not None:
                        out["%s %d->%d median_ns" % (mode, cpus[i], cpus[j])] = Figure(
                            None, LOWER, reason="no round_trip_ticks samples")
                    continue
                _rounds_figures(out, "%s %d->%d" % (mode, cpus[i], cpus[j]), "",
                                _split(ticks, arrays.get("round_lengths")), (50.0,), cache,
                                scale=0.5 / tpn, labels=("median_ns",),
                                run_of=_runs(arrays, "round_lengths"))
    return out


def _values_figure(values, value, better, cache):
    s = ValuesSampler(values or [])
    if value is None:
        return Figure(None, better, reason=NOT_MEASURED)
    value = s.values[0] if s.data.size else value     # the median of the values, as reported
    if not s.judgeable:
        return Figure(float(value), better, reason="%d value%s per run: at least %d needed"
                      % (s.data.size, "" if s.data.size == 1 else "s", s.min_values))
    return Figure(float(value), better, _Column(s, 0, cache))


def _bench(d, cache):
    out = {}
    for t in d.results.get("targets", []):
        better = HIGHER if t.get("higher_is_better", True) else LOWER
        for placement, e in (t.get("by_placement") or {}).items():
            out["[%s] %s" % (placement, t["label"])] = _values_figure(
                e.get("ratios"), e.get("median"), better, cache)
    return out


def _pacing(d, cache):
    out = {}
    r = d.results
    drain = r.get("drain") or {}
    by = drain.get("by_size") or {}
    if by:
        big = max(by, key=int)
        out["typical drain rate D (msg/s)"] = _values_figure(
            by[big].get("d_max"), drain.get("d_typical"), HIGHER, cache)
    for t in r.get("targets", []):
        out["target %gms max delay / target" % (1e3 * t["t"])] = _values_figure(
            t.get("ratio"), t.get("ratio_median"), LOWER, cache)
    return out


EXPERIMENTS = {"burst_tail": _burst_tail, "bench": _bench, "pipeline": _pipeline,
               "core_to_core": _c2c, "pacing": _pacing}


def figures(loaded, cache=None):
    """{figure name: Figure} of a LoadedOutput (loaded with its samples)."""
    experiment = loaded.summary.get("experiment")
    if experiment not in EXPERIMENTS:
        raise ValueError("%s: compare knows %s, not %r" % (
            loaded.path, ", ".join(sorted(EXPERIMENTS)), experiment))
    return EXPERIMENTS[experiment](loaded, {} if cache is None else cache)
