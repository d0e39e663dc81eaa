"""Throughput and round-trip benchmark of the queue, interleaved with placement
probes (issue 2's benchmark; the peer rows of issue 7 plug in as more contenders).

Throughput contenders (32-byte messages, writer pinned to one CPU, reader to the
other, every reader checks sequence numbers):
  pyqueue        the C writer, publish 'max' (pyq_bench_queue_throughput)
  py_batch       Python ``write_batch`` on 64 Ki-row chunks, C reader thread
  yardstick      a per-message ring of 32-byte slots with cached indices (rigtorp)
Round-trip contenders (one 32-byte message there and back):
  pingpong       the raw two-line ping-pong floor
  rt_each        pyqueue, publish 'each'
  rt_scan        pyqueue, publish 'max' + flush, reader scan_current
Each slice is bracketed by a one-way ping-pong probe; ratios come only from rounds
whose probes agree on the placement (see placement.py).
"""
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .. import queue as _queue
from .._errors import check
from .._pyq import ffi, lib
from . import placement as pl
from ._stats import nearest_rank

MSG = 32
PROBE_TRIPS = 2000
CHUNK = 65536


def _u64(arr):
    return ffi.from_buffer("uint64_t[]", arr, require_writable=True)


class _Pinned:
    """Pin the calling thread for the duration (the C loops pin their own threads;
    the Python writer and the probe's calling side run on this thread)."""

    def __init__(self, cpu):
        self.cpu = cpu

    def __enter__(self):
        self.old = os.sched_getaffinity(0)
        if self.cpu >= 0:
            os.sched_setaffinity(0, {self.cpu})

    def __exit__(self, *exc):
        os.sched_setaffinity(0, self.old)


def probe_one_way_ns(cpu_a, cpu_b, trips=PROBE_TRIPS):
    """Median one-way ns of a two-line ping-pong between cpu_a and cpu_b."""
    s = np.zeros(trips, np.uint64)
    with _Pinned(-1):  # the C side pins this thread; restore afterwards
        check(lib.pyq_bench_pingpong(cpu_a, cpu_b, trips, _u64(s)), "ping-pong probe")
    return float(np.median(s)) / 2.0


def _seq_rows(n):
    arr = np.zeros((n, MSG), np.uint8)
    arr[:, :8] = np.arange(n, dtype=np.uint64).view(np.uint8).reshape(n, 8)
    return arr


@dataclass
class BenchResult:
    params: dict
    slices: list = field(default_factory=list)      # Slice records, unfiltered
    summary: dict = field(default_factory=dict)

    def table(self):
        return format_summary(self.summary, self.params)

    def to_json(self, path):
        import json
        with open(path, "w") as f:
            json.dump({"params": self.params, "summary": self.summary,
                       "slices": [s.as_dict() for s in self.slices]}, f, indent=1, default=float)


class _Throughput:
    def __init__(self, n, wcpu, rcpu, yard_slots):
        self.n, self.wcpu, self.rcpu, self.slots = n, wcpu, rcpu, yard_slots
        self.q = _queue.Queue(publish="max")   # SPEC defaults: 4 x 4 KiB + 65,536 x 4 KiB
        self.rows = _seq_rows(n)

    def close(self):
        self.q.close()

    def run(self, name):
        r = ffi.new("pyq_bench_result_t *")
        if name == "pyqueue":
            check(lib.pyq_bench_queue_throughput(self.q.c_handle, self.n, MSG, self.wcpu,
                                                 self.rcpu, r), "pyqueue throughput")
        elif name == "yardstick":
            check(lib.pyq_bench_ring_throughput(self.n, self.slots, self.wcpu, self.rcpu, r),
                  "yardstick throughput")
        elif name == "py_batch":
            self._python_batch(r)
        else:
            raise ValueError("unknown contender %r" % name)
        if r.messages != self.n:
            raise RuntimeError("%s delivered %d of %d messages" % (name, r.messages, self.n))
        return r.messages / r.elapsed_ns * 1e3, {"elapsed_ns": int(r.elapsed_ns)}

    def _python_batch(self, r):
        h = ffi.new("pyq_bench_reader_t **")
        check(lib.pyq_bench_reader_start(self.q.c_handle, self.n, MSG, self.rcpu, h),
              "C reader for write_batch")
        try:
            with _Pinned(self.wcpu):
                t0 = time.monotonic_ns()
                for i in range(0, self.n, CHUNK):
                    self.q.writer.write_batch(self.rows[i:i + CHUNK])
                self.q.writer.flush()
        except BaseException:
            lib.pyq_bench_reader_stop(h[0])
            lib.pyq_bench_reader_join(h[0], r)
            raise
        check(lib.pyq_bench_reader_join(h[0], r), "C reader for write_batch")
        # Same span as the C writer's figure: writer start to last delivery.
        r.elapsed_ns = r.end_ns - t0


class _RoundTrip:
    def __init__(self, trips, cpu_a, cpu_b):
        self.trips, self.a, self.b = trips, cpu_a, cpu_b
        small = dict(hot_blocks=4, spill_blocks=16)
        self.cfgs = {"rt_each": _queue.make_config(publish="each", **small),
                     "rt_scan": _queue.make_config(publish="max", scan_current=True, **small)}
        self.samples = {}

    def run(self, name):
        s = np.zeros(self.trips, np.uint64)
        with _Pinned(-1):
            if name == "pingpong":
                check(lib.pyq_bench_pingpong(self.a, self.b, self.trips, _u64(s)), "ping-pong")
            else:
                check(lib.pyq_bench_roundtrip(self.cfgs[name], self.a, self.b, self.trips,
                                              _u64(s)), name)
        self.samples.setdefault(name, []).append(s)
        p50, p99, p999 = nearest_rank(s, (50, 99, 99.9))
        return float(p50), {"p99_ns": float(p99), "p999_ns": float(p999)}


def bench(writer_cpu=0, reader_cpu=1, rounds=10, messages=2_000_000, trips=20_000,
          yardstick_slots=16384, split_ns=pl.DEFAULT_SPLIT_NS, progress=True, out=None):
    """Run the interleaved core benchmark; returns a BenchResult (see module doc)."""
    from ._progress import GracefulInterrupt, Progress

    params = dict(writer_cpu=writer_cpu, reader_cpu=reader_cpu, rounds=rounds,
                  messages=messages, trips=trips, message_size=MSG,
                  yardstick_slots=yardstick_slots, split_ns=split_ns)
    for cpu in (writer_cpu, reader_cpu):
        if cpu not in os.sched_getaffinity(0):
            raise ValueError("CPU %d is not available to this process (allowed: %s)"
                             % (cpu, sorted(os.sched_getaffinity(0))))
    res = BenchResult(params)
    tp = _Throughput(messages, writer_cpu, reader_cpu, yardstick_slots)
    rt = _RoundTrip(trips, writer_cpu, reader_cpu)
    probe = lambda: probe_one_way_ns(writer_cpu, reader_cpu)
    total = rounds * 6
    bar = Progress(total, desc="bench", unit="slices", enabled=progress)
    try:
        with GracefulInterrupt() as stop:
            tp.run("pyqueue")  # untimed warm-up: fault in the pool pages
            tput = pl.interleave(["pyqueue", "py_batch", "yardstick"], rounds, tp.run, probe,
                                 split_ns, should_stop=lambda: stop.requested,
                                 on_slice=lambda s: bar.update(1, "%s %.1f" % (s.contender, s.value)))
            lat = pl.interleave(["pingpong", "rt_each", "rt_scan"], rounds, rt.run, probe,
                                split_ns, should_stop=lambda: stop.requested,
                                on_slice=lambda s: bar.update(1, "%s %.0f ns" % (s.contender, s.value)))
            interrupted = stop.requested
    finally:
        bar.close()
        tp.close()
    for s in tput:
        s.extra["kind"] = "throughput"
    for s in lat:
        s.extra["kind"] = "roundtrip"
    res.slices = tput + lat
    res.summary = summarize(tput, lat)
    res.summary["interrupted"] = bool(interrupted)
    if out:
        from ._output import OutputFolder
        folder = OutputFolder(out, "bench", params,
                              pinning={"writer_cpu": writer_cpu, "reader_cpu": reader_cpu})
        folder.save_json("slices", [s.as_dict() for s in res.slices])
        for name, arrs in rt.samples.items():
            folder.save_samples(name, roundtrip_ns=np.concatenate(arrs))
        folder.save_text("table", res.table())
        done = len({s.round for s in lat})
        folder.finish(res.summary, done, rounds, error=None)
    return res


def summarize(tput, lat):
    summ = {"throughput_mmsg_s": {}, "roundtrip_p50_ns": {}, "ratios": {}}
    for place, d in pl.medians_by_placement(tput).items():
        summ["throughput_mmsg_s"][place] = {k: {"median": v, "slices": n} for k, (v, n) in d.items()}
    for place, d in pl.medians_by_placement(lat).items():
        summ["roundtrip_p50_ns"][place] = {k: {"median": v, "slices": n} for k, (v, n) in d.items()}
    for label, sl, num, den in (("pyqueue/yardstick", tput, "pyqueue", "yardstick"),
                                ("py_batch/pyqueue", tput, "py_batch", "pyqueue"),
                                ("rt_each/pingpong", lat, "rt_each", "pingpong"),
                                ("rt_scan/pingpong", lat, "rt_scan", "pingpong")):
        summ["ratios"][label] = {p: {"median": e["median"], "rounds": e["rounds"],
                                     "ratios": e["ratios"]}
                                 for p, e in pl.ratios_by_placement(sl, num, den).items()}
    return summ


def format_summary(summary, params):
    lines = ["32-byte messages, writer CPU %d -> reader CPU %d; %d rounds of interleaved slices."
             % (params["writer_cpu"], params["reader_cpu"], params["rounds"]),
             "Placement: 'near'/'far' = one-way ping-pong probe below/above %.0f ns before AND after"
             " the slice; 'moved' slices are kept in the raw data but give no ratio." % params["split_ns"],
             "", "Throughput, M msg/s (median over slices of that placement):"]
    for place, d in sorted(summary["throughput_mmsg_s"].items()):
        lines.append("  %-6s " % place + "  ".join("%s %.2f (n=%d)" % (k, v["median"], v["slices"])
                                                    for k, v in sorted(d.items())))
    lines += ["", "Round trip p50 per slice (nearest-rank), ns; median over slices:"]
    for place, d in sorted(summary["roundtrip_p50_ns"].items()):
        lines.append("  %-6s " % place + "  ".join("%s %.0f (n=%d)" % (k, v["median"], v["slices"])
                                                    for k, v in sorted(d.items())))
    lines += ["", "Ratios within one round and one placement (median over rounds):"]
    for label, d in summary["ratios"].items():
        parts = ["%s %.2fx (%d rounds)" % (p, e["median"], len(e["ratios"]))
                 for p, e in sorted(d.items()) if e["median"] is not None]
        moved = sum(e["rounds"] for p, e in d.items() if p == "moved")
        lines.append("  %-18s %s%s" % (label, "  ".join(parts) or "not measured",
                                        "  (%d rounds moved)" % moved if moved else ""))
    return "\n".join(lines)
