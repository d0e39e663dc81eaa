"""Issue 46's two bugs in the shared segment's lifecycle: a handle pickled to a
process that has not attached yet keeps the stream alive (a writer may put and
close first), and a non-blocking read sees a dead writer (EndOfStream after
every committed message, not "empty" for ever)."""
import pytest

from hostile_support import run


def test_a_writer_closes_before_its_spawned_reader_attaches():
    r = run("handoff", "spawn", timeout=180)
    assert r["after_close"] != [], r          # kept for the child
    assert r["exitcode"] == 0 and r["read"] == 150, r
    assert r["left"] == [], r


def test_a_handle_that_never_arrives_is_reclaimed_after_its_deadline():
    r = run("handoff", "never")
    assert len(r["after_close"]) == 1 and r["early"] == [], r
    assert r["late"] == r["after_close"] and r["left"] == [], r


def test_a_handle_loaded_in_its_own_process_leaves_nothing_in_flight():
    r = run("handoff", "same_process")
    assert r["after_close"] == [] and r["left"] == [], r


@pytest.mark.parametrize("how", ["exit", "kill"])
@pytest.mark.parametrize("via", ["get_nowait", "get_noblock", "poll", "poll1"])
def test_a_non_blocking_reader_sees_a_dead_writer(how, via):
    r = run("dead_writer", how, via)
    assert r["error"] and r["error"][0] == "EndOfStream" and "died" in r["error"][1], r
    assert r["delivered"] == 120 and r["prefix"], r
