"""Backward helpers of the pointwise family (FunctionsManual.cpp's pow/div/clamp/... parts).

Written with ember operators only, so every gradient is itself differentiable (double backward).
A Tensor argument may arrive as a Python number (`x / 2`, `2 ** x`): helpers accept both.
"""
import cmath
import math

import ember
from ember.autograd.formulas import handle_r_to_c
from ember.core import tls as _tls
from ember.core import dtype as _dt

__all__ = [
    "pw_conj", "pw_div_self_backward", "pw_div_other_backward", "pw_remainder_other_backward",
    "pw_not_implemented", "pw_pow_backward", "pw_pow_backward_self", "pw_pow_backward_exponent",
    "pw_float_power_cast", "pw_sgn_backward", "pw_angle_backward", "pw_polar_backward",
    "pw_complex_backward",
    "pw_logit_backward", "pw_clamp_backward", "pw_clamp_min_backward", "pw_clamp_max_backward",
    "pw_copysign_backward", "pw_minmax_self_backward", "pw_minmax_other_backward",
    "pw_fminmax_self_backward", "pw_fminmax_other_backward", "pw_lerp_self_weight",
    "PW_LN2", "PW_LN10", "PW_2_SQRTPI", "PW_SQRTPI_2", "PW_PI_180", "PW_180_PI",
]

_COMPLEX = _dt.COMPLEX
_st = _tls.current
PW_LN2 = 0.6931471805599453
PW_LN10 = 2.3025850929940456
PW_2_SQRTPI = 2.0 / math.sqrt(math.pi)      # erf'
PW_SQRTPI_2 = 0.5 * math.sqrt(math.pi)      # erfinv'
PW_PI_180 = 0.017453292519943295769236907684886127134428718885417
PW_180_PI = 57.295779513082320876798154814105170332405472466564


def _is_t(x):
    return hasattr(x, "_dtype")


def _is_complex(x):
    if _is_t(x):
        return x._dtype.category == _COMPLEX
    return isinstance(x, complex)


def pw_conj(t):
    """conj() of a tensor or a number (the conj operator is differentiable, so double backward works)."""
    if not _is_t(t):
        return t.conjugate() if isinstance(t, complex) else t
    return t.conj()


def pw_not_implemented(op):
    raise RuntimeError(f"derivative for aten::{op} is not implemented")


# ---- div / remainder / fmod -----------------------------------------------------------------
def pw_div_self_backward(grad, other, self_dtype, rounding_mode=None):
    if rounding_mode is not None:
        return ember.zeros_like(grad, dtype=self_dtype)
    return handle_r_to_c(self_dtype, grad / pw_conj(other))


def pw_div_other_backward(grad, self, other, rounding_mode=None):
    if rounding_mode is not None:
        return ember.zeros_like(grad, dtype=other._dtype)
    return handle_r_to_c(other._dtype, -grad * pw_conj((self / other) / other))


def pw_remainder_other_backward(grad, self, other, mode, op):
    if not _is_t(self):  # remainder(2, x): PyTorch's remainder.Scalar_Tensor has no derivative
        pw_not_implemented(op)
    return -grad * self.div(other, rounding_mode=mode)


# ---- powers -----------------------------------------------------------------------------------
def _scalar_exp(e):
    if isinstance(e, complex):
        return e
    return float(e)


def _scalar_log(b):
    """c10::Scalar::log(): NaN for a negative real, -inf at 0."""
    if isinstance(b, complex):
        return cmath.log(b) if b != 0 else complex(-math.inf, 0.0)
    b = float(b)
    if b > 0 or b != b:
        return math.log(b)
    return -math.inf if b == 0 else math.nan


def pw_pow_backward(grad, self, exponent):
    """d/dself self ** exponent for a Scalar exponent (pow_backward)."""
    e = _scalar_exp(exponent)
    if e == 0:
        return ember.zeros_like(self)
    return handle_r_to_c(self._dtype, grad * pw_conj(e * self.pow(e - 1)))


def pw_pow_backward_self(grad, self, exponent):
    if not _is_t(exponent):
        return pw_pow_backward(grad, self, exponent)
    out = ember.where(exponent == 0.0, 0.0, grad * pw_conj(exponent * self.pow(exponent - 1)))
    return handle_r_to_c(self._dtype, out)


def pw_pow_backward_exponent(grad, self, exponent, result):
    """d/dexponent self ** exponent; 0 where self == 0 and exponent >= 0 (real)."""
    cplx_exp = exponent._dtype.category == _COMPLEX
    if not _is_t(self):  # pow.Scalar: a number base
        base = self
        if cplx_exp and not isinstance(base, complex):
            base = complex(base)
        g = pw_conj(result * _scalar_log(base))
        if base == 0:
            if cplx_exp:
                cond = (exponent.imag == 0).logical_and(exponent.real >= 0)
            else:
                cond = exponent >= 0
            g = ember.where(cond, 0.0, g)
        return handle_r_to_c(exponent._dtype, grad * g)
    if cplx_exp:
        cond = (self == 0).logical_and((exponent.imag == 0).logical_and(exponent.real >= 0))
    else:
        cond = (self == 0).logical_and(exponent >= 0)
    promoted = ember.result_type(self, exponent)
    self_ = self if self._dtype is promoted else self.to(promoted)
    out = grad * ember.where(cond, 0.0, pw_conj(result * self_.log()))
    return handle_r_to_c(exponent._dtype, out)


def pw_float_power_cast(x, other):
    """float_power computes in double (complex double when either operand is complex)."""
    if not _is_t(x):
        if isinstance(x, complex) or _is_complex(other):
            return complex(x)
        return float(x)
    want = _dt.complex128 if (_is_complex(x) or _is_complex(other)) else _dt.float64
    return x if x._dtype is want else x.to(want)


# ---- unary --------------------------------------------------------------------------------------
def pw_sgn_backward(self, grad, result):
    if self._dtype.category != _COMPLEX:
        return ember.zeros_like(grad)
    a = self.abs()
    return ((grad - (result * result) * pw_conj(grad)) / (2.0 * a)).masked_fill(a == 0.0, 0.0)


def pw_angle_backward(grad, self):
    """angle_backward: zero for real self; grad * self / |self|^2 * i for complex self, zero at 0."""
    if self._dtype.category != _COMPLEX:
        return ember.zeros_like(self)
    return ember.where(self == 0.0, 0.0, grad * self / self.abs().pow(2) * 1j)


def pw_polar_backward(grad, result):
    """polar_backward: (Re(conj(grad) * sgn(result)), Re(conj(grad) * result * i)) for (abs, angle)."""
    g = pw_conj(grad)
    return (g * result.sgn()).real, (g * (result * 1j)).real


def pw_complex_backward(grad, real, imag):
    """(Re(grad), Im(grad)) for complex(real, imag). torch's generated ComplexBackward0 saves real and
    imag (torchgen reads at::real / at::imag in its formula as the arguments' names), so this node
    takes them too: _saved_real and _saved_imag, as torch's."""
    return grad.real, grad.imag


def pw_logit_backward(grad, self, eps):
    if eps is None:
        lo, hi, fill = 0.0, 1.0, math.nan
    else:
        lo, hi, fill = eps, 1.0 - eps, 0.0
    mask = (self >= lo).logical_and(self <= hi)
    return ember.where(mask, grad / (self * (1.0 - self)), fill)


# ---- clamp --------------------------------------------------------------------------------------
# The gradient passes where min <= self <= max (boundaries included, like PyTorch's subgradient 1).
def pw_clamp_backward(grad, self, min, max):
    if min is not None and max is not None:
        mask = (self >= min).logical_and(self <= max)
    elif min is not None:
        mask = self >= min
    elif max is not None:
        mask = self <= max
    else:
        return grad
    return ember.where(mask, grad, 0.0)


def pw_clamp_min_backward(grad, self, min, max):
    """clamp.Tensor's gradient for `min` (none where min > max)."""
    if max is not None:
        mask = (self < min).logical_and(min < max)
    else:
        mask = self < min
    return ember.where(mask, grad, 0.0)


def pw_clamp_max_backward(grad, self, min, max):
    if min is not None:
        mask = (self > max).logical_or(max < min)
    else:
        mask = self > max
    return ember.where(mask, grad, 0.0)


# ---- binary -------------------------------------------------------------------------------------
def pw_copysign_backward(grad, self, result):
    ratio = (result / self).masked_fill(self == 0, 0)
    return grad * ratio


def pw_minmax_self_backward(grad, self, other, is_max):
    """maximum/minimum: ties split the gradient in halves."""
    g = ember.where(self == other, grad / 2, grad)
    return g.masked_fill(self < other if is_max else self > other, 0)


def pw_minmax_other_backward(grad, self, other, is_max):
    g = ember.where(self == other, grad / 2, grad)
    return g.masked_fill(self > other if is_max else self < other, 0)


def _fminmax_keep(self, other, is_max):
    """Where fmax/fmin take self: self wins ties and when other is NaN."""
    keep = (self >= other) if is_max else (self <= other)
    if _is_t(other):
        return keep.logical_or(other.isnan())
    return keep.logical_or(ember.full((), other != other, dtype=_dt.bool_))


def pw_fminmax_self_backward(grad, self, other, is_max):
    return grad.masked_fill(_fminmax_keep(self, other, is_max).logical_not(), 0)


def pw_fminmax_other_backward(grad, self, other, is_max):
    return grad.masked_fill(_fminmax_keep(self, other, is_max), 0)


def pw_lerp_self_weight(weight):
    """1 - weight for lerp.Scalar's self gradient (conjugated when complex)."""
    if isinstance(weight, complex):
        return 1 - weight.conjugate()
    return 1 - float(weight)
