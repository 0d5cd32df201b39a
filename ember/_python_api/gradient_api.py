"""torch.gradient: central differences in the interior, one-sided first- or second-order differences at
the edges, with uniform spacing (a number per dimension) or sample coordinates (a tensor per dimension),
as numpy.gradient and ATen's gradient overloads compute them. Written with ember ops (differentiable)."""
import ember

__all__ = ["gradient"]


def _nar(t, d, start, length):
    return t.narrow(d, start, length)


def _coef(c, d, ndim):
    shape = [1] * ndim
    shape[d] = c.shape[0]
    return c.reshape(shape)


def _uniform(f, d, h, edge_order):
    n = f.shape[d]
    inner = (_nar(f, d, 2, n - 2) - _nar(f, d, 0, n - 2)) / (2 * h)
    f0, f1, fl, fl1 = _nar(f, d, 0, 1), _nar(f, d, 1, 1), _nar(f, d, n - 1, 1), _nar(f, d, n - 2, 1)
    if edge_order == 1:
        first, last = (f1 - f0) / h, (fl - fl1) / h
    else:
        f2, fl2 = _nar(f, d, 2, 1), _nar(f, d, n - 3, 1)
        first = (-1.5 * f0 + 2 * f1 - 0.5 * f2) / h
        last = (0.5 * fl2 - 2 * fl1 + 1.5 * fl) / h
    return ember.cat([first, inner, last], d)


def _coordinates(f, d, x, edge_order):
    n, ndim = f.shape[d], f.dim()
    dx = x[1:] - x[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = _coef(-dx2 / (dx1 * (dx1 + dx2)), d, ndim)
    b = _coef((dx2 - dx1) / (dx1 * dx2), d, ndim)
    c = _coef(dx1 / (dx2 * (dx1 + dx2)), d, ndim)
    inner = a * _nar(f, d, 0, n - 2) + b * _nar(f, d, 1, n - 2) + c * _nar(f, d, 2, n - 2)
    f0, f1, fl, fl1 = _nar(f, d, 0, 1), _nar(f, d, 1, 1), _nar(f, d, n - 1, 1), _nar(f, d, n - 2, 1)
    if edge_order == 1:
        first = (f1 - f0) / dx[0]
        last = (fl - fl1) / dx[-1]
    else:
        f2, fl2 = _nar(f, d, 2, 1), _nar(f, d, n - 3, 1)
        h1, h2 = dx[0], dx[1]
        first = (-(2 * h1 + h2) / (h1 * (h1 + h2))) * f0 + ((h1 + h2) / (h1 * h2)) * f1 \
            + (-h1 / (h2 * (h1 + h2))) * f2
        h1, h2 = dx[-2], dx[-1]
        last = (h2 / (h1 * (h1 + h2))) * fl2 + (-(h2 + h1) / (h1 * h2)) * fl1 \
            + ((2 * h2 + h1) / (h2 * (h1 + h2))) * fl
    return ember.cat([first, inner, last], d)


def gradient(input, *, spacing=None, dim=None, edge_order=1):
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    ndim = input.dim()
    if dim is None:
        dims = list(range(ndim))
    else:
        raw = [dim] if isinstance(dim, int) else list(dim)
        dims = []
        for d in raw:
            if not -max(ndim, 1) <= d < max(ndim, 1):
                raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                                 f"{max(ndim, 1) - 1}], but got {d})")
            w = d % max(ndim, 1)
            if w in dims:
                raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
            dims.append(w)
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            if dim is None:
                raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a list of "
                                   f"length equal to 'self.dim() = {ndim}', since dim argument was not given, "
                                   f"but got a list of length {len(spacing)}")
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                               f"dim arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    f = input if (input.is_floating_point() or input.is_complex()) else input.to(ember.get_default_dtype())
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, ember.Tensor) and h.dim() == 1:
            out.append(_coordinates(f, d, h, edge_order))
        else:
            out.append(_uniform(f, d, h.item() if isinstance(h, ember.Tensor) else h, edge_order))
    return tuple(out)
