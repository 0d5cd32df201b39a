"""Layout rules shared by every backend's copies (clone, _to_copy, empty_like)."""
from ember.core.tensor_impl import contiguous_strides


def dense_strides_like(t):
    """t's strides when t is a permutation of a dense layout (preserve_format), else contiguous."""
    shape, strides = t._shape, t.stride()
    if t.is_contiguous():
        return contiguous_strides(shape)
    order = sorted(range(len(shape)), key=lambda i: (strides[i], -i))
    out = [0] * len(shape)
    acc = 1
    for i in order:
        if shape[i] != 1 and strides[i] != acc:
            return contiguous_strides(shape)
        out[i] = acc
        acc *= max(shape[i], 1)
    return tuple(out)
