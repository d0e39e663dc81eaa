"""asyncio on the queue: ``await reader.get_async()``, ``async for msg in
reader``, ``await writer.put_async(item)`` (DESIGN §5.5).

No await polls.  A message (or room) already there is taken by the task
itself, with no thread involved.  Otherwise the side's waiter -- one daemon
thread per side and process, started on first need -- waits in C without the
GIL and consumes nothing (pyq_reader_wait_bell, pyq_writer_wait_room: spin,
then sleep; across processes on the futex the other side's publish or block
return wakes, in-process on a bell in steps growing to 5 ms) and then wakes the
task with ``loop.call_soon_threadsafe``; the task takes the message (or
writes) itself.  So a cancelled task has taken nothing: cancelling rings the
waiter's bell and returns once the waiter has given the side back, and the
message that arrived meanwhile is the next reader call's.

Awaits on one side are served one at a time, in the order they began (an
asyncio.Lock); while one waits the side is busy, as during a blocking get(),
so a synchronous call on it from another thread raises QueueError ("in use").
A side is awaited from one event loop at a time.

The module imports nothing of asyncio until an await needs to wait.
"""
import os
import threading
import time
import weakref

from . import serializer as _serializer
from .validate import timeout_ns as _timeout_ns
from ._pyq import ffi, lib
from .errors import EndOfStream, QueueEmpty, QueueError, QueueFull, check

_SIDES = {"reader": lib.PYQ_SIDE_READER, "writer": lib.PYQ_SIDE_WRITER}
# A waiter thread with nothing to wait for ends after this long.
_IDLE_S = 5.0
_NOTHING = object()


class _Waiter:
    """One side's waiting thread in this process, and the FIFO of the tasks
    that await the side (asyncio.Lock).

    The loop's thread hands the thread one job at a time (the lock's holder's)
    under ``_cv``; the thread owns the side only inside the C wait (``_ptr``
    is set then, and only then may the bell be rung through the queue).  The
    waiter holds the queue weakly: a queue nobody holds is closed by its
    finalizer, which rings here."""

    def __init__(self, queue, name):
        self._queue = weakref.ref(queue)
        self._name = name
        self._code = _SIDES[name]
        self._cv = threading.Condition(threading.Lock())
        self._job = None        # (loop, future, timeout_ns, length) of the awaiting task
        self._ptr = None        # the queue's handle while the thread waits in C
        self._thread = None
        self._bell = ffi.new("uint32_t *")
        self._lock = None       # the asyncio.Lock of the awaiting tasks, and its loop
        self._lock_loop = None
        self.queued = 0         # tasks inside await (holding or waiting for the lock)

    # -- the loop's side --------------------------------------------------------

    def turn(self, loop):
        """The asyncio.Lock that orders this side's awaits in ``loop``."""
        if self._lock_loop is not loop:
            if self._lock is not None and self._lock.locked():
                raise QueueError("the %s is awaited from another event loop; one event loop "
                                 "(one thread) per side" % self._name)
            import asyncio
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def wait(self, loop, tns, length=0):
        """Wait (in the thread) until the side has something, the timeout
        (ns, None: none) passes or the bell rings; consumes nothing.  The C
        result code, or the exception the thread met."""
        fut = loop.create_future()
        with self._cv:
            self._bell[0] = 0
            self._job = (loop, fut, lib.PYQ_WAIT_FOREVER if tns is None else tns, length)
            if self._thread is None:
                self._thread = threading.Thread(target=self._main, daemon=True,
                                                name="pyqueue-aio-%s" % self._name)
                self._thread.start()
            self._cv.notify()
        try:
            outcome = await fut
        except BaseException:
            self._withdraw(fut)
            raise
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _withdraw(self, fut):
        """The task awaiting fut was cancelled: take its job back, ringing the
        thread out of its wait, and return once the side is free again."""
        with self._cv:
            while self._job is not None and self._job[1] is fut:
                if self._ptr is not None:
                    lib.pyq_queue_ring(self._ptr, self._code, self._bell)
                else:
                    self._bell[0] = 1   # not in C yet: its first look sees it
                self._cv.wait(0.05)

    def ring(self):
        """Ring the thread out of its wait now, if it waits (close(), and the
        other side's progress in-process).  Any thread."""
        if self._ptr is None:
            return
        with self._cv:
            if self._ptr is not None:
                lib.pyq_queue_ring(self._ptr, self._code, self._bell)

    # -- the thread -------------------------------------------------------------

    def _main(self):
        while True:
            with self._cv:
                while self._job is None:
                    if not self._cv.wait(_IDLE_S) and self._job is None:
                        self._thread = None
                        return
                loop, fut, tns, length = self._job
            try:
                outcome = self._wait_in_c(tns, length)
            except BaseException as e:   # the side closed or in use: the task's error
                outcome = e
            with self._cv:
                self._job = None
                self._cv.notify_all()
            try:
                loop.call_soon_threadsafe(_settle, fut, outcome)
            except RuntimeError:   # the loop is closed: nobody waits any more
                pass

    def _wait_in_c(self, tns, length):
        queue = self._queue()
        if queue is None:
            return lib.PYQ_ECLOSED
        side = getattr(queue, self._name)
        with side._call() as ptr:   # owns the side; close() waits for it
            with self._cv:
                self._ptr = ptr
            try:
                # close() sets _closing before it rings (closing()): either it
                # rang us, or we see the flag here.
                if queue._closing:
                    return lib.PYQ_ECLOSED
                if self._code == lib.PYQ_SIDE_READER:
                    return lib.pyq_reader_wait_bell(ptr, tns, self._bell)
                return lib.pyq_writer_wait_room(ptr, length, tns, self._bell)
            finally:
                with self._cv:
                    self._ptr = None


def _settle(fut, outcome):
    if not fut.done():
        fut.set_result(outcome)


class _Waiters:
    """A queue's two waiters in this process (a fork() child makes its own)."""

    def __init__(self, queue):
        self.pid = os.getpid()
        self.reader = _Waiter(queue, "reader")
        self.writer = _Waiter(queue, "writer")


def _waiters(queue):
    ws = queue.__dict__.get("_aio")
    if ws is None or ws.pid != os.getpid():
        ws = queue.__dict__["_aio"] = _Waiters(queue)
    return ws


def closing(queue):
    """Queue.close(): ring this process's waiters out of their waits, so that
    close() need not wait for them and their tasks see the queue closed."""
    ws = queue.__dict__.get("_aio")
    if ws is not None and ws.pid == os.getpid():
        ws.reader.ring()
        ws.writer.ring()


def _ns_left(deadline):
    return None if deadline is None else max(0, deadline - time.monotonic_ns())


async def _slow(waiter, take, tns, length, expired):
    """Await ``take()`` (a value, or _NOTHING while there is none) in turn:
    the side's lock, then waits in the thread until take() has a value, the
    timeout passes (``expired()`` is raised) or the task is cancelled."""
    import asyncio
    loop = asyncio.get_running_loop()
    deadline = None if tns is None else time.monotonic_ns() + tns
    lock = waiter.turn(loop)
    waiter.queued += 1
    try:
        if deadline is None:
            await lock.acquire()   # free: no suspension
        else:
            try:
                async with asyncio.timeout(tns / 1e9):
                    await lock.acquire()
            except TimeoutError:
                raise expired() from None
        try:
            while True:
                got = take()
                if got is not _NOTHING:
                    return got
                left = _ns_left(deadline)
                if left == 0:
                    raise expired()
                rc = await waiter.wait(loop, left, length)
                if rc < 0 and rc not in (lib.PYQ_EAGAIN, lib.PYQ_EINTR):
                    got = take()   # words the error as the synchronous call does
                    if got is not _NOTHING:
                        return got
                    check(rc, "%s_async" % ("get" if length is None else "put"))
        finally:
            lock.release()
    finally:
        waiter.queued -= 1


class AsyncReader:
    """The Reader's asyncio methods (pyqueue.queue.Reader)."""

    __slots__ = ()

    async def get_async(self, timeout=None):
        """``await reader.get_async(timeout=None)``: get() for a coroutine.
        The next message (an object with a serializer, as get() returns it),
        waiting for one for at most ``timeout`` seconds (None: no limit)
        without blocking the event loop and without polling.  Raises QueueEmpty
        (a queue.Empty) when the time runs out, EndOfStream once the writer has
        detached (or its process died) and every message was read, QueueClosed
        after close().  Cancelling the awaiting task takes no message.
        ``async for msg in reader`` gets every message this way until the end
        of the stream."""
        tns = _timeout_ns(timeout)
        queue = self._queue
        waiter = _waiters(queue).reader
        if not waiter.queued:   # nobody ahead: a message already there needs no thread
            try:
                msg = self.get_nowait()
            except QueueEmpty:
                if tns == 0:
                    raise QueueEmpty("get_async: no message within %r s" % (timeout,),
                                     lib.PYQ_EAGAIN) from None
            else:
                _room_made(queue)
                return msg
        msg = await _slow(waiter, self._get_or_nothing, tns, None,
                          lambda: QueueEmpty("get_async: no message within %r s" % (timeout,),
                                             lib.PYQ_EAGAIN))
        _room_made(queue)
        return msg

    def _get_or_nothing(self):
        try:
            return self.get_nowait()
        except QueueEmpty:
            return _NOTHING

    def __aiter__(self):
        """``async for msg in reader``: every message, as get_async() returns
        them, until the end of the stream (EndOfStream ends the loop)."""
        return self

    async def __anext__(self):
        try:
            return await self.get_async()
        except EndOfStream:
            raise StopAsyncIteration from None


class AsyncWriter:
    """The Writer's asyncio method (pyqueue.queue.Writer)."""

    __slots__ = ()

    async def put_async(self, item, timeout=None):
        """``await writer.put_async(item, timeout=None)``: put() for a
        coroutine.  Writes ``item`` (bytes-like; any object with a
        serializer), waiting for room for at most ``timeout`` seconds (None: no
        limit) without blocking the event loop and without polling.  Raises
        QueueFull (a queue.Full) when the time runs out, MessageTooLarge,
        QueueClosed after close() or detach(), PeerDied when a shared queue's
        reader process died while the queue was full.  A cancelled put_async
        has written nothing."""
        tns = _timeout_ns(timeout)
        queue = self._queue
        dumps = _dumps_of(queue)
        data = item if dumps is None else dumps(item)
        waiter = _waiters(queue).writer
        if not waiter.queued:
            if self.try_write(data):   # refuses a bad message, a closed queue
                _message_made(queue)
                return
            if tns == 0:
                raise QueueFull("put_async: no room within %r s" % (timeout,), lib.PYQ_EAGAIN)
        length = len(data) if isinstance(data, bytes) else memoryview(data).nbytes
        await _slow(waiter, lambda: True if self.try_write(data) else _NOTHING, tns, length,
                    lambda: QueueFull("put_async: no room within %r s" % (timeout,),
                                      lib.PYQ_EAGAIN))
        _message_made(queue)


def _dumps_of(queue):
    ser = queue._serializer
    if ser is None:
        return None
    cached = queue.__dict__.get("_aio_dumps")
    if cached is None or cached[0] is not ser:
        cached = queue.__dict__["_aio_dumps"] = (ser, _serializer.resolve(ser)[0])
    return cached[1]


# In-process the writer's publish wakes nobody (the waits sleep in steps), so
# the awaits of one process wake each other's waiter at once; across
# processes the core's futex wake-ups do it.
def _message_made(queue):
    ws = queue.__dict__.get("_aio")
    if ws is not None and not queue._shared and ws.reader._ptr is not None:
        ws.reader.ring()


def _room_made(queue):
    ws = queue.__dict__.get("_aio")
    if ws is not None and not queue._shared and ws.writer._ptr is not None:
        ws.writer.ring()
