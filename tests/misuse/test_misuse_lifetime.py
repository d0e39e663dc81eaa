"""Object lifetime: no Python object keeps the C handle after close(), a queue
cannot be copied or pickled, the child of a fork() gets an error instead of the
parent's messages, and close() racing close() never reaches freed memory.  Each
case that could corrupt memory runs in a subprocess (also under ASan, see
tests/core/test_asan_extension.py)."""
import copy
import pickle

import pytest

import pyqueue as pq
from misuse_support import run_case


@pytest.mark.parametrize("side", ["Writer", "Reader"])
def test_a_side_cannot_be_built_from_outside(side):
    with pq.Queue(spill_blocks=4) as q:
        with pytest.raises(TypeError, match="exactly one"):
            getattr(pq, side)(q)


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, pickle.dumps])
@pytest.mark.parametrize("what", ["queue", "writer", "reader"])
def test_copy_and_pickle_are_refused(how, what):
    with pq.Queue(spill_blocks=4) as q:
        obj = {"queue": q, "writer": q.writer, "reader": q.reader}[what]
        with pytest.raises(TypeError, match="shared=True"):
            how(obj)


def test_init_twice_is_refused_and_keeps_the_queue():
    q = pq.Queue(spill_blocks=4, publish="each")
    with pytest.raises(TypeError, match="already exists"):
        q.__init__(spill_blocks=8)
    q.writer.write(b"still here")
    assert q.reader.poll() == [b"still here"]
    q.close()


def test_copy_of_queue_then_gc_does_not_double_free():
    run_case("copy_then_gc", """
        q = pq.Queue(spill_blocks=4)
        for how in (copy.copy, copy.deepcopy, pickle.dumps):
            try:
                how(q)
            except TypeError:
                pass
            else:
                raise AssertionError("%s of a queue succeeded" % how.__name__)
        q.close(); del q; gc.collect()
    """)


def test_a_kept_side_after_close_reaches_nothing():
    # The old handle must not land in a new queue that reused the freed struct.
    run_case("side_after_close", """
        for _ in range(50):
            q = pq.Queue(spill_blocks=4, publish="each")
            w, r = q.writer, q.reader
            q.close()
            q2 = pq.Queue(spill_blocks=4, publish="each")
            for call in (lambda: w.write(b"stray"), lambda: w.try_write(b"stray"),
                         lambda: w.write_batch(np.zeros((3, 8), np.uint8)), w.flush,
                         lambda: r.poll(), lambda: r.poll(1), lambda: r.read(timeout=0)):
                try:
                    call()
                except pq.QueueClosed:
                    pass
                else:
                    raise AssertionError("a call on a closed queue's side succeeded")
            assert q2.reader.poll() == [] and q2.stats()["messages_written"] == 0
            q2.close()
    """)


def test_close_racing_close_never_touches_freed_memory():
    # The preemption point: a profile hook sleeps just before the first close()
    # calls pyq_queue_close.  Meanwhile a second close() runs and a new queue is
    # made; the first close() must not close that new queue.
    run_case("close_race", """
        for _ in range(5):
            q = pq.Queue(spill_blocks=4)
            reached = threading.Event()
            def hook(frame, event, arg):
                if event == "c_call" and getattr(arg, "__name__", "") == "pyq_queue_close":
                    reached.set(); time.sleep(0.2)
            def closer():
                sys.setprofile(hook)
                q.close()
                sys.setprofile(None)
            t = threading.Thread(target=closer); t.start()
            reached.wait(10)
            q.close()
            q2 = pq.Queue(spill_blocks=4, publish="each")
            t.join(10); assert not t.is_alive()
            q2.writer.write(b"fresh")           # QueueClosed if the old close hit q2
            assert q2.reader.poll() == [b"fresh"] and not q2.closed
            q2.close()
    """)


def test_fork_child_gets_an_error_and_the_parent_keeps_its_messages():
    run_case("fork", """
        q = pq.Queue(spill_blocks=8, publish="each")
        for i in range(10):
            q.writer.write(b"m%d" % i)
        held = threading.Event(); release = threading.Event()
        def holder():                    # a thread holding a side lock at fork()
            with q.writer.side_lock:
                held.set(); release.wait(10)
        t = threading.Thread(target=holder); t.start(); held.wait(10)
        pid = os.fork()
        if pid == 0:
            code = 0
            for call in (q.reader.poll, lambda: q.writer.write(b"child")):
                try:
                    call()
                    code = 3
                except pq.QueueClosed:
                    code = 4             # must be the fork error, not "closed"
                except pq.QueueError as e:
                    if "fork" not in str(e):
                        code = 5
            q.close()                    # no hang on the lock the parent's thread held
            os._exit(code)
        release.set(); t.join()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert q.reader.poll() == [b"m%d" % i for i in range(10)]   # once, here
        q.writer.write(b"after"); assert q.reader.poll() == [b"after"]
        q.close()
    """)


def test_pool_worker_write_is_an_error_not_a_silent_loss():
    run_case("pool_fork", """
        import multiprocessing as mp
        q = pq.Queue(spill_blocks=8, publish="each")
        def work(i):
            q.writer.write(b"x")
        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                try:
                    pool.map(work, range(4))
                except pq.QueueError as e:
                    assert "fork" in str(e)
                else:
                    raise AssertionError("pool.map reported success")
            q.close()
    """)
