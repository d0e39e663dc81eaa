"""pyqueue.lab.load(path): any experiment's output folder back as the result object the
experiment returned (its index verified first), ``result.to_pandas()`` for its
sample arrays, one row per sample with its axes named, and ``result.summary_frame()``
for the numbers its table prints, one row per group x round x statistic.  docs/OUTPUT.md names every
file, field, unit and array axis.

A loaded result carries what the folder holds: the parameters, the figures, the
sample arrays under the names they were saved with, the status and the printed
table.  Objects a run keeps in memory come back rebuilt from the folder: bench's
slices as placement Slices (from slices.json), pacing's runs as Bursts (runs.json
plus each run's arrays) whose producer and consumer are the ``SavedThread`` records
that runs.json keeps of a thread.
"""
import math
import os
import types
from dataclasses import dataclass
from typing import Any, Union

from .common import output
from .common.frames import (AXES, ToPandas, axes_of, load_array, summary_frame,  # noqa: F401
                            to_pandas)

__all__ = ["load", "to_pandas", "summary_frame", "load_array", "axes_of", "ToPandas",
           "SavedThread"]


def _with_to_pandas(res):
    # A result class defined outside this package's ownership of the mixin still
    # answers .to_pandas() and .summary_frame() when it comes from load().
    if not hasattr(res, "to_pandas"):
        res.to_pandas = types.MethodType(to_pandas, res)
    if not hasattr(res, "summary_frame"):
        res.summary_frame = types.MethodType(summary_frame, res)
    return res


# ---- the loaders, one per experiment --------------------------------------------

def _text(folder, *names):
    """The first of ``names`` the folder holds, as text ("" for none); read as every
    file of an output folder is, untrusted (output.read_text)."""
    for name in names:
        try:
            return output.read_text(folder, name).rstrip("\n")
        except FileNotFoundError:
            continue
    return ""


def _json(folder, name, default):
    """The body of an extra JSON file (OutputFolder.save_json: {"data", "notes"})."""
    try:
        body = output.read_json(folder, name)
    except FileNotFoundError:
        return default
    if not isinstance(body, dict) or "data" not in body:
        raise ValueError("%s: not an extra JSON file of this format" % name)
    return body["data"]


def _burst_tail(d):
    from .experiments.burst_tail import BurstTailResult
    return BurstTailResult(d.params, d.results or {}, d.samples, d.status, str(d.path))


def _ownership(d):
    from .experiments.ownership import OwnershipResult
    samples = {"%s/%s" % (g, n): a for g, arrays in d.samples.items() for n, a in arrays.items()}
    return OwnershipResult(d.params, d.results, samples, d.status,
                           _text(d.path, "table.txt", "table.md"), folder=str(d.path))


def _c2c(d):
    from .experiments.c2c import CoreToCoreResult
    r = d.results
    return CoreToCoreResult(cpus=r.get("cpus", []), relations=r.get("relations", []),
                            ticks_per_ns=r.get("ticks_per_ns"), matrix=r.get("matrix", {}),
                            queue=r.get("queue", {}), over_time=r.get("over_time", {}),
                            params=d.params, samples=d.samples, status=d.status,
                            summary=_text(d.path, "summary.txt"),
                            timer_step_ticks=r.get("timer_step_ticks", 1),
                            topology=r.get("topology", {}), loadavg_start=r.get("loadavg_start"))


def _false_sharing(d):
    from .experiments.false_sharing import FalseSharingResult
    r = d.results
    p = d.params
    return FalseSharingResult(cpus=tuple(r.get("cpus", (p.get("writer_cpu"), p.get("reader_cpu")))),
                              increments=r.get("increments", p.get("increments")),
                              rmw=r.get("rmw", p.get("rmw")),
                              ns_per_increment=r.get("ns_per_increment", {}),
                              slowdown=r.get("slowdown", []), params=p, status=d.status,
                              summary=_text(d.path, "summary.txt"),
                              ticks_per_ns=r.get("ticks_per_ns"),
                              loadavg_start=r.get("loadavg_start"))


def _pipeline(d):
    from .experiments.pipeline import PipelineResult
    r = d.results
    return PipelineResult(params=d.params,
                          latency_ns={v: a["latency_ns"] for v, a in d.samples.items()},
                          lateness_ns={v: a["producer_lateness_ns"] for v, a in d.samples.items()},
                          slices=r.get("slices", {}), table=r.get("table", {}), status=d.status,
                          summary=_text(d.path, "summary.txt"), samples=d.samples,
                          variant_specs=r.get("variant_specs", {}),
                          loadavg_start=r.get("loadavg_start"))


@dataclass
class SavedThread:
    """What runs.json keeps of a run's producer or consumer thread (a
    pyqueue.lab.runtime.threads.ThreadResult while the run is in memory)."""
    policy: str
    cpu_start: int
    cpu_end: int
    cpu_changes: int = 0
    full_waits: int = 0


def _burst(meta, arrays):
    """A pacing run (common/pacing_rig.Burst) from its runs.json entry and arrays."""
    from .common.pacing_rig import Burst
    producer = SavedThread(meta.get("producer_policy"), *meta["producer_cpu"],
                           full_waits=meta.get("full_waits", 0))
    consumer = SavedThread(meta.get("consumer_policy"), *meta["consumer_cpu"],
                           cpu_changes=meta.get("consumer_cpu_changes", 0))
    return Burst(kind=meta["kind"], label=meta["label"], round=meta["round"], n=meta["n"],
                 rate=meta["rate"], target_s=meta["target_s"], utc=meta["utc"],
                 scheduled_ns=arrays["scheduled_ns"], offer_ns=arrays["offer_ns"],
                 dequeue_ns=arrays["dequeue_ns"], producer=producer, consumer=consumer,
                 metrics=meta.get("metrics", {}))


def _pacing(d):
    from .common import status as _status
    from .experiments.pacing import DrainRateParams, DrainResult, PacingResult
    runs = [_burst(m, d.samples[m["label"]]) for m in _json(d.path, "runs.json", [])
            if m["label"] in d.samples]
    table = _text(d.path, "table.txt")
    if d.summary.get("experiment") == "drain_rate":
        return DrainResult(params=d.params, results=d.results, summary=table, status=d.status,
                           runs=runs)
    p = d.params
    for t in d.results.get("targets") or ():
        # summary.json keeps an unbounded P_max (no pacing needed) as null.
        for k in ("p_max", "p_over_d"):
            if k in t and t[k] is None:
                t[k] = math.inf
    # The drain phase's parameters: pacing's that are DrainRateParams' too, as the run kept them.
    drain = DrainResult(params={k: p[k] for k in DrainRateParams.field_names() if k in p},
                        results=d.results.get("drain", {}),
                        runs=[b for b in runs if b.kind == "drain"])
    drain.status = _status.final(len(drain.runs), p["drain_reps"] * len(p["drain_sizes"]), "runs")
    # table.txt is the drain rate's table, a blank line, then the paced bursts' (which
    # begins "Paced bursts"): the saved text, not one recomputed from JSON (no inf there).
    drain.summary, sep, paced = table.partition("\n\nPaced bursts")
    return PacingResult(params=p, results=d.results, summary=table, status=d.status, drain=drain,
                        paced_summary=(sep + paced).lstrip("\n"),
                        paced=[b for b in runs if b.kind == "paced"],
                        checks=[b for b in runs if b.kind == "check"],
                        streams=[b for b in runs if b.kind == "stream"])


def _soak(d):
    from .experiments.soak import SoakResult
    r = d.results
    res = SoakResult(params=d.params, status=d.status, configs=r.get("configs", []))
    for key, value in (r.get("summary") or {}).items():
        if hasattr(res, key) and not callable(getattr(type(res), key, None)) \
                and not isinstance(getattr(type(res), key, None), property):
            setattr(res, key, value)
    return res


def _bench(d):
    from .common.placement import Slice
    from .experiments.bench import RUN_KEYS, BenchResult
    params, summary = dict(d.params), dict(d.results)
    # A folder written before BenchParams kept what the run measured in its params
    # (and the folder's path as params["out"]): the summary's now.
    for key in RUN_KEYS:
        if key in params:
            summary.setdefault(key, params.pop(key))
    params.pop("out", None)
    res = BenchResult(params=params, peers=summary.get("peers", {}),
                      slices=[Slice(**s) for s in _json(d.path, "slices.json", [])],
                      summary=summary, status=d.status, out=str(d.path))
    res.samples = d.samples
    return res


def _bench_xproc(d):
    from .common.placement import Slice
    from .experiments.bench_xproc import BenchXprocResult
    params, summary = dict(d.params), dict(d.results)
    if "wake_gap_ns" in params:     # a folder written before BenchXprocParams
        summary.setdefault("wake_gap_ns", params.pop("wake_gap_ns"))
    res = BenchXprocResult(params)
    res.summary, res.status, res.folder = summary, d.status, str(d.path)
    res.slices = [Slice(**s) for s in _json(d.path, "slices.json", [])]
    res.samples = d.samples
    return res


_LOADERS = {"burst_tail": _burst_tail, "ownership": _ownership, "core_to_core": _c2c,
            "false_sharing": _false_sharing, "pipeline": _pipeline, "pacing": _pacing,
            "drain_rate": _pacing, "soak": _soak, "bench": _bench,
            "bench-xproc": _bench_xproc}


def load(path: Union[str, "os.PathLike[str]"], check: bool = True) -> Any:
    """The result object of the experiment whose output folder is ``path``.

    The index is verified first (``check=False`` loads a damaged folder anyway);
    a partial folder (interrupted run) loads too, with its status.  Raises
    ValueError naming the problems, or the experiment it does not know.
    """
    d = output.load(path, samples=True, check=check)
    experiment = d.summary.get("experiment")
    if experiment not in _LOADERS:
        raise ValueError("%s: %s: an output folder of %r, which load() does not know (it knows "
                         "%s)" % (output.INVALID, path, experiment, ", ".join(sorted(_LOADERS))))
    try:
        res = _with_to_pandas(_LOADERS[experiment](d))
        res.output_folder = str(d.path)    # where it came from (its environment.json too)
        return res
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        # A summary or runs.json edited by hand: one error, whatever field is off.
        raise ValueError("%s: %s: %s %s" % (output.INVALID, path, type(e).__name__, e)) from e
