"""Backward helpers of the activation family (FunctionsManual.cpp's activation parts).

First-order gradients call ATen's `*_backward` operators (one kernel each, declared in
ops/native_functions/activation.yaml); those have derivatives of their own in
ops/derivatives/activation.yaml, whose double-backward formulas below are written with ember ops.
"""
import ember
from ember._generated import ops as _ops
from ember.core import dtype as _dt

__all__ = [
    "tanh_backward", "sigmoid_backward", "threshold_backward", "hardtanh_backward", "gelu_backward",
    "silu_backward", "mish_backward",
    "hardsigmoid_backward", "hardswish_backward", "softplus_backward", "elu_backward",
    "celu_backward", "leaky_relu_backward", "softshrink_backward",
    "hardshrink_backward", "glu_backward", "log_sigmoid_backward", "prelu_backward",
    "prelu_kernel_double_backward",
    "rrelu_backward", "gelu_double_backward", "silu_double_backward", "mish_double_backward",
    "hardswish_double_backward", "softplus_double_backward", "elu_double_backward",
    "glu_double_backward", "glu_double_backward_grad_output", "log_sigmoid_double_backward",
    "hardsigmoid_double_backward", "masked_fill_backward",
]

_GELU_BETA = 0.7978845608028654       # sqrt(2 / pi)
_GELU_KAPPA = 0.044715
_PDF_BETA = 0.3989422804014327        # 1 / sqrt(2 pi)


# ---- first order: one ATen backward kernel each -----------------------------------------------
# tanh and sigmoid's (derivatives/pointwise.yaml) are the op's own call: no wrapper frame
tanh_backward = _ops.tanh_backward.call
sigmoid_backward = _ops.sigmoid_backward.call


def threshold_backward(grad, self, threshold):
    return _ops.threshold_backward.call(grad, self, threshold)


def hardtanh_backward(grad, self, min_val, max_val):
    return _ops.hardtanh_backward.call(grad, self, min_val, max_val)


def gelu_backward(grad, self, approximate):
    return _ops.gelu_backward.call(grad, self, approximate)


def silu_backward(grad, self):
    if self._dtype.category == _dt.COMPLEX:
        raise RuntimeError("silu does not support automatic differentiation for outputs with complex dtype.")
    return _ops.silu_backward.call(grad, self)


def mish_backward(grad, self):
    return _ops.mish_backward.call(grad, self)


def hardsigmoid_backward(grad, self):
    return _ops.hardsigmoid_backward.call(grad, self)


def hardswish_backward(grad, self):
    return _ops.hardswish_backward.call(grad, self)


def softplus_backward(grad, self, beta, threshold):
    return _ops.softplus_backward.call(grad, self, beta, threshold)


def elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result):
    return _ops.elu_backward.call(
        grad, alpha, scale, input_scale, is_result, self_or_result)


def celu_backward(grad, self_or_result, alpha, is_result):
    return elu_backward(grad, alpha, 1, 1.0 / alpha, is_result, self_or_result)


def leaky_relu_backward(grad, self, negative_slope, self_is_result):
    return _ops.leaky_relu_backward.call(grad, self, negative_slope, self_is_result)


def softshrink_backward(grad, self, lambd):
    return _ops.softshrink_backward.call(grad, self, lambd)


def hardshrink_backward(grad, self, lambd):
    return _ops.hardshrink_backward.call(grad, self, lambd)


def glu_backward(grad, self, dim):
    return _ops.glu_backward.call(grad, self, dim)


def log_sigmoid_backward(grad, self, buffer=None):
    # the kernel recomputes what log_sigmoid_forward's buffer holds; any tensor will do
    return _ops.log_sigmoid_backward.call(grad, self, self if buffer is None else buffer)


def prelu_backward(grad, self, weight):
    """(grad_self, grad_weight) of prelu: _prelu_kernel_backward."""
    return _ops._prelu_kernel_backward.call(grad, self, weight)


def _prelu_weight(weight, ndim):
    """prelu's weight shaped to broadcast against the input (channels on dim 1)."""
    n = weight.numel()
    if weight.dim() > 1:
        return weight
    if n == 1:
        return weight.reshape(())
    if ndim > 1:
        return weight.reshape((n,) + (1,) * (ndim - 2))
    return weight


def _reduce_to_weight(g, weight, ndim):
    shape = tuple(_prelu_weight(weight, ndim)._shape)
    if tuple(g._shape) != shape:
        lead = g.dim() - len(shape)
        dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g._shape[lead + i] != 1]
        if dims:
            g = g.sum(dims, keepdim=True)
    return g.reshape(tuple(weight._shape))


def prelu_kernel_double_backward(grads, grad_output, self, weight):
    """Derivatives of _prelu_kernel_backward (PyTorch's formulas; grads[i] may be undefined)."""
    ggi, ggw = grads[0], grads[1]
    nd = self.dim()
    w = _prelu_weight(weight, nd)
    ggw = None if ggw is None else _prelu_weight(ggw, nd)
    pos = self >= 0
    if ggi is not None:
        go = ember.where(pos, ggi, ggi * w if ggw is None else ggi * w + ggw * self)
        gw = _reduce_to_weight(ember.where(pos, 0, grad_output * ggi), weight, nd)
    else:
        go = ember.where(pos, 0, ggw * self)
        gw = ember.zeros(tuple(weight._shape), dtype=weight._dtype, device=weight._device)
    if ggw is not None:
        gs = ember.where(pos, 0, grad_output * ggw)
    else:
        gs = ember.zeros(tuple(self._shape), dtype=self._dtype, device=self._device)
    return go, gs, gw


def rrelu_backward(grad, self, result, lower, upper, training, is_result):
    """rrelu_with_noise_backward; in training mode the noise is result / self where self < 0."""
    if training and lower != upper:
        with ember.no_grad():
            s = self.detach()
            noise = ember.where(s > 0, 1.0, ember.where(s < 0, result.detach() / s, (lower + upper) / 2))
        return grad * noise
    return leaky_relu_backward(grad, self, (lower + upper) / 2, is_result)


# ---- double backward --------------------------------------------------------------------------
def gelu_double_backward(ggI, gO, self, approximate):
    x = self
    if approximate == "tanh":
        x2 = x * x
        t = ((x + _GELU_KAPPA * (x2 * x)) * _GELU_BETA).tanh()
        g = 1 - t * t                                  # sech^2
        h = (1 + (3 * _GELU_KAPPA) * x2) * _GELU_BETA
        f = 0.5 * x
        d = g * h - (2 * f * h * h) * (g * t) + f * g * (6 * _GELU_KAPPA * _GELU_BETA) * x
        return ggI * gO * d
    x2 = x * x
    pdf = (x2 * -0.5).exp() * _PDF_BETA
    return ggI * gO * (2 * pdf - x2 * pdf)


def silu_double_backward(ggI, gO, self):
    s = self.sigmoid()
    return ggI * gO * (s * (1 - s) * (2 + self * (1 - 2 * s)))


def mish_double_backward(ggI, gO, self):
    s = self.sigmoid()
    t = _ops.softplus.call(self, 1, 20).tanh()
    sech2 = 1 - t * t
    return ggI * gO * (s * sech2 * (2 + self * (1 - s - 2 * t * s)))


def hardswish_double_backward(ggI, gO, self):
    inside = ember.logical_and(self > -3.0, self < 3.0)
    return ember.where(inside, ggI * gO / 3.0, 0)


def softplus_double_backward(grad, self, beta, threshold):
    x = self * beta
    s = x.sigmoid()
    return grad * s * (1 - s) * (x < threshold) * beta


def elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result, self_or_result):
    neg = (self_or_result < 0).to(grad._dtype)
    if is_result:
        return grad * grad_output * input_scale * neg
    return elu_backward(grad * grad_output * input_scale, alpha, scale, input_scale, is_result,
                        self_or_result) * neg


def glu_double_backward(grad, grad_output, self, dim):
    gO = grad_output
    d = dim % self.dim()
    n = self._shape[d] // 2
    a, b = self.narrow(d, 0, n), self.narrow(d, n, n)
    s = b.sigmoid()
    one_sub = 1 - s
    s1s = s * one_sub
    gga, ggb = grad.narrow(d, 0, n), grad.narrow(d, n, n)
    gi_a = ggb * gO * s1s
    second = s1s * one_sub - s * s1s
    gi_b = ggb * a * gO * second + gga * gO * s1s
    return ember.cat([gi_a, gi_b], d)


def glu_double_backward_grad_output(grad, self, dim):
    d = dim % self.dim()
    n = self._shape[d] // 2
    sizes = list(self._shape)
    sizes[d] = n
    ones = ember.ones(tuple(sizes), dtype=self._dtype, device=self._device)
    tmp = grad * glu_backward(ones, self, d)
    return tmp.narrow(d, 0, n) + tmp.narrow(d, n, n)


def log_sigmoid_double_backward(grad, self):
    z = self.sigmoid()
    return grad * (z - 1) * z


def hardsigmoid_double_backward():
    raise RuntimeError("derivative for aten::hardsigmoid_backward is not implemented")


# ---- selection --------------------------------------------------------------------------------
def masked_fill_backward(grad, mask):
    """The gradient of masked_fill's 0-dim value: the sum of grad where mask is set."""
    return ember.where(mask, grad, 0).sum()
