"""torch.get_num_threads / set_num_threads and the inter-op pair.

ember's eager kernels are NumPy calls on the calling thread (products pin OpenBLAS to it: see
kernels/cpu/linalg.py), so the intra-op count is a setting that parallel code reads: the inductor
backend's numba kernels run their loops on at most this many threads (prange). The default is
torch's: OMP_NUM_THREADS when set, else the CPUs this process may run on (the inter-op count
ignores OMP_NUM_THREADS, as torch's does). The intra-op count itself lives in ember/core/parallel.py,
where kernels read it (ATen's full sums split their additions by it).
"""
import sys

from ember.core import parallel as _parallel

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads"]


_default = _parallel.default_threads
_state = {"interop": None, "interop_set": False}


def _check(name, n):
    if n.__class__ is bool or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def get_num_threads():
    """Threads used for intra-op parallelism on CPU."""
    return _parallel.num_threads()


def set_num_threads(n):
    """Sets the number of threads used for intra-op parallelism on CPU (numba's thread pool too,
    once a compiled kernel has loaded numba)."""
    _check("set_num_threads", n)
    _parallel.set_num_threads(n)
    numba = sys.modules.get("numba")
    if numba is not None:   # never import numba here: ember stays numba-free until a kernel needs it
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def get_num_interop_threads():
    """Threads used for inter-op parallelism on CPU (ember runs ops on the calling thread)."""
    n = _state["interop"]
    if n is None:
        n = _state["interop"] = _default(None)   # torch's inter-op default ignores OMP_NUM_THREADS
    return n


def set_num_interop_threads(n):
    """Sets the inter-op thread count, once per process, as in torch."""
    _check("set_num_interop_threads", n)
    if _state["interop_set"]:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _state["interop"] = n
    _state["interop_set"] = True
