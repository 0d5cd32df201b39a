"""Python entry points of factories and random ops whose binding is more than one schema
(torch/csrc/utils/python_arg_parser signatures): varargs sizes with a generator, overloads
chosen by argument types (arange, randint, normal, bernoulli, linspace), out= on factories
(computed in out's dtype, out resized silently as ATen's *_out factories do), and
requires_grad= on *_like / new_* factories. Each calls its operators through their handles (op.call)."""
import numpy as np

from ember._bindings import is_int as _is_int, to_device as _devc, to_dtype as _dtc, to_intlist as _il
from ember._generated import ops as _ops
from ember.core.device import device as _DEV
from ember.core.dtype import dtype as _DT
from ember.core.tensor_impl import TensorImpl as _TI, contiguous_strides
from ember.dispatch.resolve import fail as _fail

_M = object()  # argument not given

__all__ = ["zeros", "ones", "full", "arange", "range", "linspace", "logspace", "eye", "rand", "randn",
           "randint", "randperm", "normal", "bernoulli", "empty_like", "zeros_like", "ones_like",
           "full_like", "rand_like", "randn_like", "randint_like"]


def _bad(name, ops, args, kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v is not _M and v is not None and v is not False}
    _fail(name, [o.schema for o in ops], args, kwargs)


def _opts(dtype, device):
    if dtype is not None and dtype.__class__ is not _DT:
        dtype = _dtc(dtype)
    if device is not None and device.__class__ is not _DEV:
        device = _devc(device)
    return dtype, device


def _size_of(name, _size, size, ops):
    if size is None:
        if not _size:   # no size at all: torch's parser errors (one overload, or several)
            if len(ops) == 1:
                raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
            _bad(name, ops, (), {})
        if len(_size) == 1 and not _is_int(_size[0]):
            size = _size[0]
        else:
            size = _size
    elif _size:
        raise TypeError(f"{name}() got multiple values for argument 'size'")
    try:
        return _il(size)
    except TypeError:
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}") from None


def _out_dtype(dtype, out):
    if dtype is not None and dtype is not out._dtype:
        raise RuntimeError(f"dtype {dtype._short} does not match dtype of out parameter "
                           f"({out._dtype._short})")
    return out._dtype


def _store(out, r, warn_numel=False):
    """out <- r for factories' out=: resize (silently) to r's shape, then copy."""
    shape = r._shape
    if out._shape != shape:
        if warn_numel:
            n = r.numel()
            if out.numel() != n and out.numel() > 0:
                import warnings
                warnings.warn(f"The number of elements in the out tensor of shape "
                              f"[{', '.join(str(s) for s in out._shape)}] is {out.numel()} which does "
                              f"not match the computed number of elements {n}. Note that this may occur "
                              f"as a result of rounding error. The out tensor will be resized to a "
                              f"tensor of shape ({n},).", UserWarning, stacklevel=3)
        t = out._device.type
        if t == "cpu":
            from ember.kernels.cpu._glue import resize_cpu
            resize_cpu(out, shape)
        elif t == "meta":
            out._shape = tuple(shape)
            out._strides = contiguous_strides(shape)
        else:
            out.resize_(shape)
    t = out._device.type
    if t == "cpu":
        a = out._np
        if not a.flags.writeable:
            from ember.kernels.cpu._glue import _OVERLAP
            raise RuntimeError(_OVERLAP)
        np.copyto(a, r._np, casting="unsafe")
    elif t != "meta":
        out.copy_(r)
    out._bump_version()
    return out


def _finish(r, requires_grad):
    if requires_grad:
        r.requires_grad_()
    return r


# ---- zeros / ones / full ----------------------------------------------------------------------
def _simple_factory(name, op):
    ops = [op]

    def fn(*_size, size=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
           requires_grad=False):
        sz = _size_of(name, _size, size, ops)
        dtype, device = _opts(dtype, device)
        if out is not None:
            dtype = _out_dtype(dtype, out)
            return _store(out, op.call(sz, dtype, None, out._device, None))
        return _finish(op.call(sz, dtype, layout, device, pin_memory), requires_grad)
    fn.__name__ = fn.__qualname__ = name
    return fn


zeros = _simple_factory("zeros", _ops.zeros)
ones = _simple_factory("ones", _ops.ones)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
         requires_grad=False):
    sz = _il(size)
    dtype, device = _opts(dtype, device)
    if fill_value.__class__ not in (int, float, bool, complex):
        from ember.dispatch.resolve import to_scalar
        fill_value = to_scalar(fill_value)
    op = _ops.full
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, op.call(sz, fill_value, dtype, None, out._device, None))
    return _finish(op.call(sz, fill_value, dtype, layout, device, pin_memory),
                   requires_grad)


# ---- ranges -----------------------------------------------------------------------------------
_NUM = (int, float, bool, complex)


def _scalar(v):
    if v.__class__ in _NUM:
        return v
    from ember.dispatch.resolve import to_scalar
    return to_scalar(v)


_ARANGE_OPS = [_ops.arange, _ops.arange_start, _ops.arange_start_step]


def arange(start=_M, end=_M, step=_M, *, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    if start is _M and end is _M:
        _bad("arange", _ARANGE_OPS, (), {"step": step, "dtype": dtype})
    if end is _M:
        if step is not _M:
            _bad("arange", _ARANGE_OPS, (start,), {"step": step})
        start, end = 0, start
    elif start is _M:
        start = 0
    if step is _M:
        step = 1
    try:
        start, end, step = _scalar(start), _scalar(end), _scalar(step)
    except TypeError:
        _bad("arange", _ARANGE_OPS, (start, end, step), {})
    dtype, device = _opts(dtype, device)
    op = _ops.arange_start_step
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, op.call(start, end, step, dtype, None, out._device, None),
                      warn_numel=True)
    return _finish(op.call(start, end, step, dtype, layout, device, pin_memory),
                   requires_grad)


def range(start=0, end=_M, step=1, *, out=None, dtype=None, layout=None, device=None,
          pin_memory=False, requires_grad=False):
    """torch.range (deprecated): [start, end] inclusive, default dtype."""
    import warnings
    if end is _M:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
                  "which produces values in [start, end).", UserWarning, stacklevel=2)
    start, end, step = float(_scalar(start)), float(_scalar(end)), float(_scalar(step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int((end - start) / step) + 1
    from ember.core import dtype as _dt
    dtype, device = _opts(dtype, device)
    d = dtype or _dt.defaults.float
    r = arange(0, n, dtype=_dt.float64, device=device) * step + start
    r = r.to(d)
    if out is not None:
        return _store(out, r)
    return _finish(r, requires_grad)


def _space(name, op, tops, start, end, steps, base, out, dtype, layout, device, pin_memory,
           requires_grad):
    dtype, device = _opts(dtype, device)
    if steps.__class__ is not int:
        from ember.dispatch.resolve import to_int
        steps = to_int(steps)
    extra = () if base is None else (float(base),)
    ts, te = isinstance(start, _TI), isinstance(end, _TI)
    if ts or te:
        top = tops[0] if ts and te else tops[1] if ts else tops[2]
        if out is not None:
            dtype = _out_dtype(dtype, out)
            r = top.call(start, end, steps, *extra, dtype, None, out._device, None)
            return _store(out, r)
        return _finish(top.call(start, end, steps, *extra, dtype, layout, device,
                                                   pin_memory), requires_grad)
    start, end = _scalar(start), _scalar(end)
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, op.call(start, end, steps, *extra, dtype, None,
                                                      out._device, None))
    return _finish(op.call(start, end, steps, *extra, dtype, layout, device, pin_memory),
                   requires_grad)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    return _space("linspace", _ops.linspace, (_ops.linspace_Tensor_Tensor, _ops.linspace_Tensor_Scalar,
                  _ops.linspace_Scalar_Tensor), start, end, steps, None, out, dtype, layout, device,
                  pin_memory, requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=False, requires_grad=False):
    return _space("logspace", _ops.logspace, (_ops.logspace_Tensor_Tensor, _ops.logspace_Tensor_Scalar,
                  _ops.logspace_Scalar_Tensor), start, end, steps, base, out, dtype, layout, device,
                  pin_memory, requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
        requires_grad=False):
    for i, (nm, v) in enumerate((("n", n), ("m", m))):
        if v is not None and not _is_int(v):
            raise TypeError(f"eye(): argument '{nm}' (position {i + 1}) must be int, not "
                            f"{type(v).__name__}")
    n = int(n)
    m = n if m is None else int(m)
    dtype, device = _opts(dtype, device)
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, _ops.eye_m.call(n, m, dtype, None, out._device, None))
    return _finish(_ops.eye_m.call(n, m, dtype, layout, device, pin_memory),
                   requires_grad)


# ---- random factories -------------------------------------------------------------------------
def _random_factory(name, op, gop):
    ops = [op, gop]

    def fn(*_size, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False, **_kw):
        if _kw:   # randn(..., memory_format=...): torch's parser error, naming what was passed
            _bad(name, ops, _size, dict(size=size, generator=generator, out=out, dtype=dtype, layout=layout,
                                        device=device, pin_memory=pin_memory, requires_grad=requires_grad, **_kw))
        sz = _size_of(name, _size, size, ops)
        dtype, device = _opts(dtype, device)
        if generator is not None and not hasattr(generator, "_rng"):
            _bad(name, ops, _size, {"generator": generator})
        if out is not None:
            dtype = _out_dtype(dtype, out)
            r = gop.call(sz, generator, dtype, None, out._device, None)
            return _store(out, r)
        if generator is None:
            r = op.call(sz, dtype, layout, device, pin_memory)
        else:
            r = gop.call(sz, generator, dtype, layout, device, pin_memory)
        return _finish(r, requires_grad)
    fn.__name__ = fn.__qualname__ = name
    return fn


rand = _random_factory("rand", _ops.rand, _ops.rand_generator)
randn = _random_factory("randn", _ops.randn, _ops.randn_generator)
_RANDINT_OPS = [_ops.randint, _ops.randint_generator, _ops.randint_low, _ops.randint_low_generator]


def randint(*args, low=_M, high=_M, size=_M, generator=None, out=None, dtype=None, layout=None,
            device=None, pin_memory=False, requires_grad=False):
    kw = {"low": low, "high": high, "size": size}
    n = len(args)
    if n == 3 and low is _M and high is _M and size is _M:
        low, high, size = args
    elif n == 2 and high is _M and size is _M:
        high, size = args
    elif n == 2 and size is not _M and low is _M and high is _M:
        low, high = args
    elif n == 1 and size is not _M and high is _M:
        high = args[0]
    elif n == 1 and size is not _M and low is _M:
        low = args[0]
    elif n:
        _bad("randint", _RANDINT_OPS, args, kw)
    if high is _M or size is _M or not _is_int(high) or (low is not _M and not _is_int(low)):
        _bad("randint", _RANDINT_OPS, args, kw)
    if isinstance(size, int) or not isinstance(size, (tuple, list)):
        pos = 3 if low is not _M else 2
        raise TypeError(f"randint(): argument 'size' (position {pos}) must be tuple of ints, not "
                        f"{type(size).__name__}")
    sz = _il(size)
    low = 0 if low is _M else int(low)
    high = int(high)
    dtype, device = _opts(dtype, device)
    op = _ops.randint_low_generator
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, op.call(low, high, sz, generator, dtype, None,
                                                      out._device, None))
    return _finish(op.call(low, high, sz, generator, dtype, layout, device, pin_memory),
                   requires_grad)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    if not _is_int(n):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    n = int(n)
    dtype, device = _opts(dtype, device)
    op = _ops.randperm_generator
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, op.call(n, generator, dtype, None, out._device, None))
    return _finish(op.call(n, generator, dtype, layout, device, pin_memory),
                   requires_grad)


_NORMAL_OPS = [_ops.normal_Tensor_Tensor, _ops.normal_Tensor_float, _ops.normal_float_Tensor,
               _ops.normal_float_float]


def _is_real(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def normal(mean=_M, std=_M, size=_M, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False):
    mt, st = isinstance(mean, _TI), isinstance(std, _TI)
    if size is _M and dtype is None and device is None and not requires_grad:
        if mt and st:
            if out is not None:
                return _ops.normal_Tensor_Tensor_out.call(mean, std, generator, out)
            return _ops.normal_Tensor_Tensor.call(mean, std, generator)
        if mt and (std is _M or _is_real(std)):
            std = 1.0 if std is _M else float(std)
            if out is not None:
                return _ops.normal_Tensor_float_out.call(mean, std, generator, out)
            return _ops.normal_Tensor_float.call(mean, std, generator)
        if st and _is_real(mean):
            if out is not None:
                return _ops.normal_float_Tensor_out.call(float(mean), std, generator, out)
            return _ops.normal_float_Tensor.call(float(mean), std, generator)
    if not (_is_real(mean) and _is_real(std)) or size is _M:
        _bad("normal", _NORMAL_OPS, tuple(x for x in (mean, std, size) if x is not _M), {})
    sz = _il(size)
    dtype, device = _opts(dtype, device)
    op = _ops.normal_float_float
    if out is not None:
        dtype = _out_dtype(dtype, out)
        return _store(out, op.call(float(mean), float(std), sz, generator, dtype,
                                                      None, out._device, None))
    return _finish(op.call(float(mean), float(std), sz, generator, dtype, layout, device,
                                         pin_memory), requires_grad)


def bernoulli(input, p=_M, *, generator=None, out=None):
    if not isinstance(input, _TI):
        _bad("bernoulli", [_ops.bernoulli, _ops.bernoulli_p], (input,), {})
    if p is _M:
        if out is not None:
            return _ops.bernoulli_out.call(input, generator, out)
        return _ops.bernoulli.call(input, generator)
    if out is not None:
        _bad("bernoulli", [_ops.bernoulli, _ops.bernoulli_p], (input, p), {"out": out})
    if isinstance(p, _TI):
        return _ops.bernoulli_Tensor.call(input, p, generator)
    if not _is_real(p):
        _bad("bernoulli", [_ops.bernoulli, _ops.bernoulli_p], (input, p), {})
    return _ops.bernoulli_p.call(input, float(p), generator)


# ---- *_like -----------------------------------------------------------------------------------
def _like(name, op, gop=None):
    def fn(input, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False,
           memory_format=None, generator=None):
        if not isinstance(input, _TI):
            _bad(name, [op], (input,), {})
        dtype, device = _opts(dtype, device)
        if generator is not None and gop is not None:
            r = gop.call(input, generator, dtype, layout, device, pin_memory, memory_format)
        else:
            r = op.call(input, dtype, layout, device, pin_memory, memory_format)
        return _finish(r, requires_grad)
    fn.__name__ = fn.__qualname__ = name
    return fn


empty_like = _like("empty_like", _ops.empty_like)
zeros_like = _like("zeros_like", _ops.zeros_like)
ones_like = _like("ones_like", _ops.ones_like)
rand_like = _like("rand_like", _ops.rand_like, _ops.rand_like_generator)
randn_like = _like("randn_like", _ops.randn_like, _ops.randn_like_generator)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False, memory_format=None):
    if not isinstance(input, _TI):
        _bad("full_like", [_ops.full_like], (input, fill_value), {})
    dtype, device = _opts(dtype, device)
    r = _ops.full_like.call(input, _scalar(fill_value), dtype, layout, device,
                                          pin_memory, memory_format)
    return _finish(r, requires_grad)


_RANDINT_LIKE_OPS = [_ops.randint_like, _ops.randint_like_low_dtype,
                     _ops.randint_like_low_generator_dtype]


def randint_like(input, low=_M, high=_M, *, generator=None, dtype=None, layout=None, device=None,
                 pin_memory=False, requires_grad=False, memory_format=None):
    if high is _M:
        low, high = 0, low
    elif low is _M:
        low = 0
    if not isinstance(input, _TI) or high is _M or not _is_int(high) or not _is_int(low):
        _bad("randint_like", _RANDINT_LIKE_OPS, (input,), {"low": low, "high": high})
    dtype, device = _opts(dtype, device)
    r = _ops.randint_like_low_generator_dtype.call(
        input, int(low), int(high), generator, dtype, layout, device, pin_memory, memory_format)
    return _finish(r, requires_grad)


# ---- Tensor.new_* -----------------------------------------------------------------------------
def _new(name, op):
    def fn(self, *_size, size=None, dtype=None, layout=None, device=None, pin_memory=False,
           requires_grad=False):
        sz = _size_of(name, _size, size, [op])
        dtype, device = _opts(dtype, device)
        return _finish(op.call(self, sz, dtype, layout, device, pin_memory), requires_grad)
    fn.__name__ = fn.__qualname__ = name
    return fn


def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    dtype, device = _opts(dtype, device)
    r = _ops.new_full.call(self, _il(size), _scalar(fill_value), dtype, layout, device,
                                        pin_memory)
    return _finish(r, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                      requires_grad=False):
    dtype, device = _opts(dtype, device)
    r = _ops.new_empty_strided.call(self, _il(size), _il(stride), dtype, layout, device,
                                                 pin_memory)
    return _finish(r, requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
    from ember._creation import tensor
    if isinstance(data, _TI):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                  requires_grad=requires_grad)


new_empty = _new("new_empty", _ops.new_empty)
new_zeros = _new("new_zeros", _ops.new_zeros)
new_ones = _new("new_ones", _ops.new_ones)
