"""Reductions on the CUDA backend: shared-memory tree reductions along any dims.

The input is seen as (kept positions M) x (reduced positions R) through index math over its
strides (kept and reduced dims each coalesced), so any set of dims and any layout works without
a copy. Two kernel shapes, generated per (combine, ranks, dtypes) and cached:
- block: one block per output element (grid-stride over outputs); its threads stride over R,
  accumulate privately, then combine through a shared-memory tree (log2(TPB) steps with
  syncthreads). Used when the reduced elements are contiguous in memory, or few outputs.
  A full reduction of a large tensor splits R over many blocks, writes partials, and reduces
  the partials with a second launch.
- thread: one thread per output element looping over R; used when the reduced dims are not the
  innermost (neighbouring threads then read neighbouring addresses: coalesced) or R is tiny.
Output shapes/dtypes come from the Meta functions; sums accumulate in opmath (float for half,
int64 for integers as the result dtype says); max/min propagate NaN; arg/dim variants return
the first index of the extreme value.
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.core.tensor_impl import contiguous_strides, make_view_meta
from ember._generated.ops import RETURN_TYPES
from ember.kernels.cuda import _launch as L
from ember.kernels.cuda import pointwise as P
from ember.kernels.meta import reduction as MR

_kcache = {}


def _update(arg, comb):
    if arg:
        return ["            if better_%s(v, j, acc, ai):" % arg,
                "                acc = v",
                "                ai = j"]
    return ["            acc = " + comb.format("acc", "v")]


def _source(kind, nk, nr, arg, comb, load, final, split, tpb):
    args = ["o", "oo"] + [f"os{k}" for k in range(nk)] + (["oi"] if arg else []) + \
        ["x", "xo"] + [f"xk{k}" for k in range(nk)] + [f"xr{k}" for k in range(nr)] + \
        [f"ks{k}" for k in range(nk)] + [f"rs{k}" for k in range(nr)] + ["M", "R", "nch", "init", "p0"]
    ld = load.format("x[xp]")
    fin = final.format("acc")
    lines = [f"def kern({', '.join(args)}):"]
    if kind == "block":
        lines += [f"    sv = cuda.shared.array({tpb}, ACC)"]
        if arg:
            lines += [f"    si = cuda.shared.array({tpb}, I64)"]
        lines += ["    tid = cuda.threadIdx.x",
                  "    b = cuda.blockIdx.x",
                  "    while b < M * nch:",
                  "        row = b // nch",
                  "        ch = b - row * nch"]
        lines += L.pos_lines("row", "ks", nk, [("ob", "oo", "os"), ("xb", "xo", "xk")])
        lines += ["        acc = init",
                  "        ai = R",
                  f"        j = ch * {tpb} + tid",
                  "        while j < R:"]
        lines += L.pos_lines("j", "rs", nr, [("xp", "xb", "xr")], "            ")
        lines += [f"            v = {ld}"] + _update(arg, comb)
        lines += [f"            j += nch * {tpb}",
                  "        sv[tid] = acc"]
        if arg:
            lines += ["        si[tid] = ai"]
        lines += ["        cuda.syncthreads()",
                  f"        s = {tpb // 2}",
                  "        while s > 0:",
                  "            if tid < s:"]
        if arg:
            lines += [f"                if better_{arg}(sv[tid + s], si[tid + s], sv[tid], si[tid]):",
                      "                    sv[tid] = sv[tid + s]",
                      "                    si[tid] = si[tid + s]"]
        else:
            lines += ["                sv[tid] = " + comb.format("sv[tid]", "sv[tid + s]")]
        lines += ["            cuda.syncthreads()",
                  "            s //= 2",
                  "        if tid == 0:",
                  "            acc = sv[0]"]
        if split:
            lines += ["            o[b] = acc"]
        else:
            lines += [f"            o[ob] = OT({fin})"]
            if arg:
                lines += ["            oi[ob] = si[0]"]
        lines += ["        cuda.syncthreads()",
                  "        b += cuda.gridDim.x"]
    else:
        lines += ["    row = cuda.grid(1)",
                  "    st = cuda.gridsize(1)",
                  "    while row < M:"]
        lines += L.pos_lines("row", "ks", nk, [("ob", "oo", "os"), ("xb", "xo", "xk")])
        lines += ["        acc = init",
                  "        ai = R",
                  "        j = 0",
                  "        while j < R:"]
        lines += L.pos_lines("j", "rs", nr, [("xp", "xb", "xr")], "            ")
        lines += [f"            v = {ld}"] + _update(arg, comb)
        lines += ["            j += 1",
                  f"        o[ob] = OT({fin})"]
        if arg:
            lines += ["        oi[ob] = ai"]
        lines += ["        row += st"]
    return "\n".join(lines) + "\n"


def _kernel(kind, nk, nr, arg, comb, load, final, split, xd, od, acc):
    tpb = L.reduce_tpb()
    key = (kind, nk, nr, arg, comb, load, final, split, xd, od, acc, tpb)
    k = _kcache.get(key)
    if k is None:
        src = _source(kind, nk, nr, arg, comb, load, final, split, tpb)
        k = _kcache[key] = L.compile_kernel(src, "kern", {"OT": L.nbtype(od), "ACC": L.nbtype(acc),
                                                          "I64": L.nbtype(_dt.int64)}, acc)
    return k


def reduce(x, dims, out, comb, acc, init, final="{0}", p0=0.0, load="ACC({0})", arg=None,
           oi=None, keepdim=False):
    """out <- reduction of device tensor x over `dims` (wrapped); oi: indices for arg kinds."""
    if x._dtype not in L.SUPPORTED or out._dtype not in L.SUPPORTED or acc not in L.SUPPORTED:
        raise L.Unsupported()
    M = L.numel(out._shape)
    if M == 0:
        return out
    nd = len(x._shape)
    ks, kxs, kos, rs, rxs = L.split_dims(x, dims, L.kept_out_strides(out, nd, dims, keepdim))
    R = L.numel(rs)
    nk, nr = len(ks), len(rs)
    red_inner = nr > 0 and (not kxs or min(abs(s) for s in rxs) <= min(abs(s) for s in kxs))
    tpb = L.reduce_tpb()
    sim = L.simulated()
    initv = L.cast_scalar(init, acc)
    p0v = L.cast_scalar(p0, acc)
    s = L.stream(x._device)
    if arg is None and M < 64 and R >= 16 * tpb:
        # few outputs, long rows: split every row over many blocks, then reduce the partials
        nch = min((R + 4 * tpb - 1) // (4 * tpb), 4 if sim else 1024)
        tmp = L.empty((M, nch), acc, x._device)
        k = _kernel("block", nk, nr, None, comb, load, "{0}", True, x._dtype, acc, acc)
        blocks = min(M * nch, 8 if sim else 65535)
        k[blocks, tpb, s](L.flat(tmp), 0, *([0] * nk), L.flat(x), x._offset, *kxs, *rxs, *ks, *rs,
                          M, R, nch, initv, p0v)
        # partials (M, nch) -> out, seen as a flat contiguous vector (out is always fresh)
        flat_out = make_view_meta(out, (M,), (1,), out._offset)
        reduce(tmp, (1,), flat_out, comb, acc, init, final, p0, "{0}")
        return out
    kind = "block" if (R > 32 and (red_inner or M < 512)) else "thread"
    k = _kernel(kind, nk, nr, arg, comb, load, final, False, x._dtype, out._dtype, acc)
    extra = [L.flat(oi)] if arg else []
    args = [L.flat(out), out._offset, *kos, *extra, L.flat(x), x._offset, *kxs, *rxs, *ks, *rs,
            M, R, 1, initv, p0v]
    if kind == "block":
        k[min(M, 8 if sim else 65535), tpb, s](*args)
    else:
        blocks, threads = L.launch_1d(M)
        k[blocks, threads, s](*args)
    return out


def _lowest(d):
    if d.category == _dt.FLOAT:
        return -math.inf
    if d is _dt.bool_:
        return False
    return int(np.iinfo(d.np).min)


def _highest(d):
    if d.category == _dt.FLOAT:
        return math.inf
    if d is _dt.bool_:
        return True
    return int(np.iinfo(d.np).max)


def _new(spec, x):
    return L.empty(spec[0], spec[1], x._device)


def _all_dims(x):
    return tuple(range(len(x._shape)))


# ---- sum / mean / prod -------------------------------------------------------------------------
def _sum_like(x, dims, spec, keepdim, comb, init, final="{0}", p0=0.0):
    out = _new(spec, x)
    return reduce(x, dims, out, comb, L.opmath(spec[1]), init, final, p0, keepdim=keepdim)


def _sum(self, dtype=None):
    return _sum_like(self, _all_dims(self), MR.sum(self, dtype), False, "{0} + {1}", 0)


def _sum_dim(self, dim, keepdim=False, dtype=None):
    spec = MR.sum_dim(self, dim, keepdim, dtype)
    return _sum_like(self, MR.dims_of(dim, len(self._shape)), spec, keepdim, "{0} + {1}", 0)


def _mean(self, dtype=None):
    spec = MR.mean(self, dtype)
    return _sum_like(self, _all_dims(self), spec, False, "{0} + {1}", 0, "{0} / p0",
                     L.numel(self._shape))


def _mean_dim(self, dim, keepdim=False, dtype=None):
    spec = MR.mean_dim(self, dim, keepdim, dtype)
    dims = MR.dims_of(dim, len(self._shape))
    n = L.numel([self._shape[d] for d in dims])
    return _sum_like(self, dims, spec, keepdim, "{0} + {1}", 0, "{0} / p0", n)


def _prod(self, dtype=None):
    return _sum_like(self, _all_dims(self), MR.prod(self, dtype), False, "{0} * {1}", 1)


def _prod_dim(self, dim, keepdim=False, dtype=None):
    spec = MR.prod_dim(self, dim, keepdim, dtype)
    d = MR.one_dim_shape(self._shape, dim, keepdim)[0]
    return _sum_like(self, (d,) if self._shape else (), spec, keepdim, "{0} * {1}", 1)


# ---- max / min ---------------------------------------------------------------------------------
def _extreme(x, dims, spec, keepdim, which):
    out = _new(spec, x)
    acc = L.opmath(x._dtype)
    if which == "max":
        return reduce(x, dims, out, "maxn({0}, {1})", acc, _lowest(x._dtype), keepdim=keepdim)
    return reduce(x, dims, out, "minn({0}, {1})", acc, _highest(x._dtype), keepdim=keepdim)


def _amax(self, dim=(), keepdim=False):
    spec = MR.amax(self, dim, keepdim)
    return _extreme(self, MR.dims_of(dim, len(self._shape)), spec, keepdim, "max")


def _amin(self, dim=(), keepdim=False):
    spec = MR.amin(self, dim, keepdim)
    return _extreme(self, MR.dims_of(dim, len(self._shape)), spec, keepdim, "min")


def _max(self):
    return _extreme(self, _all_dims(self), MR.max(self), False, "max")


def _min(self):
    return _extreme(self, _all_dims(self), MR.min(self), False, "min")


def _arg_reduce(x, dims, vspec, ispec, keepdim, which, values=True):
    acc = L.opmath(x._dtype)
    oi = _new(ispec, x)
    out = _new(vspec, x) if values else L.empty(ispec[0], x._dtype, x._device)
    init = _lowest(x._dtype) if which == "max" else _highest(x._dtype)
    reduce(x, dims, out, "", acc, init, arg=which, oi=oi, keepdim=keepdim)
    return out, oi


def _return_type(name, a, b):
    return RETURN_TYPES[name](a, b)  # torch.return_types.<name>, defined with the op handles


def _dim_extreme(which):
    meta = MR.max_dim if which == "max" else MR.min_dim

    def f(self, dim, keepdim=False):
        vs, is_ = meta(self, dim, keepdim)
        d = MR.one_dim_shape(self._shape, dim, keepdim)[0]
        v, i = _arg_reduce(self, (d,) if self._shape else (), vs, is_, keepdim, which)
        return _return_type(which, v, i)
    return f


def _arg(which):
    meta = MR.argmax if which == "max" else MR.argmin

    def f(self, dim=None, keepdim=False):
        spec = meta(self, dim, keepdim)
        if dim is None:
            dims = _all_dims(self)
        else:
            dims = (MR.one_dim_shape(self._shape, dim, keepdim)[0],) if self._shape else ()
        return _arg_reduce(self, dims, spec, spec, keepdim, which, values=False)[1]
    return f


# ---- all / any ---------------------------------------------------------------------------------
def _logic(which, meta, dims_fn):
    comb = "{0} and {1}" if which == "all" else "{0} or {1}"

    def f(self, *args):
        spec = meta(self, *args)
        dims = dims_fn(self, *args)
        keepdim = bool(args[1]) if len(args) > 1 else False
        out = _new(spec, self)
        return reduce(self, dims, out, comb, _dt.bool_, which == "all", load="{0} != 0",
                      keepdim=keepdim)
    return f


def _dims_all(self, *args):
    return _all_dims(self)


def _dims_one(self, dim, keepdim=False):
    return (MR.one_dim_shape(self._shape, dim, keepdim)[0],) if self._shape else ()


def _dims_list(self, dim=None, keepdim=False):
    return MR.dims_exact(dim, len(self._shape))


KERNELS = {
    "sum": _sum, "sum.dim_IntList": _sum_dim, "mean": _mean, "mean.dim": _mean_dim,
    "prod": _prod, "prod.dim_int": _prod_dim, "amax": _amax, "amin": _amin,
    "max": _max, "min": _min, "max.dim": _dim_extreme("max"), "min.dim": _dim_extreme("min"),
    "argmax": _arg("max"), "argmin": _arg("min"),
}
for _w in ("all", "any"):
    KERNELS[_w] = _logic(_w, getattr(MR, _w), _dims_all)
    KERNELS[_w + ".dim"] = _logic(_w, getattr(MR, _w + "_dim"), _dims_one)
    KERNELS[_w + ".dims"] = _logic(_w, getattr(MR, _w + "_dims"), _dims_list)


# ---- norms, variance, logsumexp (composed from reductions and the pointwise template) ---------
def _vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    spec = MR.vector_norm(self, ord, dim, keepdim, dtype)
    dims = MR.dims_of(dim, len(self._shape))
    out = _new(spec, self)
    acc = L.opmath(spec[1])
    if acc.category != _dt.FLOAT:
        raise L.Unsupported()
    o = float(ord)
    if o == 2:
        return reduce(self, dims, out, "{0} + {1}", acc, 0, "sqrt({0})", 0,
                      "ACC({0}) * ACC({0})", keepdim=keepdim)
    if o == 1:
        return reduce(self, dims, out, "{0} + {1}", acc, 0, load="fabs(ACC({0}))", keepdim=keepdim)
    if o == math.inf:
        return reduce(self, dims, out, "maxn({0}, {1})", acc, 0, load="fabs(ACC({0}))",
                      keepdim=keepdim)
    if o == -math.inf:
        return reduce(self, dims, out, "minn({0}, {1})", acc, math.inf, load="fabs(ACC({0}))",
                      keepdim=keepdim)
    if o == 0:
        return reduce(self, dims, out, "{0} + {1}", acc, 0,
                      load="(ACC(1) if {0} != 0 else ACC(0))", keepdim=keepdim)
    return reduce(self, dims, out, "{0} + {1}", acc, 0, "pow({0}, CT(1) / p0)", o,
                  "pow(fabs(ACC({0})), p0)", keepdim=keepdim)


def _squeezed(t, shape):
    """t (a fresh contiguous keepdim result) seen with the size-1 reduced dims dropped."""
    return make_view_meta(t, shape, contiguous_strides(shape), t._offset)


def _var_core(x, dim, correction, keepdim, spec, take_sqrt, mean_spec=None):
    if x._dtype not in L.SUPPORTED or x._dtype.category != _dt.FLOAT:
        raise L.Unsupported()
    nd = len(x._shape)
    dims = MR.dims_of(dim, nd)
    n = L.numel([x._shape[d] for d in dims])
    acc = L.opmath(spec[1])
    dev = x._device
    stat = tuple(1 if i in dims else s for i, s in enumerate(x._shape))
    m = reduce(x, dims, L.empty(stat, acc, dev), "{0} + {1}", acc, 0, "{0} / p0", n, keepdim=True)
    sq = P.run("(a - b) * (a - b)", L.empty(x._shape, acc, dev), (x, m), ct=acc)
    out = _new(spec, x)
    div = max(n - correction, 0)
    reduce(sq, dims, out, "{0} + {1}", acc, 0, "sqrt({0} / p0)" if take_sqrt else "{0} / p0",
           div, keepdim=keepdim)
    if mean_spec is None:
        return out
    mv = m if keepdim else _squeezed(m, mean_spec[0])
    mo = P.run("a", L.empty(mean_spec[0], mean_spec[1], dev), (mv,), ct=acc)
    return out, mo


def _var_family(take_sqrt, with_mean, kind):
    name = ("std" if take_sqrt else "var") + ("_mean" if with_mean else "")
    meta = getattr(MR, name + {"plain": "", "dim": "_dim", "correction": "_correction"}[kind])

    def plain(self, unbiased=True):
        return run(self, None, MR.correction_value(unbiased, None), False, meta(self, unbiased))

    def dim_(self, dim, unbiased=True, keepdim=False):
        return run(self, dim, MR.correction_value(unbiased, None), keepdim,
                   meta(self, dim, unbiased, keepdim))

    def corr(self, dim=None, correction=None, keepdim=False):
        return run(self, dim, MR.correction_value(True, correction), keepdim,
                   meta(self, dim, correction, keepdim))

    def run(self, dim, c, keepdim, spec):
        if with_mean:
            r = _var_core(self, dim, c, keepdim, spec[0], take_sqrt, spec[1])
            return r
        return _var_core(self, dim, c, keepdim, spec, take_sqrt)
    return {"plain": plain, "dim": dim_, "correction": corr}[kind]


def _logsumexp(self, dim, keepdim=False):
    spec = MR.logsumexp(self, dim, keepdim)
    nd = len(self._shape)
    dims = MR.dims_of(dim, nd)
    if L.numel([self._shape[d] for d in dims]) == 0 or not L.is_dev(self):
        raise L.Unsupported()
    acc = L.opmath(spec[1])
    if self._dtype not in L.SUPPORTED or acc.category != _dt.FLOAT:
        raise L.Unsupported()
    dev = self._device
    stat = tuple(1 if i in dims else s for i, s in enumerate(self._shape))
    m = reduce(self, dims, L.empty(stat, acc, dev), "maxn({0}, {1})", acc, -math.inf, keepdim=True)
    shift = "(CT(0) if (b == CT(math.inf) or b == -CT(math.inf)) else b)"
    e = P.run(f"exp(a - {shift})", L.empty(self._shape, acc, dev), (self, m), ct=acc)
    s = reduce(e, dims, L.empty(stat, acc, dev), "{0} + {1}", acc, 0, keepdim=True)
    if not keepdim:
        s, m = _squeezed(s, spec[0]), _squeezed(m, spec[0])
    return P.run(f"log(a) + {shift}", _new(spec, self), (s, m), ct=acc)


# ---- equal / allclose: an elementwise comparison reduced to one bool ------------------------
def _all_true(t):
    out = L.empty((), _dt.bool_, t._device)
    reduce(t, tuple(range(len(t._shape))), out, "{0} and {1}", _dt.bool_, True, load="{0} != 0")
    return bool(L.glue().to_host(out).reshape(()).item())


def _equal(self, other):
    if not L.is_dev(other) or not L.is_dev(self):
        raise L.Unsupported()
    if self._shape != other._shape:
        return False
    ct = _dt.promote_types(self._dtype, other._dtype)
    r = P.functional("a == b", (self._shape, _dt.bool_), (self, other), ct=L.opmath(ct))
    return _all_true(r)


def _allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not L.is_dev(other):
        raise L.Unsupported()
    return _all_true(P._isclose(self, other, rtol, atol, equal_nan))


KERNELS["equal"] = _equal
KERNELS["allclose"] = _allclose
KERNELS["linalg_vector_norm"] = _vector_norm
KERNELS["logsumexp"] = _logsumexp
for _sq in (False, True):
    for _wm in (False, True):
        _nm = ("std" if _sq else "var") + ("_mean" if _wm else "")
        KERNELS[_nm] = _var_family(_sq, _wm, "plain")
        KERNELS[_nm + ".dim"] = _var_family(_sq, _wm, "dim")
        KERNELS[_nm + ".correction"] = _var_family(_sq, _wm, "correction")
KERNELS = L.guarded(KERNELS)
