"""``Queue(serializer=...)``: Python objects through the queue, as multiprocessing
and faster-fifo carry them.

A serializer is None (messages are bytes-like, the default), ``"pickle"``
(pickle.dumps / pickle.loads) or any object with callable ``dumps(obj) ->
bytes-like`` and ``loads(bytes) -> obj`` (a module such as ``marshal``, an
instance, faster-fifo's custom pair wrapped in a class, or
``multiprocessing.reduction.ForkingPickler`` for multiprocessing's reducers).
The sides call them in C: put, put_nowait and put_many write ``dumps(item)``;
get, get_nowait, get_many and iteration return ``loads(message)``.  write,
try_write, write_batch, read, poll and poll_into carry bytes whatever the
serializer.
"""
import importlib
import pickle
import types

from . import validate

PICKLE = "pickle"


def resolve(serializer):
    """(dumps, loads) of a ``serializer`` argument, (None, None) for None; a
    bad one raises TypeError (ValueError for an unknown name) naming it."""
    if serializer is None:
        return None, None
    if isinstance(serializer, str):
        if serializer == PICKLE:
            return pickle.dumps, pickle.loads
        raise ValueError("serializer must be None, 'pickle' or an object with dumps() and "
                         "loads(), got %r" % serializer)
    dumps, loads = getattr(serializer, "dumps", None), getattr(serializer, "loads", None)
    if not callable(dumps) or not callable(loads):
        raise validate.ArgumentTypeError(
            "serializer must be None, 'pickle' or an object with callable dumps() and loads() "
            "(pickle, marshal, multiprocessing.reduction.ForkingPickler, ...), got %r"
            % (serializer,))
    return dumps, loads


def portable(serializer):
    """What a pickled shared queue carries for its serializer: the argument
    itself, or a module's name (modules do not pickle)."""
    if isinstance(serializer, types.ModuleType):
        return ("module", serializer.__name__)
    return serializer


def restored(state):
    """The serializer argument of a portable() state."""
    if isinstance(state, tuple) and len(state) == 2 and state[0] == "module":
        return importlib.import_module(state[1])
    return state
