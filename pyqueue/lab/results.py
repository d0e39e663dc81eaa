"""pyqueue.lab.load(path): any experiment's output folder back as the result object the
experiment returned (its index verified first), and ``result.to_pandas()`` for its
sample arrays, one row per sample with its axes named.  docs/OUTPUT.md names every
file, field, unit and array axis.

A loaded result carries what the folder holds: the parameters, the figures, the
sample arrays under the names they were saved with, the status and the printed
table.  Objects a run keeps in memory come back rebuilt from the folder: bench's
slices as placement Slices (from slices.json), pacing's runs as Bursts (runs.json
plus each run's arrays) whose producer and consumer are the ``SavedThread`` records
that runs.json keeps of a thread.
"""
import json
import math
import os
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Tuple, Union

from .common import output

__all__ = ["load", "to_pandas", "load_array", "axes_of", "ToPandas", "SavedThread"]

# The axes of every saved array, per experiment (docs/OUTPUT.md); "*" is the rest of
# that experiment's arrays.  An array not listed here gets axis0, axis1, ...
AXES = {
    "burst_tail": {"group_ns": ("round", "window", "group"),
                   "group_ticks": ("round", "window", "group"),
                   "windows_done": ("round",), "*": ("round", "window")},
    "bench": {"roundtrip_ns": ("trip",)},
    "bench-xproc": {"*": ("sample",)},
    "core_to_core": {"round_lengths": ("round",), "*": ("round_trip",)},
    "ownership": {"group_ns": ("window", "group"), "worker_cpu": ("window", "point"),
                  "counters": ("window", "counter"), "*": ("window",)},
    "ownership/slices": {"*": ("slice",)},
    "pacing": {"*": ("message",)},
    "drain_rate": {"*": ("message",)},
    "false_sharing": {"*": ("round",)},
    "pipeline": {"slice_lengths": ("slice",), "*": ("message",)},
}
# What each result class is the result of, for a result made by running an experiment.
_EXPERIMENT_OF = {"BurstTailResult": "burst_tail", "BenchResult": "bench",
                  "CoreToCoreResult": "core_to_core", "FalseSharingResult": "false_sharing",
                  "OwnershipResult": "ownership", "PipelineResult": "pipeline",
                  "SoakResult": "soak", "PacingResult": "pacing", "DrainResult": "drain_rate",
                  "BenchXprocResult": "bench-xproc"}


def load_array(path: Union[str, "os.PathLike[str]"]) -> Any:
    """One ``.npy.gz`` sample file as a numpy array.  ``numpy.load`` cannot read it
    directly (it is gzip-compressed, and numpy then guesses 'pickled data')."""
    return output.load_array(path)


# ---- the arrays as a DataFrame ---------------------------------------------------

def axes_of(experiment: str, group: str, name: str, ndim: int) -> Tuple[str, ...]:
    """The names of the axes of array ``name`` of ``group`` in an ``experiment``'s
    output (docs/OUTPUT.md), ``ndim`` of them."""
    table = AXES.get("%s/%s" % (experiment, group)) or AXES.get(experiment, {})
    axes = table.get(name) or table.get("*") or ()
    if len(axes) != ndim:
        axes = tuple("axis%d" % i for i in range(ndim))
    return axes


def _arrays(result):
    """(group, name, array) for every sample array of ``result``: nested
    {group: {name: array}} or flat {"group/name": array} (ownership)."""
    for key, value in (getattr(result, "samples", None) or {}).items():
        if isinstance(value, dict):
            for name, arr in value.items():
                if arr is not None:
                    yield key, name, arr
        else:
            group, _, name = key.rpartition("/")
            yield group, name, value


def to_pandas(result: Any) -> Any:
    """The sample arrays of ``result`` as one long pandas DataFrame: columns
    ``group`` (a class, variant, arm, run ...), ``name`` (the array), one column per
    axis of the arrays (``round``, ``window``, ``group_index`` for burst-tail's
    group axis, ``message``, ... as docs/OUTPUT.md names them; empty where an array
    has no such axis) and ``value``.  pandas is an optional dependency
    (``pip install pyqueue-lab[pandas]``), imported only here."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas "
                          "(or pyqueue-lab[pandas])") from None
    import numpy as np
    experiment = getattr(result, "experiment", None) or _EXPERIMENT_OF.get(type(result).__name__)
    frames, columns = [], []
    for group, name, arr in _arrays(result):
        arr = np.asarray(arr)
        # "group" is already the column of the class / variant / arm.
        axes = [a if a != "group" else "group_index"
                for a in axes_of(experiment, group, name, arr.ndim)]
        columns += [a for a in axes if a not in columns]
        index = np.indices(arr.shape).reshape(arr.ndim, -1) if arr.ndim else np.zeros((0, 1))
        frame = {"group": group, "name": name}
        frame.update({a: index[i] for i, a in enumerate(axes)})
        frame["value"] = arr.ravel()
        frames.append(pd.DataFrame(frame))
    if not frames:
        return pd.DataFrame(columns=["group", "name", "value"])
    df = pd.concat(frames, ignore_index=True)
    for a in columns:                      # an axis an array lacks: <NA>, not a float NaN
        df[a] = df[a].astype("Int64")
    return df[["group", "name"] + columns + ["value"]]


class ToPandas:
    """``result.to_pandas()``: the mixin of every experiment's result class."""

    def to_pandas(self):
        """The sample arrays as one long DataFrame (see pyqueue.lab.to_pandas)."""
        return to_pandas(self)


def _with_to_pandas(res):
    # A result class defined outside this package's ownership of the mixin still
    # answers .to_pandas() when it comes from load().
    if not hasattr(res, "to_pandas"):
        res.to_pandas = types.MethodType(to_pandas, res)
    return res


# ---- the loaders, one per experiment --------------------------------------------

def _text(folder, *names):
    for name in names:
        p = Path(folder) / name
        if p.is_file():
            return p.read_text().rstrip("\n")
    return ""


def _json(folder, name, default):
    """The body of an extra JSON file (OutputFolder.save_json: {"data", "notes"})."""
    p = Path(folder) / name
    return json.loads(p.read_text())["data"] if p.is_file() else default


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
                            summary=_text(d.path, "summary.txt"))


def _false_sharing(d):
    from .experiments.false_sharing import FalseSharingResult
    r = d.results
    return FalseSharingResult(cpus=tuple(r.get("cpus", d.params.get("cpus", ()))),
                              increments=r.get("increments", d.params.get("increments")),
                              rmw=r.get("rmw", d.params.get("rmw")),
                              ns_per_increment=r.get("ns_per_increment", {}),
                              slowdown=r.get("slowdown", []), params=d.params, status=d.status,
                              summary=_text(d.path, "summary.txt"))


def _pipeline(d):
    from .experiments.pipeline import PipelineResult
    r = d.results
    return PipelineResult(params=d.params,
                          latency_ns={v: a["latency_ns"] for v, a in d.samples.items()},
                          lateness_ns={v: a["producer_lateness_ns"] for v, a in d.samples.items()},
                          slices=r.get("slices", {}), table=r.get("table", {}), status=d.status,
                          summary=_text(d.path, "summary.txt"), samples=d.samples)


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
    from .experiments.pacing import DrainResult, PacingResult
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
    common = {k: p[k] for k in ("size", "work_ns", "producer_cpu", "consumer_cpu",
                                "fifo_priority", "verify", "queue") if k in p}
    drain = DrainResult(params=dict(common, sizes=p.get("drain_sizes"), reps=p.get("drain_reps")),
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
    from .experiments.bench import BenchResult
    res = BenchResult(params=d.params, peers=d.results.get("peers", {}),
                      slices=[Slice(**s) for s in _json(d.path, "slices.json", [])],
                      summary=d.results, status=d.status)
    res.samples = d.samples
    return res


def _bench_xproc(d):
    from .common.placement import Slice
    from .experiments.bench_xproc import BenchXprocResult
    res = BenchXprocResult(d.params)
    res.summary, res.status, res.folder = d.results, d.status, str(d.path)
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
        return _with_to_pandas(_LOADERS[experiment](d))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        # A summary or runs.json edited by hand: one error, whatever field is off.
        raise ValueError("%s: %s: %s %s" % (output.INVALID, path, type(e).__name__, e)) from e
