"""The exception hierarchy and the one place C return codes become exceptions."""
import queue as _stdlib_queue

from ._pyq import ffi, lib


class QueueError(Exception):
    """Base class of pyqueue errors; ``code`` is the negative C error code (or 0)."""

    def __init__(self, message, code=0):
        super().__init__(message)
        self.code = code


class QueueFull(QueueError, _stdlib_queue.Full):
    """No free block: put_nowait found the queue full, or write's timeout
    expired.  Also a ``queue.Full``, so code written for ``queue.Queue`` catches it."""


class MessageTooLarge(QueueError, ValueError):
    """The message is larger than ``Queue.max_message``.  Also a ValueError: the
    size is the caller's argument (``writer.claim(n)``, ``write(data)``)."""


class QueueEmpty(QueueError, _stdlib_queue.Empty):
    """No message came within Reader.read()'s timeout, or get_nowait found none.
    Also a ``queue.Empty``, so code written for ``queue.Queue`` catches it."""


class QueueClosed(QueueError):
    """The queue (or the object it belongs to) was closed."""


class EndOfStream(QueueClosed):
    """The writer has detached and the reader has read every message."""


class PeerDied(QueueError):
    """Shared queue: the process owning the other side (or the side asked for) died."""


class QueueCorrupted(QueueError):
    """Shared queue: the segment holds a value that no writer or reader of this
    queue's geometry stores -- a damaged segment or a hostile process that may
    write it.  This side's calls fail from then on; nothing it delivered was
    read from outside the queue's own blocks (DESIGN §3.9, "Trust")."""


class VerificationError(QueueError):
    """A verifying consumer found a message lost, duplicated, reordered or corrupted."""


class UnsupportedError(QueueError):
    """The platform, kernel or VM does not offer this feature."""


# Codes that are the caller's or the system's problem become the built-in exceptions.
_BY_CODE = {
    lib.PYQ_EINVAL: ValueError,
    lib.PYQ_ENOMEM: MemoryError,
    lib.PYQ_EPERM: PermissionError,
    lib.PYQ_EINTR: KeyboardInterrupt,
    lib.PYQ_EAGAIN: QueueFull,
    lib.PYQ_ETOOBIG: MessageTooLarge,
    lib.PYQ_ECLOSED: QueueClosed,
    lib.PYQ_EBADMSG: VerificationError,
    lib.PYQ_ENOTSUP: UnsupportedError,
    lib.PYQ_EPEER: PeerDied,
    lib.PYQ_ECORRUPT: QueueCorrupted,
}


def strerror(code):
    return ffi.string(lib.pyq_strerror(code)).decode()


def error_for(code, what="", hints=None):
    """The exception C return code ``code`` (< 0) stands for, not raised.

    The message is "<what>: <pyq_strerror(code)>".  ``hints`` ({code: hint})
    says more for the codes a caller can explain: a hint is the whole message
    (a str), the exception class to use instead (a QueueError subclass keeps
    ``.code``), or both as (class, message)."""
    hint = (hints or {}).get(code)
    cls, message = _BY_CODE.get(code, QueueError), None
    if isinstance(hint, str):
        message = hint
    elif isinstance(hint, tuple):
        cls, message = hint
    elif hint is not None:
        cls = hint
    if message is None:
        message = "%s: %s" % (what, strerror(code)) if what else strerror(code)
    return cls(message, code) if issubclass(cls, QueueError) else cls(message)


def check(code, what="", hints=None):
    """Return ``code`` if it is >= 0, else raise ``error_for(code, what, hints)``:
    the one place a C return code becomes an exception."""
    if code >= 0:
        return code
    raise error_for(code, what, hints)
