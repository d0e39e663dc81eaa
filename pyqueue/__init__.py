"""pyqueue: a low-latency SPSC message queue in C and a lab for burst tail latency.

    import pyqueue as pq
    with pq.Queue(publish="each") as q:
        q.writer.write(b"hello")
        q.reader.poll()          # [b'hello']
"""
from importlib import metadata as _metadata

from ._errors import (EndOfStream, MessageTooLarge, PeerDied, QueueClosed, QueueEmpty, QueueError,
                      QueueFull, UnsupportedError, VerificationError)
from .config import QueueConfig
from .queue import Queue, Reader, Writer, cleanup_stale

# Written once, in the C header; the installed metadata (distribution pyqueue-lab) carries it.
try:
    __version__ = _metadata.version("pyqueue-lab")
except _metadata.PackageNotFoundError:  # imported from a tree that was never installed
    __version__ = "unknown"

__all__ = ["Queue", "QueueConfig", "Writer", "Reader", "QueueError", "QueueFull", "QueueEmpty",
           "MessageTooLarge", "QueueClosed", "EndOfStream", "VerificationError",
           "UnsupportedError", "PeerDied", "cleanup_stale", "__version__"]
