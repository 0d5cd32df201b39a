"""Printing tensors exactly like PyTorch (torch/_tensor_str.py), computed on the NumPy data.

The rules are PyTorch's: a float tensor whose non-zero finite values are all integers prints in
"int mode" (`1.`), otherwise with `precision` decimals, in scientific notation when the ratio of
the largest to the smallest magnitude exceeds 1000, the largest exceeds 1e8 or the smallest is
below 1e-4; more than `threshold` elements are summarized with `...` keeping `edgeitems` per
edge; lines wrap at `linewidth`; suffixes (device, size, dtype, grad_fn / requires_grad) follow.
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.core.tensor_impl import tensor_class


class _PrinterOptions:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None

    def asdict(self):
        return {k: getattr(self, k) for k in self.__slots__}


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set options for printing (torch.set_printoptions): precision, threshold, edgeitems,
    linewidth, profile ('default', 'short', 'full') and sci_mode (None chooses automatically)."""
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
        elif profile == "short":
            PRINT_OPTS.precision = 2
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 2
            PRINT_OPTS.linewidth = 80
        elif profile == "full":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = math.inf
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current options as a dict that can be passed back to set_printoptions(**opts)."""
    return PRINT_OPTS.asdict()


class printoptions:
    """Context manager that changes the print options temporarily."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self):
        self.old = get_printoptions()
        set_printoptions(**self.kwargs)

    def __exit__(self, *exc):
        set_printoptions(**self.old)
        return False


# ---- formatting ------------------------------------------------------------------------------
class _Formatter:
    __slots__ = ("floating_dtype", "int_mode", "sci_mode", "max_width")

    def __init__(self, a, floating):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            vals = a.reshape(-1).tolist()
            if vals:
                self.max_width = max(1, max(len(str(v)) for v in vals))
            return
        v = a.reshape(-1).astype(np.float64)
        nz = v[np.isfinite(v) & (v != 0)]
        if nz.size == 0:
            return
        ab = np.abs(nz)
        mn = float(ab.min())
        mx = float(ab.max())
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        sci = PRINT_OPTS.sci_mode
        self.sci_mode = (mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4) if sci is None else sci
        p = PRINT_OPTS.precision
        vals = nz.tolist()
        if self.sci_mode:
            fmt = f"{{:.{p}e}}"
            self.max_width = max(len(fmt.format(x)) for x in vals)
        elif self.int_mode:
            self.max_width = max(len(f"{x:.0f}") + 1 for x in vals)
        else:
            fmt = f"{{:.{p}f}}"
            self.max_width = max(len(fmt.format(x)) for x in vals)

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{PRINT_OPTS.precision}e}}".format(value)
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{{:.{PRINT_OPTS.precision}f}}".format(value)
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _complex_str(val, f1, f2):
    real_str = f1.format(val.real)
    imag_str = (f2.format(val.imag) + "j").lstrip()
    # handles negative numbers, +0.0, -0.0
    if imag_str[0] == "+" or imag_str[0] == "-":
        return real_str + imag_str
    return real_str + "+" + imag_str


def _scalar_str(a, f1, f2):
    v = a.item()
    if f2 is not None:
        return _complex_str(complex(v), f1, f2)
    return f1.format(v)


def _vector_str(a, indent, summarize, f1, f2):
    element_length = f1.width() + 2
    if f2 is not None:
        element_length += f2.width() + 1
    elements_per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    if f2 is not None:
        def fmt(v):
            return _complex_str(v, f1, f2)
    else:
        fmt = f1.format
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt(v) for v in a[:e].tolist()] + [" ..."]
                + [fmt(v) for v in a[-e:].tolist()])
    else:
        data = [fmt(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + elements_per_line])
             for i in range(0, len(data), elements_per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with_formatter(a, indent, summarize, f1, f2=None):
    dim = a.ndim
    if dim == 0:
        return _scalar_str(a, f1, f2)
    if dim == 1:
        return _vector_str(a, indent, summarize, f1, f2)
    e = PRINT_OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        slices = ([_str_with_formatter(a[i], indent + 1, summarize, f1, f2) for i in range(e)]
                  + ["..."]
                  + [_str_with_formatter(a[i], indent + 1, summarize, f1, f2)
                     for i in range(n - e, n)])
    else:
        slices = [_str_with_formatter(a[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(a):
    """Only the elements a summarized print shows (get_summarized_data)."""
    dim = a.ndim
    if dim == 0:
        return a
    e = PRINT_OPTS.edgeitems
    if dim == 1:
        if a.shape[0] > 2 * e:
            return np.concatenate((a[:e], a[-e:]))
        return a
    if not e:
        return np.empty((0,) * dim, dtype=a.dtype)
    n = a.shape[0]
    idx = list(range(e)) + list(range(n - e, n)) if n > 2 * e else range(n)
    return np.stack([_summarized(a[i]) for i in idx])


def _host_array(t):
    """The tensor's values as a NumPy array (bfloat16 widened to float32, exactly)."""
    a = t._np if t._device.type == "cpu" else None
    if a is None:
        a = t.detach().to("cpu")._np
    if t._dtype is _dt.bfloat16:
        a = a.astype(np.float32)
    elif t._dtype is _dt.complex32:  # printed as complex64, as torch prints it (exactly)
        from ember.core.chalf import widen
        a = widen(a)
    return a


def _tensor_str(t, indent):
    n = 1
    for s in t._shape:
        n *= s
    if n == 0:
        return "[]"
    summarize = n > PRINT_OPTS.threshold
    a = _host_array(t)
    cat = t._dtype.category
    if cat == _dt.COMPLEX:
        re, im = a.real, a.imag
        f1 = _Formatter(_summarized(re) if summarize else re, True)
        f2 = _Formatter(_summarized(im) if summarize else im, True)
        return _str_with_formatter(a, indent, summarize, f1, f2)
    f = _Formatter(_summarized(a) if summarize else a, cat == _dt.FLOAT)
    return _str_with_formatter(a, indent, summarize, f)


def _add_suffixes(tensor_str, suffixes, indent, force_newline):
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = len(suffix)
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def _grad_fn_name(t):
    try:
        gf = t.grad_fn
    except RuntimeError:
        return "Invalid"
    if gf is None:
        return None
    name = type(gf).__name__
    if name in ("CppFunction", "Node") and callable(getattr(gf, "name", None)):
        name = gf.name().rsplit("::", 1)[-1]
    return name


def _str_intern(t, tensor_contents=None):
    cls = type(t)
    if cls is tensor_class[0] or cls.__name__ == "Parameter":  # tensor_class[0] is ember.Tensor
        prefix = "tensor("
    else:
        prefix = f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    dev = t._device
    if dev.type != "cpu":
        suffixes.append("device='" + str(dev) + "'")
    dtype = t._dtype
    default = _dt.defaults.float
    has_default_dtype = (dtype is default or dtype is _dt.defaults.complex or dtype is _dt.int64
                         or dtype is _dt.bool_)
    shape = t._shape
    sp = getattr(t, "_sp", None)
    if sp is not None:  # a sparse COO or CSR tensor (torch's is_sparse and sparse-compressed branches)
        coo = hasattr(sp, "indices")
        fields = ((("indices", sp.indices), ("values", sp.values)) if coo else
                  (("crow_indices", sp.crow_indices), ("col_indices", sp.col_indices), ("values", sp.values)))
        suffixes.append("size=" + str(tuple(shape)))
        suffixes.append("nnz=" + str(fields[-1][1]._shape[0]))
        if not has_default_dtype:
            suffixes.append("dtype=" + str(dtype))
        parts = []
        for name, x in fields:
            body = _tensor_str(x, indent + len(name) + 8)
            if x.numel() == 0:
                body += ", size=" + str(tuple(x._shape))
            parts.append(f"{name}=tensor(" + body + ")")
        tensor_str = (",\n" + " " * indent).join(parts)
        suffixes.append("layout=" + str(t.layout))
    elif dev.type == "meta":
        suffixes.append("size=" + str(tuple(shape)))
        if dtype is not default:
            suffixes.append("dtype=" + str(dtype))
        tensor_str = "..."
    else:
        n = 1
        for s in shape:
            n *= s
        if n == 0:
            if len(shape) != 1:
                suffixes.append("size=" + str(tuple(shape)))
            if dtype is not default:
                suffixes.append("dtype=" + str(dtype))
            tensor_str = "[]"
        else:
            if not PRINT_OPTS.edgeitems:
                suffixes.append("size=" + str(tuple(shape)))
            if not has_default_dtype:
                suffixes.append("dtype=" + str(dtype))
            tensor_str = _tensor_str(t, indent)
    if tensor_contents is not None:
        tensor_str = tensor_contents
    gname = _grad_fn_name(t)
    if gname is not None:
        suffixes.append(f"grad_fn=<{gname}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=sp is not None and coo)


def tensor_repr(t, tensor_contents=None):
    return _str_intern(t, tensor_contents)


_str = tensor_repr

__all__ = ["PRINT_OPTS", "set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]
