"""CPython's own test_queue against pyqueue: the cases meaningful for one
producer and one consumer, imported from the interpreter's test package and
run on ``pyqueue.Queue(serializer="pickle")`` (objects, as queue.Queue carries
them) under the Python defaults -- the promise that code written for
queue.Queue runs unchanged.

What is left out, and why (README, "Semantics in brief"):
  - many producers or consumers (test_many_threads*, with 50 of each): one of
    each here (the 1-thread forms below run the same feed/consume loops);
  - maxsize counted in messages (queue.Queue(maxsize): test_basic of the
    Queue mixin, test_nowait, test_shrinking_queue): pyqueue's room is its
    block pool, full() says when it is used up;
  - task_done()/join(), LifoQueue, PriorityQueue: not pyqueue's;
  - test_references (the queue drops its reference to an item once got):
    pyqueue copies items (pickled), so it never holds one; and the test's
    local class does not pickle.
The interpreter may ship without its test package (Debian's python3 without
libpython3-testsuite): then this module is skipped, saying so.
"""
import queue
import unittest

import pytest

import pyqueue as pq

try:
    from test import test_queue as cpython
except ImportError:   # pragma: no cover - depends on the interpreter's packaging
    pytest.skip("this interpreter does not ship its test package (test.test_queue): "
                "CPython's queue tests cannot be run here", allow_module_level=True)


def stdlib_queue(maxsize=0):
    """The adapter: what the tests call type2test.  A queue carrying objects,
    the Python defaults otherwise (publish 'each'); maxsize has no message-count
    meaning here (see the module doc)."""
    return pq.Queue(serializer="pickle", spill_blocks=256)


_NOT_SPSC = "one producer and one consumer: pyqueue is an SPSC queue"


class PyqueueSimpleQueueTest(cpython.BaseSimpleQueueTest, unittest.TestCase):
    # The standard module: pyqueue's QueueEmpty / QueueFull are its Empty / Full
    # (the test module's c_queue is a fresh import with classes of its own).
    queue = queue

    def setUp(self):
        self.type2test = stdlib_queue
        super().setUp()

    def tearDown(self):
        import gc
        gc.collect()     # test_reentrancy's last cycles put() into an open queue
        self.q.close()

    # test_basic, test_negative_timeout_raises_exception and test_order run as
    # CPython wrote them; test_reentrancy is CSimpleQueueTest's (bpo-14976).
    test_reentrancy = cpython.CSimpleQueueTest.test_reentrancy

    @unittest.skip(_NOT_SPSC)
    def test_many_threads(self):
        pass

    @unittest.skip(_NOT_SPSC)
    def test_many_threads_nonblock(self):
        pass

    @unittest.skip(_NOT_SPSC)
    def test_many_threads_timeout(self):
        pass

    @unittest.skip("pyqueue copies items (pickled): it never holds a reference to one, and "
                   "the test's local class does not pickle")
    def test_references(self):
        pass

    # The many-thread cases' loops with one producer and one consumer.
    def test_one_thread_each_blocking(self):
        inputs = list(range(2000))
        self.assertEqual(self.run_threads(1, self.q, inputs, self.feed, self.consume), inputs)

    def test_one_thread_each_nonblock(self):
        inputs = list(range(2000))
        self.assertEqual(self.run_threads(1, self.q, inputs, self.feed, self.consume_nonblock),
                         inputs)

    def test_one_thread_each_timeout(self):
        inputs = list(range(1000))
        self.assertEqual(self.run_threads(1, self.q, inputs, self.feed, self.consume_timeout),
                         inputs)


class PyqueueQueueTest(cpython.BlockingTestMixin, unittest.TestCase):
    """queue.Queue's cases that do not count maxsize in messages."""
    queue = queue

    def setUp(self):
        self.q = stdlib_queue()

    def tearDown(self):
        self.q.close()

    # As CPython wrote it; its type2test(QUEUE_SIZE) gets this test's queue.
    def test_negative_timeout_raises_exception(self):
        self.type2test = lambda maxsize=0: self.q
        cpython.BaseQueueTestMixin.test_negative_timeout_raises_exception(self)

    def test_blocking_get_and_put_unclogged_by_the_other_thread(self):
        # basic_queue_test's blocking part (the rest counts maxsize in messages):
        # a get() that waits until the trigger thread puts.
        self.assertEqual(self.do_blocking_test(self.q.get, (), self.q.put, ("empty",)), "empty")
        self.assertEqual(self.do_blocking_test(self.q.get, (True, 10), self.q.put, ("empty",)),
                         "empty")
