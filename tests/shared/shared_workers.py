"""What the shared-queue tests run in their other processes (importable by
name, so that spawn and the pools can find them).  Message i is 32 bytes: i in
the first 8, then a pattern of i."""
import os
import time

import numpy as np

import pyqueue as pq

MSG = 32
CHUNK = 65536


def rows(start, n, size=MSG):
    """Messages start .. start + n - 1, one per row."""
    idx = np.arange(start, start + n, dtype=np.uint64)
    out = np.empty((n, size), np.uint8)
    out[:, :8] = idx.view(np.uint8).reshape(n, 8)
    out[:, 8:] = ((idx[:, None] * 7 + np.arange(8, size, dtype=np.uint64)[None, :]) & 0xFF).astype(np.uint8)
    return out


def write_messages(q, n, batch=False):
    """The writer's process: n messages, one call each or by write_batch, then
    close() (end of stream for the reader).  Returns n."""
    for start in range(0, n, CHUNK):
        arr = rows(start, min(CHUNK, n - start))
        if batch:
            q.writer.write_batch(arr)
        else:
            data, w = arr.tobytes(), q.writer.write
            for off in range(0, len(data), MSG):
                w(data[off:off + MSG])
    q.close()
    return n


def read_all(q, into=False, timeout=60):
    """The reader: every message until end of stream, each checked (content
    and order).  Returns the count; raises AssertionError at the first wrong one."""
    got = 0
    out = np.empty((CHUNK, MSG), np.uint8)
    while True:
        if into:
            k = q.reader.poll_into(out)
            if k:
                assert np.array_equal(out[:k], rows(got, k)), "wrong message after %d" % got
        else:
            msgs = q.reader.poll(CHUNK)
            k = len(msgs)
            if k:
                assert {len(m) for m in msgs} == {MSG}
                assert b"".join(msgs) == rows(got, k).tobytes(), "wrong message after %d" % got
        got += k
        if k == 0:
            try:
                m = q.reader.read(timeout=timeout)
            except pq.EndOfStream:
                return got
            assert m == rows(got, 1).tobytes(), "wrong message at %d" % got
            got += 1


def write_then_hang(q, n, ready):
    """Take the writer, write n messages (publish max: the last ones are
    committed but not published), say so, and wait to be killed."""
    w = q.writer.write
    for r in rows(0, n):
        w(r.tobytes())
    ready.set()
    time.sleep(600)


def read_then_hang(q, n, ready):
    """Take the reader, consume n messages, say so, and wait to be killed."""
    for i in range(n):
        assert q.reader.read(timeout=30) == rows(i, 1).tobytes()
    ready.set()
    time.sleep(600)


def try_reader(q):
    """Use the reader side from this process: the error text, or "ok"."""
    try:
        q.reader.poll(1)
    except pq.QueueError as e:
        return str(e)
    return "ok"


def receive_and_write(mpq, n):
    """Get a shared queue through a multiprocessing.Queue and write into it."""
    q = mpq.get(timeout=30)
    return write_messages(q, n)


def pid():
    return os.getpid()
