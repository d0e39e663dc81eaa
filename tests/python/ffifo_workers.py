"""What test_faster_fifo_api.py runs in its other processes and threads
(importable by name, so that spawn can find it): faster-fifo's test loops as
its users write them, one producer and one consumer."""
import queue

import numpy as np

import pyqueue as pq

MSG_SIZE = 5


def make_msg(i):
    return (i,) * MSG_SIZE


def make_big_msg(i, limit=200_000):
    """An array of up to ``limit`` bytes (faster-fifo's goes to 10 MB: here the
    largest message is block_size - 8)."""
    n = int(np.random.default_rng(i).integers(1, min((i + 1) * 1000, limit)))
    return np.full(n, i % 251, np.uint8)


def produce(q, n, make=make_msg):
    """faster-fifo's producer: put with a short timeout, again after queue.Full."""
    i = 0
    while i < n:
        try:
            q.put(make(i), timeout=0.01)
            i += 1
        except queue.Full:
            pass
    return n


def produce_and_end(q, n, make=make_msg):
    """The producer as a process: its messages, then the end of the stream."""
    produce(q, n, make)
    q.writer.detach()


def consume(q, consume_many, total=None, check=None):
    """faster-fifo's consumer: get_many with a short timeout and a count limit,
    again after queue.Empty; it ends on the count or, where faster-fifo's looks
    at is_closed(), on pyqueue's end of stream.  Returns what it got, in order
    (each checked by ``check`` and dropped when one is given)."""
    got, count = [], 0
    while total is None or count < total:
        try:
            msgs = q.get_many(timeout=0.01, max_messages_to_get=consume_many)
        except queue.Empty:
            continue
        except pq.EndOfStream:
            break
        for m in msgs:
            if check is not None:
                check(count, m)
            else:
                got.append(m)
            count += 1
    return got if check is None else count


def check_msg(i, m):
    assert m == make_msg(i), (i, m)


def check_big_msg(i, m):
    expect = make_big_msg(i)
    assert m.dtype == np.uint8 and len(m) == len(expect) and (m == expect).all(), i


def consume_process(q, consume_many, big, result):
    """The consumer as a process: every message checked; the count to ``result``."""
    result.put(consume(q, consume_many, check=check_big_msg if big else check_msg))


def spawn_producer(q, n):
    for i in range(n):
        q.put([1, 2, 3, i])
    q.writer.detach()


def spawn_consumer(q, result):
    got = []
    while True:
        try:
            got.append(q.get(timeout=10))
        except (queue.Empty, pq.EndOfStream):
            break
    result.put(got)


def nothing(*queues):
    """A pool initializer that takes queues and does nothing with them."""
