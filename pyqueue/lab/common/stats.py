"""Nearest-rank percentiles, per round then averaged, and the table that states it.

Definition (the one the original burst-tail study reports): the p-th percentile
of n samples sorted ascending is the sample at 1-based rank ceil(p/100 · n), with
p = 0 giving the minimum.  The result is always one of the samples (never an
interpolation).  p is read as a decimal percentage: floating-point noise such as
99.9/100·1000 = 999.0000000000001 is treated as the exact rank 999.

An empty sample set has no percentile: the functions return NaN and the table
prints "not measured" — never a fabricated number.
"""
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from pyqueue.table import render

__all__ = ["nearest_rank", "nearest_rank_index", "per_round_then_mean", "RoundPercentiles",
           "percentile_label", "format_table", "NOT_MEASURED", "STUDY_PERCENTILES"]

NOT_MEASURED = "not measured"
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

    ``per_round[r, i]`` is the ps[i] percentile of round r (NaN if the round has no
    samples).  ``mean``, ``min`` and ``max`` run over the measured rounds only;
    they are NaN when no round was measured.
    """
    ps: tuple
    per_round: np.ndarray        # shape (rounds, len(ps))
    counts: tuple                # samples per round
    mean: np.ndarray
    min: np.ndarray
    max: np.ndarray

    @property
    def rounds(self):
        return len(self.counts)

    @property
    def measured_rounds(self):
        return sum(1 for c in self.counts if c > 0)

    def method(self):
        """One sentence saying how the numbers were computed."""
        if self.measured_rounds == 0:
            return "nearest-rank per round; no round measured"
        text = "nearest-rank per round, mean of %d round%s" % (
            self.measured_rounds, "" if self.measured_rounds == 1 else "s")
        if self.measured_rounds < self.rounds:
            text += " (%d of %d rounds had no samples)" % (
                self.rounds - self.measured_rounds, self.rounds)
        return text

    def to_dict(self):
        """Plain-Python form for summary.json (NaN stays NaN; the writer maps it)."""
        return {"ps": list(self.ps), "labels": [percentile_label(p) for p in self.ps],
                "method": self.method(), "counts": list(self.counts),
                "per_round": self.per_round.tolist(), "mean": self.mean.tolist(),
                "min": self.min.tolist(), "max": self.max.tolist()}


def per_round_then_mean(samples_by_round, ps=STUDY_PERCENTILES):
    """Nearest-rank percentiles of each round, then the mean, min and max over rounds.

    ``samples_by_round``: a sequence of 1-D arrays (one per round, lengths may
    differ) or a 2-D array (rounds × samples).  Rounds without samples count as
    not measured and are left out of the mean/min/max (``method()`` says so).
    """
    ps_t = tuple(float(p) for p in np.atleast_1d(_check_ps(ps)))
    rounds = [np.asarray(r).ravel() for r in samples_by_round]
    per_round = np.array([nearest_rank(r, ps_t) for r in rounds],
                         dtype=np.float64).reshape(len(rounds), len(ps_t))
    measured = per_round[[r.size > 0 for r in rounds]]
    if measured.shape[0]:
        mean, lo, hi = measured.mean(axis=0), measured.min(axis=0), measured.max(axis=0)
    else:
        mean = lo = hi = np.full(len(ps_t), np.nan)
    return RoundPercentiles(ps=ps_t, per_round=per_round,
                            counts=tuple(int(r.size) for r in rounds),
                            mean=mean, min=lo, max=hi)


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
        show = r.measured_rounds > 1
        cells = [_cell(r.mean[i], r.min[i], r.max[i], digits, show) for i in range(len(ps))]
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
    return text + "."
