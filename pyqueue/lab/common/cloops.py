"""What the lab's C loops (csrc/lab/) need from Python: the calibrated cycle
counter they time with, and the exception a loop's return code stands for."""
from ..._pyq import ffi, lib

__all__ = ["ticks_per_ns", "error"]


def ticks_per_ns():
    """Cycle-counter ticks per ns, calibrated in C; OSError where there is no counter."""
    info = ffi.new("pyq_clock_info_t *")
    if lib.pyq_clock_calibrate(0, 0, info) != 0 or info.ticks_per_ns <= 0:
        raise OSError("no calibrated cycle counter on this platform (%s)"
                      % ffi.string(info.cycles_name).decode())
    return float(info.ticks_per_ns)


def error(rc, what):
    """The exception for a lab loop's negative ``rc`` (returned, not raised).

    PYQ_EINVAL from a loop that pins its threads almost always means a CPU that
    is not allowed or not online, so the message says so."""
    msg = ffi.string(lib.pyq_strerror(rc)).decode()
    if rc == lib.PYQ_EINVAL:
        return ValueError("%s: %s (is every CPU allowed and online?)" % (what, msg))
    return OSError(-rc, "%s: %s" % (what, msg))
