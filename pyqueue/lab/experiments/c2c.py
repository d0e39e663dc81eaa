"""Core-to-core latency (SPEC §6.3, seed 001); false sharing is false_sharing.py.

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
import time
from dataclasses import dataclass, field

import numpy as np

from ... import clock as _clock
from ..._pyq import ffi, lib
from ..common import cloops, environment, placement
from ..common.output import OutputFolder
from ..common.progress import GracefulInterrupt, Progress
from ..common.stats import nearest_rank, per_round_then_mean
from ...topology import RELATION_LABELS as RELATION_NAMES
from ...topology import read as read_topology

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
    if mode not in MODES and mode not in QUEUE_VARIANTS:
        raise ValueError("mode must be one of %s, got %r"
                         % (", ".join(list(MODES) + list(QUEUE_VARIANTS)), mode))
    for name, v in (("cpu_a", cpu_a), ("cpu_b", cpu_b)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError("%s must be a CPU id >= 0, got %r" % (name, v))
    if cpu_a == cpu_b:
        raise ValueError("cpu_a and cpu_b must differ (a ping-pong on one CPU measures the "
                         "scheduler, not the cache), got %d twice" % cpu_a)
    if not isinstance(round_trips, (int, np.integer)) or not 1 <= round_trips <= 2**31:
        raise ValueError("round_trips must be in [1, 2**31], got %r" % (round_trips,))
    if not isinstance(batch, (int, np.integer)) or not 1 <= batch <= 2**16:
        raise ValueError("batch must be in [1, 65536], got %r" % (batch,))
    cfg = ffi.new("pyq_c2c_config_t *")
    lib.pyq_c2c_config_init(cfg, int(cpu_a), int(cpu_b))
    cfg.warmup, cfg.round_trips, cfg.batch = int(warmup), int(round_trips), int(batch)
    cfg.timeout_ns = int(timeout * 1e9)
    if mode in MODES:
        cfg.mode = MODES[mode]
    else:
        cfg.mode = lib.PYQ_C2C_QUEUE
        cfg.queue.publish = QUEUE_VARIANTS[mode]["publish"]
        cfg.queue.scan_current = QUEUE_VARIANTS[mode]["scan_current"]
        cfg.msg_size = int(msg_size)
    samples = np.zeros(int(round_trips), dtype=np.uint64)
    res = ffi.new("pyq_c2c_result_t *")
    rc = lib.pyq_c2c_pingpong(cfg, ffi.from_buffer("uint64_t[]", samples, require_writable=True),
                              res)
    if rc != 0:
        raise cloops.error(rc, "%s ping-pong CPU %d <-> %d" % (mode, cpu_a, cpu_b))
    return samples, {"start_ns": int(res.start_ns), "end_ns": int(res.end_ns),
                     "timer_ticks": float(res.timer_ticks),
                     "cpu_a_end": int(res.cpu_a_end), "cpu_b_end": int(res.cpu_b_end)}


def relation_matrix(topology, cpus):
    """(n, n) list of relation names ("same_cpu", "smt_sibling", "same_l3", ...)."""
    return [[topology.relation(a, b) for b in cpus] for a in cpus]


def _one_way(ticks, tpn, ps=(50.0, 99.0)):
    """Nearest-rank one-way percentiles (ticks, ns) of round-trip tick samples."""
    t = nearest_rank(ticks, ps) / 2.0
    return t, t / tpn


@dataclass
class CoreToCoreResult:
    cpus: list
    relations: list                      # (n, n) relation names
    ticks_per_ns: float
    matrix: dict                         # mode -> {"median_ns", "p99_ns", "median_cycles", ...}
    queue: dict                          # pair, per-variant one-way figures and ratios to the floor
    over_time: dict                      # pair, t_s, per-mode median/p99 one-way ns per slice
    params: dict
    samples: dict = field(default_factory=dict)   # group -> {name: array}
    status: str = "complete"
    summary: str = ""

    def to_dict(self):
        return {"cpus": self.cpus, "relations": self.relations, "ticks_per_ns": self.ticks_per_ns,
                "matrix": self.matrix, "queue": self.queue, "over_time": self.over_time,
                "params": self.params, "status": self.status}

    def to_json(self, path):
        from ..common.output import to_jsonable
        with open(path, "w") as f:
            json.dump(to_jsonable(self.to_dict()), f, indent=1)


def _cell_stats(rounds_ticks, tpn):
    """Per round nearest-rank p50/p99 of one-way ticks, mean over rounds."""
    rp = per_round_then_mean([np.asarray(r, dtype=np.float64) / 2.0 for r in rounds_ticks],
                             (50.0, 99.0))
    return rp.mean, rp.min, rp.max


def _matrix_tables(cpus, relations, mode_cells, tpn):
    n = len(cpus)
    out = {}
    for mode, cells in mode_cells.items():
        m = {k: np.full((n, n), np.nan) for k in ("median_cycles", "p99_cycles",
                                                  "median_min_cycles", "median_max_cycles")}
        for (i, j), rounds in cells.items():
            if not rounds:
                continue
            mean, lo, hi = _cell_stats(rounds, tpn)
            m["median_cycles"][i, j], m["p99_cycles"][i, j] = mean
            m["median_min_cycles"][i, j], m["median_max_cycles"][i, j] = lo[0], hi[0]
        for k in list(m):
            m[k.replace("cycles", "ns")] = m[k] / tpn
        out[mode] = {k: v.tolist() for k, v in m.items()}
    return out


def _format_summary(res):
    lines = ["Core-to-core one-way latency (ping-pong round trip / 2), cycle counter at "
             "%.3f GHz; nearest-rank per round, mean over rounds" % res.ticks_per_ns]
    step = res.params.get("timer_step_ticks")
    if step and step > 1:
        lines.append("The cycle counter moves %d ticks (%.1f ns) at a time here: one-way figures "
                     "are multiples of %.1f ns." % (step, step / res.ticks_per_ns,
                                                    step / res.ticks_per_ns / 2))
    cpus = res.cpus
    for mode, m in res.matrix.items():
        lines.append("")
        lines.append("%s: median ns [p99 ns]" % mode)
        lines.append("from\\to " + " ".join("%16s" % ("cpu%d" % c) for c in cpus))
        for i, a in enumerate(cpus):
            cells = []
            for j, _ in enumerate(cpus):
                med, p99 = m["median_ns"][i][j], m["p99_ns"][i][j]
                cells.append("%16s" % ("-" if not np.isfinite(med) else
                                       "%.1f [%.1f]" % (med, p99)))
            lines.append("%7s " % ("cpu%d" % a) + " ".join(cells))
    lines.append("")
    lines.append("relations: " + "; ".join(
        "%d-%d %s" % (a, b, RELATION_NAMES.get(res.relations[i][j], res.relations[i][j]))
        for i, a in enumerate(cpus) for j, b in enumerate(cpus) if i < j))
    q = res.queue
    if q.get("variants"):
        lines.append("")
        lines.append("pyqueue round trip vs the two-line floor on CPUs %d->%d "
                     "(same rounds, interleaved):" % tuple(q["pair"]))
        for name, v in q["variants"].items():
            lines.append("  %-16s one-way median %7.1f ns  p99 %7.1f ns  (%6.0f / %6.0f cycles)%s"
                         % (name, v["median_ns"], v["p99_ns"], v["median_cycles"],
                            v["p99_cycles"],
                            "" if name == "two_lines" else
                            "  ratio %.2fx (per-round median; near %s, far %s)" % (
                                v["ratio_median"], _fmt_ratio(v["ratio_by_placement"].get("near")),
                                _fmt_ratio(v["ratio_by_placement"].get("far")))))
    ot = res.over_time
    if ot.get("t_s"):
        lines.append("")
        lines.append("same pair over time (CPUs %d->%d, %d slices over %.1f s):"
                     % (ot["pair"][0], ot["pair"][1], len(ot["t_s"]), ot["t_s"][-1]))
        for mode in ot["modes"]:
            med = np.asarray(ot[mode]["median_ns"], dtype=float)
            lines.append("  %-10s slice medians min %.1f  median %.1f  max %.1f ns  "
                         "(max/min %.2fx)" % (mode, med.min(), np.median(med), med.max(),
                                              med.max() / med.min()))
    lines.append("")
    lines.append("status: %s" % res.status)
    return "\n".join(lines)


def _fmt_ratio(entry):
    if not entry or entry.get("median") is None:
        return "-"
    return "%.2fx/%d" % (entry["median"], len(entry["ratios"]))


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
    output folder (SPEC §6).  Ctrl-C stops after the current slice and leaves a
    valid partial folder.  Returns a CoreToCoreResult.
    """
    modes = tuple(modes)
    if not modes or any(m not in MODES for m in modes):
        raise ValueError("modes must be a non-empty subset of %s, got %r" % (tuple(MODES), modes))
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError("rounds must be an integer >= 1, got %r" % (rounds,))
    topo = topology if topology is not None else read_topology(sysfs_root)
    cpus = sorted(topo.allowed if cpus is None else cpus)
    if len(cpus) < 2:
        raise ValueError("cpus must name at least two CPUs, got %r" % (cpus,))
    for c in cpus:
        topo.relation(c, c)                       # ValueError for an unknown CPU
    pair = tuple(pair) if pair is not None else (cpus[0], cpus[1])
    if over_time is None:
        over_time = 5.0 if environment.is_vm() else 0.0
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
    folder = OutputFolder(out, "core_to_core", params, overwrite=overwrite,
                          pinning={"pairs": "each ordered pair of %s" % cpus}) if out else None
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
    done_rounds = 0
    res = CoreToCoreResult(cpus, relations, tpn, {}, {}, ot, params)

    def build(status):
        res.matrix = _matrix_tables(cpus, relations, cells, tpn)
        res.queue = _queue_summary(pair, qslices, qmeta, tpn, placement_split_ns)
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
        res.summary = _format_summary(res)
        return res

    def save(done, final=False, error=None):
        build("complete" if final and done == rounds and error is None else
              "partial: %d of %d rounds" % (done, rounds))
        if not folder:
            return
        for group, arrays in res.samples.items():
            folder.save_samples(group, **arrays)
        results = res.to_dict()
        results["loadavg_end"] = environment.loadavg()
        if final:
            folder.save_text("summary.txt", res.summary + "\n")
            folder.finish(results, done, rounds, "rounds", error=error)
        else:
            folder.checkpoint(results, done, rounds, "rounds")

    error = None
    with GracefulInterrupt() as stop, Progress(total=total, desc="core-to-core", unit="slices",
                                               enabled=progress) as bar:
        try:
            for r in range(rounds):
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                for a, b in pairs:
                    for m in order:
                        if stop.requested:
                            break
                        s, _ = pingpong_slice(a, b, m, round_trips, warmup, batch, timeout=timeout)
                        cells[m][(cpus.index(a), cpus.index(b))].append(s)
                        bar.update(1, status="round %d/%d %s %d->%d" % (r + 1, rounds, m, a, b))
                if queue and not stop.requested:
                    shift = r % len(qnames)
                    slice_meta = {}
                    for name in qnames[shift:] + qnames[:shift]:
                        if stop.requested:
                            break
                        s, meta = pingpong_slice(pair[0], pair[1], name, queue_round_trips,
                                                 warmup, batch, timeout=timeout)
                        qslices[name].append(s)
                        slice_meta[name] = meta
                        bar.update(1, status="round %d/%d %s" % (r + 1, rounds, name))
                    if len(slice_meta) == len(qnames):
                        qmeta.append(slice_meta)
                    else:                                # keep rounds aligned across variants
                        for name in slice_meta:
                            qslices[name].pop()
                if stop.requested:
                    break
                done_rounds = r + 1
                save(done_rounds)
            t0 = time.monotonic()
            for k in range(n_over):
                if stop.requested:
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
                    t_, ns = _one_way(s, tpn)
                    ot[m]["median_ns"].append(float(ns[0]))
                    ot[m]["p99_ns"].append(float(ns[1]))
                    bar.update(1, status="over time %.1f s %s" % (ot["t_s"][-1], m))
            if len(ot["t_s"]) and any(len(ot[m]["median_ns"]) < len(ot["t_s"]) for m in modes):
                ot["t_s"].pop()
                ot["wall_utc"].pop()
        except Exception as e:                   # record how far we got, then re-raise
            error = e
            if folder:
                save(done_rounds, final=True, error=e)
            raise
        finally:
            if error is None:
                save(done_rounds, final=True)
    return res


def _queue_summary(pair, qslices, qmeta, tpn, split_ns):
    if not qslices or not qslices.get("two_lines"):
        return {"pair": list(pair), "variants": {}}
    out = {"pair": list(pair), "variants": {}, "rounds": len(qslices["two_lines"]),
           "method": "one-way = round trip / 2; ratio = variant median / two-line median of "
                     "the same round (slices interleaved, order rotated per round); rounds "
                     "grouped by the floor's placement (near < %.0f ns one-way)" % split_ns}
    floor_round = [float(_one_way(s, tpn)[1][0]) for s in qslices["two_lines"]]
    for name, rounds in qslices.items():
        allr = np.concatenate(rounds)
        t, ns = _one_way(allr, tpn)
        per_round = [float(_one_way(s, tpn)[1][0]) for s in rounds]
        v = {"median_ns": float(ns[0]), "p99_ns": float(ns[1]), "median_cycles": float(t[0]),
             "p99_cycles": float(t[1]), "round_median_ns": per_round}
        if name != "two_lines":
            ratios = [x / f for x, f in zip(per_round, floor_round)]
            v["ratios"] = ratios
            v["ratio_median"] = float(np.median(ratios))
            by = {}
            for x, f in zip(ratios, floor_round):
                by.setdefault(placement.tag(f, split_ns), []).append(x)
            v["ratio_by_placement"] = {k: {"ratios": r, "median": float(np.median(r))}
                                       for k, r in by.items()}
        out["variants"][name] = v
    out["timer_ticks"] = [m["two_lines"]["timer_ticks"] for m in qmeta]
    return out
