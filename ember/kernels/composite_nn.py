"""Basic nn operators written with other operators (ATen's Linear.cpp, Dropout.cpp, Onehot.cpp,
PadNd.cpp, ReflectionPad.cpp / ReplicationPad.cpp checks). Declared in
ember/ops/native_functions/nn_basic.yaml; they work on every backend.

linear follows PyTorch's paths so autograd records the same nodes: a 2-D input with a bias is one
addmm (AddmmBackward0), a contiguous N-D input with a 1-D bias is flattened to 2-D, addmm'ed and
viewed back, anything else is matmul (+ bias). Dropout draws its mask with bernoulli_ (the global
generator) and multiplies: its node is MulBackward0, as on PyTorch's CPU.
"""
import math

import ember
from ember._generated import ops as _ops
from ember.dispatch.resolve import to_intlist as _to_intlist
from ember.core import dtype as _dt

# caffe2::TypeMeta names PyTorch's messages print for dtypes
_CPP_NAMES = {_dt.float32: "float", _dt.float64: "double", _dt.float16: "c10::Half",
              _dt.bfloat16: "c10::BFloat16", _dt.int64: "long int", _dt.int32: "int",
              _dt.int16: "short int", _dt.int8: "signed char", _dt.uint8: "unsigned char",
              _dt.bool_: "bool", _dt.complex64: "c10::complex<float>",
              _dt.complex128: "c10::complex<double>"}


def _cpp(d):
    return _CPP_NAMES.get(d, d.name)


def _fmt_double(p):
    """A double as C++'s ostream prints it (6 significant digits, no trailing zeros)."""
    return f"{float(p):g}"


def _sizes(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


# ---- linear / bilinear --------------------------------------------------------------------------
def linear(input, weight, bias=None):
    idim = len(input._shape)
    wdim = len(weight._shape)
    if idim == 0 or wdim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{idim}D and {wdim}D")
    if bias is not None:
        if idim == 2:
            return ember.addmm(bias, input, weight.t())
        if input.is_contiguous() and (idim == 3 or len(bias._shape) == 1):
            sizes = input._shape
            rows = 1
            for s in sizes[:-1]:
                rows *= s
            out = ember.addmm(bias, input.view(rows, sizes[-1]), weight.t())
            return out.view(sizes[:-1] + (out._shape[1],))
    if input._dtype is not weight._dtype and idim == 2 and wdim == 2:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp(input._dtype)} != {_cpp(weight._dtype)}")
    out = ember.matmul(input, weight.t())
    if bias is not None:
        out = out + bias
    return out


def bilinear(input1, input2, weight, bias=None):
    d1, d2, dw = input1._dtype, input2._dtype, weight._dtype
    if bias is not None:
        if not (d1 is d2 and d1 is dw and d1 is bias._dtype):
            raise RuntimeError(f"All tensors must have the same dtype, got input1: {_cpp(d1)}, "
                               f"input2: {_cpp(d2)}, weight: {_cpp(dw)}, bias: "
                               f"{_cpp(bias._dtype)}")
    elif not (d1 is d2 and d1 is dw):
        raise RuntimeError(f"All tensors must have the same dtype, got input1: {_cpp(d1)}, "
                           f"input2: {_cpp(d2)}, weight: {_cpp(dw)}")
    n1, n2 = len(input1._shape), len(input2._shape)
    if n1 != n2:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {n1} and {n2}")
    for i in range(n1 - 1):
        if input1._shape[i] != input2._shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1._shape[i]} and {input2._shape[i]}")
    in1 = input1.size(-1)
    in2 = input2.size(-1)
    if in1 != weight.size(1):
        raise RuntimeError("bilinear(): input1 size does not match weight size: got "
                           f"{in1} but expected {weight.size(1)}")
    if in2 != weight.size(2):
        raise RuntimeError("bilinear(): input2 size does not match weight size: got "
                           f"{in2} but expected {weight.size(2)}")
    out_f = weight.size(0)
    if bias is not None and bias.size(0) != out_f:
        raise RuntimeError("bilinear(): bias size does not match weight size: got "
                           f"{bias.size(0)} but expected {out_f}")
    out_size = input1._shape[:-1] + (out_f,)
    rows = 1
    for s in input1._shape[:-1]:
        rows *= s
    x1 = input1.reshape(rows, in1)
    x2 = input2.reshape(rows, in2)
    # y[n, o] = sum_i x1[n, i] (sum_j W[o, i, j] x2[n, j]): one mm against W viewed (o*i, j)
    t = ember.mm(x2, weight.reshape(out_f * in1, in2).t()).view(rows, out_f, in1)
    out = (t * x1.unsqueeze(1)).sum(-1).reshape(out_size)
    if bias is not None:
        out = out + bias
    return out


# ---- dropout ------------------------------------------------------------------------------------
_ALPHA = 1.7580993408473766


def _dropout_impl(input, p, train, feature, alpha, inplace):
    if not (p >= 0 and p <= 1):
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                           f"{_fmt_double(p)}")
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        z = ember.zeros((), dtype=input._dtype, device=input._device)
        return input.mul_(z) if inplace else input * z
    if feature:
        shape = input._shape
        if len(shape) < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        noise = input.new_empty((shape[0], shape[1]) + (1,) * (len(shape) - 2))
    else:
        noise = ember.empty_like(input)
    noise.bernoulli_(1 - p)
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
        noise.mul_(a)
        out = input.mul_(noise) if inplace else input * noise
        return out.add_(b)
    noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input, p, train):
    return _dropout_impl(input, p, train, False, False, False)


def dropout_(self, p, train):
    return _dropout_impl(self, p, train, False, False, True)


def feature_dropout(input, p, train):
    return _dropout_impl(input, p, train, True, False, False)


def feature_dropout_(self, p, train):
    return _dropout_impl(self, p, train, True, False, True)


def alpha_dropout(input, p, train):
    return _dropout_impl(input, p, train, False, True, False)


def alpha_dropout_(self, p, train):
    return _dropout_impl(self, p, train, False, True, True)


def feature_alpha_dropout(input, p, train):
    return _dropout_impl(input, p, train, True, True, False)


def feature_alpha_dropout_(self, p, train):
    return _dropout_impl(self, p, train, True, True, True)


# ---- one_hot ------------------------------------------------------------------------------------
def one_hot(self, num_classes=-1):
    if self._dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    shape = tuple(self._shape)
    if self._device.type == "meta":
        if num_classes == -1:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return ember.empty(shape + (num_classes,), dtype=_dt.int64, device=self._device)
    if self.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return ember.zeros(shape + (num_classes,), dtype=_dt.int64, device=self._device)
    if self.min().item() < 0:
        raise RuntimeError("Class values must be non-negative.")
    mx = self.max().item()
    if num_classes == -1:
        num_classes = mx + 1
    elif mx >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    ret = ember.zeros(shape + (num_classes,), dtype=_dt.int64, device=self._device)
    ret.scatter_(-1, self.unsqueeze(-1), 1)
    return ret


# ---- padding ------------------------------------------------------------------------------------
def constant_pad_nd(self, pad, value=0):
    pad = [int(p) for p in pad]
    if len(pad) % 2 != 0:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    input_sizes = tuple(self._shape)
    l_inp = len(input_sizes)
    l_pad = len(pad) // 2
    l_diff = l_inp - l_pad
    if l_inp < l_pad:
        raise RuntimeError("Length of pad should be no more than twice the number of dimensions of "
                           f"the input. Pad length is {len(pad)}while the input has {l_inp}"
                           "dimensions.")
    all_pads_non_positive = True
    c_input = self
    for i in range(l_diff, l_inp):
        pad_idx = 2 * (l_inp - i - 1)
        if pad[pad_idx] < 0:
            c_input = c_input.narrow(i, -pad[pad_idx], c_input.size(i) + pad[pad_idx])
        elif pad[pad_idx] != 0:
            all_pads_non_positive = False
        if pad[pad_idx + 1] < 0:
            c_input = c_input.narrow(i, 0, c_input.size(i) + pad[pad_idx + 1])
        elif pad[pad_idx + 1] != 0:
            all_pads_non_positive = False
    if all_pads_non_positive:
        return c_input.clone()
    new_shape = list(input_sizes[:l_diff])
    for i in range(l_pad):
        pad_idx = len(pad) - (i + 1) * 2
        new_dim = input_sizes[l_diff + i] + pad[pad_idx] + pad[pad_idx + 1]
        if new_dim < 0:
            raise RuntimeError(f"The input size {input_sizes[l_diff + i]}, plus negative padding "
                               f"{pad[pad_idx]} and {pad[pad_idx + 1]} resulted in a negative "
                               "output size, which is invalid. Check dimension "
                               f"{l_diff + i} of your input.")
        new_shape.append(new_dim)
    output = ember.full(new_shape, value, dtype=self._dtype, device=self._device)
    c_output = output
    for i in range(l_diff, l_inp):
        pad_idx = 2 * (l_inp - i - 1)
        if pad[pad_idx] > 0:
            c_output = c_output.narrow(i, pad[pad_idx], c_output.size(i) - pad[pad_idx])
        if pad[pad_idx + 1] > 0:
            c_output = c_output.narrow(i, 0, c_output.size(i) - pad[pad_idx + 1])
    c_output.copy_(c_input)
    return output


_MODES = ("constant", "reflect", "replicate", "circular")
_PAD_COMBOS = ("Supported combinations for non-constant padding:\n"
               "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
               "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
               "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def pad(self, pad, mode="constant", value=None):
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pad = [int(p) for p in pad]
    ndim = len(self._shape)
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > ndim * 2:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{ndim}")
    if mode == "constant":
        return ember.constant_pad_nd(self, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    k = len(pad) // 2
    if not (k in (1, 2, 3) and ndim in (k + 1, k + 2)):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {ndim}D input "
                                  f"tensor.\n{_PAD_COMBOS}")
    # PyTorch's _pad_enum: the mode's dedicated operator (reflection_pad2d, _pad_circular, ...,
    # declared by the spatial family), so autograd records its node; below, the same result from
    # index_select where such an operator is not declared
    op = getattr(_ops, "_pad_circular" if mode == "circular" else
                 f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d", None)
    if op is not None:
        return op.call(self, _to_intlist(pad))  # the binding's argument parsing
    return _pad_by_index(self, pad, mode)


def _pad_by_index(self, pad, mode):
    """reflect / replicate / circular padding (len(pad) // 2 in 1..3, checked by `pad`) as one
    index_select per padded dimension, with the dedicated operators' checks."""
    ndim = len(self._shape)
    k = len(pad) // 2
    shape = tuple(self._shape)
    first = ndim - k  # first padded dimension
    if mode in ("reflect", "replicate"):
        batch = 1 if ndim == k + 2 else 0
        if any(s == 0 for s in shape[batch:]):
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                               "batch size and other non-zero dimensions for input, but got: "
                               f"{_sizes(shape)}")
    # pads of padded dim d (first + j) are pad[2 * (k - 1 - j)], pad[2 * (k - 1 - j) + 1]
    pads = [(pad[2 * (k - 1 - j)], pad[2 * (k - 1 - j) + 1]) for j in range(k)]
    if mode == "reflect":
        # PyTorch checks W, then H, then D (arguments #4, #6, #8)
        for j in reversed(range(k)):
            lo, hi = pads[j]
            n = shape[first + j]
            if not (lo < n and hi < n):
                raise RuntimeError(f"Argument #{4 + 2 * (k - 1 - j)}: Padding size should be less "
                                   "than the corresponding input dimension, but got: padding "
                                   f"({lo}, {hi}) at dimension {first + j} of input {_sizes(shape)}")
    elif mode == "replicate" and k == 1:
        n = shape[-1]
        out = n + pads[0][0] + pads[0][1]
        if out < 1:
            raise RuntimeError(f"input (W: {n}) is too small. Calculated output W: {out}")
    elif mode == "circular":
        for j in range(k):
            lo, hi = pads[j]
            n = shape[first + j]
            if not (lo <= n and hi <= n):
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if lo + hi + n < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension.")
    out = self
    for j in range(k):
        lo, hi = pads[j]
        if lo == 0 and hi == 0:
            continue
        d = first + j
        n = shape[d]
        idx = []
        if mode == "circular":
            # negative pads cut first; positive pads wrap around what is left (PyTorch's order)
            start = max(-lo, 0)
            m = n - start - max(-hi, 0)
            for i in range(-max(lo, 0), m + max(hi, 0)):
                idx.append(start + i % m)
        else:
            for i in range(-lo, n + hi):
                if mode == "reflect":
                    i = abs(i)
                    if i >= n:
                        i = 2 * (n - 1) - i
                else:
                    i = min(max(i, 0), n - 1)
                idx.append(i)
        out = out.index_select(d, ember.tensor(idx, dtype=_dt.int64, device=self._device))
    return out if out is not self else self.clone()
