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

    import pyqueue.lab as lab
    res = lab.pacing(burst=20_000, rounds=1)        # the defaults, smaller bursts
    print(res.text())
    lab.drain_rate(lab.DrainRateParams.quick())     # what drain-rate --quick runs

The parameters are one list each, DrainRateParams and PacingParams (the drain
phase's and then the paced bursts' and streams'), from which the CLI's flags, these
functions' keywords, the output folder's JSON params and their checks all come.

Every run is a separate C run (so Ctrl-C is seen between runs), the writer (producer)
pinned to CPU 0 and the reader (consumer) to CPU 1 by default, and with ``out`` every
run's raw arrays (scheduled, offer, dequeue, delay; unfiltered) land in an output
folder (DESIGN §6.8).
"""
import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional, Tuple

from ..runtime import clock as _clock
from pyqueue import validate
from pyqueue.config import QueueConfig
from ..common import status as _status
from ..common.pacing_rig import MIN_MSG, QUEUE, Rig
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..reports import pacing as report
from ..reports.pacing import drain_text, ms, pacing_text
from ..common.frames import ToPandas

__all__ = ["drain_rate", "pacing", "DrainRateParams", "PacingParams", "DrainResult",
           "PacingResult"]

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
def _session(experiment, p, total, queue, record, out, overwrite, progress, should_stop):
    """The rig (its queue ``queue``, sized for the largest run) and the Session, as _Bursts."""
    with Rig(queue, msg_size=p.msg_size, work_ns=p.work_ns, writer_cpu=p.writer_cpu,
             reader_cpu=p.reader_cpu, fifo_priority=p.fifo_priority, verify=p.verify) as rig, \
            Session(experiment, p.to_json(), total, "runs", record=record, out=out,
                    overwrite=overwrite, progress=progress, should_stop=should_stop,
                    slice_name="run",
                    pinning={k: getattr(p, k) for k in ("writer_cpu", "reader_cpu",
                                                        "fifo_priority")}) as s:
        yield _Bursts(s, rig)


# ------------------------------------------------------------ parameters ----

_DRAIN, _THREADS, _PACED, _STREAMS = ("drain rate D", "the consumer and its messages",
                                      "paced bursts", "sustained streams")
# A burst, a drain size or a stream: how many messages one run may send.
MAX_MESSAGES = 2**40
# The old spellings of both experiments' shared parameters (Python keywords).
_OLD_NAMES = {"size": "msg_size", "producer_cpu": "writer_cpu", "consumer_cpu": "reader_cpu",
              "config": "queue"}


@dataclass(frozen=True)
class DrainRateParams(Params):
    """drain_rate()'s parameters, which are also pacing()'s drain phase (PacingParams
    adds the paced bursts and the streams).  The CPUs are pinned 0 and 1 from every door."""

    EXPERIMENT, COMMAND, FUNCTION = "drain_rate", "drain-rate", "drain_rate"
    ALIASES = dict(_OLD_NAMES, sizes="drain_sizes", reps="drain_reps")

    burst: int = param(90_000, "N, messages per burst: pacing paces bursts of N, and D is "
                       "measured on unpaced bursts of N and N/4 unless told other drain sizes",
                       lo=2, hi=MAX_MESSAGES, quick=20_000)
    drain_sizes: Optional[Tuple[int, ...]] = param(
        None, "burst sizes of the drain measurement, comma-separated (default: N and N/4)",
        kind="ints", lo=2, hi=MAX_MESSAGES, none_ok=True, metavar="N,N,...", group=_DRAIN)
    drain_reps: int = param(5, "unpaced bursts per drain size", lo=1, hi=10**6, quick=3,
                            group=_DRAIN)
    work_ns: int = param(500, "the consumer's cost per message, ns of spin on the cycle "
                         "counter (default: 500, D ~ 1.6 M msg/s)", lo=0, hi=10**9,
                         group=_THREADS)
    msg_size: int = param(32, "bytes per message, at least %d (the sequence number each message "
                          "carries) and at most the queue's block_size - 8" % MIN_MSG,
                          lo=MIN_MSG, hi=1 << 16, cli_aliases=("--size",), group=_THREADS)
    verify: bool = param(True, "the consumer checks every message: its sequence number and "
                         "every byte", group=_THREADS)
    fifo_priority: int = param(0, "run both threads SCHED_FIFO at this priority, 1-%d (0: "
                               "SCHED_OTHER)" % validate.FIFO_MAX, lo=0, hi=validate.FIFO_MAX,
                               cli_aliases=("--fifo",), metavar="PRIO", group=_THREADS)
    writer_cpu: int = param(WRITER_CPU, "CPU of the writer, the producer thread (-1: not "
                            "pinned)", kind="cpu", cli_aliases=("--producer-cpu",), group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the reader, the consumer thread (-1: not "
                            "pinned; a pinned one differs from the writer's)", kind="cpu",
                            cli_aliases=("--consumer-cpu",), group="CPUs")
    queue: QueueConfig = param(QUEUE, "the queue: the defaults with publish 'each' and prefault; "
                               "its spill tier is sized for the largest run, whatever "
                               "spill_blocks says (results.queue: the queue as run)")

    def check(self):
        if self.writer_cpu >= 0 and self.writer_cpu == self.reader_cpu:
            raise ValueError("reader_cpu must differ from writer_cpu (both %d): the drain rate "
                             "of a consumer sharing its CPU with the producer is not D"
                             % self.writer_cpu)
        most = self.queue.block_size - 8
        if self.msg_size > most:
            raise ValueError("msg_size must be in [%d, %d] (the queue's block_size - 8), got %d"
                             % (MIN_MSG, most, self.msg_size))

    def resolved(self):
        """These parameters with every default that follows another one made explicit
        (drain_sizes: N and N/4): what a run records."""
        if self.drain_sizes is not None:
            return self
        return self.replace(drain_sizes=(self.burst, max(2, self.burst // 4)))

    def largest(self):
        """The most messages one run of this experiment sends (its queue is sized for it)."""
        return max(self.resolved().drain_sizes)


@dataclass(frozen=True)
class PacingParams(DrainRateParams):
    """pacing()'s parameters: the drain phase's (DrainRateParams), then the paced bursts'
    and the streams'."""

    EXPERIMENT, COMMAND, FUNCTION = "pacing", "pacing", "pacing"
    ALIASES = dict(_OLD_NAMES, n="burst")

    targets: Tuple[float, ...] = param(
        (0.5e-3, 1e-3, 5e-3, 10e-3, 25e-3), "queueing-delay targets T, comma-separated "
        "(default: 0.5ms,1ms,5ms,10ms,25ms); a T >= N/D needs no pacing: that burst is unpaced",
        kind="durations", lo=0.0, lo_open=True, hi=math.inf, hi_open=True, group=_PACED)
    rounds: int = param(3, "rounds, each an unpaced check burst (D drift), a paced burst per "
                        "target (order rotated) and a stream per factor", lo=1, hi=10**6,
                        quick=3, group=_PACED)   # --quick: 3, the fewest compare judges
    pace_with: str = param("conservative", "the D that P_max uses: the lowest N/max-delay of "
                           "the largest drain bursts (conservative: the pacing article's advice "
                           "for hard bounds) or their median (typical)", choices=PACE_WITH,
                           group=_PACED)
    d_margin: float = param(0.0, "pace with that D lowered by this fraction, e.g. 0.05 "
                            "(headroom for D drifting between measurement and use)", lo=0.0,
                            hi=1.0, hi_open=True, metavar="FRACTION", group=_PACED)
    stream_messages: Optional[int] = param(None, "messages per sustained stream (default: 4 N)",
                                           kind="int", lo=2, hi=MAX_MESSAGES, none_ok=True,
                                           group=_STREAMS)
    stream_factors: Tuple[float, ...] = param(
        (1.1, 0.9), "stream rates as multiples of D typical, comma-separated", kind="floats",
        lo=0.0, lo_open=True, hi=math.inf, hi_open=True, group=_STREAMS)
    stream_segments: int = param(8, "segments of each stream whose max delays are compared "
                                 "(at most stream_messages)", lo=1, hi=1000, group=_STREAMS)

    def check(self):
        super().check()
        if self.stream_segments > self._stream_messages():
            raise ValueError("stream_segments must be <= stream_messages (%d), got %d"
                             % (self._stream_messages(), self.stream_segments))

    def _stream_messages(self):
        return 4 * self.burst if self.stream_messages is None else self.stream_messages

    def resolved(self):
        """The parameters a run records: drain_sizes (N and N/4) and stream_messages (4 N)
        made explicit."""
        p = super().resolved()
        return p if p.stream_messages is not None else \
            p.replace(stream_messages=p._stream_messages())

    def largest(self):
        p = self.resolved()
        return max(p.drain_sizes + (p.burst, p.stream_messages))

    def drain(self):
        """The DrainRateParams of the drain phase."""
        return DrainRateParams(**{k: getattr(self, k) for k in DrainRateParams.field_names()})


# ------------------------------------------------------------ drain rate ----

def drain_rate(params=None, *, out=None, overwrite=False, progress=True, _should_stop=None,
               **kwargs):
    """Measure the drain rate D of a consumer costing ``work_ns`` (+ verify) per message:
    ``params`` (a DrainRateParams, None for the defaults) and/or its fields as keywords
    (the queue's own fields too: ``hugepages=True``).

    ``drain_reps`` unpaced bursts of each size in ``drain_sizes`` (default: ``burst`` and
    ``burst // 4``), interleaved; per burst D = N / max delay and D = 1 / fitted slope of
    delay vs position.  The queue is ``queue``, its spill tier sized for the largest
    burst (``results['queue']``: the queue as run).  ``out``: write the output folder
    (DESIGN §6.8) there; its params are the run's, drain_sizes made explicit.
    ``_should_stop()``: checked between runs, like Ctrl-C.  Returns a DrainResult.
    """
    p = DrainRateParams.of(params, **kwargs).resolved()
    sizes, queue = p.drain_sizes, Rig.sized(p.queue, p.largest(), p.msg_size)
    params = p.to_json()
    res = DrainResult(params)

    def record(folder, status, final):
        res.results = dict(report.drain_results(res.runs, sizes), queue=queue.as_dict())
        if final:
            res.summary, res.status = drain_text(res, params), status
            if folder is not None:
                folder.save_text("table.txt", res.summary + "\n")
        return res.results

    with _session("drain_rate", p, p.drain_reps * len(sizes), queue, record, out, overwrite,
                  progress, _should_stop) as runs:
        _drain_phase(runs, res, sizes, p.drain_reps)
    return res


def _drain_phase(s, res, sizes, reps):
    _clock.calibrate()
    s.warmup(max(sizes))
    for rep in range(reps):
        for n in sizes:
            if s.run(res.runs, "drain", "drain_n%d_r%d" % (n, rep), n, round=rep) is None:
                return


# ---------------------------------------------------------------- pacing ----

def pacing(params=None, *, out=None, overwrite=False, progress=True, _should_stop=None,
           **kwargs):
    """Measure D, pace bursts of ``burst`` (N) at P_max(D, T, N) per target T (s), then run
    sustained streams at ``f``·D for each f in ``stream_factors``: ``params`` (a
    PacingParams, None for the defaults) and/or its fields as keywords.

    ``pace_with``: "conservative" (the lowest N/max-delay seen; the pacing article's advice
    for hard bounds) or "typical" (the median); ``d_margin`` in [0, 1) lowers that D
    by this fraction first (headroom for D drifting between measurement and use).
    A target T >= N/D needs no pacing: that burst is sent unpaced.  ``drain_sizes``
    defaults to (N, N // 4), ``stream_messages`` to 4 N (the output folder's params
    hold them explicit).  Each round: one unpaced drain check (D drift), one paced
    burst per target (order rotated each round), one stream per factor.  ``queue``:
    as for ``drain_rate()``.  Returns a PacingResult; ``out`` writes the output folder
    (docs/DESIGN.md 6.8); ``_should_stop()`` is checked between runs, like Ctrl-C.
    """
    p = PacingParams.of(params, **kwargs).resolved()
    sizes, queue = p.drain_sizes, Rig.sized(p.queue, p.largest(), p.msg_size)
    params = p.to_json()
    total = p.drain_reps * len(sizes) + p.rounds * (1 + len(p.targets) + len(p.stream_factors))
    res = PacingResult(params, drain=DrainResult(p.drain().to_json()))

    def record(folder, status, final):
        if final:
            d = res.drain
            d.results = report.drain_results(d.runs, sizes)
            d.summary = drain_text(d, params)
            d.status = _status.final(len(d.runs), p.drain_reps * len(sizes), "runs")
        res.results = dict(report.pacing_results(res, params), queue=queue.as_dict())
        if final:
            res.paced_summary = pacing_text(res, params)
            res.summary = res.drain.summary + "\n\n" + res.paced_summary
            res.status = status
            if folder is not None:
                folder.save_text("table.txt", res.summary + "\n")
        return res.results

    with _session("pacing", p, total, queue, record, out, overwrite, progress,
                  _should_stop) as runs:
        _drain_phase(runs, res.drain, sizes, p.drain_reps)
        res.drain.results = report.drain_results(res.drain.runs, sizes)
        _paced_phase(runs, res, params)
    return res


def _paced_phase(s, res, params):
    n, targets = params["burst"], params["targets"]
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
