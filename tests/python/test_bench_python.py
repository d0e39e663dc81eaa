"""The bench's Python rows (pyqueue/lab/experiments/bench_python.py) run end to
end on small counts and check every message; no figure is asserted."""
import pytest

from pyqueue.config import QueueConfig
from pyqueue.lab.experiments import bench_python
from support import ALLOWED_CPUS


@pytest.fixture
def rows():
    g = bench_python.PythonAPI(3000, ALLOWED_CPUS[0], 1 << 20, QueueConfig.of(None),
                               ALLOWED_CPUS[-1])
    yield g
    g.close()


def test_every_row_runs_and_checks_its_messages(rows):
    names = rows.contenders()
    assert len(set(names)) == len(names)
    for name in names:
        rate, extra = rows.run(name)
        assert rate > 0 and extra["ns_per_msg"] > 0, name


def test_the_ratios_name_rows_that_exist_and_come_from_a_summary(rows):
    names = set(rows.contenders())
    for _, a, b, _ in bench_python.RATIOS:
        assert a in names and b in names
    med = {n: {"median": rows.run(n)[0], "slices": 1} for n in names}
    summary = {"python_mmsg_s": {"near": med}}
    got = bench_python.ratios(summary)["near"]
    assert [r[0] for r in got] == [r[0] for r in bench_python.RATIOS]
    assert all(r is not None and r > 0 for _, r, _ in got)
    text = bench_python.format_ratios(summary)
    assert "two threads / SimpleQueue" in text and ("met" in text or "missed" in text)


def test_the_standalone_run_prints_rows_and_ratios(capsys):
    bench_python.main(["--rounds", "1", "--messages", "2000",
                       "--writer-cpu", str(ALLOWED_CPUS[0]), "--reader-cpu", str(ALLOWED_CPUS[-1])])
    out = capsys.readouterr().out
    assert "py_write_poll" in out and "simplequeue_threads" in out and "goal >=" in out


def test_bench_summary_takes_the_python_ratios_as_its_targets_do():
    """One way to take a ratio: the median of per-round ratios, in the table and in
    the target line alike (a ratio of medians disagreed with the target)."""
    from pyqueue.lab.common.placement import Slice
    from pyqueue.lab.reports import bench as report
    # Per-round ratios 0.5, 2.0, 0.75 (median 0.75); the ratio of the medians is 3 / 2.
    vals = {"py_write_poll": [1.0, 4.0, 3.0], "simplequeue": [2.0, 2.0, 4.0]}
    py = [Slice(contender=c, round=r, value=v, probe_before_ns=100, probe_after_ns=100,
                placement="far", extra={})
          for c, vs in vals.items() for r, v in enumerate(vs)]
    summ = report.summarize({"python": py}, {})
    got = dict((n, r) for n, r, _ in bench_python.ratios(summ)["far"])
    assert got["one thread write+poll(1) / SimpleQueue put+get"] == 0.75
    target = [t for t in summ["targets"] if t["label"].startswith("Python write()+poll()")][0]
    assert target["by_placement"]["far"]["median"] == 0.75
    assert "median of per-round ratios" in bench_python.format_ratios(summ)
