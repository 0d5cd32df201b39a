"""The intra-op thread count (c10's ParallelOpenMP/ParallelNative: at::get_num_threads).

ember's eager kernels run on the calling thread, but some of them reproduce how ATen splits work
between threads, because the split decides the order of floating-point additions (a full sum
of at least 32768 elements adds one partial sum per thread: kernels/cpu/_cascade_sum.py). The
count lives here, in core, so kernels can read it; torch.get_num_threads/set_num_threads
(ember/_python_api/threads.py) are its public face. The default is torch's: OMP_NUM_THREADS when
it is a positive integer, else the CPUs this process may run on.
"""
import os

_state = {"intra": None}


def default_threads(env_var="OMP_NUM_THREADS"):
    """torch's default thread count: env_var when set to a positive integer, else the CPUs this
    process may run on (env_var None: the CPUs only, torch's inter-op default)."""
    env = os.environ.get(env_var, "") if env_var else ""
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def num_threads():
    """The intra-op thread count (at::get_num_threads)."""
    n = _state["intra"]
    if n is None:
        n = _state["intra"] = default_threads()
    return n


def set_num_threads(n):
    """Sets the intra-op thread count (n: a positive int, checked by the caller)."""
    _state["intra"] = n
