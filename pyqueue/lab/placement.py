"""Interleaved slices tagged by a placement probe (SPEC §8, issue 7).

On a shared VM the host moves the virtual CPUs: a cache-line hand-off between the
same two vCPUs costs ~26 ns at some moments and ~160 ns at others, and every
cross-core figure moves with it.  So contenders run in short slices A B C A B C
..., each slice is bracketed by a one-way ping-pong probe, and ratios are taken
only between slices of the same round whose probes all agree on the placement.
"""
import itertools
import math
import statistics
from dataclasses import asdict, dataclass, field

DEFAULT_SPLIT_NS = 100.0


def tag(probe_ns, split_ns=DEFAULT_SPLIT_NS):
    """'near' when the one-way probe is below split_ns, 'far' above, None if unmeasured."""
    if probe_ns is None or not math.isfinite(probe_ns):
        return None
    return "near" if probe_ns < split_ns else "far"


@dataclass
class Slice:
    round: int
    contender: str
    value: float                 # the contender's figure (e.g. M msg/s)
    probe_before_ns: float
    probe_after_ns: float
    placement: str = None        # 'near' / 'far' when both probes agree, else 'moved'
    extra: dict = field(default_factory=dict)

    def as_dict(self):
        return asdict(self)


def classify(probe_before_ns, probe_after_ns, split_ns=DEFAULT_SPLIT_NS):
    a, b = tag(probe_before_ns, split_ns), tag(probe_after_ns, split_ns)
    return a if a is not None and a == b else "moved"


def interleave(contenders, rounds, run_slice, probe, split_ns=DEFAULT_SPLIT_NS,
               should_stop=lambda: False, on_slice=None):
    """Run every contender once per round, rotating the order each round.

    run_slice(name) -> (value, extra dict); probe() -> one-way ns.  Returns the
    list of Slice records, in execution order, unfiltered.
    """
    names = list(contenders)
    slices = []
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            if should_stop():
                return slices
            before = probe()
            value, extra = run_slice(name)
            after = probe()
            s = Slice(r, name, value, before, after, classify(before, after, split_ns), extra)
            slices.append(s)
            if on_slice:
                on_slice(s)
    return slices


def round_placement(slices, r):
    """The placement of round r: its slices' common tag, or 'moved'."""
    tags = {s.placement for s in slices if s.round == r}
    return tags.pop() if len(tags) == 1 else "moved"


def ratios_by_placement(slices, num, den):
    """value(num) / value(den) per round, grouped by the round's placement.

    Rounds whose slices disagree ('moved') are counted but yield no ratio.
    Returns {placement: {"ratios": [...], "median": float|None, "rounds": n}}.
    """
    out = {}
    by_round = {}
    for s in slices:
        by_round.setdefault(s.round, {})[s.contender] = s
    for r, group in sorted(by_round.items()):
        if num not in group or den not in group:
            continue
        place = round_placement([group[num], group[den]], r)
        entry = out.setdefault(place, {"ratios": [], "median": None, "rounds": 0})
        entry["rounds"] += 1
        if place != "moved" and group[den].value:
            entry["ratios"].append(group[num].value / group[den].value)
    for entry in out.values():
        if entry["ratios"]:
            entry["median"] = statistics.median(entry["ratios"])
    return out


def medians_by_placement(slices):
    """{placement: {contender: (median value, n slices)}} over agreeing slices."""
    out = {}
    keyf = lambda s: (s.placement, s.contender)
    for (place, name), group in itertools.groupby(sorted(slices, key=keyf), key=keyf):
        vals = [s.value for s in group]
        out.setdefault(place, {})[name] = (statistics.median(vals), len(vals))
    return out
