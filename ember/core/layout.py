"""torch.layout and torch.memory_format (c10/core/Layout.h, MemoryFormat.h): named constants, and
the stride rules that go with the memory formats (c10/core/MemoryFormat.h, Contiguity.h,
TensorImpl::empty_tensor_restride, ATen's infer_dense_strides), shared by every backend's
copies and factories (clone, _to_copy, contiguous, empty, empty_like) and by is_contiguous.

Layouts: strided, sparse_coo and sparse_csr; memory formats are told apart by name."""


class layout:
    __module__ = "ember"

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")  # sparse COO tensors (the SparseCPU key; ember/kernels/sparse)
sparse_csr = layout("sparse_csr")  # sparse compressed-row tensors (the SparseCsrCPU key)


class memory_format:
    __module__ = "ember"

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return self.name  # pickles as the module-level constant, as torch's do


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# c10's MemoryFormat names, as its operator<< prints them in error messages
_C10_NAMES = {"contiguous_format": "Contiguous", "channels_last": "ChannelsLast",
              "channels_last_3d": "ChannelsLast3d", "preserve_format": "Preserve"}
# the dims of a channels-last layout, fastest first
_CL_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


def format_name(mf, default="preserve_format"):
    """The name of a MemoryFormat? argument (None -> default)."""
    return default if mf is None else getattr(mf, "name", default)


def contiguous_strides(shape):
    s = []
    acc = 1
    for n in reversed(shape):
        s.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(s))


def channels_last_strides(shape):
    """c10's get_channels_last_strides_2d / _3d (NHWC / NDHWC; a size-0 dim multiplies by 0, as
    c10 does)."""
    out = [0] * len(shape)
    acc = 1
    for d in _CL_ORDER[len(shape)]:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def check_rank(shape, name):
    if name == "channels_last":
        if len(shape) != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
    elif name == "channels_last_3d":
        if len(shape) != 5:
            raise RuntimeError("required rank 5 tensor to use channels_last_3d format")


def format_strides(shape, mf):
    """The strides at::empty(shape, memory_format=mf) gives (TensorImpl::empty_tensor_restride),
    with its errors (mf None = contiguous_format)."""
    name = format_name(mf, "contiguous_format")
    if name == "contiguous_format":
        return contiguous_strides(shape)
    if name == "preserve_format":
        raise RuntimeError("unsupported memory format Preserve")
    check_rank(shape, name)
    return channels_last_strides(shape)


def is_contiguous_as(shape, strides, mf):
    """TensorImpl::is_contiguous(memory_format): c10's compute_contiguous (an empty tensor is
    contiguous), compute_channels_last_contiguous_2d / _3d (no such shortcut)."""
    name = format_name(mf, "contiguous_format")
    if name == "channels_last" or name == "channels_last_3d":
        n = 4 if name == "channels_last" else 5
        if len(shape) != n:
            return False
        order = _CL_ORDER[n]
    else:
        for n in shape:
            if n == 0:
                return True
        order = range(len(shape) - 1, -1, -1)
    expected = 1
    for d in order:
        n = shape[d]
        if n != 1:
            if strides[d] != expected:
                return False
            expected *= n
    return True


def _strides_like_channels_last(shape, strides):
    """c10's is_channels_last_strides_2d_s4 / _3d_s5: the heuristic behind suggest_memory_format."""
    if strides[1] == 0:
        return False
    lo = 0
    for d in _CL_ORDER[len(shape)]:
        n = shape[d]
        if n == 0:
            return False
        s = strides[d]
        if s < lo:
            return False
        if d == 0 and lo == strides[1]:
            return False
        lo = s * n if n > 1 else s
    return True


def suggest_memory_format(shape, strides):
    """Tensor::suggest_memory_format(): channels_last / channels_last_3d where the strides look
    like it (4-d / 5-d only), else contiguous_format."""
    n = len(shape)
    if n == 4 or n == 5:
        if _strides_like_channels_last(shape, strides):
            return channels_last if n == 4 else channels_last_3d
    return contiguous_format


def is_non_overlapping_and_dense(shape, strides):
    """TensorImpl::is_non_overlapping_and_dense: contiguous, channels-last contiguous, or a
    permutation of a dense layout (c10's compute_non_overlapping_and_dense)."""
    n = len(shape)
    if is_contiguous_as(shape, strides, None):
        return True
    if n == 4 and is_contiguous_as(shape, strides, channels_last):
        return True
    if n == 5 and is_contiguous_as(shape, strides, channels_last_3d):
        return True
    return compute_non_overlapping_and_dense(shape, strides)


def compute_non_overlapping_and_dense(shape, strides):
    """c10's compute_non_overlapping_and_dense: the strides alone, without TensorImpl's contiguous
    shortcut (an empty tensor counts only if its strides are dense, as torch's meta empty_like
    decides)."""
    n = len(shape)
    if n == 1:
        return shape[0] < 2 or strides[0] == 1
    order = sorted(range(n), key=lambda i: (shape[i] < 2, strides[i]))
    expected = 1
    for i in order:
        if shape[i] < 2:
            return True
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True


def infer_dense_strides(shape, strides):
    """ATen's infer_dense_strides: dense strides in the input's stride order (TensorIterator's
    insertion sort: a 0 stride does not compare, equal strides put the smaller dim inside, an
    undecided pair keeps its order)."""
    ndim = len(shape)
    if ndim == 0:
        return ()
    if ndim == 1:
        return (1,)
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            a, b = perm[d0], perm[d1]
            s0, s1 = strides[a], strides[b]
            if s0 == 0 or s1 == 0:
                c = 0
            elif s0 < s1:
                c = -1
            elif s0 > s1:
                c = 1
            else:
                c = 1 if shape[a] > shape[b] else 0
            if c > 0:
                perm[d0], perm[d1] = b, a
                d1 = d0
            elif c < 0:
                break
    out = [0] * ndim
    acc = 1
    for d in perm:
        out[d] = acc
        if shape[d] > 1:
            acc *= shape[d]
    return tuple(out)


def preserve_strides(shape, strides):
    """empty_like / clone / _to_copy with preserve_format: the input's strides when it is
    non-overlapping and dense, else infer_dense_strides."""
    shape, strides = tuple(shape), tuple(strides)
    if is_non_overlapping_and_dense(shape, strides):
        return strides
    return infer_dense_strides(shape, strides)


def like_strides(shape, strides, mf):
    """The strides of a copy or *_like result of a tensor of (shape, strides) in memory format mf
    (None = preserve_format)."""
    name = format_name(mf)
    if name == "preserve_format":
        return preserve_strides(shape, strides)
    if name == "contiguous_format":
        return contiguous_strides(shape)
    check_rank(shape, name)
    return channels_last_strides(shape)
