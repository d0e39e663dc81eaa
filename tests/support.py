"""What many tests share, importable as ``import support`` (pyproject's pytest
``pythonpath`` puts tests/ on sys.path).  Fixtures and skips live in conftest.py."""
import json
import os
import signal
import time

import pyqueue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The CPUs this process may run on, in order; tests that pin take them from here.
ALLOWED_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
TWO_CPUS = len(ALLOWED_CPUS) >= 2


def has_clflushopt():
    """Whether this CPU has CLFLUSHOPT (the reader's block flush, DESIGN §3.10):
    where it has not, the queue flushes nothing and counts nothing."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " clflushopt" in line for line in f)
    except OSError:
        return False


def subprocess_env(**extra):
    """os.environ for a child Python that must import the pyqueue this test
    imports (also when the child runs outside the source tree)."""
    env = dict(os.environ, **extra)
    here = os.path.dirname(os.path.dirname(os.path.abspath(pyqueue.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def interrupt_after_first_checkpoint(proc, out, timeout=60):
    """Send SIGINT to the run ``proc`` once its output folder ``out`` records one
    unit done (or after ``timeout`` s), and return its (stdout, stderr); the
    process is killed if it does not end within ``timeout`` s of the signal."""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if json.loads((out / "summary.json").read_text())["progress"]["done"] >= 1:
                    break
            except (OSError, ValueError, KeyError, TypeError):
                pass
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
