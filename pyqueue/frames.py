"""numpy arrays as messages, without a copy on the way out (DESIGN §5.6).

``Writer.put_array(a)`` claims one message (Writer.claim), writes a small
header -- dtype, shape -- and copies the array's elements in C order straight
into the queue (numpy.copyto: one copy, the GIL released for a big one);
``Reader.get_array()`` views the next message (Reader.get_view) and returns an
ndarray over the queue's own bytes, read-only, whose base holds the view: the
message's space goes back to the writer when the array (and every array made
from it) is collected -- or at once with ``copy=True``.

Layout decided here: every array is sent in C order.  A Fortran-ordered or
non-contiguous array (a slice with steps, a transpose) is copied into C order
as it is written (the one copy a put makes anyway), so the reader gets a
C-contiguous array of the same shape, dtype and values.  0-d and empty arrays
go as any other.  Any dtype numpy can describe without Python objects goes:
numbers, bool, datetime/timedelta, fixed-size strings and bytes, void and
structured dtypes; a dtype that holds objects raises TypeError.

The message: the header (little-endian), then the data at ``data_off``, which
the writer chooses so that the data start a 64-byte aligned address (both
sides map the pool page-aligned, so the reader's address is aligned too):

    magic b"PQA1" | ndim u16 | descr_len u16 | data_off u32 | shape i64 x ndim | descr

``descr`` is ``dtype.str`` for a plain dtype, else the repr of
numpy.lib.format.dtype_to_descr() (structured and sub-array dtypes).

numpy is imported on the first call of either, never by ``import pyqueue``.
"""
import functools
import math
import struct

from ._pyq import lib
from .errors import MessageTooLarge

MAGIC = b"PQA1"
_HEAD = struct.Struct("<4sHHI")
_ALIGN = 64
_DTYPES = {}    # descr bytes -> dtype, for the reader
_DESCRS = {}    # dtype -> descr bytes, for the writer
_np = None


def _numpy():
    global _np
    if _np is None:
        import numpy
        _np = numpy
    return _np


# Bounded: numpy has at most 64 dimensions; a crafted header may claim more.
@functools.lru_cache(maxsize=64)
def _shape_struct(ndim):
    """A shape of ndim dimensions, as the header stores it."""
    return struct.Struct("<%dq" % ndim)


@functools.lru_cache(maxsize=64)
def _header_struct(ndim):
    """The header up to its descr for an array of ndim dimensions."""
    return struct.Struct("<4sHHI%dq" % ndim)


def _descr(np, dtype):
    if dtype.hasobject:
        raise TypeError("put_array: dtype %s holds Python objects; only arrays of plain data "
                        "(numbers, bool, datetimes, fixed-size strings, structured) go through "
                        "a queue" % dtype)
    if dtype.fields is None and dtype.subdtype is None:
        return dtype.str.encode()
    from numpy.lib import format as npformat
    return repr(npformat.dtype_to_descr(dtype)).encode()


def _dtype(np, descr):
    dt = _DTYPES.get(descr)
    if dt is None:
        text = descr.decode()
        if text[:1] in "[(":
            import ast
            from numpy.lib import format as npformat
            dt = npformat.descr_to_dtype(ast.literal_eval(text))
        else:
            dt = np.dtype(text)
        if len(_DTYPES) < 256:
            _DTYPES[descr] = dt
    return dt


def header_size(ndim, descr):
    return _HEAD.size + 8 * ndim + len(descr)


def put_array(writer, a, timeout=None):
    """Writer.put_array: see the module's doc."""
    np = _numpy()
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    descr = _DESCRS.get(a.dtype)
    if descr is None:
        descr = _DESCRS[a.dtype] = _descr(np, a.dtype)
    head = header_size(a.ndim, descr)
    n = head + _ALIGN - 1 + a.nbytes
    if n > writer._queue.max_message:
        raise MessageTooLarge("put_array: an array of %d bytes takes a message of %d (its header "
                              "and alignment: %d more); the largest is %d (Queue(max_message=...))"
                              % (a.nbytes, n, n - a.nbytes, writer._queue.max_message),
                              lib.PYQ_ETOOBIG)
    claim = writer.claim(n, timeout)
    try:
        # Where the claim is: the data start the next 64-byte aligned address.
        off = head + (-(claim.address + head)) % _ALIGN
        mv = memoryview(claim)
        try:
            _header_struct(a.ndim).pack_into(mv, 0, MAGIC, a.ndim, len(descr), off, *a.shape)
            mv[head - len(descr):head] = descr
            if a.nbytes and a.flags.c_contiguous:
                # Its bytes as they are, one memcpy (as uint8: any dtype exports them).
                mv[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
            elif a.nbytes:
                dst = np.frombuffer(mv, a.dtype, a.size, off).reshape(a.shape)
                np.copyto(dst, a, casting="no")   # into C order, whatever a's layout
                del dst
        finally:
            mv.release()
    except BaseException:
        claim.abort()
        raise
    claim.commit()

def parse(mv):
    """(dtype, shape, data_off) of an array message's bytes (a memoryview);
    ValueError when they are not one."""
    np = _numpy()
    if len(mv) < _HEAD.size:
        raise ValueError("not an array message (%d bytes)" % len(mv))
    magic, ndim, dlen, off = _HEAD.unpack_from(mv, 0)
    end = _HEAD.size + 8 * ndim + dlen
    if magic != MAGIC or end > len(mv):
        raise ValueError("not an array message (put_array writes them)")
    shape = _shape_struct(ndim).unpack_from(mv, _HEAD.size)
    dtype = _dtype(np, bytes(mv[_HEAD.size + 8 * ndim:end]))
    count = math.prod(shape)
    if (ndim and min(shape) < 0) or off < end or off + count * dtype.itemsize > len(mv):
        raise ValueError("not an array message: its shape %s and dtype %s do not fit its %d "
                         "bytes" % (shape, dtype, len(mv)))
    return dtype, shape, off, count


def array_of(view):
    """The ndarray a View of an array message holds, read-only, over the
    queue's bytes; its base keeps the view (and so the message) alive."""
    np = _numpy()
    with memoryview(view) as mv:
        dtype, shape, off, count = parse(mv)
    if count == 0 or dtype.itemsize == 0:
        # numpy.frombuffer refuses an empty buffer: nothing to point into.
        arr = np.empty(shape, dtype)
        arr.flags.writeable = False
        view.release()
        return arr
    arr = np.frombuffer(view, dtype, count, off)
    return arr if len(shape) == 1 else arr.reshape(shape)


def get_array(reader, block=True, timeout=None, copy=False):
    """Reader.get_array: see the module's doc."""
    view = reader.get_view(block, timeout)
    try:
        arr = array_of(view)
    except BaseException:
        view.release()   # not an array message: consumed, the error says why
        raise
    if copy:
        out = arr.copy()
        del arr
        view.release()
        return out
    return arr
