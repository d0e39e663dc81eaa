"""cleanup_stale() cannot be turned against its caller (DESIGN §3.9): FIFOs,
links, directories, non-UTF-8 names, sparse and short files, a file cut short
while it is read, creations killed half-way.  Each case has /dev/shm to itself
where root allows (else the shared one: the names are this case's own)."""
import os

from hostile_support import run


def test_a_fifo_never_blocks_it():
    r = run("cleanup", "fifo")
    assert r["removed"] == ["pyq-stale-1"], r
    assert "pyq-fifo" in r["left"] and "not-ours-fifo" in r["left"]


def test_links_and_directories_are_neither_followed_nor_removed():
    r = run("cleanup", "links")
    assert r["removed"] == ["pyq-target"], r
    assert {"pyq-link", "pyq-passwd", "pyq-dir"} <= set(r["left"]), r
    assert r["passwd_ok"]


def test_a_name_that_is_not_utf8_is_handled():
    r = run("cleanup", "bytes")
    assert r["removed"] == ["pyq-stale-\udcff\udcfe"], r
    assert "pyq-junk-\udcff" in r["left"]


def test_sparse_and_short_files_are_not_mapped_or_removed():
    r = run("cleanup", "huge")
    assert r["removed"] == [] and {"pyq-sparse", "pyq-short"} <= set(r["left"]), r


def test_a_file_cut_short_while_it_is_read_kills_nothing():
    r = run("cleanup", "truncating")
    assert r["looks"] == 300, r               # alive after every look


def test_a_creation_killed_half_way_leaves_nothing_in_the_way():
    r = run("cleanup", "dead_creation", shm_mib=64, timeout=180)
    assert [n for n in r["after_kills"] if n.startswith("pyq-") and n != "pyq-dying"] == [], r
    assert r["left"] == [], r


def test_a_dead_creation_under_the_prefix_is_removed_and_nothing_else():
    r = run("cleanup", "zero_creation")
    assert sorted(r["removed"]) == ["pyq-empty", "pyq-making"], r
    assert {"pyq-zeros", "other-making"} <= set(r["left"]), r
