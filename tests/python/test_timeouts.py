"""``timeout=`` of get/put/read/write as the standard library takes it (parsed
in C for a float or an int, in Python for any other real number): the edge
values queue.Queue defines, and the ones where pyqueue differs on purpose
(README, "Semantics in brief"; docs/API.md): NaN is refused at once (as
SimpleQueue does), and an infinite or huge timeout means no limit (queue.Queue
raises OverflowError once it must wait that long)."""
import fractions
import math
import queue
import threading
import time

import numpy as np
import pytest

import pyqueue as pq

NEGATIVE = "'timeout' must be a non-negative number"


@pytest.fixture
def q():
    # One 256-byte block and no spill: a few messages fill it.
    with pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0) as q:
        yield q


def _fill(w):
    while w.try_write(b"f" * 32):
        pass


def _reads(r):
    return {"get": lambda t: r.get(timeout=t), "get(True, t)": lambda t: r.get(True, t),
            "read": lambda t: r.read(timeout=t), "read(t)": lambda t: r.read(t)}


def _writes(w):
    return {"put": lambda t: w.put(b"m", timeout=t), "put(m, True, t)": lambda t: w.put(b"m", True, t),
            "write": lambda t: w.write(b"m", timeout=t), "write(m, t)": lambda t: w.write(b"m", t)}


@pytest.mark.parametrize("timeout", [0, 0.0, -0.0, 1e-12, 5, 5.0, 2.5, True, False, None,
                                     np.float64(0.5), np.float32(0.5), np.int64(3),
                                     fractions.Fraction(1, 3), math.inf, 1e300, 2**62, 2**100])
def test_a_message_there_is_returned_whatever_the_timeout(q, timeout):
    for name, call in _writes(q.writer).items():
        call(timeout)
        assert q.reader.get_nowait() == b"m", name
    for name, call in _reads(q.reader).items():
        q.writer.put(b"r")
        assert call(timeout) == b"r", name


@pytest.mark.parametrize("timeout", [-1, -0.5, -1e-300, -math.inf, -2**100, np.float64(-1),
                                     fractions.Fraction(-1, 2), math.nan, np.float64("nan")])
def test_negative_and_nan_raise_queue_queues_value_error_before_anything(q, timeout):
    with pytest.raises(ValueError, match=NEGATIVE):
        queue.Queue(maxsize=1).get(timeout=-1)      # the standard library's words
    q.writer.put(b"there")
    for name, call in {**_reads(q.reader), **_writes(q.writer)}.items():
        with pytest.raises(ValueError, match=NEGATIVE):
            call(timeout)
    assert q.reader.poll() == [b"there"]            # nothing read or written by them


@pytest.mark.parametrize("timeout", ["1", b"1", 1j, [1], object()])
def test_a_timeout_of_another_type_is_a_type_error(q, timeout):
    q.writer.put(b"there")
    for name, call in {**_reads(q.reader), **_writes(q.writer)}.items():
        with pytest.raises(TypeError, match="timeout must be None or a number of seconds"):
            call(timeout)
    assert q.reader.poll() == [b"there"]


def test_without_block_the_timeout_is_ignored_as_queue_queue_does(q):
    for bad in ("x", -1, math.nan):
        q.writer.put(b"a", False, bad)
        q.writer.put(b"b", block=False, timeout=bad)
        assert q.reader.get(False, bad) == b"a"
        assert q.reader.get(block=False, timeout=bad) == b"b"
        with pytest.raises(pq.QueueEmpty):
            q.reader.get(False, bad)


@pytest.mark.parametrize("timeout", [0, 0.0, 1e-12, 0.02])
def test_zero_and_small_timeouts_on_empty_and_full(q, timeout):
    t0 = time.monotonic()
    for call in _reads(q.reader).values():
        with pytest.raises(pq.QueueEmpty):
            call(timeout)
    _fill(q.writer)
    for call in _writes(q.writer).values():
        with pytest.raises(pq.QueueFull):
            call(timeout)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("timeout", [math.inf, 1e300, 2**100, threading.TIMEOUT_MAX * 2])
def test_infinite_and_huge_timeouts_wait_without_limit(q, timeout):
    # queue.Queue raises OverflowError when it must wait this long; pyqueue waits.
    def later():
        time.sleep(0.1)
        q.writer.put(b"late")
    t = threading.Thread(target=later)
    t.start()
    assert q.reader.get(timeout=timeout) == b"late"
    t.join()


def test_the_timeout_is_honoured_when_a_wait_is_needed(q):
    t0 = time.monotonic()
    with pytest.raises(pq.QueueEmpty, match="no message within 0.05"):
        q.reader.get(timeout=0.05)
    assert time.monotonic() - t0 >= 0.05
    _fill(q.writer)
    t0 = time.monotonic()
    with pytest.raises(pq.QueueFull):
        q.writer.put(b"m", timeout=0.05)
    assert time.monotonic() - t0 >= 0.05


def test_computed_timeouts_are_each_read_anew(q):
    # The C parser keeps the last float or int it read; a new object of another
    # value (even at a recycled address) must be read anew.
    for i in range(2000):
        t = (i % 7) / 10 - 0.3          # a new float every time, some negative
        q.writer.put(b"x")
        if t < 0:
            with pytest.raises(ValueError, match=NEGATIVE):
                q.reader.get(timeout=t)
            q.reader.get_nowait()
        else:
            assert q.reader.get(timeout=t) == b"x"
    for i in range(-3, 4):              # ints, small ones cached by CPython
        q.writer.put(b"y")
        if i < 0:
            with pytest.raises(ValueError):
                q.reader.read(timeout=i)
            q.reader.get_nowait()
        else:
            assert q.reader.read(timeout=i) == b"y"


def test_keywords_made_at_run_time_and_repeated(q):
    q.writer.put(**{"".join(["it", "em"]): b"k", "".join(["time", "out"]): 1})
    assert q.reader.get(**{"".join(["time", "out"]): 1.0}) == b"k"
    with pytest.raises(TypeError, match="multiple values for argument 'timeout'"):
        q.reader.read(1, timeout=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'timout'"):
        q.reader.get(timout=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'timout'"):
        q.writer.put(b"m", timout=1)
