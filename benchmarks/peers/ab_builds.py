"""A/B of two builds of pyqueue's extension, side by side in one run.

    python benchmarks/peers/ab_builds.py BASE.so NEW.so [--rounds 20]
                                         [--mode throughput|episodes|roundtrip] [--messages N]
                                         [--new-cfg FIELD=VALUE ...] [--peer NAME ...]
                                         [--hot N,N,...] [--gap-ns NS] [--cfg FIELD=VALUE ...]

Copy pyqueue/lab/_lab.abi3.so (the bench drivers over their copy of the core) aside before a change (BASE.so), rebuild in place
(NEW.so = pyqueue/lab/_lab.abi3.so), then run this from the repository root.  Both
builds are loaded into one process and their contenders run interleaved, slice
by slice, with the order rotated each round and a ping-pong probe before and
after each round (as `python -m pyqueue bench` does), through the same C
drivers (csrc/bench/bench_adapter.c).  Rounds whose two probes disagree on the
placement are printed but left out of the medians.  This is how the "what moved
the numbers" entries of docs/BENCHMARKS.md were measured.

throughput: 32-byte messages through the adapter driver, writer CPU 0, reader
CPU 1, for the default tiers (4 hot + 252 spill) and all-hot (256 hot), each per
message and with bursts of 32, the yardstick ring, plus rte_ring single and burst-32
when built.  --gap-ns paces every writer to one message per NS on a schedule
(pyq_bench_adapter_paced, the bench's chasing pass).
--hot N,N,... sets the hot tiers of pyqueue's rows (hot + spill = 256 blocks, of
4 KiB unless --cfg block_size says otherwise; default 4,256: rows "default" and
"stream", any other N "hotN"): a lever whose effect depends on the tier's size.
episodes:   the same contenders in the streaming regime the bench reports (DESIGN
§8.4, pyq_bench_adapter_stream: the reader held while the writer gets half the
queue's capacity ahead, then both flat out), the figure being the writer's rate
inside the episodes (the median over episodes, regime.classify_episodes).
--peer NAME adds a peer's per-message row through each build's driver (base_NAME,
new_NAME): how a change to csrc/bench/bench_adapter.c moves a peer's row.
--new-cfg sets pyq_config_t fields of the "new" side's queues only: a configuration
lever (e.g. prefetch=0) A/B'd within one build, passing the same .so twice.
--cfg sets them on both sides' queues (e.g. block_size=65536: the tiers are then
256 blocks of that size), before --new-cfg.
roundtrip:  p50 and p99.9 of one 32-byte message there and back, publish each
and max + scan_current, beside the two-line ping-pong floor.
"""
import argparse
import importlib.util
import os

import numpy as np

from pyqueue.lab.common import regime
from pyqueue.lab.common import twins

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER_DIR = os.path.join(ROOT, "pyqueue", "lab", "peers").encode()
SPLIT_NS = 100.0


def load(tag, path):
    spec = importlib.util.spec_from_file_location("ab_%s._lab" % tag, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ffi, mod.lib


def queue(ffi, lib, adapter, hot=4, **cfg):
    """An adapter handle over a 1 MiB budget (pyqueue: hot + spill = 256 blocks;
    the yardstick: the bench's 16,384 slots of 32 bytes)."""
    out = ffi.new("const pyq_adapter_t **")
    if adapter == "yardstick":
        out[0] = lib.pyq_bench_yardstick()
    elif lib.pyq_adapter_get(adapter.encode(), PEER_DIR, out) != 0:
        return None
    p = ffi.new("pyq_adapter_params_t *")
    lib.pyq_adapter_params_init(p)
    p.msg_size = 32
    p.capacity_bytes = twins.YARDSTICK_SLOTS * 32 if adapter == "yardstick" else 4096 * 256
    p.queue.hot_blocks, p.queue.spill_blocks = hot, 256 - hot
    for k, v in cfg.items():
        setattr(p.queue, k, v)
    h = ffi.new("void **")
    if out[0].create(p, h) != 0:
        raise RuntimeError("cannot create %s" % adapter)
    return out[0], h[0]


def tier_name(hot):
    return {4: "default", 256: "stream"}.get(hot, "hot%d" % hot)


def contenders(builds, mode, new_cfg, peers=(), hots=(4, 256), both_cfg=None):
    rows = {}
    for tag, (ffi, lib) in builds.items():
        extra = dict(both_cfg or {}, **(new_cfg if tag == "new" else {}))
        if mode != "roundtrip":
            for peer in peers:  # the same peer library through each build's driver
                q = queue(ffi, lib, peer)
                if q is None:
                    raise SystemExit("ab_builds: peer %r is not built here" % peer)
                rows["%s_%s" % (tag, peer)] = (ffi, lib, 0, q)
            for hot in hots:
                for burst in (0, 32):
                    name = tier_name(hot) + ("32" if burst else "")
                    rows["%s_%s" % (tag, name)] = (ffi, lib, burst,
                                                   queue(ffi, lib, "pyqueue", hot, **extra))
        else:
            for name, cfg in (("each", dict(publish=lib.PYQ_PUBLISH_EACH)),
                              ("scan", dict(publish=lib.PYQ_PUBLISH_MAX, scan_current=1))):
                rows["%s_%s" % (tag, name)] = (ffi, lib, None,
                                               [queue(ffi, lib, "pyqueue", **dict(cfg, **extra))
                                                for _ in "ab"])
    ffi, lib = list(builds.values())[-1]
    if mode != "roundtrip":
        rows["yardstick"] = (ffi, lib, 0, queue(ffi, lib, "yardstick"))
        dpdk = queue(ffi, lib, "dpdk")
        if dpdk:
            rows["dpdk"] = (ffi, lib, 0, dpdk)
            rows["dpdk_burst32"] = (ffi, lib, 32, queue(ffi, lib, "dpdk"))
    else:
        rows["pingpong"] = (ffi, lib, None, None)
    return rows


def stream(ffi, lib, a, h, burst, n):
    """The writer's rate inside streaming episodes of backlog BACKLOG_SHARE of
    the queue's capacity (twins.adapter_throughput's backlog runs, in one
    build's ffi)."""
    eps = twins._Episodes(n, max(1, int(a.capacity(h) * twins.BACKLOG_SHARE)), ffi)
    r = ffi.new("pyq_bench_result_t *")
    if lib.pyq_bench_adapter_stream(a, h, n, burst, eps.backlog, eps.c, eps.n, 0, 1, r) != 0:
        raise RuntimeError("episodes slice failed: %d" % r.error)
    st = regime.classify_episodes(eps.records(r.episodes), r.messages,
                                  int(r.end_ns - r.elapsed_ns + r.writer_ns))
    return st["mmsg_s"] or float("nan")


def run(row, mode, n, gap=0):
    ffi, lib, burst, q = row
    if mode == "episodes":
        return stream(ffi, lib, q[0], q[1], burst, n)
    if mode == "throughput":
        a, h = q
        r = ffi.new("pyq_bench_result_t *")
        if lib.pyq_bench_adapter_paced(a, h, n, burst, gap, 0, 1, r) != 0:
            raise RuntimeError("throughput slice failed: %d" % r.error)
        return r.messages / r.elapsed_ns * 1e3
    s = np.zeros(n, np.uint64)
    buf = ffi.from_buffer("uint64_t[]", s, require_writable=True)
    if q is None:
        rc = lib.pyq_bench_pingpong(0, 1, n, buf)
    else:
        (a, ab), (_, ba) = q
        rc = lib.pyq_bench_adapter_roundtrip(a, ab, ba, 0, 1, n, buf)
    if rc != 0:
        raise RuntimeError("round-trip slice failed: %d" % rc)
    return float(np.percentile(s, 50, method="inverted_cdf")), float(
        np.percentile(s, 99.9, method="inverted_cdf"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--mode", choices=("throughput", "episodes", "roundtrip"), default="throughput")
    ap.add_argument("--messages", type=int, default=0,
                    help="messages (trips) a slice (default: 1,000,000; 20,000,000 for "
                         "episodes; 20,000 round trips)")
    ap.add_argument("--new-cfg", action="append", default=[], metavar="FIELD=VALUE",
                    help="a pyq_config_t field for the new side's queues (repeatable)")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME",
                    help="a peer's per-message row through each build's driver, beside "
                         "pyqueue's (throughput and episodes; repeatable): a driver change "
                         "A/B'd on that peer")
    ap.add_argument("--cfg", action="append", default=[], metavar="FIELD=VALUE",
                    help="a pyq_config_t field for both sides' queues (repeatable; "
                         "--new-cfg overrides it on the new side)")
    ap.add_argument("--hot", default="4,256", metavar="N,N,...",
                    help="hot tiers of pyqueue's throughput rows, in blocks of the 256 "
                         "(default 4,256: the default tiers and all hot)")
    ap.add_argument("--gap-ns", type=float, default=0.0, metavar="NS",
                    help="throughput mode: pace every writer to one message per NS "
                         "(the bench's chasing pass; default 0, flat out)")
    args = ap.parse_args()
    if args.peer and args.mode == "roundtrip":
        ap.error("--peer runs a peer's throughput row: --mode throughput or episodes")
    if args.gap_ns and args.mode != "throughput":
        ap.error("--gap-ns paces the throughput runs: --mode throughput")
    try:
        hots = tuple(int(h) for h in args.hot.split(","))
    except ValueError:
        hots = ()
    if not hots or len(set(hots)) != len(hots) or not all(1 <= h <= 256 for h in hots):
        ap.error("--hot takes distinct hot-tier sizes in 1..256 blocks, e.g. 4,64,256")
    if args.gap_ns < 0:
        ap.error("--gap-ns takes a pace >= 0")
    try:
        new_cfg, both_cfg = ({k: int(v) for k, v in (a.split("=", 1) for a in given)}
                             for given in (args.new_cfg, args.cfg))
    except ValueError:
        ap.error("--cfg and --new-cfg take FIELD=INTEGER")
    builds = {"base": load("base", args.base), "new": load("new", args.new)}
    for tag, (ffi, _) in builds.items():
        fields = {f for f, _ in ffi.typeof("pyq_config_t").fields}
        for k in set(both_cfg) | (set(new_cfg) if tag == "new" else set()):
            if k not in fields:
                ap.error("%s build's pyq_config_t has no field %r" % (tag, k))
    rows = contenders(builds, args.mode, new_cfg, args.peer, hots, both_cfg)
    names = list(rows)
    n = args.messages or {"throughput": 1_000_000, "episodes": 20_000_000,
                          "roundtrip": 20_000}[args.mode]
    ffi, lib = builds["new"]
    gap = twins.gap_ticks(args.gap_ns)

    def probe():
        s = np.zeros(2000, np.uint64)
        lib.pyq_bench_pingpong(0, 1, 2000, ffi.from_buffer("uint64_t[]", s, require_writable=True))
        return float(np.median(s)) / 2

    kept = {}
    for r in range(args.rounds):
        before = probe()
        got = {name: run(rows[name], args.mode, n, gap)
               for name in names[r % len(names):] + names[:r % len(names)]}
        after = probe()
        place = ("near" if max(before, after) < SPLIT_NS else
                 "far" if min(before, after) >= SPLIT_NS else "moved")
        if place != "moved":
            for name, v in got.items():
                kept.setdefault(place, {}).setdefault(name, []).append(v)
        print("round %d probe %.0f/%.0f ns (%s): %s" % (
            r, before, after, place, "  ".join(
                "%s %s" % (k, ("%.1f" % v) if args.mode != "roundtrip" else "%.0f/%.0f" % v)
                for k, v in got.items())), flush=True)
    unit = {"throughput": "M msg/s", "episodes": "M msg/s, the writer in episodes"}.get(
        args.mode, "ns p50 (p99.9 median)")
    for place, d in sorted(kept.items()):
        print("%s, median over %d rounds, %s:" % (place, len(next(iter(d.values()))), unit))
        for name, vs in d.items():
            if args.mode != "roundtrip":
                # new / base of the same contender in the same round: the host's
                # slower and faster minutes move both (their median ratio).
                base = d.get("base_" + name[4:]) if name.startswith("new_") else None
                print("  %-16s %.1f%s" % (name, np.median(vs), "   new/base %.3f" % np.median(
                    np.divide(vs, base)) if base is not None and len(base) == len(vs) else ""))
            else:
                print("  %-16s %.0f (%.0f)" % (name, np.median([v[0] for v in vs]),
                                               np.median([v[1] for v in vs])))


if __name__ == "__main__":
    main()
