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


def _vmap(fn):
    from ember._functorch.apis import vmap  # lazy: the batching layer sits above autograd
    return vmap(fn)


def _basis(tensors):
    """One [N, numel(t)] chunk per tensor of the identity over all their elements (torch's
    _construct_standard_basis_for)."""
    numels = [t.numel() for t in tensors]
    n = sum(numels)
    chunks, start = [], 0
    for t, k in zip(tensors, numels):
        c = ember.zeros((n, k), dtype=t.dtype, device=t.device)
        if k:
            c[start:start + k] = ember.eye(k, dtype=t.dtype, device=t.device)
        chunks.append(c)
        start += k
    return chunks, numels


def _post(jac, is_out_tuple, is_in_tuple):
    """jac[i][j]: output i by input j, shaped as torch's _tuple_postprocess shapes it."""
    if not is_out_tuple:
        jac = jac[0]
        return jac if is_in_tuple else jac[0]
    return tuple(r if is_in_tuple else r[0] for r in jac)


def _jacfwd(func, inputs, strict, vectorize):
    from ember.autograd import forward_ad as fwAD  # lazy: forward_ad registers its layer on import
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                           'not supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    inputs, single = _tup(inputs)
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")
    tangents, numels = _basis(inputs)
    info = []

    def push(*ts):
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(x, t.view_as(x)) for x, t in zip(inputs, ts))
            outs, osingle = _tup(func(*duals))
            info[:] = [osingle, []]
            jv = []
            for o in outs:
                p, t = fwAD.unpack_dual(o)
                info[1].append(p)
                jv.append(ember.zeros_like(p) if t is None else t)
        return tuple(jv)
    cols = _vmap(push)(*tangents)
    osingle, outs = info
    jac = []
    for c, o in zip(cols, outs):
        row = []
        for part, x in zip(c.split(numels, 0), inputs):
            row.append(part.permute(*range(1, part.dim()), 0).reshape(tuple(o.shape) + tuple(x.shape)))
        jac.append(row)
    return _post(jac, not osingle, not single)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    inputs, single = _tup(inputs)
    with ember.enable_grad():
        xs = _prep(inputs, create_graph)
        outs, osingle = _tup(func(*xs))
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                                   "not supported together. Please either set `strict=False` or `vectorize=False`.")
            # one backward over the identity basis of every output at once: vmap over vjp
            basis, numels = _basis(outs)

            def vjp(*vs):
                vs = [v.view_as(o) for v, o in zip(vs, outs)]
                pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
                g = ember.autograd.grad([p[0] for p in pairs], xs, [p[1] for p in pairs], retain_graph=True,
                                        create_graph=create_graph, allow_unused=True) if pairs else (None,) * len(xs)
                return tuple(ember.zeros_like(x) if gi is None else gi for x, gi in zip(xs, g))
            rows = _vmap(vjp)(*basis)
            jac = []
            for i, o in enumerate(outs):
                jac.append([r.split(numels, 0)[i].reshape(tuple(o.shape) + tuple(x.shape))
                            for r, x in zip(rows, xs)])
        else:
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
                jac.append(per_in)
    if not create_graph:
        jac = [[t.detach() for t in row] for row in jac]
    return _post(jac, not osingle, not single)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    inputs, single = _tup(inputs)
    forward = outer_jacobian_strategy == "forward-mode"

    def grad_fn(*xs):
        with ember.enable_grad():
            # forward-over-reverse needs no graph of the gradient: its tangent carries the product
            ins = tuple(x.detach().requires_grad_(True) if forward and not x.requires_grad else x for x in xs)
            if forward:
                from ember.autograd import forward_ad as fwAD  # lazy: only for the forward strategy
                for x, i in zip(xs, ins):
                    t = getattr(x, "_fw_grad", None)
                    if t is not None and i is not x:
                        fwAD._set_tangent(i, t)
            out = func(*ins)
            if isinstance(out, tuple) or not isinstance(out, ember.Tensor):
                raise RuntimeError("The function given to hessian should return a single Tensor")
            if out.numel() != 1:
                raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                                   "element")
            g = ember.autograd.grad(out, ins, create_graph=not forward, allow_unused=True)
        g = tuple(ember.zeros_like(x) if gi is None else gi for x, gi in zip(ins, g))
        return g[0] if single else g
    res = jacobian(grad_fn, inputs[0] if single else inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    if not create_graph:
        res = res.detach() if isinstance(res, ember.Tensor) else tuple(
            r.detach() if isinstance(r, ember.Tensor) else tuple(x.detach() for x in r) for r in res)
    return res


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
