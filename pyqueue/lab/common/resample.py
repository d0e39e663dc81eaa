"""How much a figure moves from resampling alone: the bootstrap ``compare`` judges
a change by (docs/OUTPUT.md, "Comparing runs").

A figure of the lab is a statistic of rounds of samples -- the mean over rounds of
each round's nearest-rank percentile (burst-tail, pipeline, the c2c matrix), a
percentile of the rounds pooled (c2c's queue ping-pong), or the median of one value
per round (bench's and pacing's ratios).  ``Sampler`` redraws such a figure many
times from the run's own samples, the way the run could have come out:

- the rounds are drawn with replacement (so the interval widens when the rounds of
  one run disagree: the drift of the machine between them is part of the noise);
- within each drawn round its *units* are drawn with replacement: a unit is what
  was measured together (a burst-tail window and its 4 groups, one message, one
  round trip), so that what is correlated inside a unit stays together.

``judge`` takes the replicates of the same figure in two runs and gives the change
new / old - 1, its interval and whether it is significant: the log of the ratio of
two independent replicates is taken as normal (its standard deviation from the
replicates), which gives intervals at the small per-figure false-alarm rates a
family of figures needs without tens of thousands of replicates.
"""
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional

import numpy as np

from .stats import nearest_rank_index, reported

__all__ = ["Sampler", "RoundsSampler", "ValuesSampler", "Judgement", "judge", "z_of", "t_of",
           "t_two_sided_p",
           "family_confidence", "SLOWER", "FASTER", "SAME"]

# Replicates drawn in one block of a vectorised percentile (memory: block × samples).
_BLOCK_VALUES = 1 << 24


def z_of(confidence):
    """The two-sided normal quantile of ``confidence`` (0.95 -> 1.96)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


class Sampler:
    """Replicates of one or more figures of one run (``replicates(B, rng)`` ->
    (B, k) float64) and their values as the run reported them (``values``, (k,))."""

    values: np.ndarray

    def replicates(self, b, rng):
        raise NotImplementedError


class RoundsSampler(Sampler):
    """Percentiles ``ps`` of rounds of units: ``rounds`` is a list of 2-D arrays
    (units × samples per unit; a 1-D array is one sample per unit).  ``pooled``:
    the percentile of every round's samples together; else (the lab's usual figure)
    each round's percentile, then the mean over the rounds where it is reported
    (MIN_BEYOND samples beyond it), exactly as stats.per_round_then_mean.
    ``scale`` multiplies every value (ticks -> ns, ns -> µs).

    ``run_of`` (one id per round): the rounds come from several runs of one side.
    The redraw then draws the runs with replacement first, then the rounds of each
    drawn run, then their units, and ``replicates_of`` (what the variance rests on,
    for judge()) is the number of runs: the drift between runs is then the top level
    of the noise, and a few runs prove little."""

    def __init__(self, rounds, ps, pooled=False, scale=1.0, run_of=None):
        rounds = [np.asarray(r, dtype=np.float64).reshape(len(r), -1) for r in rounds]
        run_of = list(run_of) if run_of is not None else [0] * len(rounds)
        keep = [k for k, r in enumerate(rounds) if r.size]
        self.rounds = [rounds[k] for k in keep]
        self.run_of = [run_of[k] for k in keep]
        self.runs = sorted(set(self.run_of))
        self.ps = tuple(float(p) for p in ps)
        self.pooled, self.scale = pooled, float(scale)
        self.values = self._figure([r.ravel() for r in self.rounds])

    @property
    def replicates_of(self):
        return len(self.runs) if len(self.runs) > 1 else len(self.rounds)

    def _usable(self, sizes, i):
        return [k for k, n in enumerate(sizes) if reported(n, self.ps[i])]

    def _figure(self, flat):
        out = np.full(len(self.ps), np.nan)
        if not flat:
            return out
        if self.pooled:
            allv = np.concatenate(flat)
            for i, p in enumerate(self.ps):
                if reported(allv.size, p):
                    out[i] = np.partition(allv, nearest_rank_index(allv.size, p))[
                        nearest_rank_index(allv.size, p)]
            return out * self.scale
        for i, p in enumerate(self.ps):
            use = self._usable([f.size for f in flat], i)
            if use:
                out[i] = np.mean([np.partition(flat[k], nearest_rank_index(flat[k].size, p))[
                    nearest_rank_index(flat[k].size, p)] for k in use])
        return out * self.scale

    def _round_replicates(self, r, b, rng):
        """(b, len(ps)) percentiles of round ``r`` with its units redrawn; NaN where
        the round does not report that percentile."""
        units = self.rounds[r]
        n = units.size
        idx = nearest_rank_index(n, self.ps)
        out = np.full((b, len(self.ps)), np.nan)
        ok = np.array([reported(n, p) for p in self.ps])
        if not ok.any():
            return out
        kth = np.unique(idx[ok])
        step = max(1, _BLOCK_VALUES // n)
        for lo in range(0, b, step):
            hi = min(b, lo + step)
            draw = units[rng.integers(0, units.shape[0], size=(hi - lo, units.shape[0]))]
            part = np.partition(draw.reshape(hi - lo, n), kth, axis=1)
            out[lo:hi, ok] = part[:, idx[ok]]
        return out

    def replicates(self, b, rng):
        nr = len(self.rounds)
        if nr == 0:
            return np.full((b, len(self.ps)), np.nan)
        pick = rng.integers(0, nr, size=(b, nr))          # the rounds, redrawn
        if self.pooled:
            return self._pooled_replicates(pick, b, rng)
        per = [self._round_replicates(r, b, rng) for r in range(nr)]
        if len(self.runs) > 1:
            return self._nested(per, b, rng) * self.scale
        out = np.zeros((b, len(self.ps)))
        count = np.zeros((b, len(self.ps)))
        for slot in range(nr):
            # A round drawn twice uses two different redraws of its units.
            perm = rng.permutation(b)
            vals = np.stack([per[r][perm] for r in range(nr)])      # (rounds, b, ps)
            v = vals[pick[:, slot], np.arange(b)]                    # (b, ps)
            good = np.isfinite(v)
            out[good] += v[good]
            count += good
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(count > 0, out / np.maximum(count, 1), np.nan)
        out[:, ~np.isfinite(self.values)] = np.nan
        return out * self.scale

    def _nested(self, per, b, rng):
        """Runs, then rounds of each drawn run, then their units (per[r]: round r's
        redraws): the mean over the drawn rounds where each percentile is reported."""
        members = [np.array([k for k, u in enumerate(self.run_of) if u == run])
                   for run in self.runs]
        out = np.full((b, len(self.ps)), np.nan)
        for k in range(b):
            rows = [per[r][rng.integers(0, b)]
                    for j in rng.integers(0, len(members), len(members))
                    for r in members[j][rng.integers(0, members[j].size, members[j].size)]]
            v = np.array(rows)
            good = np.isfinite(v)
            n = good.sum(axis=0)
            out[k] = np.where(n > 0, np.where(good, v, 0.0).sum(axis=0) / np.maximum(n, 1),
                              np.nan)
        out[:, ~np.isfinite(self.values)] = np.nan
        return out

    def _pooled_replicates(self, pick, b, rng):
        out = np.full((b, len(self.ps)), np.nan)
        for k in range(b):
            flat = np.concatenate([self.rounds[r][rng.integers(0, self.rounds[r].shape[0],
                                                               self.rounds[r].shape[0])].ravel()
                                   for r in pick[k]])
            idx = nearest_rank_index(flat.size, self.ps)
            ok = np.array([reported(flat.size, p) for p in self.ps])
            if ok.any():
                part = np.partition(flat, np.unique(idx[ok]))
                out[k, ok] = part[idx[ok]]
        return out * self.scale


class ValuesSampler(Sampler):
    """The median of one value per round (a ratio, a rate): the values redrawn with
    replacement.  Fewer than ``min_values`` values give no replicates (NaN): the
    spread of one or two rounds says nothing."""

    def __init__(self, values, min_values=3):
        self.data = np.asarray([v for v in values if v is not None and math.isfinite(v)],
                               dtype=np.float64)
        self.min_values = min_values
        self.values = np.array([np.median(self.data) if self.data.size else np.nan])

    @property
    def judgeable(self):
        return self.data.size >= self.min_values

    def replicates(self, b, rng):
        if not self.judgeable:
            return np.full((b, 1), np.nan)
        draw = self.data[rng.integers(0, self.data.size, size=(b, self.data.size))]
        return np.median(draw, axis=1)[:, None]


@dataclass(frozen=True)
class Judgement:
    """One figure, old -> new: ``change`` = new / old - 1; ``low``, ``high`` its
    interval at ``confidence``; ``verdict`` "slower", "faster" or "no significant
    change" (by which way is better: ``lower_is_better``); ``p_value`` two-sided."""
    old: float
    new: float
    change: float
    low: Optional[float]
    high: Optional[float]
    p_value: Optional[float]
    confidence: float
    verdict: str

    @property
    def significant(self):
        return self.verdict in ("slower", "faster")


SLOWER, FASTER, SAME = "slower", "faster", "no significant change"


def _betacf(a, b, x):
    """The continued fraction of the regularized incomplete beta (Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _ibeta(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) +
                     a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (inf: normal)."""
    if math.isinf(df):
        return 2.0 * (1.0 - NormalDist().cdf(abs(t)))
    return _ibeta(df / 2.0, 0.5, df / (df + t * t))


def t_of(confidence, df):
    """The two-sided Student-t quantile of ``confidence`` with ``df`` degrees of
    freedom (z_of when df is infinite): bisection on t_two_sided_p."""
    if math.isinf(df):
        return z_of(confidence)
    alpha = 1.0 - confidence
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > alpha:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_two_sided_p(mid, df) > alpha else (lo, mid)
    return hi


def judge(old, new, old_reps, new_reps, confidence, lower_is_better=True, rounds=(None, None)):
    """The Judgement of a figure ``old`` -> ``new`` from the replicates of each run
    (1-D, independent draws).  The change is significant when its interval at
    ``confidence`` leaves out 0 (no change); the interval is exp(d ± t·sd) - 1 of
    d = log(new / old), sd from the replicates' variances of log(figure).

    ``rounds`` (old, new): how many rounds each run's figure rests on.  The redraw of
    R rounds understates their spread by (R-1)/R and R values estimate it poorly, so
    each side's variance is scaled by R/(R-1) and t has Welch's degrees of freedom
    (R-1 per side; a side of one round, or None, adds none: z where neither has any)."""
    change = new / old - 1.0
    a, b = np.asarray(old_reps, dtype=np.float64), np.asarray(new_reps, dtype=np.float64)
    good_a = a[np.isfinite(a) & (a > 0)]
    good_b = b[np.isfinite(b) & (b > 0)]
    if min(good_a.size, good_b.size) < 20 or old <= 0 or new <= 0:
        return Judgement(old, new, change, None, None, None, confidence, SAME)
    d = math.log(new / old)
    var, dfs = [], []
    for reps, r in ((good_a, rounds[0]), (good_b, rounds[1])):
        v = float(np.var(np.log(reps), ddof=1))
        if r is not None and r >= 2:
            v *= r / (r - 1.0)
            dfs.append((v, r - 1))
        var.append(v)
    total = sum(var)
    df = total * total / sum(v * v / k for v, k in dfs) if dfs and total > 0 else math.inf
    sd = math.sqrt(total)
    if sd == 0.0:
        low = high = change
        p = 0.0 if d else 1.0
    else:
        t = t_of(confidence, df)
        low, high = math.expm1(d - t * sd), math.expm1(d + t * sd)
        p = t_two_sided_p(d / sd, df)
    if low > 0 or high < 0:
        worse = (change > 0) == lower_is_better
        verdict = SLOWER if worse else FASTER
    else:
        verdict = SAME
    return Judgement(old, new, change, low, high, p, confidence, verdict)


def family_confidence(alpha, m):
    """Each figure's confidence so that ``m`` figures of two runs of the same code
    give a false alarm with probability at most ``alpha`` (Bonferroni)."""
    return 1.0 - alpha / max(1, m)

