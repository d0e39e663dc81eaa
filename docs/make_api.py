"""Print docs/API.md from the docstrings: python docs/make_api.py > docs/API.md"""
import inspect

import pyqueue
import pyqueue.lab as lab
from pyqueue import Queue, QueueConfig, Reader, Writer

HEAD = """# API reference

Every public name of `pyqueue` and `pyqueue.lab`, with its signature and the first
paragraph of its docstring (`help(name)` shows the whole). Markdown, not a Sphinx site:
the project has no public host to publish a site on, and a page in `docs/` is read where
the code is: on a clone, in the sdist, on a code browser. The page is generated from
the docstrings (`python docs/make_api.py > docs/API.md`); the test suite checks that
every public name appears here.

The experiments' output folders are described in [OUTPUT.md](OUTPUT.md); the command
line in the README and in `python -m pyqueue CMD --help`.

Every result object `pyqueue.lab.load` returns has `summary`, `status`, `params`,
`samples` (its arrays), `to_json(path)` and `to_pandas()`; so do the results the
experiment functions return, made in memory. The package is typed (`py.typed`):
`pyqueue/queue.pyi` and `pyqueue/config.pyi` give the signatures of `Queue`, `Writer`,
`Reader` and the fields of `QueueConfig` (made at import time from the C struct),
`pyqueue/_pyq.pyi` and `pyqueue/lab/_lab.pyi` the compiled extensions.
"""

DIFFERENCES = """## Differences from queue.Queue, multiprocessing.Queue and faster-fifo

Code written for any of the three with one producer and one consumer runs unchanged:
`put`, `put_nowait`, `get`, `get_nowait`, `qsize`, `empty`, `full` and faster-fifo's
`put_many`, `get_many` and their `_nowait` forms answer on the queue object and on its
sides, with `block` and `timeout` as the standard library takes them; `QueueFull` and
`QueueEmpty` are `queue.Full` and `queue.Empty`; `Queue(serializer="pickle")` (or any object
with `dumps` and `loads`) carries objects. CPython's own `test.test_queue` and faster-fifo's
tests, adapted to one producer and one consumer, run in the test suite
(`tests/python/test_stdlib_queue.py`, `tests/python/test_faster_fifo_api.py`). What differs:

- **One producer, one consumer.** A second thread on a busy side gets `QueueError`.
- **Room is the block pool**, not a count of messages: no `maxsize` (faster-fifo's
  `max_size_bytes` and `maxsize`); `full()` says every block is in use. A message is at most
  `block_size - 8` bytes once serialized (`MessageTooLarge`).
- **Names not there**: `task_done()` and `join()` (queue.Queue), `join_thread()` and
  `cancel_join_thread()` (multiprocessing, faster-fifo), `is_closed()` and `data_size()`
  (faster-fifo: `closed` and `backlog()`).
- **Items are copied**: without a serializer a message is bytes-like and `get` returns
  `bytes`; with one, objects are pickled (a local class does not pickle; multiprocessing's
  reducers: `serializer=multiprocessing.reduction.ForkingPickler`), never referenced.
- **Timeouts**: `None` by default (faster-fifo's is 10 s); 0 does not wait; a negative one
  raises `ValueError("'timeout' must be a non-negative number")` before anything is read or
  written, as `queue.Queue`'s does; without `block` the timeout is not looked at. NaN raises
  that `ValueError` too (as `SimpleQueue` does; `queue.Queue.get` returns a message that is
  there and spins forever on an empty queue); `inf` or more than 2**62 ns is no limit
  (`queue.Queue` raises `OverflowError` when it must wait that long, `SimpleQueue` at once).
- **The end of the stream**: once the writer has detached (`Writer.detach()`, leaving
  `with q.writer:`, or the writer's process closing or dying) and every message was read,
  `get` and `get_many` raise `EndOfStream` (a `QueueClosed`) and iteration stops; faster-fifo's
  consumers look at `is_closed()` after `queue.Empty`, multiprocessing's at a sentinel.
- **`put_many`** takes any iterable (faster-fifo: a list or a tuple) and is all or none when
  the batch fits in the queue; a batch that needs every block goes in as room comes, and
  `QueueFull.written` then says how many did.
- **`get_many`** limits by `max_messages_to_get` and `max_bytes_to_get` (the first message
  whatever its size; faster-fifo sets the byte limit as an attribute); what the limits
  leave stays for the next call.
- **Publish**: Python's default, `each`, makes a `put` visible when it returns; with
  `publish="max"` it is visible when its block fills or on `flush()`, and code written for
  `queue.Queue` waits in `get` for messages that are there.
- **Across processes**: `Queue(shared=True)`; the queue pickles to a handle that attaches and
  keeps its serializer. `Queue.attach(name)` alone carries bytes.
"""


def para(o):
    return (inspect.getdoc(o) or "").split("\n\n")[0].replace("\n", " ")


def sig(o):
    try:
        return str(inspect.signature(o))
    except (TypeError, ValueError):
        return ""


def members(cls, name):
    # Inherited ones too: Writer and Reader get their per-message calls from
    # their C base types (pyqueue._pyext).
    own = {}
    for klass in reversed(cls.__mro__[:-1]):
        own.update(vars(klass))
    for m, v in sorted(own.items()):
        if m.startswith("_") or not (callable(v) or isinstance(v, property)):
            continue
        f = v.fget if isinstance(v, property) else v
        text = para(f)
        yield "- `%s.%s%s`%s%s" % (name, m, "" if isinstance(v, property) else sig(f),
                                   " (property)" if isinstance(v, property) else "",
                                   " — " + text if text else "")


def main():
    out = [HEAD, "## pyqueue", ""]
    for n in pyqueue.__all__:
        o = getattr(pyqueue, n)
        if n == "__version__":
            out += ["### `pyqueue.__version__`", "",
                    "The version string (`PYQ_VERSION` of the C header).", ""]
            continue
        error = inspect.isclass(o) and issubclass(o, Exception)
        out += ["### `pyqueue.%s%s`" % (n, "" if error else sig(o)), "", para(o), ""]
        if o in (Queue, Writer, Reader, QueueConfig):
            out += list(members(o, n)) + [""]
    out += [DIFFERENCES, "## pyqueue.lab", ""]
    for n in lab._EXPORTS:
        o = getattr(lab, n)
        out += ["### `pyqueue.lab.%s%s`" % (n, sig(o)), "", para(o), ""]
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
