"""What the lab's C loops (csrc/lab/) need from Python: the calibrated cycle
counter they time with, and the exception a loop's return code stands for."""
from pyqueue import errors as _errors
from .._lab import ffi, lib

__all__ = ["ticks_per_ns", "check"]


def ticks_per_ns():
    """Cycle-counter ticks per ns, calibrated in C; OSError where there is no counter."""
    info = ffi.new("pyq_clock_info_t *")
    if lib.pyq_clock_calibrate(0, 0, info) != 0 or info.ticks_per_ns <= 0:
        raise OSError("no calibrated cycle counter on this platform (%s)"
                      % ffi.string(info.cycles_name).decode())
    return float(info.ticks_per_ns)


def check(rc, what):
    """``_errors.check`` for a loop that pins two threads of its own: PYQ_EINVAL
    from one almost always means a CPU that is not allowed or not online, and
    PYQ_EAGAIN that the other thread stopped answering; the messages say so."""
    if rc >= 0:
        return rc
    text = _errors.strerror(rc)
    return _errors.check(rc, what, {
        lib.PYQ_EINVAL: "%s: %s (is every CPU allowed and online?)" % (what, text),
        lib.PYQ_EAGAIN: (TimeoutError, "%s: timed out (the other thread did not answer)" % what)})
