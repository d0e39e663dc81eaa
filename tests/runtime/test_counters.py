"""perf counters: every counter reports available or why not; a failing
perf_event_open (simulated) gives a clean "unavailable", never an exception."""
import errno
import mmap

import pytest

from pyqueue.lab.runtime import counters


def test_status_is_reported_for_every_counter():
    st = counters.probe()
    assert list(st) == list(counters.NAMES) and len(st) == 8
    for s in st.values():
        assert s.available == (s.errno == 0) and s.available == (s.reason == "")


def test_software_counters_count():
    with counters.Counters(counters.SOFTWARE) as c:
        if not any(s.available for s in c.status.values()):
            pytest.skip("perf_event_open is not allowed here at all")
        # Fresh pages, so page faults: a bytearray may reuse memory malloc
        # already faulted in (glibc raises its mmap threshold after a big free).
        big = mmap.mmap(-1, 8 << 20)
        for off in range(0, len(big), 4096):
            big[off] = 1
        values = c.read()
    assert set(values) == set(counters.SOFTWARE)
    if c.status["page-faults"].available:
        assert values["page-faults"] > 0


@pytest.mark.parametrize("err", [errno.EACCES, errno.ENOENT, errno.ENOSYS])
def test_simulated_failure_is_clean(err):
    with counters.simulate_failure(err):
        st = counters.probe()
        with counters.Counters() as c:
            assert c.read() == {n: None for n in counters.NAMES}
            assert c.read_cost_ns() is None
    assert all(not s.available and s.errno == err for s in st.values())
    assert "perf_event_paranoid" in st["cycles"].reason if err == errno.EACCES else True
    # and back to the real system call afterwards
    assert counters.probe()["context-switches"].errno != err or err != errno.EACCES


def test_threads_report_simulated_failure():
    import pyqueue as pq
    from pyqueue.lab.runtime.threads import ConsumerThread, ProducerThread
    with pq.Queue(spill_blocks=16) as q, counters.simulate_failure(errno.EPERM):
        c = ConsumerThread(q, 100, perf=True).start()
        ProducerThread(q, 100).start().join(timeout=10)
        r = c.join(timeout=10)
    assert r.counters == {n: None for n in counters.NAMES}
    assert all(s.errno == errno.EPERM for s in r.counter_status.values())


def test_mask_of():
    assert counters.mask_of(True) == 255 and counters.mask_of(None) == 0
    assert counters.mask_of("cycles") == 1
    with pytest.raises(ValueError, match="unknown counter"):
        counters.mask_of(["cycels"])
