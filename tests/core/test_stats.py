"""Nearest-rank percentiles (pyqueue.lab.common.stats) against hand-computed cases."""
import math

import numpy as np
import pytest

from pyqueue.lab.common import stats as st


def test_single_sample_is_every_percentile():
    assert st.nearest_rank([7], [0, 50, 99, 99.9, 100]).tolist() == [7, 7, 7, 7, 7]


def test_ten_samples_by_hand():
    x = np.arange(10, 110, 10)                       # 10, 20, ..., 100
    # rank = ceil(p/100 · 10): p0 -> min; p10 -> 1; p11 -> 2; p50 -> 5; p99 -> 10
    cases = {0: 10, 1: 10, 10: 10, 11: 20, 25: 30, 50: 50, 51: 60, 90: 90,
             99: 100, 99.9: 100, 100: 100}
    got = st.nearest_rank(x, list(cases))
    assert got.tolist() == list(cases.values())


def test_thousand_samples_p999_is_rank_999():
    x = np.arange(1, 1001)                           # value == rank
    assert st.nearest_rank(x, 99.9) == 999.0         # not 1000: 99.9/100·1000 is 999
    assert st.nearest_rank(x, [50, 99, 99.9, 100]).tolist() == [500, 990, 999, 1000]
    assert st.nearest_rank(x, 99.95) == 1000.0       # 999.5 -> 1000
    assert st.nearest_rank(x, 0.1) == 1.0
    assert st.nearest_rank(x, 0.15) == 2.0           # 1.5 -> 2


def test_float_noise_does_not_bump_the_rank():
    # 99.9/100*1000 == 999.0000000000001 in binary floating point
    assert st.nearest_rank_index(1000, 99.9) == 998
    assert st.nearest_rank_index(10_000, 99.99) == 9998
    assert st.nearest_rank_index(3, 100 / 3 * 1) == 0   # 33.33..% of 3 -> rank 1


def test_unsorted_input_and_not_modified():
    x = np.array([5, 1, 4, 2, 3])
    before = x.copy()
    assert st.nearest_rank(x, [0, 20, 40, 60, 80, 100]).tolist() == [1, 1, 2, 3, 4, 5]
    assert (x == before).all()


def test_ties():
    x = [3, 1, 3, 3, 2, 3]                 # sorted: 1 2 3 3 3 3
    assert st.nearest_rank(x, [0, 16, 17, 33, 34, 50, 100]).tolist() == [1, 1, 2, 2, 3, 3, 3]


def _reference(x, p):
    """Exact nearest-rank with rational arithmetic: p read as the decimal it is written as."""
    from fractions import Fraction
    xs = sorted(x)
    rank = max(1, math.ceil(Fraction(str(p)) * len(xs) / 100))
    return xs[rank - 1]


def test_matches_exact_reference():
    rng = np.random.default_rng(5)
    ps = [0, 1, 12.5, 50, 90, 99, 99.9, 99.99, 100]
    for n in (1, 2, 3, 10, 999, 1000, 1001, 12345, 100000):
        x = rng.integers(0, 10**6, n)
        assert st.nearest_rank(x, ps).tolist() == [_reference(x, p) for p in ps]


def test_numpy_inverted_cdf_differs_only_by_float_noise():
    # numpy's "inverted_cdf" is the same definition but takes 99.9/100*1000 literally
    # (999.0000000000001 -> rank 1000); this is why we do not delegate to it.
    x = np.arange(1, 1001)
    assert np.percentile(x, 99.9, method="inverted_cdf") in (999, 1000)
    assert st.nearest_rank(x, 99.9) == 999


def test_result_is_a_sample_and_scalar_form():
    x = np.array([1.5, 2.25, 9.0])
    v = st.nearest_rank(x, 50)
    assert type(v) is float and v == 2.25


def test_empty_is_nan_never_a_number():
    assert math.isnan(st.nearest_rank([], 99))
    assert np.isnan(st.nearest_rank(np.array([], dtype=np.int64), [50, 99])).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="ps"):
        st.nearest_rank([1, 2], 101)
    with pytest.raises(ValueError, match="ps"):
        st.nearest_rank([1, 2], -1)
    with pytest.raises(ValueError, match="NaN"):
        st.nearest_rank([1.0, math.nan], 50)
    with pytest.raises(ValueError, match="n"):
        st.nearest_rank_index(0, 50)


def test_labels():
    assert [st.percentile_label(p) for p in (0, 50, 99, 99.9, 99.99, 100)] == \
        ["p0", "p50", "p99", "p999", "p9999", "p100"]


def test_per_round_then_mean():
    rounds = [np.arange(1, 1001), np.arange(1, 1001) * 2, np.arange(1, 1001) * 3]
    r = st.per_round_then_mean(rounds, min_beyond=0)
    assert r.ps == (50.0, 99.0, 99.9)
    assert r.per_round.tolist() == [[500, 990, 999], [1000, 1980, 1998], [1500, 2970, 2997]]
    assert r.mean.tolist() == [1000, 1980, 1998]
    assert r.min.tolist() == [500, 990, 999]
    assert r.max.tolist() == [1500, 2970, 2997]
    assert r.counts == (1000, 1000, 1000) and r.measured_rounds == 3
    assert r.method() == "nearest-rank per round, mean of 3 rounds"
    d = r.to_dict()
    assert d["labels"] == ["p50", "p99", "p999"] and d["mean"] == [1000, 1980, 1998]


def test_per_round_accepts_2d_and_uneven_rounds():
    r = st.per_round_then_mean(np.array([[1, 2, 3, 4], [5, 6, 7, 8]]), [50], min_beyond=0)
    assert r.per_round.tolist() == [[2], [6]] and r.mean.tolist() == [4]
    r = st.per_round_then_mean([[1], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]], [100])
    assert r.mean.tolist() == [5.5]


def test_empty_rounds_are_left_out_and_said():
    r = st.per_round_then_mean([[1, 2, 3], [], [4, 5, 6]], [100])
    assert np.isnan(r.per_round[1]).all()
    assert r.mean.tolist() == [4.5] and r.measured_rounds == 2
    assert "1 of 3 rounds had no samples" in r.method()
    none = st.per_round_then_mean([[], []], [50])
    assert np.isnan(none.mean).all() and none.measured_rounds == 0


def test_table_states_its_method_and_never_fabricates():
    results = {
        "yield1024": st.per_round_then_mean([[10, 20, 30], [30, 40, 50], [20, 30, 40]], [50, 99],
                                            min_beyond=0),
        "ck_ring": st.per_round_then_mean([[], [], []], [50, 99], min_beyond=0),
    }
    text = st.format_table(results, unit="ns/query")
    lines = text.splitlines()
    assert lines[0].startswith("| class") and "p50 (ns/query)" in lines[0]
    assert lines[1].startswith("|---")
    assert "30.0 [20.0–40.0]" in lines[2] and "40.0 [30.0–50.0]" in lines[2]
    assert lines[3].count("not measured") == 2
    assert "nearest-rank" in lines[-1] and "mean of 3 rounds" in lines[-1]
    assert "min–max across rounds in brackets" in lines[-1]
    plain = st.format_table(results, markdown=False, title="burst tail")
    assert plain.splitlines()[0] == "burst tail" and "|" not in plain


def test_table_with_nothing_measured():
    text = st.format_table({"x": st.per_round_then_mean([[]], [50])})
    assert "not measured" in text and text.endswith("Nothing was measured.")
    with pytest.raises(ValueError):
        st.format_table({})


# ---- the reporting rule: a percentile rests on at least 10 samples beyond it -------------

def test_samples_needed_by_hand():
    assert [st.samples_needed(p) for p in (0, 50, 90, 99, 99.9, 99.99)] == \
        [10, 20, 100, 1000, 10000, 100000]
    assert st.samples_needed(100) == 1           # the maximum: an observation
    assert st.samples_needed(99, min_beyond=0) == 1
    assert st.reported(1000, 99) and not st.reported(999, 99)
    assert st.reported(10_000, 99.9) and not st.reported(9_999, 99.9)
    assert not st.reported(0, 50) and st.reported(20, 50) and not st.reported(19, 50)


def test_samples_needed_matches_exact_arithmetic():
    from fractions import Fraction
    for p in (1, 12.5, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99):
        need = st.samples_needed(p)
        exact = lambda n: n * (1 - Fraction(str(p)) / 100) >= 10
        assert exact(need) and not exact(need - 1), p


def test_honest_rank_on_synthetic_arrays():
    x = np.arange(1, 401)                         # a --quick burst-tail round of old
    values, why = st.honest_rank(x, (50, 99, 99.9))
    assert values[0] == 200 and np.isnan(values[1:]).all()
    assert why["p99"] == "not enough samples (n=400; p99 needs 1,000: 10 beyond it)"
    assert set(why) == {"p99", "p999"}
    values, why = st.honest_rank(np.arange(1, 1001), (50, 99, 99.9))
    assert values[:2].tolist() == [500, 990] and np.isnan(values[2]) and list(why) == ["p999"]
    values, why = st.honest_rank([], (50,))
    assert np.isnan(values).all() and why == {"p50": "not measured"}
    values, why = st.honest_rank([3, 1, 2], (100,))
    assert values.tolist() == [3] and why == {}


def test_per_round_rule_and_reasons():
    rng = np.random.default_rng(1)
    rounds = [rng.random(400) for _ in range(3)]
    r = st.per_round_then_mean(rounds)
    assert r.reported(0) and not r.reported(1) and not r.reported(2)
    assert np.isnan(r.per_round[:, 1:]).all() and np.isfinite(r.per_round[:, 0]).all()
    assert r.reason(1) == "not enough samples (n=400 per round; p99 needs 1,000: 10 beyond it)"
    assert r.reason(2, short=True) == "not enough samples (n=400)"
    d = r.to_dict()
    assert d["min_beyond"] == 10 and set(d["not_reported"]) == {"p99", "p999"}
    text = st.format_table({"yield0": r}, unit="ns")
    assert text.count("not enough samples (n=400)") == 2
    assert "n·(1−p) ≥ 10" in text.splitlines()[-1]


def test_a_short_round_is_left_out_of_a_percentile_and_said():
    rounds = [np.arange(1, 1001), np.arange(1, 1001) * 2, np.arange(1, 501)]
    r = st.per_round_then_mean(rounds, (50, 99))
    assert r.per_round[:, 1].tolist()[:2] == [990, 1980] and np.isnan(r.per_round[2, 1])
    assert r.mean[1] == 1485 and r.rounds_used(1) == 2 and r.rounds_used(0) == 3
    assert "too few samples in some rounds: p99 in 2" in r.method()
    few = st.per_round_then_mean([np.arange(1, 501), np.arange(1, 401)], (99,))
    assert few.reason(0, short=True) == "not enough samples (n=400–500)"
