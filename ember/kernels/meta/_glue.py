"""Between the dispatcher and the meta functions: specs (shape, dtype[, strides]) -> meta tensors."""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.layout import preserve_strides
from ember.core.tensor_impl import TensorImpl, contiguous_strides, make_meta, make_view_meta
from ember.kernels.meta.strides import empty_like_strides, tensor_iterator_strides


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


# caffe2::TypeMeta names, which the structured kernels' out= dtype check prints
_TYPEMETA = {_dt.bool_: "bool", _dt.uint8: "unsigned char", _dt.int8: "signed char",
             _dt.int16: "short int", _dt.int32: "int", _dt.int64: "long int", _dt.float16: "c10::Half",
             _dt.bfloat16: "c10::BFloat16", _dt.float32: "float", _dt.float64: "double",
             _dt.complex64: "c10::complex<float>", _dt.complex128: "c10::complex<double>"}


def check_out_dtype(rule, result, out):
    """An out= Tensor whose dtype must be the result's (`out_dtype:` in the op's YAML): "exact" is a
    structured kernel's check (mm, sort, triu, ...), "input" a same-dtype TensorIterator op's
    (round, sign, clamp), anything else the op's own message ({result}, {out}: ScalarType names,
    {result_meta}, {out_meta}: TypeMeta names). torch refuses a castable dtype there too."""
    if result is not out:
        if rule == "exact":
            raise RuntimeError(f"Expected out tensor to have dtype {_TYPEMETA[result]}, but got "
                               f"{_TYPEMETA[out]} instead")
        if rule == "input":
            raise RuntimeError(f"Found dtype {out._short} but expected {result._short}")
        raise RuntimeError(rule.format(result=result._short, out=out._short,
                                       result_meta=_TYPEMETA[result], out_meta=_TYPEMETA[out]))


def store_out(out, spec, rule=None):
    shape, dtype = tuple(spec[0]), spec[1]
    if rule is not None:
        check_out_dtype(rule, dtype, out._dtype)
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

# Result layouts. A kernel gives (shape, dtype[, strides]); where it gives no strides, the glue
# lays a new result out as PyTorch's meta tensors are: the kernels of ELEMENTWISE_MODULES are
# TensorIterator ops (strides.tensor_iterator_strides over the Tensor arguments, in order), as
# are those of STRIDES; STRIDES' rules take (shape, args) and give strides (None: contiguous).
ELEMENTWISE_MODULES = {"ember.kernels.meta.pointwise", "ember.kernels.meta.activation",
                       "ember.kernels.meta.compare", "ember.kernels.meta.special_functions"}


def _tensors(args):
    return [a for a in args if isinstance(a, TensorImpl)]


def _elementwise(shape, args):
    return tensor_iterator_strides(shape, _tensors(args))


def _swapped(shape, args):
    # rsub is other - self, binary_cross_entropy's meta reads target first: `other` votes first
    return tensor_iterator_strides(shape, _tensors((args[1], args[0])))


def _reversed(shape, args):
    # backward kernels torch's meta computes from self first (where(self <= threshold, 0, grad))
    return tensor_iterator_strides(shape, _tensors(args)[::-1])


def _other(shape, args):
    # copysign and floor division: torch's meta result is laid out by `other` alone (self votes
    # only where other is a number)
    return tensor_iterator_strides(shape, _tensors(args[1:2]) or _tensors(args[:1]))


def _div_mode(shape, args):
    return (_other if len(args) > 2 and args[2] == "floor" else _elementwise)(shape, args)


def _all_dims(shape, args):
    # all(dim=()) reduces nothing: an elementwise `!= 0`
    dim = args[1] if len(args) > 1 else None
    return _elementwise(shape, args[:1]) if dim is not None and len(dim) == 0 else None


def _clone(shape, args):
    # preserve_format: a non-overlapping and dense input (TensorImpl's flag: an empty one is)
    # keeps its strides exactly, else infer_dense_strides (meta clone gives the other formats')
    x = args[0]
    return preserve_strides(x._shape, x.stride())


def _sort(shape, args):
    # sort's values and indices (argsort, msort): empty_like(self)
    return empty_like_strides(args[0])


def _glu(shape, args):
    # glu: TensorIterator over the two halves (narrow views: the input's strides)
    x = args[0]
    half = (shape, x.stride())
    return tensor_iterator_strides(shape, [half, half])


_M = "ember.kernels.meta."
STRIDES = {
    (_M + "pointwise", "rsub"): _swapped,
    (_M + "pointwise", "copysign"): _other,
    (_M + "pointwise", "floor_divide"): _other,
    (_M + "pointwise", "div_mode"): _div_mode,
    (_M + "reduction", "max_other"): _elementwise,
    (_M + "reduction", "min_other"): _elementwise,
    (_M + "reduction", "all_dims"): _all_dims,
    (_M + "reduction", "sort"): _sort,
    (_M + "reduction", "sort_stable"): _sort,
    (_M + "reduction", "argsort"): _sort,
    (_M + "reduction", "argsort_stable"): _sort,
    (_M + "reduction", "msort"): _sort,
    (_M + "copy", "clone"): _clone,
    # the pointwise losses' reduction='none' results (a reduced one is 0-d)
    (_M + "nn_norm_loss", "mse_loss"): _elementwise,
    (_M + "nn_norm_loss", "smooth_l1_loss"): _elementwise,
    (_M + "nn_norm_loss", "huber_loss"): _elementwise,
    (_M + "nn_norm_loss", "binary_cross_entropy"): _swapped,
    (_M + "activation", "glu"): _glu,
    (_M + "activation", "glu_backward"): lambda shape, args: None,
    (_M + "activation", "prelu_kernel_backward"): _reversed,
    **{(_M + "activation", name + "_backward"): _reversed for name in (
        "threshold", "hardtanh", "hardsigmoid", "hardswish", "softplus", "elu", "leaky_relu")},
    (_M + "compare", "masked_fill"): lambda shape, args: None,  # expand, clone(contiguous), fill
}


def stride_rule(k):
    """The layout rule of kernel k's new results, None where they are contiguous."""
    mod = getattr(k, "__module__", None)
    rule = STRIDES.get((mod, getattr(k, "__name__", None)))
    if rule is None and mod in ELEMENTWISE_MODULES:
        return _elementwise
    return rule


def wrap_laid_out(spec, rule, args):
    """A new meta result whose strides are the spec's, else rule(shape, args)'s."""
    if len(spec) == 3:
        return make_meta(spec[0], spec[1], spec[2])
    return make_meta(spec[0], spec[1], rule(spec[0], args))


def functional(k, n):
    """wrap(k(args)) for k taking n arguments: the result is a new meta Tensor (laid out as
    PyTorch's TensorIterator lays it out where k is elementwise)."""
    rule = stride_rule(k)
    if rule is not None:
        return lambda *args: wrap_laid_out(k(*args), rule, args)
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
    rule = stride_rule(k) if base is None else None
    if rule is not None:
        return lambda *args: tuple([wrap_laid_out(x, rule, args) for x in k(*args)])
    if base is None:
        return lambda *args: tuple([wrap(x) for x in k(*args)])
    return lambda *args: tuple([view(args[base], x) for x in k(*args)])


def returns(k, kinds, make=tuple):
    """Several results; kinds has a `t` for each Tensor among them, make builds the tuple."""
    make = make if make is tuple else make._make
    rule = stride_rule(k)
    if rule is not None:
        def glue(*args):
            return make([wrap_laid_out(x, rule, args) if c == "t" else x
                         for c, x in zip(kinds, k(*args))])
        return glue

    def glue(*args):
        return make([wrap(x) if c == "t" else x for c, x in zip(kinds, k(*args))])
    return glue


def inplace(k, name):
    """self <- k(args): checks that the result fits self (meta Tensors hold no data)."""
    def glue(*args):
        store_inplace(args[0], k(*args), name)
        return args[0]
    return glue


def with_out_dtype(glue, rule, nouts=1):
    """rule "dtype:<i>": the functional's dtype argument (position i) is out's dtype when None, as
    torch's reductions compute `sum(x, out=o)` in o's dtype."""
    i = int(rule[6:])

    def wrapped(*args):
        if args[i] is None:
            args = args[:i] + (args[-nouts]._dtype,) + args[i + 1:]
        return glue(*args)
    return wrapped


def out(k, n, nouts=1, make=None, rule=None):
    """k(the first n args) stored into the trailing out= Tensors; make builds the tuple of several;
    rule: the op's out_dtype check (check_out_dtype), or "dtype:<i>" (with_out_dtype)."""
    if rule is not None and rule.startswith("dtype:"):
        return with_out_dtype(out(k, n, nouts, make), rule, nouts)
    if nouts == 1:
        def glue(*args):
            store_out(args[-1], k(*args[:n]), rule)
            return args[-1]
        return glue
    make = tuple if make is None else make._make

    def glue(*args):
        outs = args[-nouts:]
        for o, r in zip(outs, k(*args[:n])):
            store_out(o, r, rule)
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
