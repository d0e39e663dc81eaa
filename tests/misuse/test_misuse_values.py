"""Bad values by property-based generation: every Queue parameter and the
arguments of every Writer/Reader call, given values of every type (huge and
negative integers, NaN, infinities, complex, bools, strings, bytes, None,
containers).  A call either works or raises ValueError/TypeError (or
MemoryError for a pool that cannot be had): never OverflowError, never a crash.
Examples are bounded so the suite stays within a few minutes."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import pyqueue as pq
from pyqueue.config import KINDS
from misuse_support import count_example

ANY = st.one_of(
    st.integers(-2**80, 2**80), st.integers(-3, 70),
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(),
    st.booleans(), st.none(), st.text(max_size=12),
    st.sampled_from(["max", "each", "bytes:1", "bytes: 12", "bytes:+7", "bytes:1_000",
                     "bytes:4294967296", "bytes:0", "Each", "bytes:", "1", "True"]),
    st.binary(max_size=8), st.lists(st.integers(0, 3), max_size=3),
    st.builds(np.int64, st.integers(-2**63, 2**63 - 1)), st.builds(np.float32, st.floats(width=32)))
OK = (ValueError, TypeError)
BOUNDED = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
# A small pool whatever one parameter becomes (the fixed cost of huge block
# counts is another matter, see RELIABILITY.md).
SMALL = dict(block_size=64, hot_blocks=1, spill_blocks=2)


def _big_count(name, value):
    return name in ("hot_blocks", "spill_blocks", "block_size") and \
        isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 1 << 16


@pytest.mark.parametrize("name", sorted(KINDS))
@BOUNDED
@given(value=ANY)
def test_every_queue_parameter_takes_any_value_without_a_wrong_error(name, value):
    assume(not _big_count(name, value))
    count_example()
    try:
        q = pq.Queue(**dict(SMALL, **{name: value}))
    except OK:
        return
    except MemoryError:
        return
    q.writer.write(b"ok")
    q.writer.flush()
    assert q.reader.poll() == [b"ok"]
    q.close()


@pytest.fixture(scope="module")
def queue():
    q = pq.Queue(block_size=4096, hot_blocks=4, spill_blocks=8, publish="each")
    yield q
    q.close()


@BOUNDED
@given(timeout=ANY)
def test_write_and_read_timeouts(queue, timeout):
    count_example()
    try:
        queue.writer.write(b"m", timeout=timeout)     # room: returns at once when valid
    except OK:
        return
    assert queue.reader.read(timeout=timeout) == b"m"


@BOUNDED
@given(max_messages=ANY)
def test_poll_limits(queue, max_messages):
    count_example()
    queue.writer.write(b"p")
    try:
        got = queue.reader.poll(max_messages)
    except OK:
        got = []
    got += queue.reader.poll()
    assert got == [b"p"]


MESSAGES = st.one_of(ANY, st.builds(lambda b: memoryview(b)[::2], st.binary(min_size=2, max_size=8)),
                     st.builds(bytearray, st.binary(max_size=8)))


@BOUNDED
@given(data=MESSAGES)
def test_messages_of_any_type(queue, data):
    count_example()
    for call in (queue.writer.write, queue.writer.try_write):
        try:
            call(data)
        except OK:
            continue
        assert queue.reader.poll() == [memoryview(data).tobytes()]


ARRAYS = st.builds(
    lambda rows, cols, dtype, order, step: np.zeros((rows, cols * step), dtype, order=order)[:, ::step],
    st.integers(0, 5), st.integers(0, 5000), st.sampled_from(["u1", "i1", "u2", "f4", "?"]),
    st.sampled_from("CF"), st.integers(1, 2))


@BOUNDED
@given(arr=st.one_of(ARRAYS, ANY, st.builds(lambda n: np.zeros(n, "u1"), st.integers(0, 4))))
def test_batches_of_any_shape(queue, arr):
    count_example()
    try:
        n = queue.writer.write_batch(arr, timeout=0)
    except (ValueError, TypeError, pq.MessageTooLarge):
        return
    assert len(queue.reader.poll()) == n
    try:
        queue.reader.poll_into(arr)
    except (ValueError, TypeError, pq.QueueError):
        pass


@pytest.mark.parametrize("publish", ["bytes: 12", "bytes:+7", "bytes:1_000", "bytes:12 ",
                                     "bytes:\u0661", "bytes:4294967296", "bytes:0"])
def test_publish_strings_are_strict(publish):
    with pytest.raises(ValueError, match="publish must be"):
        pq.Queue(publish=publish, **SMALL)


@pytest.mark.parametrize("value", [1 + 0j, 1.0, "yes", None, 2])
def test_flags_are_strict_booleans(value):
    with pytest.raises(ValueError, match="mlock"):
        pq.Queue(mlock=value, **SMALL)


def test_poll_into_rows_beyond_32_bits_are_a_value_error(queue):
    out = np.empty((1, 2**32), np.uint8)      # mapped, never touched
    with pytest.raises(ValueError, match="at most"):
        queue.reader.poll_into(out)


@pytest.mark.parametrize("tiers, named", [(dict(hot_blocks=2**30), "hot_blocks"),
                                          (dict(hot_blocks=2**29, spill_blocks=2**29 + 1),
                                           "spill_blocks"),
                                          (dict(spill_blocks=2**30), "spill_blocks")])
def test_too_many_blocks_names_the_tier_that_is_too_big(tiers, named):
    # The two tiers share one limit: the message names the one the user made large.
    with pytest.raises(ValueError) as e:
        pq.QueueConfig(block_size=64, **tiers)
    assert str(e.value).startswith(named + " must be"), e.value


@pytest.mark.parametrize("seconds", [math.inf, float("nan"), -1.0, 0])
def test_soak_seconds_must_be_finite_and_positive(seconds):
    from pyqueue.lab import soak
    with pytest.raises(ValueError, match="seconds must be"):
        soak(seconds=seconds, progress=False)
