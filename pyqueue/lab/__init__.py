"""pyqueue.lab: one function per experiment of SPEC §6.

Each returns a result object with ``summary`` (a table), numpy sample arrays and
``to_json(path)``.  The modules are imported on first use so that ``import
pyqueue.lab`` stays cheap.
"""
import importlib

_EXPERIMENTS = {
    "burst_tail": "pyqueue.lab.burst",
    "ownership": "pyqueue.lab.ownership",
    "core_to_core": "pyqueue.lab.c2c",
    "false_sharing": "pyqueue.lab.sharing",
    "pipeline": "pyqueue.lab.pipeline",
    "pacing": "pyqueue.lab.burst_pacing",
    "drain_rate": "pyqueue.lab.burst_pacing",
    "bench": "pyqueue.lab.bench",
    "soak": "pyqueue.lab.soak",
}


def __getattr__(name):
    if name in _EXPERIMENTS:
        return getattr(importlib.import_module(_EXPERIMENTS[name]), name)
    raise AttributeError("module 'pyqueue.lab' has no attribute %r" % name)


def __dir__():
    return sorted(list(globals()) + list(_EXPERIMENTS))
