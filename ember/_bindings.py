"""Runtime support for the generated Python bindings (torch/csrc/utils/python_arg_parser)."""
import numpy as np

from ember.core.device import device as _device
from ember.core.dtype import dtype as _dtype
from ember.core.tensor_impl import TensorImpl
from ember.dispatch.backend_select import dev_keys  # noqa: F401  (the bindings' BackendSelect)
from ember.dispatch.operator import NoTensorArgumentsError, list_keys
from ember.dispatch.python_key import handle_objects, objects_with_torch_function
from ember.dispatch.resolve import (MISSING, NUMPY_NAMES, fail, resolve, to_device, to_dtype,  # noqa: F401
                                    to_int, to_intlist, to_scalar)

NUMS = frozenset((int, float, bool, complex))
NUMPY_PARAM = {v: k for k, v in NUMPY_NAMES.items()}  # axis -> dim, keepdims -> keepdim


def keys_of(x):
    return x._keys if isinstance(x, TensorImpl) else 0


keys_of_list = list_keys  # the dispatcher's: keys of a Tensor[] / Tensor?[] argument


def to_tensor_list(xs):
    if isinstance(xs, TensorImpl):
        raise TypeError("expected a sequence of Tensors, got Tensor")
    xs = list(xs)
    for x in xs:
        if x is not None and not isinstance(x, TensorImpl):
            raise TypeError(f"expected Tensor as element in argument, but got {type(x).__name__}")
    return xs


def to_floatlist(v, n):
    if isinstance(v, (int, float)):
        return (float(v),) * n
    return tuple(float(x) for x in v)


def is_int(v):
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))) or (
        isinstance(v, TensorImpl) and len(v._shape) == 0 and v._dtype.category == 1)


def is_intlist(v):
    return isinstance(v, (list, tuple)) and all(is_int(x) for x in v)


def is_dtype(v):
    return isinstance(v, _dtype) or v in (float, int, bool, complex)


def _split_out(ops, kwargs):
    out = kwargs.pop("out", None)
    if out is None:
        return [o for o in ops if not o.schema.is_out], kwargs
    cands = []
    for o in ops:
        if not o.schema.is_out:
            continue
        names = [a.name for a in o.schema.out_args]
        kw = dict(kwargs)
        if len(names) == 1:
            kw[names[0]] = out
        elif isinstance(out, (list, tuple)) and len(out) == len(names):
            kw.update(zip(names, out))
        else:
            continue
        cands.append((o, kw))
    return cands, None


def _select(name, ops, args, kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v is not MISSING}
    rg = kwargs.pop("requires_grad", False)
    allops = ops
    ops, kw = _split_out(ops, kwargs)
    if kw is not None:
        op, a = resolve(ops, args, kw, name)
        return op, a, rg
    from ember.dispatch.resolve import bind
    for o, k in ops:
        r = bind(o.schema, args, k)
        if r is not None:
            return o, r, rg
    fail(name, [o.schema for o in allops], args, kwargs)


def _call(op, a, rg):
    r = op.call(*a)
    if rg:
        factory_requires_grad(r)
    return r


def factory_requires_grad(r):
    """requires_grad=True on a factory call (PyTorch's wording differs from requires_grad_'s)."""
    if r._dtype.category not in (2, 3):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    r.requires_grad_()


def generic(name, ops, args, kwargs):
    try:
        sel = _select(name, ops, args, kwargs)
    except TypeError:
        objs = objects_with_torch_function(args, kwargs)
        if objs:
            return handle_objects(name, ops, objs, args, {k: v for k, v in kwargs.items() if v is not MISSING})
        raise
    try:
        return _call(*sel)
    except TypeError as err:
        _numpy_refusal(sel, err)
        raise


def _numpy_refusal(sel, err):
    """A kernel raised TypeError `err`: where it is NumPy's on a complex32 argument, raise torch's
    refusal instead (ember.kernels.cpu._chalf.numpy_refusal); else return."""
    from ember.kernels.cpu._chalf import numpy_refusal
    refusal = numpy_refusal(sel[0], sel[1], err)
    if refusal is not None:
        raise refusal from None


def _depth(tb):
    n = 0
    while tb is not None:
        n += 1
        tb = tb.tb_next
    return n


ARG_ERRORS = (AttributeError, TypeError, IndexError)  # what a binding's fast path raises on odd arguments


def _numpy_names(name, ops, kwargs, extra):
    """Bind NumPy's spellings (axis=, keepdims=) in place of the parameters they name; naming a
    parameter both ways is torch's unexpected-keyword error."""
    for k, v in extra.items():
        p = NUMPY_PARAM.get(k)
        if p is not None and p in kwargs:
            given = kwargs.pop(p)
            defaults = [a.default for o in ops for a in o.schema.arguments if a.name == p and a.has_default]
            if given is not MISSING and given is not None and not (
                    isinstance(given, (int, list, tuple)) and given in defaults):
                raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
        kwargs[k] = v


def fallback(name, ops, kwargs, err, args=(), positional=()):
    """A fast binding raised: clean TypeError for bad arguments, else the original error. kwargs is
    the binding's locals(): its parameters (less those given in args, named in positional) and its
    own temporaries (named _...), dropped here."""
    extra = kwargs.get("_kw")  # the NumPy spellings of parameters (axis=, keepdims=), bound by name
    kwargs = {k: v for k, v in kwargs.items() if k[0] != "_" and k not in positional}
    if extra:
        _numpy_names(name, ops, kwargs, extra)
    try:
        sel = _select(name, ops, args, kwargs)
    except TypeError:
        objs = objects_with_torch_function(args, kwargs)
        if objs:  # fx's Proxy and other non-Tensor objects with __torch_function__ (torch.overrides)
            return handle_objects(name, ops, objs, args, kwargs)
        raise
    if _depth(err.__traceback__) <= 2 or str(err) == "no overload matched" or isinstance(
            err, NoTensorArgumentsError):
        return _call(*sel)
    if isinstance(err, TypeError):
        _numpy_refusal(sel, err)
    raise err


def device_from(dev):
    return None if dev is None else (dev if isinstance(dev, _device) else to_device(dev))


__all__ = ["to_dtype", "to_int", "to_intlist", "to_device", "to_scalar"]
