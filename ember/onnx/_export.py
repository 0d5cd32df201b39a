"""ember.onnx.export's work: capture the model's ATen calls with make_fx, then write one or a few
ONNX nodes per ATen node with onnx.helper.

The graph make_fx returns is the model at the traced shapes: parameters and buffers are get_attr
nodes (written as initializers, named after the module's parameter/buffer names), and view/reshape/
expand carry the traced sizes (see `_reshape_shape` for the batch dimension under dynamic_axes)."""
import math
import operator

import numpy as np

DEFAULT_OPSET = 17


class UnsupportedOp(Exception):
    """Raised by a converter: the node's ATen op (or this use of it) has no ONNX form here."""


def _np_dtype(dtype):
    return np.dtype(dtype.np)


def _meta(node):
    return node.meta.get("val") if hasattr(node, "meta") else None


class _Converter:
    def __init__(self, gm, opset, export_params, param_names, dynamic_batch):
        from onnx import helper, numpy_helper  # lazy: onnx is an optional dependency
        self.helper, self.numpy_helper = helper, numpy_helper
        self.gm, self.opset, self.export_params = gm, opset, export_params
        self.param_names = param_names      # id(tensor) -> "layer.weight"
        self.dynamic_batch = dynamic_batch
        self.nodes, self.initializers, self.param_inputs = [], [], []
        self.env = {}
        self._used = set()
        self._count = 0

    # ---- names and constants --------------------------------------------------------------------
    def fresh(self, hint):
        self._count += 1
        name = f"/{hint}_{self._count}"
        self._used.add(name)
        return name

    def const(self, array, hint="const"):
        name = self.fresh(hint)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, values, hint="shape"):
        return self.const(np.asarray(list(values), dtype=np.int64), hint)

    def emit(self, op, inputs, n_out=1, hint=None, **attrs):
        outs = [self.fresh(hint or op) for _ in range(n_out)]
        self.nodes.append(self.helper.make_node(op, list(inputs), outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    # ---- operands -------------------------------------------------------------------------------
    def value(self, arg, like_dtype=None):
        """The ONNX name of a node argument; a Python scalar becomes a constant of like_dtype."""
        from ember.fx import Node  # lazy: keeps the exporter's import of ember.fx in one place
        if isinstance(arg, Node):
            v = self.env[arg]
            if v is None or isinstance(v, list):
                raise UnsupportedOp(f"use of {arg.name}, an output of a multi-output op that is "
                                    "not exported (e.g. max_pool2d's indices, batch norm's stats)")
            return v
        if isinstance(arg, (bool, int, float)):
            return self.const(np.asarray(arg, dtype=like_dtype or np.float32), "scalar")
        raise UnsupportedOp(f"argument {arg!r}")

    def cast_to(self, name, arg, dtype):
        m = _meta(arg) if hasattr(arg, "meta") else None
        if m is not None and _np_dtype(m.dtype) != dtype:
            return self.emit("Cast", [name], to=self.helper.np_dtype_to_tensor_dtype(dtype))
        return name

    def get_attr(self, node):
        t = getattr(self.gm, node.target)
        arr = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
        name = self.param_names.get(id(t), node.target)
        if name in self._used:
            name = self.fresh(node.target)
        self._used.add(name)
        if self.export_params or id(t) not in self.param_names:
            self.initializers.append(self.numpy_helper.from_array(np.array(arr), name))
        else:
            self.param_inputs.append(self.helper.make_tensor_value_info(
                name, self.helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)))
        return name

    # ---- nodes ----------------------------------------------------------------------------------
    def call(self, node):
        if node.target is operator.getitem:
            seq, i = node.args
            outs = self.env[seq]
            if not isinstance(outs, list):
                raise UnsupportedOp(f"item {i} of {seq.target}")
            return outs[i]      # None for an output not exported: an error only if it is used
        opname = getattr(node.target, "name", None)
        overload = getattr(node.target, "overload", None)
        if opname is None or getattr(node.target, "namespace", "aten") != "aten":
            raise UnsupportedOp(str(node.target))
        overload = overload or "default"
        fn = _CONVERTERS.get(f"{opname}.{overload}") or _CONVERTERS.get(opname)
        if fn is None and opname.endswith("_") and not opname.startswith("_"):
            return self.call_inplace(node, opname[:-1], overload)
        if fn is None:
            raise UnsupportedOp(opname)
        return fn(self, node, *node.args, **node.kwargs)

    def call_inplace(self, node, base, overload):
        """An in-place op (masked_fill_, add_, ...) on a value the graph made itself: exported as
        its out-of-place form, whose result then stands for the mutated node in later uses. A
        mutation that other values could see (of an input, a parameter, a view, or a value some
        view aliases) has no ONNX form and is refused."""
        fn = _CONVERTERS.get(f"{base}.{overload}") or _CONVERTERS.get(base)
        target = node.args[0] if node.args else None
        if fn is None or not hasattr(target, "op"):
            raise UnsupportedOp(node.target.name)
        if target.op != "call_function" or _is_view(target) or any(
                u is not node and _is_view(u) for u in target.users):
            raise UnsupportedOp(f"in-place {node.target.name} of {target.name}, whose mutation "
                                "other values could see (an input, a parameter or a view)")
        out = fn(self, node, *node.args, **node.kwargs)
        self.env[target] = out
        return out


def _rank(node):
    return len(_meta(node).shape)


def _shape(node):
    return [int(d) for d in _meta(node).shape]


_VIEW_OPS = frozenset(["view", "_unsafe_view", "reshape", "_reshape_alias", "alias", "detach",
                       "slice", "select", "narrow", "transpose", "permute", "t", "unsqueeze",
                       "squeeze", "expand", "expand_as", "split", "split_with_sizes", "chunk",
                       "unbind", "diagonal", "as_strided", "view_as", "unflatten", "flatten",
                       "movedim", "swapaxes", "unfold", "real", "imag"])


def _is_view(node):
    if getattr(node, "op", None) != "call_function":
        return False
    if node.target is operator.getitem:         # an item of split/chunk/unbind is a view too
        return _is_view(node.args[0])
    return getattr(node.target, "name", None) in _VIEW_OPS


def _out_dtype(node):
    return _np_dtype(_meta(node).dtype)


def _axis(d, rank):
    return d + rank if d < 0 else d


_CONVERTERS = {}


def _register(*names):
    def deco(fn):
        for n in names:
            _CONVERTERS[n] = fn
        return fn
    return deco


def _unary(op):
    return lambda c, node, x, *a, **k: c.emit(op, [c.value(x)])


for _aten, _onnx in [("relu", "Relu"), ("tanh", "Tanh"), ("sigmoid", "Sigmoid"), ("neg", "Neg"),
                     ("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"),
                     ("erf", "Erf"), ("reciprocal", "Reciprocal")]:
    _CONVERTERS[_aten] = _unary(_onnx)


@_register("clone", "detach", "alias", "contiguous", "lift_fresh_copy", "_unsafe_view.identity")
def _identity(c, node, x, *a, **k):
    return c.emit("Identity", [c.value(x)])


@_register("dropout")
def _dropout(c, node, x, p=0.5, train=False):
    if train:
        raise UnsupportedOp("dropout in training mode")
    return c.emit("Identity", [c.value(x)])


@_register("rsqrt")
def _rsqrt(c, node, x):
    return c.emit("Reciprocal", [c.emit("Sqrt", [c.value(x)])])


def _binary(op):
    def conv(c, node, a, b, *, alpha=1, rounding_mode=None):
        if rounding_mode is not None:
            raise UnsupportedOp(f"{op} with rounding_mode={rounding_mode!r}")
        dt = _out_dtype(node)
        x = c.cast_to(c.value(a, dt), a, dt)
        y = c.cast_to(c.value(b, dt), b, dt)
        if alpha != 1:
            y = c.emit("Mul", [y, c.value(alpha, dt)])
        return c.emit(op, [x, y])
    return conv


_CONVERTERS["add"] = _binary("Add")
_CONVERTERS["sub"] = _binary("Sub")
_CONVERTERS["mul"] = _binary("Mul")
_CONVERTERS["div"] = _binary("Div")


@_register("rsub")
def _rsub(c, node, a, b, alpha=1):
    return _binary("Sub")(c, node, b, a) if alpha == 1 else _binary("Sub")(c, node, b, a, alpha=alpha)


@_register("addmm")
def _addmm(c, node, bias, a, b, *, beta=1, alpha=1):
    return c.emit("Gemm", [c.value(a), c.value(b), c.value(bias)], alpha=float(alpha), beta=float(beta))


@_register("mm", "bmm", "matmul")
def _matmul(c, node, a, b):
    return c.emit("MatMul", [c.value(a), c.value(b)])


@_register("linear")
def _linear(c, node, x, w, b=None):
    y = c.emit("MatMul", [c.value(x), c.emit("Transpose", [c.value(w)], perm=[1, 0])])
    return y if b is None else c.emit("Add", [y, c.value(b)])


@_register("t")
def _t(c, node, x):
    if _rank(x) < 2:
        return c.emit("Identity", [c.value(x)])
    return c.emit("Transpose", [c.value(x)], perm=[1, 0])


@_register("transpose")
def _transpose(c, node, x, d0, d1):
    r = _rank(x)
    perm = list(range(r))
    d0, d1 = _axis(d0, r), _axis(d1, r)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.emit("Transpose", [c.value(x)], perm=perm)


@_register("permute")
def _permute(c, node, x, dims):
    r = _rank(x)
    return c.emit("Transpose", [c.value(x)], perm=[_axis(d, r) for d in dims])


def _reshape_shape(c, x, out_shape):
    """The Reshape target: the traced output shape, except that under a dynamic batch axis a
    leading size equal to the input's leading size becomes 0 (ONNX: copy the input's size)."""
    shape = [int(s) for s in out_shape]
    in_shape = list(_meta(x).shape)
    if c.dynamic_batch and shape and in_shape and shape[0] == int(in_shape[0]):
        shape[0] = 0
    return shape


@_register("view", "reshape", "_unsafe_view", "view.default", "_reshape_alias")
def _view(c, node, x, *a, **k):
    return c.emit("Reshape", [c.value(x), c.ints(_reshape_shape(c, x, _meta(node).shape))])


@_register("flatten")
def _flatten(c, node, x, start_dim=0, end_dim=-1):
    r = _rank(x)
    if r >= 2 and _axis(start_dim, r) == 1 and _axis(end_dim, r) == r - 1:
        return c.emit("Flatten", [c.value(x)], axis=1)
    return _view(c, node, x)


@_register("unsqueeze")
def _unsqueeze(c, node, x, dim):
    return c.emit("Unsqueeze", [c.value(x), c.ints([_axis(dim, _rank(x) + 1)], "axes")])


@_register("squeeze")
def _squeeze(c, node, x, dim=None):
    shape = list(_meta(x).shape)
    r = len(shape)
    if dim is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    else:
        dims = [_axis(d, r) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        dims = [d for d in dims if shape[d] == 1]   # torch: squeezing a size other than 1 is a no-op
    if not dims:
        return c.emit("Identity", [c.value(x)])
    return c.emit("Squeeze", [c.value(x), c.ints(dims, "axes")])


@_register("expand")
def _expand(c, node, x, size, *, implicit=False):
    # Expand broadcasts: where Reshape's shape says 0 (keep the input's size), Expand's says 1
    shape = [1 if s == 0 else s for s in _reshape_shape(c, x, _meta(node).shape)]
    if not c.dynamic_batch:
        shape = [int(s) for s in _meta(node).shape]
    return c.emit("Expand", [c.value(x), c.ints(shape)])


@_register("cat")
def _cat(c, node, tensors, dim=0):
    dt = _out_dtype(node)       # cat promotes mixed dtypes; Concat wants one
    return c.emit("Concat", [c.cast_to(c.value(t), t, dt) for t in tensors],
                  axis=_axis(dim, _rank(node)))


def _softmax_like(op):
    def conv(c, node, x, dim, *rest, **k):
        y = c.emit(op, [c.value(x)], axis=_axis(dim, _rank(x)))
        return c.cast_to(y, x, _out_dtype(node))
    return conv


_CONVERTERS["softmax"] = _CONVERTERS["_softmax"] = _softmax_like("Softmax")
_CONVERTERS["log_softmax"] = _CONVERTERS["_log_softmax"] = _softmax_like("LogSoftmax")


@_register("gelu")
def _gelu(c, node, x, *, approximate="none"):
    dt = _out_dtype(node)
    v = c.value(x)
    half, one = c.const(np.asarray(0.5, dt)), c.const(np.asarray(1.0, dt))
    if approximate == "tanh":
        cube = c.emit("Mul", [v, c.emit("Mul", [v, v])])
        inner = c.emit("Add", [v, c.emit("Mul", [cube, c.const(np.asarray(0.044715, dt))])])
        inner = c.emit("Mul", [inner, c.const(np.asarray(math.sqrt(2 / math.pi), dt))])
        gate = c.emit("Tanh", [inner])
    else:
        gate = c.emit("Erf", [c.emit("Div", [v, c.const(np.asarray(math.sqrt(2.0), dt))])])
    return c.emit("Mul", [c.emit("Mul", [v, half]), c.emit("Add", [gate, one])])


def _per_dim(v, nd):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return [int(i) for i in (v * nd if len(v) == 1 else v)]


def _conv(c, x, w, b, stride, padding, dilation, groups, transposed=False, output_padding=0):
    if isinstance(padding, str):
        raise UnsupportedOp(f"convolution with padding={padding!r}")
    nd = _rank(x) - 2
    if nd < 1:
        raise UnsupportedOp("convolution of an unbatched input")
    inputs = [c.value(x), c.value(w)] + ([] if b is None else [c.value(b)])
    pads = _per_dim(padding, nd)
    attrs = dict(strides=_per_dim(stride, nd), pads=pads + pads, dilations=_per_dim(dilation, nd),
                 group=int(groups), kernel_shape=list(_shape(w)[2:]))
    if not transposed:
        return c.emit("Conv", inputs, **attrs)
    # torch's transposed weight is (C_in, C_out / groups, *kernel), ONNX ConvTranspose's layout
    return c.emit("ConvTranspose", inputs, output_padding=_per_dim(output_padding, nd), **attrs)


@_register("convolution", "_convolution")
def _convolution(c, node, x, w, b, stride, padding, dilation, transposed, output_padding, groups,
                 *rest):
    return _conv(c, x, w, b, stride, padding, dilation, groups, transposed, output_padding)


@_register("conv1d", "conv2d", "conv3d")
def _conv_nd(c, node, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(c, x, w, b, stride, padding, dilation, groups)


@_register("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose_nd(c, node, x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                       dilation=1):
    return _conv(c, x, w, b, stride, padding, dilation, groups, True, output_padding)


def _pool_args(kernel, stride, padding, nd):
    kernel = _per_dim(kernel, nd)
    stride = _per_dim(stride, nd) if stride not in (None, [], ()) else kernel
    pads = _per_dim(padding, nd)
    return kernel, stride, pads + pads


def _pool_rank(c, node, x):
    nd = int(node.target.name.split("_pool")[1][0])      # max_pool2d -> 2
    if _rank(x) != nd + 2:
        raise UnsupportedOp(f"{node.target.name} of an unbatched input")
    return nd


@_register("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices")
def _max_pool(c, node, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    nd = _pool_rank(c, node, x)
    kernel, strides, pads = _pool_args(kernel_size, stride, padding, nd)
    y = c.emit("MaxPool", [c.value(x)], kernel_shape=kernel, strides=strides, pads=pads,
               dilations=_per_dim(dilation, nd), ceil_mode=int(ceil_mode))
    # the indices output (torch's second) is not exported: a getitem of it is unsupported
    return [y, None] if node.target.name.endswith("_with_indices") else y


@_register("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(c, node, x, kernel_size, stride=(), padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise UnsupportedOp(f"{node.target.name} with divisor_override")
    nd = _pool_rank(c, node, x)
    kernel, strides, pads = _pool_args(kernel_size, stride, padding, nd)
    return c.emit("AveragePool", [c.value(x)], kernel_shape=kernel, strides=strides, pads=pads,
                  ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad))


@_register("adaptive_avg_pool1d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "_adaptive_avg_pool3d")
def _adaptive_avg_pool(c, node, x, output_size):
    nd = len(_shape(node)) - 2
    out, size = _per_dim(output_size, nd), _shape(x)[-nd:]
    if _rank(x) != nd + 2:
        raise UnsupportedOp(f"{node.target.name} of an unbatched input")
    if out == [1] * nd:
        return c.emit("GlobalAveragePool", [c.value(x)])
    if all(s % o == 0 for s, o in zip(size, out)):  # equal windows: a plain average pool
        kernel = [s // o for s, o in zip(size, out)]
        return c.emit("AveragePool", [c.value(x)], kernel_shape=kernel, strides=kernel)
    raise UnsupportedOp(f"{node.target.name} from {size} to {out} (exported when each output "
                        "size divides its input size)")


def _batch_norm(c, node, x, w, b, mean, var, eps):
    channels = int(_meta(x).shape[1])
    dt = _out_dtype(node) if not isinstance(_meta(node), (tuple, list)) else _np_dtype(_meta(x).dtype)
    if mean is None or var is None:
        raise UnsupportedOp("batch norm without running statistics")
    scale = c.value(w) if w is not None else c.const(np.ones(channels, dt), "ones")
    bias = c.value(b) if b is not None else c.const(np.zeros(channels, dt), "zeros")
    return c.emit("BatchNormalization", [c.value(x), scale, bias, c.value(mean), c.value(var)],
                  epsilon=float(eps))


@_register("native_batch_norm")
def _native_batch_norm(c, node, x, w, b, mean, var, training, momentum, eps):
    if training:
        raise UnsupportedOp("batch norm in training mode (call model.eval() before exporting)")
    return [_batch_norm(c, node, x, w, b, mean, var, eps), None, None]


@_register("_native_batch_norm_legit_no_training")
def _bn_no_training(c, node, x, w, b, mean, var, momentum, eps):
    return [_batch_norm(c, node, x, w, b, mean, var, eps), None, None]


@_register("batch_norm")
def _aten_batch_norm(c, node, x, w, b, mean, var, training, momentum, eps, *rest):
    if training:
        raise UnsupportedOp("batch norm in training mode (call model.eval() before exporting)")
    return _batch_norm(c, node, x, w, b, mean, var, eps)


def _layer_norm(c, node, x, shape, w, b, eps):
    if c.opset < 17:
        raise UnsupportedOp("layer_norm before opset 17")
    dt = _np_dtype(_meta(x).dtype)
    shape = [int(s) for s in shape]
    scale = c.value(w) if w is not None else c.const(np.ones(shape, dt), "ones")
    inputs = [c.value(x), scale] + ([c.value(b)] if b is not None else [])
    return c.emit("LayerNormalization", inputs, axis=-len(shape), epsilon=float(eps))


@_register("native_layer_norm")
def _native_layer_norm(c, node, x, shape, w, b, eps):
    return [_layer_norm(c, node, x, shape, w, b, eps), None, None]


@_register("layer_norm")
def _aten_layer_norm(c, node, x, shape, w=None, b=None, eps=1e-5, *rest):
    return _layer_norm(c, node, x, shape, w, b, eps)


def _reduce(op):
    def conv(c, node, x, dims=None, keepdim=False, *, dtype=None):
        r = _rank(x)
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = list(range(r))
        dims = [_axis(d, r) for d in (dims if isinstance(dims, (list, tuple)) else [dims])]
        v = c.cast_to(c.value(x), x, _out_dtype(node))
        if op == "ReduceSum" or c.opset >= 18:
            return c.emit(op, [v, c.ints(dims, "axes")], keepdims=int(keepdim))
        return c.emit(op, [v], axes=dims, keepdims=int(keepdim))
    return conv


_CONVERTERS["mean"] = _reduce("ReduceMean")
_CONVERTERS["sum"] = _reduce("ReduceSum")


@_register("_to_copy")
def _to_copy(c, node, x, **kwargs):
    return c.cast_to(c.emit("Identity", [c.value(x)]), x, _out_dtype(node))


# ---- slicing and indexing ----------------------------------------------------------------------
_INT64_MAX, _INT64_MIN = 2 ** 63 - 1, -2 ** 63


def _slice_node(c, x, starts, ends, axes, steps):
    return c.emit("Slice", [x, c.ints(starts, "starts"), c.ints(ends, "ends"),
                            c.ints(axes, "axes"), c.ints(steps, "steps")])


@_register("slice")
def _slice(c, node, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else int(start)
    end = _INT64_MAX if end is None else min(int(end), _INT64_MAX)
    if start == 0 and end == _INT64_MAX and step == 1:     # x[:]
        return c.emit("Identity", [c.value(x)])
    return _slice_node(c, c.value(x), [start], [end], [_axis(dim, _rank(x))], [int(step)])


@_register("narrow")
def _narrow(c, node, x, dim, start, length):
    start = int(start)
    start = start + _shape(x)[_axis(dim, _rank(x))] if start < 0 else start
    return _slice_node(c, c.value(x), [start], [start + int(length)], [_axis(dim, _rank(x))], [1])


@_register("select")
def _select(c, node, x, dim, index):
    # Gather with a 0-d index drops the axis, as select does; a negative index counts from the end
    return c.emit("Gather", [c.value(x), c.const(np.asarray(int(index), np.int64), "index")],
                  axis=_axis(dim, _rank(x)))


@_register("index_select")
def _index_select(c, node, x, dim, index):
    return c.emit("Gather", [c.value(x), c.value(index)], axis=_axis(dim, _rank(x)))


@_register("index")
def _index(c, node, x, indices):
    tensors = [(i, t) for i, t in enumerate(indices) if t is not None]
    if len(tensors) != 1:
        raise UnsupportedOp("indexing with several tensor indices (only one is exported)")
    pos, idx = tensors[0]
    kind = _np_dtype(_meta(idx).dtype).kind
    if kind == "b":
        raise UnsupportedOp("indexing with a boolean mask (its result's shape depends on the data)")
    if kind not in "iu":
        raise UnsupportedOp(f"indexing with a {_meta(idx).dtype} tensor")
    return c.emit("Gather", [c.value(x), c.value(idx)], axis=pos)


@_register("embedding")
def _embedding(c, node, weight, indices, *rest):
    return c.emit("Gather", [c.value(weight), c.value(indices)], axis=0)


@_register("gather")
def _gather(c, node, x, dim, index, *, sparse_grad=False):
    return c.emit("GatherElements", [c.value(x), c.value(index)], axis=_axis(dim, _rank(x)))


def _split(c, node, x, dim, sizes=None):
    axis = _axis(dim, _rank(x))
    sizes = sizes or [int(m.shape[axis]) for m in _meta(node)]
    if len(sizes) == 1:
        return [c.emit("Identity", [c.value(x)])]
    return list(c.emit("Split", [c.value(x), c.ints(sizes, "split")], n_out=len(sizes),
                       axis=axis))


@_register("split", "split_with_sizes")
def _split_sizes(c, node, x, split, dim=0):
    return _split(c, node, x, dim)


@_register("chunk")
def _chunk(c, node, x, chunks, dim=0):
    return _split(c, node, x, dim)


@_register("unbind")
def _unbind(c, node, x, dim=0):
    axis = _axis(dim, _rank(x))
    parts = _split(c, node, x, dim, [1] * _shape(x)[axis])
    return [c.emit("Squeeze", [part, c.ints([axis], "axes")]) for part in parts]


@_register("stack")
def _stack(c, node, tensors, dim=0):
    axis = _axis(dim, _rank(node))
    dt = _out_dtype(node)
    parts = [c.emit("Unsqueeze", [c.cast_to(c.value(t), t, dt), c.ints([axis], "axes")])
             for t in tensors]
    return c.emit("Concat", parts, axis=axis)


@_register("repeat")
def _repeat(c, node, x, repeats):
    repeats = [int(r) for r in repeats]
    v, extra = c.value(x), len(repeats) - _rank(x)
    if extra > 0:       # repeat may add leading dims: give x size-1 ones first
        v = c.emit("Unsqueeze", [v, c.ints(range(extra), "axes")])
    return c.emit("Tile", [v, c.ints(repeats, "repeats")])


@_register("flip")
def _flip(c, node, x, dims):
    r = _rank(x)
    axes = [_axis(d, r) for d in dims]
    if not axes:
        return c.emit("Identity", [c.value(x)])
    n = len(axes)
    return _slice_node(c, c.value(x), [-1] * n, [_INT64_MIN] * n, axes, [-1] * n)


@_register("where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def _where(c, node, cond, a, b):
    dt = _out_dtype(node)
    return c.emit("Where", [c.cast_to(c.value(cond), cond, np.dtype(bool)),
                            c.cast_to(c.value(a, dt), a, dt), c.cast_to(c.value(b, dt), b, dt)])


@_register("masked_fill")
def _masked_fill(c, node, x, mask, value):
    dt = _out_dtype(node)
    return c.emit("Where", [c.cast_to(c.value(mask), mask, np.dtype(bool)),
                            c.cast_to(c.value(value, dt), value, dt), c.value(x)])


@_register("triu", "tril")
def _trilu(c, node, x, diagonal=0):
    if c.opset < 14:
        raise UnsupportedOp(f"{node.target.name} before opset 14")
    return c.emit("Trilu", [c.value(x), c.const(np.asarray(int(diagonal), np.int64), "k")],
                  upper=int(node.target.name == "triu"))


# ---- constants: factory ops are evaluated at export time ---------------------------------------
@_register("arange", "zeros", "ones", "full", "scalar_tensor", "eye", "linspace")
def _factory(c, node, *args, **kwargs):
    # no tensor inputs and a traced (fixed) size: the value is a constant of the model
    from ember.fx import Node  # lazy: the exporter's import of ember.fx stays local
    if any(isinstance(a, Node) for a in list(args) + list(kwargs.values())):
        raise UnsupportedOp(f"{node.target.name} with a size computed in the graph")
    return c.const(np.array(node.target(*args, **kwargs).numpy()), node.target.name)


def _fill_like(c, node, x, value):
    dt = _out_dtype(node)
    shape = c.emit("Shape", [c.value(x)])
    return c.emit("ConstantOfShape", [shape],
                  value=c.numpy_helper.from_array(np.asarray([value], dt)))


@_register("zeros_like", "ones_like", "full_like", "empty_like")
def _like(c, node, x, *fill, **kwargs):
    value = {"zeros_like": 0, "ones_like": 1, "empty_like": 0}.get(node.target.name)
    return _fill_like(c, node, x, fill[0] if value is None else value)


@_register("new_zeros", "new_ones", "new_full", "new_empty")
def _new_like(c, node, x, size, *fill, **kwargs):
    value = {"new_zeros": 0, "new_ones": 1, "new_empty": 0}.get(node.target.name)
    value = fill[0] if value is None else value
    return c.const(np.full([int(s) for s in size], value, _out_dtype(node)), node.target.name)


@_register("fill.Scalar")
def _fill(c, node, x, value):
    return _fill_like(c, node, x, value)


# ---- comparisons and logic ---------------------------------------------------------------------
def _operand_dtype(a, b):
    import ember  # lazy: the public op namespace (layering: bound late)
    part = [_meta(v) if hasattr(v, "meta") else v for v in (a, b)]
    return _np_dtype(ember.result_type(*part))


def _compare(op, negate=False):
    def conv(c, node, a, b):
        dt = _operand_dtype(a, b)
        y = c.emit(op, [c.cast_to(c.value(a, dt), a, dt), c.cast_to(c.value(b, dt), b, dt)])
        return c.emit("Not", [y]) if negate else y
    return conv


for _aten, _onnx in [("eq", "Equal"), ("gt", "Greater"), ("lt", "Less"),
                     ("ge", "GreaterOrEqual"), ("le", "LessOrEqual")]:
    _CONVERTERS[_aten] = _compare(_onnx)
_CONVERTERS["ne"] = _compare("Equal", negate=True)


def _logical(op):
    def conv(c, node, a, b):
        return c.emit(op, [c.cast_to(c.value(a), a, np.dtype(bool)),
                           c.cast_to(c.value(b), b, np.dtype(bool))])
    return conv


_CONVERTERS["logical_and"] = _logical("And")
_CONVERTERS["logical_or"] = _logical("Or")
_CONVERTERS["logical_xor"] = _logical("Xor")


@_register("logical_not")
def _logical_not(c, node, x):
    return c.emit("Not", [c.cast_to(c.value(x), x, np.dtype(bool))])


def _bitwise(op, logical_op):
    def conv(c, node, a, b):
        dt = _out_dtype(node)
        if dt == np.dtype(bool):
            return _logical(logical_op)(c, node, a, b)
        if c.opset < 18:
            raise UnsupportedOp(f"{node.target.name} of integer tensors before opset 18")
        return c.emit(op, [c.cast_to(c.value(a, dt), a, dt), c.cast_to(c.value(b, dt), b, dt)])
    return conv


_CONVERTERS["bitwise_and"] = _bitwise("BitwiseAnd", "And")
_CONVERTERS["bitwise_or"] = _bitwise("BitwiseOr", "Or")
_CONVERTERS["bitwise_xor"] = _bitwise("BitwiseXor", "Xor")


@_register("bitwise_not")
def _bitwise_not(c, node, x):
    if _out_dtype(node) != np.dtype(bool):
        raise UnsupportedOp("bitwise_not of an integer tensor")
    return c.emit("Not", [c.value(x)])


# ---- attention and batched products ------------------------------------------------------------
@_register("baddbmm", "addbmm")
def _baddbmm(c, node, bias, a, b, *, beta=1, alpha=1):
    dt = _out_dtype(node)
    prod = c.emit("MatMul", [c.value(a), c.value(b)])
    if node.target.name == "addbmm":        # the batch of products is summed
        prod = c.emit("ReduceSum", [prod, c.ints([0], "axes")], keepdims=0)
    if alpha != 1:
        prod = c.emit("Mul", [prod, c.value(alpha, dt)])
    if beta == 0:
        return prod
    v = c.value(bias)
    return c.emit("Add", [v if beta == 1 else c.emit("Mul", [v, c.value(beta, dt)]), prod])


@_register("scaled_dot_product_attention")
def _sdpa(c, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
          enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v, written out: ONNX (before opset 23) has no attention
    op. A boolean mask keeps the positions that are True, as torch's does."""
    if dropout_p:
        raise UnsupportedOp("scaled_dot_product_attention with dropout_p > 0 (export in eval mode)")
    qs, ks = _shape(q), _shape(k)
    if enable_gqa and qs[-3] != ks[-3]:
        raise UnsupportedOp("scaled_dot_product_attention with grouped-query heads")
    dt = _np_dtype(_meta(q).dtype)
    scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
    r = len(ks)
    perm = list(range(r - 2)) + [r - 1, r - 2]
    scores = c.emit("MatMul", [c.value(q), c.emit("Transpose", [c.value(k)], perm=perm)])
    scores = c.emit("Mul", [scores, c.const(np.asarray(scale, dt))])
    if is_causal:
        keep = np.tril(np.ones((qs[-2], ks[-2]), dtype=bool))
        scores = c.emit("Where", [c.const(keep, "causal_mask"), scores,
                                  c.const(np.asarray(-np.inf, dt), "neg_inf")])
    if attn_mask is not None:
        if _np_dtype(_meta(attn_mask).dtype) == np.dtype(bool):
            scores = c.emit("Where", [c.value(attn_mask), scores,
                                      c.const(np.asarray(-np.inf, dt), "neg_inf")])
        else:
            scores = c.emit("Add", [scores, c.cast_to(c.value(attn_mask), attn_mask, dt)])
    return c.emit("MatMul", [c.emit("Softmax", [scores], axis=-1), c.value(v)])


# ---- reductions that pick ----------------------------------------------------------------------
def _reduce_pick(c, op, v, axes, keepdim):
    if c.opset >= 18:
        return c.emit(op, [v, c.ints(axes, "axes")], keepdims=int(keepdim))
    return c.emit(op, [v], axes=axes, keepdims=int(keepdim))


@_register("amax", "amin")
def _amax(c, node, x, dim=(), keepdim=False):
    r = _rank(x)
    dims = [_axis(d, r) for d in (dim if isinstance(dim, (list, tuple)) else [dim])] or \
        list(range(r))
    op = "ReduceMax" if node.target.name == "amax" else "ReduceMin"
    return _reduce_pick(c, op, c.value(x), dims, keepdim)


@_register("max.default", "min.default")
def _max_all(c, node, x):
    op = "ReduceMax" if node.target.name == "max" else "ReduceMin"
    return _reduce_pick(c, op, c.value(x), list(range(_rank(x))), False)


@_register("max.dim", "min.dim")
def _max_dim(c, node, x, dim, keepdim=False):
    axis = _axis(dim, _rank(x))
    is_max = node.target.name == "max"
    values = _reduce_pick(c, "ReduceMax" if is_max else "ReduceMin", c.value(x), [axis], keepdim)
    # torch returns the first index of the extreme value, as ArgMax does by default
    indices = c.emit("ArgMax" if is_max else "ArgMin", [c.value(x)], axis=axis,
                     keepdims=int(keepdim))
    return [values, indices]


@_register("argmax", "argmin")
def _argmax(c, node, x, dim=None, keepdim=False):
    op = "ArgMax" if node.target.name == "argmax" else "ArgMin"
    if dim is None:     # over the flattened tensor
        flat = c.emit("Reshape", [c.value(x), c.ints([-1])])
        y = c.emit(op, [flat], axis=0, keepdims=0)
        return c.emit("Reshape", [y, c.ints([1] * _rank(x))]) if keepdim else y
    return c.emit(op, [c.value(x)], axis=_axis(dim, _rank(x)), keepdims=int(keepdim))


@_register("any", "all")
def _any(c, node, x, dim=None, keepdim=False):
    # ReduceMax/Min take no bools before opset 20: reduce 0/1 integers and compare
    r = _rank(x)
    dims = list(range(r)) if dim is None else \
        [_axis(d, r) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    bits = c.emit("Cast", [c.cast_to(c.value(x), x, np.dtype(bool))],
                  to=c.helper.np_dtype_to_tensor_dtype(np.dtype(np.int32)))
    op = "ReduceMax" if node.target.name == "any" else "ReduceMin"
    y = _reduce_pick(c, op, bits, dims or list(range(r)), keepdim)
    return c.emit("Cast", [y], to=c.helper.np_dtype_to_tensor_dtype(np.dtype(bool)))


# ---- more pointwise ops ------------------------------------------------------------------------
@_register("silu")
def _silu(c, node, x):
    v = c.value(x)
    return c.emit("Mul", [v, c.emit("Sigmoid", [v])])


@_register("leaky_relu")
def _leaky_relu(c, node, x, negative_slope=0.01):
    return c.emit("LeakyRelu", [c.value(x)], alpha=float(negative_slope))


@_register("elu")
def _elu(c, node, x, alpha=1.0, scale=1, input_scale=1):
    if scale != 1 or input_scale != 1:
        raise UnsupportedOp("elu with scale or input_scale")
    return c.emit("Elu", [c.value(x)], alpha=float(alpha))


@_register("clamp", "clip", "hardtanh")
def _clamp(c, node, x, lo=None, hi=None):
    if node.target.name == "hardtanh":
        lo, hi = (-1 if lo is None else lo), (1 if hi is None else hi)
    dt = _out_dtype(node)
    v = c.cast_to(c.value(x), x, dt)
    bounds = [c.cast_to(c.value(b, dt), b, dt) if b is not None else "" for b in (lo, hi)]
    while bounds and bounds[-1] == "":
        bounds.pop()
    return c.emit("Clip", [v] + bounds)


@_register("pow.Tensor_Scalar", "pow.Tensor_Tensor")
def _pow(c, node, x, exponent):
    dt = _out_dtype(node)
    return c.emit("Pow", [c.cast_to(c.value(x), x, dt), c.cast_to(c.value(exponent, dt),
                                                                   exponent, dt)])


for _aten, _onnx in [("sin", "Sin"), ("cos", "Cos"), ("floor", "Floor"), ("ceil", "Ceil"),
                     ("sign", "Sign")]:
    _CONVERTERS[_aten] = _unary(_onnx)


def convert(gm, *, opset, export_params, param_names, input_names, output_names, dynamic_axes,
            doc_string=""):
    """The onnx.ModelProto of GraphModule gm (whose placeholders are the exported inputs)."""
    from onnx import helper  # lazy: onnx is an optional dependency
    dynamic_axes = _normalize_dynamic_axes(dynamic_axes)
    c = _Converter(gm, opset, export_params, param_names,
                   dynamic_batch=any(0 in axes for axes in dynamic_axes.values()))
    inputs, outputs = [], []
    graph_nodes = list(gm.graph.nodes)
    placeholders = [n for n in graph_nodes if n.op == "placeholder"]
    input_names = list(input_names or [])
    for i, n in enumerate(placeholders):
        name = input_names[i] if i < len(input_names) else f"input_{i}"
        c.env[n] = name
        c._used.add(name)
        inputs.append(_value_info(helper, name, _meta(n), dynamic_axes.get(name)))
    live = _live_nodes(graph_nodes)
    for n in graph_nodes:
        if n.op == "get_attr":
            c.env[n] = c.get_attr(n)
        elif n.op == "call_function":
            if n not in live:
                continue        # dead: e.g. a tensor a Python branch read while tracing
            try:
                c.env[n] = c.call(n)
            except UnsupportedOp as e:
                raise _unsupported(n, opset, str(e)) from None
        elif n.op == "output":
            results = n.args[0]
            results = list(results) if isinstance(results, (list, tuple)) else [results]
            output_names = list(output_names or [])
            for i, r in enumerate(results):
                name = output_names[i] if i < len(output_names) else f"output_{i}"
                try:
                    src = c.value(r)
                except UnsupportedOp as e:
                    raise _unsupported(n, opset, f"output {e}") from None
                c.nodes.append(helper.make_node("Identity", [src], [name], name=f"/output_{i}"))
                outputs.append(_value_info(helper, name, _meta(r), dynamic_axes.get(name)))
        elif n.op != "placeholder":
            raise _unsupported(n, opset, f"fx node kind {n.op}")
    graph = helper.make_graph(c.nodes, "main_graph", inputs + c.param_inputs, outputs,
                              initializer=c.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ember", doc_string=doc_string)
    return model


# ---- resizing and padding ----------------------------------------------------------------------
def _resize(c, node, x, scales, mode, transform):
    """Resize to the traced output size; with scales when torch was given scale factors, since
    torch then maps positions with 1/scale_factor, as ONNX does with scales."""
    nd = _rank(x) - 2
    attrs = dict(mode=mode, coordinate_transformation_mode=transform)
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"         # torch's nearest: floor(dst * scale)
    empty = c.const(np.zeros(0, np.float32), "roi")
    scales = [float(s) for s in scales or []]
    if scales and all(s is not None for s in scales):
        scales = np.asarray([1.0, 1.0] + (scales * nd if len(scales) == 1 else scales), np.float32)
        return c.emit("Resize", [c.value(x), empty, c.const(scales, "scales")], **attrs)
    return c.emit("Resize", [c.value(x), empty, empty, c.ints(_shape(node), "sizes")], **attrs)


def _scales(node, args):
    # .vec: (output_size, scale_factors); .default: (output_size, *per-dim scales)
    if node.target.overload == "vec":
        return args[1] if len(args) > 1 else None
    return list(args[1:]) if len(args) > 1 and all(s is not None for s in args[1:]) else None


@_register("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d")
def _upsample_nearest(c, node, x, *args):
    return _resize(c, node, x, _scales(node, args), "nearest", "asymmetric")


@_register("upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d")
def _upsample_linear(c, node, x, output_size, align_corners, *args):
    if align_corners:       # positions come from the sizes alone
        return _resize(c, node, x, None, "linear", "align_corners")
    return _resize(c, node, x, _scales(node, (output_size,) + args), "linear",
                   "pytorch_half_pixel")


@_register("pad", "constant_pad_nd")
def _pad(c, node, x, pad, mode="constant", value=None):
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                 "circular": "wrap"}.get(mode)
    if onnx_mode is None or (onnx_mode == "wrap" and c.opset < 19):
        raise UnsupportedOp(f"pad with mode={mode!r}" + (" before opset 19" if onnx_mode else ""))
    rank, pad = _rank(x), [int(p) for p in pad]
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):      # torch lists (begin, end) pairs from the last dim back
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    inputs = [c.value(x), c.ints(begins + ends, "pads")]
    if onnx_mode == "constant" and value:
        inputs.append(c.const(np.asarray(value, _out_dtype(node)), "pad_value"))
    return c.emit("Pad", inputs, mode=onnx_mode)


def _live_nodes(graph_nodes):
    """The nodes the outputs depend on, and in-place ops with what they read. The rest (values
    only a Python branch looked at while tracing, e.g. TransformerEncoder's padding check) are
    left out of the ONNX graph, as torch's tracer leaves them out."""
    live = set()
    for n in reversed(graph_nodes):
        inplace = n.op == "call_function" and getattr(n.target, "name", "").endswith("_")
        if n.op == "output" or n in live or inplace:
            live.add(n)
            live.update(n.all_input_nodes)
    return live


def _normalize_dynamic_axes(dynamic_axes):
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(k): str(v) for k, v in axes.items()}
        else:
            out[name] = {int(k): f"{name}_dynamic_axes_{j + 1}" for j, k in enumerate(axes)}
    return out


def _value_info(helper, name, val, dyn):
    if val is None:
        raise _unsupported(None, 0, f"value {name} without traced metadata")
    shape = [int(s) for s in val.shape]
    dims = [dyn[i] if dyn and i in dyn else s for i, s in enumerate(shape)]
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(_np_dtype(val.dtype)),
                                         dims)


def _unsupported(node, opset, why):
    from ember.onnx import OnnxExporterError  # lazy: the package's error class, defined before us
    target = getattr(node, "target", None)
    qual = getattr(target, "qualname", None) or str(target)
    msg = f"Exporting the operator '{qual}' to ONNX opset version {opset} is not supported"
    if why and why != getattr(target, "name", None):
        msg += f" ({why})"
    return OnnxExporterError(msg)
