"""Drain rate and burst pacing (DESIGN §6.5): the model, checked by experiment.

``drain_rate()`` measures D, the rate at which a consumer with a fixed
per-message cost drains the queue: unpaced bursts of two sizes; each message's
queueing delay (dequeue - scheduled) rises linearly with its position to about
N/D.  D is estimated twice per burst, as N / (max delay) (the pacing article's method)
and as 1 / slope of a least-squares fit of delay vs position, and the two burst
sizes are compared.

``pacing()`` measures D that way, then for each delay target T sends bursts of N
paced by the C token bucket at P_max(D, T, N) = D / (1 - T·D/N) and reports the
measured max delay against T, beside the model's prediction; then sustained
streams at P slightly above and below D: above, the backlog (and the delay)
grows with the stream; below, it stays flat.

Every run is a separate C run (so Ctrl-C is seen between runs), pinned producer
CPU 0 -> consumer CPU 1 by default, and with ``out`` every run's raw arrays
(scheduled, offer, dequeue, delay; unfiltered) land in an output folder (DESIGN §6.8).
"""
import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..runtime import clock as _clock
from pyqueue import validate
from ..common import status as _status
from ..common.pacing_rig import Rig
from ..common.session import Session
from ..reports import pacing as report
from ..reports.pacing import drain_text, ms, pacing_text
from ..common.frames import ToPandas

__all__ = ["drain_rate", "pacing", "DrainResult", "PacingResult"]

PACE_WITH = ("typical", "conservative")


# ---------------------------------------------------------------- results ----

@dataclass
class _Result(ToPandas):
    """What both results share: parameters, figures, text, status, JSON."""
    params: dict
    results: dict = field(default_factory=dict)
    summary: str = ""
    status: str = _status.COMPLETE
    experiment = None

    @property
    def complete(self):
        return _status.is_complete(self.status)

    @property
    def interrupted(self):
        return not self.complete

    def table(self):
        return self.summary

    def text(self, markdown=False):
        """The tables the command prints (``markdown``: in Markdown)."""
        return self._text(markdown) if markdown else self.summary

    @property
    def samples(self):
        """{run label: {"scheduled_ns", "offer_ns", "dequeue_ns", "delay_ns"}}: every
        run's arrays under the names of the output folder."""
        return {b.label: dict(scheduled_ns=b.scheduled_ns, offer_ns=b.offer_ns,
                              dequeue_ns=b.dequeue_ns, delay_ns=b.delay_ns) for b in self.runs}

    def __str__(self):
        return self.summary

    def to_json(self, path):
        from ..common.output import to_jsonable
        body = to_jsonable({"experiment": self.experiment, "status": self.status,
                            "params": self.params, "results": self.results,
                            "runs": [b.meta() for b in self.runs]})
        with open(path, "w") as f:
            json.dump(body, f, indent=1)
            f.write("\n")


@dataclass
class DrainResult(_Result):
    """What ``drain_rate()`` measured.  ``runs``: the Bursts (raw arrays in
    ``.scheduled_ns``, ``.offer_ns``, ``.dequeue_ns``, ``.delay_ns``)."""
    runs: list = field(default_factory=list)
    experiment = "drain_rate"

    def _text(self, markdown):
        return drain_text(self, self.params, markdown)

    @property
    def d(self):
        """Typical D (msg/s): median N/max-delay over the bursts of the largest size."""
        return self.results.get("d_typical")

    @property
    def d_conservative(self):
        """Conservative D: the lowest N/max-delay of the largest size (the pacing article's advice
        for hard bounds)."""
        return self.results.get("d_conservative")


@dataclass
class PacingResult(_Result):
    """What ``pacing()`` measured: ``drain`` (a DrainResult), ``paced`` (one Burst
    per target per round), ``checks`` (an unpaced drain check per round) and
    ``streams`` (sustained streams above/below D).  ``summary`` is the drain
    rate's table (``drain.summary``) followed by ``paced_summary``, the paced
    bursts' and the streams'."""
    drain: DrainResult = None
    paced_summary: str = ""
    paced: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    streams: list = field(default_factory=list)
    experiment = "pacing"

    @property
    def runs(self):
        return (self.drain.runs if self.drain else []) + self.paced + self.checks + self.streams

    def _text(self, markdown):
        return self.drain.text(markdown) + "\n\n" + pacing_text(self, self.params, markdown)


# ---------------------------------------------------------- the session -----

class _Bursts:
    """Bursts one C run at a time inside a Session: each run's raw arrays land in
    the output folder as soon as it is measured, and each run is a checkpoint."""

    def __init__(self, session, rig):
        self.s, self.rig, self.bursts = session, rig, []

    def warmup(self, n):
        """Untimed: calibrates the cycle counter in the consumer, warms caches."""
        self.rig.run("warmup", "warmup", n)

    def run(self, into, kind, label, n, rate=0.0, **kw):
        """One measured run, appended to the list ``into`` (and returned), or None
        when a stop was asked for."""
        if self.s.stopping:
            return None
        factor = kw.pop("factor", None)
        b = self.rig.run(kind, label, n, rate, **kw)
        if factor is not None:
            b.metrics["factor"] = factor          # a stream's P / D
        self.bursts.append(b)
        into.append(b)
        folder = self.s.folder
        if folder is not None:
            folder.save_samples(label, scheduled_ns=b.scheduled_ns, offer_ns=b.offer_ns,
                                dequeue_ns=b.dequeue_ns, delay_ns=b.delay_ns)
            folder.save_json("runs.json", [x.meta() for x in self.bursts])
        self.s.checkpoint(self.s.done + 1)
        self.s.advance(1, "%s max %s" % (label, ms(b.metrics["max_delay_ns"])))
        return b


@contextmanager
def _session(experiment, params, total, max_messages, p, config, record, out, overwrite,
             progress, should_stop):
    """The rig (a queue sized for the largest run) and the Session, as _Bursts."""
    with Rig(max_messages, size=p["size"], work_ns=p["work_ns"],
             producer_cpu=p["producer_cpu"], consumer_cpu=p["consumer_cpu"],
             fifo_priority=p["fifo_priority"], verify=p["verify"], config=config) as rig, \
            Session(experiment, params, total, "runs", record=record, out=out,
                    overwrite=overwrite, progress=progress, should_stop=should_stop,
                    slice_name="run",
                    pinning={k: p[k] for k in ("producer_cpu", "consumer_cpu",
                                               "fifo_priority")}) as s:
        yield _Bursts(s, rig)


# ------------------------------------------------------------- checking -----

def _count(name, value, lo, hi=2**40):
    return validate.integer(name, value, lo, hi)


def _common(size, work_ns, producer_cpu, consumer_cpu, fifo_priority, verify):
    p = dict(size=_count("size", size, 1, 1 << 16), work_ns=_count("work_ns", work_ns, 0, 10**9),
             producer_cpu=validate.cpu("producer_cpu", producer_cpu),
             consumer_cpu=validate.cpu("consumer_cpu", consumer_cpu),
             fifo_priority=validate.priority("fifo_priority", fifo_priority),
             verify=validate.flag("verify", verify))
    if p["producer_cpu"] >= 0 and p["producer_cpu"] == p["consumer_cpu"]:
        raise ValueError("consumer_cpu must differ from producer_cpu (both %d): the drain "
                         "rate of a consumer sharing its CPU with the producer is not D"
                         % p["producer_cpu"])
    return p


def _sizes(name, sizes):
    return validate.sequence(name, sizes, lambda n, v: _count(n, v, 2))


def _positives(name, values):
    return validate.sequence(name, values, lambda n, v: validate.number(
        n, v, 0, math.inf, lo_open=True, hi_open=True))


# ------------------------------------------------------------ drain rate ----

def drain_rate(sizes=(90_000, 22_500), reps=5, *, work_ns=500, size=32, producer_cpu=0,
               consumer_cpu=1, fifo_priority=0, verify=True, config=None, out=None,
               overwrite=False, progress=True, should_stop=None):
    """Measure the drain rate D of a consumer costing ``work_ns`` (+ verify) per message.

    ``reps`` unpaced bursts of each size in ``sizes``, interleaved; per burst
    D = N / max delay and D = 1 / fitted slope of delay vs position.  ``config``:
    the queue's QueueConfig (default: publish 'each', prefaulted), its spill tier
    sized for the largest burst (recorded as ``params['queue']``).  ``out``:
    write the output folder (DESIGN §6.8) there.  ``should_stop()``: checked between
    runs, like Ctrl-C.  Returns a DrainResult.
    """
    p = _common(size, work_ns, producer_cpu, consumer_cpu, fifo_priority, verify)
    sizes = _sizes("sizes", sizes)
    reps = _count("reps", reps, 1, 10**6)
    p["queue"] = Rig.config_for(max(sizes), p["size"], config).as_dict()
    params = dict(p, sizes=sizes, reps=reps)
    res = DrainResult(params)

    def record(folder, status, final):
        res.results = report.drain_results(res.runs, sizes)
        if final:
            res.summary, res.status = drain_text(res, p), status
            if folder is not None:
                folder.save_text("table.txt", res.summary + "\n")
        return res.results

    with _session("drain_rate", params, reps * len(sizes), max(sizes), p, config, record, out,
                  overwrite, progress, should_stop) as runs:
        _drain_phase(runs, res, sizes, reps)
    return res


def _drain_phase(s, res, sizes, reps):
    _clock.calibrate()
    s.warmup(max(sizes))
    for rep in range(reps):
        for n in sizes:
            if s.run(res.runs, "drain", "drain_n%d_r%d" % (n, rep), n, round=rep) is None:
                return


# ---------------------------------------------------------------- pacing ----

def pacing(n=90_000, targets=(0.5e-3, 1e-3, 5e-3, 10e-3, 25e-3), rounds=3, *,
           drain_sizes=None, drain_reps=5, pace_with="conservative", d_margin=0.0,
           stream_messages=None,
           stream_factors=(1.1, 0.9), stream_segments=8, work_ns=500, size=32,
           producer_cpu=0, consumer_cpu=1, fifo_priority=0, verify=True, config=None,
           out=None, overwrite=False, progress=True, should_stop=None):
    """Measure D, pace bursts of ``n`` at P_max(D, T, n) per target T (s), then run
    sustained streams at ``f``·D for each f in ``stream_factors``.

    ``pace_with``: "conservative" (the lowest N/max-delay seen; the pacing article's advice
    for hard bounds) or "typical" (the median); ``d_margin`` in [0, 1) lowers that D
    by this fraction first (headroom for D drifting between measurement and use).
    A target T >= n/D needs no pacing:
    that burst is sent unpaced.  ``drain_sizes`` defaults to (n, n // 4);
    ``stream_messages`` to 4 n.  Each round: one unpaced drain check (D drift), one
    paced burst per target (order rotated each round), one stream per factor.
    ``config``: the queue's QueueConfig, as for ``drain_rate()``.  Returns a
    PacingResult; ``out`` writes the output folder (docs/DESIGN.md 6.8).
    """
    p = _common(size, work_ns, producer_cpu, consumer_cpu, fifo_priority, verify)
    n = _count("n", n, 2)
    targets = _positives("targets", targets)
    rounds = _count("rounds", rounds, 1, 10**6)
    sizes = _sizes("drain_sizes", drain_sizes if drain_sizes is not None else (n, max(2, n // 4)))
    drain_reps = _count("drain_reps", drain_reps, 1, 10**6)
    pace_with = validate.choice("pace_with", pace_with, PACE_WITH)
    d_margin = validate.number("d_margin", d_margin, 0, 1, hi_open=True)
    stream_messages = _count("stream_messages", 4 * n if stream_messages is None
                             else stream_messages, 2)
    factors = _positives("stream_factors", stream_factors)
    segments = _count("stream_segments", stream_segments, 1, 1000)
    if segments > stream_messages:
        raise ValueError("stream_segments must be <= stream_messages (%d), got %d"
                         % (stream_messages, segments))
    largest = max(sizes + [n, stream_messages])
    p["queue"] = Rig.config_for(largest, p["size"], config).as_dict()
    params = dict(p, n=n, targets=targets, rounds=rounds, drain_sizes=sizes,
                  drain_reps=drain_reps, pace_with=pace_with, d_margin=d_margin,
                  stream_messages=stream_messages,
                  stream_factors=factors, stream_segments=segments)
    total = drain_reps * len(sizes) + rounds * (1 + len(targets) + len(factors))
    res = PacingResult(params, drain=DrainResult(dict(p, sizes=sizes, reps=drain_reps)))

    def record(folder, status, final):
        if final:
            d = res.drain
            d.results = report.drain_results(d.runs, sizes)
            d.summary = drain_text(d, p)
            d.status = _status.final(len(d.runs), drain_reps * len(sizes), "runs")
        res.results = report.pacing_results(res, params)
        if final:
            res.paced_summary = pacing_text(res, params)
            res.summary = res.drain.summary + "\n\n" + res.paced_summary
            res.status = status
            if folder is not None:
                folder.save_text("table.txt", res.summary + "\n")
        return res.results

    with _session("pacing", params, total, largest, p, config, record, out, overwrite,
                  progress, should_stop) as runs:
        _drain_phase(runs, res.drain, sizes, drain_reps)
        res.drain.results = report.drain_results(res.drain.runs, sizes)
        _paced_phase(runs, res, params)
    return res


def _paced_phase(s, res, params):
    n, targets = params["n"], params["targets"]
    d_pace, plan = report.pace_plan(res, params)
    d_typ = res.drain.d
    if plan is None:
        return
    for r in range(params["rounds"]):
        if s.run(res.checks, "check", "check_n%d_r%d" % (n, r), n, round=r) is None:
            return
        order = targets[r % len(targets):] + targets[:r % len(targets)]
        for t in order:
            pm = plan[t]
            if s.run(res.paced, "paced", "paced_T%gms_r%d" % (t * 1e3, r), n,
                     0.0 if math.isinf(pm) else pm, round=r, target_s=t) is None:
                return
        for f in params["stream_factors"]:
            if s.run(res.streams, "stream", "stream_x%.2f_r%d" % (f, r),
                     params["stream_messages"], f * d_typ, round=r, factor=f) is None:
                return
