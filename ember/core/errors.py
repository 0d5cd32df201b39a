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
