"""Room in /dev/shm, reserved at creation (DESIGN §3.9): a queue that does not
fit fails there with MemoryError naming the free space, and one that was made
never dies with SIGBUS when the tmpfs fills later; a shared queue's default
pool fits Docker's 64 MiB /dev/shm.  Each case has its own tmpfs of the size
it names, so root only (skipped otherwise)."""
import pytest

from hostile_support import have_private_shm, run

pytestmark = pytest.mark.skipif(not have_private_shm(),
                                reason="a private tmpfs over /dev/shm needs root (unshare -m)")


def test_two_queues_that_each_fit_but_not_together():
    r = run("room", "two", shm_mib=8)
    assert r["second"] and r["second"][0] == "MemoryError", r
    assert "/dev/shm" in r["second"][1] and "free of" in r["second"][1], r
    assert r["ok"] and r["written"] > 1000, r
    assert r["left"] == [], r


def test_a_tmpfs_that_fills_after_creation_kills_nothing():
    r = run("room", "fills_later", shm_mib=8)
    assert r["filler"] == "No space left on device", r
    assert r["ok"] and r["written"] > 1000, r


def test_default_shared_queues_fit_dockers_64_mib():
    r = run("room", "default", shm_mib=64)
    assert r["segment"] <= 32 << 20, r
    # The pool's 31 MiB: the large region (twice the default 1 MiB max_message), then spill.
    assert r["spill_blocks"] == ((31 << 20) - (2 << 20)) // 4096 - 4, r
    assert r["ok"] and r["left"] == [], r
