"""Between the dispatcher and the meta functions: specs (shape, dtype[, strides]) -> meta tensors."""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.tensor_impl import contiguous_strides, make_meta, make_view_meta


def wrap(spec):
    if len(spec) == 3:
        return make_meta(spec[0], spec[1], spec[2])
    return make_meta(spec[0], spec[1])


def view(base, spec):
    shape, strides, offset = spec
    return make_view_meta(base, shape, strides, offset)


def scalar(x):
    return x


def _broadcast(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def store_inplace(self, spec, name):
    shape, dtype = spec[0], spec[1]
    _dt.check_cast(dtype, self._dtype)
    if tuple(shape) != self._shape:
        b = _broadcast(shape, self._shape) or tuple(shape)
        if b != self._shape:
            raise RuntimeError(f"output with shape {fmt_shape(self._shape)} doesn't match the "
                               f"broadcast shape {fmt_shape(b)}")


def store_out(out, spec):
    shape, dtype = tuple(spec[0]), spec[1]
    _dt.check_cast(dtype, out._dtype)
    if shape != out._shape:
        out._shape = shape
        out._strides = contiguous_strides(shape)


# ---------------------------------------------------------------------------------------------
# Glue factories: ember/_generated/register_meta.py registers, for each operator, one glue function
# made here from its meta kernel. Meta kernels take the Tensors themselves (they read shapes and
# dtypes), so only the number of arguments matters; the common arities get exact signatures.
# ---------------------------------------------------------------------------------------------
_FUNCTIONAL = {
    1: lambda k: lambda a: wrap(k(a)),
    2: lambda k: lambda a, b: wrap(k(a, b)),
    3: lambda k: lambda a, b, c: wrap(k(a, b, c)),
    4: lambda k: lambda a, b, c, d: wrap(k(a, b, c, d)),
}


def functional(k, n):
    """wrap(k(args)) for k taking n arguments: the result is a new meta Tensor."""
    make = _FUNCTIONAL.get(n)
    if make is not None:
        return make(k)
    return lambda *args: wrap(k(*args))


def view_of(k, base=0):
    """The result is a view of argument `base`."""
    return lambda *args: view(args[base], k(*args))


def value(k):
    """The result is not a Tensor: returned as the kernel gives it."""
    return lambda *args: scalar(k(*args))


def tensors(k, base=None):
    """A list of results, returned as a tuple (views of argument `base` if given)."""
    if base is None:
        return lambda *args: tuple([wrap(x) for x in k(*args)])
    return lambda *args: tuple([view(args[base], x) for x in k(*args)])


def returns(k, kinds, make=tuple):
    """Several results; kinds has a `t` for each Tensor among them, make builds the tuple."""
    make = make if make is tuple else make._make

    def glue(*args):
        return make([wrap(x) if c == "t" else x for c, x in zip(kinds, k(*args))])
    return glue


def inplace(k, name):
    """self <- k(args): checks that the result fits self (meta Tensors hold no data)."""
    def glue(*args):
        store_inplace(args[0], k(*args), name)
        return args[0]
    return glue


def out(k, n, nouts=1, make=None):
    """k(the first n args) stored into the trailing out= Tensors; make builds the tuple of several."""
    if nouts == 1:
        def glue(*args):
            store_out(args[-1], k(*args[:n]))
            return args[-1]
        return glue
    make = tuple if make is None else make._make

    def glue(*args):
        outs = args[-nouts:]
        for o, r in zip(outs, k(*args[:n])):
            store_out(o, r)
        return make(outs)
    return glue


def writes(k, outs=(0,)):
    """An explicit in-place or out= kernel: returns the Tensors at positions `outs`."""
    if len(outs) == 1:
        i = outs[0]

        def glue(*args):
            k(*args)
            return args[i]
        return glue

    def glue(*args):
        k(*args)
        return tuple([args[i] for i in outs])
    return glue
