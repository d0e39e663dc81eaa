"""Who may attach: a segment of another uid or of a mode wider than 0600 is
refused unless the caller opts in (Queue.attach(name, trust_other_users=True));
a queue is created 0600 whatever the umask (DESIGN §3.9, "Trust")."""
import os

import pytest

from hostile_support import run

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def test_created_0600_whatever_the_umask():
    r = run("trust", "none")
    assert r["created_mode"] == 0o600
    assert r["default"].startswith("OK") and r["trusted"].startswith("OK"), r


@ROOT_ONLY
def test_another_users_segment_is_refused_unless_trusted():
    r = run("trust", "other_uid")
    assert r["default"].startswith("REFUSED") and "uid 65534" in r["default"], r
    assert "trust_other_users=True" in r["default"]
    assert r["trusted"].startswith("OK"), r


@pytest.mark.parametrize("how", ["mode_0644", "mode_0660"])
def test_a_mode_wider_than_0600_is_refused_unless_trusted(how):
    r = run("trust", how)
    assert r["default"].startswith("REFUSED") and "wider than 0600" in r["default"], r
    assert r["trusted"].startswith("OK"), r


def test_a_narrower_mode_is_accepted():
    r = run("trust", "mode_0400")
    assert r["default"].startswith("OK"), r


@ROOT_ONLY
@pytest.mark.parametrize("how", ["max", "each"])
def test_addresses_written_over_the_segment_are_never_stored_at(how):
    r = run("pointer_words", how)
    assert r["target"] == 0x5555, r
    assert set(r["errors"]) <= {"QueueCorrupted", "QueueClosed", "EndOfStream", "PeerDied"}, r
    assert "QueueCorrupted" in r["errors"] or "QueueClosed" in r["errors"], r
    assert r["prefix"], r
