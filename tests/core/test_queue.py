"""Behaviour of Queue / Writer / Reader from Python (DESIGN §3, §5)."""
import platform
import threading
import time

import numpy as np
import pytest

import pyqueue as pq
import support


def small(**kw):
    args = dict(block_size=4096, hot_blocks=4, spill_blocks=16)
    args.update(kw)
    return pq.Queue(**args)


def test_roundtrip_each():
    with small(publish="each") as q:
        q.writer.write(b"hello")
        q.writer.write(bytearray(b"world"))
        q.writer.write(memoryview(b""))
        assert q.reader.poll() == [b"hello", b"world", b""]
        assert q.reader.poll() == []


def test_publish_max_needs_flush():
    with small(publish="max") as q:
        for i in range(3):
            q.writer.write(bytes([i]) * 32)
        assert q.reader.poll() == []
        q.writer.flush()
        assert q.reader.poll() == [bytes([i]) * 32 for i in range(3)]


def test_publish_bytes_n():
    with small(publish="bytes:100") as q:
        q.writer.write(b"a" * 32)
        q.writer.write(b"b" * 32)
        assert q.reader.poll() == []
        q.writer.write(b"c" * 32)  # 3 records of 40 B >= 100 B
        assert len(q.reader.poll()) == 3


def test_scan_current_sees_unpublished_block():
    with small(publish="max", scan_current=True) as q:
        q.writer.write(b"x" * 10)
        assert q.reader.poll() == [b"x" * 10]


def test_poll_max_messages():
    with small(publish="each") as q:
        for i in range(10):
            q.writer.write(b"%d" % i)
        assert q.reader.poll(3) == [b"0", b"1", b"2"]
        assert q.reader.poll(0) == []
        assert q.reader.poll() == [b"%d" % i for i in range(3, 10)]


def test_poll_one_at_a_time():
    # poll(1) has its own per-message path (pyq_reader_read_one): FIFO, empty
    # and zero-length messages, sizes up to the largest, then closed.
    q = small(publish="each", spill_blocks=8)
    assert q.reader.poll(1) == []
    msgs = [b"", b"a", bytes(range(256)) * 3, b"z" * q.max_message]
    for m in msgs:
        q.writer.write(m)
    assert [q.reader.poll(1) for _ in msgs] == [[m] for m in msgs]
    assert q.reader.poll(1) == []
    q.close()
    with pytest.raises(pq.QueueClosed):
        q.reader.poll(1)
    with pytest.raises(pq.QueueClosed):
        q.writer.write(b"x")


def test_read_one_leaves_a_message_that_does_not_fit():
    from pyqueue._pyq import ffi, lib
    with small(publish="each") as q:
        q.writer.write(b"0123456789")
        buf = ffi.new("char[]", 16)
        assert lib.pyq_reader_read_one(q.c_handle, buf, 9) == lib.PYQ_ETOOBIG
        assert lib.pyq_reader_next_len(q.c_handle) == 10
        assert lib.pyq_reader_read_one(q.c_handle, buf, 16) == 10
        assert ffi.unpack(buf, 10) == b"0123456789"
        assert lib.pyq_reader_read_one(q.c_handle, buf, 16) == lib.PYQ_EAGAIN
        assert q.stats()["messages_read"] == 1


def test_poll_handles_more_than_one_buffer():
    with small(publish="max", spill_blocks=64) as q:
        msgs = [bytes([i % 251]) * (i % 4000 + 1) for i in range(200)]
        for m in msgs:
            q.writer.write(m)
        q.writer.flush()
        assert q.reader.poll() == msgs


def test_write_batch_and_poll_into():
    with small(publish="max", spill_blocks=64) as q:
        arr = np.random.default_rng(1).integers(0, 256, size=(5000, 32), dtype=np.uint8)
        assert q.writer.write_batch(arr) == 5000
        q.writer.flush()
        out = np.zeros_like(arr)
        got = 0
        while got < 5000:
            got += q.reader.poll_into(out[got:])
        assert np.array_equal(out, arr)
        st = q.stats()
        assert st["messages_written"] == st["messages_read"] == 5000
        assert st["backlog"] == 0


@pytest.mark.parametrize("size", [0, 5, 32, 100])
@pytest.mark.parametrize("spill_nontemporal", [False, True])
def test_write_batch_every_row_is_one_message(size, spill_nontemporal):
    # Rows of any width, empty ones included, through the hot and the streamed
    # spill blocks (1 hot block: most rows land in spill).
    with pq.Queue(block_size=4096, hot_blocks=1, spill_blocks=8, publish="max",
                  spill_nontemporal=spill_nontemporal, nontemporal_backlog_kib=0) as q:
        rows = np.random.default_rng(size).integers(0, 256, size=(700, size), dtype=np.uint8)
        got = []
        for part in np.array_split(rows, 7):
            assert q.writer.write_batch(part) == len(part)
            q.writer.flush()
            got += q.reader.poll()
        assert got == [bytes(r) for r in rows]


@pytest.mark.parametrize("spill_nontemporal", [False, True])
def test_runs_single_writes_and_batches_mixed(spill_nontemporal):
    # Runs (DESIGN §3.1): single writes and write_batch rows of one size extend
    # one run header, other sizes and flushes end it; poll_into copies a run
    # and stops at a message of another size; every byte comes back in order.
    rng = np.random.default_rng(7)
    with pq.Queue(block_size=1024, hot_blocks=1, spill_blocks=8, publish="max",
                  spill_nontemporal=spill_nontemporal, nontemporal_backlog_kib=0) as q:
        sent, total = [], 0
        for step in range(40):
            size = (24, 24, 24, 13, 0)[step % 5]
            rows = rng.integers(0, 256, size=(int(rng.integers(1, 60)), size), dtype=np.uint8)
            if step % 2:
                q.writer.write_batch(rows)
            else:
                for r in rows:
                    q.writer.write(bytes(r))
            sent += [bytes(r) for r in rows]
            total += len(rows)
            if step % 7 == 6:
                q.writer.flush()
            assert q.stats()["messages_written"] == total  # exact, flushed or not
            if step % 5 == 4:
                q.writer.flush()
                got = []
                while len(got) < len(sent):
                    out = np.zeros((8, 24), np.uint8)
                    try:
                        n = q.reader.poll_into(out)
                        got += [bytes(r) for r in out[:n]]
                    except pq.QueueError:
                        n = 0
                    if n == 0:
                        got += q.reader.poll(1)
                assert got == sent
                sent = []
        st = q.stats()
        assert st["messages_written"] == st["messages_read"]
        assert st["bytes_written"] == st["bytes_read"]


def test_poll_into_size_mismatch_keeps_message():
    with small(publish="each") as q:
        q.writer.write(b"a" * 32)
        q.writer.write(b"b" * 16)
        out = np.zeros((4, 32), np.uint8)
        assert q.reader.poll_into(out) == 1
        with pytest.raises(pq.QueueError, match="16 bytes"):
            q.reader.poll_into(out)
        assert q.reader.poll() == [b"b" * 16]


def test_stats_and_tiers():
    # 32-byte writes under publish max form one run a block (DESIGN §3.1):
    # 40 bytes for the first, 32 for each next one -- 7 in 256 bytes.
    with pq.Queue(block_size=256, hot_blocks=2, spill_blocks=8, publish="max") as q:
        for i in range(7 * 8):
            q.writer.write(b"z" * 32)
        st = q.stats()
        assert st["takes_hot"] == 2 and st["takes_spill"] == 6
        q.writer.flush()
        assert len(q.reader.poll()) == 56
        st = q.stats()
        assert st["returns_hot"] == 2
        assert st["peak_backlog"] >= 32 * 7 * 6
        assert q.backlog() == 0


@pytest.mark.parametrize("hot, spill_nt, flush_hot_kib, flush_backlog_kib, flushed", [
    (4, False, 64, 0, "none"),      # a 16 KiB hot tier is under the default 64 KiB
    (16, False, 64, 0, "hot"),      # 64 KiB: its blocks are flushed
    (4, False, 16, 0, "hot"),       # the threshold is the field's
    (16, False, 0, 0, "none"),      # 0: never
    (4, True, 64, 0, "spill"),      # spill_nontemporal flushes spill blocks only
    (16, True, 64, 0, "all"),
    (4, False, 64, 16, "hot"),      # the writer ~40 blocks ahead: the backlog rule
    (4, True, 64, 16, "all"),
    (16, False, 0, 16, "hot"),      # flush_hot_kib 0 leaves the backlog rule on
])
def test_blocks_flushed_once_read_follow_the_tiers_rule(hot, spill_nt, flush_hot_kib,
                                                        flush_backlog_kib, flushed):
    # The reader flushes a block it has read when its tier says so (DESIGN
    # §3.10): spill blocks under spill_nontemporal, hot blocks when the hot
    # tier holds flush_hot_kib or more, or when the writer is flush_backlog_kib
    # or more ahead of the block; blocks_flushed counts them, and only where the
    # CPU can (CLFLUSHOPT).  Every message still arrives, in order.
    if spill_nt and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("spill_nontemporal is x86-64 only")
    with pq.Queue(block_size=4096, hot_blocks=hot, spill_blocks=64 - hot, publish="max",
                  spill_nontemporal=spill_nt, flush_hot_kib=flush_hot_kib,
                  flush_backlog_kib=flush_backlog_kib) as q:
        assert q.config.flush_hot_kib == flush_hot_kib
        assert q.config.flush_backlog_kib == flush_backlog_kib
        got = []
        for rnd in range(4):  # the pool goes round more than once
            rows = np.arange(rnd * 5000, (rnd + 1) * 5000, dtype=np.uint64)
            q.writer.write_batch(np.repeat(rows, 4).reshape(-1, 4).view(np.uint8))
            q.writer.flush()
            out = np.empty((5000, 32), np.uint8)
            assert q.reader.poll_into(out) == 5000
            got.append(out.view(np.uint64)[:, 0].copy())
        assert np.array_equal(np.concatenate(got), np.arange(20000, dtype=np.uint64))
        st = q.stats()
        assert st["returns_hot"] > 0 and st["returns_spill"] > 0
        want = {"none": 0, "hot": st["returns_hot"], "spill": st["returns_spill"],
                "all": st["returns_hot"] + st["returns_spill"]}[flushed]
        assert st["blocks_flushed"] == (want if support.has_clflushopt() else 0)


@pytest.mark.parametrize("read", ["poll", "poll_into"])
def test_the_backlog_rule_flushes_the_blocks_the_writer_is_far_enough_ahead_of(read):
    # flush_backlog_kib=8 on an all-hot tier of 8 blocks (32 KiB, under
    # flush_hot_kib): 127 messages of 32 bytes fill a 4 KiB block (one run
    # header), so 8 * 127 messages leave 7 blocks sealed and the last one
    # current, 4072 bytes in.  As the reader finishes block i the writer is
    # (5 - i) * 4096 + 4072 bytes past its end: 8 KiB or more for i <= 4, so
    # 5 of the 7 blocks returned are flushed, the two next to the writer not.
    with pq.Queue(block_size=4096, hot_blocks=8, spill_blocks=0, publish="max",
                  spill_nontemporal=False, flush_backlog_kib=8) as q:
        for i in range(8 * 127):
            q.writer.write(i.to_bytes(8, "little") * 4)
        q.writer.flush()
        if read == "poll":
            msgs = q.reader.poll()
            seqs = [int.from_bytes(bytes(m[:8]), "little") for m in msgs]
        else:
            out = np.empty((8 * 127, 32), np.uint8)
            assert q.reader.poll_into(out) == 8 * 127
            seqs = out.view(np.uint64)[:, 0].tolist()
        assert seqs == list(range(8 * 127))
        st = q.stats()
        assert st["takes_hot"] == 8 and st["returns_hot"] == 7
        assert st["blocks_flushed"] == (5 if support.has_clflushopt() else 0)


@pytest.mark.parametrize("publish", ["max", "each"])
def test_a_reader_that_keeps_up_flushes_nothing_under_the_backlog_rule(publish):
    # The backlog rule (default flush_backlog_kib 16) flushes only blocks the
    # writer has left far behind: a reader that reads each hundred messages as
    # they are written -- the chasing regime, where a hot block comes back to
    # the writer from the reader's cache faster than from memory -- flushes
    # none, through ~12 laps of the 4 hot blocks.  Under publish each the
    # reader scans headers and knows the writer's block count, not its offset.
    with pq.Queue(block_size=4096, hot_blocks=4, spill_blocks=4, publish=publish,
                  spill_nontemporal=False) as q:
        assert q.config.flush_backlog_kib == 16
        n = 0
        for rnd in range(60):
            for i in range(100):
                q.writer.write((n + i).to_bytes(8, "little") * 4)
            q.writer.flush()
            msgs = q.reader.poll()
            assert [int.from_bytes(bytes(m[:8]), "little") for m in msgs] == \
                list(range(n, n + 100))
            n += 100
        st = q.stats()
        assert st["returns_hot"] + st["returns_spill"] >= 40
        assert st["blocks_flushed"] == 0


def test_the_backlog_rule_under_publish_each_counts_whole_blocks():
    # A scanning reader (publish each) knows how many blocks the writer took,
    # not where it is in the last: the writer counts as at that block's start.
    # All written first, then read: block i is flushed when (taken - 2 - i)
    # blocks lie between it and the writer's, 16 KiB or more.
    with pq.Queue(block_size=4096, hot_blocks=16, spill_blocks=0, publish="each",
                  spill_nontemporal=False, flush_hot_kib=0, flush_backlog_kib=16) as q:
        for i in range(1200):
            q.writer.write(i.to_bytes(8, "little") * 4)
        msgs = q.reader.poll()
        assert [int.from_bytes(bytes(m[:8]), "little") for m in msgs] == list(range(1200))
        st = q.stats()
        taken, returned = st["takes_hot"], st["returns_hot"]
        assert taken >= 10 and returned >= taken - 2
        want = sum(1 for i in range(returned) if (taken - 2 - i) * 4096 >= 16 << 10)
        assert want > 0
        assert st["blocks_flushed"] == (want if support.has_clflushopt() else 0)


# ---- bad input -----------------------------------------------------------

@pytest.mark.parametrize("kw, name", [
    (dict(block_size=100), "block_size"),
    (dict(block_size=32), "block_size"),
    (dict(block_size=1 << 30), "block_size"),
    (dict(block_size="4096"), "block_size"),
    (dict(hot_blocks=0), "hot_blocks"),
    (dict(hot_blocks=1.5), "hot_blocks"),
    (dict(spill_blocks=-1), "spill_blocks"),
    (dict(publish="sometimes"), "publish"),
    (dict(publish="bytes:0"), "publish"),
    (dict(publish="bytes:x"), "publish"),
    (dict(scan_current=2), "scan_current"),
    (dict(retry_yield_every=-1), "retry_yield_every"),
    (dict(retry_yield_every=True), "retry_yield_every"),
    (dict(hugepages="yes"), "hugepages"),
    (dict(prefault=None), "prefault"),
    (dict(mlock=3), "mlock"),
    (dict(touch_after_write="no"), "touch_after_write"),
])
def test_bad_configuration_names_parameter(kw, name):
    with pytest.raises(ValueError, match=name):
        pq.Queue(**kw)


def test_message_too_large():
    with pq.Queue(block_size=64, spill_blocks=0, max_message=0) as q:
        assert q.max_message == 56
        q.writer.write(b"x" * 56)
        with pytest.raises(pq.MessageTooLarge, match="57 bytes"):
            q.writer.write(b"x" * 57)
        with pytest.raises(pq.MessageTooLarge):
            q.writer.try_write(b"x" * 57)
        with pytest.raises(pq.MessageTooLarge):
            q.writer.write_batch(np.zeros((2, 57), np.uint8))


def test_full_queue_try_write_and_timeout():
    with pq.Queue(block_size=256, hot_blocks=1, spill_blocks=1, publish="max") as q:
        n = 0
        while q.writer.try_write(b"m" * 32):
            n += 1
        assert n == 2 * 7  # one run a block: 40 + 6 * 32 bytes (DESIGN §3.1)
        with pytest.raises(pq.QueueFull):
            q.writer.write(b"m" * 32, timeout=0.01)
        with pytest.raises(pq.QueueFull):
            q.writer.write(b"m" * 32, timeout=0)
        with pytest.raises(pq.QueueFull) as e:
            q.writer.write_batch(np.zeros((3, 32), np.uint8), timeout=0.01)
        assert e.value.written == 0
        q.writer.flush()
        assert len(q.reader.poll()) == n  # nothing lost
        assert q.writer.try_write(b"m" * 32)


def test_write_batch_partial_timeout_reports_written():
    with pq.Queue(block_size=256, hot_blocks=1, spill_blocks=1, publish="max") as q:
        arr = np.arange(20 * 32, dtype=np.uint8).reshape(20, 32) % 251
        with pytest.raises(pq.QueueFull) as e:
            q.writer.write_batch(arr, timeout=0.01)
        k = e.value.written
        assert k == 2 * 7  # one run a block: 40 + 6 * 32 bytes (DESIGN §3.1)
        q.writer.flush()
        got = q.reader.poll()
        assert got == [arr[i].tobytes() for i in range(k)]


@pytest.mark.parametrize("timeout", [-1, "1", float("nan")])
def test_bad_timeout(timeout):
    with small() as q:
        with pytest.raises(ValueError, match="timeout"):
            q.writer.write(b"x", timeout=timeout)


@pytest.mark.parametrize("timeout", [float("inf"), np.float64("inf"), np.float32(0.5), np.int64(1)])
def test_timeout_any_real_number_inf_is_no_limit(timeout):
    # inf waits without a limit, like None; numpy scalars are numbers too.
    with small(publish="each") as q:
        q.writer.write(b"x", timeout=timeout)
        assert q.writer.write_batch(np.zeros((2, 8), np.uint8), timeout=timeout) == 2
        assert q.reader.poll() == [b"x", bytes(8), bytes(8)]


@pytest.mark.parametrize("data", ["text", None, 3])
def test_write_needs_bytes_like(data):
    with small(publish="each") as q:
        with pytest.raises(TypeError, match="bytes-like|str"):
            q.writer.write(data)
        with pytest.raises(TypeError, match="bytes-like|str"):
            q.writer.try_write(data)
        assert q.reader.poll() == []


def test_use_after_close():
    q = small(publish="each")
    q.writer.write(b"x")
    q.close()
    q.close()  # idempotent
    assert q.closed
    for call in (lambda: q.writer.write(b"x"), lambda: q.writer.try_write(b"x"),
                 lambda: q.writer.flush(), lambda: q.reader.poll(),
                 lambda: q.reader.poll_into(np.zeros((1, 1), np.uint8)),
                 lambda: q.writer.write_batch(np.zeros((1, 1), np.uint8)),
                 q.stats, q.backlog):
        with pytest.raises(pq.QueueClosed):
            call()


@pytest.mark.parametrize("arr, err", [
    ([[1, 2]], TypeError),
    (np.zeros((2, 4), np.int32), ValueError),
    (np.zeros(8, np.uint8), ValueError),
    (np.zeros((2, 2, 2), np.uint8), ValueError),
    (np.zeros((4, 8), np.uint8)[:, ::2], ValueError),
    (np.zeros((8, 4), np.uint8).T, ValueError),
])
def test_bad_arrays(arr, err):
    with small() as q:
        with pytest.raises(err):
            q.writer.write_batch(arr)
        with pytest.raises(err):
            q.reader.poll_into(arr)


def test_poll_into_needs_writable():
    with small() as q:
        out = np.zeros((2, 4), np.uint8)
        out.flags.writeable = False
        with pytest.raises(ValueError, match="writable"):
            q.reader.poll_into(out)


def test_bad_message_type():
    with small() as q:
        with pytest.raises(TypeError):
            q.writer.write("text is not bytes")
        with pytest.raises(TypeError):
            q.writer.write(12)


def test_close_wakes_blocked_writer():
    q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0)
    while q.writer.try_write(b"m" * 32):
        pass
    errors = []

    def blocked():
        try:
            q.writer.write(b"m" * 32)  # waits: nobody reads
        except pq.QueueClosed as e:
            errors.append(e)

    t = threading.Thread(target=blocked)
    t.start()
    t.join(0.2)
    assert t.is_alive()
    q.close()
    t.join(5)
    assert not t.is_alive() and len(errors) == 1


def test_python_threads_fifo():
    n = 200_000
    with pq.Queue(block_size=4096, hot_blocks=4, spill_blocks=256, publish="bytes:2048") as q:
        def produce():
            for i in range(n):
                q.writer.write(i.to_bytes(8, "little") + bytes([i % 256]) * (i % 50))
            q.writer.flush()

        t = threading.Thread(target=produce)
        t.start()
        expect = 0
        while expect < n:
            for m in q.reader.poll():
                i = int.from_bytes(m[:8], "little")
                assert i == expect
                assert m[8:] == bytes([i % 256]) * (i % 50)
                expect += 1
        t.join()
        assert q.reader.poll() == []


def test_python_threads_batches():
    rows, size, batches = 1000, 32, 200
    with pq.Queue(spill_blocks=1024) as q:
        def produce():
            for b in range(batches):
                arr = np.full((rows, size), b % 256, np.uint8)
                arr[:, :8] = np.arange(b * rows, (b + 1) * rows, dtype=np.uint64).view(np.uint8).reshape(rows, 8)
                q.writer.write_batch(arr)
            q.writer.flush()

        t = threading.Thread(target=produce)
        t.start()
        out = np.zeros((4096, size), np.uint8)
        seen = 0
        while seen < rows * batches:
            k = q.reader.poll_into(out)
            seqs = out[:k, :8].copy().view(np.uint64).ravel()
            assert np.array_equal(seqs, np.arange(seen, seen + k, dtype=np.uint64))
            assert np.all(out[:k, 8:] == (seqs // rows % 256).astype(np.uint8)[:, None])
            seen += k
        t.join()


def test_context_manager_and_repr():
    with small() as q:
        assert "open" in repr(q)
    assert q.closed and "closed" in repr(q)


@pytest.mark.parametrize("publish", ["max", "each"])
def test_read_and_iteration_end_at_detach(publish):
    # A Python producer thread, a reader iterating: every message once, in
    # order, then the loop ends because the writer detached.
    n = 3000
    with small(publish=publish, spill_blocks=64) as q:
        def produce():
            for i in range(n):
                q.writer.write(i.to_bytes(4, "little") * (1 + i % 9))
            q.writer.detach()
        t = threading.Thread(target=produce)
        t.start()
        got = list(q.reader)
        t.join()
        assert got == [i.to_bytes(4, "little") * (1 + i % 9) for i in range(n)]
        with pytest.raises(pq.EndOfStream):
            q.reader.read()
        with pytest.raises(pq.EndOfStream):
            q.reader.read(timeout=0)
        assert q.stats()["messages_read"] == n


def test_detach_publishes_and_ends_writing():
    with small(publish="max") as q:
        q.writer.write(b"a")
        q.writer.write(b"b")
        assert q.reader.poll() == []          # max: not published yet
        q.writer.detach()
        q.writer.detach()                     # idempotent
        for call in (lambda: q.writer.write(b"c"), lambda: q.writer.try_write(b"c"),
                     lambda: q.writer.write_batch(np.zeros((1, 4), np.uint8))):
            with pytest.raises(pq.QueueClosed):
                call()
        assert q.reader.read() == b"a"
        assert list(q.reader) == [b"b"]


@pytest.mark.parametrize("timeout", [0, 0.02])
def test_read_timeout_raises_queue_empty(timeout):
    with small(publish="max") as q:
        with pytest.raises(pq.QueueEmpty):
            q.reader.read(timeout=timeout)
        q.writer.write(b"x")                  # written, not published (max)
        with pytest.raises(pq.QueueEmpty):
            q.reader.read(timeout=timeout)
        q.writer.flush()
        assert q.reader.read(timeout=timeout) == b"x"
        with pytest.raises(ValueError, match="timeout"):
            q.reader.read(timeout=-1)


def test_close_wakes_a_waiting_reader():
    q = small(publish="each")
    seen, reading = [], threading.Event()

    def wait():
        reading.set()
        try:
            seen.append(q.reader.read())      # no message, no end: returns only by raising
        except pq.QueueClosed as e:           # EndOfStream is one
            seen.append(e)

    t = threading.Thread(target=wait)
    t.start()
    reading.wait()
    time.sleep(0.05)                          # most likely inside the C wait by now
    q.close()
    t.join(10)
    assert not t.is_alive()
    assert len(seen) == 1 and isinstance(seen[0], pq.QueueClosed)
    with pytest.raises(pq.QueueClosed) as e:
        q.reader.read()
    assert type(e.value) is pq.QueueClosed     # use after close, not end of stream
