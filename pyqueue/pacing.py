"""The sender-queueing model of DESIGN §6.5: drain rate, backlog, pacing.

A burst of ``n`` messages is offered at rate ``p`` (messages/s) to a consumer that
drains at a constant rate ``d`` (messages/s).  The backlog peaks when the last
message is offered, and the last message waits longest::

    peak backlog            Q = n (1 - d/p)          (0 when p <= d)
    max queueing delay        = Q / d                 seconds
    burst limit for target t  = d t                   messages a tight loop may send
    pacing rate meeting t  p_max = d / (1 - t d / n)  (unbounded when t >= n/d)

``p_max`` may exceed ``d``: the backlog only accumulates during the finite offer
window, and the real constraint is the backlog at its end, ``d t``.

Every function accepts scalars or numpy arrays (broadcast together).  Scalars in
give a Python ``float`` out; any array in gives a float64 ``ndarray`` out.
Invalid inputs raise ``ValueError`` naming the argument: rates, ``n`` and ``t``
must be positive and not NaN.  ``p = math.inf`` means an unpaced (tight-loop)
burst and ``t = math.inf`` a target with no limit; ``d`` and ``n`` must be finite.
"""
import math
from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

__all__ = ["peak_backlog", "max_delay", "p_max", "burst_limit", "unpaced_delay",
           "pacing_table", "PacingRow", "PacingTable"]


def _positive(name, value, allow_inf):
    """Return ``value`` as a float64 array after checking it is > 0 and not NaN."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("%s must be a positive number or array of numbers, got %r"
                         % (name, value)) from None
    if np.isnan(arr).any():
        raise ValueError("%s must not be NaN" % name)
    if (arr <= 0).any():
        raise ValueError("%s must be > 0, got %r" % (name, value))
    if not allow_inf and np.isinf(arr).any():
        raise ValueError("%s must be finite, got %r" % (name, value))
    return arr


def _out(result, *inputs):
    """Python float when every input was a scalar, else the float64 array."""
    if all(np.ndim(x) == 0 and not isinstance(x, np.ndarray) for x in inputs):
        return float(result)
    return np.asarray(result, dtype=np.float64)


def peak_backlog(n, p, d):
    """Peak backlog Q (messages) of a burst of ``n`` offered at ``p`` to a drain ``d``.

    Q = n (1 - d/p) when p > d, else 0 (the consumer keeps up).  ``p = inf`` (an
    unpaced burst) gives Q = n.
    """
    na, pa, da = (_positive("n", n, False), _positive("p", p, True),
                  _positive("d", d, False))
    q = np.where(pa > da, na * (1.0 - da / pa), 0.0)
    return _out(q, n, p, d)


def max_delay(n, p, d):
    """Maximum queueing delay (seconds) in the burst: Q / d, the last message's wait.

    0 when p <= d; ``n / d`` for an unpaced burst (``p = inf``), the delay floor.
    """
    na, pa, da = (_positive("n", n, False), _positive("p", p, True),
                  _positive("d", d, False))
    q = np.where(pa > da, na * (1.0 - da / pa), 0.0)
    return _out(q / da, n, p, d)


def unpaced_delay(n, d):
    """Max queueing delay (seconds) of a tight-loop burst: ``n / d`` (p -> inf)."""
    na, da = _positive("n", n, False), _positive("d", d, False)
    return _out(na / da, n, d)


def burst_limit(d, t):
    """Largest burst (messages) a tight loop may send and still meet target ``t``: d t."""
    da, ta = _positive("d", d, False), _positive("t", t, True)
    return _out(da * ta, d, t)


def p_max(d, t, n):
    """Highest offer rate (messages/s) at which a burst of ``n`` meets delay target ``t``.

    p_max = d / (1 - t d / n); ``math.inf`` when t >= n/d, i.e. when even an
    unpaced burst meets the target and pacing is pointless.
    """
    da, ta, na = (_positive("d", d, False), _positive("t", t, True),
                  _positive("n", n, False))
    slack = 1.0 - ta * da / na
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(slack > 0.0, da / np.where(slack > 0.0, slack, 1.0), np.inf)
    return _out(rate, d, t, n)


@dataclass(frozen=True)
class PacingRow:
    """One target of the pacing table (all rates in messages/s, times in seconds)."""
    t: float                 # the queueing-delay target
    burst_limit: float       # d t: largest tight-loop burst that meets t
    p_max: float             # offer rate that makes the n-burst meet t (inf: any)
    p_max_over_d: float      # p_max / d (inf when unbounded)
    tight_loop_ok: bool      # n <= d t: the unpaced burst already meets t


@dataclass(frozen=True)
class PacingTable:
    """The pacing table (DESIGN §6.5) for one drain rate ``d`` and burst size ``n``."""
    d: float
    n: float
    rows: Tuple[PacingRow, ...]

    @property
    def unpaced_delay(self):
        """n / d: the delay of an unpaced burst, beyond which pacing is pointless."""
        return self.n / self.d

    def to_text(self, markdown=False):
        """The table in the pacing article's shape: target T | burst limit D×T | P_max for N."""
        head = ("target T", "tight-loop burst limit D×T",
                "pace N=%s burst to P_max" % _count(self.n), "P_max / D")
        body = []
        for r in self.rows:
            if math.isinf(r.p_max):
                rate, ratio = "unbounded (tight loop meets T)", "inf"
            else:
                rate, ratio = "≈ %s" % _rate(r.p_max), "%.3f" % r.p_max_over_d
            body.append((_duration(r.t), "≈ %s msgs" % _count(r.burst_limit), rate, ratio))
        from .table import render  # the one table formatter of every command
        lines = ["D = %s, N = %s messages; unpaced delay floor N/D = %s"
                 % (_rate(self.d), _count(self.n), _duration(self.unpaced_delay))]
        if markdown:
            lines.append("")
        lines += [render(head, body, markdown=markdown), "model: P_max = D / (1 - T·D/N)"]
        return "\n".join(lines)

    def __str__(self):
        return self.to_text()


def pacing_table(d, n, targets: Sequence[float] = (0.5e-3, 1e-3, 5e-3, 10e-3, 25e-3)):
    """Rows of the pacing table for drain rate ``d``, burst ``n`` and each target (s).

    Print the result (or ``.to_text(markdown=True)``) for the human-readable form.
    The default targets are the pacing article's: 0.5, 1, 5, 10 and 25 ms.
    """
    d = float(_positive("d", d, False))
    n = float(_positive("n", n, False))
    ts = np.atleast_1d(_positive("targets", targets, True)).ravel()
    rows = []
    for t in ts:
        t = float(t)
        pm = p_max(d, t, n)
        rows.append(PacingRow(t=t, burst_limit=burst_limit(d, t), p_max=pm,
                              p_max_over_d=pm / d, tight_loop_ok=n <= d * t))
    return PacingTable(d=d, n=n, rows=tuple(rows))


def _duration(seconds):
    if math.isinf(seconds):
        return "inf"
    # 0.5 ms reads better than 500 µs (the pacing article's style): switch units at 0.1 of each
    for unit, scale, floor in (("s", 1.0, 1.0), ("ms", 1e-3, 1e-4), ("µs", 1e-6, 1e-7)):
        if seconds >= floor:
            return "%g %s" % (float("%.4g" % (seconds / scale)), unit)
    return "%g ns" % float("%.4g" % (seconds / 1e-9))


def _rate(per_second):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if per_second >= scale:
            return "%.2f %s msg/s" % (per_second / scale, unit)
    return "%.4g msg/s" % per_second


def _count(messages):
    if math.isinf(messages):
        return "inf"
    return "{:,}".format(int(round(messages)))
