"""Meta functions of reductions, scans and sorts (ATen's ReduceOps, Sorting, SoftMax).

Each returns (shape, dtype), or a tuple of those for several results. The dtype rules and the
argument checks live here and are shared with the CPU kernels (ember/kernels/cpu/reduction.py),
so that both backends raise PyTorch's errors the same way.
"""
from ember.core import dtype as _dt
from ember.core.errors import wrap_dim

BOOL, INT, FLOAT, COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
int64, bool_, uint8 = _dt.int64, _dt.bool_, _dt.uint8


# ---- dims and shapes ---------------------------------------------------------------------------
def dims_of(dim, ndim):
    """Wrapped dims of an `int[1]?` argument in the given order; None or () mean every dim."""
    if not dim:
        return tuple(range(ndim))
    out = []
    for d in dim:
        w = wrap_dim(d, ndim)
        if w in out:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        out.append(w)
    return tuple(out) if ndim else ()


def dims_exact(dim, ndim):
    """Like dims_of, but () reduces nothing (all.dims / any.dims)."""
    if dim is None:
        return tuple(range(ndim))
    return dims_of(dim, ndim) if dim else ()


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def one_dim_shape(shape, dim, keepdim):
    """(wrapped dim, result shape) of a single-dim reduction; 0-d stays 0-d."""
    d = wrap_dim(dim, len(shape))
    if not shape:
        return d, ()
    return d, reduced_shape(shape, (d,), keepdim)


# ---- dtype rules ---------------------------------------------------------------------------------
def _not_impl(kernel, d):
    return NotImplementedError(f'"{kernel}" not implemented for \'{d._short}\'')


def sum_dtype(d, dtype):
    """sum/prod/cumsum: the requested dtype, else integers and bool widen to int64."""
    if dtype is not None:
        return dtype
    return int64 if d.category <= INT else d


def mean_dtype(d, dtype, name="mean"):
    if dtype is not None:
        if dtype.category < FLOAT:
            raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be either "
                               f"a floating point or complex dtype. Got: {dtype._short}")
        return dtype
    if d.category < FLOAT:
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {d._short}")
    return d


def nansum_dtype(d, dtype):
    if d.category == COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return sum_dtype(d, dtype)


def nanmean_dtype(d, dtype):
    if d.category < FLOAT:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but "
                           f"got {d._short}")
    out = mean_dtype(d, dtype, "nanmean")
    if d.category == COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return out


def minmax_check(d, kernel):
    if d.category == COMPLEX:
        raise _not_impl(kernel, d)


def dim_minmax_check(d, name):
    if d.category == COMPLEX:
        raise RuntimeError(f"{name}(): does not support complex input")


def arg_check(d, name):
    if d.category == COMPLEX:
        raise RuntimeError(f"{name}(): does not support complex input")
    if d is bool_:
        raise RuntimeError(f"{name}(): does not support bool input")


def var_dtype(d, name="std and var"):
    if d.category < FLOAT:
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    return d.to_real()


def norm_dtypes(d, dtype):
    """(compute dtype, result dtype) of linalg.vector_norm with optional dtype=."""
    if d.category < FLOAT:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {d._short}")
    if dtype is None:
        return d, d.to_real()
    if d.category == COMPLEX and dtype.category != COMPLEX:
        raise RuntimeError("linalg.vector_norm: dtype should be complex for complex inputs, but got "
                           f"{dtype._short}")
    if d.category != COMPLEX and dtype.category == COMPLEX:
        raise RuntimeError("linalg.vector_norm: dtype should be real for real inputs, but got "
                           f"{dtype._short}")
    if _dt.promote_types(d, dtype) is not dtype:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({d._short}) should be "
                           f"convertible without narrowing to the specified dtype ({dtype._short})")
    return dtype, dtype.to_real()


def fmt_scalar(p):
    """A Scalar as PyTorch prints it in messages: 2, -1, 0.5, inf."""
    if isinstance(p, float):
        if p != p:
            return "nan"
        if p in (float("inf"), float("-inf")):
            return "inf" if p > 0 else "-inf"
        if p == int(p):
            return str(int(p))
    return str(p)


def check_ord(ord):
    if isinstance(ord, complex):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    return float(ord)


def norm_empty_check(shape, dims, ord, full, raw=None):
    """Norms without identity (inf, negative orders) on empty input."""
    if ord >= 0 and ord != float("inf"):
        return
    if full:
        n = 1
        for s in shape:
            n *= s
        if n == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {fmt_scalar(ord)} norm on an "
                               "empty tensor because the operation does not have an identity")
        return
    for d, r in zip(dims, raw or dims):
        if shape and shape[d] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {fmt_scalar(ord)} norm on the "
                               f"dimension {r}because this dimension is empty and the operation does "
                               "not have an identity")


def float_out(d):
    """logsumexp: integers compute in the default float dtype."""
    return d if d.category >= FLOAT else _dt.defaults.float


def softmax_dtype(shape, d, dtype, dim, log):
    """Result dtype of softmax/log_softmax; PyTorch names the kernel after the dim's position."""
    out = d if dtype is None else dtype
    if out.category != FLOAT:
        n = 1
        for s in shape:
            n *= s
        if n:
            last = not shape or wrap_dim(dim, len(shape)) == len(shape) - 1
            kernel = ("log_softmax" if log else "softmax") + ("_lastdim" if last else "") + "_kernel_impl"
            raise _not_impl(kernel, out)
    return out


def cum_dtype(d, dtype, kernel, numel=1):
    out = sum_dtype(d, dtype)
    if out is bool_ and numel:
        raise _not_impl(kernel, out)
    return out


def logcumsumexp_check(d):
    if d.category < FLOAT:
        raise _not_impl("logcumsumexp_out_cpu", d)


def all_dtype(d):
    return uint8 if d is uint8 else bool_


def sort_check(d):
    if d.category == COMPLEX:
        raise RuntimeError(" Sort does not support complex dtypes on CPU")


def topk_check(d):
    if d.category == COMPLEX:
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    if d is bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")


def select_check(d, kernel):
    """kthvalue / median: neither bool nor complex."""
    if d is bool_ or d.category == COMPLEX:
        raise _not_impl(kernel, d)


def full_nonempty(shape, name):
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")


def dim_nonempty(shape, dims, name, sep="():"):
    for d in dims:
        if shape and shape[d] == 0:
            raise IndexError(f"{name}{sep} Expected reduction dim {d} to have non-zero size.")


def correction_value(unbiased, correction):
    if correction is None:
        return 1.0 if unbiased else 0.0
    if isinstance(correction, complex):
        raise RuntimeError("value cannot be converted to type double without overflow")
    return float(correction)


# ---- meta functions -----------------------------------------------------------------------------
def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def sum(t, dtype=None):
    return (), sum_dtype(t._dtype, dtype)


def sum_dim(t, dim, keepdim=False, dtype=None):
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), keepdim), sum_dtype(t._dtype, dtype)


def nansum(t, dim=None, keepdim=False, dtype=None):
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), keepdim), nansum_dtype(t._dtype, dtype)


def mean(t, dtype=None):
    return (), mean_dtype(t._dtype, dtype)


def mean_dim(t, dim, keepdim=False, dtype=None):
    d = mean_dtype(t._dtype, dtype)
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), keepdim), d


def nanmean(t, dim=None, keepdim=False, dtype=None):
    d = nanmean_dtype(t._dtype, dtype)
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), keepdim), d


def prod(t, dtype=None):
    return (), sum_dtype(t._dtype, dtype)


def prod_dim(t, dim, keepdim=False, dtype=None):
    return one_dim_shape(t._shape, dim, keepdim)[1], sum_dtype(t._dtype, dtype)


def _full_minmax(t, name, kernel):
    full_nonempty(t._shape, name)
    minmax_check(t._dtype, kernel)
    return (), t._dtype


def max(t):
    return _full_minmax(t, "max", "max_all")


def min(t):
    return _full_minmax(t, "min", "min_all")


def _dim_minmax(t, dim, keepdim, name):
    d, shape = one_dim_shape(t._shape, dim, keepdim)
    dim_nonempty(t._shape, (d,), name)
    dim_minmax_check(t._dtype, name)
    return (shape, t._dtype), (shape, int64)


def max_dim(t, dim, keepdim=False):
    return _dim_minmax(t, dim, keepdim, "max")


def min_dim(t, dim, keepdim=False):
    return _dim_minmax(t, dim, keepdim, "min")


def _other(t, other):
    from ember.kernels.meta.pointwise import binary
    shape, d = binary(t, other)
    if d.category == COMPLEX:
        raise RuntimeError("maximum not implemented for complex tensors.")
    return shape, d


def max_other(t, other):
    return _other(t, other)


def min_other(t, other):
    try:
        return _other(t, other)
    except RuntimeError as e:
        if "maximum" in str(e):
            raise RuntimeError("minimum not implemented for complex tensors.") from None
        raise


def _amaxmin(t, dim, keepdim, name, kernel):
    s = t._shape
    amaxmin_empty_check(s, dim, name)
    dims = dims_of(dim, len(s))
    if _numel(s):
        minmax_check(t._dtype, kernel)
    return reduced_shape(s, dims, keepdim), t._dtype


def amaxmin_empty_check(s, dim, name):
    """Empty input: PyTorch checks the reduced sizes before duplicate dims."""
    if not dim:
        full_nonempty(s, name)
    else:
        for d in dim:  # PyTorch names the dim as given
            if s and s[wrap_dim(d, len(s))] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def amax(t, dim=(), keepdim=False):
    return _amaxmin(t, dim, keepdim, "amax", "max_values_cpu")


def amin(t, dim=(), keepdim=False):
    return _amaxmin(t, dim, keepdim, "amin", "min_values_cpu")


def aminmax_shape(shape, d, dim, keepdim):
    if dim is None:
        if not _numel(shape):
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        out = tuple(1 for _ in shape) if keepdim else ()
    else:
        w, out = one_dim_shape(shape, dim, keepdim)
        dim_nonempty(shape, (w,), "aminmax", ":")
        if not shape and d.category == COMPLEX:  # PyTorch's 0-d path names the op plainly
            raise RuntimeError(f"aminmax not implemented for {d._short}")
    minmax_check(d, "aminmax_cpu")
    return out


def aminmax(t, dim=None, keepdim=False):
    shape = aminmax_shape(t._shape, t._dtype, dim, keepdim)
    return (shape, t._dtype), (shape, t._dtype)


def arg_shape(shape, d, dim, keepdim, name):
    arg_check(d, name)
    if dim is None:
        n = 1
        for s in shape:
            n *= s
        if n == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return tuple(1 for _ in shape) if keepdim else ()
    w, out = one_dim_shape(shape, dim, keepdim)
    dim_nonempty(shape, (w,), name)
    return out


def argmax(t, dim=None, keepdim=False):
    return arg_shape(t._shape, t._dtype, dim, keepdim, "argmax"), int64


def argmin(t, dim=None, keepdim=False):
    return arg_shape(t._shape, t._dtype, dim, keepdim, "argmin"), int64


def _var_spec(t, dim, keepdim, name):
    d = var_dtype(t._dtype, name)
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), keepdim), d


def var(t, unbiased=True):
    return _var_spec(t, None, False, "std and var")


def var_dim(t, dim, unbiased=True, keepdim=False):
    return _var_spec(t, dim, keepdim, "std and var")


def var_correction(t, dim=None, correction=None, keepdim=False):
    return _var_spec(t, dim, keepdim, "std and var")


std, std_dim, std_correction = var, var_dim, var_correction


def _vm_spec(t, dim, keepdim, name):
    shape, d = _var_spec(t, dim, keepdim, name)
    return (shape, d), (shape, t._dtype)


def var_mean(t, unbiased=True):
    return _vm_spec(t, None, False, "var_mean")


def var_mean_dim(t, dim, unbiased=True, keepdim=False):
    return _vm_spec(t, dim, keepdim, "var_mean")


def var_mean_correction(t, dim=None, correction=None, keepdim=False):
    return _vm_spec(t, dim, keepdim, "var_mean")


def std_mean(t, unbiased=True):
    return _vm_spec(t, None, False, "std_mean")


def std_mean_dim(t, dim, unbiased=True, keepdim=False):
    return _vm_spec(t, dim, keepdim, "std_mean")


def std_mean_correction(t, dim=None, correction=None, keepdim=False):
    return _vm_spec(t, dim, keepdim, "std_mean")


def vector_norm_spec(shape, d, ord, dim, keepdim, dtype):
    ord = check_ord(ord)
    _, out = norm_dtypes(d, dtype)
    norm_empty_check(shape, wrapped(dim, len(shape)), ord, not dim, dim)
    return reduced_shape(shape, dims_of(dim, len(shape)), keepdim), out


def wrapped(dim, ndim):
    """dims wrapped in order, duplicates kept (checks that PyTorch runs before the duplicate one)."""
    return tuple(wrap_dim(d, ndim) for d in dim) if dim else tuple(range(ndim))


def vector_norm(t, ord=2, dim=None, keepdim=False, dtype=None):
    return vector_norm_spec(t._shape, t._dtype, ord, dim, keepdim, dtype)


def aten_norm_check(d):
    if d.category < FLOAT:
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {d._short} instead.")


def aten_norm_dtype_check(dtype):
    if dtype.category < FLOAT:
        raise RuntimeError("norm(): the desired output dtype should be either floating point or "
                           f"complex. Got {dtype._short} instead.")


def norm(t, p=2):
    aten_norm_check(t._dtype)
    return vector_norm(t, p, None, False, None)


def norm_dim(t, p, dim, keepdim=False):
    aten_norm_check(t._dtype)
    return vector_norm(t, 2 if p is None else p, dim, keepdim, None)


def norm_dim_dtype(t, p, dim, keepdim, dtype):
    aten_norm_dtype_check(dtype)
    return vector_norm(t, 2 if p is None else p, dim, keepdim, dtype)


def norm_dtype(t, p, dtype):
    aten_norm_dtype_check(dtype)
    return vector_norm(t, 2 if p is None else p, None, False, dtype)


def logsumexp(t, dim, keepdim=False):
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), keepdim), float_out(t._dtype)


def softmax(t, dim, dtype=None):
    wrap_dim(dim, len(t._shape))
    return t._shape, softmax_dtype(t._shape, t._dtype, dtype, dim, False)


def log_softmax(t, dim, dtype=None):
    wrap_dim(dim, len(t._shape))
    return t._shape, softmax_dtype(t._shape, t._dtype, dtype, dim, True)


def half_to_float_check(half_to_float):
    if half_to_float:
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")


def _softmax(t, dim, half_to_float):
    half_to_float_check(half_to_float)
    return softmax(t, dim)


def _log_softmax(t, dim, half_to_float):
    half_to_float_check(half_to_float)
    return log_softmax(t, dim)


def cumsum(t, dim, dtype=None):
    wrap_dim(dim, len(t._shape))
    return t._shape, cum_dtype(t._dtype, dtype, "cumsum_out_cpu", _numel(t._shape))


def cumprod(t, dim, dtype=None):
    wrap_dim(dim, len(t._shape))
    return t._shape, cum_dtype(t._dtype, dtype, "cumprod_out_cpu", _numel(t._shape))


def _cumext(t, dim, kernel):
    wrap_dim(dim, len(t._shape))
    if _numel(t._shape) and t._shape:  # a 0-d input is returned as is, whatever its dtype
        minmax_check(t._dtype, kernel)
    return (t._shape, t._dtype), (t._shape, int64)


def cummax(t, dim):
    return _cumext(t, dim, "cummax_cpu")


def cummin(t, dim):
    return _cumext(t, dim, "cummin_cpu")


def logcumsumexp(t, dim):
    wrap_dim(dim, len(t._shape))
    logcumsumexp_check(t._dtype)
    return t._shape, t._dtype


def all(t):
    return (), all_dtype(t._dtype)


def all_dim(t, dim, keepdim=False):
    return one_dim_shape(t._shape, dim, keepdim)[1], all_dtype(t._dtype)


def all_dims(t, dim=None, keepdim=False):
    s = t._shape
    return reduced_shape(s, dims_exact(dim, len(s)), keepdim), all_dtype(t._dtype)


any, any_dim, any_dims = all, all_dim, all_dims


def count_nonzero(t, dim=None):
    if dim is None:
        return (), int64
    return one_dim_shape(t._shape, dim, False)[1], int64


def count_nonzero_dims(t, dim):
    s = t._shape
    return reduced_shape(s, dims_of(dim, len(s)), False), int64


def topk_shape(shape, d, k, dim):
    w = wrap_dim(dim, len(shape))
    size = shape[w] if shape else 1
    if k < 0 or k > size:
        raise RuntimeError("selected index k out of range")
    topk_check(d)
    if not shape:
        return ()
    return shape[:w] + (k,) + shape[w + 1:]


def topk(t, k, dim=-1, largest=True, sorted=True):
    shape = topk_shape(t._shape, t._dtype, k, dim)
    return (shape, t._dtype), (shape, int64)


def sort(t, dim=-1, descending=False):
    sort_check(t._dtype)
    wrap_dim(dim, len(t._shape))
    return (t._shape, t._dtype), (t._shape, int64)


def sort_stable(t, stable=None, dim=-1, descending=False):
    return sort(t, dim, descending)


def argsort(t, dim=-1, descending=False):
    return sort(t, dim, descending)[1]


def argsort_stable(t, stable, dim=-1, descending=False):
    return sort(t, dim, descending)[1]


def msort(t):
    return sort(t, 0)[0]


def kth_shape(shape, d, k, dim, keepdim):
    w, out = one_dim_shape(shape, dim, keepdim)
    dim_nonempty(shape, (w,), "kthvalue")
    size = shape[w] if shape else 1
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {w}")
    if shape:
        select_check(d, "kthvalue_cpu")
    return out


def kthvalue(t, k, dim=-1, keepdim=False):
    shape = kth_shape(t._shape, t._dtype, k, dim, keepdim)
    return (shape, t._dtype), (shape, int64)


def median(t):
    if _numel(t._shape):
        select_check(t._dtype, "median_cpu")
    return (), t._dtype


nanmedian = median


def median_dim_shape(shape, d, dim, keepdim, name="median"):
    w, out = one_dim_shape(shape, dim, keepdim)
    dim_nonempty(shape, (w,), name)
    select_check(d, "median_out")
    return out


def median_dim(t, dim, keepdim=False):
    shape = median_dim_shape(t._shape, t._dtype, dim, keepdim)
    return (shape, t._dtype), (shape, int64)


def nanmedian_dim(t, dim, keepdim=False):
    shape = median_dim_shape(t._shape, t._dtype, dim, keepdim)
    return (shape, t._dtype), (shape, int64)


def mode_shape(shape, d, dim, keepdim):
    w, out = one_dim_shape(shape, dim, keepdim)
    dim_nonempty(shape, (w,), "mode")
    if _numel(shape) and shape:
        minmax_check(d, "mode_cpu")
    return out


def mode(t, dim=-1, keepdim=False):
    shape = mode_shape(t._shape, t._dtype, dim, keepdim)
    return (shape, t._dtype), (shape, int64)
