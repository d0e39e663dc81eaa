"""pyqueue.lab: one function per experiment of DESIGN §6.

Each returns a result object with ``summary`` (a table), numpy sample arrays and
``to_json(path)``; ``load(path)`` reads any output folder back as that result object
(``to_pandas(result)`` turns its arrays into a DataFrame, ``summary_frame(result)`` its
table's numbers; ``load_output(path)`` gives the
folder's raw summary, environment and arrays).  The modules are
imported on first use so that ``import pyqueue.lab`` stays cheap.

    experiments/   one module per experiment, named after its command and its C loop
                   (burst-tail -> experiments/burst_tail.py -> csrc/lab/burst_tail.c)
    reports/       the summaries and tables an experiment prints; nothing there measures
    common/        what every experiment shares: the session (output folder, Ctrl-C,
                   progress, checkpoints), the status words, statistics, placement
"""
import importlib
from typing import TYPE_CHECKING

# public name -> (module, name in it)
_EXPORTS = {
    "burst_tail": ("experiments.burst_tail", "burst_tail"),
    "BurstTailParams": ("experiments.burst_tail", "BurstTailParams"),
    "load_burst_tail": ("experiments.burst_tail", "load"),
    "ownership": ("experiments.ownership", "ownership"),
    "OwnershipParams": ("experiments.ownership", "OwnershipParams"),
    "core_to_core": ("experiments.c2c", "core_to_core"),
    "CoreToCoreParams": ("experiments.c2c", "CoreToCoreParams"),
    "false_sharing": ("experiments.false_sharing", "false_sharing"),
    "FalseSharingParams": ("experiments.false_sharing", "FalseSharingParams"),
    "pipeline": ("experiments.pipeline", "pipeline"),
    "PipelineParams": ("experiments.pipeline", "PipelineParams"),
    "pacing": ("experiments.pacing", "pacing"),
    "drain_rate": ("experiments.pacing", "drain_rate"),
    "PacingParams": ("experiments.pacing", "PacingParams"),
    "DrainRateParams": ("experiments.pacing", "DrainRateParams"),
    "pacing_table": ("experiments.pacing_table", "pacing_table"),
    "PacingTableParams": ("experiments.pacing_table", "PacingTableParams"),
    "bench": ("experiments.bench", "bench"),
    "BenchParams": ("experiments.bench", "BenchParams"),
    "bench_xproc": ("experiments.bench_xproc", "bench_xproc"),
    "BenchXprocParams": ("experiments.bench_xproc", "BenchXprocParams"),
    "soak": ("experiments.soak", "soak"),
    "SoakParams": ("experiments.soak", "SoakParams"),
    "load": ("results", "load"),
    "to_pandas": ("results", "to_pandas"),
    "summary_frame": ("results", "summary_frame"),
    "load_array": ("results", "load_array"),
    "load_output": ("common.output", "load"),
}


if TYPE_CHECKING:                   # what a type checker sees; at run time, imported on use
    from .common.output import load as load_output  # noqa: F401
    from .experiments.bench import bench  # noqa: F401
    from .experiments.bench_xproc import bench_xproc  # noqa: F401
    from .experiments.burst_tail import BurstTailParams, burst_tail  # noqa: F401
    from .experiments.burst_tail import load as load_burst_tail  # noqa: F401
    from .experiments.c2c import core_to_core  # noqa: F401
    from .experiments.c2c import CoreToCoreParams  # noqa: F401
    from .experiments.false_sharing import false_sharing  # noqa: F401
    from .experiments.false_sharing import FalseSharingParams  # noqa: F401
    from .experiments.ownership import ownership  # noqa: F401
    from .experiments.ownership import OwnershipParams  # noqa: F401
    from .experiments.pacing import drain_rate, pacing  # noqa: F401
    from .experiments.pacing import DrainRateParams, PacingParams  # noqa: F401
    from .experiments.pacing_table import PacingTableParams, pacing_table  # noqa: F401
    from .experiments.pipeline import pipeline  # noqa: F401
    from .experiments.pipeline import PipelineParams  # noqa: F401
    from .experiments.soak import soak  # noqa: F401
    from .experiments.soak import SoakParams  # noqa: F401
    from .results import load, load_array, summary_frame, to_pandas  # noqa: F401


def __getattr__(name):
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(__name__ + "." + module), attr)
    raise AttributeError("module 'pyqueue.lab' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
