"""perf_event_open counters of the calling thread (DESIGN §4.5).

Hardware counters (user-only cycles, instructions, L1D read misses, stalled
cycles) exist only where the kernel and the (virtual) machine expose a PMU;
software counters (context switches, CPU migrations, page faults) are always
tried.  Every counter reports whether it is available and, if not, why::

    with counters.Counters() as c:
        work()
        print(c.read())          # {"cycles": None, "context-switches": 3, ...}
    counters.probe()             # {name: CounterStatus(available, reason, errno)}
"""
import contextlib
import errno as _errno
import os
from dataclasses import dataclass

from .._lab import ffi, lib

NAMES = tuple(ffi.string(lib.pyq_perf_name(i)).decode() for i in range(lib.PYQ_PERF_NEVENTS))
HARDWARE = NAMES[:lib.PYQ_PERF_CONTEXT_SWITCHES]
SOFTWARE = NAMES[lib.PYQ_PERF_CONTEXT_SWITCHES:]

_REASONS = {
    _errno.ENOENT: "the kernel or (virtual) CPU has no such event (no PMU?)",
    _errno.EOPNOTSUPP: "the kernel or (virtual) CPU does not support this event",
    _errno.ENODEV: "no PMU device for this event",
    _errno.EACCES: "forbidden by /proc/sys/kernel/perf_event_paranoid (or no CAP_PERFMON)",
    _errno.EPERM: "forbidden by /proc/sys/kernel/perf_event_paranoid, seccomp or a container",
    _errno.ENOSYS: "perf_event_open is not available in this kernel",
    _errno.EMFILE: "out of file descriptors",
}


@dataclass(frozen=True)
class CounterStatus:
    name: str
    available: bool
    reason: str        # "" when available
    errno: int         # 0 when available


def mask_of(events):
    """A PYQ_PERF_* bit mask from True (all), False/None (none), or names."""
    if events is None or events is False:
        return 0
    if events is True:
        return lib.PYQ_PERF_ALL
    if isinstance(events, str):
        events = [events]
    mask = 0
    for name in events:
        if name not in NAMES:
            raise ValueError("unknown counter %r; counters are %s" % (name, ", ".join(NAMES)))
        mask |= 1 << NAMES.index(name)
    return mask


def status_of(i, code):
    """CounterStatus of counter i from its C status code (0 or -errno)."""
    if code == 0:
        return CounterStatus(NAMES[i], True, "", 0)
    err = -int(code)
    reason = _REASONS.get(err, os.strerror(err))
    return CounterStatus(NAMES[i], False, "%s (%s)" % (reason, _errno.errorcode.get(err, err)), err)


class Counters:
    """Counters of the calling OS thread, counting from construction.  Read and
    close from the same thread."""

    def __init__(self, events=True):
        self._mask = mask_of(events)
        self._p = ffi.new("pyq_perf_t *")
        lib.pyq_perf_open(self._p, self._mask)
        self._open = True

    @property
    def status(self):
        """{name: CounterStatus} for every counter asked for."""
        return {NAMES[i]: status_of(i, self._p.status[i])
                for i in range(len(NAMES)) if self._mask & (1 << i)}

    def read(self):
        """{name: count since opening, or None when unavailable}."""
        if not self._open:
            raise ValueError("the counters are closed")
        values = ffi.new("uint64_t[8]")
        rc = lib.pyq_perf_read(self._p, values)
        if rc < 0:
            raise OSError(-rc, "reading perf counters: %s" % os.strerror(-rc))
        return {NAMES[i]: (int(values[i]) if self._p.opened & (1 << i) else None)
                for i in range(len(NAMES)) if self._mask & (1 << i)}

    def read_cost_ns(self, n=1000):
        """Mean ns of one read of all open counters (None when nothing is open)."""
        cost = lib.pyq_perf_read_cost_ns(self._p, n)
        return None if cost < 0 else float(cost)

    def close(self):
        if self._open:
            lib.pyq_perf_close(self._p)
            self._open = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def probe(events=True):
    """{name: CounterStatus}: which counters this thread can open now, and why not."""
    with Counters(events) as c:
        return c.status


def read_cost_ns(events=True, n=1000):
    """Mean ns of reading every available counter once (None if none is available)."""
    with Counters(events) as c:
        return c.read_cost_ns(n)


@contextlib.contextmanager
def simulate_failure(err=_errno.EACCES):
    """Tests: every perf_event_open in the process fails with ``err`` inside the block."""
    lib.pyq_perf_simulate_failure(int(err))
    try:
        yield
    finally:
        lib.pyq_perf_simulate_failure(0)
