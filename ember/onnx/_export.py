"""ember.onnx.export's work: capture the model's ATen calls with make_fx, then write one or a few
ONNX nodes per ATen node with onnx.helper.

The graph make_fx returns is the model at the traced shapes: parameters and buffers are get_attr
nodes (written as initializers, named after the module's parameter/buffer names), and view/reshape/
expand carry the traced sizes (see `_reshape_shape` for the batch dimension under dynamic_axes)."""
import math

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
        import operator
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
        fn = _CONVERTERS.get(f"{opname}.{overload}") or _CONVERTERS.get(opname)
        if fn is None:
            raise UnsupportedOp(opname)
        return fn(self, node, *node.args, **node.kwargs)


def _rank(node):
    return len(_meta(node).shape)


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
    return c.emit("Concat", [c.value(t) for t in tensors], axis=_axis(dim, _rank(node)))


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


@_register("convolution", "conv2d", "conv1d")
def _convolution(c, node, x, w, b=None, stride=1, padding=0, dilation=1, *rest):
    if node.target.name == "convolution":
        transposed, _output_padding, groups = rest
        if transposed:
            raise UnsupportedOp("transposed convolution")
    else:
        groups = rest[0] if rest else 1
    if isinstance(padding, str):
        raise UnsupportedOp(f"convolution with padding={padding!r}")
    nd = _rank(x) - 2

    def per_dim(v):
        v = list(v) if isinstance(v, (list, tuple)) else [v]
        return [int(i) for i in (v * nd if len(v) == 1 else v)]
    inputs = [c.value(x), c.value(w)] + ([] if b is None else [c.value(b)])
    pads = per_dim(padding)
    return c.emit("Conv", inputs, strides=per_dim(stride), pads=pads + pads,
                  dilations=per_dim(dilation), group=int(groups),
                  kernel_shape=list(_meta(w).shape[2:]))


def _pool_args(kernel, stride, padding):
    kernel = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
    nd = max(len(kernel), 2)

    def per_dim(v):
        v = list(v) if isinstance(v, (list, tuple)) else [v]
        return [int(i) for i in (v * nd if len(v) == 1 else v)]
    kernel = per_dim(kernel)
    stride = per_dim(stride) if stride not in (None, [], ()) else kernel
    pads = per_dim(padding)
    return kernel, stride, pads + pads


@_register("max_pool2d", "max_pool2d_with_indices")
def _max_pool2d(c, node, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    kernel, strides, pads = _pool_args(kernel_size, stride, padding)
    d = dilation if isinstance(dilation, (list, tuple)) else [dilation]
    y = c.emit("MaxPool", [c.value(x)], kernel_shape=kernel, strides=strides, pads=pads,
               dilations=[int(i) for i in (d * 2 if len(d) == 1 else d)], ceil_mode=int(ceil_mode))
    # the indices output (torch's second) is not exported: a getitem of it is unsupported
    return [y, None] if node.target.name == "max_pool2d_with_indices" else y


@_register("avg_pool2d")
def _avg_pool2d(c, node, x, kernel_size, stride=(), padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise UnsupportedOp("avg_pool2d with divisor_override")
    kernel, strides, pads = _pool_args(kernel_size, stride, padding)
    return c.emit("AveragePool", [c.value(x)], kernel_shape=kernel, strides=strides, pads=pads,
                  ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad))


@_register("adaptive_avg_pool2d", "_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(c, node, x, output_size):
    out = [int(s) for s in output_size]
    if out == [1, 1]:
        return c.emit("GlobalAveragePool", [c.value(x)])
    if out == [int(s) for s in _meta(x).shape[-2:]]:
        return c.emit("Identity", [c.value(x)])
    raise UnsupportedOp(f"adaptive_avg_pool2d to {out} (only (1, 1) is exported)")


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
    for n in graph_nodes:
        if n.op == "get_attr":
            c.env[n] = c.get_attr(n)
        elif n.op == "call_function":
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
