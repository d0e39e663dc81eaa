"""Core-to-core latency (DESIGN §6.3); false sharing is false_sharing.py.

    import pyqueue.lab as lab
    r = lab.core_to_core(round_trips=5000, rounds=3, over_time=5.0, out="c2c-out")
    print(r.summary)            # matrix per mode, queue-vs-floor ratio, spread over time
    r.matrix["two_lines"]["median_ns"]     # (n, n) one-way ns, NaN on the diagonal

Every measurement runs in C (csrc/lab/c2c.c) in short slices on two new pinned
threads, timed with the cycle counter; the samples are round trips in counter
ticks, one-way = half.  Modes of one slice are interleaved and rotated, and on a
VM the same pair is followed over time, because the host moves virtual CPUs: a
hand-off between the same two vCPUs can cost 26 ns now and 160 ns a minute later.
"""
import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..runtime import clock as _clock
from pyqueue import validate
from .._lab import ffi, lib
from ..runtime.topology import read as read_topology
from ..common import cloops, environment, placement
from ..common import status as _status
from ..common.session import Session
from ..reports import c2c as report
from ..common.frames import ToPandas

__all__ = ["core_to_core", "CoreToCoreResult", "MODES", "QUEUE_VARIANTS", "relation_matrix",
           "read_topology", "pingpong_slice"]

MODES = {"cas": lib.PYQ_C2C_CAS, "two_lines": lib.PYQ_C2C_TWO_LINES}
# The queue ping-pong beside the floor: one 32-B message each way, publish "each".
QUEUE_VARIANTS = {"queue_each": dict(publish=lib.PYQ_PUBLISH_EACH, scan_current=0),
                  "queue_each_scan": dict(publish=lib.PYQ_PUBLISH_EACH, scan_current=1)}


def pingpong_slice(cpu_a, cpu_b, mode="two_lines", round_trips=2000, warmup=500, batch=1,
                   msg_size=32, timeout=10.0):
    """One ping-pong slice in C; returns (round-trip ticks array, result dict).

    ``mode``: "cas", "two_lines", "queue_each" or "queue_each_scan"."""
    mode = validate.choice("mode", mode, tuple(MODES) + tuple(QUEUE_VARIANTS))
    cpu_a = validate.cpu("cpu_a", cpu_a, allow_unpinned=False)
    cpu_b = validate.cpu("cpu_b", cpu_b, allow_unpinned=False)
    if cpu_a == cpu_b:
        raise ValueError("cpu_a and cpu_b must differ (a ping-pong on one CPU measures the "
                         "scheduler, not the cache), got %d twice" % cpu_a)
    round_trips = validate.integer("round_trips", round_trips, 1, 2**31)
    batch = validate.integer("batch", batch, 1, 2**16)
    cfg = ffi.new("pyq_c2c_config_t *")
    lib.pyq_c2c_config_init(cfg, cpu_a, cpu_b)
    cfg.warmup = validate.integer("warmup", warmup, 0, 2**31)
    cfg.round_trips, cfg.batch = round_trips, batch
    cfg.timeout_ns = int(validate.duration("timeout", timeout) * 1e9)
    if mode in MODES:
        cfg.mode = MODES[mode]
    else:
        cfg.mode = lib.PYQ_C2C_QUEUE
        cfg.queue.publish = QUEUE_VARIANTS[mode]["publish"]
        cfg.queue.scan_current = QUEUE_VARIANTS[mode]["scan_current"]
        cfg.msg_size = validate.integer("msg_size", msg_size, 1, None)
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
    over_time: dict                      # pair, t_s, per-mode median/p99 one-way ns per slice
    params: dict
    samples: dict = field(default_factory=dict)   # group -> {name: array}
    status: str = _status.COMPLETE
    summary: str = ""

    def text(self, markdown=False):
        """The summary the command prints (``markdown``: its tables in Markdown)."""
        return report.summary_text(self, markdown) if markdown else self.summary

    def to_dict(self):
        return {"cpus": self.cpus, "relations": self.relations, "ticks_per_ns": self.ticks_per_ns,
                "matrix": self.matrix, "queue": self.queue, "over_time": self.over_time,
                "params": self.params, "status": self.status}

    def to_json(self, path):
        from ..common.output import to_jsonable
        with open(path, "w") as f:
            json.dump(to_jsonable(self.to_dict()), f, indent=1)


def core_to_core(cpus=None, modes=("cas", "two_lines"), round_trips=5000, warmup=1000,
                 rounds=3, batch=1, queue=True, queue_round_trips=None, pair=None,
                 over_time=None, interval=0.5, over_time_round_trips=2000, out=None,
                 overwrite=False, progress=True, sysfs_root="/sys", topology=None,
                 timeout=10.0, placement_split_ns=placement.DEFAULT_SPLIT_NS):
    """Measure the one-way cache-line latency of every ordered CPU pair.

    cpus: CPUs to include (default: every allowed CPU).  modes: "cas" and/or
    "two_lines".  rounds × every pair × every mode slices of ``round_trips``
    each, rotated.  queue: also ping-pong through pyqueue (QUEUE_VARIANTS) beside
    the two-line floor on ``pair`` (default: the first two CPUs), interleaved
    per round.  over_time: seconds to follow ``pair`` with one short slice per
    mode every ``interval`` s (default: 5 s on a VM, 0 elsewhere).  out: an
    output folder (DESIGN §6.8).  Ctrl-C stops after the current slice and leaves a
    valid partial folder.  Returns a CoreToCoreResult.
    """
    modes = tuple(validate.sequence("modes", modes, lambda n, m: validate.choice(
        n, m, tuple(MODES))))
    rounds = validate.integer("rounds", rounds, 1, None)
    topo = topology if topology is not None else read_topology(sysfs_root)
    cpus = sorted(topo.allowed if cpus is None else cpus)
    if len(cpus) < 2:
        raise ValueError("cpus must name at least two CPUs, got %r" % (cpus,))
    for c in cpus:
        topo.relation(c, c)                       # ValueError for an unknown CPU
    pair = tuple(pair) if pair is not None else (cpus[0], cpus[1])
    if over_time is None:
        over_time = 5.0 if environment.is_vm() else 0.0
    over_time = validate.duration("over_time", over_time)
    interval = validate.number("interval", interval, 0, math.inf, lo_open=True, hi_open=True)
    queue_round_trips = queue_round_trips or round_trips
    tpn = cloops.ticks_per_ns()
    pairs = [(a, b) for a in cpus for b in cpus if a != b]
    relations = relation_matrix(topo, cpus)
    params = dict(cpus=cpus, modes=list(modes), round_trips=round_trips, warmup=warmup,
                  rounds=rounds, batch=batch, queue=bool(queue), pair=list(pair),
                  queue_round_trips=queue_round_trips, over_time=over_time, interval=interval,
                  over_time_round_trips=over_time_round_trips, topology=topo.to_dict(),
                  ticks_per_ns=tpn, timer_step_ticks=_clock.step_ticks(),
                  loadavg_start=environment.loadavg())
    qnames = ["two_lines"] + list(QUEUE_VARIANTS) if queue else []
    n_over = int(over_time / interval) if over_time > 0 else 0
    total = rounds * (len(pairs) * len(modes) + len(qnames)) + n_over * len(modes)
    cells = {m: {(cpus.index(a), cpus.index(b)): [] for a, b in pairs} for m in modes}
    qslices = {name: [] for name in qnames}       # per round: ticks array
    qmeta = []
    ot = {"pair": list(pair), "modes": list(modes), "t_s": [], "wall_utc": []}
    for m in modes:
        ot[m] = {"median_ns": [], "p99_ns": []}
    ot_samples = {m: [] for m in modes}
    res = CoreToCoreResult(cpus, relations, tpn, {}, {}, ot, params)

    def build(status):
        res.matrix = report.matrix_tables(cpus, relations, cells, tpn)
        res.queue = report.queue_summary(pair, qslices, qmeta, tpn, placement_split_ns)
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
                    s, _ = pingpong_slice(a, b, m, round_trips, warmup, batch, timeout=timeout)
                    cells[m][(cpus.index(a), cpus.index(b))].append(s)
                    session.advance(1, status="round %d/%d %s %d->%d" % (r + 1, rounds, m, a, b))
            if queue and not session.stopping:
                shift = r % len(qnames)
                slice_meta = {}
                for name in qnames[shift:] + qnames[:shift]:
                    if session.stopping:
                        break
                    s, meta = pingpong_slice(pair[0], pair[1], name, queue_round_trips,
                                             warmup, batch, timeout=timeout)
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
                s, _ = pingpong_slice(pair[0], pair[1], m, over_time_round_trips,
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
