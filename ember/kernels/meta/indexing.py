"""Meta functions of the indexing ops (ATen's TensorAdvancedIndexing / IndexingUtils checks).

The checks here work on shapes and dtypes only, so the CPU kernels (ember/kernels/cpu/indexing.py)
call the same functions before touching data: one wording of every error, whichever backend runs.
"""
import warnings

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape, wrap_dim
from ember.core.tensor_impl import TensorImpl, contiguous_strides
from ember.kernels.meta.strides import reorder_dims

LONG, INT, BYTE, BOOL = _dt.int64, _dt.int32, _dt.uint8, _dt.bool_
INDEX_DTYPES = (LONG, INT, BYTE, BOOL)

OVERLAP_INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers "
                    "to a single memory location. Please clone() the tensor before performing the "
                    "operation.")
OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.")
NONZERO_META = ("The register_meta function for torch.nonzero() raises unimplemented by default, as "
                "a correct data-independent implementation does not exist. This implementation "
                "returns a fake value, assuming all elements of the tensor are non-zero. To enable "
                "this registration, please set 'torch.fx.experimental._config."
                "meta_nonzero_assume_all_nonzero' to True.")
UINT8_WARN = ("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
              "instead.")
_CNAMES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
           "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "float32": "float", "float64": "double", "complex64": "c10::complex<float>",
           "complex128": "c10::complex<double>"}
_FMAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
         "complex64": 3.4028234663852886e38}
_IRANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767),
           "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


# ---- small helpers ------------------------------------------------------------------------------
def nonempty_dim(n):
    return n if n > 0 else 1


def nonempty_size(shape, d):
    """ensure_nonempty_size: size d of `shape`, 1 for a 0-d tensor (IndexError if out of range)."""
    if not shape:
        return 1
    return shape[wrap_dim(d, len(shape))]


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def infer_size(a, b):
    """ATen's infer_size: broadcast two shapes, naming the last mismatching dimension."""
    na, nb = len(a), len(b)
    n = max(na, nb)
    out = [0] * n
    for i in range(n - 1, -1, -1):
        da, db = i - n + na, i - n + nb
        sa = a[da] if da >= 0 else 1
        sb = b[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) "
                               f"at non-singleton dimension {i}")
        out[i] = sb if sa == 1 else sa
    return tuple(out)


def check_scalar(value, dtype):
    """c10's checked_convert: PyTorch's overflow error when a Scalar does not fit `dtype`."""
    name = dtype.name
    if name == "bool" or value.__class__ is bool:
        return
    bad = False
    if isinstance(value, complex):
        if dtype.category != _dt.COMPLEX and value.imag != 0:
            bad = True
        else:
            bad = _overflows(name, value.real) or _overflows(name, value.imag)
    else:
        bad = _overflows(name, value)
    if bad:
        raise RuntimeError(f"value cannot be converted to type {_CNAMES[name]} without overflow")


def _overflows(name, v):
    r = _IRANGE.get(name)
    if isinstance(v, int):
        if r is None:
            m = _FMAX.get(name)
            return m is not None and (v > m or v < -m)
        lo, hi = r
        if name == "uint8":
            return v > hi or (v < 0 and -v > hi)
        return v < lo or v > hi
    v = float(v)
    if v != v:
        return r is not None
    if v in (float("inf"), float("-inf")):
        return r is not None
    if r is not None:
        return v < r[0] or v > r[1]
    m = _FMAX.get(name)
    return m is not None and (v > m or v < -m)


def internal_overlap(shape, strides):
    if 0 in shape:  # an empty tensor is contiguous for PyTorch
        return False
    for n, s in zip(shape, strides):
        if s == 0 and n > 1:
            return True
    return False


def assert_no_internal_overlap_meta(t):
    if internal_overlap(t._shape, t.stride()):
        raise RuntimeError(OVERLAP_INTERNAL)


def check_reduce_new(reduce):
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")


def check_reduce_old(reduce):
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")


def not_implemented(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype._short}\'')


# ---- TensorIterator's output layout ------------------------------------------------------------
def _is_contig(shape, strides):
    if 0 in shape:
        return True
    expected = 1
    for i in range(len(shape) - 1, -1, -1):
        n = shape[i]
        if n == 1:
            continue
        if strides[i] != expected:
            return False
        expected *= n
    return True


def _dense(shape, strides):
    dims = sorted((i for i in range(len(shape)) if shape[i] != 1), key=lambda i: strides[i])
    expected = 1
    for i in dims:
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True


def iter_strides(shape, ops):
    """Strides TensorIterator gives a fresh output of `shape` for inputs `ops`: (shape, strides)
    pairs, strides already broadcast to `shape` (0 where an input is broadcast)."""
    nd = len(shape)
    if any(s == 0 for s in shape) and nd <= 1:
        return contiguous_strides(shape)
    if all(tuple(s) == tuple(shape) for s, _ in ops):
        if all(_is_contig(shape, st) for _, st in ops):
            return contiguous_strides(shape)
        st0 = tuple(ops[0][1])
        if all(tuple(st) == st0 for _, st in ops) and _dense(shape, st0):
            return st0
    if nd <= 1:
        return contiguous_strides(shape)
    perm = reorder_dims(shape, [st for _, st in ops])
    if perm == list(range(nd - 1, -1, -1)):
        return contiguous_strides(shape)
    out = [0] * nd
    acc = 1
    for p in perm:
        out[p] = acc
        acc *= shape[p]
    return tuple(out)


def broadcast_strides(shape, oshape, ostrides):
    """Strides of an operand (oshape, ostrides) expanded to `shape` (0 on broadcast dims)."""
    off = len(shape) - len(oshape)
    out = [0] * len(shape)
    for i in range(len(oshape)):
        out[off + i] = 0 if (oshape[i] == 1 and shape[off + i] != 1) else ostrides[i]
    return out


# ---- advanced indexing (index.Tensor / index_put_) ---------------------------------------------
def check_index_dtypes(dtypes):
    """checkIndexTensorTypes: each defined index is long, int, byte or bool."""
    for d in dtypes:
        if d is not None and d not in INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    for d in dtypes:
        if d is BYTE:
            warnings.warn(UINT8_WARN, UserWarning, stacklevel=5)
            break


def check_mask(mshape, shape, start):
    """expandTensors' check that a boolean mask matches the dims it indexes from `start`."""
    for j, m in enumerate(mshape):
        k = start + j
        if k >= len(shape):
            wrap_dim(k, len(shape))
        if m != shape[k]:
            raise IndexError(f"The shape of the mask {fmt_shape(mshape)} at index {j} does not match "
                             f"the shape of the indexed tensor {fmt_shape(shape)} at index {k}")


def broadcast_index_shapes(shapes):
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        off = n - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if d == o or d == 1:
                continue
            if o == 1:
                out[off + i] = d
            else:
                raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                                 "with shapes " + ", ".join(fmt_shape(x) for x in shapes))
    return tuple(out)


class IndexInfo:
    """make_info + AdvancedIndex: where the indexed dims are and what the result looks like."""
    __slots__ = ("positions", "bshape", "out_shape", "perm", "dims_before", "indexed_sizes")

    def __init__(self, shape, positions, bshape):
        nd = len(shape)
        self.positions = positions
        self.bshape = bshape
        first, last = positions[0], positions[-1]
        if last - first + 1 == len(positions):
            perm = None
            before = first
        else:  # transposeToFront
            rest = [i for i in range(nd) if i not in positions]
            perm = list(positions) + rest
            before = 0
        self.perm = perm
        self.dims_before = before
        self.indexed_sizes = tuple(shape[p] for p in positions)
        if perm is None:
            self.out_shape = tuple(shape[:first]) + bshape + tuple(shape[last + 1:])
        else:
            self.out_shape = bshape + tuple(shape[i] for i in perm[len(positions):])
        if 0 in self.indexed_sizes and 0 not in bshape:
            raise IndexError("index is out of bounds for dimension with size 0")

    def out_strides(self, shape, strides, idx_geoms):
        """The result's strides: TensorIterator over the restrided self and the index tensors."""
        positions, bshape = self.positions, self.bshape
        if self.perm is not None:
            shape = tuple(shape[i] for i in self.perm)
            strides = tuple(strides[i] for i in self.perm)
            ni = len(positions)
        else:
            ni = len(positions)
        db = self.dims_before
        after_shape, after_strides = shape[db + ni:], strides[db + ni:]
        da = len(after_shape)
        out_shape = self.out_shape
        src = tuple(strides[:db]) + (0,) * len(bshape) + tuple(after_strides)
        ops = [(out_shape, src)]
        from ember.kernels.meta.views import view_strides
        rshape = (1,) * db + bshape + (1,) * da
        for ishape, istrides in idx_geoms:
            if tuple(ishape) != bshape:
                istrides = broadcast_strides(bshape, ishape, istrides)
            vs = view_strides(bshape, tuple(istrides), rshape)
            if vs is None:
                vs = contiguous_strides(rshape)
            ops.append((rshape, broadcast_strides(out_shape, rshape, vs)))
        return iter_strides(out_shape, ops)


def index_info(shape, idx):
    """idx: per-dim list of (shape, strides) for defined (long/int) indices, None elsewhere."""
    positions = [i for i, x in enumerate(idx) if x is not None]
    if not positions:
        raise IndexError("at least one index must be provided")
    shapes = [idx[i][0] for i in positions]
    first = shapes[0]
    bshape = tuple(first) if all(tuple(s) == tuple(first) for s in shapes) else \
        broadcast_index_shapes(shapes)
    return IndexInfo(shape, positions, bshape)


def _meta_idx(t, indices, for_put=False):
    """The per-dim index geometry of `indices` on a meta `t` (bool masks cannot be expanded)."""
    shape = t._shape
    if len(indices) > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got "
                         f"{len(indices)})")
    check_index_dtypes([None if x is None else x._dtype for x in indices])
    idx = []
    for x in indices:
        if x is None:
            idx.append(None)
        elif x._dtype is BOOL or x._dtype is BYTE:
            check_mask(x._shape, shape, len(idx))
            raise NotImplementedError(NONZERO_META)
        else:
            idx.append((x._shape, x.stride()))
    return idx


def index(t, indices):
    idx = _meta_idx(t, indices)
    info = index_info(t._shape, idx)
    strides = info.out_strides(t._shape, t.stride(), [x for x in idx if x is not None])
    return info.out_shape, t._dtype, strides


def value_shape_check(vshape, out_shape):
    ok = len(vshape) <= len(out_shape)
    if ok:
        off = len(out_shape) - len(vshape)
        for i, v in enumerate(vshape):
            if v != 1 and v != out_shape[off + i]:
                ok = False
                break
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {fmt_shape(vshape)} cannot be "
                           f"broadcast to indexing result of shape {fmt_shape(out_shape)}")


def single_mask(indices):
    """canDispatchToMaskedFill: the one bool/byte index among Nones, with its position, or None."""
    mask, pos, k = None, 0, 0
    for x in indices:
        if x is None:
            k += 1
            continue
        d = x._dtype if isinstance(x, TensorImpl) else _dt.NP2DT[x.dtype]
        if (d is not BOOL and d is not BYTE) or mask is not None:
            return None
        mask, pos = x, k
        k += len(x.shape)
    return None if mask is None else (mask, pos)


def _masked_fill_meta(m, shape, values, dtype):
    check_mask(m[0]._shape, shape, m[1])
    if m[0]._dtype is BYTE:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    if not isinstance(values, TensorImpl):
        check_scalar(values, dtype)
    elif values._device.type != "meta":
        check_scalar(values.item(), dtype)


def index_put_check_dtype(self_dtype, value_dtype):
    if value_dtype is not self_dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self_dtype._short} for the destination and {value_dtype._short} for "
                           f"the source.")


EXPANDED_PUT = ("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor "
                "before performing this operation. This also applies to advanced indexing e.g. "
                "tensor[indices] = tensor")


def index_put_(t, indices, values, accumulate=False):
    shape = t._shape
    if len(indices) > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got "
                         f"{len(indices)})")
    if internal_overlap(shape, t.stride()):
        warnings.warn(EXPANDED_PUT, UserWarning, stacklevel=4)
    vnumel = numel(values._shape) if isinstance(values, TensorImpl) else 1
    if not accumulate and vnumel == 1:
        m = single_mask(indices)
        if m is not None:
            _masked_fill_meta(m, shape, values, t._dtype)
            return
    idx = _meta_idx(t, indices, True)
    info = index_info(shape, idx)
    vd = values._dtype if isinstance(values, TensorImpl) else _dt.scalar_dtype(values)
    value_shape_check(values._shape if isinstance(values, TensorImpl) else (), info.out_shape)
    index_put_check_dtype(t._dtype, vd)


def index_put(t, indices, values, accumulate=False):
    shape = t._shape
    if len(indices) > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got "
                         f"{len(indices)})")
    vnumel = numel(values._shape) if isinstance(values, TensorImpl) else 1
    m = single_mask(indices) if not accumulate and vnumel == 1 else None
    if m is not None:
        _masked_fill_meta(m, shape, values, t._dtype)
    else:
        idx = _meta_idx(t, indices, True)
        info = index_info(shape, idx)
        vd = values._dtype if isinstance(values, TensorImpl) else _dt.scalar_dtype(values)
        value_shape_check(values._shape if isinstance(values, TensorImpl) else (), info.out_shape)
        index_put_check_dtype(t._dtype, vd)
    return shape, t._dtype, preserve_strides(shape, t.stride())


def preserve_strides(shape, strides):
    """clone(preserve_format): the same strides when non-overlapping and dense, else contiguous."""
    if _dense(shape, strides):
        return tuple(strides)
    return contiguous_strides(shape)


# ---- gather / scatter ----------------------------------------------------------------------------
def gather_check(shape, dim, ishape, idtype):
    d = wrap_dim(dim, len(shape))
    if numel(ishape) == 0:
        return d
    if idtype is not LONG and idtype is not INT:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    nd = nonempty_dim(len(shape))
    if nd != nonempty_dim(len(ishape)):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i in range(nd):
        if i != d and nonempty_size(ishape, i) > nonempty_size(shape, i):
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{fmt_shape(ishape)} to be no larger than self {fmt_shape(shape)} "
                               f"apart from dimension {d}")
    return d


def gather(t, dim, index, sparse_grad=False):
    gather_check(t._shape, dim, index._shape, index._dtype)
    return index._shape, t._dtype


def scatter_check(shape, dtype, dim, ishape, idtype, src=None):
    """scatter_meta_impl's checks; src is (shape, dtype) of a Tensor src, else None."""
    d = wrap_dim(dim, len(shape))
    if numel(ishape) != 0 and idtype is not LONG and idtype is not INT:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src is not None and src[1] is not dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if numel(ishape) == 0:
        return d
    nd = nonempty_dim(len(shape))
    if nd != nonempty_dim(len(ishape)):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    wrong = False
    for i in range(nd):
        if i != d and nonempty_size(ishape, i) > nonempty_size(shape, i):
            wrong = True
            break
    if not wrong and src is not None:
        for i in range(nd):
            if nonempty_size(ishape, i) > nonempty_size(src[0], i):
                wrong = True
                break
    if wrong:
        msg = (f"Expected index {fmt_shape(ishape)} to be no larger than self {fmt_shape(shape)} "
               f"apart from dimension {d}")
        if src is not None:
            msg += f" and to be no larger size than src {fmt_shape(src[0])}"
        raise RuntimeError(msg)
    return d


def _src(src):
    return (src._shape, src._dtype) if isinstance(src, TensorImpl) else None


SCATTER_REDUCE_WARN = ("The reduce argument of torch.scatter with Tensor src is deprecated and will "
                       "be removed in a future PyTorch release. Use torch.scatter_reduce instead for "
                       "more reduction options.")


def _scatter_meta(t, dim, index, src, reduce, inplace):
    scatter_check(t._shape, t._dtype, dim, index._shape, index._dtype, _src(src))
    if not isinstance(src, TensorImpl):
        check_scalar(src, t._dtype)
    if reduce is not None:
        check_reduce_old(reduce)
    if inplace:
        assert_no_internal_overlap_meta(t)


def scatter(t, dim, index, src):
    _scatter_meta(t, dim, index, src, None, False)
    return t._shape, t._dtype


def scatter_reduce_old(t, dim, index, src, reduce):
    _scatter_meta(t, dim, index, src, reduce, False)
    return t._shape, t._dtype


def scatter_(t, dim, index, src):
    _scatter_meta(t, dim, index, src, None, True)


def scatter_reduce_old_(t, dim, index, src, reduce):
    _scatter_meta(t, dim, index, src, reduce, True)


def scatter_add(t, dim, index, src):
    _scatter_meta(t, dim, index, src, None, False)
    return t._shape, t._dtype


def scatter_add_(t, dim, index, src):
    _scatter_meta(t, dim, index, src, None, True)


def scatter_reduce_two_check(t_shape, t_dtype, dim, ishape, idtype, src, reduce):
    d = scatter_check(t_shape, t_dtype, dim, ishape, idtype, src)
    check_reduce_new(reduce)
    if reduce in ("amax", "amin") and t_dtype.category == _dt.COMPLEX and numel(ishape):
        raise not_implemented(f"scatter_gather_tensor_cpu_reduce_{reduce}", t_dtype)
    if reduce == "mean" and t_dtype is BOOL:
        raise not_implemented("scatter_gather_tensor_cpu_reduce_mean" if numel(ishape) else
                              "div_floor_cpu", t_dtype)
    return d


def scatter_reduce(t, dim, index, src, reduce, include_self=True):
    scatter_reduce_two_check(t._shape, t._dtype, dim, index._shape, index._dtype, _src(src), reduce)
    return t._shape, t._dtype


def scatter_reduce_(t, dim, index, src, reduce, include_self=True):
    scatter_reduce_two_check(t._shape, t._dtype, dim, index._shape, index._dtype, _src(src), reduce)
    assert_no_internal_overlap_meta(t)


# ---- index_select / index_add / index_copy / index_fill / index_reduce ----------------------------
def index_select_check(shape, dim, ishape, idtype):
    d = wrap_dim(dim, len(shape))
    n = numel(ishape)
    if len(ishape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if not shape and n != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
    if idtype is not LONG and idtype is not INT:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    out = list(shape)
    if shape:
        out[d] = n
    return d, tuple(out)


def index_select(t, dim, index):
    _, out = index_select_check(t._shape, dim, index._shape, index._dtype)
    return out, t._dtype


def index_func_check(shape, dtype, dim, ishape, idtype, sshape, sdtype, func):
    d = wrap_dim(dim, len(shape))
    n = numel(ishape)
    if len(ishape) > 1:
        raise IndexError(f"{func}_(): Index is supposed to be a vector, but got dim: {len(ishape)} "
                         f"with type: {idtype._short} and size: {fmt_shape(ishape)}")
    if idtype is not LONG and idtype is not INT:
        raise RuntimeError(f"{func}_(): Expected dtype int32/int64 for index but got: "
                           f"{idtype._short}")
    if dtype is not sdtype:
        raise RuntimeError(f"{func}_(): self ({dtype._short}) and source ({sdtype._short}) must "
                           f"have the same scalar type")
    if not (d == 0 or d < len(sshape)):
        raise RuntimeError(f"{func}_(): Indexing dim {d} is out of bounds of the source tensor with "
                           f"dim {len(sshape)}")
    ssize = 1 if not sshape else sshape[d]
    if n != ssize and not sshape:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if n != ssize:
        raise RuntimeError(f"{func}_(): Number of indices ({n}) should be equal to source.size(dim):"
                           f" ({ssize}), for dim: {d}")
    a, b = list(shape), list(sshape)
    if sshape and shape:
        del a[d]
        del b[d]
    if a != b:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {fmt_shape(shape)} source.shape = "
                           f"{fmt_shape(sshape)}")
    return d


def index_add(t, dim, index, source, alpha=1):
    index_func_check(t._shape, t._dtype, dim, index._shape, index._dtype, source._shape,
                     source._dtype, "index_add")
    check_scalar(alpha, t._dtype)
    return t._shape, t._dtype


def index_add_(t, dim, index, source, alpha=1):
    index_add(t, dim, index, source, alpha)
    assert_no_internal_overlap_meta(t)


IR_WARN = "index_reduce() is in beta and the API may change at any time."


def index_reduce_check(shape, dtype, dim, ishape, idtype, sshape, sdtype, reduce,
                       include_self=True):
    warnings.warn(IR_WARN, UserWarning, stacklevel=5)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin "
                           f"but got {reduce}.")
    d = index_func_check(shape, dtype, dim, ishape, idtype, sshape, sdtype, "index_reduce")
    cplx = dtype.category == _dt.COMPLEX
    if dtype is BOOL or cplx:
        if not include_self:
            raise not_implemented("index_reduce_func_exclude_input_init", dtype)
        if len(shape) <= 1:
            raise not_implemented("index_func_", dtype)
        if dtype is BOOL and reduce == "mean":
            raise not_implemented("div_floor_cpu", dtype)
        if cplx and reduce in ("amax", "amin"):
            raise not_implemented("maximum_cpu" if reduce == "amax" else "minimum_cpu", dtype)
    return d


def index_reduce(t, dim, index, source, reduce, include_self=True):
    index_reduce_check(t._shape, t._dtype, dim, index._shape, index._dtype, source._shape,
                       source._dtype, reduce, include_self)
    return t._shape, t._dtype


def index_reduce_(t, dim, index, source, reduce, include_self=True):
    index_reduce(t, dim, index, source, reduce, include_self)
    assert_no_internal_overlap_meta(t)


def _vec_str(v):
    return " ".join(str(x) for x in v)


def index_copy_check(shape, dtype, dim, ishape, idtype, sshape, sdtype):
    d = wrap_dim(dim, len(shape))
    if len(ishape) >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {len(ishape)})")
    n = numel(ishape)
    if not sshape and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {n})")
    if len(sshape) != len(shape) and sshape and shape:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({len(sshape)}), "
                         f"destination dimensionality ({len(shape)})")
    if idtype is not LONG:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {idtype._short}")
    if dtype is not sdtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got "
                           f"(self) {dtype._short} and (source) {sdtype._short}")
    a = list(shape)
    if a:
        del a[d]
    b = list(sshape)
    if b:
        del b[d]
    if a != b:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {_vec_str(a)} at dimension {d} and source "
                           f"slice shape: {_vec_str(b)} at dimension 0.")
    if sshape and n != sshape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim)"
                         f" ({sshape[d]})")
    return d


def index_copy(t, dim, index, source):
    index_copy_check(t._shape, t._dtype, dim, index._shape, index._dtype, source._shape,
                     source._dtype)
    return t._shape, t._dtype


def index_copy_(t, dim, index, source):
    assert_no_internal_overlap_meta(t)
    index_copy(t, dim, index, source)


EXPANDED_FILL = ("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor "
                 "before performing this operation. This also applies to advanced indexing e.g. "
                 "tensor[mask] = scalar")


def index_fill_value(value):
    """index_fill_.int_Tensor: the 0-d value tensor as a number (or the number given)."""
    if isinstance(value, TensorImpl):
        if value._shape:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {len(value._shape)} dimension(s).")
        return None if value._device.type == "meta" else value.item()
    return value


def index_fill_check(shape, dtype, dim, ishape, idtype, value, expanded):
    if idtype is not LONG:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if expanded:
        warnings.warn(EXPANDED_FILL, UserWarning, stacklevel=5)
    if dtype.category != _dt.COMPLEX and isinstance(value, complex):
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not "
                           "supported")
    d = wrap_dim(dim, len(shape) if shape else 1)
    if len(ishape) > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if value is not None:
        check_scalar(value, dtype)
    return d


def index_fill(t, dim, index, value):
    v = index_fill_value(value)
    index_fill_check(t._shape, t._dtype, dim, index._shape, index._dtype, v, False)
    return t._shape, t._dtype, preserve_strides(t._shape, t.stride())


def index_fill_(t, dim, index, value):
    v = index_fill_value(value)
    index_fill_check(t._shape, t._dtype, dim, index._shape, index._dtype, v,
                     internal_overlap(t._shape, t.stride()))


# ---- masked ops, nonzero, take, put ------------------------------------------------------------
def masked_select(t, mask):
    if mask._dtype is not BOOL:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    infer_size(mask._shape, t._shape)
    raise NotImplementedError("aten::masked_select: attempted to run this operator with Meta "
                              "tensors, but there was no fake impl or Meta kernel registered.")


def masked_scatter_check(dtype, mdtype, sdtype):
    if dtype is not sdtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{dtype._short} and {sdtype._short}")
    if mdtype is not BOOL:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mdtype._short}")


def masked_scatter(t, mask, source):
    shape = infer_size(mask._shape, t._shape)
    masked_scatter_check(t._dtype, mask._dtype, source._dtype)
    return shape, t._dtype


def masked_scatter_inplace_check(shape, strides, dtype, mshape, mdtype, sdtype, device="cpu"):
    if internal_overlap(shape, strides):
        raise RuntimeError(OVERLAP_INTERNAL)
    masked_scatter_check(dtype, mdtype, sdtype)
    from ember.kernels.meta.views import expand_geom, type_str
    if tuple(mshape) != tuple(shape):
        expand_geom(tuple(mshape), contiguous_strides(mshape), shape,
                    lambda: type_str(mdtype._short, "cpu"))


def masked_scatter_(t, mask, source):
    masked_scatter_inplace_check(t._shape, t.stride(), t._dtype, mask._shape, mask._dtype,
                                 source._dtype)


def nonzero(t):
    raise NotImplementedError(NONZERO_META)


def nonzero_static(t, size, fill_value=-1):
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    return (size, len(t._shape)), LONG


def take_check(shape, ishape, idtype):
    if idtype is not LONG:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {idtype._short}")
    if numel(shape) == 0 and numel(ishape) != 0:
        raise IndexError("take(): tried to take from an empty tensor")


def take(t, index):
    take_check(t._shape, index._shape, index._dtype)
    return index._shape, t._dtype


def take_along_dim_check(shape, ishape, idtype, dim):
    """(self broadcast shape, index broadcast shape, dim) of take_along_dim with a dim."""
    if len(shape) != len(ishape):
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {len(shape)} dimensions for input, and "
                           f"{len(ishape)} dimensions for indices")
    if idtype is not LONG:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{idtype._short}")
    d = wrap_dim(dim, len(shape))
    if not shape:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    s = list(shape)
    s[d] = ishape[d]
    ib = infer_size(tuple(s), tuple(ishape))
    i2 = list(ishape)
    i2[d] = shape[d]
    sb = infer_size(tuple(i2), tuple(shape))
    return sb, ib, d


def take_along_dim(t, indices, dim=None):
    if dim is None:
        from ember.kernels.meta.views import VIEW_ERROR, view_strides
        n = numel(t._shape)
        if view_strides(t._shape, t.stride(), (n,)) is None:
            raise RuntimeError(VIEW_ERROR)
        m = numel(indices._shape)
        if view_strides(indices._shape, indices.stride(), (m,)) is None:
            raise RuntimeError(VIEW_ERROR)
        gather_check((n,), 0, (m,), indices._dtype)
        return (m,), t._dtype
    sb, ib, d = take_along_dim_check(t._shape, indices._shape, indices._dtype, dim)
    gather_check(sb, d, ib, indices._dtype)
    return ib, t._dtype


def put_check(shape, dtype, ishape, idtype, sshape, sdtype):
    if idtype is not LONG:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {idtype._short}")
    if dtype is not sdtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {dtype._short} and source.dtype = {sdtype._short}")
    if numel(sshape) != numel(ishape):
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, "
                         f"but got source.numel() = {numel(sshape)}, index.numel() = "
                         f"{numel(ishape)}")
    if numel(shape) == 0 and numel(ishape) != 0:
        raise IndexError("put_(): Tried to put elements into an empty tensor")


def put_(t, index, source, accumulate=False):
    put_check(t._shape, t._dtype, index._shape, index._dtype, source._shape, source._dtype)
    assert_no_internal_overlap_meta(t)


def put(t, index, source, accumulate=False):
    put_check(t._shape, t._dtype, index._shape, index._dtype, source._shape, source._dtype)
    return t._shape, t._dtype, preserve_strides(t._shape, t.stride())
