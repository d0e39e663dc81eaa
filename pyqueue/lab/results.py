"""pyqueue.lab.load(path): any experiment's output folder back as the result object the
experiment returned (its index verified first), and ``to_pandas(result)`` for its
sample arrays.  docs/OUTPUT.md names every file, field, unit and array axis.

A loaded result carries what the folder holds: the summary dict, the sample
arrays under the names they were saved with, the status and the printed table.
What a run keeps only in memory (bench's per-slice records as objects, pacing's
Burst objects) comes back as the plain dicts of slices.json / runs.json.
"""
import json
from pathlib import Path

from .common import output

__all__ = ["load", "to_pandas", "load_array"]


def load_array(path):
    """One ``.npy.gz`` sample file as a numpy array.  ``numpy.load`` cannot read it
    directly (it is gzip-compressed, and numpy then guesses 'pickled data')."""
    return output.load_array(path)


def _text(folder, *names):
    for name in names:
        p = Path(folder) / name
        if p.is_file():
            return p.read_text().rstrip("\n")
    return ""


def _json(folder, name, default):
    p = Path(folder) / name
    return json.loads(p.read_text()) if p.is_file() else default


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
    res = PipelineResult(params=d.params,
                         latency_ns={v: a["latency_ns"] for v, a in d.samples.items()},
                         lateness_ns={v: a["producer_lateness_ns"] for v, a in d.samples.items()},
                         slices=r.get("slices", {}), table=r.get("table", {}), status=d.status,
                         summary=_text(d.path, "summary.txt"))
    res.samples = d.samples              # every array under its saved name, slice_lengths too
    return res


def _pacing(d):
    from .experiments.pacing import DrainResult, PacingResult
    cls = PacingResult if d.summary.get("experiment") == "pacing" else DrainResult
    res = cls(params=d.params, results=d.results, summary=_text(d.path, "table.txt"),
              status=d.status)
    res.samples = d.samples
    res.run_records = _json(d.path, "runs.json", [])
    return res


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
    from .experiments.bench import BenchResult
    res = BenchResult(params=d.params, peers=d.results.get("peers", {}), slices=[],
                      summary=d.results, status=d.status)
    res.samples = d.samples
    res.slice_records = _json(d.path, "slices.json", [])
    return res


_LOADERS = {"burst_tail": _burst_tail, "ownership": _ownership, "core_to_core": _c2c,
            "false_sharing": _false_sharing, "pipeline": _pipeline, "pacing": _pacing,
            "drain_rate": _pacing, "soak": _soak, "bench": _bench}


def load(path, check=True):
    """The result object of the experiment whose output folder is ``path``.

    The index is verified first (``check=False`` loads a damaged folder anyway);
    a partial folder (interrupted run) loads too, with its status.  Raises
    ValueError naming the problems, or the experiment it does not know.
    """
    d = output.load(path, samples=True, check=check)
    experiment = d.summary.get("experiment")
    if experiment not in _LOADERS:
        raise ValueError("%s: an output folder of %r, which load() does not know (it knows %s)"
                         % (path, experiment, ", ".join(sorted(_LOADERS))))
    return _LOADERS[experiment](d)


def to_pandas(result):
    """The sample arrays of ``result`` as one long pandas DataFrame: columns
    ``group``, ``name``, ``index`` (the flat position in the array) and ``value``.
    pandas is an optional dependency (``pip install pyqueue-lab[pandas]``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas "
                          "(or pyqueue-lab[pandas])") from None
    import numpy as np
    samples = getattr(result, "samples", None) or {}
    frames = []
    for group, arrays in samples.items():
        if not isinstance(arrays, dict):                 # ownership: "group/name" -> array
            group, name = group.split("/", 1) if "/" in group else ("", group)
            arrays = {name: samples[group + "/" + name] if group else samples[name]}
        for name, arr in arrays.items():
            flat = np.asarray(arr).ravel()
            frames.append(pd.DataFrame({"group": group, "name": name,
                                        "index": np.arange(flat.size), "value": flat}))
    if not frames:
        return pd.DataFrame(columns=["group", "name", "index", "value"])
    return pd.concat(frames, ignore_index=True)
