"""ember.multiprocessing (torch.multiprocessing): the stdlib's multiprocessing, with tensors that
travel between processes through shared memory.

Everything of `multiprocessing` is here under the same names (Process, Queue, Pool, get_context,
set_start_method, ...). A CPU tensor in shared memory (`share_memory_()`) pickled for another
process (a Process argument under spawn, a Queue item) is sent as its segment's name, and the
receiver maps the same memory: `model.share_memory()` before starting workers gives Hogwild
training with either start method. (torch also moves every other tensor it sends into shared
memory, freeing the segments by cross-process reference counts; ember sends those by value.)
`spawn(fn, args, nprocs)` / `start_processes` start workers `fn(i, *args)` and raise
ProcessRaisedException / ProcessExitedException as torch's do.
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from ember.multiprocessing import reductions
from ember.multiprocessing.spawn import (ProcessContext, ProcessExitedException,  # noqa: F401
                                         ProcessRaisedException, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]

_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy):
    """Accepted for torch's API: ember shares through named POSIX shared memory either way."""
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"Invalid sharing strategy: {new_strategy}")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies


reductions.init_reductions()
