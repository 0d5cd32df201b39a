"""Composite view and shape operators, written with other ember operators (every backend)."""
import ember
from ember._generated import ops as _ops
from ember.core import tls as _tls
from ember.core.errors import fmt_shape, wrap_dim
from ember.core.tensor_impl import make_view_cpu, make_view_meta
from ember.kernels.meta import views as _mv

_st = _tls.current


# ---- views -------------------------------------------------------------------------------------
def _view(t, shape):
    return _ops.view.call(t, shape)


def _slice(t, dim, start, end, step=1):
    return _ops.slice_Tensor.call(t, dim, start, end, step)


def _select(t, dim, index):
    return _ops.select_int.call(t, dim, index)


def _transpose(t, d0, d1):
    return _ops.transpose_int.call(t, d0, d1)


def _permute(t, dims):
    return _ops.permute.call(t, dims)


def reshape(self, shape):
    try:
        return _ops.view.call(self, shape)
    except RuntimeError as e:
        if str(e) != _mv.VIEW_ERROR:
            raise
    # PyTorch: _unsafe_view(clone(contiguous)) -> UnsafeViewBackward0 <- CloneBackward0
    shape = _mv.infer_size(shape, self.numel())
    g = _ops
    c = g.clone.call(self, ember.contiguous_format)
    return g._unsafe_view.call(c, shape)


def reshape_as(self, other):
    return reshape(self, other._shape)


def view_as(self, other):
    return _view(self, other._shape)


def ravel(self):
    # PyTorch: contiguous().view(-1) (ViewBackward0 also after a copy)
    if not self.is_contiguous():
        self = _ops.clone.call(self, ember.contiguous_format)
    return _view(self, (-1,))


def expand_as(self, other):
    return _ops.expand.call(self, other._shape, False)


def flatten(self, start_dim=0, end_dim=-1):
    n = len(self._shape)
    s = wrap_dim(start_dim, n)
    e = wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if n == 0:
        return reshape(self, (1,))
    if s == e:
        return self
    shape = self._shape
    m = 1
    for x in shape[s:e + 1]:
        m *= x
    return reshape(self, shape[:s] + (m,) + shape[e + 1:])


def unflatten(self, dim, sizes):
    n = len(self._shape)
    d = wrap_dim(dim, n)
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = self._shape[d]
    infer = [i for i, s in enumerate(sizes) if s == -1]
    if len(infer) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
    prod = 1
    for s in sizes:
        if s != -1:
            prod *= s
    if infer:
        if prod == 0 and size == 0:
            raise RuntimeError("unflatten got an unexpected error:\ncannot reshape tensor of 0 "
                               f"elements into shape {fmt_shape(sizes)} because the unspecified "
                               "dimension size -1 can be any value and is ambiguous")
        if prod == 0 or size % prod:
            raise RuntimeError(f"unflatten: Provided sizes {fmt_shape(sizes)} don't multiply up to the "
                               f"size of dim {dim} ({size}) in the input tensor")
        sizes = sizes[:infer[0]] + (size // prod,) + sizes[infer[0] + 1:]
    elif prod != size:
        raise RuntimeError(f"unflatten: Provided sizes {fmt_shape(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({size}) in the input tensor")
    return _view(self, self._shape[:d] + sizes + self._shape[d + 1:])


def narrow(self, dim, start, length):
    n = len(self._shape)
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    cur = self._shape[wrap_dim(dim, n)]
    if not -cur <= start <= cur:
        raise IndexError(f"start out of range (expected to be in range of [{-cur}, {cur}], but got "
                         f"{start})")
    if start < 0:
        start += cur
    if start > cur - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({cur}).")
    return _slice(self, dim, start, start + length, 1)


def t(self, _name="t"):
    n = len(self._shape)
    if n > 2:
        raise RuntimeError(f"{_name}() expects a tensor with <= 2 dimensions, but self is {n}D")
    return _transpose(self, 0, n - 1 if n else 0)


def swapaxes(self, axis0, axis1):
    return _transpose(self, axis0, axis1)


def movedim(self, source, destination):
    if source.__class__ is int and destination.__class__ is int:
        n = len(self._shape)
        s, d = wrap_dim(source, n), wrap_dim(destination, n)
        if n > 1:
            order = list(range(n))
            del order[s]
            order.insert(d, s)
            return _permute(self, tuple(order))
    if isinstance(source, int):
        source = (source,)
    if isinstance(destination, int):
        destination = (destination,)
    src, dst = list(source), list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({fmt_shape(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({fmt_shape(dst)} dims)")
    n = len(self._shape)
    ns = [wrap_dim(d, n) for d in src]
    nd = [wrap_dim(d, n) for d in dst]
    if len(set(ns)) != len(ns):
        raise RuntimeError(f"movedim: repeated dim in `source` ({fmt_shape(src)})")
    if len(set(nd)) != len(nd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({fmt_shape(dst)})")
    if n == 0:
        return _ops.alias.call(self)
    order = [-1] * n
    rest_src = list(range(n))
    rest_dst = list(range(n))
    for s, d in zip(ns, nd):
        order[d] = s
        rest_src[s] = -1
        rest_dst[d] = -1
    rs = [x for x in rest_src if x != -1]
    rd = [x for x in rest_dst if x != -1]
    for s, d in zip(rs, rd):
        order[d] = s
    return _permute(self, tuple(order))


def _retype_view(self, spec_cpu, spec_meta, dtype):
    a = self._np
    if a is not None:
        r = make_view_cpu(self, spec_cpu(a))
    else:
        shape, strides, off = spec_meta(self)
        r = make_view_meta(self, shape, strides, off)
    r._dtype = dtype
    return r


def view_dtype(self, dtype):
    from ember.kernels.cpu import views as cv
    if dtype is self._dtype:  # view.dtype is not differentiable (no AliasBackward0)
        return _ops.alias.call_below_autograd(self)
    return _retype_view(self, lambda a: cv.view_dtype(a, dtype),
                        lambda t: _mv.view_dtype(t, dtype), dtype)


def view_as_real(self):
    from ember.core import dtype as _dt
    from ember.kernels.cpu import views as cv
    if self._dtype.category != _dt.COMPLEX:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _retype_view(self, cv.view_as_real, _mv.view_as_real, self._dtype.to_real())


def view_as_complex(self):
    from ember.core import dtype as _dt
    from ember.kernels.cpu import views as cv
    d = self._dtype
    cdt = _dt.complex128 if d is _dt.float64 else _dt.complex32 if d is _dt.float16 else _dt.complex64
    return _retype_view(self, cv.view_as_complex, _mv.view_as_complex, cdt)


# ---- views returning lists ----------------------------------------------------------------------
def split(self, split_size, dim=0):
    n = len(self._shape)
    if n == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size="
                           f"{split_size}")
    d = wrap_dim(dim, n)
    size = self._shape[d]
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    num = max((size + split_size - 1) // split_size, 1) if split_size else 1
    last = split_size - (split_size * num - size)
    sl = _ops.slice_Tensor.call
    out = []
    for i in range(num):
        length = split_size if i < num - 1 else last
        out.append(sl(self, d, i * split_size, i * split_size + length, 1))
    return tuple(out)


def split_with_sizes(self, split_sizes, dim=0):
    n = len(self._shape)
    if n == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, n)
    size = self._shape[d]
    sizes = tuple(split_sizes)
    start = 0
    out = []
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={fmt_shape(sizes)}")
        out.append((start, s))
        start += s
    if start != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={fmt_shape(sizes)}")
    sl = _ops.slice_Tensor.call
    return tuple([sl(self, d, b, b + s, 1) for b, s in out])


def _tensor_split_check(self, dim):
    n = len(self._shape)
    if n == 0:
        raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a tensor "
                           f"with {n} dims")
    return wrap_dim(dim, n)


def tensor_split_sections(self, sections, dim=0):
    d = _tensor_split_check(self, dim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size = self._shape[d]
    base, extra = divmod(size, sections)
    out = []
    start = 0
    for i in range(sections):
        s = base + 1 if i < extra else base
        out.append(_slice(self, d, start, start + s, 1))
        start += s
    return tuple(out)


def tensor_split_indices(self, indices, dim=0):
    d = _tensor_split_check(self, dim)
    out = []
    start = 0
    for end in indices:
        out.append(_slice(self, d, start, end, 1))
        start = end
    out.append(_slice(self, d, start, self._shape[d], 1))
    return tuple(out)


def chunk(self, chunks, dim=0):
    n = len(self._shape)
    if n == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = self._shape[wrap_dim(dim, n)]
    split_size = (size + chunks - 1) // chunks
    g = _ops
    if split_size == 0 and size == 0:
        return g.split_with_sizes.call(self, (0,) * chunks, dim)
    return g.split_Tensor.call(self, split_size, dim)


def unbind(self, dim=0):
    n = len(self._shape)
    if n == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, n)
    sel = _ops.select_int.call
    return tuple([sel(self, d, i) for i in range(self._shape[d])])


# ---- shape-manipulating copies ------------------------------------------------------------------
def rot90(self, k=1, dims=(0, 1)):
    dims = tuple(dims)
    n = len(self._shape)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = dims
    if d0 == d1 or abs(d0 - d1) == n:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    d0, d1 = wrap_dim(d0, n), wrap_dim(d1, n)
    k = (4 + (k % 4)) % 4
    g = _ops
    flip = g.flip.call
    if k == 1:
        return g.transpose_.call(flip(self, (d1,)), d0, d1)
    if k == 2:
        return flip(self, (d0, d1))
    if k == 3:
        return g.transpose_.call(flip(self, (d0,)), d0, d1)
    r = ember.empty(self._shape, dtype=self._dtype, device=self._device)
    r.copy_(self)
    return r


def fliplr(self):
    if len(self._shape) < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _ops.flip.call(self, (1,))


def flipud(self):
    if len(self._shape) < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _ops.flip.call(self, (0,))


def tile(self, dims):
    dims = tuple(dims)
    n = len(self._shape)
    if len(dims) < n:
        dims = (1,) * (n - len(dims)) + dims
    return _ops.repeat.call(self, dims)


def broadcast_to(self, size):
    return _ops.expand.call(self, size, False)


# ---- repeat_interleave under autograd: PyTorch's composites (their graph) ---------------------------
def repeat_interleave_self_int_autograd(self, repeats, dim=None, output_size=None):
    from ember.kernels.meta.shape import ri_int_shape
    ri_int_shape(self._shape, repeats, dim, output_size)  # PyTorch's checks
    x = self if dim is not None else flatten(self)
    d = wrap_dim(0 if dim is None else dim, len(self._shape))
    x = x.unsqueeze(d + 1)
    shape = list(x._shape)
    shape[d + 1] = repeats
    x = x.expand(shape).clone(memory_format=ember.contiguous_format)
    return flatten(x, d, d + 1)


def repeat_interleave_self_tensor_autograd(self, repeats, dim=None, output_size=None):
    from ember.kernels.meta.shape import ri_self_tensor_check
    ri_self_tensor_check(self._shape, repeats._dtype, repeats._shape, dim)
    x = self if dim is not None else flatten(self)
    d = 0 if dim is None else dim
    r = repeats
    if r.dim() == 0 or (r.dim() == 1 and r._shape[0] == 1):
        r = r.reshape(1).expand(x._shape[wrap_dim(d, len(x._shape))])
    g = _ops
    idx = g.repeat_interleave_Tensor.call(r, output_size)
    return x.index_select(d, idx)
