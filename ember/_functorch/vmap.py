"""vmap (torch/_functorch/vmap.py): in_dims/out_dims pytrees, chunk_size, randomness, nesting.

Entering a vmap pushes a level (batched.STACK), wraps each batched input as a BatchedTensor at that
level, and runs the function; leaving it moves each output's batch dim to its out_dim. Both steps are
differentiable (an autograd.Function pair), so grad(vmap(f)) works: the backward of removing the batch
dim wraps the gradient as a BatchedTensor at the (by then finished) level, and the backward of adding it
unwraps that gradient again. A gradient that leaves the level towards a tensor that was not batched in
it (a captured weight) is summed over the batch on the way (_reduce_escaping_grads).

Forward AD, like autograd, works on the logical tensors: a dual input enters as the BatchedTensor of its
primal with the BatchedTensor of its tangent, and a dual output leaves with its tangent unbatched too, so
jvp(vmap(f)), vmap(jvp(f)) (jacfwd) and jacfwd(jacrev(f)) (hessian) compose.

While a vmap runs, FuncTorchBatched is in the thread's include set (unless randomness="same"), so that
random factory ops such as rand(), which have no batched argument, still reach the layer.
"""
import functools

from ember._functorch import batched as _b, batching as _batching
from ember._functorch.batched import BatchedTensor, FTB, make_batched
from ember.utils._pytree import broadcast_prefix, tree_flatten, tree_unflatten
from ember._generated import ops as _ops
from ember.autograd.function import Function
from ember.autograd.graph import AccumulateGrad, next_seq
from ember.core import tls
from ember.core.keys import AUTOGRAD_MASK, DispatchKey as K
from ember.core.tensor_impl import TensorImpl

_st = tls.current
_movedim = _ops.movedim_int.call
_FW = 1 << K.ForwardAD


def _check_randomness_arg(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")


def _get_name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


# ---- entering and leaving a level: differentiable -----------------------------------------------
class _AddBatchDim(Function):
    @staticmethod
    def forward(ctx, x, in_dim, level):
        ctx.in_dim, ctx.level, ctx.size = in_dim, level, x._shape[in_dim]
        return make_batched(_ops.detach.call(x), in_dim, level)

    @staticmethod
    def backward(ctx, g):
        return _unbatch_grad(g, ctx.level, ctx.size, ctx.in_dim), None, None


class _RemoveBatchDim(Function):
    @staticmethod
    def forward(ctx, y, level, size, out_dim):
        ctx.level, ctx.out_dim = level, out_dim
        v, b = y._value, y._bdim
        return _ops.detach.call(v if b == out_dim else _movedim(v, b, out_dim))

    @staticmethod
    def backward(ctx, g):
        return make_batched(g, ctx.out_dim, ctx.level), None, None, None


def _unbatch_grad(g, level, size, dim):
    if g.__class__ is BatchedTensor and g._level == level:
        v, b = g._value, g._bdim
        return v if b == dim else _movedim(v, b, dim)
    shape = list(g._shape)
    shape.insert(dim, size)
    return _ops.expand.call(_ops.unsqueeze.call(g, dim), shape, False)


def _needs_grad(x):
    return _st().ag and (x._keys & AUTOGRAD_MASK) and x.requires_grad


def _add_batch_dim(x, in_dim, level):
    if x._keys & _FW and getattr(x, "_fw_grad", None) is not None:
        # a dual input (jvp(vmap(f))): forward AD runs on the logical tensors, as autograd does, so the
        # BatchedTensor of the primal gets the BatchedTensor of the tangent
        from ember.autograd import forward_ad  # lazy: only dual inputs need it
        primal, tangent = forward_ad.unpack_dual(x)
        return forward_ad.make_dual(_add_batch_dim(primal, in_dim, level), make_batched(tangent, in_dim, level))
    if _needs_grad(x):
        return _AddBatchDim.apply(x, in_dim, level)
    return make_batched(x, in_dim, level)


def _remove_batch_dim(y, level, size, out_dim):
    if y.__class__ is not BatchedTensor or y._level != level:
        # not batched at this level: every sample gave the same value. torch expands it to the sizes
        # with the batch inserted at out_dim, broadcasting from the right (so out_dim > 0 can fail)
        shape = list(y._shape)
        shape.insert(out_dim, size)
        return _ops.expand.call(y, shape, False)
    tangent = getattr(y, "_fw_grad", None) if y._keys & _FW else None
    if _needs_grad(y):
        out = _RemoveBatchDim.apply(y, level, size, out_dim)
    else:
        v, b = y._value, y._bdim
        out = v if b == out_dim else _movedim(v, b, out_dim)
    if tangent is not None:
        from ember.autograd import forward_ad  # lazy: only dual outputs need it
        out = forward_ad.make_dual(out, _unbatch_grad(tangent, level, size, out_dim))
    return out


# ---- vmap ---------------------------------------------------------------------------------------
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap: func mapped over a dimension of its inputs, run once on batched tensors."""
    _check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs)
    return wrapped


def vmap_impl(func, in_dims, out_dims, randomness, chunk_size, *args, **kwargs):
    _check_out_dims(out_dims, func)
    size, flat_in_dims, flat_args, spec = _process_batched_inputs(in_dims, args, func)
    if chunk_size is not None and chunk_size < size:
        return _chunked_vmap(func, flat_in_dims, flat_args, spec, out_dims, randomness, size, chunk_size,
                             kwargs)
    return _flat_vmap(func, size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int):
        return
    for x in tree_flatten(out_dims)[0]:
        if x is not None and not isinstance(x, int):
            raise ValueError(f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                             "None or a python collection of ints representing where in the outputs the "
                             "vmapped dimension should appear.")


def _process_batched_inputs(in_dims, args, func):
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         "trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in_dims = broadcast_prefix(in_dims, args)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs "
                         f"has structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in_dims)):
        if not isinstance(d, int) and d is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, TensorImpl):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, "
                             "please use None as the respective in_dim")
        if d is not None:
            n = len(arg._shape)
            if d < -n or d >= n:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                                 f"input, but that input is a Tensor of dimensionality {n} so expected in_dim "
                                 f"to satisfy -{n} <= in_dim < {n}.")
            if d < 0:
                flat_in_dims[i] = d % n
    return _batch_size(flat_in_dims, flat_args), flat_in_dims, flat_args, spec


def _batch_size(flat_in_dims, flat_args):
    sizes = [a._shape[d] for d, a in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got "
                         f"sizes {sizes} for the mapped dimension")
    return sizes[0]


def _flat_vmap(func, size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs):
    _batching.register()
    lv = _b.push_level(size, randomness)
    prev = _st().dk
    if randomness != "same":
        # factory ops (rand) have no batched argument: the key in the include set sends them to the
        # layer, which applies the randomness rule
        _st().dk = (prev[0] | FTB, prev[1] | FTB)
    first_seq = next_seq()
    try:
        level = lv.level
        inputs = [a if d is None else _add_batch_dim(a, d, level) for d, a in zip(flat_in_dims, flat_args)]
        outputs = func(*tree_unflatten(inputs, spec), **kwargs)
    finally:
        _st().dk = prev
        _b.pop_level(lv)
    roots = [o.grad_fn for o in tree_flatten(outputs)[0]
             if isinstance(o, BatchedTensor) and o._level == level and o.grad_fn is not None]
    if roots:
        _reduce_escaping_grads(roots, level, first_seq)
    return _unwrap_batched(outputs, out_dims, level, size, func)


# ---- gradients that leave a finished level --------------------------------------------------------
# Autograd records the logical ops, so after vmap returns, backward carries BatchedTensor gradients
# through the nodes recorded inside it. A gradient for a tensor that was not batched at that level (a
# captured weight, a tensor from outside) must be the sum over the batch, as if the physical ops had
# been recorded: a post-hook on each node recorded inside the vmap sums the gradients it sends along
# edges that lead out of it, before they meet any other gradient of that tensor.
def _reduce_escaping_grads(roots, level, first_seq):
    seen = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        out = []
        for k, e in enumerate(n._next):
            if e is None:
                continue
            m = e[0]
            if isinstance(m, AccumulateGrad):
                v = m.variable
                if not (v.__class__ is BatchedTensor and v._level == level):
                    out.append(k)
            elif m._seq >= first_seq:
                stack.append(m)
            else:
                out.append(k)
        if out:
            n.register_hook(functools.partial(_sum_batched, level=level, which=out))


def _sum_batched(grad_inputs, grad_outputs, level, which):
    gs = list(grad_inputs)
    changed = False
    for k in which:
        g = gs[k] if k < len(gs) else None
        if g.__class__ is BatchedTensor and g._level == level:
            gs[k] = _ops.sum_dim_IntList.call(g._value, [g._bdim], False, None)
            changed = True
    return tuple(gs) if changed else None


def _unwrap_batched(outputs, out_dims, level, size, func):
    name = _get_name(func)
    flat, spec = tree_flatten(outputs)
    if isinstance(outputs, TensorImpl):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            flat_out_dims = None
    else:
        flat_out_dims = broadcast_prefix(out_dims, outputs)
    if flat_out_dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but "
                         f"outputs has structure {spec}.")
    res = []
    for out, d in zip(flat, flat_out_dims):
        if d is None:
            if isinstance(out, BatchedTensor) and out._level == level:
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            res.append(out)
            continue
        if not isinstance(out, TensorImpl):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. "
                             "Did you mean to set out_dims= to None for output?")
        n = len(out._shape) + 1
        if d < -n or d >= n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        res.append(_remove_batch_dim(out, level, size, d % n))
    return tree_unflatten(res, spec)


def _chunked_vmap(func, flat_in_dims, flat_args, spec, out_dims, randomness, size, chunk_size, kwargs):
    import ember  # lazy: the public functions (cat, rng state)
    starts = list(range(0, size, chunk_size))
    rs = ember.random.get_rng_state() if randomness == "same" else None
    outs = []
    for s in starts:
        n = min(chunk_size, size - s)
        chunk = [a if d is None else _ops.narrow.call(a, d, s, n) for d, a in zip(flat_in_dims, flat_args)]
        if rs is not None:
            ember.random.set_rng_state(rs)
        outs.append(_flat_vmap(func, n, flat_in_dims, chunk, spec, out_dims, randomness, kwargs))
    flats = [tree_flatten(o) for o in outs]
    out_spec = flats[0][1]
    first = outs[0]
    if isinstance(first, TensorImpl):
        flat_out_dims = [out_dims if not isinstance(out_dims, tuple) else out_dims[0]]
    else:
        flat_out_dims = broadcast_prefix(out_dims, first)
    cols = []
    for j, d in enumerate(flat_out_dims):
        parts = [f[0][j] for f in flats]
        cols.append(parts[0] if d is None else ember.cat(parts, dim=d))
    return tree_unflatten(cols, out_spec)
