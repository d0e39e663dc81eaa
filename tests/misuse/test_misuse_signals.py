"""Signals and hangs through the API: close() from a signal handler ends the
waiting call, the interpreter exits with a C thread still running, the calls
that never wait do not wait for a C thread, an unlimited poll() ends, and an
interrupted call reports exactly what it consumed or wrote.  Each case runs in
a subprocess with a timeout, so a hang fails with a message instead of
stopping the suite."""
import pytest

from misuse_support import run_case

# The main thread waits in CALL; a helper thread sends SIGUSR1 to it once it is
# waiting; the handler closes the queue.  The call must end with QueueClosed.
SIGNAL_CLOSE = """
    q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0, publish="each")
    signal.signal(signal.SIGUSR1, lambda *a: q.close())
    FILL
    def later():
        time.sleep(0.3); signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
    threading.Thread(target=later, daemon=True).start()
    try:
        CALL
    except pq.QueueClosed as e:
        print("closed", getattr(e, "written", ""))
    else:
        raise AssertionError("the call returned")
    assert q.closed
    time.sleep(0.2)                      # the deferred unmapping
    assert q._ptr is None, "the queue was never unmapped"
"""
FULL = "while q.writer.try_write(b'm' * 32):\n        pass"
WAITS = {
    "write_on_full": (FULL, "q.writer.write(b'm' * 32)"),
    "write_timeout_on_full": (FULL, "q.writer.write(b'm' * 32, timeout=30)"),
    "read_on_empty": ("pass", "q.reader.read()"),
    "read_timeout_on_empty": ("pass", "q.reader.read(timeout=30)"),
    "write_batch_on_full": ("pass", "q.writer.write_batch(np.zeros((100000, 32), np.uint8))"),
}


@pytest.mark.parametrize("name", sorted(WAITS))
def test_close_from_a_signal_handler_ends_the_waiting_call(name):
    fill, call = WAITS[name]
    out = run_case(name, SIGNAL_CLOSE.replace("FILL", fill).replace("CALL", call), timeout=30)
    assert out.startswith("closed")


@pytest.mark.parametrize("kind", ["consumer", "producer"])
def test_exit_with_a_running_c_thread_and_an_open_queue(kind):
    # An uncaught exception in main: the queue is never closed; exit must not
    # wait for the reaper thread, frozen at finalization, to free the side.
    start = {"consumer": "pqt.ConsumerThread(q, verify=False).start()",
             "producer": "pqt.ProducerThread(q, count=10**12, size=32).start()"}[kind]
    code = """
        q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0)
        t = %s
        raise RuntimeError("uncaught, the queue still open")
    """ % start
    with pytest.raises(AssertionError, match="(?s)exited 1.*uncaught, the queue still open"):
        run_case("exit_with_" + kind, code, timeout=30)


def test_calls_that_never_wait_do_not_wait_for_a_c_thread():
    run_case("busy_side", """
        q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0)
        c = pqt.ConsumerThread(q, verify=False).start()
        for call in (q.reader.poll, lambda: q.reader.poll(1),
                     lambda: q.reader.poll_into(np.zeros((4, 8), np.uint8))):
            try:
                call()
            except pq.QueueError as e:
                assert "in use" in str(e), e
            else:
                raise AssertionError("a poll ran beside the C consumer")
        c.stop(); c.join(10)
        p = pqt.ProducerThread(q, count=10**12, size=32).start()
        try:
            q.writer.try_write(b"x")
        except pq.QueueError as e:
            assert "in use" in str(e), e
        else:
            raise AssertionError("try_write ran beside the C producer")
        q.close()
        assert p.wait(10)              # close() ended the producer
    """)


def test_unlimited_poll_ends_while_a_faster_writer_writes():
    run_case("poll_cap", """
        q = pq.Queue(block_size=4096, spill_blocks=64, publish="each")
        p = pqt.ProducerThread(q, count=10**12, size=8).start()
        time.sleep(0.05)
        for _ in range(20):
            got = q.reader.poll()        # must return: capped at what was there
            assert isinstance(got, list)
        q.close()
    """, timeout=60)


def test_interrupted_write_batch_reports_exactly_what_it_wrote():
    # Nobody reads: the writer fills the queue and waits; SIGINT stops it.
    out = run_case("batch_interrupt", """
        q = pq.Queue(block_size=4096, hot_blocks=4, spill_blocks=60, publish="each")
        arr = np.arange(10**6 * 8, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
        def later():
            time.sleep(0.3); signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        threading.Thread(target=later, daemon=True).start()
        try:
            q.writer.write_batch(arr)
        except KeyboardInterrupt as e:
            n = e.written
        else:
            raise AssertionError("write_batch of more than fits returned")
        got = q.reader.poll()
        assert len(got) == n == q.stats()["messages_written"], (len(got), n)
        assert got == [arr[i].tobytes() for i in range(n)]
        print(n)
    """)
    assert int(out) > 0


def test_interrupted_poll_hands_over_exactly_what_it_consumed():
    # Many interrupts at random points of big polls: every message written is
    # either returned or attached to the KeyboardInterrupt, once, in order.
    out = run_case("poll_interrupt", """
        q = pq.Queue(block_size=1 << 16, hot_blocks=64, spill_blocks=2048, publish="each")
        arr = np.arange(300000, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
        q.writer.write_batch(arr)
        # One Ctrl-C per call at most, and only while poll() itself runs: an
        # interrupt landing in this loop would lose a return value by Python's
        # own rules, which is not what is under test.  poll() is a C method: a
        # profile hook arms the handler from its c_call to its c_return, and
        # the handler runs inside it when poll() looks at pending signals
        # (never in the hook's own frame, which runs around the call).
        armed = [False]
        def hook(frame, event, arg):
            if getattr(arg, "__name__", "") == "poll":
                armed[0] = event == "c_call"
        def handler(signum, frame):
            if armed[0] and frame.f_code is not hook.__code__:
                armed[0] = False
                raise KeyboardInterrupt
        signal.signal(signal.SIGINT, handler)
        sys.setprofile(hook)
        # The Ctrl-Cs come from another process, as from a terminal: a thread
        # of this one would need the GIL, which poll() keeps while it runs.
        import subprocess
        pester = subprocess.Popen([sys.executable, "-c", "import os, sys, time\\n"
                                   "print('ready', flush=True)\\n"
                                   "while True:\\n"
                                   "    time.sleep(0.001); os.kill(int(sys.argv[1]), 2)",
                                   str(os.getpid())], stdout=subprocess.PIPE)
        pester.stdout.readline()
        got, interrupts = [], 0
        while len(got) < 300000:
            try:
                got += q.reader.poll(5000)
            except KeyboardInterrupt as e:
                interrupts += 1
                got += e.messages
        sys.setprofile(None)
        pester.kill(); pester.wait()
        assert [int.from_bytes(m, "little") for m in got] == list(range(300000))
        assert q.stats()["messages_read"] == 300000
        print(interrupts)
    """, timeout=120)
    assert int(out) > 0, "no poll() was interrupted: the case tested nothing"
