"""pyqueue: a low-latency SPSC message queue in C and a lab for burst tail latency.

    import pyqueue as pq
    with pq.Queue() as q:        # publish="each": a put is visible when it returns
        q.writer.put(b"hello")
        q.reader.get()           # b'hello'
"""
from .errors import (EndOfStream, MessageTooLarge, PeerDied, QueueClosed, QueueCorrupted,
                     QueueEmpty, QueueError, QueueFull, UnsupportedError, VerificationError)
from .config import QueueConfig
from .queue import Queue, Reader, Writer, cleanup_stale

from ._pyq import ffi as _ffi, lib as _lib

# Written once, in the C header (PYQ_VERSION), which setup.py reads for the metadata too.
__version__ = _ffi.string(_lib.pyq_version()).decode()
del _ffi, _lib

__all__ = ["Queue", "QueueConfig", "Writer", "Reader", "QueueError", "QueueFull", "QueueEmpty",
           "MessageTooLarge", "QueueClosed", "EndOfStream", "VerificationError",
           "UnsupportedError", "PeerDied", "QueueCorrupted", "cleanup_stale", "__version__"]
