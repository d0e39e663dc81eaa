"""What a cffi cdef says about a C struct -- its field names, in C order, and
the range each integer field holds -- so Python never retypes a C layout.
``ffi`` is the queue's (pyqueue._pyq) unless another is given: the lab passes
its own, which knows the lab's structs as well as the queue's."""
from ._pyq import ffi as _queue_ffi


def fields(struct, ffi=_queue_ffi):
    """The field names of ``struct`` (a cdef type name such as "pyq_stats_t")."""
    return tuple(name for name, _ in ffi.typeof(struct).fields)


def int_range(struct, field, ffi=_queue_ffi):
    """(lo, hi): the values integer field ``field`` of ``struct`` can hold."""
    ctype = dict(ffi.typeof(struct).fields)[field].type
    bits = 8 * ffi.sizeof(ctype)
    if int(ffi.cast(ctype, -1)) < 0:  # signed
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def as_dict(cdata, names):
    """{name: int} for the integer fields ``names`` of a struct."""
    return {k: int(getattr(cdata, k)) for k in names}
