"""Between the dispatcher and the NumPy kernels: Tensors in, arrays to the kernel, Tensors out."""

import numpy as np

from ember.core import dtype as _dt
from ember.core.device import CPU
from ember.core.errors import fmt_shape, warn_resized
from ember.core.tensor_impl import CPU_KEYS, TensorImpl, make_view_cpu, tensor_class
from ember.kernels.cpu._chalf import astype as _chalf_astype
from ember.kernels.meta import _glue as _meta_glue

T = tensor_class[0]  # ember.Tensor, placed there by ember/tensor.py before the registrations load
_ndarray = np.ndarray
_new = object.__new__
_NP2DT = _dt.NP2DT
_C32 = _dt.CHALF_NP


def unwrap(x):
    """A Tensor argument that may also be a Python number, or a Tensor subclass."""
    return x._np if isinstance(x, TensorImpl) else x


def wrap(arr):
    if arr.__class__ is not _ndarray:
        arr = np.asarray(arr)
    t = _new(T)
    t._np = arr
    t._shape = arr.shape
    t._dtype = _NP2DT[arr.dtype]
    t._device = CPU
    t._keys = CPU_KEYS
    t._base = None
    t._vc = None
    t._ameta = None
    return t


view = make_view_cpu


_check_cast = _dt.check_cast
_check_out_dtype = _meta_glue.check_out_dtype


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def store_inplace(self, r, name):
    """self <- r for an in-place op: PyTorch's cast and broadcast checks, then one copy. Returns self."""
    a = self._np
    if r.__class__ is not _ndarray:
        r = np.asarray(r)
    if r.dtype != a.dtype:
        _check_cast(_NP2DT[r.dtype], self._dtype)
        if r.dtype == _C32 or a.dtype == _C32:  # complex32: NumPy cannot cast it
            r = _chalf_astype(r, a.dtype)
    if r.shape != a.shape:
        try:
            b = np.broadcast_shapes(r.shape, a.shape)
        except ValueError:
            b = r.shape
        if b != a.shape:
            raise RuntimeError(f"output with shape {fmt_shape(a.shape)} doesn't match the broadcast "
                               f"shape {fmt_shape(b)}")
    if r is a:
        return self
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(a, r, casting="unsafe")
    return self


def store_out(out, r, rule=None):
    """out <- r for an out= op, resizing out (with PyTorch's warning) when r's shape differs. Returns out."""
    a = out._np
    if r.__class__ is not _ndarray:
        r = np.asarray(r)
    if r.dtype != a.dtype:
        if rule is not None:
            _check_out_dtype(rule, _NP2DT[r.dtype], out._dtype)
        _check_cast(_NP2DT[r.dtype], out._dtype)
        if r.dtype == _C32 or a.dtype == _C32:  # complex32: NumPy cannot cast it
            r = _chalf_astype(r, a.dtype)
    if r.shape != a.shape:
        if a.size != 0:
            warn_resized(a.shape, r.shape, stacklevel=4)
        resize_cpu(out, r.shape)
        a = out._np
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(a, r, casting="unsafe")
    return out


def resize_cpu(t, shape):
    """Tensor.resize_: keep the data that fits, new memory when it grows (as resize_ does)."""
    shape = tuple(shape)
    n = 1
    for s in shape:
        n *= s
    a = t._np
    if a.flags.c_contiguous and n <= a.size:
        flat = a.reshape(-1)
        t._np = flat[:n].reshape(shape)
    else:
        new = np.empty(n, dtype=a.dtype)
        old = a.reshape(-1) if a.flags.c_contiguous else a.ravel()
        m = min(n, old.size)
        new[:m] = old[:m]
        t._np = new.reshape(shape)
        try:
            del t._storage
        except AttributeError:
            pass
    t._shape = shape
    return t


# ---------------------------------------------------------------------------------------------
# Glue factories. ember/_generated/register_cpu.py registers, for each operator, one glue
# function made here from its kernel and its argument pattern, one letter per schema argument:
#   t  a Tensor: its array                 n  a Tensor or a Python number (or a Tensor subclass)
#   o  an optional Tensor                  l  a list of Tensors      L  a list of optional Tensors
#   .  anything else, passed as is
# Common patterns get a closure with the exact signature, which costs what a generated def costs
# (cells are read as fast as globals; a *args call would cost ~0.15 us more); the rest share the
# general form, which converts argument by argument.
# ---------------------------------------------------------------------------------------------
def _np_of(x):
    return x._np


def _optional(x):
    return None if x is None else x._np


def _list(xs):
    return [x._np for x in xs]


def _optional_list(xs):
    return [None if x is None else x._np for x in xs]


_CONVERT = {"t": _np_of, "n": unwrap, "o": _optional, "l": _list, "L": _optional_list, ".": None}


def arrays(k, pattern):
    """k called on the arrays of the arguments (any pattern; extra trailing arguments, the out=
    Tensors, are not passed)."""
    conv = [_CONVERT[c] for c in pattern]

    def call(*args):
        return k(*[a if c is None else c(a) for c, a in zip(conv, args)])
    return call


# Tensor-valued arguments read inline: b._np if b.__class__ is T else unwrap(b), as _n does
_FUNCTIONAL = {
    "t": lambda k: lambda a: wrap(k(a._np)),
    "t.": lambda k: lambda a, b: wrap(k(a._np, b)),
    "t..": lambda k: lambda a, b, c: wrap(k(a._np, b, c)),
    "t...": lambda k: lambda a, b, c, d: wrap(k(a._np, b, c, d)),
    "t....": lambda k: lambda a, b, c, d, e: wrap(k(a._np, b, c, d, e)),
    "tn": lambda k: lambda a, b: wrap(k(a._np, b._np if b.__class__ is T else unwrap(b))),
    "tn.": lambda k: lambda a, b, c: wrap(k(a._np, b._np if b.__class__ is T else unwrap(b), c)),
    "tn..": lambda k: lambda a, b, c, d: wrap(k(a._np, b._np if b.__class__ is T else unwrap(b), c, d)),
    "tnn": lambda k: lambda a, b, c: wrap(k(a._np, b._np if b.__class__ is T else unwrap(b),
                                            c._np if c.__class__ is T else unwrap(c))),
    "tnn..": lambda k: lambda a, b, c, d, e: wrap(k(a._np, b._np if b.__class__ is T else unwrap(b),
                                                    c._np if c.__class__ is T else unwrap(c), d, e)),
    "nn": lambda k: lambda a, b: wrap(k(a._np if a.__class__ is T else unwrap(a),
                                        b._np if b.__class__ is T else unwrap(b))),
    "nn.": lambda k: lambda a, b, c: wrap(k(a._np if a.__class__ is T else unwrap(a),
                                            b._np if b.__class__ is T else unwrap(b), c)),
    "n.": lambda k: lambda a, b: wrap(k(a._np if a.__class__ is T else unwrap(a), b)),
    ".n": lambda k: lambda a, b: wrap(k(a, b._np if b.__class__ is T else unwrap(b))),
    ".....": lambda k: lambda a, b, c, d, e: wrap(k(a, b, c, d, e)),
    "......": lambda k: lambda a, b, c, d, e, f: wrap(k(a, b, c, d, e, f)),
}

_VIEW = {  # the result is a view of the first argument
    "t": lambda k: lambda a: view(a, k(a._np)),
    "t.": lambda k: lambda a, b: view(a, k(a._np, b)),
    "t..": lambda k: lambda a, b, c: view(a, k(a._np, b, c)),
    "t...": lambda k: lambda a, b, c, d: view(a, k(a._np, b, c, d)),
    "t....": lambda k: lambda a, b, c, d, e: view(a, k(a._np, b, c, d, e)),  # slice
}

_INPLACE = {  # store_inplace returns self
    "t": lambda k, s: lambda a: store_inplace(a, k(a._np), s),
    "t.": lambda k, s: lambda a, b: store_inplace(a, k(a._np, b), s),
    "t..": lambda k, s: lambda a, b, c: store_inplace(a, k(a._np, b, c), s),
    "tn": lambda k, s: lambda a, b: store_inplace(a, k(a._np, b._np if b.__class__ is T else unwrap(b)), s),
    "nn": lambda k, s: lambda a, b: store_inplace(a, k(a._np if a.__class__ is T else unwrap(a),
                                                       b._np if b.__class__ is T else unwrap(b)), s),
    "nn.": lambda k, s: lambda a, b, c: store_inplace(a, k(a._np if a.__class__ is T else unwrap(a),
                                                           b._np if b.__class__ is T else unwrap(b), c), s),
    "n.": lambda k, s: lambda a, b: store_inplace(a, k(a._np if a.__class__ is T else unwrap(a), b), s),
}

_OUT = {  # store_out returns out
    "t": lambda k: lambda a, out: store_out(out, k(a._np)),
    "t.": lambda k: lambda a, b, out: store_out(out, k(a._np, b)),
    "t..": lambda k: lambda a, b, c, out: store_out(out, k(a._np, b, c)),
    "t...": lambda k: lambda a, b, c, d, out: store_out(out, k(a._np, b, c, d)),
    "tn": lambda k: lambda a, b, out: store_out(out, k(a._np, b._np if b.__class__ is T else unwrap(b))),
    "nn": lambda k: lambda a, b, out: store_out(out, k(a._np if a.__class__ is T else unwrap(a),
                                                      b._np if b.__class__ is T else unwrap(b))),
    ".n": lambda k: lambda a, b, out: store_out(out, k(a, b._np if b.__class__ is T else unwrap(b))),
}


def functional(k, pattern):
    """wrap(k(arrays)): the result is a new Tensor."""
    make = _FUNCTIONAL.get(pattern)
    if make is not None:
        return make(k)
    call = arrays(k, pattern)
    return lambda *args: wrap(call(*args))


def view_of(k, pattern, base=0):
    """The result is a view of argument `base`."""
    make = _VIEW.get(pattern) if base == 0 else None
    if make is not None:
        return make(k)
    call = arrays(k, pattern)
    return lambda *args: view(args[base], call(*args))


def value(k, pattern):
    """The result is not a Tensor (item, _local_scalar_dense): returned as the kernel gives it."""
    return arrays(k, pattern)


def tensors(k, pattern, base=None):
    """The result is a list of Tensors, returned as a tuple (views of argument `base` if given)."""
    call = arrays(k, pattern)
    if base is None:
        return lambda *args: tuple([wrap(x) for x in call(*args)])
    return lambda *args: tuple([view(args[base], x) for x in call(*args)])


def _pair(x, y):
    return (x, y)


def _returns2(k, pattern, make):
    """Two Tensor results (max.dim, sort, max_pool2d_with_indices...), exact signatures."""
    if pattern == "t":
        def glue(a):
            r = k(a._np)
            return make(wrap(r[0]), wrap(r[1]))
    elif pattern == "t.":
        def glue(a, b):
            r = k(a._np, b)
            return make(wrap(r[0]), wrap(r[1]))
    elif pattern == "t..":
        def glue(a, b, c):
            r = k(a._np, b, c)
            return make(wrap(r[0]), wrap(r[1]))
    elif pattern == "t...":
        def glue(a, b, c, d):
            r = k(a._np, b, c, d)
            return make(wrap(r[0]), wrap(r[1]))
    elif pattern == "t.....":
        def glue(a, b, c, d, e, f):
            r = k(a._np, b, c, d, e, f)
            return make(wrap(r[0]), wrap(r[1]))
    else:
        return None
    return glue


def returns(k, pattern, kinds, make=tuple):
    """Several results; kinds has a `t` for each Tensor among them, make builds the tuple."""
    if kinds == "tt":
        glue = _returns2(k, pattern, _pair if make is tuple else make)
        if glue is not None:
            return glue
    call = arrays(k, pattern)
    conv = [wrap if c == "t" else None for c in kinds]
    make = make if make is tuple else make._make

    def glue(*args):
        return make([x if c is None else c(x) for c, x in zip(conv, call(*args))])
    return glue


def inplace(k, pattern, name, fast=None):
    """self <- k(arrays) for a functional kernel; `fast` (cpu_inplace) writes into self directly
    when it can and returns None, else the functional kernel runs."""
    if fast is None:
        make = _INPLACE.get(pattern)
        if make is not None:
            return make(k, name)
        call = arrays(k, pattern)
        return lambda *args: store_inplace(args[0], call(*args), name)
    if pattern == "nn.":  # add_, sub_
        def glue(a, b, c):
            x = a._np if a.__class__ is T else unwrap(a)
            y = b._np if b.__class__ is T else unwrap(b)
            if fast(x, y, c) is None:
                store_inplace(a, k(x, y, c), name)
            return a
        return glue
    if pattern == "nn":  # mul_
        def glue(a, b):
            x = a._np if a.__class__ is T else unwrap(a)
            y = b._np if b.__class__ is T else unwrap(b)
            if fast(x, y) is None:
                store_inplace(a, k(x, y), name)
            return a
        return glue
    call, try_fast = arrays(k, pattern), arrays(fast, pattern)

    def glue(*args):
        if try_fast(*args) is None:
            store_inplace(args[0], call(*args), name)
        return args[0]
    return glue


def out(k, pattern, n=1, make=None, rule=None):
    """k(arrays) stored into the n trailing out= Tensors; make builds the tuple of several; rule:
    the op's out_dtype check (ember.kernels.meta._glue.check_out_dtype), made before storing, or
    "dtype:<i>" (the dtype argument defaults to out's dtype: meta._glue.with_out_dtype)."""
    if rule is not None and rule.startswith("dtype:"):
        return _meta_glue.with_out_dtype(out(k, pattern, n, make), rule, n)
    if n == 1:
        make1 = _OUT.get(pattern)
        if make1 is not None and rule is None:
            return make1(k)
        call = arrays(k, pattern)
        if rule is not None:
            return lambda *args: store_out(args[-1], call(*args), rule)
        return lambda *args: store_out(args[-1], call(*args))
    call = arrays(k, pattern)
    make = tuple if make is None else make._make

    def glue(*args):
        outs = args[-n:]
        rs = call(*args)
        if rule is not None:
            for o, r in zip(outs, rs):
                _check_out_dtype(rule, _NP2DT[np.asarray(r).dtype], o._dtype)
        for o, r in zip(outs, rs):
            store_out(o, r)
        return make(outs)
    return glue


def writes(k, pattern, outs=(0,)):
    """A kernel that writes into the arrays it is given (an explicit in-place or out= kernel):
    returns the written Tensors, those at positions `outs` (self for an in-place op)."""
    if outs == (0,) and pattern in _WRITES_SELF:
        return _WRITES_SELF[pattern](k)
    call = arrays(k, pattern)
    if len(outs) == 1:
        i = outs[0]

        def glue(*args):
            call(*args)
            return args[i]
        return glue

    def glue(*args):
        call(*args)
        return tuple([args[i] for i in outs])
    return glue


def _writes_t(k):
    def glue(a):
        k(a._np)
        return a
    return glue


def _writes_t_(k):
    def glue(a, b):
        k(a._np, b)
        return a
    return glue


def _writes_t__(k):
    def glue(a, b, c):
        k(a._np, b, c)
        return a
    return glue


def _writes_t___(k):
    def glue(a, b, c, d):
        k(a._np, b, c, d)
        return a
    return glue


def _writes_tn(k):  # fill_(Tensor value)
    def glue(a, b):
        k(a._np, b._np if b.__class__ is T else unwrap(b))
        return a
    return glue


def _writes_tn_(k):  # copy_, masked_fill_
    def glue(a, b, c):
        k(a._np, b._np if b.__class__ is T else unwrap(b), c)
        return a
    return glue


_WRITES_SELF = {"t": _writes_t, "t.": _writes_t_, "t..": _writes_t__, "t...": _writes_t___,
                "tn": _writes_tn, "tn.": _writes_tn_}


_ONE = 1  # alpha's default: the same-dtype paths take it by identity, as the kernels do


# A Tensor of these dtypes with a Python float or int (x * 0.5, x + 1): NumPy's weak scalar keeps the
# array's dtype and computes in it, as ATen does with a wrapped number. Not float16/bfloat16 (ATen
# computes those in float32 with the number in float32, NumPy would round the number to the array's
# dtype first) nor integer arrays (NumPy refuses a number out of their range where ATen wraps).
_WEAK_NUMBER_DTYPES = frozenset((_dt.float32, _dt.float64, _dt.complex64, _dt.complex128))
_I63 = 1 << 63


# NumPy takes a slower path for a Python number than for a 0-d array of the array's dtype (7.6K
# against 4.5K instructions for a 16-element float32 multiply): the number is converted once and kept,
# per dtype. The results are bit for bit the same (each ufunc here, every float dtype, signed zeros,
# inf/NaN, ints past 2**53). Zeros (0.0 and -0.0 are one dict key) and NaN are not kept; the table is
# bounded for programs that make many distinct numbers.
_NUMBER_ARRAYS = {d: {} for d in _WEAK_NUMBER_DTYPES}


def number_array(b, d):
    """Python number b as a read-only 0-d array of ember dtype d (one of _WEAK_NUMBER_DTYPES)."""
    c = _NUMBER_ARRAYS[d]
    r = c.get(b)
    if r is None:
        r = np.array(b, d.np)
        r.flags.writeable = False
        if b and b == b and len(c) < 1024:
            c[b] = r
    return r


def _with_number(ufunc, a, b):
    """ufunc(a's array, Python number b) as a Tensor of a's dtype; None for a 0-d result (a NumPy
    scalar, which the kernel wraps) so the caller takes the kernel."""
    c = _NUMBER_ARRAYS[a._dtype]
    n = c.get(b)
    r = ufunc(a._np, number_array(b, a._dtype) if n is None else n)
    if r.__class__ is not _ndarray:
        return None
    t = _new(T)
    t._np = r
    t._shape = a._shape
    t._dtype = a._dtype
    t._device = CPU
    t._keys = CPU_KEYS
    t._base = t._vc = t._ameta = None
    return t


def same_dtype(k, sd, pattern):
    """Glue of an op declaring `cpu_same_dtype: (ufunc, the ember dtypes it serves)`: when every Tensor
    argument is a plain CPU Tensor of one such dtype and alpha is 1, the result is ufunc(arrays) of that
    dtype, which is what the kernel returns then; built here, skipping the kernel and the dtype look-up.
    A 0-d NumPy scalar result (no array) or shapes that do not broadcast go to the kernel."""
    ufunc, dtypes = sd
    weak = dtypes & _WEAK_NUMBER_DTYPES
    if pattern == "tn":  # tanh_backward(grad, output): the nn glue, without the Python-number path
        pattern, weak = "nn", frozenset()
    elif pattern == "tn.":  # rsub(Tensor, Tensor or number, alpha): the nn. glue
        pattern = "nn."
    if pattern == "t":
        def glue(a):
            d = a._dtype
            if d in dtypes:
                r = ufunc(a._np)
                if r.__class__ is _ndarray:  # what wrap does, with the dtype known
                    t = _new(T)
                    t._np = r
                    t._shape = a._shape
                    t._dtype = d
                    t._device = CPU
                    t._keys = CPU_KEYS
                    t._base = t._vc = t._ameta = None
                    return t
            return wrap(k(a._np))
        return glue
    if pattern == "nn":
        def glue(a, b):
            if a.__class__ is T and b.__class__ is T:
                d = a._dtype
                if d is b._dtype and d in dtypes:
                    try:
                        r = ufunc(a._np, b._np)
                    except ValueError:
                        r = None
                    if r.__class__ is _ndarray:  # what wrap does, with the dtype known
                        t = _new(T)
                        t._np = r
                        t._shape = a._shape if a._shape == b._shape else r.shape
                        t._dtype = d
                        t._device = CPU
                        t._keys = CPU_KEYS
                        t._base = t._vc = t._ameta = None
                        return t
            elif (b.__class__ is float or b.__class__ is int and -_I63 <= b < _I63) and a.__class__ is T \
                    and a._dtype in weak:
                t = _with_number(ufunc, a, b)
                if t is not None:
                    return t
            return wrap(k(a._np if a.__class__ is T else unwrap(a), b._np if b.__class__ is T else unwrap(b)))
        return glue
    if pattern == "nn.":
        def glue(a, b, alpha):
            if a.__class__ is T and b.__class__ is T:
                d = a._dtype
                if d is b._dtype and d in dtypes and alpha is _ONE:
                    try:
                        r = ufunc(a._np, b._np)
                    except ValueError:
                        r = None
                    if r.__class__ is _ndarray:  # what wrap does, with the dtype known
                        t = _new(T)
                        t._np = r
                        t._shape = a._shape if a._shape == b._shape else r.shape
                        t._dtype = d
                        t._device = CPU
                        t._keys = CPU_KEYS
                        t._base = t._vc = t._ameta = None
                        return t
            elif (b.__class__ is float or b.__class__ is int and -_I63 <= b < _I63) and a.__class__ is T \
                    and alpha is _ONE and a._dtype in weak:
                t = _with_number(ufunc, a, b)
                if t is not None:
                    return t
            return wrap(k(a._np if a.__class__ is T else unwrap(a), b._np if b.__class__ is T else unwrap(b), alpha))
        return glue
    raise ValueError(f"cpu_same_dtype takes the patterns t, tn, tn., nn and nn. only, not {pattern!r}")
