"""Core-to-core latency (DESIGN §6.3); false sharing is false_sharing.py.

    import pyqueue.lab as lab
    r = lab.core_to_core(round_trips=5000, rounds=3, over_time=5.0, out="c2c-out")
    print(r.summary)            # matrix per mode, queue-vs-floor ratio, spread over time
    r.matrix["two_lines"]["median_ns"]     # (n, n) one-way ns, NaN on the diagonal
    lab.core_to_core(lab.CoreToCoreParams.quick())      # what --quick runs

Its parameters are one list, CoreToCoreParams, from which the CLI's flags, this
function's keywords, the output folder's JSON params and their checks all come.

Every measurement runs in C (csrc/lab/c2c.c) in short slices on two new pinned
threads, timed with the cycle counter; the samples are round trips in counter
ticks, one-way = half.  Modes of one slice are interleaved and rotated, and on a
VM the same pair is followed over time, because the host moves virtual CPUs: a
hand-off between the same two vCPUs can cost 26 ns now and 160 ns a minute later.
"""
import json
import time
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from ..runtime import clock as _clock
from pyqueue import validate
from .._lab import ffi, lib
from ..runtime.topology import read as read_topology
from ..common import cloops, environment, placement
from ..common import status as _status
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..reports import c2c as report
from ..common.frames import ToPandas

__all__ = ["core_to_core", "CoreToCoreParams", "CoreToCoreResult", "MODES", "QUEUE_VARIANTS",
           "relation_matrix", "read_topology", "pingpong_slice"]

MODES = {"cas": lib.PYQ_C2C_CAS, "two_lines": lib.PYQ_C2C_TWO_LINES}
# The queue ping-pong beside the floor: one 32-B message each way, publish "each".
QUEUE_VARIANTS = {"queue_each": dict(publish=lib.PYQ_PUBLISH_EACH, scan_current=0),
                  "queue_each_scan": dict(publish=lib.PYQ_PUBLISH_EACH, scan_current=1)}
TRIPS_MAX = 2**31            # round trips of one slice (the C loop's counters)


@dataclass(frozen=True)
class CoreToCoreParams(Params):
    """The core-to-core matrix's parameters; the defaults are the command's (the
    published figures' run), the pair pinned to CPUs 0 and 1 from every door."""

    EXPERIMENT, COMMAND, FUNCTION = "core_to_core", "c2c", "core_to_core"
    ALIASES = {"pair": ("writer_cpu", "reader_cpu"), "placement_split_ns": "split_ns"}

    modes: Tuple[str, ...] = param(tuple(MODES), "ping-pong modes: cas (one shared line, "
                                   "compare-and-swap), two_lines (a ping line and a pong line: "
                                   "the floor a queue's message and reply pay)", kind="names",
                                   choices=tuple(MODES))
    round_trips: int = param(20_000, "timed round trips per slice", lo=1, hi=TRIPS_MAX,
                             quick=2000)
    warmup: int = param(1000, "untimed round trips before each slice's timed ones", lo=0,
                        hi=TRIPS_MAX, quick=200)
    rounds: int = param(5, "rounds over every pair and mode (the modes rotated each round)",
                        lo=1, quick=1)
    batch: int = param(1, "round trips per sample (a sample is their total)", lo=1, hi=2**16)
    queue: bool = param(True, "also ping-pong one 32-byte message each way through pyqueue "
                        "(publish each; and each + scan_current) beside the two-line floor on "
                        "the pair, interleaved per round")
    queue_round_trips: Optional[int] = param(None, "timed round trips per queue slice "
                                             "(default: round_trips)", kind="int", lo=1,
                                             hi=TRIPS_MAX, none_ok=True)
    over_time: Optional[float] = param(None, "seconds to follow the pair, one short slice per "
                                       "mode every interval (default: 5 on a VM, else 0)",
                                       kind="float", lo=0.0, hi=86400.0, none_ok=True,
                                       quick=0.0,
                                       metavar="SECONDS")
    interval: float = param(0.5, "seconds between over-time slices", lo=0.0, lo_open=True,
                            hi=3600.0, metavar="SECONDS")
    over_time_round_trips: int = param(2000, "timed round trips per over-time slice", lo=1,
                                       hi=TRIPS_MAX)
    timeout: float = param(10.0, "seconds one round trip may wait for the other thread before "
                           "the slice fails (0: the C loop's 10 s)", lo=0.0, hi=3600.0,
                           metavar="SECONDS")
    split_ns: float = param(placement.DEFAULT_SPLIT_NS, "one-way ns of a round's two-line "
                            "floor below which the round is 'near' (the queue's ratio is also "
                            "given per placement)", lo=0.0, lo_open=True, hi=1e6, metavar="NS")
    cpus: Optional[Tuple[int, ...]] = param(None, "CPUs of the matrix (default: every allowed "
                                            "CPU)", kind="cpus", lo=0, none_ok=True,
                                            group="CPUs")
    writer_cpu: int = param(WRITER_CPU, "CPU of the pair's first thread: the queue's writer, "
                            "the side that times the round trip", kind="cpu", lo=0,
                            group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the pair's second thread: the queue's reader, "
                            "the echo", kind="cpu", lo=0, group="CPUs")

    def check(self):
        if self.writer_cpu == self.reader_cpu:
            raise ValueError("writer_cpu and reader_cpu must differ (a ping-pong on one CPU "
                             "measures the scheduler, not the cache), got %d twice"
                             % self.writer_cpu)
        if self.cpus is not None:
            if len(self.cpus) < 2:
                raise ValueError("cpus must name at least two CPUs, got %r" % (self.cpus,))
            if len(set(self.cpus)) != len(self.cpus):
                raise ValueError("cpus must not repeat a CPU, got %r" % (self.cpus,))


def pingpong_slice(cpu_a, cpu_b, mode="two_lines", round_trips=2000, warmup=500, batch=1,
                   msg_size=32, timeout=10.0):
    """One ping-pong slice in C; returns (round-trip ticks array, result dict).

    ``mode``: "cas", "two_lines", "queue_each" or "queue_each_scan".  The values are
    checked as CoreToCoreParams checks them (cpu_a is its writer_cpu, cpu_b its
    reader_cpu)."""
    mode = validate.choice("mode", mode, tuple(MODES) + tuple(QUEUE_VARIANTS))
    CoreToCoreParams(writer_cpu=cpu_a, reader_cpu=cpu_b, round_trips=round_trips,
                     warmup=warmup, batch=batch, timeout=timeout)
    msg_size = validate.integer("msg_size", msg_size, 1, None)
    return _pingpong(cpu_a, cpu_b, mode, round_trips, warmup, batch, msg_size, timeout)


def _pingpong(cpu_a, cpu_b, mode, round_trips, warmup, batch, msg_size=32, timeout=10.0):
    """pingpong_slice on values already checked."""
    cfg = ffi.new("pyq_c2c_config_t *")
    lib.pyq_c2c_config_init(cfg, cpu_a, cpu_b)
    cfg.warmup, cfg.round_trips, cfg.batch = warmup, round_trips, batch
    cfg.timeout_ns = int(timeout * 1e9)
    if mode in MODES:
        cfg.mode = MODES[mode]
    else:
        cfg.mode = lib.PYQ_C2C_QUEUE
        cfg.queue.publish = QUEUE_VARIANTS[mode]["publish"]
        cfg.queue.scan_current = QUEUE_VARIANTS[mode]["scan_current"]
        cfg.msg_size = msg_size
    samples = np.zeros(round_trips, dtype=np.uint64)
    res = ffi.new("pyq_c2c_result_t *")
    rc = lib.pyq_c2c_pingpong(cfg, ffi.from_buffer("uint64_t[]", samples, require_writable=True),
                              res)
    cloops.check(rc, "%s ping-pong CPU %d <-> %d" % (mode, cpu_a, cpu_b))
    return samples, {"start_ns": int(res.start_ns), "end_ns": int(res.end_ns),
                     "timer_ticks": float(res.timer_ticks),
                     "cpu_a_end": int(res.cpu_a_end), "cpu_b_end": int(res.cpu_b_end)}


def relation_matrix(topology, cpus):
    """(n, n) list of relation names ("same_cpu", "smt_sibling", "same_l3", ...)."""
    return [[topology.relation(a, b) for b in cpus] for a in cpus]


@dataclass
class CoreToCoreResult(ToPandas):
    cpus: list
    relations: list                      # (n, n) relation names
    ticks_per_ns: float
    matrix: dict                         # mode -> {"median_ns", "p99_ns", "median_cycles", ...}
    queue: dict                          # pair, per-variant one-way figures and ratios to the floor
    over_time: dict                      # pair, seconds, t_s, per-mode median/p99 ns per slice
    params: dict                         # CoreToCoreParams.to_json()
    samples: dict = field(default_factory=dict)   # group -> {name: array}
    status: str = _status.COMPLETE
    summary: str = ""
    timer_step_ticks: int = 1            # the cycle counter's step (ticks)
    topology: dict = field(default_factory=dict)  # the topology the relations come from
    loadavg_start: list = None

    def text(self, markdown=False):
        """The summary the command prints (``markdown``: its tables in Markdown)."""
        return report.summary_text(self, markdown) if markdown else self.summary

    def to_dict(self):
        return {"cpus": self.cpus, "relations": self.relations, "ticks_per_ns": self.ticks_per_ns,
                "timer_step_ticks": self.timer_step_ticks, "topology": self.topology,
                "matrix": self.matrix, "queue": self.queue, "over_time": self.over_time,
                "loadavg_start": self.loadavg_start, "params": self.params,
                "status": self.status}

    def to_json(self, path):
        from ..common.output import to_jsonable
        with open(path, "w") as f:
            json.dump(to_jsonable(self.to_dict()), f, indent=1)


def core_to_core(params=None, *, out=None, overwrite=False, progress=True, _topology=None,
                 **kwargs):
    """Measure the one-way cache-line latency of every ordered CPU pair: ``params``
    (a CoreToCoreParams, None for the defaults) and/or its fields as keywords.

    cpus: CPUs to include (default: every allowed CPU).  modes: "cas" and/or
    "two_lines".  rounds × every pair × every mode slices of ``round_trips``
    each, rotated.  queue: also ping-pong through pyqueue (QUEUE_VARIANTS) beside
    the two-line floor on the pair writer_cpu -> reader_cpu, interleaved per round.
    over_time: seconds to follow the pair with one short slice per mode every
    ``interval`` s (default: 5 s on a VM, 0 elsewhere).  out: an output folder
    (DESIGN §6.8).  Ctrl-C stops after the current slice and leaves a valid
    partial folder.  Returns a CoreToCoreResult.  (``_topology``: a Topology to
    label the pairs with instead of the machine's, for tests.)
    """
    p = CoreToCoreParams.of(params, **kwargs)
    params = p.to_json()
    topo = _topology if _topology is not None else read_topology()
    cpus = sorted(topo.allowed if p.cpus is None else p.cpus)
    if len(cpus) < 2:
        raise ValueError("cpus: the matrix needs two CPUs; this process may run only on %r"
                         % (cpus,))
    pair = (p.writer_cpu, p.reader_cpu)
    modes, rounds, interval = p.modes, p.rounds, p.interval
    round_trips, warmup, batch, timeout = p.round_trips, p.warmup, p.batch, p.timeout
    over_time = p.over_time
    if over_time is None:
        over_time = 5.0 if environment.is_vm() else 0.0
    queue_round_trips = p.queue_round_trips or round_trips
    tpn = cloops.ticks_per_ns()
    pairs = [(a, b) for a in cpus for b in cpus if a != b]
    relations = relation_matrix(topo, cpus)
    qnames = ["two_lines"] + list(QUEUE_VARIANTS) if p.queue else []
    n_over = int(over_time / interval) if over_time > 0 else 0
    total = rounds * (len(pairs) * len(modes) + len(qnames)) + n_over * len(modes)
    cells = {m: {(cpus.index(a), cpus.index(b)): [] for a, b in pairs} for m in modes}
    qslices = {name: [] for name in qnames}       # per round: ticks array
    qmeta = []
    ot = {"pair": list(pair), "modes": list(modes), "seconds": over_time, "interval": interval,
          "t_s": [], "wall_utc": []}
    for m in modes:
        ot[m] = {"median_ns": [], "p99_ns": []}
    ot_samples = {m: [] for m in modes}
    res = CoreToCoreResult(cpus, relations, tpn, {}, {}, ot, params,
                           timer_step_ticks=_clock.step_ticks(), topology=topo.to_dict(),
                           loadavg_start=environment.loadavg())

    def build(status):
        res.matrix = report.matrix_tables(cpus, relations, cells, tpn)
        res.queue = report.queue_summary(pair, qslices, qmeta, tpn, p.split_ns)
        res.status = status
        res.samples = {}
        for m in modes:
            for (i, j), rounds_ in cells[m].items():
                if rounds_:
                    res.samples["%s_%d_%d" % (m, cpus[i], cpus[j])] = {
                        "round_trip_ticks": np.concatenate(rounds_),
                        "round_lengths": np.array([len(r) for r in rounds_], dtype=np.int64)}
        for name, rs in qslices.items():
            if rs:
                res.samples["pair_%s" % name] = {
                    "round_trip_ticks": np.concatenate(rs),
                    "round_lengths": np.array([len(r) for r in rs], dtype=np.int64)}
        for m, rs in ot_samples.items():
            if rs:
                res.samples["over_time_%s" % m] = {
                    "round_trip_ticks": np.concatenate(rs),
                    "slice_t_s": np.asarray(ot["t_s"], dtype=np.float64)}
        res.summary = report.summary_text(res)
        return res

    def record(folder, status, final):
        build(status)
        if folder is None:
            return None
        for group, arrays in res.samples.items():
            folder.save_samples(group, **arrays)
        results = res.to_dict()
        results["loadavg_end"] = environment.loadavg()
        if final:
            folder.save_text("summary.txt", res.summary + "\n")
        return results

    with Session("core_to_core", params, rounds, "rounds", record=record, out=out or None,
                 overwrite=overwrite, progress=progress, desc="core-to-core", bar_total=total,
                 bar_unit="slices", pinning={"pairs": "each ordered pair of %s" % cpus}) as session:
        for r in range(rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for a, b in pairs:
                for m in order:
                    if session.stopping:
                        break
                    s, _ = _pingpong(a, b, m, round_trips, warmup, batch, timeout=timeout)
                    cells[m][(cpus.index(a), cpus.index(b))].append(s)
                    session.advance(1, status="round %d/%d %s %d->%d" % (r + 1, rounds, m, a, b))
            if p.queue and not session.stopping:
                shift = r % len(qnames)
                slice_meta = {}
                for name in qnames[shift:] + qnames[:shift]:
                    if session.stopping:
                        break
                    s, meta = _pingpong(pair[0], pair[1], name, queue_round_trips, warmup,
                                        batch, timeout=timeout)
                    qslices[name].append(s)
                    slice_meta[name] = meta
                    session.advance(1, status="round %d/%d %s" % (r + 1, rounds, name))
                if len(slice_meta) == len(qnames):
                    qmeta.append(slice_meta)
                else:                                # keep rounds aligned across variants
                    for name in slice_meta:
                        qslices[name].pop()
            if session.stopping:
                break
            session.checkpoint(r + 1)
        t0 = time.monotonic()
        for k in range(n_over):
            if session.stopping:
                break
            wait = t0 + k * interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            ot["t_s"].append(time.monotonic() - t0)
            ot["wall_utc"].append(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            for m in modes:
                s, _ = _pingpong(pair[0], pair[1], m, p.over_time_round_trips,
                                 min(warmup, 500), batch, timeout=timeout)
                ot_samples[m].append(s)
                t_, ns = report.one_way(s, tpn)
                ot[m]["median_ns"].append(float(ns[0]))
                ot[m]["p99_ns"].append(float(ns[1]))
                session.advance(1, status="over time %.1f s %s" % (ot["t_s"][-1], m))
        if len(ot["t_s"]) and any(len(ot[m]["median_ns"]) < len(ot["t_s"]) for m in modes):
            ot["t_s"].pop()
            ot["wall_utc"].pop()
    return res
