"""pyqueue.pacing against hand-computed values, the pacing table and the edge cases."""
import math

import numpy as np
import pytest

from pyqueue import pacing

D = 1.6e6      # the pacing article: typical drain rate of one sender thread, msg/s
N = 90_000     # the pacing article: burst size

# the pacing article's table: target T (s), tight-loop burst D×T (msgs), P_max (M msg/s,
# rounded to 2 decimals as the article prints it)
SEED_004 = [
    (0.5e-3, 800, 1.61),
    (1e-3, 1_600, 1.63),
    (5e-3, 8_000, 1.76),
    (10e-3, 16_000, 1.95),
    (25e-3, 40_000, 2.88),
]


@pytest.mark.parametrize("t, limit, pmax_m", SEED_004)
def test_seed_004_rows(t, limit, pmax_m):
    assert pacing.burst_limit(D, t) == pytest.approx(limit)
    assert round(pacing.p_max(D, t, N) / 1e6, 2) == pmax_m


def test_seed_004_table_object_and_text():
    table = pacing.pacing_table(D, N, [t for t, _, _ in SEED_004])
    assert [r.t for r in table.rows] == [t for t, _, _ in SEED_004]
    for row, (t, limit, pmax_m) in zip(table.rows, SEED_004):
        assert row.burst_limit == pytest.approx(limit)
        assert round(row.p_max / 1e6, 2) == pmax_m
        assert row.p_max_over_d == pytest.approx(row.p_max / D)
        assert row.tight_loop_ok is False          # N = 90k > D·T for every seed row
    assert table.unpaced_delay == pytest.approx(0.05625)   # seed: "此处约 56 ms"
    text = str(table)
    for needle in ("0.5 ms", "≈ 1,600 msgs", "≈ 1.63 M msg/s", "≈ 2.88 M msg/s",
                   "56.25 ms", "P_max = D / (1 - T·D/N)"):
        assert needle in text
    md = table.to_text(markdown=True)
    assert "| 25 ms" in md and "|---" in md


def test_default_targets_are_the_seeds():
    assert [r.t for r in pacing.pacing_table(D, N).rows] == [t for t, _, _ in SEED_004]


def test_table_beyond_the_unpaced_floor_is_unbounded():
    row = pacing.pacing_table(D, N, [0.1]).rows[0]
    assert math.isinf(row.p_max) and math.isinf(row.p_max_over_d)
    assert row.tight_loop_ok is True
    assert "unbounded" in str(pacing.pacing_table(D, N, [0.1]))


def test_hand_computed_backlog_and_delay():
    # n=1000 offered at 2000/s into a 1000/s drain: half the burst is still queued
    assert pacing.peak_backlog(1000, 2000, 1000) == 500.0
    assert pacing.max_delay(1000, 2000, 1000) == 0.5
    # P = 4 D: Q = N · 3/4
    assert pacing.peak_backlog(90_000, 4 * D, D) == pytest.approx(67_500)
    assert pacing.max_delay(90_000, 4 * D, D) == pytest.approx(67_500 / D)
    # p_max with T = 0.25 s, D = 1000, N = 1000: 1000 / (1 - 0.25) = 1333.33
    assert pacing.p_max(1000, 0.25, 1000) == pytest.approx(4000 / 3)
    assert pacing.burst_limit(1000, 0.25) == 250.0


def test_p_max_meets_target_exactly():
    # pacing at P_max puts the last message's delay exactly at T: the two formulas agree
    for t in (1e-4, 1e-3, 0.01, 0.05):
        assert pacing.max_delay(N, pacing.p_max(D, t, N), D) == pytest.approx(t)


def test_no_backlog_when_consumer_keeps_up():
    assert pacing.peak_backlog(N, D, D) == 0.0          # P == D
    assert pacing.peak_backlog(N, D / 2, D) == 0.0      # P < D
    assert pacing.max_delay(N, 1.0, D) == 0.0


def test_unpaced_burst_hits_the_floor():
    assert pacing.peak_backlog(N, math.inf, D) == N
    assert pacing.max_delay(N, math.inf, D) == pytest.approx(N / D)
    assert pacing.unpaced_delay(N, D) == pytest.approx(0.05625)


def test_p_max_unbounded_when_target_reaches_floor():
    assert pacing.p_max(D, N / D, N) == math.inf
    assert pacing.p_max(D, 1.0, N) == math.inf
    assert pacing.p_max(D, math.inf, N) == math.inf
    assert pacing.p_max(1000, 1.0, 1000) == math.inf    # T == N/D exactly


def test_scalars_give_python_floats():
    for value in (pacing.peak_backlog(N, 2 * D, D), pacing.max_delay(N, 2 * D, D),
                  pacing.p_max(D, 1e-3, N), pacing.burst_limit(D, 1e-3),
                  pacing.p_max(np.float64(D), np.int64(1), N)):
        assert type(value) is float


def test_arrays_broadcast():
    ts = np.array([t for t, _, _ in SEED_004] + [1.0])
    rates = pacing.p_max(D, ts, N)
    assert isinstance(rates, np.ndarray) and rates.shape == (6,)
    assert np.round(rates[:5] / 1e6, 2).tolist() == [p for _, _, p in SEED_004]
    assert math.isinf(rates[5])
    np.testing.assert_allclose(pacing.burst_limit(D, ts[:5]), [l for _, l, _ in SEED_004])

    p = np.array([0.5 * D, D, 2 * D, np.inf])
    np.testing.assert_allclose(pacing.peak_backlog(N, p, D), [0, 0, N / 2, N])
    np.testing.assert_allclose(pacing.max_delay(N, p, D), [0, 0, N / 2 / D, N / D])

    # a column of N against a row of D: outer table
    grid = pacing.max_delay(np.array([[1000.0], [2000.0]]), np.inf, np.array([100.0, 1000.0]))
    np.testing.assert_allclose(grid, [[10.0, 1.0], [20.0, 2.0]])
    # a list counts as an array input
    assert isinstance(pacing.burst_limit(D, [1e-3]), np.ndarray)


@pytest.mark.parametrize("call, name", [
    (lambda: pacing.peak_backlog(0, D, D), "n"),
    (lambda: pacing.peak_backlog(N, -1, D), "p"),
    (lambda: pacing.peak_backlog(N, D, 0), "d"),
    (lambda: pacing.max_delay(N, math.nan, D), "p"),
    (lambda: pacing.max_delay(N, D, math.inf), "d"),
    (lambda: pacing.p_max(D, 0, N), "t"),
    (lambda: pacing.p_max(D, 1e-3, -5), "n"),
    (lambda: pacing.p_max(-D, 1e-3, N), "d"),
    (lambda: pacing.p_max(D, 1e-3, math.inf), "n"),
    (lambda: pacing.burst_limit(D, math.nan), "t"),
    (lambda: pacing.burst_limit(D, np.array([1e-3, -1e-3])), "t"),
    (lambda: pacing.burst_limit("fast", 1e-3), "d"),
    (lambda: pacing.pacing_table(D, N, [1e-3, 0]), "targets"),
    (lambda: pacing.pacing_table(0, N), "d"),
])
def test_bad_inputs_name_the_argument(call, name):
    with pytest.raises(ValueError, match=r"^%s " % name):
        call()


def test_cli_pacing_table(capsys):
    from pyqueue.__main__ import main
    from pyqueue.lab.common.params import parse_duration
    assert [parse_duration(t) for t in ("0.5ms", "25 ms", "1s", "2", "100us", "1e-3")] == \
        pytest.approx([5e-4, 0.025, 1.0, 2.0, 1e-4, 1e-3])
    with pytest.raises(ValueError):
        parse_duration("soon")
    assert main(["pacing-table"]) == 0
    printed = capsys.readouterr().out
    assert "≈ 1.63 M msg/s" in printed and "≈ 2.88 M msg/s" in printed
    assert main(["pacing-table", "--drain-rate", "0"]) == 2
    assert "--drain-rate: drain_rate must be in (0, inf), got 0" in capsys.readouterr().err
    assert main(["pacing-table", "--targets", "1ms,0"]) == 2
    assert "targets[1] must be in (0, inf]" in capsys.readouterr().err


def test_pacing_table_params_are_the_flags_and_the_json(capsys):
    import json
    from pyqueue import lab
    from pyqueue.__main__ import main
    assert main(["pacing-table", "--drain", "1e6", "--burst", "20000", "--targets",
                 "1ms,20ms", "--json"]) == 0                       # --drain: the old spelling
    body = json.loads(capsys.readouterr().out)
    p = lab.PacingTableParams(drain_rate=1e6, burst=20_000, targets=(1e-3, 20e-3))
    assert body["params"] == p.to_json()
    table = lab.pacing_table(p)
    assert body["table"]["rows"][0]["p_max"] == pytest.approx(table.rows[0].p_max)
    assert body["table"]["rows"][1]["p_max"] is None               # inf: unbounded
    assert lab.pacing_table().rows == pacing.pacing_table(D, N).rows   # the article's defaults
    with pytest.warns(DeprecationWarning, match="d is now called drain_rate"):
        assert lab.pacing_table(d=1e6, burst=20_000, targets=(1e-3, 20e-3)) == table
