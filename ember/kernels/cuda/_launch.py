"""Machinery shared by the numba.cuda kernel modules (pointwise, reduction, softmax, linalg).

Kernels are generated as Python source per (expression, rank, dtypes) and compiled with
`cuda.jit`; they call math through names bound per compute dtype: libdevice on a GPU (expf for
float32, exp for float64: no silent float64 promotion), NumPy on numba's simulator (which runs
each GPU thread as Python, where libdevice is only a stub).
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.core.tensor_impl import TensorImpl
from ember.cuda._runtime import Kernel
from ember.dispatch.operator import OPERATORS
from ember.kernels.cuda import _glue

# dtypes the kernels handle; others (bfloat16, complex) go to the backend's host fallback
SUPPORTED = frozenset((_dt.bool_, _dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64,
                       _dt.float16, _dt.float32, _dt.float64))
HALF = _dt.float16


class Unsupported(Exception):
    """Raised inside a kernel wrapper when the inputs need the host fallback."""


def glue():
    return _glue


_mod = []


def cuda():
    if not _mod:
        _mod.append(glue().cuda())
    return _mod[0]


def simulated():
    from numba import config
    return bool(config.ENABLE_CUDASIM)


def opmath(d):
    """The type arithmetic runs in (PyTorch's opmath: half computes in float)."""
    return _dt.float32 if d is HALF else d


def nbtype(d):
    import numba
    return numba.from_dtype(d.np if isinstance(d, _dt.dtype) else np.dtype(d))


def cat(d):
    """'b', 'i' or 'f': which expression of an op applies to compute dtype d."""
    c = d.category
    return "b" if c == _dt.BOOL else ("i" if c == _dt.INT else "f")


# ---- launch geometry -------------------------------------------------------------------------
def launch_1d(n):
    """(blocks, threads) for a grid-stride loop over n elements."""
    if simulated():
        # each simulated thread is a Python thread: few of them, the grid-stride loop does the rest
        return (2 if n > 32 else 1), 32
    tpb = 256
    return max(1, min((n + tpb - 1) // tpb, 4096)), tpb


def reduce_tpb():
    """Threads per block of the shared-memory reductions (a power of two)."""
    return 32 if simulated() else 256


def stream(dev):
    return glue().stream_of(dev)


# ---- math namespace per compute dtype --------------------------------------------------------
_FUNCS = ("exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh "
          "tanh asinh acosh atanh erf erfc erfinv floor ceil trunc rint fabs pow atan2 hypot copysign "
          "fmod").split()
_NP_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
             "acosh": "arccosh", "atanh": "arctanh", "pow": "power", "atan2": "arctan2"}

# helpers shared by the generated kernels (compiled as device functions per compute dtype)
_HELPERS = '''
def maxn(a, b):
    return a if (a > b or a != a) else b


def minn(a, b):
    return a if (a < b or a != a) else b


def clampn(a, lo, hi):
    return minn(maxn(a, lo), hi)


def fmaxi(a, b):
    if a != a:
        return b
    return a if (b != b or a > b) else b


def fmini(a, b):
    if a != a:
        return b
    return a if (b != b or a < b) else b


def tdiv_i(a, b):
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


def fdiv_f(a, b):
    if b == CT(0):
        return a / b
    m = fmod(a, b)
    q = (a - m) / b
    if m != CT(0) and ((b < CT(0)) != (m < CT(0))):
        q = q - CT(1)
    if q != CT(0):
        f = floor(q)
        if q - f > CT(0.5):
            f = f + CT(1)
        return f
    return copysign(CT(0), a / b)


def rem_f(a, b):
    m = fmod(a, b)
    if m != CT(0) and ((b < CT(0)) != (m < CT(0))):
        m = m + b
    return m


def ipow(a, b):
    if b < 0:
        if a == 1:
            return CT(1)
        if a == -1:
            return CT(1) if b % 2 == 0 else CT(-1)
        return CT(0)
    r = CT(1)
    x = a
    e = b
    while e:
        if e & 1:
            r = r * x
        x = x * x
        e >>= 1
    return r


def better_max(v, vi, a, ai):
    if v != v:
        return a == a or vi < ai
    if a != a:
        return False
    return v > a or (v == a and vi < ai)


def better_min(v, vi, a, ai):
    if v != v:
        return a == a or vi < ai
    if a != a:
        return False
    return v < a or (v == a and vi < ai)


def sigm(a):
    return CT(1) / (CT(1) + exp(-a))


def gelu_t(a):
    k = CT(0.7978845608028654)
    return CT(0.5) * a * (CT(1) + tanh(k * (a + CT(0.044715) * a * a * a)))


def gelu_bt(g, x):
    kb = CT(0.7978845608028654)
    kk = CT(0.044715)
    xs = x * x
    t = tanh(kb * (x + kk * xs * x))
    left = CT(0.5) * x
    right = CT(1) + t
    return g * (CT(0.5) * right + left * (CT(1) - t * t) * kb * (CT(1) + CT(3) * kk * xs))


def gelu_bn(g, x):
    cdf = CT(0.5) * (CT(1) + erf(x * CT(0.7071067811865476)))
    pdf = exp(CT(-0.5) * x * x) * CT(0.3989422804014327)
    return g * (cdf + x * pdf)


def silu_b(g, x):
    s = CT(1) / (CT(1) + exp(-x))
    return g * s * (CT(1) + x * (CT(1) - s))


def mish_b(g, x):
    s = CT(1) / (CT(1) + exp(-x))
    t = tanh(log1p(exp(x)))
    return g * (t + x * s * (CT(1) - t * t))
'''

_ns_cache = {}


def _erfinv_py(y):
    """erfinv without SciPy: Giles' single-precision approximation, polished by Newton steps."""
    y = float(y)
    if not -1.0 < y < 1.0:
        return math.copysign(math.inf, y) if abs(y) == 1.0 else math.nan
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        cs = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
    else:
        w = math.sqrt(w) - 3.0
        cs = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
    p = 0.0
    for c in cs:
        p = c + p * w
    x = p * y
    for _ in range(2):
        x -= (math.erf(x) - y) / (1.1283791670955126 * math.exp(-x * x))
    return x


def _np_func(name, ct):
    t = ct.type
    if name == "rsqrt":
        return lambda x: t(1) / np.sqrt(x)
    if name == "erfinv":
        try:
            from scipy.special import erfinv  # noqa: PLC0415 - the simulator's stand-in for libdevice
        except ImportError:
            erfinv = _erfinv_py
        return lambda x: t(erfinv(x))
    if name in ("erf", "erfc"):
        f = getattr(math, name)
        return lambda x: t(f(float(x)))
    return getattr(np, _NP_NAMES.get(name, name))


def namespace(ct):
    """Globals for a kernel computing in compute dtype ct (an ember dtype): CT, math, helpers."""
    ns = _ns_cache.get(ct)
    if ns is not None:
        return ns
    cu = cuda()
    nct = nbtype(ct)
    ns = {"cuda": cu, "CT": nct, "math": math}
    if ct.category == _dt.FLOAT:
        if simulated():
            for n in _FUNCS:
                ns[n] = _np_func(n, ct.np)
        else:
            from numba.cuda import libdevice as ld
            suffix = "f" if ct is _dt.float32 else ""
            for n in _FUNCS:
                ns[n] = getattr(ld, n + suffix)
    exec(compile(_HELPERS, f"<ember cuda helpers {ct}>", "exec"), ns)
    for line in _HELPERS.split("\n"):
        if line.startswith("def "):
            n = line[4:line.index("(")]
            ns[n] = cu.jit(device=True)(ns[n])
    _ns_cache[ct] = ns
    return ns


def _quiet():
    np.seterr(all="ignore")


def _lock_simulator_shared_arrays():
    """numba's simulator finds a block's `cuda.shared.array` by the calling source line, with a
    look-up and a store and no lock between them: two threads of a block that reach the line together
    can each make their own array, and the block then computes from memory its threads do not share
    (rare wrong results of the tiled matmul under load). The same look-up, under a lock."""
    import sys
    import threading

    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support
    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "ember_locked", False):
        return
    unlocked, lock = shared.array, threading.Lock()

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: one buffer, no look-up
            return unlocked(self, shape, dtype)
        f = sys._getframe(1)
        key = (f.f_code.co_filename, f.f_lineno)
        with lock:
            res = self._allocations.get(key)
            if res is None:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                res = self._allocations[key] = np.empty(shape, dtype)
        return res
    array.ember_locked = True
    shared.array = array


def compile_kernel(src, name, ns_extra, ct):
    """Compile generated kernel source; `ns_extra` adds globals (OT, constants)."""
    ns = dict(namespace(ct))
    ns.update(ns_extra)
    src = src.lstrip("\n")
    if simulated():
        # simulated threads start with NumPy's default error state: keep FP warnings off there too
        head, _, body = src.partition("\n")
        src = head + "\n    _quiet()\n" + body
        ns["_quiet"] = _quiet
        _lock_simulator_shared_arrays()
    exec(compile(src, f"<ember cuda {name}>", "exec"), ns)
    return Kernel(cuda().jit(ns[name]))  # a CUDA graph capture records its launches


# ---- operands --------------------------------------------------------------------------------
def is_dev(x):
    return isinstance(x, TensorImpl) and x._np is None and x._device.type != "meta"


def scalar_of(x):
    """A CPU tensor (0-d, which PyTorch lets mix with device tensors) or number as a Python value."""
    if isinstance(x, TensorImpl):
        return x._np.reshape(()).item()
    return x


def cast_scalar(v, d):
    """v converted to dtype d as a NumPy scalar (wrapping like a C cast, as PyTorch does)."""
    if d is _dt.bool_:
        return np.bool_(bool(v))
    if d.category == _dt.INT and isinstance(v, float):
        v = int(v) if math.isfinite(v) else 0
    return np.asarray(v).astype(d.np)[()]


def broadcast_strides(t, shape):
    """t's strides for iterating `shape` (0 on broadcast dims)."""
    n = len(shape)
    ts, st = t._shape, t._strides if t._np is None else t.stride()
    k = len(ts)
    out = [0] * n
    for i in range(k):
        if ts[i] != 1:
            out[n - k + i] = st[i]
    return out


def coalesce(shape, stride_lists):
    """Drop size-1 dims and merge dims that are contiguous for every operand."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    sh = []
    sts = [[] for _ in stride_lists]
    for i in dims:
        if sh and all(st[-1] == sl[i] * shape[i] for st, sl in zip(sts, stride_lists)):
            sh[-1] *= shape[i]
            for st, sl in zip(sts, stride_lists):
                st[-1] = sl[i]
            continue
        sh.append(shape[i])
        for st, sl in zip(sts, stride_lists):
            st.append(sl[i])
    return sh, sts


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def device_of(*xs):
    for x in xs:
        if is_dev(x):
            return x._device
    raise Unsupported()


def empty(shape, dtype, device):
    return glue().empty(tuple(shape), dtype, device)


def flat(t):
    return glue().flat(t)


def fallback(name, args):
    """The backend's boxed host fallback for aten overload `name` (dtypes numba cannot do)."""
    from ember.kernels.cuda import _cuda_fallback
    return _cuda_fallback(OPERATORS["aten::" + name], None, tuple(args))


def guard(name, fn):
    """fn, sending the call to the host fallback when fn raises Unsupported."""
    def kernel(*args):
        try:
            return fn(*args)
        except Unsupported:
            return fallback(name, args)
    kernel.__name__ = fn.__name__
    kernel.__qualname__ = "cuda." + name
    return kernel


def guarded(kernels):
    return {n: guard(n, f) for n, f in kernels.items()}


# ---- source snippets shared by the row-wise kernels (reductions, softmax) --------------------------
def tree_lines(tpb, combine):
    """Lines of a shared-memory tree over sv[0:tpb] (thread `tid` holds sv[tid]): halve the active
    threads each round, combining with `combine` ("maxn({0}, {1})"); sv[0] ends with the result."""
    return ["        cuda.syncthreads()",
            f"        h = {tpb // 2}",
            "        while h > 0:",
            "            if tid < h:",
            "                sv[tid] = " + combine.format("sv[tid]", "sv[tid + h]"),
            "            cuda.syncthreads()",
            "            h //= 2"]


def pos_lines(idx, size, nd, targets, indent="        "):
    """Lines that turn linear index `idx` over sizes {size}0..{size}{nd-1} (row-major) into
    offsets: targets = [(var, base, stride_prefix)] sets var = base + sum(c_k * prefix_k)."""
    out = []
    if nd == 0:
        return [f"{indent}{v} = {b}" for v, b, _ in targets]
    out.append(f"{indent}r_ = {idx}")
    for k in range(nd - 1, -1, -1):
        if k:
            out.append(f"{indent}c_ = r_ % {size}{k}")
            out.append(f"{indent}r_ = r_ // {size}{k}")
        else:
            out.append(f"{indent}c_ = r_")
        for v, b, p in targets:
            if k == nd - 1:
                out.append(f"{indent}{v} = {b} + c_ * {p}{k}")
            else:
                out.append(f"{indent}{v} += c_ * {p}{k}")
    return out


def split_dims(x, dims, out_strides_kept):
    """Geometry of a reduction of device tensor x over `dims`: coalesced
    (kept sizes, [x strides, out strides] over kept dims), (reduced sizes, x strides)."""
    shape, st = x._shape, x._strides
    kept = [i for i in range(len(shape)) if i not in dims]
    ks, (kxs, kos) = coalesce([shape[i] for i in kept], [[st[i] for i in kept], list(out_strides_kept)])
    rd = sorted(dims)
    rs, (rxs,) = coalesce([shape[i] for i in rd], [[st[i] for i in rd]])
    return ks, kxs, kos, rs, rxs


def kept_out_strides(out, ndim, dims, keepdim):
    """The strides of `out` (a reduction result) for the kept dims of the input, in order."""
    if keepdim:
        return [out._strides[i] for i in range(ndim) if i not in dims]
    return list(out._strides)
