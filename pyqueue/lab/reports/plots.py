"""Figures of the lab's results that could go in a paper, and the checks that say
when one could not (the notebooks use both; nothing here measures).

- ``class_styles(names)``: one colour, marker and line style per class, all distinct
  (a peer and its ``-twin`` share a hue, dark and solid vs light and dashed; pyqueue's
  strategies are blues; ``none`` is black) -- matplotlib's 10-colour cycle gave 14
  classes 10 colours;
- ``legend_outside(ax)`` / ``legend_beside(fig, axes)``: the legend right of the data,
  never on it;
- ``log_if_wide(ax, "y")``: a log axis where the values drawn span more than 10x (the
  check spares an evenly spread time or position axis from near 0, which stays linear);
- ``shared_limits(arrays)``: one colour scale for every heat-map panel;
- ``figure_problems(fig)``: what a reader would trip on -- an axis without a unit,
  two lines of one colour, a legend over data points, a linear axis over more than
  10x, heat maps on different colour scales, a panel's text running into another
  panel, tick labels on top of each other; ``show(fig)`` prints them
  ("FIGURE PROBLEM: ...") and shows the figure;
- ``run_header(result)``: the CPUs, placement and parameters a result ran with.
"""
import colorsys
import json
import os
import re

import numpy as np

__all__ = ["class_styles", "legend_outside", "legend_beside", "log_if_wide", "shared_limits",
           "figure_problems", "show", "run_header", "PROBLEM", "UNIT"]

PROBLEM = "FIGURE PROBLEM"
UNIT = re.compile(r"\([^()]+\)\s*$")      # "latency (ns/query)": the unit, last, in brackets
WIDE = 10.0                              # values spanning more than this: a log axis

# A peer's adapter class (dark, solid) and its -twin (light, dashed) share a hue.
_PEER_HUES = {"ck": ("#d95f02", "#fdae6b"), "dpdk": ("#1b9e77", "#99d8c9"),
              "rwq": ("#e7298a", "#fa9fb5"), "boost": ("#7570b3", "#bcbddc"),
              "atomic_queue": ("#a6761d", "#e6ab02"), "mutex": ("#666666", "#bdbdbd")}
_PYQUEUE = ("#08519c", "#3182bd", "#6baed6", "#9ecae1", "#2171b5", "#4292c6")
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "h", "*", "p", "d", "8")


def _extra_colours(n, taken):
    """``n`` more colours, evenly spread in hue, none of ``taken``."""
    out, k = [], 0
    while len(out) < n:
        h = (0.13 + 0.61803398875 * k) % 1.0
        k += 1
        c = "#%02x%02x%02x" % tuple(int(255 * v) for v in colorsys.hsv_to_rgb(h, 0.75, 0.75))
        if c not in taken:
            out.append(c)
    return out


def class_styles(names):
    """{name: {"color", "marker", "linestyle"}} for the burst-tail classes (or any
    names): every colour distinct; a peer and its twin paired by hue."""
    styles, used, k_py = {}, set(), 0
    rest = []
    for n in names:
        peer = n[:-len("-twin")] if n.endswith("-twin") else n
        if n == "none":
            st = dict(color="#000000", linestyle=":")
        elif n.startswith("none+"):
            st = dict(color="#737373", linestyle=":")
        elif peer in _PEER_HUES:
            st = dict(color=_PEER_HUES[peer][n != peer], linestyle="--" if n != peer else "-")
        elif n.startswith("yield") and k_py < len(_PYQUEUE):
            st = dict(color=_PYQUEUE[k_py], linestyle="-")
            k_py += 1
        else:
            rest.append(n)
            continue
        if st["color"] in used:
            rest.append(n)
            continue
        used.add(st["color"])
        styles[n] = st
    for n, c in zip(rest, _extra_colours(len(rest), used)):
        styles[n] = dict(color=c, linestyle="-")
    for i, n in enumerate(names):
        styles[n]["marker"] = _MARKERS[i % len(_MARKERS)]
    return {n: styles[n] for n in names}


def legend_outside(ax, title=None, **kw):
    """The legend of ``ax`` right of its data, top-aligned (never over a point)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                     title=title, fontsize="small", **kw)


def legend_beside(fig, ax, title=None, **kw):
    """One legend for a row of panels (the handles of ``ax``), right of the last."""
    handles, labels = ax.get_legend_handles_labels()
    return fig.legend(handles, labels, loc="outside right upper", title=title,
                      fontsize="small", **kw)


def log_if_wide(ax, axis, values=None):
    """A log scale on ``axis`` ("x" or "y") of ``ax`` when the positive ``values``
    (default: what is drawn) span more than 10x; returns True when it set one."""
    vals = np.asarray(values, dtype=float).ravel() if values is not None else \
        _drawn(ax, axis)
    vals = vals[np.isfinite(vals)]
    if vals.size and (vals > 0).all() and vals.max() / vals.min() > WIDE:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
        return True
    return False


def shared_limits(arrays):
    """(vmin, vmax) over every finite value of ``arrays``: one colour scale for all
    the heat-map panels drawn from them."""
    vals = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    vals = vals[np.isfinite(vals)]
    return (float(vals.min()), float(vals.max())) if vals.size else (0.0, 1.0)


# ---- what is drawn, in data and in display coordinates ------------------------------

def _in_data(artist, ax):
    """True when ``artist`` is drawn in ``ax``'s data coordinates (not an axhline)."""
    try:
        return artist.get_transform().contains_branch(ax.transData)
    except (AttributeError, ValueError):
        return False


def _points(ax):
    """[(x, y) data, label, colour] of every line and scatter of ``ax`` in data coords."""
    out = []
    for line in ax.get_lines():
        if _in_data(line, ax):
            xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
            out.append((xy, line.get_label(), line.get_color()))
    for coll in ax.collections:
        offs = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
        if offs.size and coll.get_offset_transform().contains_branch(ax.transData):
            fc = coll.get_facecolor()
            out.append((offs, coll.get_label(), tuple(fc[0]) if len(fc) else None))
    return out


def _drawn(ax, axis):
    k = 0 if axis == "x" else 1
    vals = [xy[:, k] for xy, _, _ in _points(ax)]
    for c in ax.containers:
        for p in getattr(c, "patches", []):
            if axis == "y" and getattr(c, "orientation", "vertical") == "vertical":
                vals.append(np.array([p.get_height()]))
            if axis == "x" and getattr(c, "orientation", "vertical") == "horizontal":
                vals.append(np.array([p.get_width()]))
    return np.concatenate(vals) if vals else np.zeros(0)


def _display_points(fig, ax):
    pts = []
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
        if xy.size:
            pts.append(line.get_transform().transform(xy))
    for coll in ax.collections:
        offs = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
        if offs.size:
            pts.append(coll.get_offset_transform().transform(offs))
    good = [p[np.isfinite(p).all(axis=1)] for p in pts]
    return np.concatenate(good) if good else np.zeros((0, 2))


def _boxes(ax):
    """Display boxes of the bars and images of ``ax`` (data that is an area)."""
    out = [p.get_window_extent() for c in ax.containers for p in getattr(c, "patches", [])]
    out += [im.get_window_extent() for im in ax.images]
    return out


def _colour(c):
    from matplotlib.colors import to_hex
    try:
        return to_hex(c, keep_alpha=False)
    except (ValueError, TypeError):
        return str(c)


def _numeric(text):
    """True for a number as matplotlib writes a tick ("1.5", "−2", "$\\mathdefault{10^{2}}$")."""
    t = re.sub(r"\\mathdefault|[${}]", "", text).replace("−", "-").replace("\\times", "*")
    try:
        for part in re.split(r"[\^*]", t):
            float(part)
        return True
    except ValueError:
        return False


def _categorical(axis):
    """Tick labels that are names (classes, CPUs), not numbers: no unit needed."""
    texts = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
    return bool(texts) and not all(_numeric(t) for t in texts)


def _squashed(vals):
    """Positive values spanning more than 10x that are not an evenly spread scale (a
    time or position axis from near 0 stays linear): on a linear axis the small
    ones flatten to nothing."""
    if not (vals.size and (vals > 0).all() and vals.max() / vals.min() > WIDE):
        return False
    steps = np.diff(np.unique(vals))
    return steps.size < 2 or steps.std() > 0.5 * steps.mean()


def figure_problems(fig):
    """What would keep ``fig`` out of a paper, one sentence each ([] = none): see the
    module doc.  Draws the figure (positions are known only then)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>" and ax.get_visible()]
    legends = [(ax.get_legend(), ax) for ax in panels if ax.get_legend()] + \
              [(leg, None) for leg in fig.legends]
    colours = {}
    for i, ax in enumerate(panels):
        name = "panel %d%s" % (i + 1, " (%s)" % ax.get_title() if ax.get_title() else "")
        if not (ax.has_data() or ax.images):
            continue
        for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
            a = ax.xaxis if axis == "x" else ax.yaxis
            if not label.strip():
                problems.append("%s: the %s axis has no label" % (name, axis))
            elif not UNIT.search(label) and not _categorical(a):
                problems.append("%s: the %s axis %r names no unit in brackets"
                                % (name, axis, label))
            scale = ax.get_xscale() if axis == "x" else ax.get_yscale()
            vals = _drawn(ax, axis)
            vals = vals[np.isfinite(vals)]
            if scale == "linear" and _squashed(vals) and not _categorical(a):
                problems.append("%s: the %s axis spans %.0fx on a linear scale (log it)"
                                % (name, axis, vals.max() / vals.min()))
        seen = {}
        for _, label, colour in _points(ax):
            if label.startswith("_"):
                continue
            seen.setdefault(_colour(colour), set()).add(label)
            colours.setdefault(label, set()).add(_colour(colour))
        for c in ax.containers:
            label = c.get_label()
            if label and not label.startswith("_") and getattr(c, "patches", None):
                colour = _colour(c.patches[0].get_facecolor())
                seen.setdefault(colour, set()).add(label)
        for colour, labels in seen.items():
            if len(labels) > 1:
                problems.append("%s: %s share the colour %s"
                                % (name, ", ".join(sorted(labels)), colour))
        ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels()
                 if t.get_text() and t.get_visible()]
        if any(a.overlaps(b) for k, a in enumerate(ticks) for b in ticks[k + 1:]):
            problems.append("%s: x tick labels overlap" % name)
        own = [t for t in (ax.xaxis.label, ax.yaxis.label, ax.title) if t.get_text()]
        own += [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
        for j, other in enumerate(panels):
            if other is ax:
                continue
            box = other.get_window_extent(renderer)
            for t in own:
                if t.get_window_extent(renderer).overlaps(box):
                    problems.append("%s: %r runs into panel %d" % (name, t.get_text(), j + 1))
                    break
    for label, cs in colours.items():
        if len(cs) > 1:
            problems.append("%r has different colours in different panels" % label)
    for leg, _ in legends:
        box = leg.get_window_extent(renderer)
        for ax in panels:
            pts = _display_points(fig, ax)
            inside = ((pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) &
                      (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)) if len(pts) else []
            if np.any(inside) or any(b.overlaps(box) for b in _boxes(ax)):
                problems.append("a legend covers data of %s" % (
                    "its own panel" if ax.get_legend() is leg else "panel %d"
                    % (panels.index(ax) + 1)))
                break
    clims = {tuple(np.round(im.get_clim(), 9)) for ax in panels for im in ax.images}
    if len(clims) > 1:
        problems.append("heat maps on %d different colour scales (use one: shared_limits)"
                        % len(clims))
    return problems


def show(fig):
    """Print ``fig``'s problems ("FIGURE PROBLEM: ..."), then show it (returns
    nothing, so that a notebook cell ending with it prints nothing more); with
    PYQUEUE_FIGURE_LOG set, also append what was checked to that file (JSON lines)."""
    import matplotlib.pyplot as plt
    problems = figure_problems(fig)
    for p in problems:
        print("%s: %s" % (PROBLEM, p))
    log = os.environ.get("PYQUEUE_FIGURE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"axes": len(fig.axes), "problems": problems,
                                "titles": [ax.get_title() for ax in fig.axes]}) + "\n")
    plt.show()


# ---- what a result ran with ---------------------------------------------------------

_CPU_FIELDS = ("writer_cpu", "reader_cpu", "stage_cpu", "cpus")


def run_header(result, environment=None):
    """Three lines: the CPUs a result's threads were pinned to (-1: not pinned) and the
    CPUs the process was allowed; where it ran (CPU model, kernel, from its folder's
    environment.json, or this machine for a fresh result); its parameters."""
    params = dict(getattr(result, "params", None) or {})
    if environment is None:
        folder = (getattr(result, "output_folder", None) or getattr(result, "out", None) or
                  getattr(result, "folder", None))
        if folder and os.path.isfile(os.path.join(str(folder), "environment.json")):
            from ..common.output import load
            environment = load(folder, samples=False, check=False).environment
    if environment is None:
        from ..common.environment import collect_environment
        environment = collect_environment()
    cpus = ", ".join("%s %s" % (k, "not pinned" if params[k] == -1 else params[k])
                     for k in _CPU_FIELDS if k in params and params[k] is not None)
    kernel = environment.get("kernel") or {}
    return "\n".join([
        "CPUs: %s; allowed CPUs %s (%s cores)" % (cpus or "not pinned",
                                                 environment.get("allowed_cpus"),
                                                 environment.get("cpu_count")),
        "placement: %s, %s %s" % (environment.get("cpu_model"), kernel.get("system", ""),
                                  kernel.get("release", "")),
        "parameters: %s" % ", ".join("%s=%s" % (k, _short(v)) for k, v in params.items()
                                     if k not in _CPU_FIELDS)])


def _short(v):
    if isinstance(v, dict):
        return "{%s}" % ", ".join("%s=%s" % kv for kv in v.items())
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)
