"""Sample arrays (DESIGN §4): numpy arrays that Python allocates and C fills in
place.  One check, so every runtime function refuses a wrong array the same way."""
import numpy as np

from .._lab import ffi


def sample_buffer(arr, name, needed):
    """A cffi ``uint64_t[]`` over ``arr`` without copying, after checking that it is
    a 1-D, C-contiguous, writable uint64 ndarray of at least ``needed`` entries."""
    if not isinstance(arr, np.ndarray):
        raise TypeError("%s must be a numpy.ndarray of dtype uint64, got %s" % (name, type(arr).__name__))
    if arr.dtype != np.uint64:
        raise TypeError("%s must have dtype uint64, got %s (use numpy.zeros(n, numpy.uint64))"
                        % (name, arr.dtype))
    if arr.ndim != 1:
        raise ValueError("%s must be 1-D, got shape %s" % (name, arr.shape))
    if not arr.flags.c_contiguous:
        raise ValueError("%s must be C-contiguous (a slice with a step is not)" % name)
    if not arr.flags.writeable:
        raise ValueError("%s must be writable" % name)
    if arr.shape[0] < needed:
        raise ValueError("%s has %d entries; at least %d are needed" % (name, arr.shape[0], needed))
    return ffi.from_buffer("uint64_t[]", arr, require_writable=True)
