"""bench-xproc's frame rows (issue 49): large messages between two processes,
MB/s, a forked writer process pinned to the writer's CPU and the reader in
this process -- pyqueue's bytes path, its claim / view path and its arrays,
against multiprocessing.Queue, faster-fifo, pyzmq (ipc PUSH / PULL, zero-copy
frames) and iceoryx2 (publish-subscribe, loaned samples, as its own examples).

Each row is ``run(size, n, writer_cpu) -> (messages/s, extra, None)`` like
bench_xproc_rows's, or "not installed: <why>".  Every slice sends ``n``
messages of ``size`` bytes made once before the go; the writer copies them in
(a write, a copy into a claim, numpy.copyto into a claim, a memmove into a
loan), the reader takes each: a bytes copy for the bytes paths and the peers
that return bytes, nothing for a view (its point: the bytes are read in place,
then released).

    python -m pyqueue.lab.experiments.bench_xproc_frames [--rounds 3] [--sizes 1024,...]

prints one table per run, the median of the rounds, the ratios within the run,
/proc/loadavg before and after.  Not yet a bench-xproc command of its own (the
experiment's Params, output folder and placement probes): see docs/BENCHMARKS.md.
"""
import argparse
import ctypes
import os
import statistics
import time

import numpy as np

from pyqueue import Queue
from . import bench_xproc_rows as R

SIZES = (1 << 10, 64 << 10, 1 << 20, 16 << 20)
# Messages a slice, per size: about a quarter of a second at a few GB/s.
COUNT = {1 << 10: 50_000, 64 << 10: 10_000, 1 << 20: 1_000, 16 << 20: 60}
HEADER = 256    # put_array's header and alignment, at most


def _queue_kw(size):
    """A shared queue whose large region holds at least four messages, the
    spill tier 4 MiB."""
    m = size + HEADER
    region = max(8 << 20, 4 * (-(-m // 4096) * 4096))
    return dict(publish="each", max_message=max(m, 4096), large_bytes=region if m > 4088 else 0,
                spill_blocks=1024)


def _w_bytes(q, msg, n):
    w = q.writer.write
    for _ in range(n):
        w(msg)


def _r_bytes(q, n):
    get = q.reader.get
    for _ in range(n):
        get()


def _w_claim(q, msg, n):
    claim, size = q.writer.claim, len(msg)
    for _ in range(n):
        with claim(size) as c:
            with memoryview(c) as m:
                m[:] = msg


def _r_view(q, n):
    get_view = q.reader.get_view
    for _ in range(n):
        with get_view():
            pass


def _w_array(q, msg, n):
    a = np.frombuffer(msg, np.uint8)
    put = q.writer.put_array
    for _ in range(n):
        put(a)


def _r_array(q, n):
    get = q.reader.get_array
    for _ in range(n):
        a = get()
        del a


def pyq_row(kind, blocks_by_hand=False):
    """pyqueue shared: kind "bytes" (write / get), "view" (claim / get_view),
    "array" (put_array / get_array(copy=False)).  blocks_by_hand: the bytes
    path as before the large region, block_size raised to fit the message."""
    w, r = {"bytes": (_w_bytes, _r_bytes), "view": (_w_claim, _r_view),
            "array": (_w_array, _r_array)}[kind]

    def run(size, n, writer_cpu):
        if blocks_by_hand:
            bs = -(-(size + 8) // 64) * 64
            if bs > 16 << 20:
                raise ValueError("not measured: a block holds at most 16 MiB - 8")
            kw = dict(publish="each", max_message=0, block_size=max(bs, 4096), hot_blocks=4,
                      spill_blocks=max(0, (32 << 20) // max(bs, 4096) - 4))
        else:
            kw = _queue_kw(size)
        with Queue(shared=True, **kw) as q:
            q.take("reader")
            msg = bytes(i & 0xFF for i in range(256)) * (size // 256)
            return R.rate(n, R.timed(w, (q, msg, n), r, (q, n), writer_cpu))
    return run


def mp_row():
    def run(size, n, writer_cpu):
        q = R.FORK.Queue()
        try:
            return R.rate(n, R.timed(R.w_put, (q, b"x" * size, n), R.r_get, (q, n, size),
                                     writer_cpu))
        finally:
            q.close()
    return run


def faster_fifo_row():
    try:
        import faster_fifo
    except ImportError as e:
        return "not installed: %s" % e

    def read(q, n, size):
        got = 0
        while got < n:
            got += len(q.get_many(max_messages_to_get=4096, timeout=10))

    def run(size, n, writer_cpu):
        q = faster_fifo.Queue(max_size_bytes=max(64 << 20, 4 * size + 4096))
        try:
            return R.rate(n, R.timed(R.w_put, (q, b"x" * size, n), read, (q, n, size),
                                     writer_cpu))
        finally:
            q.close()
    return run


def _w_zmq(addr, msg, n, hwm):
    import zmq
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    s.setsockopt(zmq.SNDHWM, hwm)
    s.connect(addr)
    copy = len(msg) < (64 << 10)    # pyzmq's advice: zero-copy frames for large messages
    for _ in range(n):
        s.send(msg, copy=copy)
    s.close(linger=-1)
    ctx.term()


def zmq_row():
    try:
        import zmq
    except ImportError as e:
        return "not installed: %s" % e

    def run(size, n, writer_cpu):
        ctx = zmq.Context()
        s = ctx.socket(zmq.PULL)
        hwm = max(4, min(100_000, (64 << 20) // size))
        s.setsockopt(zmq.RCVHWM, hwm)
        path = "/tmp/pyq-bench-frames-%d-%d.ipc" % (os.getpid(), next(R.names))
        s.bind("ipc://" + path)
        copy = size < (64 << 10)
        try:
            def read(n_):
                for _ in range(n_):
                    s.recv(copy=copy)
            return R.rate(n, R.timed(_w_zmq, ("ipc://" + path, b"x" * size, n, hwm), read, (n,),
                                     writer_cpu))
        finally:
            s.close(linger=0)
            ctx.term()
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    return run


def _iox_buffer(size):
    return max(2, min(R.IOX_BUFFER, (64 << 20) // size))


def _w_iox(name, size, n):
    iox2 = R.iox()
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    service, payload = R.iox_service(iox2, node, name, size, _iox_buffer(size), False)
    send = R.iox_send_loop(R.iox_publisher(iox2, service), payload, size)

    def loop():
        for _ in range(n):
            send()
        time.sleep(0.05)
        return node, service
    return loop


def iceoryx2_row():
    missing = R.iox_missing()
    if missing:
        return missing

    def run(size, n, writer_cpu):
        iox2, name, node = R.iox_node()
        service, _ = R.iox_service(iox2, node, name, size, _iox_buffer(size), False)
        take = R.iox_receive_one(service.subscriber_builder().create())

        def read(n_):
            for _ in range(n_):
                take()
        return R.rate(n, R.timed(_w_iox, (name, size, n), read, (n,), writer_cpu, setup=True))
    return run


ROWS = (
    ("py-bytes", "pyqueue shared, write / get (bytes)", lambda: pyq_row("bytes")),
    ("py-bytes-blocks", "pyqueue shared, write / get, block_size raised by hand (before)",
     lambda: pyq_row("bytes", blocks_by_hand=True)),
    ("py-view", "pyqueue shared, claim / get_view", lambda: pyq_row("view")),
    ("py-array", "pyqueue shared, put_array / get_array", lambda: pyq_row("array")),
    ("mp-queue", "multiprocessing.Queue put / get", mp_row),
    ("faster-fifo", "faster-fifo put / get_many", faster_fifo_row),
    ("zmq", "pyzmq ipc PUSH / PULL (zero-copy frames from 64 KiB)", zmq_row),
    ("iceoryx2", "iceoryx2 publish-subscribe, loaned samples", iceoryx2_row),
    ("py-bytes-32", "pyqueue shared, write / get, 32 B (the small path)", lambda: pyq_row("bytes")),
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    ap.add_argument("--only", default="")
    ap.add_argument("--writer-cpu", type=int, default=0)
    ap.add_argument("--reader-cpu", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="messages a slice x this")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    R.pin(args.reader_cpu)
    load0 = open("/proc/loadavg").read().split()[:3]
    made = {rid: make() for rid, _, make in ROWS
            if not args.only or any(o in rid for o in args.only.split(","))}
    results = {}
    for rnd in range(args.rounds):
        order = list(made.items())
        order = order[rnd % len(order):] + order[:rnd % len(order)]
        for rid, run in order:
            for size in ([32] if rid == "py-bytes-32" else sizes):
                if isinstance(run, str):
                    results.setdefault((rid, size), run)
                    continue
                n = max(3, int((200_000 if size == 32 else COUNT.get(size, 1000)) * args.scale))
                if rid in ("mp-queue",) and size >= (1 << 20):
                    n = max(3, n // 4)
                try:
                    mps = run(size, n, args.writer_cpu)[0]
                    results.setdefault((rid, size), []).append(mps * size / 1e6)
                except Exception as e:     # a row that cannot run here says why
                    results[(rid, size)] = "not measured: %s" % e
    load1 = open("/proc/loadavg").read().split()[:3]
    print("loadavg before %s, after %s; %d rounds, median MB/s" % (" ".join(load0),
                                                                   " ".join(load1), args.rounds))
    med = {k: (statistics.median(v) if isinstance(v, list) else v) for k, v in results.items()}
    label = {rid: lab for rid, lab, _ in ROWS}
    print("| row | " + " | ".join(_size(s) for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for rid in made:
        if rid == "py-bytes-32":
            continue
        cells = [med.get((rid, s), "") for s in sizes]
        print("| %s | %s |" % (label[rid], " | ".join(_cell(c) for c in cells)))
    if ("py-bytes-32", 32) in med:
        print("\n32 B, pyqueue shared write / get: %s MB/s" % _cell(med[("py-bytes-32", 32)]))
    print("\nratios (same run):")
    for s in sizes:
        v = med.get(("py-view", s))
        if not isinstance(v, float):
            continue
        parts = []
        for other in ("py-bytes", "py-bytes-blocks", "faster-fifo", "mp-queue", "zmq", "iceoryx2",
                      "py-array"):
            o = med.get((other, s))
            if isinstance(o, float) and o > 0:
                parts.append("view/%s %.2fx" % (other, v / o))
        print("  %s: %s" % (_size(s), ", ".join(parts)))
    return med


def _size(s):
    return "%d MiB" % (s >> 20) if s >= 1 << 20 else "%d KiB" % (s >> 10) if s >= 1024 else "%d B" % s


def _cell(c):
    return "{:,.0f}".format(c) if isinstance(c, float) else str(c)


if __name__ == "__main__":
    main()
