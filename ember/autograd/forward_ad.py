"""Forward-mode AD (torch/autograd/forward_ad.py): dual tensors and the ForwardAD dispatch layer.

A dual tensor is a view of its primal (same storage, same version counter) that holds its tangent
(`_fw_grad`) and carries the ForwardAD key, so only calls that touch a dual tensor enter this layer:
tensors without a tangent pay nothing. The layer's boxed kernel computes the primal result with the
keys below it, then the result's tangent with the op's forward formula (ember/_generated/forward_ad.py,
from the `result:` entries of ops/derivatives*.yaml), with ForwardAD excluded, so primals behave as
plain tensors inside the formulas while the tangents keep their own keys (they may require grad, or
be batched under vmap). As in PyTorch, one level is open at a time; leaving it drops its tangents.
"""
import weakref
from collections import namedtuple

from ember.core import tls
from ember.core.keys import DispatchKey as K
from ember.autograd import graph as _graph
from ember.autograd.graph import SavedVariable as _SavedVariable
from ember.core.tensor_impl import TensorImpl as _TensorImpl
from ember.dispatch import operator as _operator

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "dual_level"]

FW = 1 << K.ForwardAD
_st = tls.current
_current_level = -1
_duals = []   # weak references to the tensors holding a tangent at the open level


class UnpackedDualTensor(namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    r"""Namedtuple returned by :func:`unpack_dual` containing the primal and tangent components of the dual tensor."""


def enter_dual_level():
    """Enter a new forward grad level; returns its index (torch allows one level at a time)."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    return _current_level


def exit_dual_level(*, level=None):
    """Exit the forward grad level: every tangent of that level is dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    for r in _duals:
        t = r()
        if t is not None:
            t.__dict__.pop("_fw_grad", None)
            t._keys &= ~FW
    _duals.clear()
    _current_level = level - 1


class dual_level:
    """Context manager for forward AD: every forward AD computation must happen inside it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _ops():
    import ember._generated.ops as ops  # lazy: the op handles sit above the autograd layer
    return ops


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` whose tangent (forward gradient) is `tangent` (torch's make_dual)."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tangent._shape) != tuple(tensor._shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor._shape)} while the given "
                           f"forward gradient is of size {list(tangent._shape)}.")
    if getattr(tangent, "_fw_grad", None) is not None:
        raise RuntimeError(f"Setting a forward grad that itself has a forward gradient at the same level{level} "
                           "is not supported.")
    prev = _st().dk
    _st().dk = (prev[0], prev[1] & ~FW)
    try:
        d = _ops().alias.call(tensor)
    finally:
        _st().dk = prev
    _set_tangent(d, tangent)
    return d


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor: the primal is a view without the tangent."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    tangent = getattr(tensor, "_fw_grad", None)
    prev = _st().dk
    _st().dk = (prev[0], prev[1] & ~FW)
    try:
        primal = _ops().alias.call(tensor)
    finally:
        _st().dk = prev
    primal._keys &= ~FW
    return UnpackedDualTensor(primal, tangent)


def _set_tangent(t, tangent):
    t._fw_grad = tangent
    t._keys |= FW
    _duals.append(weakref.ref(t))


def _share_with_saved_output(out, tangent):
    """The node that produced `out` saved it as an alias (save_output: the alias, (alias, version) or a
    SavedVariable) before this layer computed the tangent: the alias gets it too, as PyTorch's
    SavedVariable keeps the forward grad, so the backward formulas (forward-over-reverse,
    hessian = jacfwd(jacrev)) see it."""
    m = out._ameta
    node = None if m is None else m.grad_fn
    if node is None:
        return
    outputs = getattr(node, "_output_slots", ())
    for cls in type(node).__mro__:
        for name in getattr(cls, "__slots__", ()):
            sv = getattr(node, name, None)
            if sv.__class__ is _SavedVariable:
                d = sv.data if not sv.raw and sv.is_output else None
            elif name in outputs:
                d = sv[0] if sv.__class__ is tuple else sv
            else:
                continue
            if isinstance(d, _TensorImpl) and d._shape == out._shape and (  # not FREED, None
                    d._np is out._np if d._np is not None else d._vc is out._vc):
                _set_tangent(d, tangent)


# ---- the ForwardAD layer -------------------------------------------------------------------------
_FORMULA, _INPLACE, _COPY, _COMPOSITE, _NONDIFF, _ERROR, _OUT, _DECOMP = range(8)
_plans = {}


def _plan(op):
    """How the layer treats `op`: (kind, formula, functional op), once per op."""
    from ember._generated.forward_ad import FORMULAS  # lazy: the generated table sits above autograd
    s = op.schema
    key = s.full_name
    if s.is_out:
        plan = (_OUT, None, None)
    elif op.name == "copy_":
        plan = (_COPY, None, None)
    elif s.is_inplace:
        fname = s.name[:-1] + ("." + s.overload if s.overload else "")
        fop = _operator.OPERATORS.get(f"{op.ns}::{fname}")
        own = FORMULAS.get(key, 0)
        if own is None or isinstance(own, str):  # an in-place entry of its own, without a forward formula
            plan = (_ERROR, own, None)
        elif own and fname not in FORMULAS and not isinstance(own.fn, str):
            plan = (_INPLACE, own, op)  # its own formula (zero_, normal_...): a function of the tangents
        elif fname in FORMULAS:
            f = FORMULAS[fname]
            plan = (_ERROR, f, None) if f is None or isinstance(f, str) else (_INPLACE, f, fop)
        else:
            plan = _other(op)
    elif key in FORMULAS:
        f = FORMULAS[key]
        plan = (_ERROR, f, None) if f is None or isinstance(f, str) else (_FORMULA, f, op)
    else:
        plan = _other(op)
    _plans[op] = plan
    return plan


def _other(op):
    ks = op.kernels
    k = ks.get(K.Autograd)
    if op.name == "as_strided":  # its Autograd kernel is hand-written; PyTorch's formula: auto_linear
        from ember.autograd.forward_formulas import formula  # lazy: only when first met
        return (_FORMULA, formula((0,), "auto_linear"), op)
    if k is not None and k is not _operator.FALLTHROUGH:
        # a CompositeImplicitAutograd decomposition registered on the Autograd key (matmul, einsum):
        # its ops see the dual tensors, whether or not they require grad
        dec = getattr(k.fn, "decomposition", None) if k.redispatch else None if k.boxed else k.fn
        if dec is not None:
            return (_DECOMP, dec, None)
    k = ks.get(K.CompositeImplicitAutograd)
    if k is not None and K.Autograd not in ks and not any(x in ks for x in (K.AutogradCPU, K.AutogradOther)):
        # the ops it calls see the dual tensors: it runs here, above the layers below (vmap's batching
        # rules would otherwise take the call whole), as PyTorch decomposes it above autograd
        if not (k.redispatch or k.boxed):
            return (_DECOMP, k.fn, None)
        return (_COMPOSITE, None, None)
    return (_NONDIFF, None, None)


def _any_tangent(args):
    for a in args:
        if a.__class__ is list or a.__class__ is tuple:
            for x in a:
                if getattr(x, "_fw_grad", None) is not None:
                    return True
        elif getattr(a, "_fw_grad", None) is not None:
            return True
    return False


def _strip(out):
    """Outputs without a tangent lose the key a view inherits from its dual base."""
    if isinstance(out, (tuple, list)):
        for o in out:
            if hasattr(o, "_keys") and o._keys & FW and getattr(o, "_fw_grad", None) is None:
                o._keys &= ~FW
    elif hasattr(out, "_keys") and out._keys & FW and getattr(out, "_fw_grad", None) is None:
        out._keys &= ~FW
    return out


def _kernel(op, below, args):
    plan = _plans.get(op) or _plan(op)
    kind = plan[0]
    if kind == _COMPOSITE:
        return _strip(below(*args))
    if kind == _DECOMP:
        return _strip(plan[1](*args) if _any_tangent(args) else below(*args))
    prev = _st().dk
    _st().dk = (prev[0], prev[1] & ~FW)
    try:
        if not _any_tangent(args) or kind == _NONDIFF:
            return _strip(below(*args))
        if kind == _ERROR:
            raise NotImplementedError(
                f"Trying to use forward AD with {plan[1] or op.name} that does not support it because it has not been "
                "implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/"
                "new?template=feature-request.yml so that we can prioritize its implementation or submit a PR "
                "adding the implementation to derivatives.yaml")
        if kind == _OUT:
            raise NotImplementedError(f"Trying to use forward AD with {op.name}_out that does not support it "
                                      "because it is an out= function")
        if kind == _FORMULA:
            out = below(*args)
            _attach(op, plan[1], args, args, out)
            return out
        return _inplace(op, plan, below, args)
    finally:
        _st().dk = prev


def _zero_tangent(a):
    if a is None:
        return None
    if not hasattr(a, "_keys"):
        return 0  # a Python number standing for a Tensor argument
    return _ops().zeros_like.call(a)


def _tangents(f, args):
    ts = []
    for i in f.pos:
        a = args[i]
        if i == f.lst:
            ts.append([t if (t := getattr(x, "_fw_grad", None)) is not None else _zero_tangent(x) for x in a])
        else:
            t = getattr(a, "_fw_grad", None)
            ts.append(t if t is not None else _zero_tangent(a))
    return ts


def _compute(fop, f, args, ts, out):
    """The tangents of `out` (a tuple, one item per output, None where there is none)."""
    fn = f.fn
    multi = isinstance(out, tuple)  # a tuple or a return-type namedtuple
    if fn == "auto_linear":
        targs = list(args)
        for i, t in zip(f.pos, ts):
            targs[i] = t
        res = fop.call(*targs)
    elif fn == "linearized":
        return _linearized(fop, f, args, ts, out)
    else:
        res = fn(*args, *ts, *out) if multi else fn(*args, *ts, out)
    if multi:
        return tuple(None if (f.outs is not None and not f.outs[k]) else r for k, r in enumerate(res))
    return (res,)


def _attach(fop, f, args, prim_args, out):
    res = _compute(fop, f, prim_args, _tangents(f, args), out)
    if isinstance(out, (tuple, list)):
        if out.__class__ is list and len(res) == 1 and res[0].__class__ is list:
            res = res[0]
        for o, t in zip(out, res):
            if t is not None and hasattr(o, "_keys"):
                _set_tangent(o, t := _fit(t, o))
                if o._ameta is not None:
                    _share_with_saved_output(o, t)
    else:
        _set_tangent(out, t := _fit(res[0], out))
        if out._ameta is not None:
            _share_with_saved_output(out, t)


def _fit(t, o):
    if not hasattr(t, "_keys"):  # a number: the tangent of a constant
        return _ops().zeros_like.call(o) + t
    if tuple(t._shape) != tuple(o._shape):
        t = t.expand(o._shape)
    return t


def _inplace(op, plan, below, args):
    """An in-place op on a dual tensor: the tangent is updated in place (views of it see the change)."""
    self = args[0]
    old_t = getattr(self, "_fw_grad", None)
    if plan[0] == _COPY:
        below(*args)
        src_t = getattr(args[1], "_fw_grad", None)
        new_t = (_ops().zeros_like.call(self) if src_t is None
                 else src_t.to(self.dtype).expand(self._shape))
    else:
        kind, f, fop = plan
        orig = self.clone()
        below(*args)
        out = self if len(fop.schema.returns) == 1 else tuple(args[: len(fop.schema.returns)])
        ts = _tangents(f, args)
        new_t = _compute(fop, f, (orig,) + tuple(args[1:]), ts, out)[0]
        new_t = _fit(new_t, self)
    if old_t is not None and tuple(old_t._shape) == tuple(new_t._shape):
        old_t.copy_(new_t)
        return self
    base = self._base
    if old_t is None and base is not None and getattr(base, "_fw_grad", None) is None:
        # the base gets a zero tangent and this view's tangent is the same view of it (PyTorch's rule)
        ops = _ops()
        # zeros batched like the incoming tangent (functorch's _new_zeros_with_same_feature_meta): under
        # vmap the tangent may be batched where the base is not
        base_t = new_t.new_zeros(tuple(base._shape)) if hasattr(new_t, "_keys") else ops.zeros_like.call(base)
        if tuple(base_t.stride()) == tuple(base.stride()):
            view_t = ops.as_strided.call(base_t, self._shape, self.stride(),
                                         self.storage_offset() - base.storage_offset())
            view_t.copy_(new_t)
            _set_tangent(base, base_t)
            _set_tangent(self, view_t)
            return self
    _set_tangent(self, new_t)
    return self


def _linearized(fop, f, args, ts, out):
    """J t from the backward formula: u -> J^T u is linear, so J t = d/du <J^T u, t>."""
    import ember  # lazy: the public functions, as the formulas use them
    outs = out if isinstance(out, tuple) else (out,)
    with ember.enable_grad():
        targs, xs, tans = list(args), [], []
        for i, t in zip(f.pos, ts):
            a = args[i]
            if i == f.lst:
                new = [x.detach().requires_grad_() if x.is_floating_point() or x.is_complex() else x for x in a]
                targs[i] = new
                xs += new
                tans += t
            elif hasattr(a, "_keys") and (a.is_floating_point() or a.is_complex()):
                x = a.detach().requires_grad_()
                targs[i] = x
                xs.append(x)
                tans.append(t)
        o = fop.call(*targs)
        o = o if isinstance(o, (tuple, list)) else (o,)
        diff = [k for k, y in enumerate(o) if (f.outs is None or f.outs[k]) and hasattr(y, "_keys")
                and y.requires_grad]
        us = [ember.zeros_like(o[k]).requires_grad_() for k in diff]
        res = [None] * len(outs)
        if diff:
            gs = ember.autograd.grad([o[k] for k in diff], xs, us, create_graph=True, allow_unused=True)
            pairs = [(g, t) for g, t in zip(gs, tans) if g is not None and hasattr(t, "_keys")]
            if pairs:
                s = sum((g * t).sum() for g, t in pairs)
            if pairs and s.requires_grad:
                need = any(t.requires_grad for _, t in pairs)
                jts = ember.autograd.grad(s, us, allow_unused=True, create_graph=need)
                for k, jt in zip(diff, jts):
                    res[k] = jt
        for k in range(len(outs)):
            if res[k] is None and (f.outs is None or f.outs[k]) and hasattr(outs[k], "_keys") and (
                    outs[k].is_floating_point() or outs[k].is_complex()):
                res[k] = ember.zeros_like(outs[k])
    return tuple(res)


def _copy_tangent(src, dst):
    t = getattr(src, "_fw_grad", None)
    if t is not None:
        _set_tangent(dst, t)


_graph.copy_tangent[0] = _copy_tangent
_operator.register_fallback(K.ForwardAD, _kernel, boxed=True)
