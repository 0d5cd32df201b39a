"""Meta functions of the spatial nn ops, and PyTorch's argument checks the CPU kernels share.

The checks take shapes and dtypes (not data), so the CPU kernels call the same functions on their
arrays' shapes and both backends raise PyTorch's errors in PyTorch's order.
"""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape, wrap_dim
from ember.kernels.meta.compare import MASK_NAMES, not_implemented

BOOL, INT, FLOAT, COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
_i64 = _dt.int64
_HALF = (_dt.float16, _dt.bfloat16)


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _tdiv(a, b):
    """C++ integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _err(msg):
    return RuntimeError(msg)


# ---- dtype tables (which dtypes each ATen CPU kernel dispatches) ------------------------------------
_FLOATS = frozenset((_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64))
_FLOAT_COMPLEX = _FLOATS | {_dt.complex64, _dt.complex128}
_ALL_NUM = _FLOAT_COMPLEX | {_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64}
_REAL = _FLOATS | {_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64}


def check_dtype(kernel, d, allowed):
    if d not in allowed:
        raise not_implemented(kernel, d)


# ---- convolution -----------------------------------------------------------------------------------
def _expand_param(v, name, dim):
    v = tuple(v)
    if len(v) == 1:
        return v * dim
    if len(v) != dim:
        raise _err(f"expected {name} to be a single integer value or a list of {dim} values to match "
                   f"the convolution dimensions, but got {name}={fmt_shape(v)}")
    return v


def conv_setup(in_shape, w_shape, b_shape, stride, padding, dilation, transposed, output_padding,
               groups):
    """ATen's _convolution checks (check_shape_forward and friends).
    Returns (stride, padding, dilation, output_padding, output shape)."""
    k = len(w_shape)
    dim = k - 2
    if dim <= 0:
        raise _err("weight should have at least three dimensions")
    if groups <= 0:
        raise _err("non-positive groups is not supported")
    stride = _expand_param(stride, "stride", dim)
    padding = _expand_param(padding, "padding", dim)
    dilation = _expand_param(dilation, "dilation", dim)
    output_padding = _expand_param(output_padding, "output_padding", dim)
    if any(p < 0 for p in padding):
        raise _err("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise _err("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise _err("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise _err("dilation should be greater than zero")
    if len(in_shape) != k:
        raise _err(f"Expected {k}-dimensional input for {k}-dimensional weight {fmt_shape(w_shape)}, "
                   f"but got {len(in_shape)}-dimensional input of size {fmt_shape(in_shape)} instead")
    if w_shape[0] < groups:
        raise _err(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
                   f"but got weight of size {fmt_shape(w_shape)} instead")
    if w_shape[0] % groups:
        raise _err(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                   f"but got weight of size [{fmt_shape(w_shape)}] instead")
    spatial = in_shape[2:]
    ks = w_shape[2:]
    if not transposed:
        c = w_shape[1] * groups
        if in_shape[1] != c:
            raise _err(f"Given groups={groups}, weight of size {fmt_shape(w_shape)}, expected "
                       f"input{fmt_shape(in_shape)} to have {c} channels, but got {in_shape[1]} "
                       f"channels instead")
        if b_shape is not None and (len(b_shape) != 1 or b_shape[0] != w_shape[0]):
            raise _err(f"Given weight of size {fmt_shape(w_shape)}, expected bias to be 1-dimensional "
                       f"with {w_shape[0]} elements, but got bias of size {fmt_shape(b_shape)} instead")
        padded = [s + 2 * p for s, p in zip(spatial, padding)]
        kern = [d * (kk - 1) + 1 for d, kk in zip(dilation, ks)]
        if any(a < b for a, b in zip(padded, kern)):
            raise _err(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                       f"Kernel size: ({' x '.join(map(str, kern))}). Kernel size can't be greater "
                       f"than actual input size")
        if any(d == 0 for d in dilation):
            raise _err(f"dilation should be greater than zero, but got {fmt_shape(dilation)}")
        out = tuple((a - b) // s + 1 for a, b, s in zip(padded, kern, stride))
        oc = w_shape[0]
    else:
        if in_shape[1] != w_shape[0]:
            raise _err(f"Given transposed=1, weight of size {fmt_shape(w_shape)}, expected "
                       f"input{fmt_shape(in_shape)} to have {w_shape[0]} channels, but got "
                       f"{in_shape[1]} channels instead")
        oc = w_shape[1] * groups
        if b_shape is not None and (len(b_shape) != 1 or b_shape[0] != oc):
            raise _err(f"Given transposed=1, weight of size {fmt_shape(w_shape)}, expected bias to be "
                       f"1-dimensional with {oc} elements, but got bias of size {fmt_shape(b_shape)} "
                       f"instead")
        out = tuple((s - 1) * st - 2 * p + d * (kk - 1) + 1 + op for s, st, p, d, kk, op in
                    zip(spatial, stride, padding, dilation, ks, output_padding))
    if in_shape[1] == 0:
        oc = 0
    return stride, padding, dilation, output_padding, (in_shape[0], oc) + out


def _names(vals, names):
    return " ".join(f"{n}: {v}" for n, v in zip(names, vals))


def conv_kernel_checks(in_shape, in_d, w_shape, w_d, stride, padding, dilation, transposed,
                       output_padding, out_shape):
    """Checks ATen's CPU convolution kernels make (empty inputs skip them: the Empty backend)."""
    dim = len(w_shape) - 2
    if transposed:
        if dim <= 2:
            st = (1,) * (2 - dim) + tuple(stride)
            op = (0,) * (2 - dim) + tuple(output_padding)
            dl = (1,) * (2 - dim) + tuple(dilation)
            if any(d == 0 for d in dl):
                raise _err(f"dilation should be greater than zero, but got dilation_height: {dl[0]}, "
                           f"dilation_width: {dl[1]}")
            if not all(o < s or o < d for o, s, d in zip(op, st, dl)):
                raise _err("output padding must be smaller than either stride or dilation, but got "
                           + _names(op, ("output_padding_height", "output_padding_width")) + " "
                           + _names(st, ("stride_height", "stride_width")) + " "
                           + _names(dl, ("dilation_height", "dilation_width")))
            sp = (1,) * (2 - dim) + tuple(in_shape[2:])
            o = (1,) * (2 - dim) + tuple(out_shape[2:]) if dim == 1 else tuple(out_shape[2:])
        else:
            if not all(o < s or o < d for o, s, d in zip(output_padding, stride, dilation)):
                raise _err("output padding must be smaller than either stride or dilation, but got "
                           + _names(output_padding, ("output_padding_depth", "output_padding_height",
                                                     "output_padding_width")) + " "
                           + _names(stride, ("stride_depth", "stride_height", "stride_width")) + " "
                           + _names(dilation, ("dilation_depth", "dilation_height", "dilation_width")))
            sp, o = tuple(in_shape[2:]), tuple(out_shape[2:])
        if any(x < 1 for x in o):
            raise _err(f"Given input size per channel: ({' x '.join(map(str, sp))}). Calculated output "
                       f"size per channel: ({' x '.join(map(str, o))}). Output size is too small")
        kernel = "slow_conv_transpose3d_out_cpu" if dim == 3 else "slow_conv_transpose2d_out_cpu"
        allowed = _FLOAT_COMPLEX | {_i64}
    elif any(d != 1 for d in dilation):
        kernel, allowed = "slow_conv_dilated<>", _FLOAT_COMPLEX | {_i64}
    elif dim == 3:
        kernel, allowed = "compute_columns3d", _ALL_NUM
    else:
        kernel, allowed = "slow_conv2d_cpu", _ALL_NUM
    if w_d is not in_d:
        raise _err(f"expected scalar type {in_d._short} but found {w_d._short}")
    # complex inputs run as three real convolutions of their parts (torch's complex_convolution),
    # so complex32's kernels are float16's
    check_dtype(kernel, _dt.float16 if in_d is _dt.complex32 else in_d, allowed)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    b_shape = None if bias is None else bias._shape
    st, pd, dl, op, out = conv_setup(input._shape, weight._shape, b_shape, stride, padding, dilation,
                                     transposed, output_padding, groups)
    if _prod(input._shape):
        conv_kernel_checks(input._shape, input._dtype, weight._shape, weight._dtype, st, pd, dl,
                           transposed, op, out)
    return out, input._dtype


def conv_bias_check(in_d, bias):
    if bias is not None and bias._dtype is not in_d:
        raise _err(f"Input type ({MASK_NAMES[in_d]}) and bias type ({MASK_NAMES[bias._dtype]}) should "
                   f"be the same")


def conv_batchify(shape, nd, name):
    n = nd + 1
    if len(shape) != n and len(shape) != n + 1:
        raise _err(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to {name}, but got input "
                   f"of size: {fmt_shape(shape)}")
    return len(shape) == n + 1


# ---- pooling: output sizes and shape checks (Pool.h) -------------------------------------------------
def pooling_output_shape(size, k, pad, stride, dilation, ceil_mode):
    if stride == 0:
        raise _err("stride should not be zero")
    if pad < 0:
        raise _err(f"pad must be non-negative, but got pad: {pad}")
    if pad > _tdiv((k - 1) * dilation + 1, 2):
        raise _err(f"pad should be at most half of effective kernel size, but got pad={pad}, "
                   f"kernel_size={k} and dilation={dilation}")
    out = (size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_params(name, nd, kernel_size, stride, padding, dilation):
    words = {2: "two", 3: "three"}[nd]
    if len(kernel_size) not in (1, nd):
        raise _err(f"{name}: kernel_size must either be a single int, or a tuple of {words} ints"
                   if name.startswith("max") else
                   f"{name}: kernel_size must either be a single int, or a tuple of {words} ints")
    if len(stride) not in (0, 1, nd):
        raise _err(f"{name}: stride must either be omitted, a single int, or a tuple of {words} ints")
    if len(padding) not in (1, nd):
        raise _err(f"{name}: padding must either be a single int, or a tuple of {words} ints")
    if dilation is not None and len(dilation) not in (1, nd):
        raise _err(f"{name}: dilation must be either a single int, or a tuple of {words} ints")
    ks = tuple(kernel_size) * nd if len(kernel_size) == 1 else tuple(kernel_size)
    if not stride:
        st = ks
    else:
        st = tuple(stride) * nd if len(stride) == 1 else tuple(stride)
    pd = tuple(padding) * nd if len(padding) == 1 else tuple(padding)
    if dilation is None:
        dl = (1,) * nd
    else:
        dl = tuple(dilation) * nd if len(dilation) == 1 else tuple(dilation)
    return ks, st, pd, dl


def pool2d_shape_check(shape, ks, st, pd, dl, out):
    kh, kw = ks
    if not (kw > 0 and kh > 0):
        raise _err(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if not (st[1] > 0 and st[0] > 0):
        raise _err(f"stride should be greater than zero, but got dH: {st[0]} dW: {st[1]}")
    if not (dl[1] > 0 and dl[0] > 0):
        raise _err(f"dilation should be greater than zero, but got dilationH: {dl[0]} "
                   f"dilationW: {dl[1]}")
    ndim = len(shape)
    valid = shape[1] != 0 and shape[2] != 0
    if not ((ndim == 3 and shape[0] != 0 and valid) or (ndim == 4 and valid and shape[3] != 0)):
        raise _err(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                   f"but got:{fmt_shape(shape)}")
    if not (kw // 2 >= pd[1] and kh // 2 >= pd[0]):
        raise _err(f"pad should be smaller than or equal to half of kernel size, but got padW = "
                   f"{pd[1]}, padH = {pd[0]}, kW = {kw}, kH = {kh}")
    if out[1] < 1 or out[0] < 1:
        c, h, w = shape[-3:]
        raise _err(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}). "
                   f"Output size is too small")


def pool3d_shape_check(shape, ks, st, pd, dl, out, fn_name, check_input_size=False):
    kt, kh, kw = ks
    if not (kt > 0 and kw > 0 and kh > 0):
        raise _err(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} kW: {kw}")
    if not (st[0] > 0 and st[2] > 0 and st[1] > 0):
        raise _err(f"stride should be greater than zero, but got dT: {st[0]} dH: {st[1]} dW: {st[2]}")
    if not (dl[0] > 0 and dl[2] > 0 and dl[1] > 0):
        raise _err(f"dilation should be greater than zero, but got dilationT: {dl[0]} dilationH: "
                   f"{dl[1]} dilationW: {dl[2]}")
    ndim = len(shape)
    if ndim not in (4, 5):
        raise _err(f"{fn_name}: Expected 4D or 5D tensor for input, but got: {fmt_shape(shape)}")
    for i in range(ndim):
        if ndim == 5 and i == 0:
            continue
        if shape[i] <= 0:
            raise _err(f"{fn_name}: Expected input's non-batch dimensions to have positive length, but "
                       f"input has a shape of {fmt_shape(shape)} and non-batch dimension {shape[i]} has "
                       f"length zero!")
    it, ih, iw = shape[-3:]
    if check_input_size and not (it >= kt and ih >= kh and iw >= kw):
        raise _err(f"input image (T: {it} H: {ih} W: {iw}) smaller than kernel size (kT: {kt} kH: {kh} "
                   f"kW: {kw})")
    if not (kt // 2 >= pd[0] and kw // 2 >= pd[2] and kh // 2 >= pd[1]):
        raise _err(f"pad should be smaller than or equal to half of kernel size, but got kT: {kt} kW: "
                   f"{kw} kH: {kh} padT: {pd[0]} padW: {pd[2]} padH: {pd[1]}")
    if not (out[0] >= 1 and out[2] >= 1 and out[1] >= 1):
        c = shape[-4]
        raise _err(f"Given input size: ({c}x{it}x{ih}x{iw}). Calculated output size: "
                   f"({c}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")


def max_pool_setup(shape, nd, kernel_size, stride, padding, dilation, ceil_mode):
    """(kernel, stride, padding, dilation, output spatial sizes) of max_pool{2,3}d_with_indices."""
    name = "max_pool2d" if nd == 2 else "max_pool3d"
    ks, st, pd, dl = _pool_params(name, nd, kernel_size, stride, padding, dilation)
    if nd == 2:
        if len(shape) not in (3, 4):
            raise _err("non-empty 3D or 4D (batch mode) tensor expected for input")
    elif len(shape) not in (4, 5):
        raise _err("non-empty 4D or 5D (batch mode) tensor expected for input")
    sp = shape[-nd:]
    out = tuple(pooling_output_shape(s, k, p, t, d, ceil_mode)
                for s, k, p, t, d in zip(sp, ks, pd, st, dl))
    if nd == 2:
        pool2d_shape_check(shape, ks, st, pd, dl, out)
    else:
        pool3d_shape_check(shape, ks, st, pd, dl, out, "max_pool3d_with_indices_out_cpu_template()")
    return ks, st, pd, dl, out


def avg_pool_setup(shape, nd, kernel_size, stride, padding, ceil_mode, divisor_override):
    name = "avg_pool2d" if nd == 2 else "avg_pool3d"
    words = {2: "two", 3: "three"}[nd]
    if len(kernel_size) not in (1, nd):
        raise _err(f"{name}: kernel_size must either be a single int, or a tuple of {words} ints"
                   if nd == 2 else f"{name}: kernel_size must be a single int, or a tuple of three ints")
    if len(stride) not in (0, 1, nd):
        raise _err(f"{name}: stride must either be omitted, a single int, or a tuple of {words} ints"
                   if nd == 2 else
                   f"{name}: stride must be omitted, a single int, or a tuple of three ints")
    if len(padding) not in (1, nd):
        raise _err(f"{name}: padding must either be a single int, or a tuple of {words} ints"
                   if nd == 2 else f"{name}: padding must be a single int, or a tuple of three ints")
    ks, st, pd, dl = _pool_params(name, nd, kernel_size, stride, padding, None)
    if divisor_override is not None and divisor_override == 0:
        raise _err("divisor must be not zero")
    if nd == 2:
        wrap_dim(-3, len(shape))  # ATen reads input.size(-3) before checking the dims
    elif len(shape) not in (4, 5):
        raise _err("non-empty 4D or 5D (batch mode) tensor expected for input")
    sp = shape[-nd:]
    out = tuple(pooling_output_shape(s, k, p, t, 1, ceil_mode) for s, k, p, t in zip(sp, ks, pd, st))
    if nd == 2:
        pool2d_shape_check(shape, ks, st, pd, dl, out)
    else:
        pool3d_shape_check(shape, ks, st, pd, dl, out, "avg_pool3d()", True)
    return ks, st, pd, out


def _max_pool_meta(self, nd, kernel_size, stride, padding, dilation, ceil_mode):
    out = max_pool_setup(self._shape, nd, kernel_size, stride, padding, dilation, ceil_mode)[-1]
    check_dtype("max_pool2d" if nd == 2 else "max_pool3d", self._dtype, _REAL)
    shape = tuple(self._shape[:-nd]) + out
    return (shape, self._dtype), (shape, _i64)


def max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool_meta(self, 2, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool_meta(self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                   indices):
    return self._shape, grad_output._dtype


AVG_POOL_DTYPES = _FLOATS | {_i64}


def avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    out = avg_pool_setup(self._shape, 2, kernel_size, stride, padding, ceil_mode, divisor_override)[-1]
    check_dtype("avg_pool2d", self._dtype, AVG_POOL_DTYPES)
    return tuple(self._shape[:-2]) + out, self._dtype


def avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    out = avg_pool_setup(self._shape, 3, kernel_size, stride, padding, ceil_mode, divisor_override)[-1]
    check_dtype("avg_pool3d_out_frame", self._dtype, AVG_POOL_DTYPES)
    return tuple(self._shape[:-3]) + out, self._dtype


def avg_pool_backward(grad_output, self, *args):
    return self._shape, grad_output._dtype


def same_as_self(grad_output, self, *args):
    return self._shape, grad_output._dtype


def same_as_self_checked(grad_output, self, *args):
    return self._shape, grad_output._dtype


# ---- adaptive pooling --------------------------------------------------------------------------------
def adaptive_avg_setup(shape, output_size):
    if len(output_size) != 2:
        raise _err("adaptive_avg_pool2d: output_size must be 2")
    ndim = len(shape)
    if ndim not in (3, 4):
        raise _err(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {fmt_shape(shape)}")
    for i in (-2, -1):
        if shape[i] <= 0:
            raise _err(f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                       f"dimensions, but input has sizes {fmt_shape(shape)} with dimension {i + ndim} "
                       f"being empty")
    return tuple(shape[:-2]) + tuple(output_size)


def adaptive_avg_pool2d(self, output_size):
    shape = adaptive_avg_setup(self._shape, output_size)
    check_dtype("adaptive_avg_pool2d", self._dtype, _FLOATS)
    return shape, self._dtype


def adaptive_max_setup(shape, output_size):
    ndim = len(shape)
    if ndim not in (3, 4):
        raise _err(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {fmt_shape(shape)}")
    for i in range(1, ndim):
        if shape[i] <= 0:
            raise _err(f"adaptive_max_pool2d(): Expected input to have non-zero size for non-batch "
                       f"dimensions, but input has sizes {fmt_shape(shape)} with dimension {i} being "
                       f"empty")
    if len(output_size) != 2:
        raise _err("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    return tuple(shape[:-2]) + tuple(output_size)


def adaptive_max_pool2d(self, output_size):
    shape = adaptive_max_setup(self._shape, output_size)
    check_dtype("adaptive_max_pool2d", self._dtype, _FLOATS)
    return (shape, self._dtype), (shape, _i64)


# ---- embedding ----------------------------------------------------------------------------------------
# how ATen's checkScalarTypes names a CPU tensor's type: the legacy class where there is one, else
# the DeprecatedTypeProperties name
_TYPE_NAMES = {_dt.uint8: "torch.ByteTensor", _dt.int8: "torch.CharTensor", _dt.int16: "torch.ShortTensor",
               _dt.int32: "torch.IntTensor", _dt.int64: "torch.LongTensor", _dt.float16: "torch.HalfTensor",
               _dt.float32: "torch.FloatTensor", _dt.float64: "torch.DoubleTensor", _dt.bool_: "CPUBoolType",
               _dt.bfloat16: "CPUBFloat16Type", _dt.complex32: "CPUComplexHalfType",
               _dt.complex64: "CPUComplexFloatType", _dt.complex128: "CPUComplexDoubleType"}


def check_index_dtype(fn, arg, pos, d):
    if d is not _i64 and d is not _dt.int32:
        raise _err(f"Expected tensor for argument #{pos} '{arg}' to have one of the following scalar "
                   f"types: Long, Int; but got {_TYPE_NAMES[d]} instead (while checking "
                   f"arguments for {fn})")


def embedding_check(w_shape, idx_dtype):
    if len(w_shape) != 2:
        raise _err("'weight' must be 2-D")
    check_index_dtype("embedding", "indices", 1, idx_dtype)


def embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
    embedding_check(weight._shape, indices._dtype)
    return tuple(indices._shape) + tuple(weight._shape[1:]), weight._dtype


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    check_index_dtype("embedding_backward", "indices", 2, indices._dtype)
    return (num_weights, grad_output._shape[-1] if grad_output._shape else 1), grad_output._dtype


def embedding_renorm_check(shape, idx_dtype):
    if len(shape) != 2:
        raise _err(f"Expected 2-dimensional tensor, but got {len(shape)}-dimensional tensor for "
                   f"argument #1 'self' (while checking arguments for embedding_renorm_)")
    check_index_dtype("embedding_renorm_", "indices", 2, idx_dtype)


def embedding_renorm_(self, indices, max_norm, norm_type):
    embedding_renorm_check(self._shape, indices._dtype)
    return self


def embedding_bag_check(w_dtype, w_dim, idx_dtype, off_dtype, mode, psw, include_last_offset,
                        n_offsets):
    check_index_dtype("embedding_bag", "indices", 1, idx_dtype)
    check_index_dtype("embedding_bag", "offsets", 1, off_dtype)
    if w_dtype not in _FLOATS:
        raise _err(f"Expected tensor for argument #1 'weight' to have one of the following scalar "
                   f"types: Half, BFloat16, Float, Double; but got {_TYPE_NAMES[w_dtype]} "
                   f"instead (while checking arguments for embedding_bag)")
    if psw is not None:
        if mode != 0:
            raise _err("embedding_bag: per_sample_weights only supported with mode='sum'")
    if include_last_offset and n_offsets < 1:
        raise _err("include_last_offset: number of offset should be at least 1")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    embedding_bag_check(weight._dtype, len(weight._shape), indices._dtype, offsets._dtype, mode,
                        per_sample_weights, include_last_offset, offsets._shape[0])
    b = offsets._shape[0] - (1 if include_last_offset else 0)
    d = weight._shape[1]
    n = indices._shape[0] if indices._shape else 1
    maxi = (b, d) if mode == 2 else (0,)  # the shapes of PyTorch's meta function
    it = indices._dtype if indices._dtype is offsets._dtype else _i64
    return ((b, d), weight._dtype), ((n,), it), ((b,), it), (maxi, it)


def embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
                           scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx=-1):
    return (num_weights, grad._shape[-1]), grad._dtype


def embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode,
                                              padding_idx=-1):
    return (indices._shape[0] if indices._shape else 1,), grad._dtype


# ---- padding ---------------------------------------------------------------------------------------------
def check_valid_pad_input(shape, padding, dim):
    if len(padding) != 2 * dim:
        raise _err(f"padding size is expected to be {2 * dim}, but got: {len(padding)}")
    ndim = len(shape)
    batch = ndim == dim + 2
    if batch:
        ok = all(shape[d] != 0 for d in range(1, ndim))
    else:
        ok = all(shape[d] != 0 for d in range(ndim))
    if not ok:
        raise _err(f"Expected {dim + 1}D or {dim + 2}D (batch mode) tensor with possibly 0 batch size "
                   f"and other non-zero dimensions for input, but got: {fmt_shape(shape)}")


_ARGNO = {0: 4, 1: 6, 2: 8}


def reflection_setup(shape, padding, dim):
    """Output shape of reflection_pad{dim}d (ReflectionPad.cpp's checks)."""
    check_valid_pad_input(shape, padding, dim)
    ndim = len(shape)
    out = list(shape)
    for i in range(dim):
        d = ndim - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        n = shape[d]
        if not (lo < n and hi < n):
            raise _err(f"Argument #{_ARGNO[i]}: Padding size should be less than the corresponding input "
                       f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                       f"{fmt_shape(shape)}")
        out[d] = n + lo + hi
    sp = [shape[ndim - 1 - i] for i in range(dim)]
    op = [out[ndim - 1 - i] for i in range(dim)]
    if dim == 1:
        if op[0] < 1:
            raise _err(f"input (W: {sp[0]}) is too small. Calculated output W: {op[0]}")
    elif dim == 2:
        if not (op[0] >= 1 or op[1] >= 1):
            raise _err(f"input (H: {sp[1]}, W: {sp[0]}) is too small. Calculated output H: {op[1]} W: "
                       f"{op[0]}")
        if min(op) < 0:
            raise _err("numel: integer multiplication overflow")
    else:
        if not (op[0] >= 1 or op[1] >= 1 or op[2] >= 1):
            raise _err(f"input (D: {sp[2]} H: {sp[1]}, W: {sp[0]}) is too small. Calculated output D: "
                       f"{op[2]} H: {op[1]} W: {op[0]}")
        _negative_dim(out)
    return tuple(out)


def _negative_dim(shape):
    for s in shape:
        if s < 0:
            raise _err(f"Trying to create tensor with negative dimension {s}: {fmt_shape(shape)}")


def replication_setup(shape, padding, dim):
    if len(padding) != 2 * dim:
        raise _err(f"padding size is expected to be {2 * dim}")
    check_valid_pad_input(shape, padding, dim)
    ndim = len(shape)
    out = list(shape)
    for i in range(dim):
        d = ndim - 1 - i
        out[d] = shape[d] + padding[2 * i] + padding[2 * i + 1]
    sp = [shape[ndim - 1 - i] for i in range(dim)]
    op = [out[ndim - 1 - i] for i in range(dim)]
    if dim == 1:
        if op[0] < 1:
            raise _err(f"input (W: {sp[0]}) is too small. Calculated output W: {op[0]}")
    elif dim == 2:
        if not (op[0] >= 1 or op[1] >= 1):
            raise _err(f"input (H: {sp[1]}, W: {sp[0]} ) is too small. Calculated output H: {op[1]} W: "
                       f"{op[0]}")
    else:
        if not (op[0] >= 1 or op[1] >= 1 or op[2] >= 1):
            raise _err(f"input (D: {sp[2]} H: {sp[1]}, W: {sp[0]}) is too small. Calculated output D: "
                       f"{op[2]} H: {op[1]} W: {op[0]}")
    _negative_dim(out)
    return tuple(out)


_PAD_ALL = frozenset(d for d in _dt.ALL if d not in (_dt.bool_, _dt.complex32) and d.np is not None)


def _reflection(self, padding, dim):
    shape = reflection_setup(self._shape, padding, dim)
    check_dtype(f"reflection_pad{dim}d", self._dtype, _PAD_ALL)
    return shape, self._dtype


def _replication(self, padding, dim):
    shape = replication_setup(self._shape, padding, dim)
    check_dtype(f"replication_pad{dim}d", self._dtype, _PAD_ALL)
    return shape, self._dtype


def reflection_pad1d(self, padding):
    return _reflection(self, padding, 1)


def reflection_pad2d(self, padding):
    return _reflection(self, padding, 2)


def reflection_pad3d(self, padding):
    return _reflection(self, padding, 3)


def replication_pad1d(self, padding):
    return _replication(self, padding, 1)


def replication_pad2d(self, padding):
    return _replication(self, padding, 2)


def replication_pad3d(self, padding):
    return _replication(self, padding, 3)


# ---- upsampling --------------------------------------------------------------------------------------------
def upsample_setup(shape, output_size, dim):
    if len(output_size) != dim:
        raise _err(f"It is expected output_size equals to {dim}, but got size {len(output_size)}")
    if len(shape) != dim + 2:
        raise _err(f"It is expected input_size equals to {dim + 2}, but got size {len(shape)}")
    sp = shape[2:]
    if not (all(s > 0 for s in sp) and all(o > 0 for o in output_size)):
        if dim == 1:
            raise _err(f"Input and output sizes should be greater than 0, but got input (W: {sp[0]}) and "
                       f"output (W: {output_size[0]})")
        raise _err(f"Input and output sizes should be greater than 0, but got input (H: {sp[0]}, W: "
                   f"{sp[1]}) output (H: {output_size[0]}, W: {output_size[1]})")
    if _prod(shape) == 0 and _prod(shape[1:]) == 0:
        raise _err(f"Non-empty {dim + 2}D data tensor expected but got a tensor with sizes "
                   f"{fmt_shape(shape)}")
    return tuple(shape[:2]) + tuple(output_size)


_NEAREST_1D = frozenset((_dt.uint8, _dt.float16, _dt.bfloat16, _dt.float32, _dt.float64))


def upsample_kernel_check(kind, dim, d):
    if kind == "nearest":
        name = "compute_indices_weights_nearest" if dim == 1 else "upsample_nearest2d_channels_last"
        check_dtype(name, d, _NEAREST_1D)
    elif kind == "nearest_exact":
        name = "compute_indices_weights_nearest" if dim == 1 else "upsample_nearest2d_channels_last"
        check_dtype(name, d, _NEAREST_1D)
    elif dim == 1:
        check_dtype("compute_indices_weights_linear", d, _FLOATS)
    else:
        check_dtype("upsample_bilinear2d_channels_last", d, _NEAREST_1D)


def _upsample(self, output_size, kind, dim):
    shape = upsample_setup(self._shape, output_size, dim)
    upsample_kernel_check(kind, dim, self._dtype)
    return shape, self._dtype


def upsample_nearest1d(self, output_size, scales=None):
    return _upsample(self, output_size, "nearest", 1)


def upsample_nearest2d(self, output_size, scales_h=None, scales_w=None):
    return _upsample(self, output_size, "nearest", 2)


def upsample_nearest_exact1d(self, output_size, scales=None):
    return _upsample(self, output_size, "nearest_exact", 1)


def upsample_nearest_exact2d(self, output_size, scales_h=None, scales_w=None):
    return _upsample(self, output_size, "nearest_exact", 2)


def upsample_linear1d(self, output_size, align_corners, scales=None):
    return _upsample(self, output_size, "linear", 1)


def upsample_bilinear2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    return _upsample(self, output_size, "linear", 2)


def upsample_backward_setup(grad_shape, output_size, input_size):
    dim = len(output_size)
    full = upsample_setup(tuple(input_size), output_size, dim)
    if len(grad_shape) != dim + 2:
        raise _err(f"Expected grad_output to be a tensor of dimension {dim + 2} but got: dimension "
                   f"{len(grad_shape)}")
    for i in range(dim + 2):
        if grad_shape[i] != full[i]:
            raise _err(f"Expected grad_output to have the same shape as output; output.size({i}) = "
                       f"{full[i]} but got grad_output.size({i}) = {grad_shape[i]}")
    return tuple(input_size)


def upsample_backward(grad_output, output_size, input_size, *scales):
    return upsample_backward_setup(grad_output._shape, output_size, input_size), grad_output._dtype


def upsample_linear_backward(grad_output, output_size, input_size, align_corners, *scales):
    return upsample_backward_setup(grad_output._shape, output_size, input_size), grad_output._dtype


# ---- im2col / col2im ---------------------------------------------------------------------------------------
def _expect2(v, name):
    if len(v) != 2:
        raise _err(f"It is expected {name} equals to 2, but got size {len(v)}")


def im2col_setup(shape, kernel_size, dilation, padding, stride):
    for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
                 (stride, "stride")):
        _expect2(v, n)
    kh, kw = kernel_size
    dh, dw = dilation
    ph, pw = padding
    sh, sw = stride
    if not (kw > 0 and kh > 0):
        raise _err(f"kernel size should be greater than zero, but got kernel_height: {kh} "
                   f"kernel_width: {kw}")
    if not (dw > 0 and dh > 0):
        raise _err(f"dilation should be greater than zero, but got dilation_height: {dh} "
                   f"dilation_width: {dw}")
    if not (pw >= 0 and ph >= 0):
        raise _err(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    if not (sw > 0 and sh > 0):
        raise _err(f"stride should be greater than zero, but got stride_height: {sh} "
                   f"stride_width: {sw}")
    ndim = len(shape)
    wrap_dim(1, ndim)
    wrap_dim(2, ndim)  # ATen reads input.size(1) and size(2) before checking the dims
    valid = shape[1] != 0 and shape[2] != 0
    if not ((ndim == 3 and shape[0] and valid) or (ndim == 4 and valid and shape[3] != 0)):
        raise _err(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                   f"non-zero dimensions for input, but got: {fmt_shape(shape)}")
    h, w = shape[-2:]
    oh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if oh < 1 or ow < 1:
        raise _err(f"Given input with spatial size ({h}, {w}), kernel_size=({kh}, {kw}), "
                   f"dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the array of "
                   f"sliding blocks as ({oh}, {ow}), but its components must be at least one.")
    c = shape[-3]
    return tuple(shape[:-3]) + (c * kh * kw, oh * ow), (oh, ow)


_IM2COL = _FLOAT_COMPLEX | {_dt.bool_}


def im2col(self, kernel_size, dilation, padding, stride):
    shape = im2col_setup(self._shape, kernel_size, dilation, padding, stride)[0]
    check_dtype("im2col_out_cpu", self._dtype, _IM2COL)
    return shape, self._dtype


def col2im_setup(shape, output_size, kernel_size, dilation, padding, stride):
    _expect2(output_size, "output_size")
    for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
                 (stride, "stride")):
        _expect2(v, n)
    oh, ow = output_size
    kh, kw = kernel_size
    dh, dw = dilation
    ph, pw = padding
    sh, sw = stride
    if not (kw > 0 and kh > 0):
        raise _err(f"kernel size should be greater than zero, but got kernel_height: {kh} "
                   f"kernel_width: {kw}")
    if not (sw > 0 and sh > 0):
        raise _err(f"stride should be greater than zero, but got stride_height: {sh} "
                   f"stride_width: {sw}")
    if not (dw > 0 and dh > 0):
        raise _err(f"dilation should be greater than zero, but got dilation_height: {dh} "
                   f"dilation_width: {dw}")
    if not (pw >= 0 and ph >= 0):
        raise _err(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    ndim = len(shape)
    if not ((ndim == 2 and shape[0] != 0 and shape[1] != 0)
            or (ndim == 3 and shape[1] != 0 and shape[2] != 0)):
        raise _err(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                   f"non-zero dimensions for input, but got: {fmt_shape(shape)}")
    planes = shape[-2]
    if planes % (kw * kh):
        raise _err(f"Expected size of input's dimension 1 to be divisible by the product of "
                   f"kernel_size, but got input.size(1)={planes} and kernel_size=({kh}, {kw}).")
    length = shape[-1]
    nbh = (oh + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    nbw = (ow + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    desc = (f"Given output_size=({oh}, {ow}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), "
            f"padding=({ph}, {pw}), stride=({sh}, {sw}), ")
    if length != nbh * nbw:
        raise _err(desc[:-2] + f", expected size of input's dimension 2 to match the calculated number "
                   f"of sliding blocks {nbh} * {nbw} = {nbh * nbw}, but got input.size(2)={length}.")
    if not (nbh >= 1 and nbw >= 1):
        raise _err(desc + f"calculated shape of the array of sliding blocks as ({nbh}, {nbw}), which "
                   f"is too small (non-positive)")
    if ow < 1 or oh < 1:
        raise _err(f"Expected output spatial size to be positive, but got: output_size=({oh}, {ow}).")
    return tuple(shape[:-2]) + (planes // (kh * kw), oh, ow), (nbh, nbw)


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    shape = col2im_setup(self._shape, output_size, kernel_size, dilation, padding, stride)[0]
    check_dtype("col2im_out_cpu", self._dtype, _IM2COL)
    return shape, self._dtype


# ---- pixel shuffle -----------------------------------------------------------------------------------------
def pixel_shuffle_setup(shape, r):
    if len(shape) < 3:
        raise _err(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                   f"{len(shape)} dimension(s)")
    if r <= 0:
        raise _err(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    c = shape[-3]
    if c % (r * r):
        raise _err(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                   f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    return tuple(shape[:-3]) + (c // (r * r), shape[-2] * r, shape[-1] * r)


def pixel_unshuffle_setup(shape, r):
    if len(shape) < 3:
        raise _err(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                   f"{len(shape)} dimension(s)")
    if r <= 0:
        raise _err(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    h, w = shape[-2:]
    if h % r:
        raise _err(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                   f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise _err(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                   f"input.size(-1)={w} is not divisible by {r}")
    return tuple(shape[:-3]) + (shape[-3] * r * r, h // r, w // r)


def pixel_shuffle(self, upscale_factor):
    return pixel_shuffle_setup(self._shape, upscale_factor), self._dtype


def pixel_unshuffle(self, downscale_factor):
    return pixel_unshuffle_setup(self._shape, downscale_factor), self._dtype
