"""The FuncTorchBatched layer: one boxed fallback serves every operator (functorch's
BatchedFallback plus the batching rules of aten/src/ATen/functorch/BatchRules*.cpp).

A call whose key set holds FuncTorchBatched lands in `batched_fallback(op, below, args)`. It finds the
highest level among the BatchedTensor arguments, unwraps the tensors batched at that level (the others
are unbatched at it, lower-level BatchedTensors included), applies the op's batching rule to the
physical tensors through the dispatcher's front door, and wraps the outputs at that level.

The layer sits below Autograd (ember/core/keys.py): autograd (and forward AD) have recorded and
differentiated the logical op already, so everything the rules call runs with the Autograd and ForwardAD
keys excluded.

Each operator's rule is picked once and cached (`_info`), from data where possible (RULES, POINTWISE_EXTRA,
BATCH_FRONT, ALL_DIMS, SELF_ONLY, DIMS_DENY and the schema's dim arguments):

- pointwise: every op tagged `pointwise` and POINTWISE_EXTRA: batch dims moved to the front, logical
  ranks padded so that broadcasting lines up; a single batched input keeps its batch dim where it is;
- dims: ops with dimension arguments (reductions, softmax, cumulative ops, views such as transpose,
  select, slice, narrow, unsqueeze, squeeze, movedim, flatten, unflatten, diagonal, split, unbind, gather,
  scatter, cat, stack, sort, topk, ...): the batch dim goes first and each dim argument shifts by one;
  a reduction over all dims (dim=None) runs on the (B, -1) reshape;
- shape: view, _unsafe_view, reshape, expand, permute, repeat, squeeze, t, as_strided, view_as_real/complex;
- matmul family: mm, bmm, mv, dot, matmul, linalg_matmul, addmm, addmv, baddbmm, addbmm, outer, einsum
  (an explicit output: the batch gets a letter), trace;
- linalg of one (..., n, n) input (det, slogdet, inv, cholesky, eig*, lu*, qr, svd*, matrix_exp, pinverse,
  matrix_power) and tril/triu, constant_pad_nd: the batch dim first is all they need;
- nn: convolution and convolution_backward (the batch folded into N, or into groups when the weight is
  batched: per-sample weight gradients, model ensembles), max/avg/adaptive pooling and their backward
  (folded into N), native_batch_norm (folded into the channels), native_layer_norm and its backward,
  embedding and embedding_dense_backward, nll_loss forward/backward and mse_loss (decomposed into batched
  ops), threshold_backward and the activations' backward ops (pointwise), masked_fill with a tensor value;
- indexing: index.Tensor with unbatched indices, index_select with an unbatched index, gather/scatter
  (dims), select/slice (dims); a view op's result is a view of its batched base (_base, version counter),
  so autograd's and forward AD's in-place-through-a-view rules work on batched tensors;
- creation: *_like and new_* ops of a batched tensor are batched (as in torch: a backward formula may
  write a batched gradient into grad.new_zeros(...)); factory ops give unbatched results;
- item() / .tolist() / bool() of a batched tensor: torch's errors;
- random ops follow vmap's randomness ("error", "different", "same");
- CompositeImplicitAutograd ops without a rule run their decomposition on the logical tensors;
- everything else: the slow fallback loops over the batch, stacks the results and warns once per op
  with torch's words. An in-place op writing a batched value into a tensor not batched at the level
  raises torch's error.
"""
import warnings

from ember._functorch import batched as _b
from ember._functorch.batched import BatchedTensor, CONTROL_FLOW_ERR, FTB, ITEM_ERR, make_batched
from ember._generated import ops as _ops
from ember.core import dtype as _dt, tls
from ember.core.errors import fmt_shape, wrap_dim
from ember.core.keys import AUTOGRAD_MASK, DispatchKey as K
from ember.core.tensor_impl import TensorImpl
from ember.dispatch import operator as _operator
from ember.kernels.meta.pointwise import broadcast_shapes

_st = tls.current
_movedim = _ops.movedim_int.call
_unsqueeze = _ops.unsqueeze.call
_select = _ops.select_int.call
_reshape = _ops.reshape.call
_expand = _ops.expand.call
_stack = _ops.stack.call
_matmul = _ops.matmul.call
_permute = _ops.permute.call

PERF_WARNING = ("There is a performance drop because we have not yet implemented the batching rule for {}. "
                "Please file us an issue on GitHub so that we can prioritize its implementation.")
RANDOM_ERR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' "
              "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")
INPLACE_ARITH_ERR = ("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
                     "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
                     "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
                     "use out-of-place operators instead of inplace arithmetic. If said operator is being "
                     "called inside the PyTorch framework, please file a bug report instead.")
INPLACE_ERR = ("vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in "
               "extra_args that has more elements than `self`. This happened due to `other` being vmapped "
               "over but `self` not being vmapped over at level {level}. Please try to use out-of-place "
               "operators instead of {op}. If said operator is being called inside the PyTorch framework, "
               "please file a bug report instead.")
UNBATCHED_INPLACE_RANDOM_ERR = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. "
                                "This will appear like same randomness. If this is necessary for your usage, "
                                "please file an issue with functorch.")


_WARNED = set()


def _warn_slow(op):
    name = f"{op.ns}::{op.name}"
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(PERF_WARNING.format(name), UserWarning, stacklevel=4)


# ---- per-operator facts read from the schema, once -------------------------------------------------
DIM_NAMES = frozenset(("dim", "dim0", "dim1", "dim2", "dims", "start_dim", "end_dim", "source",
                       "destination", "dimension"))


class OpInfo:
    __slots__ = ("tensors", "lists", "dims", "inplace", "mutable", "keepdim", "size", "rule", "random",
                 "composite", "name", "view")

    def __init__(self, op):
        s = op.schema
        self.name = op.name
        self.tensors, self.lists, self.dims, self.mutable = [], [], [], []
        self.keepdim = self.size = None
        for i, a in enumerate(s.arguments):
            if a.base == "Tensor":
                (self.lists if a.is_list else self.tensors).append(i)
                if a.is_write:
                    self.mutable.append(i)
            elif a.name in DIM_NAMES and a.base == "int":
                self.dims.append((i, a.is_list))
            elif a.name == "keepdim":
                self.keepdim = i
            elif a.name == "size" and a.is_list:
                self.size = i
        self.inplace = bool(self.mutable) and self.mutable[0] == 0 and not s.is_out
        # a view op's results are views of self at the logical level too (_base, version counter), so
        # autograd's and forward AD's view rules (an in-place write through a view) see the base
        self.view = s.is_view and op.name not in ("detach", "reshape", "_reshape_alias")
        self.random = "nondeterministic_seeded" in op.tags
        kernels = op.kernels
        self.composite = (K.CPU not in kernels and (K.CompositeImplicitAutograd in kernels))
        self.rule = None


_INFO = {}


def _info(op):
    i = _INFO.get(op)
    if i is None:
        i = _INFO[op] = OpInfo(op)
        i.rule = _pick_rule(op, i)
    return i


# ---- the fallback -----------------------------------------------------------------------------------
# what the rules run without: Autograd and ForwardAD record and differentiate the logical op, above
_PHYS_DROP = AUTOGRAD_MASK | (1 << K.ForwardAD)


def batched_fallback(op, below, args):
    info = _INFO.get(op) or _info(op)
    lvl = -1
    for i in info.tensors:
        a = args[i]
        if a.__class__ is BatchedTensor and a._level > lvl:
            lvl = a._level
    for i in info.lists:
        for a in args[i] or ():
            if a.__class__ is BatchedTensor and a._level > lvl:
                lvl = a._level
    if lvl < 0:
        if info.random and _b.STACK:
            return _random_unbatched(op, below, args, info)
        for i in info.tensors:
            a = args[i]
            if a is not None and getattr(a, "_keys", 0) & FTB and a._np is None and a.__class__ is not BatchedTensor:
                raise RuntimeError(f"vmap: {op.ns}::{op.name} got a tensor made from a BatchedTensor without the "
                                   "dispatcher (Python code read its data directly); such code cannot run under "
                                   "vmap")
        return below(*args)
    prev = _st().dk
    # below Autograd: the logical op is recorded already. FuncTorchBatched leaves the include set (vmap
    # puts it there to see factory ops): the tensors of lower levels carry the key themselves
    _st().dk = (prev[0] & ~FTB, prev[1] & ~_PHYS_DROP)
    try:
        r = info.rule(op, below, args, info, lvl)
    finally:
        _st().dk = prev
    if info.view:
        _link_views(r, args[0])
    return r


def _link_views(r, base):
    if base.__class__ is not BatchedTensor:
        return
    root = base._base if base._base is not None else base
    vc = base._version_counter()
    for t in (r if isinstance(r, (tuple, list)) else (r,)):
        if t.__class__ is BatchedTensor and t is not base:
            t._base = root
            t._vc = vc


def _size_at(lvl, args, info):
    for i in info.tensors:
        a = args[i]
        if a.__class__ is BatchedTensor and a._level == lvl:
            return a._value._shape[a._bdim]
    for i in info.lists:
        for a in args[i] or ():
            if a.__class__ is BatchedTensor and a._level == lvl:
                return a._value._shape[a._bdim]
    raise AssertionError("no batched argument")


def _front(a, lvl):
    """Physical tensor of `a` with its batch dim first, or None when `a` is not batched at `lvl`."""
    if a.__class__ is BatchedTensor and a._level == lvl:
        v, b = a._value, a._bdim
        return v if b == 0 else _movedim(v, b, 0)
    return None


def _front_or_expand(a, lvl, B):
    p = _front(a, lvl)
    if p is None:
        p = _expand(_unsqueeze(a, 0), (B,) + tuple(a._shape), False)
    return p


def _wrap(r, lvl, bdim=0):
    if isinstance(r, TensorImpl):
        return make_batched(r, bdim, lvl)
    if isinstance(r, tuple):
        return tuple(_wrap(x, lvl, bdim) for x in r) if not hasattr(r, "_fields") else type(r)(
            *[_wrap(x, lvl, bdim) for x in r])
    if isinstance(r, list):
        return [_wrap(x, lvl, bdim) for x in r]
    return r


def _inplace_check(op, args, info, lvl):
    """An in-place op writing a batched value into a tensor not batched at this level."""
    self = args[0]
    if self.__class__ is BatchedTensor and self._level == lvl:
        return
    if len(info.tensors) == 2 and info.rule is rule_pointwise:
        # torch's binary in-place batching rules say "inplace arithmetic"; its fallback names the op
        raise RuntimeError(INPLACE_ARITH_ERR)
    _warn_slow(op)
    depth = next((k + 1 for k, lv in enumerate(_b.STACK) if lv.level == lvl), lvl)
    raise RuntimeError(INPLACE_ERR.format(op=f"{op.ns}::{op.name}", level=depth))


# ---- the slow fallback: a loop over the batch -------------------------------------------------------
def rule_loop(op, below, args, info, lvl, warn=True):
    if info.inplace:
        _inplace_check(op, args, info, lvl)
    if warn:
        _warn_slow(op)
    B = _size_at(lvl, args, info)
    call = op.call
    results = []
    for k in range(B):
        a = list(args)
        for i in info.tensors:
            x = a[i]
            if x.__class__ is BatchedTensor and x._level == lvl:
                a[i] = _select(x._value, x._bdim, k)
        for i in info.lists:
            if a[i] is not None:
                a[i] = [_select(x._value, x._bdim, k) if x.__class__ is BatchedTensor and x._level == lvl
                        else x for x in a[i]]
        results.append(call(*a))
    if info.inplace:
        return args[0]
    if info.mutable and op.schema.is_out:
        return args[info.mutable[0]] if len(info.mutable) == 1 else tuple(args[i] for i in info.mutable)
    return _stack_results(results, lvl)


def _stack_results(results, lvl):
    if not results:
        raise RuntimeError("vmap: the slow fallback cannot run over a batch of size 0")
    r0 = results[0]
    if isinstance(r0, TensorImpl):
        return make_batched(_stack(results, 0), 0, lvl)
    if isinstance(r0, (tuple, list)):
        cols = [_stack_results([r[j] for r in results], lvl) for j in range(len(r0))]
        if isinstance(r0, list):
            return cols
        return type(r0)(*cols) if hasattr(r0, "_fields") else tuple(cols)
    if r0 is None:
        return None
    raise RuntimeError(CONTROL_FLOW_ERR)


# ---- pointwise ------------------------------------------------------------------------------------
POINTWISE_EXTRA = frozenset((
    "threshold_backward", "hardtanh_backward", "elu_backward", "leaky_relu_backward", "gelu_backward",
    "silu_backward", "sigmoid_backward", "tanh_backward", "softplus_backward", "hardsigmoid_backward",
    "hardswish_backward", "mish_backward", "logit_backward", "where", "masked_fill", "clamp", "clamp_min",
    "clamp_max", "clip", "lerp", "addcmul", "addcdiv", "hardtanh", "elu", "leaky_relu", "gelu", "silu",
    "softplus", "hardsigmoid", "hardswish", "mish", "relu6", "celu", "selu", "threshold", "rrelu",
    "nan_to_num", "logit", "xlogy", "special_xlogy", "pow", "float_power", "heaviside", "isclose",
    "polygamma", "mvlgamma", "fill", "fill_", "zero_", "copy_", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "softshrink", "hardshrink", "prelu_scalar", "polar", "complex"))


def rule_pointwise(op, below, args, info, lvl):
    if info.inplace and info.name not in ("add_", "sub_"):
        _inplace_check(op, args, info, lvl)
    tix = info.tensors
    # one batched tensor and no other tensor argument: the op cannot care where the batch dim is
    batched = [i for i in tix if args[i].__class__ is BatchedTensor and args[i]._level == lvl]
    others = [i for i in tix if i not in batched and isinstance(args[i], TensorImpl)]
    if len(batched) == 1 and not others and not info.lists:
        i = batched[0]
        x = args[i]
        a = list(args)
        a[i] = x._value
        r = op.call(*a)
        return args[0] if info.inplace else _wrap(r, lvl, x._bdim)
    rank = 0
    for i in tix:
        x = args[i]
        if isinstance(x, TensorImpl) and len(x._shape) > rank:
            rank = len(x._shape)
    a = list(args)
    cast = _zero_dim_promotion(op, args, tix, batched, rank)
    for i in batched:
        x = args[i]
        p = _front(x, lvl)
        for _ in range(rank - len(x._shape)):
            p = _unsqueeze(p, 1)
        if cast is not None and p._dtype is not cast and p._dtype is not _dt.bool_:
            p = p.to(cast)
        a[i] = p
    if info.inplace and not (args[0].__class__ is BatchedTensor and args[0]._level == lvl):
        # torch's add_/sub_ rule lets the physical shapes speak
        shape = broadcast_shapes(*[a[i]._shape for i in tix if isinstance(a[i], TensorImpl)])
        raise RuntimeError(f"output with shape {fmt_shape(a[0]._shape)} doesn't match the broadcast shape "
                           f"{fmt_shape(shape)}")
    r = op.call(*a)
    return args[0] if info.inplace else _wrap(r, lvl)


def rule_masked_fill(op, below, args, info, lvl):
    """masked_fill with a Tensor value: a batched value is no longer 0-d physically, so the fill is a
    where() on the logical tensors."""
    self, mask, value = args[0], args[1], args[2]
    if not (value.__class__ is BatchedTensor and value._level == lvl):
        return rule_pointwise(op, below, args, info, lvl)
    if info.inplace:
        _inplace_check(op, args, info, lvl)
    r = _ops.where_self.call(mask, _ops._to_copy.call(value, self._dtype, None, None, None, False, None), self)
    if info.inplace:
        return _ops.copy_.call(self, r, False)
    return r


def _zero_dim_promotion(op, args, tix, batched, rank):
    """A logically 0-d batched tensor becomes 1-d physically, which would change type promotion (a 0-d
    tensor does not decide the result's dtype against dimensioned ones): the dtype to cast to, or None."""
    if not rank:
        return None
    zero = False
    dts = set()
    for i in tix:
        x = args[i]
        if isinstance(x, TensorImpl):
            dts.add(x._dtype)
            if not x._shape and i in batched:
                zero = True
    if not zero or len(dts) < 2 or _dt.bool_ in dts:
        return None
    parts = tuple((args[i]._dtype, 0 if args[i]._shape else 1) for i in tix if isinstance(args[i], TensorImpl))
    return _dt.result_type_of(parts)


# ---- ops with dimension arguments -----------------------------------------------------------------
RANK_PLUS_ONE = frozenset(("unsqueeze", "stack", "diag_embed", "unflatten"))
# the other tensors of these ops are not laid out like self: they must be unbatched
SELF_ONLY = frozenset(("index_select", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill",
                       "index_fill_", "index_reduce", "repeat_interleave", "take", "put", "put_"))
# a None (or for the reductions an empty list) dim means every dim
ALL_DIMS = frozenset(("sum", "mean", "nansum", "amax", "amin", "std", "var", "std_mean", "var_mean",
                      "linalg_vector_norm", "norm", "count_nonzero", "argmax", "argmin", "all", "any",
                      "aminmax", "nanmean", "prod", "logsumexp"))


def rule_dims(op, below, args, info, lvl):
    if info.inplace:
        _inplace_check(op, args, info, lvl)
    name = info.name
    tix = info.tensors
    first = args[tix[0]] if tix else args[info.lists[0]][0]
    rank = len(first._shape) + (1 if name in RANK_PLUS_ONE else 0)
    if rank == 0 and not info.lists:
        return _dims_of_scalar(op, below, args, info, lvl)
    a = list(args)
    B = None
    for i in tix:
        x = args[i]
        if not isinstance(x, TensorImpl):
            continue
        p = _front(x, lvl)
        if p is None:
            if name in SELF_ONLY:
                if i == tix[0]:
                    break  # self unbatched, its index batched: the rule does not apply
                continue
            # an unbatched tensor beside batched ones (zeros.scatter(dim, index, batched grad)): every
            # sample sees the same values
            B = B or _size_at(lvl, args, info)
            p = _front_or_expand(x, lvl, B)
        a[i] = p
    else:
        for i in info.lists:
            B = B or _size_at(lvl, args, info)
            a[i] = [_front_or_expand(x, lvl, B) for x in args[i]]
        for i, is_list in info.dims:
            d = a[i]
            if d is None or (is_list and not d and name in ALL_DIMS):
                if name in ALL_DIMS:
                    return _reduce_all(op, args, a, info, lvl, i, is_list)
                continue
            if is_list:
                a[i] = [wrap_dim(x, rank) + 1 for x in d]
            else:
                a[i] = wrap_dim(d, rank) + 1
        r = op.call(*a)
        return args[0] if info.inplace else _wrap(r, lvl)
    return rule_loop(op, below, args, info, lvl)


def _dims_of_scalar(op, below, args, info, lvl):
    """A logically 0-d self (dim 0 and -1 name the scalar itself): run on (B, 1), give back (B,)."""
    B = _size_at(lvl, args, info)
    a = list(args)
    for i in info.tensors:
        x = args[i]
        if isinstance(x, TensorImpl):
            if len(x._shape):
                return rule_loop(op, below, args, info, lvl)
            a[i] = _unsqueeze(_front_or_expand(x, lvl, B), 1)
    for i, is_list in info.dims:
        d = a[i]
        if d is None or (is_list and not d and info.name in ALL_DIMS):
            if info.name in ALL_DIMS:
                a[i] = [1] if is_list else 1
            continue
        if is_list:
            a[i] = [wrap_dim(x, 0) + 1 for x in d]
        else:
            a[i] = wrap_dim(d, 0) + 1
    r = op.call(*a)
    if info.inplace:
        return args[0]
    flat = (lambda t: _reshape(t, (B,)) if isinstance(t, TensorImpl) and t.numel() == B else t)
    r = type(r)(*map(flat, r)) if hasattr(r, "_fields") else tuple(map(flat, r)) if isinstance(r, tuple) else flat(r)
    return _wrap(r, lvl)


def _reduce_all(op, args, a, info, lvl, di, is_list):
    x = args[info.tensors[0]]
    p = a[info.tensors[0]]
    B = p._shape[0]
    a[info.tensors[0]] = _reshape(p, (B, -1))
    a[di] = [1] if is_list else 1
    r = op.call(*a)
    kd = info.keepdim
    if kd is not None and a[kd]:
        shape = (B,) + (1,) * len(x._shape)
        r = tuple(_reshape(t, shape) for t in r) if isinstance(r, tuple) else _reshape(r, shape)
    return _wrap(r, lvl)


# reductions with no dim argument: the overload with one, on the (B, -1) reshape
def _full_reduction(fn):
    def rule(op, below, args, info, lvl):
        p = _front(args[0], lvl)
        return _wrap(fn(_reshape(p, (p._shape[0], -1)), *args[1:]), lvl)
    return rule


# ---- shape ops ----------------------------------------------------------------------------------
def rule_view(op, below, args, info, lvl):
    p = _front(args[0], lvl)
    size = tuple(args[1])
    try:
        r = op.call(p, (p._shape[0],) + size, *args[2:])
    except RuntimeError:
        # the logical tensor is viewable while its physical layout (batch dim moved first) is not:
        # a copy with the logical values (torch's rule keeps a view here)
        if op.name != "view":
            raise
        r = _reshape(p, (p._shape[0],) + size)
    return make_batched(r, 0, lvl)


def rule_expand(op, below, args, info, lvl):
    x = args[0]
    p = _front(x, lvl)
    size = tuple(args[1])
    if len(size) < len(x._shape):
        return rule_loop(op, below, args, info, lvl)
    for _ in range(len(size) - len(x._shape)):
        p = _unsqueeze(p, 1)
    return make_batched(op.call(p, (p._shape[0],) + size, *args[2:]), 0, lvl)


def rule_permute(op, below, args, info, lvl):
    x = args[0]
    p = _front(x, lvl)
    n = len(x._shape)
    dims = [0] + [wrap_dim(d, n) + 1 for d in args[1]]
    if len(dims) != n + 1:
        return rule_loop(op, below, args, info, lvl)
    return make_batched(op.call(p, dims), 0, lvl)


def rule_repeat(op, below, args, info, lvl):
    x = args[0]
    p = _front(x, lvl)
    reps = tuple(args[1])
    if len(reps) < len(x._shape):
        return rule_loop(op, below, args, info, lvl)
    for _ in range(len(reps) - len(x._shape)):
        p = _unsqueeze(p, 1)
    return make_batched(op.call(p, (1,) + reps), 0, lvl)


def rule_as_strided(op, below, args, info, lvl):
    """as_strided on the logical tensor: its strides and offset are the physical ones less the batch
    dim (BatchedTensor.stride / storage_offset), so the physical view adds the batch dim's stride."""
    x, size, stride = args[0], args[1], args[2]
    offset = args[3] if len(args) > 3 else None
    v, b = x._value, x._bdim
    r = op.call(v, (v._shape[b],) + tuple(size), (v.stride()[b],) + tuple(stride),
                offset if offset is not None else v.storage_offset())
    return make_batched(r, 0, lvl)


def rule_squeeze(op, below, args, info, lvl):
    x = args[0]
    dims = [i + 1 for i, n in enumerate(x._shape) if n == 1]
    return make_batched(_ops.squeeze_dims.call(_front(x, lvl), dims), 0, lvl)


def rule_keep(op, below, args, info, lvl):
    """One tensor argument whose layout the op keeps (clone, detach, _to_copy, *_like, fill_, zero_):
    the batch dim stays where it is."""
    x = args[0]
    if x.__class__ is not BatchedTensor or x._level != lvl:
        return rule_loop(op, below, args, info, lvl)
    a = list(args)
    a[0] = x._value
    r = op.call(*a)
    return x if info.inplace else _wrap(r, lvl, x._bdim)


def rule_t(op, below, args, info, lvl):
    x = args[0]
    if len(x._shape) < 2:
        return make_batched(x._value, x._bdim, lvl)
    return make_batched(_ops.transpose_int.call(_front(x, lvl), 1, 2), 0, lvl)


def rule_new_empty_strided(op, below, args, info, lvl):
    """new_empty_strided of a batched tensor: a batch of tensors with that size and those strides (the
    batch dim first, its stride past the end of one sample's memory)."""
    x, size, stride = args[0], tuple(args[1]), tuple(args[2])
    v = x._value
    extent = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))
    r = op.call(v, (v._shape[x._bdim],) + size, (max(extent, 1),) + stride, *args[3:])
    return make_batched(r, 0, lvl)


def rule_view_as_complex(op, below, args, info, lvl):
    return make_batched(op.call(_front(args[0], lvl)), 0, lvl)


def rule_new(op, below, args, info, lvl):
    """new_zeros / new_ones / new_empty / new_full of a batched tensor: batched, as in torch (a
    formula may scatter a batched gradient into it)."""
    x = args[0]
    a = list(args)
    a[0] = x._value
    a[1] = (x._value._shape[x._bdim],) + tuple(args[1])
    return make_batched(op.call(*a), 0, lvl)


def rule_item(op, below, args, info, lvl):
    raise RuntimeError(ITEM_ERR)


def rule_control_flow(op, below, args, info, lvl):
    raise RuntimeError(CONTROL_FLOW_ERR)


# ---- matmul family ------------------------------------------------------------------------------
def _bmatmul(x, y, lvl):
    """matmul's logical semantics on x, y (either may be batched at lvl): a tensor, batched or not."""
    px, py = _front(x, lvl), _front(y, lvl)
    if px is None and py is None:
        return _matmul(x, y)
    nx, ny = len(x._shape), len(y._shape)
    if nx == 1 and ny == 1:
        if px is None:
            px = x
        if py is None:
            py = y
        return make_batched(_ops.sum_dim_IntList.call(px * py, [-1], False, None), 0, lvl)
    # 1-d operands become matrices, as matmul does, and lose that dim at the end
    sq = None
    if nx == 1:
        px = _unsqueeze(px, -2) if px is not None else None
        x = _unsqueeze(x, 0) if px is None else x
        nx, sq = 2, -2
    if ny == 1:
        py = _unsqueeze(py, -1) if py is not None else None
        y = _unsqueeze(y, -1) if py is None else y
        ny, sq = 2, -1
    rank = max(nx, ny)
    if px is not None:
        for _ in range(rank - nx):
            px = _unsqueeze(px, 1)
    else:
        px = x
    if py is not None:
        for _ in range(rank - ny):
            py = _unsqueeze(py, 1)
    else:
        py = y
    if px._shape[-1] == 1 and py._shape[-2] == 1:
        r = _ops.mul_Tensor.call(px, py)  # outer products (per-sample weight gradients): no GEMM loop
    elif py is y and len(py._shape) == 2 and len(px._shape) > 2:
        # a batch of matrices times one matrix: one GEMM over the stacked rows
        r = _ops.view.call(_matmul(_reshape(px, (-1, px._shape[-1])), py), tuple(px._shape[:-1]) + (py._shape[-1],))
    else:
        r = _matmul(px, py)
    if sq is not None:
        r = _ops.squeeze_dim.call(r, sq)
    return make_batched(r, 0, lvl)


_MM_RANKS = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}


def rule_matmul(op, below, args, info, lvl):
    x, y = args[0], args[1]
    ranks = _MM_RANKS.get(info.name)
    if ranks is not None and (len(x._shape), len(y._shape)) != ranks:
        return rule_loop(op, below, args, info, lvl, warn=False)  # the op's own error, on one sample
    return _bmatmul(x, y, lvl)


def rule_outer(op, below, args, info, lvl):
    return _bmatmul(_unsqueeze(args[0], -1), _unsqueeze(args[1], 0), lvl)


def rule_addmm(op, below, args, info, lvl):
    """addmm/addmv/baddbmm: beta * self + alpha * (mat1 @ mat2), on the logical tensors."""
    self, m1, m2, beta, alpha = args[:5]
    prod = _bmatmul(m1, m2, lvl)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return self * beta + prod if beta != 1 else self + prod


def rule_addr(op, below, args, info, lvl):
    self, v1, v2, beta, alpha = args
    if len(v1._shape) != 1 or len(v2._shape) != 1:
        return rule_loop(op, below, args, info, lvl, warn=False)  # the op's own error, on one sample
    prod = _bmatmul(_unsqueeze(v1, -1), _unsqueeze(v2, 0), lvl)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return self * beta + prod if beta != 1 else self + prod


def rule_vdot(op, below, args, info, lvl):
    x, y = args
    if len(x._shape) != 1 or len(y._shape) != 1:
        return rule_loop(op, below, args, info, lvl, warn=False)
    return _bmatmul(_ops.conj.call(x), y, lvl)


def rule_broadcast_dim(op, below, args, info, lvl):
    """Two tensors that broadcast, and a dim of the broadcast shape (linalg_cross, linalg_vecdot): ranks
    padded as for pointwise ops, the dim wrapped against the common rank and shifted by one."""
    x, y = args[0], args[1]
    d = args[2]
    if d is None or (info.name != "linalg_vecdot" and len(x._shape) != len(y._shape)):
        return rule_loop(op, below, args, info, lvl, warn=False)  # the op's own choice or error
    rank = max(len(x._shape), len(y._shape))
    a = list(args)
    for i in (0, 1):
        t = args[i]
        p = _front(t, lvl)
        if p is not None:
            for _ in range(rank - len(t._shape)):
                p = _unsqueeze(p, 1)
        else:  # linalg_cross wants equal ranks: an unbatched tensor gets its leading 1s too
            p = t
            for _ in range(rank + 1 - len(t._shape)):
                p = _unsqueeze(p, 0)
        a[i] = p
    a[2] = wrap_dim(d, rank) + 1
    return make_batched(op.call(*a), 0, lvl)


def rule_addbmm(op, below, args, info, lvl):
    self, b1, b2, beta, alpha = args[:5]
    prod = _ops.sum_dim_IntList.call(_bmatmul(b1, b2, lvl), [0], False, None)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return self * beta + prod if beta != 1 else self + prod


# ---- nn -----------------------------------------------------------------------------------------
def _fold(p, n):
    """(B, N, ...) -> (B*N, ...)"""
    return _reshape(p, (p._shape[0] * p._shape[1],) + tuple(p._shape[2:]))


def _unfold(r, B):
    return _reshape(r, (B, r._shape[0] // B) + tuple(r._shape[1:]))


def _fold_rule(full_rank, tensor_pos):
    """Ops over (N, C, *spatial) inputs whose tensors all share N (pooling and its backward): the batch
    folds into N. `tensor_pos`: the arguments that carry N (the others must be unbatched)."""
    def rule(op, below, args, info, lvl):
        B = _size_at(lvl, args, info)
        x0 = args[tensor_pos[0]]
        a = list(args)
        has_n = len(x0._shape) == full_rank
        for i in tensor_pos:
            x = args[i]
            if x is None:
                continue
            p = _front_or_expand(x, lvl, B)
            a[i] = _fold(p, 1) if has_n else p
        for i in info.tensors:
            if i not in tensor_pos and args[i].__class__ is BatchedTensor and args[i]._level == lvl:
                return rule_loop(op, below, args, info, lvl)
        r = op.call(*a)
        if has_n:
            r = tuple(_unfold(t, B) for t in r) if isinstance(r, tuple) else _unfold(r, B)
        return _wrap(r, lvl)
    return rule


def rule_convolution(op, below, args, info, lvl):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = args
    if transposed:
        return rule_loop(op, below, args, info, lvl)
    B = _size_at(lvl, args, info)
    nd = len(w._shape) - 2
    px, pw, pb = _front(x, lvl), _front(w, lvl), _front(bias, lvl) if bias is not None else None
    has_n = len(x._shape) == nd + 2
    if pw is None and pb is None:
        p = _fold(px, 1) if has_n else px
        r = op.call(p, w, bias, stride, padding, dilation, transposed, output_padding, groups)
        return make_batched(_unfold(r, B) if has_n else r, 0, lvl)
    # a batched weight: the batch becomes groups (B*groups groups over B*C channels)
    if px is None:
        px = _front_or_expand(x, lvl, B)
    if not has_n:
        px = _unsqueeze(px, 1)
    if pw is None:
        pw = _front_or_expand(w, lvl, B)
    N = px._shape[1]
    xin = _reshape(_movedim(px, 0, 1), (N, B * px._shape[2]) + tuple(px._shape[3:]))
    ww = _reshape(pw, (B * pw._shape[1],) + tuple(pw._shape[2:]))
    bb = None
    if bias is not None:
        bb = _reshape(_front_or_expand(bias, lvl, B), (-1,))
    r = op.call(xin, ww, bb, stride, padding, dilation, transposed, output_padding, groups * B)
    r = _movedim(_reshape(r, (N, B, pw._shape[1]) + tuple(r._shape[2:])), 1, 0)
    if not has_n:
        r = _ops.squeeze_dim.call(r, 1)
    return make_batched(r, 0, lvl)


def rule_convolution_backward(op, below, args, info, lvl):
    (go, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, mask) = args
    if transposed:
        return rule_loop(op, below, args, info, lvl)
    B = _size_at(lvl, args, info)
    pgo, px, pw = _front(go, lvl), _front(x, lvl), _front(w, lvl)
    nd = len(w._shape) - 2
    has_n = len(x._shape) == nd + 2
    gi = gw = gb = None
    if pw is None and not mask[1]:
        # the weight is shared: fold the batch into N
        fgo = _fold(_front_or_expand(go, lvl, B), 1) if has_n else _front_or_expand(go, lvl, B)
        fx = _fold(_front_or_expand(x, lvl, B), 1) if has_n else _front_or_expand(x, lvl, B)
        r = op.call(fgo, fx, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                    [mask[0], False, False])
        if mask[0]:
            gi = make_batched(_unfold(r[0], B) if has_n else r[0], 0, lvl)
    else:
        pgo = _front_or_expand(go, lvl, B) if pgo is None else pgo
        px = _front_or_expand(x, lvl, B) if px is None else px
        pw = _front_or_expand(w, lvl, B) if pw is None else pw
        if not has_n:
            pgo, px = _unsqueeze(pgo, 1), _unsqueeze(px, 1)
        N = px._shape[1]
        O = pw._shape[1]
        C = px._shape[2]
        xin = _reshape(_movedim(px, 0, 1), (N, B * C) + tuple(px._shape[3:]))
        gin = _reshape(_movedim(pgo, 0, 1), (N, B * O) + tuple(pgo._shape[3:]))
        ww = _reshape(pw, (B * O,) + tuple(pw._shape[2:]))
        r = op.call(gin, xin, ww, None, stride, padding, dilation, transposed, output_padding, groups * B,
                    [mask[0], mask[1], False])
        if mask[0]:
            g = _movedim(_reshape(r[0], (N, B, C) + tuple(r[0]._shape[2:])), 1, 0)
            if not has_n:
                g = _ops.squeeze_dim.call(g, 1)
            gi = make_batched(g, 0, lvl)
        if mask[1]:
            gw = make_batched(_reshape(r[1], (B, O) + tuple(r[1]._shape[1:])), 0, lvl)
        pgo_n = pgo
    if mask[2]:
        pgo_n = _front_or_expand(go, lvl, B)
        if not has_n:
            pgo_n = _unsqueeze(pgo_n, 1)
        dims = [1] + list(range(3, len(pgo_n._shape)))
        gb = make_batched(_ops.sum_dim_IntList.call(pgo_n, dims, False, None), 0, lvl)
    return gi, gw, gb


def rule_nll_loss_forward(op, below, args, info, lvl):
    x, target, weight, reduction, ignore_index = args
    out, w = _nll_terms(x, target, weight, ignore_index)
    total = w.sum()
    if reduction == 0:
        return out, total
    s = out.sum()
    return (s / total if reduction == 1 else s), total


def _nll_terms(x, target, weight, ignore_index):
    import ember  # lazy: the public functions, as composites use them
    cdim = 0 if len(x._shape) == 1 else 1
    valid = target != ignore_index
    t = ember.where(valid, target, ember.zeros_like(target))
    picked = -x.gather(cdim, t.unsqueeze(cdim)).squeeze(cdim)
    w = valid.to(x.dtype)
    if weight is not None:
        w = w * _class_weight(weight, t)
    return picked * w, w


def _class_weight(weight, t):
    return _ops.squeeze_dim.call(_ops.embedding.call(_unsqueeze(weight, 1), t, -1, False, False), -1)


def rule_nll_loss_backward(op, below, args, info, lvl):
    import ember  # lazy: the public functions, as composites use them
    go, x, target, weight, reduction, ignore_index, total = args
    cdim = 0 if len(x._shape) == 1 else 1
    valid = target != ignore_index
    t = ember.where(valid, target, ember.zeros_like(target))
    w = valid.to(x.dtype)
    if weight is not None:
        w = w * _class_weight(weight, t)
    g = go if reduction != 1 else go / total
    src = (-(w * g)).unsqueeze(cdim)
    return ember.zeros_like(x).scatter(cdim, t.unsqueeze(cdim), src)


def rule_mse_loss(op, below, args, info, lvl):
    x, y, reduction = args
    d = (x - y) ** 2
    return d if reduction == 0 else d.mean() if reduction == 1 else d.sum()


def rule_embedding(op, below, args, info, lvl):
    w, idx = args[0], args[1]
    if w.__class__ is BatchedTensor and w._level == lvl:
        return rule_loop(op, below, args, info, lvl)
    return make_batched(op.call(w, idx._value, *args[2:]), idx._bdim, lvl)


def rule_embedding_dense_backward(op, below, args, info, lvl):
    """Per-sample embedding gradients: sample b's indices shift by b * num_weights, one scatter-add into
    (B * num_weights, D) rows."""
    go, idx, num_weights, padding_idx, scale = args
    B = _size_at(lvl, args, info)
    pgo, pidx = _front_or_expand(go, lvl, B), _front_or_expand(idx, lvl, B)
    if padding_idx >= 0:  # rows of the padding index get no gradient: zero them before the shift
        keep = _ops.ne_Scalar.call(pidx, padding_idx)
        pgo = _ops.mul_Tensor.call(pgo, _ops.unsqueeze.call(keep, -1))
    shift = _ops.mul_Tensor.call(_ops.arange.call(B, None, None, pidx._device, None), num_weights)
    shift = _reshape(shift, (B,) + (1,) * (len(pidx._shape) - 1))
    r = op.call(pgo, _ops.add_Tensor.call(pidx, shift, 1), B * num_weights, -1, scale)
    return make_batched(_reshape(r, (B, num_weights) + tuple(r._shape[1:])), 0, lvl)


def rule_layer_norm_backward(op, below, args, info, lvl):
    """native_layer_norm_backward with an unbatched weight and bias: the input gradient on the physical
    tensors (the batch is one more leading dim), the weight and bias gradients summed per sample."""
    go, x, normalized_shape, mean, rstd, weight, bias, mask = args
    for t in (weight, bias):
        if t is not None and t.__class__ is BatchedTensor and t._level == lvl:
            return rule_loop(op, below, args, info, lvl)
    B = _size_at(lvl, args, info)
    pgo, px = _front_or_expand(go, lvl, B), _front_or_expand(x, lvl, B)
    pmean, prstd = _front_or_expand(mean, lvl, B), _front_or_expand(rstd, lvl, B)
    gi = gw = gb = None
    if mask[0]:
        gi = make_batched(op.call(pgo, px, normalized_shape, pmean, prstd, weight, bias,
                                  [True, False, False])[0], 0, lvl)
    lead = list(range(1, len(x._shape) - len(normalized_shape) + 1))
    if mask[1] and weight is not None:
        xhat = _ops.mul_Tensor.call(_ops.sub_Tensor.call(px, pmean, 1), prstd)
        gw = _ops.mul_Tensor.call(pgo, xhat)
        gw = make_batched(_ops.sum_dim_IntList.call(gw, lead, False, None) if lead else gw, 0, lvl)
    if mask[2] and bias is not None:
        gb = make_batched(_ops.sum_dim_IntList.call(pgo, lead, False, None) if lead else pgo, 0, lvl)
    return gi, gw, gb


def rule_batch_norm(op, below, args, info, lvl):
    """native_batch_norm: the batch folds into the channels ((B, N, C, ...) -> (N, B*C, ...)), so each
    sample keeps its own statistics (training) or uses the running ones (eval); weight, bias and running
    stats repeat per sample. Training with running stats to update stays in the loop."""
    x, weight, bias, rmean, rvar, training, momentum, eps = args
    if len(x._shape) < 2 or (training and (rmean is not None or rvar is not None)):
        return rule_loop(op, below, args, info, lvl)
    B = _size_at(lvl, args, info)
    px = _front_or_expand(x, lvl, B)
    N, C = px._shape[1], px._shape[2]
    xf = _reshape(_movedim(px, 0, 1), (N, B * C) + tuple(px._shape[3:]))
    per = [None if t is None else _reshape(_front_or_expand(t, lvl, B), (B * C,)) for t in (weight, bias, rmean, rvar)]
    out, smean, sinv = op.call(xf, *per, training, momentum, eps)
    out = _movedim(_reshape(out, (N, B, C) + tuple(out._shape[2:])), 1, 0)
    res = [make_batched(out, 0, lvl)]
    for t in (smean, sinv):
        res.append(make_batched(_reshape(t, (B, C)), 0, lvl) if t.numel() == B * C else t)
    return tuple(res)


def rule_layer_norm(op, below, args, info, lvl):
    for i in info.tensors[1:]:
        t = args[i]
        if t.__class__ is BatchedTensor and t._level == lvl:
            return rule_loop(op, below, args, info, lvl)
    a = list(args)
    a[0] = _front(args[0], lvl)
    return _wrap(op.call(*a), lvl)


def rule_index(op, below, args, info, lvl):
    x, indices = args
    if any(i.__class__ is BatchedTensor and i._level == lvl for i in indices if i is not None):
        return rule_loop(op, below, args, info, lvl)
    # unbatched indices: a leading full slice keeps the batch dim first when the indexed dims are
    # adjacent (advanced indexing puts the result where they were); otherwise they would move in front
    pos = [k for k, i in enumerate(indices) if i is not None]
    if pos and pos[-1] - pos[0] + 1 != len(pos):
        return rule_loop(op, below, args, info, lvl)
    return make_batched(op.call(_front(x, lvl), [None] + list(indices)), 0, lvl)


def rule_batch_front(op, below, args, info, lvl):
    """Ops that treat every leading dim as a batch dim (linalg on (..., n, n), padding of the last
    dims): the batch dim goes first, and that is all."""
    x = args[0]
    if x.__class__ is not BatchedTensor or x._level != lvl:
        return rule_loop(op, below, args, info, lvl)
    for i in info.tensors[1:]:
        if isinstance(args[i], TensorImpl):
            return rule_loop(op, below, args, info, lvl)
    a = list(args)
    a[0] = _front(x, lvl)
    return _wrap(op.call(*a), lvl)


def rule_einsum(op, below, args, info, lvl):
    """einsum: the batch dim gets a letter of its own, first in each batched operand and in the
    (explicit) output."""
    eq, tensors = args[0], args[1].copy() if isinstance(args[1], list) else list(args[1])
    eq = eq.replace(" ", "")
    if "->" not in eq:  # the implicit output: labels seen once, sorted, after the ellipsis dims
        labels = [c for c in eq if c.isalpha()]
        once = sorted(c for c in set(labels) if labels.count(c) == 1)
        eq = eq + "->" + ("..." if "..." in eq else "") + "".join(once)
    lhs, out = eq.split("->")
    subs = lhs.split(",")
    free = next((c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in eq), None)
    if free is None or len(subs) != len(tensors):
        return rule_loop(op, below, args, info, lvl)
    phys = []
    for k, t in enumerate(tensors):
        p = _front(t, lvl)
        if p is None:
            phys.append(t)
        else:
            phys.append(p)
            subs[k] = free + subs[k]
    return make_batched(op.call(",".join(subs) + "->" + free + out, phys, *args[2:]), 0, lvl)


def rule_trace(op, below, args, info, lvl):
    p = _front(args[0], lvl)
    return make_batched(_ops.sum_dim_IntList.call(_ops.diagonal.call(p, 0, 1, 2), [-1], False, None), 0, lvl)


def rule_decompose(op, below, args, info, lvl):
    """A CompositeImplicitAutograd op: its decomposition on the logical tensors (each op it calls
    dispatches through this layer again)."""
    return below(*args)


# ---- random ops -----------------------------------------------------------------------------------
def rule_random(op, below, args, info, lvl):
    mode = _randomness_of(lvl)
    if mode == "error":
        raise RuntimeError(RANDOM_ERR)
    if mode == "same":
        return _same_randomness(op, args, info, lvl)
    if info.inplace:
        _inplace_check(op, args, info, lvl)
    batched = [i for i in info.tensors if args[i].__class__ is BatchedTensor and args[i]._level == lvl]
    if batched == [info.tensors[0]]:
        # different randomness: one draw over the physical tensor gives each sample its own numbers
        x = args[batched[0]]
        a = list(args)
        a[batched[0]] = x._value
        r = op.call(*a)
        return x if info.inplace else _wrap(r, lvl, x._bdim)
    return rule_loop(op, below, args, info, lvl, warn=False)


def _randomness_of(lvl):
    for lv in _b.STACK:
        if lv.level == lvl:
            return lv.randomness
    return "different"


def _same_randomness(op, args, info, lvl):
    """randomness='same': every sample sees the same numbers (the generator restarts for each)."""
    import ember  # lazy: the generator state API
    B = _size_at(lvl, args, info)
    state = ember.random.get_rng_state()
    results = []
    for k in range(B):
        ember.random.set_rng_state(state)
        a = list(args)
        for i in info.tensors:
            x = a[i]
            if x.__class__ is BatchedTensor and x._level == lvl:
                a[i] = _select(x._value, x._bdim, k)
        results.append(op.call(*a))
    return args[0] if info.inplace else _stack_results(results, lvl)


def _random_unbatched(op, below, args, info):
    """A random op on unbatched inputs (a factory op such as rand) under vmap."""
    lv = _b.STACK[-1]
    if lv.randomness == "error":
        raise RuntimeError(RANDOM_ERR)
    if lv.randomness == "same":
        return below(*args)
    if info.inplace:
        raise RuntimeError(UNBATCHED_INPLACE_RANDOM_ERR)
    prev = _st().dk
    _st().dk = (prev[0] & ~FTB, prev[1])
    try:
        B = lv.size
        if info.size is not None and not info.tensors:
            a = list(args)
            a[info.size] = (B,) + tuple(args[info.size])
            return make_batched(op.call(*a), 0, lv.level)
        return make_batched(_stack([op.call(*args) for _ in range(B)], 0), 0, lv.level)
    finally:
        _st().dk = prev


# ---- the table: operator name (or name.overload) -> rule -----------------------------------------
RULES = {
    "view": rule_view, "_unsafe_view": rule_view, "reshape": rule_view, "_reshape_alias": None,
    "expand": rule_expand, "as_strided": rule_as_strided, "permute": rule_permute, "repeat": rule_repeat,
    "squeeze.default": rule_squeeze,
    "clone": rule_keep, "detach": rule_keep, "alias": rule_keep, "_to_copy": rule_keep, "zeros_like": rule_keep,
    "ones_like": rule_keep, "empty_like": rule_keep, "full_like": rule_keep, "fill_.Scalar": rule_keep,
    "zero_": rule_keep, "lift_fresh": rule_keep, "contiguous": rule_keep, "positive": rule_keep,
    "conj": rule_keep, "resolve_conj": rule_keep, "resolve_neg": rule_keep, "_conj": rule_keep,
    "real": rule_keep, "imag": rule_keep, "view.dtype": rule_keep, "view_as_real": rule_keep,
    "view_as_complex": rule_view_as_complex,
    "t": rule_t,
    "new_zeros": rule_new, "new_ones": rule_new, "new_empty": rule_new, "new_full": rule_new,
    "new_empty_strided": rule_new_empty_strided,
    "_local_scalar_dense": rule_item, "item": rule_item, "is_nonzero": rule_control_flow,
    "equal": rule_control_flow,
    "mm": rule_matmul, "bmm": rule_matmul, "mv": rule_matmul, "dot": rule_matmul, "matmul": rule_matmul,
    "linalg_matmul": rule_matmul, "_la_matmul": rule_matmul,
    "inner": None, "outer": rule_outer, "ger": rule_outer,
    "addr": rule_addr, "vdot": rule_vdot, "linalg_cross": rule_broadcast_dim,
    "linalg_vecdot": rule_broadcast_dim, "cross": rule_broadcast_dim,
    "addmm": rule_addmm, "addmv": rule_addmm, "baddbmm": rule_addmm, "addbmm": rule_addbmm,
    "convolution": rule_convolution, "convolution_backward": rule_convolution_backward,
    "max_pool2d_with_indices": _fold_rule(4, (0,)),
    "max_pool2d_with_indices_backward": _fold_rule(4, (0, 1, 7)),
    "max_pool1d_with_indices": _fold_rule(3, (0,)),
    "avg_pool2d": _fold_rule(4, (0,)), "avg_pool2d_backward": _fold_rule(4, (0, 1)),
    "adaptive_avg_pool2d": _fold_rule(4, (0,)), "_adaptive_avg_pool2d": _fold_rule(4, (0,)),
    "_adaptive_avg_pool2d_backward": _fold_rule(4, (0, 1)),
    "nll_loss_forward": rule_nll_loss_forward, "nll_loss_backward": rule_nll_loss_backward,
    "mse_loss": rule_mse_loss, "embedding": rule_embedding, "native_layer_norm": rule_layer_norm,
    "embedding_dense_backward": rule_embedding_dense_backward, "native_batch_norm": rule_batch_norm,
    "native_layer_norm_backward": rule_layer_norm_backward,
    "index.Tensor": rule_index, "einsum": rule_einsum, "trace": rule_trace,
    "masked_fill.Tensor": rule_masked_fill, "masked_fill_.Tensor": rule_masked_fill,
    "avg_pool3d": _fold_rule(5, (0,)), "max_pool3d_with_indices": _fold_rule(5, (0,)),
    "_adaptive_avg_pool3d": _fold_rule(5, (0,)), "adaptive_max_pool3d": _fold_rule(5, (0,)),
    "adaptive_max_pool2d": _fold_rule(4, (0,)),
    "median.default": _full_reduction(lambda p: _ops.median_dim.call(p, 1, False)[0]),
    "nanmedian.default": _full_reduction(lambda p: _ops.nanmedian_dim.call(p, 1, False)[0]),
    "sum.default": _full_reduction(lambda p, dtype: _ops.sum_dim_IntList.call(p, [1], False, dtype)),
    "mean.default": _full_reduction(lambda p, dtype: _ops.mean_dim.call(p, [1], False, dtype)),

    "prod.default": _full_reduction(lambda p, dtype: _ops.prod_dim_int.call(p, 1, False, dtype)),
    "max.default": _full_reduction(lambda p: _ops.amax.call(p, [1], False)),
    "min.default": _full_reduction(lambda p: _ops.amin.call(p, [1], False)),
    "all.default": _full_reduction(lambda p: _ops.all_dim.call(p, 1, False)),
    "any.default": _full_reduction(lambda p: _ops.any_dim.call(p, 1, False)),
}
# (..., n, n) linalg ops of one input, and others that treat all leading dims as batch dims
BATCH_FRONT = ("det", "linalg_det", "logdet", "slogdet", "linalg_slogdet", "inverse", "linalg_inv",
               "linalg_inv_ex", "cholesky", "linalg_cholesky", "linalg_cholesky_ex", "linalg_eig", "linalg_eigh",
               "linalg_eigvals", "linalg_eigvalsh", "linalg_lu", "linalg_lu_factor", "linalg_lu_factor_ex",
               "linalg_matrix_exp", "matrix_exp", "linalg_qr", "qr", "linalg_svd", "svd", "linalg_svdvals",
               "matrix_power", "linalg_matrix_power", "cholesky_inverse", "constant_pad_nd", "pinverse", "tril", "triu")
RULES.update({n: rule_batch_front for n in BATCH_FRONT})
# ops with dimension arguments whose other tensors are not shaped like self and are not in SELF_ONLY,
# or whose dims mean something else: the slow loop
DIMS_DENY = frozenset(("tensordot", "einsum", "take_along_dim", "diff", "trapezoid",
                       "trapz", "cumulative_trapezoid", "cross", "linalg_cross", "tensor_split",
                       "split_with_sizes", "unsafe_split", "index_put", "index_put_", "put",
                       "scatter_reduce", "renorm", "norm_except_dim", "_weight_norm", "linalg_norm",
                       "linalg_matrix_norm", "nuclear_norm", "frobenius_norm", "fft_fftn", "histogramdd",
                       "rot90", "tile", "kron"))


def _pick_rule(op, info):
    name = info.name
    r = RULES.get(f"{name}.{op.overload or 'default'}", RULES.get(name, 0))
    if r is None:
        return rule_loop
    if r:
        return r
    if info.random:
        return rule_random
    if "pointwise" in op.tags or name in POINTWISE_EXTRA or name.rstrip("_") in POINTWISE_EXTRA:
        return rule_pointwise
    if info.inplace and name.endswith("_"):
        # an in-place variant: pointwise when its functional op is
        f = _operator.OPERATORS.get(f"{op.ns}::{name[:-1]}" + (f".{op.overload}" if op.overload else ""))
        if f is not None and "pointwise" in f.tags:
            return rule_pointwise
    if info.dims and name not in DIMS_DENY and (
            name in ("linalg_vector_norm", "linalg_matrix_norm") or not name.startswith(("linalg_", "fft_"))):
        return rule_dims
    if info.composite:
        return rule_decompose
    return rule_loop


_registered = False


def register():
    """Put the fallback on the FuncTorchBatched key (once)."""
    global _registered
    if not _registered:
        _operator.BACKEND_FALLBACKS[K.FuncTorchBatched] = _operator.Kernel(batched_fallback, boxed=True)
        _operator.invalidate()
        _registered = True
