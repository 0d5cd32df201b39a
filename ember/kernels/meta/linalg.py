"""Meta functions of the linear-algebra ops, and PyTorch's argument checks for them.

The `*_check` functions work on plain (shape, dtype) pairs so the CPU kernels (which see NumPy
arrays) raise exactly the same errors, in PyTorch's words, as the meta functions do.
"""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape, wrap_dim, wrap_dims
from ember.kernels.meta.pointwise import broadcast_shapes

# caffe2::TypeMeta names, which some ATen messages print instead of ScalarType names
TYPEMETA = {_dt.bool_: "bool", _dt.uint8: "unsigned char", _dt.int8: "signed char",
            _dt.int16: "short int", _dt.int32: "int", _dt.int64: "long int",
            _dt.float16: "c10::Half", _dt.bfloat16: "c10::BFloat16", _dt.float32: "float",
            _dt.float64: "double", _dt.complex64: "c10::complex<float>",
            _dt.complex128: "c10::complex<double>"}
LOW = (_dt.float16, _dt.bfloat16)
# what torch's LAPACK-backed kernels refuse: the low-precision dtypes, ComplexHalf too (a set: its
# membership test costs what the pair's did)
LOWP = frozenset(LOW + (_dt.complex32,))


def fmt_num(v):
    """A number as C++'s ostream prints a double (or an int64) in ATen's messages."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, complex):
        return f"({fmt_num(v.real)},{fmt_num(v.imag)})"
    return "%g" % v


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def not_implemented(name, d):
    raise NotImplementedError(f"\"{name}\" not implemented for '{d._short}'")


def expand_check(shape, target, dtype):
    """at::expand_size(self, target): PyTorch's expand errors."""
    shape, target = tuple(shape), tuple(target)
    if len(shape) > len(target):
        raise RuntimeError(f"expand(torch.{dtype._short}Tensor{{{fmt_shape(shape)}}}, size="
                           f"{fmt_shape(target)}): the number of sizes provided ({len(target)}) "
                           "must be greater or equal to the number of dimensions in the tensor "
                           f"({len(shape)})")
    off = len(target) - len(shape)
    for i, s in enumerate(shape):
        t = target[i + off]
        if s != t and s != 1:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing "
                               f"size ({s}) at non-singleton dimension {i + off}.  Target sizes: "
                               f"{fmt_shape(target)}.  Tensor sizes: {fmt_shape(shape)}")


# ---- checks on (shape, dtype) -------------------------------------------------------------
def dot_check(sa, da, sb, db):
    if len(sa) != 1 or len(sb) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(sa)}D and {len(sb)}D tensors")
    if da is not db:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{da._short} and {db._short}")
    if sa[0] != sb[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] "
                           f"to have the same number of elements, but got {sa[0]} and {sb[0]} "
                           "elements respectively")
    return ()


def mm_check(sa, da, sb, db):
    if len(sa) != 2:
        raise RuntimeError("self must be a matrix")
    if len(sb) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if sa[1] != sb[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and "
                           f"{sb[0]}x{sb[1]})")
    if da is not db:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {TYPEMETA[da]} != "
                           f"{TYPEMETA[db]}")
    return (sa[0], sb[1])


def addmv_check(ss, ds, sm, dm, sv, dv):
    """ss/ds: the addend (for mv: the result, allocated like vec)."""
    if not (len(sm) == 2 and len(sv) == 1 and len(ss) <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(ss)}, {len(sm)}, {len(sv)}")
    n = numel(ss)
    if not (sm[1] == sv[0] and (sm[0] == n or n == 1)):
        raise RuntimeError(f"size mismatch, got input ({ss[0] if ss else 1}), mat ({sm[0]}x{sm[1]}),"
                           f" vec ({sv[0]})")
    if not (ds is dm and dm is dv):
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{ds._short}, {dm._short}, and {dv._short}")
    return (sm[0],)


def mv_check(sm, dm, sv, dv):
    if not sm:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return addmv_check((sm[0],), dv, sm, dm, sv, dv)


def bmm_check(s1, d1, s2, d2):
    if len(s1) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(s2) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if s2[0] != s1[0] or s2[1] != s1[2]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{s1[0]}, {s1[2]}] but got: [{s2[0]}, {s2[1]}].")
    if d1 is not d2:
        raise RuntimeError(f"expected scalar type {d1._short} but found {d2._short}")
    return (s1[0], s1[1], s2[2])


def addmm_check(ss, ds, s1, d1, s2, d2):
    if ds is not d2:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {ds._short} and "
                           f"{d2._short}")
    if d1 is not d2:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {d1._short} and "
                           f"{d2._short}")
    if len(s1) != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {len(s1)}-D tensor")
    if len(s2) != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {len(s2)}-D tensor")
    if s1[1] != s2[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s1[0]}x{s1[1]} and "
                           f"{s2[0]}x{s2[1]})")
    out = (s1[0], s2[1])
    expand_check(ss, out, ds)
    return out


def baddbmm_check(ss, ds, s1, d1, s2, d2):
    target = (s1[0] if len(s1) > 0 else _no_dim(0, s1), s1[1] if len(s1) > 1 else _no_dim(1, s1),
              s2[2] if len(s2) > 2 else _no_dim(2, s2))
    expand_check(ss, target, ds)
    if ds is not d1:
        raise RuntimeError(f"Input dtypes must be the same, got: input {TYPEMETA[ds]}, batch1: "
                           f"{TYPEMETA[d1]}, batch2: {TYPEMETA[d2]}")
    return bmm_check(s1, d1, s2, d2)


def _no_dim(d, shape):
    n = len(shape)
    if n == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                     f"{d})")


def addbmm_check(ss, ds, s1, d1, s2, d2):
    target = (s1[1] if len(s1) > 1 else _no_dim(1, s1), s2[2] if len(s2) > 2 else _no_dim(2, s2))
    expand_check(ss, target, ds)
    if len(s1) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(s2) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if s1[0] != s2[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {s1[0]} and "
                           f"{s2[0]}")
    if s1[2] != s2[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({s1[1]}x{s1[2]} and {s2[1]}x"
                           f"{s2[2]})")
    if s1[0] > 0:
        addmm_check(target, ds, s1[1:], d1, s2[1:], d2)
    return target


def addr_check(ss, ds, s1, d1, s2, d2, beta, alpha):
    if len(s1) != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {len(s1)}-D")
    if len(s2) != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {len(s2)}-D")
    out = (s1[0], s2[0])
    expand_check(ss, out, ds)
    rt = _dt.promote_types(_dt.promote_types(ds, d1), d2)
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) and rt is not _dt.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if rt.category <= _dt.INT and isinstance(v, (float, complex)):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")
    return out, rt


def outer_check(sa, sb):
    if len(sa) != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {len(sa)}-D")
    if len(sb) != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {len(sb)}-D")
    return (sa[0], sb[0])


def _mT(shape, strides):
    return (shape[:-2] + (shape[-1], shape[-2]), strides[:-2] + (strides[-1], strides[-2]))


def matmul_check(sa, da, stra, sb, db, strb):
    """PyTorch's _matmul_impl: which of dot/mv/mm/bmm it reduces to decides the errors.
    Returns (out_shape, kind) with kind in 'dot', 'mv', 'mm', 'bmm'."""
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D "
                           f"and {nb}D")
    if na == 1 and nb == 1:
        return dot_check(sa, da, sb, db), "dot"
    if na == 2 and nb == 1:
        return mv_check(sa, da, sb, db), "mv"
    if na == 1 and nb == 2:
        return mm_check((1, sa[0]), da, sb, db)[1:], "mm"
    if na == 2 and nb == 2:
        return mm_check(sa, da, sb, db), "mm"
    # should_fold: fold the batch of the larger operand into the rows of one mm / mv
    larger = na >= nb
    if larger:
        s1, st1, d1, n2 = sa, stra, da, nb
    else:
        (s1, st1), d1, n2 = _mT(sb, strb), db, na
    fold = False
    if len(s1) >= 3 and n2 <= 2 and na != 2:
        # (a 2-D first operand is not folded: the transposed mm result would need a copy)
        fold = True
        if numel(s1) != 0:
            for i in range(len(s1) - 2):
                if st1[i] != st1[i + 1] * s1[i + 1]:
                    fold = False
                    break
    if fold:
        if larger:
            s2, d2 = sb, db
        else:
            s2, d2 = (sa[::-1] if na == 2 else sa), da
        rows = numel(s1[:-1])
        if len(s2) == 2:
            mm_check((rows, s1[-1]), d1, s2, d2)
            out = s1[:-1] + (s2[1],)
            if not larger:
                out = out[:-2] + (out[-1], out[-2])
            return out, "mm"
        mv_check((rows, s1[-1]), d1, s2, d2)
        return s1[:-1], "mv"
    n = sa[-2] if na > 1 else 1
    m1 = sa[-1]
    batch_a = sa[:max(na - 2, 0)]
    m2 = sb[-2] if nb > 1 else sb[0]
    p = sb[-1] if nb > 1 else 1
    batch_b = sb[:nb - 2] if nb > 1 else ()
    batch = broadcast_shapes(batch_a, batch_b)
    bp = numel(batch)
    bmm_check((bp, n, m1), da, (bp, m2, p), db)
    out = batch + ((n,) if na > 1 else ()) + ((p,) if nb > 1 else ())
    return out, "bmm"


def inner_check(sa, da, sb, db):
    if not sa or not sb:
        return None
    if sa[-1] != sb[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got "
                           f"shapes {fmt_shape(sa)} and {fmt_shape(sb)}")
    return tensordot_check(sa, da, sb, db, (-1,), (-1,))


def tensordot_check(sa, da, sb, db, dims_a, dims_b):
    """Returns (out_shape, wrapped dims_a, wrapped dims_b)."""
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if da is not db:
        raise RuntimeError("both inputs should have same dtype")
    wa, wb = [], []
    for x, y in zip(dims_a, dims_b):
        i, j = wrap_dim(x, len(sa)), wrap_dim(y, len(sb))
        s1, s2 = sa[i], sb[j]
        if s2 != 1 and s1 != 1 and s1 != s2:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in "
                               f"dim {x} and second has size {s2} in dim {y}")
        wa.append(i)
        wb.append(j)
    _bitset(wa, len(sa))
    _bitset(wb, len(sb))
    out = tuple(s for i, s in enumerate(sa) if i not in wa) + \
        tuple(s for i, s in enumerate(sb) if i not in wb)
    return out, wa, wb


def _bitset(dims, n):
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)


def kron_shape(sa, sb):
    n = max(len(sa), len(sb))
    sa = (1,) * (n - len(sa)) + tuple(sa)
    sb = (1,) * (n - len(sb)) + tuple(sb)
    return tuple(x * y for x, y in zip(sa, sb))


def cross_default_dim(dim, sa):
    if dim is not None:
        return dim
    for i, s in enumerate(sa):
        if s == 3:
            return i
    raise RuntimeError("no dimension of size 3 in input")


def linalg_cross_check(sa, da, sb, db, dim):
    if len(sa) != len(sb):
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dim(dim, len(sa))
    if sa[d] != 3 or sb[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {sa[d]} "
                           f"and {sb[d]}")
    out = broadcast_shapes(sa, sb)
    if da is not db:
        raise RuntimeError(f"expected scalar type {da._short} but found {db._short}")
    return out, d


def vecdot_check(sa, da, sb, db, dim):
    float_check(da, "linalg.vecdot")
    if da is not db:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {da._short} and y of type {db._short} instead")
    out = broadcast_shapes(sa, sb)
    d = wrap_dim(dim, len(out))
    return out[:d] + out[d + 1:], d


def multi_dot_check(shapes, dtypes, name="multi_dot"):
    """Returns (out_shape, first_is_vector, last_is_vector)."""
    n = len(shapes)
    if n < 2:
        raise RuntimeError(f"{name}(): expected at least 2 tensors but got {n}")
    first, last = shapes[0], shapes[-1]
    if not (1 <= len(first) <= 2):
        raise RuntimeError(f"{name}(): the first tensor must be 1D or 2D but got {len(first)}D")
    if not (1 <= len(last) <= 2):
        raise RuntimeError(f"{name}(): the last tensor must be 1D or 2D but got {len(last)}D")
    for i in range(1, n - 1):
        if len(shapes[i]) != 2:
            raise RuntimeError(f"{name}(): tensor {i} must be 2D but got {len(shapes[i])}D")
    mats = [((1,) + tuple(first)) if len(first) == 1 else tuple(first)] + \
        [tuple(s) for s in shapes[1:-1]] + \
        [(tuple(last) + (1,)) if len(last) == 1 else tuple(last)]
    d0 = dtypes[0]
    for i in range(1, n):
        if dtypes[i] is not d0:
            raise RuntimeError(f"{name}(): all tensors must have be the same dtype but tensor 0 is "
                               f"{TYPEMETA[d0]} and tensor {i} {TYPEMETA[dtypes[i]]}")
        if mats[i - 1][1] != mats[i][0]:
            raise RuntimeError(f"{name}(): tensors {i - 1} and {i} with shapes "
                               f"{fmt_shape(shapes[i - 1])} and {fmt_shape(shapes[i])} cannot be "
                               "multiplied")
    out = ()
    if len(first) == 2:
        out += (first[0],)
    if len(last) == 2:
        out += (last[1],)
    return out, len(first) == 1, len(last) == 1


def chain_matmul_check(shapes, dtypes):
    if not shapes:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for s in shapes:
        if len(s) != 2:
            raise RuntimeError(f"Tensor dimension is {len(s)}, expected 2 instead.")
    if len(shapes) == 1:
        return tuple(shapes[0])
    return multi_dot_check(shapes, dtypes, "multi_dot")[0]


def square_check(shape, name, arg="A"):
    if len(shape) < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{shape[-2]} by {shape[-1]} matrices")


def float_check(d, name, low_precision=True, arg="input"):
    if d.category < _dt.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as {arg}. Got "
                           f"{d._short}")
    if not low_precision and d in LOWP:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {d._short}")


def matrix_power_check(shape, dtype, n):
    square_check(shape, "linalg.matrix_power")
    if n < 0:
        float_check(dtype, "linalg.inv", low_precision=False)
    return tuple(shape)


def diag_shape(shape, k):
    if len(shape) == 1:
        n = shape[0] + abs(k)
        return (n, n)
    if len(shape) == 2:
        return (diag_len(shape, k, 0, 1),)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {len(shape)}D")


def diag_len(shape, k, d1, d2):
    if k >= 0:
        n = min(shape[d1], shape[d2] - k)
    else:
        n = min(shape[d1] + k, shape[d2])
    return max(n, 0)


def diag_embed_check(shape, offset, dim1, dim2):
    nd = len(shape) + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if not shape:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -1)")
    n = shape[-1] + abs(offset)
    rest = list(shape[:-1])
    out = []
    for i in range(nd):
        out.append(n if i in (d1, d2) else rest.pop(0))
    return tuple(out), d1, d2


def trace_check(shape):
    if len(shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(shape)}")


def trace_dtype(d):
    return _dt.int64 if d.category <= _dt.INT else d


# ---- norms --------------------------------------------------------------------------------
def norm_dtype_check(dtype, self_dtype, name):
    if dtype is None:
        return
    if dtype.category < _dt.FLOAT:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                           f"{dtype._short}")
    sc = self_dtype.category == _dt.COMPLEX
    if sc != (dtype.category == _dt.COMPLEX):
        raise RuntimeError(f"{name}: dtype should be {'complex' if sc else 'real'} for "
                           f"{'complex' if sc else 'real'} inputs, but got {dtype._short}")
    if _dt.promote_types(self_dtype, dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({self_dtype._short}) should be "
                           f"convertible without narrowing to the specified dtype ({dtype._short})")


def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def vector_norm_check(shape, dtype, ord, dim, keepdim, out_dtype):
    """Returns (out_shape, out_dtype, wrapped dims or None for all)."""
    name = "linalg.vector_norm"
    float_check(dtype, name)
    if isinstance(ord, complex):
        raise RuntimeError(f"{name}: Expected a non-complex scalar as the order of norm.")
    o = float(ord)
    nd = len(shape)
    dims = None if not dim else wrap_dims(dim, nd)
    if numel(shape) == 0 and (o < 0 or o == float("inf")):
        if not dim:
            raise RuntimeError(f"{name} cannot compute the {fmt_num(ord)} norm on an empty tensor "
                               "because the operation does not have an identity")
        for d in dim:
            if shape[wrap_dim(d, nd)] == 0:
                raise RuntimeError(f"{name} cannot compute the {fmt_num(ord)} norm on the dimension "
                                   f"{d}because this dimension is empty and the operation does not "
                                   "have an identity")
    norm_dtype_check(out_dtype, dtype, name)
    rd = (out_dtype or dtype).to_real()
    all_dims = tuple(range(nd)) if dims is None else dims
    return _reduced_shape(shape, all_dims, keepdim), rd, dims


def _fmt_vec(v):
    return " ".join(str(x) for x in v)


def matrix_norm_check(shape, dtype, ord, dim, keepdim, out_dtype):
    """Returns (out_shape, out_dtype, (d0, d1)) after PyTorch's checks, in PyTorch's order."""
    name = "linalg.matrix_norm"
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{name}: Order {ord} not supported.")
        low = ord != "nuc"
    else:
        if isinstance(ord, complex):
            raise RuntimeError(f"{name}: Expected a non-complex scalar as the order of norm.")
        a = abs(float(ord))
        if a not in (1.0, 2.0, float("inf")):
            raise RuntimeError(f"{name}: Order {fmt_num(float(ord))} not supported.")
        low = a != 2.0
    if len(shape) < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    float_check(dtype, name, low)
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {_fmt_vec(dim)}")
    d0, d1 = wrap_dim(dim[0], len(shape)), wrap_dim(dim[1], len(shape))
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({d0}, {d1})")
    norm_dtype_check(out_dtype, dtype, name)
    rd = (out_dtype or dtype).to_real()
    return _reduced_shape(shape, (d0, d1), keepdim), rd, (d0, d1)


def linalg_norm_plan(shape, ord, dim, ord_is_str):
    """PyTorch's linalg_norm dispatch: ('matrix', dims) or ('vector', ord, dims)."""
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                               f"{fmt_shape(dim)}")
    elif ord is not None or ord_is_str:
        if len(shape) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                               f"1D or 2D. Got {len(shape)}D.")
    if ord_is_str:
        return "matrix", ord, (tuple(dim) if dim is not None else (0, 1))
    if ord is not None and ((dim is not None and len(dim) == 2) or (dim is None and len(shape) == 2)):
        return "matrix", ord, (tuple(dim) if dim is not None else (0, 1))
    return "vector", (2.0 if ord is None else ord), dim


# ---- meta functions (Tensors in, specs out) -------------------------------------------------
def matmul(a, b):
    out, _ = matmul_check(a._shape, a._dtype, a.stride(), b._shape, b._dtype, b.stride())
    return out, a._dtype


def mm(a, b):
    return mm_check(a._shape, a._dtype, b._shape, b._dtype), a._dtype


def bmm(a, b):
    return bmm_check(a._shape, a._dtype, b._shape, b._dtype), b._dtype


def dot(a, b):
    return dot_check(a._shape, a._dtype, b._shape, b._dtype), a._dtype


def mv(a, b):
    return mv_check(a._shape, a._dtype, b._shape, b._dtype), b._dtype


def addmm(s, a, b, beta=1, alpha=1):
    return addmm_check(s._shape, s._dtype, a._shape, a._dtype, b._shape, b._dtype), a._dtype


def addmv(s, a, b, beta=1, alpha=1):
    return addmv_check(s._shape, s._dtype, a._shape, a._dtype, b._shape, b._dtype), b._dtype


def addr(s, a, b, beta=1, alpha=1):
    return addr_check(s._shape, s._dtype, a._shape, a._dtype, b._shape, b._dtype, beta, alpha)


def baddbmm(s, a, b, beta=1, alpha=1):
    return baddbmm_check(s._shape, s._dtype, a._shape, a._dtype, b._shape, b._dtype), b._dtype


def addbmm(s, a, b, beta=1, alpha=1):
    return addbmm_check(s._shape, s._dtype, a._shape, a._dtype, b._shape, b._dtype), s._dtype


def outer(a, b):
    return outer_check(a._shape, b._shape), _dt.promote_types(a._dtype, b._dtype)


def inner(a, b):
    r = inner_check(a._shape, a._dtype, b._shape, b._dtype)
    if r is None:
        from ember.kernels.meta.pointwise import binary
        return binary(a, b)
    return r[0], a._dtype


def tensordot(a, b, dims_a, dims_b):
    return tensordot_check(a._shape, a._dtype, b._shape, b._dtype, dims_a, dims_b)[0], a._dtype


def kron(a, b):
    return kron_shape(a._shape, b._shape), _dt.promote_types(a._dtype, b._dtype)


def cross(a, b, dim=None):
    return linalg_cross(a, b, cross_default_dim(dim, a._shape))


def linalg_cross(a, b, dim=-1):
    return linalg_cross_check(a._shape, a._dtype, b._shape, b._dtype, dim)[0], a._dtype


def vecdot(x, y, dim=-1):
    return vecdot_check(x._shape, x._dtype, y._shape, y._dtype, dim)[0], x._dtype


def multi_dot(tensors):
    return multi_dot_check([t._shape for t in tensors], [t._dtype for t in tensors])[0], \
        tensors[0]._dtype


def chain_matmul(matrices):
    return chain_matmul_check([t._shape for t in matrices], [t._dtype for t in matrices]), \
        matrices[0]._dtype


def matrix_power(a, n):
    return matrix_power_check(a._shape, a._dtype, n), a._dtype


def diag(a, diagonal=0):
    return diag_shape(a._shape, diagonal), a._dtype


def diag_embed(a, offset=0, dim1=-2, dim2=-1):
    return diag_embed_check(a._shape, offset, dim1, dim2)[0], a._dtype


def diagflat(a, offset=0):
    n = numel(a._shape) + abs(offset)
    return (n, n), a._dtype


def trace(a):
    trace_check(a._shape)
    return (), trace_dtype(a._dtype)


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    s, d, _ = matrix_norm_check(a._shape, a._dtype, ord, dim, keepdim, dtype)
    return s, d


def norm(a, ord=None, dim=None, keepdim=False, dtype=None):
    plan = linalg_norm_plan(a._shape, ord, dim, isinstance(ord, str))
    if plan[0] == "matrix":
        return matrix_norm(a, plan[1], plan[2], keepdim, dtype)
    s, d, _ = vector_norm_check(a._shape, a._dtype, plan[1], plan[2], keepdim, dtype)
    return s, d


# ---- multi_dot ----------------------------------------------------------------------------
def chain_order(shapes):
    """ATen's multi_dot order for matrices of these shapes: split(i, j) -> k, the product of
    mats[i..j] is (mats[i..k]) @ (mats[k+1..j])."""
    n = len(shapes)
    if n == 2:
        return lambda i, j: i
    if n == 3:
        a, b = shapes[0][0], shapes[1][0]
        c, dd = shapes[2]
        right = (a * c) * (b + dd) > (b * dd) * (a + c)  # A(BC) is cheaper
        return lambda i, j: (0 if right else 1) if (i, j) == (0, 2) else i
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for ln in range(1, n):
        for i in range(n - ln):
            j = i + ln
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j] = q
                    split[i][j] = k
    return lambda i, j: split[i][j]



# ---- einsum: the algorithm, over an operations table (B); kernels/cpu runs it on arrays ------
class _Sym:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype


class _SymOps:
    """The same operations on (shape, dtype) only: einsum's meta function."""

    @staticmethod
    def shape(x):
        return x.shape

    @staticmethod
    def dtype(x):
        return x.dtype

    @staticmethod
    def diagonal(x, d1, d2):
        s = [v for i, v in enumerate(x.shape) if i not in (d1, d2)]
        s.insert(d1, x.shape[d1])
        return _Sym(s, x.dtype)

    @staticmethod
    def unsqueeze(x, d):
        s = list(x.shape)
        s.insert(d, 1)
        return _Sym(s, x.dtype)

    @staticmethod
    def permute(x, perm):
        return _Sym([x.shape[p] for p in perm], x.dtype)

    @staticmethod
    def reshape(x, shape):
        return _Sym(shape, x.dtype)

    @staticmethod
    def sum(x, dims, keepdim=True):
        dims = set(dims)
        s = [1 if i in dims else v for i, v in enumerate(x.shape) if keepdim or i not in dims]
        return _Sym(s, _dt.int64 if x.dtype.category <= _dt.INT else x.dtype)

    @staticmethod
    def mul(a, b):
        return _Sym(broadcast_shapes(a.shape, b.shape), _dt.promote_types(a.dtype, b.dtype))

    @staticmethod
    def bmm(a, b):
        if a.dtype is not b.dtype:
            raise RuntimeError(f"expected scalar type {a.dtype._short} but found {b.dtype._short}")
        return _Sym((a.shape[0], a.shape[1], b.shape[2]), a.dtype)


_ELL = 52


def _subscript(c):
    return ord(c) - 65 if c.isupper() else ord(c) - 97 + 26


def _label(s):
    return chr(s + 65) if s < 26 else chr(s - 26 + 97)


def _isalpha(c):
    return ("a" <= c <= "z") or ("A" <= c <= "Z")


def _sumproduct_pair(left, right, sum_dims, B):
    if not sum_dims:
        return B.mul(left, right)
    n = len(B.shape(left))
    sd = set(sum_dims)
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(n):
        sL, sR = B.shape(left), B.shape(right)
        sl, sr = sL[i] != 1, sR[i] != 1
        if i in sd:
            if sl and sr:
                if sL[i] != sR[i]:
                    raise RuntimeError("non-broadcast dimensions must match")
                sum_size *= sL[i]
            elif sl:
                left = B.sum(left, (i,))
            elif sr:
                right = B.sum(right, (i,))
        elif sl and sr:
            if sL[i] != sR[i]:
                raise RuntimeError("non-broadcast dimensions must match")
            lro.append(i)
            lro_size *= sL[i]
        elif sl:
            lo.append(i)
            lo_size *= sL[i]
        else:
            ro.append(i)
            ro_size *= sR[i]
    sL, sR = B.shape(left), B.shape(right)
    out_size = [sL[d] for d in lro] + [sL[d] for d in lo] + [1] * len(sum_dims) + \
        [sR[d] for d in ro]
    lperm = lro + lo + list(sum_dims) + ro
    rperm = lro + list(sum_dims) + ro + lo
    operm = [0] * len(out_size)
    for k, d in enumerate(lro + lo + list(sum_dims) + ro):
        operm[d] = k
    left = B.reshape(B.permute(left, lperm), (lro_size, lo_size, sum_size))
    right = B.reshape(B.permute(right, rperm), (lro_size, sum_size, ro_size))
    r = B.bmm(left, right)
    return B.permute(B.reshape(r, out_size), operm)


def _einsum(equation, operands, path, B):
    num_ops = len(operands)
    if num_ops == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    if path is not None:
        ps = 1 if num_ops == 1 else (num_ops - 1) * 2
        if len(path) != ps:
            raise RuntimeError("einsum(): expected contraction path given in path parameter to "
                               f"have size {ps} but got {len(path)}")
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    op_labels = [[] for _ in range(num_ops)]
    ell_in_input = False
    cur = 0
    i, n = 0, len(lhs)
    while i < n:
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            if ell_in_input:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an ellipsis "
                                   "was already found")
            if not (i + 2 < n and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of any "
                                   "ellipsis")
            i += 2
            op_labels[cur].append(_ELL)
            ell_in_input = True
        elif c == ",":
            cur += 1
            if cur >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                                   "equation")
            ell_in_input = False
        else:
            if not _isalpha(c):
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                                   "string, subscripts must be in [a-zA-Z]")
            op_labels[cur].append(_subscript(c))
        i += 1
    if cur != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")

    label_count = [0] * 52
    ell_num_dim = 0
    for k, op in enumerate(operands):
        labels = op_labels[k]
        ndims = len(B.shape(op))
        nlabels = len(labels)
        has_ell = False
        for lb in labels:
            if lb == _ELL:
                nlabels -= 1
                has_ell = True
                ell_num_dim = max(ell_num_dim, ndims - nlabels)
            else:
                label_count[lb] += 1
        if (nlabels > ndims) if has_ell else (nlabels != ndims):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({nlabels}"
                + (") is more than the number of dimensions (" if has_ell else
                   ") does not match the number of dimensions (")
                + f"{ndims}) for operand {k}" + ("" if has_ell else " and no ellipsis was given"))

    perm_of = [-1] * 52
    perm_index = 0
    ell_index = 0
    ell_in_output = False
    if arrow < 0:
        perm_index = ell_num_dim
        ell_in_output = True
        for lb in range(52):
            if label_count[lb] == 1:
                perm_of[lb] = perm_index
                perm_index += 1
    else:
        rhs = equation[arrow + 2:]
        i, n = 0, len(rhs)
        while i < n:
            c = rhs[i]
            if c == " ":
                pass
            elif c == ".":
                if ell_in_output:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was "
                                       "already found")
                if not (i + 2 < n and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                       "ellipsis (...)")
                i += 2
                ell_index = perm_index
                perm_index += ell_num_dim
                ell_in_output = True
            else:
                if not _isalpha(c):
                    raise RuntimeError(f"einsum(): invalid subscript given at index "
                                       f"{len(lhs) + 2 + i} in the equation string, subscripts "
                                       "must be in [a-zA-Z]")
                idx = _subscript(c)
                if not (label_count[idx] > 0 and perm_of[idx] == -1):
                    raise RuntimeError(f"einsum(): output subscript {c}" + (
                        " appears more than once in the output" if perm_of[idx] > -1 else
                        " does not appear in the equation for any input operand"))
                perm_of[idx] = perm_index
                perm_index += 1
            i += 1
    out_num_dim = perm_index
    if not ell_in_output:
        ell_index = perm_index
        perm_index += ell_num_dim
    for lb in range(52):
        if label_count[lb] > 0 and perm_of[lb] == -1:
            perm_of[lb] = perm_index
            perm_index += 1

    label_size = [1] * 52
    ell_sizes = [1] * ell_num_dim
    dim_counts = [0] * perm_index
    ops = []
    for k, op in enumerate(operands):
        permutation = [-1] * perm_index
        dim = 0
        for s in op_labels[k]:
            if s == _ELL:
                ndim = len(B.shape(operands[k])) - (len(op_labels[k]) - 1)
                for j in range(ell_num_dim - ndim, ell_num_dim):
                    sz = B.shape(op)[dim]
                    if sz != 1:
                        if not (ell_sizes[j] == 1 or ell_sizes[j] == sz):
                            raise RuntimeError(
                                f"einsum(): dimension {dim} covered by ellipsis in operand {k}has "
                                f"size {sz} which does not broadcast with previously seen ellipsis "
                                f"with size {ell_sizes[j]} for the respective dimension")
                        ell_sizes[j] = sz
                        dim_counts[ell_index + j] += 1
                    permutation[ell_index + j] = dim
                    dim += 1
            elif permutation[perm_of[s]] == -1:
                sz = B.shape(op)[dim]
                if sz != 1:
                    if not (label_size[s] == 1 or label_size[s] == sz):
                        raise RuntimeError(
                            f"einsum(): subscript {_label(s)} has size {sz} for operand {k} which "
                            f"does not broadcast with previously seen size {label_size[s]}")
                    label_size[s] = sz
                    dim_counts[perm_of[s]] += 1
                permutation[perm_of[s]] = dim
                dim += 1
            else:
                prev = permutation[perm_of[s]]
                sh = B.shape(op)
                if sh[dim] != sh[prev]:
                    raise RuntimeError(f"einsum(): subscript {_label(s)} is repeated for operand {k} "
                                       f"but the sizes don't match, {sh[dim]} != {sh[prev]}")
                op = B.diagonal(op, prev, dim)
        for p in range(perm_index):
            if permutation[p] == -1:
                op = B.unsqueeze(op, dim)
                permutation[p] = dim
                dim += 1
        ops.append(B.permute(op, permutation))

    it = 0
    while len(ops) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = path[it], path[it + 1]
            it += 2
            if j < i:
                i, j = j, i
            if not (i != j and i >= 0 and j < len(ops)):
                raise RuntimeError(f"einsum(): invalid contraction ({i}, {j}" + (
                    ") cannot contract an operand with itself" if i == j else
                    ") operand index is out of bounds"))
        a, b = ops[i], ops[j]
        del ops[j]
        del ops[i]
        sum_dims, a_sum, b_sum = [], [], []
        sa, sb = B.shape(a), B.shape(b)
        for d in range(out_num_dim, perm_index):
            if sa[d] != 1 and sb[d] != 1:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if sa[d] != 1:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif sb[d] != 1:
                    b_sum.append(d)
                    dim_counts[d] = 0
        if a_sum:
            a = B.sum(a, a_sum)
        if b_sum:
            b = B.sum(b, b_sum)
        r = _sumproduct_pair(a, b, sum_dims, B)
        if path is not None:
            ops.append(r)
        else:
            ops.insert(0, r)

    if perm_index - out_num_dim > 0:
        if num_ops > 1:
            return B.reshape(ops[0], tuple(B.shape(ops[0])[:out_num_dim]))
        return B.sum(ops[0], range(out_num_dim, perm_index), False)
    if num_ops == 1:
        return None  # the (permuted / diagonal) operand itself: a view in PyTorch
    return ops[0]


def einsum_plan(equation, shapes, dtypes, path=None):
    ops = [_Sym(s, d) for s, d in zip(shapes, dtypes)]
    r = _einsum(equation, ops, path, _SymOps)
    if r is None:
        r = ops[0]
        # single operand, nothing summed: the permuted/diagonal operand
        class _Keep(_SymOps):
            last = None

            @staticmethod
            def permute(x, perm):
                _Keep.last = _SymOps.permute(x, perm)
                return _Keep.last
        _einsum(equation, ops, path, _Keep)
        r = _Keep.last
    return tuple(r.shape), r.dtype


def einsum(equation, tensors, path=None):
    return einsum_plan(equation, [t._shape for t in tensors], [t._dtype for t in tensors], path)


# ---- decompositions -----------------------------------------------------------------------
def fstrides(shape):
    """Batched column-major strides (ATen's batched_matrix_contiguous_strides(column_major))."""
    shape = tuple(shape)
    if len(shape) < 2:
        return None
    m, n = shape[-2], shape[-1]
    st = [0] * len(shape)
    st[-2] = 1
    st[-1] = max(m, 1)
    acc = max(m, 1) * max(n, 1)
    for i in range(len(shape) - 3, -1, -1):
        st[i] = acc
        acc *= max(shape[i], 1)
    return tuple(st)


def _spec(shape, dtype, column_major=True):
    st = fstrides(shape) if column_major else None
    return (tuple(shape), dtype, st) if st is not None else (tuple(shape), dtype)


def matrix_check(shape, name, arg="A"):
    if len(shape) < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")


def det_check(shape, dtype, name="linalg.det"):
    square_check(shape, name)
    float_check(dtype, name)


def lowp_not_implemented(dtype, kernel):
    if dtype in LOWP:
        not_implemented(kernel, dtype)


def slogdet_check(shape, dtype, name="linalg.slogdet"):
    square_check(shape, name)
    float_check(dtype, name, low_precision=False)


def inv_check(shape, dtype):
    square_check(shape, "linalg.inv")
    float_check(dtype, "linalg.inv", low_precision=False)


def solve_check(sa, da, sb, db, left):
    """Returns (result_shape, vector_case, broadcast B shape (matrix form))."""
    float_check(da, "linalg.solve")
    if da is not db:
        raise RuntimeError("linalg.solve: Expected A and B to have the same dtype, but found A of "
                           f"type {da._short} and B of type {db._short} instead")
    sa, sb = tuple(sa), tuple(sb)
    vector = len(sb) == 1 or (len(sa) - 1 == len(sb) and sb == sa[:-1])
    sb_ = sb + (1,) if vector else sb
    square_check(sa, "linalg.solve")
    matrix_check(sb_, "linalg.solve", "B")
    if (sa[-2] != sb_[-2]) if left else (sa[-1] != sb_[-1]):
        raise RuntimeError("linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({sa[-2]}x{sa[-1]} and "
                           f"{sb_[-2]}x{sb_[-1]})")
    batch = broadcast_shapes(sb_[:-2], sa[:-2])
    bshape = batch + sb_[-2:]
    if not left and vector:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported "
                           "for left=False. In this case linalg.solve is equivalent to B / "
                           "A.squeeze(-1)")
    return (bshape[:-1] if vector else bshape), vector, bshape


def svd_check(shape, dtype, driver=None, name="linalg.svd"):
    matrix_check(shape, name)
    float_check(dtype, name)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA "
                           "inputs with cuSOLVER backend.")
    lowp_not_implemented(dtype, "linalg_svd_cpu")


def qr_check(shape, dtype, mode):
    matrix_check(shape, "linalg.qr")
    float_check(dtype, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    lowp_not_implemented(dtype, "geqrf_cpu")


def cholesky_check(shape, dtype, name="linalg.cholesky"):
    square_check(shape, name)
    if name == "linalg.cholesky":
        float_check(dtype, name)
    if dtype in LOWP or dtype.category < _dt.FLOAT:
        not_implemented("cholesky_cpu", dtype)


def eigh_check(shape, dtype, uplo):
    square_check(shape, "linalg.eigh")
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")
    if dtype.category < _dt.FLOAT or dtype in LOWP:
        not_implemented("linalg_eigh_cpu", dtype)


def svd_shapes(shape, full_matrices):
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    b = tuple(shape[:-2])
    if full_matrices:
        return b + (m, m), b + (k,), b + (n, n)
    return b + (m, k), b + (k,), b + (k, n)


def qr_shapes(shape, mode):
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    b = tuple(shape[:-2])
    if mode == "complete":
        return b + (m, m), b + (m, n)
    if mode == "r":
        return (0,), b + (k, n)
    return b + (m, k), b + (k, n)


# meta functions
def det(a):
    det_check(a._shape, a._dtype)
    lowp_not_implemented(a._dtype, "lu_cpu")
    return a._shape[:-2], a._dtype


def slogdet(a):
    slogdet_check(a._shape, a._dtype)
    b = a._shape[:-2]
    return (b, a._dtype), (b, a._dtype.to_real())


def logdet(a):
    slogdet_check(a._shape, a._dtype, "logdet")
    return a._shape[:-2], a._dtype


def inv(a):
    inv_check(a._shape, a._dtype)
    return _spec(a._shape, a._dtype)


def inv_ex(a, check_errors=False):
    return inv(a), (a._shape[:-2], _dt.int32)


def solve(a, b, left=True):
    shape, vector, _ = solve_check(a._shape, a._dtype, b._shape, b._dtype, left)
    return _spec(shape, a._dtype, left)


def solve_ex(a, b, left=True, check_errors=False):
    shape, vector, bshape = solve_check(a._shape, a._dtype, b._shape, b._dtype, left)
    return _spec(shape, a._dtype, left), (a._shape[:-2], _dt.int32)


def svd(a, full_matrices=True, driver=None):
    svd_check(a._shape, a._dtype, driver)
    u, s, vh = svd_shapes(a._shape, full_matrices)
    return _spec(u, a._dtype), (s, a._dtype.to_real()), _spec(vh, a._dtype)


def svd_legacy(a, some=True, compute_uv=True):
    if len(a._shape) < 2:
        raise RuntimeError("linalg.svd: input should have at least 2 dimensions, but has "
                           f"{len(a._shape)} dimensions instead")
    svd_check(a._shape, a._dtype)
    m, n = a._shape[-2], a._shape[-1]
    b = a._shape[:-2]
    if not compute_uv:
        return (b + (m, m), a._dtype), (b + (min(m, n),), a._dtype.to_real()), \
            _spec(b + (n, n), a._dtype)
    u, s, vh = svd_shapes(a._shape, not some)
    v = vh[:-2] + (vh[-1], vh[-2])
    return _spec(u, a._dtype), (s, a._dtype.to_real()), (v, a._dtype)


def svdvals(a, driver=None):
    svd_check(a._shape, a._dtype, driver)
    return a._shape[:-2] + (min(a._shape[-2:]),), a._dtype.to_real()


def qr(a, mode="reduced"):
    qr_check(a._shape, a._dtype, mode)
    q, r = qr_shapes(a._shape, mode)
    return _spec(q, a._dtype), _spec(r, a._dtype)


def qr_legacy(a, some=True):
    return qr(a, "reduced" if some else "complete")


def cholesky(a, upper=False):
    cholesky_check(a._shape, a._dtype)
    return _spec(a._shape, a._dtype)


def cholesky_ex(a, upper=False, check_errors=False):
    return cholesky(a, upper), (a._shape[:-2], _dt.int32)


def cholesky_legacy(a, upper=False):
    cholesky_check(a._shape, a._dtype, "cholesky")
    return _spec(a._shape, a._dtype)


def eigh(a, UPLO="L"):
    eigh_check(a._shape, a._dtype, UPLO)
    return (a._shape[:-1], a._dtype.to_real()), _spec(a._shape, a._dtype)


def eigvalsh(a, UPLO="L"):
    eigh_check(a._shape, a._dtype, UPLO)
    return a._shape[:-1], a._dtype.to_real()


def eig_check(shape, dtype, name="linalg.eig"):
    square_check(shape, name)
    if dtype.category < _dt.FLOAT:
        raise RuntimeError(f"Unknown Complex ScalarType for {dtype._short}")
    lowp_not_implemented(dtype, "linalg_eig_out_cpu")


def _complex_of(d):
    return d if d.category == _dt.COMPLEX else d.to_complex()


def pinv_check(shape, dtype):
    if dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128) or len(shape) < 2:
        raise RuntimeError(f"linalg.pinv({dtype._short}{{{fmt_shape(shape)}}}): expected a tensor "
                           "with 2 or more dimensions of float, double, cfloat or cdouble types")


def matrix_rank_check(shape, dtype):
    matrix_check(shape, "torch.linalg.matrix_rank", "input")
    if dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")


def matrix_exp_check(shape, dtype):
    square_check(shape, "linalg.matrix_exp")
    float_check(dtype, "linalg.matrix_exp")


def solve_triangular_check(sa, da, sb, db, left):
    square_check(sa, "linalg.solve_triangular")
    matrix_check(sb, "linalg.solve_triangular", "B")
    if (sa[-2] != sb[-2]) if left else (sa[-1] != sb[-1]):
        raise RuntimeError("linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({sa[-2]}x{sa[-1]} and "
                           f"{sb[-2]}x{sb[-1]})")
    batch = broadcast_shapes(tuple(sb[:-2]), tuple(sa[:-2]))
    if da.category < _dt.FLOAT or da in LOWP:
        not_implemented("triangular_solve_cpu", da)
    return batch + tuple(sb[-2:])


def lu_factor_check(shape, dtype, pivot, name="torch.lu_factor"):
    if len(shape) < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{fmt_shape(shape)} instead")
    if dtype.category < _dt.FLOAT or dtype in LOWP:
        not_implemented("lu_cpu", dtype)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def lu_solve_check(slu, dlu, spiv, sb, db, left):
    square_check(slu, "torch.linalg.lu_solve")
    matrix_check(sb, "linalg.lu_solve", "B")
    if (slu[-2] != sb[-2]) if left else (slu[-1] != sb[-1]):
        raise RuntimeError("linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({slu[-2]}x{slu[-1]} and "
                           f"{sb[-2]}x{sb[-1]})")
    if dlu is not db:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {dlu._short} and B of type {db._short} instead")
    batch = broadcast_shapes(tuple(sb[:-2]), tuple(slu[:-2]))
    return batch + tuple(sb[-2:])


def cholesky_solve_check(sb, db, sa, da):
    if len(sb) < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {len(sb)} dimensions "
                           "instead")
    if len(sa) < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {len(sa)} dimensions "
                           "instead")
    if db is not da:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{db._short} and A of type {da._short} instead.")
    if sa[-1] != sa[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {sa[-2]} by "
                           f"{sa[-1]} matrices")
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{sa[-1]} by {sa[-1]} but each b matrix is {sb[-2]} by {sb[-1]}")
    if db.category < _dt.FLOAT or db in LOWP:
        not_implemented("cholesky_solve_cpu", db)
    return broadcast_shapes(tuple(sb[:-2]), tuple(sa[:-2])) + tuple(sb[-2:])


def cholesky_inverse_check(shape, dtype):
    square_check(shape, "cholesky_inverse")
    if dtype.category < _dt.FLOAT or dtype in LOWP:
        not_implemented("cholesky_inverse_out_cpu", dtype)


# meta functions
def eig(a):
    eig_check(a._shape, a._dtype)
    c = _complex_of(a._dtype)
    return (a._shape[:-1], c), _spec(a._shape, c)


def eigvals(a):
    eig_check(a._shape, a._dtype, "linalg.eigvals")
    return a._shape[:-1], _complex_of(a._dtype)


def pinv(a, atol=None, rtol=None, hermitian=False):
    pinv_check(a._shape, a._dtype)
    if hermitian:
        eigh_check(a._shape, a._dtype, "L")
    return a._shape[:-2] + (a._shape[-1], a._shape[-2]), a._dtype


def pinv_rcond(a, rcond=1e-15, hermitian=False):
    return pinv(a, None, rcond, hermitian)


def matrix_rank(a, atol=None, rtol=None, hermitian=False):
    matrix_rank_check(a._shape, a._dtype)
    return a._shape[:-2], _dt.int64


def matrix_rank_tol(a, tol, hermitian=False):
    return matrix_rank(a, tol, 0.0, hermitian)


def matrix_exp(a):
    matrix_exp_check(a._shape, a._dtype)
    return a._shape, a._dtype


def solve_triangular(a, b, upper, left=True, unitriangular=False):
    return _spec(solve_triangular_check(a._shape, a._dtype, b._shape, b._dtype, left), a._dtype)


def lu_factor(a, pivot=True):
    lu_factor_check(a._shape, a._dtype, pivot)
    k = min(a._shape[-2:])
    return _spec(a._shape, a._dtype), (a._shape[:-2] + (k,), _dt.int32)


def lu_factor_ex(a, pivot=True, check_errors=False):
    lu_factor_check(a._shape, a._dtype, pivot, "torch.lu_factor_ex")
    return lu_factor(a, pivot) + ((a._shape[:-2], _dt.int32),)


def lu(a, pivot=True):
    lu_factor_check(a._shape, a._dtype, pivot, "linalg.lu")
    m, n = a._shape[-2:]
    k = min(m, n)
    b = a._shape[:-2]
    return (b + (m, m), a._dtype), (b + (m, k), a._dtype), (b + (k, n), a._dtype)


def lu_solve(LU, pivots, B, left=True, adjoint=False):
    return _spec(lu_solve_check(LU._shape, LU._dtype, pivots._shape, B._shape, B._dtype, left),
                 B._dtype)


def cholesky_solve(b, a, upper=False):
    return _spec(cholesky_solve_check(b._shape, b._dtype, a._shape, a._dtype), b._dtype)


def cholesky_inverse(a, upper=False):
    cholesky_inverse_check(a._shape, a._dtype)
    return _spec(a._shape, a._dtype)


# in-place forms: the result must have self's shape (ATen's structured-kernel check)
def bad_inplace(self_shape, out_shape):
    if tuple(self_shape) != tuple(out_shape):
        raise RuntimeError(f"Bad in-place call: input tensor size {fmt_shape(self_shape)} and output "
                           f"tensor size {fmt_shape(out_shape)} should match")


def addr_inplace_check(ss, s1, s2):
    if len(ss) != 2:
        raise RuntimeError(f"2D tensor expected, got {len(ss)}D tensor for input")
    if len(s1) != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {len(s1)}-D")
    if len(s2) != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {len(s2)}-D")
    if tuple(ss) != (s1[0], s2[0]):
        raise RuntimeError(f"size mismatch, input: {fmt_shape(ss)}, v1: {fmt_shape(s1)}, v2: "
                           f"{fmt_shape(s2)}")


def addmm_(s, a, b, beta=1, alpha=1):
    bad_inplace(s._shape, addmm(s, a, b)[0])


def addmv_(s, a, b, beta=1, alpha=1):
    bad_inplace(s._shape, addmv(s, a, b)[0])


def baddbmm_(s, a, b, beta=1, alpha=1):
    bad_inplace(s._shape, baddbmm(s, a, b)[0])


def addr_(s, a, b, beta=1, alpha=1):
    addr_inplace_check(s._shape, a._shape, b._shape)
    shape, rt = addr(s, a, b, beta, alpha)
    _dt.check_cast(rt, s._dtype)
