"""asyncio across processes (pyqueue/aio.py over a shared queue): the writer
or the reader in another process (fork and spawn), a ping-pong, a dead peer
(kill -9 of either side), cancellation and close in the awaiting process.  No
timing is asserted; everything that waits has a timeout."""
import asyncio
import multiprocessing as mp
import os
import signal

import pytest

import aio_workers as aw
import pyqueue as pq

SMALL = dict(block_size=4096, hot_blocks=2, spill_blocks=62)
TINY = dict(block_size=4096, hot_blocks=1, spill_blocks=1)


def run(coro, timeout=60):
    async def bounded():
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_writer_process_and_an_awaiting_reader(method):
    ctx = mp.get_context(method)
    n = 2000
    with pq.Queue(shared=True, **SMALL) as q:
        q.take("reader")
        child = ctx.Process(target=aw.put_async_all, args=(q, n))
        child.start()

        async def main():
            return [m async for m in q.reader]
        got = run(main())
        child.join(60)
        assert child.exitcode == 0
        assert got == [b"%d" % i for i in range(n)]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_an_awaiting_reader_process_and_put_async_on_a_full_queue(method):
    ctx = mp.get_context(method)
    n = 3000
    with pq.Queue(shared=True, **TINY) as q:
        q.take("writer")
        with ctx.Pool(1) as pool:
            res = pool.apply_async(aw.get_async_all, (q,))

            async def main():
                for i in range(n):   # fills the two blocks many times
                    await q.writer.put_async(b"%d" % i + b"." * 500, timeout=60)
                q.writer.detach()
            run(main())
            got = res.get(120)
        assert got == [b"%d" % i + b"." * 500 for i in range(n)]


def test_ping_pong_and_objects_across_processes():
    ctx = mp.get_context("fork")
    n = 500
    with pq.Queue(shared=True, **SMALL) as a, pq.Queue(shared=True, **SMALL) as b:
        a.take("writer")
        b.take("reader")
        child = ctx.Process(target=aw.echo, args=(a, b, n))
        child.start()

        async def main():
            for i in range(n):
                await a.writer.put_async(b"%d" % i)
                assert await b.reader.get_async(timeout=30) == b"%d" % i
        run(main())
        child.join(60)
        assert child.exitcode == 0
    items = [{"i": i, "s": "x" * i} for i in range(50)]
    with pq.Queue(shared=True, serializer="pickle", **SMALL) as q:
        q.take("reader")
        child = ctx.Process(target=aw.put_objects, args=(q, items))
        child.start()

        async def objects():
            return [m async for m in q.reader]
        assert run(objects()) == items
        child.join(60)


def test_kill_9_of_the_writer_ends_the_await_with_the_sync_error():
    ctx = mp.get_context("fork")
    with pq.Queue(shared=True, publish="each", **SMALL) as q:
        ready = ctx.Event()
        child = ctx.Process(target=aw.write_then_hang, args=(q, 10, ready))
        child.start()
        assert ready.wait(60)

        async def main():
            got = [await q.reader.get_async(timeout=30) for _ in range(10)]
            waiting = asyncio.create_task(q.reader.get_async(timeout=60))
            await asyncio.sleep(0.05)
            os.kill(child.pid, signal.SIGKILL)
            with pytest.raises(pq.EndOfStream, match="writer process %d died" % child.pid):
                await waiting
            assert [m async for m in q.reader] == []   # async for ends there too
            return got
        assert run(main()) == [b"%d" % i for i in range(10)]
        child.join(60)


def test_kill_9_of_the_reader_fails_a_waiting_put_async_with_peer_died():
    ctx = mp.get_context("fork")
    with pq.Queue(shared=True, publish="each", **TINY) as q:
        ready = ctx.Event()
        child = ctx.Process(target=aw.read_then_hang, args=(q, 1, ready))
        child.start()
        q.writer.put(b"first")
        assert ready.wait(60)

        async def main():
            while q.writer.try_write(b"x" * 1000):
                pass
            putter = asyncio.create_task(q.writer.put_async(b"y" * 1000, timeout=60))
            await asyncio.sleep(0.05)
            os.kill(child.pid, signal.SIGKILL)
            with pytest.raises(pq.PeerDied):
                await putter
        run(main())
        child.join(60)


def test_cancelling_an_await_across_processes_keeps_the_message_for_the_next_get():
    ctx = mp.get_context("fork")
    with pq.Queue(shared=True, **SMALL) as q:
        q.take("reader")
        ready, stop = ctx.Event(), ctx.Event()
        child = ctx.Process(target=aw.write_after, args=(q, 0.3, b"late", ready, stop))
        child.start()
        try:
            assert ready.wait(60)

            async def main():
                task = asyncio.create_task(q.reader.get_async())
                await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            run(main())
            assert q.reader.get(timeout=30) == b"late"
        finally:
            stop.set()
            child.join(60)


def test_close_in_a_reader_only_process_ends_the_await():
    # spawn: a fork child that closes after its parent leaves the name behind
    # (a known limit of the shared segment, not of asyncio).
    ctx = mp.get_context("spawn")
    with pq.Queue(shared=True, **SMALL) as q:
        ready, stop = ctx.Event(), ctx.Event()
        child = ctx.Process(target=aw.write_after, args=(q, 600, b"never", ready, stop))
        child.start()
        try:
            assert ready.wait(60)
            q.take("reader")

            async def main():
                task = asyncio.create_task(q.reader.get_async())
                await asyncio.sleep(0.05)
                q.close()   # this process does not own the writer: only the bell ends the wait
                with pytest.raises(pq.QueueClosed):
                    await task
            run(main())
        finally:
            stop.set()
            child.join(60)
