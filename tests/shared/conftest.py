"""Shared-queue tests: the workers module importable by spawned children, and
a check that no test leaves a segment behind in /dev/shm."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)   # multiprocessing's spawn passes sys.path on


def _segments():
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("pyq-")}
    except OSError:
        return set()


@pytest.fixture(autouse=True)
def no_leftover_segment():
    """Every pyq-* segment a test makes is gone when it ends."""
    before = _segments()
    yield
    left = _segments() - before
    for n in left:   # do not let one failure cascade into every later test
        os.unlink(os.path.join("/dev/shm", n))
    assert not left, "left in /dev/shm: %s" % sorted(left)
