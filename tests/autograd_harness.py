"""Gradients against torch: first order, and second order through create_graph=True."""
import numpy as np
import torch

import ember
from harness import check


def _req(x, lib):
    return isinstance(x, (ember.Tensor, torch.Tensor)) and x.dtype in (
        (ember.float32, ember.float64, ember.complex64, ember.complex128) if lib is ember
        else (torch.float32, torch.float64, torch.complex64, torch.complex128))


def _dense(g):
    # PyTorch returns ZeroTensors for some second-order gradients (sgn's)
    return g if g is None or not g._is_zerotensor() else torch.zeros(g.shape, dtype=g.dtype)


def compare_grads(fn, e_inputs, t_inputs, second_order=True, atol=None, rtol=None, seed=0):
    """fn(lib, *inputs) -> Tensor or tuple. Float inputs get requires_grad; compare grads with torch."""
    e_in = [x.detach().clone().requires_grad_() if _req(x, ember) else x for x in e_inputs]
    t_in = [x.detach().clone().requires_grad_() if _req(x, torch) else x for x in t_inputs]
    e_out, t_out = fn(ember, *e_in), fn(torch, *t_in)
    e_outs = e_out if isinstance(e_out, (tuple, list)) else (e_out,)
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    check(list(e_outs), list(t_outs), atol=atol, rtol=rtol)
    rng = np.random.default_rng(seed)
    pairs = [(eo, to) for eo, to in zip(e_outs, t_outs) if isinstance(to, torch.Tensor) and to.requires_grad]
    if not pairs:
        return
    gos = [rng.standard_normal(tuple(to.shape)).astype(np.float64) for _, to in pairs]
    e_go = [ember.tensor(g, dtype=eo.dtype) for g, (eo, _) in zip(gos, pairs)]
    t_go = [torch.tensor(g, dtype=to.dtype) for g, (_, to) in zip(gos, pairs)]
    e_x = [x for x in e_in if isinstance(x, ember.Tensor) and x.requires_grad]
    t_x = [x for x in t_in if isinstance(x, torch.Tensor) and x.requires_grad]
    e_g = ember.autograd.grad([p[0] for p in pairs], e_x, e_go, create_graph=second_order, allow_unused=True)
    t_g = torch.autograd.grad([p[1] for p in pairs], t_x, t_go, create_graph=second_order, allow_unused=True)
    t_g = [_dense(g) for g in t_g]
    for a, b in zip(e_g, t_g):
        if b is None:
            assert a is None or float(a.abs().sum()) == 0
            continue
        check(a, b, atol=atol, rtol=rtol)
    if not second_order:
        return
    idx = [i for i, b in enumerate(t_g) if b is not None and b.requires_grad]
    if not idx:
        return
    vs = [rng.standard_normal(tuple(t_g[i].shape)) for i in idx]
    e_g2 = ember.autograd.grad([e_g[i] for i in idx], e_x, [ember.tensor(v, dtype=e_g[i].dtype) for v, i in zip(vs, idx)],
                               allow_unused=True)
    t_g2 = torch.autograd.grad([t_g[i] for i in idx], t_x, [torch.tensor(v, dtype=t_g[i].dtype) for v, i in zip(vs, idx)],
                               allow_unused=True)
    for a, b in zip(e_g2, map(_dense, t_g2)):
        if b is None:
            assert a is None or float(a.abs().sum()) == 0
            continue
        if a is None:
            assert float(b.abs().sum()) == 0
            continue
        check(a, b, atol=atol, rtol=rtol)
