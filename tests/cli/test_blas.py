"""The CLI runs with numpy's OpenBLAS pool set to one thread (pyqueue/lab/runtime/blas.py):
on a two-CPU machine its spinning threads would be a third busy thread beside an
experiment's writer and reader."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code):
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60)


def test_single_thread_stops_the_pool_and_exports_the_variable():
    p = _run("""
        import os, time
        import numpy as np
        from pyqueue.lab.runtime import blas as _blas

        def ticks(main):   # CPU ticks of this thread (main) or of all the others
            out = 0
            for t in os.listdir('/proc/self/task'):
                if (int(t) == os.getpid()) == main:
                    f = open('/proc/self/task/%s/stat' % t).read().rsplit(')', 1)[1].split()
                    out += int(f[11]) + int(f[12])
            return out

        def work():
            for _ in range(30):
                a @ a
            time.sleep(0.3)

        a = np.random.rand(300, 300)
        done = _blas.single_thread()
        print("set", len(done), os.environ["OPENBLAS_NUM_THREADS"])
        if done:
            work()           # the pool's threads may spin a moment before they sleep
            b, m = ticks(False), ticks(True)
            work()
            print("ticks", ticks(False) - b, ticks(True) - m)
    """)
    assert p.returncode == 0, p.stdout
    lines = dict(l.split(" ", 1) for l in p.stdout.splitlines())
    n, var = lines["set"].split()
    assert var == "1"
    if int(n):   # an OpenBLAS is loaded: the multiplications run on this thread, not the pool
        pool, main = map(int, lines["ticks"].split())
        assert pool <= max(2, main // 10), p.stdout


def test_the_cli_sets_it_before_a_command():
    p = _run("""
        import sys
        from pyqueue import __main__
        from pyqueue.lab.runtime import blas as _blas
        called = []
        real = _blas.single_thread
        _blas.single_thread = lambda: called.append(1) or real()
        sys.argv = ["pyqueue", "env"]
        try:
            __main__.main(["env"])
        except SystemExit:
            pass
        print("called", len(called))
    """)
    assert p.returncode == 0, p.stdout
    assert "called 1" in p.stdout, p.stdout
