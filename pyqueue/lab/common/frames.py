"""A result as pandas DataFrames (docs/OUTPUT.md): ``to_pandas()``, every sample array
in one long frame with its axes named; ``summary_frame()``, the printed table's own
numbers, one row per group x round x statistic.  Every experiment's result class
takes both from here (ToPandas); pyqueue.lab.results, which loads any experiment's
output folder, re-exports them.  Nothing here imports an experiment."""
import os
from typing import Any, Tuple, Union

from . import output

__all__ = ["AXES", "EXPERIMENT_OF", "axes_of", "to_pandas", "summary_frame", "ToPandas",
           "load_array", "SUMMARY_COLUMNS"]

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
EXPERIMENT_OF = {"BurstTailResult": "burst_tail", "BenchResult": "bench",
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
    experiment = getattr(result, "experiment", None) or EXPERIMENT_OF.get(type(result).__name__)
    frames, columns = [], []
    # Sorted, so that a result fresh from its run and the same result loaded from
    # its folder (whose index is sorted) give the same frame.
    for group, name, arr in sorted(_arrays(result), key=lambda t: (t[0], t[1])):
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


# ---- the table's numbers as a DataFrame ------------------------------------------------

SUMMARY_COLUMNS = ("group", "figure", "statistic", "round", "value", "samples", "reported",
                   "reason", "mean_over_rounds")


def _percentile_blocks(result, experiment):
    """(group, figure, RoundPercentiles dict) of every table of per-round percentiles
    ``result`` holds (a fresh result's RoundPercentiles objects, or their JSON form)."""
    summary = getattr(result, "summary", None)
    if experiment == "burst_tail":
        for name, d in ((summary or {}).get("classes") or {}).items():
            for fig in ("latency_ns_per_query", "first_group_latency_ns_per_query"):
                if d.get(fig):
                    yield name, fig, d[fig]
    elif experiment == "pipeline":
        for name, d in (getattr(result, "table", None) or {}).items():
            for fig in ("latency_us", "producer_lateness_us"):
                if d.get(fig) is not None:
                    yield name, fig, d[fig]
    elif experiment == "ownership":
        for arm, d in ((summary or {}).get("arms") or {}).items():
            for fig in ("window_ns", "group_mean_ns_per_query"):
                if d.get(fig):
                    yield arm, fig, d[fig]
    else:
        raise ValueError("summary_frame() knows burst_tail, pipeline and ownership (the "
                         "experiments whose tables are per-round percentiles), not %r"
                         % (experiment,))


def summary_frame(result: Any) -> Any:
    """The numbers the printed table rests on: one row per group (class, variant,
    arm) x figure x round x statistic, beside to_pandas()'s raw samples.

    ``value`` is the round's nearest-rank percentile
    (NaN where not reported: fewer than 10 samples beyond it; ``reason`` says why),
    ``samples`` in that round, and ``mean_over_rounds``, the table's figure -- the
    mean of the reported rounds, which ``groupby([...]).value.mean()`` gives back.
    For burst-tail (figures ``latency_ns_per_query``, ``first_group_latency_ns_per_query``),
    pipeline (``latency_us``, ``producer_lateness_us``) and ownership (``window_ns``,
    ``group_mean_ns_per_query``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("summary_frame() needs pandas: pip install pandas "
                          "(or pyqueue-lab[pandas])") from None
    experiment = getattr(result, "experiment", None) or EXPERIMENT_OF.get(type(result).__name__)
    rows = []
    for group, figure, block in _percentile_blocks(result, experiment):
        d = block.to_dict() if hasattr(block, "to_dict") else block
        why = d.get("not_reported") or {}
        for i, label in enumerate(d["labels"]):
            mean = d["mean"][i]
            for r, per in enumerate(d["per_round"]):
                v = per[i] if i < len(per) else None
                rows.append((group, figure, label, r, _float(v), int(d["counts"][r]),
                             _float(v) == _float(v), None if _float(v) == _float(v) else
                             (why.get(label) or ("not measured" if not d["counts"][r] else
                                                 "too few samples in this round")),
                             _float(mean)))
    df = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    df["round"] = df["round"].astype("Int64")
    return df


def _float(v):
    return float("nan") if v is None else float(v)


class ToPandas:
    """``result.to_pandas()`` and ``result.summary_frame()``: the mixin of every
    experiment's result class."""

    def to_pandas(self):
        """The sample arrays as one long DataFrame (see pyqueue.lab.to_pandas)."""
        return to_pandas(self)

    def summary_frame(self):
        """The table's numbers, one row per group x round x statistic (see
        pyqueue.lab.summary_frame)."""
        return summary_frame(self)


