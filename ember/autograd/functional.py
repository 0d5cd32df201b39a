"""ember.autograd.functional: jacobian, hessian, vjp, jvp (torch.autograd.functional)."""
import ember


def _tup(x):
    return (x, False) if isinstance(x, tuple) else ((x,), True)


def _prep(inputs, create_graph):
    return tuple(x.detach().requires_grad_(True) if not create_graph or not x.requires_grad else x
                 for x in inputs)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    inputs, single = _tup(inputs)
    with ember.enable_grad():
        xs = _prep(inputs, create_graph)
        out = func(*xs)
        outs, osingle = _tup(out)
        if v is None:
            v = tuple(ember.ones_like(o) for o in outs)
        vs, _ = _tup(v)
        g = ember.autograd.grad(outs, xs, vs, create_graph=create_graph, allow_unused=True)
    g = tuple(ember.zeros_like(x) if gi is None else gi for x, gi in zip(xs, g))
    if not create_graph:
        out = tuple(o.detach() for o in outs) if not osingle else outs[0].detach()
        g = tuple(t.detach() for t in g)
    return out, (g[0] if single else g)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    inputs, single = _tup(inputs)
    with ember.enable_grad():
        xs = _prep(inputs, create_graph)
        outs, osingle = _tup(func(*xs))
        jac = []
        for o in outs:
            rows = [[] for _ in xs]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                g = ember.autograd.grad(flat[k], xs, retain_graph=True, create_graph=create_graph,
                                        allow_unused=True)
                for i, (x, gi) in enumerate(zip(xs, g)):
                    rows[i].append(ember.zeros_like(x) if gi is None else gi)
            per_in = []
            for i, x in enumerate(xs):
                st = ember.stack(rows[i]) if rows[i] else ember.zeros((0,) + tuple(x.shape), dtype=x.dtype)
                per_in.append(st.reshape(tuple(o.shape) + tuple(x.shape)))
            jac.append(per_in[0] if single else tuple(per_in))
    if not create_graph:
        jac = [j.detach() if isinstance(j, ember.Tensor) else tuple(t.detach() for t in j) for j in jac]
    return jac[0] if osingle else tuple(jac)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    inputs, single = _tup(inputs)

    def grad_fn(*xs):
        with ember.enable_grad():
            out = func(*xs)
            g = ember.autograd.grad(out, xs, create_graph=True, allow_unused=True)
        g = tuple(ember.zeros_like(x) if gi is None else gi for x, gi in zip(xs, g))
        return g[0] if single else g
    return jacobian(grad_fn, inputs[0] if single else inputs, create_graph=create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Forward product through the double-vjp trick: J v = d/du (u^T J)^T v."""
    inputs, single = _tup(inputs)
    with ember.enable_grad():
        xs = _prep(inputs, True)
        outs, osingle = _tup(func(*xs))
        us = tuple(ember.zeros_like(o).requires_grad_(True) for o in outs)
        g = ember.autograd.grad(outs, xs, us, create_graph=True, allow_unused=True)
        if v is None:
            v = tuple(ember.ones_like(x) for x in xs)
        vs, _ = _tup(v)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None]
        res = ember.autograd.grad([p[0] for p in pairs], us, [p[1] for p in pairs],
                                  create_graph=create_graph, allow_unused=True)
    res = tuple(ember.zeros_like(o) if r is None else r for o, r in zip(outs, res))
    if not create_graph:
        res = tuple(r.detach() for r in res)
        outs = tuple(o.detach() for o in outs)
    return (outs[0] if osingle else outs), (res[0] if osingle else res)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with a single-element output (torch.autograd.functional.vhp)."""
    inputs, single = _tup(inputs)
    with ember.enable_grad():
        xs = _prep(inputs, create_graph)
        out = func(*xs)
        if not isinstance(out, ember.Tensor) or out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        g = ember.autograd.grad(out, xs, create_graph=True, allow_unused=True)
        if v is None:
            if sum(x.numel() for x in xs) != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided function "
                                   "is a single Tensor with a single element.")
            v = tuple(ember.ones_like(x) for x in xs)
        vs, _ = _tup(v)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None and gi.requires_grad]
        res = ember.autograd.grad([p[0] for p in pairs], xs, [p[1] for p in pairs], create_graph=create_graph,
                                  allow_unused=True) if pairs else (None,) * len(xs)
    res = tuple(ember.zeros_like(x) if r is None else r for x, r in zip(xs, res))
    if not create_graph:
        out = out.detach()
        res = tuple(r.detach() for r in res)
    return out, (res[0] if single else res)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v). The Hessian of a twice-differentiable function is symmetric, so H v is the
    v^T H that vhp computes (torch reaches the same numbers through a double-backward trick)."""
    return vhp(func, inputs, v, create_graph, strict)
