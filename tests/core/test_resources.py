"""Resource bounds (DESIGN §3; docs/RELIABILITY.md): no allocation on the hot path, memory
use equal to the configured pool, close() gives it all back, and repeated
create/close leaks nothing.  Each case runs in a fresh interpreter, so other
tests' memory cannot blur the RSS figures; the malloc count uses an LD_PRELOAD
interposer (tests/c/alloc_count.c) built here."""
import os
import platform
import shutil
import subprocess
import sys
import textwrap

import pytest

import support

ROOT = support.ROOT
MiB = 1 << 20

PRELUDE = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, %r)
    import numpy as np
    import pyqueue as pq
    PAGE = os.sysconf("SC_PAGE_SIZE")
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
""" % ROOT)


def run_py(body, env=None, timeout=180):
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def figures(out):
    return {k: int(v) for k, v in (line.split("=") for line in out.split() if "=" in line)}


needs_linux = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")


@pytest.fixture(scope="module")
def alloc_count(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None or platform.libc_ver()[0] != "glibc":
        pytest.skip("the malloc interposer needs a C compiler and glibc")
    so = tmp_path_factory.mktemp("alloc") / "alloc_count.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so),
                    os.path.join(ROOT, "tests", "c", "alloc_count.c")], check=True)
    return str(so)


@needs_linux
@pytest.mark.parametrize("publish,scan", [("max", False), ("each", True), ("bytes:512", False)])
def test_no_allocation_in_steady_state(alloc_count, publish, scan):
    # C producer and consumer threads run random-size messages; the consumer is
    # slower, so the window covers tier-2 spills and full-queue waits too.  Every
    # allocation call from any thread during the window is counted.
    out = run_py("""
        import ctypes
        from pyqueue.lab.runtime.threads import ConsumerThread, ProducerThread
        lib = ctypes.CDLL(%r)
        lib.pyq_alloc_window_ns.restype = ctypes.c_ulong
        lib.pyq_alloc_window_ns.argtypes = [ctypes.c_uint64]
        lib.pyq_alloc_first_size.restype = ctypes.c_long
        q = pq.Queue(block_size=1024, hot_blocks=2, spill_blocks=64, publish=%r,
                     scan_current=%r, retry_yield_every=16)
        c = ConsumerThread(q, 0, size=(1, 300), size_salt=5, work="spin_ns", work_ns=300,
                           idle="backoff").start()
        p = ProducerThread(q, 10**12, size=(1, 300), size_salt=5, burst_bytes=32768,
                           gap_ns=200_000).start()
        while c.messages < 20_000:
            time.sleep(0.01)
        s0, m0 = q.stats(), c.messages
        calls = lib.pyq_alloc_window_ns(400_000_000)
        first = lib.pyq_alloc_first_size()
        s1, m1 = q.stats(), c.messages
        p.stop(); c.stop()
        p.join(10); c.join(10)
        print("calls=%%d first=%%d consumed=%%d spills=%%d full=%%d"
              %% (calls, first, m1 - m0, s1["takes_spill"] - s0["takes_spill"],
                 s1["full_events"] - s0["full_events"]))
    """ % (alloc_count, publish, scan), env={"LD_PRELOAD": alloc_count})
    f = figures(out)
    assert f["calls"] == 0, "%d allocation calls in the steady state (first of %d bytes)" % (
        f["calls"], f["first"])
    assert f["consumed"] > 0, out
    assert f["spills"] > 0, "the window should include tier-2 takes: " + out


@needs_linux
def test_interposer_sees_allocations(alloc_count):
    # The counter is live: a thread that allocates during the window is seen.
    out = run_py("""
        import ctypes, threading
        lib = ctypes.CDLL(%r)
        lib.pyq_alloc_window_ns.restype = ctypes.c_ulong
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        def alloc():
            time.sleep(0.05)
            libc.free(ctypes.c_void_p(libc.malloc(100)))
        t = threading.Thread(target=alloc); t.start()
        print("calls=%%d" %% lib.pyq_alloc_window_ns(300_000_000)); t.join()
    """ % alloc_count, env={"LD_PRELOAD": alloc_count})
    assert figures(out)["calls"] >= 2


@needs_linux
def test_rss_is_the_pool_and_close_returns_it():
    # 64 MiB pool: mapped lazily, so RSS grows by what the writer touches; a
    # burst that fills every block touches the whole pool, and close() unmaps it.
    out = run_py("""
        BS, HOT, SPILL = 4096, 4, 16380
        pool = BS * (HOT + SPILL)
        msg = bytes(BS - 8)
        base = rss()
        q = pq.Queue(block_size=BS, hot_blocks=HOT, spill_blocks=SPILL)
        created = rss()
        n = 0
        while q.writer.try_write(msg):
            n += 1
        full = rss()
        st = q.stats()
        q.close()
        closed = rss()
        print("pool=%d base=%d created=%d full=%d closed=%d n=%d spills=%d"
              % (pool, base, created, full, closed, n, st["takes_spill"]))
    """)
    f = figures(out)
    assert f["n"] == 4 + 16380 and f["spills"] == 16380       # every block, one message each
    assert f["created"] - f["base"] < 4 * MiB, out              # nothing touched at creation
    grown = f["full"] - f["created"]
    assert 0.95 * f["pool"] <= grown <= f["pool"] + 4 * MiB, out  # the pool, and only it
    assert f["closed"] - f["base"] < 4 * MiB, out               # close() gave it all back


@needs_linux
def test_prefault_touches_the_pool_at_creation():
    out = run_py("""
        pool = 4096 * (4 + 8188)
        base = rss()
        q = pq.Queue(spill_blocks=8188, prefault=True)
        created = rss()
        q.close()
        print("pool=%d base=%d created=%d closed=%d" % (pool, base, created, rss()))
    """)
    f = figures(out)
    assert 0.95 * f["pool"] <= f["created"] - f["base"] <= f["pool"] + 4 * MiB, out
    assert f["closed"] - f["base"] < 4 * MiB, out


@needs_linux
def test_repeated_create_close_leaks_nothing():
    # 300 queues of 16 MiB each, prefaulted and used: 4.8 GB mapped in total.  A
    # leaked pool would show as +16 MiB per queue; RSS must stay flat.
    out = run_py("""
        samples = []
        msg = bytes(100)
        for i in range(300):
            with pq.Queue(spill_blocks=4092, prefault=True, publish="each") as q:
                for _ in range(50):
                    q.writer.write(msg)
                assert len(q.reader.poll()) == 50
            if i in (20, 299):
                samples.append(rss())
        print("early=%d late=%d" % tuple(samples))
    """)
    f = figures(out)
    assert f["late"] - f["early"] < 8 * MiB, out
