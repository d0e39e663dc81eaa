"""Producer -> stage -> consumer at a set rate (DESIGN §6.4).

    import pyqueue.lab as lab
    r = lab.pipeline(rate=20_000, messages=20_000, slices=4, out="pipe-out")
    print(r.summary)        # p50/p99/p99.9/max, context switches, CPU used, per variant
    r.latency_ns["pinned_spin"]            # every message's end-to-end latency
    lab.pipeline(lab.PipelineParams.quick())            # what --quick runs

Its parameters are one list, PipelineParams, from which the CLI's flags, this
function's keywords, the output folder's JSON params and their checks all come.
The producer is the writer of hop 1, the consumer the reader of hop 2:
writer_cpu, stage_cpu and reader_cpu place the three threads.

Open loop: the producer's token bucket gives each message a scheduled send
time that depends on nothing downstream, and latency is measured from it, so a
stalled stage costs every message it delays (no coordinated omission).  The
producer's own lateness (actual send - scheduled) is recorded separately.

Variants (DESIGN §6.4: the pipeline article's lock-free queue, pinning, busy-poll with backoff):
  mutex_condvar   both hops through a mutex + condition-variable queue, unpinned
  unpinned_yield  pyqueue (publish each), unpinned, idle = relax + sched_yield
  pinned_spin     pyqueue, pinned per writer_cpu/stage_cpu/reader_cpu, idle = busy poll
  pinned_backoff  pyqueue, pinned likewise, idle = spin then nanosleep to 50 µs

``queues=("ck", ...)`` adds, for each peer, every selected pyqueue variant run
over that peer instead ("ck_pinned_spin", ...); each queue is reached through
its adapter (``pyqueue.lab.peers``), a peer that is not installed raises
UnsupportedError before anything runs.

Placement: three threads on a 2-CPU machine must share.  The default
(writer, stage, reader) = (0, 1, 0) puts the stage alone on CPU 1 and the
consumer with the producer, which sleeps between sends; pass other CPUs (or -1
for "not pinned") to move them.  Variants run in interleaved slices (order
rotated each round), each slice a complete pipeline run whose every message is
checked for sequence and content.

The options for the pinned variants (combine, fifo_priority, producer_fifo,
rest_share, rest_ns, receiver_slack_ns, pacer_spin_ns: PipelineParams' help) are
all off or neutral by default, so old runs compare.  Why they exist (measured on
a 2-vCPU VM shared with other work): SCHED_OTHER pollers lose their CPU to other
processes for whole scheduler slices (4-12 ms stalls at HZ=250); a SCHED_FIFO
poller that never sleeps is stopped ~50 ms every second by RT throttling
(sched_rt_runtime_us); short sleeps barely help, because about 15 µs of each is
still charged to the sleeper, hence rests budgeted on the thread's CPU clock.  A
pinned pipeline configured for this machine:

    python -m pyqueue pipeline --writer-cpu 0 --stage-cpu 1 --reader-cpu 1 --combine \\
        --fifo-priority 1 --producer-fifo 2 --pacer-spin-ns 24000

(producer alone on CPU 0, sleeping between sends but spinning the last 24 µs
before each, at a FIFO priority above the poller's; the one poller alone on
CPU 1, resting at most 15 % of its CPU time).  What this leaves: messages that
arrive during a rest wait for its end (a 20 µs rest lasts ~45 µs on a VM whose
idle vCPU halts), and stalls of the whole vCPU or of a non-preemptible kernel
path of another process (a "Dynamic Preempt: none" kernel) still reach every
variant, the mutex baseline included; compare tails over several slices.
"""
import json
import os
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from .. import peers as _peers
from ..runtime import threads as _threads
from pyqueue import validate
from pyqueue.errors import check, strerror
from .._lab import ffi, lib
from ..common import status as _status
from ..common.output import to_jsonable
from ..common.params import STAGE_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..common.frames import ToPandas
from ..reports import pipeline as report
from ..reports.pipeline import PERCENTILES, THREADS  # noqa: F401

__all__ = ["pipeline", "PipelineParams", "PipelineResult", "VARIANTS", "IDLE",
           "DEFAULT_PLACEMENT", "run_once"]

IDLE = _threads.IDLE
VARIANTS = {
    "mutex_condvar": dict(kind="mutex", idle=None, pinned=False),
    "unpinned_yield": dict(kind="pyqueue", idle="yield", pinned=False),
    "pinned_spin": dict(kind="pyqueue", idle="spin", pinned=True),
    "pinned_backoff": dict(kind="pyqueue", idle="backoff", pinned=True),
}
# writer (producer), stage, reader (consumer): the consumer shares the producer's
# CPU, which sleeps between sends, and the stage has one to itself.
DEFAULT_PLACEMENT = (WRITER_CPU, STAGE_CPU, WRITER_CPU)
_PYQUEUE_VARIANTS = tuple(v for v, spec in VARIANTS.items() if spec["kind"] == "pyqueue")
_CPUS = "CPUs (pinned variants; -1: not pinned)"


@dataclass(frozen=True)
class PipelineParams(Params):
    """The pipeline's parameters (DESIGN §6.4); the defaults are the command's."""

    EXPERIMENT, COMMAND, FUNCTION = "pipeline", "pipeline", "pipeline"
    ALIASES = {"placement": ("writer_cpu", "stage_cpu", "reader_cpu")}

    variants: Tuple[str, ...] = param(tuple(VARIANTS), "variants to run: mutex_condvar (a mutex "
                                      "+ condition-variable queue, unpinned), unpinned_yield, "
                                      "pinned_spin, pinned_backoff (pyqueue)", kind="names",
                                      choices=tuple(VARIANTS))
    queues: Optional[Tuple[str, ...]] = param(None, "peers (%s) that also run each selected "
                                              "pyqueue variant, e.g. ck_pinned_spin (default: "
                                              "none)" % ", ".join(_peers.PEERS), kind="names",
                                              choices=tuple(_peers.PEERS), none_ok=True,
                                              metavar="PEERS")
    rate: float = param(20_000.0, "messages per second", lo=0.0, lo_open=True, hi=1e8)
    messages: int = param(20_000, "messages per slice", lo=1, quick=2000)
    slices: int = param(5, "slices per variant, each a complete pipeline run (interleaved, "
                        "order rotated)", lo=1, quick=2)
    msg_size: int = param(32, "bytes per message", lo=lib.PYQ_PIPE_MIN_MSG,
                          hi=lib.PYQ_PIPE_MAX_MSG)
    stage_work_ns: int = param(0, "ns the stage spins per message (0: it only forwards)", lo=0,
                               hi=10**9, metavar="NS")
    pacer_spin_ns: int = param(10_000, "the producer spins, not sleeps, this close to each send "
                               "time (with producer_fifo: below half the interval)", lo=0,
                               hi=10**9, metavar="NS")
    fifo_priority: int = param(0, "SCHED_FIFO priority of stage and consumer in every variant, "
                               "the mutex baseline included (0: SCHED_OTHER)", lo=0,
                               hi=validate.FIFO_MAX, cli_aliases=("--fifo",), metavar="PRIO")
    producer_fifo: int = param(0, "SCHED_FIFO priority of the producer, which sleeps between "
                               "sends (0: SCHED_OTHER); lets it preempt a busy poller sharing "
                               "its CPU", lo=0, hi=validate.FIFO_MAX, metavar="PRIO")
    combine: bool = param(False, "pinned variants: the stage's thread also runs the consumer "
                          "(both hops still go through a queue; two threads, so each poller "
                          "has a CPU); stage_cpu and reader_cpu must be one CPU")
    rest_share: Optional[float] = param(None, "a pyqueue receiver whose own CPU time passes "
                                        "(1 - F) of the current 10 ms sleeps rest_ns at its "
                                        "next empty poll (default: 0.15 with fifo_priority "
                                        "while RT throttling is on, else 0)", kind="float",
                                        lo=0.0, hi=0.5, none_ok=True, metavar="F")
    rest_ns: int = param(20_000, "length of one such rest; too short a rest on a VM is charged "
                         "to the poller and the budget is not reached", lo=1000, hi=10**9,
                         metavar="NS")
    receiver_slack_ns: int = param(0, "PR_SET_TIMERSLACK of stage and consumer (0: leave it)",
                                   lo=0, hi=10**9, cli_aliases=("--timer-slack-ns",),
                                   metavar="NS")
    timeout: float = param(60.0, "seconds a slice may run before its threads are stopped and "
                           "it fails", lo=0.0, hi=86400.0, metavar="SECONDS")
    writer_cpu: int = param(DEFAULT_PLACEMENT[0], "CPU of the producer (the writer of hop 1)",
                            kind="cpu", group=_CPUS)
    stage_cpu: int = param(DEFAULT_PLACEMENT[1], "CPU of the stage", kind="cpu", group=_CPUS)
    reader_cpu: int = param(DEFAULT_PLACEMENT[2], "CPU of the consumer (the reader of hop 2); "
                            "it shares the producer's, which sleeps between sends",
                            kind="cpu", group=_CPUS)

    def check(self):
        if self.combine and self.stage_cpu != self.reader_cpu:
            raise ValueError("combine: the stage's thread also runs the consumer, so stage_cpu "
                             "and reader_cpu must be the same CPU (e.g. 1 and 1), got %d and %d"
                             % (self.stage_cpu, self.reader_cpu))
        if self.producer_fifo and self.pacer_spin_ns >= 0.5e9 / self.rate:
            # The producer spins pacer_spin_ns before each send; as SCHED_FIFO it must
            # still sleep most of each interval, or it would starve the CPU it shares.
            raise ValueError("producer_fifo=%d at rate %g: the producer would spin %d of every "
                             "%.0f ns as SCHED_FIFO; lower the rate or pacer_spin_ns below half "
                             "the interval" % (self.producer_fifo, self.rate,
                                               self.pacer_spin_ns, 1e9 / self.rate))
        if self.queues and not set(self.variants) & set(_PYQUEUE_VARIANTS):
            raise ValueError("queues: a peer runs as a pyqueue variant; name at least one of %s "
                             "in variants" % ", ".join(_PYQUEUE_VARIANTS))

    @property
    def cpus(self):
        """(writer_cpu, stage_cpu, reader_cpu): the pinned variants' placement."""
        return (self.writer_cpu, self.stage_cpu, self.reader_cpu)


def _rt_throttling_on():
    """True unless sched_rt_runtime_us is -1 (RT tasks may then take a whole CPU)."""
    try:
        with open("/proc/sys/kernel/sched_rt_runtime_us") as f:
            return int(f.read()) >= 0
    except (OSError, ValueError):
        return True


def _rest_share_for(spec, fifo_priority, rest_share):
    """The rest_share a variant runs with: None picks 0.15 for SCHED_FIFO pyqueue
    receivers while RT throttling is on, else 0 (mutex receivers block anyway)."""
    if spec["kind"] == "mutex":
        return 0.0
    if rest_share is None:
        return 0.15 if fifo_priority and _rt_throttling_on() else 0.0
    return float(rest_share)


def _check_fifo(variant, spec, cpus, fifo_priority, combine=False, rest_share=0.0):
    """A SCHED_FIFO thread that never sleeps starves whatever shares its CPU (on a
    2-CPU box: the machine), and RT throttling stops it for 50 ms a second.
    Allow FIFO only where neither can happen: a rule on what one variant runs
    with (its CPUs, combine, rest share) and on the machine, checked where those
    are settled, before anything runs."""
    if not fifo_priority:
        return
    if spec["kind"] == "mutex" or spec["idle"] == "backoff":
        return                                   # these sleep when idle
    threads = (0, 1) if combine else (0, 1, 2)
    for i in threads[1:]:
        alone = cpus[i] >= 0 and sum(1 for k in threads if cpus[k] == cpus[i]) == 1
        if not alone:
            raise ValueError("fifo_priority=%d with variant %r: the %s never sleeps (idle %r) and "
                             "%s, so SCHED_FIFO would starve the threads beside it; give it a "
                             "CPU of its own (writer_cpu, stage_cpu, reader_cpu), a sleeping "
                             "idle strategy, or leave the variant out"
                             % (fifo_priority, variant, THREADS[i], spec["idle"],
                                "is not pinned" if cpus[i] < 0 else "shares CPU %d" % cpus[i]))
    if not rest_share and _rt_throttling_on():
        raise ValueError("fifo_priority=%d with variant %r and rest_share=0: a SCHED_FIFO poller "
                         "that never sleeps is stopped by RT throttling (sched_rt_runtime_us) "
                         "for tens of ms at once; give rest_share > 0 (e.g. 0.15)"
                         % (fifo_priority, variant))


def _cpu_busy_s():
    """(machine busy CPU-seconds from /proc/stat, this process's CPU-seconds), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    busy = (sum(v[:8]) - v[3] - v[4]) / hz          # all but idle and iowait (steal counts)
    t = os.times()
    return busy, t.user + t.system


def _others_cpus(before, after, wall_s):
    """CPUs used by everything but this process during a run (the host's other load)."""
    if not before or not after or wall_s <= 0:
        return None
    return max(0.0, ((after[0] - before[0]) - (after[1] - before[1])) / wall_s)


def run_once(kind="pyqueue", idle="backoff", params=None, *, producer_slack_ns=1, **kwargs):
    """One complete pipeline run in C.  Returns (latency_ns, lateness_ns, info dict).

    ``params`` (a PipelineParams, None for the defaults) and/or its fields as
    keywords give the run: its CPUs as they are (pinned unless -1), ``combine``,
    ``rest_share`` (None: 0), ``rate``, ``messages`` and the rest (``variants``
    and ``queues`` play no part); with ``combine`` the consumer's row reports
    messages only.  ``idle_<field>`` keywords: the idle strategy's tunables, as
    for threads.ConsumerThread (default: pyq_idle_config_init()'s for ``idle``).

    ``kind`` names the queue of both hops: "pyqueue", "mutex" or a peer (``pyqueue.lab.peers``).

    Raises VerificationError when a message was lost, duplicated, reordered or damaged."""
    idle_fields = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith("idle_")}
    p = PipelineParams.of(params, **kwargs)
    _peers.get(kind)                   # ValueError / UnsupportedError for a bad or missing one
    if p.combine and kind == "mutex":
        raise ValueError("combine needs kind 'pyqueue' or a peer (the mutex queue's pops block)")
    _check_fifo("%s_%s" % (kind, idle), dict(kind=kind, idle=idle), p.cpus, p.fifo_priority,
                p.combine, p.rest_share or 0.0)
    # The mutex kind's receivers block on their condition variable: the strategy is unused.
    idle = _threads.idle_config(ffi.new("pyq_idle_config_t *"),
                                idle if kind != "mutex" else "backoff", idle_fields, "run_once")
    return _run(kind, idle, p.cpus, p, p.combine, p.rest_share or 0.0, producer_slack_ns)


def _run(kind, idle, cpus, p, combine, rest_share, producer_slack_ns=1):
    """run_once on values already checked: ``idle`` a filled pyq_idle_config_t, ``p``
    the PipelineParams, ``cpus``, ``combine`` and ``rest_share`` what this run uses."""
    messages, timeout = p.messages, p.timeout
    cfg = ffi.new("pyq_pipeline_config_t *")
    lib.pyq_pipeline_config_init(cfg)
    cfg.queue = _peers.get(kind)
    cfg.cpu = list(cpus)
    cfg.fifo_priority = p.fifo_priority
    cfg.producer_fifo_priority = p.producer_fifo
    cfg.idle_strategy = idle.strategy
    for f in _threads.IDLE_FIELDS:
        setattr(cfg, "idle_" + f, getattr(idle, f))
    cfg.rate, cfg.count, cfg.msg_size = p.rate, messages, p.msg_size
    cfg.stage_work_ns, cfg.pacer_spin_ns = p.stage_work_ns, p.pacer_spin_ns
    cfg.producer_slack_ns = int(producer_slack_ns)
    cfg.rest_share, cfg.rest_ns = rest_share, p.rest_ns
    cfg.combine = int(combine)
    cfg.receiver_slack_ns = p.receiver_slack_ns
    cfg.timeout_ns = int(timeout * 1e9)
    latency = np.zeros(messages, dtype=np.uint64)
    lateness = np.zeros(messages, dtype=np.uint64)
    cfg.latency_ns = ffi.from_buffer("uint64_t[]", latency, require_writable=True)
    cfg.lateness_ns = ffi.from_buffer("uint64_t[]", lateness, require_writable=True)
    res = ffi.new("pyq_pipeline_result_t *")
    busy0 = _cpu_busy_s()
    rc = lib.pyq_pipeline_run(cfg, res)
    busy1 = _cpu_busy_s()
    if rc != 0:
        who = THREADS[res.failed_thread] if 0 <= res.failed_thread < 3 else "pipeline"
        check(rc, "pipeline: the %s after %d of %d messages" % (who, res.delivered, messages), {
            lib.PYQ_EBADMSG: "pipeline: the %s found message %d wrong or out of order (%d of %d "
                             "delivered)" % (who, res.error_seq, res.delivered, messages),
            lib.PYQ_EPERM: "pipeline: SCHED_FIFO refused for the %s" % who,
            lib.PYQ_EINVAL: "pipeline: %s (%s, step %d)" % (strerror(rc), who, res.failed_step),
            lib.PYQ_EAGAIN: (TimeoutError, "pipeline: timed out after %g s in the %s, %d of %d "
                                           "messages delivered" % (timeout, who, res.delivered,
                                                                   messages))})
    wall = max(1, res.end_ns - res.start_ns)
    threads = {}
    for i, name in enumerate(THREADS):
        t = res.thread[i]
        threads[name] = dict(cpu_start=t.cpu_start, cpu_end=t.cpu_end, policy=t.policy,
                             messages=t.messages, cpu_ns=t.cpu_ns, cpu_share=t.cpu_ns / wall,
                             voluntary_cs=t.voluntary_cs, involuntary_cs=t.involuntary_cs,
                             perf_cs=t.perf_cs if t.perf_status == 0 else None,
                             perf_migrations=t.perf_migrations if t.perf_status == 0 else None,
                             perf_status=t.perf_status, waits=t.waits, rests=t.rests,
                             rest_ns=t.rest_ns)
    info = dict(delivered=int(res.delivered), wall_ns=int(wall), start_ns=int(res.start_ns),
                threads=threads,
                context_switches=sum(t["voluntary_cs"] + t["involuntary_cs"]
                                     for t in threads.values()),
                cpu_ns=sum(t["cpu_ns"] for t in threads.values()),
                others_cpus=_others_cpus(busy0, busy1, wall / 1e9))
    return latency, lateness, info


@dataclass
class PipelineResult(ToPandas):
    params: dict
    latency_ns: dict                 # variant -> all messages' latencies, slices concatenated
    lateness_ns: dict                # variant -> producer lateness per message
    slices: dict                     # variant -> list of per-slice info dicts
    table: dict = field(default_factory=dict)   # variant -> figures
    status: str = _status.COMPLETE
    summary: str = ""
    samples: dict = field(default_factory=dict)  # variant -> the arrays as saved (OUTPUT.md)
    # variant -> what it ran with: kind, idle, pinned, cpus, combine, rest_share
    variant_specs: dict = field(default_factory=dict)
    loadavg_start: list = None

    def text(self, markdown=False):
        """The summary the command prints (``markdown``: its tables in Markdown)."""
        return report.summary(self, markdown) if markdown and self.table else self.summary

    def to_dict(self):
        return {"params": self.params, "variant_specs": self.variant_specs,
                "loadavg_start": self.loadavg_start, "table": self.table,
                "slices": self.slices, "status": self.status}

    def to_json(self, path):
        with open(path, "w") as f:
            json.dump(to_jsonable(self.to_dict()), f, indent=1)


def _plan(p):
    """{variant: what it runs with} for PipelineParams ``p``: the named variants,
    then each peer running every named pyqueue variant ("ck_pinned_spin" is
    pinned_spin over ck); the pinned ones on p's CPUs (and combine), the others
    unpinned.  Refuses, before anything runs, a peer that is not installed and a
    SCHED_FIFO poller that would starve its CPU."""
    specs = {v: VARIANTS[v] for v in p.variants}
    for q in p.queues or ():
        _peers.get(q)                  # UnsupportedError now, not after the first slices
        specs.update(("%s_%s" % (q, v), dict(VARIANTS[v], kind=q))
                     for v in p.variants if v in _PYQUEUE_VARIANTS)
    plan = {}
    for v, spec in specs.items():
        plan[v] = dict(spec, cpus=list(p.cpus) if spec["pinned"] else [-1, -1, -1],
                       combine=p.combine and spec["pinned"],
                       rest_share=_rest_share_for(spec, p.fifo_priority, p.rest_share))
        _check_fifo(v, spec, plan[v]["cpus"], p.fifo_priority, plan[v]["combine"],
                    plan[v]["rest_share"])
    return plan


def pipeline(params=None, *, out=None, overwrite=False, progress=True, **kwargs):
    """Run every variant ``slices`` times (interleaved, order rotated), each slice a
    full pipeline of ``messages`` at ``rate`` msg/s: ``params`` (a PipelineParams,
    None for the defaults) and/or its fields as keywords; see the module doc for
    the options (``combine`` applies to the pinned variants only) and ``queues``."""
    p = PipelineParams.of(params, **kwargs)
    plan = _plan(p)
    variants, slices = tuple(plan), p.slices
    try:
        load = open("/proc/loadavg").read().split()[:3]
    except OSError:
        load = None
    params = p.to_json()
    idles = {v: _threads.idle_config(ffi.new("pyq_idle_config_t *"),
                                     spec["idle"] if spec["kind"] != "mutex" else "backoff", {},
                                     "pipeline") for v, spec in plan.items()}
    lat = {v: [] for v in variants}
    late = {v: [] for v in variants}
    infos = {v: [] for v in variants}
    res = PipelineResult(params, {}, {}, infos, variant_specs=plan, loadavg_start=load)

    def record(folder, status, final):
        done = session.done
        if final:
            for v in variants:                    # a half-finished round is not counted
                del lat[v][done:], late[v][done:], infos[v][done:]
        res.latency_ns = {v: np.concatenate(lat[v]) for v in variants if lat[v]}
        res.lateness_ns = {v: np.concatenate(late[v]) for v in variants if late[v]}
        res.table = {v: report.figures(lat[v][:done], late[v][:done], infos[v][:done])
                     for v in variants if done}
        res.status = status
        res.summary = report.summary(res) if done else "nothing measured (status: %s)" % res.status
        res.samples = {v: dict(latency_ns=np.concatenate(lat[v][:done]),
                               producer_lateness_ns=np.concatenate(late[v][:done]),
                               slice_lengths=np.array([len(s) for s in lat[v][:done]]))
                       for v in variants if lat[v][:done]}
        if folder is None:
            return None
        for v, arrays in res.samples.items():
            folder.save_samples(v, **arrays)
        if final:
            folder.save_text("summary.txt", res.summary + "\n")
        return res.to_dict()

    with Session("pipeline", params, slices, "slices", record=record, out=out or None,
                 overwrite=overwrite, progress=progress, bar_total=slices * len(variants),
                 bar_unit="runs",
                 pinning={v: dict(zip(THREADS, plan[v]["cpus"])) for v in variants}) as session:
        for r in range(slices):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                if session.stopping:
                    break
                spec = plan[v]
                a, b, info = _run(spec["kind"], idles[v], spec["cpus"], p, spec["combine"],
                                  spec["rest_share"])
                lat[v].append(a)
                late[v].append(b)
                infos[v].append(info)
                session.advance(1, status="slice %d/%d %s" % (r + 1, slices, v))
            if session.stopping:
                break
            session.checkpoint(r + 1)
    return res
