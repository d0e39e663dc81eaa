"""The summary of a bench run (DESIGN §6.6): medians per placement, the targets
and the other ratios, and the text and Markdown reports.  Every ratio is taken
per round within one placement (common/placement.py) and summarised by its median
over rounds; nothing here measures."""
import collections

from ... import peers as _peers
from ..common import placement as pl

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
    [(n + " / ping-pong floor, round-trip p50", "roundtrip", n, "pingpong", None, max, 1.2, False)
     for n in ("pyqueue_each", "pyqueue_scan", "pyqueue_each_direct", "pyqueue_scan_direct")] +
    [(n + " / best peer, round-trip p99.9", "roundtrip", n, PEERS, "p999_ns", min, 1.0, False)
     for n in ("pyqueue_each", "pyqueue_scan")] +
    [("Python write_batch / C writer, throughput", "throughput", "py_batch",
      "pyqueue_direct", None, max, 0.5, True),
     ("Python write()+poll() / SimpleQueue put+get", "python", "py_write_poll",
      "simplequeue", None, max, 1.0, True)])
EXTRA_RATIOS = [
    ("pyqueue (adapter) / pyqueue_direct", "throughput", "pyqueue", "pyqueue_direct"),
    ("pyqueue_direct / yardstick", "throughput", "pyqueue_direct", "yardstick"),
    ("pyqueue_stream / pyqueue", "throughput", "pyqueue_stream", "pyqueue"),
    # The round-trip decomposition: a fresh line per message (any ring), then pyqueue.
    ("ring_floor / ping-pong floor, round-trip p50", "roundtrip", "ring_floor", "pingpong"),
    ("pyqueue_each / ring_floor, round-trip p50", "roundtrip", "pyqueue_each", "ring_floor"),
    ("pyqueue_scan / ring_floor, round-trip p50", "roundtrip", "pyqueue_scan", "ring_floor"),
] + [("pyqueue / %s" % p, "throughput", "pyqueue", p) for p in PEERS] + [
    ("py_write_poll / deque", "python", "py_write_poll", "deque"),
    ("py_batch_local / simplequeue", "python", "py_batch_local", "simplequeue"),
]


def _ring_floor_note(params):
    return ("a yardstick, not a peer: a minimal ring of %s 64-byte slots, each message in a "
            "fresh line, through the same driver as pyqueue_each"
            % params.get("ring_floor_slots", "?"))


def _ratio_entry(d):
    return {p: {"median": e["median"], "rounds": e["rounds"], "ratios": e["ratios"],
                "against": e["against"]} for p, e in d.items()}


def summarize(slices, status):
    """Medians per placement and contender, and the per-round ratios."""
    tput, lat, py = (slices.get(k, []) for k in ("throughput", "roundtrip", "python"))
    summ = {"peers": status, "throughput_mmsg_s": {}, "roundtrip_ns": {}, "python_mmsg_s": {},
            "targets": [], "ratios": {}}
    for dest, sl in (("throughput_mmsg_s", tput), ("python_mmsg_s", py)):
        for place, d in pl.medians_by_placement(sl).items():
            summ[dest][place] = {k: {"median": v, "slices": n} for k, (v, n) in d.items()}
    for key, name in ((None, "p50"), ("p99_ns", "p99"), ("p999_ns", "p999")):
        med = pl.medians_by_placement(lat, key=_p(key))
        for place, d in med.items():
            for k, (v, n) in d.items():
                summ["roundtrip_ns"].setdefault(place, {}).setdefault(k, {"slices": n})[name] = v
    by_kind = {"throughput": tput, "roundtrip": lat, "python": py}
    for label, kind, num, den, key, best, target, higher in TARGETS:
        r = pl.ratios_by_placement(by_kind[kind], num, den, key=_p(key),
                                   best=best)
        per = {}
        for place, e in r.items():
            if e["median"] is not None:
                met = e["median"] >= target if higher else e["median"] <= target
                per[place] = {"median": e["median"], "rounds": len(e["ratios"]), "met": met,
                              "against": collections.Counter(e["against"]).most_common()}
        summ["targets"].append({"label": label, "target": target, "higher_is_better": higher,
                                "by_placement": per,
                                "moved_rounds": r.get("moved", {}).get("rounds", 0)})
    for label, kind, num, den in EXTRA_RATIOS:
        summ["ratios"][label] = _ratio_entry(pl.ratios_by_placement(by_kind[kind], num, den))
    return summ


def _missing(summary):
    return {n: st for n, st in summary["peers"].items() if st != "built"}


def _timer_note(params):
    step = params.get("timer_step_ns")
    if not step:  # no cycle counter, or it could not be measured
        return "Round trips timed with %s." % params.get("timer", "the cycle counter")
    return ("Round trips timed with %s, which moves in steps of %.1f ns here: every sample is "
            "a multiple of that, so round-trip figures less than one step apart are equal."
            % (params.get("timer", "the cycle counter"), step))


def format_summary(summary, params):
    """Plain-text report: medians per placement, then the targets."""
    lines = ["32-byte messages, writer CPU %d -> reader CPU %d; %d rounds of interleaved slices; "
             "memory budget %d bytes per queue." % (params["writer_cpu"], params["reader_cpu"],
                                                     params["rounds"], params["budget_bytes"]),
             "Placement: 'near'/'far' = one-way ping-pong probe below/above %.0f ns before AND "
             "after the slice; 'moved' slices are kept in the raw data but give no ratio."
             % params["split_ns"], _timer_note(params)]
    for n, st in sorted(_missing(summary).items()):
        lines.append("  %s: %s" % (n, st))
    lines += ["", "Throughput, M msg/s (median over slices):"]
    for place, d in sorted(summary["throughput_mmsg_s"].items()):
        lines.append("  %-6s " % place + "  ".join("%s %.2f (n=%d)" % (k, v["median"], v["slices"])
                                                    for k, v in sorted(d.items())))
    lines += ["", "Round trip, ns (per-slice nearest-rank p50 / p99 / p99.9, median over slices);",
              "ring_floor is %s:" % _ring_floor_note(params)]
    for place, d in sorted(summary["roundtrip_ns"].items()):
        lines.append("  %s" % place)
        width = max(len(k) for k in d)
        for k, v in sorted(d.items(), key=lambda kv: kv[1]["p50"]):
            lines.append("    %-*s %7.0f %8.0f %9.0f  (n=%d)" % (width, k, v["p50"], v["p99"],
                                                                 v["p999"], v["slices"]))
    lines += ["", "Python API, one thread, M msg/s (median over slices):"]
    for place, d in sorted(summary["python_mmsg_s"].items()):
        lines.append("  %-6s " % place + "  ".join("%s %.3f" % (k, v["median"])
                                                    for k, v in sorted(d.items())))
    lines += ["", "Targets (ratio within one round and one placement, median over rounds):"]
    for t in summary["targets"]:
        parts = ["%s %.2fx (%d rounds, %s)" % (p, e["median"], e["rounds"],
                                                "met" if e["met"] else "MISSED")
                 for p, e in sorted(t["by_placement"].items())]
        lines.append("  %-50s %s %.2fx: %s" % (t["label"], ">=" if t["higher_is_better"] else "<=",
                                               t["target"], "  ".join(parts) or "not measured"))
    lines += ["", "Other ratios:"]
    for label, d in summary["ratios"].items():
        parts = ["%s %.2fx" % (p, e["median"]) for p, e in sorted(d.items())
                 if e["median"] is not None]
        lines.append("  %-46s %s" % (label, "  ".join(parts) or "not measured"))
    return "\n".join(lines)


def format_markdown(summary, params):
    """Markdown tables (docs/BENCHMARKS.md): one column per placement."""
    places = sorted({p for k in ("throughput_mmsg_s", "roundtrip_ns", "python_mmsg_s")
                     for p in summary[k]} - {"moved"})
    missing = _missing(summary)

    def table(section, cell, label=lambda n: n, missing=missing):
        """A header, a row per contender measured in ``section``, a row per peer missing."""
        out = ["| contender | %s |" % " | ".join(places), "|---|%s" % ("---:|" * len(places))]
        for n in sorted({n for d in summary[section].values() for n in d}):
            entries = (summary[section].get(p, {}).get(n) for p in places)
            out.append("| %s | %s |" % (label(n), " | ".join(cell(e) if e else "-"
                                                             for e in entries)))
        return out + ["| %s | %s |" % (n, " | ".join(["not installed"] * len(places)))
                      for n in sorted(missing)]

    out = ["**Throughput, 32-byte messages, M msg/s** (median over slices; n = slices)", ""]
    out += table("throughput_mmsg_s", lambda e: "%.2f (n=%d)" % (e["median"], e["slices"]))
    out += ["", "**Round trip, one 32-byte message, ns: p50 / p99 / p99.9** (per-slice "
            "nearest rank, median over slices). " + _timer_note(params), ""]
    out += table("roundtrip_ns",
                 lambda e: "%.0f / %.0f / %.0f (n=%d)" % (e["p50"], e["p99"], e["p999"],
                                                          e["slices"]),
                 label=lambda n: n + (" (yardstick)" if n == "ring_floor" else ""))
    out += ["", "`ring_floor` is %s." % _ring_floor_note(params)]
    out += ["", "**Python API, one thread, write+read per message, M msg/s**", ""]
    out += table("python_mmsg_s",
                 lambda e: "%.3f" % e["median"] if e.get("median") is not None else "-",
                 missing=())
    out += ["", "**Targets** ([DESIGN §8.5](DESIGN.md#85-targets); ratio per round within one placement, median over rounds)",
            ""]
    out += ["| target | goal | %s |" % " | ".join(places), "|---|---|%s" % ("---|" * len(places))]
    for t in summary["targets"]:
        cells = []
        for p in places:
            e = t["by_placement"].get(p)
            cells.append("%.2fx %s (%d rounds)" % (e["median"], "met" if e["met"] else "**missed**",
                                                   e["rounds"]) if e else "-")
        out.append("| %s | %s %.2fx | %s |" % (t["label"], "≥" if t["higher_is_better"] else "≤",
                                               t["target"], " | ".join(cells)))
    out += ["", "**Other ratios** (no goal; same per-round, per-placement median)", ""]
    out += ["| ratio | %s |" % " | ".join(places), "|---|%s" % ("---:|" * len(places))]
    for label, d in summary["ratios"].items():
        out.append("| %s | %s |" % (label, " | ".join(
            "%.2fx (%d rounds)" % (d[p]["median"], len(d[p]["ratios"]))
            if d.get(p, {}).get("median") is not None else "-" for p in places)))
    for n, st in sorted(missing.items()):
        out.append("\n%s: %s" % (n, st))
    return "\n".join(out)
