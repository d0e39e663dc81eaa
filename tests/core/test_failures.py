"""Clean failure (RELIABILITY.md): each way a run can go wrong ends in a clear error or
a documented fallback, never a hang, a crash or a lost message.  Every wait
here is bounded; cases that change process state (affinity, rlimits,
capabilities, signals) run in a child process."""
import ctypes
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import pyqueue as pq
from pyqueue.lab.common import output as _output
from pyqueue.lab.runtime.threads import ConsumerThread, ProducerThread

import support

ROOT = support.ROOT
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def child(code, preexec_fn=None, timeout=60):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=ENV, cwd=ROOT, preexec_fn=preexec_fn)


def seqs(messages):
    return [int.from_bytes(m[:8], "little") for m in messages]


def drain(q):
    """Every visible message (poll() until empty: one poll() may return fewer)."""
    out = []
    while True:
        got = q.reader.poll()
        if not got:
            return out
        out += got


# --- a C thread that hits a verification error ----------------------------

@pytest.mark.parametrize("fault", ["corrupt", "skip"])
def test_verification_error_in_a_c_thread(fault):
    with pq.Queue(block_size=512, hot_blocks=2, spill_blocks=8, publish="each") as q:
        c = ConsumerThread(q, 0).start()
        p = ProducerThread(q, 10**9, fault=(fault, 500)).start()
        with pytest.raises(pq.VerificationError, match="seq 500 after 500 good messages") as e:
            c.join(timeout=30)
        assert e.value.seq == 500 and e.value.result.end == "error"
        # The producer now faces a consumer that stopped: it waits (bounded
        # slices), and a stop request ends it without an error.
        with pytest.raises(TimeoutError, match="still running"):
            p.join(timeout=0.2)
        r = p.join(timeout=10, stop=True)
        assert r.end == "stopped" and r.error == 0


# --- a full queue with a timeout ------------------------------------------

def test_full_queue_timeout_loses_nothing():
    with pq.Queue(block_size=256, hot_blocks=1, spill_blocks=2, publish="max") as q:
        n = 0
        while q.writer.try_write(n.to_bytes(8, "little") * 4):
            n += 1
        with pytest.raises(pq.QueueFull):            # the timeout ends the wait
            q.writer.write(b"\xff" * 32, timeout=0.05)
        with pytest.raises(pq.QueueFull) as e:
            q.writer.write_batch(np.full((10, 32), 0xFF, np.uint8), timeout=0.02)
        assert e.value.written == 0
        assert not q.writer.try_write(b"\xff" * 32)
        q.writer.flush()
        got = drain(q)
        # Every accepted message exactly once, in order; none of the refused ones.
        assert seqs(got) == list(range(n))
        assert q.stats()["full_events"] >= 3
        q.writer.write(b"after", timeout=0.05)       # room again
        q.writer.flush()
        assert q.reader.poll() == [b"after"]


def test_write_batch_timeout_reports_how_many_went_in():
    with pq.Queue(block_size=256, hot_blocks=1, spill_blocks=3, publish="max") as q:
        arr = np.zeros((100, 32), np.uint8)
        arr[:, :8] = np.arange(100, dtype=np.uint64).view(np.uint8).reshape(100, 8)
        with pytest.raises(pq.QueueFull) as e:
            q.writer.write_batch(arr, timeout=0.02)
        k = e.value.written
        assert 0 < k < 100
        q.writer.flush()
        assert seqs(drain(q)) == list(range(k))


# --- a consumer that stops consuming --------------------------------------

def test_consumer_that_stops_then_another_takes_over():
    with pq.Queue(block_size=1024, hot_blocks=2, spill_blocks=8) as q:
        c1 = ConsumerThread(q, 1000).start()
        p = ProducerThread(q, 10**9, burst_bytes=4096).start()
        assert c1.join(timeout=30).messages == 1000
        # The queue fills; the producer waits in bounded slices, never ends alone.
        with pytest.raises(TimeoutError):
            p.join(timeout=0.3)
        pr = p.join(timeout=10, stop=True)
        assert pr.end == "stopped"
        # Nothing was lost: a new consumer continues at seq 1000 and gets
        # every message the producer committed (it flushed when stopped).
        c2 = ConsumerThread(q, pr.messages - 1000, first_seq=1000).start()
        assert c2.join(timeout=30).messages == pr.messages - 1000
        assert q.stats()["backlog"] == 0


def test_close_wakes_a_producer_facing_a_stopped_consumer():
    q = pq.Queue(block_size=256, hot_blocks=1, spill_blocks=2)
    p = ProducerThread(q, 10**9).start()
    deadline = time.monotonic() + 30
    while q.stats()["full_events"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    q.close()                       # wakes the waiting producer, then unmaps
    with pytest.raises(pq.QueueClosed, match="closed after"):
        p.join(timeout=10)
    assert q.closed


@pytest.mark.parametrize("publish", ["max", "each"])
def test_close_during_a_run_consumer_drains_everything(publish):
    # Close while both C threads run (one long burst: nothing flushed until the
    # end): the consumer ends "closed" once it has drained the queue, and it must
    # have every message the producer reports as sent.
    for attempt in range(3):
        q = pq.Queue(block_size=4096, hot_blocks=4, spill_blocks=64, publish=publish)
        c = ConsumerThread(q, 0).start()
        p = ProducerThread(q, 10**9).start()
        deadline = time.monotonic() + 30
        while c.messages < 20_000 and time.monotonic() < deadline:
            time.sleep(0.005)
        q.close()
        with pytest.raises(pq.QueueClosed) as e:
            p.join(timeout=10)
        pr = e.value.result
        cr = c.join(timeout=10)
        assert cr.end == "closed"
        assert cr.messages == pr.messages, (
            "attempt %d: producer committed %d messages, consumer drained %d: %d lost at close"
            % (attempt, pr.messages, cr.messages, pr.messages - cr.messages))


# --- Ctrl-C in the middle of an experiment --------------------------------

def _interrupt(args, ready, delays):
    """Run args, wait until ready(proc) (it reads the first line that says the
    child is running), then send one SIGINT after each of delays (s).
    Returns (returncode, stdout, stderr)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV, cwd=ROOT)
    try:
        assert ready(proc)
        for d in delays:
            time.sleep(d)
            proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stdout, stderr


def test_ctrl_c_stops_the_soak_with_a_summary_and_a_valid_folder(tmp_path):
    out = tmp_path / "soak"
    rc, stdout, stderr = _interrupt(
        [sys.executable, "-m", "pyqueue", "soak", "--seconds", "30", "--slice", "0.2",
         "--period", "2", "--seed", "5", "--out", str(out)],
        lambda p: p.stderr.readline().startswith("soak:"),   # first progress line: running
        [1.0])
    assert rc == 130, stdout + stderr
    assert "stopping after the current slice" in stderr
    assert "status            interrupted after" in stdout
    assert "Traceback" not in stderr
    loaded = _output.load(out)                                # checksums verify
    assert not loaded.complete and loaded.status.startswith("interrupted after")
    s = loaded.results["summary"]
    assert s["messages_checked"] == s["totals"]["written"] > 0 and s["error"] == ""


def test_second_ctrl_c_aborts_at_once():
    rc, stdout, stderr = _interrupt(
        [sys.executable, "-m", "pyqueue", "soak", "--seconds", "30", "--slice", "0.2"],
        lambda p: p.stderr.readline().startswith("soak:"), [0, 0.05])
    assert rc in (130, -signal.SIGINT), stdout + stderr
    assert "Segmentation" not in stderr


def test_ctrl_c_ends_a_waiting_read():
    # Reader.read() with no writer and no timeout waits in C; Ctrl-C must reach
    # Python between two wait slices, and the queue must still work after it.
    code = ("import pyqueue as pq, sys\n"
            "q = pq.Queue(publish='each')\n"
            "print('waiting', flush=True)\n"
            "try:\n"
            "    q.reader.read()\n"
            "except KeyboardInterrupt:\n"
            "    q.writer.write(b'after')\n"
            "    print('interrupted', q.reader.read(timeout=1).decode(), flush=True)\n"
            "    q.close()\n"
            "    sys.exit(130)\n")
    rc, stdout, stderr = _interrupt([sys.executable, "-c", code],
                                    lambda p: p.stdout.readline().strip() == "waiting", [0.3])
    assert rc == 130, stdout + stderr
    assert stdout.strip() == "interrupted after", stdout + stderr


# --- a CPU that disappears from the allowed set ----------------------------

@pytest.mark.two_cpus
def test_cpu_removed_from_the_allowed_set():
    cpus = sorted(os.sched_getaffinity(0))
    proc = child("""
        import os
        import pyqueue as pq
        from pyqueue.lab.runtime.threads import ConsumerThread, ProducerThread
        from pyqueue.lab._lab import ffi, lib
        keep, gone = %d, %d
        os.sched_setaffinity(0, {keep})          # the CPU 'disappears'
        q = pq.Queue(spill_blocks=16, publish="each")
        for cls, kw in ((ConsumerThread, {}), (ProducerThread, {"count": 10})):
            try:
                cls(q, cpu=gone, **kw).start()
            except ValueError as e:     # checked in Python first, naming the allowed set
                assert "CPU %%d" %% gone in str(e) and "allowed CPUs %%d" %% keep in str(e), e
            else:
                raise AssertionError("pinned to a CPU outside the allowed set")
        # The C start refuses it too (for callers that skip the Python check).
        cc = ffi.new("pyq_consumer_config_t *"); lib.pyq_consumer_config_init(cc); cc.cpu = gone
        out, step = ffi.new("pyq_thread_t **"), ffi.new("int *")
        assert lib.pyq_consumer_start(q.c_handle, cc, out, step) == lib.PYQ_EINVAL
        assert step[0] == lib.PYQ_STEP_PIN
        assert lib.pyq_cpu_allowed(gone) == 0
        # The queue is untouched and the sides are free again.
        c = ConsumerThread(q, 10, cpu=keep).start()
        p = ProducerThread(q, 10, cpu=keep).start()
        assert p.join(10).messages == c.join(10).messages == 10
        print("ok")
    """ % (cpus[0], cpus[1]))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


# --- mlock refused, hugepages unavailable ----------------------------------

def _memlock_limit(limit):
    """preexec: lower RLIMIT_MEMLOCK and, as root, drop CAP_IPC_LOCK (which
    ignores the limit) from the bounding set so the exec'd child lacks it."""
    def pre():
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit, limit))
        if os.geteuid() == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(24, 14, 0, 0, 0)  # PR_CAPBSET_DROP, CAP_IPC_LOCK
    return pre


MLOCK_CHILD = """
    import pyqueue as pq
    caps = int(open("/proc/self/status").read().split("CapEff:")[1].split()[0], 16)
    if caps & (1 << 14):
        print("skip: CAP_IPC_LOCK could not be dropped"); raise SystemExit
    for spill in (1024, 0):             # 4 MiB: over the limit; 16 KiB: within 64 KiB
        try:                            # (max_message=0: no large region in the pool)
            with pq.Queue(spill_blocks=spill, mlock=True, max_message=0) as q:
                q.writer.write(b"x"); q.writer.flush()
                assert q.reader.poll() == [b"x"]
                print("ok: mlocked=%d" % q.stats()["mlocked"])
        except Exception as e:
            print(type(e).__name__ + ": " + str(e))
"""


def _mlock_outcome(limit):
    proc = child(MLOCK_CHILD, preexec_fn=_memlock_limit(limit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if proc.stdout.startswith("skip:"):
        pytest.skip(proc.stdout.strip())
    return proc.stdout.strip()


def test_mlock_refused_with_a_zero_limit():
    big, small = _mlock_outcome(0).splitlines()
    for line in (big, small):
        assert line.startswith("PermissionError: mlock of the"), line
        assert "RLIMIT_MEMLOCK" in line and "mlock=False" in line


def test_mlock_within_the_limit_is_used():
    small = _mlock_outcome(64 * 1024).splitlines()[1]
    assert small == "ok: mlocked=1"


def test_mlock_refused_with_a_small_limit():
    big = _mlock_outcome(64 * 1024).splitlines()[0]
    assert big.startswith("PermissionError: mlock of the"), big


def test_hugepages_fall_back_and_stats_say_so():
    try:
        reserved = int(open("/proc/sys/vm/nr_hugepages").read())
    except OSError:
        reserved = None
    with pq.Queue(spill_blocks=1024, hugepages=True, publish="each") as q:
        used = q.stats()["hugepages_used"]
        # 1: MAP_HUGETLB; 2: MADV_HUGEPAGE advice on normal pages; 0: neither.
        assert used in (0, 1, 2)
        if reserved == 0:
            assert used != 1, "MAP_HUGETLB cannot succeed without reserved huge pages"
        for i in range(5000):                       # the pool works either way
            q.writer.write(i.to_bytes(8, "little") * 8)
        assert seqs(drain(q)) == list(range(5000))
    with pq.Queue(spill_blocks=16) as q:
        assert q.stats()["hugepages_used"] == 0     # not asked, not used
