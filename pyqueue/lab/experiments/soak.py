"""Soak: a bounded stress of the queue that checks every message (docs/RELIABILITY.md).

The run is a series of queue *periods*; each creates a queue with a random
configuration (block size, tier sizes, publish policy, scan_current, streaming
spill stores, yield cadence) and drives it with C writer and reader threads
(``pyq_soak_run``, csrc/stress/soak.c) in short slices that continue one message
stream: random sizes from 0 bytes to the largest message, random pauses on both
sides (the reader's build backlog into tier 2), flushes, claim / commit / abort,
try_write and writes with short timeouts.  The reader checks the length, the
sequence number and every byte of every message, and that nothing follows the
last one.  After each period the counters must agree (written == read, backlog
0, every block taken was returned but the writer's current one).

Ctrl-C (GracefulInterrupt) ends the run after the current slice (<= ``slice_s``)
with a summary and, with ``out``, a valid output folder saying how far it got.

Its parameters are one list, SoakParams, from which the CLI's flags, soak()'s
keywords, the output folder's JSON params and their checks all come.
"""
import math
import random
import time
from dataclasses import dataclass, field
from typing import Optional

from pyqueue import queue as _queue
from pyqueue.errors import VerificationError, strerror
from .._lab import ffi, lib
from pyqueue.config import QueueConfig
from ..common.params import Params, param
from ..common.progress import format_seconds
from ..common.session import Session
from pyqueue.table import render
from ..common.frames import ToPandas

_COUNTS = ("written", "read", "bytes", "writer_pauses", "reader_pauses", "flushes", "claims",
           "aborts", "try_full", "batches", "batched", "timeouts", "polls", "empty_polls")
# The queue counters summed over periods: pyq_stats_t's block and full-wait counts,
# from blocks_published to full_events (the message counts are _COUNTS' own; after
# them come the gauges: backlog, peak_backlog, hugepages_used, mlocked).
_STATS = _queue.STATS[_queue.STATS.index("blocks_published"):
                      _queue.STATS.index("full_events") + 1]


class SoakError(VerificationError):
    """The soak found a wrong, lost or extra message, a stall or a counter mismatch."""


@dataclass
class SoakResult(ToPandas):
    params: dict
    status: str = "running"     # on return: "complete", "interrupted after ..." or "failed: ..."
    seconds: float = 0.0
    periods: int = 0
    slices: int = 0
    totals: dict = field(default_factory=lambda: {k: 0 for k in _COUNTS + _STATS})
    peak_backlog: int = 0
    configs: list = field(default_factory=list)
    error: str = ""

    @property
    def ok(self):
        return not self.error

    @property
    def samples(self):
        """No sample arrays: the soak checks every message in C and keeps counts."""
        return {}

    @property
    def summary(self):
        return {"status": self.status, "seconds": round(self.seconds, 3), "periods": self.periods,
                "slices": self.slices, "messages_checked": self.totals["read"],
                "bytes_checked": self.totals["bytes"], "peak_backlog": self.peak_backlog,
                "totals": dict(self.totals), "error": self.error}

    def to_dict(self):
        return {"params": self.params, "summary": self.summary, "configs": self.configs}

    def to_json(self, path):
        import json
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)

    def table(self):
        return self.text()

    def text(self, markdown=False):
        """What was checked, a row per figure (``markdown``: as a Markdown table)."""
        t = self.totals
        rows = [
            ("status", self.status),
            ("time", "%s (%d queue periods, %d slices)" % (format_seconds(self.seconds),
                                                          self.periods, self.slices)),
            ("messages checked", "%d (%d payload bytes), every byte" % (t["read"], t["bytes"])),
            ("messages written", "%d" % t["written"]),
            ("tier-2 takes", "%d of %d blocks" % (t["takes_spill"], t["takes_hot"] + t["takes_spill"])),
            ("peak backlog", "%d bytes" % self.peak_backlog),
            ("flushes", "%d" % t["flushes"]),
            ("claims / aborts", "%d / %d" % (t["claims"], t["aborts"])),
            ("try_write full", "%d" % t["try_full"]),
            ("write_batch", "%d calls, %d messages" % (t["batches"], t["batched"])),
            ("write timeouts", "%d" % t["timeouts"]),
            ("full waits", "%d retries, %d yields, %d full events" % (t["retries"], t["yields"],
                                                                     t["full_events"])),
            ("pauses", "writer %d, reader %d" % (t["writer_pauses"], t["reader_pauses"])),
        ]
        if self.error:
            rows.append(("error", self.error))
        return render(("soak", "result"), rows, markdown=markdown)


def random_config(rng):
    """A QueueConfig drawn for one period (small pools: spills happen); the fields
    not drawn keep the queue defaults."""
    block = rng.choice([256, 512, 1024, 4096])
    publish = rng.choice(["max", "each", "bytes:%d" % rng.choice([1, 100, 3000])])
    # max_message=0: the soak drives the block framing (its C loops' lengths).
    return QueueConfig(block_size=block, max_message=0, hot_blocks=rng.randint(1, 4),
                       spill_blocks=rng.randint(8, 256), publish=publish,
                       scan_current=rng.random() < 0.5,
                       retry_yield_every=rng.choice([0, 1, 16, 1024]),
                       spill_nontemporal=rng.random() < 0.3 and _nontemporal_supported(),
                       # 0: every spill block streamed; 64 KiB: the small pools' backlogs
                       # cross it, so blocks switch between streamed and cached.
                       nontemporal_backlog_kib=rng.choice([0, 64, 4096]),
                       touch_after_write=rng.random() < 0.7, prefetch=rng.random() < 0.7,
                       # 4 KiB: a hot block flushed whenever the writer is a block
                       # or so ahead, on and off through a run (drawn last: the
                       # draws above stay those of a seed before this field).
                       flush_backlog_kib=rng.choice([0, 4, 16]))


def _nontemporal_supported():
    try:
        QueueConfig(spill_nontemporal=True, max_message=0)
    except ValueError:  # the platform has no streaming stores
        return False
    return True


def _slice_params(rng, seq, max_message, slice_ns, seed):
    p = ffi.new("pyq_soak_params_t *")
    p.seed = seed
    p.first_seq = seq
    p.duration_ns = slice_ns
    p.max_messages = 0
    hi = rng.choice([max_message, min(max_message, 64), min(max_message, 300)])
    p.min_len = rng.choice([0, 0, hi])          # fixed size now and then
    p.max_len = hi
    p.size_salt = rng.getrandbits(32)
    p.writer_pause_every = rng.choice([0, 1000, 20000])
    p.writer_pause_max_us = rng.choice([50, 500, 2000])
    p.reader_pause_every = rng.choice([0, 500, 5000, 50000])
    p.reader_pause_max_us = rng.choice([100, 2000, 20000])
    p.flush_every = rng.choice([0, 1, 10, 1000])
    p.claim_every = rng.choice([0, 3, 50])
    p.try_every = rng.choice([0, 3, 50])
    p.batch_every = rng.choice([0, 2, 50])      # used with fixed-size messages only
    p.timeout_every = rng.choice([0, 2, 20])
    p.timeout_max_ns = rng.choice([1000, 100_000, 2_000_000])
    p.max_poll = rng.choice([1, 7, 256, 4096])
    p.stall_ns = 10_000_000_000
    p.writer_cpu = p.reader_cpu = -1
    return p


def _check_period(q, seq, res, config):
    """Counters after a drained period: written == read == seq, every block back."""
    s = q.stats()
    problems = []
    if not s["messages_written"] == s["messages_read"] == seq:
        problems.append("messages written %d, read %d, expected %d"
                        % (s["messages_written"], s["messages_read"], seq))
    if s["backlog"] != 0:
        problems.append("backlog %d after the drain" % s["backlog"])
    out = (s["takes_hot"] + s["takes_spill"]) - (s["returns_hot"] + s["returns_spill"])
    if not 0 <= out <= 1:
        problems.append("%d blocks not returned (only the writer's current one may be)" % out)
    if problems:
        raise SoakError("counters disagree for %s: %s" % (config, "; ".join(problems)),
                        lib.PYQ_EBADMSG)
    for k in _STATS:
        res.totals[k] += s[k]
    res.peak_backlog = max(res.peak_backlog, s["peak_backlog"])


@dataclass(frozen=True)
class SoakParams(Params):
    """The soak's parameters.  It pins nothing: its threads move on purpose."""

    EXPERIMENT, COMMAND, FUNCTION = "soak", "soak", "soak"

    seconds: float = param(60.0, "how long to run, seconds; finite, a soak is bounded (for a "
                           "long one give e.g. 86400: Ctrl-C or SIGTERM ends it early and keeps "
                           "what was checked)", lo=0.0, lo_open=True, hi=math.inf, hi_open=True,
                           quick=3.0, metavar="SECONDS")
    seed: Optional[int] = param(None, "seed of the configurations and of the threads' choices, "
                                "decimal or 0x hex (default: drawn, recorded and printed, to "
                                "reproduce the run)", kind="seed", none_ok=True, lo=0,
                                hi=2**64 - 1)
    period_s: float = param(5.0, "seconds per random queue configuration", lo=0.0,
                            lo_open=True, hi=math.inf, hi_open=True, quick=1.0,
                            cli_aliases=("--period",), metavar="SECONDS")
    slice_s: float = param(0.5, "seconds per C slice, at most period_s: how soon Ctrl-C is "
                           "honoured", lo=0.0, lo_open=True, hi=math.inf, hi_open=True,
                           cli_aliases=("--slice",), metavar="SECONDS")

    def check(self):
        if self.slice_s > self.period_s:
            raise ValueError("slice_s must be at most period_s (%g), got %g"
                             % (self.period_s, self.slice_s))


def soak(params=None, *, out=None, overwrite=False, progress=True, _stop=None, **kwargs):
    """Run the soak: ``params`` (a SoakParams, None for the defaults) and/or its fields as
    keywords; returns a SoakResult (``ok`` False on an error).

    ``seconds``: how long; ``seed`` (default: drawn, then recorded in ``params``) makes
    the configurations and the threads' choices reproducible; ``period_s``: seconds per
    queue configuration; ``slice_s``: seconds per C slice (how soon Ctrl-C is
    honoured).  ``out``: write the output folder (DESIGN §6.8) there.  ``_stop``: a
    GracefulInterrupt to use (default: one installed here, catching Ctrl-C).
    """
    p = SoakParams.of(params, **kwargs)
    if p.seed is None:
        p = p.replace(seed=random.SystemRandom().getrandbits(32))
    rng = random.Random(p.seed)
    params = p.to_json()
    res = SoakResult(params=params)
    seconds, total_ms = p.seconds, int(round(p.seconds * 1000))

    def record(folder, status, final):
        res.status = status
        if final and folder is not None:
            folder.save_text("summary.txt", res.table() + "\n")
        return {"summary": res.summary, "configs": res.configs}

    t0 = time.monotonic()
    with Session("soak", params, total_ms, "ms", record=record, out=out, overwrite=overwrite,
                 progress=progress, guard=_stop) as s:
        try:
            while not s.stopping and time.monotonic() - t0 < seconds:
                _run_period(rng, res, t0, seconds, p.period_s, p.slice_s, s)
                res.periods += 1
                s.checkpoint(min(total_ms, _ms(t0)))
        except SoakError as e:
            res.error = str(e)
        res.seconds = time.monotonic() - t0
        s.done = total_ms if not (res.error or s.stopping) else max(0, min(total_ms - 1, _ms(t0)))
        s.finish(res.error or None)
        s.bar.set(min(total_ms, _ms(t0)), status=_progress_text(res))
    return res


def _ms(t0):
    return int((time.monotonic() - t0) * 1000)


def _progress_text(res):
    t = res.totals
    return "%d checked, %d spills, %d timeouts%s" % (t["read"], t["takes_spill"], t["timeouts"],
                                                     ", ERROR" if res.error else "")


def _run_period(rng, res, t0, seconds, period_s, slice_s, s):
    config = random_config(rng)
    res.configs.append(config.as_dict())
    seq = 0
    with _queue.Queue(config) as q:
        end = min(t0 + seconds, time.monotonic() + period_s)
        while not s.stopping and time.monotonic() < end:
            slice_ns = int(min(slice_s, max(0.001, end - time.monotonic())) * 1e9)
            p = _slice_params(rng, seq, q.max_message, slice_ns, rng.getrandbits(63))
            r = ffi.new("pyq_soak_result_t *")
            with q.writer.side_lock, q.reader.side_lock:   # the C threads own both sides
                rc = lib.pyq_soak_run(q.c_handle, p, r)
            for k in _COUNTS:
                res.totals[k] += int(getattr(r, k))
            res.slices += 1
            if rc != 0:
                side = {1: "writer", 2: "reader"}.get(r.error_side, "?")
                raise SoakError("%s side: %s at seq %d (slice %d of queue %s, seed %d, "
                                "first_seq %d)" % (side, strerror(rc), r.error_seq, res.slices,
                                                  config, res.params["seed"], seq), rc)
            if r.read != r.written:
                raise SoakError("slice wrote %d messages but read %d" % (r.written, r.read),
                                lib.PYQ_EBADMSG)
            seq += int(r.written)
            s.bar.set(min(int(seconds * 1000), _ms(t0)), status=_progress_text(res))
        _check_period(q, seq, res, config)
