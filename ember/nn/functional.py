"""ember.nn.functional (torch/nn/functional.py).

What is here: linear, bilinear, the dropout family, every activation (relu, gelu, softmax, ...) with
torch.nn.functional's signatures (`inplace=`, `_stacklevel`, `dtype=`), one_hot, pad, normalize.
Where PyTorch binds a torch._C._nn function directly (linear, gelu, softplus, logsigmoid, one_hot,
...), so does this module, from ember/_generated/functions_nn.py.

Extending it (other layer families: convolution, pooling, normalization, losses, embedding,
attention, ...): put the functions in a new file `ember/nn/_functional_<family>.py` with an
`__all__` list, and name that file in the import at the end of this module; the names of its
`__all__` become attributes of ember.nn.functional and may replace the ones defined here. Such a
file sits below this module, which imports it: it takes what it needs from the layers below
(ember/_generated/functions_nn.py, where F.pad, F.linear, F.logsigmoid come from) or from another
family file, never from ember.nn.functional. ember.nn is imported while `import ember` runs, so
module-level code of such a file must not read attributes of the ember package (ember.no_grad,
functions of ember/_python_api/...): look them up inside the functions. A file that fails to
import breaks `import ember`, loudly. Finally, each function of
ember/_generated/functions_nn.py (ops declared with `python_module: nn`) that is still missing is
exposed as is, so a new torch._C._nn op is reachable as F.<name> even before a wrapper with
torch.nn.functional's signature is written.
"""
import warnings

import ember
from ember._generated import functions_nn as _nn
# the other families of functions (see above), exported at the end of this module
from ember.nn import (_functional_ctc, _functional_fractional, _functional_grid, _functional_linear_ce,
                      _functional_norm_loss, _functional_rnn, _functional_spatial)

# ---- linear layers (torch._C._nn.linear, torch.bilinear) ----------------------------------------
linear = _nn.linear


def bilinear(input1, input2, weight, bias=None):
    return ember.bilinear(input1, input2, weight, bias)


# ---- dropout ------------------------------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    return ember.dropout_(input, p, training) if inplace else ember.dropout(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if inplace:
        return ember.alpha_dropout_(input, p, training)
    return ember.alpha_dropout(input, p, training)


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
            "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    is_batched = inp_dim == 3
    if not is_batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    if inplace:
        result = ember.feature_dropout_(input, p, training)
    else:
        result = ember.feature_dropout(input, p, training)
    if not is_batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and an "
            "optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
            "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
            "dim. This behavior will change in a future release to interpret the input as one "
            "without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
            "dropout behavior, please switch to using dropout1d instead.", stacklevel=2)
    if inplace:
        return ember.feature_dropout_(input, p, training)
    return ember.feature_dropout(input, p, training)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and an "
            "optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    is_batched = inp_dim == 5
    if not is_batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    if inplace:
        result = ember.feature_dropout_(input, p, training)
    else:
        result = ember.feature_dropout(input, p, training)
    if not is_batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if inplace:
        return ember.feature_alpha_dropout_(input, p, training)
    return ember.feature_alpha_dropout(input, p, training)


# ---- activations --------------------------------------------------------------------------------
def threshold(input, threshold, value, inplace=False):
    if inplace:
        return ember.threshold_(input, threshold, value)
    return ember.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return ember.threshold_(input, threshold, value)


def relu(input, inplace=False):
    if inplace:
        return ember.relu_(input)
    return ember.relu(input)


def relu_(input):
    return ember.relu_(input)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return _nn.glu(input, dim)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _nn.hardtanh_(input, min_val, max_val)
    return _nn.hardtanh(input, min_val, max_val)


hardtanh_ = _nn.hardtanh_


def relu6(input, inplace=False):
    if inplace:
        return _nn.relu6_(input)
    return _nn.relu6(input)


def elu(input, alpha=1.0, inplace=False):
    if inplace:
        return _nn.elu_(input, alpha)
    return _nn.elu(input, alpha)


elu_ = _nn.elu_


def selu(input, inplace=False):
    if inplace:
        return ember.selu_(input)
    return ember.selu(input)


def selu_(input):
    return ember.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    if inplace:
        return ember.celu_(input, alpha)
    return ember.celu(input, alpha)


def celu_(input, alpha=1.0):
    return ember.celu_(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _nn.leaky_relu_(input, negative_slope)
    return _nn.leaky_relu(input, negative_slope)


leaky_relu_ = _nn.leaky_relu_


def prelu(input, weight):
    return ember.prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if inplace:
        return ember.rrelu_(input, lower, upper, training)
    return ember.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return ember.rrelu_(input, lower, upper, training)


logsigmoid = _nn.log_sigmoid
gelu = _nn.gelu
softplus = _nn.softplus
softshrink = _nn.softshrink


def hardshrink(input, lambd=0.5):
    return ember.hardshrink(input, lambd)


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (input.abs() + 1)


def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=stacklevel)
    if ndim == 0 or ndim == 1 or ndim == 3:
        return 0
    return 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is None:
        return (-input).softmax(dim)
    return (-input).softmax(dim, dtype=dtype)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    if dtype is None:
        return input.softmax(dim)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    if dtype is None:
        return input.log_softmax(dim)
    return input.log_softmax(dim, dtype=dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -ember.empty_like(logits).exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = ember.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def hardsigmoid(input, inplace=False):
    if inplace:
        return _nn.hardsigmoid_(input)
    return _nn.hardsigmoid(input)


def silu(input, inplace=False):
    if inplace:
        return _nn.silu_(input)
    return _nn.silu(input)


def mish(input, inplace=False):
    if inplace:
        return _nn.mish_(input)
    return _nn.mish(input)


def hardswish(input, inplace=False):
    if inplace:
        return _nn.hardswish_(input)
    return _nn.hardswish(input)


# ---- misc ---------------------------------------------------------------------------------------
one_hot = _nn.one_hot


def pad(input, pad, mode="constant", value=None):
    return _nn.pad(input, pad, mode, value)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    # (PyTorch expands the denominator first; broadcasting the division gives the same values)
    if out is None:
        denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
        return input / denom
    denom = input.norm(p, dim, keepdim=True).clamp_min_(eps)
    return ember.div(input, denom, out=out)


__all__ = [
    "linear", "bilinear", "dropout", "alpha_dropout", "dropout1d", "dropout2d", "dropout3d",
    "feature_alpha_dropout", "threshold", "threshold_", "relu", "relu_", "glu", "hardtanh",
    "hardtanh_", "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu",
    "leaky_relu_", "prelu", "rrelu", "rrelu_", "logsigmoid", "gelu", "softplus", "softshrink",
    "hardshrink", "tanhshrink", "softsign", "softmin", "softmax", "log_softmax", "gumbel_softmax",
    "tanh", "sigmoid", "hardsigmoid", "silu", "mish", "hardswish", "one_hot", "pad", "normalize",
]


# ---- the other families (ember/nn/_functional_*.py), then torch._C._nn functions not wrapped yet --
# In this order: a later family's name replaces an earlier one's.
def _export(families):
    g = globals()
    for mod in families:
        for n in mod.__all__:
            g[n] = getattr(mod, n)
            if n not in __all__:
                __all__.append(n)
    for n in _nn.__all__:
        if n not in g:
            g[n] = getattr(_nn, n)


_export((_functional_grid, _functional_norm_loss, _functional_rnn, _functional_spatial, _functional_ctc,
         _functional_fractional, _functional_linear_ce))
