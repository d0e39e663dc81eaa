"""Misuse from Python must raise, never crash: each case runs in a subprocess and
the test checks its exit code (a segfault would be -11)."""
import pytest

from misuse_support import run_case

CASES = {
    "close_while_reader_polls": """
        q = pq.Queue(publish="each", spill_blocks=16)
        stop = False
        def reader():
            while True:
                try:
                    q.reader.poll()
                except pq.QueueClosed:
                    return
        t = threading.Thread(target=reader); t.start()
        for i in range(20000):
            try:
                q.writer.write(b"x" * 32)
            except pq.QueueClosed:
                break
            if i == 10000:
                threading.Thread(target=q.close).start()
        t.join(10); assert not t.is_alive()
    """,
    "close_while_writer_batches": """
        q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=2)
        arr = np.zeros((100000, 32), np.uint8)
        err = []
        def writer():
            try:
                q.writer.write_batch(arr)
            except pq.QueueClosed as e:
                err.append(e)
        t = threading.Thread(target=writer); t.start()
        time.sleep(0.1); q.close(); t.join(10)
        assert not t.is_alive() and err
    """,
    "two_threads_on_one_writer": """
        q = pq.Queue(publish="each", spill_blocks=256)
        def w(tag):
            for i in range(20000):
                q.writer.write(bytes([tag]) + i.to_bytes(4, "little"))
        ts = [threading.Thread(target=w, args=(k,)) for k in (1, 2)]
        [t.start() for t in ts]
        got = []
        while any(t.is_alive() for t in ts) or True:
            m = q.reader.poll()
            got += m
            if not m and not any(t.is_alive() for t in ts):
                got += q.reader.poll(); break
        for tag in (1, 2):
            seq = [int.from_bytes(m[1:], "little") for m in got if m[0] == tag]
            assert seq == list(range(20000)), tag
    """,
    "huge_pool_is_memory_error": """
        try:
            pq.Queue(block_size=16 << 20, hot_blocks=1, spill_blocks=(1 << 30) - 1)
        except MemoryError:
            pass
        else:
            raise AssertionError("a 16 PiB pool was mapped?")
    """,
    "gc_with_pending_messages": """
        for _ in range(200):
            q = pq.Queue(spill_blocks=8, publish="each")
            q.writer.write(b"pending")
            del q
        gc.collect()
    """,
    "exit_with_blocked_daemon_writer": """
        q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0)
        while q.writer.try_write(b"m" * 32):
            pass
        t = threading.Thread(target=q.writer.write, args=(b"m" * 32,), daemon=True)
        t.start(); time.sleep(0.1)
    """,
    "poll_into_after_array_freed": """
        q = pq.Queue(publish="each", spill_blocks=8)
        for i in range(100):
            q.writer.write(bytes(32))
        for i in range(100):
            out = np.zeros((1, 32), np.uint8)
            q.reader.poll_into(out)
            del out
        q.close()
    """,
}

@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse_does_not_crash(name):
    run_case(name, CASES[name], timeout=120)
