"""Liveness without /proc: a peer in another pid namespace (a container that
shares /dev/shm; here ``unshare -p``) is judged by the lock its process holds
on the segment, not by a pid this process cannot see (DESIGN §3.9,
"Liveness").  Root only (unshare -p); skipped with the reason otherwise."""
import os
import shutil

import pytest

from hostile_support import run

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="a pid namespace needs root and unshare")


def test_a_live_writer_in_another_pid_namespace_is_alive():
    r = run("pid_namespace", "alive")
    assert r["error"][0] == "EndOfStream" and "died" not in r["error"][1], r
    assert r["delivered"] == 101 and r["prefix"], r
    assert r["name"] not in r["removed"]
    assert r["peer_rc"] == 0


def test_a_killed_writer_in_another_pid_namespace_ends_the_stream():
    r = run("pid_namespace", "killed")
    assert r["error"][0] == "EndOfStream" and "died" in r["error"][1], r
    assert r["delivered"] == 50 and r["prefix"], r


def test_a_live_reader_in_another_pid_namespace_keeps_the_writer_going():
    r = run("pid_namespace", "reader")
    assert r["error"] is None, r
    assert r["name"] not in r["removed"]
    assert r["peer_rc"] == 0


def test_cleanup_stale_leaves_a_live_containers_queue():
    r = run("pid_namespace", "owner")
    assert r["exists"] and r["name"] not in r["removed"], r
    assert r["name"] in r["then_removed"], r    # once its process is gone
