"""Build and run the C unit tests and the two-thread stress with ASan+UBSan and
TSan (tests/c/Makefile), and the unit tests as the package compiles the core
('plain': -O2, its inline-asm copies, which the sanitizer builds replace).  Any
sanitizer report or failed check fails the run."""
import os
import shutil
import subprocess

import pytest

import support

HERE = os.path.join(support.ROOT, "tests", "c")


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None,
                    reason="needs make and a C compiler")
@pytest.mark.parametrize("target", ["asan", "tsan", "plain"])
def test_sanitizers(target):
    proc = subprocess.run(["make", "-s", "-C", HERE, target], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
