"""bench-xproc's Python-level rows: the shared queue's Python calls and the
Python cross-process peers (multiprocessing, faster-fifo, pyzmq, iceoryx2),
one writer process and one reader process (DESIGN §3.9).

Each row is a function ``run(size, n, writer_cpu) -> (value, extra, samples)``
or, when its library does not import, the string "not installed: <why>".  The
peers' throughput rows also run as frame rows (bench_xproc_frames), at sizes up
to megabytes: their buffers are sized from the message (faster_fifo_bytes,
zmq_hwm, iox_buffer), the same as before at 32 B and 1 KiB.
Throughput rows return messages a second, timed by the reader from the go
signal to the last message; round-trip rows return the p50 in ns and their
samples.  The writer (or echo side) is a forked process pinned to
``writer_cpu`` -- a thread of this process for the in-process rows -- and the
reader is the calling process, which the experiment pins to the reader's CPU.
"""
import ctypes
import itertools
import multiprocessing as mp
import os
import pickle
import threading
import time

import numpy as np

from pyqueue import Queue

FORK = mp.get_context("fork")
# The throughput rows' queue: the seed's publish policy (a block at a time), not Python's 'each'.
SMALL_SHM = dict(publish="max", block_size=65536, hot_blocks=4, spill_blocks=60, prefault=True,
                 max_message=0)
RT_QUEUE = dict(publish="each", block_size=4096, hot_blocks=4, spill_blocks=4, max_message=0)
# The put/get rows' queue: what code written for multiprocessing or faster-fifo gets,
# Python's publish policy (a put visible when it returns), the same 4 MiB.
PUT_GET_SHM = dict(SMALL_SHM, publish="each")
# Messages a write_batch / poll_fixed call of the C rows moves: 64 KiB at most (the C
# loops' buffer), well inside the 4 MiB queue.  The numpy rows move up to 4096 rows,
# 1 MiB at most, a call: with small calls the in-process row measures two threads
# handing the GIL back and forth (each call releases it), not the queue.
BATCH_BYTES = 1 << 16
NUMPY_BATCH_BYTES = 1 << 20
names = itertools.count()


def pin(cpu):
    if cpu is not None and cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def _child(pin_cpu, ready, go, fn, args, setup):
    pin(pin_cpu)
    loop = fn(*args) if setup else (lambda: fn(*args))
    ready.set()
    go.wait()
    loop()


def timed(writer_fn, wargs, reader_fn, rargs, writer_cpu, thread=False, setup=False):
    """One slice: the writer (a forked process, or a thread) and this process
    reading; seconds from go to the reader's return.  ``setup``: ``writer_fn``
    sets up (untimed, before the go) and returns the loop to run after it."""
    lib = threading if thread else FORK
    ready, go = lib.Event(), lib.Event()
    maker = threading.Thread if thread else FORK.Process
    # sched_setaffinity(0) in a thread pins that thread only: the writer thread its own CPU.
    t = maker(target=_child, args=(writer_cpu, ready, go, writer_fn, wargs, setup), daemon=True)
    t.start()
    # The writer starts on the reader's CPU (inherited): under SCHED_FIFO it would never
    # get there to move while this process spins, so wait (sleeping) until it has moved.
    if not ready.wait(60):
        raise RuntimeError("the writer did not start")
    t0 = time.perf_counter()
    go.set()
    reader_fn(*rargs)
    dt = time.perf_counter() - t0
    t.join(60)
    if not thread and t.exitcode:
        raise RuntimeError("the writer process failed (exit code %s)" % t.exitcode)
    return dt


def batch_of(size, limit=BATCH_BYTES):
    return min(4096, limit // size)


def rate(n, dt):
    return n / dt, {}, None


# --- pyqueue's Python calls ----------------------------------------------------------------

def _w_pyq_message(q, msg, n):
    w = q.writer.write
    for _ in range(n):
        w(msg)
    q.writer.flush()


def _w_pyq_batch(q, msg, n):
    rows = min(n, batch_of(len(msg), NUMPY_BATCH_BYTES))
    arr = np.frombuffer(msg * rows, np.uint8).reshape(-1, len(msg))
    left = n
    while left:
        k = min(left, len(arr))
        q.writer.write_batch(arr[:k])
        left -= k
    q.writer.flush()


def _r_pyq_message(q, n, size):
    got, poll = 0, q.reader.poll
    while got < n:
        if poll(1):
            got += 1


def _r_pyq_batch(q, n, size):
    k = batch_of(size, NUMPY_BATCH_BYTES)
    out = np.empty((k, size), np.uint8)
    got = 0
    while got < n:
        got += q.reader.poll_into(out[:min(k, n - got)])


def pyq_row(shared, batch):
    def run(size, n, writer_cpu):
        with Queue(shared=shared, **SMALL_SHM) as q:
            if shared:
                q.take("reader")
            msg = bytes(i & 0xFF for i in range(size))
            w = _w_pyq_batch if batch else _w_pyq_message
            r = _r_pyq_batch if batch else _r_pyq_message
            return rate(n, timed(w, (q, msg, n), r, (q, n, size), writer_cpu, thread=not shared))
    return run


def _echo(a, b, n, pin_cpu, ready):
    pin(pin_cpu)
    ready.set()
    for _ in range(n):
        b.writer.write(a.reader.read(timeout=30))
    b.writer.flush()


def pyq_round_trip(shared):
    """One message there and back through two queues (publish "each"), Python calls."""
    def run(size, n, writer_cpu):
        with Queue(shared=shared, **RT_QUEUE) as a, Queue(shared=shared, **RT_QUEUE) as b:
            lib = FORK if shared else threading
            if shared:
                a.take("writer")
                b.take("reader")
            ready = lib.Event()
            maker = FORK.Process if shared else threading.Thread
            t = maker(target=_echo, args=(a, b, n, writer_cpu, ready), daemon=True)
            t.start()
            if not ready.wait(60):   # see timed()
                raise RuntimeError("the echo side did not start")
            out = np.empty(n, np.int64)
            w, r, now = a.writer.write, b.reader.read, time.perf_counter_ns
            msg = b"x" * size
            for i in range(n):
                t0 = now()
                w(msg)
                r(timeout=30)
                out[i] = now() - t0
            t.join(60)
        return float(np.median(out)), {"p99_ns": float(np.percentile(out, 99))}, out
    return run


# --- put/get queues: multiprocessing, faster-fifo ------------------------------------------

def w_put(q, msg, n):
    put = q.put
    for _ in range(n):
        put(msg)


def r_get(q, n, size):
    get = q.get
    for _ in range(n):
        get()


def _r_get_many(q, n, size):
    got = 0
    while got < n:
        got += len(q.get_many(max_messages_to_get=4096, timeout=10))


def obj_of(size):
    """The object an objects row sends: a small record whose pickle is about
    ``size`` bytes (at least the record's own, ~30)."""
    k = max(0, size - len(pickle.dumps((0, "seq", b""))))
    return (0, "seq", b"x" * k)


def _put_get_row(make, read, objects=False):
    """A row of a put/get queue: ``make(size)`` builds it, ``read`` drains it; it
    carries bytes of the size, or with ``objects`` obj_of(size)."""
    def run(size, n, writer_cpu):
        q = make(size)
        try:
            msg = obj_of(size) if objects else b"x" * size
            return rate(n, timed(w_put, (q, msg, n), read, (q, n, size), writer_cpu))
        finally:
            q.close()
    return run


def mp_row(kind, objects=False):
    make = FORK.Queue if kind == "queue" else FORK.SimpleQueue
    return _put_get_row(lambda size: make(), r_get, objects)


def faster_fifo_bytes(size):
    """faster-fifo's buffer for messages of ``size``: 64 MiB, or four messages when
    they are larger than 16 MiB."""
    return max(64 << 20, 4 * size + 4096)


def faster_fifo_row(objects=False):
    try:
        import faster_fifo
    except ImportError as e:
        return "not installed: %s" % e
    return _put_get_row(lambda size: faster_fifo.Queue(max_size_bytes=faster_fifo_bytes(size)),
                        _r_get_many, objects)


def _pyq_put_get(serializer):
    def make(size):
        q = Queue(shared=True, serializer=serializer, **PUT_GET_SHM)
        q.take("reader")
        return q
    return make


def pyq_put_get_row(objects, many):
    """pyqueue shared as multiprocessing's and faster-fifo's users write: put per
    message, get() or get_many(max_messages_to_get=4096); objects through
    Queue(serializer="pickle"), else bytes."""
    return _put_get_row(_pyq_put_get("pickle" if objects else None),
                        _r_get_many if many else r_get, objects)


# --- pyzmq ipc PUSH / PULL -----------------------------------------------------------------
# Up to 100,000 messages in flight each side, or 128 MiB of large ones; from 64 KiB a
# message goes as a zero-copy frame (copy=False), pyzmq's advice for large messages.
ZMQ_HWM, ZMQ_HWM_BYTES, ZMQ_ZERO_COPY_FROM = 100_000, 128 << 20, 64 << 10


def zmq_hwm(size):
    return max(4, min(ZMQ_HWM, ZMQ_HWM_BYTES // size))


def _w_zmq(addr, msg, n):
    import zmq
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    s.setsockopt(zmq.SNDHWM, zmq_hwm(len(msg)))
    s.connect(addr)
    send = s.send
    if len(msg) < ZMQ_ZERO_COPY_FROM:
        for _ in range(n):
            send(msg)
    else:
        for _ in range(n):
            send(msg, copy=False)
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
        s.setsockopt(zmq.RCVHWM, zmq_hwm(size))
        path = "/tmp/pyq-bench-xproc-%d-%d.ipc" % (os.getpid(), next(names))
        s.bind("ipc://" + path)
        try:
            def read(n_, size_):
                recv = s.recv
                if size_ < ZMQ_ZERO_COPY_FROM:
                    for _ in range(n_):
                        recv()
                else:
                    for _ in range(n_):
                        recv(copy=False)
            return rate(n, timed(_w_zmq, ("ipc://" + path, b"x" * size, n), read, (n, size),
                                 writer_cpu))
        finally:
            s.close(linger=0)
            ctx.term()
            try:   # the socket file stays behind a closed socket
                os.unlink(path)
            except FileNotFoundError:
                pass
    return run


# --- iceoryx2: publish-subscribe over its ipc service, loaned samples ----------------------
# As its own benchmark (benchmarks/publish-subscribe) runs it: an ipc service, history 0,
# a loaned sample per message.  Throughput: no safe overflow and RetryUntilDelivered, so
# that the publisher waits for room instead of dropping samples (every one is counted);
# round trip: two services with a one-sample buffer and safe overflow, as in that benchmark.

def iox():
    import iceoryx2 as iox2
    iox2.set_log_level(iox2.LogLevel.Error)
    return iox2


def iox_missing():
    """Why iceoryx2 cannot be used here ("not installed: ..."), or None."""
    try:
        iox()
    except ImportError as e:
        return "not installed: %s" % e
    return None


def iox_node():
    """This slice's (iox2, a fresh service name, an ipc node)."""
    iox2 = iox()
    name = "pyq-bench-xproc-%d-%d" % (os.getpid(), next(names))
    return iox2, name, iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)


def iox_service(iox2, node, name, size, buffer, overflow):
    payload = ctypes.c_uint8 * size
    return (node.service_builder(iox2.ServiceName.new(name)).publish_subscribe(payload)
            .history_size(0).subscriber_max_buffer_size(buffer).enable_safe_overflow(overflow)
            .max_publishers(1).max_subscribers(1).open_or_create()), payload


def iox_publisher(iox2, service):
    p = (service.publisher_builder()
         .backpressure_strategy(iox2.BackpressureStrategy.RetryUntilDelivered).create())
    p.update_connections()
    return p


def iox_send_loop(publisher, payload, size):
    msg = payload.from_buffer_copy(bytes(i & 0xFF for i in range(size)))
    loan, move = publisher.loan_uninit, ctypes.memmove

    def send():
        s = loan()
        move(s.payload_ptr, msg, size)
        s.assume_init().send()
    return send


def iox_receive_one(subscriber):
    receive = subscriber.receive

    def take():
        while True:
            s = receive()
            if s is not None:
                s.delete()
                return
    return take


IOX_BUFFER = 1024   # the subscriber's queue of samples in the throughput rows


def iox_buffer(size):
    """The throughput rows' subscriber queue: IOX_BUFFER samples, at most 64 MiB of
    large ones (two at least)."""
    return max(2, min(IOX_BUFFER, (64 << 20) // size))


def _w_iox(name, size, n):
    """The publisher's process: set up (untimed), then the loop timed() runs after go."""
    iox2 = iox()
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    service, payload = iox_service(iox2, node, name, size, iox_buffer(size), False)
    send = iox_send_loop(iox_publisher(iox2, service), payload, size)

    def loop():
        for _ in range(n):
            send()
        # Node and service live until the subscriber has taken the last samples.
        time.sleep(0.05)
        return node, service
    return loop


def iceoryx2_row():
    missing = iox_missing()
    if missing:
        return missing

    def run(size, n, writer_cpu):
        iox2, name, node = iox_node()
        service, _ = iox_service(iox2, node, name, size, iox_buffer(size), False)
        sub = service.subscriber_builder().create()
        take = iox_receive_one(sub)

        def read(n_):
            for _ in range(n_):
                take()
        return rate(n, timed(_w_iox, (name, size, n), read, (n,), writer_cpu, setup=True))
    return run


def iox_round_trip_services(iox2, node, name, size):
    """The round trip's two one-sample services (safe overflow), a->b and b->a,
    as both sides open them, and the payload type."""
    a2b, payload = iox_service(iox2, node, name + "-a2b", size, 1, True)
    b2a, _ = iox_service(iox2, node, name + "-b2a", size, 1, True)
    return a2b, b2a, payload


def iox_echo(name, size, n, pin_cpu, ready):
    pin(pin_cpu)
    iox2 = iox()
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    a2b, b2a, payload = iox_round_trip_services(iox2, node, name, size)
    take = iox_receive_one(a2b.subscriber_builder().create())
    send = iox_send_loop(iox_publisher(iox2, b2a), payload, size)
    ready.set()
    for _ in range(n):
        take()
        send()
    time.sleep(0.05)


def iceoryx2_round_trip():
    missing = iox_missing()
    if missing:
        return missing

    def run(size, n, writer_cpu):
        iox2, name, node = iox_node()
        a2b, b2a, payload = iox_round_trip_services(iox2, node, name, size)
        take = iox_receive_one(b2a.subscriber_builder().create())
        publisher = iox_publisher(iox2, a2b)
        send = iox_send_loop(publisher, payload, size)
        ready = FORK.Event()
        t = FORK.Process(target=iox_echo, args=(name, size, n, writer_cpu, ready), daemon=True)
        t.start()
        if not ready.wait(60):
            raise RuntimeError("the iceoryx2 echo side did not start")
        publisher.update_connections()   # the echo side's subscriber exists now
        out = np.empty(n, np.int64)
        now = time.perf_counter_ns
        for i in range(n):
            t0 = now()
            send()
            take()
            out[i] = now() - t0
        t.join(60)
        return float(np.median(out)), {"p99_ns": float(np.percentile(out, 99))}, out
    return run
