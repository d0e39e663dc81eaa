"""Queue(serializer=...): objects through put/get, put_many/get_many and
iteration; bytes through write/read/poll whatever the serializer; bad
serializers refused at the door or raising clearly, nothing lost."""
import collections
import fractions
import json
import marshal
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest

import pyqueue as pq

OBJECTS = [None, 0, -1, 2**100, 1.5, "text", "ünï", b"bytes", bytearray(b"ba"),
           (1, (2, 3)), [1, [2]], {"a": 1, "b": [1, 2]}, {1, 2}, frozenset({3}),
           fractions.Fraction(1, 3), collections.OrderedDict(a=1), b"x" * 3000]


class IntCodec:
    """faster-fifo's README example: a fixed-width int codec."""

    def dumps(self, x):
        return x.to_bytes(4, "big")

    def loads(self, b):
        return int.from_bytes(b, "big")


class JsonCodec:
    dumps = staticmethod(lambda obj: json.dumps(obj).encode())
    loads = staticmethod(json.loads)


@pytest.mark.parametrize("serializer", ["pickle", pickle, ForkingPickler])
def test_objects_round_trip_through_every_object_call(serializer):
    with pq.Queue(serializer=serializer) as q:
        assert q.serializer is serializer
        for obj in OBJECTS:
            q.put(obj)
            assert q.get() == obj
            q.writer.put_nowait(obj)
            assert q.reader.get_nowait() == obj
            q.put(obj, timeout=1)
            assert q.get(timeout=1) == obj
        q.put_many(OBJECTS)
        assert q.get_many() == OBJECTS
        q.writer.put_many(OBJECTS)
        q.writer.detach()
        assert list(q.reader) == OBJECTS          # iteration carries objects too


def test_marshal_module_and_custom_codecs():
    for serializer, values in [(marshal, [1, "x", [1.5, None]]), (IntCodec(), list(range(300))),
                               (JsonCodec, [{"a": [1, 2]}, "s", 3])]:
        with pq.Queue(serializer=serializer) as q:
            for v in values:
                q.put(v)
                assert q.get() == v
            q.put_many(values)
            assert q.get_many() == values


def test_write_read_and_poll_stay_bytes():
    with pq.Queue(serializer="pickle") as q:
        q.writer.write(b"raw")
        assert q.reader.read() == b"raw"
        q.put({"o": 1})
        raw = q.reader.poll()
        assert len(raw) == 1 and pickle.loads(raw[0]) == {"o": 1}
        q.writer.write(pickle.dumps(("made", "by", "hand")))
        assert q.get() == ("made", "by", "hand")
        assert q.writer.try_write(b"t")
        assert q.reader.poll(1) == [b"t"]


def test_without_serializer_messages_are_bytes_like():
    with pq.Queue() as q:
        assert q.serializer is None
        q.put(bytearray(b"ba"))
        q.put(memoryview(b"mv"))
        assert q.get_many() == [b"ba", b"mv"]
        for bad in ("str", 5, {"a": 1}, None):
            with pytest.raises(TypeError):
                q.put(bad)
            with pytest.raises(TypeError):
                q.put_many([b"ok", bad])
        assert q.qsize() == 0                     # put_many refused the whole batch


@pytest.mark.parametrize("bad, error, match", [
    ("json", ValueError, "serializer must be None, 'pickle' or"),
    ("", ValueError, "serializer must be None"),
    (5, TypeError, "callable dumps"),
    (object(), TypeError, "callable dumps"),
    (type("OnlyDumps", (), {"dumps": staticmethod(bytes)})(), TypeError, "callable dumps"),
    (type("NotCallable", (), {"dumps": 1, "loads": 2})(), TypeError, "callable dumps"),
])
def test_bad_serializers_are_refused_before_anything_is_made(bad, error, match):
    with pytest.raises(error, match=match):
        pq.Queue(serializer=bad)


def test_dumps_that_return_no_bytes_and_failing_loads():
    with pq.Queue(serializer=json) as q:         # json.dumps returns str
        with pytest.raises(TypeError, match=r"dumps\(\) returned str"):
            q.put({"a": 1})
        with pytest.raises(TypeError, match=r"dumps\(\) returned str"):
            q.put_many([1, 2])
        assert q.qsize() == 0

    class Boom:
        dumps = staticmethod(pickle.dumps)

        @staticmethod
        def loads(b):
            raise RuntimeError("cannot load %d bytes" % len(b))
    with pq.Queue(serializer=Boom) as q:
        q.put("lost?")
        with pytest.raises(RuntimeError, match="cannot load") as e:
            q.get()
        assert pickle.loads(e.value.messages[0]) == "lost?"   # consumed: it rides on the error
        q.put_many(["a", "b"])
        with pytest.raises(RuntimeError) as e:
            q.get_many()
        assert [pickle.loads(m) for m in e.value.messages] == ["a", "b"]

    class Unpicklable:
        def __reduce__(self):
            raise pickle.PicklingError("no")
    with pq.Queue(serializer="pickle") as q:
        with pytest.raises(pickle.PicklingError):
            q.put_many([1, Unpicklable()])
        assert q.qsize() == 0


def test_an_object_too_large_once_serialized():
    with pq.Queue(serializer="pickle", block_size=256, hot_blocks=1, spill_blocks=1,
                  max_message=0) as q:
        with pytest.raises(pq.MessageTooLarge):
            q.put("x" * 1000)
        with pytest.raises(pq.MessageTooLarge):
            q.put_many(["small", "x" * 1000])
        assert q.qsize() == 0


def test_a_serializer_holding_the_queue_is_collected():
    import gc
    import weakref

    class Holder:
        dumps = staticmethod(pickle.dumps)
        loads = staticmethod(pickle.loads)
    h = Holder()
    q = pq.Queue(serializer=h, spill_blocks=1)
    h.q = q                                        # a cycle through the sides' serializer
    ref = weakref.ref(q)
    del q, h
    gc.collect()
    assert ref() is None


def test_attach_takes_a_serializer_and_refuses_changing_an_open_ones():
    import subprocess
    import sys
    q = pq.Queue(shared=True, serializer="pickle", spill_blocks=1)
    try:
        assert pq.Queue.attach(q.name) is q                      # None: keep what it has
        assert pq.Queue.attach(q.name, serializer="pickle") is q
        with pytest.raises(ValueError, match="open in this process with serializer"):
            pq.Queue.attach(q.name, serializer=marshal)
        with pytest.raises(ValueError, match="serializer must be"):
            pq.Queue.attach(q.name, serializer="json")
        q.put({"a": (1, 2)})
        q.put([3])
        # Another process attaches by name (no pickled handle, so no serializer
        # travels): attach(serializer=) makes its get() carry objects.
        code = ("import sys, pyqueue as pq\n"
                "r = pq.Queue.attach(sys.argv[1], serializer='pickle')\n"
                "print(r.get(timeout=10), r.reader.get(timeout=10))\n"
                "b = pq.Queue.attach(sys.argv[1])\n"
                "assert b is r\n")
        out = subprocess.run([sys.executable, "-c", code, q.name], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "{'a': (1, 2)} [3]"
    finally:
        q.close()
