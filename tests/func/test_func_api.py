"""ember.func against torch.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize,
functional_call and stack_module_state on small functions and an MLP; jacrev / jacfwd / hessian
against autograd.functional.jacobian / hessian; torch's error texts."""
import warnings

import numpy as np
import pytest
import torch
import torch.func as tf
from harness import check, same_error

import ember
import ember.func as ef

F64 = {ember: ember.float64, torch: torch.float64}


def pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a, dtype=ember.float64), torch.tensor(a, dtype=torch.float64)


def f_scalar(L, x):
    return (x.sin() * x).sum() + (x ** 2).mean()


def f_vec(L, x):
    return L.tanh(x) * x.cos()


def f_two(L, x, y):
    return (x.exp() * y).sum() + (x @ y.reshape(-1, 1)).sum() * 0 + (x * y).pow(2).sum()


def f_tree(L, params, x):
    return (L.tanh(x @ params["w"] + params["b"]) ** 2).sum()


def mlp_params(L, seed=0):
    rng = np.random.default_rng(seed)
    return {k: L.tensor(rng.standard_normal(s) * 0.5, dtype=F64[L])
            for k, s in (("w1", (5, 8)), ("b1", (8,)), ("w2", (8, 3)), ("b2", (3,)))}


def mlp(L, p, x):
    h = L.tanh(x @ p["w1"] + p["b1"])
    return L.nn.functional.softplus(h @ p["w2"] + p["b2"])


def mlp_loss(L, p, x):
    return mlp(L, p, x).pow(2).sum()


def same(e, e2):
    """Two ember results agree (the second one as the oracle, through torch)."""
    check(e, torch.from_numpy(e2.detach().numpy().copy()))


def test_grad_and_value():
    x = pair((3, 4))
    e = ef.grad(lambda x: f_scalar(ember, x))(x[0])
    t = tf.grad(lambda x: f_scalar(torch, x))(x[1])
    check(e, t)
    (eg, ev), (tg, tv) = (ef.grad_and_value(lambda x: f_scalar(ember, x))(x[0]),
                          tf.grad_and_value(lambda x: f_scalar(torch, x))(x[1]))
    check(eg, tg)
    check(ev, tv)


def test_grad_argnums_and_aux():
    x, y = pair((4,), 1), pair((4,), 2)
    for argnums in (0, 1, (0, 1), (1,), -1):
        e = ef.grad(lambda a, b: f_two(ember, a, b), argnums=argnums)(x[0], y[0])
        t = tf.grad(lambda a, b: f_two(torch, a, b), argnums=argnums)(x[1], y[1])
        check(e, t)

    def aux(L):
        return lambda a: ((a * a).sum(), {"double": a * 2, "sum": a.sum()})
    e, ea = ef.grad(aux(ember), has_aux=True)(x[0])
    t, ta = tf.grad(aux(torch), has_aux=True)(x[1])
    check(e, t)
    check(ea, ta)
    xs = {ember: x[0], torch: x[1]}
    F = {ember: ef, torch: tf}
    same_error(lambda L: F[L].grad(lambda a: ((a * a).sum(), {"n": 3}), has_aux=True)(xs[L]))
    (eg, (ev, ea)), (tg, (tv, ta)) = (ef.grad_and_value(aux(ember), has_aux=True)(x[0]),
                                      tf.grad_and_value(aux(torch), has_aux=True)(x[1]))
    check(eg, tg)
    check(ev, tv)


def test_grad_pytree_mlp():
    ep, tp = mlp_params(ember), mlp_params(torch)
    x = pair((6, 5), 3)
    e = ef.grad(lambda p, x: mlp_loss(ember, p, x))(ep, x[0])
    t = tf.grad(lambda p, x: mlp_loss(torch, p, x))(tp, x[1])
    assert set(e) == set(t)
    for k in t:
        check(e[k], t[k])


def test_nested_grad():
    x = pair((3,), 4)
    e = ef.grad(lambda a: ef.grad(lambda b: (b.sin() ** 3).sum())(a).sum())(x[0])
    t = tf.grad(lambda a: tf.grad(lambda b: (b.sin() ** 3).sum())(a).sum())(x[1])
    check(e, t)


def test_vjp():
    x = pair((3, 4), 5)
    ct = pair((3, 4), 6)
    eo, efn = ef.vjp(lambda a: f_vec(ember, a), x[0])
    to, tfn = tf.vjp(lambda a: f_vec(torch, a), x[1])
    check(eo, to)
    check(efn(ct[0]), tfn(ct[1]))
    # several primals and outputs, and aux
    y = pair((4,), 7)

    def g(L):
        return lambda a, b: (((a * b).sum(1), a.exp()), b.sum())
    eo, efn, ea = ef.vjp(g(ember), x[0], y[0], has_aux=True)
    to, tfn, ta = tf.vjp(g(torch), x[1], y[1], has_aux=True)
    check(list(eo), list(to))
    check(ea, ta)
    c1, c2 = pair((3,), 8), pair((3, 4), 9)
    check(list(efn((c1[0], c2[0]))), list(tfn((c1[1], c2[1]))))


def test_jvp_and_linearize():
    x, v = pair((3, 4), 10), pair((3, 4), 11)
    eo, et = ef.jvp(lambda a: f_vec(ember, a), (x[0],), (v[0],))
    to, tt = tf.jvp(lambda a: f_vec(torch, a), (x[1],), (v[1],))
    check(eo, to)
    check(et, tt)
    y, w = pair((4,), 12), pair((4,), 13)
    eo, et = ef.jvp(lambda a, b: {"s": (a * b).sum(1), "e": a.exp()}, (x[0], y[0]), (v[0], w[0]))
    to, tt = tf.jvp(lambda a, b: {"s": (a * b).sum(1), "e": a.exp()}, (x[1], y[1]), (v[1], w[1]))
    for k in ("s", "e"):
        check(eo[k], to[k])
        check(et[k], tt[k])
    eo, efn = ef.linearize(lambda a: f_vec(ember, a), x[0])
    to, tfn = tf.linearize(lambda a: f_vec(torch, a), x[1])
    check(eo, to)
    check(efn(v[0]), tfn(v[1]))


def test_jvp_mlp():
    ep, tp = mlp_params(ember), mlp_params(torch)
    x, v = pair((6, 5), 14), pair((6, 5), 15)
    eo, et = ef.jvp(lambda a: mlp(ember, ep, a), (x[0],), (v[0],))
    to, tt = tf.jvp(lambda a: mlp(torch, tp, a), (x[1],), (v[1],))
    check(eo, to)
    check(et, tt)


@pytest.mark.parametrize("fn", [f_vec, lambda L, x: (x @ x.T).sum(0), lambda L, x: L.softmax(x, 1).log1p()])
def test_jacrev_jacfwd_match_torch_and_functional(fn):
    x = pair((3, 4), 16)
    ejr = ef.jacrev(lambda a: fn(ember, a))(x[0])
    ejf = ef.jacfwd(lambda a: fn(ember, a))(x[0])
    tj = tf.jacrev(lambda a: fn(torch, a))(x[1])
    check(ejr, tj)
    check(ejf, tj)
    same(ejr, ember.autograd.functional.jacobian(lambda a: fn(ember, a), x[0]))
    check(ejf, tf.jacfwd(lambda a: fn(torch, a))(x[1]))


def test_jacobians_argnums_and_mlp():
    x, y = pair((4,), 17), pair((4,), 18)

    def g(L):
        return lambda a, b: (a.sin() * b, (a * b).sum())
    for api_e, api_t in ((ef.jacrev, tf.jacrev), (ef.jacfwd, tf.jacfwd)):
        e = api_e(g(ember), argnums=(0, 1))(x[0], y[0])
        t = api_t(g(torch), argnums=(0, 1))(x[1], y[1])
        check([list(p) for p in e], [list(p) for p in t])
    ep, tp = mlp_params(ember), mlp_params(torch)
    xx = pair((2, 5), 19)
    e = ef.jacrev(lambda p: mlp(ember, p, xx[0]))(ep)
    t = tf.jacrev(lambda p: mlp(torch, p, xx[1]))(tp)
    for k in t:
        check(e[k], t[k])
    e = ef.jacfwd(lambda a: mlp(ember, ep, a))(xx[0])
    check(e, tf.jacfwd(lambda a: mlp(torch, tp, a))(xx[1]))
    same(e, ember.autograd.functional.jacobian(lambda a: mlp(ember, ep, a), xx[0]))


def test_hessian():
    x = pair((5,), 20)
    e = ef.hessian(lambda a: f_scalar(ember, a))(x[0])
    t = tf.hessian(lambda a: f_scalar(torch, a))(x[1])
    check(e, t)
    same(e, ember.autograd.functional.hessian(lambda a: f_scalar(ember, a), x[0]))
    ep, tp = mlp_params(ember), mlp_params(torch)
    xx = pair((3, 5), 21)
    e = ef.hessian(lambda a: mlp_loss(ember, ep, a))(xx[0])
    t = tf.hessian(lambda a: mlp_loss(torch, tp, a))(xx[1])
    check(e, t)
    same(e, ember.autograd.functional.hessian(lambda a: mlp_loss(ember, ep, a), xx[0]))


def _mlp_module(L, seed=0):
    L.manual_seed(seed)
    m = L.nn.Sequential(L.nn.Linear(5, 8), L.nn.Tanh(), L.nn.Linear(8, 3)).double()
    rng = np.random.default_rng(seed)
    with L.no_grad():
        for p in m.parameters():
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape)) * 0.5, dtype=F64[L]))
    return m


def test_functional_call_and_grad():
    em, tm = _mlp_module(ember), _mlp_module(torch)
    ep = {k: v.detach() * 2 for k, v in em.named_parameters()}
    tp = {k: v.detach() * 2 for k, v in tm.named_parameters()}
    x = pair((4, 5), 22)
    check(ef.functional_call(em, ep, (x[0],)), tf.functional_call(tm, tp, (x[1],)))
    check(ef.functional_call(em, ep, x[0]), tf.functional_call(tm, tp, x[1]))
    # the module's own parameters are back afterwards
    check(em(x[0]), tm(x[1]))

    def loss(L, F, m):
        return lambda p, x: F.functional_call(m, p, (x,)).pow(2).sum()
    eg = ef.grad(loss(ember, ef, em))(ep, x[0])
    tg = tf.grad(loss(torch, tf, tm))(tp, x[1])
    for k in tg:
        check(eg[k], tg[k])


def test_stack_module_state_ensemble():
    ems = [_mlp_module(ember, s) for s in range(3)]
    tms = [_mlp_module(torch, s) for s in range(3)]
    ep, eb = ef.stack_module_state(ems)
    tp, tb = tf.stack_module_state(tms)
    assert set(ep) == set(tp) and eb == {} and tb == {}
    for k in tp:
        check(ep[k], tp[k], check_requires_grad=True)
    x = pair((4, 5), 23)
    base_e, base_t = _mlp_module(ember, 9), _mlp_module(torch, 9)
    e = ef.vmap(lambda p: ef.functional_call(base_e, p, (x[0],)))(ep)
    t = tf.vmap(lambda p: tf.functional_call(base_t, p, (x[1],)))(tp)
    check(e, t)


def test_errors():
    x = pair((3,), 24)
    xs = {ember: x[0], torch: x[1]}
    F = {ember: ef, torch: tf}
    same_error(lambda L: F[L].grad(lambda a: a)(xs[L]))
    same_error(lambda L: F[L].grad(lambda a: 1.0)(xs[L]))
    same_error(lambda L: F[L].grad(lambda a: a.sum(), has_aux=True)(xs[L]))
    same_error(lambda L: F[L].grad(lambda a: a.sum(), argnums=2)(xs[L]))
    same_error(lambda L: F[L].grad(lambda a: a.sum(), argnums=())(xs[L]))
    same_error(lambda L: F[L].grad(lambda a: a.sum(), argnums=1.0)(xs[L]))
    same_error(lambda L: F[L].jacrev(lambda a: a, argnums=(0, 0))(xs[L]))
    same_error(lambda L: F[L].jvp(lambda a: a, xs[L], xs[L]))
    same_error(lambda L: F[L].jvp(lambda a: 1, (xs[L],), (xs[L],)))
    same_error(lambda L: F[L].vjp(lambda a: 1.0, xs[L]))
    same_error(lambda L: F[L].stack_module_state([]))
    same_error(lambda L: F[L].stack_module_state([L.nn.Linear(2, 2), L.nn.Linear(2, 2).eval()]))
    same_error(lambda L: F[L].stack_module_state([L.nn.Linear(2, 2), L.nn.ReLU()]))


def test_functionalize_and_vmap_reexport():
    from ember._functorch.apis import vmap
    assert ef.vmap is vmap
    x = pair((3,), 25)
    check(ef.functionalize(lambda a: a.clone().add_(1))(x[0]), tf.functionalize(lambda a: a.clone().add_(1))(x[1]))


@pytest.mark.parametrize("src", ["a.exp() * a.sin()", "a.exp() * a.exp()", "a.tanh().pow(2) * a", "a.sigmoid().log()",
                                 "(a.reshape(2, 2) @ a.reshape(2, 2)).softmax(0).sum() * a"])
def test_forward_over_reverse(src):
    """jvp of grad: backward formulas run on dual tensors (saved outputs and accumulated gradients
    keep their tangents)."""
    x, v = pair((4,), 26), pair((4,), 27)
    fn = eval("lambda a: (" + src + ").sum()")  # noqa: S307 - a fixed expression of this test
    e = ef.jvp(ef.grad(fn), (x[0],), (v[0],))
    t = tf.jvp(tf.grad(fn), (x[1],), (v[1],))
    check(list(e), list(t))


def _h(x):
    return (x.sin() * x).cumsum(0)


@pytest.mark.parametrize("case", ["vmap_jvp", "vmap_jvp_grad", "vmap_jacfwd", "vmap_jacrev", "vmap_hessian",
                                  "jacrev_jacrev", "grad_jvp", "jvp_jvp", "jvp_jacfwd", "jacfwd_jacfwd",
                                  "vmap_jacfwd_jacfwd", "jacrev_jacfwd"])
def test_compositions(case):
    a, v = pair((5, 3), 28), pair((5, 3), 29)

    def run(F, L, a, v):
        if case == "vmap_jvp":
            return F.vmap(lambda x, t: F.jvp(_h, (x,), (t,))[1])(a, v)
        if case == "vmap_jvp_grad":
            return F.vmap(lambda x: F.jvp(F.grad(lambda y: _h(y).exp().sum()), (x,), (v[0],))[1])(a)
        if case == "vmap_jacfwd":
            return F.vmap(F.jacfwd(_h))(a)
        if case == "vmap_jacrev":
            return F.vmap(F.jacrev(_h))(a)
        if case == "vmap_hessian":
            return F.vmap(F.hessian(lambda x: _h(x).sum()))(a)
        if case == "jacrev_jacrev":
            return F.jacrev(F.jacrev(lambda x: _h(x).sum()))(a[0])
        if case == "jvp_jvp":  # the inner jvp is the transpose of a vjp: forward AD has one level
            return F.jvp(lambda x: F.jvp(_h, (x,), (x,))[1], (a[0],), (v[0],))[1]
        if case == "jvp_jacfwd":
            return F.jvp(F.jacfwd(_h), (a[0],), (v[0],))[1]
        if case == "jacfwd_jacfwd":
            return F.jacfwd(F.jacfwd(_h))(a[0])
        if case == "vmap_jacfwd_jacfwd":
            return F.vmap(F.jacfwd(F.jacfwd(lambda x: _h(x).sum())))(a)
        if case == "jacrev_jacfwd":
            return F.jacrev(F.jacfwd(lambda x: _h(x).sum()))(a[0])
        return F.grad(lambda x: F.jvp(_h, (x,), (v[0],))[1].sum())(a[0])
    check(run(ef, ember, a[0], v[0]), run(tf, torch, a[1], v[1]))


def test_reverse_over_forward_over_reverse():
    a, v = pair((4,), 30), pair((4,), 31)

    def f(x):
        return (x.exp() * x.sin()).sum()

    def case(F, x, vv):
        return F.grad(lambda y: F.jvp(F.grad(f), (y,), (vv,))[1].sum())(x), F.jacrev(F.hessian(f))(x)
    check(list(case(ef, a[0], v[0])), list(case(tf, a[1], v[1])))


@pytest.mark.parametrize("act", ["gelu", "elu", "softplus", "silu", "mish", "logsigmoid", "hardswish", "celu",
                                 "softshrink"])
def test_hessian_through_activation_backwards(act):
    """hessian = jacfwd(jacrev): the tangents of the activations' backward kernels (their own
    forward formulas, or the transposed double backward)."""
    a, w = pair((4,), 32), pair((4, 4), 33)

    def f(L, W):
        def g(x):
            h = getattr(L.nn.functional, act)(W @ x)
            return L.nn.functional.log_softmax(h, 0).sum() + (h ** 2).sum()
        return g
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's fallback names the backward kernels it loops over
        check(ef.hessian(f(ember, w[0]))(a[0]), tf.hessian(f(torch, w[1]))(a[1]))
