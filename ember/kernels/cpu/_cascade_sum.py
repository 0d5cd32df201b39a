"""ATen's float sum, bit for bit (native/cpu/SumKernel.cpp: cascade_sum).

ATen adds a contiguous row of float32 (float64) values in 256-bit vectors of V = 8 (4) lanes:
row_sum splits the vectors over 4 interleaved accumulators, and multi_row_sum adds each of them
through a 4-level cascade (chunks of 2**p vectors, p = max(4, ceil(log2(n)) // 4), carried into
the next level every 2**p chunks); the leftover vectors, then the other three accumulators, go into
the first; the elements past the last whole vector are added one by one from 0, then the V lanes.
Rows shorter than V are summed as scalars by the same row_sum. The output starts at 0 and the
row's sum is added to it. A full reduction of at least 32768 elements is split between
get_num_threads() threads (min(threads, ceil(n / 32768)) chunks of ceil(n / chunks) elements),
each chunk's sum goes to its thread's slot of a buffer of `threads` zeros, and the buffer is then
summed the same way (TensorIteratorReduce.cpp: two_pass_reduction). Measured against torch 2.13
(AVX512 machine, 1 and 2 threads): equal for every size tried (tests/ops/test_exact_sum.py).

Not yet wired into ember's sum and mean (kernels/cpu/reduction.py still calls np.add.reduce,
whose pairwise order differs from ATen's in the last bit for most sizes): a float32 sum of 16
elements costs 2.9 us this way against 1.8 us today and torch's 1.5 us until numba is loaded,
and 19 us for 1000 elements on the NumPy path. The next step is a cheaper small-row path, or
loading numba on the first float sum (0.3 s import plus 0.7 s of cached kernels per process).
benchmarks/sum_exact.py measures it; tests/ops/test_exact_sum.py holds it to torch's bits.

sum_array(a, axes, keepdim) is the entry point for a reduction kernel: it takes the layouts whose
walk is plain (dense arrays, trailing dims of C-contiguous ones) and returns None for the rest.

Three implementations of the same additions, in the same order:
- rows shorter than 4 vectors (no accumulator sees two vectors): Python floats, float32 rounded
  at every step by NumPy's float32 scalars (a sum of two float32 values rounded once in float64
  and again in float32 is the correctly rounded float32 sum);
- numba (optional, imported lazily): a jitted copy of ATen's loops, used for rows of at least
  4096 elements, and for every row once something in the process has loaded numba;
- otherwise NumPy: each sequential run of additions is a loop of elementwise adds over whole
  slices (or an accumulate), with lanes and accumulators innermost: a few passes over the data
  plus 5-20 us of NumPy calls.
"""
import sys
from functools import reduce as _reduce
from operator import add as _add

import numpy as np

from ember.core import parallel

_GRAIN = 32768                  # at::internal::GRAIN_SIZE
_NUMBA_MIN = 4096               # rows this long load numba (when installed) for the jitted loops
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_LANES = {_F32: 8, _F64: 4}     # Vectorized<float>/<double>::size() with 256-bit vectors
_Z32 = np.float32(0)
_SHORT = {_F32: 32, _F64: 16}   # rows shorter than 4 vectors: no accumulator sees two vectors


# ---- NumPy ------------------------------------------------------------------------------------
def _seq(a, axis):
    """Sequential sum along an axis, from +0.0 as ATen's accumulators start (the + 0.0 turns an
    all -0.0 sum into +0.0). One elementwise add per step: np.add.reduce may walk the axis in
    another order (pairwise, when its iterator makes the axis the inner loop, which can depend on
    the arrays' alignment: seen once in CI)."""
    n = a.shape[axis]
    if n == 0:
        return np.zeros(a.shape[:axis] + a.shape[axis + 1:], a.dtype)
    a = np.moveaxis(a, axis, 0)
    acc = a[0] + a.dtype.type(0)
    for i in range(1, n):
        acc = acc + a[i]
    return acc


def _multi_row_sum(rows):
    """rows (B, size, k, V) -> (B, k, V): multi_row_sum's cascade over `size` rows."""
    size = rows.shape[1]
    tail = rows.shape[2:]
    p = max(4, (int(size - 1).bit_length() if size > 1 else 0) // 4)
    step = 1 << p
    nch = size // step
    B = rows.shape[0]
    zero = np.zeros((B,) + tail, rows.dtype)
    acc1 = acc2 = acc3 = zero
    if nch:
        c = _seq(rows[:, :nch * step].reshape((B, nch, step) + tail), 2)        # chunk sums
        n1 = nch // step
        g1 = _seq(c[:, :n1 * step].reshape((B, n1, step) + tail), 2) if n1 else None
        acc1 = _seq(c[:, n1 * step:], 1)
        if n1:
            n2 = n1 // step
            g2 = _seq(g1[:, :n2 * step].reshape((B, n2, step) + tail), 2) if n2 else None
            acc2 = _seq(g1[:, n2 * step:], 1)
            if n2:
                acc3 = _seq(g2, 1)
    acc0 = _seq(rows[:, nch * step:], 1)
    return ((acc0 + acc1) + acc2) + acc3


def _row_sum(vecs):
    """vecs (B, size, V) -> (B, V): row_sum with 4 interleaved accumulators."""
    B, size, V = vecs.shape
    n4 = size // 4
    p = _multi_row_sum(vecs[:, :n4 * 4].reshape(B, n4, 4, V))      # (B, 4, V)
    # p0, then the (at most 3) leftover vectors, then p1, p2, p3: one sequential run
    run = np.concatenate((p[:, :1], vecs[:, n4 * 4:], p[:, 1:]), axis=1)
    return np.add.accumulate(run, axis=1)[:, -1]


def row_sums(x):
    """ATen's sums of the rows of C-contiguous x (B, n), NumPy only: (B,)."""
    B, n = x.shape
    V = _LANES[x.dtype]
    if n < V:                       # scalar_inner_sum: row_sum over single values
        return _row_sum(x.reshape(B, n, 1))[:, 0] + x.dtype.type(0)
    nv = n // V
    lanes = _row_sum(x[:, :nv * V].reshape(B, nv, V))
    # from 0: the elements past the last whole vector, then the lanes, one after another
    run = np.concatenate((np.zeros((B, 1), x.dtype), x[:, nv * V:], lanes), axis=1)
    return np.add.accumulate(run, axis=1)[:, -1] + x.dtype.type(0)


# ---- Python floats: rows shorter than 4 vectors -------------------------------------------------
def _short_sum(x, n):
    """ATen's sum of contiguous 1-D x of n < 4 * V elements, plus the output's 0. A float32 step
    that overflows warns as NumPy's reductions do (and gives inf, as ATen does)."""
    v = x.tolist()
    if x.dtype is _F32:
        z, V = _Z32, 8
    else:
        z, V = 0.0, 4
    if n < V:                           # scalar row_sum: x0, x4.., then x1, x2, x3
        run = v[:1] + v[4:] + v[1:4] if n > 4 else v
    else:
        m = n - n % V
        if m == V:
            lanes = v[:V]
        elif m == 2 * V:                # Python floats: lane + lane, rounded to float32 below
            lanes = list(map(_add, v[:V], v[V:m]))
        else:
            lanes = [(z + (e + f)) + g for e, f, g in zip(v[:V], v[V:2 * V], v[2 * V:m])]
        run = v[m:] + lanes if m < n else lanes     # from 0: the elements past the last vector
    # one sequential run: float32 + Python float rounds the Python float to float32 first, and a
    # sum of two float32 values rounded in float64, then in float32, is the float32 sum
    t = _reduce(_add, run, z) + z       # + the output's 0: -0.0 sums to +0.0
    return t if V == 8 else np.float64(t)


# ---- numba: a jitted copy of ATen's loops -------------------------------------------------------
def _lanes(x):
    """V for x's dtype. Jitted code sees a compile-time constant (the overload in _jitted): one
    function serves both dtypes, compiled once per signature, and cache=True can store it (numba
    caches no closures, so no copy per lane count is made from a factory)."""
    return _LANES[x.dtype]


def _nb_multi_row_sum(x, base, size, W, out):
    """multi_row_sum over `size` rows of W = 4 * V contiguous elements from x[base]. W comes at
    run time on purpose: LLVM vectorizes the loops over the row slices then, where with a
    constant W it unrolls them into scalar code ~3x slower (measured: 1M float32, 105 vs 305 us)."""
    lp = 4
    if size > 1:
        b = 0
        m = size - 1
        while m > 0:
            b += 1
            m >>= 1
        if b // 4 > lp:
            lp = b // 4
    step = 1 << lp
    mask = step - 1
    a0 = np.zeros(W, x.dtype)
    a1 = np.zeros(W, x.dtype)
    a2 = np.zeros(W, x.dtype)
    a3 = np.zeros(W, x.dtype)
    nch = size // step
    for c in range(nch):
        for r in range(step):
            s = base + (c * step + r) * W
            row = x[s:s + W]            # a slice: LLVM then vectorizes the loop over it
            for q in range(W):
                a0[q] += row[q]
        i = (c + 1) * step
        for q in range(W):
            a1[q] += a0[q]
            a0[q] = 0
        if (i & (mask << lp)) == 0:
            for q in range(W):
                a2[q] += a1[q]
                a1[q] = 0
            if (i & (mask << (2 * lp))) == 0:
                for q in range(W):
                    a3[q] += a2[q]
                    a2[q] = 0
    for r in range(nch * step, size):
        s = base + r * W
        for q in range(W):
            a0[q] += x[s + q]
    for q in range(W):
        out[q] = ((a0[q] + a1[q]) + a2[q]) + a3[q]


def _nb_row_sum(x):
    """ATen's sum of contiguous 1-D x (row_sum, then vectorized_inner_sum's tail), plus the
    output's 0."""
    V = _lanes(x)
    zero = x.dtype.type(0)
    n = x.shape[0]
    if n < V:                          # scalar_inner_sum: at most one row of 4, no cascade
        p = np.zeros(4, x.dtype)
        n4 = n // 4
        for i in range(n4):
            for k in range(4):
                p[k] += x[4 * i + k]
        for r in range(n4 * 4, n):
            p[0] += x[r]
        return zero + ((((zero + p[0]) + p[1]) + p[2]) + p[3])
    W = 4 * V
    part = np.empty(W, x.dtype)
    nv = n // V
    n4 = nv // 4
    _jit_mrs(x, 0, n4, 4 * (32 // x.itemsize), part)    # = W, but read at run time (see there)
    for r in range(n4 * 4, nv):
        for lane in range(V):
            part[lane] += x[r * V + lane]
    for k in range(1, 4):
        for lane in range(V):
            part[lane] += part[k * V + lane]
    t = zero
    for k in range(nv * V, n):
        t += x[k]
    for lane in range(V):
        t += part[lane]
    return zero + t


def _nb_rows(x2, out):
    for b in range(x2.shape[0]):
        out[b] = _jit_row(x2[b])


_jit_mrs = _jit_row = _jit_rows = None  # the jitted kernels (bound by _jitted())
_NB = {"off": False}


def _jitted(n):
    """True when the jitted kernels serve a row of n elements (numba loaded, or n large enough
    to be worth loading it)."""
    if _jit_rows is not None:
        return True
    if _NB["off"] or (n < _NUMBA_MIN and "numba" not in sys.modules):
        return False
    try:
        import numba  # lazy: optional accelerator, loaded by the first long row
    except ImportError:
        _NB["off"] = True
        return False
    from numba.extending import overload  # lazy: with numba, as above

    @overload(_lanes)
    def _lanes_const(x):
        lanes = 256 // x.dtype.bitwidth          # a constant of the compiled signature
        return lambda x: lanes

    jit = numba.njit(nogil=True, cache=True)
    g = globals()
    g["_jit_mrs"] = jit(_nb_multi_row_sum)
    g["_jit_row"] = jit(_nb_row_sum)
    g["_jit_rows"] = jit(_nb_rows)
    return True


# ---- entry points -------------------------------------------------------------------------------
def _one_row(x):
    """ATen's sum of contiguous 1-D x (one thread), plus the output's 0: a NumPy scalar."""
    n = x.shape[0]
    if _jitted(n):
        return x.dtype.type(_jit_row(x))    # numba returns a Python float (exact: same value)
    return row_sums(x.reshape(1, n))[0]


def full_sum(x):
    """ATen's sum of all elements of contiguous 1-D x (float32/float64), with its split between
    threads: a NumPy scalar of x's dtype."""
    n = x.shape[0]
    if n < _SHORT[x.dtype] and _jit_rows is None and "numba" not in sys.modules:
        return _short_sum(x, n)
    threads = parallel.num_threads()
    if n < _GRAIN or threads == 1:
        return _one_row(x)
    nt = min(threads, -(-n // _GRAIN))
    chunk = -(-n // nt)
    parts = np.zeros(threads, x.dtype)      # two_pass_reduction's buffer: one slot per thread
    for t in range(nt):
        parts[t] = _one_row(x[t * chunk:min((t + 1) * chunk, n)])
    return _one_row(parts)


def sum_rows(x):
    """ATen's sums of the rows of C-contiguous x (B, n), float32/float64: (B,). One row is a
    full reduction (split between threads when long)."""
    B, n = x.shape
    if B == 1:
        return np.full(1, full_sum(x.reshape(n)), x.dtype)
    if _jitted(n):
        out = np.empty(B, x.dtype)
        _jit_rows(x, out)
        return out
    return row_sums(x)


def _numel(shape, axes):
    n = 1
    for d in axes:
        n *= shape[d]
    return n


def sum_array(a, axes=None, keepdim=False):
    """ATen's float32/float64 sum of NumPy array a over axes (None: all), bit for bit, where
    TensorIterator's walk is plain: every element of a dense (C- or F-contiguous) array in memory
    order (also when the dims kept all have size 1), or the rows that the trailing dims of a
    C-contiguous array make. Returns None elsewhere (the caller then sums as it likes) and for
    other dtypes. A full sum without axes gives a NumPy scalar, like np.add.reduce."""
    if a.dtype not in _LANES:
        return None
    nd = a.ndim
    full = axes is None or len(axes) == nd
    if not full:
        if a.size == 0:
            return None
        k = nd - len(axes)
        full = a.size == _numel(a.shape, axes)            # one output element: a full reduction
        if not full and (sorted(axes) != list(range(k, nd)) or not a.flags.c_contiguous):
            return None
    if full:
        f = a.flags
        if f.c_contiguous:
            s = full_sum(a if nd == 1 else a.reshape(-1))
        elif f.f_contiguous:
            s = full_sum(a.T.reshape(-1))
        else:
            return None
        if axes is None or (len(axes) == nd and not keepdim):
            return s
        shape = (tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdim
                 else tuple(d for i, d in enumerate(a.shape) if i not in axes))
        return np.full(shape, s, a.dtype)
    lead = a.shape[:k]
    r = sum_rows(a.reshape(a.size // _numel(a.shape, axes), -1))
    return r.reshape(lead + (1,) * len(axes) if keepdim else lead)
