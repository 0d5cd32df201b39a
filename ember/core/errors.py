"""Error helpers shared by every layer, worded like PyTorch's."""


def wrap_dim(dim, ndim):
    """Normalise a possibly negative dim; PyTorch's 'Dimension out of range' error otherwise."""
    n = ndim if ndim > 0 else 1
    if -n <= dim < n:
        return dim + n if dim < 0 else dim
    if not isinstance(dim, int):
        raise TypeError(f"dim must be int, not {type(dim).__name__}")
    raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")


def wrap_dims(dims, ndim):
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        for i, d in enumerate(out):
            if d in out[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def fmt_shape(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def warn_resized(old_shape, new_shape, stacklevel=2):
    """ATen's resize_output warning: an out= tensor that had elements got the result's shape."""
    import warnings
    warnings.warn(f"An output with one or more elements was resized since it had shape {fmt_shape(old_shape)}, "
                  f"which does not match the required output shape {fmt_shape(new_shape)}. This behavior is "
                  "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                  "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                  "elements with t.resize_(0).", UserWarning, stacklevel=stacklevel + 1)
