"""Property test of the Python API (DESIGN §5) against a Python list model, with
hypothesis driving random sequences of write / try_write / write_batch / flush
/ poll / poll_into / close on small queues of every publish policy.

Checked, whatever the policy: FIFO and exact bytes (every delivered message is
the next one written, nothing twice, nothing that failed to write); every
message written before a flush is delivered by the next unlimited poll; with
'each' or scan_current, every written message is; MessageTooLarge above
max_message with nothing written; QueueFull from a zero timeout and False from
try_write leave nothing behind; after close every call raises QueueClosed;
counters (messages/bytes written and read, backlog) equal the model's; and at
the end flush + poll delivers everything written (no loss)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import pyqueue as pq

CONFIGS = st.fixed_dictionaries({
    "block_size": st.sampled_from([64, 128, 256]),
    "hot_blocks": st.integers(1, 2),
    "spill_blocks": st.integers(0, 3),
    "publish": st.sampled_from(["max", "each", "bytes:1", "bytes:100"]),
    "scan_current": st.booleans(),
})


class QueueModel(RuleBasedStateMachine):
    """The model: ``written`` (every message the queue accepted, in order),
    ``read`` (how many the reader took), ``visible`` (how many an unlimited
    poll must deliver: up to the last flush, or all with 'each' / scan)."""

    @initialize(cfg=CONFIGS)
    def make(self, cfg):
        self.q = pq.Queue(max_message=0, **cfg)   # the block framing (test_frames: the rest)
        self.cfg = cfg
        self.all_visible = cfg["publish"] == "each" or cfg["scan_current"]
        self.written, self.read, self.visible = [], 0, 0
        self.closed = False
        self.counter = 0

    def teardown(self):
        q = getattr(self, "q", None)
        if q is None:
            return
        if not self.closed:
            # No loss: flush, then an unlimited poll delivers every message left.
            self.q.writer.flush()
            self.visible = len(self.written)
            self._take(self.q.reader.poll(), limit=None)
            assert self.read == len(self.written)
            assert self.q.stats()["backlog"] == 0
        q.close()

    # --- helpers ---------------------------------------------------------
    def _message(self, size):
        self.counter += 1
        body = self.counter.to_bytes(8, "little") * (size // 8 + 1)
        return body[:size]

    def _accepted(self, msg):
        self.written.append(msg)
        if self.all_visible:
            self.visible = len(self.written)

    def _take(self, got, limit):
        for m in got:
            assert self.read < len(self.written), "delivered a message never written"
            assert m == self.written[self.read], "FIFO or bytes broken at message %d" % self.read
            self.read += 1
        if limit is None or len(got) < limit:  # stopped: nothing more was visible
            assert self.read >= self.visible, "a flushed or published message was not delivered"

    # --- writer ----------------------------------------------------------
    @precondition(lambda self: not self.closed)
    @rule(size=st.integers(0, 300), how=st.sampled_from(["write0", "try", "write_short"]))
    def write(self, size, how):
        msg = self._message(size)
        if size > self.q.max_message:
            with pytest.raises(pq.MessageTooLarge):
                if how == "try":
                    self.q.writer.try_write(msg)
                else:
                    self.q.writer.write(msg, timeout=0)
            return
        if how == "try":
            if self.q.writer.try_write(msg):
                self._accepted(msg)
            return
        try:
            self.q.writer.write(msg, timeout=0 if how == "write0" else 0.001)
        except pq.QueueFull:
            return  # nothing written: the model does not change
        self._accepted(msg)

    @precondition(lambda self: not self.closed)
    @rule(n=st.integers(0, 40), size=st.integers(0, 80))
    def write_batch(self, n, size):
        arr = np.zeros((n, size), np.uint8)
        for i in range(n):
            arr[i] = np.frombuffer(self._message(size), np.uint8)
        if size > self.q.max_message and n > 0:   # zero rows: nothing too large
            with pytest.raises(pq.MessageTooLarge):
                self.q.writer.write_batch(arr, timeout=0)
            return
        try:
            done = self.q.writer.write_batch(arr, timeout=0)
            assert done == n
        except pq.QueueFull as e:
            done = e.written
            assert 0 <= done < n
        for i in range(done):
            self._accepted(arr[i].tobytes())

    @precondition(lambda self: not self.closed)
    @rule()
    def flush(self):
        self.q.writer.flush()
        self.visible = len(self.written)

    # --- reader ----------------------------------------------------------
    @precondition(lambda self: not self.closed)
    @rule(limit=st.one_of(st.none(), st.integers(0, 20)))
    def poll(self, limit):
        self._take(self.q.reader.poll(limit), limit)

    @precondition(lambda self: not self.closed)
    @rule(rows=st.integers(0, 8), same=st.booleans(), size=st.integers(0, 64))
    def poll_into(self, rows, same, size):
        if same and self.read < len(self.written):
            size = len(self.written[self.read])
        out = np.zeros((rows, size), np.uint8)
        try:
            n = self.q.reader.poll_into(out)
        except pq.QueueError as e:
            # The next visible message has another size; it stays in the queue.
            assert rows > 0 and self.read < len(self.written)
            assert len(self.written[self.read]) != size, e
            return
        self._take([out[i].tobytes() for i in range(n)], limit=0)
        if n < rows and self.read < self.visible:
            # Only a message of another size may stop it early.
            assert len(self.written[self.read]) != size

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self):
        self.q.close()
        self.closed = True

    @precondition(lambda self: self.closed)
    @rule()
    def calls_after_close(self):
        self.q.close()  # idempotent
        with pytest.raises(pq.QueueClosed):
            self.q.writer.write(b"x")
        with pytest.raises(pq.QueueClosed):
            self.q.writer.try_write(b"x")
        with pytest.raises(pq.QueueClosed):
            self.q.writer.flush()
        with pytest.raises(pq.QueueClosed):
            self.q.reader.poll()
        with pytest.raises(pq.QueueClosed):
            self.q.stats()

    # --- counters --------------------------------------------------------
    @invariant()
    def counters_match(self):
        if getattr(self, "q", None) is None or self.closed:
            return
        s = self.q.stats()
        assert s["messages_written"] == len(self.written)
        assert s["bytes_written"] == sum(map(len, self.written))
        assert s["messages_read"] == self.read
        assert s["bytes_read"] == sum(map(len, self.written[:self.read]))
        assert s["backlog"] == s["bytes_written"] - s["bytes_read"] == self.q.backlog()
        assert s["returns_hot"] <= s["takes_hot"] and s["returns_spill"] <= s["takes_spill"]


QueueModel.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
test_queue_against_list_model = QueueModel.TestCase


def test_poll_none_returns_every_visible_message():
    with pq.Queue(publish="each") as q:
        for i in range(5000):
            q.writer.write(i.to_bytes(8, "little") * 8)
        assert len(q.reader.poll()) == 5000
