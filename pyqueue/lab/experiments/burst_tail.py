"""The burst-tail study (DESIGN §6.1): business latency after a 1 MiB send.

    import pyqueue.lab as lab
    res = lab.burst_tail(windows=200)       # the study's defaults, fewer windows
    print(res.table())
    lab.burst_tail(lab.BurstTailParams.quick())   # what --quick runs

Its parameters are one list, BurstTailParams, from which the CLI's flags, this
function's keywords, the output folder's JSON params and their checks all come.

Every class (a retry strategy of pyqueue, or an open-source queue) runs the same
C writer loop, business function and verifying consumer callback through one
adapter (csrc/lab/burst_tail.c); a peer's ``<peer>-twin`` class runs the same
send loop and consumer compiled in the peer's own translation unit, its library's
calls inlined (csrc/adapters/burst_twin_pvt.h), and the report uses whichever of the two
is faster for each peer.  Classes run interleaved in slices of a few dozen windows,
so a drift of the host (it moves the virtual CPUs) hits every class alike; each
class keeps its own queue, backlog and consumer state across slices, and its
consumer thread runs only during its own slices.  No C call runs longer than
about SLICE_NS (plus one window), so Ctrl-C is seen within that (DESIGN §6.1).
"""
from dataclasses import dataclass, field
from typing import Tuple

import numpy as np

from ..runtime import clock as _clock
from pyqueue import cstruct
from .. import peers as _peers
from pyqueue.errors import check
from .._lab import ffi, lib
from pyqueue.config import KINDS as _QUEUE_FIELDS, QueueConfig
from ..common import status as _status
from ..common.params import READER_CPU, WRITER_CPU, Params, param
from ..common.session import Session
from ..common.frames import ToPandas
from ..reports import burst_tail as report

# pyqueue classes: "yield<N>" (retry_yield_every=N) with an optional suffix that
# overrides how spill (tier-2) blocks are written: "-nt" streaming stores, every
# spill block whatever the backlog (nontemporal_backlog_kib=0), "-cached" ordinary
# stores (the original study's plain write).  Without a suffix the configuration's
# spill_nontemporal and nontemporal_backlog_kib are used.
_SPILL_SUFFIX = {"": None, "-nt": True, "-cached": False}
# The study's classes (DESIGN §6.1): three retry strategies, every peer, no send.
STRATEGIES = ("yield1024", "yield0", "yield65536")
# The no-burst baseline: the same windows and consumer (polling an empty pyqueue
# queue), no send, so every table shows what the burst itself costs.
NONE = "none"
# A no-send class that instead idles (spins on the clock, no stores) for G µs
# where the send would be: "none+gap=900".  It tells the send's stores from the
# mere time between the warm-up and the measured queries (interrupts, the host).
GAP = NONE + "+gap="
# The same idle class with its gap matched to pyqueue's own send: the median
# send of the reference class (DEFAULT_CLASS, else the first pyqueue class that
# sends), measured in the same run before the rounds (gap_windows windows), so
# that every table tells "the writer was away" from "the send disturbed the data".
GAP_AUTO = NONE + "+gap"
REFERENCE_CLASS = "yield1024"
# A peer's class through its inline twin instead of the adapter's table.
TWIN = "-twin"
DEFAULT_CLASSES = (STRATEGIES + tuple(n for p in _peers.PEERS for n in (p, p + TWIN)) +
                   (NONE, GAP_AUTO))
# The longest a C call of the study runs before it returns to Python (then a
# first Ctrl-C stops the run, a second aborts it): fill and drain stop after it,
# windows after the window during which it passed.
SLICE_NS = 100_000_000
DRAIN_TIMEOUT_NS = 30_000_000_000
# The study's queue: the queue's defaults but for the seed's publish policy, 'max'
# (C's default; Python's is 'each'), the touch after write, which
# the original study kept (the queue's own default is off: DESIGN §3.7), and the
# pool on huge pages, the one lever that lowered the first group's p50 and p99
# in every interleaved run (DESIGN §6.1; the queue's own default stays 4 KiB
# pages, which a queue touches only as it uses them).
STUDY_QUEUE = QueueConfig(publish="max", touch_after_write=True, hugepages=True, max_message=0)
RECORDS_U64 = ("send_ticks", "wait_ticks", "topup", "backlog", "retries", "yields", "faults")
RECORDS_CPU = ("cpu_start", "cpu_warm", "cpu_send", "cpu_end")
PMU_ALL = (1 << 8) - 1
TOTALS = cstruct.fields("pyq_burst_totals_t", ffi)   # the keys of _Class.totals()


@dataclass
class BurstTailResult(ToPandas):
    """What burst_tail() returns: ``summary`` (dict, JSON-ready), ``samples``
    ({class: {name: ndarray}}, raw and unfiltered: group_ns has shape
    (rounds, windows, groups)), ``params`` and ``status``."""
    params: dict
    summary: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)
    status: str = _status.COMPLETE
    out: str = None

    def table(self, markdown=False):
        return report.table(self.summary, self.params, markdown=markdown)

    def __str__(self):
        return self.table()

    def to_json(self, path):
        import json
        from ..common.output import to_jsonable
        with open(path, "w") as f:
            json.dump(to_jsonable({"status": self.status, "params": self.params,
                                   "summary": self.summary}), f, indent=1)


def load(path):
    """A BurstTailResult from an output folder written with ``out=`` (checksums
    verified; a partial folder loads too, with its status)."""
    from ..common.output import load as _load
    d = _load(path, samples=True, check=True)
    return BurstTailResult(d.params, d.results or {}, d.samples, d.status, str(path))


class _Class:
    """One class: its C state (pyq_burst_t) and its per-round records."""

    def __init__(self, name, cfg, aparams, adapter, rounds, windows, groups, pmu_windows):
        self.name = name
        out = ffi.new("pyq_burst_t **")
        check(lib.pyq_burst_open(adapter, aparams, cfg, out), "open class %s" % name)
        self.ptr = out[0]
        self.groups = groups
        self.rec = {"group_ticks": np.zeros((rounds, windows, groups), np.uint64)}
        for k in RECORDS_U64:
            self.rec[k] = np.zeros((rounds, windows), np.uint64)
        for k in RECORDS_CPU:
            self.rec[k] = np.full((rounds, windows), -1, np.int32)
        self.pmu = np.zeros((pmu_windows, 8), np.uint64) if pmu_windows else None
        for arr in list(self.rec.values()) + [self.pmu]:
            if arr is not None:     # written now, so the C loop's record stores never fault
                arr.fill(arr.flat[0] if arr.size else 0)
        self.done = [0] * rounds           # windows finished per round
        self.round_totals = []             # pyq_burst_totals after each round
        self.fill_totals = None

    def totals(self):
        t = ffi.new("pyq_burst_totals_t *")
        lib.pyq_burst_totals(self.ptr, t)
        return cstruct.as_dict(t, TOTALS)

    def _records(self, arrays, start, n, pmu=None):
        r = ffi.new("pyq_burst_records_t *")
        keep = []

        def ptr(ctype, arr):
            keep.append(arr)
            return ffi.cast(ctype, ffi.from_buffer(arr, require_writable=True))

        r.group_ticks = ptr("uint64_t *", arrays["group_ticks"][start:start + n])
        for k in RECORDS_U64:
            setattr(r, k, ptr("uint64_t *", arrays[k][start:start + n]))
        for k in RECORDS_CPU:
            setattr(r, k, ptr("int32_t *", arrays[k][start:start + n]))
        r.pmu = ptr("uint64_t *", pmu) if pmu is not None else ffi.NULL
        return r, keep

    def run(self, rnd, n, stopping):
        """Up to n more windows of round rnd, in C calls of at most SLICE_NS (the
        C loop releases the GIL); stops early once ``stopping()``.  Returns the
        windows run."""
        arrays = {k: v[rnd] for k, v in self.rec.items()}
        ran = 0
        while ran < n:
            r, keep = self._records(arrays, self.done[rnd], n - ran)
            k = self.check(lib.pyq_burst_windows(self.ptr, n - ran, r, SLICE_NS), "windows")
            self.done[rnd] += k
            ran += k
            if stopping():
                break
        return ran

    def run_pmu(self, n):
        return self.run_scratch(n, pmu=True)

    def run_scratch(self, n, pmu=False, stopping=lambda: False):
        """n windows outside the rounds (their records in arrays of their own,
        returned, never in the tables): the PMU pass, the gap's measurement."""
        scratch = {"group_ticks": np.zeros((n, self.groups), np.uint64)}
        for k in RECORDS_U64:
            scratch[k] = np.zeros(n, np.uint64)
        for k in RECORDS_CPU:
            scratch[k] = np.zeros(n, np.int32)
        done = 0
        while done < n and not stopping():
            part = {k: v[done:] for k, v in scratch.items()}
            r, keep = self._records(part, 0, n - done, self.pmu[done:] if pmu else None)
            done += self.check(lib.pyq_burst_windows(self.ptr, n - done, r, SLICE_NS),
                               "PMU windows" if pmu else "windows")
        return {k: v[:done] for k, v in scratch.items()}

    def fill(self, stopping):
        """Bring the backlog to the target, in slices; False if stopped first."""
        while self.check(lib.pyq_burst_fill(self.ptr, SLICE_NS), "fill") == 1:
            if stopping():
                return False
        return True

    def drain(self):
        """Let the consumer verify everything sent (at most DRAIN_TIMEOUT_NS in all)."""
        for _ in range(DRAIN_TIMEOUT_NS // SLICE_NS):
            rc = lib.pyq_burst_drain(self.ptr, SLICE_NS)
            if rc != lib.PYQ_EAGAIN:
                return self.check(rc, "drain")
        return self.check(rc, "drain")

    def check(self, rc, what):
        if rc < 0:  # the hint reads the totals: only once the loop has failed
            check(rc, "class %s %s" % (self.name, what), {
                lib.PYQ_EBADMSG: "class %s: message %d failed verification (lost, reordered "
                                 "or corrupted)" % (self.name, self.totals()["error_seq"]),
                lib.PYQ_EINVAL: "class %s: %s refused (a CPU is not available?)"
                                % (self.name, what)})
        return rc

    def close(self):
        if self.ptr is not None:
            lib.pyq_burst_close(self.ptr)
            self.ptr = None


def _pyqueue_class(name):
    """{QueueConfig field: value} of a yield<N>[-nt|-cached][+lever...] name, or None.

    A lever is ``+field`` (True) or ``+field=value`` (an integer; 0/1 for
    switches) of QueueConfig, so one run can interleave A/B classes of the same
    strategy: ``yield1024+hugepages``, ``yield1024+touch_after_write=0``,
    ``yield1024+hot_blocks=16``.  QueueConfig checks the values."""
    if not name.startswith("yield"):
        return None
    rest, *levers = name[5:].split("+")
    for suffix, nt in _SPILL_SUFFIX.items():
        if suffix and rest.endswith(suffix):
            rest = rest[:-len(suffix)]
            break
    else:
        nt = None
    if not rest.isdigit():
        return None
    out = {"retry_yield_every": int(rest)}
    if nt is not None:
        out["spill_nontemporal"] = nt
        if nt:
            out["nontemporal_backlog_kib"] = 0
    for lever in levers:
        field, eq, value = lever.partition("=")
        kind = _QUEUE_FIELDS.get(field)
        if kind is None or field == "retry_yield_every":
            raise ValueError("class %r: %r is not a queue setting a class may change (one of %s)"
                             % (name, field, ", ".join(f for f in _QUEUE_FIELDS
                                                       if f != "retry_yield_every")))
        if not eq:
            out[field] = True
        elif kind == "publish":
            out[field] = value                      # publish=each, publish=bytes:N
        elif value.isdigit():
            out[field] = bool(int(value)) if kind == "flag" and value in "01" else int(value)
        else:
            raise ValueError("class %r: %s=%r is not an integer" % (name, field, value))
    return out


def _no_send(name):
    """The idle gap in µs of a class that sends nothing (0 for none, G for
    none+gap=G, AUTO for none+gap: set before the rounds), or None for a class
    that sends."""
    if name == NONE:
        return 0
    if name == GAP_AUTO:
        return AUTO
    if name.startswith(GAP) and name[len(GAP):].isdigit() and 0 < int(name[len(GAP):]) <= 10**6:
        return int(name[len(GAP):])
    if name.startswith(GAP):
        raise ValueError("class %r: the gap is a whole number of µs in [1, 1000000]" % name)
    return None


AUTO = -1   # _no_send's gap of GAP_AUTO: matched to the reference class's send


def gap_reference(classes):
    """The class whose median send none+gap's gap is matched to: REFERENCE_CLASS
    when it runs, else the first pyqueue class that sends; None when no class
    sends through pyqueue."""
    sends = [n for n in classes if _no_send(n) is None and _pyqueue_class(n) is not None]
    return REFERENCE_CLASS if REFERENCE_CLASS in sends else (sends[0] if sends else None)


def _resolve(classes, config):
    """[(name, adapter, its QueueConfig)], and {name: why} of the peers that are
    missing.  A yieldN class is ``config`` with retry_yield_every=N (checked here,
    once, with the rest of its configuration); a peer gets ``config`` as it is."""
    avail = _peers.available()
    run, missing = [], {}
    if GAP_AUTO in classes and gap_reference(classes) is None:
        raise ValueError("class %r is matched to a pyqueue class's send in the same run: add "
                         "one (e.g. %s), or give the gap (%s<µs>)" % (GAP_AUTO, REFERENCE_CLASS,
                                                                      GAP))
    for name in classes:
        pq_class = {} if _no_send(name) is not None else _pyqueue_class(name)
        if pq_class is not None:
            try:
                run.append((name, "pyqueue", config.replace(**pq_class)))
            except ValueError as e:
                raise type(e)("class %r: %s" % (name, e)) from None
        elif name in avail or name.endswith(TWIN) and name.removesuffix(TWIN) in _peers.PEERS:
            peer = name.removesuffix(TWIN)
            if avail[peer] == "built":
                run.append((name, peer, config))
            else:
                missing[name] = "%s (%s)" % (avail[peer], _peers.install_hint())
        else:
            raise ValueError("unknown class %r: use yieldN[-nt|-cached] (a pyqueue retry "
                             "strategy), %s (no send; %sG: idle G µs instead; %s: as long as "
                             "pyqueue's send) or one of %s (a peer; with %s: through its inline "
                             "twin)" % (name, NONE, GAP, GAP_AUTO, ", ".join(sorted(avail)), TWIN))
    return run, missing


def _classes_help():
    others = [n for n in _peers.BUILTIN if n != "pyqueue"] + list(_peers.PEERS)
    return ("comma-separated: yieldN (pyqueue retrying with sched_yield every N), "
            "optionally with levers, yieldN+field[=value] of the queue settings "
            "(e.g. yield1024+hugepages=0, yield1024+touch_after_write=0), "
            "none (the same windows with no send; none+gap=G: G µs idle "
            "instead; none+gap: idle as long as yield1024's median send, measured before "
            "the rounds) and peers %s, each also as <peer>-twin (its send loop and consumer "
            "with the library's calls inlined)" % ", ".join(others))


@dataclass(frozen=True)
class BurstTailParams(Params):
    """The burst-tail study's parameters; every default is the original study's
    (DESIGN §6.1) but the CPUs, pinned 0 and 1 from every door."""

    EXPERIMENT, COMMAND, FUNCTION = "burst_tail", "burst-tail", "burst_tail"
    ALIASES = {"consumer_cpu": "reader_cpu", "peer_retry_yield_every": "retry_yield_every",
               "config": "queue"}
    # The peers' retry cadence is the queue's retry_yield_every; yieldN sets its own.
    QUEUE_CLI_ALIASES = {"retry_yield_every": ("--peer-retry-yield-every",)}

    classes: Tuple[str, ...] = param(DEFAULT_CLASSES, _classes_help, kind="names")
    rounds: int = param(3, "rounds over every class", lo=1, hi=1000)
    # --quick: 250 windows of 4 groups = 1,000 groups per round, the fewest on which
    # p99 is reported (10 groups beyond it); p999 needs the full run's 10,000.
    windows: int = param(2500, "windows per class per round", lo=1, hi=10**7, quick=250)
    msg_size: int = param(32, "bytes per message", lo=8, hi=lib.PYQ_BURST_MAX_MSG)
    send_bytes: int = param(1 << 20, "bytes of the burst sent at the start of each window "
                            "(a multiple of msg_size)", lo=8, hi=1 << 34)
    consumer_loop: bool = param(True, "the consumer's 64-iteration loop per message (off: "
                                "it only verifies)", cli_aliases=(("--verify-only", False),))
    warmup_queries: int = param(512, "untimed business queries before each window's timed "
                                "groups", lo=0, hi=10**7)
    groups: int = param(4, "timed query groups per window", lo=1, hi=lib.PYQ_BURST_MAX_GROUPS)
    group_queries: int = param(16, "queries per timed group", lo=1, hi=10**6)
    data_kib: int = param(48, "business data in KiB", lo=4, hi=1 << 20)
    backlog_target: float = param(0.8, "backlog aimed at, as a fraction of the queue's "
                                  "capacity in messages", lo=0.0, hi=0.95)
    slice_windows: int = param(50, "windows per interleaved slice (how soon Ctrl-C is "
                               "honoured)", lo=1, hi=10**6)
    pretouch: bool = param(True, "write each queue full once before the study, then let the "
                           "consumer bring it down to the target, so no send meets an untouched "
                           "page (off: fill it only to the target)")
    pmu: bool = param(False, "add a pass with counters around the queries")
    pmu_windows: int = param(500, "windows per class of the pmu pass", lo=0, hi=10**7)
    gap_windows: int = param(200, "windows of the reference class (yield1024, else the first "
                             "pyqueue class that sends) run before the rounds, the second half "
                             "measured: its median send is the idle gap of class none+gap (never "
                             "in the tables)",
                             lo=1, hi=10**6, quick=20)
    writer_cpu: int = param(WRITER_CPU, "CPU of the writer (-1: not pinned)", kind="cpu",
                            group="CPUs")
    reader_cpu: int = param(READER_CPU, "CPU of the consumer (-1: not pinned)", kind="cpu",
                            cli_aliases=("--consumer-cpu",), group="CPUs")
    seed: int = param(0x5EED, "seed of the business data and queries, decimal or 0x hex",
                      kind="seed", lo=0, hi=2**64 - 1)
    queue: QueueConfig = param(STUDY_QUEUE, "every class's queue (a yieldN class sets its "
                               "retry_yield_every; the peers retry at that cadence too)",
                               quick={"spill_blocks": 16384})

    def check(self):
        if self.send_bytes % self.msg_size:
            raise ValueError("send_bytes (%d) must be a multiple of msg_size (%d)"
                             % (self.send_bytes, self.msg_size))


def burst_tail(params=None, *, out=None, overwrite=False, progress=True, _fault_seq=0,
               **kwargs):
    """Run the study: ``params`` (a BurstTailParams, None for the defaults) and/or its
    fields as keywords (a QueueConfig field's own fields too: ``hugepages=False``).

    classes: pyqueue strategies ``yieldN`` (retry_yield_every=N), ``none`` (the
    same windows with no send: the baseline every table compares against) and
    adapter names (peers.PEERS, and mutex).  A peer that is not installed is reported in
    ``summary['not_installed']`` and skipped.  The queue of every class is ``queue``
    (default: STUDY_QUEUE, the queue defaults with the original study's touch after
    write and the pool on huge pages); its retry_yield_every is the cadence of the
    peers' retries, which a yieldN class replaces by N.  backlog_target is a fraction
    of each queue's capacity in messages.  writer_cpu/reader_cpu -1 leave a thread
    unpinned (as the original study, whose platform could not pin).  pretouch
    (default) writes each class's queue full once before the study and lets its
    consumer bring the backlog down to the target, so no window's send meets a
    page never touched (the page faults of each window are recorded).  pmu=True adds a
    separate pass of pmu_windows windows per class with counters read around the
    measured queries; the latency tables never use those windows.  ``out``: the
    output folder; ``progress``: a tqdm bar.
    """
    p = BurstTailParams.of(params, **kwargs)
    params = p.to_json()
    run, missing = _resolve(p.classes, p.queue)
    cc = _clock.calibrate()
    if not cc.available:
        raise RuntimeError("burst_tail needs a cycle counter; this platform has none")
    # What the run measured alongside its parameters: the reports' and loops' context.
    ctx = dict(params, ticks_per_ns=cc.ticks_per_ns, clock=cc.name,
               _fault_seq=int(_fault_seq), pmu_windows=p.pmu_windows if p.pmu else 0)
    rounds, windows, pretouch = p.rounds, p.windows, p.pretouch

    res = BurstTailResult(params, out=out)
    state = []

    def record(folder, status, final):
        summary = report.summarize(state, ctx, missing)
        if "pmu" in res.summary:
            summary["pmu"] = res.summary["pmu"]
        if final:
            res.summary, res.status = summary, status
            res.samples = {c.name: _samples(c, ctx) for c in state}
        if folder is not None:
            for c in state:
                folder.save_samples(c.name, **_samples(c, ctx))
            folder.save_text("table.txt", report.table(summary, params))
        return summary

    try:
        with Session("burst_tail", params, rounds, "rounds", record=record,
                     out=out or None, overwrite=overwrite, progress=progress,
                     desc="burst-tail", bar_total=rounds * windows * len(run), bar_unit="windows",
                     pinning={"writer_cpu": p.writer_cpu, "reader_cpu": p.reader_cpu}) as s:
            for name, adapter, qcfg in run:
                state.append(_open_class(name, adapter, qcfg, ctx))
            for c in state:
                if s.stopping:
                    break
                s.advance(0, "filling %s%s to %.0f%%" % (c.name, " (full, then down)" if pretouch
                                                          else "", p.backlog_target * 100))
                if c.fill(lambda: s.stopping):
                    c.fill_totals = c.totals()
            if any(c.name == GAP_AUTO for c in state) and not s.stopping:
                s.advance(0, "measuring the send of %s" % gap_reference(p.classes))
                ctx["gap_match"] = _match_gap(state, p.classes, p.gap_windows, ctx,
                                              lambda: s.stopping)
            follow = _gap_follower(state, p.classes, ctx)
            for rnd in range(rounds):
                _run_round(state, rnd, windows, p.slice_windows, s, follow)
                for c in state:
                    c.round_totals.append(c.totals())
                s.checkpoint(sum(1 for r in range(rounds)
                                 if state and all(c.done[r] == windows for c in state)))
                if s.stopping:
                    break
            if p.pmu and not s.stopping:
                res.summary["pmu"] = _pmu_pass(state, ctx, s)
            s.advance(0, "draining")
            for c in state:
                c.drain()
    finally:
        for c in state:
            c.close()
    return res


def _open_class(name, adapter, qcfg, p):
    a = _peers.get(adapter)
    ap = _peers.adapter_params(p["msg_size"], qcfg)   # the one way msg_size reaches C
    cfg = ffi.new("pyq_burst_config_t *")
    lib.pyq_burst_config_init(cfg)
    gap_us = _no_send(name)
    cfg.send_messages = 0 if gap_us is not None else p["send_bytes"] // p["msg_size"]
    cfg.gap_ns = 1000 * gap_us if gap_us and gap_us > 0 else 0   # AUTO: set before the rounds
    cfg.warmup_queries = p["warmup_queries"]
    cfg.groups = p["groups"]
    cfg.group_queries = p["group_queries"]
    cfg.consumer_loop = 1 if p["consumer_loop"] else 0
    cfg.retry_yield_every = qcfg.retry_yield_every   # the peers' retries too: one value
    cfg.data_bytes = p["data_kib"] * 1024
    cfg.writer_cpu = p["writer_cpu"]
    cfg.consumer_cpu = p["reader_cpu"]
    cfg.seed = p["seed"]
    cfg.fault_seq = p.get("_fault_seq", 0)
    # The baseline never writes its queue in a window: nothing to pretouch.
    cfg.pretouch = 1 if p["pretouch"] and gap_us is None else 0
    cfg.twin = 1 if name.endswith(TWIN) and adapter != "pyqueue" else 0
    # The same seed for every class: identical business work, so checksums match.
    c = _Class(name, cfg, ap, a, p["rounds"], p["windows"], p["groups"],
               p["pmu_windows"] if p["pmu"] else 0)
    cap = c.totals()["capacity"]
    # A fraction of this queue's own capacity; the baseline keeps its queue empty.
    target = 0 if gap_us is not None else int(cap * p["backlog_target"])
    lib.pyq_burst_set_backlog_target(c.ptr, target)
    c.capacity, c.target, c.adapter, c.retry_yield_every = cap, target, adapter, cfg.retry_yield_every
    c.send_messages = cfg.send_messages
    c.spill_nontemporal = qcfg.spill_nontemporal if adapter == "pyqueue" else None
    c.queue = qcfg.as_dict() if adapter == "pyqueue" else None   # levers included
    c.driver = ffi.string(lib.pyq_burst_driver(c.ptr)).decode()
    c.gap_ns = int(cfg.gap_ns) if gap_us is not None else None   # none+gap's: _match_gap
    return c


def _match_gap(state, classes, windows, ctx, stopping):
    """Measure the reference class's send over ``windows`` windows (outside the
    rounds; the second half counted) and give class none+gap its median as the
    idle gap.  Returns what
    the summary keeps: the class, the windows, the send's median and p99 (ns),
    and the gap set (ns)."""
    ref = gap_reference(classes)
    c = next(c for c in state if c.name == ref)
    # The first half warms the class after its fill (the rounds' windows follow
    # other windows of it); the second half is measured.
    send = c.run_scratch(windows, stopping=stopping)["send_ticks"].astype(np.float64)
    # The rounds' business work starts from the seed, as every other class's.
    lib.pyq_burst_restart_business(c.ptr)
    send_ns = send[len(send) // 2:] / ctx["ticks_per_ns"]
    median = float(np.median(send_ns)) if send_ns.size else None
    gap_ns = int(round(median)) if median is not None else 0
    for g in state:
        if g.name == GAP_AUTO:
            g.check(lib.pyq_burst_set_gap(g.ptr, gap_ns), "set gap")
            g.gap_ns = gap_ns
    return {"class": ref, "windows": int(send_ns.size), "send_ns_median": median,
            "send_ns_p99": report.quantile_or_none(send_ns, 99.0), "gap_ns": gap_ns,
            "follow_windows": FOLLOW_WINDOWS}


# none+gap's gap follows its reference class: before each of its slices, the
# median send of the reference's last FOLLOW_WINDOWS windows (this round's, else
# the last round's), so that a host state that slows the sends for a while
# (docs/BENCHMARKS.md, "Tail by send pace") lengthens the gap with them.
FOLLOW_WINDOWS = 50


def _gap_follower(state, classes, ctx):
    """The function that resets none+gap's gap before its slices (None without
    the class): (gap class, round) -> None."""
    ref = gap_reference(classes) if GAP_AUTO in classes else None
    if ref is None:
        return None
    rc = next(c for c in state if c.name == ref)

    def follow(g, rnd):
        for r in (rnd, rnd - 1):
            n = rc.done[r] if r >= 0 else 0
            if n >= FOLLOW_WINDOWS:
                sends = rc.rec["send_ticks"][r, n - FOLLOW_WINDOWS:n].astype(np.float64)
                gap_ns = int(round(float(np.median(sends)) / ctx["ticks_per_ns"]))
                g.check(lib.pyq_burst_set_gap(g.ptr, gap_ns), "set gap")
                g.gap_ns = gap_ns
                return
    return follow


def _run_round(state, rnd, windows, slice_windows, s, follow=None):
    """Interleave the classes in slices, rotating the order each pass; before
    each slice of none+gap, follow() sets its gap."""
    k = 0
    while not s.stopping and any(c.done[rnd] < windows for c in state):
        order = state[k % len(state):] + state[:k % len(state)]
        k += 1
        for c in order:
            n = min(slice_windows, windows - c.done[rnd])
            if n <= 0 or s.stopping:
                continue
            if follow is not None and c.name == GAP_AUTO:
                follow(c, rnd)
            s.advance(c.run(rnd, n, lambda: s.stopping), "round %d %s" % (rnd + 1, c.name))


def _pmu_pass(state, params, s):
    """A separate pass with counters read around the measured queries only."""
    names = [ffi.string(lib.pyq_perf_name(i)).decode() for i in range(8)]
    out = {"windows": params["pmu_windows"], "counters": names, "classes": {}}
    for c in state:
        s.advance(0, "PMU pass %s" % c.name)
        lib.pyq_burst_set_pmu(c.ptr, PMU_ALL)
        try:
            scratch = c.run_pmu(params["pmu_windows"])
        finally:
            lib.pyq_burst_set_pmu(c.ptr, 0)
        window_ns = scratch["group_ticks"].sum(axis=1) / params["ticks_per_ns"]
        t = c.totals()
        out["classes"][c.name] = report.pmu_summary(c.pmu, window_ns, names, t["perf_opened"],
                                                    t["perf_read_ns"])
    return out


def _samples(c, params):
    s = {"group_ns": (c.rec["group_ticks"].astype(np.float64) / params["ticks_per_ns"]
                      / params["group_queries"])}
    for k, v in c.rec.items():
        s[k] = v
    s["windows_done"] = np.array(c.done, np.int64)
    if c.pmu is not None:
        s["pmu"] = c.pmu
    return s
