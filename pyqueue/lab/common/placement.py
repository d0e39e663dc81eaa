"""Interleaved slices tagged by a placement probe (DESIGN §8.2).

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
# Every tag a slice can carry, in the order of their codes in stored samples.
TAGS = ("near", "far", "moved")


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
               should_stop=lambda: False, on_slice=None, first_round=0):
    """Run every contender once per round, rotating the order each round.

    run_slice(name) -> (value, extra dict); probe() -> one-way ns.  Rounds are
    numbered from first_round (so a caller can run one round at a time and
    interleave several groups).  Returns the list of Slice records, in
    execution order, unfiltered.
    """
    names = list(contenders)
    slices = []
    for r in range(first_round, first_round + rounds):
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


def round_placement(slices, r=None):
    """The common placement of these slices (of one round), or 'moved'.

    r, when given, keeps only the slices of round r."""
    tags = {s.placement for s in slices if r is None or s.round == r}
    return tags.pop() if len(tags) == 1 else "moved"


def _value(s):
    return s.value


def ratios_by_placement(slices, num, den, key=_value, best=max):
    """key(num) / key(den) per round, grouped by the round's placement.

    den is one contender or a sequence of them: then each round's ratio is taken
    against the best of those present in that round (``best`` = max for
    higher-is-better figures such as throughput, min for latencies), and
    ``against`` records which one it was.  A round counts only when num and at
    least one den ran in it; the placement is that of num and every den slice of
    the round, so one moved slice makes the round 'moved': counted, no ratio.
    Returns {placement: {"ratios": [...], "against": [...], "median": float|None,
    "rounds": n}}.
    """
    dens = [den] if isinstance(den, str) else list(den)
    out = {}
    by_round = {}
    for s in slices:
        by_round.setdefault(s.round, {})[s.contender] = s
    for r, group in sorted(by_round.items()):
        present = [group[d] for d in dens if d in group]
        if num not in group or not present:
            continue
        place = round_placement([group[num]] + present)
        entry = out.setdefault(place, {"ratios": [], "against": [], "median": None, "rounds": 0})
        entry["rounds"] += 1
        if place == "moved":
            continue
        ref = best(present, key=key)
        if key(ref):
            entry["ratios"].append(key(group[num]) / key(ref))
            entry["against"].append(ref.contender)
    for entry in out.values():
        if entry["ratios"]:
            entry["median"] = statistics.median(entry["ratios"])
    return out


def medians_by_placement(slices, key=_value):
    """{placement: {contender: (median of key(slice), n slices)}}, 'moved' included."""
    out = {}
    keyf = lambda s: (s.placement, s.contender)
    for (place, name), group in itertools.groupby(sorted(slices, key=keyf), key=keyf):
        vals = [key(s) for s in group]
        out.setdefault(place, {})[name] = (statistics.median(vals), len(vals))
    return out
