"""torch.fft written with _fft_r2c / _fft_c2r / _fft_c2c and other ember ops, as ATen's SpectralOps.cpp
writes it (CompositeImplicitAutograd: the graph records the ops called here)."""
import math

import ember
from ember.core.errors import wrap_dim
from ember.kernels.composite import store_out

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2  # ATen's fft_norm_mode


def _wrap(d, ndim):
    """maybe_wrap_dim(..., wrap_scalar=false): a 0-d tensor has no dimension to transform."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return wrap_dim(d, ndim)


def _norm_mode(norm, forward):
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(t, require_complex=False):
    """promote_tensor_fft: integers to the default float dtype; only float32/float64 on CPU."""
    cur = t.dtype
    if cur.is_complex:
        return t
    new = cur if cur.is_floating_point else ember.get_default_dtype()
    if new not in (ember.float32, ember.float64):
        raise RuntimeError(f"Unsupported dtype {new._short}")
    if require_complex:
        new = new.to_complex()
    return t if new is cur else t.to(new)


def _resize(x, dims, sizes):
    """resize_fft_input: truncate (slice) or zero-pad (constant_pad_nd) each transformed dim."""
    pad = [0] * (2 * x.dim())
    must_pad = False
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have < n:
            must_pad = True
            pad[len(pad) - 2 * d - 1] = n - have
        elif have > n:
            x = x.narrow(d, 0, n)
    return ember.constant_pad_nd(x, pad) if must_pad else x


def _points_check(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _out_check(fname, out, complex_out):
    if out is None:
        return
    if complex_out and not out.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex output tensor, but got {out.dtype._short}")
    if not complex_out and not out.dtype.is_floating_point:
        raise RuntimeError(f"{fname} expects a floating point output tensor, but got {out.dtype._short}")


def _into(out, r):
    """The result, or written into out= (resized with ATen's warning when out had elements)."""
    return r if out is None else store_out(out, r, stacklevel=4)


# ---- one dimension ------------------------------------------------------------------------------------
def _c2c(fname, x, n, dim, norm, forward, out=None):
    if not x.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex input tensor, but got {x.dtype._short}")
    d = _wrap(dim, x.dim())
    if n is None:
        n = x.shape[d]
    _points_check(n)
    x = _resize(x, [d], [n])
    mode = _norm_mode(norm, forward)
    _out_check(fname, out, True)
    return _into(out, ember._fft_c2c(x, [d], mode, forward))


def _r2c(fname, x, n, dim, norm, forward, onesided, out=None):
    if x.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a real input tensor, but got {x.dtype._short}")
    _out_check(fname, out, True)
    x = _promote(x)
    d = _wrap(dim, x.dim())
    if n is None:
        n = x.shape[d]
    _points_check(n)
    x = _resize(x, [d], [n])
    r = ember._fft_r2c(x, [d], _norm_mode(norm, forward), onesided)
    # _fft_r2c computes forward transforms only: the inverse is the conjugate of the forward one
    return _into(out, r if forward else r.conj())


def _c2r(fname, x, n, dim, norm, forward, out=None):
    _out_check(fname, out, False)
    x = _promote(x, True)
    d = _wrap(dim, x.dim())
    if n is None:
        n = 2 * (x.shape[d] - 1)
    _points_check(n)
    x = _resize(x, [d], [n // 2 + 1])
    mode = _norm_mode(norm, forward)
    if forward:  # _fft_c2r computes inverse transforms only
        x = x.conj()
    return _into(out, ember._fft_c2r(x, [d], mode, n))


def fft(self, n=None, dim=-1, norm=None, out=None):
    if self.dtype.is_complex:
        return _c2c("fft", self, n, dim, norm, True, out)
    return _r2c("fft", self, n, dim, norm, True, False, out)


def ifft(self, n=None, dim=-1, norm=None, out=None):
    if self.dtype.is_complex:
        return _c2c("ifft", self, n, dim, norm, False, out)
    return _r2c("ifft", self, n, dim, norm, False, False, out)


def rfft(self, n=None, dim=-1, norm=None, out=None):
    return _r2c("rfft", self, n, dim, norm, True, True, out)


def irfft(self, n=None, dim=-1, norm=None, out=None):
    return _c2r("irfft", self, n, dim, norm, False, out)


def hfft(self, n=None, dim=-1, norm=None, out=None):
    return _c2r("hfft", self, n, dim, norm, True, out)


def ihfft(self, n=None, dim=-1, norm=None, out=None):
    return _r2c("ihfft", self, n, dim, norm, False, True, out)


# ---- n dimensions ------------------------------------------------------------------------------------
def _shape_and_dims(x, s, dim):
    """canonicalize_fft_shape_and_dim_args: the transformed dims and the signal size in each."""
    ndim = x.dim()
    sizes = tuple(x.shape)
    if dim is not None:
        dims = [_wrap(d, ndim) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [sizes[d] if n == -1 else n for d, n in zip(dims, s)]
    elif dim is None:
        dims, shape = list(range(ndim)), list(sizes)
    else:
        shape = [sizes[d] for d in dims]
    for n in shape:
        _points_check(n)
    return shape, dims


def _c2r_shape_and_dims(fname, x, s, dim):
    """canonicalize_fft_c2r_shape_and_dim_args: also the output size of the Hermitian dimension."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not shape:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or s[-1] == -1:
        last_dim_size = 2 * (x.shape[dims[-1]] - 1)
    else:
        last_dim_size = shape[-1]
    _points_check(last_dim_size)
    shape[-1] = last_dim_size // 2 + 1
    return shape, dims, last_dim_size


def _fftn_c2c(fname, self, s, dim, norm, forward, out):
    shape, dims = _shape_and_dims(self, s, dim)
    x = _resize(_promote(self, True), dims, shape)
    mode = _norm_mode(norm, forward)
    _out_check(fname, out, True)
    return _into(out, ember._fft_c2c(x, dims, mode, forward))


def fftn(self, s=None, dim=None, norm=None, out=None):
    return _fftn_c2c("fftn", self, s, dim, norm, True, out)


def ifftn(self, s=None, dim=None, norm=None, out=None):
    return _fftn_c2c("ifftn", self, s, dim, norm, False, out)


def rfftn(self, s=None, dim=None, norm=None, out=None):
    if self.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {self.dtype._short}")
    shape, dims = _shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(self), dims, shape)
    mode = _norm_mode(norm, True)
    _out_check("rfftn", out, True)
    return _into(out, ember._fft_r2c(x, dims, mode, True))


def irfftn(self, s=None, dim=None, norm=None, out=None):
    shape, dims, last_dim_size = _c2r_shape_and_dims("irfftn", self, s, dim)
    x = _resize(_promote(self, True), dims, shape)
    mode = _norm_mode(norm, False)
    _out_check("irfftn", out, False)
    return _into(out, ember._fft_c2r(x, dims, mode, last_dim_size))


def hfftn(self, s=None, dim=None, norm=None, out=None):
    shape, dims, last_dim_size = _c2r_shape_and_dims("hfftn", self, s, dim)
    x = _resize(_promote(self, True), dims, shape)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = ember._fft_c2c(x, dims[:-1], mode, True)
    _out_check("hfftn", out, False)
    return _into(out, ember._fft_c2r(x.conj(), dims[-1:], mode, last_dim_size))


def ihfftn(self, s=None, dim=None, norm=None, out=None):
    shape, dims = _shape_and_dims(self, s, dim)
    if not shape:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(self), dims, shape)
    mode = _norm_mode(norm, False)
    r = ember._fft_r2c(x, dims[-1:], mode, True)
    if len(dims) == 1:
        _out_check("ihfftn", out, True)
        return _into(out, r.conj())
    r = ember._fft_c2c(r.conj_physical(), dims[:-1], mode, False)
    _out_check("ihfftn", out, True)
    return _into(out, r)


def fft2(self, s=None, dim=(-2, -1), norm=None, out=None):
    return fftn(self, s, dim, norm, out)


def ifft2(self, s=None, dim=(-2, -1), norm=None, out=None):
    return ifftn(self, s, dim, norm, out)


def rfft2(self, s=None, dim=(-2, -1), norm=None, out=None):
    return rfftn(self, s, dim, norm, out)


def irfft2(self, s=None, dim=(-2, -1), norm=None, out=None):
    return irfftn(self, s, dim, norm, out)


def hfft2(self, s=None, dim=(-2, -1), norm=None, out=None):
    return hfftn(self, s, dim, norm, out)


def ihfft2(self, s=None, dim=(-2, -1), norm=None, out=None):
    return ihfftn(self, s, dim, norm, out)


def _out_variant(fn):
    def kernel(self, s=None, dim=None, norm=None, out=None):
        return fn(self, s, dim, norm, out)
    kernel.__name__ = fn.__name__ + "_out"
    return kernel


fft_out, ifft_out, rfft_out, irfft_out, hfft_out, ihfft_out = map(
    _out_variant, (fft, ifft, rfft, irfft, hfft, ihfft))
fft2_out, ifft2_out, rfft2_out, irfft2_out, hfft2_out, ihfft2_out = map(
    _out_variant, (fft2, ifft2, rfft2, irfft2, hfft2, ihfft2))
fftn_out, ifftn_out, rfftn_out, irfftn_out, hfftn_out, ihfftn_out = map(
    _out_variant, (fftn, ifftn, rfftn, irfftn, hfftn, ihfftn))


# ---- helpers ------------------------------------------------------------------------------------------
def _scale(n, d):
    """1.0 / (n * d) in double, as C++ computes it (inf where n * d is 0)."""
    den = n * d
    return 1.0 / den if den else math.copysign(math.inf, den)


def _freq_dtype_check(fname, dtype):
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")


def _fftfreq_values(n, d, dtype, device):
    _freq_dtype_check("fftfreq", dtype)
    k = ember.cat([ember.arange((n + 1) // 2, dtype=dtype, device=device),
                   ember.arange(-(n // 2), 0, dtype=dtype, device=device)])
    return k * _scale(n, d)


def _rfftfreq_values(n, d, dtype, device):
    _freq_dtype_check("rfftfreq", dtype)
    return ember.arange(n // 2 + 1, dtype=dtype, device=device) * _scale(n, d)


def fftfreq(n, d=1.0, dtype=None, layout=None, device=None, pin_memory=None):
    """The sample frequencies [0, 1, ..., -(n // 2), ..., -1] / (d * n)."""
    like = ember.empty(n, dtype=dtype, device=device)  # ATen allocates first: its size check
    return _fftfreq_values(n, d, like.dtype, like.device)


def rfftfreq(n, d=1.0, dtype=None, layout=None, device=None, pin_memory=None):
    """The non-negative sample frequencies [0, 1, ..., n // 2] / (d * n)."""
    like = ember.empty(n // 2 + 1, dtype=dtype, device=device)
    return _rfftfreq_values(n, d, like.dtype, like.device)


def fftfreq_out(n, d=1.0, out=None):
    return _into(out, _fftfreq_values(n, d, out.dtype, out.device))


def rfftfreq_out(n, d=1.0, out=None):
    return _into(out, _rfftfreq_values(n, d, out.dtype, out.device))


def _alldims(x, dim):
    if not dim:  # the binding passes dim=None as ()
        return list(range(x.dim()))
    return [_wrap(d, x.dim()) for d in dim]


def fftshift(self, dim=None):
    """Moves the zero-frequency term to the centre: a roll by size // 2 in each dim."""
    dims = _alldims(self, dim)
    return ember.roll(self, [self.shape[d] // 2 for d in dims], dims)


def ifftshift(self, dim=None):
    """The inverse of fftshift: a roll by (size + 1) // 2 in each dim."""
    dims = _alldims(self, dim)
    return ember.roll(self, [(self.shape[d] + 1) // 2 for d in dims], dims)
