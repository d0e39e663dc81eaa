"""Queue, Writer and Reader: the Python face of the C queue (DESIGN §5).

Arguments are checked here first, with messages that name the parameter; the C
core checks again.  The per-message calls (write, try_write, put, put_nowait,
poll, read, get, get_nowait, iteration) are CPython C-API methods of the base
types in pyqueue._pyext: they keep the GIL while they cannot wait, so no other
Python thread enters the side meanwhile and no lock is taken.  A call that
releases the GIL (a wait, a big copy, a cffi call here) first marks its side
busy: another thread's call on that side is a clear QueueError, and close()
waits for the busy side before it unmaps the pool (DESIGN §5.3).

Lifetime (RELIABILITY.md, "Object lifetime"): a queue has exactly one Writer
and one Reader, built by the queue and reached as ``q.writer`` / ``q.reader``;
close() takes their handle away before anything else, so no Python object
outlives it.  A queue cannot be copied or pickled (its memory is private to
this process), and after ``fork()`` the child's copy raises QueueError instead
of delivering the parent's messages twice.  A shared queue (``Queue(shared=True)``, DESIGN §3.9) lives in a
segment of /dev/shm: it pickles to its name, ``Queue.attach(name)`` maps it in
another process, and each side is taken by the first process that uses it.
"""
import atexit
import os
import sys
import threading
import time
import weakref

from . import _pyext, cstruct, frames as _frames, serializer as _serializer, validate
from . import aio as _aio
from .errors import (EndOfStream, MessageTooLarge, PeerDied, QueueClosed, QueueEmpty,
                     QueueError, QueueFull, check, error_for)
from ._pyq import ffi, lib
from .config import QueueConfig
from .config import converted as config_values
from .config import large_bytes_of as _large_bytes_of
from .config import refused as config_refused
from .config import to_c as _config_to_c

# A blocking call waits in C in slices this long, so Ctrl-C and close() are seen.
_WAIT_SLICE_NS = _pyext.SLICE_NS
_SIDES = {"writer": lib.PYQ_SIDE_WRITER, "reader": lib.PYQ_SIDE_READER}



def _timeout_ns(timeout):
    """ns to wait, rounded up, or None for no limit (validate.timeout_ns).  The
    C methods parse a float or an int themselves by the same rules
    (csrc/pyext/side.c, pyext_timeout) and call this for any other type."""
    return validate.timeout_ns(timeout)


def _max_messages(value):
    return validate.integer("max_messages", value, 0, 2**63 - 1)


def _address(name):
    return int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))


# The one compiled core is pyqueue._pyq's: _pyext gets the addresses of the
# functions it calls, once (DESIGN §5.3).
_pyext.setup({name: _address(name) for name in _pyext.CORE_FUNCTIONS},
             {"error_for": error_for, "timeout_ns": _timeout_ns, "max_messages": _max_messages,
              "QueueError": QueueError, "QueueEmpty": QueueEmpty, "QueueFull": QueueFull,
              "EndOfStream": EndOfStream})


def _numpy():
    """numpy, imported on the first array call: ``import pyqueue`` does not load it."""
    import numpy
    return numpy


def check_array(arr, name, writable=False, width=None):
    """A 2-D, C-contiguous uint8 ndarray (n, size), or a clear exception."""
    np = _numpy()
    if not isinstance(arr, np.ndarray):
        raise TypeError("%s must be a numpy.ndarray, got %s" % (name, type(arr).__name__))
    if arr.dtype != np.uint8:
        raise ValueError("%s must have dtype uint8, got %s" % (name, arr.dtype))
    if arr.ndim != 2:
        raise ValueError("%s must be 2-D (n_messages, message_size), got shape %s" % (name, arr.shape))
    if not arr.flags.c_contiguous:
        raise ValueError("%s must be C-contiguous (use numpy.ascontiguousarray)" % name)
    if writable and not arr.flags.writeable:
        raise ValueError("%s must be writable" % name)
    if width is not None and arr.shape[1] > width:
        raise MessageTooLarge("%s rows are %d bytes; the largest message is %d bytes"
                              % (name, arr.shape[1], width), lib.PYQ_ETOOBIG)
    return arr


_BUILD = object()   # only Queue builds its sides


def _not_shared(what):
    return TypeError("%s cannot be copied or pickled: its memory is private to this process. "
                     "Make it with pyqueue.Queue(..., shared=True) to pass it to another "
                     "process, or pass the one queue object between threads" % what)


def _in_multiprocessing_feeder():
    # A multiprocessing.Queue pickles in its feeder thread, after put() has
    # returned: an error raised there is only printed (the default
    # _on_queue_feeder_error), and the receiver's get() would wait for good.
    # Found by the feeder's own code object on the stack; a queue that handles
    # feeder errors itself (concurrent.futures fails the future) gets the error.
    mpq = sys.modules.get("multiprocessing.queues")
    if mpq is None:
        return False
    feed = mpq.Queue._feed.__code__
    f = sys._getframe(2)
    while f is not None:
        if f.f_code is feed:
            onerror = f.f_locals.get("onerror")
            return getattr(onerror, "__func__", onerror) is mpq.Queue._on_queue_feeder_error
        f = f.f_back
    return False


def _refuse_private(what):
    """Refuse to pickle an in-process queue (or side): a TypeError now, or --
    inside a multiprocessing.Queue's feeder thread, where no caller would see
    it -- a pickle whose loading raises it in the receiver's get()."""
    if _in_multiprocessing_feeder():
        return (_unpickle_private, (what,))
    raise _not_shared(what)


def _unpickle_private(what):
    raise _not_shared(what + " sent through a multiprocessing.Queue")


class _SideLock:
    """A side's ownership as a lock (acquire, release, locked, ``with``), for
    the package's C threads: pyqueue.threads holds it while a C thread runs
    the side (released by the thread's reaper), the soak while its C loop
    does.  Held, the side is busy: Python calls on it are a QueueError and
    ``Queue.close()`` waits for it."""

    __slots__ = ("_side",)

    def __init__(self, side):
        self._side = side

    def acquire(self, blocking=True):
        side = self._side
        if side._pending_count():
            # A C thread would start after them and they would never be read.
            raise QueueError("the %s holds %d messages that iteration took from the queue; "
                             "read them (poll()) before a C thread takes the side"
                             % (side._name, side._pending_count()))
        return side._own(blocking, False)

    def release(self):
        self._side._disown()

    def locked(self):
        return self._side._is_busy()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


class _Call:
    """``with side._call() as ptr:`` own the side for a call of this thread that
    releases the GIL (the cffi calls below): busy for other threads, never
    waiting for them."""

    __slots__ = ("_side",)

    def __init__(self, side):
        self._side = side

    def __enter__(self):
        side = self._side
        if not side._own(False, True):
            if side._is_closed():
                raise side._closed_error()
            raise side._in_use_error()
        try:
            bound = not side._is_closed() or side._claim()  # a shared side's first use
        except BaseException:
            side._disown()
            raise
        if not bound:
            side._disown()
            raise side._closed_error()
        return side._queue._ptr

    def __exit__(self, *exc):
        self._side._disown()


class _Side:
    """What Writer and Reader add to their C base: the queue, the errors the C
    methods raise, copy/pickle refusal and stdlib-style sizes."""

    __slots__ = ()
    _name = "side"

    def _setup(self, queue, token):
        if token is not _BUILD:
            raise TypeError("a queue has exactly one %s: use q.%s instead of building one"
                            % (self._name, self._name))
        self._queue = queue
        self._bind(int(ffi.cast("uintptr_t", queue._ptr)), queue.max_message)
        self._lock_view = _SideLock(self)

    @property
    def side_lock(self):
        """This side's ownership as a lock.  Package-internal: C code that runs
        this side from its own thread (pyqueue.threads, the lab's loops) holds
        it for as long as it runs, so Python calls on the side fail with
        QueueError ("in use") and ``Queue.close()`` waits for it instead of
        racing it or unmapping the pool."""
        return self._lock_view

    def _call(self):
        return _Call(self)

    def _closed_error(self):
        queue = getattr(self, "_queue", None)
        if queue is None:
            return QueueClosed("this %s belongs to no queue" % self._name, lib.PYQ_ECLOSED)
        return queue._closed_error()

    def _in_use_error(self):
        return QueueError("the %s side is in use by another thread (a C thread or a waiting "
                          "call owns it); one thread per side" % self._name)

    def _claim(self, flags=0):
        """Take a shared queue's side for this process and bind it: called by
        the C methods when the side has no handle (its first use here) and by
        Queue.take (``flags``: PYQ_TAKE_DEAD).  True then, False when the queue
        is closed."""
        q = getattr(self, "_queue", None)
        if q is None or q._ptr is None or q._closing or not q._shared \
                or q._pid != os.getpid():
            return False
        q._take_side(self._name, flags)
        with q._state_lock:     # close() clears the handles under it
            if q._ptr is None or q._closing:
                return False
            self._rebind(int(ffi.cast("uintptr_t", q._ptr)))
        return True

    def _end_of_stream(self):
        return self._queue._end_of_stream()

    def qsize(self):
        """queue.Queue.qsize: messages written and not yet read (see Queue.qsize)."""
        return self._queue.qsize()

    def empty(self):
        """queue.Queue.empty: ``qsize() == 0`` (see Queue.empty)."""
        return self._queue.empty()

    def full(self):
        """queue.Queue.full: every block of the pool holds unread messages (see Queue.full)."""
        return self._queue.full()

    def __copy__(self):
        raise _not_shared("a queue's %s" % self._name)

    def __deepcopy__(self, memo):
        raise _not_shared("a queue's %s" % self._name)

    def __reduce_ex__(self, protocol):
        return _refuse_private("a queue's %s" % self._name)


class Writer(_Side, _aio.AsyncWriter, _pyext.WriterCore):
    """The producing side: ``q.writer``, the queue's one writer; ``with
    q.writer as w:`` ends the stream (detach()) when the block is left.

    ``write``, ``try_write``, ``put``, ``put_nowait``, ``put_many`` and ``flush`` are C
    methods (pyqueue._pyext.WriterCore) that keep the GIL while they need
    not wait; the rest are Python over cffi.  One thread per side: a call while another
    thread's waiting call or a C thread owns the side raises QueueError."""

    __slots__ = ("_queue", "_lock_view")
    _name = "writer"

    def __init__(self, queue, _token=None):
        self._setup(queue, _token)
        cfg = queue._config
        # put_many's room check counts records as the core frames them (DESIGN §3.1).
        self._set_framing(cfg.block_size, 64 if cfg.scan_current else 8,
                          cfg.hot_blocks + cfg.spill_blocks)

    def put_many_nowait(self, items):
        """faster-fifo's put_many_nowait: ``put_many(items, block=False)``."""
        return self.put_many(items, False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Leaving ``with q.writer:`` ends the stream (detach()): the reader
        gets every message, then EndOfStream.  Nothing if the queue is closed."""
        if not self._queue.closed:
            self.detach()

    def _too_large(self, n):
        return MessageTooLarge("message is %d bytes; the largest is %d (Queue(max_message=...))"
                               % (n, self._queue.max_message), lib.PYQ_ETOOBIG)

    def write_batch(self, arr, timeout=None):
        """Write every row of a 2-D uint8 array as one message, without copying
        the array.  Returns the number written (all of them).  On timeout raises
        QueueFull whose ``written`` attribute says how many rows went in; any
        exception out of the call (QueueClosed, KeyboardInterrupt) carries
        ``written`` too.  C is called for at most _BATCH_BYTES at a time, so
        Ctrl-C is seen within one wait slice even when the queue never fills."""
        np = _numpy()
        n = arr.shape[0] if isinstance(arr, np.ndarray) and arr.ndim == 2 else None
        if n == 0 and arr.dtype == np.uint8:
            return 0   # zero rows: nothing to write, whatever their width
        check_array(arr, "arr", width=self._queue.max_message)
        n, size = arr.shape
        tns = None if timeout is None else _timeout_ns(timeout)
        buf = ffi.from_buffer(arr)
        err = ffi.new("int *")
        step = max(1, _BATCH_BYTES // max(size, 1))
        deadline = None if tns is None else time.monotonic_ns() + tns
        with self._call() as ptr:
            # What an exception reports comes from C's own counter: a
            # KeyboardInterrupt raised as a C call returns would lose a count
            # kept in a Python variable.  Without one, the calls' results add up.
            start = self._messages_written()
            try:
                done = 0
                while done < n:
                    left = _WAIT_SLICE_NS if deadline is None else min(_WAIT_SLICE_NS, deadline - time.monotonic_ns())
                    done += lib.pyq_writer_write_batch(ptr, buf + done * size, min(step, n - done),
                                                       size, max(left, 0), err)
                    if err[0] == 0 or (err[0] == lib.PYQ_EAGAIN and (deadline is None or left > 0)):
                        continue
                    check(err[0], "write_batch")
            except BaseException as e:
                e.written = _written(ptr) - start
                raise
        return n

    # ---- zero copy: arrays (claim() is a C method of WriterCore) ----

    def put_array(self, a, timeout=None):
        """Write a numpy array as one message -- dtype, shape and its elements
        in C order -- copied once, straight into the queue (a claim).  A
        Fortran-ordered or non-contiguous array is copied into C order; 0-d and
        empty arrays go too; a dtype holding Python objects raises TypeError.
        Waits for room as write() does.  Read it with ``Reader.get_array()``
        (pyqueue.frames describes the message)."""
        _frames.put_array(self, a, timeout)

    def detach(self):
        """End of stream: publish every message written so far and write no
        more (later writes raise QueueClosed).  The reader still gets every
        message; then ``Reader.read()`` raises EndOfStream and iterating over
        the reader stops.  Idempotent."""
        with self._call() as ptr:
            lib.pyq_writer_detach(ptr)


class Reader(_Side, _aio.AsyncReader, _pyext.ReaderCore):
    """The consuming side: ``q.reader``, the queue's one reader (also a context
    manager: leaving ``with q.reader:`` consumes and drops nothing).

    ``poll``, ``read``, ``get``, ``get_nowait``, ``get_many`` and iteration are C methods
    (pyqueue._pyext.ReaderCore) that keep the GIL while a message is there;
    ``poll_into`` is Python over cffi.  Iterating yields every message, in
    order, as bytes (objects with a serializer, as get() returns them), until
    the writer has detached and all were read; it takes
    everything visible in one C call and hands it out message by message, and
    a loop left early leaves those messages to the next reader call (poll,
    read, get, poll_into serve them first).  One thread per side, as for the
    Writer."""

    __slots__ = ("_queue", "_lock_view")
    _name = "reader"

    def __init__(self, queue, _token=None):
        self._setup(queue, _token)

    def get_many_nowait(self, max_messages_to_get=None, max_bytes_to_get=None):
        """faster-fifo's get_many_nowait: ``get_many(False, None, ...)``."""
        return self.get_many(False, None, max_messages_to_get, max_bytes_to_get)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """``with q.reader:`` scopes the reading; leaving it consumes and
        drops nothing (messages not read stay for the next call)."""

    # ---- zero copy: arrays (get_view() is a C method of ReaderCore) ----

    def get_array(self, block=True, timeout=None, copy=False):
        """The next message, written by ``Writer.put_array``, as a numpy array
        of its dtype and shape (C order).  ``copy=False``: a read-only array
        over the queue's own bytes, whose base holds the message's view -- its
        space goes back to the writer when the array and every array made from
        it are collected; until then other reader calls raise QueueError (one
        view at a time), so drop it (``del a``) or pass ``copy=True``, which
        returns a private copy and releases the message at once.  Waits as
        get(block, timeout) does.  A message that is not an array raises
        ValueError (it is consumed)."""
        return _frames.get_array(self, block, timeout, copy)

    def poll_into(self, out):
        """Fill rows of a 2-D uint8 array with messages of exactly out.shape[1]
        bytes, without copying through Python.  Returns the number of rows filled.
        A message of another size stops the call and stays in the queue; if it is
        the first one, QueueError is raised (read it with poll())."""
        check_array(out, "out", writable=True)
        n, size = out.shape
        if n == 0:
            return 0
        if size > 0xFFFFFFFF:   # C's message length is 32 bits: no message is this long
            raise ValueError("out rows are %d bytes; a message is at most %d bytes"
                             % (size, self._queue.max_message))
        buf = ffi.from_buffer(out, require_writable=True)
        # Messages iteration took from the queue come first (DESIGN §5.3).
        k = self._pending_into(int(ffi.cast("uintptr_t", buf)), n, size) \
            if self._pending_count() else 0
        if k < 0:
            raise _wrong_size(-1 - k, size)
        if k == n or self._pending_count():   # full, or a pending message of another size
            return k
        with self._call() as ptr:
            start = self._messages_read()
            try:
                got = lib.pyq_reader_poll_fixed(ptr, buf + k * size, n - k, size)
            except BaseException as e:
                e.filled = k + _read(ptr) - start   # rows filled before the interrupt
                raise
            if got == lib.PYQ_ERANGE:
                if k:
                    return k
                raise _wrong_size(lib.pyq_reader_next_len(ptr), size)
        return k + check(got, "poll_into")


def _wrong_size(length, size):
    return QueueError("the next message is %d bytes but poll_into(out) reads %d-byte messages; "
                      "it stays in the queue (read it with poll())" % (length, size),
                      lib.PYQ_ERANGE)


# The keys of Queue.stats(): pyq_stats_t's fields.
STATS = cstruct.fields("pyq_stats_t")
_BATCH_BYTES = 8 << 20   # one write_batch C call copies at most this much


def _written(ptr):
    st = ffi.new("pyq_stats_t *")
    lib.pyq_queue_stats(ptr, st)
    return st.messages_written


def _read(ptr):
    st = ffi.new("pyq_stats_t *")
    lib.pyq_queue_stats(ptr, st)
    return st.messages_read


class Queue:
    """A single-producer / single-consumer message queue over a two-tier block pool.

    ``config`` is a pyqueue.QueueConfig (None: the defaults); keyword arguments
    override its fields (``Queue(block_size=4096, publish="max")``).  Every
    value is checked and a bad one raises ValueError naming it.  The whole pool
    is mapped here (and touched only as it is used).  The defaults are C's but
    ``publish``: 'each' from Python, so that a put is visible to the reader when
    it returns, as code written for queue.Queue expects ('max', C's default,
    publishes a block at a time or on flush(): faster, for code that flushes).

    ``shared=True`` makes the queue in shared memory (DESIGN §3.9), called
    ``name`` in /dev/shm (None: a fresh ``pyq-...`` name), so that the writer
    and the reader may be different processes: ``Queue.attach(name)`` maps it
    elsewhere, and the queue pickles to a handle that attaches (for
    multiprocessing and concurrent.futures).  Each side belongs to the first
    process that uses it (or ``take()``s it); the segment is removed when its
    last user closes it.  Its room in /dev/shm is reserved at creation
    (MemoryError then, naming the free space, never a SIGBUS later), and
    unless ``spill_blocks`` is given (here or in ``config``) a shared queue's
    pool is at most 31 MiB -- ``spill_blocks = 31 MiB // block_size -
    hot_blocks`` -- so that its segment fits in 32 MiB, half of Docker's
    default 64 MiB /dev/shm.

    ``serializer`` makes put/get carry Python objects (pyqueue.serializer):
    None (bytes-like messages), ``"pickle"``, or any object with ``dumps`` and
    ``loads``.  The standard library's and faster-fifo's names work on the
    queue itself too -- ``q.put``, ``q.get``, ``q.put_many``, ``q.get_many``
    and their ``_nowait`` forms are ``q.writer``'s and ``q.reader``'s -- so
    code written for queue.Queue, multiprocessing.Queue or faster-fifo with one
    producer and one consumer runs unchanged.
    """

    def __init__(self, config=None, shared=False, name=None, serializer=None, **overrides):
        if "_ptr" in self.__dict__:
            raise TypeError("Queue.__init__ called on a queue that already exists; make a new Queue")
        self._ptr = None
        self._closing = False
        self._pid = os.getpid()
        shared = validate.flag("shared", shared)
        if name is not None and not shared:
            raise ValueError("name is for a shared queue: pass shared=True with it")
        _serializer.resolve(serializer)   # a bad one refused before anything is made
        # Converted here, checked once: by pyq_queue_create*, whose refusal is
        # turned into the ValueError that names the field.
        values = config_values(config, **overrides)
        if shared and config is None and "spill_blocks" not in overrides:
            _shared_pool(values, "large_bytes" in overrides)
        c_cfg = _config_to_c(values)
        pool_bytes = values["block_size"] * (values["hot_blocks"] + values["spill_blocks"]) \
            + _large_bytes_of(values)
        out = ffi.new("pyq_queue_t **")
        hints = ({lib.PYQ_EPERM: "mlock of the %d-byte pool was refused (RLIMIT_MEMLOCK?); "
                                 "use mlock=False" % pool_bytes} if values["mlock"] else {})
        if shared:
            name = _new_name() if name is None else _check_name(name)
            hints[lib.PYQ_EEXIST] = (FileExistsError, "a shared queue named %r exists; choose "
                                     "another name (pyqueue.cleanup_stale() removes the leftovers "
                                     "of dead runs)" % name)
            hints[lib.PYQ_ENOMEM] = (MemoryError, "no room for a %d-byte shared queue in "
                                     "/dev/shm (%s); a smaller spill_blocks needs less"
                                     % (pool_bytes, _shm_room()))
            hints[lib.PYQ_EMFILE] = (OSError, "too many open files: a shared queue needs a "
                                     "file descriptor for its segment (ulimit -n)")
            rc = lib.pyq_queue_create_shared(name.encode(), c_cfg, out, ffi.NULL)
        else:
            rc = lib.pyq_queue_create(c_cfg, out)
        if rc == lib.PYQ_EINVAL:
            error = config_refused(values)
            if error is not None:
                raise error
        check(rc, "Queue()", hints)
        self._setup(out[0], name if shared else None)
        self._use_serializer(serializer)

    @classmethod
    def attach(cls, name, trust_other_users=False, serializer=None):
        """The shared queue called ``name``, made by ``Queue(shared=True)`` in
        this or another process.  In the process that has it open already, the
        same Queue object.  Raises FileNotFoundError when there is no such
        queue, QueueError when the segment is not a queue of this pyqueue's
        layout (or truncated or damaged).

        The segment is a trust boundary (docs/RELIABILITY.md, "The shared
        segment as a trust boundary"): whoever may write it can stop the stream
        or garble it.  A segment owned by another user, or whose mode is wider
        than 0600, raises PermissionError unless ``trust_other_users=True`` --
        an explicit opt-in for a queue shared across users on purpose.  Either
        way no value in the segment can make this process crash, hang or read
        outside the queue (QueueCorrupted instead).

        ``serializer`` is Queue()'s: what put/get of this process's queue
        object carry (a serializer is not stored in the segment; a pickled
        queue brings its own).  Attaching a queue this process has open
        already with another serializer raises ValueError."""
        name = _check_name(name)
        trust = validate.flag("trust_other_users", trust_other_users)
        if serializer is not None:
            _serializer.resolve(serializer)     # refused before anything is mapped
        for q in list(_LIVE):
            if q.name == name and q._pid == os.getpid() and not q.closed:
                if serializer is not None and serializer != q._serializer:
                    raise ValueError("shared queue %r is open in this process with serializer "
                                     "%r; attach(serializer=%r) would change it for its other "
                                     "users" % (name, q._serializer, serializer))
                return q
        self = cls.__new__(cls)
        self._ptr = None
        self._closing = False
        self._pid = os.getpid()
        out = ffi.new("pyq_queue_t **")
        rc = lib.pyq_queue_attach_flags(name.encode(), -1,
                                        lib.PYQ_ATTACH_TRUST_OTHERS if trust else 0, out)
        check(rc, "Queue.attach(%r)" % name, {
            lib.PYQ_ENOSEG: (FileNotFoundError, "no shared queue named %r (never made, or "
                             "closed by its last user)" % name),
            lib.PYQ_EBADSEG: (QueueError, "/dev/shm/%s is not a pyqueue queue of this version's "
                              "layout (or it is truncated or damaged)" % name),
            lib.PYQ_EUNTRUSTED: (PermissionError, _untrusted(name)) if rc == lib.PYQ_EUNTRUSTED
            else None,
            lib.PYQ_EMFILE: (OSError, "Queue.attach(%r): too many open files (a shared queue "
                             "needs a descriptor for its segment; ulimit -n)" % name)})
        self._setup(out[0], name)
        self._trust = trust
        self._use_serializer(serializer)
        return self

    def _setup(self, ptr, name):
        self._ptr = ptr
        self.name = name
        self._shared = name is not None
        self._state_lock = threading.Lock()
        back = ffi.new("pyq_config_t *")
        lib.pyq_queue_config(self._ptr, back)
        self._config = QueueConfig.from_c(back)
        self.block_size = self._config.block_size
        self.publish = self._config.publish
        self.max_message = lib.pyq_queue_max_message(self._ptr)
        self.writer = Writer(self, _BUILD)
        self.reader = Reader(self, _BUILD)
        self._serializer = None
        self._delegate()
        if self._shared:   # taken on first use (_Side._claim) or by take()
            self.writer._close_side()
            self.reader._close_side()
        _LIVE.add(self)

    def take(self, side, dead=False):
        """Make this process the owner of ``side`` ("writer" or "reader") of a
        shared queue now, instead of at its first use (a no-op in-process).
        A side a live process owns raises QueueError; one whose process died
        raises PeerDied unless ``dead=True``: then a reader resumes at the next
        unconsumed message, and a dead writer's committed messages are
        published and its stream ends (writes raise QueueClosed)."""
        side = validate.choice("side", side, tuple(_SIDES))
        obj = getattr(self, side)
        with obj.side_lock:
            if self._ptr is None or self._closing:
                raise self._closed_error()
            if self._shared and not obj._claim(
                    lib.PYQ_TAKE_DEAD if validate.flag("dead", dead) else 0):
                raise self._closed_error()

    def _take_side(self, side, flags):
        code = _SIDES[side]
        rc = lib.pyq_queue_take(self._ptr, code, flags)
        if rc == lib.PYQ_EOWNED:
            raise QueueError("the %s side of shared queue %r is owned by process %d: one %s "
                             "process at a time" % (side, self.name,
                                                    lib.pyq_queue_owner(self._ptr, code), side), rc)
        if rc == lib.PYQ_EPEER:
            raise PeerDied("the %s side of shared queue %r belonged to process %d, which died; "
                           "q.take(%r, dead=True) takes it over"
                           % (side, self.name, -lib.pyq_queue_owner(self._ptr, code), side), rc)
        check(rc, "take(%r)" % side)
        if self._closing:   # close() began meanwhile and did not see us own it
            lib.pyq_queue_release(self._ptr, code)
            raise self._closed_error()

    def _owns(self, side):
        return lib.pyq_queue_owner(self._ptr, _SIDES[side]) == os.getpid()

    def _end_of_stream(self):
        dead = lib.pyq_queue_dead_peer(self._ptr, lib.PYQ_SIDE_WRITER) if self._shared else 0
        if dead:
            return EndOfStream("the writer process %d died; every message it committed was read"
                               % dead, lib.PYQ_ECLOSED)
        return EndOfStream("the writer has detached and every message was read", lib.PYQ_ECLOSED)

    @property
    def config(self):
        """The QueueConfig the queue was made with, as C holds it (pyq_queue_config)."""
        return self._config

    @property
    def serializer(self):
        """The ``serializer`` argument the queue was made with (None: bytes)."""
        return self._serializer

    def _use_serializer(self, serializer):
        dumps, loads = _serializer.resolve(serializer)
        self.writer._set_serializer(dumps, None)
        self.reader._set_serializer(None, loads)
        self._serializer = serializer

    # The standard library's and faster-fifo's names on the queue itself, for
    # code that holds one queue object on both sides (multiprocessing.Queue,
    # faster_fifo.Queue).  _delegate() binds the sides' C methods to the
    # instance, so ``q.put`` costs what ``q.writer.put`` does; these
    # definitions are what help() and the type stubs show.
    _DELEGATED = {"writer": ("put", "put_nowait", "put_many", "put_many_nowait"),
                  "reader": ("get", "get_nowait", "get_many", "get_many_nowait")}

    def _delegate(self):
        for side, names in self._DELEGATED.items():
            obj = getattr(self, side)
            for name in names:
                self.__dict__[name] = getattr(obj, name)

    def put(self, item, block=True, timeout=None):
        """``q.writer.put``: queue.Queue.put (an object with a serializer)."""
        return self.writer.put(item, block, timeout)

    def put_nowait(self, item):
        """``q.writer.put_nowait``."""
        return self.writer.put_nowait(item)

    def put_many(self, items, block=True, timeout=None):
        """``q.writer.put_many``: faster-fifo's put_many, all or none."""
        return self.writer.put_many(items, block, timeout)

    def put_many_nowait(self, items):
        """``q.writer.put_many_nowait``."""
        return self.writer.put_many_nowait(items)

    def get(self, block=True, timeout=None):
        """``q.reader.get``: queue.Queue.get (an object with a serializer)."""
        return self.reader.get(block, timeout)

    def get_nowait(self):
        """``q.reader.get_nowait``."""
        return self.reader.get_nowait()

    def get_many(self, block=True, timeout=None, max_messages_to_get=None, max_bytes_to_get=None):
        """``q.reader.get_many``: faster-fifo's get_many, a list of at least one."""
        return self.reader.get_many(block, timeout, max_messages_to_get, max_bytes_to_get)

    def get_many_nowait(self, max_messages_to_get=None, max_bytes_to_get=None):
        """``q.reader.get_many_nowait``."""
        return self.reader.get_many_nowait(max_messages_to_get, max_bytes_to_get)

    def put_async(self, item, timeout=None):
        """``await q.put_async(item)``: ``q.writer.put_async`` (pyqueue.aio)."""
        return self.writer.put_async(item, timeout)

    def get_async(self, timeout=None):
        """``await q.get_async()``: ``q.reader.get_async`` (pyqueue.aio)."""
        return self.reader.get_async(timeout)

    @property
    def closed(self):
        """True once close() has begun (or in a fork() child): calls raise."""
        return self._ptr is None or self._closing

    def _closed_error(self):
        if getattr(self, "_adopt_error", None) is not None:
            return self._adopt_error
        if self._pid != os.getpid():
            return QueueError("this queue belongs to process %d: after fork() an in-process "
                              "queue cannot be used in the child (make it with "
                              "pyqueue.Queue(..., shared=True) to share it)" % self._pid,
                              lib.PYQ_ECLOSED)
        return QueueClosed("the queue is closed", lib.PYQ_ECLOSED)

    @property
    def c_handle(self):
        """The ``pyq_queue_t *`` for C-side runtime functions (threads, lab).
        A shared queue's C code runs a side this process took (``take()``)."""
        if self._ptr is None or self._closing:
            raise self._closed_error()
        if self._shared and not (self._owns("writer") or self._owns("reader")):
            raise QueueError("this process owns neither side of shared queue %r: "
                             "q.take('writer') or q.take('reader') first" % self.name)
        return self._ptr

    def stats(self):
        """Counters of DESIGN §3.8 as a dict (each read relaxed: not one instant)."""
        st = ffi.new("pyq_stats_t *")
        with self._state_lock:
            if self._ptr is None:
                raise self._closed_error()
            lib.pyq_queue_stats(self._ptr, st)
        return cstruct.as_dict(st, STATS)

    def backlog(self):
        """Payload bytes written but not yet read."""
        with self._state_lock:
            if self._ptr is None:
                raise self._closed_error()
            return int(lib.pyq_queue_backlog(self._ptr))

    def close(self):
        """Close and unmap.  A writer waiting for space gets QueueClosed; calls in
        flight finish first.  A running ConsumerThread drains every message
        written before it ends; messages nobody reads are then discarded.
        Idempotent, and safe from any thread and from a signal handler: called
        while this thread is inside a call on the queue (a signal handler that
        interrupted it), close() wakes that call, which ends with QueueClosed,
        and the memory is unmapped once it has returned."""
        ptr, exported = self._begin_close(refuse_exported=True)
        if ptr is None:
            return
        if exported:   # finalizing: the pool stays mapped for the buffers into it
            if self._shared:
                lib.pyq_queue_leave(ptr)
        elif sys.is_finalizing():
            # Daemon threads are frozen now, possibly owning a side: never
            # wait for them.  The process is ending; its memory goes with it,
            # and the segment's name with it if no other process maps it.
            if not self._finish(wait=False) and self._shared:
                lib.pyq_queue_leave(ptr)
        elif any(side._owned_here() for side in self._sides()):
            # A signal handler on top of this thread's own call: that call ends
            # with QueueClosed, and the unmapping waits for it elsewhere.
            threading.Thread(target=self._finish, name="pyqueue-close", daemon=True).start()
        else:
            self._finish()

    def _begin_close(self, refuse_exported):
        """The first step of closing: the queue's handle (None when it was
        closed already) and how many buffers claims and views still export
        (refuse_exported: BufferError instead, unless finalizing).  The handle
        is read and the flag set under the state lock, which the unmapping also
        holds: a second close() can never reach freed memory.  The sides lose
        their handle first: from here on a call raises QueueClosed, and only
        calls already in flight (busy) hold one."""
        with self._state_lock:
            ptr = self._ptr
            if ptr is None:
                return None, 0
            exported = self._refuse_exported() if refuse_exported else self._exported()
            self._closing = True
            for side in self._sides():
                side._close_side()
            _aio.closing(self)   # an await's waiting thread gives its side back
            # Shared: only the writer's process ends the stream for everyone.
            if not self._shared or self._owns("writer"):
                lib.pyq_queue_close(ptr)  # wakes a waiting writer with PYQ_ECLOSED
        return ptr, exported

    def _sides(self):
        return [s for s in (getattr(self, "writer", None), getattr(self, "reader", None)) if s]

    # ---- zero copy (frames): close() and the buffers claims and views export ----

    def _exported(self):
        """Buffers the open claim and view exported and nobody released."""
        return sum(side._frame_exports() for side in self._sides())

    def _refuse_exported(self):
        """close() while a memoryview or an array still points into the pool
        would leave it pointing at unmapped memory: BufferError, as
        mmap.close() raises (the queue stays open).  At interpreter exit the
        pool stays mapped instead (_close_at_exit)."""
        n = self._exported()
        if n and not sys.is_finalizing():
            raise BufferError("cannot close the queue: %d buffer%s exported from a claim or a "
                              "view (a memoryview, a numpy array) still point%s into it; "
                              "release them first" % (n, "" if n == 1 else "s",
                                                      "s" if n == 1 else ""))
        return n

    def _close_at_exit(self):
        """close() at interpreter exit (atexit, before daemon threads freeze):
        a daemon thread's read or write sees the closed queue within one wait
        slice and returns, so the sides are waited for a bounded time; if one
        is still held then (a C thread), the segment's name goes anyway when
        no other process maps it (pyq_queue_leave), and the memory with the
        process."""
        ptr, exported = self._begin_close(refuse_exported=False)
        if ptr is None:
            return
        if exported:
            # A claim's or view's buffer still points into the pool: it stays
            # mapped (the process is ending); the name goes if nobody else maps it.
            if self._shared:
                lib.pyq_queue_leave(ptr)
            return
        if not self._finish(wait=_EXIT_WAIT_S) and self._shared:
            lib.pyq_queue_leave(ptr)

    def _finish(self, wait=True):
        """Unmap once neither side is busy: wait for them (True), not at all
        (False) or for at most `wait` seconds.  True when unmapped."""
        sides = self._sides()
        if len(sides) < 2:          # __init__ failed half-way: no side ever ran
            with self._state_lock:
                ptr, self._ptr = self._ptr, None
                lib.pyq_queue_destroy(ptr)
            return True
        w, r = sides
        if not _own(w, wait):    # no write in flight, no producer thread running
            return False
        try:
            ptr = self._ptr
            if ptr is None:
                return True
            if not self._shared or self._owns("writer"):
                lib.pyq_writer_detach(ptr)  # publish the rest; a draining reader may stop
            if not _own(r, wait):
                return False
            try:
                with self._state_lock:
                    self._ptr = None
                    # Shared: leave the segment; the last user removes its name.
                    lib.pyq_queue_destroy(ptr)
                return True
            finally:
                r._disown()
        finally:
            w._disown()

    def _counts(self):
        st = ffi.new("pyq_stats_t *")
        with self._state_lock:
            if self._ptr is None or self._closing:
                raise self._closed_error()
            lib.pyq_queue_stats(self._ptr, st)
        return st

    def qsize(self):
        """queue.Queue.qsize: messages written and not yet read.  With
        publish='max' this counts the messages of the writer's current block,
        which the reader sees once it fills or on flush(); like queue.Queue's,
        the figure may be out of date when it is returned."""
        st = self._counts()
        # Messages iteration took (Reader's pending ones) are not read yet.
        return int(st.messages_written - st.messages_read) + self.reader._pending_count()

    def empty(self):
        """queue.Queue.empty: ``qsize() == 0``."""
        return self.qsize() == 0

    def full(self):
        """queue.Queue.full: every block of the pool is in use (the writer's
        current one or unread ones), so the next write that needs a new block
        waits.  Like queue.Queue's, the answer may be out of date."""
        st = self._counts()
        taken = st.takes_hot + st.takes_spill - st.returns_hot - st.returns_spill
        return taken >= self._config.hot_blocks + self._config.spill_blocks

    def __copy__(self):
        if self._shared:
            return self   # one handle per process (Queue.attach)
        raise _not_shared("a Queue")

    def __deepcopy__(self, memo):
        if self._shared:
            return self
        raise _not_shared("a Queue")

    def __reduce_ex__(self, protocol):
        if self._shared:
            with self._state_lock:
                if self.closed:
                    raise QueueClosed("a closed shared queue cannot be pickled",
                                      lib.PYQ_ECLOSED)
                # In flight: the segment outlives this process's close() until
                # the handle attaches or HANDOFF_SECONDS pass (then
                # cleanup_stale() removes it if nobody came).
                lib.pyq_queue_handoff(self._ptr, int(HANDOFF_SECONDS * 1e9))
            return (_attach_pickled, (self.name, getattr(self, "_trust", False), True))
        return _refuse_private("a Queue")

    _reduce_handle = __reduce_ex__

    def __reduce_ex__(self, protocol):
        # A serializer travels beside the handle (_reduce_handle, the
        # shared-memory code's), so the other process's put/get carry objects too.
        reduced = self._reduce_handle(protocol)
        if getattr(self, "_serializer", None) is None:
            return reduced
        return (_with_serializer, (reduced[0], reduced[1], _serializer.portable(self._serializer)))

    def _after_fork_in_child(self):
        # The child's copy must neither deliver the parent's messages a second
        # time nor free what it does not own; a side some other parent thread
        # owned at fork() would never be freed here.  A shared queue's mapping
        # is the child's too: it joins the segment's users, owning no side
        # until it takes one.
        for side in self._sides():
            side._forked()
        self._state_lock = threading.Lock()
        if self._shared and self._ptr is not None and not self._closing:
            rc = lib.pyq_queue_adopt(self._ptr)
            if rc == 0:
                self._pid = os.getpid()
                return
            self._adopt_error = error_for(rc, "after fork() this process could not join shared "
                                          "queue %r" % self.name, {
                lib.PYQ_EMFILE: (QueueError, "after fork() this process could not join shared "
                                 "queue %r: too many open files (it needs one descriptor for "
                                 "the segment; ulimit -n)" % self.name)})
        self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if getattr(self, "_ptr", None) is not None:
                self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self.closed else "open"
        shared = " shared name=%r" % self.name if self._shared else ""
        return "<pyqueue.Queue %s%s block_size=%d publish=%r>" % (state, shared, self.block_size,
                                                                self.publish)


# How long close() at interpreter exit waits for a side a daemon thread's call
# holds (its wait slices are 50 ms).
_EXIT_WAIT_S = 1.0


def _own(side, wait):
    """side._own(), waiting for it: without limit (True), not at all (False),
    or for at most `wait` seconds."""
    if wait is True or wait is False:
        return side._own(wait, False)
    deadline = time.monotonic() + wait
    while not side._own(False, False):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


# How long a pickled shared queue keeps its segment for the process it goes to
# (Queue.__reduce_ex__): a writer may put and close before its reader attaches.
HANDOFF_SECONDS = 60.0


def _attach_pickled(name, trust=False, handoff=False):
    """Unpickling a shared queue: attach to it (Queue.attach), trusting what
    the process that pickled it trusted; one handle in flight fewer."""
    q = Queue.attach(name, trust_other_users=trust)
    if handoff:
        with q._state_lock:
            if q._ptr is not None:
                lib.pyq_queue_handoff_done(q._ptr)
    return q


def _untrusted(name):
    """Why attaching /dev/shm/name was refused: its owner and mode."""
    try:
        st = os.stat(os.path.join("/dev/shm", name), follow_symlinks=False)
        if st.st_uid != os.geteuid():
            who = "is owned by uid %d (this process is uid %d)" % (st.st_uid, os.geteuid())
        else:
            who = "has mode %04o, wider than 0600" % (st.st_mode & 0o7777)
    except OSError:
        who = "belongs to another user or is open to others"
    return ("shared queue %r %s: a process that may write the segment can stop or garble "
            "the stream, so only this uid's segments of mode 0600 are attached; pass "
            "trust_other_users=True to accept it" % (name, who))


# A shared queue's pool when spill_blocks is not given: its segment then fits
# in 32 MiB, half of Docker's default /dev/shm (64 MiB).
SHARED_POOL_BYTES = 31 << 20


def _shared_pool(values, large_given):
    """A shared queue made without spill_blocks: its pool in SHARED_POOL_BYTES.
    The large region first (shrunk, unless given, to what the budget leaves
    beside the hot tier, but never below one largest message), then the
    spill tier in the rest."""
    large = _large_bytes_of(values)
    if large and not large_given:
        page = lib.PYQ_LARGE_PAGE
        room = (SHARED_POOL_BYTES - values["block_size"] * values["hot_blocks"]) // page * page
        one = -(-values["max_message"] // page) * page
        if large > room:
            large = values["large_bytes"] = max(one, room)
    left = max(0, SHARED_POOL_BYTES - large)
    values["spill_blocks"] = shared_spill_blocks(values["block_size"], values["hot_blocks"],
                                                 left)


def shared_spill_blocks(block_size, hot_blocks, pool_bytes=None):
    """spill_blocks of a shared queue made without one: pool_bytes (default
    SHARED_POOL_BYTES) // block_size - hot_blocks, at least 0."""
    pool = SHARED_POOL_BYTES if pool_bytes is None else pool_bytes
    return max(0, pool // block_size - hot_blocks) if block_size > 0 else 0


def _shm_room():
    try:
        st = os.statvfs("/dev/shm")
        return "%d bytes free of %d" % (st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize)
    except OSError as e:
        return "its free space unknown: %s" % e


def _with_serializer(attach, args, serializer):
    """Unpickling a shared queue that has a serializer: attach, then use it."""
    q = attach(*args)
    q._use_serializer(_serializer.restored(serializer))
    return q


def _check_name(name):
    if not isinstance(name, str):
        raise TypeError("name must be a str, got %s" % type(name).__name__)
    raw = name.encode()
    if not 1 <= len(raw) <= lib.PYQ_SHM_NAME_MAX or "/" in name or "\0" in name \
            or name in (".", ".."):
        raise ValueError("name must be 1 to %d bytes without '/' (a file name in /dev/shm), "
                         "got %r" % (lib.PYQ_SHM_NAME_MAX, name))
    return name


# The names this project makes in /dev/shm (C's PYQ_SHM_PREFIX): cleanup_stale()
# looks at no other.
PREFIX = "pyq-"


def _new_name():
    return "%s%d-%s" % (PREFIX, os.getpid(), os.urandom(6).hex())


def cleanup_stale():
    """Remove the shared queues in /dev/shm that no process holds any more
    (the leftovers of crashed runs, and creations killed half-way where
    /dev/shm has no O_TMPFILE); return their names.  Only names starting with
    ``pyq-`` (the names Queue makes) are looked at, as bytes (any name, UTF-8 or
    not; returned decoded with os.fsdecode); each is opened read-only without
    following a link or waiting on a FIFO, must be a regular file, and is read,
    never mapped.  Segments in use and files that are not pyqueue queues are
    left alone; a queue made with another name is not this call's to remove
    (pyq_queue_reclaim in C takes any name)."""
    removed = []
    try:
        names = sorted(os.listdir(b"/dev/shm"))
    except OSError:
        return removed
    prefix = os.fsencode(PREFIX)
    for n in names:
        if n.startswith(prefix) and len(n) <= lib.PYQ_SHM_NAME_MAX \
                and lib.pyq_queue_reclaim(n) == 1:
            removed.append(os.fsdecode(n))
    return removed


# Open queues, for the fork handler.
_LIVE = weakref.WeakSet()


def _after_fork_in_child():
    for q in list(_LIVE):
        q._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _close_at_exit():
    """Close this process's shared queues before daemon threads freeze, so that
    a thread blocked in get() or write() does not keep the segment in /dev/shm
    (an in-process queue's memory goes with the process anyway)."""
    for q in list(_LIVE):
        if getattr(q, "_shared", False) and q._pid == os.getpid():
            try:
                q._close_at_exit()
            except Exception:
                pass


atexit.register(_close_at_exit)
