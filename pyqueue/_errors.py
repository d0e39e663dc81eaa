"""The exception hierarchy and the one place C return codes become exceptions."""
from ._pyq import ffi, lib


class QueueError(Exception):
    """Base class of pyqueue errors; ``code`` is the negative C error code (or 0)."""

    def __init__(self, message, code=0):
        super().__init__(message)
        self.code = code


class QueueFull(QueueError):
    """No free block: try_write would wait, or write's timeout expired."""


class MessageTooLarge(QueueError):
    """The message is larger than ``Queue.max_message`` (block_size - 8)."""


class QueueEmpty(QueueError):
    """No message came within Reader.read()'s timeout."""


class QueueClosed(QueueError):
    """The queue (or the object it belongs to) was closed."""


class EndOfStream(QueueClosed):
    """The writer has detached and the reader has read every message."""


class VerificationError(QueueError):
    """A verifying consumer found a message lost, duplicated, reordered or corrupted."""


class UnsupportedError(QueueError):
    """The platform, kernel or VM does not offer this feature."""


_BY_CODE = {
    lib.PYQ_EAGAIN: QueueFull,
    lib.PYQ_ETOOBIG: MessageTooLarge,
    lib.PYQ_ECLOSED: QueueClosed,
    lib.PYQ_EBADMSG: VerificationError,
    lib.PYQ_ENOTSUP: UnsupportedError,
}


def strerror(code):
    return ffi.string(lib.pyq_strerror(code)).decode()


def check(code, what):
    """Return ``code`` if it is >= 0, else raise the exception that names it."""
    if code >= 0:
        return code
    if code == lib.PYQ_EINVAL:
        raise ValueError("%s: %s" % (what, strerror(code)))
    if code == lib.PYQ_ENOMEM:
        raise MemoryError("%s: %s" % (what, strerror(code)))
    if code == lib.PYQ_EPERM:
        raise PermissionError("%s: %s" % (what, strerror(code)))
    if code == lib.PYQ_EINTR:
        raise KeyboardInterrupt("%s: %s" % (what, strerror(code)))
    cls = _BY_CODE.get(code, QueueError)
    raise cls("%s: %s" % (what, strerror(code)), code)
