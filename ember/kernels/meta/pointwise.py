"""Meta functions of pointwise ops: broadcast shape and promoted dtype."""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.tensor_impl import TensorImpl


def part(x):
    if isinstance(x, TensorImpl):
        return (x._dtype, 0 if x._shape else 1)
    return (_dt.scalar_dtype(x), 2)


def shape_of(x):
    return x._shape if isinstance(x, TensorImpl) else ()


def broadcast_shapes(*shapes):
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        off = n - len(s)
        for i, d in enumerate(s):
            j = i + off
            o = out[j]
            if d == o or d == 1:
                continue
            if o == 1:
                out[j] = d
            else:
                # PyTorch names the mismatch by tensor position (a, b) and non-singleton dim
                raise RuntimeError(f"The size of tensor a ({o}) must match the size of tensor b "
                                   f"({d}) at non-singleton dimension {j}")
    return tuple(out)


def binary(a, b, alpha=1):
    return broadcast_shapes(shape_of(a), shape_of(b)), _dt.result_type_of((part(a), part(b)))


def unary(a):
    return a._shape, a._dtype


__all__ = ["binary", "unary", "broadcast_shapes", "fmt_shape"]
