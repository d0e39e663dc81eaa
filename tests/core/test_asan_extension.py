"""The Python extension built once with ASan + UBSan, and a subset of the Python
suite run against it (docs/RELIABILITY.md).  The build goes to a temporary folder (setup.py
build_ext with PYQ_CFLAGS / PYQ_LDFLAGS, see pyqueue/_build.py), beside
a copy of the package's Python files and of the tests, so the checkout's own
extension is untouched.  CPython is not built with ASan: the runtime comes in
through LD_PRELOAD, and leak detection is off (the interpreter keeps memory
until exit by design).  Any ASan or UBSan report fails the run."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

import support

ROOT = support.ROOT
# The Python-facing paths; the C stress already runs under ASan in tests/c.
TESTS = ["core/test_queue.py", "core/test_properties.py", "python/test_fast_path.py",
         # the misuse suite's lifetime, race and signal cases
         "misuse/test_misuse_crashes.py", "misuse/test_misuse_lifetime.py",
         "misuse/test_misuse_signals.py",
         "runtime/test_threads.py", "core/test_failures.py",
         # claims and views: exported buffers, release, close, fork, kill -9
         "python/test_frames.py"]
# A shared segment rewritten, cut short, cleaned up, handed over and left by a
# hostile or damaged peer: each case in its own process, every one under ASan.
HOSTILE = ["hostile/test_segment.py", "hostile/test_cleanup.py", "hostile/test_handoff.py",
           "hostile/test_lifecycle.py", "hostile/test_trust.py"]
# ASan intercepts mlock() (a no-op that succeeds), so the mlock refusals cannot be seen.
DESELECT = "not mlock"
SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"


def _libasan(cc):
    proc = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = proc.stdout.strip()
    return path if proc.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


@pytest.fixture(scope="module")
def asan_env(tmp_path_factory):
    """The ASan build beside a copy of the package and the tests: (env, cwd)."""
    tmp_path = tmp_path_factory.mktemp("asan")
    cc = shutil.which("gcc")
    libasan = cc and _libasan(cc)
    if not libasan:
        pytest.skip("needs gcc with libasan (the extension is built with the default compiler)")
    pkg = tmp_path / "pkg"
    shutil.copytree(os.path.join(ROOT, "pyqueue"), pkg / "pyqueue",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "manifest.json"))
    shutil.copytree(os.path.join(ROOT, "tests"), pkg / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", "c", "fuzz"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), pkg)   # the pytest markers
    # The headers: the hostile cases read the segment's layout from the core's own.
    shutil.copytree(os.path.join(ROOT, "csrc"), pkg / "csrc", ignore=shutil.ignore_patterns("*.o"))
    # No peers: build_ext would compile them too (~15 s), but they are left out
    # of the copy below, and none of TESTS opens one.
    env = dict(os.environ, CC=cc, PYQ_CFLAGS=SANITIZE + " -O1 -g", PYQ_LDFLAGS=SANITIZE,
               PYQ_PEERS="none")
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext",
                           "--build-lib", str(tmp_path / "lib"), "--build-temp", str(tmp_path / "tmp")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    # Every extension: the cffi core, the C-API per-message types that call it, and
    # the lab's (its C threads run the queue's sides with their own copy of the core,
    # which must be this build's: an installed one of another layout would not do).
    for name in ("_pyq", "_pyext", "lab/_lab"):
        built = glob.glob(str(tmp_path / "lib" / "pyqueue" / (name + "*.so")))
        assert len(built) == 1, built
        shutil.copy(built[0], pkg / "pyqueue" / os.path.dirname(name))

    env = dict(os.environ, LD_PRELOAD=libasan, PYTHONPATH=str(pkg),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
               PYQ_SOAK_SECONDS="5", PYQ_FUZZ_SECONDS="5")
    env.pop("PYTHONHOME", None)
    probe = ("import pyqueue._pyq as m; print(m.__file__); "
             "print('libasan' in open('/proc/self/maps').read())")
    check = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                           cwd=str(pkg), timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    where, asan = check.stdout.split()
    assert where.startswith(str(pkg)) and asan == "True", check.stdout  # the ASan build, live
    return env, str(pkg)


def _run(asan_env, tests):
    env, cwd = asan_env
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           "-m", "not slow", "-k", DESELECT] + ["tests/" + t for t in tests],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=1500)
    report = proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "ERROR: AddressSanitizer" not in report and "runtime error:" not in report, report
    assert proc.returncode == 0, report


@pytest.mark.slow
def test_python_suite_under_asan(asan_env):
    _run(asan_env, TESTS)


@pytest.mark.slow
def test_hostile_cases_under_asan(asan_env):
    _run(asan_env, HOSTILE)
