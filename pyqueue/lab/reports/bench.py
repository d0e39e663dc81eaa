"""The summary of a bench run (DESIGN §6.6): medians per placement, the targets
and the other ratios, and the text and Markdown reports.  Every ratio is taken
per round within one placement (common/placement.py) and summarised by its median
over rounds; nothing here measures."""
import collections
import math
import statistics

from .. import peers as _peers
from ..common import placement as pl
from ..common import regime as _regime
from ..common import twins as _twins
from ..common.stats import not_enough, reported
from pyqueue.table import render

# An adapter row and its inline twin, same slice and placement, must agree
# within this band; outside it the driver has a defect (DESIGN §8.3).
TWIN_BAND = (0.85, 1.15)
# The words of a twin verdict that the slices leave open (twin_flag): bench's
# settle pass gives those rows more slices (unsettled()).
NOT_SETTLED = "not settled"
DRIVER_DEFECT = "DRIVER DEFECT"   # how twin_flag begins a verdict against the driver
# Which pass measures which regime on purpose (experiments/bench.py).
PASSES = (("throughput", _regime.STREAMING), ("chasing", _regime.CHASING))
# The headline pass (SPEC §8): its figures whatever regime each run fell into,
# kept in summary["throughput"][FLAT_OUT] beside the regimes of the two above.
FLAT_OUT = _regime.FLAT_OUT

# The contenders beside pyqueue, as peers.py knows them: the other built-ins (the
# mutex queue), then every peer of the table -- the "best per-message peer" is one.
PER_MESSAGE_PEERS = _peers.PEERS
PEERS = tuple(n for n in _peers.BUILTIN if n != "pyqueue") + PER_MESSAGE_PEERS


# ---- summary -----------------------------------------------------------------

def _p(key):
    """What a slice is compared by: its value (key None) or one of its extras."""
    return (lambda s: s.value) if key is None else (lambda s: s.extra[key])


# (label, kind, numerator, denominator(s), key, best, target, higher_is_better)
TARGETS = (
    [(n + " / best per-message peer, 32 B throughput", "throughput", n, PER_MESSAGE_PEERS,
      None, max, 1.5, True) for n in ("pyqueue", "pyqueue_stream")] +
    [(n + " / rte_ring burst-32, 32 B throughput", "throughput", n, "dpdk_burst32",
      None, max, 1.0, True)
     for n in ("pyqueue", "pyqueue_stream", "pyqueue_burst32", "pyqueue_stream_burst32")] +
    # Flat out only (issue 45): bursts well ahead of rte_ring's, the per-message
    # path close to the floor of 32-byte records.
    [("pyqueue_burst32 (write_batch 32 -> poll_into) / rte_ring burst-32", FLAT_OUT,
      "pyqueue_burst32",
      "dpdk_burst32", None, max, 1.3, True),
     ("pyqueue / record_ring floor, 32 B throughput", FLAT_OUT, "pyqueue", "record_ring",
      None, max, 0.8, True)] +
    [(n + " / ping-pong floor, round-trip p50", "roundtrip", n, "pingpong", None, max, 1.2, False)
     for n in ("pyqueue_each", "pyqueue_scan", "pyqueue_each_direct", "pyqueue_scan_direct")] +
    [(n + " / best peer, round-trip p99.9", "roundtrip", n, PEERS, "p999_ns", min, 1.0, False)
     for n in ("pyqueue_each", "pyqueue_scan")] +
    # py_batch's Python writer is slower than the C reader, so its slices mostly chase;
    # its rate is then the writer's own, the figure this target wants, and it is taken
    # against the C writer's streaming slices only (its best): kind "writer".
    [("Python write_batch / C writer, throughput", "writer", "py_batch",
      "pyqueue_direct", None, max, 0.5, True),
     ("Python write()+poll() / SimpleQueue put+get", "python", "py_write_poll",
      "simplequeue", None, max, 1.0, True)])
EXTRA_RATIOS = [
    ("pyqueue (adapter) / pyqueue_direct", "throughput", "pyqueue", "pyqueue_direct"),
    ("pyqueue_direct / yardstick", "throughput", "pyqueue_direct", "yardstick"),
    # The per-message rows against the minimal ring (the same write_each loop shape).
    ("pyqueue / yardstick", "throughput", "pyqueue", "yardstick"),
    ("pyqueue_stream / yardstick", "throughput", "pyqueue_stream", "yardstick"),
    ("pyqueue_stream / pyqueue", "throughput", "pyqueue_stream", "pyqueue"),
    # Against the floor: the flat-out regime's own yardstick, and rte_ring's place.
    ("pyqueue_burst32 / record_ring floor", FLAT_OUT, "pyqueue_burst32", "record_ring"),
    ("rte_ring burst-32 / record_ring floor", FLAT_OUT, "dpdk_burst32", "record_ring"),
    # The round-trip decomposition: a fresh line per message (any ring), then pyqueue.
    ("ring_floor / ping-pong floor, round-trip p50", "roundtrip", "ring_floor", "pingpong"),
    ("pyqueue_each / ring_floor, round-trip p50", "roundtrip", "pyqueue_each", "ring_floor"),
    ("pyqueue_scan / ring_floor, round-trip p50", "roundtrip", "pyqueue_scan", "ring_floor"),
] + [("pyqueue / %s" % p, "throughput", "pyqueue", p) for p in PEERS] + [
    ("py_write_poll / deque", "python", "py_write_poll", "deque"),
    ("py_batch_local / simplequeue", "python", "py_batch_local", "simplequeue"),
]


def _ring_floor_note(summary):
    return ("a yardstick, not a peer: a minimal ring of %s 64-byte slots, each message in a "
            "fresh line, through the same driver as pyqueue_each"
            % summary.get("ring_floor_slots", "?"))


def _ratio_entry(d):
    return {p: {"median": e["median"], "rounds": e["rounds"], "ratios": e["ratios"],
                "against": e["against"]} for p, e in d.items()}


def spread(values):
    """min / p50 / max and n of a list of figures (None when empty)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"min": min(values), "p50": statistics.median(values), "max": max(values),
            "n": len(values)}


def median_ci(values, level=0.95):
    """The distribution-free confidence interval of the median of ``values``:
    the order statistics x(k) and x(n+1-k) with the largest k whose coverage
    1 - 2 P(Binomial(n, 1/2) < k) is at least ``level``.  {"lo", "hi", "level"
    (the coverage reached)}, or None when n is too small for it (n < 6 at 95 %)."""
    x = sorted(v for v in values if v is not None)
    n = len(x)
    best = None
    tail = 0.0                       # P(Binomial(n, 1/2) < k), k = 1, 2, ...
    for k in range(1, n // 2 + 1):
        tail += math.comb(n, k - 1) / 2.0 ** n
        if 1 - 2 * tail < level:
            break
        best = {"lo": x[k - 1], "hi": x[n - k], "level": 1 - 2 * tail}
    return best


def twin_flag(ratio_p50, placement=None, ci=None, n=None):
    """'ok' inside TWIN_BAND, else the words that say the driver has a defect --
    or, when the median's confidence interval (median_ci of the per-slice
    ratios) reaches back inside the band, that the slices do not settle it
    either way (their spread: more slices would), as it does for a median
    outside from ``n`` slices too few for any interval; no verdict for 'moved'
    slices (the placement changed inside them: their adapter and twin ran on
    different hand-off costs)."""
    if ratio_p50 is None:
        return "no ratio"
    if placement == "moved":
        return "moved: no verdict"
    lo, hi = TWIN_BAND
    if lo <= ratio_p50 <= hi:
        return "ok"
    if ci is None and n is not None and median_ci([1.0] * n) is None:
        # Too few slices for any interval: one slice outside is not a shown defect
        # (a bimodal row's single slice in a rare placement lands anywhere).
        return ("outside %.2f-%.2f, %s: %d slice%s, too few for the median's interval"
                % (lo, hi, NOT_SETTLED, n, "" if n == 1 else "s"))
    if ci is not None and ci["lo"] <= hi and ci["hi"] >= lo:
        return ("outside %.2f-%.2f, %s: the median's %.0f%% interval %.2f-%.2f reaches "
                "inside (the slices' spread)" % (lo, hi, NOT_SETTLED, 100 * ci["level"],
                                                 ci["lo"], ci["hi"]))
    return "%s (outside %.2f-%.2f)" % (DRIVER_DEFECT, lo, hi)


def regime_cells(slices):
    """{regime: {placement: {row: cell}}} of throughput slices, each slice's
    adapter figure in the cell of its own measured regime and its twin's figure in
    the cell of the twin's regime; a ratio counts only when both ran in the same
    regime.  A streaming and a chasing figure never share a cell."""
    cells = {}

    def cell(regime, place, row):
        return cells.setdefault(regime, {}).setdefault(place, {}).setdefault(
            row, {"adapter": [], "twin": [], "ratio": [], "touch_after_write": set(),
                  "passes": set(), "regime_differs": 0})

    for s in slices:
        e = s.extra
        twin_only = e.get("twin_only", False)
        if not twin_only:
            c = cell(e["regime"], s.placement, s.contender)
            c["adapter"].append(s.value)
            c["touch_after_write"].add(e.get("touch_after_write"))
            c["passes"].add(e.get("kind"))
            if "no_twin" in e:
                c["no_twin"] = e["no_twin"]
        if e.get("twin_mmsg_s") is not None:
            c2 = cell(e["twin_regime"], s.placement, s.contender)
            c2["twin"].append(e["twin_mmsg_s"])
            c2["touch_after_write"].add(e.get("touch_after_write"))
            c2["passes"].add(e.get("kind"))
            if twin_only:
                c2["twin_only"] = True
            elif e["twin_regime"] == e["regime"]:
                c2["ratio"].append(e["ratio"])
            else:
                cell(e["regime"], s.placement, s.contender)["regime_differs"] += 1
    for by_place in cells.values():
        for place, rows in by_place.items():
            for c in rows.values():
                c["ratio_ci"] = median_ci(c["ratio"])
                for k in ("adapter", "twin", "ratio"):
                    c[k] = spread(c[k])
                c["flag"] = twin_flag(c["ratio"] and c["ratio"]["p50"], place, c["ratio_ci"],
                                      c["ratio"] and c["ratio"]["n"])
                c["touch_after_write"] = sorted(c["touch_after_write"], key=str)
                c["passes"] = sorted(c["passes"])
    return cells


def flat_cells(slices):
    """{placement: {row: cell}} of flat-out slices: the cells of regime_cells
    (adapter, twin, ratio spreads, ratio_ci, flag, touch_after_write, passes,
    regime_differs), every run counted whatever regime it fell into, plus
    ``empty_poll_share`` (adapter and twin spreads of the share of the reader's
    polls that found the queue empty), ``regimes`` (adapter and twin: measured
    regime -> runs) and ``short`` (runs shorter than the pass's flat_seconds)."""
    out = {}
    for s in slices:
        e = s.extra
        c = out.setdefault(s.placement, {}).setdefault(s.contender, {
            "adapter": [], "twin": [], "ratio": [], "touch_after_write": set(),
            "passes": {FLAT_OUT}, "regime_differs": 0, "short": 0,
            "empty_poll_share": {"adapter": [], "twin": []},
            "regimes": {"adapter": collections.Counter(), "twin": collections.Counter()}})
        c["touch_after_write"].add(e.get("touch_after_write"))
        if "no_twin" in e:
            c["no_twin"] = e["no_twin"]
        if e.get("twin_only"):
            c["twin_only"] = True
        else:
            c["adapter"].append(s.value)
            c["regimes"]["adapter"][e.get("regime")] += 1
            c["empty_poll_share"]["adapter"].append(e.get("empty_poll_share"))
            c["short"] += bool(e.get("short"))
        if e.get("twin_mmsg_s") is not None:
            c["twin"].append(e["twin_mmsg_s"])
            c["regimes"]["twin"][e.get("twin_regime")] += 1
            c["empty_poll_share"]["twin"].append(e.get("twin_empty_poll_share"))
            c["short"] += bool(e.get("twin_short"))
            if e.get("ratio") is not None:
                c["ratio"].append(e["ratio"])
    for place, rows in out.items():
        for c in rows.values():
            c["ratio_ci"] = median_ci(c["ratio"])
            for k in ("adapter", "twin", "ratio"):
                c[k] = spread(c[k])
            for k in ("adapter", "twin"):
                c["empty_poll_share"][k] = spread(c["empty_poll_share"][k])
                c["regimes"][k] = dict(c["regimes"][k])
            c["flag"] = ("no twin" if "no_twin" in c
                         else twin_flag(c["ratio"] and c["ratio"]["p50"], place, c["ratio_ci"],
                                        c["ratio"] and c["ratio"]["n"]))
            c["touch_after_write"] = sorted(c["touch_after_write"], key=str)
            c["passes"] = sorted(c["passes"])
    return out


def roundtrip_twins(slices):
    """{placement: {row: {adapter, twin, ratio (p50 spreads), touch, flag}}}."""
    out = {}
    for s in slices:
        e = s.extra
        c = out.setdefault(s.placement, {}).setdefault(
            s.contender, {"adapter": [], "twin": [], "ratio": [], "touch_after_write": set()})
        if e.get("twin_only"):
            c["twin_only"] = True
        else:
            c["adapter"].append(s.value)
        if e.get("twin_p50_ns") is not None:
            c["twin"].append(e["twin_p50_ns"])
        if e.get("ratio") is not None:
            c["ratio"].append(e["ratio"])
        c["touch_after_write"].add(e.get("touch_after_write"))
        if "no_twin" in e:
            c["no_twin"] = e["no_twin"]
    for place, rows in out.items():
        for c in rows.values():
            c["ratio_ci"] = median_ci(c["ratio"])
            for k in ("adapter", "twin", "ratio"):
                c[k] = spread(c[k])
            c["flag"] = ("no twin" if "no_twin" in c
                         else "twin only: no adapter row" if c.get("twin_only")
                         else twin_flag(c["ratio"] and c["ratio"]["p50"], place, c["ratio_ci"],
                                        c["ratio"] and c["ratio"]["n"]))
            c["touch_after_write"] = sorted(c["touch_after_write"], key=str)
    return out


def unsettled(slices):
    """The rows whose twin verdict the slices so far leave open (twin_flag): a
    ratio median outside TWIN_BAND whose interval reaches back inside, or from
    too few slices for an interval (a host that moves the CPUs often splits a
    row's slices between placements), in any placement and regime.
    ``slices``: {kind: [Slice]}.  Returns sorted (kind, row) pairs, the kind
    being each pass the row's cell was measured in (throughput, chasing,
    roundtrip): what bench's settle pass runs again."""
    def left_open(c):
        return NOT_SETTLED in c["flag"]

    todo = set()
    for rows in flat_cells(slices.get(FLAT_OUT, [])).values():
        for row, c in rows.items():
            if left_open(c):
                todo.add((FLAT_OUT, row))
    tput = slices.get("throughput", []) + slices.get("chasing", [])
    for by_place in regime_cells(tput).values():
        for rows in by_place.values():
            for row, c in rows.items():
                if left_open(c):
                    todo.update((kind, row) for kind in c["passes"])
    for rows in roundtrip_twins(slices.get("roundtrip", [])).values():
        for row, c in rows.items():
            if left_open(c):
                todo.add(("roundtrip", row))
    return sorted(todo)


def main_slices(slices):
    """The slices of the rounds proper: without the settle pass's (extra
    'settle'), which ran for some rows only and so would pair rows of unequal
    rounds in a target's per-round ratios.  They count in the twin verdicts."""
    return [s for s in slices if not s.extra.get("settle")]


def slice_floor_ratios(slices, num):
    """``num``'s round-trip p50 over the ping-pong floor measured inside the same
    slice (extra ``floor_p50_ns``), per placement, in the shape of
    placement.ratios_by_placement: one ratio per slice, no other slice involved."""
    out = {}
    for s in slices:
        if s.contender != num or s.extra.get("floor_p50_ns") is None:
            continue
        e = out.setdefault(s.placement, {"ratios": [], "against": [], "median": None,
                                         "rounds": 0})
        e["rounds"] += 1
        if s.placement != "moved" and s.extra["floor_p50_ns"]:
            e["ratios"].append(s.value / s.extra["floor_p50_ns"])
            e["against"].append("pingpong (same slice)")
    for e in out.values():
        if e["ratios"]:
            e["median"] = statistics.median(e["ratios"])
    return out


def _ratios(sl, kind, num, den, key=None, best=max):
    """The per-round ratios of num over den; a round trip over the floor is taken
    inside each slice (slice_floor_ratios) when its slices carry one."""
    if kind == "roundtrip" and den == "pingpong" and key is None and any(
            s.contender == num and "floor_p50_ns" in s.extra for s in sl):
        return slice_floor_ratios(sl, num)
    return pl.ratios_by_placement(sl, num, den, key=_p(key), best=best)


def python_ratios(py):
    """bench_python's RATIOS as the targets are taken: the median of per-round
    ratios, per placement ({place: [[name, median or None, goal, rounds]]})."""
    from ..experiments.bench_python import RATIOS
    out = {}
    for i, (name, num, den, goal) in enumerate(RATIOS):
        for place, e in pl.ratios_by_placement(py, num, den).items():
            rows = out.setdefault(place, [[n, None, g, 0] for n, _, _, g in RATIOS])
            rows[i][1:] = [e["median"], goal, len(e["ratios"])]
    return out


# A chasing row at or above this share of the pace ran as fast as the pace let
# it: its ratio to a slower row is a floor of what an unpaced chase would show.
PACE_BOUND = 0.95
PACE_BOUND_NOTE = ("pace-bound: the row ran at >= %d %% of the chasing pass's pace, so its "
                   "ratio is a floor, not a miss; a smaller --gap-ns (a faster pace) measures "
                   "it" % round(PACE_BOUND * 100))


def _pace_mmsg(sl):
    """The chasing pass's pace, M msg/s (1000 / gap_ns), from its slices; None
    when they were not paced."""
    gaps = {s.extra.get("gap_ns") for s in sl} - {None, 0}
    return 1e3 / min(gaps) if gaps else None


def _pace_bound(sl, num, place, pace):
    """num's median rate in place reached the pace (PACE_BOUND)."""
    rates = [s.value for s in sl if s.contender == num and s.placement == place]
    return bool(pace and rates and statistics.median(rates) >= PACE_BOUND * pace)


def _defects(summ, kind, tag, place, rows):
    """The rows among ``rows`` whose twin verdict in ``place`` (and, for
    throughput, in the regime of ``tag``) is a driver defect: a ratio taken on
    them measured a driver the check found wrong, and says so."""
    if kind in ("throughput", FLAT_OUT):
        cells = summ["throughput"].get(tag.strip(" []"), {}).get(place, {})
    elif kind == "roundtrip":
        cells = summ["roundtrip_twins"].get(place, {})
    else:
        return []
    return sorted({r for r in rows
                   if cells.get(r, {}).get("flag", "").startswith(DRIVER_DEFECT)})


def summarize(slices, status, trips=None):
    """Spreads per regime and placement, medians per placement, the per-round ratios."""
    tput_all = slices.get("throughput", []) + slices.get("chasing", [])
    summ = {"peers": status, "throughput": dict(regime_cells(tput_all)), "roundtrip_ns": {},
            "roundtrip_twins": roundtrip_twins(slices.get("roundtrip", [])),
            "python_mmsg_s": {},
            "targets": [], "ratios": {}}
    summ["throughput"][FLAT_OUT] = flat_cells(slices.get(FLAT_OUT, []))
    # The twin verdicts above take every slice; the medians and targets below,
    # the rounds proper only (main_slices).
    lat, py, flat = (main_slices(slices.get(k, [])) for k in ("roundtrip", "python", FLAT_OUT))
    for place, d in pl.medians_by_placement(py).items():
        summ["python_mmsg_s"][place] = {k: {"median": v, "slices": n} for k, (v, n) in d.items()}
    summ["python_ratios"] = python_ratios(py)
    # A slice's percentile rests on ``trips`` round trips: null, and why, where fewer than
    # 10 lie beyond it (stats.reported).
    unreported = {name: not_enough(trips, q) for name, q in (("p50", 50.0), ("p99", 99.0),
                                                              ("p999", 99.9))
                  if trips is not None and not reported(trips, q)}
    if unreported:
        summ["roundtrip_not_reported"] = unreported
    for key, name in ((None, "p50"), ("p99_ns", "p99"), ("p999_ns", "p999")):
        med = pl.medians_by_placement(lat, key=_p(key))
        for place, d in med.items():
            for k, (v, n) in d.items():
                summ["roundtrip_ns"].setdefault(place, {}).setdefault(k, {"slices": n})[name] = \
                    None if name in unreported else v
    # Throughput ratios: within one pass, and only between slices measured in
    # the regime that pass is for.
    by_kind = {"roundtrip": [("", lat)], "python": [("", py)],
               "throughput": [(" [%s]" % FLAT_OUT, flat)] +
                             [(" [%s]" % reg, [s for s in main_slices(slices.get(kind, []))
                                               if s.extra.get("regime") == reg])
                              for kind, reg in PASSES],
               FLAT_OUT: [(" [%s]" % FLAT_OUT, flat)],
               "writer": [(" [Python writer in any regime / C writer streaming]",
                           [s for s in main_slices(slices.get("throughput", []))
                            if s.contender != "pyqueue_direct"
                            or s.extra.get("regime") == _regime.STREAMING])]}
    for label0, kind, num, den, key, best, target, higher in TARGETS:
        for tag, sl in by_kind[kind]:
            label = label0 + tag
            gone = {"p99_ns": "p99", "p999_ns": "p999"}.get(key) if kind == "roundtrip" else None
            if gone in unreported:
                summ["targets"].append({"label": label, "target": target,
                                        "higher_is_better": higher, "by_placement": {},
                                        "not_reported": unreported[gone]})
                continue
            r = _ratios(sl, kind, num, den, key, best)
            # A paced row that kept up with the pace and still reads below its
            # goal was held by the pace, not beaten: no verdict (met None).
            pace = _pace_mmsg(sl) if kind == "throughput" and higher else None
            per = {}
            for place, e in r.items():
                if e["median"] is not None:
                    met = e["median"] >= target if higher else e["median"] <= target
                    per[place] = {"median": e["median"], "rounds": len(e["ratios"]),
                                  "ratios": list(e["ratios"]), "met": met,
                                  "against": collections.Counter(e["against"]).most_common(),
                                  "driver_defects": _defects(summ, kind, tag, place,
                                                             [num] + e["against"])}
                    if not met and _pace_bound(sl, num, place, pace):
                        per[place].update(met=None, pace_bound=True, pace_mmsg_s=pace)
            summ["targets"].append({"label": label, "target": target, "higher_is_better": higher,
                                    "by_placement": per,
                                    "moved_rounds": r.get("moved", {}).get("rounds", 0)})
    for label0, kind, num, den in EXTRA_RATIOS:
        for tag, sl in by_kind[kind]:
            entry = _ratio_entry(_ratios(sl, kind, num, den))
            for place, e in entry.items():
                e["driver_defects"] = _defects(summ, kind, tag, place, [num] + e["against"])
            summ["ratios"][label0 + tag] = entry
    return summ


def _rate_text(rates):
    if not rates:
        return "-"
    c, w = rates.get("catchups_per_msg"), rates.get("waits_per_msg")
    ep = "" if c is None else " catch-ups %.2e waits %.2e" % (c, w)
    return "empty %.2e full %.2e%s" % (rates["empty_per_msg"], rates["full_per_msg"], ep)


def format_slices(slices):
    """One line per throughput slice, in execution order: its pass, round,
    placement and row, then for the driver and the twin the regime measured and
    the evidence per message (empty polls, full retries, catch-ups, waits) --
    what the regime thresholds are checked against."""
    rows = []
    for s in slices:
        e = s.extra
        if e.get("kind") not in (FLAT_OUT, "throughput", "chasing"):
            continue
        head = [_PASS_NAMES.get(e["kind"], e["kind"]), s.round, s.placement, s.contender]
        if not e.get("twin_only"):
            rows.append(head + ["driver", "%.2f" % s.value, e.get("regime"),
                                _rate_text(e.get("rates"))])
        if e.get("twin_mmsg_s") is not None:
            share = e.get("twin_window_share")
            win = "" if not share else "  windows: " + " ".join(
                "%s %.0f%%" % (k, 100 * v) for k, v in share.items() if v)
            rows.append(head + ["twin", "%.2f" % e["twin_mmsg_s"], e.get("twin_regime"),
                                _rate_text(e.get("twin_rates")) + win])
    # A file (slices.txt): never fitted to a terminal.
    return render(["pass", "round", "placement", "row", "who", "M msg/s", "regime",
                   "evidence per message"], rows, width=float("inf"))


def _missing(summary):
    return {n: st for n, st in summary["peers"].items() if st != "built"}


def _timer_note(summary):
    step = summary.get("timer_step_ns")
    if not step:  # no cycle counter, or it could not be measured
        return "Round trips timed with %s." % summary.get("timer", "the cycle counter")
    return ("Round trips timed with %s, which moves in steps of %.1f ns here: every sample is "
            "a multiple of that, so round-trip figures less than one step apart are equal."
            % (summary.get("timer", "the cycle counter"), step))


def _sp(e, fmt="%.1f"):
    return ("%s / %s / %s" % (fmt % e["min"], fmt % e["p50"], fmt % e["max"])) if e else "-"


def _touch(c):
    t = [x for x in c["touch_after_write"] if x is not None]
    return "/".join("on" if x else "off" for x in t) if t else "n/a"


def _tput_rows(summary):
    """(regime, placement, row, cell) in table order, 'moved' last."""
    order = {r: i for i, r in enumerate(_regime.REGIMES + ("unmeasured",))}
    porder = {"near": 0, "far": 1, "moved": 2}
    for reg in sorted(set(summary["throughput"]) - {FLAT_OUT}, key=lambda r: order.get(r, 9)):
        for place in sorted(summary["throughput"][reg], key=lambda p: porder.get(p, 9)):
            for row, c in sorted(summary["throughput"][reg][place].items()):
                yield reg, place, row, c


_PASS_NAMES = {"throughput": "episodes", "chasing": "paced", FLAT_OUT: FLAT_OUT}

FLAT_LEGEND = ("flat out (the headline, the way every peer's own benchmark and the obvious "
               "user loop measure): writer and reader start together on an empty queue and run "
               "unpaced for a fixed count of at least %s messages and %s s, the figure the "
               "run's messages over its elapsed time (writer start to last delivery), never "
               "filtered, whatever regime the run fell into -- the regime measured and the "
               "share of the reader's polls that found the queue empty are printed beside it; "
               "record_ring is its floor, a ring of 32-byte records with no queue logic")

# What the two passes measure, for both reports' legends.
PASS_LEGEND = ("pass 'episodes' (streaming, on purpose): the reader is held while the writer "
               "gets %g of the queue's capacity ahead, then both run flat out until the reader "
               "first finds the queue empty, again and again; the figure is the median over "
               "those episodes of the WRITER's rate inside them (the reader never found the "
               "queue empty there: both streamed, the writer ahead), and a slice whose reader "
               "caught up at once is tagged chasing with its whole-run figure; "
               "pass 'paced' (chasing, on purpose): every writer paced to one message per gap, "
               "the run's messages over its time" % _twins.BACKLOG_SHARE)


def _passes(c):
    """Which pass(es) a cell's figures came from: the regime a pass was for is
    not always the one measured (a reader faster than a flat-out writer chases)."""
    return " + ".join(_PASS_NAMES.get(k, k) for k in c.get("passes", ())) or "-"


def _tput_note(c):
    if c.get("no_twin"):
        return c["no_twin"]
    if c.get("twin_only"):
        return "twin only: no adapter row"
    note = c["flag"]
    if c["regime_differs"]:
        note += "; %d slice(s) with the twin in another regime" % c["regime_differs"]
    return note


def _share(e):
    return ("%.0f%%" % (100 * e["p50"])) if e else "-"


def _regimes_text(c):
    parts = []
    for who in ("adapter", "twin"):
        d = c.get("regimes", {}).get(who)
        if d:
            parts.append("/".join("%s %d" % (_REGIME_SHORT.get(k, k), v)
                                  for k, v in sorted(d.items(), key=lambda kv: str(kv[0]))))
    return "; ".join(parts) or "-"


_REGIME_SHORT = {_regime.STREAMING: "stream", _regime.CHASING: "chase", _regime.MIXED: "mixed"}


def _flat_note(c):
    if c.get("no_twin"):
        return c["no_twin"]
    note = c["flag"]
    if c.get("short"):
        note += "; %d run(s) shorter than the pass's seconds" % c["short"]
    return note


def _flat_table(summary):
    """The flat-out cells, a line per placement and row, 'moved' last."""
    porder = {"near": 0, "far": 1, "moved": 2}
    head = ["placement", "row", "touch", "adapter", "twin", "adapter/twin (n)",
            "empty polls a / t", "regime a; t", "note"]
    rows = []
    flat = summary["throughput"].get(FLAT_OUT, {})
    for place in sorted(flat, key=lambda p: porder.get(p, 9)):
        for row, c in sorted(flat[place].items()):
            eps = c.get("empty_poll_share", {})
            rows.append([place, row, _touch(c), _sp(c["adapter"]), _sp(c["twin"]),
                         _ratio_cell(c["ratio"], c.get("ratio_ci")),
                         "%s / %s" % (_share(eps.get("adapter")), _share(eps.get("twin"))),
                         _regimes_text(c), _flat_note(c)])
    return head, rows


def _flat_legend(params):
    return FLAT_LEGEND % ("{:,}".format(params.get("flat_messages", 0)),
                          "%g" % params.get("flat_seconds", 0))


def _roundtrip_twin_rows(summary):
    for place, rows in sorted(summary["roundtrip_twins"].items()):
        for row, c in sorted(rows.items()):
            yield place, row, c


def _ratio_cell(ratio, ci=None):
    """p50 (n), and the median's confidence interval where n allows one."""
    if not ratio:
        return "-"
    text = "%.2f (%d)" % (ratio["p50"], ratio["n"])
    return text + (" [%.2f-%.2f]" % (ci["lo"], ci["hi"]) if ci else "")


# Each table of the report once, as (head, rows); format_summary and format_markdown
# render the same tables (common/table.py), with their own titles around them.

def _throughput_table(summary):
    head = ["regime", "placement", "row", "pass", "touch", "adapter", "twin",
            "adapter/twin (n)", "note"]
    return head, [[reg, place, row, _passes(c), _touch(c), _sp(c["adapter"]), _sp(c["twin"]),
                   _ratio_cell(c["ratio"], c.get("ratio_ci")), _tput_note(c)]
                  for reg, place, row, c in _tput_rows(summary)]


def _roundtrip_twin_table(summary):
    head = ["placement", "row", "touch", "adapter", "twin", "adapter/twin (n)", "note"]
    return head, [[place, row, _touch(c), _sp(c["adapter"], "%.0f"), _sp(c["twin"], "%.0f"),
                   _ratio_cell(c["ratio"], c.get("ratio_ci")), c.get("no_twin") or c["flag"]]
                  for place, row, c in _roundtrip_twin_rows(summary)]


def _places(summary):
    return sorted({p for k in ("roundtrip_ns", "python_mmsg_s") for p in summary[k]}
                  | {p for d in summary["throughput"].values() for p in d} - {"moved"})


def _contender_table(summary, section, cell, label=lambda n: n):
    """A row per contender measured in ``section``, a column per placement."""
    places = _places(summary)
    rows = []
    for n in sorted({n for d in summary[section].values() for n in d}):
        entries = (summary[section].get(p, {}).get(n) for p in places)
        rows.append([label(n)] + [cell(e) if e else "-" for e in entries])
    return ["contender"] + places, rows


def _roundtrip_table(summary):
    return _contender_table(
        summary, "roundtrip_ns",
        lambda e: "%s / %s / %s (n=%d)" % (tuple("–" if e.get(k) is None else "%.0f" % e[k]
                                                 for k in ("p50", "p99", "p999")) + (e["slices"],)),
        label=lambda n: n + (" (yardstick)" if n == "ring_floor" else ""))


def _python_table(summary):
    return _contender_table(summary, "python_mmsg_s",
                            lambda e: "%.3f" % e["median"] if e.get("median") is not None
                            else "-")


def _targets_table(summary, missed):
    places = _places(summary)
    rows = []
    for t in summary["targets"]:
        cells = []
        for p in places:
            e = t["by_placement"].get(p)
            verdict = None if not e else ("pace-bound" if e.get("pace_bound")
                                          else "met" if e["met"] else missed)
            cells.append("%.2fx %s (%d rounds%s)" % (e["median"], verdict, e["rounds"],
                                                    _defect_text(e)) if e else
                         "not reported" if t.get("not_reported") else "-")
        rows.append([t["label"], "%s %.2fx" % ("≥" if t["higher_is_better"] else "≤",
                                               t["target"])] + cells)
    return ["target", "goal"] + places, rows


def _pace_bound_note(summary):
    """The line under the targets that says what 'pace-bound' means, when a cell has it."""
    paces = {e["pace_mmsg_s"] for t in summary["targets"] for e in t["by_placement"].values()
             if e.get("pace_bound")}
    return ["", "%s (pace %s M msg/s)." % (PACE_BOUND_NOTE, ", ".join("%.1f" % p
                                                                      for p in sorted(paces)))
            ] if paces else []


def _defect_text(e):
    """'; driver defect: ROWS' for a ratio taken on rows the twin check flagged."""
    rows = e.get("driver_defects")
    return "; driver defect: %s" % ", ".join(rows) if rows else ""


def _ratios_table(summary):
    places = _places(summary)
    return ["ratio"] + places, [
        [label] + ["%.2fx (%d rounds%s)" % (d[p]["median"], len(d[p]["ratios"]),
                                             _defect_text(d[p]))
                   if d.get(p, {}).get("median") is not None else "-" for p in places]
        for label, d in summary["ratios"].items()]


def settle_note(summary):
    """One sentence on bench's settle pass: which rows ran it and for how many
    rounds, or that none needed it (or that it was off)."""
    st = summary.get("settle") or {}
    rounds = st.get("rounds")      # the rounds it was to run (params.settle_rounds resolved)
    if not rounds:
        return "Settle pass: off (rows left 'not settled' stay so)."
    if not st.get("rows"):
        return ("Settle pass: no row's twin verdict was left open after the rounds (up to %d "
                "more rounds each would have run)." % rounds)
    done = st.get("rounds_done", 0)
    cut = (" -- cut short by an interrupt: the rounds are complete, the settle pass is not"
           if summary.get("interrupted") and done < rounds else "")
    return ("Settle pass: %s had an open twin verdict after the rounds and ran %d of %d more "
            "rounds%s (their slices count in the twin ratios, not in the medians or targets)."
            % (", ".join("%s %s" % tuple(kr) for kr in st["rows"]), done, rounds, cut))


def format_summary(summary, params):
    """Plain-text report: medians per placement, then the targets; the peers not
    installed, and why, on their own lines under the first table."""
    missing = ["%s: %s" % kv for kv in sorted(_missing(summary).items())]
    lines = ["32-byte messages, writer CPU %d -> reader CPU %d; %d rounds of interleaved slices; "
             "memory budget %d bytes per queue." % (params["writer_cpu"], params["reader_cpu"],
                                                     params["rounds"], params["budget_bytes"]),
             "Placement: 'near'/'far' = one-way ping-pong probe below/above %.0f ns before AND "
             "after the slice; 'moved' slices are kept in the raw data but give no ratio."
             % params["split_ns"], _timer_note(summary)]
    lines += ["", "Streaming pass: up to %s messages a slice in episodes; chasing pass: %s "
              "messages a slice, every writer paced to one message per %g ns.  Not paced: %s."
              % (params.get("messages"), params.get("chasing_messages"), params.get("gap_ns", 0),
                 "; ".join("%s (%s)" % kv for kv in sorted(summary.get("unpaced", {}).items()))
                 or "none"),
              PASS_LEGEND + "."]
    lines += ["", "Throughput FLAT OUT, M msg/s, per placement: min / p50 / max over slices; "
              "adapter/twin p50 of the per-slice ratios (n) [the median's 95 % interval]; "
              "empty polls: the share of the reader's polls that found the queue empty "
              "(median over runs, adapter / twin); regime: each run's, as measured.",
              _flat_legend(params) + ".", render(*_flat_table(summary), notes=missing)]
    lines += ["", "The explanation, the two passes that build a regime on purpose -- "
              "throughput, M msg/s, per measured regime and placement (never mixed); "
              "min / p50 / max over slices; adapter/twin p50 of the per-slice ratios (n) "
              "[the median's distribution-free 95 % interval, order statistics, n >= 6]:",
              render(*_throughput_table(summary), notes=missing), settle_note(summary)]
    lines += ["", "Round trip, ns (per-slice nearest-rank p50 / p99 / p99.9, median over slices);",
              "ring_floor is %s:" % _ring_floor_note(summary), render(*_roundtrip_table(summary))]
    lines += ["'–' %s: %s" % (k, why) for k, why in
              sorted((summary.get("roundtrip_not_reported") or {}).items())]
    lines += ["", "Round trip against the twins, p50 ns, min / p50 / max over slices:",
              render(*_roundtrip_twin_table(summary))]
    lines += ["", "Python API, one thread, M msg/s (median over slices):",
              render(*_python_table(summary))]
    lines += ["", "Targets (ratio within one round and one placement, median over rounds):",
              render(*_targets_table(summary, "MISSED"))] + _pace_bound_note(summary)
    lines += ["", "Other ratios:", render(*_ratios_table(summary))]
    return "\n".join(lines)


def format_markdown(summary, params):
    """Markdown tables (docs/BENCHMARKS.md): one column per placement."""
    missing = _missing(summary)

    def md(table, extra=()):
        head, rows = table
        return [render(head, rows + list(extra), markdown=True)]

    out = ["**Throughput flat out, 32-byte messages, M msg/s**, per placement: min / p50 / "
           "max over slices; ratio = p50 of the per-slice adapter/twin ratios [the median's "
           "distribution-free 95 % interval]; empty polls = the share of the reader's polls "
           "that found the queue empty (median over runs, adapter / twin); regime = each "
           "run's, as measured. " + _flat_legend(params) + ".", ""]
    out += md(_flat_table(summary),
              [["", n, "", "", "", "", "", "", "not installed"] for n in sorted(missing)])
    out += ["", "**Throughput in the two passes that explain it, 32-byte messages, M msg/s**, "
            "per measured regime and placement "
           "(never mixed): min / p50 / max over slices; ratio = p50 of the per-slice "
           "adapter/twin ratios (slices whose twin ran in the same regime) [the median's "
           "distribution-free 95 % interval: order statistics, n >= 6]; pass = the "
           "pass the figures came from: " + PASS_LEGEND, ""]
    out += md(_throughput_table(summary),
              [[n, "", "", "", "", "not installed"] for n in sorted(missing)])
    out += ["", settle_note(summary)]
    out += ["", "**Round trip against the inline twins**, p50 ns, min / p50 / max over slices; "
            "ratio as above", ""]
    out += md(_roundtrip_twin_table(summary))
    out += ["", "**Round trip, one 32-byte message, ns: p50 / p99 / p99.9** (per-slice "
            "nearest rank, median over slices). " + _timer_note(summary), ""]
    out += md(_roundtrip_table(summary),
              [[n] + ["not installed"] * len(_places(summary)) for n in sorted(missing)])
    out += ["", "`ring_floor` is %s." % _ring_floor_note(summary)]
    out += ["", "**Python API, one thread, write+read per message, M msg/s**", ""]
    out += md(_python_table(summary))
    out += ["", "**Targets** ([DESIGN §8.5](DESIGN.md#85-targets); ratio per round within one "
            "placement, median over rounds; a round trip over the ping-pong floor is taken "
            "against the floor measured inside the same slice, median over slices)", ""]
    out += md(_targets_table(summary, "**missed**"))
    out += _pace_bound_note(summary)
    out += ["", "**Other ratios** (no goal; same per-round, per-placement median)", ""]
    out += md(_ratios_table(summary))
    for n, st in sorted(missing.items()):
        out.append("\n%s: %s" % (n, st))
    return "\n".join(out)
