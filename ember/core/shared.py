"""CPU storage in shared memory (torch's share_memory_ / is_shared, the file_descriptor strategy's
counterpart): a tensor's storage moves into a named POSIX shared-memory segment
(multiprocessing.shared_memory), which another process maps by name. ember.multiprocessing pickles
a shared tensor as (segment name, geometry), so a model shared before `Process.start()` is the same
memory in every process, with the fork and the spawn start methods alike (Hogwild training).

The tensor's storage is moved in place, as torch's is; views taken from it afterwards share the
segment. (Views taken before the move keep the old memory: torch moves the StorageImpl they all
point to, ember's views each hold a NumPy view of the old buffer.)"""
import atexit
import os

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember.core.storage import root_array

_SEGMENTS = {}   # id(flat uint8 array over a segment) -> (that array, SharedMemory)
_BY_NAME = {}    # segment name -> flat uint8 array (segments this process has mapped)
_CREATED = []    # segments this process created: unlinked when it exits
_OWNER = os.getpid()


def _shm():
    from multiprocessing import shared_memory  # lazy: stdlib, needed only once memory is shared
    return shared_memory


def _flat_root(t):
    a = t._np
    return root_array(a)


def is_shared(t):
    if t._device.type != "cpu" or t._np is None:
        return False
    return id(_flat_root(t)) in _SEGMENTS


def _view_into(flat, a, root):
    """`a` (a view of `root`) rebuilt over `flat` (a copy of root's bytes) at the same place."""
    off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0] if a.size else 0
    return _at(flat, off, a.dtype, a.shape, a.strides)


def _at(flat, byte_offset, dtype, shape, strides):
    """An array of `dtype` with this geometry over the bytes of `flat` from byte_offset on."""
    if 0 in shape:
        return np.empty(shape, dtype)
    tail = flat[byte_offset:]
    first = tail[:tail.nbytes // dtype.itemsize * dtype.itemsize].view(dtype)
    return as_strided(first, shape, strides, writeable=True)


def share_(t):
    """Move a CPU tensor's storage into shared memory (a no-op when it is there already)."""
    if t._device.type != "cpu" or t._np is None or is_shared(t):
        return t
    root = _flat_root(t)
    nbytes = root.nbytes
    shm = _shm().SharedMemory(create=True, size=max(nbytes, 1))
    flat = np.ndarray((max(nbytes, 1),), np.uint8, buffer=shm.buf)
    if root.flags.c_contiguous:
        flat[:nbytes] = root.reshape(-1).view(np.uint8)
        remap = root
    else:  # an exotic owner: share just this tensor's elements, compacted
        c = np.ascontiguousarray(t._np)
        flat[:c.nbytes] = c.reshape(-1).view(np.uint8)
        remap = None
    _register(flat, shm, created=True)
    for x in (t, t._base):
        if x is None or x._np is None:
            continue
        if remap is not None:
            object.__setattr__(x, "_np", _view_into(flat, x._np, remap))
        else:
            object.__setattr__(x, "_np", _at(flat, 0, t._np.dtype, t._np.shape,
                                             _contig_strides(t._np)))
        try:
            object.__delattr__(x, "_storage")  # the storage object is recomputed from _np
        except AttributeError:
            pass
        if remap is None:
            break
    return t


def _contig_strides(a):
    st, acc = [], a.dtype.itemsize
    for s in reversed(a.shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _register(flat, shm, created=False):
    _SEGMENTS[id(flat)] = (flat, shm)
    _BY_NAME[shm.name] = flat
    if created:
        _CREATED.append(shm)


def attach(name, nbytes):
    """The flat uint8 array over segment `name`, mapped once per process."""
    flat = _BY_NAME.get(name)
    if flat is not None:
        return flat
    shm = _shm().SharedMemory(name=name, create=False)
    try:  # the creator unlinks the segment; this process only maps it
        from multiprocessing import resource_tracker
        resource_tracker.unregister(shm._name, "shared_memory")
    except Exception:  # noqa: BLE001 - the tracker is an implementation detail of the stdlib
        pass
    flat = np.ndarray((max(nbytes, 1),), np.uint8, buffer=shm.buf)
    _register(flat, shm)
    return flat


def segment_of(t):
    """(segment name, nbytes, byte offset of t's first element) of a shared CPU tensor."""
    root = _flat_root(t)
    flat, shm = _SEGMENTS[id(root)]
    a = t._np
    off = a.__array_interface__["data"][0] - flat.__array_interface__["data"][0] if a.size else 0
    return shm.name, flat.nbytes, off


def view(name, nbytes, offset, dtype, shape, strides):
    return _at(attach(name, nbytes), offset, np.dtype(dtype), tuple(shape), tuple(strides))


@atexit.register
def _cleanup():
    if os.getpid() != _OWNER:  # a forked child: the segments are its parent's
        return
    for shm in _CREATED:
        try:
            shm.close()
        except Exception:  # noqa: BLE001 - arrays may still export the buffer at exit
            pass
        try:
            shm.unlink()
        except FileNotFoundError:
            pass
