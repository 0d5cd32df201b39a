"""ember.autograd.forward_ad against torch.autograd.forward_ad: dual tensors, levels, views and in-place
ops on duals, forward-over-reverse, autograd.functional's forward-mode strategies, and torch's errors."""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw
from harness import check, same_error

import ember
import ember.autograd.forward_ad as efw

FW = {ember: efw, torch: tfw}


def data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def run(fn):
    """fn(L, fw, x, t) inside a dual level in both libraries: (primal, tangent) of its results."""
    out = {}
    for L in (ember, torch):
        fw = FW[L]
        x = L.tensor(data((3, 4), 0), dtype=L.float64)
        t = L.tensor(data((3, 4), 1), dtype=L.float64)
        with fw.dual_level():
            r = fn(L, fw, x, t)
            rs = r if isinstance(r, (tuple, list)) else (r,)
            out[L] = [(fw.unpack_dual(o).primal.clone(), fw.unpack_dual(o).tangent) for o in rs]
    return out[ember], out[torch]


def compare(fn):
    e, t = run(fn)
    assert len(e) == len(t)
    for (ep, et), (tp, tt) in zip(e, t):
        check(ep, tp)
        if tt is None:
            assert et is None
        else:
            check(et, tt)


def test_make_dual_is_a_view_and_unpack():
    for L in (ember, torch):
        fw = FW[L]
        x = L.tensor(data((3,), 2), dtype=L.float64)
        t = L.tensor(data((3,), 3), dtype=L.float64)
        with fw.dual_level() as level:
            assert level == 0
            d = fw.make_dual(x, t)
            assert d._base is x and d._version == x._version
            u = fw.unpack_dual(d)
            assert type(u).__name__ == "UnpackedDualTensor" and u.tangent is t and u._fields == ("primal", "tangent")
            assert fw.unpack_dual(x).tangent is None
            assert u.primal._base is x
        # leaving the level drops the tangents
        assert fw.unpack_dual(d).tangent is None
        assert fw.unpack_dual(d).primal is d


def test_enter_exit_levels():
    for L in (ember, torch):
        fw = FW[L]
        assert fw.enter_dual_level() == 0
        fw.exit_dual_level(level=0)
        assert fw.enter_dual_level() == 0
        x = fw.make_dual(L.ones(2, dtype=L.float64), L.ones(2, dtype=L.float64))
        fw.exit_dual_level()
        assert fw.unpack_dual(x).tangent is None


def test_errors():
    def nested(L):
        with FW[L].dual_level():
            with FW[L].dual_level():
                pass
    same_error(nested)
    same_error(lambda L: FW[L].make_dual(L.ones(3), L.ones(3)))
    same_error(lambda L: FW[L].exit_dual_level())

    def inside(fn):
        def go(L):
            with FW[L].dual_level():
                fn(L)
        return go
    same_error(inside(lambda L: FW[L].make_dual(L.ones(3, dtype=L.float64), L.ones(2, dtype=L.float64))))
    same_error(inside(lambda L: FW[L].make_dual(L.arange(3), L.arange(3))),
               match="Expected primal to be floating point or complex, but got: ")
    same_error(inside(lambda L: FW[L].make_dual(L.ones(3), L.arange(3))),
               match="Expected tangent to be floating point or complex, but got: ")
    same_error(inside(lambda L: FW[L].make_dual(L.ones(3), FW[L].make_dual(L.ones(3), L.ones(3)))))
    # an op with a backward formula but no forward one, an in-place op without one, an out= call
    same_error(inside(lambda L: L.cholesky(FW[L].make_dual(L.eye(3, dtype=L.float64), L.eye(3, dtype=L.float64)))))
    same_error(inside(lambda L: L.special.zeta(FW[L].make_dual(L.ones(3, dtype=L.float64) + 1,
                                                                L.ones(3, dtype=L.float64)), 2.0)))
    same_error(inside(lambda L: FW[L].make_dual(L.ones(3, dtype=L.float64) * 2, L.ones(3, dtype=L.float64)).acosh_()))
    same_error(inside(lambda L: L.mul(FW[L].make_dual(L.ones(3, dtype=L.float64), L.ones(3, dtype=L.float64)), 2,
                                      out=L.empty(3, dtype=L.float64))))


def test_views_of_duals():
    compare(lambda L, fw, x, t: fw.make_dual(x, t).t())
    compare(lambda L, fw, x, t: fw.make_dual(x, t)[1:, ::2])
    compare(lambda L, fw, x, t: fw.make_dual(x, t).reshape(4, 3).unsqueeze(0).expand(2, 4, 3))
    compare(lambda L, fw, x, t: fw.make_dual(x, t).unbind(1))
    compare(lambda L, fw, x, t: fw.make_dual(x, t).split(2, 1))
    compare(lambda L, fw, x, t: fw.make_dual(x, t).diagonal())

    def view_tangent_is_a_view(L, fw, x, t):
        d = fw.make_dual(x, t)
        v = d[0]
        vt = fw.unpack_dual(v).tangent
        assert vt._base is t or vt._base is t._base
        return v
    compare(view_tangent_is_a_view)


def test_inplace_on_duals():
    def inplace(L, fw, x, t):
        d = fw.make_dual(x.clone(), t)
        d.mul_(2).sin_()
        d.add_(d)
        return d
    compare(inplace)

    def tangent_updated_in_place(L, fw, x, t):
        d = fw.make_dual(x.clone(), t.clone())
        before = fw.unpack_dual(d).tangent
        d.exp_()
        assert fw.unpack_dual(d).tangent is before
        return d
    compare(tangent_updated_in_place)

    def view_sees_base_update(L, fw, x, t):
        d = fw.make_dual(x.clone(), t.clone())
        v = d[1]
        d.mul_(3)
        return v, d

    compare(view_sees_base_update)

    def write_dual_into_plain(L, fw, x, t):
        y = L.zeros(3, 4, dtype=L.float64)
        y[1:].copy_(fw.make_dual(x, t)[1:])
        return y
    compare(write_dual_into_plain)

    def plain_into_dual(L, fw, x, t):
        d = fw.make_dual(x.clone(), t.clone())
        d[0].copy_(L.ones(4, dtype=L.float64))
        return d
    compare(plain_into_dual)

    def masked(L, fw, x, t):
        d = fw.make_dual(x.clone(), t.clone())
        d.masked_fill_(x > 0, 1.0).clamp_(-0.5, 0.5)
        return d
    compare(masked)


def test_composites_and_decompositions():
    compare(lambda L, fw, x, t: fw.make_dual(x, t) @ L.ones(4, 2, dtype=L.float64))
    compare(lambda L, fw, x, t: L.einsum("ij,kj->ik", fw.make_dual(x, t), fw.make_dual(x, t)))
    compare(lambda L, fw, x, t: L.nn.functional.layer_norm(fw.make_dual(x, t), (4,)))
    compare(lambda L, fw, x, t: L.nn.functional.layer_norm(fw.make_dual(x, t), (3, 4), fw.make_dual(x * 2, t.t().reshape(3, 4)),
                                                           x.sin()))
    compare(lambda L, fw, x, t: L.nn.functional.gelu(fw.make_dual(x, t)).softmax(-1).var(0))
    compare(lambda L, fw, x, t: L.nn.functional.linear(fw.make_dual(x, t), L.ones(5, 4, dtype=L.float64) / 3,
                                                       L.ones(5, dtype=L.float64)))


def test_no_grad_and_reverse_over_forward():
    # forward AD is independent of grad mode
    compare(lambda L, fw, x, t: _no_grad(L, lambda: fw.make_dual(x, t).tanh()))
    # the tangent is differentiable w.r.t. the primal (reverse over forward)
    for L in (ember, torch):
        fw = FW[L]
        x = L.tensor(data((4,), 5), dtype=L.float64, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, L.ones(4, dtype=L.float64))
            tan = fw.unpack_dual((d.sin() * d).sum()).tangent
        g = L.autograd.grad(tan, x)[0]
        if L is ember:
            eg = g
        else:
            check(eg, g)


def _no_grad(L, fn):
    with L.no_grad():
        return fn()


@pytest.mark.parametrize("strategy", ["forward-mode", "reverse-mode"])
def test_functional_jacobian_strategies(strategy):
    x = data((3,), 6)

    def f(L):
        return lambda a, b: (a.sin() * b, (a * b).sum())
    for vectorize in (False, True):
        if strategy == "forward-mode" and not vectorize:
            same_error(lambda L: L.autograd.functional.jacobian(f(L), (L.tensor(x), L.tensor(x)), strategy=strategy))
            continue
        e = ember.autograd.functional.jacobian(f(ember), (ember.tensor(x), ember.tensor(x) * 2),
                                               vectorize=vectorize, strategy=strategy)
        t = torch.autograd.functional.jacobian(f(torch), (torch.tensor(x), torch.tensor(x) * 2),
                                               vectorize=vectorize, strategy=strategy)
        check([list(r) for r in e], [list(r) for r in t])


def test_functional_jvp_hvp_hessian_forward():
    x, v = data((4,), 7), data((4,), 8)

    def f(L):
        return lambda a: (a.exp() * a.sin()).sum()
    for name in ("jvp", "hvp", "vhp"):
        e = getattr(ember.autograd.functional, name)(f(ember), ember.tensor(x), ember.tensor(v))
        t = getattr(torch.autograd.functional, name)(f(torch), torch.tensor(x), torch.tensor(v))
        check(list(e), list(t))
    for outer in ("forward-mode", "reverse-mode"):
        e = ember.autograd.functional.hessian(f(ember), ember.tensor(x), vectorize=True, outer_jacobian_strategy=outer)
        t = torch.autograd.functional.hessian(f(torch), torch.tensor(x), vectorize=True, outer_jacobian_strategy=outer)
        check(e, t)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses(reduction):
    def sig(L, x):
        return L.sigmoid(x)
    F = {ember: ember.nn.functional, torch: torch.nn.functional}
    compare(lambda L, fw, x, t: F[L].smooth_l1_loss(fw.make_dual(x, t), x.cos(), reduction=reduction, beta=0.7))
    compare(lambda L, fw, x, t: F[L].huber_loss(x.cos(), fw.make_dual(x, t), reduction=reduction, delta=0.6))
    compare(lambda L, fw, x, t: F[L].binary_cross_entropy(sig(L, fw.make_dual(x, t)), sig(L, x.t().reshape(3, 4)),
                                                          L.ones(4, dtype=L.float64) / 2, reduction=reduction))
    compare(lambda L, fw, x, t: F[L].binary_cross_entropy_with_logits(
        fw.make_dual(x, t), sig(L, fw.make_dual(x.cos(), t.sin())), pos_weight=L.ones(4, dtype=L.float64) * 2,
        reduction=reduction))
    compare(lambda L, fw, x, t: F[L].mse_loss(fw.make_dual(x, t), fw.make_dual(x.sin(), t), reduction=reduction))
