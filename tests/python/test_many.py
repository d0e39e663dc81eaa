"""faster-fifo's batch calls and the sides as context managers: put_many (all or
none when the batch can fit), get_many (at least one; max_messages_to_get and
max_bytes_to_get; what the limits leave stays, in order), the names on the
queue object itself."""
import threading
import time

import pytest

import pyqueue as pq


def small(**kw):
    # 256-byte blocks: 100-byte messages take 112-byte records, two a block.
    return pq.Queue(**dict(dict(block_size=256, hot_blocks=2, spill_blocks=6), **kw))


def test_get_many_limits_and_what_they_leave():
    with pq.Queue() as q:
        msgs = [bytes([i]) * (i + 1) for i in range(10)]
        q.put_many(msgs)
        assert q.get_many(max_messages_to_get=3) == msgs[:3]
        assert q.get_many(max_bytes_to_get=8) == msgs[3:4]        # 4 + 5 > 8
        assert q.get_many(max_bytes_to_get=11) == msgs[4:6]       # 5 + 6 <= 11
        assert q.get_many(max_bytes_to_get=0) == msgs[6:7]        # the first, whatever its size
        assert q.qsize() == 3
        assert q.get() == msgs[7]                                 # the rest, in order, to any call
        assert q.reader.poll() == msgs[8:]
        q.put_many(msgs)
        assert q.get_many(max_messages_to_get=2, max_bytes_to_get=1) == msgs[:1]
        assert list(q.reader.poll(2)) == msgs[1:3]
        assert q.get_many(max_messages_to_get=None, max_bytes_to_get=None) == msgs[3:]


def test_get_many_waits_like_get():
    with pq.Queue() as q:
        with pytest.raises(pq.QueueEmpty):
            q.get_many(block=False)
        with pytest.raises(pq.QueueEmpty):
            q.get_many_nowait()
        t0 = time.monotonic()
        with pytest.raises(pq.QueueEmpty):
            q.get_many(timeout=0.05)
        assert time.monotonic() - t0 >= 0.05
        with pytest.raises(ValueError, match="'timeout' must be a non-negative number"):
            q.get_many(timeout=-1)

        def later():
            time.sleep(0.05)
            q.put_many([b"a", b"b"])
        t = threading.Thread(target=later)
        t.start()
        got = q.get_many(timeout=10)
        got += q.get_many(timeout=10) if len(got) < 2 else []
        t.join()
        assert got == [b"a", b"b"]
        q.put(b"last")
        q.writer.detach()
        assert q.get_many() == [b"last"]
        with pytest.raises(pq.EndOfStream):
            q.get_many()
        with pytest.raises(pq.EndOfStream):
            q.get_many_nowait()


@pytest.mark.parametrize("kw, error", [
    (dict(max_messages_to_get=0), ValueError), (dict(max_messages_to_get=-1), ValueError),
    (dict(max_messages_to_get="2"), TypeError), (dict(max_messages_to_get=True), TypeError),
    (dict(max_messages_to_get=1.0), TypeError), (dict(max_bytes_to_get=-1), ValueError),
    (dict(max_bytes_to_get="x"), TypeError), (dict(timeout="x"), TypeError),
    (dict(maximum=1), TypeError)])
def test_get_many_bad_arguments_consume_nothing(kw, error):
    with pq.Queue() as q:
        q.put(b"kept")
        with pytest.raises(error):
            q.get_many(**kw)
        assert q.get_many(max_messages_to_get=2**80, max_bytes_to_get=2**80) == [b"kept"]


def test_put_many_takes_any_iterable_but_not_one_message():
    with pq.Queue() as q:
        q.put_many((b"t1", b"t2"))
        q.put_many(bytes([c]) for c in b"gen")
        q.put_many([])
        assert q.get_many() == [b"t1", b"t2", b"g", b"e", b"n"]
        for one in (b"bytes", "str", bytearray(b"ba")):
            with pytest.raises(TypeError, match="not one"):
                q.put_many(one)
        with pytest.raises(TypeError, match="not"):
            q.put_many(5)
        assert q.qsize() == 0


def test_put_many_is_all_or_none_when_the_batch_can_fit():
    with small() as q:                                  # 8 blocks, two messages a block
        q.put_many([b"a" * 100] * 10)                   # five blocks in use, three free
        for call in (lambda: q.put_many([b"b" * 100] * 7, timeout=0.05),
                     lambda: q.put_many([b"b" * 100] * 7, block=False),
                     lambda: q.put_many_nowait([b"b" * 100] * 7)):
            with pytest.raises(pq.QueueFull, match="none of it was written") as e:
                call()
            assert e.value.written == 0
            assert q.qsize() == 10                      # nothing went in
        assert q.get_many(max_messages_to_get=6) == [b"a" * 100] * 6
        q.put_many([b"b" * 100] * 7, block=False)       # room now: all of it
        assert q.get_many() == [b"a" * 100] * 4 + [b"b" * 100] * 7


def test_put_many_waits_for_room_then_writes_all():
    with small() as q:
        q.put_many([b"a" * 100] * 12)

        def drain_later():
            time.sleep(0.1)
            got.extend(q.get_many(max_messages_to_get=12))
        got = []
        t = threading.Thread(target=drain_later)
        t.start()
        q.put_many([b"b" * 100] * 6, timeout=10)
        t.join()
        assert got == [b"a" * 100] * 12
        assert q.get_many() == [b"b" * 100] * 6


def test_a_batch_bigger_than_the_pool_goes_in_as_room_comes():
    with small() as q:
        big = [bytes([i]) * 100 for i in range(40)]     # 20 blocks > 8
        with pytest.raises(pq.QueueFull) as e:
            q.put_many(big, timeout=0.05)
        k = e.value.written
        assert 0 < k < 40 and q.get_many() == big[:k]

        got = []
        t = threading.Thread(target=lambda: got.extend(m for m in q.reader))
        t.start()
        q.put_many(big, timeout=30)
        q.writer.detach()
        t.join()
        assert got == big


def test_concurrent_put_many_get_many_keep_every_message_in_order():
    n, got = 20_000, []
    with small(spill_blocks=30) as q:
        def consume():
            try:
                while True:
                    got.extend(q.get_many(timeout=30, max_messages_to_get=37))
            except pq.EndOfStream:
                pass
        t = threading.Thread(target=consume)
        t.start()
        for i in range(0, n, 50):
            q.put_many([i.to_bytes(4, "little") + bytes(j % 90) for j in range(i, i + 50)])
        q.writer.detach()
        t.join()
    assert [int.from_bytes(m[:4], "little") for m in got[::50]] == list(range(0, n, 50))
    assert len(got) == n


def test_the_sides_as_context_managers():
    with pq.Queue() as q:
        with q.writer as w:
            assert w is q.writer
            w.put(b"1")
            w.put(b"2")
        with pytest.raises(pq.QueueClosed):           # leaving it ended the stream
            q.put(b"3")
        with q.reader as r:
            assert r is q.reader
            assert r.get() == b"1"
        assert list(q.reader) == [b"2"]               # leaving the reader's dropped nothing
    with pq.Queue() as q:
        q.close()
        with q.writer:                                 # a closed queue: nothing to end
            pass


def test_the_names_on_the_queue_object_are_the_sides_methods():
    with pq.Queue(serializer="pickle") as q:
        for name in ("put", "put_nowait", "put_many", "put_many_nowait"):
            assert getattr(q, name) == getattr(q.writer, name)
        for name in ("get", "get_nowait", "get_many", "get_many_nowait"):
            assert getattr(q, name) == getattr(q.reader, name)
        q.put(1)
        q.put_nowait(2)
        q.put_many([3, 4])
        q.put_many_nowait([5])
        assert [q.get(), q.get_nowait()] == [1, 2]
        assert q.get_many(max_messages_to_get=2) == [3, 4]
        assert q.get_many_nowait() == [5]
        assert pq.Queue.put.__doc__ and pq.Queue.get_many.__doc__
    with pytest.raises(pq.QueueClosed):
        q.put(1)
    with pytest.raises(pq.QueueClosed):
        q.get_many()
