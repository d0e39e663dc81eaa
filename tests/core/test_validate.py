"""pyqueue.validate: one check per kind of argument, each naming the parameter."""
import math
import os

import numpy as np
import pytest

from pyqueue import validate as v
from pyqueue.validate import ArgumentTypeError


def test_argument_type_error_is_both():
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(ArgumentTypeError, ValueError)


def test_integer():
    assert v.integer("n", 5, 0, 10) == 5
    assert type(v.integer("n", np.uint32(7), 0, 10)) is int
    assert v.integer("n", -3, None, None) == -3 and v.integer("n", 1 << 70, 0, None) == 1 << 70
    for bad in (True, 1.0, "1", None, np.float64(1), np.bool_(True)):
        with pytest.raises(ArgumentTypeError, match=r"n must be an integer in \[0, 10\], got"):
            v.integer("n", bad, 0, 10)
    with pytest.raises(ArgumentTypeError, match="n must be an integer, got"):
        v.integer("n", "x", None, None)
    with pytest.raises(ValueError, match=r"^count must be in \[1, 10\], got 11$"):
        v.integer("count", 11, 1, 10)
    with pytest.raises(ValueError, match=r"in \[0, inf\], got -1"):
        v.integer("count", -1, 0, None)


def test_number():
    assert v.number("rate", 0, 0, 1e12) == 0.0 and v.number("rate", np.float32(2.5), 0, 10) == 2.5
    for bad in (True, "1", None):
        with pytest.raises(ArgumentTypeError, match="rate must be a number"):
            v.number("rate", bad, 0, 1e12)
    for bad in (-1, float("nan"), math.inf, 2e12):
        with pytest.raises(ValueError, match=r"rate must be in \[0, 1e\+12\]"):
            v.number("rate", bad, 0, 1e12)


def test_flag():
    assert v.flag("f", True) is True and v.flag("f", 0) is False
    assert v.flag("f", np.bool_(True)) is True and v.flag("f", np.int8(1)) is True
    with pytest.raises(ValueError, match="f must be True or False"):
        v.flag("f", 2)
    for bad in ("yes", None, 1.0):
        with pytest.raises(ArgumentTypeError, match="f must be True or False"):
            v.flag("f", bad)


def test_choice():
    assert v.choice("idle", "spin", ("spin", "yield")) == "spin"
    with pytest.raises(ValueError, match="^idle must be one of spin, yield, got 'sleep'$"):
        v.choice("idle", "sleep", ("spin", "yield"))
    with pytest.raises(ValueError, match="got None"):
        v.choice("idle", None, ("spin",))


def test_duration():
    assert v.duration("t", 0) == 0.0 and v.duration("t", np.int64(2)) == 2.0
    assert v.duration("t", None, allow_none=True) is None
    assert v.duration("t", math.inf, allow_inf=True) == math.inf
    with pytest.raises(ArgumentTypeError, match="t must be a number of seconds >= 0, got None"):
        v.duration("t", None)
    with pytest.raises(ValueError, match=r"timeout must be None or a number of seconds >= 0 \(inf"):
        v.duration("timeout", -1, allow_none=True, allow_inf=True)
    for bad in (float("nan"), -0.5, math.inf):
        with pytest.raises(ValueError, match="t must be"):
            v.duration("t", bad)
    for bad in ("1", True, [1]):
        with pytest.raises(ArgumentTypeError, match="t must be"):
            v.duration("t", bad)


def test_cpu():
    allowed = sorted(os.sched_getaffinity(0))
    assert v.cpu("c", allowed[0]) == allowed[0] and v.cpu("c", np.int32(allowed[-1])) == allowed[-1]
    assert v.cpu("c", -1) == -1
    with pytest.raises(ValueError, match="c must be a CPU id >= 0, got -1"):
        v.cpu("c", -1, allow_unpinned=False)
    with pytest.raises(ValueError, match=r"writer_cpu must be a CPU id >= 0 or -1 \(not pinned\), got -2"):
        v.cpu("writer_cpu", -2)
    missing = max(allowed) + 1000
    with pytest.raises(ValueError, match="^reader_cpu=%d: CPU %d is not in this process's allowed CPUs "
                                         % (missing, missing)):
        v.cpu("reader_cpu", missing)
    for bad in (True, 1.0, "0", None):
        with pytest.raises(ArgumentTypeError, match="c must be an integer CPU id"):
            v.cpu("c", bad)


def test_priority():
    assert v.priority("p", 0) == 0 and v.priority("p", 99) == 99
    for bad in (-1, 100):
        with pytest.raises(ValueError, match=r"p must be 0 \(SCHED_OTHER\) or a SCHED_FIFO priority in \[1, 99\]"):
            v.priority("p", bad)
    with pytest.raises(ArgumentTypeError, match="SCHED_FIFO priority"):
        v.priority("p", True)


def test_number_open_bounds():
    assert v.number("f", 0.5, 0, 1, hi_open=True) == 0.5
    with pytest.raises(ValueError, match=r"^d_margin must be in \[0, 1\), got 1.0$"):
        v.number("d_margin", 1, 0, 1, hi_open=True)
    for bad in (0, math.inf, float("nan")):
        with pytest.raises(ValueError, match=r"f must be in \(0, inf\)"):
            v.number("f", bad, 0, math.inf, lo_open=True, hi_open=True)
    with pytest.raises(ArgumentTypeError, match=r"f must be a number in \(0, 1\]"):
        v.number("f", "x", 0, 1, lo_open=True)


def test_sequence():
    assert v.sequence("sizes", (3, np.int64(4)), lambda n, x: v.integer(n, x, 2, 9)) == [3, 4]
    with pytest.raises(ValueError, match=r"^sizes\[1\] must be in \[2, 9\], got 1$"):
        v.sequence("sizes", [3, 1], lambda n, x: v.integer(n, x, 2, 9))
    with pytest.raises(ValueError, match="^sizes must not be empty$"):
        v.sequence("sizes", (), lambda n, x: x)
    for bad in ("12", 12, None, {1, 2}):
        with pytest.raises(ArgumentTypeError, match="sizes must be a sequence"):
            v.sequence("sizes", bad, lambda n, x: x)
