"""Two output folders of one experiment, figure by figure: old -> new and the change.

Each experiment names its figures and which way is better (``figures()``); a
figure that moved the bad way by more than the threshold is a regression.  What
is compared is chosen so that the two sides measure the same thing:

- burst-tail: per class and percentile, the mean over rounds of the per-round
  nearest-rank percentile (ns/query);
- bench: the ratios of its targets (pyqueue / best peer ...) within one placement
  only: "far" is never held against "near", and absolute rates not at all, since
  they follow the placement the run happened to get;
- pipeline: per variant, latency percentiles (µs) and context switches per message;
- c2c: the queue ping-pong variants' median and p99 one-way ns, and the matrix
  median ns per ordered CPU pair;
- pacing: the drain rate used to pace (msg/s, higher is better) and, per delay
  target, the median ratio of the measured max delay to the target.

Two folders are comparable when both verify, hold the same experiment, ran on the
same CPU model, CPU count, allowed CPUs and pinning, and asked for the same
parameters apart from how long they ran (rounds, windows, slices, ...).
"""
from ..common import output
from pyqueue.table import render

__all__ = ["LOWER", "HIGHER", "Change", "figures", "incomparable", "compare", "format_changes",
           "EXPERIMENTS"]

LOWER, HIGHER = "lower", "higher"        # which way is better

# Parameters that say how long a run was, not what it measured.
_LENGTH_PARAMS = {"rounds", "windows", "slices", "slice_windows", "messages", "trips",
                  "py_messages", "round_trips", "warmup", "pmu_windows", "over_time",
                  "interval", "seconds", "drain_reps", "stream_messages", "seed", "out",
                  "queue_round_trips", "over_time_round_trips", "timeout"}
_ENVIRONMENT_KEYS = ("cpu_model", "cpu_count", "allowed_cpus", "pinning")


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _round_percentiles(block):
    """{'p50': mean over rounds, ...} of a stats.RoundPercentiles summary."""
    rounds = [r for r in block.get("per_round", []) if r]
    return {label: _mean([r[i] for r in rounds if i < len(r)])
            for i, label in enumerate(block.get("labels", []))}


def _burst_tail(results):
    out = {}
    for name, d in results.get("classes", {}).items():
        for label, value in _round_percentiles(d.get("latency_ns_per_query", {})).items():
            out["%s %s ns/query" % (name, label)] = (value, LOWER)
        # The x no-burst ratios (class 'none' in the run): what the burst costs.
        for label, ratio in zip(("p50", "p99", "p999"), d.get("x_no_burst") or ()):
            if name != "none" and ratio is not None:
                out["%s %s x no-burst" % (name, label)] = (float(ratio), LOWER)
    return out


def _bench(results):
    out = {}
    for t in results.get("targets", []):
        better = HIGHER if t.get("higher_is_better", True) else LOWER
        for placement, d in t.get("by_placement", {}).items():
            if d.get("median") is not None:
                out["[%s] %s" % (placement, t["label"])] = (d["median"], better)
    return out


def _pipeline(results):
    out = {}
    for variant, d in results.get("table", {}).items():
        for label, value in _round_percentiles(d.get("latency_us", {})).items():
            out["%s latency %s us" % (variant, label)] = (value, LOWER)
        if d.get("messages") and d.get("context_switches") is not None:
            out["%s context switches/message" % variant] = (
                d["context_switches"] / d["messages"], LOWER)
    return out


def _c2c(results):
    out = {}
    for variant, d in results.get("queue", {}).get("variants", {}).items():
        for key in ("median_ns", "p99_ns"):
            if d.get(key) is not None:
                out["queue %s %s" % (variant, key)] = (d[key], LOWER)
    cpus = results.get("cpus", [])
    for mode, m in results.get("matrix", {}).items():
        for i, row in enumerate(m.get("median_ns", [])):
            for j, value in enumerate(row):
                if value is not None:
                    out["%s %d->%d median_ns" % (mode, cpus[i], cpus[j])] = (value, LOWER)
    return out


def _pacing(results):
    out = {}
    if results.get("d_pace") is not None:
        out["drain rate used to pace (msg/s)"] = (results["d_pace"], HIGHER)
    for t in results.get("targets", []):
        if t.get("ratio_median") is not None:
            out["target %gms max delay / target" % (1e3 * t["t"])] = (t["ratio_median"], LOWER)
    return out


EXPERIMENTS = {"burst_tail": _burst_tail, "bench": _bench, "pipeline": _pipeline,
               "core_to_core": _c2c, "pacing": _pacing}


def figures(loaded):
    """{figure name: (value, LOWER|HIGHER)} of a LoadedOutput."""
    experiment = loaded.summary.get("experiment")
    if experiment not in EXPERIMENTS:
        raise ValueError("%s: compare knows %s, not %r" % (
            loaded.path, ", ".join(sorted(EXPERIMENTS)), experiment))
    return EXPERIMENTS[experiment](loaded.results)


def incomparable(old, new):
    """The reasons two LoadedOutputs cannot be compared ([] = they can)."""
    why = []
    for key in _ENVIRONMENT_KEYS:
        a, b = old.environment.get(key), new.environment.get(key)
        if a != b:
            why.append("environment %s: %r vs %r" % (key, a, b))
    for key in sorted(set(old.params) | set(new.params)):
        if key in _LENGTH_PARAMS:
            continue
        a, b = old.params.get(key), new.params.get(key)
        if a != b:
            why.append("parameter %s: %r vs %r" % (key, a, b))
    return why


class Change:
    """One figure old -> new; ``change`` is (new - old) / old, ``regression`` whether
    it moved the bad way by more than the threshold."""

    def __init__(self, name, old, new, better, threshold):
        self.name, self.old, self.new, self.better = name, old, new, better
        self.change = None if old in (None, 0) or new is None else (new - old) / abs(old)
        worse = self.change is not None and (self.change if better == LOWER else -self.change)
        self.regression = bool(worse is not None and worse is not False and worse > threshold)

    def __repr__(self):
        return "<Change %s %r -> %r%s>" % (self.name, self.old, self.new,
                                           " REGRESSION" if self.regression else "")


def compare(old_path, new_path, threshold=0.15, force=False):
    """[Change] for every figure in both folders, and the figures found on one side only.

    Raises ValueError when a folder does not verify, when the experiments differ,
    or (unless ``force``) when the runs are incomparable, naming why.
    """
    old, new = (output.load(p, samples=False, check=True) for p in (old_path, new_path))
    eo, en = old.summary.get("experiment"), new.summary.get("experiment")
    if eo != en:
        raise ValueError("%s is %r, %s is %r: not the same experiment" % (old_path, eo, new_path, en))
    why = incomparable(old, new)
    if why and not force:
        raise ValueError("the runs are not comparable (--force to compare anyway): "
                         + "; ".join(why))
    a, b = figures(old), figures(new)
    changes = [Change(name, a[name][0], b[name][0], a[name][1], threshold)
               for name in a if name in b]
    only = sorted(set(a) ^ set(b))
    return changes, only


def _num(v):
    if v is None:
        return "n/a"
    return "%.4g" % v


def format_changes(changes, only=(), threshold=0.15, markdown=False):
    """The table of a compare(): figure, old, new, change, and REGRESSION flags."""
    rows = [[c.name, _num(c.old), _num(c.new),
             "n/a" if c.change is None else "%+.1f%%" % (100 * c.change),
             ("REGRESSION" if c.regression else "") + ("" if c.better == LOWER else " (higher is better)")]
            for c in changes]
    regressions = sum(c.regression for c in changes)
    notes = ["only in one folder: %s" % name for name in only]
    notes.append("%d of %d figures regressed by more than %.0f%%"
                 % (regressions, len(changes), 100 * threshold))
    return render(["figure", "old", "new", "change", ""], rows, markdown=markdown, notes=notes)
