"""The inductor backend's fused kernels against torch: values, dtypes, shapes and strides over
dtypes, broadcasting, non-contiguous, 0-d, empty and inf/NaN inputs, with the numba generator and
the NumPy one; and what the scheduler fused (kernel counts, CSE/DCE, extern fallbacks, buffer
reuse). float16/bfloat16 graphs compute in float32 and round once, as torch.compile does, so their
reference is torch in float32 rounded to the narrow dtype."""
import math

import numpy as np
import pytest
import torch
from harness import check, make_pair, pair_from

import ember
import ember._dynamo as dynamo
import ember.nn.functional as EF
import torch.nn.functional as TF
from ember._inductor import compile_fx


def F(lib):
    return EF if lib is ember else TF


def chain_c(L, x):
    return 0.5 * x * (1 + L.tanh(0.7978846 * (x + 0.044715 * x * x * x))) * L.sigmoid(x) + 0.1 * x


def arith8(L, x):
    return ((x * 1.5 + 2) * x - 3) / (x * x + 4) - x * 0.25


UNARY = {
    "chain_c": chain_c,
    "arith8": arith8,
    "exp_log": lambda L, x: L.log1p(L.exp(x * 0.5)) + L.expm1(x * 0.1) - L.log(x.abs() + 1),
    "activations": lambda L, x: F(L).gelu(x) + F(L).relu(x) * 2 + F(L).silu(x) + F(L).gelu(x, approximate="tanh"),
    "where_cmp": lambda L, x: L.where(x > 0, x, x * 0.1) + (x <= 0.5).to(x.dtype),
    "clamp": lambda L, x: x.clamp(-1, 1) + x.clamp_min(0.5) - x.clamp_max(-0.5),
    "roots": lambda L, x: L.rsqrt(x.abs() + 1) + L.sqrt(x.abs()) + L.reciprocal(x + 10),
    "powers": lambda L, x: x ** 2 + x.abs() ** 0.5 + x ** 3 * 0.5 + x.abs() ** 1.7,
    "neg_abs": lambda L, x: -x.abs() + L.neg(x) * x,
}
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _ref(fn, t, dtype):
    """torch's eager result; for half types torch in float32 rounded once (what a fused kernel does)."""
    if dtype in ("float16", "bfloat16"):
        return fn(torch, *[a.float() for a in t]).to(getattr(torch, dtype))
    return fn(torch, *t)


def _run(fn, e_args):
    """Compiled results (the capturing call and a compiled call); strides must be eager ember's."""
    c = ember.compile(lambda *a: fn(ember, *a), backend="inductor")
    r1 = c(*e_args)
    r2 = c(*e_args)
    eager = fn(ember, *e_args)
    for r in (r1, r2):
        assert r.stride() == eager.stride()
    return r1, r2


CASES = [(n, d) for n in UNARY for d in ("float32", "float64")] + [
    (n, d) for n in ("chain_c", "activations", "powers", "where_cmp") for d in ("float16", "bfloat16")]
LAYOUTS = (((33, 17), "contiguous"), ((6, 5), "transposed"), ((4, 7), "strided"), ((), "contiguous"),
           ((0, 3), "contiguous"))


@pytest.mark.parametrize("name,dtype", CASES)
def test_unary_chains(kernel_backend, name, dtype, rng):
    fn = UNARY[name]
    layouts = LAYOUTS if dtype == "float32" else LAYOUTS[:2]
    for shape, layout in layouts:
        e, t = make_pair(shape, dtype, rng, layout)
        r1, r2 = _run(fn, [e])
        tol = {} if dtype != "float32" else {"atol": 2e-5, "rtol": 2e-5}
        # the capturing call is eager (within a half type's ulp of torch's eager)
        eager_tol = {"float16": {"atol": 1e-5, "rtol": 2e-3}, "bfloat16": {"atol": 1e-5, "rtol": 3.2e-2}}.get(dtype, tol)
        check(r1, fn(torch, t), **eager_tol)
        check(r2, _ref(fn, [t], dtype), **tol)
        dynamo.reset()


BINARY = {
    "arith": lambda L, x, y: (x + y) * y - x / (y.abs() + 1) - L.sub(x, y, alpha=2),
    "minmax": lambda L, x, y: L.maximum(x, y) + L.minimum(x, y * 2),
    "where": lambda L, x, y: L.where(x < y, x * y, y - 1),
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_binary_broadcast(kernel_backend, name, dtype, rng):
    fn = BINARY[name]
    for sa, sb in (((5, 6), (6,)), ((5, 1), (1, 6)), ((), (3, 4)), ((2, 3, 4), (3, 1))):
        ea, ta = make_pair(sa, dtype, rng)
        eb, tb = make_pair(sb, dtype, rng)
        r1, r2 = _run(fn, [ea, eb])
        check(r1, fn(torch, ta, tb))
        check(r2, _ref(fn, [ta, tb], dtype))
        dynamo.reset()


INT_FNS = {
    "arith": lambda L, x, y: x * 3 + y - 2 * x,
    "cmp_logic": lambda L, x, y: L.logical_and(x > y, x != 2) | L.logical_not(y < 0),
    "promote_float": lambda L, x, y: x * 0.5 + y / 2,
    "minmax_relu": lambda L, x, y: L.maximum(x, y) - L.minimum(x, y).relu() + L.where(x > 0, x, y),
}


@pytest.mark.parametrize("name", list(INT_FNS))
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int16"])
def test_int_and_bool(kernel_backend, name, dtype, rng):
    fn = INT_FNS[name]
    ea, ta = make_pair((7, 5), dtype, rng)
    eb, tb = make_pair((5,), dtype, rng)
    r1, r2 = _run(fn, [ea, eb])
    ref = fn(torch, ta, tb)
    check(r1, ref)
    check(r2, ref)


def test_mixed_dtype_promotion(kernel_backend, rng):
    def fn(L, x, i, b, s):
        return (x * i + b) * s + (i > 2) * 1.5 + x.double()
    ex, tx = make_pair((4, 3), "float32", rng)
    ei, ti = make_pair((4, 3), "int64", rng)
    eb, tb = make_pair((3,), "bool", rng)
    es, ts = pair_from(np.array(2.5), "float64")
    r1, r2 = _run(fn, [ex, ei, eb, es])
    ref = fn(torch, tx, ti, tb, ts)
    check(r1, ref)
    check(r2, ref)


def test_int_wraparound(kernel_backend):
    def fn(L, x):
        return (x * 100 + 7) > 0
    base = np.array([100, -100, 127, 3], dtype=np.int8)
    e, t = pair_from(base, "int8")
    r1, r2 = _run(fn, [e])
    check(r1, fn(torch, t))
    check(r2, fn(torch, t))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inf_nan(kernel_backend, dtype):
    vals = np.array([math.inf, -math.inf, math.nan, 0.0, -0.0, 1e30, -1e30, 88.0, -100.0, 20.0, 1e-40, 3.0],
                    dtype=dtype)
    e, t = pair_from(vals, dtype)
    # (not gelu: torch's vectorised CPU gelu gives NaN at +inf, eager ember and the kernels inf)
    for fn in (chain_c, UNARY["clamp"], UNARY["exp_log"], lambda L, x: F(L).relu(x) + F(L).silu(x * 0.1),
               lambda L, x: L.maximum(x, x * 0) + L.minimum(x, L.zeros_like(x)) + L.sigmoid(x) + L.tanh(x)):
        r1, r2 = _run(fn, [e])
        ref = fn(torch, t)
        check(r1, ref)
        check(r2, ref)
        dynamo.reset()


def test_chain_fuses_to_one_kernel(kernel_backend):
    got = []
    old = compile_fx.compile_nodes

    def spy(*a, **k):
        fn = old(*a, **k)
        got.append(fn)
        return fn
    compile_fx.compile_nodes = spy
    try:
        c = ember.compile(lambda x: chain_c(ember, x))
        x = ember.randn(1000)
        c(x)
    finally:
        compile_fx.compile_nodes = old
    assert len(got) == 1 and got[0].kernels == 1 and got[0].externs == 0
    assert "def call(" in got[0].source and "benchmark_compiled_module" in got[0].source


def _compile_only(fn, *args, mode=None):
    got = []
    old = compile_fx.compile_nodes

    def spy(*a, **k):
        f = old(*a, **k)
        got.append(f)
        return f
    compile_fx.compile_nodes = spy
    try:
        c = ember.compile(fn, mode=mode)
        r = c(*args)
        r2 = c(*args)
    finally:
        compile_fx.compile_nodes = old
    return got, r, r2


def test_horizontal_fusion_and_cse(kernel_backend):
    def f(x, y):
        a = x.exp() + 1
        b = y * 2          # independent of a, same shape: same loop
        c = x.exp() + 1    # common subexpression
        return a * b + c, b
    x, y = ember.randn(8, 8), ember.randn(8, 8)
    got, r, _ = _compile_only(f, x, y)
    assert got[0].kernels == 1
    assert got[0].source.count("exp") >= 1
    ref = f(x, y)
    assert ember.allclose(r[0], ref[0]) and ember.equal(r[1], ref[1])


def test_dce_drops_unused(kernel_backend):
    def f(x):
        _unused = x.exp() * 3
        return x + 1
    got, r, _ = _compile_only(f, ember.randn(5))
    assert got[0].kernels == 1 and "exp" not in got[0].source.split("def call(")[1].split("def call_traced(")[0]


def test_extern_between_kernels(kernel_backend):
    """Ops that are not lowered run as externs inside the generated code (always correct)."""
    def f(x):
        a = (x * 2).relu()
        s = a.cumsum(0)             # extern
        return (s + a).tanh(), a.sum()
    x = ember.randn(6, 4)
    got, r, r2 = _compile_only(f, x)
    assert got[0].externs == 1 and got[0].kernels == 2
    assert "cumsum_default(" in got[0].source
    ref = f(x)
    for a, b in zip(r2, ref):
        assert ember.allclose(a, b, atol=1e-6)


def test_inplace_extern_orders_kernels(kernel_backend):
    def f(x):
        y = x * 2
        z = y + 1
        y.add_(10)          # z must be computed from y before the write
        return z, y * 3
    x = ember.randn(4)
    got, r, r2 = _compile_only(f, x)
    ref = f(x)
    for a, b in zip(r2, ref):
        assert ember.allclose(a, b)


def test_memory_plan_reuses_buffers(kernel_backend):
    def f(x, w):
        h = (x @ w).relu()          # BLAS product, epilogue in place
        g = (h @ w).tanh()
        return (g @ w).sigmoid()
    x, w = ember.randn(16, 16), ember.randn(16, 16)
    got, r, r2 = _compile_only(f, x, w)
    src = got[0].source
    assert "_matmul(" in src and "reuses the buffer" in src
    assert ember.allclose(r2, f(x, w), atol=1e-6)


def test_addmm_epilogue_and_mlp(kernel_backend):
    m = ember.nn.Sequential(ember.nn.Linear(12, 20), ember.nn.GELU(), ember.nn.Linear(20, 3), ember.nn.Tanh())
    x = ember.randn(7, 12)
    with ember.no_grad():
        got, r, r2 = _compile_only(m, x)
        ref = m(x)
    assert got and got[0].kernels >= 2
    assert ember.allclose(r2, ref, atol=1e-6)


def test_graph_input_never_written(kernel_backend):
    def f(x):
        return x * 2 + 1, x.relu()
    x = ember.randn(10)
    keep = x.clone()
    got, r, r2 = _compile_only(f, x)
    assert ember.equal(x, keep)
    assert r2[0].data_ptr() != x.data_ptr()


REDUCE = {
    "softmax": lambda L, x: x.softmax(-1).sum(-1) + x.log_softmax(0).mean(),
    "amax_amin": lambda L, x: x.amax(-1) - x.amin(0).sum() + x.sum(),
    "normalize": lambda L, x: ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True).rsqrt() * x,
    # reductions of values a kernel computes: row kernels (numba)
    "fused_rows": lambda L, x: ((x * 2).relu().sum(-1) + (x + 1).amax(-1) - (x.exp() - 1).amin(-1)
                                + (x * x).mean(-1) + (x * 3).sum()),
    # softmax / log_softmax ending the kernel of their input (numba row loops)
    "fused_softmax": lambda L, x: ((x * 2 - 1).softmax(-1) * 3 + (x.tanh() * 4).log_softmax(-1)),
}


@pytest.mark.parametrize("name", list(REDUCE))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_and_softmax(kernel_backend, name, dtype, rng):
    fn = REDUCE[name]
    for shape, layout in (((9, 13), "contiguous"), ((6, 5), "transposed"), ((0, 4), "contiguous")):
        if name in ("amax_amin", "fused_rows") and 0 in shape:
            continue            # amax of an empty dim raises, in eager too
        e, t = make_pair(shape, dtype, rng, layout)
        r1, r2 = _run(fn, [e])
        check(r1, fn(torch, t))
        check(r2, fn(torch, t), atol=1e-5, rtol=1e-5)
        dynamo.reset()


def test_softmax_mse_gradients(kernel_backend, rng):
    """Forward and backward graphs (AOT autograd) compiled: softmax/log_softmax backward, mean."""
    def fn(L, x, y):
        return (x.softmax(-1) * y.log_softmax(-1)).sum() + ((x - y) ** 2).mean()
    ex, tx = make_pair((5, 7), "float32", rng)
    ey, ty = make_pair((5, 7), "float32", rng)
    ex.requires_grad_(True)
    ey.requires_grad_(True)
    tx.requires_grad_(True)
    ty.requires_grad_(True)
    c = ember.compile(lambda a, b: fn(ember, a, b))
    for _ in range(2):
        loss = c(ex, ey)
        gx, gy = ember.autograd.grad(loss, (ex, ey))
    tl = fn(torch, tx, ty)
    tgx, tgy = torch.autograd.grad(tl, (tx, ty))
    check(loss.detach(), tl.detach())
    check(gx, tgx)
    check(gy, tgy)


def _compiled_equals_eager(f, x, atol):
    """f compiled on x equals eager (shapes, strides, values with NaNs); returns the compiled graphs
    and the body of the first one's call()."""
    got, r, r2 = _compile_only(f, x)
    for a, b in zip(r2, f(x)):
        assert a.shape == b.shape and a.stride() == b.stride()
        assert ember.allclose(a, b, rtol=1e-5, atol=atol, equal_nan=True)
    return got, got[0].source.split("def call(")[1].split("def call_traced(")[0]


def test_softmax_ends_its_kernel(kernel_backend):
    def f(x):
        return (x * 2 - 1).softmax(-1), (x.tanh() * 4).log_softmax(-1), (x + 1).softmax(0)
    x = ember.randn(20, 40)        # within config.fuse_softmax_max_numel
    x[2, 3] = float("nan")
    x[4] = -float("inf")
    got, body = _compiled_equals_eager(f, x, atol=1e-6)
    if kernel_backend == "numba" and compile_fx.runtime.have_numba():
        # the two last-dim ones are row loops; softmax over dim 0 stays NumPy statements
        assert body.count("np.maximum.reduce") == 1 and "log_softmax.int" in body


def test_reduction_ends_its_kernel(kernel_backend):
    def f(x):
        return (x * 2 - 1).relu().sum(-1), (x.exp() + x).amax(-1, keepdim=True), (x * x).mean()
    x = ember.randn(30, 40)
    x[2, 3] = float("nan")
    got, body = _compiled_equals_eager(f, x, atol=1e-5)
    if kernel_backend == "numba" and compile_fx.runtime.have_numba():
        assert got[0].kernels == 3 and "np.add.reduce" not in body and "acc" in got[0].source
    else:
        assert body.count("reduce(") == 3
