"""The sentences a notebook states as findings, each computed from the run it
describes and worded by what that run shows -- including "not shown on this
machine: ..." when the run does not show what the study expects.  Every function
takes a result's JSON-ready figures (a fresh result's or a loaded folder's alike)
and returns a list of sentences; nothing here measures or draws.
"""
import math

import numpy as np

from ..common.stats import NOT_ENOUGH, honest_rank

__all__ = ["burst_cost", "tails", "migrations", "first_group", "model_vs_measured",
           "paced_targets", "streams", "queue_over_floor", "over_time", "false_sharing",
           "pipeline_tails", "say", "NOT_SHOWN", "FLAT_GROWTH", "FINDING", "VERDICT_WORDS"]

NOT_SHOWN = "not shown on this machine"
FINDING = "Finding:"            # how say() marks a computed sentence in a notebook
# The words these sentences state a result with: a notebook's own text (its markdown)
# uses none of them, so that every finding it states is one of these computed sentences.
VERDICT_WORDS = ("grows", "grew", "stays flat", "did not grow", "missed", "met their",
                 "kept its", "slower than", "faster than", "moved between", "stayed within",
                 "costs", "agrees with", "sits", "no measurable")
# A stream whose delay grows by less than this many seconds per second stays flat.
FLAT_GROWTH = 0.02


def _ok(v):
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def _x(v):
    return "%.1f×" % v


def say(sentences):
    """Print each computed sentence on its own line, marked ``Finding:``."""
    for s in sentences:
        print("%s %s" % (FINDING, s))


# ---- burst-tail ------------------------------------------------------------------------

def _default_class(classes):
    for name in ("yield1024",) + tuple(classes):
        if name in classes and name.startswith("yield"):
            return name
    return None


def burst_cost(summary):
    """What the 1 MiB send costs pyqueue's default strategy, against class none."""
    classes = summary.get("classes") or {}
    name = _default_class(classes)
    if name is None or "none" not in classes:
        return ["%s: the run has no pyqueue class beside 'none' to say what the burst costs"
                % NOT_SHOWN]
    x = classes[name].get("x_no_burst") or [None] * 3
    parts = ["%s %s" % (label, _x(v)) for label, v in zip(("p50", "p99", "p999"), x) if _ok(v)]
    gone = [label for label, v in zip(("p50", "p99", "p999"), x) if not _ok(v)]
    if not parts:
        return ["%s: no percentile of %s is reported (%s)" % (NOT_SHOWN, name, NOT_ENOUGH)]
    text = "After the send, %s's business latency is %s its no-send latency" % (
        name, ", ".join(parts))
    if gone:
        text += " (%s not reported: %s)" % ("/".join(gone), NOT_ENOUGH)
    worst = max(v for v in x if _ok(v))
    if worst < 1.1:
        text += "; the burst costs nothing measurable here"
    return [text + "."]


def tails(summary):
    """Which class has the lowest and the highest tail after the send (its highest
    reported percentile of p99 and p50; 'none' left out)."""
    classes = {n: d for n, d in (summary.get("classes") or {}).items() if n != "none"}
    for i, label in ((1, "p99"), (0, "p50")):
        vals = {n: d["latency_ns_per_query"]["mean"][i] for n, d in classes.items()}
        vals = {n: v for n, v in vals.items() if _ok(v)}
        if len(vals) >= 2:
            lo, hi = min(vals, key=vals.get), max(vals, key=vals.get)
            text = ("Lowest %s after the send: %s (%.0f ns/query); highest: %s (%.0f ns/query, "
                    "%s)." % (label, lo, vals[lo], hi, vals[hi], _x(vals[hi] / vals[lo])))
            if label == "p50":
                text += " p99 is not reported in this run (%s)." % NOT_ENOUGH
            return [text]
    return ["%s: fewer than two classes report a percentile" % NOT_SHOWN]


def migrations(summary):
    """Whether the slow groups fall in windows where the writer changed CPU."""
    classes = summary.get("classes") or {}
    windows = sum(sum(d.get("windows_per_round") or []) for d in classes.values())
    moved = {n: d.get("migrated_window_share") or 0.0 for n, d in classes.items()}
    if not any(moved.values()):
        return ["%s: the writer never changed CPU between the end of the warm-up and the end "
                "of the send (in %d windows of %d classes), so no slow group can be put down "
                "to a migration here." % (NOT_SHOWN, windows, len(classes))]
    out = []
    for n, share in moved.items():
        slow = classes[n].get("slowest_1pct_in_migrated_share")
        if share and _ok(slow):
            out.append("%s: %.1f %% of windows migrated and hold %.1f %% of the slowest 1 %% of "
                       "groups (%s their share)." % (n, 100 * share, 100 * slow,
                                                    "over" if slow > share else "not over"))
    return out


def first_group(group_ns_by_class, name=None):
    """How much slower the first group after the send is than the last, at p50 (all
    rounds' windows pooled per group position), for ``name`` (default: the first
    yield class)."""
    names = list(group_ns_by_class)
    name = name or next((n for n in names if n.startswith("yield")), names[0] if names else None)
    if name is None:
        return ["%s: no class" % NOT_SHOWN]
    g = np.asarray(group_ns_by_class[name], dtype=float)
    g = g.reshape(-1, g.shape[-1])
    first, last = (honest_rank(g[:, k][g[:, k] > 0], (50.0,))[0][0] for k in (0, -1))
    if not (_ok(first) and _ok(last)) or last <= 0:
        return ["%s: too few windows for the p50 of each group of %s" % (NOT_SHOWN, name)]
    r = first / last
    if r < 1.1:
        return ["%s: in %s the first group after the send is no slower than the last at p50 "
                "(%s)." % (NOT_SHOWN, name, _x(r))]
    return ["In %s the first group after the send is %s slower than the last at p50."
            % (name, _x(r))]


# ---- pacing ----------------------------------------------------------------------------

def model_vs_measured(n, d, measured_max_ns, d_max_runs):
    """The unpaced burst's model (the last message waits N / D) against its measured
    maximum delay, and how far apart the drain repetitions that gave D were."""
    model_ns = n / d * 1e9
    off = model_ns / measured_max_ns - 1.0
    runs = [v for v in d_max_runs if _ok(v)]
    spread = (max(runs) / min(runs) - 1.0) if len(runs) > 1 else None
    where = ("agrees with the measured maximum delay within 10 %%" if abs(off) <= 0.10 else
             "sits %.0f %% %s the measured maximum delay" % (100 * abs(off),
                                                             "above" if off > 0 else "below"))
    text = ("The model line (N / D = %.2f ms) %s (%.2f ms)" % (model_ns / 1e6, where,
                                                            measured_max_ns / 1e6))
    if spread is not None:
        text += "; D comes from %d drain bursts whose rates N / max delay spread %.0f %%" % (
            len(runs), 100 * spread)
        if abs(off) > 0.10 and spread > abs(off) / 2:
            text += ", which is why the line misses"
    return [text + "."]


def paced_targets(targets, d_pace=None):
    """How the paced bursts did against their delay targets (measured max / T), and
    (``d_pace``: the D they were paced for) what the consumer delivered meanwhile."""
    ratios = [(t["t"], r) for t in targets for r in (t.get("ratio") or []) if _ok(r)]
    if not ratios:
        return ["%s: no paced burst was measured" % NOT_SHOWN]
    missed = [r for _, r in ratios if r > 1.0]
    if not missed:
        return ["Every paced burst (%d) kept its maximum delay within its target (at most "
                "%.2f × T)." % (len(ratios), max(r for _, r in ratios))]
    runs = [r for t in targets for r in (t.get("d_run") or []) if _ok(r)]
    during = ("; meanwhile the consumer delivered %.3g to %.3g msg/s, against the D = %.3g "
              "msg/s they were paced for" % (min(runs), max(runs), d_pace)
              if runs and _ok(d_pace) else "")
    if len(missed) == len(ratios):
        return ["%s: every paced burst (%d) missed its target, by %.1f× to %.1f×%s."
                % (NOT_SHOWN, len(ratios), min(missed), max(missed), during)]
    return ["%d of %d paced bursts met their target; the others missed by %.1f× to %.1f×%s."
            % (len(ratios) - len(missed), len(ratios), min(missed), max(missed), during)]


def streams(stream_rows):
    """Whether a stream above D builds a backlog without bound and one below D does
    not, from each stream's fitted growth of delay (s per s)."""
    out = []
    for st in stream_rows:
        f = st["factor"]
        g = [v for v in st.get("growth_per_s") or [] if _ok(v)]
        if not g:
            out.append("%s: the stream at %.2f D has no fitted growth" % (NOT_SHOWN, f))
            continue
        growth = float(np.median(g))
        grows = growth > FLAT_GROWTH
        if f > 1:
            out.append(("Above D (P = %.2f D) the delay grows by %.3f s per s (model 1 − D/P = "
                        "%.3f)." % (f, growth, st.get("model_growth_per_s", 1 - 1 / f)))
                       if grows else
                       "%s: the stream at %.2f D did not grow (%.3f s per s; the consumer kept "
                       "up)." % (NOT_SHOWN, f, growth))
        else:
            out.append(("Below D (P = %.2f D) the delay stays flat (%.3f s per s)." % (f, growth))
                       if not grows else
                       "%s: the stream at %.2f D grew too (%.3f s per s): the consumer drained "
                       "slower than D while it ran." % (NOT_SHOWN, f, growth))
    return out


# ---- core-to-core and the pipeline --------------------------------------------------------

def queue_over_floor(queue):
    out = []
    for name, v in (queue.get("variants") or {}).items():
        if name != "two_lines" and _ok(v.get("ratio_median")):
            k = len(v.get("ratios") or [])
            out.append("pyqueue's %s round trip costs %s the two-line floor on the same pair "
                       "(%s)." % (name, _x(v["ratio_median"]),
                                  "one round" if k == 1 else "median of %d rounds" % k))
    return out or ["%s: the run has no queue ping-pong" % NOT_SHOWN]


def over_time(ot):
    out = []
    for mode in ot.get("modes", []):
        med = [v for v in ot[mode]["median_ns"] if _ok(v)]
        if len(med) < 2:
            continue
        r = max(med) / min(med)
        out.append(("The %s median of one pair moved between %.0f and %.0f ns over %.1f s "
                    "(%s): the host moved the vCPUs." % (mode, min(med), max(med),
                                                          ot["t_s"][-1], _x(r)))
                   if r > 1.2 else
                   "%s: the %s median of one pair stayed within %.0f %% over %.1f s."
                   % (NOT_SHOWN, mode, 100 * (r - 1), ot["t_s"][-1]))
    return out or ["%s: the run has no over-time series" % NOT_SHOWN]


def false_sharing(slowdown):
    s = [v for v in slowdown if _ok(v)]
    if not s:
        return ["%s: no false-sharing round" % NOT_SHOWN]
    m = float(np.median(s))
    if m < 1.2:
        return ["%s: two counters on one line were %s as slow as on padded lines (no "
                "measurable false sharing)." % (NOT_SHOWN, _x(m))]
    return ["Two counters on one cache line are %s slower than on padded lines (median of "
            "%d rounds)." % (_x(m), len(s))]


def pipeline_tails(table, label="p99"):
    """Which variant has the lowest latency at ``label`` and by how much."""
    vals = {}
    for name, f in table.items():
        d = f["latency_us"].to_dict() if hasattr(f["latency_us"], "to_dict") else f["latency_us"]
        i = d["labels"].index(label)
        if _ok(d["mean"][i]):
            vals[name] = d["mean"][i]
    if len(vals) < 2:
        return ["%s: fewer than two variants report %s" % (NOT_SHOWN, label)]
    lo, hi = min(vals, key=vals.get), max(vals, key=vals.get)
    return ["End-to-end %s: %s %.1f µs, %s %.1f µs (%s)." % (label, lo, vals[lo], hi, vals[hi],
                                                            _x(vals[hi] / vals[lo]))]
