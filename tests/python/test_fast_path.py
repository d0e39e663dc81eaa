"""The per-message calls as C methods (DESIGN §5.3): put/get and the standard
library's conventions, poll(n) built in C, iteration, big messages, the busy
side, docstrings.  No timings are asserted."""
import ctypes
import errno
import gc
import pickle
import sys
import queue
import threading
import time
import weakref

import numpy as np
import pytest

import pyqueue as pq
from pyqueue import _pyext


def small(**kw):
    # A block's worth at most (max_message=0): these are the block framing's paths.
    args = dict(block_size=4096, hot_blocks=4, spill_blocks=16, publish="each", max_message=0)
    args.update(kw)
    return pq.Queue(**args)


def test_the_sides_are_the_c_types():
    with small() as q:
        assert isinstance(q.writer, _pyext.WriterCore) and isinstance(q.reader, _pyext.ReaderCore)
        for name in ("write", "try_write", "put", "put_nowait"):
            assert type(getattr(pq.Writer, name)).__name__ == "method_descriptor", name
        for name in ("poll", "read", "get", "get_nowait"):
            assert type(getattr(pq.Reader, name)).__name__ == "method_descriptor", name
        assert iter(q.reader) is q.reader


def test_stdlib_exceptions_catch_pyqueue_ones():
    assert issubclass(pq.QueueEmpty, queue.Empty) and issubclass(pq.QueueFull, queue.Full)
    with small(block_size=256, hot_blocks=1, spill_blocks=0) as q:
        with pytest.raises(queue.Empty):
            q.reader.get_nowait()
        with pytest.raises(queue.Empty):
            q.reader.get(timeout=0.01)
        with pytest.raises(queue.Empty):
            q.reader.get(block=False)
        while q.writer.try_write(b"m" * 32):
            pass
        with pytest.raises(queue.Full) as e:
            q.writer.put_nowait(b"m")
        assert e.value.code == -errno.EAGAIN
        with pytest.raises(queue.Full):
            q.writer.put(b"m", timeout=0.01)
        with pytest.raises(queue.Full):
            q.writer.put(b"m", block=False, timeout=5)   # as queue.Queue: timeout ignored
        with pytest.raises(pq.QueueFull):
            q.writer.write(b"m", timeout=0)


def stdlib_style_producer(q, n):
    # Written for queue.Queue: put, then a sentinel.
    for i in range(n):
        q.put(b"%d" % i)
    q.put(b"end")


def stdlib_style_consumer(q):
    out = []
    while True:
        item = q.get()
        if item == b"end":
            return out
        out.append(item)


def test_code_written_for_queue_queue_works_with_the_two_sides():
    n = 20000
    with small(spill_blocks=64) as q:
        t = threading.Thread(target=stdlib_style_producer, args=(q.writer, n))
        t.start()
        got = stdlib_style_consumer(q.reader)
        t.join()
    assert got == [b"%d" % i for i in range(n)]
    ref = queue.Queue()
    stdlib_style_producer(ref, 5)
    assert stdlib_style_consumer(ref) == [b"%d" % i for i in range(5)]


def test_qsize_empty_full():
    with small(block_size=256, hot_blocks=1, spill_blocks=1) as q:
        for side in (q, q.writer, q.reader):
            assert side.qsize() == 0 and side.empty() and not side.full()
        q.writer.put(b"a")
        q.writer.put(b"b")
        assert q.qsize() == q.writer.qsize() == q.reader.qsize() == 2 and not q.empty()
        while q.writer.try_write(b"m" * 32):
            pass
        assert q.full() and q.writer.full()
        n = q.qsize()
        assert len(q.reader.poll()) == n
        assert q.empty() and not q.full()
    with pytest.raises(pq.QueueClosed):
        q.qsize()


def test_qsize_counts_what_max_has_not_published_yet():
    with small(publish="max") as q:
        q.writer.write(b"x")
        assert q.qsize() == 1 and q.reader.poll() == []
        q.writer.flush()
        assert q.reader.get_nowait() == b"x" and q.qsize() == 0


def test_poll_limits_and_arguments():
    with small() as q:
        for i in range(10):
            q.writer.write(bytes([i]))
        assert q.reader.poll(0) == []
        assert q.reader.poll(1) == [b"\x00"]
        assert q.reader.poll(max_messages=3) == [b"\x01", b"\x02", b"\x03"]
        assert q.reader.poll(np.int64(2)) == [b"\x04", b"\x05"]   # an integer, not only int
        assert q.reader.poll(None) == [bytes([i]) for i in range(6, 10)]
        for bad in (-1, 1.5, "2", True):
            with pytest.raises((ValueError, TypeError), match="max_messages"):
                q.reader.poll(bad)
        with pytest.raises(TypeError):
            q.reader.poll(1, 2)
        with pytest.raises(TypeError):
            q.reader.poll(limit=1)


def test_poll_one_reuses_only_a_list_nobody_else_holds():
    # poll(1) takes back the list it returned last once its caller let go of it
    # (DESIGN §5.3): a list still held, or changed, is never touched.
    with small() as q:
        w, r = q.writer, q.reader
        w.write(b"a")
        first = r.poll(1)
        w.write(b"b")
        second = r.poll(1)
        assert first == [b"a"] and second == [b"b"] and first is not second
        second.append(b"x")
        del second
        w.write(b"c")
        assert r.poll(1) == [b"c"] and first == [b"a"]
        got = []

        class Reenter:   # its release, as poll(1) replaces it, polls again
            def __del__(self):
                w.write(b"inner")
                got.append(r.poll(1))
        w.write(b"d")
        lst = r.poll(1)
        lst[0] = Reenter()
        del lst
        w.write(b"e")
        assert r.poll(1) == [b"e"] and got == [[b"inner"]]
        assert r.poll(1) == [] and q.stats()["messages_read"] == 6


def test_a_cycle_through_the_list_poll_one_returned_is_collected():
    q = small()
    alive = weakref.ref(q)
    q.writer.write(b"m")
    lst = q.reader.poll(1)
    lst.append(q)            # queue -> reader -> its last list -> queue
    del lst, q
    gc.collect()
    assert alive() is None


def test_write_arguments_and_buffers():
    with small() as q:
        q.writer.write(data=b"kw")
        q.writer.write(b"t", timeout=1)
        q.writer.write(bytearray(b"ba"))
        q.writer.write(np.arange(3, dtype=np.uint8))
        q.writer.put(item=b"p", block=True, timeout=None)
        assert q.reader.poll() == [b"kw", b"t", b"ba", b"\x00\x01\x02", b"p"]
        with pytest.raises(TypeError, match="not str"):
            q.writer.write("text")
        with pytest.raises(TypeError):
            q.writer.try_write(12)
        with pytest.raises(ValueError, match="C-contiguous"):
            q.writer.write(memoryview(b"abcdef")[::2])
        with pytest.raises(ValueError, match="timeout"):
            q.writer.write(b"x", timeout=-1)
        with pytest.raises(pq.MessageTooLarge, match="largest is 4088"):
            q.writer.put_nowait(bytes(4089))
        with pytest.raises(TypeError, match="unexpected keyword"):
            q.writer.write(b"x", wait=1)


READ_SPELLINGS = {
    "poll": lambda r, n: r.poll(),
    "poll_n": lambda r, n: r.poll(n),
    "poll_1": lambda r, n: [r.poll(1)[0] for _ in range(n)],
    "read": lambda r, n: [r.read() for _ in range(n)],
    "get_nowait": lambda r, n: [r.get_nowait() for _ in range(n)],
    "iteration": lambda r, n: [m for _, m in zip(range(n), r)],   # range first: no wait after
}


def test_the_bytes_objects_are_built_in_place_on_the_cpython_versions_it_knows():
    # DESIGN §5.3: the layout is checked on live objects at import.
    known = (3, 11) <= sys.version_info[:2] <= (3, 14) and not hasattr(sys, "gettotalrefcount")
    if known:
        assert _pyext.BYTES_DIRECT == 1 and _pyext.LIST_DIRECT == 1
    assert _pyext.BYTES_DIRECT in (0, 1) and _pyext.LIST_DIRECT in (0, 1)


@pytest.mark.parametrize("publish", ["each", "max"])
@pytest.mark.parametrize("spelling", sorted(READ_SPELLINGS))
def test_messages_come_back_as_real_bytes_of_every_size_and_byte(publish, spelling):
    # Every byte value at every offset, the sizes CPython caches (0, 1), those
    # around the inline copy's steps and a page; each message a bytes object in
    # every respect: type, equality, hash, pickling, size, the trailing NUL.
    sizes = [0, 1, 2, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255, 256, 4096]
    sent = [bytes((i * 7 + n) & 0xFF for i in range(n)) for n in sizes]
    sent += [bytes(range(256)), bytes(range(255, -1, -1))]
    with pq.Queue(block_size=8192, hot_blocks=4, spill_blocks=4, publish=publish) as q:
        for m in sent:
            q.writer.write(m)
        q.writer.flush()
        got = READ_SPELLINGS[spelling](q.reader, len(sent))
        assert got == sent
        for g, m in zip(got, sent):
            assert type(g) is bytes and len(g) == len(m)
            assert hash(g) == hash(bytes(bytearray(m))) and hash(g) == hash(g)
            assert pickle.loads(pickle.dumps(g)) == m and sys.getsizeof(g) == sys.getsizeof(m)
            assert g + b"!" == m + b"!" and g[::-1] == m[::-1] and bytes.fromhex(g.hex()) == m
            assert ctypes.string_at(ctypes.c_char_p(g), len(g) + 1)[-1:] == b"\0"
            assert {g: 1}[m] == 1
        assert q.reader.poll() == []


@pytest.mark.parametrize("spelling", ["poll_1", "read", "get_nowait", "iteration"])
def test_a_message_only_the_reader_holds_is_refilled_and_one_anybody_holds_never_changes(spelling):
    # DESIGN §5.3: the reader refills a bytes object it handed out once only it holds it.
    # Every way of holding one -- a variable, a list, a memoryview, a dict key, the list
    # poll(1) returned -- keeps it intact; one dropped after hash() is hashed afresh.
    read = {"poll_1": lambda r: r.poll(1)[0], "read": lambda r: r.read(),
            "get_nowait": lambda r: r.get_nowait()}.get(spelling)
    sizes = [32, 32, 2, 32, 512, 513, 7, 32]
    sent = [bytes((i * 31 + k) & 0xFF for i in range(sizes[k % len(sizes)])) for k in range(400)]
    kept, views, keys, hashed = [], [], {}, 0
    with small(publish="each") as q:
        it = iter(q.reader)
        prev = None
        for k, m in enumerate(sent):
            q.writer.write(m)
            g = next(it) if read is None else read(q.reader)
            assert g == m and prev in (None, sent[k - 1])  # the last one, still held, intact
            if k % 3 == 0:
                kept.append((g, m))
            elif k % 5 == 0:
                views.append((memoryview(g), m))
            elif k % 7 == 0:
                keys[g] = m
            else:
                assert hash(g) == hash(bytes(bytearray(m)))  # hashed, then dropped
                hashed += 1
            prev, g = g, None
        assert hashed > 100
        for g, m in kept:
            assert g == m
        for v, m in views:
            assert v.tobytes() == m
        for g, m in keys.items():
            assert g == m and keys[bytes(bytearray(m))] == m
        if _pyext.BYTES_DIRECT:
            # Refilled, not freed: 32-byte bytes made meanwhile do not take their places.
            # (poll(1)'s list holds the last message until the next poll(1): the one
            # before it is refilled.)
            firsts = set()
            for m in sent[:2]:
                q.writer.write(m)
                firsts.add(id(read(q.reader) if read else next(it)))
            others = [bytes(bytearray(31)) + b"x" for _ in range(2)]
            q.writer.write(sent[3])
            b = read(q.reader) if read else next(it)
            assert id(b) in firsts and firsts.isdisjoint(map(id, others)) and b == sent[3]


@pytest.mark.parametrize("size", [16383, 16384, 100_000])
def test_big_messages_go_through_the_gil_free_copy(size):
    # At GIL_COPY bytes and more the copy runs without the GIL, the side owned.
    assert _pyext.GIL_COPY == 16384
    with pq.Queue(block_size=1 << 17, hot_blocks=2, spill_blocks=2, publish="each") as q:
        msgs = [bytes([i]) * size for i in range(3)]
        for m in msgs:
            q.writer.write(m)
        assert q.reader.read() == msgs[0]
        assert q.reader.poll(1) == [msgs[1]]
        assert q.reader.poll() == [msgs[2]]
        assert not q.reader._is_busy()


def test_iteration_drains_then_ends_at_detach():
    with small(spill_blocks=64) as q:
        for i in range(1000):
            q.writer.write(b"%d" % i)
        q.writer.detach()
        assert list(q.reader) == [b"%d" % i for i in range(1000)]
        assert list(q.reader) == []
        with pytest.raises(pq.EndOfStream):
            q.reader.get_nowait()


def test_a_second_thread_on_a_busy_side_gets_a_clear_error():
    with small(block_size=256, hot_blocks=1, spill_blocks=0) as q:
        while q.writer.try_write(b"m" * 32):
            pass
        t = threading.Thread(target=lambda: pytest.raises(pq.QueueClosed, q.writer.write, b"w"))
        t.start()
        deadline = time.monotonic() + 10
        while not q.writer._is_busy() and time.monotonic() < deadline:
            time.sleep(0.001)
        assert q.writer._is_busy()   # the waiting write owns the writer side
        for call in (lambda: q.writer.write(b"x"), lambda: q.writer.try_write(b"x"),
                     lambda: q.writer.put_nowait(b"x"), q.writer.flush,
                     lambda: q.writer.write_batch(np.zeros((1, 4), np.uint8))):
            with pytest.raises(pq.QueueError, match="writer side is in use by another thread"):
                call()
        assert q.reader.poll(1) == [b"m" * 32]   # the other side is free
        q.close()
        t.join(10)
        assert not t.is_alive()


def test_a_waiting_read_owns_the_reader_side():
    with small() as q:
        t = threading.Thread(target=lambda: pytest.raises(pq.QueueClosed, q.reader.read))
        t.start()
        deadline = time.monotonic() + 10
        while not q.reader._is_busy() and time.monotonic() < deadline:
            time.sleep(0.001)
        for call in (q.reader.poll, lambda: q.reader.poll(1), q.reader.get_nowait,
                     lambda: next(iter(q.reader))):
            with pytest.raises(pq.QueueError, match="reader side is in use"):
                call()
        q.close()
        t.join(10)
        assert not t.is_alive()


def test_a_blocking_write_lets_other_python_threads_run():
    with small(block_size=256, hot_blocks=1, spill_blocks=0) as q:
        while q.writer.try_write(b"m" * 32):
            pass
        count, stop = [0], threading.Event()

        def counter():
            while not stop.is_set():
                count[0] += 1

        c = threading.Thread(target=counter)
        c.start()
        before = count[0]
        with pytest.raises(pq.QueueFull):
            q.writer.write(b"m" * 32, timeout=0.3)   # waits with the GIL released
        after = count[0]
        stop.set()
        c.join()
        assert after > before


def test_help_shows_real_docstrings_for_every_public_method():
    text = pq.Queue.__doc__ + "".join(
        (getattr(cls, n).__doc__ or "") for cls in (pq.Writer, pq.Reader) for n in dir(cls))
    assert "single-producer" in text
    for cls in (pq.Writer, pq.Reader, pq.Queue):
        for name in dir(cls):
            if name.startswith("_"):
                continue
            doc = getattr(cls, name).__doc__
            assert doc and len(doc.strip()) > 20, (cls.__name__, name)
    import pydoc
    page = pydoc.render_doc(pq.Reader, renderer=pydoc.plaintext)
    assert "get_nowait(self, /)" in page and "queue.Empty" in page
    assert "write(self, /, data, timeout=None)" in pydoc.render_doc(pq.Writer, renderer=pydoc.plaintext)


def messages(n, size=16):
    return [i.to_bytes(8, "little") + b"p" * (size - 8) for i in range(n)]


def test_iteration_takes_what_is_visible_and_every_reader_call_serves_it_first():
    # Leaving the loop early leaves the messages iteration took in the reader:
    # each reader call hands them out first, once, in order; qsize counts them.
    sent = messages(300)
    with small(spill_blocks=64) as q:
        for m in sent:
            q.writer.write(m)
        it = iter(q.reader)
        assert next(it) == sent[0]
        assert q.reader._pending_count() > 0 and q.qsize() == 299
        got = [q.reader.poll(1)[0], q.reader.get_nowait(), q.reader.read(), q.reader.get()]
        got += q.reader.poll(3)
        got.append(next(it))
        got += q.reader.poll()
        assert got == sent[1:]
        assert q.qsize() == 0 and q.reader._pending_count() == 0
        assert q.stats()["messages_read"] == 300


def test_poll_into_and_a_c_thread_see_the_messages_iteration_took():
    sent = messages(50)
    with small(spill_blocks=64) as q:
        for m in sent:
            q.writer.write(m)
        q.writer.write(b"x" * 24)        # another size: poll_into stops before it
        assert next(iter(q.reader)) == sent[0]
        out = np.zeros((10, 16), np.uint8)
        assert q.reader.poll_into(out) == 10
        assert [bytes(r) for r in out] == sent[1:11]
        # A C thread would start after the pending messages: refused while any is left.
        with pytest.raises(pq.QueueError, match="iteration took"):
            q.reader.side_lock.acquire(blocking=False)
        out = np.zeros((100, 16), np.uint8)
        assert q.reader.poll_into(out) == 39
        with pytest.raises(pq.QueueError, match="24 bytes"):
            q.reader.poll_into(out)
        assert q.reader.poll() == [b"x" * 24]
        assert q.reader.side_lock.acquire(blocking=False)
        q.reader.side_lock.release()


def test_close_discards_pending_messages_and_a_closed_reader_raises():
    with small(spill_blocks=64) as q:
        for m in messages(20):
            q.writer.write(m)
        assert next(iter(q.reader)) == messages(1)[0]
        assert q.reader._pending_count() == 19
        q.close()
        assert q.reader._pending_count() == 0
        for call in (q.reader.poll, q.reader.get_nowait, lambda: next(iter(q.reader))):
            with pytest.raises(pq.QueueClosed):
                call()
