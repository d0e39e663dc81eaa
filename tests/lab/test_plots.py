"""The figure checks (pyqueue.lab.reports.plots) catch what made the notebooks' old
figures mislead, and pass the figures drawn the way the notebooks draw them; the
findings (pyqueue.lab.reports.findings) are worded by what the numbers show."""
import numpy as np
import pytest

from pyqueue.lab.reports import findings as fd

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pyqueue.lab.reports import plots  # noqa: E402

CLASSES = ["yield1024", "yield0", "yield65536", "ck", "ck-twin", "dpdk", "dpdk-twin", "rwq",
           "rwq-twin", "boost", "boost-twin", "atomic_queue", "atomic_queue-twin", "none"]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_class_styles_keep_every_class_distinct():
    st = plots.class_styles(CLASSES + ["none+gap=20", "mutex", "mutex-twin", "yield8+hugepages",
                                       "something-else"])
    assert len({s["color"] for s in st.values()}) == len(st)
    assert st["none"]["color"] == "#000000"
    assert st["ck"]["linestyle"] == "-" and st["ck-twin"]["linestyle"] == "--"


def test_the_old_first_figure_is_caught():
    """notebook 01 as it was: the 10-colour cycle, the legend on the data, no units."""
    fig, ax = plt.subplots()
    x = np.logspace(1, 3, 60)
    for k, n in enumerate(CLASSES):
        ax.plot(x, np.linspace(0, 1, 60) ** (k + 1), label=n)
    ax.set_xlabel("group mean")
    ax.set_ylabel("fraction of groups <= x")
    ax.legend()
    problems = plots.figure_problems(fig)
    assert any("share the colour" in p and "ck" in p and "none" in p for p in problems)
    assert any("legend covers data" in p for p in problems)
    assert any("names no unit" in p for p in problems)
    assert any("x axis spans 100x on a linear scale" in p for p in problems)


def test_a_linear_axis_over_3000x_and_overlapping_labels_are_caught():
    fig, ax = plt.subplots(figsize=(4, 3))
    names = CLASSES[:-1]
    ax.bar(np.arange(len(names)), [3.0] * 6 + [3000.0] * 7, label="p999")
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylabel("x the no-burst baseline")
    problems = plots.figure_problems(fig)
    assert any("spans 1000x on a linear scale" in p for p in problems)
    assert any("tick labels overlap" in p for p in problems)
    assert any("y axis 'x the no-burst baseline' names no unit" in p for p in problems)


def test_heat_maps_on_their_own_scales_are_caught_and_a_shared_one_passes():
    a = np.array([[np.nan, 95.0], [101.0, np.nan]])
    b = np.array([[np.nan, 40.0], [60.0, np.nan]])

    def draw(shared):
        fig, axes = plt.subplots(1, 2, layout="constrained")
        lim = plots.shared_limits([a, b]) if shared else (None, None)
        for ax, m in zip(axes, (a, b)):
            im = ax.imshow(m, vmin=lim[0], vmax=lim[1])
            ax.set_xticks([0, 1], ["cpu0", "cpu1"])
            ax.set_yticks([0, 1], ["cpu0", "cpu1"])
            ax.set_xlabel("reader CPU")
            ax.set_ylabel("writer CPU")
        fig.colorbar(im, ax=list(axes), label="one-way latency (ns)")
        return plots.figure_problems(fig)

    assert any("different colour scales" in p for p in draw(False))
    assert draw(True) == []


def test_a_legend_inside_the_next_panel_and_text_into_it_are_caught():
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(6, 3))
    a1.plot([1, 2, 3], [1, 2, 3], label="a")
    a2.plot(np.linspace(1, 3, 40), np.linspace(3, 1, 40), "o", label="a")  # top left too
    for ax in (a1, a2):
        ax.set_xlabel("x (s)")
    a1.set_ylabel("y (s)")
    a2.set_ylabel("a very long label that lands on the neighbour panel (ns/query)",
                  labelpad=120)
    a1.legend(loc="upper left", bbox_to_anchor=(1.25, 1.0))
    problems = plots.figure_problems(fig)
    assert any("runs into panel 1" in p for p in problems)
    assert any("a legend covers data of panel 2" in p for p in problems)


def test_figures_drawn_as_the_notebooks_draw_them_pass():
    st = plots.class_styles(CLASSES)
    fig, ax = plt.subplots(figsize=(9, 4.5), layout="constrained")
    rng = np.random.default_rng(0)
    for n in CLASSES:
        g = np.sort(rng.lognormal(4, 1, 500))
        ax.plot(g, 1 - np.arange(g.size) / g.size, label=n,
                **{k: v for k, v in st[n].items() if k != "marker"})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("group mean (ns/query)")
    ax.set_ylabel("share of groups at or above x (fraction)")
    plots.legend_outside(ax)
    assert plots.figure_problems(fig) == []
    # A time axis spread evenly from near 0 stays linear; the wide values go log.
    fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
    t = np.linspace(1e-4, 2, 9)
    ax.plot(t, [25, 30, 1150, 26, 25, 24, 800, 25, 25], "-o", color="#d95f02", label="median")
    assert plots.log_if_wide(ax, "y")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("one-way latency (ns)")
    plots.legend_outside(ax)
    assert plots.figure_problems(fig) == []


def test_run_header_names_cpus_placement_and_parameters():
    class R:
        params = {"writer_cpu": 0, "reader_cpu": -1, "rounds": 3, "queue": {"hot_blocks": 4}}
    text = plots.run_header(R(), environment={"allowed_cpus": "0-3", "cpu_count": 4,
                                               "cpu_model": "Test CPU",
                                               "kernel": {"system": "Linux", "release": "6"}})
    assert text.splitlines() == ["CPUs: writer_cpu 0, reader_cpu not pinned; allowed CPUs 0-3 "
                                 "(4 cores)", "placement: Test CPU, Linux 6",
                                 "parameters: rounds=3, queue={hot_blocks=4}"]


# ---- the findings: worded by what the numbers show ---------------------------------------

def _stream(f, growth):
    return {"factor": f, "growth_per_s": [growth], "model_growth_per_s": max(0, 1 - 1 / f)}


def test_streams_say_what_the_run_shows():
    ok = fd.streams([_stream(1.1, 0.09), _stream(0.9, 0.001)])
    assert ok[0].startswith("Above D (P = 1.10 D) the delay grows")
    assert ok[1].startswith("Below D (P = 0.90 D) the delay stays flat")
    bad = fd.streams([_stream(1.1, 0.001), _stream(0.9, 0.5)])
    assert all(s.startswith(fd.NOT_SHOWN) for s in bad)
    assert "did not grow" in bad[0] and "grew too" in bad[1]


def test_paced_targets_and_the_model_line():
    rows = [{"t": 1e-3, "ratio": [0.9], "d_run": [1e6]}, {"t": 2e-3, "ratio": [0.8]}]
    assert fd.paced_targets(rows)[0].startswith("Every paced burst (2) kept")
    rows[0]["ratio"] = [2.6]
    assert fd.paced_targets(rows)[0].startswith("1 of 2 paced bursts met")
    rows[1]["ratio"] = [17.9]
    text = fd.paced_targets(rows, 1.6e6)[0]
    assert text.startswith(fd.NOT_SHOWN + ": every paced burst (2) missed its target, by 2.6× "
                           "to 17.9×") and "1e+06 to 1e+06 msg/s" in text
    assert "agrees with" in fd.model_vs_measured(1000, 1e6, 1.05e6, [1e6, 1.01e6])[0]
    off = fd.model_vs_measured(1000, 1e6, 0.69e6, [1e6, 2.67e6])[0]
    assert "sits 45 % above" in off and "spread 167 %" in off and "why the line misses" in off


def test_burst_findings():
    def cls(x, mig=0.0, slow=None, mean=(10.0, 100.0, None)):
        return {"x_no_burst": x, "migrated_window_share": mig, "windows_per_round": [250] * 3,
                "slowest_1pct_in_migrated_share": slow,
                "latency_ns_per_query": {"mean": list(mean)}}
    s = {"classes": {"yield1024": cls([3.0, 25.0, None], mean=(30.0, 500.0, None)),
                     "ck": cls([9.0, 22.0, None], mean=(90.0, 440.0, None)),
                     "none": cls([1.0, 1.0, None])}}
    assert fd.burst_cost(s)[0] == ("After the send, yield1024's business latency is p50 3.0×, "
                                   "p99 25.0× its no-send latency (p999 not reported: not "
                                   "enough samples).")
    assert fd.tails(s)[0].startswith("Lowest p99 after the send: ck (440 ns/query)")
    assert fd.migrations(s)[0].startswith(fd.NOT_SHOWN + ": the writer never changed CPU")
    s["classes"]["ck"].update(migrated_window_share=0.067, slowest_1pct_in_migrated_share=0.9)
    assert fd.migrations(s) == ["ck: 6.7 % of windows migrated and hold 90.0 % of the slowest "
                                "1 % of groups (over their share)."]
    g = np.ones((2, 30, 4))
    g[..., 0] = 3.0
    assert "3.0× slower than the last" in fd.first_group({"yield0": g})[0]
    assert fd.first_group({"yield0": np.ones((2, 30, 4))})[0].startswith(fd.NOT_SHOWN)
    assert fd.first_group({"yield0": np.ones((1, 5, 4))})[0].startswith(fd.NOT_SHOWN)
