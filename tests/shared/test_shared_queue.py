"""A queue in shared memory between processes (DESIGN §3.9): creation and
attach, the handle that pickles, multiprocessing (fork and spawn, Pool,
ProcessPoolExecutor, a multiprocessing.Queue), every byte and the order over
a million messages with spills, dead peers (kill -9 of either side), owned
sides, refused segments, and reclaiming a crashed run's leftover.  No timing
is asserted; anything that waits has a timeout."""
import concurrent.futures
import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest

import pyqueue as pq
import shared_workers as sw
import support

N = 1_000_000
SMALL = dict(block_size=4096, hot_blocks=2, spill_blocks=62)


def _path(q):
    return os.path.join("/dev/shm", q.name)


def _wait_backlog(q, child, bytes_):
    """Until the writer is ahead by bytes_ (so that it has spilled), or it ended."""
    deadline = time.monotonic() + 60
    while q.backlog() < bytes_ and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)


def test_create_attach_close_removes_the_segment():
    q = pq.Queue(shared=True, **SMALL)
    assert q.name.startswith("pyq-") and os.path.exists(_path(q))
    assert pq.Queue.attach(q.name) is q          # one handle per process
    assert pickle.loads(pickle.dumps(q)) is q
    assert "shared" in repr(q)
    q.writer.write(b"one")
    q.writer.flush()
    assert q.reader.poll() == [b"one"]
    q.close()
    assert not os.path.exists(_path(q))
    with pytest.raises(FileNotFoundError, match="no shared queue"):
        pq.Queue.attach(q.name)


def test_names_are_checked():
    with pytest.raises(ValueError, match="shared=True"):
        pq.Queue(name="x")
    for bad in ("", "a/b", "x" * 300):
        with pytest.raises(ValueError, match="name"):
            pq.Queue(shared=True, name=bad)
    with pq.Queue(shared=True, name="pyq-test-%d-taken" % os.getpid(), **SMALL) as q:
        with pytest.raises(FileExistsError, match="exists"):
            pq.Queue(shared=True, name=q.name, **SMALL)


@pytest.mark.parametrize("method,publish,batch", [
    ("fork", "max", False), ("fork", "each", False),
    ("spawn", "max", True), ("spawn", "each", True)])
def test_a_million_messages_across_processes(method, publish, batch):
    """Writer process -> this process, every byte and the order checked, the
    writer ahead by more than the hot tier so that it spills."""
    ctx = mp.get_context(method)
    with pq.Queue(shared=True, publish=publish, **SMALL) as q:
        child = ctx.Process(target=sw.write_messages, args=(q, N, batch))
        child.start()
        try:
            _wait_backlog(q, child, 8 * 4096)
            assert sw.read_all(q, into=batch) == N
        finally:
            child.join(60)
        assert child.exitcode == 0
        st = q.stats()
        assert st["messages_written"] == st["messages_read"] == N
        assert st["takes_spill"] > 0


def test_pool_and_process_pool_executor():
    with pq.Queue(shared=True, **SMALL) as q:
        with mp.get_context("fork").Pool(1) as pool:
            assert pool.apply(sw.write_messages, (q, 5000)) == 5000
        assert sw.read_all(q) == 5000
    with pq.Queue(shared=True, **SMALL) as q:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
            fut = ex.submit(sw.write_messages, q, 20000)
            assert sw.read_all(q) == 20000
            assert fut.result(60) == 20000


def test_through_a_multiprocessing_queue():
    ctx = mp.get_context("spawn")
    mpq = ctx.Queue()
    with pq.Queue(shared=True, **SMALL) as q:
        child = ctx.Process(target=sw.receive_and_write, args=(mpq, 3000))
        child.start()
        mpq.put(q)
        assert sw.read_all(q) == 3000
        child.join(60)
        assert child.exitcode == 0


def test_an_in_process_queue_through_a_multiprocessing_queue_is_refused_at_get():
    """put() returns before the feeder thread pickles, so nothing can reach the
    sender; the receiver's get() raises the TypeError (it must not wait for
    good), and the item after it still arrives."""
    code = ("import multiprocessing as mp, pyqueue as pq\n"
            "q = pq.Queue(spill_blocks=4)\n"
            "m = mp.Queue()\n"
            "m.put(q); m.put(q.writer); m.put('after')\n"
            "for _ in range(2):\n"
            "    try:\n"
            "        m.get(timeout=30)\n"
            "    except TypeError as e:\n"
            "        print('refused:', e)\n"
            "print(m.get(timeout=30))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=support.subprocess_env())
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [l.split(':')[0] for l in lines] == ["refused", "refused", "after"], p.stdout
    assert "a Queue sent through a multiprocessing.Queue" in lines[0]
    assert "shared=True" in lines[0] and "writer" in lines[1]
    assert p.stderr == ""


def test_pickling_an_in_process_queue_outside_a_feeder_still_raises_at_once():
    q = pq.Queue(spill_blocks=4)
    try:
        with pytest.raises(TypeError, match="shared=True"):
            pickle.dumps(q)
        with pytest.raises(TypeError, match="shared=True"):
            mp.get_context("spawn").SimpleQueue().put(q)
        # concurrent.futures handles its feeder's errors (it fails the future):
        # the error goes there, and the pool stays usable.
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=mp.get_context("fork")) as ex:
            with pytest.raises(TypeError, match="shared=True"):
                ex.submit(abs, q).result(timeout=60)
            assert ex.submit(abs, -3).result(timeout=60) == 3
    finally:
        q.close()


def test_a_second_process_cannot_take_an_owned_side():
    ctx = mp.get_context("fork")
    with pq.Queue(shared=True, **SMALL) as q:
        q.take("reader")
        with ctx.Pool(1) as pool:
            msg = pool.apply(sw.try_reader, (q,))
        assert "owned by process %d" % os.getpid() in msg


def test_kill_9_of_the_writer_ends_the_stream_after_every_committed_message():
    ctx = mp.get_context("fork")
    with pq.Queue(shared=True, publish="max", **SMALL) as q:
        ready = ctx.Event()
        child = ctx.Process(target=sw.write_then_hang, args=(q, 1000, ready))
        child.start()
        assert ready.wait(60)
        os.kill(child.pid, signal.SIGKILL)
        child.join(60)
        got = 0
        with pytest.raises(pq.EndOfStream, match="writer process %d died" % child.pid):
            while True:
                assert q.reader.read(timeout=30) == sw.rows(got, 1).tobytes()
                got += 1
        assert got == 1000


def test_kill_9_of_the_reader_fails_a_waiting_writer_and_a_new_reader_resumes():
    ctx = mp.get_context("fork")
    with pq.Queue(shared=True, publish="each", **SMALL) as q:
        ready = ctx.Event()
        child = ctx.Process(target=sw.read_then_hang, args=(q, 10, ready))
        child.start()
        for r in sw.rows(0, 10):
            q.writer.write(r.tobytes(), timeout=30)
        assert ready.wait(60)
        os.kill(child.pid, signal.SIGKILL)
        child.join(60)
        i = 10
        with pytest.raises(pq.PeerDied):
            while True:   # fills the queue, then finds the reader dead
                q.writer.write(sw.rows(i, 1).tobytes(), timeout=60)
                i += 1
        with pytest.raises(pq.PeerDied, match="q.take"):
            q.reader.poll(1)
        q.take("reader", dead=True)
        msgs = q.reader.poll()
        assert b"".join(msgs) == sw.rows(10, i - 10).tobytes()


def _corrupt_copy(q, name, edit):
    data = bytearray(open(_path(q), "rb").read())
    data = edit(data)
    # 0600: a segment open to others is refused before its content is read.
    fd = os.open(os.path.join("/dev/shm", name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("what,edit", [
    ("layout version", lambda d: d[:8] + b"\x63\x00\x00\x00" + d[12:]),
    ("magic", lambda d: b"NotQueue" + d[8:]),
    ("truncated", lambda d: d[:len(d) // 2]),
    ("tiny", lambda d: d[:100]),
    ("garbage", lambda d: bytearray(os.urandom(len(d)))),
    ("config", lambda d: d[:64] + b"\x40\x00\x00\x00" + d[68:]),   # block_size 64
])
def test_a_bad_segment_is_refused(what, edit):
    name = "pyq-test-%d-bad" % os.getpid()
    with pq.Queue(shared=True, **SMALL) as q:
        _corrupt_copy(q, name, edit)
        try:
            with pytest.raises(pq.QueueError, match="not a pyqueue queue"):
                pq.Queue.attach(name)
        finally:
            os.unlink(os.path.join("/dev/shm", name))


def test_a_crashed_runs_leftover_is_reclaimed():
    name = "pyq-test-%d-stale" % os.getpid()
    code = ("import os, pyqueue as pq\n"
            "q = pq.Queue(shared=True, name=%r, spill_blocks=4)\n"
            "os._exit(0)\n" % name)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60,
                   env=support.subprocess_env())
    assert os.path.exists("/dev/shm/" + name)
    with pq.Queue(shared=True, **SMALL) as live:
        removed = pq.cleanup_stale()
        assert name in removed and live.name not in removed
    assert not os.path.exists("/dev/shm/" + name)


def test_fork_child_of_a_shared_queue_is_a_user():
    """The child inherits the mapping: it writes, the parent reads, and the
    segment outlives the child's exit until the parent closes."""
    with pq.Queue(shared=True, **SMALL) as q:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                q.writer.write(b"from the child")
                q.close()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert os.path.exists(_path(q))
        assert q.reader.read(timeout=10) == b"from the child"
        with pytest.raises(pq.EndOfStream):
            q.reader.read(timeout=10)
