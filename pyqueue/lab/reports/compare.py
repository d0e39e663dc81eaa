"""Two output folders of one experiment, figure by figure, judged from their raw
samples the way pyperf's ``compare_to`` judges benchmarks (docs/OUTPUT.md).

Each figure is recomputed from each folder's samples exactly as its table computes
it, then redrawn (common/resample.py: the rounds with replacement, the units of a
round -- a burst-tail window, a message, a round trip -- with replacement within it)
to see how far it moves by chance.  The change new / old - 1 gets an interval;
the figure is "slower" or "faster" when the interval leaves out no change, else
"no significant change".  The redraws of R rounds understate their spread, and R
values estimate it poorly: each run's variance is scaled by R/(R-1) and the interval
uses Student's t with Welch's degrees of freedom (R-1 per run), so rounds that
disagree widen it.  The intervals of the figures of one comparison share one
false-alarm budget (``alpha``, Bonferroni): with m figures each interval is at
1 - alpha/m.  A figure **regresses** when it is significantly slower *and* slower by
more than the threshold.

What is compared, per experiment, is in compare_figures.py.

A figure missing, or not reported (not enough samples), on one side only fails the
comparison (``Comparison.failures``); on both sides it is listed as not reported.
Two folders are comparable when both verify, hold the same experiment and ran on
the same machine and the same parameters: identities compared exactly (CPU model,
core count, allowed CPUs, pinning, kernel, every parameter but how long the run
was), measured values within a tolerance (the cycle counter's rate, 0.1 %).
"""
import dataclasses
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from ..common import output
from ..common.resample import FASTER, SAME, SLOWER, family_confidence, judge
from ..common.stats import NOT_MEASURED
from .compare_figures import (EXPERIMENTS, HIGHER, LOWER, RUN_OF, Figure,  # noqa: F401
                              figures)
from pyqueue.table import render

__all__ = ["LOWER", "HIGHER", "Figure", "Change", "Comparison", "figures", "incomparable",
           "compare", "format_comparison", "EXPERIMENTS", "MEASURED_TOLERANCE"]

# Parameters that say how long a run was, not what it measured.
_LENGTH_PARAMS = {"rounds", "windows", "slices", "slice_windows", "messages", "trips",
                  "py_messages", "round_trips", "warmup", "pmu_windows", "over_time",
                  "interval", "seconds", "drain_reps", "stream_messages", "seed", "out",
                  "queue_round_trips", "over_time_round_trips", "timeout"}
# What says which machine and placement ran: compared exactly.
_IDENTITY_KEYS = ("cpu_model", "cpu_count", "allowed_cpus", "pinning", "kernel")
# Measured values of the machine, wherever a folder keeps them (results, or the params
# of an older folder): compared within a relative tolerance.
MEASURED_TOLERANCE = {"ticks_per_ns": 0.001}


# ---- are the two runs comparable -----------------------------------------------------

def _measured(loaded):
    out = {}
    for where in (loaded.params, loaded.results):
        for key in MEASURED_TOLERANCE:
            if isinstance(where, dict) and isinstance(where.get(key), (int, float)):
                out[key] = float(where[key])
    return out


def incomparable(old, new):
    """The reasons two LoadedOutputs cannot be compared ([] = they can)."""
    why = []
    for key in _IDENTITY_KEYS:
        a, b = old.environment.get(key), new.environment.get(key)
        if a != b:
            why.append("environment %s: %r vs %r" % (key, a, b))
    ma, mb = _measured(old), _measured(new)
    for key, tol in MEASURED_TOLERANCE.items():
        a, b = ma.get(key), mb.get(key)
        if a and b and abs(b / a - 1) > tol:
            why.append("measured %s: %.6g vs %.6g (%+.2f %%, tolerance %g %%)"
                       % (key, a, b, 100 * (b / a - 1), 100 * tol))
    for key in sorted(set(old.params) | set(new.params)):
        if key in _LENGTH_PARAMS or key in MEASURED_TOLERANCE:
            continue
        a, b = old.params.get(key), new.params.get(key)
        if a != b:
            if isinstance(a, dict) and isinstance(b, dict):
                diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                why.append("parameter %s: %s" % (key, ", ".join(
                    "%s %r vs %r" % (k, a.get(k), b.get(k)) for k in diff)))
            else:
                why.append("parameter %s: %r vs %r" % (key, a, b))
    return why


def _notes(old, new):
    """Differences that do not make two runs incomparable but a reader should know."""
    out = []
    for key in ("governor",):
        a, b = old.environment.get(key), new.environment.get(key)
        if a != b:
            out.append("environment %s differs: %r vs %r" % (key, a, b))
    return out


# ---- the comparison ----------------------------------------------------------------

@dataclass
class Change:
    """One figure old -> new.  ``change`` = new / old - 1; ``low``/``high`` its
    interval (None when not judged: ``reason``); ``verdict`` "slower", "faster",
    "no significant change" or "not judged"; ``regression``: significantly slower
    and slower by more than the threshold."""
    name: str
    old: float
    new: float
    better: str
    change: Optional[float]
    low: Optional[float] = None
    high: Optional[float] = None
    p_value: Optional[float] = None
    verdict: str = "not judged"
    reason: Optional[str] = None
    regression: bool = False
    rounds: Optional[int] = None      # the fewer rounds of the two sides

    def to_dict(self):
        return {"figure": self.name, "old": self.old, "new": self.new, "change": self.change,
                "interval": None if self.low is None else [self.low, self.high],
                "p_value": self.p_value, "verdict": self.verdict, "reason": self.reason,
                "higher_is_better": self.better == HIGHER, "regression": self.regression,
                "rounds": self.rounds}


@dataclass
class Comparison:
    """What ``compare`` found.  ``failures``: figures missing or not reported on one
    side only (the comparison fails: exit 2); ``unreported``: {figure: why} not
    reported on either side; ``refused``: why the runs are not comparable (compared
    anyway with force)."""
    old: str
    new: str
    experiment: str
    threshold: float
    alpha: float
    bootstrap: int
    confidence: Optional[float]
    changes: List[Change] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)
    unreported: Dict[str, str] = field(default_factory=dict)
    refused: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def judged(self):
        return [c for c in self.changes if c.low is not None]

    @property
    def regressions(self):
        return [c for c in self.changes if c.regression]

    def count(self, verdict):
        return sum(1 for c in self.changes if c.verdict == verdict)

    def exit_code(self):
        """0 nothing regressed, 1 a regression, 2 a figure missing or not reported on
        one side, or no figure that could be judged: the gate cannot vouch for the
        new run."""
        if self.failures or not self.judged:
            return 2
        return 1 if self.regressions else 0

    def why_failed(self):
        """The reasons of exit code 2, one line."""
        if self.failures:
            return "; ".join(self.failures)
        if not self.changes:
            return "no figure in both folders to compare"
        reasons = sorted({c.reason for c in self.changes if c.reason})
        return "no figure could be judged (%s)" % "; ".join(reasons)

    def to_dict(self):
        return {"old": self.old, "new": self.new, "experiment": self.experiment,
                "threshold": self.threshold, "alpha": self.alpha, "bootstrap": self.bootstrap,
                "confidence": self.confidence, "figures_judged": len(self.judged),
                "regressions": len(self.regressions), "slower": self.count(SLOWER),
                "faster": self.count(FASTER), "no_significant_change": self.count(SAME),
                "failures": self.failures, "not_reported": self.unreported,
                "refused": self.refused, "notes": self.notes, "exit_code": self.exit_code(),
                "changes": [c.to_dict() for c in self.changes]}


# ---- several runs on one side: their rounds pooled -----------------------------------

# Sample arrays split into rounds by a lengths array beside them (concatenated as is).
_SPLIT_BY = {"latency_ns": "slice_lengths", "round_trip_ticks": "round_lengths"}
# Per-round value lists in the results (bench, pacing): concatenated.
_VALUE_LISTS = ("ratios", "ratio", "d_max")


def _pool_samples(runs):
    out = {}
    for group in runs[0].samples:
        arrays = [r.samples.get(group) or {} for r in runs]
        merged = dict(arrays[0])
        g = [a.get("group_ns") for a in arrays]
        if all(x is not None and np.ndim(x) == 3 for x in g):
            w = max(x.shape[1] for x in g)
            merged["group_ns"] = np.concatenate([np.pad(x, ((0, 0), (0, w - x.shape[1]), (0, 0)))
                                                 for x in g])
            merged["windows_done"] = np.concatenate([
                a["windows_done"] if a.get("windows_done") is not None else
                np.full(x.shape[0], x.shape[1], np.int64) for a, x in zip(arrays, g)])
            merged[RUN_OF] = np.concatenate([np.full(x.shape[0], k) for k, x in enumerate(g)])
        for name, lengths in _SPLIT_BY.items():
            xs = [a.get(name) for a in arrays]
            if all(x is not None for x in xs):
                merged[name] = np.concatenate(xs)
                per = [a[lengths] if a.get(lengths) is not None else np.array([len(x)])
                       for a, x in zip(arrays, xs)]
                merged[lengths] = np.concatenate(per)
                merged[RUN_OF] = np.concatenate([np.full(len(n), k) for k, n in enumerate(per)])
        out[group] = merged
    return out


def _pool_lists(first, others):
    """``first`` (JSON) with every per-round value list lengthened by the same list at
    the same place in ``others``."""
    if isinstance(first, dict):
        return {k: (first[k] + [x for o in others if isinstance(o, dict)
                                for x in (o.get(k) or [])]
                    if k in _VALUE_LISTS and isinstance(first[k], list) else
                    _pool_lists(first[k], [o.get(k) if isinstance(o, dict) else None
                                           for o in others]))
                for k in first}
    if isinstance(first, list):
        return [_pool_lists(x, [o[i] if isinstance(o, list) and i < len(o) else None
                                for o in others]) for i, x in enumerate(first)]
    return first


def _pooled(runs):
    """One LoadedOutput of several runs of one side: their rounds (and per-round
    values) pooled, the first run's summary and environment otherwise."""
    if len(runs) == 1:
        return runs[0]
    summary = dict(runs[0].summary, results=_pool_lists(runs[0].results,
                                                        [r.results for r in runs[1:]]))
    return dataclasses.replace(runs[0], summary=summary, samples=_pool_samples(runs))


def compare(old_path, new_path, threshold=0.15, force=False, alpha=0.05, bootstrap=2000,
            seed=0, old_more=(), new_more=()):
    """The Comparison of two output folders of one experiment (see the module doc).

    Raises ValueError when a folder does not verify, when the experiments differ,
    or (unless ``force``) when the runs are not comparable, naming why.  ``alpha``:
    the chance that two runs of the same code show a significant change in any
    figure (Bonferroni over the judged figures); ``bootstrap``: replicates per run;
    ``seed``: of the redraws (the same folders and seed give the same answer).
    ``old_more``, ``new_more``: more runs of each side, pooled with its first: the
    redraws draw runs, then rounds, then units, and the degrees of freedom come from
    the runs -- the drift of the machine from run to run is then in the interval.
    """
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1), got %r" % (alpha,))
    if bootstrap < 100:
        raise ValueError("bootstrap must be at least 100 replicates, got %r" % (bootstrap,))
    olds = [output.load(p, samples=True, check=True) for p in (old_path,) + tuple(old_more)]
    news = [output.load(p, samples=True, check=True) for p in (new_path,) + tuple(new_more)]
    kinds = {r.summary.get("experiment") for r in olds + news}
    eo, en = olds[0].summary.get("experiment"), news[0].summary.get("experiment")
    if len(kinds) > 1:
        raise ValueError("%s is %r, %s is %r: not the same experiment" % (
            old_path, eo, new_path, en) if eo != en else
            "the runs are not all of one experiment: %s" % ", ".join(sorted(map(str, kinds))))
    why = []
    for r in olds[1:] + news:
        why += [w for w in incomparable(olds[0], r) if w not in why]
    old, new = _pooled(olds), _pooled(news)
    if why and not force:
        raise ValueError("the runs are not comparable (--force to compare anyway): "
                         + "; ".join(why))
    a, b = figures(old, {}), figures(new, {})
    res = Comparison(str(old_path), str(new_path), eo, threshold, alpha, bootstrap, None,
                     refused=why, notes=_notes(old, new))
    if len(olds) > 1 or len(news) > 1:
        res.notes.append("rounds pooled: %d run%s OLD (%s), %d NEW (%s)" % (
            len(olds), "" if len(olds) == 1 else "s", ", ".join(str(r.path) for r in olds),
            len(news), ", ".join(str(r.path) for r in news)))
    names = [n for n in a] + [n for n in b if n not in a]
    pairs = []
    for name in names:
        fa, fb = a.get(name), b.get(name)
        if fa is None or fb is None:
            res.failures.append("%s: only in %s" % (name, "OLD" if fb is None else "NEW"))
        elif fa.value is None and fb.value is None:
            res.unreported[name] = fa.reason or fb.reason or NOT_MEASURED
        elif fa.value is None or fb.value is None:
            side, f = ("OLD", fa) if fa.value is None else ("NEW", fb)
            res.failures.append("%s: not reported in %s (%s)" % (name, side, f.reason))
        else:
            pairs.append((name, fa, fb))
    judged = {n for n, fa, fb in pairs if fa.draw is not None and fb.draw is not None
              and fa.value > 0 and fb.value > 0}
    res.confidence = family_confidence(alpha, len(judged)) if judged else None
    rng = np.random.default_rng(seed)
    for name, fa, fb in pairs:
        change = fb.value / fa.value - 1.0 if fa.value else None
        c = Change(name, fa.value, fb.value, fa.better, change)
        if name in judged:
            j = judge(fa.value, fb.value, fa.draw(bootstrap, rng), fb.draw(bootstrap, rng),
                      res.confidence, lower_is_better=fa.better == LOWER,
                      rounds=(fa.draw.rounds, fb.draw.rounds))
            c.low, c.high, c.p_value, c.verdict = j.low, j.high, j.p_value, j.verdict
            c.rounds = min(fa.draw.rounds, fb.draw.rounds)
            worse = change if fa.better == LOWER else -change
            c.regression = j.verdict == SLOWER and worse > threshold
        else:
            c.reason = fa.reason or fb.reason or "nothing to redraw"
        res.changes.append(c)
    return res


# ---- the printed table ---------------------------------------------------------------

def _num(v):
    return "n/a" if v is None else "%.4g" % v


def _pct(x):
    # an interval of a few rounds that disagree can span orders of magnitude
    return "%+.1f%%" % (100 * x) if abs(x) < 10 else "%+.2g%%" % (100 * x)


def format_comparison(res, markdown=False):
    """The table of a Comparison: figure, old, new, change, its interval, the verdict;
    then what could not be compared and how the verdicts were reached."""
    rows = []
    for c in res.changes:
        verdict = c.verdict + (": REGRESSION" if c.regression else "")
        if c.low is None:
            verdict = "not judged: %s" % c.reason
        rows.append([c.name + ("" if c.better == LOWER else " (higher is better)"),
                     _num(c.old), _num(c.new), "n/a" if c.change is None else _pct(c.change),
                     "" if c.low is None else "[%s, %s]" % (_pct(c.low), _pct(c.high)),
                     verdict])
    notes = ["NOT COMPARABLE, compared with --force: %s" % r for r in res.refused]
    notes += ["FAILED: %s" % f for f in res.failures]
    by_reason = {}
    for name, why in res.unreported.items():
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():
        shown = ", ".join(names[:4]) + (", ... (%d in all; --json lists them)" % len(names)
                                         if len(names) > 4 else "")
        notes.append("not reported on either side, %s: %s" % (why, shown))
    notes += res.notes
    n = len(res.judged)
    if n:
        notes.append(
            "Each figure is recomputed from the raw samples of each run and redrawn %s times "
            "(rounds with replacement, then the units of each round); interval: the change's "
            "%s %% interval (Student's t, Welch's degrees of freedom from the rounds, or the "
            "runs where several are pooled), so that "
            "%d figures of two runs of the same code give a false alarm with probability at "
            "most %g %% (Bonferroni); significant when the interval leaves out 0; rounds that "
            "disagree widen it." % ("{:,}".format(res.bootstrap), _conf(res.confidence), n,
                                   100 * res.alpha))
        if any(c.rounds == 1 for c in res.judged):
            notes.append("A figure of a single round (on either side) has an interval of its "
                         "sampling noise only: the drift between rounds is not in it; run "
                         "--rounds 3 or more.")
    notes.append("%d of %d figures judged: %d slower, %d faster, %d no significant change; "
                 "%d regression%s (significantly slower and slower by more than %g %%)"
                 % (n, len(res.changes), res.count(SLOWER), res.count(FASTER), res.count(SAME),
                    len(res.regressions), "" if len(res.regressions) == 1 else "s",
                    100 * res.threshold))
    if not res.failures and not res.judged:
        notes.append("FAILED: %s" % res.why_failed())
    return render(["figure", "old", "new", "change", "interval", "verdict"], rows,
                  markdown=markdown, notes=notes)


def _conf(c):
    text = "%.4f" % (100 * c)
    return text.rstrip("0").rstrip(".")

