"""The throughput-regime classification, on synthetic counts (no timings)."""
import numpy as np
import pytest

from pyqueue.lab.common import regime as br


def test_a_reader_that_never_waits_is_streaming():
    r = br.classify(20_000_000, 0, 0)
    assert r.regime == br.STREAMING and not r.writer_held
    assert r.empty_per_msg == 0.0


def test_streaming_with_a_full_queue_says_the_writer_was_held():
    r = br.classify(20_000_000, 5, 3_000_000)
    assert r.regime == br.STREAMING and r.writer_held
    assert r.as_dict()["full_per_msg"] == pytest.approx(0.15)


def test_a_reader_that_keeps_finding_it_empty_is_chasing():
    assert br.classify(1_000_000, 400_000, 0).regime == br.CHASING
    assert br.classify(1_000_000, int(br.CHASING_EMPTY * 1_000_000), 0).regime == br.CHASING


def test_both_sides_waiting_is_mixed():
    # The reader found it empty and the writer found it full: the threads took
    # turns (e.g. a shared CPU), neither regime.
    assert br.classify(1_000_000, 400_000, 300_000).regime == br.MIXED


def test_between_the_thresholds_is_mixed():
    assert br.classify(1_000_000, 5_000, 0).regime == br.MIXED


def test_thresholds_are_ordered():
    assert br.STREAMING_EMPTY < br.CHASING_EMPTY
    assert 0.5 < br.DOMINANT <= 1.0


@pytest.mark.parametrize("bad", [(-1, 0, 0), (10, -1, 0), (10, 0, -1)])
def test_negative_counts_are_refused(bad):
    with pytest.raises(ValueError, match=">= 0"):
        br.classify(*bad)


def test_counts_must_be_ints():
    with pytest.raises(TypeError, match="messages"):
        br.classify(1.5, 0)
    with pytest.raises(TypeError):
        br.classify(True, 0)
    assert br.classify(np.uint64(10), np.uint64(0)).regime == br.STREAMING


def test_no_messages_has_no_regime():
    with pytest.raises(ValueError, match="> 0"):
        br.classify(0, 0)


def _records(window, empties, fulls, ns_per_window, start=1000):
    """Cumulative records as the C twins write them."""
    rec = np.zeros(len(empties), dtype=[("reader_ns", "u8"), ("empty_polls", "u8"),
                                        ("writer_ns", "u8"), ("full_retries", "u8")])
    rec["reader_ns"] = start + np.cumsum(ns_per_window)
    rec["empty_polls"] = np.cumsum(empties)
    rec["full_retries"] = np.cumsum(fulls)
    rec["writer_ns"] = rec["reader_ns"]
    return rec


def test_window_deltas_undo_the_cumulative_counts():
    w = 1000
    rec = _records(w, [0, 10, 500], [7, 0, 0], [10_000, 20_000, 100_000])
    d = br.window_deltas(rec, w, start_ns=1000)
    assert [x["empty_polls"] for x in d] == [0, 10, 500]
    assert [x["full_retries"] for x in d] == [7, 0, 0]
    assert [x["mmsg_s"] for x in d] == pytest.approx([100.0, 50.0, 10.0])


def test_without_a_start_the_first_window_has_no_pace():
    rec = _records(1000, [0, 0], [0, 0], [10_000, 10_000])
    d = br.window_deltas(rec, 1000)
    assert "mmsg_s" not in d[0] and d[1]["mmsg_s"] == pytest.approx(100.0)


def test_window_deltas_take_dicts_and_refuse_counts_that_go_down():
    recs = [{"reader_ns": 10, "empty_polls": 5, "full_retries": 0},
            {"reader_ns": 20, "empty_polls": 4, "full_retries": 0}]
    with pytest.raises(ValueError, match="cumulative"):
        br.window_deltas(recs, 100)


def test_a_run_that_streams_in_nearly_every_window_is_streaming():
    w = 65536
    empties = [3000] + [0] * 29          # a chasing start-up, then streaming
    rec = _records(w, empties, [0] * 30, [500_000] * 30)
    d = br.window_deltas(rec, w, start_ns=1000)
    c = br.classify_windows(d)
    assert c["regime"] == br.STREAMING
    assert c["share"][br.CHASING] == pytest.approx(1 / 30)
    assert c["spread"][br.STREAMING]["p50"] == pytest.approx(w / 500_000 * 1e3)
    # Leaving the start-up out leaves only streaming windows.
    assert br.classify_windows(d, skip=1)["share"][br.STREAMING] == 1.0


def test_a_run_split_between_regimes_is_mixed_and_keeps_both_spreads():
    w = 65536
    empties = [0] * 10 + [20_000] * 10     # streaming, then the reader catches up
    ns = [200_000] * 10 + [2_000_000] * 10
    d = br.window_deltas(_records(w, empties, [0] * 20, ns), w, start_ns=1000)
    c = br.classify_windows(d)
    assert c["regime"] == br.MIXED
    assert c["share"][br.STREAMING] == c["share"][br.CHASING] == 0.5
    assert c["spread"][br.STREAMING]["p50"] == pytest.approx(10 * c["spread"][br.CHASING]["p50"])
    assert c["windows"][:2] == [br.STREAMING, br.STREAMING]
    assert c["spread"][br.MIXED] is None


def test_classify_windows_needs_windows():
    with pytest.raises(ValueError, match="no windows"):
        br.classify_windows([])
    d = br.window_deltas(_records(10, [0], [0], [10]), 10)
    with pytest.raises(ValueError, match="skip=1"):
        br.classify_windows(d, skip=1)


# ---- episodes: a wait of any length counts once ---------------------------------

def test_a_descheduled_reader_does_not_turn_chasing_into_mixed():
    """Real slice (chasing pass, atomic_queue's twin, 2 M messages): the reader
    lost its CPU once and the writer spun ~1.4 M retries on a full queue -- 0.7 a
    message, "mixed" by the raw rates -- in a single wait."""
    n = 2_000_000
    raw = br.classify(n, 2_900_000, 1_400_000)
    assert raw.regime == br.MIXED
    ep = br.classify(n, 2_900_000, 1_400_000, empty_runs=1_040_000, full_runs=1)
    assert ep.regime == br.CHASING and not ep.writer_held
    assert ep.catchups_per_msg == pytest.approx(0.52)
    assert ep.as_dict()["waits_per_msg"] == pytest.approx(5e-7)


def test_a_long_stall_of_the_writer_does_not_make_streaming_chase():
    # 20 M messages streaming; the writer was off its CPU once: 300 k empty polls
    # (0.015 a message: "chasing" by the raw rate) in one catch-up.
    n = 20_000_000
    assert br.classify(n, 300_000, 2_000_000).regime == br.MIXED
    r = br.classify(n, 300_000, 2_000_000, empty_runs=1, full_runs=150_000)
    assert r.regime == br.STREAMING and r.writer_held


def test_catching_up_while_the_writer_waits_is_mixed():
    # Both sides wait, often: the two run at nearly the same speed, in turns.
    assert br.classify(1_000_000, 90_000, 80_000, 50_000, 20_000).regime == br.MIXED


def test_between_the_catchup_thresholds_is_mixed():
    assert br.classify(1_000_000, 9_000, 0, 1_000, 0).regime == br.MIXED


def test_a_reader_catching_up_once_a_block_is_chasing():
    """pyqueue, publish max: 102 records a 4 KiB block, the reader catching up
    once per block (a real chasing slice: 0.0095 catch-ups a message)."""
    r = br.classify(4_000_000, 3_270_000, 0, 38_000, 0)
    assert r.regime == br.CHASING
    assert br.CHASING_CATCHUPS <= 1 / 102 / 4    # even once every four blocks


def test_episode_thresholds_are_ordered():
    assert br.STREAMING_CATCHUPS < br.CHASING_CATCHUPS
    assert br.WAITS <= br.FULL


def test_episodes_cannot_outnumber_their_counts():
    with pytest.raises(ValueError, match="at least one poll"):
        br.classify(1000, 5, 0, empty_runs=6)
    with pytest.raises(ValueError, match="at least one poll"):
        br.classify(1000, 5, 2, empty_runs=1, full_runs=3)
    with pytest.raises(ValueError, match="needs empty_runs"):
        br.classify(1000, 5, 2, full_runs=1)


def test_windows_with_episodes_classify_each_window_by_them():
    w = 1 << 16
    rec = np.zeros(4, dtype=[("reader_ns", "u8"), ("empty_polls", "u8"), ("writer_ns", "u8"),
                             ("full_retries", "u8"), ("empty_runs", "u8"), ("full_runs", "u8")])
    rec["reader_ns"] = 1000 + np.cumsum([1_000_000] * 4)
    # Window 2 holds a deschedule: 900 k retries in one wait.
    rec["full_retries"] = np.cumsum([0, 0, 900_000, 0])
    rec["full_runs"] = np.cumsum([0, 0, 1, 0])
    rec["empty_polls"] = np.cumsum([40_000] * 4)
    rec["empty_runs"] = np.cumsum([20_000] * 4)
    d = br.window_deltas(rec, w, start_ns=1000)
    assert [x["full_runs"] for x in d] == [0, 0, 1, 0]
    got = br.classify_windows(d)
    assert got["windows"] == [br.CHASING] * 4 and got["regime"] == br.CHASING
    # Without the episode fields the same records fall back to the raw counts.
    old = rec[["reader_ns", "empty_polls", "writer_ns", "full_retries"]]
    assert br.classify_windows(br.window_deltas(old, w))["windows"][2] == br.MIXED


# ---- streaming episodes (synthetic pyq_twin_episode_t records) ----------------------

def _ep(go_ns, go_written, start_ns, start_read, end_ns, end_read, caught_up=1):
    return dict(go_ns=go_ns, go_written=go_written, start_ns=start_ns, start_read=start_read,
                end_ns=end_ns, end_read=end_read, caught_up=caught_up)


def test_an_episode_measures_the_writer_from_release_to_the_catch_up():
    # Backlog 10,000; the writer released at 1 ms with 10,000 written; the reader
    # caught up 100 us later having read 30,000: the writer wrote 20,000 in 100 us.
    (e,) = br.episode_intervals([_ep(1_000_000, 10_000, 1_000_200, 0, 1_100_000, 30_000)],
                                messages=1_000_000, writer_end_ns=9_000_000)
    assert e["writer_messages"] == 20_000 and e["writer_ns"] == 100_000
    assert e["reader_messages"] == 30_000 and e["reader_ns"] == 99_800
    assert e["caught_up"] and e["counted"]


def test_an_episode_the_writer_finished_first_ends_at_the_writer_end():
    # The reader never caught up (a writer faster than its reader): the writer's
    # interval ends with its last message, the reader's at its last delivery.
    (e,) = br.episode_intervals([_ep(0, 16_384, 100, 0, 5_000_000, 1_000_000, caught_up=0)],
                                messages=1_000_000, writer_end_ns=4_000_000)
    assert e["writer_messages"] == 1_000_000 - 16_384 and e["writer_ns"] == 4_000_000
    assert e["reader_messages"] == 1_000_000 and not e["caught_up"]
    # Caught up after the writer's end: the writer's part still stops at its end.
    (e,) = br.episode_intervals([_ep(0, 16_384, 100, 0, 5_000_000, 1_000_000)],
                                messages=1_000_000, writer_end_ns=4_000_000)
    assert e["writer_ns"] == 4_000_000 and e["writer_messages"] == 1_000_000 - 16_384


def test_episodes_streamed_give_the_median_writer_rate_and_a_stalled_one_moves_nothing():
    # 20 episodes: writer 20,000 messages in 200 us each (100 M msg/s), reader
    # 36,000 in 200 us; one writer lost its CPU 50 ms inside episode 7.
    recs, t, w, r = [], 0, 0, 0
    for i in range(20):
        w += 16_000                            # the backlog, reader held
        t += 160_000
        span = 200_000 + (50_000_000 if i == 7 else 0)
        recs.append(_ep(t, w, t, r, t + span, w + 20_000))
        w += 20_000
        r = w
        t += span
    st = br.classify_episodes(recs, messages=w, writer_end_ns=t + 1)
    assert st["regime"] == br.STREAMING and st["counted"] == st["episodes"] == 20
    assert st["mmsg_s"] == pytest.approx(100.0)
    assert st["reader_mmsg_s"] == pytest.approx(180.0)
    assert st["pooled_mmsg_s"] < 50         # the pooled figure would carry the stall
    assert st["spread"]["min"] < 1.0 and st["spread"]["p50"] == pytest.approx(100.0)
    assert st["messages"] == 20 * 20_000


def test_a_reader_that_catches_up_at_once_chased():
    # Each release drains in a few microseconds: the writer wrote a handful of
    # messages meanwhile -- no interval long enough to count.
    recs = [_ep(i * 1_000_000, 16_000 * (i + 1) + 10 * i, i * 1_000_000 + 100, 16_010 * i,
                i * 1_000_000 + 1_500, 16_010 * (i + 1)) for i in range(50)]
    st = br.classify_episodes(recs, messages=16_010 * 50, writer_end_ns=60_000_000)
    assert st["regime"] == br.CHASING and st["counted"] == 0 and st["mmsg_s"] is None


def test_too_few_streamed_messages_is_chasing_not_a_figure_from_noise():
    n = br.STREAM_MIN_MESSAGES // 2
    st = br.classify_episodes([_ep(0, 1000, 10, 0, 1_000_000, 1000 + n)], messages=10 ** 7,
                              writer_end_ns=10 ** 9)
    assert st["counted"] == 1 and st["regime"] == br.CHASING


def test_episode_records_out_of_order_are_refused():
    with pytest.raises(ValueError, match="out of order"):
        br.episode_intervals([_ep(0, 10, 500, 0, 400, 20)], messages=100, writer_end_ns=10)
    with pytest.raises(ValueError, match="out of order"):
        br.episode_intervals([_ep(0, 10, 0, 0, 400, 200)], messages=100, writer_end_ns=10)


def test_episodes_from_a_structured_array():
    dt = np.dtype([(k, "u8") for k in ("go_ns", "go_written", "start_ns", "start_read",
                                       "end_ns", "end_read")] + [("caught_up", "u4")])
    recs = np.array([(0, 100, 10, 0, 1_000_010, 70_100, 1)], dt)
    st = br.classify_episodes(recs, messages=1_000_000, writer_end_ns=2_000_000)
    assert st["regime"] == br.STREAMING
    assert st["mmsg_s"] == pytest.approx(70.0, rel=1e-3)
