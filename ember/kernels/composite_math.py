"""Math and factory operators ATen implements as compositions (CompositeImplicitAutograd kernels,
declared in ember/ops/native_functions/math.yaml): diff, cov/corrcoef, the spectral windows,
tril/triu_indices, cartesian_prod, combinations, block_diag, trapezoid/trapz/cumulative_trapezoid,
vander, dist, renorm, logaddexp(2), sinc, heaviside and ldexp. Each kernel takes its schema's
arguments positionally and is composed of ember ops, so autograd and every device come with them;
values, dtypes and error messages follow ATen's kernels."""
import math
import warnings

import ember
from ember._generated import ops as _ops
from ember.core.dtype import result_type_of
from ember.core.tensor_impl import TensorImpl
from ember.dispatch.resolve import python_signature
from ember.core.errors import fmt_shape, wrap_dim
from ember.kernels.composite import store_out
from ember.kernels.meta.pointwise import part
from ember.kernels.meta.strides import tensor_iterator_strides


# ---- argument checks the generated bindings leave to the kernel (torch's parser makes them) --------
def _overloads(name):
    return [op.schema for op in vars(_ops).values() if getattr(op, "name", None) == name
            and not op.schema.is_out]


def _tn(a):
    return "Tensor" if isinstance(a, TensorImpl) else type(a).__name__


def _invalid(name, args, **kwargs):
    """torch's "invalid combination of arguments" TypeError for `name` called with `args`."""
    got = ", ".join([_tn(a) for a in args] + [f"{k}={_tn(v)}" for k, v in kwargs.items()])
    sigs = "\n".join(" * " + python_signature(s) for s in _overloads(name))
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected "
                    f"one of:\n{sigs}")


def _tensor_arg(fn, name, pos, value):
    if not isinstance(value, TensorImpl):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(value).__name__}")


# ---- diff -----------------------------------------------------------------------------------------
def _diff_check_shape(input, other, dim):
    if other is None:
        return
    d = wrap_dim(dim, input.dim())
    if other.dim() != input.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.dim()):
        if i != d and other.shape[i] != input.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input except along "
                f"the differencing dimension; input.size({i}) = {input.shape[i]}, but got "
                f"tensor.size({i}) = {other.shape[i]}")


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along dim, after concatenating prepend/append (logical_xor for bool)."""
    if input.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    _diff_check_shape(input, prepend, dim)
    _diff_check_shape(input, append, dim)
    if n == 0:
        return input.clone()
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, input, append) if t is not None]
        input = ember.cat(parts, dim)
    size = input.size(dim)
    out_len = size - 1
    result = input
    for _ in range(min(n, size)):
        hi, lo = result.narrow(dim, 1, out_len), result.narrow(dim, 0, out_len)
        result = ember.logical_xor(hi, lo) if result.dtype is ember.bool else hi - lo
        out_len -= 1
    return result


# ---- cov / corrcoef -------------------------------------------------------------------------------
def _check_weights(name, w, num_observations, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.dim()} dimensions")
    ok = (not w.dtype.is_floating_point and not w.dtype.is_complex and w.dtype is not ember.bool) if integral \
        else w.dtype.is_floating_point
    if not ok:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{w.dtype._short} dtype")
    if w.numel() != num_observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {w.numel()} != {num_observations}")
    if num_observations and not bool((w >= 0).all()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, correction=1, fweights=None, aweights=None):
    """Covariance of the variables in the rows of input (observations in columns), ATen's formula."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype is ember.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    num_observations = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, num_observations, True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, num_observations, False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = ember.tensor(num_observations, dtype=ember.long, device=x.device)
    else:
        w_sum = w.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if bool(norm_factor <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                      "of observations.", UserWarning, stacklevel=2)
        norm_factor = ember.zeros_like(norm_factor)
    x = x - avg.unsqueeze(1)
    c = x.mm((x if w is None else x * w).t().conj())
    return ember.true_divide(c, norm_factor).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients: cov normalised by the standard deviations, clipped to [-1, 1]."""
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c  # nan for a zero/inf/nan variance, 1 otherwise
    d = c.diagonal()
    if d.dtype.is_complex:
        d = ember.view_as_real(d)[..., 0]
    stddev = d.sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c.dtype.is_complex:
        # clip the real and imaginary parts separately, as NumPy and ATen do
        return ember.view_as_complex(ember.view_as_real(c).clip(-1, 1).contiguous())
    return c.clip(-1, 1)


# ---- spectral windows -----------------------------------------------------------------------------
_CPP_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _window(name, body, window_length, periodic, extra, dtype, layout, device, pin_memory):
    """Shared frame of ATen's windows: its checks, empty / ones for lengths 0 / 1, one extra point
    when periodic."""
    if periodic.__class__ is not bool:  # the binding lets a number through where torch's parser does not
        _invalid(name, (window_length, periodic) + tuple(extra))
    if dtype is None:
        dtype = ember.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        dt = _CPP_TYPES.get(dtype.name, dtype._short)
        dev = "cpu" if device is None else str(device)
        lay = "Strided (default)" if layout is None else "Strided"
        pin = "true" if pin_memory else "false"
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={dt}, device={dev}, "
                           f"layout={lay}, requires_grad=false (default), pinned_memory={pin}, "
                           "memory_format=(nullopt))")
    n = window_length
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n == 0:
        return ember.empty(0, dtype=dtype, device=device)
    if n == 1:
        return ember.ones(1, dtype=dtype, device=device)
    m = n + 1 if periodic else n
    w = body(ember.arange(m, dtype=dtype, device=device), m, *extra)
    return w.narrow(0, 0, n) if periodic else w


def _hamming(k, m, alpha=0.54, beta=0.46):
    return (k * (math.pi * 2.0 / (m - 1))).cos() * -beta + alpha


def _bartlett(k, m):
    w = k * (2.0 / (m - 1))
    first_half = ((m - 1) >> 1) + 1
    return ember.cat([w.narrow(0, 0, first_half), 2 - w.narrow(0, first_half, m - first_half)])


def _blackman(k, m):
    w = k * (math.pi / (m - 1))
    return (w * 4).cos() * 0.08 - (w * 2).cos() * 0.5 + 0.42


def _kaiser(k, m, beta=12.0):
    # computed in ATen's opmath dtype (float32 for the reduced floats), so overflow matches
    dtype = k.dtype
    opmath = ember.float64 if dtype is ember.float64 else ember.float32
    k = k.to(opmath)
    alpha = (m - 1) / 2.0
    x = (1 - ((k - alpha) / alpha).square()).abs().sqrt() * beta
    beta_t = ember.full((), beta, dtype=opmath, device=k.device)
    return (ember.i0(x) / ember.i0(beta_t)).to(dtype)


def hann_window(window_length, dtype, layout, device, pin_memory):
    """0.5 - 0.5 cos(2 pi k / (N - 1))."""
    return hann_window_periodic(window_length, True, dtype, layout, device, pin_memory)


def hann_window_periodic(window_length, periodic, dtype, layout, device, pin_memory):
    return _window("hann_window", lambda k, m: _hamming(k, m, 0.5, 0.5), window_length, periodic, (),
                   dtype, layout, device, pin_memory)


def hamming_window(window_length, dtype, layout, device, pin_memory):
    """alpha - beta cos(2 pi k / (N - 1)), alpha = 0.54 and beta = 0.46 by default."""
    return _window("hamming_window", _hamming, window_length, True, (), dtype, layout, device, pin_memory)


def hamming_window_periodic(window_length, periodic, dtype, layout, device, pin_memory):
    return _window("hamming_window", _hamming, window_length, periodic, (), dtype, layout, device, pin_memory)


def hamming_window_periodic_alpha(window_length, periodic, alpha, dtype, layout, device, pin_memory):
    return _window("hamming_window", _hamming, window_length, periodic, (alpha,), dtype, layout, device,
                   pin_memory)


def hamming_window_periodic_alpha_beta(window_length, periodic, alpha, beta, dtype, layout, device, pin_memory):
    return _window("hamming_window", _hamming, window_length, periodic, (alpha, beta), dtype, layout, device,
                   pin_memory)


def bartlett_window(window_length, dtype, layout, device, pin_memory):
    """The triangular window."""
    return _window("bartlett_window", _bartlett, window_length, True, (), dtype, layout, device, pin_memory)


def bartlett_window_periodic(window_length, periodic, dtype, layout, device, pin_memory):
    return _window("bartlett_window", _bartlett, window_length, periodic, (), dtype, layout, device, pin_memory)


def blackman_window(window_length, dtype, layout, device, pin_memory):
    """0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    return _window("blackman_window", _blackman, window_length, True, (), dtype, layout, device, pin_memory)


def blackman_window_periodic(window_length, periodic, dtype, layout, device, pin_memory):
    return _window("blackman_window", _blackman, window_length, periodic, (), dtype, layout, device, pin_memory)


def kaiser_window(window_length, dtype, layout, device, pin_memory):
    """I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta) with a = (N - 1) / 2, beta = 12 by default."""
    return _window("kaiser_window", _kaiser, window_length, True, (), dtype, layout, device, pin_memory)


def kaiser_window_periodic(window_length, periodic, dtype, layout, device, pin_memory):
    return _window("kaiser_window", _kaiser, window_length, periodic, (), dtype, layout, device, pin_memory)


def kaiser_window_beta(window_length, periodic, beta, dtype, layout, device, pin_memory):
    return _window("kaiser_window", _kaiser, window_length, periodic, (beta,), dtype, layout, device, pin_memory)


# ---- tril_indices / triu_indices ------------------------------------------------------------------
def _tri_indices(name, row, col, offset, dtype, device, lower):
    dtype = ember.long if dtype is None else dtype
    if dtype not in (ember.int32, ember.int64):
        raise NotImplementedError(f'"{name}" not implemented for \'{dtype._short}\'')
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    i = ember.arange(row, dtype=dtype, device=device).unsqueeze(1).expand(row, col)
    j = ember.arange(col, dtype=dtype, device=device).unsqueeze(0).expand(row, col)
    mask = (j - i <= offset) if lower else (j - i >= offset)
    return ember.stack([i.masked_select(mask), j.masked_select(mask)])


def tril_indices(row, col, offset, dtype, layout, device, pin_memory):
    """The (2, N) coordinates of the lower triangle of a row x col matrix, row-major."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row, col, offset, dtype, layout, device, pin_memory):
    """The (2, N) coordinates of the upper triangle of a row x col matrix, row-major."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, False)


# ---- cartesian_prod / combinations / block_diag ---------------------------------------------------
def _check_1d(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {fmt_shape(t.shape)}")


def cartesian_prod(tensors):
    """Cartesian product of 1-D tensors, one row per combination (itertools.product order)."""
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = ember.meshgrid(*tensors, indexing="ij")
    return ember.stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """Length-r combinations of the elements of a 1-D tensor (itertools.combinations[_with_replacement])."""
    _check_1d(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return ember.empty(0, dtype=input.dtype, device=input.device)
    grids = ember.meshgrid(*([input] * r), indexing="ij")
    # keep the index tuples with i < j < k ... (i <= j <= k ... with replacement)
    idx = ember.meshgrid(*([ember.arange(input.numel(), device=input.device)] * r), indexing="ij")
    mask = ember.ones(idx[0].shape, dtype=ember.bool, device=input.device)
    for a, b in zip(idx[:-1], idx[1:]):
        mask = mask & ((a <= b) if with_replacement else (a < b))
    return ember.stack([g.masked_select(mask) for g in grids], 1)


def _result_type(tensors):
    """ATen's result_type over a tensor list (0-d tensors only count when of a higher category)."""
    return result_type_of(tuple(part(t) for t in tensors)) if tensors else None


def block_diag(tensors):
    """Block-diagonal matrix of the given (0-D, 1-D as a row, or 2-D) tensors."""
    if not tensors:
        return ember.empty(1, 0)
    device = tensors[0].device
    for i, t in enumerate(tensors):
        if t.device != device:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same device. Input 0 is on "
                               f"device {device} and input {i} is on device {t.device}")
    dtype = _result_type(tensors)
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t if t.dim() == 2 else t.reshape(1, -1))
    width = sum(b.shape[1] for b in blocks)
    rows = []
    left = 0
    for b in blocks:
        h, w = b.shape
        rows.append(ember.cat([ember.zeros(h, left, dtype=dtype, device=device), b.to(dtype),
                               ember.zeros(h, width - left - w, dtype=dtype, device=device)], 1))
        left += w
    return ember.cat(rows, 0)


# ---- trapezoid / trapz / cumulative_trapezoid -----------------------------------------------------
def _slice(t, dim, start, stop=None):
    """t[..., start:stop, ...] along dim (clamped like ATen's slice, unlike narrow)."""
    return t[(slice(None),) * dim + (slice(start, stop),)]


def _x_spacing(op, y, x, dim):
    """x's differences along dim, shaped to broadcast against y's (NumPy's rule for 1-D x)."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.dim() < y.dim():
        x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def _check_dx(op, dx):
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{op}: Currently, we only support dx as a real number.")
    return float(dx)


def _trapezoid_empty(y, dim):
    # no samples: NumPy's (and ATen's) zero integral
    return ember.zeros(y.shape[:dim] + y.shape[dim + 1:], dtype=y.dtype, device=y.device)


def trapezoid_x(y, x, dim):
    """Trapezoidal rule integral of y along dim, with sample points x."""
    if not isinstance(x, TensorImpl):
        _invalid("trapezoid", (y, x))
    dim = wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return _trapezoid_empty(y, dim)
    if y.dtype is ember.bool or x.dtype is ember.bool:
        raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not supported")
    dx = _x_spacing("trapezoid", y, x, dim)
    return ((_slice(y, dim, 1) + _slice(y, dim, 0, -1)) * dx).sum(dim) / 2.0


def trapezoid_dx(y, dx, dim):
    """Trapezoidal rule integral of y along dim, with constant spacing dx."""
    dim = wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return _trapezoid_empty(y, dim)
    if y.dtype is ember.bool:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    dx = _check_dx("trapezoid", dx)
    # constant spacing: sum(y) minus half the end points
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * dx


def cumulative_trapezoid_x(y, x, dim):
    """Cumulative trapezoidal integral of y along dim (one element fewer than y along dim)."""
    name = "cumulative_trapezoid"
    if not isinstance(x, TensorImpl):
        _invalid(name, (y, x))
    dim = wrap_dim(dim, y.dim())
    if y.dtype is ember.bool or x.dtype is ember.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    return _cumulative(y, _x_spacing(name, y, x, dim), dim)


def trapz_x(y, x, dim):
    if not isinstance(x, TensorImpl):
        _invalid("trapz", (y, x))
    return trapezoid_x(y, x, dim)


def trapz_dx(y, dx, dim):
    """trapezoid_dx with trapz's float dx, which takes a bool as torch's parser does."""
    if not isinstance(dx, (int, float)):
        _invalid("trapz", (y,), dx=dx)
    return trapezoid_dx(y, float(dx) if isinstance(dx, bool) else dx, dim)


def cumulative_trapezoid_dx(y, dx, dim):
    name = "cumulative_trapezoid"
    dim = wrap_dim(dim, y.dim())
    if y.dtype is ember.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    return _cumulative(y, _check_dx(name, dx), dim)


def _cumulative(y, dx, dim):
    return ((_slice(y, dim, 0, -1) + _slice(y, dim, 1)) * (dx / 2.0)).cumsum(dim)


# ---- vander / dist / renorm -----------------------------------------------------------------------
def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns x^(N-1), ..., x^0 (x^0, ..., x^(N-1) when increasing)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    # integer (and bool) inputs give long, as cumprod promotes them
    dtype = ember.promote_types(x.dtype, ember.long)
    ones = ember.ones(x.shape[0], min(n, 1), dtype=dtype, device=x.device)
    powers = x.to(dtype).unsqueeze(1).expand(x.shape[0], max(n - 1, 0)).cumprod(1)
    result = ember.cat([ones, powers], 1)
    return result if increasing else result.flip(1)


def dist(input, other, p=2):
    """p-norm of input - other (broadcast)."""
    d = input - other
    if not (d.dtype.is_floating_point or d.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got {d.dtype._short} "
                           "instead.")
    return ember.norm(d, p)


def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm scaled to norm maxnorm."""
    if isinstance(p, complex):
        raise RuntimeError("renorm: p must be real-valued")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if isinstance(maxnorm, complex):
        raise RuntimeError("renorm: maxnorm must be real-valued")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm)}".rstrip("0").rstrip("."))
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    dim = wrap_dim(dim, input.dim())
    reduce_dims = tuple(d for d in range(input.dim()) if d != dim)
    # the norms of reduced floats are taken in float32 (ATen's accumulate type)
    acc = ember.float32 if input.dtype in (ember.float16, ember.bfloat16) else None
    norm = ember.linalg.vector_norm(input, p, reduce_dims, True, dtype=acc)
    factor = ember.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    if acc is not None:
        factor = factor.to(input.dtype)
    return input * factor


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self.clone(), p, dim, maxnorm))


# ---- logaddexp / logaddexp2 -----------------------------------------------------------------------
def _check_real_float(name, input, other, complex_ok):
    d = ember.result_type(input, other)
    if not (d.is_floating_point or (complex_ok and d.is_complex)):
        raise NotImplementedError(f'"{name}_{input.device.type}" not implemented for \'{d._short}\'')


def _complex_logaddexp(a, b):
    """log(exp(a) + exp(b)) for complex a, b, factored out of the one with the larger real part."""
    a_is_max = ember.view_as_real(a)[..., 0] >= ember.view_as_real(b)[..., 0]
    hi, lo = ember.where(a_is_max, a, b), ember.where(a_is_max, b, a)
    return (lo - hi).exp().log1p() + hi


def _logaddexp(name, input, other, exp, scale):
    _tensor_arg(name, "other", 2, other)
    _check_real_float(name, input, other, scale is None)
    if input.dtype.is_complex or other.dtype.is_complex:
        if ember.result_type(input, other) is ember.complex32:  # no ComplexHalf kernel in torch
            raise NotImplementedError(f'"{name}_{input.device.type}" not implemented for \'ComplexHalf\'')
        return _complex_logaddexp(input, other)
    both_inf = input.isinf() & (input == other)
    # where both are the same infinity, the difference below is nan: feed it a finite stand-in
    delta = ember.where(both_inf, 0, input - other)
    tail = exp(-delta.abs()).log1p()
    out = ember.maximum(input, other) + (tail if scale is None else tail * scale)
    return ember.where(both_inf, input, out)


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow: max + log1p(exp(-|input - other|))."""
    return _logaddexp("logaddexp", input, other, ember.exp, None)


def logaddexp2(input, other):
    """log2(2^input + 2^other) without overflow: max + log1p(2^-|input - other|) / ln 2."""
    return _logaddexp("logaddexp2", input, other, ember.exp2, 1 / math.log(2))


# ---- sinc / heaviside / ldexp ---------------------------------------------------------------------
def _float_dtype(d):
    return d if d.is_floating_point or d.is_complex else ember.get_default_dtype()


def sinc(input):
    """Normalized sinc: sin(pi x) / (pi x), 1 at 0 (where its gradient is 0)."""
    x = input.to(_float_dtype(input.dtype))
    try:
        px = x * math.pi
        # near 0 the quotient's derivative cos(p)/p - sin(p)/p^2 cancels catastrophically: use the
        # series 1 - p^2/6 + p^4/120 there (exact to rounding below these bounds)
        small = px.abs() < (0.01 if x.dtype in (ember.float64, ember.complex128) else 0.3)
        # each branch is evaluated at harmless points where the other is taken, so that no inf or nan
        # derivative reaches the gradient through where
        p2 = ember.where(small, px, 0).square()
        series = 1 - p2 / 6 + p2.square() / 120
        pl = ember.where(small, 1, px)
        return ember.where(small, series, pl.sin() / pl)
    except NotImplementedError:  # complex32 meets an op with no ComplexHalf kernel: torch's is sinc's own
        if x.dtype is not ember.complex32:
            raise
        raise NotImplementedError(f'"sinc_{x.device.type}" not implemented for \'ComplexHalf\'') from None


def _cant_cast(what, self, result_dtype):
    if not ember.can_cast(result_dtype, self.dtype):
        raise RuntimeError(f"{what} can't be cast to the desired output type {self.dtype._short}")


def sinc_(self):
    _cant_cast(f"result type {_float_dtype(self.dtype)._short}", self, _float_dtype(self.dtype))
    return self.copy_(sinc(self.clone()))


def heaviside(input, values):
    """Step function: 0 where input < 0, values where input == 0, 1 where input > 0. A
    CompositeExplicitAutograd kernel: ATen has no derivative for it (its backward raises)."""
    _tensor_arg("heaviside", "values", 2, values)
    if input.dtype.is_complex or values.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return ember.where(input == 0, values, (input > 0).to(values.dtype))


def heaviside_(self, values):
    _tensor_arg("heaviside_", "values", 1, values)
    return self.copy_(ember.heaviside(self.clone(), values))


def _ldexp_dtype(input, other):
    """The floating dtype ldexp computes in. torch raises 2 ** other in it, and pow has no
    ComplexHalf kernel."""
    dtype = _float_dtype(ember.result_type(input, other))
    if dtype is ember.complex32:
        raise NotImplementedError('"pow" not implemented for \'ComplexHalf\'')
    return dtype


def ldexp(input, other):
    """input * 2^other, in the floating dtype the two promote to."""
    _tensor_arg("ldexp", "other", 2, other)
    dtype = _ldexp_dtype(input, other)
    return input.to(dtype) * ember.pow(2.0, other).to(dtype)


def ldexp_(self, other):
    _tensor_arg("ldexp_", "other", 1, other)
    _cant_cast("ldexp", self, _ldexp_dtype(self, other))
    return self.mul_(ember.pow(2.0, other))


# ---- angle / polar / complex ----------------------------------------------------------------------
# ATen's TensorIterator kernels (UnaryOps.cpp angle, TensorFactories.cpp complex/polar), composed here
# below the Autograd layer: each op records its own node (AngleBackward0, PolarBackward0, ComplexBackward0).
def angle(self):
    """atan2(imag, real) for complex input; pi for negative reals, 0 otherwise, NaN kept; integer and
    bool input compute in the default float dtype."""
    d = self._dtype
    if d.is_complex:
        if d is ember.complex32:
            raise NotImplementedError(f"\"angle_{self.device.type}\" not implemented for '{d._short}'")
        parts = ember.view_as_real(self)
        return ember.atan2(parts[..., 1], parts[..., 0])
    x = self if d.is_floating_point else self.to(ember.get_default_dtype())
    return ember.where(x.isnan(), x, (x < 0).to(x.dtype) * math.pi)


def _check_complex_parts(real, imag):
    ok = (ember.float16, ember.float32, ember.float64)
    if real.dtype not in ok or imag.dtype not in ok:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{real.dtype._short} and {imag.dtype._short}")
    if real.dtype != imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype._short} but got scalar type "
                           f"{imag.dtype._short} for second argument")


def complex_from_parts(real, imag, layout=None):
    """real + i*imag, broadcast, in a fresh complex tensor of the parts' precision, laid out as
    TensorIterator lays out an output over the tensors `layout` (default: real and imag)."""
    _tensor_arg("complex", "real", 1, real)
    _tensor_arg("complex", "imag", 2, imag)
    _check_complex_parts(real, imag)
    re, im = ember.broadcast_tensors(real, imag)
    shape = tuple(re.shape)
    out = ember.empty_strided(shape, tensor_iterator_strides(shape, layout or (real, imag)),
                              dtype=_complex_of(re.dtype), device=re.device)
    parts = ember.view_as_real(out)
    parts[..., 0].copy_(re)
    parts[..., 1].copy_(im)
    return out


def _complex_of(d):
    return ember.complex32 if d is ember.float16 else ember.complex128 if d is ember.float64 else ember.complex64


def polar(abs, angle, out=None):
    """abs * (cos(angle) + i sin(angle)), as ATen's kernel: complex(abs * cos(angle), abs * sin(angle))."""
    _tensor_arg("polar", "abs", 1, abs)
    _tensor_arg("polar", "angle", 2, angle)
    _check_complex_parts(abs, angle)
    if out is not None and out.dtype is not _complex_of(abs.dtype):
        raise RuntimeError(f"Expected object of scalar type {_complex_of(abs.dtype)._short} but got scalar type "
                           f"{out.dtype._short} for argument 'out'")
    if abs.dtype is ember.float16:
        raise NotImplementedError(f"\"polar_{abs.device.type}\" not implemented for 'Half'")
    r = complex_from_parts(abs * angle.cos(), abs * angle.sin(), (abs, angle))
    return r if out is None else store_out(out, r, stacklevel=4)


def polar_out(abs, angle, out):
    return polar(abs, angle, out)
