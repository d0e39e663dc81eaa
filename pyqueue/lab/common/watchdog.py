"""A limit on how long one slice may run (DESIGN §6.6).

A slice is a C call that releases the GIL and spins until its messages are
through.  Should one never come back (a lost wake-up, a peer library's bug, a
driver waiting on a side that already failed), nothing in the interpreter can
end it: Ctrl-C is only handled when the call returns, and its threads, possibly
SCHED_FIFO, keep both CPUs.  So a run that watches its slices gets, after
``limit_s`` of one slice, the slice's name, every Python thread's stack and
every OS thread's state and CPU time over a second (thread_report: whether the
slice's C threads spin or never run) on stderr, its partial output written
(the run's status says which slice hung), and the process ends with EXIT_HUNG
-- the one way to stop threads that never look at a stop flag.

    wd = SliceWatchdog(limit_s, on_hang=lambda why: session.finish(SliceHung(why)))
    with wd:
        value = wd.run("throughput mutex round 3", run_slice, "mutex")

The watching thread sleeps on an event between slices and wakes once at the
deadline of the slice in flight, so a slice that returns in time never meets it.
"""
import faulthandler
import os
import sys
import threading
import time

__all__ = ["DEFAULT_SLICE_LIMIT_S", "EXIT_HUNG", "SliceHung", "SliceWatchdog", "thread_report"]

EXIT_HUNG = 3
# No slice of the default bench takes more than a few seconds (a streaming slice
# is capped near STREAM_SECONDS); one still running after this long has hung.
DEFAULT_SLICE_LIMIT_S = 300


# /proc/<pid>/task/<tid>/stat fields (1-based, after the comm in parentheses):
# state 3, utime 14, stime 15, processor 39, rt_priority 40, policy 41.
_POLICIES = {0: "OTHER", 1: "FIFO", 2: "RR", 3: "BATCH", 5: "IDLE", 6: "DEADLINE"}


def _task_stats():
    """{tid: (name, state, cpu, policy, rt_priority, cpu_ticks)} of this
    process's threads, from /proc (Linux); {} where it cannot be read."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/self/task/%s/stat" % tid) as f:
                raw = f.read()
        except OSError:
            continue                # the thread ended meanwhile
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        f = raw[raw.rindex(")") + 2:].split()   # f[0] is field 3
        out[int(tid)] = (name, f[0], int(f[36]), _POLICIES.get(int(f[38]), f[38]),
                         int(f[37]), int(f[11]) + int(f[12]))
    return out


def thread_report(sample_s=1.0):
    """Lines on every OS thread of this process -- the C threads of a slice
    included, which the Python stacks do not show: its state, the CPU it last
    ran on, its scheduling policy, and the CPU time it took over ``sample_s``
    seconds.  A thread that took ~all of them spins (waiting on the other side);
    one that took none is blocked or was never scheduled."""
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    before = _task_stats()
    time.sleep(sample_s)
    after = _task_stats()
    if not after:
        return ["(no /proc/self/task here: no per-thread report)"]
    lines = ["OS threads over %g s (tid name: state, last CPU, policy, CPU time taken):"
             % sample_s]
    for tid in sorted(after):
        name, state, cpu, policy, prio, ticks = after[tid]
        took = (ticks - before[tid][5]) / hz if tid in before else None
        lines.append("  %d %s: %s, CPU %d, %s%s, %s" % (
            tid, name, state, cpu, policy, " %d" % prio if prio else "",
            "%.2f s" % took if took is not None else "new"))
    return lines


class SliceHung(RuntimeError):
    """A slice ran past the run's slice limit (the run's partial output keeps
    everything measured before it)."""


class SliceWatchdog:
    """See the module doc.  ``limit_s`` None or 0: nothing is watched.
    ``on_hang(why)`` runs in the watching thread while the slice is still stuck
    (write the partial output there); then the process exits with ``exit_code``
    (None: it does not, for tests that only want the report)."""

    def __init__(self, limit_s, on_hang=None, stream=None, exit_code=EXIT_HUNG):
        if limit_s is not None and not limit_s >= 0:
            raise ValueError("slice limit must be >= 0 seconds (0: no limit), got %r"
                             % (limit_s,))
        self.limit_s = limit_s or None
        self.on_hang = on_hang
        self.stream = stream
        self.exit_code = exit_code
        self.hung = None            # the report of the slice that hung
        self._cv = threading.Condition()
        self._slice = None          # (label, deadline) of the slice in flight
        self._closed = False
        self._hanging = False
        self._thread = None

    def __enter__(self):
        if self.limit_s:
            self._thread = threading.Thread(target=self._watch, name="pyqueue-slice-watchdog",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        with self._cv:
            self._closed = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join()
        return False

    def run(self, label, fn, *args):
        """fn(*args), watched as the slice ``label``."""
        if not self.limit_s:
            return fn(*args)
        with self._cv:
            self._slice = (label, time.monotonic() + self.limit_s)
            self._cv.notify()
        try:
            return fn(*args)
        finally:
            with self._cv:
                # Back just as the limit struck: the watching thread is writing the
                # partial output and ending the process; nothing may change under it.
                while self._hanging:
                    self._cv.wait()
                self._slice = None
                self._cv.notify()

    def _watch(self):
        with self._cv:
            while not self._closed:
                if self._slice is None:
                    self._cv.wait()
                    continue
                label, deadline = self._slice
                left = deadline - time.monotonic()
                if left > 0:
                    self._cv.wait(left)
                    continue
                self._hanging = True
                break
            else:
                return
        self._hang(label)

    def _hang(self, label):
        stream = self.stream if self.stream is not None else sys.stderr
        why = ("slice %s ran past the slice limit of %g s without returning (hung?)"
               % (label, self.limit_s))
        self.hung = why
        try:
            stream.write("\npyqueue: %s; the Python threads' stacks:\n" % why)
            stream.flush()
            faulthandler.dump_traceback(file=stream, all_threads=True)
            stream.write("\n".join(thread_report()) + "\n")
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass                    # no usable stream: the status still says it
        try:
            if self.on_hang is not None:
                self.on_hang(why)
        finally:
            if self.exit_code is not None:
                try:
                    stream.write("pyqueue: ending the process (exit %d): its C threads "
                                 "cannot be stopped otherwise\n" % self.exit_code)
                    stream.flush()
                except (OSError, ValueError, AttributeError):
                    pass
                os._exit(self.exit_code)
