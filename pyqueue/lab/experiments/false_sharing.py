"""False sharing (DESIGN §6.3): two pinned threads increment their own
counter, on one cache line ("shared") and on lines 128 B apart ("padded"), in
alternating slices; the slowdown is shared / padded per round.  The C loop is
csrc/lab/false_sharing.c.

    import pyqueue.lab as lab
    f = lab.false_sharing(increments=1_000_000, rounds=2)
    print(f.text())

Its parameters are one list, FalseSharingParams; the c2c command runs it with
--false-sharing, on the pair of its --writer-cpu/--reader-cpu and for its --rounds."""
import json
from dataclasses import dataclass

import numpy as np

from .._lab import ffi, lib
from ..common import cloops, environment
from ..common import status as _status
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from pyqueue.table import render
from ..common.frames import ToPandas

__all__ = ["FalseSharingParams", "FalseSharingResult", "false_sharing"]


@dataclass(frozen=True)
class FalseSharingParams(Params):
    """The false-sharing demo's parameters (the c2c command's --false-sharing run)."""

    EXPERIMENT, COMMAND, FUNCTION = "false_sharing", "c2c", "false_sharing"
    ALIASES = {"cpus": ("writer_cpu", "reader_cpu")}

    increments: int = param(20_000_000, "increments per thread per slice", lo=1, hi=2**40,
                            group="false sharing (--false-sharing)")
    rounds: int = param(5, "rounds of a shared and a padded slice (order alternating)", lo=1,
                        quick=1)
    rmw: bool = param(False, "each increment a locked fetch_add (off: a relaxed load + store, "
                      "as pyqueue's single-writer counters)",
                      group="false sharing (--false-sharing)")
    writer_cpu: int = param(WRITER_CPU, "CPU of the first counter's thread", kind="cpu", lo=0,
                            group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the second counter's thread", kind="cpu", lo=0,
                            group="CPUs")

    def check(self):
        if self.writer_cpu == self.reader_cpu:
            raise ValueError("writer_cpu and reader_cpu must differ (two threads on one CPU "
                             "share no cache line between cores), got %d twice" % self.writer_cpu)


@dataclass
class FalseSharingResult(ToPandas):
    cpus: tuple
    increments: int
    rmw: bool
    ns_per_increment: dict        # "shared" / "padded" -> list per round (slower thread)
    slowdown: list                # shared / padded per round
    params: dict
    status: str = _status.COMPLETE
    summary: str = ""
    ticks_per_ns: float = None
    loadavg_start: list = None

    @property
    def samples(self):
        """{"false_sharing": {"shared_ns_per_increment", "padded_ns_per_increment"}}, per
        round: the arrays of the output folder."""
        n = len(self.slowdown)
        return {"false_sharing": {"%s_ns_per_increment" % k: np.asarray(v[:n])
                                  for k, v in self.ns_per_increment.items()}}

    def text(self, markdown=False):
        """The summary the command prints: a table of the rounds."""
        per = self.ns_per_increment
        rows = [["shared line (ns/increment)"] + ["%.2f" % x for x in per["shared"]],
                ["padded lines (ns/increment)"] + ["%.2f" % x for x in per["padded"]],
                ["slowdown (shared/padded)"] + ["%.2fx" % x for x in self.slowdown]]
        head = ["round"] + [str(i + 1) for i in range(max(len(r) for r in rows) - 1)]
        return ("False sharing, CPUs %d and %d, %s increments x %d per round; median slowdown "
                "%.2fx\n\n%s\n\nstatus: %s"
                % (self.cpus[0], self.cpus[1], "fetch_add" if self.rmw else "load+store",
                   self.increments, self.slowdown_median,
                   render(head, rows, markdown=markdown), self.status))

    @property
    def slowdown_median(self):
        return float(np.median(self.slowdown)) if self.slowdown else float("nan")

    def to_dict(self):
        return {"cpus": list(self.cpus), "increments": self.increments, "rmw": self.rmw,
                "ns_per_increment": self.ns_per_increment, "slowdown": self.slowdown,
                "slowdown_median": self.slowdown_median, "ticks_per_ns": self.ticks_per_ns,
                "loadavg_start": self.loadavg_start, "params": self.params,
                "status": self.status}

    def to_json(self, path):
        from ..common.output import to_jsonable
        with open(path, "w") as f:
            json.dump(to_jsonable(self.to_dict()), f, indent=1)


def _fs_once(cpu_a, cpu_b, increments, shared, rmw, tpn):
    res = ffi.new("pyq_false_sharing_result_t *")
    cloops.check(lib.pyq_false_sharing_run(cpu_a, cpu_b, increments, int(shared), int(rmw), res),
                 "false sharing on CPUs %d, %d" % (cpu_a, cpu_b))
    if res.counts[0] != increments or res.counts[1] != increments:
        raise RuntimeError("false sharing: counters %d, %d != %d increments"
                           % (res.counts[0], res.counts[1], increments))
    return max(res.ticks[0], res.ticks[1]) / tpn / increments


def false_sharing(params=None, *, out=None, overwrite=False, progress=True, **kwargs):
    """Two pinned threads increment their own counter ``increments`` times, the
    counters on one cache line ("shared") vs on lines 128 B apart ("padded").
    Slices alternate (order rotated per round); slowdown = shared / padded per
    round.  rmw: locked fetch_add instead of a relaxed load + store.  ``params``:
    a FalseSharingParams (None for the defaults) and/or its fields as keywords."""
    p = FalseSharingParams.of(params, **kwargs)
    params = p.to_json()
    cpus, increments, rounds, rmw = (p.writer_cpu, p.reader_cpu), p.increments, p.rounds, p.rmw
    tpn = cloops.ticks_per_ns()
    per = {"shared": [], "padded": []}
    res = FalseSharingResult(cpus, increments, rmw, per, [], params, ticks_per_ns=tpn,
                             loadavg_start=environment.loadavg())

    def record(folder, status, final):
        n = min(len(per["shared"]), len(per["padded"]))
        res.slowdown = [a / b for a, b in zip(per["shared"][:n], per["padded"][:n])]
        res.status = status
        res.summary = res.text()
        if folder is not None:
            folder.save_samples("false_sharing",
                                shared_ns_per_increment=np.asarray(per["shared"][:n]),
                                padded_ns_per_increment=np.asarray(per["padded"][:n]))
            if final:
                folder.save_text("summary.txt", res.summary + "\n")
        return res.to_dict()

    with Session("false_sharing", params, rounds, "rounds", record=record, out=out or None,
                 overwrite=overwrite, progress=progress, desc="false sharing",
                 bar_total=rounds * 2, bar_unit="slices",
                 pinning={"writer_cpu": cpus[0], "reader_cpu": cpus[1]}) as s:
        for r in range(rounds):
            order = ("shared", "padded") if r % 2 == 0 else ("padded", "shared")
            for kind in order:
                if s.stopping:
                    break
                per[kind].append(_fs_once(cpus[0], cpus[1], increments, kind == "shared",
                                          rmw, tpn))
                s.advance(1, status="round %d/%d %s" % (r + 1, rounds, kind))
            if s.stopping:
                break
            s.checkpoint(r + 1)
    return res
