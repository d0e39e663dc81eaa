"""compare's statistics on synthetic runs (no measurement): the redraws reproduce the
table's figures, two runs drawn from one distribution rarely differ significantly
(the false-alarm rate, counted), a run twice as slow always does, and a figure
missing or not reported on one side fails the comparison."""
import numpy as np
import pytest

from pyqueue.lab.common import resample as rs
from pyqueue.lab.common import stats as st
from pyqueue.lab.common.output import OutputFolder
from pyqueue.lab.reports import compare as cmp

PS = (50.0, 99.0, 99.9)


def _rounds(rng, rounds=3, windows=250, groups=4, scale=1.0, drift=0.05):
    """group_ns of one burst-tail class: a lognormal body, a heavy tail, and a round
    level that drifts a little (the machine between rounds)."""
    level = np.exp(rng.normal(0, drift, rounds))
    g = rng.lognormal(3.0, 0.5, (rounds, windows, groups)) * level[:, None, None]
    tail = rng.random((rounds, windows, groups)) < 0.02
    g[tail] *= rng.uniform(5, 20, tail.sum())
    return g * scale


def test_rounds_sampler_values_are_the_tables():
    g = _rounds(np.random.default_rng(1))
    s = rs.RoundsSampler(list(g), PS)
    rp = st.per_round_then_mean([r.ravel() for r in g], PS)
    assert np.array_equal(np.isnan(s.values), np.isnan(rp.mean))
    assert s.values[:2].tolist() == rp.mean[:2].tolist()     # p999: not reported (1,000 a round)
    pooled = rs.RoundsSampler(list(g), (50.0, 99.0), pooled=True)
    assert pooled.values.tolist() == st.nearest_rank(g.ravel(), (50.0, 99.0)).tolist()


def test_replicates_scatter_around_the_figure_and_keep_the_rule():
    g = _rounds(np.random.default_rng(2))
    s = rs.RoundsSampler(list(g), PS)
    reps = s.replicates(400, np.random.default_rng(0))
    assert reps.shape == (400, 3) and np.isnan(reps[:, 2]).all()
    for i in range(2):
        assert np.quantile(reps[:, i], 0.05) < s.values[i] < np.quantile(reps[:, i], 0.95)


def test_judge_same_and_doubled():
    rng = np.random.default_rng(3)
    old, new = rs.RoundsSampler(list(_rounds(rng)), PS), rs.RoundsSampler(list(_rounds(rng)), PS)
    for i in range(2):
        j = rs.judge(old.values[i], new.values[i], old.replicates(1000, rng)[:, i],
                     new.replicates(1000, rng)[:, i], 0.99)
        assert j.low < j.change < j.high
    slow = rs.RoundsSampler(list(_rounds(rng, scale=2.0)), PS)
    j = rs.judge(old.values[0], slow.values[0], old.replicates(1000, rng)[:, 0],
                 slow.replicates(1000, rng)[:, 0], 0.99)
    assert j.verdict == rs.SLOWER and j.low > 0.5
    j = rs.judge(slow.values[0], old.values[0], slow.replicates(1000, rng)[:, 0],
                 old.replicates(1000, rng)[:, 0], 0.99)
    assert j.verdict == rs.FASTER
    j = rs.judge(slow.values[0], old.values[0], slow.replicates(1000, rng)[:, 0],
                 old.replicates(1000, rng)[:, 0], 0.99, lower_is_better=False)
    assert j.verdict == rs.SLOWER          # a rate that halved


def test_false_alarm_rate_of_one_figure_is_near_its_level():
    """200 pairs of runs from one distribution, one figure judged at 90 %: about 10 %
    significant either way (binomial: 95 % of such counts fall in [11, 30])."""
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(200):
        a = rs.RoundsSampler(list(_rounds(rng, windows=100)), (50.0,))
        b = rs.RoundsSampler(list(_rounds(rng, windows=100)), (50.0,))
        j = rs.judge(a.values[0], b.values[0], a.replicates(300, rng)[:, 0],
                     b.replicates(300, rng)[:, 0], 0.90)
        hits += j.significant
    assert 4 <= hits <= 40, hits


def test_values_sampler_needs_three_rounds():
    assert not rs.ValuesSampler([1.0, 1.1]).judgeable
    s = rs.ValuesSampler([1.0, 1.1, 0.9, None])
    assert s.judgeable and s.values[0] == 1.0
    reps = s.replicates(100, np.random.default_rng(0))
    assert reps.shape == (100, 1) and set(np.unique(reps)) <= {0.9, 1.0, 1.1}


# ---- whole comparisons of synthetic burst-tail folders ---------------------------------

def _folder(path, g, classes=("yield0", "none"), windows_done=None, params=None):
    params = params or {"classes": list(classes), "rounds": g.shape[0], "windows": g.shape[1],
                        "groups": g.shape[2]}
    f = OutputFolder(path, "burst_tail", params, total=g.shape[0],
                     pinning={"writer_cpu": 0, "reader_cpu": 1})
    results = {"classes": {}, "ticks_per_ns": 2.0}
    for k, name in enumerate(classes):
        arr = g / (1.0 + 2.0 * (name == "none")) if k else g
        done = windows_done if windows_done is not None else [g.shape[1]] * g.shape[0]
        rp = st.per_round_then_mean([arr[r, :done[r]].ravel() for r in range(g.shape[0])], PS)
        results["classes"][name] = {"latency_ns_per_query": rp.to_dict(),
                                    "windows_per_round": list(done)}
        f.save_samples(name, group_ns=arr, windows_done=np.array(done, np.int64))
    f.finish(results, g.shape[0])
    return path


def test_same_distribution_passes_doubled_fails(tmp_path):
    rng = np.random.default_rng(5)
    a = _folder(tmp_path / "a", _rounds(rng))
    b = _folder(tmp_path / "b", _rounds(rng))
    res = cmp.compare(a, b)
    assert res.exit_code() == 0 and not res.failures
    assert {c.name for c in res.changes} == {"yield0 p50 ns/query", "yield0 p99 ns/query",
                                              "none p50 ns/query", "none p99 ns/query",
                                              "yield0 p50 x no-burst", "yield0 p99 x no-burst"}
    assert set(res.unreported) == {"yield0 p999 ns/query", "none p999 ns/query",
                                   "yield0 p999 x no-burst"}
    assert res.unreported["none p999 ns/query"].startswith("not enough samples (n=1000 per round")
    assert res.confidence == pytest.approx(1 - 0.05 / 6)
    slow = _folder(tmp_path / "slow", _rounds(rng) * 2.0)
    res = cmp.compare(a, slow)
    assert res.exit_code() == 1
    by = {c.name: c for c in res.changes}
    assert by["yield0 p50 ns/query"].regression and by["yield0 p50 ns/query"].verdict == "slower"
    assert not by["yield0 p50 x no-burst"].regression        # both classes twice as slow
    text = cmp.format_comparison(res)
    assert "slower: REGRESSION" in text and "Bonferroni" in text


def test_a_figure_missing_or_not_reported_on_one_side_fails(tmp_path):
    rng = np.random.default_rng(6)
    a = _folder(tmp_path / "a", _rounds(rng))
    one = _folder(tmp_path / "one", _rounds(rng), classes=("yield0",),
                  params={"classes": ["yield0", "none"], "rounds": 3, "windows": 250,
                          "groups": 4})
    res = cmp.compare(a, one)
    assert res.exit_code() == 2
    assert "none p50 ns/query: only in OLD" in res.failures
    # 100 windows a round in NEW: its p99 rests on 4 groups beyond it, not reported.
    short = _folder(tmp_path / "short", _rounds(rng), windows_done=[100, 100, 100])
    res = cmp.compare(a, short)
    assert res.exit_code() == 2
    assert any(f.startswith("yield0 p99 ns/query: not reported in NEW (not enough samples (n=400")
               for f in res.failures)


def test_nothing_judged_fails(tmp_path):
    rng = np.random.default_rng(7)
    g = _rounds(rng, windows=4)                   # 16 groups a round: not even p50
    a, b = _folder(tmp_path / "a", g), _folder(tmp_path / "b", g)
    res = cmp.compare(a, b)
    assert res.exit_code() == 2 and not res.changes and res.unreported


def test_environment_identities_exact_measured_within_tolerance(tmp_path):
    rng = np.random.default_rng(8)
    a = _folder(tmp_path / "a", _rounds(rng))
    b = _folder(tmp_path / "b", _rounds(rng))
    old, new = (cmp.output.load(p) for p in (a, b))
    assert cmp.incomparable(old, new) == []
    new.summary["results"]["ticks_per_ns"] = 2.0 * 1.0005          # within 0.1 %
    assert cmp.incomparable(old, new) == []
    new.summary["results"]["ticks_per_ns"] = 2.0 * 1.002
    assert cmp.incomparable(old, new) == [
        "measured ticks_per_ns: 2 vs 2.004 (+0.20 %, tolerance 0.1 %)"]
    new.environment["kernel"] = dict(new.environment["kernel"], release="0.0-other")
    assert any(w.startswith("environment kernel") for w in cmp.incomparable(old, new))


def test_few_rounds_widen_the_interval_students_t():
    assert rs.t_of(0.95, 4) == pytest.approx(2.7764, abs=1e-4)
    assert rs.t_of(0.99, 10) == pytest.approx(3.1693, abs=1e-4)
    assert rs.t_of(0.95, float("inf")) == pytest.approx(1.95996, abs=1e-5)
    assert rs.t_two_sided_p(2.7764, 4) == pytest.approx(0.05, abs=1e-4)
    rng = np.random.default_rng(9)
    a, b = rng.normal(0, 0.1, 500), rng.normal(0.3, 0.1, 500)
    z = rs.judge(1.0, 1.35, np.exp(a), 1.35 * np.exp(b - 0.3), 0.99)
    t = rs.judge(1.0, 1.35, np.exp(a), 1.35 * np.exp(b - 0.3), 0.99, rounds=(3, 3))
    assert t.low < z.low < z.high < t.high
    one = rs.judge(1.0, 1.35, np.exp(a), 1.35 * np.exp(b - 0.3), 0.99, rounds=(1, 1))
    assert (one.low, one.high) == pytest.approx((z.low, z.high))   # no rounds to scale


def test_runs_pooled_on_each_side_carry_the_drift_between_runs(tmp_path):
    """Two runs of one code whose rounds agree within each run but not across them (the
    machine moved between runs): one run per side calls it a change; the runs of each
    side pooled (redrawn runs first), against the next ones, do not; a change far
    beyond the runs' spread still shows."""
    rng = np.random.default_rng(10)
    run = lambda name, k: _folder(tmp_path / name, _rounds(rng, drift=0.01) * k)
    a, a2, a3 = run("a", 1.0), run("a2", 1.6), run("a3", 1.2)
    b, b2, b3 = run("b", 1.0), run("b2", 1.6), run("b3", 1.3)
    assert cmp.compare(a, a2).exit_code() == 1
    res = cmp.compare(a, b, old_more=[a2, a3], new_more=[b2, b3])
    assert res.exit_code() == 0 and any("rounds pooled: 3 runs OLD" in n for n in res.notes)
    by = {c.name: c for c in res.changes}
    assert by["yield0 p50 ns/query"].rounds == 3          # what the variance rests on: runs
    slow = [run("s%d" % k, 8.0 * f) for k, f in enumerate((1.0, 1.1, 0.9))]
    res = cmp.compare(a, slow[0], old_more=[a2, a3], new_more=slow[1:])
    assert res.exit_code() == 1
