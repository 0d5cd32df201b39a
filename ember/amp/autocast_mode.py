"""Autocast: the dispatch layer above Autograd that casts inputs per op policy (autocast_mode.cpp).

Every tensor carries its device's Autocast key, excluded in thread-local state; entering
`autocast(device_type)` lifts the exclusion, so only calls inside the region pay for the layer.
Policies (PyTorch's lists, per device type): run in the lower-precision dtype, run in float32,
or run in the widest input dtype. A cast of a leaf weight is cached for the whole region.
"""
import functools

from ember.core import dtype as _dt, tls
from ember.core.keys import DispatchKey as K
from ember.core.tensor_impl import TensorImpl
from ember.dispatch.operator import OPERATORS

_state = tls.current

# --- PyTorch's lists (aten/src/ATen/autocast_mode.cpp), by operator name ------------------------
LOWER = {
    "cpu": ["conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm",
            "linear", "_convolution", "convolution", "matmul", "conv_tbc", "conv_transpose1d",
            "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention",
            "_native_multi_head_attention",
            # composites in PyTorch that decompose into bmm/mm (so they autocast there); ember
            # runs them as single kernels, so they are listed to give the same dtypes
            "einsum", "tensordot", "chain_matmul", "linalg_multi_dot"],
    "cuda": ["_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
             "conv_transpose2d", "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr",
             "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
             "chain_matmul", "linalg_multi_dot", "scaled_dot_product_attention"],
}
FP32 = {
    "cpu": ["avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile",
            "nanquantile", "stft", "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse",
            "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
            "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d",
            "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
            "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss",
            "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss",
            "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
            "ctc_loss", "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits",
            "linalg_matrix_rank", "linalg_pinv", "linalg_det", "linalg_inv", "linalg_solve",
            "linalg_svd", "linalg_svdvals", "linalg_qr", "linalg_cholesky", "linalg_eigh",
            "linalg_eigvalsh", "linalg_eig", "linalg_eigvals", "linalg_lstsq", "linalg_cond",
            "fft_fft", "fft_ifft", "fft_rfft", "fft_irfft"],
    "cuda": ["acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
             "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm",
             "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss",
             "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div",
             "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
             "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
             "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
             "softmax", "log_softmax", "_softmax", "_log_softmax", "cumprod", "cumsum", "sum", "prod",
             "norm", "linalg_vector_norm", "linalg_matrix_norm"],
}
PROMOTE = {
    "cpu": ["stack", "cat", "index_copy"],
    "cuda": ["addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sampler", "index_put",
             "scatter_add", "tensordot", "stack", "cat", "index_copy"],
}
_KEY = {"cpu": K.AutocastCPU, "cuda": K.AutocastCUDA}


def _region():
    st = _state()
    r = st.autocast
    if r is None:
        r = st.autocast = {"cpu": [False, _dt.bfloat16], "cuda": [False, _dt.float16],
                               "cache": {}, "cache_enabled": True, "depth": 0}
    return r


def _eligible(t, device_type):
    return (isinstance(t, TensorImpl) and t._dtype.category == _dt.FLOAT and t._dtype is not _dt.float64
            and t._device.type == device_type)


def _cast(t, dtype, region):
    if t._dtype is dtype:
        return t
    m = t._ameta
    leaf_weight = m is not None and m.requires_grad and m.grad_fn is None
    if leaf_weight and region["cache_enabled"]:
        key = (id(t), dtype)
        hit = region["cache"].get(key)
        if hit is not None and hit[0] is t:
            return hit[1]
        r = t.to(dtype)
        region["cache"][key] = (t, r)
        return r
    return t.to(dtype)


def _map(args, fn):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], TensorImpl):
            out.append(type(a)(fn(x) for x in a))
        else:
            out.append(fn(a))
    return out


def _kernel(policy, device_type, key):
    mask = 1 << key

    def autocast(below, *args):
        region = _region()
        if policy == "lower":
            dtype = region[device_type][1]
            args = _map(args, lambda a: _cast(a, dtype, region) if _eligible(a, device_type) else a)
        elif policy == "fp32":
            args = _map(args, lambda a: _cast(a, _dt.float32, region) if _eligible(a, device_type) else a)
        else:  # widest float type among the tensor inputs
            widest = None
            for a in _flat(args):
                if isinstance(a, TensorImpl) and a._dtype.category == _dt.FLOAT:
                    widest = a._dtype if widest is None else _dt.promote_types(widest, a._dtype)
            if widest is not None:
                args = _map(args, lambda a: _cast(a, widest, region)
                            if isinstance(a, TensorImpl) and a._dtype.category == _dt.FLOAT else a)
        prev = _state().dk
        _state().dk = (prev[0], prev[1] & ~mask)  # ops called below do not autocast again
        try:
            return below(*args)
        finally:
            _state().dk = prev
    autocast.__name__ = f"autocast_{policy}"
    return autocast


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def register_lists():
    by_name = {}
    for op in OPERATORS.values():
        if op.ns == "aten" and "!" not in op._text and not op.name.endswith("_"):
            by_name.setdefault(op.name, []).append(op)
    for dev, key in _KEY.items():
        for policy, lists in (("lower", LOWER), ("fp32", FP32), ("promote", PROMOTE)):
            for name in lists[dev]:
                for op in by_name.get(name, ()):
                    op.register(key, _kernel(policy, dev, key), redispatch=True, name=f"autocast.{policy}")


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None): context manager and decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _KEY:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device_type = device_type
        self.fast_dtype = dtype if dtype is not None else (_dt.bfloat16 if device_type == "cpu" else _dt.float16)
        if device_type == "cpu" and self.fast_dtype not in (_dt.bfloat16, _dt.float16):
            import warnings
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled

    def __enter__(self):
        r = _region()
        dev = r[self.device_type]
        self.prev = (dev[0], dev[1], r["cache_enabled"], _state().excluded)
        dev[0], dev[1] = self._enabled, self.fast_dtype
        if self._cache_enabled is not None:
            r["cache_enabled"] = self._cache_enabled
        bit = 1 << _KEY[self.device_type]
        _state().excluded = (_state().excluded & ~bit) if self._enabled else (_state().excluded | bit)
        r["depth"] += 1
        return self

    def __exit__(self, *exc):
        r = _region()
        dev = r[self.device_type]
        dev[0], dev[1], r["cache_enabled"], _state().excluded = self.prev
        r["depth"] -= 1
        if r["depth"] == 0:
            r["cache"].clear()  # casts of weights live for one outermost region

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*a, **k)
        return wrapper


def is_autocast_enabled(device_type="cuda"):
    return _region()[device_type][0]


def get_autocast_dtype(device_type):
    return _region()[device_type][1]


def is_autocast_available(device_type):
    return device_type in _KEY
