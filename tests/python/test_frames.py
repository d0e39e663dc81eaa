"""Frames between processes (issue 49): messages up to max_message, zero-copy
claims and views with enforced lifetimes, numpy arrays.  Every lifetime rule
runs in a child process with a timeout, so a broken rule is a failure here,
never a crash of the test run."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import pyqueue as pq
import support

BLOCK_MAX = 4096 - 8
MAX = 200_000

# The prelude of every child: the queue under test (shared or not), and helpers.
PRELUDE = """
import gc, os, signal, sys, time
import numpy as np
import pyqueue as pq
SHARED = %r
q = pq.Queue(max_message=%d, shared=SHARED)
w, r = q.writer, q.reader

def raises(exc, fn, *a):
    try:
        fn(*a)
    except exc as e:
        return e
    raise AssertionError("%%s did not raise %%s" %% (fn, exc.__name__))
"""


def run_child(code, shared, timeout=60):
    src = PRELUDE % (shared, MAX) + textwrap.dedent(code) + "\nprint('CHILD-OK')\n"
    proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                          timeout=timeout, env=support.subprocess_env())
    assert proc.returncode == 0 and "CHILD-OK" in proc.stdout, proc.stdout + proc.stderr
    return proc.stdout


both = pytest.mark.parametrize("shared", [False, True], ids=["in-process", "shared"])


# ---- sizes -----------------------------------------------------------------------

@both
def test_message_sizes_at_every_boundary(shared):
    """0, 1, max-1, max and max+1 bytes of both size classes (a block's worth
    and the large region's), by write/read and by claim/view."""
    with pq.Queue(max_message=MAX, shared=shared) as q:
        assert q.max_message == MAX
        sizes = [0, 1, BLOCK_MAX - 1, BLOCK_MAX, BLOCK_MAX + 1, MAX - 1, MAX]
        for n in sizes:
            data = os.urandom(n)
            q.writer.write(data)
            assert q.reader.read() == data
            with q.writer.claim(n) as c:
                assert len(c) == n and c.nbytes == n
                with memoryview(c) as m:
                    m[:] = data
            with q.reader.get_view() as v:
                assert len(v) == n and bytes(v) == data
        for call in (q.writer.write, q.writer.put):
            with pytest.raises(ValueError, match="largest is %d" % MAX):
                call(b"x" * (MAX + 1))
        with pytest.raises(ValueError, match="largest is %d" % MAX):
            q.writer.claim(MAX + 1)
        with pytest.raises(pq.MessageTooLarge):
            q.writer.claim(MAX + 1)
        with pytest.raises(ValueError, match="n must be"):
            q.writer.claim(-1)
        st = q.stats()
        assert st["messages_written"] == st["messages_read"] == 2 * len(sizes)
        assert st["bytes_written"] == st["bytes_read"] == 2 * sum(sizes)


def test_block_sized_queue_and_config_rules():
    """max_message at or below a block's worth maps no large region; the
    rules of large_bytes name the field."""
    with pq.Queue(max_message=0) as q:
        assert q.max_message == BLOCK_MAX
        with pytest.raises(ValueError, match="largest is 4088"):
            q.writer.write(b"x" * (BLOCK_MAX + 1))
    assert pq.QueueConfig().max_message == 1 << 20
    with pytest.raises(ValueError, match="large_bytes"):
        pq.Queue(max_message=100, large_bytes=4096)
    with pytest.raises(ValueError, match="large_bytes"):
        pq.Queue(max_message=100_000, large_bytes=4096)
    with pytest.raises(ValueError, match="max_message"):
        pq.Queue(max_message=2**31)
    with pq.Queue(max_message=100_000, large_bytes=100_000 // 4096 * 4096 + 4096) as q:
        for _ in range(5):   # one slot at a time, the region reused
            q.writer.write(b"y" * 100_000)
            assert q.reader.read() == b"y" * 100_000


def test_shared_default_pool_fits_its_budget():
    with pq.Queue(shared=True, max_message=16 << 20) as q:
        assert q.config.pool_bytes <= 31 << 20
        assert q.config.large_bytes >= 16 << 20
    with pq.Queue(shared=True) as q:
        assert q.config.pool_bytes <= 31 << 20
        assert q.max_message == 1 << 20


@both
def test_large_and_small_messages_interleave_in_order(shared):
    rng = np.random.default_rng(7)
    with pq.Queue(max_message=MAX, shared=shared, publish="max") as q:
        sent = []
        for i in range(60):
            n = int(rng.choice([0, 8, 32, 3000, 5000, 60_000, MAX]))
            data = bytes([i % 251]) * n
            q.writer.write(data)
            sent.append(data)
            if i % 2:
                q.writer.flush()
                got = q.reader.poll()
                assert got == sent[:len(got)]
                del sent[:len(got)]
        q.writer.flush()
        assert q.reader.poll() == sent


# ---- claims and views ---------------------------------------------------------

@both
def test_claim_context_commits_or_aborts(shared):
    with pq.Queue(max_message=MAX, shared=shared) as q:
        with pytest.raises(KeyError):
            with q.writer.claim(10) as c:
                memoryview(c)[:2] = b"no"
                raise KeyError("x")
        assert c.closed
        with q.writer.claim(3) as c:
            with memoryview(c) as m:
                m[:] = b"yes"
        assert q.reader.get_nowait() == b"yes"
        with pytest.raises(pq.QueueEmpty):
            q.reader.get_nowait()
        c = q.writer.claim(5000)
        with pytest.raises(pq.QueueError, match="claim is open"):
            q.writer.claim(1)
        with pytest.raises(pq.QueueError):
            q.writer.write(b"blocked by the claim")
        c.abort()
        q.writer.write(b"after")
        assert q.reader.get_view().nbytes == 5


@both
def test_view_blocks_other_reads_and_times_out(shared):
    with pq.Queue(max_message=MAX, shared=shared) as q:
        with pytest.raises(pq.QueueEmpty):
            q.reader.get_view(timeout=0.05)
        with pytest.raises(pq.QueueEmpty):
            q.reader.get_view(block=False)
        q.writer.write(b"a")
        q.writer.write(b"b")
        v = q.reader.get_view()
        for call in (q.reader.get, q.reader.poll, q.reader.get_view, q.reader.get_nowait):
            with pytest.raises(pq.QueueError, match="view is held"):
                call()
        assert bytes(v) == b"a"
        v.release()
        v.release()     # idempotent
        assert q.reader.get() == b"b"
        q.writer.detach()
        with pytest.raises(pq.EndOfStream):
            q.reader.get_view(timeout=1)


def test_iteration_pending_messages_come_first_in_views():
    with pq.Queue(max_message=MAX) as q:
        for i in range(3):
            q.writer.write(b"%d" % i)
        it = iter(q.reader)
        assert next(it) == b"0"           # the fill took 1 and 2 as well
        with q.reader.get_view() as v:
            assert bytes(v) == b"1"
        assert q.reader.get() == b"2"


@both
def test_exported_buffer_alive_at_release_is_a_buffer_error(shared):
    run_child("""
    c = w.claim(5000)
    m = memoryview(c)
    raises(BufferError, c.commit)
    raises(BufferError, c.abort)
    raises(BufferError, q.close)           # the queue stays open
    m[:4] = b"data"; m.release(); c.commit()
    v = r.get_view()
    a = np.frombuffer(v, np.uint8)
    raises(BufferError, v.release)
    raises(BufferError, q.close)
    assert not a.flags.writeable and bytes(a[:4]) == b"data"
    raises(TypeError, memoryview(v).__setitem__, 0, 1)   # read-only
    raises(BufferError, np.frombuffer(v, np.uint8).__setitem__, 0, 1) if False else None
    del a; gc.collect()
    v.release()
    q.close()
    """, shared)


@both
def test_use_after_release_raises(shared):
    run_child("""
    with w.claim(10) as c:
        memoryview(c)[:] = b"0123456789"
    raises(ValueError, memoryview, c)
    raises(ValueError, c.commit)
    raises(ValueError, c.abort)
    with r.get_view() as v:
        pass
    raises(ValueError, memoryview, v)
    raises(ValueError, bytes, v)
    assert v.closed and c.closed
    w.write(b"next")
    assert r.get() == b"next"             # nothing consumed twice, nothing lost
    """, shared)


@both
def test_use_after_close_raises(shared):
    run_child("""
    c = w.claim(300000 // 2)
    w2 = None
    q2 = pq.Queue(max_message=%d, shared=SHARED)
    q2.writer.write(b"x" * 100000)
    v = q2.reader.get_view()
    q.close(); q2.close()                  # no buffer exported: close goes through
    e1 = raises(pq.QueueClosed, memoryview, c)
    e2 = raises(pq.QueueClosed, c.commit)
    raises(pq.QueueClosed, memoryview, v)
    raises(pq.QueueClosed, v.release)
    raises(pq.QueueClosed, w.claim, 1)
    raises(pq.QueueClosed, q2.reader.get_view)
    assert "closed" in str(e1)
    """ % MAX, shared)


def test_dropped_frames_end_as_their_with_blocks_would():
    run_child("""
    c = w.claim(100); del c; gc.collect()          # aborted: the writer is free
    w.write(b"one"); w.write(b"two")
    v = r.get_view(); del v; gc.collect()          # released: consumed
    assert r.get() == b"two"
    w.put_array(np.arange(4)); w.put_array(np.arange(5))
    a = r.get_array()
    raises(pq.QueueError, r.get_array)             # one view at a time
    b = a[1:]; del a; gc.collect()
    raises(pq.QueueError, r.get_array)             # b still holds the message
    del b; gc.collect()
    assert list(r.get_array()) == [0, 1, 2, 3, 4]
    """, False)


def test_view_held_across_a_fork():
    """The child's copy of a view is not the child's to release; the
    parent's stays valid and its release consumes once."""
    run_child("""
    w.write(b"held" * 30000)
    w.write(b"after")
    v = r.get_view()
    pid = os.fork()
    if pid == 0:
        try:
            raises(pq.QueueClosed, v.release)
            raises(pq.QueueClosed, memoryview, v)
            os._exit(0)
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert bytes(v) == b"held" * 30000
    v.release()
    assert r.get() == b"after"
    """, True)


def _wait_line(proc, want, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if want in line:
            return
    raise AssertionError("the child never said %r" % want)


@pytest.mark.parametrize("size", [100, 150_000], ids=["block", "large"])
def test_kill_9_holding_a_claim_loses_nothing_committed(size):
    """The writer dies holding a claim: every committed message is read, then
    the stream ends; the claimed space was never committed and is reused."""
    name = "pyq-frames-%d-%d" % (os.getpid(), size)
    count = 5 if size < BLOCK_MAX else 1   # the large region holds two such slots
    with pq.Queue(max_message=MAX, shared=True, name=name) as q:
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
            import sys, pyqueue as pq
            q = pq.Queue.attach(%r)
            for i in range(%d):
                q.writer.write(bytes([i]) * %d)
            c = q.writer.claim(%d)
            memoryview(c)[:5] = b"never"
            print("CLAIMED", flush=True)
            sys.stdin.read()
            """ % (name, count, size, size))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=support.subprocess_env())
        try:
            _wait_line(child, "CLAIMED")
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
            got = []
            with pytest.raises(pq.EndOfStream, match="died"):
                while True:
                    got.append(q.reader.get(timeout=10))
            assert got == [bytes([i]) * size for i in range(count)]
        finally:
            child.kill()
            child.wait()


@pytest.mark.parametrize("size", [100, 150_000], ids=["block", "large"])
def test_kill_9_holding_a_view_loses_nothing(size):
    """The reader dies holding a view: the message was not consumed, and the
    reader that takes the side over gets it first."""
    name = "pyq-frames-v-%d-%d" % (os.getpid(), size)
    with pq.Queue(max_message=MAX, shared=True, name=name, large_bytes=1 << 20) as q:
        for i in range(3):
            q.writer.write(bytes([i]) * size)
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
            import sys, pyqueue as pq
            q = pq.Queue.attach(%r)
            assert q.reader.get() == bytes([0]) * %d
            v = q.reader.get_view()
            m = memoryview(v)
            print("VIEWING", bytes(m[:1]).hex(), flush=True)
            sys.stdin.read()
            """ % (name, size))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=support.subprocess_env())
        try:
            _wait_line(child, "VIEWING 01")
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
            q.take("reader", dead=True)
            assert q.reader.get(timeout=10) == bytes([1]) * size
            with q.reader.get_view(timeout=10) as v:
                assert bytes(v) == bytes([2]) * size
            q.writer.write(b"more" * 40_000)      # the slots came back to the writer
            assert q.reader.get(timeout=10) == b"more" * 40_000
        finally:
            child.kill()
            child.wait()


def test_claims_and_views_across_processes():
    """A spawned writer claims and fills messages of every size class; the
    parent views them."""
    sizes = [0, 1, 64, BLOCK_MAX, BLOCK_MAX + 1, 100_000, MAX] * 4
    with pq.Queue(max_message=MAX, shared=True) as q:
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
            import pyqueue as pq
            q = pq.Queue.attach(%r)
            for i, n in enumerate(%r):
                with q.writer.claim(n) as c:
                    with memoryview(c) as m:
                        m[:] = bytes([i %% 251]) * n
            q.writer.detach()
            """ % (q.name, sizes))], env=support.subprocess_env())
        try:
            for i, n in enumerate(sizes):
                with q.reader.get_view(timeout=30) as v:
                    assert bytes(v) == bytes([i % 251]) * n
            with pytest.raises(pq.EndOfStream):
                q.reader.get_view(timeout=30)
            assert child.wait(timeout=30) == 0
        finally:
            child.kill()
            child.wait()


# ---- arrays ------------------------------------------------------------------------

NUMERIC = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "g",
           "c8", "c16", "G", "M8[ns]", "m8[s]"]


@both
def test_arrays_of_every_numeric_dtype(shared):
    with pq.Queue(max_message=MAX, shared=shared) as q:
        for code in NUMERIC:
            a = (np.arange(24) % 3).astype(code).reshape(2, 3, 4)
            q.writer.put_array(a)
            b = q.reader.get_array()
            assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(b, a), code
            assert not b.flags.writeable and b.flags.c_contiguous
            assert b.ctypes.data % 64 == 0
            del b
            q.writer.put_array(a)
            c = q.reader.get_array(copy=True)
            assert c.flags.writeable and np.array_equal(c, a)


@both
def test_arrays_of_every_shape_and_layout(shared):
    """0-d, empty, Fortran-ordered and non-contiguous arrays: the reader gets a
    C-ordered array of the same shape, dtype and values (docs/API.md)."""
    base = np.arange(60, dtype=np.int32).reshape(6, 10)
    cases = [np.float64(2.5) * np.ones(()), np.zeros((0,), np.int8), np.zeros((3, 0, 2), "f4"),
             np.asfortranarray(base), base.T, base[::2, ::3], base[:, 1],
             np.array([(1, 2.5, b"ab")], dtype=[("a", "<i4"), ("b", "<f8"), ("c", "S2")]),
             np.array(["x", "yz"]), np.zeros((2, 2), dtype=("f4", (3,))),
             np.arange(40_000, dtype=np.float32).reshape(200, 200)]
    with pq.Queue(max_message=MAX, shared=shared) as q:
        for a in cases:
            q.writer.put_array(a)
            b = q.reader.get_array()
            assert b.shape == a.shape and b.dtype == a.dtype and np.array_equal(b, a), a
            assert b.flags.c_contiguous
            del b
        with pytest.raises(TypeError, match="objects"):
            q.writer.put_array(np.array([object(), 1]))
        with pytest.raises(ValueError, match="largest"):
            q.writer.put_array(np.zeros(MAX, np.uint8))
        q.writer.write(b"not an array")
        with pytest.raises(ValueError, match="not an array"):
            q.reader.get_array()
        q.writer.write(b"next")
        assert q.reader.get() == b"next"


def test_arrays_across_processes():
    with pq.Queue(max_message=MAX, shared=True) as q:
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
            import numpy as np, pyqueue as pq
            q = pq.Queue.attach(%r)
            for i in range(20):
                q.writer.put_array(np.full((100, 150), i, dtype=np.float64).T)
            q.writer.detach()
            """ % q.name)], env=support.subprocess_env())
        try:
            for i in range(20):
                a = q.reader.get_array(timeout=30)
                assert a.shape == (150, 100) and (a == i).all()
                del a
            assert child.wait(timeout=30) == 0
        finally:
            child.kill()
            child.wait()


def test_import_pyqueue_does_not_import_numpy():
    code = "import sys, pyqueue; q = pyqueue.Queue(); assert 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                   env=support.subprocess_env())


def test_a_frame_says_where_its_buffer_is_while_it_is_open():
    """Claim.address / View.address: the address of the buffer's first byte (what
    put_array aligns its data by); a closed frame raises as any other use does."""
    import numpy as np
    with pq.Queue(max_message=1 << 16) as q:
        c = q.writer.claim(100)
        with memoryview(c) as m:
            assert c.address == np.frombuffer(m, np.uint8).ctypes.data
        c.commit()
        with pytest.raises(ValueError, match="committed or aborted"):
            c.address
        v = q.reader.get_view()
        with memoryview(v) as m:
            assert v.address == np.frombuffer(m, np.uint8).ctypes.data
        v.release()
        with pytest.raises(ValueError, match="released"):
            v.address
