"""Progress line and graceful Ctrl-C (pyqueue.lab.common.progress), with a fake clock."""
import io
import os
import signal

import pytest

from pyqueue.lab.common.progress import GracefulInterrupt, Progress, format_seconds


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_format_seconds():
    assert format_seconds(7) == "0:07"
    assert format_seconds(723) == "12:03"
    assert format_seconds(3723) == "1:02:03"
    assert format_seconds(None) == "--:--" and format_seconds(float("inf")) == "--:--"


def test_line_shows_done_total_elapsed_eta_status():
    clock = Clock()
    p = Progress(total=100, desc="yield0", unit="windows", stream=io.StringIO(), clock=clock)
    clock.t += 10
    p.done, p.status = 25, "round 1/3"
    line = p.line()
    assert line.startswith("yield0: [######------------------]")
    assert "25/100 windows  25%" in line
    assert "0:10 elapsed, ETA 0:30" in line and line.endswith("round 1/3")
    p.done = 0
    assert "ETA --:--" in p.line()


def test_plain_lines_are_rate_limited_when_not_a_tty():
    clock, stream = Clock(), io.StringIO()
    p = Progress(total=10, stream=stream, clock=clock, plain_interval=10.0)
    for _ in range(5):
        clock.t += 1
        p.update()
    assert stream.getvalue().count("\n") == 1          # the first update only
    clock.t += 10
    p.update(5, status="half")
    p.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert "10/10" in lines[-1] and lines[-1].endswith("half")
    p.close()                                          # idempotent
    assert len(stream.getvalue().splitlines()) == 3


def test_tty_redraws_in_place():
    clock, stream = Clock(), Tty()
    with Progress(total=4, stream=stream, clock=clock, interval=0.1) as p:
        for _ in range(4):
            clock.t += 0.2
            p.update()
    text = stream.getvalue()
    assert text.count("\r") == 5 and text.endswith("\n") and text.count("\n") == 1


def test_disabled_prints_nothing_and_unknown_total():
    stream = io.StringIO()
    with Progress(total=3, stream=stream, enabled=False) as p:
        p.update(3)
    assert stream.getvalue() == ""
    p = Progress(total=None, unit="msgs", stream=io.StringIO(), clock=Clock())
    p.update(42)
    assert "42 msgs" in p.line() and "ETA" not in p.line()
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
