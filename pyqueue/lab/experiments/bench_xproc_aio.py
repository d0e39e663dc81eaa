"""bench-xproc's asyncio rows: a round trip between two processes that each
await (pyqueue's get_async / put_async on two shared queues, pyzmq's
zmq.asyncio over ipc PUSH / PULL pairs), and the CPU an idle await costs.

Each row is a function ``run(size, n, writer_cpu) -> (value, extra, samples)``
or, when its library does not import, "not installed: <why>", as in
bench_xproc_rows.  Round trips: ``n`` trips timed one by one in the calling
process's event loop, the echo side a forked process pinned to ``writer_cpu``
with its own loop; value = p50 ns.  Idle: this process awaits a message that
does not come for ``n`` ms; value = the CPU it used meanwhile, in % of one CPU
(time.process_time: every thread of the process, the waiting one included).
"""
import asyncio
import itertools
import os
import time

import numpy as np

from pyqueue import Queue
from . import bench_xproc_rows as R

FORK = R.FORK
_names = itertools.count()


def _trips(out, send, receive, msg):
    async def loop():
        now = time.perf_counter_ns
        for i in range(out.size):
            t0 = now()
            await send(msg)
            await receive()
            out[i] = now() - t0
    return loop()


def _result(out):
    return float(np.median(out)), {"p99_ns": float(np.percentile(out, 99))}, out


def _pyq_echo(a, b, n, pin_cpu, ready):
    R.pin(pin_cpu)

    async def echo():
        get, put = a.reader.get_async, b.writer.put_async
        ready.set()
        for _ in range(n):
            await put(await get(timeout=30))
    asyncio.run(echo())


def pyq_round_trip():
    """pyqueue shared: put_async on one queue, get_async of the echo on another."""
    def run(size, n, writer_cpu):
        with Queue(shared=True, **R.RT_QUEUE) as a, Queue(shared=True, **R.RT_QUEUE) as b:
            a.take("writer")
            b.take("reader")
            ready = FORK.Event()
            t = FORK.Process(target=_pyq_echo, args=(a, b, n, writer_cpu, ready), daemon=True)
            t.start()
            if not ready.wait(60):
                raise RuntimeError("the echo side did not start")
            out = np.empty(n, np.int64)
            asyncio.run(_trips(out, a.writer.put_async,
                               lambda: b.reader.get_async(timeout=30), b"x" * size))
            t.join(60)
        return _result(out)
    return run


def _zmq_missing():
    try:
        import zmq.asyncio  # noqa: F401
    except ImportError as e:
        return "not installed: %s" % e
    return None


def _zmq_sockets(ctx, push_to, pull_from, bind):
    """A PUSH socket to push_to and a PULL socket from pull_from (ipc addresses)."""
    import zmq
    push, pull = ctx.socket(zmq.PUSH), ctx.socket(zmq.PULL)
    for s, addr in ((push, push_to), (pull, pull_from)):
        s.setsockopt(zmq.LINGER, 0)
        (s.bind if bind else s.connect)(addr)
    return push, pull


def _zmq_echo(there, back, n, pin_cpu, ready):
    """Receive on ``there``, send back on ``back`` (the measuring side binds both)."""
    R.pin(pin_cpu)
    import zmq.asyncio

    async def echo():
        ctx = zmq.asyncio.Context()
        push, pull = _zmq_sockets(ctx, back, there, False)
        ready.set()
        for _ in range(n):
            await push.send(await pull.recv())
        await asyncio.sleep(0.05)   # the last reply leaves before the context ends
        ctx.destroy(linger=0)
    asyncio.run(echo())


def _ipc_paths():
    base = "/tmp/pyq-bench-aio-%d-%d" % (os.getpid(), next(_names))
    return base + "-there.ipc", base + "-back.ipc"


def _unlink(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def zmq_round_trip():
    """pyzmq's zmq.asyncio over ipc, as its users write it: await send, await recv."""
    missing = _zmq_missing()
    if missing:
        return missing
    import zmq.asyncio

    def run(size, n, writer_cpu):
        there, back = _ipc_paths()
        out = np.empty(n, np.int64)

        async def main():
            ctx = zmq.asyncio.Context()
            push, pull = _zmq_sockets(ctx, "ipc://" + there, "ipc://" + back, True)
            ready = FORK.Event()
            t = FORK.Process(target=_zmq_echo, args=("ipc://" + there, "ipc://" + back, n,
                                                     writer_cpu, ready), daemon=True)
            t.start()
            try:
                if not ready.wait(60):
                    raise RuntimeError("the zmq echo side did not start")
                await _trips(out, push.send, pull.recv, b"x" * size)
            finally:
                t.join(60)
                ctx.destroy(linger=0)
        try:
            asyncio.run(main())
        finally:
            _unlink(there, back)
        return _result(out)
    return run


async def _idle_cpu(ms, receive):
    """% of one CPU this process used while a task awaited receive() for ms."""
    task = asyncio.ensure_future(receive())
    await asyncio.sleep(0.1)   # past any spinning start
    c0, t0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(ms / 1e3)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return 100.0 * cpu / wall


def _hold_writer(q, ready, done):
    q.take("writer")
    ready.set()
    done.wait(600)
    q.close()


def pyq_idle(shared):
    """An await on an empty pyqueue queue (shared: its writer alive in another process)."""
    def run(size, ms, writer_cpu):
        with Queue(shared=shared, **R.RT_QUEUE) as q:
            t = None
            if shared:
                ready, done = FORK.Event(), FORK.Event()
                t = FORK.Process(target=_hold_writer, args=(q, ready, done), daemon=True)
                t.start()
                if not ready.wait(60):
                    raise RuntimeError("the writer did not start")
            try:
                pct = asyncio.run(_idle_cpu(ms, q.reader.get_async))
            finally:
                if t is not None:
                    done.set()
                    t.join(60)
        return pct, {"ms": ms}, None
    return run


def zmq_idle():
    """An await of pyzmq's zmq.asyncio recv on an ipc socket nobody writes."""
    missing = _zmq_missing()
    if missing:
        return missing
    import zmq.asyncio

    def run(size, ms, writer_cpu):
        there, back = _ipc_paths()

        async def main():
            ctx = zmq.asyncio.Context()
            try:
                push, pull = _zmq_sockets(ctx, "ipc://" + there, "ipc://" + back, True)
                return await _idle_cpu(ms, pull.recv)
            finally:
                ctx.destroy(linger=0)
        try:
            pct = asyncio.run(main())
        finally:
            _unlink(there, back)
        return pct, {"ms": ms}, None
    return run
