"""The progress bar (tqdm) and graceful Ctrl-C (pyqueue.lab.common.progress)."""
import io
import os
import signal

import pytest

from pyqueue.lab.common.progress import GracefulInterrupt, Progress, format_seconds


def test_format_seconds():
    assert format_seconds(7) == "0:07"
    assert format_seconds(723) == "12:03"
    assert format_seconds(3723) == "1:02:03"
    assert format_seconds(None) == "--:--" and format_seconds(float("inf")) == "--:--"


def test_bar_shows_done_total_unit_and_status():
    stream = io.StringIO()
    with Progress(total=100, desc="yield0", unit="windows", stream=stream) as p:
        p.update(25, status="round 1/3")
        p.update(75, status="round 3/3")
    text = stream.getvalue()
    last = text.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("yield0:") and "100/100" in last and "windows" in last
    assert "round 3/3" in last


def test_plain_stream_is_rate_limited():
    stream = io.StringIO()
    p = Progress(total=1000, stream=stream, plain_interval=60.0)
    for _ in range(1000):
        p.update()
    p.close()
    drawn = [line for line in stream.getvalue().replace("\r", "\n").splitlines() if line]
    assert len(drawn) <= 3 and "1000/1000" in drawn[-1]
    p.close()                                          # idempotent
    assert [line for line in stream.getvalue().replace("\r", "\n").splitlines() if line] == drawn


def test_aborted_status_on_keyboard_interrupt():
    stream = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        with Progress(total=4, stream=stream) as p:
            p.update()
            raise KeyboardInterrupt
    assert p.status == "aborted" and "aborted" in stream.getvalue()


def test_disabled_prints_nothing_and_unknown_total():
    stream = io.StringIO()
    with Progress(total=3, stream=stream, enabled=False) as p:
        p.update(3)
    assert stream.getvalue() == "" and p.done == 3
    stream = io.StringIO()
    with Progress(total=None, unit="msgs", stream=stream) as p:
        p.update(42)
    assert "42" in stream.getvalue() and "msgs" in stream.getvalue()
    with pytest.raises(ValueError):
        Progress(total=-1)


def test_first_ctrl_c_sets_the_flag_second_aborts():
    stream, stopped = io.StringIO(), []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with GracefulInterrupt(stream=stream) as stop:
            stop.on_stop(lambda: stopped.append(True))
            assert not stop
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):                       # let the handler run
                if stop.requested:
                    break
            assert stop.requested and stop.signal == signal.SIGINT and stopped == [True]
            assert "Ctrl-C again" in stream.getvalue()
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):
                pass
            pytest.fail("second Ctrl-C did not abort")
    assert signal.getsignal(signal.SIGINT) is before


def test_request_without_a_signal_and_handler_restored():
    before = signal.getsignal(signal.SIGINT)
    with GracefulInterrupt(stream=io.StringIO()) as stop:
        stop.request()
        stop.request()                                  # idempotent
        assert stop.requested and stop.signal is None
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_is_a_first_ctrl_c():
    before = signal.getsignal(signal.SIGTERM)
    with GracefulInterrupt(stream=io.StringIO()) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested and stop.signal == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
