"""What could crash, hang or lose data, each in its own interpreter with a
timeout: Ctrl-C as a per-message read returns, Ctrl-C ending a waiting call,
and no reference or memory growth over a million per-message calls."""
import os
import sys

import pytest

# The misuse suite's runner (a fresh interpreter, a timeout, stderr on failure).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "misuse"))
from misuse_support import run_case  # noqa: E402

# Ctrl-C from another process (as from a terminal) every millisecond, while
# this one writes and reads messages one by one: 128 KiB ones (copied without
# the GIL), or 32-byte ones (the calls that keep the GIL throughout, poll(1)
# reusing its list), until enough reader calls were interrupted or the time is
# up.  The handler raises only inside a reader call (a profile hook marks it);
# the call must then hand the message over on KeyboardInterrupt.messages.
INTERRUPTED_READS = """
    import subprocess
    q = pq.Queue(block_size=1 << 18, hot_blocks=4, spill_blocks=4, publish="each")
    size, n = SIZE, 400_000
    enough, until = 20, time.monotonic() + 2.0
    names = ("read", "poll", "get_nowait", "get", "__next__")
    armed = [False]
    def hook(frame, event, arg):
        if getattr(arg, "__name__", "") in names:
            armed[0] = event == "c_call"
    def handler(signum, frame):
        if armed[0] and frame.f_code is not hook.__code__:
            armed[0] = False
            raise KeyboardInterrupt
    signal.signal(signal.SIGINT, handler)
    pester = subprocess.Popen([sys.executable, "-c", "import os, sys, time\\n"
                               "print('ready', flush=True)\\n"
                               "while True:\\n"
                               "    time.sleep(0.001); os.kill(int(sys.argv[1]), 2)",
                               str(os.getpid())], stdout=subprocess.PIPE)
    assert pester.stdout.readline() == b"ready\\n"
    it = iter(q.reader)
    calls = (q.reader.read, lambda: q.reader.poll(1)[0], q.reader.get_nowait,
             q.reader.get, lambda: next(it))
    got, interrupts = [], 0
    sys.setprofile(hook)
    for i in range(n):
        q.writer.write(i.to_bytes(8, "little") * (size // 8))
        try:
            got.append(calls[i % len(calls)]())
        except KeyboardInterrupt as e:
            interrupts += 1
            got += e.messages
        # Until enough interrupts or the time is up; with none yet, up to 20 s
        # more, so that a slow or unlucky run still tests something.
        if i % 64 == 0 and (interrupts >= enough or
                            time.monotonic() > until + (0 if interrupts else 20)):
            break
    sys.setprofile(None)
    pester.kill(); pester.wait()
    n = i + 1
    assert len(got) == n, (len(got), n)
    assert all(m == i.to_bytes(8, "little") * (size // 8) for i, m in enumerate(got))
    assert q.stats()["messages_read"] == n and not q.reader._is_busy()
    print(interrupts)
"""


@pytest.mark.parametrize("size", [32, 128 << 10])
def test_ctrl_c_as_a_read_returns_never_loses_the_message(size):
    out = run_case("interrupted_reads_%d" % size,
                   INTERRUPTED_READS.replace("SIZE", str(size)), timeout=120)
    assert int(out) > 0, "no reader call was interrupted: the case tested nothing"


WAIT_THEN_CTRL_C = """
    q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=0, publish="each")
    FILL
    def later():
        time.sleep(0.3); signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    threading.Thread(target=later, daemon=True).start()
    try:
        CALL
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the waiting call returned")
    assert not q.writer._is_busy() and not q.reader._is_busy()   # the side is free again
    q.reader.poll(); q.writer.write(b"after"); assert q.reader.poll() == [b"after"]
    q.close()
    print("ok")
"""
FULL = "while q.writer.try_write(b'm' * 32):\n        pass"
WAITS = {"write": (FULL, "q.writer.write(b'm' * 32)"),
         "put_timeout": (FULL, "q.writer.put(b'm' * 32, timeout=30)"),
         "read": ("pass", "q.reader.read()"),
         "get_timeout": ("pass", "q.reader.get(timeout=30)"),
         "iteration": ("pass", "next(iter(q.reader))")}


@pytest.mark.parametrize("name", sorted(WAITS))
def test_ctrl_c_ends_a_waiting_call_and_frees_the_side(name):
    fill, call = WAITS[name]
    out = run_case("ctrl_c_" + name, WAIT_THEN_CTRL_C.replace("FILL", fill).replace("CALL", call),
                   timeout=30)
    assert out.strip() == "ok"


# A million per-message calls (and their error paths) leave the process's RSS,
# the traced Python allocations and the refcounts of what they touch flat.
NO_LEAKS = """
    import tracemalloc
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    q = pq.Queue(publish="each")
    w, r = q.writer, q.reader
    msg = b"m" * 32
    def loop(n):
        for _ in range(n):
            w.write(msg); r.poll(1)
            w.try_write(msg); r.read()
            w.put_nowait(msg); r.get_nowait()
            w.put(msg, timeout=1); r.get(timeout=1)
            try:
                r.get_nowait()
            except pq.QueueEmpty:
                pass
            r.poll(); r.poll(4)
    loop(100_000)
    refs = (sys.getrefcount(msg), sys.getrefcount(w), sys.getrefcount(r), sys.getrefcount(None))
    before = rss()
    loop(1_000_000)
    grown = rss() - before
    after = (sys.getrefcount(msg), sys.getrefcount(w), sys.getrefcount(r), sys.getrefcount(None))
    assert refs[:3] == after[:3], (refs, after)
    assert abs(after[3] - refs[3]) < 1000, (refs, after)      # None: no leak of a reference per call
    assert grown < 4 << 20, "RSS grew by %d bytes over 1 M rounds" % grown
    tracemalloc.start()
    loop(1000)
    base = tracemalloc.get_traced_memory()[0]
    loop(50_000)
    traced = tracemalloc.get_traced_memory()[0] - base
    assert traced < 64 << 10, "traced memory grew by %d bytes" % traced
    if hasattr(sys, "gettotalrefcount"):            # a debug build
        t0 = sys.gettotalrefcount(); loop(10_000)
        assert sys.gettotalrefcount() - t0 < 1000
    q.close()
    print(grown, traced)
"""


def test_a_million_calls_leak_no_reference_and_no_memory():
    run_case("no_leaks", NO_LEAKS, timeout=300)


# A signal handler closes the queue just as a waiting read() is woken by a
# message: the read returns it or raises QueueClosed, and never uses the handle
# the handler took away.
CLOSE_AS_A_MESSAGE_COMES = """
    outcomes = set()
    for i in range(60):
        q = pq.Queue(block_size=256, hot_blocks=2, spill_blocks=0, publish="each")
        signal.signal(signal.SIGUSR1, lambda *a: q.close())
        def later():
            time.sleep(0.002 + (i % 6) * 0.0005)
            q.writer.write(b"late")
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
        t = threading.Thread(target=later); t.start()
        try:
            outcomes.add(q.reader.read(timeout=10))
        except pq.QueueClosed:
            outcomes.add("closed")
        t.join()
        time.sleep(0.01)
        assert q.closed
    assert outcomes <= {b"late", "closed"}, outcomes
    print(sorted(map(str, outcomes)))
"""


def test_a_handler_closing_as_a_read_wakes_never_crashes():
    run_case("close_as_a_message_comes", CLOSE_AS_A_MESSAGE_COMES, timeout=120)
