"""Progress display (tqdm) and graceful Ctrl-C for long experiment runs.

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

The bar is ``tqdm.auto``: a widget in Jupyter, a line redrawn in place on a
terminal.  When stderr is neither (CI logs, pipes) it is redrawn at most every
``plain_interval`` seconds, so a log gets a line now and then rather than a flood.
What stays here is the Ctrl-C handling: tqdm has none.

Python runs signal handlers in the main thread between bytecodes, so while the
main thread is inside a long C call the first Ctrl-C is only seen when the call
returns: run the measured loop in slices (or wait for C threads in short joins).
"""
import math
import signal
import sys
import threading

__all__ = ["Progress", "GracefulInterrupt", "format_seconds"]


def format_seconds(seconds):
    """'0:07', '12:03', '1:02:03'; '--:--' when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "--:--"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return "%d:%02d:%02d" % (h, m, s) if h else "%d:%02d" % (m, s)


def _in_notebook():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _Lines:
    """What tqdm draws in place with '\\r', as whole lines: a log or a pipe reading
    stderr line by line sees each redraw as one line instead of one endless line."""

    def __init__(self, stream):
        self.stream, self._last = stream, None

    def write(self, text):
        text = text.replace("\r", "").rstrip()
        if text and text != self._last:
            self.stream.write(text + "\n")
            self._last = text

    def flush(self):
        self.stream.flush()


class Progress:
    """A tqdm bar: done/total, percent, elapsed, ETA and a status text after it.

    ``enabled=False`` shows nothing; ``total=None`` counts without a bar or ETA.
    ``stream``: where a terminal bar goes (stderr by default; a notebook gets a
    widget instead).  Call it from one thread (the experiment's loop).
    """

    def __init__(self, total=None, desc="", unit="", *, stream=None, enabled=True,
                 interval=0.1, plain_interval=10.0):
        if total is not None and total < 0:
            raise ValueError("total must be >= 0 or None, got %r" % (total,))
        self.total, self.desc, self.unit = total, desc, unit
        self.enabled = bool(enabled)
        self.done, self.status = 0, ""
        self._closed = False
        self._bar = None
        if not self.enabled:
            return
        stream = sys.stderr if stream is None else stream
        isatty = getattr(stream, "isatty", None)
        notebook = stream is sys.stderr and _in_notebook()
        if notebook:
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        tty = notebook or bool(isatty and isatty())
        self._bar = tqdm(total=total, desc=desc or None, unit=(" " + unit) if unit else "it",
                         file=None if notebook else (stream if tty else _Lines(stream)),
                         leave=True, dynamic_ncols=tty,
                         mininterval=interval if tty else plain_interval,
                         maxinterval=interval if tty else plain_interval,
                         ascii=None if tty else True)

    def update(self, n=1, status=None):
        """Add ``n`` to the count (and replace the status text)."""
        self.set(self.done + n, status)

    def set(self, done, status=None):
        """Set the count to ``done`` (and the status text)."""
        step, self.done = done - self.done, done
        if status is not None:
            self.status = str(status)
        if self._bar is not None:
            if status is not None:
                self._bar.set_postfix_str(self.status, refresh=False)
            self._bar.update(step)

    def extend(self, n):
        """``n`` more units of work than the total said (a pass decided on the way,
        e.g. bench's settle pass): the bar's total and its ETA grow by them."""
        if self.total is None or n <= 0:
            return
        self.total += n
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def close(self, status=None):
        """Draw the final state (always) and end the line.  Idempotent."""
        if self._closed:
            return
        if status is not None:
            self.status = str(status)
        self._closed = True
        if self._bar is not None:
            self._bar.set_postfix_str(self.status, refresh=False)
            self._bar.close()                      # draws the final state (leave=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is KeyboardInterrupt and not self.status:
            self.status = "aborted"
        self.close()
        return False


class GracefulInterrupt:
    """Turn the first Ctrl-C (or SIGTERM, a polite kill) into a flag; a second one
    aborts with KeyboardInterrupt.

    Inside ``with GracefulInterrupt() as stop:`` the loop checks ``stop.requested``
    between slices, stops its C threads, writes its partial output folder and
    returns.  ``on_stop(fn)`` registers callables run at the first Ctrl-C (e.g. to
    tell C threads to finish the current window).  Outside the main thread no
    handler can be installed; the flag then only changes through ``request()``.
    The previous handlers are restored on exit.
    """

    def __init__(self, stream=None, signals=(signal.SIGINT, signal.SIGTERM),
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
