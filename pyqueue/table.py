"""The one table formatter of every command (pyqueue.pacing's table and the lab's): plain text or Markdown, fitted to the
terminal, with the notes (e.g. the peers not installed and why) on their own lines
under the table rather than in a column meant for numbers."""
import os
import shutil
import sys

__all__ = ["render", "terminal_width"]


def terminal_width():
    """Columns of the terminal stdout goes to (COLUMNS wins); None when stdout is a
    file or a pipe: a log has no width to fit."""
    isatty = getattr(sys.stdout, "isatty", None)
    if "COLUMNS" not in os.environ and not (isatty and isatty()):
        return None
    return shutil.get_terminal_size((100, 24)).columns


def render(head, rows, *, markdown=False, width=None, notes=()):
    """``head`` (column titles) and ``rows`` (lists of cells, str() taken) as a table.

    Plain text wider than ``width`` (default: the terminal's) is printed as one
    block per row, 'title: value' a line, rather than wrapped into an unreadable
    grid; Markdown is never reflowed (a renderer does that).  ``notes``: lines
    printed under the table, each on its own.
    """
    head = [str(h) for h in head]
    rows = [[str(c) for c in r] + [""] * (len(head) - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    if markdown:
        fmt = "| " + " | ".join("%%-%ds" % w for w in widths) + " |"
        lines = [fmt % tuple(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        lines += [fmt % tuple(r) for r in rows]
    elif sum(widths) + 2 * (len(widths) - 1) <= (width or terminal_width() or float("inf")):
        fmt = "  ".join("%%-%ds" % w for w in widths)
        lines = [fmt % tuple(head), "  ".join("-" * w for w in widths)]
        lines += [fmt % tuple(r) for r in rows]
    else:
        key = max(len(h) for h in head[1:]) if len(head) > 1 else 0
        lines = []
        for r in rows:
            lines.append("%s %s" % (head[0], r[0]) if head[0] else r[0])
            lines += ["  %-*s  %s" % (key, h, c) for h, c in zip(head[1:], r[1:])]
    notes = [n for n in notes if n]
    if notes:
        lines += [""] + list(notes)
    return "\n".join(line.rstrip() for line in lines)
