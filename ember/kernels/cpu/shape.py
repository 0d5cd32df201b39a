"""Shape-manipulating copies on NumPy arrays: cat, stack, flip, roll, repeat, tril/triu,
repeat_interleave. Checks and output shapes come from ember/kernels/meta/shape.py."""
import numpy as np

from ember.core.dtype import CHALF_NP as _C32, NP2DT
from ember.kernels.meta import shape as _m

_ndarray = np.ndarray
_as_strided = np.lib.stride_tricks.as_strided


def contiguous_bytes(shape, itemsize):
    out = []
    acc = itemsize
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def new(shape, dtype):
    """A new C-contiguous array; zero-size ones get PyTorch's strides (NumPy 2 reports 0)."""
    shape = tuple(shape)
    if 0 in shape:
        dtype = np.dtype(dtype)
        return _as_strided(np.empty(1, dtype)[:0], shape, contiguous_bytes(shape, dtype.itemsize))
    return np.empty(shape, dtype)


def _c_exact(a):
    acc = a.itemsize
    shape, st = a.shape, a.strides
    for i in range(len(shape) - 1, -1, -1):
        if st[i] != acc:
            return False
        acc *= shape[i]
    return True


def _fix0(r):
    return new(r.shape, r.dtype) if r.size == 0 else r


def _promoted(arrays):
    d0 = arrays[0].dtype
    for a in arrays:
        if a.dtype != d0:
            return _m.promote([NP2DT[x.dtype] for x in arrays]).np
    return None


def cat(arrays, dim=0):
    a0 = arrays[0]
    n = a0.ndim
    if n and -n <= dim < n:  # fast path: one dtype, matching shapes, non-empty output
        d = dim + n if dim < 0 else dim
        dt, s0 = a0.dtype, a0.shape
        head, tail = s0[:d], s0[d + 1:]
        total = 0
        for a in arrays:
            s = a.shape
            if a.dtype != dt or len(s) != n or s[:d] != head or s[d + 1:] != tail:
                break
            total += s[d]
        else:
            if total and 0 not in head and 0 not in tail:
                out = np.empty(head + (total,) + tail, dt)
                np.concatenate(arrays, axis=d, out=out)
                return out
    return _cat(arrays, dim)


def _cat(arrays, dim):
    shapes = [a.shape for a in arrays]
    shape, valid, d = _m.cat_shape(shapes, dim)
    npd = _promoted(arrays)
    if npd is None:
        npd = arrays[0].dtype
    if len(valid) != len(arrays):
        arrays = [arrays[i] for i in valid]
    out = new(shape, npd)
    if out.size:
        if any(a.dtype != npd for a in arrays) and (npd == _C32 or any(a.dtype == _C32 for a in arrays)):
            from ember.kernels.cpu._chalf import astype  # complex32 with another dtype
            arrays = [astype(a, npd) for a in arrays]
        np.concatenate(arrays, axis=d, out=out, casting="unsafe")
    return out


def empty_with_strides(shape, dtype, strides):
    """A new array with element `strides` (a dense layout, as from dense_strides)."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    n = 1
    for x in shape:
        n *= x
    if n == 0:
        return _as_strided(np.empty(1, dtype)[:0], shape, tuple(s * dtype.itemsize for s in strides))
    order = sorted(range(len(shape)), key=lambda i: (-strides[i], i))
    base = np.empty(tuple(shape[i] for i in order), dtype)
    inv = [0] * len(order)
    for k, i in enumerate(order):
        inv[i] = k
    r = base.transpose(inv)
    if r.strides != tuple(s * dtype.itemsize for s in strides):  # size-1 dims with odd strides
        r = np.ndarray(shape, dtype, base, 0, tuple(s * dtype.itemsize for s in strides))
    return r


def stack(arrays, dim=0):
    a0 = arrays[0]
    s0, dt = a0.shape, a0.dtype
    n = len(s0)
    if -n - 1 <= dim <= n and a0.size:  # fast path: one dtype and shape
        for a in arrays:
            if a.shape != s0 or a.dtype != dt:
                break
        else:
            d = dim + n + 1 if dim < 0 else dim
            e = s0[:d] + (1,) + s0[d:]
            out = np.empty(s0[:d] + (len(arrays),) + s0[d:], dt)
            np.concatenate([a.reshape(e) for a in arrays], axis=d, out=out)
            return out
    return _stack(arrays, dim)


def _stack(arrays, dim=0):
    shape, d = _m.stack_shape([a.shape for a in arrays], dim)
    npd = _promoted(arrays)
    out = new(shape, arrays[0].dtype if npd is None else npd)
    if out.size:
        np.stack(arrays, axis=d, out=out, casting="unsafe")
    return out


def flip(a, dims):
    axes = _m.flip_dims(a.ndim, dims)
    if a.dtype == _C32 and a.size and _flips_innermost(a, axes):
        from ember.kernels.cpu._chalf import refuse  # lazy: complex32 only
        raise refuse("flip_cpu")
    if a.ndim and a.size and a.flags.c_contiguous and (1 not in a.shape or _c_exact(a)):
        return np.flip(a, axes).copy() if axes else a.copy()
    isz = a.itemsize
    out = empty_with_strides(a.shape, a.dtype,
                             _m.dense_strides(a.shape, tuple(s // isz for s in a.strides)))
    if out.size:
        np.copyto(out, np.flip(a, axes) if axes and a.ndim else a)
    return out


def _flips_innermost(a, axes):
    """Whether a flipped dim is the one that moves fastest in memory (of those longer than 1): torch
    copies such a flip with its flip_cpu kernel, which has no ComplexHalf instance; any other flip is
    a strided copy."""
    live = [k for k in range(a.ndim) if a.shape[k] > 1]
    return bool(live) and min(live, key=lambda k: abs(a.strides[k])) in {k % a.ndim for k in axes}


def roll(a, shifts, dims=()):
    shifts, axes = _m.roll_check(a.ndim, shifts, dims)
    if a.size == 0:  # PyTorch returns a clone (its layout preserved)
        isz = a.itemsize
        return empty_with_strides(a.shape, a.dtype,
                                  _m.dense_strides(a.shape, tuple(s // isz for s in a.strides)))
    if axes is None:
        return np.roll(a.reshape(-1), shifts[0]).reshape(a.shape)
    return np.ascontiguousarray(np.roll(a, shifts, axes))


def repeat(a, repeats):
    shape = _m.repeat_shape(a.shape, repeats)
    if 0 in shape or a.size == 0:
        return new(shape, a.dtype)
    return np.tile(a, tuple(repeats))


def tril(a, diagonal=0):
    _m.tri_check(a.ndim, "tril")
    return _fix0(np.ascontiguousarray(np.tril(a, diagonal)))


def triu(a, diagonal=0):
    _m.tri_check(a.ndim, "triu")
    return _fix0(np.ascontiguousarray(np.triu(a, diagonal)))


def repeat_interleave_self_int(a, repeats, dim=None, output_size=None):
    shape = _m.ri_int_shape(a.shape, repeats, dim, output_size)
    if dim is None:
        a = a.reshape(-1)
        d = 0
    else:
        d = dim % a.ndim if a.ndim else 0
    if a.ndim == 0:
        return _fix0(np.repeat(a.reshape(1), repeats).reshape(shape))
    return _fix0(np.repeat(a, repeats, axis=d))


def _repeats_values(r):
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return r


def repeat_interleave_self_tensor(a, repeats, dim=None, output_size=None):
    shape, d = _m.ri_self_tensor_check(a.shape, NP2DT[repeats.dtype], repeats.shape, dim)
    a = a.reshape(shape)
    r = _repeats_values(repeats.reshape(-1))
    if r.size == 1:
        r = np.broadcast_to(r, (shape[d],))
    total = int(r.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    return _fix0(np.repeat(a, r, axis=d))


def repeat_interleave_tensor(repeats, output_size=None):
    _m.ri_repeats_check(NP2DT[repeats.dtype], repeats.shape)
    r = _repeats_values(repeats)
    total = int(r.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    return _fix0(np.repeat(np.arange(r.size, dtype=repeats.dtype), r))
