"""torch's function-only *_copy view variants (alias_copy, diagonal_copy, ..., view_copy): the view, then
a contiguous clone, through the compositions in ember/kernels/composite_copy_variants.py (every backend,
differentiable). narrow_copy and the *_scatter ops are operators (ember/ops/native_functions/
copy_variants.yaml); these are plain functions to keep ember/_generated within its line budget."""
from ember.core.dtype import dtype as _DT
from ember.kernels import composite_copy_variants as _c

__all__ = ["alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "permute_copy", "select_copy",
           "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy",
           "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy"]


def _out(result, out):
    if out is None:
        return result
    if isinstance(result, list):
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return out
    out.resize_(result.shape).copy_(result)
    return out


def alias_copy(input, *, out=None):
    return _out(_c.alias_copy(input), out)


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    return _out(_c.as_strided_copy(input, list(size), list(stride), storage_offset), out)


def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    return _out(_c.diagonal_copy(input, offset, dim1, dim2), out)


def expand_copy(input, size, *, implicit=False, out=None):
    return _out(_c.expand_copy(input, list(size), implicit), out)


def permute_copy(input, dims, *, out=None):
    return _out(_c.permute_copy(input, list(dims)), out)


def select_copy(input, dim, index, *, out=None):
    return _out(_c.select_copy(input, dim, index), out)


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    return _out(_c.slice_copy(input, dim, start, end, step), out)


def split_copy(input, split_size, dim=0, *, out=None):
    return _out(_c.split_copy(input, split_size, dim), out)


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    return _out(_c.split_with_sizes_copy(input, list(split_sizes), dim), out)


def squeeze_copy(input, dim=None, *, out=None):
    if dim is None:
        return _out(_c.squeeze_copy(input), out)
    if isinstance(dim, (list, tuple)):
        return _out(_c.squeeze_copy_dims(input, list(dim)), out)
    return _out(_c.squeeze_copy_dim(input, dim), out)


def t_copy(input, *, out=None):
    return _out(_c.t_copy(input), out)


def transpose_copy(input, dim0, dim1, *, out=None):
    return _out(_c.transpose_copy(input, dim0, dim1), out)


def unbind_copy(input, dim=0, *, out=None):
    return _out(_c.unbind_copy(input, dim), out)


def unfold_copy(input, dimension, size, step, *, out=None):
    return _out(_c.unfold_copy(input, dimension, size, step), out)


def unsqueeze_copy(input, dim, *, out=None):
    return _out(_c.unsqueeze_copy(input, dim), out)


def view_copy(input, size, *, out=None):
    if isinstance(size, _DT):
        return _out(_c.view_copy_dtype(input, size), out)
    return _out(_c.view_copy(input, list(size)), out)
