"""bench-xproc's summary and tables (experiments/bench_xproc.py).

The summary holds, per kind of row and message size, each row's median over
its slices (throughput: messages a second, with the regimes its slices were
in; frames: messages a second and MB/s, also per placement; round trips and
wake-ups: p50 / p99 over every sample of every round), the reason of each row
that could not run, and the issue's targets and the frame rows' ratios, taken
within a round and a placement (DESIGN §8.1, §8.2).
"""
import math
import statistics

import numpy as np

from ..common import placement as pl
from ..common.stats import honest_rank, short_reason
from pyqueue import table

# (what, numerator row, denominator row, size, sense, goal): ratios of the two
# rows' figures within a round; goal None: reported, no target.
TARGETS = (
    ("Python per message, shared / multiprocessing.Queue", "py-shared-msg", "mp-queue", 32,
     ">=", 20.0),
    ("Python per message, shared / faster-fifo", "py-shared-msg", "faster-fifo", 32, ">=", 10.0),
    ("Python per message, shared / multiprocessing.Queue", "py-shared-msg", "mp-queue", 1024,
     ">=", 10.0),
    ("Python per message, shared / faster-fifo", "py-shared-msg", "faster-fifo", 1024,
     ">=", 10.0),
    # What multiprocessing's and faster-fifo's users write, on each queue (issue 46).
    ("get_many, shared / faster-fifo's get_many", "py-shared-many", "faster-fifo", 32,
     ">=", 3.0),
    ("get_many, shared / faster-fifo's get_many", "py-shared-many", "faster-fifo", 1024,
     ">=", None),
    ("objects (pickle), shared / faster-fifo", "py-shared-obj", "faster-fifo-obj", 32,
     ">=", 3.0),
    ("objects (pickle), shared / faster-fifo", "py-shared-obj", "faster-fifo-obj", 1024,
     ">=", 3.0),
    ("objects (pickle), shared / multiprocessing.Queue", "py-shared-obj", "mp-queue-obj", 32,
     ">=", 5.0),
    ("objects (pickle), shared / multiprocessing.Queue", "py-shared-obj", "mp-queue-obj",
     1024, ">=", 5.0),
    ("objects (pickle), get_many, shared / faster-fifo", "py-shared-obj-many",
     "faster-fifo-obj", 32, ">=", None),
    ("C write_batch, shared / in-process", "c-shared-batch", "c-local-batch", 32, ">=", 0.9),
    ("C write_batch, shared / in-process", "c-shared-batch", "c-local-batch", 1024, ">=", 0.9),
    ("numpy write_batch, shared / in-process", "py-shared-batch", "py-local-batch", 32,
     ">=", 0.9),
    ("numpy write_batch, shared / in-process", "py-shared-batch", "py-local-batch", 1024,
     ">=", 0.9),
    ("C per message, shared / in-process", "c-shared-msg", "c-local-msg", 32, ">=", None),
    ("C per message, shared / in-process", "c-shared-msg", "c-local-msg", 1024, ">=", None),
    ("C round trip p50, shared / in-process", "rt-c-shared", "rt-c-local", 32, "<=", 1.1),
    ("C round trip p50, shared / in-process", "rt-c-shared", "rt-c-local", 1024, "<=", 1.1),
    # Where the C round trip's difference comes from: the shared queue's hot path
    # (a shared segment between two threads) or the process boundary.
    ("C round trip p50, shared segment in one process / in-process", "rt-c-shm-threads",
     "rt-c-local", 32, "<=", None),
    ("C round trip p50, two processes / shared segment in one process", "rt-c-shared",
     "rt-c-shm-threads", 32, "<=", None),
    ("Python round trip p50, shared / in-process", "rt-py-shared", "rt-py-local", 32,
     "<=", None),
    ("round trip p50, pyqueue shared / iceoryx2 (Python calls)", "rt-py-shared", "rt-iceoryx2",
     32, "<=", 1.0),
    ("round trip p50, pyqueue shared / iceoryx2 (Python calls)", "rt-py-shared", "rt-iceoryx2",
     1024, "<=", 1.0),
    # asyncio, both sides awaiting (issue 49).
    ("asyncio round trip p50, pyqueue shared / pyzmq zmq.asyncio ipc", "rt-aio-shared",
     "rt-zmq-aio", 32, "<=", 0.5),
    ("asyncio round trip p50, pyqueue shared / pyzmq zmq.asyncio ipc", "rt-aio-shared",
     "rt-zmq-aio", 1024, "<=", 0.5),
)
# An idle await's CPU, % of one CPU (the idle rows' figure): below this (issue 49).
IDLE_GOAL_PCT = 1.0

# The frame rows' ratios, at every frame size run: (what, numerator row, denominator
# row, {frame size: goal}), the numerator faster when above 1; a goal only where issue
# 49 sets one ("as it was": the bytes path over blocks raised to the frame by hand).
FRAME_RATIOS = (
    ("claim / view over write / get", "py-view", "py-bytes", {}),
    ("claim / view over write / get as it was", "py-view", "py-bytes-blocks", {1 << 20: 2.0}),
    ("frame made in the claim over made in a bytearray + write, as it was", "py-view-fill",
     "py-bytes-blocks-fill", {1 << 20: 2.0}),
    ("frame made in the claim over made in a bytearray + write", "py-view-fill",
     "py-bytes-fill", {}),
    ("made in place and read: view over bytes as it was", "py-view-fill-sum",
     "py-bytes-blocks-fill-sum", {}),
    ("made in place and read: view over bytes", "py-view-fill-sum", "py-bytes-fill-sum", {}),
    ("claim / view over faster-fifo", "py-view", "faster-fifo-frames",
     {64 << 10: 4.0, 1 << 20: 4.0}),
    ("claim / view over iceoryx2", "py-view", "iceoryx2-frames", {}),
    ("put_array / get_array over claim / view (within 1.1x)", "py-array", "py-view",
     {1 << 20: 1 / 1.1}),
)


def _key(row_id, size):
    return "%s-%d" % (row_id, size)


def _pct(arr, q):
    """Nearest-rank percentile q of every sample, None where fewer than 10 lie beyond
    it (stats.reported) or there are none."""
    v = honest_rank(arr, (q,))[0][0]
    return float(v) if np.isfinite(v) else None


def ratio(slices, num, den):
    """The median per-round ratio num / den in the placement with the most
    rounds that have one: {"ratio", "placement", "rounds"}, or None."""
    by = pl.ratios_by_placement(slices, num, den)
    best = max((p for p in by if by[p]["ratios"]), key=lambda p: len(by[p]["ratios"]),
               default=None)
    if best is None:
        return None
    return {"ratio": by[best]["median"], "placement": best, "rounds": len(by[best]["ratios"]),
            "rounds_by_placement": {p: e["rounds"] for p, e in by.items()}}


def _target(slices, reasons, rows, what, num, den, size, sense, goal):
    """A ratio num / den at ``size`` as the summary keeps it: measured (ratio(),
    ``met`` where there is a goal) or ``not_measured`` with the reason."""
    t = {"target": what, "size": size, "numerator": num, "denominator": den,
         "sense": sense, "goal": goal}
    nk, dk = _key(num, size), _key(den, size)
    gone = [reasons[k] for k in (nk, dk) if k in reasons]
    r = None if gone or nk not in rows or dk not in rows else ratio(slices, nk, dk)
    if r is None:
        t["not_measured"] = gone[0] if gone else "not selected" if (
            nk not in rows or dk not in rows) else "no round with both in one placement"
    else:
        t.update(r)
        if goal is not None:
            t["met"] = bool(r["ratio"] >= goal if sense == ">=" else r["ratio"] <= goal)
    return t


def _by_placement(ss, size):
    """{placement: {"slices", "median" (messages/s), "mb_s"}} of a frame row's slices."""
    out = {}
    for place in pl.TAGS:
        vals = [s.value for s in ss if s.placement == place and s.value is not None and
                math.isfinite(s.value)]
        if vals:
            m = statistics.median(vals)
            out[place] = {"slices": len(vals), "median": m, "mb_s": m * size / 1e6}
    return out


def summarize(slices, samples, reasons, rows, sizes, frame_sizes=()):
    """``rows``: {contender: (row id, size, label, kind)} of every row selected,
    run or not; ``reasons``: {contender: "not installed: ..." or "not measured:
    ..."}; ``samples``: {contender: [arrays]} of the latency rows; ``sizes``,
    ``frame_sizes``: the message sizes and frame sizes run."""
    out = {"throughput": {}, "frames": {}, "roundtrip": {}, "wakeup": {}, "idle": {},
           "targets": [], "frame_ratios": []}
    by = {}
    for s in slices:
        by.setdefault(s.contender, []).append(s)
    for k, (row_id, size, label, kind) in rows.items():
        entry = {"label": label}
        if k in reasons:
            entry["reason"] = reasons[k]
        else:
            ss = by.get(k, [])
            vals = [s.value for s in ss if s.value is not None and math.isfinite(s.value)]
            entry.update(slices=len(ss), median=statistics.median(vals) if vals else None)
            if kind == "throughput":
                entry["regimes"] = sorted({s.extra["regime"] for s in ss if "regime" in s.extra})
            elif kind == "frames":
                entry["mb_s"] = entry["median"] * size / 1e6 if vals else None
                entry["by_placement"] = _by_placement(ss, size)
            elif kind == "idle":
                entry["max"] = max(vals) if vals else None
                if entry["max"] is not None and row_id.startswith("idle-aio"):
                    entry["goal_pct"] = IDLE_GOAL_PCT
                    entry["met"] = bool(entry["max"] < IDLE_GOAL_PCT)
            else:
                arr = np.concatenate(samples[k]) if samples.get(k) else np.zeros(0)
                entry.update(samples=int(arr.size), p50_ns=_pct(arr, 50), p99_ns=_pct(arr, 99))
                why = honest_rank(arr, (50.0, 99.0))[1]
                if why:
                    entry["not_reported"] = why
                if entry["p50_ns"] is None:   # the median of slices' medians is a p50 too
                    entry["median"] = None
            if kind == "wakeup":
                entry["slept"] = sum(s.extra.get("slept", 0) for s in ss)
                entry["tries"] = sum(s.extra.get("samples", 0) for s in ss)
        out[kind].setdefault(str(size), {})[row_id] = entry
    for what, num, den, size, sense, goal in TARGETS:
        if size in sizes:
            out["targets"].append(_target(slices, reasons, rows, what, num, den, size, sense,
                                          goal))
    for what, num, den, goals in FRAME_RATIOS:
        for size in frame_sizes:
            out["frame_ratios"].append(_target(slices, reasons, rows, what, num, den, size,
                                               ">=", goals.get(size)))
    return out


def size_text(n):
    """1048576 -> "1 MiB", 65536 -> "64 KiB", 1000 -> "1000 B"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def _frames_text(summary, markdown):
    """The frame rows' MB/s, a table per placement (rows x frame sizes), then their
    ratios within a round (a line per ratio, a column per frame size)."""
    frames = summary.get("frames") or {}
    if not frames:
        return []
    sizes = sorted(frames, key=int)
    labels = {}
    for size in sizes:
        for row_id, e in frames[size].items():
            labels.setdefault(row_id, e["label"])
    places = [p for p in pl.TAGS if any(p in e.get("by_placement", {})
                                        for rows in frames.values() for e in rows.values())]
    how = ("MB/s: bytes a second / 10^6, a slice's messages x the frame size over the "
           "reader's time from the go to its last message; each cell the median of a row's "
           "slices in one placement (near or far: the probes before and after the slice "
           "agree; else moved), their number in brackets.")
    parts = []
    for i, place in enumerate(places or [None]):
        # The first table has every row (and the reasons); the others the rows with a
        # slice in their placement.
        body = []
        for row_id, label in labels.items():
            es = [frames[size].get(row_id) or {} for size in sizes]
            got = [e.get("by_placement", {}).get(place) for e in es]
            if i and not any(got):
                continue
            body.append([label] + ["{:,.0f} ({})".format(c["mb_s"], c["slices"]) if c else
                                   e["reason"] if "reason" in e and not i else ""
                                   for e, c in zip(es, got)])
        head = ["frames, MB/s%s" % (", %s slices (n)" % place if place else "")]
        parts.append(table.render(head + [size_text(int(s)) for s in sizes], body,
                                  markdown=markdown,
                                  notes=[how] if i == len(places or [None]) - 1 else ()))
    ratios = {}
    for t in summary.get("frame_ratios", ()):
        if t.get("not_measured") != "not selected":
            ratios.setdefault(t["target"], {})[str(t["size"])] = t
    if ratios:
        body = [[what] + [_frame_ratio_cell(by.get(size)) for size in sizes]
                for what, by in ratios.items()]
        parts.append(table.render(["frames, ratio within a round"] +
                                  [size_text(int(s)) for s in sizes], body, markdown=markdown,
                                  notes=["Each the median of the per-round ratios of the two "
                                         "rows' figures in one placement (the one with the "
                                         "most such rounds: its name, and the rounds); goals "
                                         "as issue 49 sets them."]))
    return parts


def _frame_ratio_cell(t):
    if t is None:
        return ""
    if "not_measured" in t:
        why = t["not_measured"]
        return why if why.startswith(("not installed", "not measured")) else "not measured: " + why
    cell = "%.2f (%s, %d)" % (t["ratio"], t["placement"], t["rounds"])
    if t["goal"] is not None:
        cell += " %s %.3g: %s" % (t["sense"], t["goal"], "meets" if t["met"] else "MISSES")
    return cell


def _m(v, scale, fmt="%.3f"):
    return fmt % (v / scale) if v is not None else "not measured"


def _q(e, key, scale, fmt):
    """Percentile ``key`` ("p50_ns") of a latency row, or why it is not reported."""
    why = (e.get("not_reported") or {}).get(key.split("_")[0])
    return short_reason(why) if e.get(key) is None and why else _m(e.get(key), scale, fmt)


def text(params, summary, status, markdown=False):
    """The tables the command prints (``markdown``: as Markdown)."""
    if not summary:
        return "no slice measured (%s)" % status
    parts = []
    for size, rows in summary["throughput"].items():
        base = rows.get("mp-queue", {}).get("median")
        body = []
        for row_id, e in rows.items():
            if "reason" in e:
                body.append([e["label"], e["reason"], "", ""])
                continue
            body.append([e["label"], _m(e["median"], 1e6),
                         "%.1f" % (e["median"] / base) if base and e["median"] else "",
                         ", ".join(e.get("regimes", ()))])
        parts.append(table.render(["%s-byte messages, throughput" % size, "M msg/s (median)",
                                   "x multiprocessing.Queue", "regime (C rows)"], body,
                                  markdown=markdown))
    parts += _frames_text(summary, markdown)
    for size, rows in summary["roundtrip"].items():
        body = [[e["label"], e["reason"], "", ""] if "reason" in e else
                [e["label"], _q(e, "p50_ns", 1e3, "%.2f"), _q(e, "p99_ns", 1e3, "%.2f"),
                 e["samples"]] for e in rows.values()]
        parts.append(table.render(["round trip, %s B" % size, "p50 us", "p99 us", "samples"],
                                  body, markdown=markdown))
    for size, rows in summary["wakeup"].items():
        body = [[e["label"], e["reason"], "", ""] if "reason" in e else
                [e["label"], _q(e, "p50_ns", 1e3, "%.2f"), _q(e, "p99_ns", 1e3, "%.2f"),
                 "%d of %d" % (e["slept"], e["tries"])] for e in rows.values()]
        parts.append(table.render(["futex wake-up (hand-over to return)", "p50 us", "p99 us",
                                   "samples that slept"], body, markdown=markdown))
    for size, rows in summary.get("idle", {}).items():
        body = [[e["label"], e["reason"], "", ""] if "reason" in e else
                [e["label"], _m(e["median"], 1, "%.2f"), _m(e["max"], 1, "%.2f"),
                 ("< %g %%: %s" % (e["goal_pct"], "meets" if e["met"] else "MISSES"))
                 if "goal_pct" in e else "(no target)"] for e in rows.values()]
        parts.append(table.render(["an idle await, CPU of its process", "% of a CPU (median)",
                                   "max", "goal"], body, markdown=markdown))
    body = []
    for t in summary["targets"]:
        if t.get("not_measured") == "not selected":   # --only left a row out: not a finding
            continue
        goal = "%s %g" % (t["sense"], t["goal"]) if t["goal"] is not None else "(no target)"
        if "not_measured" in t:
            body.append([t["target"], t["size"], "not measured: " + t["not_measured"], goal, ""])
        else:
            met = "" if t["goal"] is None else ("meets" if t["met"] else "MISSES")
            body.append([t["target"], t["size"], "%.3f" % t["ratio"], goal,
                         "%s (%s, %d rounds)" % (met, t["placement"], t["rounds"])])
    if body:
        parts.append(table.render(["ratio within a round", "B", "ratio", "goal", "result"],
                                  body, markdown=markdown))
    parts.append("writer CPU %s, reader CPU %s; %s of %s rounds; %s"
                 % (params["writer_cpu"], params["reader_cpu"], summary.get("rounds_done", 0),
                    params["rounds"], status))
    return "\n\n".join(parts)
