"""torch/functional.py-style reductions and sorts: norm, unique, unique_consecutive, and sort /
argsort with `stable=` (their stable overloads have no generated binding)."""
import ember
from ember._generated import functions as _F, ops as _ops
# the generated Tensor methods, where the fast paths below fall back for anything unusual
from ember._generated.tensor_base import _TensorBase as _TB
from ember.core.tensor_impl import TensorImpl as _TI

__all__ = ["norm", "unique", "unique_consecutive", "sort", "argsort", "max", "min", "var", "std"]


# ---- fast paths for the overloaded max/min/var/std (the generated bindings resolve them by
# ---- schema, which costs several microseconds); anything unusual goes to the generated binding
def _minmax(full, dim_op, other_op, gen):
    full_t, dim_t, other_t = full.call, dim_op.call, other_op.call

    def fn(input, *args, **kwargs):
        if isinstance(input, _TI) and not kwargs:
            n = len(args)
            if n == 0:
                return full_t(input)
            a = args[0]
            if n <= 2 and a.__class__ is int and (n == 1 or args[1].__class__ is bool):
                return dim_t(input, a, args[1] if n == 2 else False)
            if n == 1 and isinstance(a, _TI):
                return other_t(input, a)
            if n == 1 and isinstance(a, (float, complex, bool)):  # torch takes no number `other`
                name = full.schema.name
                raise TypeError(
                    f"{name}() received an invalid combination of arguments - got (Tensor, "
                    f"{type(a).__name__}), but expected one of:\n * (Tensor input, *, Tensor out = None)"
                    "\n * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, int "
                    "dim, bool keepdim = False, *, tuple of Tensors out = None)")
        return gen(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = full.schema.name
    return fn


max = _minmax(_ops.max, _ops.max_dim, _ops.max_other, _F.max)
min = _minmax(_ops.min, _ops.min_dim, _ops.min_other, _F.min)
_max_method = _minmax(_ops.max, _ops.max_dim, _ops.max_other, _TB.max)
_min_method = _minmax(_ops.min, _ops.min_dim, _ops.min_other, _TB.min)

_VAR_KW = frozenset(("keepdim", "correction", "unbiased"))


def _varstd(op, gen):
    call = op.call

    def fn(input, *args, **kwargs):
        if isinstance(input, _TI) and len(args) <= 1 and (not kwargs or kwargs.keys() <= _VAR_KW):
            if args:
                dim = args[0]
                if dim.__class__ is int:
                    dim = (dim,)
                elif dim.__class__ not in (tuple, list) or any(d.__class__ is not int for d in dim):
                    return gen(input, *args, **kwargs)
                else:
                    dim = tuple(dim)
            else:
                dim = None
            corr = kwargs.get("correction")
            ub = kwargs.get("unbiased")
            keepdim = kwargs.get("keepdim", False)
            if (ub is None or ub.__class__ is bool) and (corr is None or ub is None) and \
                    keepdim.__class__ is bool:
                if ub is not None:
                    corr = 1 if ub else 0
                return call(input, dim, corr, keepdim)
        return gen(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = gen.__name__
    return fn


var = _varstd(_ops.var_correction, _F.var)
std = _varstd(_ops.std_correction, _F.std)
_var_method = _varstd(_ops.var_correction, _TB.var)
_std_method = _varstd(_ops.std_correction, _TB.std)

_gen_sort = _F.sort
_gen_argsort = _F.argsort


def _stable_args(name, args, kwargs):
    """(stable, dim, descending, out) of the keyword-only stable overload, as torch binds it."""
    if args or not kwargs.keys() <= {"stable", "dim", "descending", "out"}:
        raise TypeError(f"{name}() received an invalid combination of arguments: the stable "
                        "overload takes only keyword arguments (stable, dim, descending, out)")
    return (kwargs["stable"], kwargs.get("dim", -1), kwargs.get("descending", False),
            kwargs.get("out"))


def sort(input, *args, **kwargs):
    if "stable" not in kwargs or not isinstance(input, _TI):
        return _gen_sort(input, *args, **kwargs)
    stable, dim, descending, out = _stable_args("sort", args, kwargs)
    if out is None:
        return _ops.sort_stable(input, stable, dim, descending)
    return _ops.sort_values_stable(input, stable, dim, descending, *out)


def argsort(input, *args, **kwargs):
    if "stable" not in kwargs or not isinstance(input, _TI):
        return _gen_argsort(input, *args, **kwargs)
    stable, dim, descending, out = _stable_args("argsort", args, kwargs)
    if out is None:
        return _ops.argsort_stable(input, bool(stable), dim, descending)
    return _ops.argsort_stable_out(input, bool(stable), dim, descending, out)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: vector norms through linalg.vector_norm, 'nuc' and matrix orders through
    linalg.matrix_norm."""
    if dim is not None and not isinstance(dim, (list, tuple)):
        _dim = [dim]
    else:
        _dim = dim
    kw = {} if out is None else {"out": out}
    if isinstance(p, str):
        if p == "fro" and (dim is None or not isinstance(dim, (list, tuple)) or len(dim) <= 2):
            return ember.linalg.vector_norm(input, 2, _dim, keepdim, dtype=dtype, **kw)
        if _dim is None:
            _dim = list(range(input.ndim))
        matrix_norm = getattr(ember.linalg, "matrix_norm", None)
        if matrix_norm is None:
            raise NotImplementedError("norm(): matrix norms need ember.linalg.matrix_norm")
        return matrix_norm(input, p, _dim, keepdim, dtype=dtype, **kw)
    _p = 2.0 if p is None else p
    return ember.linalg.vector_norm(input, _p, _dim, keepdim, dtype=dtype, **kw)


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Tensor.norm: torch.norm without out= (its fifth positional argument is dtype)."""
    return norm(self, p, dim, keepdim, None, dtype)


def _pick(output, inverse, counts, return_inverse, return_counts):
    if return_inverse and return_counts:
        return output, inverse, counts
    if return_inverse:
        return output, inverse
    if return_counts:
        return output, counts
    return output


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    if dim is not None:
        output, inverse, counts = _ops.unique_dim(input, dim, sorted, return_inverse, return_counts)
    else:
        output, inverse, counts = _ops._unique2(input, sorted, return_inverse, return_counts)
    return _pick(output, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    output, inverse, counts = _ops.unique_consecutive(input, return_inverse, return_counts, dim)
    return _pick(output, inverse, counts, return_inverse, return_counts)
