"""numpy's OpenBLAS keeps a pool of threads that spin for a while after each BLAS
call and at start-up: on a two-CPU machine, a third busy thread beside an
experiment's writer and reader.  The CLI sets the pool to the calling thread
alone before it measures (``single_thread``); a notebook can call it too.

Software means only: the pool's library is found in /proc/self/maps and its own
``*openblas_set_num_threads*`` entry point is called through ctypes.  No OpenBLAS
loaded (another BLAS, or numpy without one): nothing to do."""
import ctypes
import os

# The entry point's names: upstream OpenBLAS, its ILP64 builds, numpy's wheels
# (scipy-openblas, which prefixes and suffixes every symbol).
_SYMBOLS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads")


def loaded():
    """Paths of the OpenBLAS libraries mapped into this process."""
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[5:] or [""]
                path = path[0]
                if "openblas" in os.path.basename(path).lower() and path not in out:
                    out.append(path)
    except OSError:
        pass
    return out


def single_thread():
    """Set every loaded OpenBLAS to one thread (the caller's); also exports
    OPENBLAS_NUM_THREADS=1 for the processes this one starts.  Returns the
    (library, symbol) pairs set; [] when no OpenBLAS is loaded."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    done = []
    for path in loaded():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SYMBOLS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int], None
                fn(1)
                done.append((path, name))
                break
    return done
