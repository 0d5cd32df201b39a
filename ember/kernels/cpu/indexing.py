"""Indexing kernels on NumPy arrays (ATen's TensorAdvancedIndexing, ScatterGatherKernel, IndexKernel).

Every check is the meta function's (ember/kernels/meta/indexing.py) applied to shapes and dtypes;
bounds are checked here because they need the data. In-place kernels write into the array they
are given (a view of the tensor's storage); functional ones copy self and run the same code.
"""
import numpy as np

from ember.core import dtype as _dt
from ember.core.tensor_impl import contiguous_strides
from ember.kernels.cpu import _chalf
from ember.kernels.meta import indexing as M

_nd = np.ndarray
_NP2DT = _dt.NP2DT
_BOOL = np.dtype(np.bool_)
_U8 = np.dtype(np.uint8)
_I64 = np.dtype(np.int64)
_I32 = np.dtype(np.int32)
_IDX_OK = (_I64, _I32, _U8, _BOOL)
_REDUCED = tuple(d.np for d in (_dt.float16, _dt.bfloat16) if d.np is not None)
MASKED_FILL_BYTE = "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"


# ---- array helpers -------------------------------------------------------------------------------
def estrides(a):
    isz = a.itemsize
    return tuple(s // isz for s in a.strides) if isz else (0,) * a.ndim


def new_strided(shape, strides, npdtype):
    """An uninitialised array of `shape` with element `strides` (a dense permutation layout)."""
    extent = 1
    for n, s in zip(shape, strides):
        if n == 0:
            extent = 0
            break
        extent += (n - 1) * s
    buf = np.empty(max(extent, 0), dtype=npdtype)
    isz = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, tuple(shape), tuple(s * isz for s in strides))


def contig(r):
    """r as a C-contiguous array with PyTorch's strides (NumPy gives empty arrays odd strides)."""
    if r.size == 0:
        return new_strided(r.shape, contiguous_strides(r.shape), r.dtype)
    return r if r.flags.c_contiguous else np.ascontiguousarray(r)


def copy_c(a):
    """A C-contiguous copy (clone(memory_format=contiguous_format))."""
    if a.size == 0:
        return new_strided(a.shape, contiguous_strides(a.shape), a.dtype)
    return a.copy()


def relayout(r, strides):
    if estrides(r) == tuple(strides) or r.size == 0 and r.ndim == 0:
        return r
    out = new_strided(r.shape, strides, r.dtype)
    out[...] = r
    return out


def clone_preserve(a):
    """clone(memory_format=preserve_format) on an array."""
    st = M.preserve_strides(a.shape, estrides(a))
    if a.size == 0 or st == contiguous_strides(a.shape):
        return copy_c(a)
    out = new_strided(a.shape, st, a.dtype)
    out[...] = a
    return out


def scalar_array(v, npd):
    """A Python number as a 0-d array of NumPy dtype `npd` (PyTorch's Scalar.to<T>())."""
    if npd == _dt.CHALF_NP:  # complex32
        from ember.core.chalf import narrow
        return narrow(v)
    if isinstance(v, complex) and npd.kind != "c":
        v = v.real
    return np.asarray(v).astype(npd)


def assert_no_internal_overlap(a):
    if a.size == 0:  # an empty tensor is contiguous for PyTorch (NumPy may give it 0 strides)
        return
    for n, s in zip(a.shape, a.strides):
        if s == 0 and n > 1:
            raise RuntimeError(M.OVERLAP_INTERNAL)

def _destination(a, inplace, *inputs, copy=None):
    """Where an indexed write goes: `a` itself when in place (after PyTorch's overlap checks against
    the other inputs and the writeable check), else a copy of it."""
    if not inplace:
        return (copy or copy_c)(a)
    assert_no_internal_overlap(a)
    for x in inputs:
        assert_no_overlap(a, x)
    check_writeable(a)
    return a



def check_writeable(a):
    if not a.flags.writeable and a.size:
        raise RuntimeError(M.OVERLAP_INTERNAL)


def _ptr(a):
    return a.__array_interface__["data"][0]


def assert_no_overlap(a, b):
    """at::assert_no_overlap: both dense, same memory, overlapping byte ranges -> error."""
    if b.__class__ is not _nd or a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return
    if not (M._dense(a.shape, estrides(a)) and M._dense(b.shape, estrides(b))):
        return  # TooHard: PyTorch does not check
    a0, b0 = _ptr(a), _ptr(b)
    if a0 < b0 + b.nbytes and b0 < a0 + a.nbytes:
        raise RuntimeError(M.OVERLAP)


def first_out_of_range(idx, lo, hi):
    """The first value (C order) of integer array idx outside [lo, hi), or None."""
    if idx.size == 0:
        return None
    if idx.min() >= lo and idx.max() < hi:
        return None
    flat = idx.ravel()
    bad = (flat < lo) | (flat >= hi)
    return int(flat[int(np.argmax(bad))])


def _dt_of(a):
    return _NP2DT[a.dtype]


def _is_arr(x):
    return x.__class__ is _nd or isinstance(x, np.ndarray)


# ---- advanced indexing -------------------------------------------------------------------------
def _prep(a, indices):
    """make_info: (IndexInfo, per-dim arrays or None, [(shape, strides)] of the defined indices)."""
    shape = a.shape
    nd = len(shape)
    if len(indices) > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd} (got {len(indices)})")
    byte = False
    for x in indices:
        if x is not None:
            d = x.dtype
            if d not in _IDX_OK:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if d == _U8:
                byte = True
    if byte:
        import warnings
        warnings.warn(M.UINT8_WARN, UserWarning, stacklevel=5)
    idx, geoms = [], []
    for x in indices:
        if x is None:
            idx.append(None)
        elif x.dtype == _BOOL or x.dtype == _U8:
            M.check_mask(x.shape, shape, len(idx))
            if x.ndim:
                for nz in np.nonzero(x):
                    idx.append(nz)
                    geoms.append(((nz.shape[0],), (1,)))
        else:
            idx.append(x)
            geoms.append((x.shape, estrides(x)))
    positions = [i for i, x in enumerate(idx) if x is not None]
    if not positions:
        raise IndexError("at least one index must be provided")
    shapes = [g[0] for g in geoms]
    first = shapes[0]
    same = True
    for s in shapes:
        if s != first:
            same = False
            break
    bshape = tuple(first) if same else M.broadcast_index_shapes(shapes)
    return M.IndexInfo(shape, positions, bshape), idx, geoms, same


def _raise_oob(a, info, idx):
    """The IndexError PyTorch's index kernel raises, or None when nothing is out of range."""
    best = None
    bshape = info.bshape
    for j, p in enumerate(info.positions):
        x = np.broadcast_to(idx[p], bshape)
        size = a.shape[p]
        flat = x.ravel()
        bad = (flat >= size) | (flat < -size)
        if bad.any():
            k = int(np.argmax(bad))
            if best is None or k < best[0]:
                best = (k, int(flat[k]), j, size)
    if best is not None and M.numel(info.out_shape):
        raise IndexError(f"index {best[1]} is out of bounds for dimension {best[2]} with size "
                         f"{best[3]}")


def _key(idx):
    return tuple(slice(None) if x is None else x for x in idx)


def index(a, indices):
    if len(indices) == 1 and a.ndim:
        x = indices[0]
        if x is not None and (x.dtype == _I64 or x.dtype == _I32) and x.ndim and \
                a.flags.c_contiguous and x.flags.c_contiguous:
            try:
                r = a[x]
            except IndexError:
                r = None
            if r is not None and r.size and 1 not in r.shape:
                return r if r.flags.c_contiguous else np.ascontiguousarray(r)
        elif x is not None and x.dtype == _BOOL and x.ndim and a.flags.c_contiguous and \
                x.shape == a.shape[:x.ndim]:
            r = a[x]
            if r.size and 1 not in r.shape:
                return r if r.flags.c_contiguous else np.ascontiguousarray(r)
    info, idx, geoms, same = _prep(a, indices)
    try:
        r = a[_key(idx)]
    except IndexError:
        _raise_oob(a, info, idx)
        return new_strided(info.out_shape, info.out_strides(a.shape, estrides(a), geoms), a.dtype)
    if r.size and same and 1 not in r.shape and a.flags.c_contiguous and all(
            x is None or x.flags.c_contiguous for x in idx):
        return r if r.flags.c_contiguous else np.ascontiguousarray(r)
    st = info.out_strides(a.shape, estrides(a), geoms)
    if r.size == 0:
        return new_strided(r.shape, st, r.dtype)
    return relayout(r, st)


def _masked_fill_path(a, indices, values, accumulate):
    """canDispatchToMaskedFill: one boolean mask and a one-element value -> masked_fill_."""
    if accumulate:
        return False
    if _is_arr(values):
        if values.size != 1:
            return False
        v = values.reshape(()).item()
        if not isinstance(v, (bool, int, float, complex)):
            v = float(v)
    else:
        v = values
    m = M.single_mask(indices)
    if m is None:
        return False
    mask, k = m
    M.check_mask(mask.shape, a.shape, k)
    if mask.dtype == _U8:
        raise RuntimeError(MASKED_FILL_BYTE)
    M.check_scalar(v, _dt_of(a))
    check_writeable(a)
    if a.size:
        a[(slice(None),) * k + (mask,)] = scalar_array(v, a.dtype)
    return True


def _index_put_impl(a, indices, values, accumulate):
    info, idx, geoms, same = _prep(a, indices)
    if _is_arr(values):
        M.value_shape_check(values.shape, info.out_shape)
        M.index_put_check_dtype(_dt_of(a), _dt_of(values))
    else:
        values = scalar_array(values, a.dtype)
    key = _key(idx)
    check_writeable(a)
    if a.size == 0:
        return
    try:
        if accumulate:
            try:
                np.add.at(a, key, values)
            except TypeError:  # complex32, which NumPy cannot add
                if a.dtype != _chalf.C32:
                    raise
                _chalf.add_at(a, key, values)
        else:
            a[key] = values
    except IndexError:
        _raise_oob(a, info, idx)


def index_put_(a, indices, values, accumulate=False):
    if len(indices) == 1 and not accumulate and a.ndim and a.size and a.flags.writeable and \
            values.__class__ is _nd and 0 not in a.strides:
        x = indices[0]
        if x is None:
            pass
        elif x.dtype == _BOOL and values.size == 1 and x.shape == a.shape[:x.ndim]:
            # masked_fill_ path with a value of self's dtype: nothing to convert or check
            if values.dtype == a.dtype:
                a[x] = values.reshape(())
                return
        elif (x.dtype == _I64 or x.dtype == _I32) and x.ndim and values.dtype == a.dtype:
            shp = x.shape + a.shape[1:]
            if values.shape != shp:
                M.value_shape_check(values.shape, shp)
            if not np.may_share_memory(a, values) and not np.may_share_memory(a, x):
                try:
                    a[x] = values
                    return
                except IndexError:
                    pass
    nd = a.ndim
    if len(indices) > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd} (got {len(indices)})")
    if M.internal_overlap(a.shape, a.strides):
        import warnings
        warnings.warn(M.EXPANDED_PUT, UserWarning, stacklevel=4)
    if _masked_fill_path(a, indices, values, accumulate):
        return
    if _is_arr(values):
        assert_no_overlap(a, values)
    for x in indices:
        if x is not None:
            assert_no_overlap(a, x)
    _index_put_impl(a, indices, values, accumulate)


def index_put(a, indices, values, accumulate=False):
    nd = a.ndim
    if len(indices) > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd} (got {len(indices)})")
    out = clone_preserve(a)
    if not _masked_fill_path(out, indices, values, accumulate):
        _index_put_impl(out, indices, values, accumulate)
    return out


# ---- gather / scatter ----------------------------------------------------------------------------
def _as1d(x):
    return x if x.ndim else x.reshape(1)


def _gather(a, d, index):
    if index.size == 0:
        return contig(np.empty(index.shape, dtype=a.dtype))
    if a.dtype == _chalf.C32:  # torch's gather kernels have no ComplexHalf instance; NumPy would copy
        raise _chalf.refuse("scatter_gather_tensor_cpu")
    a1, i1 = _as1d(a), _as1d(index)
    size = a1.shape[d]
    bad = first_out_of_range(i1, 0, size)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    sl = tuple(slice(0, i1.shape[k]) if k != d else slice(None) for k in range(a1.ndim))
    r = np.take_along_axis(a1[sl], i1, axis=d)
    if r.shape != index.shape:
        r = r.reshape(index.shape)
    return contig(r)


def gather(a, dim, index, sparse_grad=False):
    d = M.gather_check(a.shape, dim, index.shape, _dt_of(index))
    return _gather(a, d, index)


def _scatter_key(index, d):
    nd = index.ndim
    key = []
    for k, n in enumerate(index.shape):
        if k == d:
            key.append(index)
        else:
            shp = [1] * nd
            shp[k] = n
            key.append(np.arange(n).reshape(shp))
    return tuple(key)


def _scatter_prepare(o, d, index):
    """(key into o, sub-box of index) after the bounds check; o and index are at least 1-d."""
    size = o.shape[d]
    bad = first_out_of_range(index, 0, size)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    return _scatter_key(index, d)


def _src_box(src, index):
    s = _as1d(src)
    return s[tuple(slice(0, n) for n in index.shape)]


def _scatter(a, dim, index, src, reduce, inplace, warn=True, add=False):
    dt = _dt_of(a)
    is_t = _is_arr(src)
    d = M.scatter_check(a.shape, dt, dim, index.shape, _dt_of(index),
                        (src.shape, _dt_of(src)) if is_t else None)
    if not is_t:
        M.check_scalar(src, dt)
    if reduce is not None:
        M.check_reduce_old(reduce)
        if is_t and warn:
            import warnings
            warnings.warn(M.SCATTER_REDUCE_WARN, UserWarning, stacklevel=4)
    out = _destination(a, inplace, index, *((src,) if is_t else ()))
    if index.size == 0:
        return out
    if a.dtype == _chalf.C32:
        raise _chalf.refuse("scatter_gather_tensor_cpu" if is_t else "scatter_gather_scalar_cpu")
    o, i1 = _as1d(out), _as1d(index)
    key = _scatter_prepare(o, d, i1)
    vals = _src_box(src, i1) if is_t else scalar_array(src, a.dtype)
    if reduce is None:
        o[key] = vals
    elif reduce == "add":
        np.add.at(o, key, vals)
    else:
        np.multiply.at(o, key, vals)
    return out


def scatter_src(a, dim, index, src):
    return _scatter(a, dim, index, src, None, False)


def scatter_value(a, dim, index, value):
    return _scatter(a, dim, index, value, None, False)


def scatter_reduce_old(a, dim, index, src, reduce):
    return _scatter(a, dim, index, src, reduce, False)


def scatter_src_(a, dim, index, src):
    _scatter(a, dim, index, src, None, True)


def scatter_value_(a, dim, index, value):
    _scatter(a, dim, index, value, None, True)


def scatter_reduce_old_(a, dim, index, src, reduce):
    _scatter(a, dim, index, src, reduce, True)


def scatter_add(a, dim, index, src):
    return _scatter(a, dim, index, src, "add", False, warn=False)


def scatter_add_(a, dim, index, src):
    _scatter(a, dim, index, src, "add", True, warn=False)


_UFUNC = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum,
          "amin": np.minimum}


def _init_value(reduce, npd):
    if reduce in ("sum", "mean"):
        return np.zeros((), npd)
    if reduce == "prod":
        return np.ones((), npd)
    big = reduce == "amin"
    if npd == _BOOL:
        return np.asarray(big)
    if npd.kind in "iu":
        info = np.iinfo(npd)
        return np.asarray(info.max if big else info.min, dtype=npd)
    return np.asarray(np.inf if big else -np.inf).astype(npd)


def _mean_divide(o, cnt):
    cnt[cnt == 0] = 1
    if o.dtype.kind in "iu":
        o[...] = np.floor_divide(o, cnt)
    else:
        o[...] = o / cnt


def _scatter_reduce(a, dim, index, src, reduce, include_self, inplace):
    dt = _dt_of(a)
    d = M.scatter_reduce_two_check(a.shape, dt, dim, index.shape, _dt_of(index),
                                   (src.shape, _dt_of(src)), reduce)
    out = _destination(a, inplace, index, src)
    if index.size == 0:
        return out
    if a.dtype == _chalf.C32:
        raise _chalf.refuse("scatter_gather_tensor_cpu")
    o, i1 = _as1d(out), _as1d(index)
    key = _scatter_prepare(o, d, i1)
    _reduce_at(o, key, _src_box(src, i1), reduce, include_self)
    return out


def _reduce_at(o, key, vals, reduce, include_self):
    """o[key] <reduce>= vals (scatter_reduce and index_reduce share it; mean divides by counts)."""
    if not include_self:
        o[key] = _init_value(reduce, o.dtype)
    _UFUNC[reduce].at(o, key, vals)
    if reduce == "mean":
        cnt = np.ones(o.shape, o.dtype) if include_self else np.zeros(o.shape, o.dtype)
        np.add.at(cnt, key, np.ones((), o.dtype))
        _mean_divide(o, cnt)


def scatter_reduce(a, dim, index, src, reduce, include_self=True):
    return _scatter_reduce(a, dim, index, src, reduce, include_self, False)


def scatter_reduce_(a, dim, index, src, reduce, include_self=True):
    _scatter_reduce(a, dim, index, src, reduce, include_self, True)


# ---- index_select / index_add / index_copy / index_fill / index_reduce ----------------------------
def index_select(a, dim, index):
    d, out_shape = M.index_select_check(a.shape, dim, index.shape, _dt_of(index))
    idx = index.reshape(-1)
    if a.ndim == 0:
        if first_out_of_range(idx, 0, 1) is not None:
            raise IndexError("index out of range in self")
        return copy_c(a)
    size = a.shape[d]
    if a.ndim > 1 and idx.size and (a.size == 0 or d == 1):
        # PyTorch's empty-self and dim-1 paths check with their own wording
        if a.size == 0 and size == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        bad = first_out_of_range(idx, 0, size)
        if bad is not None:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
    elif first_out_of_range(idx, 0, size) is not None:
        raise IndexError("index out of range in self")
    return contig(np.take(a, idx, axis=d))


def _dim_key(d, idx):
    return (slice(None),) * d + (idx,)


def _index_add(a, dim, index, source, alpha, inplace):
    dt = _dt_of(a)
    d = M.index_func_check(a.shape, dt, dim, index.shape, _dt_of(index), source.shape,
                           _dt_of(source), "index_add")
    M.check_scalar(alpha, dt)
    out = _destination(a, inplace, index, source)
    if index.size == 0:
        return out
    o, s, idx = _as1d(out), _as1d(source), index.reshape(-1)
    size = o.shape[d]
    # PyTorch runs index_add as a scatter_add over an expanded index for an int64 index, alpha 1,
    # along the first or last dim of an n-d (n > 1) tensor; its bounds check and rounding differ
    scatter_path = o.ndim > 1 and (d == 0 or d == o.ndim - 1) and alpha == 1 and idx.dtype == _I64
    if o.ndim > 1 and o.size == 0:
        return out
    if scatter_path:
        if o.size and s.size:
            bad = first_out_of_range(idx, 0, size)
            if bad is not None:
                if a.dtype == _chalf.C32:  # torch keeps ComplexHalf off the scatter_add path
                    raise IndexError("index out of range in self")
                raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    elif first_out_of_range(idx, 0, size) is not None:
        raise IndexError("index out of range in self")
    if o.size == 0 or s.size == 0:
        return out
    if scatter_path and a.dtype in _REDUCED:
        # PyTorch's path for these cases sums reduced-precision floats in float32, rounding once
        acc = o.astype(np.float32)
        np.add.at(acc, _dim_key(d, idx), s.astype(np.float32))
        o[...] = acc.astype(a.dtype)
        return out
    try:
        if alpha != 1:
            s = s * scalar_array(alpha, a.dtype)
        np.add.at(o, _dim_key(d, idx), s)
    except TypeError:  # complex32: source * alpha rounded, then each sum (add_stub / `+=` in torch)
        if a.dtype != _chalf.C32:
            raise
        _chalf.add_at(o, _dim_key(d, idx), _chalf.mul(s, alpha, _chalf.C32))
    return out


def index_add(a, dim, index, source, alpha=1):
    return _index_add(a, dim, index, source, alpha, False)


def index_add_(a, dim, index, source, alpha=1):
    _index_add(a, dim, index, source, alpha, True)


def _index_copy(a, dim, index, source, inplace):
    if inplace:
        assert_no_internal_overlap(a)
        assert_no_overlap(a, index)
        assert_no_overlap(a, source)
    d = M.index_copy_check(a.shape, _dt_of(a), dim, index.shape, _dt_of(index), source.shape,
                           _dt_of(source))
    if inplace:
        check_writeable(a)
        out = a
    else:
        out = copy_c(a)
    if index.size == 0:
        return out
    o, s, idx = _as1d(out), _as1d(source), index.reshape(-1)
    size = o.shape[d]
    bad = first_out_of_range(idx, 0, size)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with size "
                         f"{size}")
    o[_dim_key(d, idx)] = s
    return out


def index_copy(a, dim, index, source):
    return _index_copy(a, dim, index, source, False)


def index_copy_(a, dim, index, source):
    _index_copy(a, dim, index, source, True)


def _fill_value(value):
    if _is_arr(value):
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        v = value.item()
        return v if isinstance(v, (bool, int, float, complex)) else float(v)
    return value


def _index_fill(a, dim, index, value, inplace):
    v = _fill_value(value)
    dt = _dt_of(a)
    if index.dtype != _I64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if inplace:
        assert_no_overlap(a, index)
    d = M.index_fill_check(a.shape, dt, dim, index.shape, _dt_of(index), v,
                           inplace and M.internal_overlap(a.shape, a.strides))
    if inplace:
        check_writeable(a)
        out = a
    else:
        out = clone_preserve(a)
    o, idx = _as1d(out), index.reshape(-1)
    size = o.shape[d]
    bad = first_out_of_range(idx, -size, size)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    if idx.size:
        o[_dim_key(d, idx)] = scalar_array(v, a.dtype)
    return out


def index_fill_scalar(a, dim, index, value):
    return _index_fill(a, dim, index, value, False)


def index_fill_tensor(a, dim, index, value):
    return _index_fill(a, dim, index, value, False)


def index_fill_scalar_(a, dim, index, value):
    _index_fill(a, dim, index, value, True)


def index_fill_tensor_(a, dim, index, value):
    _index_fill(a, dim, index, value, True)


def _index_reduce(a, dim, index, source, reduce, include_self, inplace):
    dt = _dt_of(a)
    d = M.index_reduce_check(a.shape, dt, dim, index.shape, _dt_of(index), source.shape,
                             _dt_of(source), reduce, include_self)
    out = _destination(a, inplace, index, source)
    if index.size == 0:
        return out
    o, s, idx = _as1d(out), _as1d(source), index.reshape(-1)
    size = o.shape[d]
    if not include_self:  # PyTorch first runs index_fill_ with the reduction's identity
        bad = first_out_of_range(idx, -size, size)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    if first_out_of_range(idx, 0, size) is not None:
        raise IndexError("index out of range in self")
    _reduce_at(o, _dim_key(d, idx), s, reduce, include_self)
    return out


def index_reduce(a, dim, index, source, reduce, include_self=True):
    return _index_reduce(a, dim, index, source, reduce, include_self, False)


def index_reduce_(a, dim, index, source, reduce, include_self=True):
    _index_reduce(a, dim, index, source, reduce, include_self, True)


# ---- masked ops, nonzero, take, put ------------------------------------------------------------
def masked_select(a, mask):
    if mask.dtype != _BOOL:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = M.infer_size(mask.shape, a.shape)
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    if mask.shape != shape:
        mask = np.broadcast_to(mask, shape)
    return contig(a[mask])


def _masked_scatter_into(o, m, source):
    if m.size == 0:
        return
    n = int(np.count_nonzero(m))
    if n > source.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    o[m] = source.reshape(-1)[:n]


def masked_scatter(a, mask, source):
    shape = M.infer_size(mask.shape, a.shape)
    M.masked_scatter_check(_dt_of(a), _dt_of(mask), _dt_of(source))
    if a.dtype == _chalf.C32:  # refused even when nothing is selected, as torch does
        raise _chalf.refuse("masked_scatter")
    out = copy_c(np.broadcast_to(a, shape))
    _masked_scatter_into(out, np.broadcast_to(mask, shape), source)
    return out


def masked_scatter_(a, mask, source):
    M.masked_scatter_inplace_check(a.shape, estrides(a), _dt_of(a), mask.shape, _dt_of(mask),
                                   _dt_of(source))
    if a.dtype == _chalf.C32:
        raise _chalf.refuse("masked_scatter")
    check_writeable(a)
    _masked_scatter_into(a, np.broadcast_to(mask, a.shape), source)


def nonzero(a):
    k = a.ndim
    nz = np.nonzero(a) if k else ()
    n = (nz[0].shape[0] if k else int(bool(a.reshape(()).item() != 0)))
    out = new_strided((n, k), (1, n), _I64)
    for j in range(k):
        out[:, j] = nz[j]
    return out


def nonzero_static(a, size, fill_value=-1):
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    k = a.ndim
    out = contig(np.full((size, k), fill_value, dtype=_I64))
    if k:
        nz = np.nonzero(a)
        n = min(size, nz[0].shape[0])
        for j in range(k):
            out[:n, j] = nz[j][:n]
    return out


def take(a, index):
    M.take_check(a.shape, index.shape, _dt_of(index))
    if index.size == 0:
        return contig(np.empty(index.shape, dtype=a.dtype))
    if a.dtype == _chalf.C32:
        raise _chalf.refuse("take_cpu")
    n = a.size
    bad = first_out_of_range(index, -n, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return contig(a.reshape(-1)[index])


def take_along_dim(a, indices, dim=None):
    if dim is None:
        from ember.kernels.meta.views import VIEW_ERROR, view_strides
        for x in (a, indices):
            if not x.flags.c_contiguous and view_strides(x.shape, estrides(x), (x.size,)) is None:
                raise RuntimeError(VIEW_ERROR)
        a1, i1 = a.reshape(-1), indices.reshape(-1)
        d = M.gather_check(a1.shape, 0, i1.shape, _dt_of(i1))
        return _gather(a1, d, i1)
    sb, ib, d = M.take_along_dim_check(a.shape, indices.shape, _dt_of(indices), dim)
    a2 = a if a.shape == sb else np.broadcast_to(a, sb)
    i2 = indices if indices.shape == ib else np.broadcast_to(indices, ib)
    if sb[d] and i2.size and ((i2 < 0).any() or (i2 >= sb[d]).any()):
        i2 = np.mod(i2, sb[d])  # PyTorch wraps the indices along `dim` (`indices % size`)
    M.gather_check(sb, d, ib, _dt_of(indices))
    return _gather(a2, d, i2)


def _put(a, index, source, accumulate, inplace):
    M.put_check(a.shape, _dt_of(a), index.shape, _dt_of(index), source.shape, _dt_of(source))
    out = _destination(a, inplace, index, source, copy=clone_preserve)
    if index.size == 0:
        return out
    if a.dtype == _chalf.C32:
        raise _chalf.refuse("take_put_cpu")
    n = out.size
    idx = index.reshape(-1)
    bad = first_out_of_range(idx, -n, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    idx = np.where(idx < 0, idx + n, idx)
    src = source.reshape(-1)
    if out.flags.c_contiguous:
        target, key = out.reshape(-1), idx
    else:
        target, key = out, np.unravel_index(idx, out.shape)
    if accumulate:
        np.add.at(target, key, src)
    else:
        target[key] = src
    return out


def put_(a, index, source, accumulate=False):
    _put(a, index, source, accumulate, True)


def put(a, index, source, accumulate=False):
    return _put(a, index, source, accumulate, False)
