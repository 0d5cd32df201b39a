"""ember.vmap against torch.vmap: in_dims / out_dims pytrees, kwargs, chunk_size, nesting, randomness,
vmap of grad (per-sample gradients, equal to a loop) and grad of vmap, the slow fallback's warning, and
torch's error texts."""
import importlib.util
import warnings

import numpy as np
import pytest
import torch
from harness import check, compare, same_error

import ember


def _pair(shape, rng, dtype=np.float32):
    a = rng.standard_normal(shape).astype(dtype)
    return ember.tensor(a), torch.tensor(a)


def grad_of(lib, f, argnums=0):
    """lib.func.grad where the library has it; else the same with autograd.grad."""
    if importlib.util.find_spec(lib.__name__ + ".func") is not None and hasattr(lib.func, "grad"):
        return lib.func.grad(f, argnums=argnums)

    def g(*args):
        args = list(args)
        ps = args[argnums]
        flat = isinstance(ps, (tuple, list))
        ps = tuple(p.detach().requires_grad_() for p in (ps if flat else (ps,)))
        args[argnums] = ps if flat else ps[0]
        with lib.enable_grad():
            gs = lib.autograd.grad(f(*args), ps)
        return gs if flat else gs[0]
    return g


# ---- in_dims, out_dims, kwargs, chunks, nesting ---------------------------------------------------
def test_in_dims_pytree_and_kwargs(rng):
    (ex, tx), (ey, ty), (ez, tz) = _pair((3, 4), rng), _pair((4, 3), rng), _pair((5,), rng)

    def f(lib, xs, d, scale=1.0):
        a, b = xs
        return (a * scale + d["z"].sum()).unsqueeze(-1) * b

    e = ember.vmap(lambda xs, d: f(ember, xs, d, scale=2.0), in_dims=((0, 1), {"z": None}))((ex, ey), {"z": ez})
    t = torch.vmap(lambda xs, d: f(torch, xs, d, scale=2.0), in_dims=((0, 1), {"z": None}))((tx, ty), {"z": tz})
    check(e, t)


@pytest.mark.parametrize("out_dims", [0, 1, -1, (0, 1), (1, None), (1, 0), {"a": 1, "b": 0}])
def test_out_dims(rng, out_dims):
    (ex, tx), (ew, tw) = _pair((3, 4), rng), _pair((2,), rng)
    if out_dims in (0, 1, -1):
        compare(lambda L, x: L.vmap(lambda v: v.exp(), out_dims=out_dims)(x), [ex], [tx])
    elif isinstance(out_dims, dict):
        compare(lambda L, x, w: L.vmap(lambda v: {"a": v.exp(), "b": w * 2}, out_dims=out_dims)(x), [ex, ew], [tx, tw])
    else:
        # an unbatched output is expanded at its out_dim as torch does it (out_dim 1 of a (2,) fails)
        compare(lambda L, x, w: L.vmap(lambda v: (v.exp(), w * 2), out_dims=out_dims)(x), [ex, ew], [tx, tw])


def test_negative_in_dim_and_unbatched_output(rng):
    (ex, tx), (ew, tw) = _pair((4, 3), rng), _pair((5,), rng)
    check(ember.vmap(lambda v: v.sum(), in_dims=-1)(ex), torch.vmap(lambda v: v.sum(), in_dims=-1)(tx))
    # an output that does not depend on the batch comes back expanded
    check(ember.vmap(lambda v: ew * 2, in_dims=-1)(ex), torch.vmap(lambda v: tw * 2, in_dims=-1)(tx))


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 100])
def test_chunk_size(rng, chunk_size):
    (ex, tx), (ew, tw) = _pair((5, 3), rng), _pair((3, 2), rng)
    e = ember.vmap(lambda v, w: (v @ w, v.sum()), in_dims=(0, None), chunk_size=chunk_size)(ex, ew)
    t = torch.vmap(lambda v, w: (v @ w, v.sum()), in_dims=(0, None), chunk_size=chunk_size)(tx, tw)
    check(e, t)


def test_nested(rng):
    (ex, tx), (ey, ty) = _pair((2, 3, 4), rng), _pair((3, 4, 5), rng)

    def f(lib):
        inner = lib.vmap(lambda a, b: (a @ b).relu().sum(0), in_dims=(0, 0))
        return lib.vmap(lambda a, b: inner(a, b), in_dims=(0, None))
    check(ember.vmap(ember.vmap(lambda v: v.softmax(-1)))(ex), torch.vmap(torch.vmap(lambda v: v.softmax(-1)))(tx))
    check(f(ember)(ex, ey), f(torch)(tx, ty))
    # the inner vmap over the first dim of what the outer one sees, the outer over dim 1
    g = lambda lib: lib.vmap(lib.vmap(lambda v: v.cumsum(0) * v.max(), in_dims=1), in_dims=1)  # noqa: E731
    check(g(ember)(ex), g(torch)(tx))


def test_matmul_family_and_views(rng):
    (ea, ta), (eb, tb), (ec, tc) = _pair((3, 4, 5), rng), _pair((3, 5, 2), rng), _pair((3, 4), rng)
    (ev, tv), (em, tm) = _pair((3, 5), rng), _pair((5, 6), rng)
    cases = [
        (lambda L: lambda a, b: L.mm(a, b), (0, 0), (ea, eb), (ta, tb)),
        (lambda L: lambda a, b: a @ b, (0, None), (ea, em), (ta, tm)),
        (lambda L: lambda a, b: L.mv(a, b), (0, 0), (ea, ev), (ta, tv)),
        (lambda L: lambda a, b: L.dot(a, b), (0, 0), (ev, ev), (tv, tv)),
        (lambda L: lambda a, b: b @ a, (0, None), (ev, em.t()), (tv, tm.t())),
        (lambda L: lambda a, b: L.addmm(b, a, a.t(), beta=0.5, alpha=2), (0, 0), (ea, ea[:, :, :4]),
         (ta, ta[:, :, :4])),
        (lambda L: lambda a, b: L.outer(a, b), (0, 0), (ev, ec), (tv, tc)),
        (lambda L: lambda a, b: a.view(20).reshape(2, 10).t().expand(3, 10, 2).permute(2, 0, 1)[1:, :, 2:5] + b,
         (0, None), (ea, ec[0, :3]), (ta, tc[0, :3])),
        (lambda L: lambda a, b: L.cat([a, b.unsqueeze(0).expand(2, 5)], 0).flip(0).roll(1, 1), (None, 0),
         (ea[0], ev), (ta[0], tv)),
        (lambda L: lambda a, b: a[[0, 2]].gather(1, b), (0, 0), (ea, (ea.abs() * 2).long()[:, :2] % 5),
         (ta, (ta.abs() * 2).long()[:, :2] % 5)),
    ]
    for make, in_dims, eargs, targs in cases:
        check(ember.vmap(make(ember), in_dims=in_dims)(*eargs), torch.vmap(make(torch), in_dims=in_dims)(*targs),
              atol=1e-5, rtol=1e-5)


# ---- vmap of grad: per-sample gradients -----------------------------------------------------------
def _mlp(lib, rng):
    F = lib.nn.functional
    params = tuple(lib.tensor(rng.standard_normal(s).astype(np.float32) * 0.3)
                   for s in [(16, 8), (16,), (4, 16), (4,)])

    def loss(ps, x, y):
        w1, b1, w2, b2 = ps
        h = F.relu(F.linear(x, w1, b1))
        return F.cross_entropy(F.linear(h, w2, b2).unsqueeze(0), y.unsqueeze(0))
    return params, loss


def _cnn(lib, rng):
    F = lib.nn.functional
    params = tuple(lib.tensor(rng.standard_normal(s).astype(np.float32) * 0.3)
                   for s in [(4, 1, 3, 3), (4,), (6, 4, 3, 3), (6,), (3, 36), (3,)])

    def loss(ps, x, y):
        c1, b1, c2, b2, w, b = ps
        h = F.max_pool2d(F.relu(F.conv2d(x.unsqueeze(0), c1, b1, padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, c2, b2, padding=1)), 2)
        return F.cross_entropy(F.linear(h.flatten(1), w, b), y.unsqueeze(0))
    return params, loss


@pytest.mark.parametrize("model,xshape", [(_mlp, (6, 8)), (_cnn, (5, 1, 8, 12))])
def test_per_sample_grads_equal_loop_and_torch_func(model, xshape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xshape).astype(np.float32)
    y = rng.integers(0, 3, xshape[0])
    out = {}
    for lib in (ember, torch):
        params, loss = model(lib, np.random.default_rng(1))
        g = grad_of(lib, loss)
        ex, ey = lib.tensor(x), lib.tensor(y)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            per = lib.vmap(g, in_dims=(None, 0, 0))(params, ex, ey)
        if lib is ember:  # conv, pooling, linear, cross_entropy and their backward all have rules
            assert not [m for m in w if "performance drop" in str(m.message)], [str(m.message) for m in w]
        loop = [g(params, ex[i], ey[i]) for i in range(len(x))]
        for k, p in enumerate(per):
            assert tuple(p.shape) == (len(x),) + tuple(params[k].shape)
            ref = lib.stack([lg[k] for lg in loop])
            np.testing.assert_allclose(np.asarray(p.detach()), np.asarray(ref.detach()), rtol=1e-4, atol=1e-5)
        out[lib.__name__] = per
    for e, t in zip(out["ember"], out["torch"]):
        check(e, t, atol=1e-4, rtol=1e-4)


def test_vmap_of_grad_wrt_batched_input(rng):
    (ex, tx) = _pair((4, 3), rng)
    f = lambda lib: lambda v: (v.sin() * v).sum() + v.norm()  # noqa: E731
    check(ember.vmap(grad_of(ember, f(ember)))(ex), torch.vmap(torch.func.grad(f(torch)))(tx), atol=1e-5, rtol=1e-5)
    # vmap(vmap(grad))
    (ey, ty) = _pair((2, 4, 3), rng)
    check(ember.vmap(ember.vmap(grad_of(ember, f(ember))))(ey),
          torch.vmap(torch.vmap(torch.func.grad(f(torch))))(ty), atol=1e-5, rtol=1e-5)


# ---- grad of vmap ---------------------------------------------------------------------------------
def test_backward_through_vmap(rng):
    (ex, tx), (ew, tw) = _pair((4, 3), rng), _pair((3,), rng)
    ex.requires_grad_(), tx.requires_grad_(), ew.requires_grad_(), tw.requires_grad_()
    for lib, x, w in ((ember, ex, ew), (torch, tx, tw)):
        u = w * 2  # a captured tensor with history, and a captured leaf below
        out = lib.vmap(lambda v: ((v.exp() * u).sum() + (v * w).mean(), v.t()), out_dims=(0, 1))(x)
        (out[0].sum() + out[1].pow(2).sum() + w.sum()).backward()
    check(ex.grad, tx.grad, atol=1e-5, rtol=1e-5)
    check(ew.grad, tw.grad, atol=1e-5, rtol=1e-5)


def test_grad_of_vmap_of_mm(rng):
    (ex, tx), (ew, tw) = _pair((5, 3), rng), _pair((3, 2), rng)

    def f(lib):
        return lambda w, x: lib.vmap(lambda v: (v @ w).tanh().sum(), in_dims=0)(x).sum()
    ge = grad_of(ember, f(ember))(ew, ex)
    gt = torch.func.grad(f(torch))(tw, tx)
    check(ge, gt, atol=1e-5, rtol=1e-5)


# ---- randomness ---------------------------------------------------------------------------------
def test_randomness_modes(rng):
    ex, _ = _pair((4, 3), rng)
    d = ember.vmap(lambda v: ember.rand(5) + v.sum() * 0, randomness="different")(ex)
    assert tuple(d.shape) == (4, 5) and not bool((d[0] == d[1]).all())
    s = ember.vmap(lambda v: ember.rand(5) + v.sum() * 0, randomness="same")(ex)
    assert tuple(s.shape) == (4, 5) and bool((s[0] == s[1]).all())
    s = ember.vmap(lambda v: ember.rand_like(v), randomness="same")(ex)
    assert bool((s[0] == s[3]).all())
    d = ember.vmap(lambda v: ember.nn.functional.dropout(v + 1, 0.5), randomness="different")(ember.ones(8, 50))
    assert not bool((d[0] == d[1]).all())
    same = ember.vmap(lambda v: ember.nn.functional.dropout(v + 1, 0.5), randomness="same")(ember.ones(8, 50))
    assert bool((same[0] == same[7]).all())


@pytest.mark.parametrize("case", ["rand", "randn_like", "dropout", "bernoulli", "normal_"])
def test_randomness_error(rng, case):
    calls = {"rand": lambda lib, v: lib.rand(3), "randn_like": lambda lib, v: lib.randn_like(v),
             "dropout": lambda lib, v: lib.nn.functional.dropout(v, 0.5),
             "bernoulli": lambda lib, v: lib.bernoulli(v.sigmoid()), "normal_": lambda lib, v: v.clone().normal_()}
    ex, tx = _pair((3, 4), rng)
    fn = calls[case]
    same_error(lambda lib: lib.vmap(lambda v: fn(lib, v))(tx if lib is torch else ex))


def test_different_inplace_randomness_on_unbatched(rng):
    ex, tx = _pair((3, 4), rng)
    same_error(lambda lib: lib.vmap(lambda v: lib.zeros(4).normal_(), randomness="different")(
        tx if lib is torch else ex))


# ---- the slow fallback ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["multi_margin_loss", "soft_margin_loss"])
def test_fallback_warns_once_in_torch_words(rng, name):
    from ember._functorch import batching
    batching._WARNED.discard(f"aten::{name}")
    (ex, tx) = _pair((3, 4, 5), rng)
    et = ember.tensor(rng.integers(0, 5, (3, 4)))
    tt = torch.tensor(et.numpy())
    calls = {"multi_margin_loss": lambda L, x, t: L.nn.functional.multi_margin_loss(x, t),
             "soft_margin_loss": lambda L, x, t: L.nn.functional.soft_margin_loss(x, x.sign())}
    fn = calls[name]
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        t = torch.vmap(lambda x, y: fn(torch, x, y))(tx, tt)
    with warnings.catch_warnings(record=True) as ew:
        warnings.simplefilter("always")
        e = ember.vmap(lambda x, y: fn(ember, x, y))(ex, et)
        ember.vmap(lambda x, y: fn(ember, x, y))(ex, et)
    check(e, t, atol=1e-5, rtol=1e-5)
    tmsg = [str(w.message) for w in tw if "performance drop" in str(w.message)]
    emsg = [str(w.message) for w in ew if "performance drop" in str(w.message)]
    assert len(emsg) == 1, emsg  # once per op
    assert tmsg and tmsg[0].startswith(emsg[0]), (tmsg, emsg)
    assert f"aten::{name}." in emsg[0]


# ---- errors ---------------------------------------------------------------------------------------
ERRORS = {
    "item": lambda L, x: L.vmap(lambda v: v.sum().item())(x),
    "float": lambda L, x: L.vmap(lambda v: float(v.sum()))(x),
    "control_flow": lambda L, x: L.vmap(lambda v: v if v.sum() > 0 else -v)(x),
    "tolist": lambda L, x: L.vmap(lambda v: v.tolist())(x),
    "inplace_arith": lambda L, x: L.vmap(lambda v: L.zeros(4).mul_(v))(x),
    "inplace_copy": lambda L, x: L.vmap(lambda v: L.zeros(4).copy_(v))(x),
    "inplace_add_shape": lambda L, x: L.vmap(lambda v: L.zeros(4).add_(v))(x),
    "inplace_index_copy": lambda L, x: L.vmap(lambda v: L.zeros(4).index_copy_(0, L.tensor([0]), v[:1]))(x),
    "in_dim_range": lambda L, x: L.vmap(lambda v: v, in_dims=2)(x),
    "in_dims_type": lambda L, x: L.vmap(lambda v: v, in_dims=[0])(x),
    "in_dims_none": lambda L, x: L.vmap(lambda v: v, in_dims=None)(x),
    "in_dims_structure": lambda L, x: L.vmap(lambda v: v, in_dims=(0, 0))(x),
    "in_dim_non_tensor": lambda L, x: L.vmap(lambda v, n: v * n, in_dims=(0, 0))(x, 3),
    "no_batched": lambda L, x: L.vmap(lambda v: v, in_dims=(None,))(x),
    "sizes": lambda L, x: L.vmap(lambda a, b: a + b)(x, L.ones(5, 4)),
    "no_inputs": lambda L, x: L.vmap(lambda: x)(),
    "zero_dim_input": lambda L, x: L.vmap(lambda v: v)(x.sum()),
    "non_tensor_output": lambda L, x: L.vmap(lambda v: 3)(x),
    "batched_out_dims_none": lambda L, x: L.vmap(lambda v: v, out_dims=None)(x),
    "out_dims_structure": lambda L, x: L.vmap(lambda v: v, out_dims=(0, 0))(x),
    "out_dims_type": lambda L, x: L.vmap(lambda v: v, out_dims="a")(x),
    "out_dim_range": lambda L, x: L.vmap(lambda v: v, out_dims=3)(x),
    "randomness_arg": lambda L, x: L.vmap(lambda v: v, randomness="foo"),
    "chunk_size": lambda L, x: L.vmap(lambda v: v, chunk_size=0),
    "data_ptr": lambda L, x: L.vmap(lambda v: v.data_ptr())(x),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(rng, case):
    ex, tx = _pair((3, 4), rng)
    fn = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(lambda lib: fn(lib, tx if lib is torch else ex))


def test_batched_tensor_repr_and_metadata(rng):
    ex, tx = _pair((3, 4), rng)
    seen = {}

    def f(v):
        seen["repr"] = repr(v)
        seen["meta"] = (tuple(v.shape), v.dtype, v.dim(), v.stride())
        return v
    ember.vmap(f, in_dims=1)(ex)
    assert seen["repr"].startswith("BatchedTensor(lvl=") and "bdim=1" in seen["repr"]
    assert seen["meta"] == ((3,), ember.float32, 1, (4,))
    from ember._functorch.batched import get_unwrapped, is_batchedtensor
    assert not is_batchedtensor(ember.vmap(lambda v: v)(ex))
    assert get_unwrapped(ex) is ex


# ---- views and in-place ops on batched tensors, under autograd -----------------------------------
def _inplace_through_views(L):
    def f(v):
        c = v.clone()
        c[:2].mul_(v[2:4])      # an in-place op through a view: CopySlices on the base
        d = c[1:4]
        c[4] = v[0] * 3         # the base rewritten under a live view: d's history is replayed
        return (c * c).sum() + (d * d).sum()
    return f


def test_inplace_through_views_backward(rng):
    (ex, tx) = _pair((3, 5), rng)
    ex.requires_grad_(), tx.requires_grad_()
    for L, x in ((ember, ex), (torch, tx)):
        L.vmap(_inplace_through_views(L))(x).sum().backward()
    check(ex.grad, tx.grad, atol=1e-5, rtol=1e-5)
    e = ember.vmap(grad_of(ember, _inplace_through_views(ember)))(ex.detach())
    t = torch.vmap(torch.func.grad(_inplace_through_views(torch)))(tx.detach())
    check(e, t, atol=1e-5, rtol=1e-5)


def test_view_of_batched_tensor_shares_base(rng):
    ex, _ = _pair((3, 5), rng)

    def f(v):
        c = v.clone()
        s = c[1:3]
        assert s._base is c and s._version == c._version
        s.mul_(0)
        assert s._version == c._version
        return c
    out = ember.vmap(f)(ex)
    assert bool((out[:, 1:3] == 0).all()) and bool((out[:, 0] == ex[:, 0]).all())


# ---- forward AD through vmap and vmap of backward formulas ----------------------------------------
def _has(mod):
    return importlib.util.find_spec(mod) is not None


@pytest.mark.skipif(not _has("ember.autograd.forward_ad"), reason="ember.autograd.forward_ad is not there")
def test_forward_ad_through_vmap(rng):
    (ew, tw), (ex, tx), (ev, tv) = _pair((3, 5), rng), _pair((5,), rng), _pair((5,), rng)
    res = {}
    for L, w, x, v in ((ember, ew, ex, ev), (torch, tw, tx, tv)):
        fwAD = L.autograd.forward_ad
        with fwAD.dual_level():
            xd = fwAD.make_dual(x, v)
            # a captured dual tensor, and a batched one
            out = L.vmap(lambda r: (r * xd.sin())[1:4].sum() + (r * xd).norm())(w)
            wd = fwAD.make_dual(w, w.cos())
            out2 = L.vmap(lambda r, s: (r.exp() * s)[:3], in_dims=(0, None))(wd, xd)
            res[L.__name__] = [fwAD.unpack_dual(o) for o in (out, out2)]
    for e, t in zip(res["ember"], res["torch"]):
        check(e.primal, t.primal, atol=1e-5, rtol=1e-5)
        check(e.tangent, t.tangent, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not _has("ember.func"), reason="ember.func is not there")
@pytest.mark.parametrize("case", ["slice", "index", "cumsum"])
def test_hessian_and_jacrev_through_the_batching_rules(rng, case):
    fns = {"slice": lambda x: x[:3].sum() * x.sum() + (x[1:4] * x[:3]).sum(),
           "index": lambda x: x[1] * x[[0, 2]].prod() + x.max(),
           "cumsum": lambda x: (x.sin() * x[:3].sum() + x.norm()).cumsum(0)[1:4].sum()}
    f = fns[case]
    ex, tx = _pair((5,), rng)
    for name in ("jacrev", "hessian"):
        g = (lambda L: L.func.jacrev(lambda x: f(x) * x)) if name == "jacrev" else (lambda L: L.func.hessian(f))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check(g(ember)(ex), g(torch)(tx), atol=1e-4, rtol=1e-4)


def _tiny_lm(lib, rng):
    F = lib.nn.functional
    params = tuple(lib.tensor(rng.standard_normal(s).astype(np.float32) * 0.5)
                   for s in [(20, 16), (16,), (16,), (32, 16), (32,), (20, 32)])

    def loss(ps, x, y):
        emb, lw, lb, w1, b1, w2 = ps
        h = F.layer_norm(F.embedding(x.unsqueeze(0), emb, padding_idx=0), (16,), lw, lb)
        h = h + F.scaled_dot_product_attention(h, h, h, is_causal=True)
        logits = F.linear(F.gelu(F.linear(h, w1, b1)), w2)
        return F.cross_entropy(logits.reshape(-1, 20), y.reshape(-1))
    return params, loss


def test_per_sample_grads_of_a_tiny_language_model():
    rng = np.random.default_rng(0)
    toks, tgt = rng.integers(0, 20, (6, 5)), rng.integers(0, 20, (6, 5))
    toks[0, :2] = 0  # the padding index gets no gradient
    out = {}
    for lib in (ember, torch):
        params, loss = _tiny_lm(lib, np.random.default_rng(1))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out[lib.__name__] = lib.vmap(grad_of(lib, loss), in_dims=(None, 0, 0))(params, lib.tensor(toks),
                                                                                   lib.tensor(tgt))
        if lib is ember:  # every op on the way has a batching rule
            assert not [x for x in w if "performance drop" in str(x.message)], [str(x.message) for x in w]
    for e, t in zip(out["ember"], out["torch"]):
        check(e, t, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("training,stats", [(False, True), (True, False)])
def test_batch_norm_per_sample(rng, training, stats):
    x = rng.standard_normal((3, 4, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal(2).astype(np.float32)
    rm = rng.standard_normal(2).astype(np.float32)
    rv = np.abs(rm) + 0.5
    out = {}
    for L in (ember, torch):
        F = L.nn.functional

        def f(v, ww):
            return F.batch_norm(v, L.tensor(rm) if stats else None, L.tensor(rv) if stats else None, ww, ww * 0.5,
                                training=training)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = L.vmap(f, in_dims=(0, None))(L.tensor(x), L.tensor(w))
            g = L.vmap(grad_of(L, lambda ww, v: f(v, ww).pow(2).sum()), in_dims=(None, 0))(L.tensor(w), L.tensor(x))
        if L is ember:
            assert not [m for m in caught if "performance drop" in str(m.message)]
        out[L.__name__] = (y, g)
    check(out["ember"][0], out["torch"][0], atol=1e-5, rtol=1e-5)
    check(out["ember"][1], out["torch"][1], atol=1e-4, rtol=1e-5)


@pytest.mark.skipif(not _has("ember.func"), reason="ember.func is not there")
def test_grad_of_per_sample_gradient_norms(rng):
    (ex, tx), (ew, tw) = _pair((4, 3), rng), _pair((3,), rng)
    res = {}
    for L, x, w in ((ember, ex, ew), (torch, tx, tw)):
        def loss(w, xi, L=L):
            return (xi * w).sin().sum() ** 2

        def norms(w, X, L=L, loss=loss):
            return L.vmap(L.func.grad(loss), in_dims=(None, 0))(w, X).pow(2).sum()
        res[L.__name__] = L.func.grad(norms)(w, x)
    check(res["ember"], res["torch"], atol=1e-4, rtol=1e-5)
