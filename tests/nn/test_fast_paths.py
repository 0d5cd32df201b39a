"""The training-step fast paths against torch: float32 GELU (and its backward) without float64,
the float32 erf helper, the fused CPU attention kernel, nll_loss's all-valid path, and the
optimizers' in-place array updates (bit-equal to their Tensor path)."""
import math
import types

import numpy as np
import pytest
import torch

import ember
from ember.kernels.cpu import _special
from tests.harness import check, make_pair, same_error

EF, TF = ember.nn.functional, torch.nn.functional
TOL = {"float16": {"atol": 1e-5, "rtol": 1e-3}, "bfloat16": {"atol": 1e-5, "rtol": 1.6e-2}}


def pair_from(v, dtype):
    t = torch.tensor(np.asarray(v, np.float32)).to(getattr(torch, dtype)) if dtype in TOL \
        else torch.tensor(np.asarray(v, dtype))
    return ember.tensor(t.float().numpy() if dtype in TOL else t.numpy(),
                        dtype=getattr(ember, dtype)), t


def grid():
    # dense over the range where gelu changes, tails, tiny and subnormal magnitudes, specials
    # (not +inf: PyTorch's vectorised float32 gelu gives nan there, its scalar tail inf)
    v = np.concatenate([np.linspace(-12, 12, 4801), np.geomspace(1e-38, 1, 200),
                        -np.geomspace(1e-38, 1, 200), [0.0, -0.0, 1e-45, -1e-45, 30.0, -30.0,
                                                      1e4, -1e4, np.nan, -np.inf]])
    return v.astype(np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_values(dtype, approximate):
    e, t = pair_from(grid(), dtype)
    check(EF.gelu(e, approximate=approximate), TF.gelu(t, approximate=approximate),
          **TOL.get(dtype, {}))
    g = np.random.default_rng(0).standard_normal(grid().shape)
    eg, tg = pair_from(g, dtype)
    check(ember.ops.aten.gelu_backward(eg, e, approximate=approximate),
          torch.ops.aten.gelu_backward(tg, t, approximate=approximate), **TOL.get(dtype, {}))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "expanded"])
def test_gelu_layouts_and_blocks(rng, layout):
    # more elements than one block of the float32 kernel, in every layout, and the 0-d / empty cases
    e, t = make_pair((300, 260), "float32", rng, layout, -6, 6)
    check(EF.gelu(e), TF.gelu(t))
    eg, tg = make_pair((300, 260), "float32", rng, "contiguous")
    check(ember.ops.aten.gelu_backward(eg, e), torch.ops.aten.gelu_backward(tg, t))
    for shape in [(), (0,), (0, 3)]:
        e, t = make_pair(shape, "float32", rng)
        check(EF.gelu(e), TF.gelu(t))
        check(ember.ops.aten.gelu_backward(e, e), torch.ops.aten.gelu_backward(t, t))
    e = ember.tensor(np.float32(-1.5))
    check(EF.gelu(e), TF.gelu(torch.tensor(np.float32(-1.5))))


def test_gelu_grad_and_inplace(rng):
    e, t = make_pair((7, 9), "float32", rng, "contiguous", -5, 5)
    e.requires_grad_(), t.requires_grad_()
    EF.gelu(e).pow(2).sum().backward()
    TF.gelu(t).pow(2).sum().backward()
    check(e.grad, t.grad)
    e2, t2 = e.detach().clone(), t.detach().clone()
    assert EF.gelu(e2, approximate="none") is not e2
    ember.nn.GELU()(e2)
    check(EF.gelu(e2), TF.gelu(t2))
    same_error(lambda lib: lib.nn.functional.gelu(lib.ones(2), approximate="exact"))
    same_error(lambda lib: lib.nn.functional.gelu(lib.ones(2, dtype=lib.int64)))


def _ulps(got, exact):
    exact32 = exact.astype(np.float32)
    return np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact32)).astype(np.float64)


def test_float32_kernels_accuracy():
    x = np.concatenate([np.linspace(-6, 6, 24001), np.geomspace(1e-30, 1, 500)]).astype(np.float32)
    x = np.concatenate([x, -x])
    x64 = x.astype(np.float64)
    erf = np.array([math.erf(v) for v in x64.tolist()])
    assert _ulps(_special.erf_f32(x), erf).max() <= 4
    phi = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x64.tolist()])
    gelu = x64 * phi
    keep = np.abs(gelu) > 1e-30
    # the exp(-x*x/2) argument is rounded to float32, so the far left tail loses a few ulp more
    assert _ulps(_special.gelu_f32(x), gelu)[keep & (x64 > -3)].max() <= 8
    assert _ulps(_special.gelu_f32(x), gelu)[keep].max() <= 32
    dgelu = phi + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    got = _special.gelu_backward_f32(np.ones_like(x), x).astype(np.float64)
    assert np.abs(got - dgelu).max() < 3e-7
    assert got[x == 0].tolist() == [0.5] * int((x == 0).sum())
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45], np.float32)
    r = _special.erf_f32(special)
    assert np.isnan(r[0]) and r[1] == 1 and r[2] == -1 and r[3] == 0 and np.signbit(r[4])
    assert r[5] > 0


# ---- scaled_dot_product_attention's fused CPU kernel -------------------------------------------
SDPA_CASES = [
    ({"is_causal": True}, (2, 3, 6, 5), (2, 3, 6, 5)),
    ({}, (2, 3, 4, 5), (2, 3, 7, 5)),
    ({"scale": 0.3}, (1, 2, 4, 8), (1, 2, 4, 8)),
    ({"mask": "bool"}, (2, 3, 4, 5), (2, 3, 6, 5)),
    ({"mask": "bool4d"}, (2, 3, 4, 5), (2, 3, 6, 5)),
    ({"mask": "float"}, (2, 3, 4, 5), (2, 3, 6, 5)),
]


def _mask(kind, rng, L, S, dtype):
    if kind == "bool":
        m = rng.random((L, S)) > 0.4
        m[1] = False                       # a row with nothing to attend: zeros
        return m
    if kind == "bool4d":
        return rng.random((2, 1, L, S)) > 0.3
    return rng.standard_normal((L, S))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("case", range(len(SDPA_CASES)))
def test_sdpa_flash(rng, dtype, case):
    kw, qs, ks = SDPA_CASES[case]
    kw = dict(kw)
    tol = TOL.get(dtype, {})
    e_in, t_in = [], []
    for shape in (qs, ks, ks):
        e, t = make_pair(shape, dtype, rng)
        e_in.append(e.requires_grad_())
        t_in.append(t.detach().requires_grad_())
    if "mask" in kw:
        m = _mask(kw.pop("mask"), rng, qs[2], ks[2], dtype)
        if m.dtype != np.bool_:
            em, tm = make_pair(m.shape, dtype, rng)
        else:
            em, tm = ember.tensor(m), torch.tensor(m)
        kw_e, kw_t = dict(kw, attn_mask=em), dict(kw, attn_mask=tm)
    else:
        kw_e = kw_t = kw
    eo = EF.scaled_dot_product_attention(*e_in, **kw_e)
    to = TF.scaled_dot_product_attention(*t_in, **kw_t)
    check(eo, to, **tol)
    assert eo.grad_fn.name() == to.grad_fn.name()
    go = rng.standard_normal(tuple(to.shape))
    eg = ember.autograd.grad(eo, e_in, ember.tensor(go, dtype=eo.dtype))
    tg = torch.autograd.grad(to, t_in, torch.tensor(go, dtype=to.dtype))
    for a, b in zip(eg, tg):
        check(a, b, **({"atol": 2e-2, "rtol": 2e-2} if dtype == "bfloat16" else {}))


def test_sdpa_flash_no_double_backward(rng):
    def run(lib):
        q = lib.randn(1, 2, 3, 4, requires_grad=True)
        o = lib.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        g, = lib.autograd.grad(o.sum(), q, create_graph=True)
        g.sum().backward()
    same_error(run)


def test_sdpa_math_fallbacks(rng):
    # 3-D inputs, dropout and grouped-query attention keep the composite (PyTorch's math path)
    e, t = make_pair((3, 4, 5), "float32", rng)
    check(EF.scaled_dot_product_attention(e, e, e, is_causal=True),
          TF.scaled_dot_product_attention(t, t, t, is_causal=True))
    eq, tq = make_pair((1, 4, 3, 5), "float32", rng)
    ek, tk = make_pair((1, 2, 3, 5), "float32", rng)
    check(EF.scaled_dot_product_attention(eq, ek, ek, enable_gqa=True),
          TF.scaled_dot_product_attention(tq, tk, tk, enable_gqa=True))
    em = ember.zeros(3, 3, dtype=ember.float64)
    tm = torch.zeros(3, 3, dtype=torch.float64)
    same_error(lambda lib: lib.nn.functional.scaled_dot_product_attention(
        *(eq, eq, eq) if lib is ember else (tq, tq, tq), attn_mask=em if lib is ember else tm))


def test_sdpa_meta():
    q = ember.empty(2, 3, 4, 5, device="meta")
    o, lse = ember._scaled_dot_product_flash_attention_for_cpu(q, q, q, is_causal=True)
    assert o.shape == (2, 3, 4, 5) and lse.shape == (2, 3, 4) and o.device.type == "meta"


# ---- nll_loss / cross_entropy ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_paths(rng, dtype):
    e, t = make_pair((33, 7), dtype, rng)
    e.requires_grad_(), t.requires_grad_()
    y = rng.integers(0, 7, 33)
    for reduction in ("mean", "sum", "none"):
        for ignore in (-100, 3):           # 3 is among the targets: the general path
            el = EF.cross_entropy(e, ember.tensor(y), reduction=reduction, ignore_index=ignore)
            tl = TF.cross_entropy(t, torch.tensor(y), reduction=reduction, ignore_index=ignore)
            check(el, tl)
            ge = ember.autograd.grad(el.sum(), e)[0]
            gt = torch.autograd.grad(tl.sum(), t)[0]
            check(ge, gt)
    bad = y.copy()
    bad[5] = 7
    same_error(lambda lib: lib.nn.functional.cross_entropy(
        (e if lib is ember else t), lib.tensor(bad)))


# ---- optimizers: the array update equals the Tensor-op update bit for bit ----------------------------
def _functional_run(step_fn, dtype, grad_enabled):
    rng = np.random.default_rng(5)
    params = [ember.tensor(rng.standard_normal(s).astype(dtype)) for s in [(6, 5), (4,), (70, 3)]]
    grads = [[ember.tensor(rng.standard_normal(p.shape).astype(dtype)) for p in params]
             for _ in range(4)]
    state = {}
    with ember.set_grad_enabled(grad_enabled):
        for i, gs in enumerate(grads):
            step_fn(params, gs, state, i)
    return [p.numpy().copy() for p in params]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
                                {"momentum": 0.5, "dampening": 0.2, "maximize": True},
                                {"weight_decay": 1}])
def test_sgd_array_path_matches_tensor_path(dtype, kw):
    from ember.optim.sgd import sgd
    full = {"momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False, "maximize": False}
    full.update(kw)

    def step(params, grads, state, i):
        bufs = state.setdefault("bufs", [None] * len(params))
        sgd(params, grads, bufs, lr=0.05, **full)
    assert all(np.array_equal(a, b) for a, b in zip(_functional_run(step, dtype, False),
                                                    _functional_run(step, dtype, True)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{"weight_decay": 0.1, "decoupled_weight_decay": True},
                                {"weight_decay": 0.05, "maximize": True}, {}])
def test_adam_array_path_matches_tensor_path(dtype, kw):
    from ember.optim.adam import adam
    full = {"weight_decay": 0, "maximize": False, "decoupled_weight_decay": False}
    full.update(kw)

    def step(params, grads, state, i):
        if not state:
            state["m"] = [ember.zeros_like(p) for p in params]
            state["v"] = [ember.zeros_like(p) for p in params]
            state["s"] = [ember.tensor(0.0) for _ in params]
        adam(params, grads, state["m"], state["v"], [], state["s"], amsgrad=False, beta1=0.9,
             beta2=0.999, lr=0.01, eps=1e-8, **full)
    assert all(np.array_equal(a, b) for a, b in zip(_functional_run(step, dtype, False),
                                                    _functional_run(step, dtype, True)))


@pytest.mark.parametrize("name", ["SGD", "AdamW"])
def test_optimizer_steps_match_torch(name):
    rng = np.random.default_rng(2)
    init = [rng.standard_normal(s).astype(np.float32) for s in [(8, 6), (6,)]]
    out = []
    for lib in (ember, torch):
        ps = [lib.nn.Parameter(lib.tensor(a.copy())) for a in init]
        opt = (lib.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01) if name == "SGD"
               else lib.optim.AdamW(ps, lr=0.01))
        r = np.random.default_rng(3)
        for _ in range(5):
            for p in ps:
                p.grad = lib.tensor(r.standard_normal(tuple(p.shape)).astype(np.float32))
            opt.step()
        out.append([p.detach() for p in ps])
    for a, b in zip(*out):
        check(a, b)


def test_sdpa_flash_bad_input():
    """The flash CPU op's own checks, with torch's messages (not a NumPy error)."""
    def o(L, dt=None, sh=(1, 2, 3, 4)):
        return L.ones(*sh, dtype=dt or L.float32)

    def f(L):
        return L._scaled_dot_product_flash_attention_for_cpu

    cases = [lambda L: f(L)(o(L, sh=(2, 3, 4)), o(L, sh=(2, 3, 4)), o(L, sh=(2, 3, 4))),
             lambda L: f(L)(o(L), o(L, sh=(1, 2, 3, 5)), o(L)),
             lambda L: f(L)(o(L), o(L), o(L, L.float64)),
             lambda L: f(L)(o(L, L.int64), o(L, L.int64), o(L, L.int64)),
             lambda L: f(L)(o(L), o(L), o(L), 0.5),
             lambda L: f(L)(o(L), o(L), o(L), attn_mask=L.ones(3, 3, dtype=L.int32))]
    for case in cases:
        same_error(case)
    meta = types.SimpleNamespace(  # ember with every factory on the meta device
        ones=lambda *s, dtype=None: ember.ones(*s, dtype=dtype, device="meta"),
        _scaled_dot_product_flash_attention_for_cpu=ember._scaled_dot_product_flash_attention_for_cpu,
        float32=ember.float32, float64=ember.float64, int64=ember.int64, int32=ember.int32)
    for case in cases:  # the meta kernel runs the same checks
        with pytest.raises(RuntimeError, match="flash_attention|expected scalar type"):
            case(meta)
