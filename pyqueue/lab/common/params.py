"""One parameter list per experiment (STYLE item 14).

An experiment declares its parameters once, as a frozen dataclass whose fields
carry their type, default, range and help::

    @dataclasses.dataclass(frozen=True)
    class BurstTailParams(Params):
        EXPERIMENT = "burst-tail"
        rounds: int = param(3, "rounds over every class", lo=1, hi=1000)
        writer_cpu: int = param(WRITER_CPU, "CPU of the writer", kind="cpu")

and everything else is derived from that one declaration:

- the CLI flags (``add_arguments``): ``--rounds N``, ``--writer-cpu CPU``; a bool is
  ``--name`` / ``--no-name``; a tuple is comma-separated; a QueueConfig field is the
  queue's own flags (``--block-size``, ``--publish``, ...) over the field's default;
  old spellings are hidden aliases (``cli_aliases``);
- the Python keywords: ``Params.of(**kwargs)`` takes exactly the fields (old keyword
  names in ``ALIASES`` are accepted with a DeprecationWarning);
- the JSON ``params`` of the output folder (``to_json``) and back (``from_json``);
- the checks: every value is checked once, when the dataclass is made
  (``__post_init__``), against its kind and range, then ``check()`` for the rules
  between fields.  Inside the experiment the values are trusted.

``--quick`` is a door's shorthand, not a parameter: a field's ``quick`` value caps it
(``quick()`` gives the same from Python).
"""
import argparse
import dataclasses
import math
import numbers
import re
import textwrap
import warnings
from typing import Any, ClassVar, Dict, Tuple

from pyqueue import validate
from pyqueue.config import KINDS as QUEUE_KINDS
from pyqueue.config import QueueConfig

__all__ = ["Params", "param", "WRITER_CPU", "READER_CPU", "STAGE_CPU", "KINDS", "flag_of",
           "parse_duration"]

# The CPUs every two-thread experiment pins to unless told otherwise (CLI and Python
# alike); -1 leaves a thread to the scheduler.
WRITER_CPU, READER_CPU, STAGE_CPU = 0, 1, 1

KINDS = ("int", "float", "bool", "str", "cpu", "cpus", "names", "ints", "floats",
         "durations", "seed", "queue")

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text, name="duration"):
    """'0.5ms' / '25 ms' / '1s' / '100us' -> seconds (a bare number is seconds)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us|µs|ns)?\s*", text)
    if not m:
        raise ValueError("%s: not a duration: %r (use e.g. 0.5ms, 25ms, 1s)" % (name, text))
    return validate.duration(name, float(m.group(1)) * _UNITS[m.group(2) or "s"])


def param(default, help, *, kind=None, lo=None, hi=None, choices=None, none_ok=False,
          quick=None, cli_aliases=(), metavar=None, group=None, lo_open=False, hi_open=False):
    """A field of an experiment's Params: ``default`` and ``help`` always; ``kind`` (one
    of KINDS; deduced from the default's type when None); ``lo``/``hi`` the range
    (inclusive; for a number, ``lo_open`` excludes lo and ``hi_open`` hi: hi=math.inf
    with hi_open is "finite"; a CPU with lo=0 must be pinned, -1 refused);
    ``choices`` for a str or each item of names;
    ``none_ok``: None is a value too (it means what the help says); ``quick``: what
    --quick caps the value at (for a QueueConfig: {field: cap}), or a function of the
    value that gives the value --quick runs with (what a cap cannot say, e.g. None ->
    0 but a given count kept); ``cli_aliases``: old
    flag spellings, each a flag or (flag, constant) for a bool that stored a constant;
    ``group``: the --help section."""
    if kind is None:
        kind = ("bool" if isinstance(default, bool) else "int" if isinstance(default, int)
                else "float" if isinstance(default, float) else "str" if isinstance(default, str)
                else "queue" if isinstance(default, QueueConfig) else None)
    if kind not in KINDS:
        raise TypeError("param(%r): give kind=, one of %s" % (default, ", ".join(KINDS)))
    if isinstance(default, (list, dict, set)):
        raise TypeError("param(%r): a default must be immutable (a tuple)" % (default,))
    meta = dict(kind=kind, help=help, lo=lo, hi=hi, choices=choices, none_ok=none_ok,
                quick=quick, cli_aliases=tuple(cli_aliases), metavar=metavar, group=group,
                lo_open=lo_open, hi_open=hi_open)
    return dataclasses.field(default=default, metadata={"pyq": meta})


def _meta(f):
    return f.metadata["pyq"]


def flag_of(name):
    """The CLI flag of field ``name``."""
    return "--" + name.replace("_", "-")


# ---- checking one value ------------------------------------------------------------

def _csv(text, item, what):
    parts = [p.strip() for p in text.split(",")] if isinstance(text, str) else None
    if parts is not None:
        if not all(parts):
            raise ValueError("%s: an empty item in %r" % (what, text))
        return tuple(item(p) for p in parts)
    return text


def _int_text(text):
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        raise ValueError("not an integer: %r" % (text,)) from None


def _check(name, m, value):
    """``value`` of field ``name`` (metadata ``m``) made plain and checked."""
    kind, lo, hi = m["kind"], m["lo"], m["hi"]
    if value is None:
        if m["none_ok"]:
            return None
        raise validate.ArgumentTypeError("%s must not be None" % name)
    if kind in ("int", "seed"):
        if kind == "seed" and isinstance(value, str):
            value = _int_text(value)
        return validate.integer(name, value, lo, hi)
    if kind == "float":
        return _number(name, value, m)
    if kind == "bool":
        return validate.flag(name, value)
    if kind == "str":
        if not isinstance(value, str):
            raise validate.ArgumentTypeError("%s must be a str, got %r" % (name, value))
        if m["choices"] is not None:
            return validate.choice(name, value, tuple(m["choices"]))
        return value
    if kind == "cpu":
        return validate.cpu(name, value, allow_unpinned=_unpinned_ok(m))
    if kind == "queue":
        if not isinstance(value, QueueConfig):
            raise validate.ArgumentTypeError("%s must be a pyqueue.QueueConfig, got %s"
                                             % (name, type(value).__name__))
        return value
    # the tuples; one bare number is a list of one, as a flag's text "5" is
    if isinstance(value, numbers.Number):
        value = (value,)
    if kind == "names":
        value = _csv(value, str, name)
        items = validate.sequence(name, value, _name_item(m["choices"]))
        if len(set(items)) != len(items):
            raise ValueError("%s must not repeat an item: %r" % (name, items))
    elif kind in ("ints", "cpus"):
        value = _csv(value, _int_text, name)
        each = (lambda n, v: validate.cpu(n, v, allow_unpinned=_unpinned_ok(m))) \
            if kind == "cpus" else \
            (lambda n, v: validate.integer(n, v, lo, hi))
        items = validate.sequence(name, value, each)
    else:   # floats, durations
        parse = (lambda t: parse_duration(t, name)) if kind == "durations" else float
        value = _csv(value, parse, name)
        items = validate.sequence(name, value, lambda n, v: _number(n, v, m))
    if not items:
        raise ValueError("%s must name at least one item" % name)
    return tuple(items)


def _unpinned_ok(m):
    """A CPU field takes -1 (not pinned) unless its range starts at 0 (lo=0: pinned)."""
    return m["lo"] is None or m["lo"] < 0


def _number(name, value, m):
    lo, hi = m["lo"], m["hi"]
    return validate.number(name, value, -math.inf if lo is None else lo,
                           math.inf if hi is None else hi, lo_open=m["lo_open"],
                           hi_open=m["hi_open"])


def _name_item(choices):
    def item(name, value):
        if not isinstance(value, str) or not value:
            raise validate.ArgumentTypeError("%s must be a non-empty str, got %r" % (name, value))
        if choices is not None and value not in choices:
            raise ValueError("%s must be one of %s, got %r" % (name, ", ".join(choices), value))
        return value
    return item


def _split(name, value, n):
    """An old keyword's value over ``n`` fields: itself for one, else a sequence of n."""
    if n == 1:
        return (value,)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != n:
        raise ValueError("%s must be a sequence of %d values, got %r" % (name, n, value))
    return tuple(value)


# ---- the parameter list ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Params:
    """Base of every experiment's parameter list (see the module's doc)."""

    EXPERIMENT: ClassVar[str] = ""     # the output folder's experiment name
    COMMAND: ClassVar[str] = ""        # its `python -m pyqueue` command
    FUNCTION: ClassVar[str] = ""       # its function's name in the same module
    # Old Python keyword -> field (or a queue field), or -> a tuple of fields that the
    # old keyword's sequence is split over (pair=(0, 1) -> writer_cpu=0, reader_cpu=1);
    # the CLI's old flags are each field's cli_aliases, and for the queue's fields
    # QUEUE_CLI_ALIASES.
    ALIASES: ClassVar[Dict[str, Any]] = {}
    QUEUE_CLI_ALIASES: ClassVar[Dict[str, Tuple[str, ...]]] = {}

    def __post_init__(self):
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _check(f.name, _meta(f), getattr(self, f.name)))
        self.check()

    def check(self):
        """The rules between fields (a subclass's); raise ValueError naming them."""

    # -- Python ------------------------------------------------------------------------

    @classmethod
    def field_names(cls) -> Tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def defaults(cls) -> Dict[str, Any]:
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def queue_field(cls):
        """The name of the QueueConfig field, or None."""
        return next((f.name for f in dataclasses.fields(cls) if _meta(f)["kind"] == "queue"),
                    None)

    @classmethod
    def keywords(cls) -> Dict[str, Any]:
        """{keyword: default} of every knob as the doors spell it: the fields, with a
        QueueConfig field spelt as its own fields (the queue's flags and keywords)."""
        out = {}
        for f in dataclasses.fields(cls):
            if _meta(f)["kind"] == "queue":
                out.update(f.default.as_dict())
            else:
                out[f.name] = f.default
        return out

    @classmethod
    def of(cls, params=None, **kwargs):
        """``params`` (an instance, or None for the defaults) with ``kwargs``, each a
        field, or a field of the QueueConfig field (None: not given); an old name in
        ALIASES is renamed, with a DeprecationWarning."""
        for old, new in cls.ALIASES.items():
            if old in kwargs:
                names = (new,) if isinstance(new, str) else tuple(new)
                given = " and ".join(names)
                if any(n in kwargs for n in names):
                    raise TypeError("%s and %s are the same parameter%s; give %s"
                                    % (old, given, "s" if len(names) > 1 else "", given))
                values = _split(old, kwargs.pop(old), len(names))
                warnings.warn("%s is now called %s" % (old, given), DeprecationWarning,
                              stacklevel=3)
                kwargs.update(zip(names, values))
        qf = cls.queue_field()
        # A queue field given as None is a queue field not given (the old keywords' way).
        queue = {k: v for k, v in ((k, kwargs.pop(k)) for k in list(kwargs)
                                   if qf and k in QUEUE_KINDS) if v is not None}
        unknown = sorted(set(kwargs) - set(cls.field_names()))
        if unknown:
            raise TypeError("unknown parameter%s %s; the parameters are %s"
                            % ("s" if len(unknown) > 1 else "", ", ".join(unknown),
                               ", ".join(cls.field_names() + (tuple(QUEUE_KINDS) if qf else ()))))
        if queue:
            base = kwargs.get(qf, getattr(params, qf) if params is not None else
                              cls.defaults()[qf])
            if not isinstance(base, QueueConfig):
                base = _check(qf, _meta(cls.__dataclass_fields__[qf]), base)
            kwargs[qf] = base.replace(**queue)
        if params is None:
            return cls(**kwargs)
        if not isinstance(params, cls):
            raise TypeError("params must be a %s or None, got %s"
                            % (cls.__name__, type(params).__name__))
        return dataclasses.replace(params, **kwargs) if kwargs else params

    def replace(self, **changes):
        return self.of(self, **changes)

    @classmethod
    def quick(cls, **kwargs):
        """The parameters --quick runs with: each field capped at its ``quick`` value
        (after ``kwargs``)."""
        p = cls.of(None, **kwargs)
        return p.replace(**p._quick_changes())

    def _quick_changes(self):
        changes = {}
        for f in dataclasses.fields(self):
            cap = _meta(f)["quick"]
            value = getattr(self, f.name)
            if cap is None:
                continue
            if callable(cap):
                changes[f.name] = cap(value)
            elif isinstance(value, QueueConfig):
                changes[f.name] = value.replace(**{k: min(getattr(value, k), v)
                                                   for k, v in cap.items()})
            elif value is not None:
                changes[f.name] = min(value, cap)
            else:
                changes[f.name] = cap
        return changes

    # -- JSON ----------------------------------------------------------------------------

    def to_json(self) -> Dict[str, Any]:
        """The params of the output folder: every field, and nothing else."""
        out = {}
        for name in self.field_names():
            v = getattr(self, name)
            out[name] = (v.as_dict() if isinstance(v, QueueConfig) else
                         list(v) if isinstance(v, tuple) else v)
        return out

    @classmethod
    def from_json(cls, d):
        """The Params of an output folder's params (fields it lacks: their defaults)."""
        qf = cls.queue_field()
        kwargs = {k: v for k, v in d.items() if k in cls.field_names()}
        if qf in kwargs and isinstance(kwargs[qf], dict):
            kwargs[qf] = QueueConfig(**kwargs[qf])
        return cls.of(None, **kwargs)

    # -- the CLI -------------------------------------------------------------------------

    @classmethod
    def add_arguments(cls, parser):
        """One flag per field (and the queue's flags for a QueueConfig field, last, under
        the field's help: they are many), each with its help and default; old spellings
        hidden.  A flag the parser already has for the same field name is not added
        again: a command that runs two experiments sets a knob they share (c2c's
        --rounds) once, each list keeping its own default."""
        groups = {}
        queue = None

        def group_of(title):
            if title is None:
                return parser
            if title not in groups:
                groups[title] = parser.add_argument_group(title)
            return groups[title]

        for f in dataclasses.fields(cls):
            m = _meta(f)
            g = group_of(m["group"])
            if m["kind"] == "queue":
                queue = f
                continue
            flag, dest = flag_of(f.name), f.name
            have = parser._option_string_actions.get(flag)
            if have is not None:
                if have.dest != dest:
                    raise TypeError("%s: %s is already the flag of %s"
                                    % (cls.__name__, flag, have.dest))
                continue
            shown = _shown(f.default, m)
            text = m["help"]() if callable(m["help"]) else m["help"]
            bounds = _range_text(m)
            text += (" (%s)" % bounds if bounds else "") if "default" in text else \
                " (default: %s%s)" % (shown, "; " + bounds if bounds else "")
            text = text.replace("%", "%%")
            if m["kind"] == "bool":
                g.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction,
                               default=None, help=text)
            else:
                g.add_argument(flag, dest=dest, default=None, metavar=m["metavar"] or _metavar(m),
                               help=text)
            for alias in m["cli_aliases"]:
                if isinstance(alias, tuple):
                    g.add_argument(alias[0], dest=dest, action="store_const", const=alias[1],
                                   default=argparse.SUPPRESS, help=argparse.SUPPRESS)
                elif m["kind"] == "bool":
                    g.add_argument(alias, dest=dest, action="store_const", const=True,
                                   default=argparse.SUPPRESS, help=argparse.SUPPRESS)
                else:
                    g.add_argument(alias, dest=dest, default=argparse.SUPPRESS,
                                   help=argparse.SUPPRESS)
        if queue is not None:
            text = _meta(queue)["help"]
            text = textwrap.fill(text() if callable(text) else text, 76)   # raw formatters too
            _add_queue_flags(parser.add_argument_group(
                "queue configuration (pyqueue.QueueConfig)", text.replace("%", "%%")),
                queue.default, cls.QUEUE_CLI_ALIASES)

    @classmethod
    def from_args(cls, args):
        """The Params the parsed flags ask for (``args.quick``: capped as --quick says).
        A flag's text is checked by the field's own check, once."""
        kwargs = {}
        for f in dataclasses.fields(cls):
            if _meta(f)["kind"] == "queue":
                given = {n: getattr(args, n) for n in QUEUE_KINDS
                         if getattr(args, n, None) is not None}
                kwargs[f.name] = f.default.replace(**given) if given else f.default
                continue
            value = getattr(args, f.name, None)
            if value is None:
                continue
            kwargs[f.name] = _from_text(f.name, _meta(f), value)
        p = cls.of(None, **kwargs)
        if getattr(args, "quick", False):
            p = p.replace(**p._quick_changes())
        return p

    @classmethod
    def cli_flags(cls) -> Dict[str, str]:
        """{field: flag} (a QueueConfig field: its fields' flags) -- what a message
        about a parameter names at the CLI."""
        out = {}
        for f in dataclasses.fields(cls):
            if _meta(f)["kind"] == "queue":
                out.update({n: flag_of(n) for n in QUEUE_KINDS})
            else:
                out[f.name] = flag_of(f.name)
        return out


def _shown(default, m):
    if isinstance(default, tuple):
        return ",".join(str(x) for x in default)
    if isinstance(default, bool):
        return "on" if default else "off"
    if m["kind"] == "seed" and isinstance(default, int):
        return "%#x" % default      # a seed reads as it is written: 0x5eed
    return default


def _bound(x):
    if isinstance(x, int) and x >= 1 << 16 and (x & (x - 1) == 0 or x & (x + 1) == 0):
        return "2^%d%s" % ((x + 1).bit_length() - 1, "" if x & (x - 1) == 0 else "-1")
    if isinstance(x, int) and x >= 10 ** 5 and str(x).rstrip("0") == "1":
        return "10^%d" % (len(str(x)) - 1)
    return "%g" % x if isinstance(x, float) else str(x)


def _range_text(m):
    """A number field's range as --help shows it ("in [1, 2^20]", ">= 1", "> 0")."""
    lo, hi = m["lo"], m["hi"]
    if m["kind"] not in ("int", "float", "seed", "ints", "floats", "durations") or \
            (lo is None and hi is None):
        return ""
    if hi is None:
        return "%s %s" % (">" if m["lo_open"] else ">=", _bound(lo))
    if lo is None:
        return "<= %s" % _bound(hi)
    return "in %s%s, %s]" % ("(" if m["lo_open"] else "[", _bound(lo), _bound(hi))


def _metavar(m):
    return {"int": "N", "float": "X", "str": "TEXT", "cpu": "CPU", "cpus": "A,B,...",
            "names": "A,B,...", "ints": "N,N,...", "floats": "X,X,...",
            "durations": "T,T,...", "seed": "SEED"}[m["kind"]] \
        if m["choices"] is None or m["kind"] != "str" else "{%s}" % ",".join(m["choices"])


def _from_text(name, m, value):
    """A flag's text as the field's Python value (its check comes after)."""
    if not isinstance(value, str):
        return value            # a bool flag, or an alias's constant
    kind = m["kind"]
    if kind in ("int", "cpu"):
        try:
            return int(value)
        except ValueError:
            raise ValueError("%s must be an integer, got %r" % (name, value)) from None
    if kind == "seed":
        return _int_text(value)
    if kind == "float":
        try:
            v = float(value)
        except ValueError:
            raise ValueError("%s must be a number, got %r" % (name, value)) from None
        if math.isnan(v):
            raise ValueError("%s must be a number, got nan" % name)
        return v
    return value                # str, and the tuples' comma-separated text


def _add_queue_flags(group, base, aliases):
    """An option per QueueConfig field (--block-size N, --publish POLICY,
    --scan-current / --no-scan-current, ...), default None so that only the flags
    given change ``base``; ``aliases``: {field: old flags}, hidden."""
    defaults = base.as_dict()
    for name, kind in QUEUE_KINDS.items():
        for old in aliases.get(name, ()):
            group.add_argument(old, dest=name, type=int if kind == "count" else str,
                               default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        default = defaults[name]
        if kind == "flag":
            group.add_argument(flag_of(name), dest=name, action=argparse.BooleanOptionalAction,
                               default=None, help="default: %s" % ("on" if default else "off"))
        else:
            group.add_argument(flag_of(name), dest=name, type=int if kind == "count" else str,
                               default=None, metavar="N" if kind == "count" else "POLICY",
                               help="default: %s" % default)
