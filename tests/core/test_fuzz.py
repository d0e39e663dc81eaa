"""A bounded libFuzzer run of tests/fuzz/fuzz_queue.c (random writer/reader call
sequences against a reference model, with ASan + UBSan), built into a temporary
folder -- both of its targets: fuzz_queue (an in-process queue) and fuzz_segment
(a shared queue whose segment the input rewrites between calls, the oracle
being no crash, no hang and no message that was not written).  The kept corpus (tests/fuzz/corpus.tar.xz, unpacked into that folder by
the Makefile's `seeds` target) is replayed first, then the fuzzer runs for
PYQ_FUZZ_SECONDS (default 60); new inputs go to the temporary folder, never into
the repository.  Skipped, saying why, without clang + libFuzzer."""
import os
import re
import shutil
import subprocess

import pytest

import support

ROOT = support.ROOT
FUZZ = os.path.join(ROOT, "tests", "fuzz")
SECONDS = int(os.environ.get("PYQ_FUZZ_SECONDS", "60"))
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
           UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")


def _clang():
    for name in ("clang", "clang-14", "clang-15", "clang-16"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory):
    clang = _clang()
    if shutil.which("make") is None:
        pytest.skip("make not found")
    if clang is None:
        pytest.skip("clang not found: install clang and libclang-rt-14-dev to fuzz")
    out = tmp_path_factory.mktemp("fuzz")
    exe = out / "fuzz_queue"
    # tests/fuzz/Makefile's own rules and source list, into the temporary folder: the
    # targets, and the kept corpus unpacked into out/seeds.
    proc = subprocess.run(["make", "-s", "-C", FUZZ, "BIN=%s" % out, "CLANG=%s" % clang, str(exe),
                           str(out / "fuzz_segment"), "seeds"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        if "libclang_rt.fuzzer" in proc.stderr or "fuzzer" in proc.stderr:
            pytest.skip("clang has no libFuzzer runtime (install libclang-rt-14-dev): "
                        + proc.stderr.strip().splitlines()[-1])
        pytest.fail("building the fuzz target failed:\n" + proc.stderr[-3000:])
    return exe, out


def _tail(proc):
    return (proc.stdout[-2000:] + proc.stderr[-6000:])


TARGETS = ["fuzz_queue", "fuzz_segment"]


@pytest.mark.parametrize("target", TARGETS)
def test_corpus_replays_clean(fuzzer, target):
    exe, out = fuzzer
    exe = out / target
    corpus = str(out / "seeds")
    assert os.listdir(corpus), "tests/fuzz/corpus.tar.xz unpacked to nothing"
    proc = subprocess.run([str(exe), "-runs=0", corpus], capture_output=True, text=True,
                          env=ENV, timeout=300)
    assert proc.returncode == 0, _tail(proc)


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_bounded_run(fuzzer, target):
    exe, out = fuzzer
    exe = out / target
    work = out / ("corpus-" + target)
    work.mkdir(exist_ok=True)
    found = out / ("found-" + target)
    found.mkdir(exist_ok=True)
    proc = subprocess.run([str(exe), "-max_total_time=%d" % SECONDS, "-max_len=4096",
                           "-print_final_stats=1", "-artifact_prefix=%s/" % found,
                           str(work), str(out / "seeds")],
                          capture_output=True, text=True, env=ENV, timeout=SECONDS + 300)
    crashes = sorted(p.name for p in found.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-")))
    assert proc.returncode == 0 and not crashes, (
        "fuzzer found a failing input %s (in %s; reproduce: tests/fuzz/bin/%s <file>)\n%s"
        % (crashes, found, target, _tail(proc)))
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
    assert runs and int(runs.group(1)) > 0, _tail(proc)
    print("%s: %s executions in %d s" % (target, runs.group(1), SECONDS))
