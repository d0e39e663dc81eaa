"""The ownership control of DESIGN §6.2 (the original burst study's third evidence).

No queue.  One worker thread, pinned to ``reader_cpu``, runs the same C function
(``pyq_business_query``: 8 dependent visits that modify random nodes of 48 KiB
of linked cache lines) on the same data, for ``queries`` queries per timed
window, after either

* **self**:  the worker warmed and modified all the data itself, or
* **other**: a helper thread pinned to ``writer_cpu`` warmed and modified it and
  handed it over (release/acquire; see csrc/lab/ownership.c).

Warm-up and hand-over are not timed.  A window's data and query stream depend on
(seed, window) only, so each window gives the same checksums in both arms; the
run checks it.  The arms run in short interleaved slices (self, other, other,
self, ...) with a timestamp per slice, because the host moves this VM's vCPUs
and cross-core costs drift over seconds.  With ``pmu=True`` every slice pair is
followed by a pair whose windows are bracketed by counter reads; the latency
table always comes from the counter-free slices.

    from pyqueue import lab
    r = lab.ownership(windows=2000)
    print(r)                    # the table, and how it was computed
    r.samples["other/window_ns"]
    lab.ownership(lab.OwnershipParams.quick())      # what --quick runs

Its parameters are one list, OwnershipParams, from which the CLI's flags, this
function's keywords, the output folder's JSON params and their checks all come.
"""
import json
import os
import time

import numpy as np

from dataclasses import dataclass

from pyqueue.errors import check
from .._lab import ffi, lib
from ..common import status as _status
from ..common.output import to_jsonable
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..common import placement as _placement
from ..reports import ownership as report
from ..reports.ownership import (ARMS, COUNTER_NAMES, HARDWARE_COUNTERS, NCOUNTERS,  # noqa: F401
                                 PS)
from ..common.frames import ToPandas

__all__ = ["ownership", "OwnershipParams", "OwnershipResult", "ARMS", "DEFAULT_SEED"]

_ARM_CODE = {"self": lib.PYQ_OWNERSHIP_SELF, "other": lib.PYQ_OWNERSHIP_OTHER}
DEFAULT_SEED = 0x0FDC1D457E3ECA21          # the original burst study's id


@dataclass(frozen=True)
class OwnershipParams(Params):
    """The ownership control's parameters (DESIGN §6.2); the helper writes (warms) the
    data, the timed worker reads it: writer_cpu and reader_cpu, 0 and 1 from every door."""

    EXPERIMENT, COMMAND, FUNCTION = "ownership", "ownership", "ownership"
    ALIASES = {"worker_cpu": "reader_cpu", "other_cpu": "writer_cpu",
               "placement_split_ns": "split_ns"}

    windows: int = param(10_000, "timed windows per arm per round", lo=1, hi=10**8, quick=1000)
    rounds: int = param(3, "rounds (percentiles per round, then the mean over rounds)", lo=1,
                        hi=1000)
    data_kib: int = param(48, "business data in KiB (48 KiB = 768 nodes of a cache line)",
                          lo=1, hi=1 << 20)
    queries: int = param(64, "business queries per timed window", lo=1, hi=1 << 20)
    groups: int = param(4, "timed groups each window is split into (a divisor of queries)",
                        lo=1, hi=lib.PYQ_OWNERSHIP_MAX_GROUPS)
    slice_windows: int = param(100, "windows per C call: one slice of one arm, the arms "
                               "interleaved (self, other, other, self, ...)", lo=1, hi=1 << 20,
                               quick=50)
    pmu: bool = param(False, "also run counter-bracketed slices (hardware counters where the "
                      "machine has a PMU, software counters otherwise)")
    seed: int = param(DEFAULT_SEED, "data and query seed, decimal or 0x hex (default: %#x, the "
                      "original study's id)" % DEFAULT_SEED, kind="seed", lo=0, hi=2**64 - 1)
    split_ns: float = param(_placement.DEFAULT_SPLIT_NS, "one-way ns of a slice's hand-over "
                            "probe below which the slice is 'near'", lo=0.0, lo_open=True,
                            hi=1e6, metavar="NS")
    writer_cpu: int = param(WRITER_CPU, "CPU of the helper that warms and modifies the data in "
                            "arm 'other' and hands it over", kind="cpu", lo=0,
                            cli_aliases=("--other-cpu",), group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the timed worker", kind="cpu", lo=0,
                            cli_aliases=("--worker-cpu",), group="CPUs")

    def __post_init__(self):
        # The reason before its symptom (a CPU the process may not use).
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            raise RuntimeError("the ownership control needs two CPUs (a worker and a helper "
                               "on another core); this process may run only on CPU %s"
                               % allowed[0])
        super().__post_init__()

    def check(self):
        if self.queries % self.groups:
            raise ValueError("groups must divide queries (queries=%d, groups=%d)"
                             % (self.queries, self.groups))
        if self.writer_cpu == self.reader_cpu:
            raise ValueError("writer_cpu and reader_cpu must differ (both are %d): the helper "
                             "hands the data over from another core" % self.writer_cpu)


class _Arrays:
    """One arm's samples in one mode, allocated by Python, filled by C."""

    def __init__(self, total, groups, counters):
        self.window_ns = np.zeros(total, np.uint64)
        self.group_ns = np.zeros((total, groups), np.uint64)
        self.checksum = np.zeros(total, np.uint64)
        self.data_checksum = np.zeros(total, np.uint64)
        self.worker_cpu = np.full((total, 2), -1, np.int32)
        self.helper_cpu = np.full(total, -1, np.int32)
        self.counters = np.zeros((total, NCOUNTERS), np.uint64) if counters else None
        self.probe_ns = np.zeros(total, np.uint64)
        self.done = 0

    def out_struct(self, start, n):
        """A pyq_ownership_out_t over rows [start, start+n); returns (struct, keepalive)."""
        keep = []

        def ptr(arr, ctype):
            view = arr[start:start + n]
            if not (view.flags.c_contiguous and view.flags.writeable) or view.shape[0] != n:
                raise AssertionError("sample view is not a writable contiguous block")
            p = ffi.cast(ctype + " *", ffi.from_buffer(view, require_writable=True))
            keep.append(p)
            return p

        out = ffi.new("pyq_ownership_out_t *")
        out.window_ns = ptr(self.window_ns, "uint64_t")
        out.group_ns = ptr(self.group_ns, "uint64_t")
        out.checksum = ptr(self.checksum, "uint64_t")
        out.data_checksum = ptr(self.data_checksum, "uint64_t")
        out.worker_cpu = ptr(self.worker_cpu, "int32_t")
        out.helper_cpu = ptr(self.helper_cpu, "int32_t")
        out.counters = ptr(self.counters, "uint64_t") if self.counters is not None else ffi.NULL
        out.probe_ns = ptr(self.probe_ns, "uint64_t")
        return out, keep

    def filled(self, windows):
        d = self.done
        out = {"window_ns": self.window_ns[:d], "group_ns": self.group_ns[:d],
               "checksum": self.checksum[:d], "data_checksum": self.data_checksum[:d],
               "worker_cpu": self.worker_cpu[:d], "helper_cpu": self.helper_cpu[:d],
               "probe_ns": self.probe_ns[:d], "round": (np.arange(d) // windows).astype(np.uint16)}
        if self.counters is not None:
            out["counters"] = self.counters[:d]
        return out


class OwnershipResult(ToPandas):
    """What ``ownership()`` returns: ``summary`` (dict), ``samples`` (numpy arrays
    keyed "<arm>/<name>", "pmu-<arm>/<name>" and "slices/<name>"), ``status``,
    ``table`` (text; also ``str(result)``) and ``to_json(path)``."""

    def __init__(self, params, summary, samples, status, table, folder=None):
        self.params, self.summary, self.samples = params, summary, samples
        self.status, self.table, self.folder = status, table, folder

    @property
    def complete(self):
        return _status.is_complete(self.status)

    def to_json(self, path):
        """Write params, status and summary (not the samples) as JSON to ``path``."""
        body = to_jsonable({"experiment": "ownership", "status": self.status,
                            "params": self.params, "summary": self.summary})
        with open(path, "w") as f:
            json.dump(body, f, indent=1, allow_nan=False)
            f.write("\n")
        return path

    def text(self, markdown=False):
        """The table the command prints (``markdown``: its tables in Markdown)."""
        return report.table(self.params, self.summary, self.status, markdown) if markdown \
            else self.table

    def __str__(self):
        return self.table

    def __repr__(self):
        return "<OwnershipResult %s>" % self.status


def ownership(params=None, *, out=None, overwrite=False, progress=True, **kwargs):
    """Run the ownership control: ``params`` (an OwnershipParams, None for the
    defaults) and/or its fields as keywords; returns an :class:`OwnershipResult`.

    windows: timed windows per arm per round; rounds: rounds (percentiles are
    taken per round, then averaged); data_kib: business data (48 KiB = 768
    nodes); queries / groups: queries per timed window and the timed groups it
    is split into; slice_windows: windows per C call (one slice of one arm);
    pmu: also run counter-bracketed slices (cycles, instructions, L1D misses
    where the machine has a PMU; software counters otherwise); writer_cpu: the
    helper, reader_cpu: the timed worker; out: write the output folder (DESIGN
    §6.8) there.  The first Ctrl-C stops after the current slice and leaves a
    valid partial result/folder; a second aborts.
    """
    p = OwnershipParams.of(params, **kwargs)
    params = p.to_json()
    windows, rounds, groups = p.windows, p.rounds, p.groups
    slice_windows, pmu = p.slice_windows, p.pmu
    worker_cpu, other_cpu = p.reader_cpu, p.writer_cpu

    cfg = ffi.new("pyq_ownership_config_t *", {
        "worker_cpu": worker_cpu, "other_cpu": other_cpu, "data_bytes": p.data_kib * 1024,
        "seed": p.seed, "queries": p.queries, "groups": groups})
    handle = ffi.new("pyq_ownership_t **")
    check(lib.pyq_ownership_create(cfg, handle), "ownership: could not set up the experiment")
    o = ffi.gc(handle[0], lib.pyq_ownership_destroy)

    total = rounds * windows
    modes = ("wall", "pmu") if pmu else ("wall",)
    data = {(m, a): _Arrays(total, groups, m == "pmu") for m in modes for a in ARMS}
    slices = []
    t_start = time.monotonic_ns()
    res = OwnershipResult(params, {}, {}, None, "")

    def record(folder, status, final):
        summary = report.summarize(params, data, slices)
        if folder is not None:
            _save(folder, data, slices, windows)
        if final:
            res.summary, res.status = summary, status
            res.table = report.table(params, summary, status)
            if folder is not None:
                folder.save_text("table.md", res.table + "\n")
                res.folder = folder.path
        return summary

    with Session("ownership", params, total, "windows per arm", record=record, out=out,
                 overwrite=overwrite, progress=progress,
                 bar_total=total * len(data), bar_unit="windows",
                 pinning={"writer_cpu": other_cpu, "reader_cpu": worker_cpu}) as s:
        step = 0
        for r in range(rounds):
            for first in range(0, windows, slice_windows):
                n = min(slice_windows, windows - first)
                order = ARMS if step % 2 == 0 else ARMS[::-1]   # self/other, other/self, ...
                step += 1
                for mode in modes:
                    for arm in order:
                        if s.stopping:
                            break
                        slices.append(_run_slice(o, data[mode, arm], mode, arm, r,
                                                 r * windows + first, n, t_start))
                        s.done = _done(data)
                        s.advance(n, status="round %d/%d %s" % (r + 1, rounds, arm))
                if s.stopping:
                    break
            if s.stopping:
                break
            if r + 1 < rounds:
                s.checkpoint()
    for (mode, arm), arrays in data.items():
        prefix = arm if mode == "wall" else "pmu-" + arm
        for name, arr in arrays.filled(windows).items():
            res.samples["%s/%s" % (prefix, name)] = arr
    for name, arr in _slice_arrays(slices).items():
        res.samples["slices/" + name] = arr
    return res


def _done(data):
    return min(a.done for a in data.values())


def _run_slice(o, arrays, mode, arm, rnd, first_window, n, t_start):
    c_out, keep = arrays.out_struct(arrays.done, n)
    sl = ffi.new("pyq_ownership_slice_t *")
    rc = lib.pyq_ownership_run(o, _ARM_CODE[arm], first_window, n,
                               lib.PYQ_PERF_ALL if mode == "pmu" else 0, c_out, sl)
    del keep
    if rc:
        check(rc, "ownership: slice failed", {rc: (ValueError, "ownership: could not pin a "
                                                   "thread to CPU %d (is it online and allowed?)"
                                                   % sl.failed_cpu)}
              if sl.failed_cpu >= 0 else None)
    lo, arrays.done = arrays.done, arrays.done + sl.windows
    w = arrays.window_ns[lo:arrays.done]
    return {"rows": (lo, arrays.done),
            "probe_one_way_ns": float(np.median(arrays.probe_ns[lo:arrays.done])) / 2,
            "round": rnd, "arm": arm, "mode": mode, "first_window": first_window,
            "windows": int(sl.windows), "start_ns": int(sl.start_ns) - t_start,
            "end_ns": int(sl.end_ns) - t_start, "median_ns": float(np.median(w)),
            "perf_read_ns": float(sl.perf_read_ns), "perf_status": list(sl.perf_status),
            "ticks_per_ns": float(sl.ticks_per_ns)}


def _slice_arrays(slices):
    return {"round": np.array([s["round"] for s in slices], np.uint16),
            "arm": np.array([ARMS.index(s["arm"]) for s in slices], np.uint8),
            "pmu": np.array([s["mode"] == "pmu" for s in slices], np.uint8),
            "first_window": np.array([s["first_window"] for s in slices], np.uint64),
            "windows": np.array([s["windows"] for s in slices], np.uint32),
            "start_ns": np.array([s["start_ns"] for s in slices], np.int64),
            "end_ns": np.array([s["end_ns"] for s in slices], np.int64),
            "median_window_ns": np.array([s["median_ns"] for s in slices], np.float64),
            "probe_one_way_ns": np.array([s["probe_one_way_ns"] for s in slices], np.float64),
            # codes of placement.TAGS; 3 = untagged
            "placement": np.array([_placement.TAGS.index(s["placement"]) if s.get("placement")
                                   else len(_placement.TAGS) for s in slices], np.uint8)}


def _save(folder, data, slices, windows):
    for (mode, arm), arrays in data.items():
        folder.save_samples(arm if mode == "wall" else "pmu-" + arm, **arrays.filled(windows))
    folder.save_samples("slices", **_slice_arrays(slices))
