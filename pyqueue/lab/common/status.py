"""The one status vocabulary of every experiment: the same string in its result
object, its printed summary and its output folder's summary.json.

    complete                                  every unit of work ran
    interrupted after K of N <unit>           stopped early: Ctrl-C, a stop request,
                                              or killed after a checkpoint
    failed: <why>                             an error ended the run

A checkpoint writes the status the run would have if it ended there, so a
folder left by a killed run says how far it got.
"""
import re

__all__ = ["COMPLETE", "interrupted", "failed", "final", "is_complete", "is_interrupted",
           "is_failed", "normalize"]

COMPLETE = "complete"


def interrupted(done, total, unit):
    return "interrupted after %d of %d %s" % (done, total, unit)


def failed(why):
    """``why``: an exception (its message, else its type's name) or a text."""
    if isinstance(why, BaseException):
        why = str(why) or type(why).__name__
    return "failed: %s" % why


def final(done, total, unit, error=None):
    """The status a run ends with: failed (``error`` given), complete or interrupted."""
    if error is not None:
        return failed(error)
    return COMPLETE if done == total else interrupted(done, total, unit)


def is_complete(status):
    return status == COMPLETE


def is_interrupted(status):
    return status.startswith("interrupted")


def is_failed(status):
    return status.startswith("failed")


# The words folders written before this vocabulary carry.
_OLD = [(re.compile(r"^(?:incomplete|partial:?) (?:after )?(\d+ of \d+ .*)$"), r"interrupted after \1"),
        (re.compile(r"^failed after \d+ of \d+ [^:]*: (.*)$"), r"failed: \1")]


def normalize(status):
    """An older folder's status in today's words ("incomplete after ..." and
    "partial: ..." -> "interrupted after ...", "failed after K of N x: why" ->
    "failed: why"); anything else unchanged."""
    if not isinstance(status, str):
        return status
    for pattern, repl in _OLD:
        if pattern.match(status):
            return pattern.sub(repl, status)
    return status
