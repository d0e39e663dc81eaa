"""The skeleton every experiment runs in: output folder -> Ctrl-C guard ->
progress -> slices -> checkpoint -> finish.  The experiment keeps only its loop:

    def record(folder, status, final):       # the experiment's own results
        res.status, res.summary = status, summarize(...)
        if folder is not None:
            folder.save_samples(...)          # whatever it keeps, every checkpoint
        return res.summary                    # summary.json's "results"

    with Session("pipeline", params, total=slices, unit="slices", record=record,
                 out=out, progress=progress) as s:
        for r in range(slices):
            for v in variants:
                if s.stopping:               # first Ctrl-C: the slice in C finishes
                    break
                run_one_slice_in_c(v)
                s.advance(1, "slice %d %s" % (r + 1, v))
            if s.stopping:
                break
            s.checkpoint(r + 1)
    return res                                # res.status set by record()

Leaving the ``with`` finishes the run exactly once: "complete" when done ==
total, "interrupted after K of N <unit>" when it stopped early (a first Ctrl-C,
``should_stop()``, or a second Ctrl-C, whose KeyboardInterrupt then goes on),
"failed: <why>" when an exception left the block (it goes on too).  ``record``
is called at every checkpoint (only with an output folder) and once at the end
(always), with the status the run has at that point.
"""
from . import status as _status
from .output import OutputFolder
from .progress import GracefulInterrupt, Progress

__all__ = ["Session"]


class Session:
    """One experiment run (see the module doc).

    ``total`` units of ``unit`` make the run complete; ``done`` counts them (set it,
    or pass it to ``checkpoint``).  ``bar_total`` / ``bar_unit``: what the progress
    line counts when that differs (e.g. windows, against rounds for the status).
    ``guard``: a GracefulInterrupt to use instead of a new one; ``slice_name``: the word
    the first Ctrl-C's message uses for what it lets finish.  ``out=None``: no
    folder (``folder`` is then None); ``pinning``, ``argv``: for environment.json.
    """

    def __init__(self, experiment, params, total, unit="rounds", *, record, out=None,
                 overwrite=False, pinning=None, argv=None, progress=True, desc=None,
                 bar_total=None, bar_unit=None, should_stop=None, guard=None, slice_name="slice"):
        self.total, self.unit, self.done = total, unit, 0
        self.status = None
        self._record = record
        self._should_stop = should_stop or (lambda: False)
        self.folder = None
        if out is not None:
            self.folder = OutputFolder(out, experiment, params, total=total, unit=unit,
                                       overwrite=overwrite, pinning=pinning, argv=argv)
        self.bar = Progress(total if bar_total is None else bar_total, desc=desc or experiment,
                            unit=unit if bar_unit is None else bar_unit, enabled=progress)
        self.stop = guard if guard is not None else GracefulInterrupt(
            message="\nstopping after the current %s (Ctrl-C again to abort now)" % slice_name)

    def __enter__(self):
        self.stop.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.status is None:
                # A second Ctrl-C stops the run where it is; anything else failed it.
                self.finish(None if exc_type is None or issubclass(exc_type, KeyboardInterrupt)
                            else exc)
        finally:
            self.bar.__exit__(exc_type, exc, tb)
            self.stop.__exit__(exc_type, exc, tb)
        return False

    @property
    def stopping(self):
        """True once a stop was asked for (Ctrl-C or ``should_stop()``): end the loop."""
        return self.stop.requested or self._should_stop()

    def advance(self, n=1, status=None):
        """Count ``n`` more on the progress line (and replace its status text)."""
        self.bar.update(n, status)

    def checkpoint(self, done=None):
        """``done`` units are finished (default: ``self.done``): with an output folder,
        record them and the results so far."""
        if done is not None:
            self.done = done
        if self.folder is not None:
            status = _status.interrupted(self.done, self.total, self.unit)
            self.folder.checkpoint(self._record(self.folder, status, False), self.done)

    def finish(self, error=None):
        """End the run (once; leaving the ``with`` does it): the final status, the
        experiment's record with it, the folder's final summary.  Returns the status."""
        if self.status is not None:
            return self.status
        if self.folder is None:
            self.status = _status.final(self.done, self.total, self.unit, error)
            self._record(None, self.status, True)
            return self.status
        self.status = self.folder.final_status(self.done, error)
        try:
            results = self._record(self.folder, self.status, True)
        except OSError as e:
            # The folder cannot take the experiment's last files (a full disk): the
            # results are made without them and summary.json says the run failed,
            # if it still fits; the folder verifies either way (index written last).
            error = error or e
            self.status = self.folder.final_status(self.done, error)
            results = self._record(None, self.status, True)
            self.folder.finish(results, self.done, error)
            if error is e:
                raise
            return self.status
        self.folder.finish(results, self.done, error)
        return self.status
