"""Output strides as PyTorch's meta tensors get them, for meta results (and every backend that
allocates from a Meta function's result: the simulated CUDA device, examples/async_device).

tensor_iterator_strides: an elementwise (TensorIterator) op's new output. torch's meta tensors
take torch._prims_common.compute_elementwise_output_strides: the operands are expanded to the
output's shape (expand's strides: 0 on broadcast dims); all contiguous -> contiguous, all
channels-last -> channels-last; otherwise the dims are sorted by the operands' strides
(TensorIteratorBase::reorder_dimensions' insertion sort: a stride 0 does not vote, equal strides
put the smaller size inside) and the output is dense in that order. Unlike the CPU's
TensorIterator (fast setup copying an input's strides), size-1 dims get a dense layout's strides.

empty_like_strides: empty_like's preserve_format on meta (torch._refs.empty_like: the same
permutation of the one input, dense).
"""
from ember.core.layout import compute_non_overlapping_and_dense
from ember.core.tensor_impl import TensorImpl, contiguous_strides


def is_contiguous(shape, strides):
    """c10's is_contiguous: size-1 dims' strides do not matter; an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def is_channels_last(shape, strides):
    """c10's compute_channels_last_contiguous_2d (4-d tensors only)."""
    if len(shape) != 4:
        return False
    expected = 1
    for d in (1, 3, 2, 0):
        n = shape[d]
        if n != 1:
            if strides[d] != expected:
                return False
            expected *= n
    return True


# c10's compute_non_overlapping_and_dense: one rule in ember/core/layout.py
is_non_overlapping_and_dense = compute_non_overlapping_and_dense


def _geometry(x):
    if isinstance(x, TensorImpl):
        return x._shape, x.stride()
    return x


def expand_strides(shape, strides, target):
    """The strides of expand(target) (at::inferExpandGeometry): a broadcast dim gets 0, a new
    leading dim of size 1 the stride that keeps the layout dense."""
    ndim = len(target)
    if not shape:
        return (0,) * ndim
    out = [0] * ndim
    off = ndim - len(shape)
    for i in range(ndim - 1, -1, -1):
        d = i - off
        if d >= 0:
            n, st = shape[d], strides[d]
        else:
            n, st = 1, target[i + 1] * out[i + 1] if i + 1 < ndim else 1
        out[i] = st if n == target[i] else 0
    return tuple(out)


def _operands(shape, inputs):
    """The strides of the tensor operands broadcast to `shape` (an operand of another shape is
    expanded); Python numbers and CPU 0-d tensors (wrapped scalars) do not take part."""
    out = []
    for x in inputs:
        if isinstance(x, TensorImpl):
            if not x._shape and x._device.type == "cpu":
                continue
        elif not isinstance(x, tuple):
            continue
        s, st = _geometry(x)
        s, st = tuple(s), tuple(st)
        if s == shape:
            out.append(st)
        elif len(s) <= len(shape) and all(n == 1 or n == m for n, m in zip(s[::-1], shape[::-1])):
            out.append(expand_strides(s, st, shape))
        # an operand that does not broadcast to `shape` (another result's input) takes no part
    return out


def reorder_dims(shape, strides):
    """TensorIterator's reorder_dimensions: the dims, fastest first, by the operands' strides (one
    tuple per operand, broadcast to `shape`). An insertion sort in which the first operand whose
    strides differ decides, broadcast (0) strides do not vote, equal strides put the bigger dim
    outside, and an undecided pair keeps its order."""
    ndim = len(shape)

    def should_swap(d0, d1):
        for row in strides:
            s0, s1 = row[d0], row[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def elementwise_perm(shape, strides):
    """The logical-to-physical permutation of an elementwise op's output (outermost dim first)
    over operands of `shape` with the given strides (_prims_common's
    compute_elementwise_output_logical_to_physical_perm; TensorIterator's reorder_dimensions)."""
    ndim = len(shape)
    if ndim <= 1 or not strides:
        return list(range(ndim))
    contiguous = all(is_contiguous(shape, st) for st in strides)
    channels_last = all(is_channels_last(shape, st) for st in strides)
    if contiguous and not channels_last:
        return list(range(ndim))
    if channels_last and not contiguous:
        return [0, *range(2, ndim), 1]

    perm = reorder_dims(shape, strides)
    perm.reverse()
    return perm


def permuted_strides(shape, perm):
    """Dense strides of `shape` laid out in `perm` order (outermost first), as empty_permuted."""
    out = [0] * len(shape)
    acc = 1
    for d in reversed(perm):
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def tensor_iterator_strides(shape, inputs):
    """The strides of an elementwise (TensorIterator) op's new output of `shape` over `inputs`
    (TensorImpls, (shape, strides) pairs, Python numbers). PyTorch's meta tensors get
    compute_elementwise_output_strides: the dims sorted by the operands' strides, then dense
    (size-1 dims get the strides of a contiguous layout, unlike the CPU's fast setup)."""
    shape = tuple(shape)
    cs = contiguous_strides(shape)
    if len(shape) <= 1:
        return cs
    for x in inputs:  # the common case first: every Tensor operand contiguous, of the same shape
        if len(shape) == 4:
            break  # (and not channels-last as well: a 4-d one may be both)
        if isinstance(x, TensorImpl):
            if x._shape != shape or x.stride() != cs:
                break
        elif isinstance(x, tuple):
            break
    else:
        return cs
    return permuted_strides(shape, elementwise_perm(shape, _operands(shape, inputs)))


def empty_like_strides(x):
    """at::empty_like(x) with preserve_format: x's strides when x is non-overlapping and dense,
    else the TensorIterator layout of x alone (dense in x's stride order)."""
    shape, strides = _geometry(x)
    return permuted_strides(shape, elementwise_perm(tuple(shape), [tuple(strides)]))
