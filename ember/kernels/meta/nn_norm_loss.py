"""Meta functions of nll_loss_forward and native_layer_norm, and the checks the CPU kernels share."""
from ember.core import dtype as _dt
from ember.kernels.meta.compare import not_implemented

_SCALAR_NAMES = {"int32": "Int", "int16": "Short", "int8": "Char", "bool": "Bool",
                 "float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble", "uint16": "UInt16", "uint32": "UInt32",
                 "uint64": "UInt64"}
_FLOATS = (_dt.float32, _dt.float64, _dt.float16, _dt.bfloat16)


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def nll_check(shape, d, tshape, td, wshape, wd, reduction):
    """PyTorch's nll_loss_forward checks; returns (output shape, n_classes)."""
    nd = len(shape)
    if not 0 < nd <= 2:
        raise RuntimeError("input tensor should be 1D or 2D")
    if len(tshape) > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    no_batch = nd == 1 and len(tshape) == 0
    if not (no_batch or shape[0] == (tshape[0] if tshape else 1)):
        raise RuntimeError(f"size mismatch (got input: {_fmt(shape)}, target: {_fmt(tshape)})")
    n_classes = shape[-1]
    if wshape is not None:
        numel = 1
        for s in wshape:
            numel *= s
        if not (len(wshape) <= 1 and numel == n_classes):
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                               f"or no classes but got weight tensor of shape: {_fmt(wshape)}")
    if td is not _dt.int64 and td is not _dt.uint8:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_SCALAR_NAMES.get(td.name, td.name)}")
    if d not in _FLOATS:
        raise not_implemented("nll_loss_out_frame", d)
    out = (shape[0],) if (reduction == 0 and nd == 2) else ()
    return out, n_classes


def nll_loss_forward(t, target, weight, reduction, ignore_index):
    out, _ = nll_check(t._shape, t._dtype, target._shape, target._dtype,
                       None if weight is None else weight._shape,
                       None if weight is None else weight._dtype, reduction)
    return (out, t._dtype), ((), t._dtype)


def layer_norm_check(shape, normalized_shape, wshape, bshape):
    normalized_shape = tuple(normalized_shape)
    nn = len(normalized_shape)
    if nn < 1:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = "
                           f"{_fmt(normalized_shape)}")
    if wshape is not None and tuple(wshape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {_fmt(wshape)} and normalized_shape = "
                           f"{_fmt(normalized_shape)}")
    if bshape is not None and tuple(bshape) != normalized_shape:
        raise RuntimeError(f"Expected bias to be of same shape as normalized_shape, but got "
                           f"bias of shape {_fmt(bshape)} and normalized_shape = "
                           f"{_fmt(normalized_shape)}")
    nd = len(shape)
    if nd < nn or tuple(shape[nd - nn:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={_fmt(normalized_shape)}, expected input with "
                           f"shape [*, {_fmt(normalized_shape)[1:]}, but got input of size"
                           f"{_fmt(shape)}")
    return tuple(shape[:nd - nn]) + (1,) * nn


def native_layer_norm(t, normalized_shape, weight, bias, eps):
    stat = layer_norm_check(t._shape, normalized_shape,
                            None if weight is None else weight._shape,
                            None if bias is None else bias._shape)
    if t._dtype not in _FLOATS:
        raise not_implemented("LayerNormKernelImpl", t._dtype)
    return (t._shape, t._dtype), (stat, t._dtype), (stat, t._dtype)


def batch_norm_check(shape, d, wshape, bshape, rmshape, rvshape, training):
    """PyTorch's batch_norm checks; returns the number of channels."""
    if d not in _FLOATS:
        raise not_implemented("batch_norm", d)
    c = shape[1] if len(shape) > 1 else (shape[0] if shape else 1)
    for name, s in (("weight", wshape), ("bias", bshape), ("running_mean", rmshape),
                    ("running_var", rvshape)):
        if s is not None:
            n = 1
            for v in s:
                n *= v
            if n != c:
                raise RuntimeError(f"{name} should contain {c} elements not {n}")
    if training:
        n = 1
        for v in shape:
            n *= v
        if n == 0:
            raise RuntimeError(f"input tensor must have at least one element, but got "
                               f"input_sizes = {_fmt(shape)}")
    if not training and (rmshape is None or rvshape is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    return c


def native_batch_norm(t, weight, bias, running_mean, running_var, training, momentum, eps):
    def s(x):
        return None if x is None else x._shape
    c = batch_norm_check(t._shape, t._dtype, s(weight), s(bias), s(running_mean),
                         s(running_var), training)
    sd = _dt.float32 if t._dtype in (_dt.float16, _dt.bfloat16) else t._dtype
    n = c if training else 0
    return (t._shape, t._dtype), ((n,), sd), ((n,), sd)


def group_norm_check(shape, d, wshape, bshape, num_groups):
    c = shape[1] if len(shape) > 1 else 1
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {_fmt(shape)} and num_groups={num_groups}")
    for name, s in (("weight", wshape), ("bias", bshape)):
        if s is not None and not (len(s) == 1 and s[0] == c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {_fmt(s)} and input "
                               f"of shape {_fmt(shape)}")
    if d not in _FLOATS:
        raise not_implemented("GroupNormKernelImpl", d)


def native_group_norm(t, weight, bias, N, C, HxW, group, eps):
    group_norm_check(t._shape, t._dtype, None if weight is None else weight._shape,
                     None if bias is None else bias._shape, group)
    return (t._shape, t._dtype), ((N, group), t._dtype), ((N, group), t._dtype)


# ---- pointwise losses ---------------------------------------------------------------------------
def _bshape(a, b):
    from ember.kernels.meta.pointwise import broadcast_shapes
    return broadcast_shapes(a, b)


def loss_dtype(kernel, d1, d2, promote=True):
    from ember.core.dtype import result_type_of
    d = result_type_of(((d1, 0), (d2, 0))) if promote else d1
    if d not in _FLOATS:
        raise not_implemented(kernel, d)
    return d


def loss_shape(s1, s2, reduction):
    shape = _bshape(tuple(s1), tuple(s2))
    return shape if reduction == 0 else ()


def mse_loss(t, target, reduction=1):
    return loss_shape(t._shape, target._shape, reduction), loss_dtype("mse_cpu", t._dtype,
                                                                      target._dtype)


def smooth_l1_loss(t, target, reduction=1, beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return loss_shape(t._shape, target._shape, reduction), loss_dtype(
        "smooth_l1_cpu", t._dtype, target._dtype)


def huber_loss(t, target, reduction=1, delta=1.0):
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return loss_shape(t._shape, target._shape, reduction), loss_dtype(
        "huber_cpu", t._dtype, target._dtype, promote=False)


def bce_check(d, td, wd):
    if td is not d:
        raise RuntimeError(f"Found dtype {_SCALAR_NAMES[td.name]} but expected "
                           f"{_SCALAR_NAMES[d.name]}")
    if d not in _FLOATS:
        raise not_implemented("binary_cross_entropy", d)


def binary_cross_entropy(t, target, weight=None, reduction=1):
    bce_check(t._dtype, target._dtype, None)
    shape = tuple(t._shape)
    return (shape if reduction == 0 else ()), t._dtype


def binary_cross_entropy_with_logits(t, target, weight=None, pos_weight=None, reduction=1):
    shape = _bshape(tuple(t._shape), tuple(target._shape))
    d = loss_dtype("log_sigmoid_cpu", t._dtype, target._dtype)
    for w in (weight, pos_weight):
        if w is not None:
            shape = _bshape(shape, tuple(w._shape))
            d = loss_dtype("log_sigmoid_cpu", d, w._dtype)
    return (shape if reduction == 0 else ()), d


def nll2d_check(shape, d, tshape, td, wshape):
    if len(tshape) != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {len(tshape)}")
    if len(shape) != 4:
        raise RuntimeError("only batches of spatial inputs supported (4D tensors), but got input "
                           f"of dimension: {len(shape)}")
    if wshape is not None:
        n = 1
        for v in wshape:
            n *= v
        if n != shape[1]:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
    if (shape[0], shape[2], shape[3]) != tuple(tshape):
        raise RuntimeError(f"size mismatch (got input: {_fmt(shape)} , target: {_fmt(tshape)}")
    if td is not _dt.int64 and td is not _dt.uint8:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_SCALAR_NAMES.get(td.name, td.name)}")
    if d not in _FLOATS:
        raise not_implemented("nll_loss2d_forward_out_frame", d)


def nll_loss2d_forward(t, target, weight, reduction, ignore_index):
    nll2d_check(t._shape, t._dtype, target._shape, target._dtype,
                None if weight is None else weight._shape)
    out = tuple(target._shape) if reduction == 0 else ()
    return (out, t._dtype), ((), t._dtype)


def nll_loss_backward(go, t, target, weight, reduction, ignore_index, total_weight):
    return t._shape, t._dtype


def native_layer_norm_backward(go, t, normalized_shape, mean, rstd, weight, bias, output_mask):
    empty = ((0,), t._dtype)
    gi = (t._shape, t._dtype) if output_mask[0] else empty
    gw = (weight._shape, weight._dtype) if output_mask[1] and weight is not None else empty
    gb = (bias._shape, bias._dtype) if output_mask[2] and bias is not None else empty
    return gi, gw, gb


_FLASH = "scaled_dot_product_attention_flash_attention: "


def flash_check(dtypes, shapes, dropout_p, mask_dtype):
    """torch's checks of the flash CPU kernel, in its order (attention.cpp); plain dtypes and
    shapes of (q, k, v), so the CPU kernel (which gets arrays) runs the same checks."""
    d = dtypes[0]
    if d not in (_dt.float32, _dt.float64, _dt.bfloat16, _dt.float16):
        raise RuntimeError(f"{_FLASH}Expected data type in FP32, FP64, BF16, FP16, but got {d._short} instead.")
    q, k, v = shapes
    if not len(q) == len(k) == len(v) == 4:
        raise RuntimeError(_FLASH + "Accept only 4 dims inputs shape of {B, H, T, K}")
    if dropout_p != 0.0:
        raise RuntimeError(_FLASH + "Currently do not support dropout > 0")
    if q[3] != v[3] or k[3] != v[3]:
        raise RuntimeError(_FLASH + "Q/K/V should have the same head size")
    if mask_dtype is not None and mask_dtype is not _dt.bool_ and mask_dtype is not d:
        raise RuntimeError(_FLASH + "Attention mask is the same data type as query")
    for t in dtypes[1:]:
        if t is not d:
            raise RuntimeError(f"expected scalar type {d._short} but found {t._short}")


def sdpa_flash_cpu(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None):
    d = q._dtype
    flash_check((d, k._dtype, v._dtype), (q._shape, k._shape, v._shape), dropout_p,
                None if attn_mask is None else attn_mask._dtype)
    lse = _dt.float32 if d in (_dt.float16, _dt.bfloat16) else d
    lead = tuple(q._shape[:-1])
    return (lead + (v._shape[-1],), d), (lead, lse)


def sdpa_flash_cpu_backward(go, q, k, v, out, lse, dropout_p, is_causal, attn_mask=None, scale=None):
    return (tuple(q._shape), q._dtype), (tuple(k._shape), k._dtype), (tuple(v._shape), v._dtype)
