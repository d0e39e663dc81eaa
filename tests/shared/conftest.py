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


def _ours(name):
    """Made by this test run: its creator pid (pyq-PID-...) is this process, one
    of its descendants, or gone (a child that exited).  A living process of
    another run on the same machine (a second pytest) is not ours to judge."""
    parts = name.split("-")
    if len(parts) < 3 or not parts[1].isdigit():
        return True
    pid, me = int(parts[1]), os.getpid()
    while pid > 1:
        if pid == me:
            return True
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])   # its parent
        except (OSError, ValueError, IndexError):
            return True   # gone (a child of ours that exited), or went while we looked
    return False


@pytest.fixture(autouse=True)
def no_leftover_segment():
    """Every pyq-* segment a test makes is gone when it ends."""
    before = _segments()
    yield
    left = {n for n in _segments() - before if _ours(n)}
    for n in left:   # do not let one failure cascade into every later test
        try:
            os.unlink(os.path.join("/dev/shm", n))
        except FileNotFoundError:
            pass
    assert not left, "left in /dev/shm: %s" % sorted(left)
