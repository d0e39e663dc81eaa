"""Leftovers and wrong words (DESIGN §3.9): the segment goes away on close()
with no descriptor left and at interpreter exit with daemon threads blocked in
get() or write(); no descriptor left is "too many open files"; a fork child
that cannot join says why."""
from hostile_support import run


def test_close_with_no_descriptor_left_removes_the_segment():
    r = run("no_fd", "close")
    assert r["left"] == [], r


def test_no_descriptor_left_is_too_many_open_files():
    r = run("no_fd", "create")
    assert r["error"][0] == "OSError" and "too many open files" in r["error"][1], r
    assert r["attach"][0] == "OSError" and "too many open files" in r["attach"][1], r
    assert r["left"] == [], r


def test_a_fork_child_without_a_descriptor_is_told_so():
    r = run("no_fd", "fork")
    assert r["child"] != "wrote", r
    assert "too many open files" in r["child"][1] and "after fork() an in-process" not in \
        r["child"][1], r


def test_exit_with_a_daemon_thread_blocked_in_get():
    r = run("exit_blocked", "get")
    assert r["rc"] == 0 and r["left"] == [], r


def test_exit_with_a_daemon_thread_blocked_in_write():
    r = run("exit_blocked", "write")
    assert r["rc"] == 0 and r["left"] == [], r


def test_exit_with_daemon_threads_on_two_queues():
    r = run("exit_blocked", "both")
    assert r["rc"] == 0 and r["left"] == [], r


def test_exit_leaves_a_segment_another_process_still_maps():
    r = run("exit_blocked", "peer")
    assert r["rc"] == 0 and r["left"] == r["names"], r
    assert r["after_peer"] == [], r


def test_more_processes_than_the_old_user_table_held():
    r = run("many_users", 80, timeout=180)
    assert r["ok"] == 80 and r["codes"] == [0] and r["left"] == [], r
