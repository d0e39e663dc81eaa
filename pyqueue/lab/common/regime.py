"""Which throughput regime an SPSC run -- or one window of it -- was in.

SPSC throughput has two regimes.  *Chasing*: the reader is faster and keeps
finding the queue (nearly) empty, so every few messages cost a cache-line
transfer between the two cores.  *Streaming*: the writer is ahead and the
reader takes messages without waiting (the queue may fill, and the writer then
waits for room: the reader sets the pace).  A run that starts from an empty
queue can stay in either, so a figure is only comparable with figures of the
same regime.

The evidence is what each side counted: the reader's polls that found nothing
(``empty_polls``) and the writer's attempts that found the queue full
(``full_retries``), per message::

    empty / message <= STREAMING_EMPTY             streaming
    empty / message >= CHASING_EMPTY, full <= FULL  chasing
    anything else                                   mixed (a transition inside
                                                    the window, or both sides
                                                    waiting in turn: the two
                                                    threads were not running
                                                    at the same time)

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

# A streaming reader waits almost never: once per 1000 messages at most.
STREAMING_EMPTY = 1e-3
# A chasing reader finds the queue empty at least once every 100 messages
# (typically every few: one line transfer per handful of messages).
CHASING_EMPTY = 1e-2
# ... while its writer is (almost) never held back by a full queue.
FULL = 1e-3
# Share of windows that makes a run's regime.
DOMINANT = 0.9


@dataclass(frozen=True)
class Regime:
    regime: str            # STREAMING, CHASING or MIXED
    messages: int
    empty_per_msg: float   # reader's empty polls per message
    full_per_msg: float    # writer's full-queue retries per message

    @property
    def writer_held(self):
        """The writer waited for room: the queue filled and the reader set the pace."""
        return self.full_per_msg > FULL

    def as_dict(self):
        return {"regime": self.regime, "messages": self.messages,
                "empty_per_msg": self.empty_per_msg, "full_per_msg": self.full_per_msg,
                "writer_held": self.writer_held}


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s must be an int, got %s" % (name, type(value).__name__))
    if value < 0:
        raise ValueError("%s must be >= 0, got %d" % (name, value))
    return int(value)


def classify(messages, empty_polls, full_retries=0):
    """The regime of ``messages`` messages over which the reader found the queue
    empty ``empty_polls`` times and the writer found it full ``full_retries``
    times.  Returns a Regime."""
    messages = _count("messages", messages)
    empty_polls = _count("empty_polls", empty_polls)
    full_retries = _count("full_retries", full_retries)
    if messages == 0:
        raise ValueError("messages must be > 0 to have a regime")
    e = empty_polls / messages
    f = full_retries / messages
    if e <= STREAMING_EMPTY:
        regime = STREAMING
    elif e >= CHASING_EMPTY and f <= FULL:
        regime = CHASING
    else:
        regime = MIXED
    return Regime(regime, messages, e, f)


def window_deltas(records, window, start_ns=None):
    """Per-window counts from cumulative window records (``pyq_twin_window_t``:
    reader_ns, empty_polls, writer_ns, full_retries, as a numpy structured array
    or a sequence of dicts).  Returns a list of dicts with messages, empty_polls,
    full_retries and, when its start is known, ns and mmsg_s (the reader's pace;
    the first window's start is ``start_ns``)."""
    window = _count("window", window)
    if window == 0:
        raise ValueError("window must be > 0")
    out = []
    prev = {"reader_ns": start_ns, "empty_polls": 0, "full_retries": 0}
    for rec in records:
        rec = {k: int(rec[k]) for k in ("reader_ns", "empty_polls", "full_retries")}
        d = {"messages": window,
             "empty_polls": rec["empty_polls"] - prev["empty_polls"],
             "full_retries": rec["full_retries"] - prev["full_retries"]}
        if d["empty_polls"] < 0 or d["full_retries"] < 0:
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
    regimes = [classify(w["messages"], w["empty_polls"], w.get("full_retries", 0)).regime
               for w in windows]
    share = {r: regimes.count(r) / len(regimes) for r in REGIMES}
    best = max(REGIMES[:2], key=lambda r: share[r])
    regime = best if share[best] >= DOMINANT else MIXED
    spread = {r: _spread([w["mmsg_s"] for w, g in zip(windows, regimes)
                          if g == r and "mmsg_s" in w]) for r in REGIMES}
    return {"regime": regime, "share": share, "windows": regimes, "spread": spread,
            "skipped": skip}
