"""torch/_functorch/eager_transforms.py: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
linearize.

grad and vjp record on the reverse-mode autograd graph of ember.autograd: the inputs are wrapped as
tensors that require grad (a differentiable alias where they already do, so an enclosing grad sees
through: grad(grad(f)) keeps the graph, create_graph=True). jvp runs the function on dual tensors
(ember.autograd.forward_ad). jacrev is vmap over vjp, jacfwd vmap over jvp, hessian jacfwd(jacrev).
vmap is ember._functorch's dispatch layer, so the cotangents and tangents of a whole basis go through
each op once.
"""
import functools

import ember
from ember.autograd import forward_ad as _fwAD
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


def _vmap(*args, **kwargs):
    from ember._functorch.apis import vmap  # lazy: the batching layer loads on first use
    return vmap(*args, **kwargs)


def _is_tensor(x):
    return isinstance(x, ember.Tensor)


def _argnums(argnums, nargs):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if not all(isinstance(a, int) for a in argnums):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    return tuple(out)


def _wrap_for_grad(x):
    """A tensor that requires grad standing for `x` in the function: an alias of it where it already
    requires grad (an enclosing transform then differentiates through), else a detached leaf; it keeps
    x's tangent (forward-over-reverse: jvp(grad(f)))."""
    if not _is_tensor(x):
        return x
    if x.requires_grad:
        return x.view_as(x)
    tangent = getattr(x, "_fw_grad", None)
    y = x.detach().requires_grad_()
    if tangent is not None:
        _fwAD._set_tangent(y, tangent)
    return y


def _zeros_for_none(gs, xs):
    return [ember.zeros_like(x) if g is None else g for g, x in zip(gs, xs)]


def _slice_args(args, nums):
    diff = tuple(args[i] for i in nums)
    return diff


def _replace(args, nums, new):
    args = list(args)
    for i, v in zip(nums, new):
        args[i] = v
    return args


def grad_and_value(func, argnums=0, has_aux=False):
    """(gradient of func's scalar output w.r.t. args[argnums], the output), as torch.func.grad_and_value."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        diff = _slice_args(args, nums)
        flat, spec = tree_flatten(diff)
        outer = any(_is_tensor(x) and x.requires_grad for x in flat)
        with ember.enable_grad():
            wrapped = [_wrap_for_grad(x) for x in flat]
            out = func(*_replace(args, nums, tree_unflatten(wrapped, spec)), **kwargs)
            out, aux = _split_aux(out, has_aux, "grad_and_value(f)(*args)", check=True)
            if not _is_tensor(out):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            xs = [w for w in wrapped if _is_tensor(w)]
            gs = ember.autograd.grad(out, xs, create_graph=outer, allow_unused=True) if out.requires_grad \
                else [None] * len(xs)
        gs = iter(_zeros_for_none(gs, xs))
        grads = tree_unflatten([next(gs) if _is_tensor(w) else None for w in wrapped], spec)
        if isinstance(argnums, int):
            grads = grads[0]
        if not outer:
            out = out.detach()
        if has_aux:
            return grads, (out, aux)
        return grads, out
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of func's scalar output w.r.t. args[argnums] (torch.func.grad)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g
    return wrapper


def _split_aux(out, has_aux, api, check=False):
    """(output, aux) of a has_aux function, with torch's error when it did not return a pair."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    if check:
        _check_aux(out[1])
    return out


def _check_aux(aux):
    for x in tree_flatten(aux)[0]:
        if not _is_tensor(x):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")


def _check_outputs(flat, api):
    for o in flat:
        if not _is_tensor(o):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn): vjp_fn(cotangents) gives the vector-Jacobian products, one per primal."""
    flat, spec = tree_flatten(primals)
    outer = any(_is_tensor(x) and x.requires_grad for x in flat)
    with ember.enable_grad():
        wrapped = [_wrap_for_grad(x) for x in flat]
        out = func(*tree_unflatten(wrapped, spec))
        out, aux = _split_aux(out, has_aux, "vjp(f, *primals)", check=True)
    flat_out, out_spec = tree_flatten(out)
    _check_outputs(flat_out, "vjp(f, *primals)")
    xs = [w for w in wrapped if _is_tensor(w)]

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec and not (len(flat_out) == 1 and len(flat_ct) == 1):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        cg = create_graph if create_graph is not None else (
            outer or any(_is_tensor(c) and c.requires_grad for c in flat_ct))
        pairs = [(o, c) for o, c in zip(flat_out, flat_ct) if o.requires_grad]
        with ember.enable_grad():
            gs = ember.autograd.grad([p[0] for p in pairs], xs, [p[1] for p in pairs], retain_graph=retain_graph,
                                     create_graph=cg, allow_unused=True) if pairs else [None] * len(xs)
        gs = iter(_zeros_for_none(gs, xs))
        return tree_unflatten([next(gs) if _is_tensor(w) else None for w in wrapped], spec)

    result = out if outer else tree_unflatten([o.detach() for o in flat_out], out_spec)
    if has_aux:
        return result, vjp_fn, aux
    return result, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the Jacobian-vector product with `tangents`), through forward-mode AD."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {p_spec} and tangents with structure {t_spec}")
    if _fwAD._current_level >= 0:
        # a jvp inside another (jacfwd(jacfwd(f))): forward AD has one level, so this one is the
        # transpose of a vjp (J t = d/du <J^T u, t>), whose ops carry the enclosing level's tangents
        return _jvp_by_vjp(func, flat_p, p_spec, flat_t, has_aux)
    with _fwAD.dual_level():
        duals = [_fwAD.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        out = func(*tree_unflatten(duals, p_spec))
        out, aux = _split_aux(out, has_aux, "jvp(f, primals, tangents)")
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, "jvp(f, primals, tangents)")
        po, to = [], []
        for o in flat_out:
            p, t = _fwAD.unpack_dual(o)
            po.append(p)
            to.append(ember.zeros_like(p) if t is None else t)
    res = tree_unflatten(po, out_spec), tree_unflatten(to, out_spec)
    if has_aux:
        return res[0], res[1], aux
    return res


def _jvp_by_vjp(func, flat_p, p_spec, flat_t, has_aux):
    outer = any(_is_tensor(x) and x.requires_grad for x in flat_p + flat_t)
    with ember.enable_grad():
        xs = [_wrap_for_grad(p) for p in flat_p]
        out = func(*tree_unflatten(xs, p_spec))
        out, aux = _split_aux(out, has_aux, "jvp(f, primals, tangents)")
        flat_out, out_spec = tree_flatten(out)
        _check_outputs(flat_out, "jvp(f, primals, tangents)")
        diff = [o for o in flat_out if o.requires_grad]
        us = [ember.zeros_like(o).requires_grad_() for o in diff]
        res = {}
        if diff:
            gs = ember.autograd.grad(diff, xs, us, create_graph=True, allow_unused=True)
            terms = [(g * t).sum() for g, t in zip(gs, flat_t) if g is not None]
            s = sum(terms[1:], terms[0]) if terms else None
            if s is not None and s.requires_grad:
                jts = ember.autograd.grad(s, us, create_graph=outer, allow_unused=True)
                res = {id(o): jt for o, jt in zip(diff, jts)}
    po = [o if outer else o.detach() for o in flat_out]
    to = [res.get(id(o)) if res.get(id(o)) is not None else ember.zeros_like(p) for o, p in zip(flat_out, po)]
    r = tree_unflatten(po, out_spec), tree_unflatten(to, out_spec)
    if has_aux:
        return r[0], r[1], aux
    return r


def linearize(func, *primals):
    """(func(*primals), jvp_fn) with jvp_fn(*tangents) the Jacobian-vector product at `primals`."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def _basis(flat, dtype=None):
    """The rows of the identity over every element of `flat`, one [N, *t.shape] tensor per tensor."""
    sizes = [t.numel() for t in flat]
    n = sum(sizes)
    ref = flat[0]
    eye = ember.eye(n, dtype=dtype or ref.dtype, device=ref.device)
    out, start = [], 0
    for t, k in zip(flat, sizes):
        out.append(eye[:, start:start + k].reshape((n,) + tuple(t.shape)))
        start += k
    return out, n


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func w.r.t. args[argnums] by reverse mode: vmap over vjp."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        diff = _slice_args(args, nums)

        def f(*d):
            return func(*_replace(args, nums, d), **kwargs)
        res = vjp(f, *diff, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(out)
        basis, n = _basis(flat_out)
        flat_d, d_spec = tree_flatten(diff)
        rows = _vmap_keeping_tangents(lambda cts: vjp_fn(tree_unflatten(cts, out_spec)), chunk_size=chunk_size)(basis)
        flat_rows = tree_flatten(rows)[0]
        jac = []
        start = 0
        for o in flat_out:
            k = o.numel()
            per = [r[start:start + k].reshape(tuple(o.shape) + tuple(x.shape)) for r, x in zip(flat_rows, flat_d)]
            start += k
            per = tree_unflatten(per, d_spec)
            jac.append(per[0] if isinstance(argnums, int) else per)
        jac = tree_unflatten(jac, out_spec)
        if has_aux:
            return jac, res[2]
        return jac
    return wrapper


def _vmap_keeping_tangents(fn, **kwargs):
    """vmap(fn) inside a forward AD level (hessian = jacfwd(jacrev), jacfwd(jacfwd)): vmap's outputs
    leave its level without their tangents, so each tangent leaves as an output of its own and is
    attached again outside."""
    if _fwAD._current_level < 0:
        return _vmap(fn, **kwargs)

    def split(*args):
        flat, spec = tree_flatten(fn(*args))
        pairs = []
        for o in flat:
            p, t = _fwAD.unpack_dual(o)
            pairs.append((p, ember.zeros_like(p) if t is None else t))
        split.spec = spec
        return pairs

    def run(*args):
        res = _vmap(split, **kwargs)(*args)
        flat = []
        for p, t in res:
            _fwAD._set_tangent(p, t)
            flat.append(p)
        return tree_unflatten(flat, split.spec)
    return run


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func w.r.t. args[argnums] by forward mode: vmap over jvp."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        diff = _slice_args(args, nums)
        flat_d, d_spec = tree_flatten(diff)

        def f(*d):
            return func(*_replace(args, nums, d), **kwargs)
        basis, n = _basis(flat_d)

        def push(*ts):
            r = jvp(f, diff, tree_unflatten(list(ts), d_spec), has_aux=has_aux)
            return (r[1], r[2]) if has_aux else r[1]
        pushed = _vmap_keeping_tangents(push, randomness=randomness)(*basis)
        if has_aux:
            pushed, aux = pushed
            aux = tree_unflatten([a[0] for a in tree_flatten(aux)[0]], tree_flatten(aux)[1])
        flat_cols, out_spec = tree_flatten(pushed)
        jac = []
        for c in flat_cols:
            oshape = tuple(c.shape[1:])
            cm = ember.movedim(c, 0, -1) if c.dim() > 1 else c
            per, start = [], 0
            for x in flat_d:
                k = x.numel()
                per.append(cm[..., start:start + k].reshape(oshape + tuple(x.shape)))
                start += k
            per = tree_unflatten(per, d_spec)
            jac.append(per[0] if isinstance(argnums, int) else per)
        jac = tree_unflatten(jac, out_spec)
        if has_aux:
            return jac, aux
        return jac
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of func w.r.t. args[argnums]: jacfwd(jacrev(func)) (forward-over-reverse)."""
    return jacfwd(jacrev(func, argnums), argnums)
