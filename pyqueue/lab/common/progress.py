"""Progress display and graceful Ctrl-C for long experiment runs (no dependencies).

Experiments get both through common/session.py, which pairs them with the output
folder; the pieces alone:

    with GracefulInterrupt() as stop, Progress(total=rounds * windows, desc="yield0",
                                                unit="windows") as bar:
        for r in range(rounds):
            for s in range(slices):
                if stop.requested:          # first Ctrl-C: finish the slice, then stop
                    break
                run_one_slice_in_c(...)     # GIL released; short enough to notice Ctrl-C
                bar.update(slice_len, status="round %d/%d" % (r + 1, rounds))
            if stop.requested:
                break

Python runs signal handlers in the main thread between bytecodes, so while the
main thread is inside a long C call the first Ctrl-C is only seen when the call
returns: run the measured loop in slices (or wait for C threads in short joins).
"""
import math
import shutil
import signal
import sys
import threading
import time

__all__ = ["Progress", "GracefulInterrupt", "format_seconds"]


def format_seconds(seconds):
    """'0:07', '12:03', '1:02:03'; '--:--' when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "--:--"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return "%d:%02d:%02d" % (h, m, s) if h else "%d:%02d" % (m, s)


class Progress:
    """A progress line on stderr: bar, done/total, percent, elapsed, ETA and a status.

    On a terminal the line is redrawn in place at most every ``interval`` seconds;
    when the stream is not a terminal (CI logs, pipes) a plain line is printed at
    most every ``plain_interval`` seconds, plus a last one on ``close()``.
    ``enabled=False`` prints nothing.  ``total=None`` shows a count without bar/ETA.
    Call it from one thread (the experiment's loop).
    """

    BAR = 24

    def __init__(self, total=None, desc="", unit="", *, stream=None, enabled=True,
                 interval=0.1, plain_interval=10.0, clock=time.monotonic):
        if total is not None and total < 0:
            raise ValueError("total must be >= 0 or None, got %r" % (total,))
        self.total, self.desc, self.unit = total, desc, unit
        self.stream = sys.stderr if stream is None else stream
        self.enabled = bool(enabled)
        self.clock = clock
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.interval = interval if self.tty else plain_interval
        self.done, self.status = 0, ""
        self.start = clock()
        self._last_draw = None
        self._drawn_width = 0
        self._closed = False

    def update(self, n=1, status=None):
        """Add ``n`` to the count (and replace the status text); redraw if due."""
        self.set(self.done + n, status)

    def set(self, done, status=None):
        """Set the count to ``done`` (and the status text); redraw if due."""
        self.done = done
        if status is not None:
            self.status = str(status)
        now = self.clock()
        if self._last_draw is None or now - self._last_draw >= self.interval:
            self._draw(now)

    def line(self, now=None):
        """The text of the progress line as it would be drawn now."""
        elapsed = (self.clock() if now is None else now) - self.start
        parts = [self.desc + ":"] if self.desc else []
        unit = " " + self.unit if self.unit else ""
        if self.total:
            frac = min(1.0, self.done / self.total)
            fill = int(frac * self.BAR)
            parts.append("[" + "#" * fill + "-" * (self.BAR - fill) + "]")
            parts.append("%d/%d%s %3d%%" % (self.done, self.total, unit, int(frac * 100)))
            eta = elapsed * (self.total - self.done) / self.done if self.done else None
            parts.append("%s elapsed, ETA %s" % (format_seconds(elapsed), format_seconds(eta)))
        else:
            parts.append("%d%s" % (self.done, unit))
            parts.append("%s elapsed" % format_seconds(elapsed))
        if self.status:
            parts.append(self.status)
        return " ".join(parts)

    def _draw(self, now, final=False):
        self._last_draw = now
        if not self.enabled:
            return
        text = self.line(now)
        if self.tty:
            width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
            text = text[:width]
            pad = max(0, self._drawn_width - len(text))
            self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
            self._drawn_width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self, status=None):
        """Draw the final state (always) and end the line.  Idempotent."""
        if self._closed:
            return
        if status is not None:
            self.status = str(status)
        self._closed = True
        self._draw(self.clock(), final=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is KeyboardInterrupt and not self.status:
            self.status = "aborted"
        self.close()
        return False


class GracefulInterrupt:
    """Turn the first Ctrl-C into a flag; a second one aborts with KeyboardInterrupt.

    Inside ``with GracefulInterrupt() as stop:`` the loop checks ``stop.requested``
    between slices, stops its C threads, writes its partial output folder and
    returns.  ``on_stop(fn)`` registers callables run at the first Ctrl-C (e.g. to
    tell C threads to finish the current window).  Outside the main thread no
    handler can be installed; the flag then only changes through ``request()``.
    The previous handlers are restored on exit.
    """

    def __init__(self, stream=None, signals=(signal.SIGINT,),
                 message="\nstopping after the current slice (Ctrl-C again to abort now)"):
        self.stream = sys.stderr if stream is None else stream
        self.signals = tuple(signals)
        self.message = message
        self.requested = False
        self.signal = None
        self._callbacks = []
        self._previous = {}

    def on_stop(self, fn):
        """Call ``fn()`` when a stop is first requested; returns ``fn``."""
        self._callbacks.append(fn)
        return fn

    def request(self, signum=None):
        """Ask the loop to stop (what the first Ctrl-C does)."""
        if self.requested:
            return
        self.requested, self.signal = True, signum
        for fn in self._callbacks:
            fn()

    def _handler(self, signum, frame):
        if self.requested:
            self._restore()                       # a third Ctrl-C behaves as usual
            raise KeyboardInterrupt
        if self.message:
            self.stream.write(self.message + "\n")
            self.stream.flush()
        self.request(signum)

    def _restore(self):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def __bool__(self):
        return self.requested

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self.signals:
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._restore()
        return False
