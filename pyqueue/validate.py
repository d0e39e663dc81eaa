"""One check per kind of argument, for every module of the package.

Each function returns the value in its plain Python type, or raises with a
message that names the parameter and what it may be: ValueError for a value
out of range, ArgumentTypeError for a value of the wrong type.  The checks run
in Python before C sees the value; C checks again.
"""
import math
import numbers
import os
import sys
from collections.abc import Sequence

from .cpulist import format_cpulist

# SCHED_FIFO priorities Linux accepts (0 is SCHED_OTHER).
FIFO_MIN, FIFO_MAX = 1, 99


class ArgumentTypeError(TypeError, ValueError):
    """A parameter of the wrong type.  Also a ValueError: every bad argument
    raised ValueError before these checks were shared, and callers catch it."""


def _numpy_types(name):
    """numpy's type ``name`` as a 0- or 1-tuple: a value can only be a numpy one
    when numpy is loaded, and validating must not be what loads it."""
    np = sys.modules.get("numpy")
    return (getattr(np, name),) if np is not None else ()


def _bounds(lo, hi):
    return "[%s, %s]" % ("-inf" if lo is None else lo, "inf" if hi is None else hi)


def integer(name, value, lo, hi):
    """``value`` as an int, once it is an integer (not a bool; numpy integers
    are fine) in [lo, hi]; a bound of None is no bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        where = "" if lo is None and hi is None else " in " + _bounds(lo, hi)
        raise ArgumentTypeError("%s must be an integer%s, got %r" % (name, where, value))
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError("%s must be in %s, got %d" % (name, _bounds(lo, hi), value))
    return value


def number(name, value, lo, hi, *, lo_open=False, hi_open=False):
    """``value`` as a float, once it is a real number (not a bool, not NaN) in
    [lo, hi]; ``lo_open`` / ``hi_open`` leave that bound out: (lo, hi], [lo, hi)."""
    where = "%s%g, %g%s" % ("(" if lo_open else "[", lo, hi, ")" if hi_open else "]")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError("%s must be a number in %s, got %r" % (name, where, value))
    value = float(value)
    above = lo < value if lo_open else lo <= value
    below = value < hi if hi_open else value <= hi
    if not (above and below):  # NaN is neither
        raise ValueError("%s must be in %s, got %r" % (name, where, value))
    return value


def sequence(name, values, item):
    """``values`` (a non-empty sequence, not a str) as a list, each entry checked
    by ``item(entry_name, entry)``, entry_name being "name[i]"."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, *_numpy_types("ndarray"))):
        raise ArgumentTypeError("%s must be a sequence (list, tuple), got %r" % (name, values))
    if len(values) == 0:
        raise ValueError("%s must not be empty" % name)
    return [item("%s[%d]" % (name, i), v) for i, v in enumerate(values)]


def flag(name, value):
    """``value`` as a bool: True, False, 1 or 0."""
    if isinstance(value, (bool, *_numpy_types("bool_"))):
        return bool(value)
    if isinstance(value, numbers.Integral):
        if value in (0, 1):
            return bool(value)
        raise ValueError("%s must be True or False (or 1 / 0), got %r" % (name, value))
    raise ArgumentTypeError("%s must be True or False, got %r" % (name, value))


def choice(name, value, choices):
    """``value``, once it is one of ``choices`` (names shown in their order)."""
    if isinstance(value, str) and value in choices:
        return value
    raise ValueError("%s must be one of %s, got %r" % (name, ", ".join(choices), value))


def duration(name, value, allow_none=False, allow_inf=False):
    """``value`` in seconds as a float >= 0 (not NaN); None passes when
    ``allow_none``, math.inf when ``allow_inf`` (both usually mean "no limit")."""
    what = "%sa number of seconds >= 0%s" % ("None or " if allow_none else "",
                                               " (inf: no limit)" if allow_inf else "")
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError("%s must be %s, got %r" % (name, what, value))
    value = float(value)
    if not value >= 0 or (value == math.inf and not allow_inf):  # not >= 0: NaN too
        raise ValueError("%s must be %s, got %r" % (name, what, value))
    return value


def timeout(value):
    """A ``timeout=`` of the queue's calls as queue.Queue takes it: None (no
    limit) or a real number of seconds >= 0 (an int, a bool, a float, numpy's,
    a Fraction), returned as a float or None; an infinite or huge one is
    returned as it is (the caller treats it as no limit, where queue.Queue raises
    OverflowError if it must wait).  Negative and NaN raise ValueError with
    queue.Queue's words."""
    if value is None:
        return None
    if not isinstance(value, numbers.Real):
        raise ArgumentTypeError("timeout must be None or a number of seconds, got %r" % (value,))
    if isinstance(value, numbers.Integral):
        value = int(value)          # exact, however large
        if value < 0:
            raise ValueError("'timeout' must be a non-negative number, got %r" % value)
        return value if value < 2**53 else math.inf
    seconds = float(value)
    if not seconds >= 0:            # NaN too: queue.Queue.get would spin on it
        raise ValueError("'timeout' must be a non-negative number, got %r" % (value,))
    return seconds


# Beyond this many ns (146 years) a timeout is no limit: C's int64 would overflow.
FOREVER_NS = 2**62


def timeout_ns(value):
    """A ``timeout=`` (as timeout() takes it) in ns to wait, rounded up, or
    None for no limit (None, inf, or beyond FOREVER_NS)."""
    seconds = timeout(value)
    if seconds is None or seconds * 1e9 >= FOREVER_NS:
        return None
    if isinstance(seconds, int):
        return seconds * 10**9
    return math.ceil(seconds * 1e9)

def cpu(name, value, allow_unpinned=True):
    """``value`` as a CPU id the calling thread may run on (its affinity set, the
    one a thread it starts inherits), or -1 (not pinned) when ``allow_unpinned``."""
    unpinned = " or -1 (not pinned)" if allow_unpinned else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError("%s must be an integer CPU id%s, got %r" % (name, unpinned, value))
    value = int(value)
    if value == -1 and allow_unpinned:
        return value
    if value < 0:
        raise ValueError("%s must be a CPU id >= 0%s, got %d" % (name, unpinned, value))
    allowed = os.sched_getaffinity(0)
    if value not in allowed:
        raise ValueError("%s=%d: CPU %d is not in this process's allowed CPUs %s"
                         % (name, value, value, format_cpulist(allowed)))
    return value


def priority(name, value):
    """``value`` as a scheduling priority: 0 (SCHED_OTHER) or a SCHED_FIFO
    priority in [FIFO_MIN, FIFO_MAX]."""
    what = "0 (SCHED_OTHER) or a SCHED_FIFO priority in [%d, %d]" % (FIFO_MIN, FIFO_MAX)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError("%s must be %s, got %r" % (name, what, value))
    if not 0 <= value <= FIFO_MAX:
        raise ValueError("%s must be %s, got %r" % (name, what, value))
    return int(value)
