"""Which throughput regime an SPSC run -- or one window of it -- was in.

SPSC throughput has two regimes.  *Chasing*: the reader is faster and keeps
finding the queue (nearly) empty, so every few messages cost a cache-line
transfer between the two cores.  *Streaming*: the writer is ahead and the
reader takes messages without waiting (the queue may fill, and the writer then
waits for room: the reader sets the pace).  A run that starts from an empty
queue can stay in either, so a figure is only comparable with figures of the
same regime.

The evidence is what each side counted, per message: how often the reader
*caught up* with the writer (``empty_runs``: a poll that found nothing right
after one that delivered) and how often the writer had to *wait for room*
(``full_runs``: a write that found the queue full at least once)::

    catch-ups / message <= STREAMING_CATCHUPS (2e-4)        streaming
    catch-ups / message >= CHASING_CATCHUPS (2e-3),
        waits / message <= WAITS (1e-3)                     chasing
    anything else                                           mixed (a transition
                                                            inside the window, or
                                                            both sides waiting in
                                                            turn)

Episodes, not retries: a wait counts once however long it lasts.  The raw counts
(``empty_polls``, ``full_retries``) grow with the time spent waiting, so one
descheduled thread -- a few milliseconds on a shared 2-CPU host -- turned a
clean chasing slice into "mixed" (a reader off its CPU for 10 ms makes a writer
spinning on a full queue count ~10^6 retries, over a 2 M-message slice 0.5 a
message); as an episode it is one wait.  Counts without episodes (older
records) fall back to the raw rates (STREAMING_EMPTY, CHASING_EMPTY, FULL).

A run made of windows (the twins' records) is in a regime when at least
``DOMINANT`` of its windows are; otherwise it is mixed, and the windows say how
it was split.
"""
from dataclasses import dataclass

import numpy as np

STREAMING = "streaming"
CHASING = "chasing"
MIXED = "mixed"
REGIMES = (STREAMING, CHASING, MIXED)
# Not a regime but the bench's headline pass (SPEC §8): both sides start together
# on an empty queue and run unpaced; its figures are kept under this name
# whatever regime each run fell into (which is recorded beside them).
FLAT_OUT = "flat-out"

# A streaming reader (the writer ahead) catches up almost never: once per
# 5,000 messages at most -- a 20 M-message slice allows 4,000, i.e. the
# writer's rare stalls.
STREAMING_CATCHUPS = 2e-4
# A chasing reader catches up at least once every 500 messages.  It catches up
# at most once per unit the writer publishes: every message or few for the
# per-message rings, every burst of 32, every block for pyqueue with publish
# "max" (4 KiB of 40-byte records = 102 messages, so the bound must sit below
# 1/102) ...  The rates slices showed are in BENCHMARKS.md ("Moved from code
# comments (pyqueue/)").
CHASING_CATCHUPS = 2e-3
# ... while its writer almost never waits for room.
WAITS = 1e-3
# The raw rates, for records without episodes: empty polls and full retries per
# message (these count every spin of a wait, hence the wider band).
STREAMING_EMPTY = 1e-3
CHASING_EMPTY = 1e-2
FULL = 1e-3
# Share of windows that makes a run's regime.
DOMINANT = 0.9


@dataclass(frozen=True)
class Regime:
    regime: str            # STREAMING, CHASING or MIXED
    messages: int
    empty_per_msg: float   # reader's empty polls per message
    full_per_msg: float    # writer's full-queue retries per message
    catchups_per_msg: float = None  # reader's catch-ups per message (None: not counted)
    waits_per_msg: float = None     # writer's waits for room per message

    @property
    def writer_held(self):
        """The writer waited for room: the queue filled and the reader set the pace."""
        w = self.full_per_msg if self.waits_per_msg is None else self.waits_per_msg
        return w > WAITS

    def as_dict(self):
        return {"regime": self.regime, "messages": self.messages,
                "empty_per_msg": self.empty_per_msg, "full_per_msg": self.full_per_msg,
                "catchups_per_msg": self.catchups_per_msg,
                "waits_per_msg": self.waits_per_msg, "writer_held": self.writer_held}


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s must be an int, got %s" % (name, type(value).__name__))
    if value < 0:
        raise ValueError("%s must be >= 0, got %d" % (name, value))
    return int(value)


def _decide(reader, writer, streaming, chasing, held):
    if reader <= streaming:
        return STREAMING
    if reader >= chasing and writer <= held:
        return CHASING
    return MIXED


def classify(messages, empty_polls, full_retries=0, empty_runs=None, full_runs=None):
    """The regime of ``messages`` messages over which the reader found the queue
    empty ``empty_polls`` times in ``empty_runs`` catch-ups and the writer found
    it full ``full_retries`` times in ``full_runs`` waits.  The episodes decide
    when given (a run of empty polls or of full retries, however long, counts
    once); without them the raw counts do.  Returns a Regime."""
    messages = _count("messages", messages)
    empty_polls = _count("empty_polls", empty_polls)
    full_retries = _count("full_retries", full_retries)
    if messages == 0:
        raise ValueError("messages must be > 0 to have a regime")
    e = empty_polls / messages
    f = full_retries / messages
    if empty_runs is None:
        if full_runs is not None:
            raise ValueError("full_runs needs empty_runs (episodes of both sides)")
        return Regime(_decide(e, f, STREAMING_EMPTY, CHASING_EMPTY, FULL), messages, e, f)
    empty_runs = _count("empty_runs", empty_runs)
    full_runs = _count("full_runs", 0 if full_runs is None else full_runs)
    if empty_runs > empty_polls or full_runs > full_retries:
        raise ValueError("a run is at least one poll or retry: empty_runs %d > empty_polls %d "
                         "or full_runs %d > full_retries %d"
                         % (empty_runs, empty_polls, full_runs, full_retries))
    c, w = empty_runs / messages, full_runs / messages
    return Regime(_decide(c, w, STREAMING_CATCHUPS, CHASING_CATCHUPS, WAITS),
                  messages, e, f, c, w)


def window_deltas(records, window, start_ns=None):
    """Per-window counts from cumulative window records (``pyq_twin_window_t``:
    reader_ns, empty_polls, writer_ns, full_retries and, where counted,
    empty_runs and full_runs, as a numpy structured array or a sequence of
    dicts).  Returns a list of dicts with messages, those counts and, when its
    start is known, ns and mmsg_s (the reader's pace; the first window's start
    is ``start_ns``)."""
    window = _count("window", window)
    if window == 0:
        raise ValueError("window must be > 0")
    out = []
    counts = ("empty_polls", "full_retries", "empty_runs", "full_runs")
    prev = dict({"reader_ns": start_ns}, **{k: 0 for k in counts})
    for rec in records:
        names = getattr(getattr(rec, "dtype", None), "names", None) or rec.keys()
        keys = [k for k in counts if k in names]
        rec = dict({k: int(rec[k]) for k in keys}, reader_ns=int(rec["reader_ns"]))
        d = dict({"messages": window}, **{k: rec[k] - prev[k] for k in keys})
        if any(d[k] < 0 for k in keys):
            raise ValueError("window records must be cumulative (counts went down)")
        if prev["reader_ns"] is not None:
            d["ns"] = rec["reader_ns"] - prev["reader_ns"]
            d["mmsg_s"] = window / d["ns"] * 1e3 if d["ns"] > 0 else float("inf")
        out.append(d)
        prev = rec
    return out


def _spread(values):
    if not values:
        return None
    p10, p50, p90 = np.percentile(np.asarray(values, dtype=float), (10, 50, 90))
    return {"min": float(min(values)), "p10": float(p10), "p50": float(p50),
            "p90": float(p90), "max": float(max(values)), "n": len(values)}


def classify_windows(windows, skip=0):
    """The regime of a run from its per-window counts (``window_deltas``),
    leaving out the first ``skip`` windows (the start-up).  Returns a dict:
    regime, the share of windows in each regime, each window's regime, and the
    spread (min / p10 / p50 / p90 / max M msg/s) of the windows of each regime
    whose pace is known."""
    skip = _count("skip", skip)
    windows = list(windows)[skip:]
    if not windows:
        raise ValueError("no windows left to classify (skip=%d)" % skip)
    regimes = [classify(w["messages"], w["empty_polls"], w.get("full_retries", 0),
                        w.get("empty_runs"), w.get("full_runs")).regime for w in windows]
    share = {r: regimes.count(r) / len(regimes) for r in REGIMES}
    best = max(REGIMES[:2], key=lambda r: share[r])
    regime = best if share[best] >= DOMINANT else MIXED
    spread = {r: _spread([w["mmsg_s"] for w, g in zip(windows, regimes)
                          if g == r and "mmsg_s" in w]) for r in REGIMES}
    return {"regime": regime, "share": share, "windows": regimes, "spread": spread,
            "skipped": skip}


# ---- streaming on purpose: episodes ------------------------------------------------
#
# A reader faster than its writer chases it from an empty queue for ever, so a
# per-message row never streams by itself.  The streaming pass builds the regime
# (pyq_twin_episode_t, csrc/adapters/pyq_twin.h): the writer fills a backlog
# while the reader is held, releases it, and both run flat out until the
# reader's first empty poll; then the reader is held again.  Inside an episode
# the reader never found the queue empty, so both sides streamed with the writer
# ahead, and the writer's rate there is what the pair streams at: the writer's
# own pace when the reader keeps up, the reader's when the queue fills and the
# writer waits for room.

# An episode counts when the writer wrote at least this many messages over at
# least this long in it (fewer: the reader caught up at once).
EPISODE_MIN_MESSAGES = 64
EPISODE_MIN_NS = 2_000
# A run streamed when its counted episodes hold at least this many of the
# writer's messages; otherwise the reader caught up at once every time: it chased.
STREAM_MIN_MESSAGES = 1 << 16

_EPISODE_FIELDS = ("go_ns", "go_written", "start_ns", "start_read", "end_ns", "end_read",
                   "caught_up")


def episode_intervals(records, messages, writer_end_ns):
    """Each episode's streaming interval from its record (``pyq_twin_episode_t``
    fields, a numpy structured array or dicts): ``messages`` is what the writer
    wrote in the whole run and ``writer_end_ns`` when it had (CLOCK_MONOTONIC).
    The writer's interval runs from its release to the reader's catch-up -- at
    which the writer had written what the reader had read -- or to its own end
    when that came first; the reader's from seeing the release to the catch-up.
    Returns a list of dicts: writer_messages, writer_ns, reader_messages,
    reader_ns, caught_up, counted (long enough to count, EPISODE_MIN_*)."""
    messages = _count("messages", messages)
    writer_end_ns = _count("writer_end_ns", writer_end_ns)
    out = []
    for rec in records:
        e = {k: int(rec[k]) for k in _EPISODE_FIELDS}
        if e["end_ns"] < e["start_ns"] or e["end_read"] < e["start_read"] or \
                e["go_written"] > messages or e["end_read"] > messages:
            raise ValueError("episode record out of order: %r" % (e,))
        if e["caught_up"] and e["end_ns"] <= writer_end_ns:
            w_end, w_count = e["end_ns"], max(e["end_read"], e["go_written"])
        else:      # the writer finished inside the episode
            w_end, w_count = writer_end_ns, messages
        d = {"writer_messages": w_count - e["go_written"],
             "writer_ns": max(0, w_end - e["go_ns"]),
             "reader_messages": e["end_read"] - e["start_read"],
             "reader_ns": e["end_ns"] - e["start_ns"], "caught_up": bool(e["caught_up"])}
        d["counted"] = (d["writer_messages"] >= EPISODE_MIN_MESSAGES
                        and d["writer_ns"] >= EPISODE_MIN_NS)
        out.append(d)
    return out


def classify_episodes(records, messages, writer_end_ns):
    """The streaming figure of a run made of episodes.  Returns a dict: regime
    (STREAMING when the counted episodes hold at least STREAM_MIN_MESSAGES of
    the writer's messages, else CHASING: the reader caught up at once), mmsg_s
    (the median over counted episodes of the writer's rate in each, M msg/s: a
    thread that lost its CPU for milliseconds inside one episode of ~0.1-1 ms
    moves one episode, not the figure; None when none counted), reader_mmsg_s
    (the same of the reader's drain rates), pooled_mmsg_s (the writer's messages
    over its time, all counted episodes together), episodes, counted, messages
    (the writer's in counted episodes) and spread (min / p10 / p50 / p90 / max of
    the counted episodes' writer rates)."""
    eps = episode_intervals(records, messages, writer_end_ns)
    used = [e for e in eps if e["counted"]]
    w_msgs = sum(e["writer_messages"] for e in used)
    w_ns = sum(e["writer_ns"] for e in used)
    writer = [e["writer_messages"] / e["writer_ns"] * 1e3 for e in used]
    reader = [e["reader_messages"] / e["reader_ns"] * 1e3 for e in used if e["reader_ns"]]
    return {"regime": STREAMING if w_msgs >= STREAM_MIN_MESSAGES else CHASING,
            "mmsg_s": float(np.median(writer)) if writer else None,
            "reader_mmsg_s": float(np.median(reader)) if reader else None,
            "pooled_mmsg_s": w_msgs / w_ns * 1e3 if w_ns else None,
            "episodes": len(eps), "counted": len(used), "messages": w_msgs,
            "spread": _spread(writer)}
