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
