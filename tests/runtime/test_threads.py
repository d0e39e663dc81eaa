"""C producer/consumer threads: delivery, stop, Ctrl-C, verification failures,
pinning errors, idle strategies, sample arrays.  Behaviour only, never timings."""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pyqueue as pq
from pyqueue.lab.runtime.samples import sample_buffer
from pyqueue.lab.runtime.threads import ConsumerThread, ProducerThread

import support

ROOT = support.ROOT


@pytest.fixture
def q():
    with pq.Queue(hot_blocks=4, spill_blocks=256) as queue:
        yield queue


def run_pair(q, n, consumer_kw=None, producer_kw=None, timeout=20):
    c = ConsumerThread(q, n, **(consumer_kw or {})).start()
    p = ProducerThread(q, n, **(producer_kw or {})).start()
    pr = p.join(timeout)
    cr = c.join(timeout)
    return pr, cr


def test_delivers_all_messages_verified(q):
    deq = np.zeros(20_000, np.uint64)
    sched, offer = np.zeros(20_000, np.uint64), np.zeros(20_000, np.uint64)
    pr, cr = run_pair(q, 20_000, dict(work="loop64", dequeue_ns=deq),
                      dict(burst_bytes=16 * 1024, gap_ns=20_000, scheduled_ns=sched, offer_ns=offer))
    assert (pr.end, cr.end) == ("done", "done")
    assert pr.messages == cr.messages == 20_000
    assert pr.bytes == cr.bytes == 20_000 * 32
    assert pr.bursts == 40  # 16 KiB of 32 B messages per burst
    assert cr.sink != 0
    # Every sample was written, in order, and nothing was offered before its schedule.
    assert np.all(deq > 0) and np.all(np.diff(deq.astype(np.int64)) >= 0)
    assert np.all(offer >= sched) and np.all(np.diff(sched.astype(np.int64)) >= 0)
    assert q.stats()["backlog"] == 0


def test_random_sizes_and_length_check(q):
    size = (1, 200)
    pr, cr = run_pair(q, 5_000, dict(size=size, size_salt=7), dict(size=size, size_salt=7))
    assert cr.messages == 5_000 and cr.bytes == pr.bytes


def test_paced_producer_keeps_schedule(q):
    sched, offer = np.zeros(200, np.uint64), np.zeros(200, np.uint64)
    pr, cr = run_pair(q, 200, {}, dict(rate=200_000.0, pacer_burst=10, scheduled_ns=sched, offer_ns=offer))
    d = np.diff(sched.astype(np.int64))
    assert np.all(d[:9] == 0)          # the bucket's 10 tokens go back to back
    assert np.all(np.abs(d[9:] - 5_000) <= 1)  # then one every 1/rate = 5 us
    assert np.all(offer >= sched)


@pytest.mark.parametrize("idle", ["spin", "relax", "yield", "backoff"])
def test_every_idle_strategy_delivers(q, idle):
    pr, cr = run_pair(q, 3_000, dict(idle=idle, idle_spins=8, idle_yield_every=4),
                      dict(burst_bytes=32 * 100, gap_ns=200_000, start_delay_ns=1_000_000))
    assert cr.messages == 3_000 and cr.end == "done"
    st = cr.idle
    assert st["periods"] >= 1 and st["empty_polls"] >= st["periods"]
    if idle == "spin":
        assert st["spins"] == st["empty_polls"]
    if idle == "yield":
        assert st["yields"] >= 1
    if idle == "backoff":
        assert st["sleeps"] >= 1 and st["relaxes"] >= 1


def test_backoff_reaches_the_cap(q):
    c = ConsumerThread(q, 0, idle="backoff", idle_spins=0, idle_sleep_min_ns=1000,
                       idle_sleep_cap_ns=8000).start()
    assert not c.wait(0.2)  # empty queue: the consumer keeps backing off
    r = c.join(timeout=10, stop=True)
    assert r.end == "stopped"
    assert r.idle["sleeps"] > 4 and r.idle["sleeps_at_cap"] >= 1


def test_stop_an_endless_consumer(q):
    c = ConsumerThread(q, 0, idle="relax").start()
    assert not c.wait(0.05)
    r = c.join(timeout=10, stop=True)
    assert r.end == "stopped" and r.messages == 0


def test_stop_a_producer_blocked_on_a_full_queue():
    with pq.Queue(hot_blocks=1, spill_blocks=1, block_size=4096) as q:
        p = ProducerThread(q, 1_000_000).start()
        assert not p.wait(0.1)
        r = p.join(timeout=10, stop=True)
        assert r.end == "stopped" and r.full_waits >= 1 and r.messages < 1_000_000


def test_close_wakes_the_threads_and_waits_for_them():
    q = pq.Queue(hot_blocks=1, spill_blocks=1)
    p = ProducerThread(q, 1_000_000).start()
    c = ConsumerThread(q, 0, work="spin_ns", work_ns=2_000).start()
    time.sleep(0.05)
    q.close()  # waits until both C threads have left the queue
    with pytest.raises(pq.QueueClosed):
        p.join(timeout=10)
    assert c.join(timeout=10).end == "closed"


def test_side_in_use_is_refused(q):
    c = ConsumerThread(q, 0).start()
    try:
        with pytest.raises(pq.QueueError, match="reader side is in use"):
            ConsumerThread(q, 0).start()
    finally:
        c.join(timeout=10, stop=True)


@pytest.mark.parametrize("fault", [("corrupt", 123), ("skip", 77)])
def test_verification_failure_is_raised(q, fault):
    c = ConsumerThread(q, 1_000).start()
    p = ProducerThread(q, 1_000, fault=fault).start()
    with pytest.raises(pq.VerificationError) as ei:
        c.join(timeout=20)
    assert ei.value.seq == fault[1]
    assert ei.value.result.messages == fault[1]
    assert ei.value.result.end == "error" and ei.value.result.failed_step == "run"
    p.join(timeout=20, stop=True)


def test_wrong_length_is_a_verification_failure(q):
    c = ConsumerThread(q, 10, size=16).start()
    ProducerThread(q, 10, size=32).start().join(timeout=10)
    with pytest.raises(pq.VerificationError):
        c.join(timeout=10)


def test_ctrl_c_stops_the_threads(q):
    c = ConsumerThread(q, 0).start()
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            c.wait()  # no timeout: only Ctrl-C ends it
    finally:
        timer.cancel()
    assert c.done and c.result.end == "stopped"


def test_pin_to_a_cpu_that_does_not_exist(q):
    with pytest.raises(ValueError, match="consumer_cpu=%d" % (os.cpu_count() + 5)):
        ConsumerThread(q, 1, cpu=os.cpu_count() + 5)


def test_pinned_threads_run_where_asked(q):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    pr, cr = run_pair(q, 1_000, dict(cpu=cpu), dict(cpu=cpu))
    assert pr.cpu_start == pr.cpu_end == cr.cpu_start == cr.cpu_end == cpu
    assert pr.cpu_changes == 0


_CHILD = r"""
import os, sys
import pyqueue as pq
from pyqueue.lab._lab import ffi, lib
from pyqueue.lab.runtime.threads import ConsumerThread
os.sched_setaffinity(0, {0})
q = pq.Queue(spill_blocks=1)
try:
    ConsumerThread(q, 1, cpu=1)          # Python check
except ValueError as e:
    print("PY", e)
cfg = ffi.new("pyq_consumer_config_t *")  # the C check, behind Python's back
lib.pyq_consumer_config_init(cfg)
cfg.cpu = 1
out, step = ffi.new("pyq_thread_t **"), ffi.new("int *")
print("C", lib.pyq_consumer_start(q.c_handle, cfg, out, step), step[0] == lib.PYQ_STEP_PIN)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or 0 not in os.sched_getaffinity(0),
                    reason="needs CPUs 0 and 1")
def test_pin_outside_a_restricted_affinity_set():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert out.returncode == 0, out.stderr
    assert "PY consumer_cpu=1: CPU 1 is not in this process's allowed CPUs 0" in out.stdout
    assert "C -22 True" in out.stdout


def test_refused_sched_fifo_names_the_policy(q):
    if os.geteuid() == 0:
        # root may use SCHED_FIFO; take the right away in a child (RLIMIT_RTPRIO 0, no CAP_SYS_NICE)
        pytest.importorskip("resource")
    code = r"""
import os, resource
import pyqueue as pq
from pyqueue.lab.runtime.threads import ConsumerThread
if os.geteuid() == 0:
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    os.setgid(65534); os.setuid(65534)   # drop root: no CAP_SYS_NICE
q = pq.Queue(spill_blocks=1)
try:
    ConsumerThread(q, 1, fifo_priority=5).start()
    print("STARTED")
except PermissionError as e:
    print("REFUSED", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert out.returncode == 0, out.stderr
    assert "REFUSED consumer thread SCHED_FIFO priority 5 refused" in out.stdout


def test_short_sched_fifo_run(q):
    from pyqueue.lab.runtime import cpu
    ok, _ = cpu.probe_fifo()
    if not ok:
        pytest.skip("SCHED_FIFO not allowed here")
    # Bounded and idle-friendly: a backoff consumer sleeps when empty.
    pr, cr = run_pair(q, 1_000, dict(fifo_priority=1, idle="backoff"), dict(fifo_priority=1))
    assert pr.policy == cr.policy == "SCHED_FIFO" and cr.messages == 1_000


def test_counters_in_threads(q):
    pr, cr = run_pair(q, 1_000, dict(perf=True), dict(perf=["context-switches", "page-faults"]))
    assert set(pr.counters) == {"context-switches", "page-faults"}
    assert len(cr.counters) == 8
    for name, st in cr.counter_status.items():
        assert (cr.counters[name] is None) == (not st.available)


@pytest.mark.parametrize("arr, exc, msg", [
    (np.zeros(10, np.int64), TypeError, "dtype uint64"),
    (np.zeros((10, 2), np.uint64), ValueError, "1-D"),
    (np.zeros(20, np.uint64)[::2], ValueError, "C-contiguous"),
    (np.zeros(5, np.uint64), ValueError, "at least 10"),
    ([0] * 10, TypeError, "numpy.ndarray"),
])
def test_wrong_sample_arrays_are_refused(q, arr, exc, msg):
    with pytest.raises(exc, match=msg):
        ConsumerThread(q, 10, dequeue_ns=arr)
    with pytest.raises(exc, match=msg):
        ProducerThread(q, 10, scheduled_ns=arr, offer_ns=np.zeros(10, np.uint64))


def test_read_only_sample_array_is_refused():
    a = np.zeros(4, np.uint64)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        sample_buffer(a, "dequeue_ns", 4)


@pytest.mark.parametrize("kw", [dict(work="fast"), dict(idle="sleep"), dict(count=-1),
                                dict(fifo_priority=100), dict(cpu=-2), dict(idle_sleep_cap_ns=10)])
def test_bad_consumer_parameters(q, kw):
    kw = dict(dict(count=1), **kw)
    with pytest.raises(ValueError):
        ConsumerThread(q, **kw)


def test_producer_message_too_large(q):
    with pytest.raises(ValueError, match="size must be in"):
        ProducerThread(q, 1, size=4096)


def test_idle_fields_come_from_the_cdef(q):
    from pyqueue.lab.runtime import threads
    from pyqueue.lab._lab import ffi
    assert threads.IDLE_FIELDS == tuple(n for n, _ in ffi.typeof("pyq_idle_config_t").fields)[1:]
    assert threads.IDLE_STATS == tuple(n for n, _ in ffi.typeof("pyq_idle_stats_t").fields)
    with pytest.raises(TypeError, match="unknown ConsumerThread parameter idle_naps; the idle "
                                        "ones are idle_spins, idle_yield_every"):
        ConsumerThread(q, 1, idle_naps=3)
    with pytest.raises(ValueError, match=r"idle_sleep_cap_ns must be in \[2000, 1000000000\]"):
        ConsumerThread(q, 1, idle_sleep_min_ns=2000, idle_sleep_cap_ns=1000)
    c = ConsumerThread(q, 1, idle_spins=0).start()
    ProducerThread(q, 1).start().join(timeout=30)
    assert tuple(c.join(timeout=30).idle) == threads.IDLE_STATS



def test_a_c_thread_owns_its_side_lock(q):
    c = ConsumerThread(q, 100).start()
    assert q.reader.side_lock.locked() and not q.writer.side_lock.locked()
    ProducerThread(q, 100).start().join(timeout=30)
    c.join(timeout=30)
    assert not q.reader.side_lock.locked() and not q.writer.side_lock.locked()


def test_idle_config_fills_any_idle_config_with_c_defaults():
    from pyqueue.lab.runtime import threads
    from pyqueue.lab._lab import ffi, lib
    c = threads.idle_config(ffi.new("pyq_idle_config_t *"), "spin", {"idle_spins": 3}, "run_once")
    d = ffi.new("pyq_idle_config_t *")
    lib.pyq_idle_config_init(d, threads.IDLE["spin"])
    assert (c.strategy, c.spins) == (d.strategy, 3)
    assert [getattr(c, f) for f in threads.IDLE_FIELDS[1:]] == \
        [getattr(d, f) for f in threads.IDLE_FIELDS[1:]]
    with pytest.raises(TypeError, match="unknown run_once parameter idle_naps"):
        threads.idle_config(ffi.new("pyq_idle_config_t *"), "spin", {"idle_naps": 1}, "run_once")
    with pytest.raises(ValueError, match="idle must be one of"):
        threads.idle_config(ffi.new("pyq_idle_config_t *"), "nap", {})
