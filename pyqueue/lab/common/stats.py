"""Nearest-rank percentiles, per round then averaged, and the table that states it.

Definition (the one the original burst-tail study reports): the p-th percentile
of n samples sorted ascending is the sample at 1-based rank ceil(p/100 · n), with
p = 0 giving the minimum.  The result is always one of the samples (never an
interpolation).  p is read as a decimal percentage: floating-point noise such as
99.9/100·1000 = 999.0000000000001 is treated as the exact rank 999.

An empty sample set has no percentile: the functions return NaN and the table
prints "not measured" — never a fabricated number.

A percentile is *reported* only where it rests on something: at least MIN_BEYOND
(10) samples lie beyond it, n·(1 − p/100) ≥ 10 (p50 needs 20 samples, p99 1,000,
p99.9 10,000).  Below that the p99 of 400 samples would be the 4th largest and the
p99.9 the largest: a number that moves with any one sample.  ``nearest_rank`` is
the bare arithmetic; ``reported`` / ``honest_rank`` / ``per_round_then_mean``
apply the rule and say why a value is missing ("not enough samples (n=400)").
p100 is exempt: it is the largest sample (the maximum), an observation, not an
estimate of a quantile.
"""
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from pyqueue.table import render

__all__ = ["nearest_rank", "nearest_rank_index", "per_round_then_mean", "RoundPercentiles",
           "percentile_label", "format_table", "NOT_MEASURED", "STUDY_PERCENTILES",
           "MIN_BEYOND", "NOT_ENOUGH", "reported", "samples_needed", "not_enough", "short_reason",
           "honest_rank"]

NOT_MEASURED = "not measured"
NOT_ENOUGH = "not enough samples"
MIN_BEYOND = 10        # samples that must lie beyond a reported percentile
STUDY_PERCENTILES = (50.0, 99.0, 99.9)     # p50 / p99 / p999 of the burst-tail study

# Relative tolerance under which p/100·n counts as the integer it is meant to be.
_RANK_EPS = 1e-9


def _check_ps(ps):
    arr = np.asarray(ps, dtype=np.float64)
    if np.isnan(arr).any() or (arr < 0).any() or (arr > 100).any():
        raise ValueError("ps must be percentages in [0, 100], got %r" % (ps,))
    return arr


def nearest_rank_index(n, ps):
    """0-based index into ``n`` sorted samples of each percentile in ``ps``.

    rank = ceil(p/100 · n) (1-based), at least 1; returns rank - 1.  ``n`` must be
    >= 1.  Vectorised over ``ps``; the result has the shape of ``ps``.
    """
    if n < 1:
        raise ValueError("n must be >= 1, got %r" % (n,))
    exact = _check_ps(ps) * n / 100.0
    nearest = np.round(exact)
    snapped = np.abs(exact - nearest) <= _RANK_EPS * np.maximum(1.0, exact)
    rank = np.where(snapped, nearest, np.ceil(exact))
    return np.clip(rank, 1, n).astype(np.intp) - 1


def samples_needed(p, min_beyond=MIN_BEYOND):
    """The fewest samples on which percentile ``p`` is reported: n·(1 − p/100) ≥
    min_beyond (1 for p100, the maximum, which is exempt)."""
    p = float(_check_ps(p))
    if p >= 100.0 or min_beyond <= 0:
        return 1
    exact = min_beyond * 100.0 / (100.0 - p)
    nearest = round(exact)
    # 10 / 0.001 is 9999.999999999995 in floating point: snap to the integer meant
    return int(nearest if abs(exact - nearest) <= _RANK_EPS * exact else math.ceil(exact))


def reported(n, p, min_beyond=MIN_BEYOND):
    """True when percentile ``p`` of ``n`` samples is reported (see the module doc)."""
    return n >= 1 and n >= samples_needed(p, min_beyond)


def not_enough(n, p, min_beyond=MIN_BEYOND, per_round=False):
    """Why percentile ``p`` of ``n`` samples is not reported: 'not enough samples
    (n=400 per round; p99 needs 1,000: 10 beyond it)'; ``n`` may be a (lo, hi) range."""
    if isinstance(n, tuple):
        lo, hi = n
        n_text = "%d" % lo if lo == hi else "%d–%d" % (lo, hi)
    else:
        n_text = "%d" % n
    return "%s (n=%s%s; %s needs %s: %d beyond it)" % (
        NOT_ENOUGH, n_text, " per round" if per_round else "", percentile_label(p),
        "{:,}".format(samples_needed(p, min_beyond)), min_beyond)


def short_reason(reason):
    """'not enough samples (n=400 per round; p99 needs ...)' -> 'not enough samples
    (n=400)': what fits a table cell; any other reason as it is."""
    if reason and reason.startswith(NOT_ENOUGH + " (n="):
        n = reason[len(NOT_ENOUGH) + 4:].split(";")[0].split(" ")[0].rstrip(")")
        return "%s (n=%s)" % (NOT_ENOUGH, n)
    return reason


def honest_rank(samples, ps=STUDY_PERCENTILES, min_beyond=MIN_BEYOND):
    """Nearest-rank percentiles of ``samples`` where they are reported, NaN where
    not, and {label: why} for each NaN.  Returns (float64 array shaped as ps, reasons)."""
    ps_arr = np.atleast_1d(_check_ps(ps))
    arr = np.asarray(samples).ravel()
    values = np.atleast_1d(nearest_rank(arr, ps_arr)).astype(np.float64)
    reasons = {}
    for i, p in enumerate(ps_arr):
        if arr.size == 0:
            reasons[percentile_label(p)] = NOT_MEASURED
        elif not reported(arr.size, p, min_beyond):
            values[i] = np.nan
            reasons[percentile_label(p)] = not_enough(arr.size, p, min_beyond)
    return values, reasons


def nearest_rank(samples, ps=STUDY_PERCENTILES):
    """Nearest-rank percentiles of a 1-D sample set (any order; not modified).

    Returns float64 with the shape of ``ps`` (a Python float for a scalar ``p``);
    NaN for every p when ``samples`` is empty.  NaN samples are refused
    (``ValueError``): a percentile over them would be meaningless.
    """
    arr = np.asarray(samples).ravel()
    ps_arr = _check_ps(ps)
    if arr.size == 0:
        out = np.full(ps_arr.shape, np.nan)
    else:
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            raise ValueError("samples contain NaN")
        idx = nearest_rank_index(arr.size, ps_arr)
        # partition is O(n) per call and leaves the caller's array alone
        part = np.partition(arr, np.unique(idx))
        out = part[idx].astype(np.float64)
    return float(out) if np.ndim(ps) == 0 else out


@dataclass(frozen=True)
class RoundPercentiles:
    """Nearest-rank percentiles per round and their summary across rounds.

    ``per_round[r, i]`` is the ps[i] percentile of round r: NaN if the round has no
    samples, or too few for ps[i] to be reported (fewer than ``min_beyond`` beyond
    it).  ``mean``, ``min`` and ``max`` run over the rounds where ps[i] is reported
    and are NaN where no round reports it (``reason(i)`` says why).
    """
    ps: tuple
    per_round: np.ndarray        # shape (rounds, len(ps))
    counts: tuple                # samples per round
    mean: np.ndarray
    min: np.ndarray
    max: np.ndarray
    min_beyond: int = MIN_BEYOND

    @property
    def rounds(self):
        return len(self.counts)

    @property
    def measured_rounds(self):
        return sum(1 for c in self.counts if c > 0)

    def rounds_used(self, i):
        """The rounds the ps[i] figure averages (measured, and enough samples)."""
        return int(np.isfinite(self.per_round[:, i]).sum()) if self.rounds else 0

    def reported(self, i):
        return bool(np.isfinite(self.mean[i]))

    def reason(self, i, short=False):
        """None where ps[i] is reported; else 'not measured' or 'not enough samples
        (n=400 per round; p99 needs 1,000: 10 beyond it)' (``short``: '... (n=400)')."""
        if self.reported(i):
            return None
        measured = [c for c in self.counts if c > 0]
        if not measured:
            return NOT_MEASURED
        why = not_enough((min(measured), max(measured)), self.ps[i], self.min_beyond,
                         per_round=True)
        return short_reason(why) if short else why

    def method(self):
        """One sentence saying how the numbers were computed."""
        if self.measured_rounds == 0:
            return "nearest-rank per round; no round measured"
        text = "nearest-rank per round, mean of %d round%s" % (
            self.measured_rounds, "" if self.measured_rounds == 1 else "s")
        if self.measured_rounds < self.rounds:
            text += " (%d of %d rounds had no samples)" % (
                self.rounds - self.measured_rounds, self.rounds)
        short = ["%s in %d" % (percentile_label(p), self.rounds_used(i))
                 for i, p in enumerate(self.ps)
                 if self.reported(i) and self.rounds_used(i) < self.measured_rounds]
        if short:
            text += "; too few samples in some rounds: %s" % ", ".join(short)
        return text

    @classmethod
    def from_dict(cls, d):
        """The RoundPercentiles of its ``to_dict()`` (as summary.json keeps it: null for
        NaN)."""
        f = lambda v: np.array(v, dtype=np.float64)
        return cls(ps=tuple(d["ps"]), per_round=f(d["per_round"]).reshape(len(d["counts"]),
                                                                          len(d["ps"])),
                   counts=tuple(d["counts"]), mean=f(d["mean"]), min=f(d["min"]),
                   max=f(d["max"]), min_beyond=d.get("min_beyond", 0))

    def to_dict(self):
        """Plain-Python form for summary.json (NaN stays NaN; the writer maps it to
        null); ``not_reported``: label -> why, for each percentile left out."""
        return {"ps": list(self.ps), "labels": [percentile_label(p) for p in self.ps],
                "method": self.method(), "counts": list(self.counts),
                "min_beyond": self.min_beyond,
                "per_round": self.per_round.tolist(), "mean": self.mean.tolist(),
                "min": self.min.tolist(), "max": self.max.tolist(),
                "not_reported": {percentile_label(p): self.reason(i)
                                 for i, p in enumerate(self.ps) if not self.reported(i)}}


def per_round_then_mean(samples_by_round, ps=STUDY_PERCENTILES, min_beyond=MIN_BEYOND):
    """Nearest-rank percentiles of each round, then the mean, min and max over rounds.

    ``samples_by_round``: a sequence of 1-D arrays (one per round, lengths may
    differ) or a 2-D array (rounds × samples).  Rounds without samples count as
    not measured and are left out of the mean/min/max (``method()`` says so); so is
    a round too small for a percentile (fewer than ``min_beyond`` samples beyond it;
    0 turns the rule off).
    """
    ps_t = tuple(float(p) for p in np.atleast_1d(_check_ps(ps)))
    rounds = [np.asarray(r).ravel() for r in samples_by_round]
    per_round = np.array([nearest_rank(r, ps_t) for r in rounds],
                         dtype=np.float64).reshape(len(rounds), len(ps_t))
    for r, arr in enumerate(rounds):
        for i, p in enumerate(ps_t):
            if arr.size and not reported(arr.size, p, min_beyond):
                per_round[r, i] = np.nan
    mean, lo, hi = (np.full(len(ps_t), np.nan) for _ in range(3))
    for i in range(len(ps_t)):
        col = per_round[:, i][np.isfinite(per_round[:, i])]
        if col.size:
            mean[i], lo[i], hi[i] = col.mean(), col.min(), col.max()
    return RoundPercentiles(ps=ps_t, per_round=per_round,
                            counts=tuple(int(r.size) for r in rounds),
                            mean=mean, min=lo, max=hi, min_beyond=int(min_beyond))


def percentile_label(p):
    """'p50', 'p99', 'p999' (99.9), 'p9999' (99.99), 'p0' — the study's spelling."""
    text = ("%.6f" % float(p)).rstrip("0").rstrip(".")
    return "p" + text.replace(".", "")


def _cell(value, lo=None, hi=None, digits=1, show_range=True):
    if value is None or not math.isfinite(value):
        return NOT_MEASURED
    text = "%.*f" % (digits, value)
    if show_range and lo is not None and math.isfinite(lo):
        text += " [%.*f–%.*f]" % (digits, lo, digits, hi)
    return text


def format_table(results: Mapping[str, RoundPercentiles], unit="ns", markdown=True,
                 digits=1, title=None, label="class"):
    """A Markdown (or plain) table of ``{row name: RoundPercentiles}`` plus its method.

    Each cell is "mean [min–max]" over rounds; a row whose rounds are all empty
    reads "not measured".  The last line states how the numbers were computed.
    """
    if not results:
        raise ValueError("results must name at least one row")
    ps = next(iter(results.values())).ps
    if any(r.ps != ps for r in results.values()):
        raise ValueError("results must all use the same percentiles")
    head = [label] + ["%s (%s)" % (percentile_label(p), unit) for p in ps] + ["samples"]
    body = []
    for name, r in results.items():
        cells = [_cell(r.mean[i], r.min[i], r.max[i], digits, r.rounds_used(i) > 1)
                 if r.reported(i) else r.reason(i, short=True) for i in range(len(ps))]
        body.append([str(name)] + cells + ["{:,}".format(sum(r.counts))])
    lines = [title, ""] if title else []
    lines += [render(head, body, markdown=markdown), "", _method_line(results.values())]
    return "\n".join(line.rstrip() for line in lines)


def _method_line(results: Sequence[RoundPercentiles]):
    measured = sorted({r.measured_rounds for r in results if r.measured_rounds})
    totals = sorted({r.rounds for r in results})
    if not measured:
        return "Nothing was measured."
    rounds = "/".join(str(m) for m in measured)
    text = ("Percentiles: nearest-rank (rank = ceil(p/100·n)) per round, "
            "mean of %s round%s" % (rounds, "" if measured == [1] else "s"))
    if any(m > 1 for m in measured):
        text += "; min–max across rounds in brackets"
    if any(r.measured_rounds < r.rounds for r in results):
        text += "; rounds without samples (of %s) left out" % "/".join(map(str, totals))
    beyond = sorted({r.min_beyond for r in results if r.min_beyond > 0})
    if beyond:
        text += ("; a percentile p is shown only where at least %s samples of a round lie "
                 "beyond it (n·(1−p) ≥ %s)" % ("/".join(map(str, beyond)),
                                              "/".join(map(str, beyond))))
    return text + "."
