"""torch/masked/_ops.py for strided tensors, written with ember ops.

The masked-out elements of `input` are replaced by the reduction's identity (0 for sum, 1 for prod,
-inf for amax/softmax, ...) and the ordinary op runs on the result, as torch.masked does; gradients
flow through ember.where. Sparse inputs and MaskedTensor are not supported here (NotImplementedError).
The public op namespace is reached late, through `import ember`.
"""
import builtins
import math

import ember
from ember.core import dtype as _dt
from ember.core.layout import strided

_SMALL_INTS = (_dt.uint8, _dt.bool_, _dt.int8, _dt.int16, _dt.int32)


def _strided_only(name, t):
    if t.layout != strided:
        raise NotImplementedError(f"ember.masked.{name}: only strided tensors are supported, got {t.layout}")


def _reduction_identity(op_name, input, *args):
    dtype = input.dtype
    device = input.device
    op_name = op_name.rsplit(".", 1)[-1]
    if op_name in {"sum", "cumsum"}:
        return ember.tensor(0, dtype=dtype, device=device)
    elif op_name in {"prod", "cumprod"}:
        return ember.tensor(1, dtype=dtype, device=device)
    elif op_name in {"amax", "argmax", "logaddexp"}:
        if ember.is_floating_point(input):
            return ember.tensor(-math.inf, dtype=dtype, device=device)
        elif input.dtype.is_signed or dtype == _dt.uint8:
            return ember.tensor(ember.iinfo(dtype).min, dtype=dtype, device=device)
    elif op_name == "logsumexp":
        if ember.is_floating_point(input):
            return ember.tensor(-math.inf, dtype=dtype, device=device)
        elif ember.is_complex(input):
            return ember.tensor(-math.inf + 0j, dtype=dtype, device=device)
        elif input.dtype.is_signed or dtype == _dt.uint8:
            return ember.tensor(ember.iinfo(dtype).min, dtype=dtype, device=device)
    elif op_name in {"amin", "argmin"}:
        if ember.is_floating_point(input):
            return ember.tensor(math.inf, dtype=dtype, device=device)
        elif input.dtype.is_signed or dtype == _dt.uint8:
            return ember.tensor(ember.iinfo(dtype).max, dtype=dtype, device=device)
    elif op_name == "mean":
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == float("-inf"):
            if not ember.is_floating_point(input):
                raise AssertionError(f"input must be floating point, got {input.dtype}")
            return ember.tensor(math.inf, dtype=dtype, device=device)
        return ember.tensor(0, dtype=dtype, device=device)
    elif op_name == "median":
        dtype = input.dtype if ember.is_floating_point(input) else _dt.float32
        return ember.tensor(math.nan, dtype=dtype, device=device)
    elif op_name in {"var", "std"}:
        return None
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _canonical_dim(dim, ndim):
    dims = []
    if dim == ():
        dim = None
    if dim is None:
        return tuple(range(ndim))
    ndim = builtins.max(ndim, 1)
    dim_ = (dim,) if isinstance(dim, int) else dim
    for d in dim_:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _any(input, dim, keepdim):
    r = input
    for d in reversed(dim):
        r = r.any(dim=d, keepdim=keepdim)
    return r


def _input_mask(input, *args, **kwargs):
    if input.layout != strided:
        _strided_only("_input_mask", input)
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)")
        _strided_only("_input_mask", mask)
        mask = ember.broadcast_to(mask.clone(), input.shape).to(dtype=_dt.bool_)
    if mask.layout != strided:
        mask = mask.to_dense()
    return mask.to(dtype=_dt.bool_)


_REDUCTIONS = {"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var",
               "std", "logsumexp"}
_NORMALIZATIONS = {"softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"}


def _output_mask(op, input, *args, **kwargs):
    if callable(op):
        if op.__name__ in _REDUCTIONS:
            if op.__name__ == "norm" and args:
                args = args[1:]
            dim = args[0] if args else kwargs.get("dim")
            outmask = _input_mask(input, *args, **kwargs)
            keepdim = kwargs.get("keepdim", False)
            return _any(outmask, _canonical_dim(dim, input.ndim), bool(keepdim))
        elif op.__name__ in _NORMALIZATIONS:
            return _input_mask(input, *args, **kwargs)
        raise ValueError(
            f"_output_mask expected masked operation (got callable {op.__module__}.{op.__name__})")
    raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} object)")


def _combine_input_and_mask(op, input, mask, *args):
    _strided_only(op.__name__, input)
    if mask is None:
        return input
    canonical_mask = _input_mask(input, mask=mask)
    fill_value = _reduction_identity(op.__name__, input, *args)
    return ember.where(canonical_mask, input, fill_value)


def _sum_dtype(input, dtype):
    if dtype is None:
        dtype = input.dtype
        if input.dtype in _SMALL_INTS:
            dtype = _dt.int64
    return dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = _sum_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(sum, input, mask)
    return ember.sum(mask_input, dim_, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = _sum_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask(prod, input, mask).to(dtype=dtype)
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input, dim, *, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(sum, input, mask)
    return ember.cumsum(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(prod, input, mask)
    return ember.cumprod(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def _masked_pick(name, reduce_fn, canonical_dim):
    """amax / amin / argmax / argmin: the masked-out elements take the reduction's identity, then
    the plain reduction (argmax/argmin keep dim=None's flattening: no canonical dims)."""
    def fn(input, dim=None, *, keepdim=False, dtype=None, mask=None):
        mask_input = _combine_input_and_mask(fn, input, mask)
        d = _canonical_dim(dim, mask_input.ndim) if canonical_dim else dim
        return reduce_fn(mask_input, d, bool(keepdim)).to(dtype=input.dtype if dtype is None else dtype)
    fn.__name__ = fn.__qualname__ = name
    return fn


amax = _masked_pick("amax", lambda x, d, k: ember.amax(x, d, k), True)
amin = _masked_pick("amin", lambda x, d, k: ember.amin(x, d, k), True)
argmax = _masked_pick("argmax", lambda x, d, k: ember.argmax(x, d, k), False)
argmin = _masked_pick("argmin", lambda x, d, k: ember.argmin(x, d, k), False)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype_source = "Optional"
    if dtype is None:
        dtype = input.dtype
        dtype_source = "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {dtype_source} dtype must be either "
                         f"a floating point or complex dtype. Got: torch.{dtype.name}")
    _strided_only("mean", input)
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=_dt.int64, device=input.device), dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask=mask)
        count = inmask.sum(dim=dim, keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    is_float = ember.is_floating_point(input)
    if not is_float:
        input = input.to(dtype=_dt.float32)
    mask_input = _combine_input_and_mask(median, input, mask)
    output = ember.nanmedian(mask_input, dim_, keepdim).values
    if is_float:
        return output
    elif not ember.isnan(output).any():
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(logsumexp, input, mask)
    return ember.logsumexp(mask_input, dim_, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    if dtype is None:
        dtype = input.dtype
    if input.layout == strided and other.layout == strided:
        mask_input = _combine_input_and_mask(logaddexp, input, input_mask)
        mask_other = _combine_input_and_mask(logaddexp, other, other_mask)
        return ember.logaddexp(mask_input, mask_other).to(dtype=dtype)
    raise ValueError(f"masked logaddexp expects strided tensors (got {input.layout} tensor for input, "
                     f"{other.layout} for other)")


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(norm, input, mask, ord)
    dim_ = _canonical_dim(dim, input.ndim)
    return ember.linalg.vector_norm(mask_input, ord, dim_, bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, *, correction_opt, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _dt.float32
    compute_dtype = dtype
    if not (compute_dtype.is_floating_point or compute_dtype.is_complex):
        compute_dtype = _dt.float32
    _strided_only("std/var", input)
    if mask is None:
        count = sum(ember.ones(input.shape, dtype=_dt.int64, device=input.device), dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
    else:
        inmask = _input_mask(input, mask=mask)
        count = inmask.sum(dim=dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    sample_mean = ember.divide(sample_total, count)
    x = ember.subtract(input, sample_mean)
    if mask is None:
        total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype)
    else:
        total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real_dtype = compute_dtype
        if compute_dtype.is_complex:
            real_dtype = _dt.float64 if compute_dtype == _dt.complex128 else _dt.float32
        count = count.to(real_dtype)
        count = ember.subtract(count, correction)
        count = ember.maximum(count, count.new_zeros([]))
    output = ember.divide(total, count).to(dtype=dtype)
    if take_sqrt:
        output = ember.sqrt(output)
    return output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return _std_var(input=input, dim=dim, unbiased=unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    return _std_var(input=input, dim=dim, unbiased=unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)


def _softmax_like(fn, fill_from, input, dim, dtype, mask):
    """softmax/log_softmax/softmin over the masked-out elements filled with fill_from's identity."""
    if dtype is None:
        dtype = input.dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return fn(_combine_input_and_mask(fill_from, input, mask), dim_, dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    return _softmax_like(ember.nn.functional.softmax, amax, input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    return _softmax_like(ember.nn.functional.log_softmax, amax, input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    return _softmax_like(ember.nn.functional.softmin, amin, input, dim, dtype, mask)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    if dtype is None:
        dtype = input.dtype
    mask_input = _combine_input_and_mask(sum, input, mask)
    nrm_ = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = ember.maximum(nrm_, nrm_.new_full([], eps))
    return ember.divide(mask_input, denom)
