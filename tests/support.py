"""What many tests share, importable as ``import support`` (pyproject's pytest
``pythonpath`` puts tests/ on sys.path).  Fixtures and skips live in conftest.py."""
import os

import pyqueue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The CPUs this process may run on, in order; tests that pin take them from here.
ALLOWED_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
TWO_CPUS = len(ALLOWED_CPUS) >= 2


def subprocess_env(**extra):
    """os.environ for a child Python that must import the pyqueue this test
    imports (also when the child runs outside the source tree)."""
    env = dict(os.environ, **extra)
    here = os.path.dirname(os.path.dirname(os.path.abspath(pyqueue.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env
