"""pyqueue.QueueConfig: the queue's configuration as one value.

Its fields, their order and their defaults are the C library's -- pyq_config_t
through the cffi cdef, pyq_config_init() for the defaults -- so a field added in
C appears here without a line of Python.  Python spells two things its own way,
converted here and nowhere else:

    publish          'max' | 'each' | 'bytes:N'    (C: publish and publish_bytes)
    int32_t fields   True / False                  (C: 0 / 1)

Two defaults are Python's own: ``publish`` is 'each' (PUBLISH_DEFAULT) when a
Queue or a QueueConfig is made from Python without one, so that a ``put`` is
visible to the reader when it returns, as code written for queue.Queue expects;
and ``max_message`` is 1 MiB (MAX_MESSAGE_DEFAULT), so that a frame goes through
without anyone choosing a block size (messages above block_size - 8 take the
pool's large region, docs/DESIGN.md §3.13).  C's pyq_config_init()
keeps 'max' and max_message 0 -- a block's worth (C_DEFAULTS) --, and so does
every experiment of the lab, which says so in its Params.

A QueueConfig is checked once, when it is made: types (and what each C field can
hold) in Python, then pyq_config_check() for the rules, which C states.  A Queue
made from keywords is checked once too, by pyq_queue_create(); its ``config`` is
read back from C and trusted (from_c).  A bad value raises ValueError
(ArgumentTypeError, also a TypeError, for a wrong type) naming the parameter and
what it may be::

    cfg = QueueConfig(publish="each", spill_blocks=0)
    q = pyqueue.Queue(cfg)          # or pyqueue.Queue(publish="each", spill_blocks=0)
    q.config == cfg                 # read back from C (pyq_queue_config)
    cfg.replace(hot_blocks=8)
"""
from . import cstruct, validate
from ._pyq import ffi, lib

_STRUCT = "pyq_config_t"

# Policy name -> PYQ_PUBLISH_* code, in code order: max, each, bytes.
PUBLISH = dict(sorted(((n[len("PYQ_PUBLISH_"):].lower(), getattr(lib, n))
                       for n in dir(lib) if n.startswith("PYQ_PUBLISH_")), key=lambda kv: kv[1]))
_PUBLISH_NAME = {code: name for name, code in PUBLISH.items()}
# 'bytes:N' keeps its N in publish_bytes: two C fields, one Python field.
_COUNTED, _COUNT_FIELD = "bytes", "publish_bytes"
# spill_nontemporal=None has always meant "the platform's default", which is C's.
_NONE_IS_DEFAULT = ("spill_nontemporal",)

# What pyq_config_check() requires beyond the C type's range.  C does the
# checking; these only say it in the message.
_RULES = {
    "block_size": lambda v: "a multiple of 64 in [%d, %d]" % (lib.PYQ_MIN_BLOCK_SIZE,
                                                              lib.PYQ_MAX_BLOCK_SIZE),
    "hot_blocks": lambda v: "in [1, %d]" % lib.PYQ_MAX_BLOCKS,
    "spill_blocks": lambda v: "in [0, %d] (at most %d blocks in all)"
                              % (lib.PYQ_MAX_BLOCKS - v["hot_blocks"], lib.PYQ_MAX_BLOCKS),
    # Only when the tiers together are too many and hot_blocks is the larger one.
    "hot_blocks+": lambda v: "in [1, %d] with spill_blocks=%d (at most %d blocks in all)"
                             % (lib.PYQ_MAX_BLOCKS - v["spill_blocks"], v["spill_blocks"],
                                lib.PYQ_MAX_BLOCKS),
    "max_message": lambda v: "in [0, %d]" % lib.PYQ_MAX_MESSAGE,
    "large_bytes": lambda v: ("0 when max_message (%d) fits a block (block_size - 8 = %d)"
                              % (v["max_message"], v["block_size"] - 8)
                              if v["max_message"] <= v["block_size"] - 8 else
                              "0 or a multiple of %d of at least max_message (%d) rounded up "
                              "to %d" % (lib.PYQ_LARGE_PAGE, v["max_message"],
                                         lib.PYQ_LARGE_ALIGN)),
    "spill_nontemporal": lambda v: "False on this platform (streaming stores need x86-64 with SSE2)",
    "hot_nontemporal": lambda v: "False on this platform (streaming stores need x86-64 with SSE2)",
}


def _kind(name):
    if name == "publish":
        return "publish"
    # Every other signed field of pyq_config_t is a 0/1 switch; the unsigned ones count.
    return "flag" if cstruct.int_range(_STRUCT, name)[0] < 0 else "count"


# Python field -> "publish" | "flag" | "count", in pyq_config_t's order.
KINDS = {name: _kind(name) for name in cstruct.fields(_STRUCT) if name != _COUNT_FIELD}
_TYPES = {"publish": str, "flag": bool, "count": int}


# ---- the conversions, both ways ------------------------------------------------

def _from_c(c):
    """{field: Python value} of a pyq_config_t."""
    out = {}
    for name, kind in KINDS.items():
        value = getattr(c, name)
        if kind == "publish":
            policy = _PUBLISH_NAME[value]
            out[name] = "%s:%d" % (policy, c.publish_bytes) if policy == _COUNTED else policy
        else:
            out[name] = bool(value) if kind == "flag" else int(value)
    return out


def to_c(values):
    """A new pyq_config_t * from converted Python values (see converted())."""
    c = ffi.new("pyq_config_t *")
    lib.pyq_config_init(c)
    for name, kind in KINDS.items():
        if kind == "publish":
            c.publish, c.publish_bytes = _publish(values[name])
        else:
            setattr(c, name, int(values[name]))
    return c


def _c_defaults():
    c = ffi.new("pyq_config_t *")
    lib.pyq_config_init(c)
    return _from_c(c)


# pyq_config_init()'s values, as C holds them.
C_DEFAULTS = _c_defaults()
# Python's default publish policy: every put visible when it returns (queue.Queue's
# promise); 'max' waits for a full block or flush(), which such code never calls.
PUBLISH_DEFAULT = "each"
# Python's default largest message: a frame (an image, a tensor) goes through
# without a block size chosen for it; messages a block holds are framed as ever.
MAX_MESSAGE_DEFAULT = 1 << 20
# The defaults of a Queue or QueueConfig made from Python.
DEFAULTS = dict(C_DEFAULTS, publish=PUBLISH_DEFAULT, max_message=MAX_MESSAGE_DEFAULT)


def large_bytes_of(values):
    """Bytes of the large region a configuration (converted values) maps: 0
    when max_message fits a block, else large_bytes or C's default for 0,
    twice max_message rounded up to a page."""
    if values["max_message"] <= values["block_size"] - 8:
        return 0
    page = lib.PYQ_LARGE_PAGE
    return values["large_bytes"] or 2 * (-(-values["max_message"] // page) * page)


# ---- the checks --------------------------------------------------------------------

def _publish(value):
    """'max' | 'each' | 'bytes:N' -> (PYQ_PUBLISH_* code, N)."""
    hi = cstruct.int_range(_STRUCT, _COUNT_FIELD)[1]
    if isinstance(value, str):
        policy, sep, n = value.partition(":")
        if policy in PUBLISH and policy != _COUNTED and not sep:
            return PUBLISH[policy], 0
        # Digits only: int() would also take " 12", "+7" and "1_000".
        if policy == _COUNTED and sep and n.isascii() and n.isdigit():
            count = int(n)
            if 1 <= count <= hi:
                return PUBLISH[policy], count
    names = ["'%s:N'" % p if p == _COUNTED else "'%s'" % p for p in PUBLISH]
    error = ValueError if isinstance(value, str) else validate.ArgumentTypeError
    raise error("publish must be %s or %s with N in [1, %d], got %r"
                % (", ".join(names[:-1]), names[-1], hi, value))


def _bad(name, value, values):
    if name == "spill_blocks" and "spill_blocks" in values \
            and values["hot_blocks"] > values["spill_blocks"]:
        # C names the second tier when the two together are too many; the one the
        # user made too big is the larger (Queue(block_size=64, hot_blocks=2**30)).
        return ValueError("hot_blocks must be %s, got %r"
                          % (_RULES["hot_blocks+"](values), values["hot_blocks"]))
    if name in _RULES:
        return ValueError("%s must be %s, got %r" % (name, _RULES[name](values), value))
    return ValueError("%s=%r is not supported on this platform" % (name, value))


def _count(name, value, values):
    lo, hi = cstruct.int_range(_STRUCT, name)
    if name not in _RULES:
        return validate.integer(name, value, lo, hi)
    value = validate.integer(name, value, None, None)  # the range is C's rule
    if not lo <= value <= hi:
        raise _bad(name, value, values)
    return value


def _converted(values):
    """The values made plain (bool, int, canonical publish) and fitted to their C
    types: what it takes to build a pyq_config_t.  The rules are C's (_c_check)."""
    out = {}
    for name, kind in KINDS.items():
        value = values[name]
        if kind == "publish":
            code, n = _publish(value)
            out[name] = "%s:%d" % (_COUNTED, n) if code == PUBLISH[_COUNTED] else value
        elif kind == "flag":
            if value is None and name in _NONE_IS_DEFAULT:
                value = C_DEFAULTS[name]
            out[name] = validate.flag(name, value)
        else:
            out[name] = _count(name, value, out)
    return out


def refused(values):
    """The ValueError naming the field pyq_config_check() refuses in ``values``
    (converted), or None when it accepts them all."""
    bad = ffi.new("const char **")
    if lib.pyq_config_check(to_c(values), bad) == 0:
        return None
    field = ffi.string(bad[0]).decode()
    name = "publish" if field == _COUNT_FIELD else field
    return _bad(name, values[name], values)


def converted(config=None, **overrides):
    """``config`` (a QueueConfig, or None for the defaults) with ``overrides``, as
    converted values for C to check: Queue() hands them to pyq_queue_create(),
    whose check is the one a queue construction makes."""
    _known(overrides)
    if config is None:
        values = dict(DEFAULTS)
    elif isinstance(config, QueueConfig):
        values = config.as_dict()
    else:
        raise TypeError("config must be a pyqueue.QueueConfig or None, got %s"
                        % type(config).__name__)
    values.update(overrides)
    return _converted(values)


def _known(names):
    unknown = sorted(set(names) - set(KINDS))
    if unknown:
        raise TypeError("unknown queue parameter%s %s; the parameters are %s"
                        % ("s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(KINDS)))


# ---- the class --------------------------------------------------------------------

class QueueConfig:
    """The queue's configuration, checked: pyq_config_t in Python terms (see
    pyqueue.config).  Frozen: ``replace()`` makes a changed copy.  Its fields are
    ``QueueConfig.FIELDS``, in pyq_config_t's order (the keywords of pyqueue.Queue).
    The defaults are C's (pyq_config_init) but ``publish``, 'each' from Python:
    a put is visible when it returns ('max', C's default, waits for a full block
    or flush()).

    A plain class rather than a dataclass: dataclasses costs ``import pyqueue``
    half its time, and a queue's configuration needs none of it."""

    FIELDS = tuple(KINDS)
    __slots__ = FIELDS

    def __init__(self, *args, **kwargs):
        if len(args) > len(self.FIELDS):
            raise TypeError("QueueConfig takes at most %d positional arguments (%d given)"
                            % (len(self.FIELDS), len(args)))
        values = dict(DEFAULTS)
        for name, value in zip(self.FIELDS, args):
            values[name] = value
        twice = sorted(set(self.FIELDS[:len(args)]) & set(kwargs))
        if twice:
            raise TypeError("QueueConfig got multiple values for %s" % ", ".join(twice))
        _known(kwargs)
        values.update(kwargs)
        values = _converted(values)
        error = refused(values)      # types in Python, the rules in C: one pyq_config_check()
        if error is not None:
            raise error
        self._set(values)

    @classmethod
    def _trusted(cls, values):
        """A QueueConfig of values C holds (converted, checked): no second check."""
        self = object.__new__(cls)
        self._set(values)
        return self

    def _set(self, values):
        for name in self.FIELDS:
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name, value):
        raise AttributeError("QueueConfig is frozen: cfg.replace(%s=...) makes a changed copy"
                             % name)

    def __delattr__(self, name):
        raise AttributeError("QueueConfig is frozen")

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __repr__(self):
        return "QueueConfig(%s)" % ", ".join("%s=%r" % (n, getattr(self, n)) for n in self.FIELDS)

    def __reduce__(self):
        return (self.__class__, self._key())   # unpickling checks the values again

    @classmethod
    def of(cls, config=None, **overrides):
        """``config`` (a QueueConfig, or None for the defaults) with ``overrides``."""
        _known(overrides)
        if config is None:
            return cls(**overrides)
        if not isinstance(config, cls):
            raise TypeError("config must be a pyqueue.QueueConfig or None, got %s"
                            % type(config).__name__)
        return config.replace(**overrides) if overrides else config

    def replace(self, **changes):
        """A copy with ``changes`` (checked like a new QueueConfig)."""
        _known(changes)
        return self.__class__(**dict(self.as_dict(), **changes))

    def as_dict(self):
        """{field: value}, in pyq_config_t's order (the keywords of pyqueue.Queue)."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def to_c(self):
        """A new ``pyq_config_t *`` (cffi) holding this configuration."""
        return to_c(self.as_dict())

    @classmethod
    def from_c(cls, c):
        """The QueueConfig of a ``pyq_config_t`` (cffi pointer or struct) that C has
        checked -- a queue's own (pyq_queue_config): trusted, not checked again."""
        return cls._trusted(_from_c(c))

    @property
    def pool_bytes(self):
        """Bytes of the pool: block_size * (hot_blocks + spill_blocks), and the
        large region when max_message needs one."""
        return self.block_size * (self.hot_blocks + self.spill_blocks) \
            + large_bytes_of(self.as_dict())


QueueConfig.__doc__ += "\n\n    Defaults: %s." % ", ".join("%s=%r" % kv for kv in DEFAULTS.items())
