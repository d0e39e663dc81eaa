"""A shared queue's segment rewritten by a process that may write it (its owner
of another uid, a damaged or hostile peer): records, runs, positions, rings,
the configuration, the sides' mirrors (DESIGN §3.9, "Trust";
docs/RELIABILITY.md, "The shared segment as a trust boundary").  Each case runs
in its own process, with its own small /dev/shm where root allows
(hostile_support.run): it must end with QueueCorrupted (or, where the value
changes nothing this process uses, with every message), never a crash, a hang
or a message nobody wrote."""
import pytest

from hostile_support import run


def corrupted(r):
    assert r["error"] and r["error"][0] == "QueueCorrupted", r
    assert "corrupt" in r["error"][1]
    assert r["prefix"], "delivered a message that was not written: %s" % r


@pytest.mark.parametrize("how", ["huge", "limit", "past"])
def test_a_record_length_that_does_not_fit_is_corrupt(how):
    r = run("record_len", how)
    corrupted(r)
    assert r["delivered"] == 1          # the record before it


@pytest.mark.parametrize("how", ["count_max", "count_zero", "count_one_more", "len_zero",
                                 "len_huge"])
def test_a_run_header_no_writer_stores_is_corrupt(how):
    r = run("run_header", how)
    corrupted(r)
    assert r["delivered"] == 0          # 5 written, never 1,024 read


@pytest.mark.parametrize("publish", ["max", "each"])
def test_a_header_of_no_known_kind_is_corrupt(publish):
    r = run("header_kind", publish)
    corrupted(r)
    assert r["delivered"] == 1


@pytest.mark.parametrize("publish", ["max", "each"])
def test_a_ring_slot_past_the_pool_is_corrupt(publish):
    corrupted(run("ring_slot", publish))


@pytest.mark.parametrize("how", ["huge", "backwards", "past_tail", "wrap"])
def test_a_forged_pub_pos_is_corrupt_and_poll_returns(how):
    r = run("pub_pos", how)
    corrupted(r)


@pytest.mark.parametrize("how", ["huge", "pool_ahead"])
def test_a_forged_ring_tail_is_corrupt(how):
    r = run("ring_tail", how)
    corrupted(r)


def test_a_forged_free_ring_slot_steers_nothing():
    # The writer computes a free block's index from its ring position: a slot
    # the reader's side rewrote is never read, and every message arrives.
    r = run("free_ring", "slot")
    assert r["error"] is None and r["written"] == r["delivered"] == 1200 and r["prefix"], r


def test_the_writer_refuses_a_forged_free_tail():
    r = run("free_ring", "tail")
    assert r["error"] and r["error"][0] == "QueueCorrupted", r
    assert r["prefix"], r          # nothing delivered that was not written


def test_the_configuration_rewritten_after_attach_changes_nothing():
    r = run("config_after_attach")
    assert r["error"] is None and r["all_delivered"] and r["prefix"], r


def test_a_forged_reader_mirror_refuses_the_take():
    r = run("reader_mirror")
    assert r["error"] and r["error"][0] == "QueueCorrupted", r


@pytest.mark.parametrize("how", ["pos", "run", "seq"])
def test_a_dead_writers_forged_mirror_ends_the_stream_without_a_forged_message(how):
    r = run("writer_mirror", how)
    assert r["error"] and r["error"][0] in ("EndOfStream", "QueueCorrupted"), r
    assert r["prefix"], r


@pytest.mark.parametrize("seed", range(6))
def test_random_words_rewritten_between_calls(seed):
    r = run("random_words", seed, 25, timeout=240)
    assert not r["bad"], r
    assert set(r["errors"]) <= {"QueueCorrupted", "QueueFull", "EndOfStream", "QueueClosed"}, r


@pytest.mark.parametrize("size", [0, 4096, 12288])
def test_a_segment_cut_short_under_live_sides_is_corrupt_not_sigbus(size):
    r = run("truncated", size)
    assert r["error"] and r["error"][0] == "QueueCorrupted", r
    # The reader faults only if it reads past the cut: else the stream stops
    # for it (its read's timeout), which a peer that may write may do.
    assert r["child"] in ("C", "Q") and r["child_status"] == 0, r
    if size == 0:
        assert r["child"] == "C", r
