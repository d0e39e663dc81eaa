"""result.summary_frame(): the printed table's own numbers, one row per group x round x
statistic -- the same on a fresh result and on its output folder loaded back, and
exactly what the table prints (per-round nearest rank, mean over the rounds)."""
import math

import numpy as np
import pytest

import pyqueue.lab as lab
from pyqueue.lab.common import stats as st
from pyqueue.lab.common.frames import SUMMARY_COLUMNS

pd = pytest.importorskip("pandas")

SMALL = dict(rounds=2, windows=30, send_bytes=64 << 10, spill_blocks=512, warmup_queries=64,
             slice_windows=10, progress=False)


# The p50 column's place in a burst-tail row: class, its send's p50 / p99, then p50.
P50 = 2


def _cells(table, name):
    """The table row of class ``name`` as its cells (plain text table)."""
    for line in table.splitlines():
        if line.split("  ")[0].strip() == name:
            return [c.strip() for c in line.split("  ") if c.strip()]
    raise AssertionError("no row %r in\n%s" % (name, table))


@pytest.mark.two_cpus(reason="burst-tail needs two CPUs")
def test_burst_tail_summary_frame_is_the_printed_table(tmp_path):
    res = lab.burst_tail(classes=["yield0", "none"], out=str(tmp_path / "run"), **SMALL)
    df = res.summary_frame()
    assert tuple(df.columns) == SUMMARY_COLUMNS
    # 2 classes x 2 figures x 3 statistics x 2 rounds
    assert len(df) == 2 * 2 * 3 * 2
    lat = df[df.figure == "latency_ns_per_query"]
    table = res.table()
    for name in ("yield0", "none"):
        d = res.summary["classes"][name]["latency_ns_per_query"]
        mine = lat[lat.group == name]
        for i, label in enumerate(("p50", "p99", "p999")):
            rows = mine[mine.statistic == label].sort_values("round")
            assert rows.samples.tolist() == d["counts"]
            got = rows.value.tolist()
            want = [np.nan if v is None else v for v in np.array(d["per_round"])[:, i]]
            assert np.array_equal(got, want, equal_nan=True)
            figure = rows.mean_over_rounds.iloc[0]
            if label == "p50":                    # 120 groups a round: p50 only
                assert figure == d["mean"][i] and rows.reported.all()
                # exactly what the table prints: mean [min–max] over the rounds
                cell = "%.1f [%.1f–%.1f]" % (figure, rows.value.min(), rows.value.max())
                assert _cells(table, name)[P50] == cell
                assert rows.value.mean() == pytest.approx(figure, rel=1e-15)
            else:
                assert math.isnan(figure) and not rows.reported.any()
                p = {"p99": 99.0, "p999": 99.9}[label]
                assert rows.reason.iloc[0] == st.not_enough((120, 120), p, per_round=True)
                assert _cells(table, name)[P50 + i] == "not enough samples (n=120)"
    loaded = lab.load(str(tmp_path / "run")).summary_frame()
    pd.testing.assert_frame_equal(df, loaded)


def test_summary_frame_of_an_experiment_without_per_round_tables_is_refused():
    class Soak:
        experiment = "soak"
        summary = {}
    with pytest.raises(ValueError, match="burst_tail, pipeline and ownership"):
        lab.summary_frame(Soak())
