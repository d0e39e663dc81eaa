"""bench-xproc's frame rows (issue 49): large messages between two processes,
pyqueue's paths for them -- the bytes path (write / get) over the large region
and over blocks raised to the frame by hand (the path before the region), the
zero-copy path (claim / get_view), numpy arrays (put_array / get_array) --
beside the peers' rows of bench_xproc_rows run at frame sizes.

Each row is ``run(size, n, writer_cpu) -> (messages/s, extra, None)`` like
bench_xproc_rows's, from a forked writer process pinned to the writer's CPU
and the reader in this process.  The writers:

* ``write``, ``claim``, ``array``: copy a frame made once before the go (a
  write; ``memoryview(claim)[:] = frame``; put_array's numpy.copyto);
* ``write-fill``, ``claim-fill``: produce every frame -- fill it with the
  message's number, a pure write as a camera or a decoder writing its output
  makes -- into a reusable bytearray then write() it (the copy zero-copy
  saves), or straight into the claim.

The readers: ``get`` (a bytes copy), ``view`` (get_view then release: the
frame is not read), ``array`` (get_array, then dropping it), and ``get-sum`` /
``view-sum``, which read the frame -- one byte in 64, every cache line, summed
and checked against the filled value -- so that a zero-copy reader is compared
with a reader that copies while both read what they received.
"""
import numpy as np

from pyqueue import Queue
from . import bench_xproc_rows as R

HEADER = 256        # put_array's header and alignment, at most
SUM_STRIDE = 64     # the summing readers read one byte a cache line
MAX_BLOCK = 16 << 20


def queue_kw(size):
    """A shared queue whose large region holds at least four messages (8 MiB at
    least), the spill tier 4 MiB of 4 KiB blocks; every page touched at creation,
    so that no slice times the pool's first faults."""
    m = size + HEADER
    region = max(8 << 20, 4 * (-(-m // 4096) * 4096))
    return dict(publish="each", max_message=max(m, 4096), large_bytes=region if m > 4088 else 0,
                spill_blocks=1024, prefault=True)


def blocks_kw(size):
    """The bytes path before the large region: block_size raised to hold the frame,
    four hot blocks and a pool of about 32 MiB, prefaulted."""
    bs = max(-(-(size + 8) // 64) * 64, 4096)
    return dict(publish="each", max_message=0, block_size=bs, hot_blocks=4,
                spill_blocks=max(0, (32 << 20) // bs - 4), prefault=True)


def blocks_refuse(size):
    """Why a block cannot hold a frame of ``size``, or None."""
    if size + 8 > MAX_BLOCK:
        return "not measured: a block holds at most 16 MiB - 8 B"
    return None


def frame_of(size):
    return (bytes(range(256)) * (size // 256 + 1))[:size]


# --- writers: (q, size, n) -> the loop, set up before the go ---------------------------------

def _w_write(q, size, n):
    msg, w = frame_of(size), q.writer.write

    def loop():
        for _ in range(n):
            w(msg)
    return loop


def _w_write_fill(q, size, n):
    buf = bytearray(size)
    fill, w = np.frombuffer(buf, np.uint8).fill, q.writer.write

    def loop():
        for k in range(n):
            fill(k & 0xFF)
            w(buf)
    return loop


def _w_claim(q, size, n):
    msg, claim = frame_of(size), q.writer.claim

    def loop():
        for _ in range(n):
            with claim(size) as c:
                with memoryview(c) as m:
                    m[:] = msg
    return loop


def _w_claim_fill(q, size, n):
    claim, frombuffer, u8 = q.writer.claim, np.frombuffer, np.uint8

    def loop():
        for k in range(n):
            with claim(size) as c:
                # The array over the claim is dropped at the statement's end, before the commit.
                frombuffer(c, u8).fill(k & 0xFF)
    return loop


def _w_array(q, size, n):
    a, put = np.frombuffer(frame_of(size), np.uint8), q.writer.put_array

    def loop():
        for _ in range(n):
            put(a)
    return loop


# --- readers: (q, size, n) ------------------------------------------------------------------

def _r_get(q, size, n):
    get = q.reader.get
    for _ in range(n):
        get()


def _check_sum(k, got, size):
    want = (k & 0xFF) * (-(-size // SUM_STRIDE))
    if got != want:
        raise RuntimeError("frame %d: sum of one byte in %d is %d, not %d"
                           % (k, SUM_STRIDE, got, want))


def _r_get_sum(q, size, n):
    get, frombuffer, u8 = q.reader.get, np.frombuffer, np.uint8
    for k in range(n):
        _check_sum(k, int(frombuffer(get(), u8)[::SUM_STRIDE].sum()), size)


def _r_view(q, size, n):
    get_view = q.reader.get_view
    for _ in range(n):
        with get_view():
            pass


def _r_view_sum(q, size, n):
    get_view, frombuffer, u8 = q.reader.get_view, np.frombuffer, np.uint8
    for k in range(n):
        with get_view() as v:
            # The array over the view is dropped at the statement's end, before the release.
            got = int(frombuffer(v, u8)[::SUM_STRIDE].sum())
        _check_sum(k, got, size)


def _r_array(q, size, n):
    get = q.reader.get_array
    for _ in range(n):
        a = get()
        del a


WRITERS = {"write": _w_write, "write-fill": _w_write_fill, "claim": _w_claim,
           "claim-fill": _w_claim_fill, "array": _w_array}
READERS = {"get": _r_get, "get-sum": _r_get_sum, "view": _r_view, "view-sum": _r_view_sum,
           "array": _r_array}


def pyq_row(writer, reader, blocks=False):
    """pyqueue shared, one of WRITERS into one of READERS; ``blocks``: over
    blocks raised to the frame (blocks_kw), else over the large region (queue_kw)."""
    w, r = WRITERS[writer], READERS[reader]
    if reader.endswith("-sum") and not writer.endswith("-fill"):
        raise ValueError("a summing reader checks the filled value: give a -fill writer")

    def run(size, n, writer_cpu):
        with Queue(shared=True, **(blocks_kw(size) if blocks else queue_kw(size))) as q:
            q.take("reader")
            return R.rate(n, R.timed(w, (q, size, n), r, (q, size, n), writer_cpu,
                                     setup=True))
    return run


if __name__ == "__main__":   # this module was a script of its own before it was rows
    raise SystemExit("bench_xproc_frames is bench-xproc's frame rows now: "
                     "python -m pyqueue bench-xproc --only frames [--frame-sizes SIZE,...]")
