"""What the asyncio cross-process tests run in their other processes
(importable by name, so that spawn finds them)."""
import asyncio
import time

import pyqueue as pq


def put_async_all(q, n, then_detach=True):
    """The writer's process: n messages by put_async, then the end of stream."""
    async def main():
        for i in range(n):
            await q.writer.put_async(b"%d" % i)
        if then_detach:
            q.writer.detach()
    asyncio.run(main())
    q.close()
    return n


def get_async_all(q):
    """The reader's process: every message by ``async for``; returns them."""
    async def main():
        return [m async for m in q.reader]
    got = asyncio.run(main())
    q.close()
    return got


def echo(a, b, n):
    """Await n messages on a, send each back on b."""
    async def main():
        for _ in range(n):
            await b.writer.put_async(await a.reader.get_async(timeout=30))
    asyncio.run(main())


def put_objects(q, items):
    async def main():
        for item in items:
            await q.writer.put_async(item)
        q.writer.detach()
    asyncio.run(main())


def write_then_hang(q, n, ready):
    """Take the writer, write n messages, say so, and wait to be killed."""
    for i in range(n):
        q.writer.put(b"%d" % i)
    ready.set()
    time.sleep(600)


def read_then_hang(q, n, ready):
    """Take the reader, read n messages, say so, and wait to be killed."""
    for _ in range(n):
        q.reader.get(timeout=30)
    ready.set()
    time.sleep(600)


def write_after(q, delay, data, ready, stop):
    """Take the writer, say so, write data after delay seconds (unless stop
    is set by then), then close once stop is set."""
    q.take("writer")
    ready.set()
    if not stop.wait(delay):
        q.writer.put(data)
    stop.wait(60)
    q.close()
