"""bench-xproc: a shared queue across processes (DESIGN §3.9) vs the same
queue in one process and vs the cross-process peers, side by side.

Rows, each with 32-byte and 1 KiB messages:

* throughput, one writer process and one reader process: pyqueue's Python
  calls (``write`` / ``poll(1)``, numpy ``write_batch`` / ``poll_into``), its C
  loops (per message and by batch, csrc/bench/xproc.c), each beside the same
  in-process (two threads); ``multiprocessing.Queue`` and ``SimpleQueue``,
  faster-fifo, pyzmq ipc PUSH / PULL and iceoryx2 (bench_xproc_rows); and
  the calls multiprocessing's and faster-fifo's users write, on each: ``put`` /
  ``get_many`` of bytes, ``put`` / ``get`` of objects through pickle;
* round trips, one message there and back: pyqueue shared and in-process,
  through the Python calls and in C, and iceoryx2 (p50 / p99 over every sample);
* the futex wake-up (C, 32 B only): a reader asleep on an empty queue, a writer
  asleep on a full one, from the other process's hand-over to the sleeper's return;
* asyncio (bench_xproc_aio): a round trip between two processes that each
  await, pyqueue's get_async / put_async vs pyzmq's zmq.asyncio over ipc, and
  the CPU an idle await costs (32 B only);
* frames (bench_xproc_frames), large messages at their own sizes
  (``frame_sizes``, 1 KiB to 16 MiB), MB/s: pyqueue's bytes path over its
  large region and over blocks raised by hand (the path before it), claim /
  get_view, put_array / get_array; writers that copy a frame made earlier and
  writers that produce each frame in place (``-fill``), readers that only take
  the frame and readers that read it (``-sum``); against multiprocessing.Queue,
  faster-fifo, pyzmq and iceoryx2 at the same sizes.

Every row runs once a round, in rotating order, each slice bracketed by a
placement probe (DESIGN §8.2); ratios are taken within a round and a placement
(DESIGN §8.1).  Throughput rows stream (the writer ahead: DESIGN §8.4; the C
rows record the regime they measured), round trips are the empty-queue regime.
A row whose library does not import says "not installed: <why>".

The run is an experiment like the others (common/session.py): an output folder
(``out``), a progress line, a first Ctrl-C finishes the current slice and keeps
a valid partial folder.

    import pyqueue.lab as lab
    res = lab.bench_xproc(only=["c-", "wake"], rounds=2)
    res = lab.bench_xproc(only=["py-view", "py-bytes"], frame_sizes=[1 << 20])
    lab.bench_xproc(lab.BenchXprocParams.quick())      # what --quick runs

Its parameters are one list, BenchXprocParams, from which the CLI's flags,
bench_xproc()'s keywords, the output folder's params and their checks all come.
"""
import json
import os
import warnings
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..common import placement as pl
from ..common import status as _status
from ..common.output import to_jsonable
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..reports import bench_xproc as report
from . import bench_xproc_aio as A
from . import bench_xproc_c as C
from . import bench_xproc_frames as F
from . import bench_xproc_rows as R

__all__ = ["bench_xproc", "BenchXprocParams", "BenchXprocResult", "SIZES", "FRAME_SIZES",
           "QUICK"]

SIZES = (32, 1024)
FRAME_SIZES = (1 << 10, 64 << 10, 1 << 20, 16 << 20)
FRAME_MAX = 64 << 20
KINDS = ("throughput", "roundtrip", "wakeup", "idle", "frames")


@dataclass(frozen=True)
class Row:
    id: str        # file-safe: samples/<id>-<size>/
    label: str
    kind: str      # one of KINDS
    count: str     # the parameter that sets its messages (or trips, samples) a slice
    make: object   # () -> run(size, n, writer_cpu), or "not installed: ..."
    refuse: object = None   # size -> "not measured: <why>" where it cannot run, else None


def _frame(row_id, what, writer, reader, blocks=False):
    """A pyqueue frame row (bench_xproc_frames.pyq_row); ``blocks``: the bytes path as it
    was before the large region, block_size raised to hold the frame by hand."""
    return Row(row_id, "pyqueue shared, %s%s" % (what, ", blocks raised (as it was)" if blocks
                                                  else ""), "frames", "frame_messages",
               lambda: F.pyq_row(writer, reader, blocks), F.blocks_refuse if blocks else None)


ROWS = (
    Row("py-shared-msg", "pyqueue shared, write / poll(1)", "throughput", "messages",
        lambda: R.pyq_row(True, False)),
    Row("py-local-msg", "pyqueue in-process (thread), write / poll(1)", "throughput",
        "messages", lambda: R.pyq_row(False, False)),
    Row("py-shared-batch", "pyqueue shared, numpy write_batch / poll_into", "throughput",
        "batch_messages", lambda: R.pyq_row(True, True)),
    Row("py-local-batch", "pyqueue in-process (thread), numpy write_batch / poll_into",
        "throughput", "batch_messages", lambda: R.pyq_row(False, True)),
    Row("c-shared-msg", "pyqueue shared, C write / read_one", "throughput", "c_messages",
        lambda: C.throughput_row(True, False)),
    Row("c-local-msg", "pyqueue in-process (thread), C write / read_one", "throughput",
        "c_messages", lambda: C.throughput_row(False, False)),
    Row("c-shared-batch", "pyqueue shared, C write_batch / poll_fixed", "throughput",
        "batch_messages", lambda: C.throughput_row(True, True)),
    Row("c-local-batch", "pyqueue in-process (thread), C write_batch / poll_fixed",
        "throughput", "batch_messages", lambda: C.throughput_row(False, True)),
    Row("mp-queue", "multiprocessing.Queue put / get", "throughput", "messages",
        lambda: R.mp_row("queue")),
    Row("mp-simple", "multiprocessing.SimpleQueue put / get", "throughput", "messages",
        lambda: R.mp_row("simple")),
    Row("faster-fifo", "faster-fifo put / get_many", "throughput", "messages",
        R.faster_fifo_row),
    Row("py-shared-many", "pyqueue shared, put / get_many", "throughput", "messages",
        lambda: R.pyq_put_get_row(False, True)),
    Row("py-shared-obj", "pyqueue shared, objects (serializer='pickle'): put / get",
        "throughput", "messages", lambda: R.pyq_put_get_row(True, False)),
    Row("py-shared-obj-many", "pyqueue shared, objects (serializer='pickle'): put / get_many",
        "throughput", "messages", lambda: R.pyq_put_get_row(True, True)),
    Row("mp-queue-obj", "multiprocessing.Queue, objects: put / get", "throughput", "messages",
        lambda: R.mp_row("queue", objects=True)),
    Row("faster-fifo-obj", "faster-fifo, objects: put / get_many", "throughput", "messages",
        lambda: R.faster_fifo_row(objects=True)),
    Row("zmq", "pyzmq ipc PUSH / PULL", "throughput", "messages", R.zmq_row),
    Row("iceoryx2", "iceoryx2 publish-subscribe, loaned samples", "throughput", "messages",
        R.iceoryx2_row),
    Row("rt-py-shared", "pyqueue shared (two processes), Python calls", "roundtrip",
        "round_trips", lambda: R.pyq_round_trip(True)),
    Row("rt-py-local", "pyqueue in-process (two threads), Python calls", "roundtrip",
        "round_trips", lambda: R.pyq_round_trip(False)),
    Row("rt-iceoryx2", "iceoryx2 (two processes), Python calls", "roundtrip", "round_trips",
        R.iceoryx2_round_trip),
    Row("rt-c-shared", "pyqueue shared (two processes), C", "roundtrip", "round_trips",
        lambda: C.round_trip_row(True)),
    Row("rt-c-local", "pyqueue in-process (two threads), C", "roundtrip", "round_trips",
        lambda: C.round_trip_row(False)),
    Row("rt-c-shm-threads", "pyqueue shared segment, two threads of one process, C",
        "roundtrip", "round_trips", lambda: C.round_trip_row(True, process=False)),
    Row("rt-aio-shared", "pyqueue shared (two processes), asyncio get_async / put_async",
        "roundtrip", "round_trips", A.pyq_round_trip),
    Row("rt-zmq-aio", "pyzmq zmq.asyncio ipc PUSH / PULL (two processes)", "roundtrip",
        "round_trips", A.zmq_round_trip),
    Row("idle-aio-shared", "pyqueue shared, an idle get_async (writer process alive)", "idle",
        "idle_ms", lambda: A.pyq_idle(True)),
    Row("idle-aio-local", "pyqueue in-process, an idle get_async", "idle", "idle_ms",
        lambda: A.pyq_idle(False)),
    Row("idle-zmq-aio", "pyzmq zmq.asyncio, an idle recv", "idle", "idle_ms", A.zmq_idle),
    Row("wake-reader", "reader asleep on an empty queue, woken by a publish", "wakeup",
        "wakeups", lambda: C.wakeup_row("reader")),
    Row("wake-writer", "writer asleep on a full queue, woken by a returned block", "wakeup",
        "wakeups", lambda: C.wakeup_row("writer")),
    # Frames, at frame_sizes: pyqueue's (_frame), then the peers' rows at frame sizes.
    _frame("py-bytes", "write / get (bytes), large region", "write", "get"),
    _frame("py-bytes-blocks", "write / get", "write", "get", blocks=True),
    _frame("py-view", "claim (frame copied in) / get_view", "claim", "view"),
    _frame("py-array", "put_array / get_array", "array", "array"),
    _frame("py-bytes-fill", "frame made in a bytearray, write / get", "write-fill", "get"),
    _frame("py-bytes-blocks-fill", "frame made in a bytearray, write / get", "write-fill", "get",
           blocks=True),
    _frame("py-view-fill", "frame made in the claim / get_view", "claim-fill", "view"),
    _frame("py-bytes-fill-sum", "frame made in a bytearray, write / get, reader reads it",
           "write-fill", "get-sum"),
    _frame("py-bytes-blocks-fill-sum", "frame made in a bytearray, write / get, reader reads it",
           "write-fill", "get-sum", blocks=True),
    _frame("py-view-fill-sum", "frame made in the claim / get_view, reader reads it",
           "claim-fill", "view-sum"),
    Row("mp-queue-frames", "multiprocessing.Queue put / get", "frames", "frame_messages",
        lambda: R.mp_row("queue")),
    Row("faster-fifo-frames", "faster-fifo put / get_many", "frames", "frame_messages",
        R.faster_fifo_row),
    Row("zmq-frames", "pyzmq ipc PUSH / PULL (zero-copy frames from 64 KiB)", "frames",
        "frame_messages", R.zmq_row),
    Row("iceoryx2-frames", "iceoryx2 publish-subscribe, loaned samples (memmove in)", "frames",
        "frame_messages", R.iceoryx2_row),
)
BY_ID = {r.id: r for r in ROWS}

# What --quick caps each at (BenchXprocParams), per size where it differs: (32 B, 1 KiB).
# --quick: 1,000 round trips per row, the fewest whose p99 has 10 samples beyond it
# (stats.reported); 20 wake-ups (1 ms apart) report p50 only, as they say.
QUICK = {"rounds": 1, "messages": (2000, 1000), "c_messages": (50_000, 20_000),
         "batch_messages": (100_000, 20_000), "round_trips": (1000, 1000), "wakeups": (20, 20),
         "idle_ms": (500, 500)}
# The frame rows' messages a slice, by frame size: (bytes a slice, fewest, most); a
# default run sends about 1 GiB a slice, --quick about 32 MiB (four 16 MiB frames).
FRAME_SLICE = (1 << 30, 16, 50_000)
FRAME_QUICK = (32 << 20, 4, 2000)


def frame_count(size, rule=FRAME_SLICE):
    budget, lo, hi = rule
    return max(lo, min(hi, budget // size))


def key(row_id, size):
    """The slice contender of a row at a size ("c-shared-batch-32")."""
    return "%s-%d" % (row_id, size)


def split_key(k):
    row_id, _, size = k.rpartition("-")
    return row_id, int(size)


class BenchXprocResult:
    """What ``bench_xproc()`` returns: ``params``, ``summary`` (dict), ``slices``
    (placement-tagged, every round), ``samples`` ({contender: {"ns": array}}: the
    round-trip and wake-up samples of every round), ``status``, ``text()`` /
    ``str()`` and ``to_json(path)``."""

    def __init__(self, params):
        self.params, self.summary, self.slices, self.samples = params, {}, [], {}
        self.status, self.folder = None, None

    @property
    def complete(self):
        return _status.is_complete(self.status)

    def text(self, markdown=False):
        return report.text(self.params, self.summary, self.status, markdown=markdown)

    def __str__(self):
        return self.text()

    def __repr__(self):
        return "<BenchXprocResult %s>" % self.status

    def to_json(self, path):
        """Write params, status, summary and slices (not the samples) to ``path``."""
        body = to_jsonable({"experiment": "bench-xproc", "status": self.status,
                            "params": self.params, "summary": self.summary,
                            "slices": [s.as_dict() for s in self.slices]})
        with open(path, "w") as f:
            json.dump(body, f, indent=1, allow_nan=False)
            f.write("\n")
        return path


def _order(k):
    row_id, size = split_key(k)
    return ROWS.index(BY_ID[row_id]), size


def _picks(entry, row):
    """Whether an --only entry selects row: a row's id selects that row alone
    ("mp-queue", not "mp-queue-frames"); any other entry, the rows whose id or
    name holds it and the rows of that kind ("c-", "frames")."""
    if entry in BY_ID:
        return entry == row.id
    return entry in row.id or entry in row.label or entry == row.kind


def _selected(only, sizes, frame_sizes):
    """(contenders, reasons): the rows to run, each at each size (wake-ups and
    idle awaits at 32 B only, frame rows at the frame sizes), and the reasons of
    those that cannot: "not installed: ..." (the row's library is missing), "not
    measured: ..." (the row cannot run at that size)."""
    runs, reasons = {}, {}
    for row in ROWS:
        if only and not any(_picks(o, row) for o in only):
            continue
        made = row.make()
        for size in (frame_sizes if row.kind == "frames" else
                     sizes if row.kind not in ("wakeup", "idle") else sizes[:1]):
            why = made if isinstance(made, str) else row.refuse and row.refuse(size)
            if why:
                reasons[key(row.id, size)] = why
            else:
                runs[key(row.id, size)] = (row, size, made)
    return runs, reasons


COUNTS = ("messages", "c_messages", "batch_messages", "round_trips", "wakeups", "idle_ms")
_SLICES = "slices (one count, or one per size: 32-byte,1-KiB)"


def _per_size(counts):
    """A count field's value, one per size of SIZES (one count: every size)."""
    return tuple(counts) * len(SIZES) if len(counts) == 1 else tuple(counts)


def _quick(name):
    """--quick caps a count at QUICK's, size by size."""
    return lambda counts: tuple(min(c, q) for c, q in zip(_per_size(counts), QUICK[name]))


def _count(default, name, what):
    return param(default, what, kind="ints", lo=1, quick=_quick(name), metavar="N[,N]",
                 group=_SLICES)


_FRAMES = "frame rows (large messages, MB/s)"


def frame_counts(p):
    """{frame size: messages a slice} of the frame rows under BenchXprocParams ``p``."""
    if p.frame_messages is None:
        return {s: frame_count(s) for s in p.frame_sizes}
    counts = p.frame_messages * (len(p.frame_sizes) if len(p.frame_messages) == 1 else 1)
    return dict(zip(p.frame_sizes, counts))


@dataclass(frozen=True)
class BenchXprocParams(Params):
    """bench-xproc's parameters: one list for the CLI's flags, bench_xproc()'s
    keywords, the output folder's params and their checks (common/params.py)."""

    EXPERIMENT, COMMAND, FUNCTION = "bench-xproc", "bench-xproc", "bench_xproc"
    ALIASES = {"sizes": "msg_sizes"}     # --msg-size is every command's message size

    rounds: int = param(3, "interleaved rounds, every row once a round", lo=1,
                        quick=QUICK["rounds"])
    messages: Tuple[int, ...] = _count((100_000, 25_000), "messages", "messages a slice of "
                                       "the Python per-message rows and the peers")
    c_messages: Tuple[int, ...] = _count((4_000_000, 1_000_000), "c_messages", "messages a "
                                         "slice of the C per-message rows")
    batch_messages: Tuple[int, ...] = _count((16_000_000, 1_000_000), "batch_messages",
                                             "messages a slice of the batch rows, numpy and C")
    round_trips: Tuple[int, ...] = _count((5000, 5000), "round_trips", "round trips a slice")
    wakeups: Tuple[int, ...] = _count((200, 200), "wakeups", "futex wake-ups a slice, each "
                                      "after a %g ms gap (32-byte messages only)"
                                      % (C.WAKE_GAP_NS / 1e6))
    idle_ms: Tuple[int, ...] = _count((5000, 5000), "idle_ms", "ms an idle await is measured "
                                      "a slice, its process's CPU (32-byte messages only)")
    msg_sizes: Tuple[int, ...] = param(SIZES, "the message sizes to run, bytes, some of %s"
                                       % ",".join(map(str, SIZES)), kind="ints",
                                       lo=min(SIZES), hi=max(SIZES), metavar="SIZE[,SIZE]")
    frame_sizes: Tuple[int, ...] = param(
        FRAME_SIZES, "the frame rows' message sizes, bytes, each once: every slice of a frame "
        "row sends messages of one of these sizes (the other rows run at --msg-sizes)",
        kind="ints", lo=1, hi=FRAME_MAX, metavar="SIZE,...", group=_FRAMES)
    frame_messages: Tuple[int, ...] = param(
        None, "messages a slice of the frame rows: one count (every frame size) or one per "
        "frame size, in --frame-sizes' order (default: by frame size, %s a slice within "
        "[%d, %d] messages; --quick caps it at %s a slice within [%d, %d])"
        % (report.size_text(FRAME_SLICE[0]), FRAME_SLICE[1], FRAME_SLICE[2],
           report.size_text(FRAME_QUICK[0]), FRAME_QUICK[1], FRAME_QUICK[2]),
        kind="ints", lo=1, none_ok=True, metavar="N[,N...]", group=_FRAMES)
    only: Tuple[str, ...] = param(None, "only these rows: a row's id selects that row alone, "
                                  "other text the rows whose id or name holds it, or whose "
                                  "kind it is (%s), comma-separated (e.g. "
                                  "'c-,mp-queue', 'frames'; default: every row)"
                                  % ", ".join(KINDS),
                                  kind="names", none_ok=True, metavar="TEXT,...")
    split_ns: float = param(pl.DEFAULT_SPLIT_NS, "one-way probe threshold between 'near' and "
                            "'far' placements", lo=0.0, lo_open=True)
    writer_cpu: int = param(WRITER_CPU, "CPU of the writer (or echo, or sleeping) process",
                            kind="cpu", lo=0, group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the reader process", kind="cpu", lo=0,
                            group="CPUs")

    def check(self):
        if self.writer_cpu == self.reader_cpu:
            raise ValueError("writer_cpu and reader_cpu must differ (both are %d)"
                             % self.writer_cpu)
        for name in COUNTS:
            if len(getattr(self, name)) not in (1, len(SIZES)):
                raise ValueError("%s must be one count or one per size %s, got %r"
                                 % (name, SIZES, getattr(self, name)))
        if not set(self.msg_sizes) <= set(SIZES) or \
                len(set(self.msg_sizes)) < len(self.msg_sizes):
            raise ValueError("msg_sizes must be some of %s, each once, got %r"
                             % (SIZES, self.msg_sizes))
        if len(set(self.frame_sizes)) < len(self.frame_sizes):
            raise ValueError("frame_sizes must name each size once, got %r" % (self.frame_sizes,))
        if self.frame_messages is not None and \
                len(self.frame_messages) not in (1, len(self.frame_sizes)):
            raise ValueError("frame_messages must be one count or one per frame size %r, got %r"
                             % (self.frame_sizes, self.frame_messages))

    def _quick_changes(self):
        # --quick caps the frame rows' counts frame size by frame size, which a field's
        # own cap cannot say (it does not see frame_sizes): one count per frame size.
        changes = super()._quick_changes()
        counts = frame_counts(self)
        changes["frame_messages"] = tuple(min(counts[s], frame_count(s, FRAME_QUICK))
                                          for s in self.frame_sizes)
        return changes


def bench_xproc(params=None, *, out=None, overwrite=False, progress=True, _argv=None,
                **kwargs):
    """Run every row once a round for ``rounds`` rounds, interleaved; returns a
    BenchXprocResult.

    ``params``: a BenchXprocParams (None: the defaults), and/or its fields as
    keywords; ``BenchXprocParams.quick()`` is what --quick runs.
    messages, c_messages, batch_messages, round_trips, wakeups, idle_ms: per
    slice, one count or one per size of SIZES (the Python-level per-message rows
    and the peers, the C per-message rows, the batch rows -- numpy and C --, the
    round trips, the wake-up samples, the ms an idle await is measured).
    frame_sizes: the frame rows' message sizes; frame_messages: their messages a
    slice, one count or one per frame size (None: by size).  only: substrings of
    row ids or labels, or kinds ("frames").
    out: the output folder (a non-empty one is refused unless overwrite=True).
    The first Ctrl-C ends the run after the current slice; the folder and the
    result then hold the rounds done.  ``result.params`` is
    ``BenchXprocParams.to_json()``; the wake-up gap is in ``result.summary``."""
    if "argv" in kwargs:      # the command line for environment.json, not a parameter
        warnings.warn("argv is now called _argv", DeprecationWarning, stacklevel=2)
        _argv = kwargs.pop("argv")
    p = BenchXprocParams.of(params, **kwargs)
    writer_cpu, reader_cpu, rounds = p.writer_cpu, p.reader_cpu, p.rounds
    sizes = tuple(s for s in SIZES if s in p.msg_sizes)
    frame_sizes = tuple(sorted(p.frame_sizes))
    counts = {name: dict(zip(SIZES, _per_size(getattr(p, name)))) for name in COUNTS}
    counts["frame_messages"] = frame_counts(p)
    only = list(p.only or ())
    runs, reasons = _selected(only, sizes, frame_sizes)
    if not runs:
        raise ValueError("only=%r selects no row that can run" % (only,))
    selected = {k: split_key(k) + (BY_ID[split_key(k)[0]].label, BY_ID[split_key(k)[0]].kind)
                for k in sorted(list(runs) + list(reasons), key=_order)}
    params = p.to_json()
    res = BenchXprocResult(params)
    samples = {}

    def record(folder, status, final):
        res.summary = report.summarize(res.slices, samples, reasons, selected, sizes,
                                       frame_sizes)
        res.summary["rounds_done"] = session.done
        res.summary["wake_gap_ns"] = C.WAKE_GAP_NS
        res.status = status
        res.samples = {k: {"ns": np.concatenate(v)} for k, v in samples.items() if v}
        if folder is not None:
            folder.save_json("slices.json", [s.as_dict() for s in res.slices])
            for name, arrays in res.samples.items():
                folder.save_samples(name, **arrays)
            folder.save_text("table.md", report.text(params, res.summary, status,
                                                     markdown=True) + "\n")
            res.folder = str(folder.path)
        return res.summary

    from .bench import probe_one_way_ns
    old = os.sched_getaffinity(0)
    R.pin(reader_cpu)

    def run_slice(k):
        row, size, run = runs[k]
        value, extra, arr = run(size, counts[row.count][size], writer_cpu)
        if arr is not None:
            samples.setdefault(k, []).append(np.asarray(arr, np.int64))
        return value, dict(extra, kind=row.kind, size=size)

    try:
        with Session("bench-xproc", params, rounds, "rounds", record=record, out=out,
                     overwrite=overwrite, argv=_argv, progress=progress,
                     bar_total=rounds * len(runs), bar_unit="slices",
                     pinning={"writer_cpu": writer_cpu, "reader_cpu": reader_cpu}) as session:
            for r in range(rounds):
                got = pl.interleave(list(runs), 1, run_slice,
                                    lambda: probe_one_way_ns(writer_cpu, reader_cpu), p.split_ns,
                                    should_stop=lambda: session.stopping,
                                    on_slice=lambda s: session.advance(1, s.contender),
                                    first_round=r)
                res.slices.extend(got)
                if len(got) < len(runs):
                    break
                session.checkpoint(r + 1)
    finally:
        os.sched_setaffinity(0, old)
    return res
