"""Clocks, CPU sampling, pinning of the calling thread, the pacer and the idle
strategy's stage logic (C, through cffi)."""
import os
import threading

import pytest

from pyqueue.lab.runtime import clock, cpu
from pyqueue.lab._lab import ffi, lib


def test_clocks():
    a = clock.now_ns()
    assert clock.now_ns() >= a
    cc = clock.calibrate()
    if cc.available:
        assert cc.ticks_per_ns > 0 and cc.name in ("rdtsc", "cntvct_el0")
        assert clock.cycles() > 0
        assert clock.cycles_to_ns(int(cc.ticks_per_ns * 1000)) == pytest.approx(1000, abs=1)
    costs = clock.costs(1000)
    assert costs["monotonic"] > 0 and costs["sched_getcpu"] > 0
    with pytest.raises(ValueError):
        clock.cost_ns("sundial")


def test_clock_step():
    # The resolution is a property of the machine (1 tick on most, 26 on some
    # VMs, 0 if the clock hardly moved): only that it is reported, in the right
    # units, and the argument checks are asserted -- never its size.
    cc = clock.calibrate()
    ticks = clock.step_ticks(2000)
    if not cc.available:
        assert ticks is None and clock.step_ns("cycles") is None
    else:
        assert type(ticks) is int and ticks >= 0
        assert type(clock.step_ns("cycles", 2000)) is float
    assert type(clock.step_ns("monotonic", 2000)) is float
    with pytest.raises(ValueError):
        clock.step_ns("sundial")
    out = ffi.new("uint64_t *")
    assert lib.pyq_clock_step(lib.PYQ_CLOCK_MONOTONIC, 0, out) == lib.PYQ_EINVAL
    assert lib.pyq_clock_step(99, 10, out) == lib.PYQ_EINVAL


def test_current_cpu_and_pinning_in_a_thread():
    allowed = cpu.allowed_cpus()
    seen = {}

    def body():
        for c in allowed:            # a pinned thread may move to another CPU
            cpu.pin_self(c)
            seen[c] = (cpu.current_cpu(), cpu.allowed_cpus())
        cpu.unpin_self()
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == {c: (c, [c]) for c in allowed}
    assert cpu.current_cpu() in allowed


def test_pin_self_refuses_a_missing_cpu():
    with pytest.raises(ValueError, match="cpu=%d" % (os.cpu_count() + 5)):
        cpu.pin_self(os.cpu_count() + 5)
    with pytest.raises(ValueError):
        cpu.pin_self(-1)


def test_fifo_priority_range():
    with pytest.raises(ValueError, match="SCHED_FIFO priority"):
        cpu.set_fifo_self(100)
    ok, detail = cpu.probe_fifo()
    assert "SCHED_FIFO" in detail


def test_pacer_schedule():
    p = ffi.new("pyq_pacer_t *")
    assert lib.pyq_pacer_init(p, 1000.0, 3, 0) == 0
    times = [lib.pyq_pacer_next(p, 10_000_000) for _ in range(6)]
    ms = 1_000_000
    assert times == [10 * ms, 10 * ms, 10 * ms, 11 * ms, 12 * ms, 13 * ms]
    # ready long after: the bucket refilled, 3 back to back again
    later = [lib.pyq_pacer_next(p, 100 * ms) for _ in range(4)]
    assert later == [100 * ms, 100 * ms, 100 * ms, 101 * ms]
    assert lib.pyq_pacer_init(p, -1.0, 1, 0) == lib.PYQ_EINVAL
    assert lib.pyq_pacer_init(p, 1.0, 0, 0) == lib.PYQ_EINVAL
    # unpaced: the schedule is the ready time
    lib.pyq_pacer_init(p, 0.0, 1, 0)
    assert lib.pyq_pacer_next(p, 5) == 5
    now = lib.pyq_clock_now_ns()
    assert lib.pyq_pacer_wait(p, now + 200_000) >= now + 200_000


def test_idle_stages():
    cfg = ffi.new("pyq_idle_config_t *")
    lib.pyq_idle_config_init(cfg, lib.PYQ_IDLE_BACKOFF)
    cfg.spins, cfg.sleep_min_ns, cfg.sleep_cap_ns = 3, 1000, 4000
    idle = ffi.new("pyq_idle_t *")
    assert lib.pyq_idle_init(idle, cfg) == 0
    for _ in range(7):
        lib.pyq_idle_wait(idle)
    st = idle.stats
    # 3 relaxes, then sleeps of 1, 2, 4 (cap), 4 (cap) us
    assert (st.periods, st.relaxes, st.sleeps, st.sleeps_at_cap, st.sleep_ns) == (1, 3, 4, 2, 11000)
    lib.pyq_idle_reset(idle)
    lib.pyq_idle_wait(idle)
    assert idle.stats.periods == 2 and idle.sleep_ns == 1000
    lib.pyq_idle_config_init(cfg, lib.PYQ_IDLE_YIELD)
    cfg.yield_every = 2
    lib.pyq_idle_init(idle, cfg)
    for _ in range(6):
        lib.pyq_idle_wait(idle)
    assert (idle.stats.yields, idle.stats.relaxes) == (3, 3)
    cfg.strategy = 9
    assert lib.pyq_idle_init(idle, cfg) == lib.PYQ_EINVAL
