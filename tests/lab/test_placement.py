"""common/placement.py on synthetic data: tags, interleaving order, ratios per placement."""
import itertools


from pyqueue.lab.common import placement as pl
from pyqueue.lab.common.placement import Slice


def test_tag_and_classify():
    assert pl.tag(30.0) == "near"
    assert pl.tag(160.0) == "far"
    assert pl.tag(100.0) == "far"            # the split itself is 'far'
    assert pl.tag(None) is None
    assert pl.tag(float("nan")) is None
    assert pl.tag(50.0, split_ns=40.0) == "far"
    assert pl.classify(27, 31) == "near"
    assert pl.classify(170, 240) == "far"
    assert pl.classify(27, 170) == "moved"
    assert pl.classify(None, 27) == "moved"


def test_interleave_rotates_and_brackets_each_slice():
    probes = itertools.cycle([20.0, 30.0, 150.0, 160.0])   # near, near, far, far, ...
    events = []

    def probe():
        v = next(probes)
        events.append(("probe", v))
        return v

    def run(name):
        events.append(("run", name))
        return {"A": 1.0, "B": 2.0, "C": 3.0}[name], {"x": name}

    seen = []
    out = pl.interleave(["A", "B", "C"], 2, run, probe, on_slice=seen.append)
    assert [s.contender for s in out] == ["A", "B", "C", "B", "C", "A"]
    assert [s.round for s in out] == [0, 0, 0, 1, 1, 1]
    assert seen == out
    # every run sits between two probes
    kinds = [e[0] for e in events]
    assert kinds == ["probe", "run", "probe"] * 6
    assert [s.placement for s in out] == ["near", "far", "near", "far", "near", "far"]
    assert out[0].probe_before_ns == 20.0 and out[0].probe_after_ns == 30.0
    assert out[1].extra == {"x": "B"}


def test_interleave_first_round_and_stop():
    out = pl.interleave(["A", "B", "C"], 1, lambda n: (1.0, {}), lambda: 10.0, first_round=4)
    assert [s.round for s in out] == [4, 4, 4]
    assert [s.contender for s in out] == ["B", "C", "A"]   # 4 % 3 = 1: rotated by one
    calls = []
    out = pl.interleave(["A", "B"], 3, lambda n: (1.0, {}), lambda: 10.0,
                        should_stop=lambda: len(calls) >= 3, on_slice=calls.append)
    assert len(out) == 3


def _sl(r, name, value, place, **extra):
    probe = {"near": (25, 25), "far": (160, 160), "moved": (25, 160)}[place]
    return Slice(r, name, value, probe[0], probe[1], pl.classify(*probe), extra)


def test_ratios_by_placement_pairs_within_round():
    slices = [_sl(0, "q", 10, "near"), _sl(0, "p", 5, "near"),
              _sl(1, "q", 4, "far"), _sl(1, "p", 1, "far"),
              _sl(2, "q", 12, "near"), _sl(2, "p", 4, "near"),
              _sl(3, "q", 9, "near"), _sl(3, "p", 1, "far"),     # disagree: moved
              _sl(4, "q", 9, "near")]                            # no partner: not counted
    r = pl.ratios_by_placement(slices, "q", "p")
    assert r["near"]["ratios"] == [2.0, 3.0] and r["near"]["median"] == 2.5
    assert r["far"]["ratios"] == [4.0] and r["far"]["rounds"] == 1
    assert r["moved"]["rounds"] == 1 and r["moved"]["ratios"] == [] and r["moved"]["median"] is None


def test_ratio_against_best_of_several():
    slices = [_sl(0, "q", 10, "near"), _sl(0, "a", 4, "near"), _sl(0, "b", 8, "near"),
              _sl(1, "q", 10, "near"), _sl(1, "a", 5, "near"),             # b missing this round
              _sl(2, "q", 10, "near"), _sl(2, "a", 4, "near"), _sl(2, "b", 8, "far")]
    r = pl.ratios_by_placement(slices, "q", ("a", "b"))
    assert r["near"]["ratios"] == [10 / 8, 10 / 5]
    assert r["near"]["against"] == ["b", "a"]
    assert r["moved"]["rounds"] == 1            # one peer moved: the whole round is moved
    # latencies: the best is the smallest, read from extra
    lat = [_sl(0, "q", 1, "far", p999=300), _sl(0, "a", 1, "far", p999=200),
           _sl(0, "b", 1, "far", p999=600)]
    r = pl.ratios_by_placement(lat, "q", ["a", "b"], key=lambda s: s.extra["p999"], best=min)
    assert r["far"]["ratios"] == [1.5] and r["far"]["against"] == ["a"]


def test_medians_by_placement_and_round_placement():
    slices = [_sl(0, "a", 1, "near"), _sl(1, "a", 3, "near"), _sl(2, "a", 2, "near"),
              _sl(0, "b", 7, "far"), _sl(1, "b", 9, "moved", v=5)]
    m = pl.medians_by_placement(slices)
    assert m["near"]["a"] == (2, 3)
    assert m["far"]["b"] == (7, 1)
    assert m["moved"]["b"] == (9, 1)
    assert pl.medians_by_placement(slices[-1:], key=lambda s: s.extra["v"])["moved"]["b"] == (5, 1)
    assert pl.round_placement(slices, 0) == "moved"
    assert pl.round_placement(slices[:1], 0) == "near"
    assert pl.round_placement([]) == "moved"


def test_zero_denominator_gives_no_ratio():
    r = pl.ratios_by_placement([_sl(0, "q", 1, "near"), _sl(0, "p", 0, "near")], "q", "p")
    assert r["near"]["rounds"] == 1 and r["near"]["ratios"] == []
