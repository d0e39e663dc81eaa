"""Pinning, SCHED_FIFO and CPU id sampling (DESIGN §4.2).

Functions ending in ``_self`` act on the calling OS thread (a Python thread is
one).  Errors name the CPU or the policy that was refused.
"""
import os
import threading

from pyqueue import validate
from pyqueue.errors import UnsupportedError
from .._lab import ffi, lib
from pyqueue.cpulist import format_cpulist
from pyqueue.validate import FIFO_MAX, FIFO_MIN  # noqa: F401  (public here before validate had them)


def allowed_cpus():
    """The CPUs this process may run on (its affinity set), sorted."""
    return sorted(os.sched_getaffinity(0))


def fifo_refused(priority, what="SCHED_FIFO"):
    return PermissionError("%s priority %d refused by the OS: needs root/CAP_SYS_NICE or an "
                           "RLIMIT_RTPRIO >= %d (ulimit -r), and RT group scheduling must allow it"
                           % (what, priority, priority))


def pin_self(cpu):
    """Pin the calling thread to ``cpu`` (a pinned thread may move to another)."""
    # Not validate.cpu: this thread's own affinity may be narrower than what it may
    # move to (it may be pinned already); the OS decides.
    cpu = validate.integer("cpu", cpu, 0, None)
    rc = lib.pyq_cpu_pin_self(cpu)
    if rc != 0:
        raise ValueError("cpu=%d: pinning refused by the OS (%s); CPUs online: %d"
                         % (cpu, os.strerror(-rc), os.cpu_count() or 0))


def unpin_self(cpus=None):
    """Let the calling thread run on ``cpus`` (default: every CPU; the kernel keeps
    it inside the cgroup's cpuset)."""
    cpus = list(range(os.cpu_count() or 1)) if cpus is None else [int(c) for c in cpus]
    rc = lib.pyq_cpu_unpin_self(ffi.new("int[]", cpus), len(cpus))
    if rc != 0:
        raise ValueError("cpus=%s: affinity refused by the OS (%s)"
                         % (format_cpulist(cpus), os.strerror(-rc)))


def set_fifo_self(priority):
    """SCHED_FIFO at ``priority`` for the calling thread (0: back to SCHED_OTHER)."""
    validate.priority("priority", priority)
    rc = lib.pyq_cpu_set_fifo_self(priority)
    if rc == lib.PYQ_EPERM:
        raise fifo_refused(priority)
    if rc != 0:
        raise OSError(-rc, "SCHED_FIFO priority %d: %s" % (priority, os.strerror(-rc)))


def current_cpu():
    """The CPU the calling thread runs on now (sched_getcpu)."""
    cpu = lib.pyq_cpu_current()
    if cpu < 0:
        raise UnsupportedError("sched_getcpu() is not available", cpu)
    return cpu


def sample_cost_ns(n=100_000):
    """Mean ns of one sched_getcpu() sample, measured in C over n calls."""
    return float(lib.pyq_cpu_sample_cost_ns(n))


def _in_thread(fn):
    """Run fn in a throw-away thread so probing never changes the caller."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except Exception as e:  # reported, never raised from the probe
            out["error"] = e
    t = threading.Thread(target=body, name="pyqueue-probe")
    t.start()
    t.join()
    return out


def probe_pinning():
    """(allowed, detail): can a thread be pinned to each allowed CPU?"""
    cpus = allowed_cpus()
    out = _in_thread(lambda: [cpu for cpu in cpus if lib.pyq_cpu_pin_self(cpu) != 0])
    if "error" in out:
        return False, str(out["error"])
    if out["value"]:
        return False, "pinning refused for CPUs %s" % format_cpulist(out["value"])
    return True, "pinning works on CPUs %s" % format_cpulist(cpus)


def probe_fifo(priority=1):
    """(allowed, detail): may a thread switch to SCHED_FIFO at ``priority``?"""
    def attempt():
        rc = lib.pyq_cpu_set_fifo_self(priority)
        if rc == 0:
            lib.pyq_cpu_set_fifo_self(0)
        return rc
    out = _in_thread(attempt)
    rc = out.get("value", lib.PYQ_EINVAL)
    if rc == 0:
        return True, "SCHED_FIFO priority %d allowed" % priority
    if rc == lib.PYQ_EPERM:
        return False, str(fifo_refused(priority))
    return False, "SCHED_FIFO priority %d: %s" % (priority, os.strerror(-rc))
