"""Clocks (DESIGN §4.4): CLOCK_MONOTONIC in ns and the cycle counter (rdtsc on
x86-64, CNTVCT_EL0 on arm64) calibrated against it, with the measured cost of
one read of each.  Every sample array the runtime fills holds CLOCK_MONOTONIC ns.
"""
from dataclasses import dataclass

from pyqueue import validate
from .._lab import ffi, lib

CLOCKS = {"monotonic": lib.PYQ_CLOCK_MONOTONIC,
          "monotonic_raw": lib.PYQ_CLOCK_MONOTONIC_RAW,
          "cycles": lib.PYQ_CLOCK_CYCLES,
          "cycles_fenced": lib.PYQ_CLOCK_CYCLES_FENCED}


@dataclass(frozen=True)
class CycleCounter:
    """The cycle counter and its calibration against CLOCK_MONOTONIC."""
    available: bool
    name: str               # "rdtsc", "cntvct_el0" or "none"
    ticks_per_ns: float     # 0.0 when unavailable
    counter_hz: float       # what the hardware reports (arm64 CNTFRQ_EL0), else 0.0
    calibration_ns: int


def now_ns():
    """CLOCK_MONOTONIC in ns (the time base of every sample array)."""
    return int(lib.pyq_clock_now_ns())


def cycles():
    """The raw cycle counter (0 where the platform has none)."""
    return int(lib.pyq_clock_cycles())


def calibrate(interval_ns=20_000_000, force=False):
    """Calibrate the cycle counter (once per process unless ``force``)."""
    interval_ns = validate.integer("interval_ns", interval_ns, 1, 10**10)
    info = ffi.new("pyq_clock_info_t *")
    lib.pyq_clock_calibrate(interval_ns, int(bool(force)), info)
    return CycleCounter(available=bool(info.has_cycles), name=ffi.string(info.cycles_name).decode(),
                        ticks_per_ns=float(info.ticks_per_ns), counter_hz=float(info.counter_hz),
                        calibration_ns=int(info.calib_ns))


def cycles_to_ns(ticks):
    return float(lib.pyq_clock_cycles_to_ns(int(ticks)))


def cost_ns(clock="monotonic", n=100_000):
    """Mean ns of one read of ``clock`` over n back-to-back reads in C, or None
    when the platform lacks it."""
    validate.choice("clock", clock, tuple(CLOCKS))
    out = ffi.new("double *")
    rc = lib.pyq_clock_cost_ns(CLOCKS[clock], n, out)
    return None if rc == lib.PYQ_ENOTSUP else float(out[0])


def _step(which, n):
    """pyq_clock_step: the resolution in the clock's own units, None without it."""
    out = ffi.new("uint64_t *")
    if lib.pyq_clock_step(which, n, out) == lib.PYQ_ENOTSUP:
        return None
    return int(out[0])


def step_ns(clock="cycles", n=20_000):
    """Resolution of ``clock`` in ns (None without the clock): the step that
    nearly all differences between two reads are multiples of (see
    pyq_clock_step).  On some VMs the TSC moves tens of ticks at a time; every
    sample it times is then a multiple of this step, so two percentiles less
    than one step apart cannot be told apart."""
    validate.choice("clock", clock, tuple(CLOCKS))
    step = _step(CLOCKS[clock], n)
    if step is None:
        return None
    return cycles_to_ns(step) if clock.startswith("cycles") else float(step)


def step_ticks(n=20_000):
    """The cycle counter's resolution in its own ticks (1 on most machines;
    None without a cycle counter)."""
    return _step(lib.PYQ_CLOCK_CYCLES, n)


def costs(n=100_000):
    """{clock name: ns per read or None} for every clock, plus sched_getcpu."""
    out = {name: cost_ns(name, n) for name in CLOCKS}
    out["sched_getcpu"] = float(lib.pyq_cpu_sample_cost_ns(n))
    return out
