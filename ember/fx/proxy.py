"""Proxy and TracerBase (torch/fx/proxy.py): values that record the operations done on them.

A Proxy wraps a Node. Operators on it (`+`, `[]`, `@`, ...) record `call_function` nodes with the
`operator` module's functions; attribute reads record `getattr`, method calls `call_method`; ember
functions reach `Proxy.__torch_function__` (through ember.overrides) and record `call_function`
with the function itself, or `call_method` for Tensor methods.
"""
import collections
import dis
import inspect
import operator
import linecache
import os
import sys

import ember
from ember.dispatch.operator import OperatorHandle
from ember.fx.graph import magic_methods, reflectable_magic_methods
from ember.fx.node import Node, map_aggregate

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute", "ParameterProxy"]

_EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep


class TraceError(ValueError):
    pass


def _user_stack_trace(limit=8):
    """The formatted stack of the user's frames (frames outside ember and its generated code),
    outermost first, innermost last, as traceback.format_list writes it."""
    frames = []
    f = sys._getframe(1)
    while f is not None and len(frames) < limit:
        fn = f.f_code.co_filename
        if not fn.startswith(_EMBER_DIR) and not fn.startswith(("<eval_with_key>", "<front door")):
            frames.append(f)
        f = f.f_back
    if not frames:
        return None
    parts = []
    for fr in reversed(frames):
        fn, lineno = fr.f_code.co_filename, fr.f_lineno
        parts.append(f'  File "{fn}", line {lineno}, in {fr.f_code.co_name}\n')
        line = linecache.getline(fn, lineno).strip()
        if line:
            parts.append(f"    {line}\n")
    return "".join(parts)


_BASE_TYPES = (str, int, float, bool, complex, type(None), type(...), range, bytes)


def _is_base_value(a):
    if isinstance(a, _BASE_TYPES) or isinstance(a, OperatorHandle):
        return True
    # dtypes, devices, layouts and memory formats
    return type(a) in (type(ember.float32), type(ember.device("cpu")), type(ember.strided),
                       type(ember.contiguous_format))


class TracerBase:
    graph = None
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"
    scope = None
    module_stack = None
    node_name_to_scope = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.record_stack_traces and kind not in ("placeholder", "output"):
            trace = _user_stack_trace()
            if trace:
                node.meta["stack_trace"] = trace
        if self.module_stack:
            node.meta["nn_module_stack"] = collections.OrderedDict(self.module_stack)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs_, dict):
            raise AssertionError("kwargs must be a dict")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """Turn a value into something a Node's args may hold (Proxies become their Nodes)."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*[self.create_arg(elem) for elem in a])
            return tuple(self.create_arg(elem) for elem in a)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {k}")
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if _is_base_value(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for "
                         "a more detailed explanation of what types of control flow can be traced, and check "
                         "out the Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = None
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


_NOT_PROXIED = frozenset(("node", "tracer", "_keys", "_np", "_shape", "_dtype", "_device", "_base", "_vc", "_ameta",
                          "_strides", "_offset", "_storage", "__torch_dispatch__", "_py_keys"))


class Proxy:
    """A value being traced: everything done to it is recorded in its tracer's graph."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k in _NOT_PROXIED:
            # ember's generated bindings read a Tensor's slots: a Proxy has none, so the binding
            # takes its error path, which hands the call to Proxy.__torch_function__
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __deepcopy__(self, memo):
        raise RuntimeError("a Proxy cannot be deep-copied while tracing")

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        inst = None
        for i in dis.get_instructions(frame.f_code):
            if i.offset == frame.f_lasti:
                inst = i
                break
        if inst is None:
            # Python 3.11 reports f_lasti at the CALL/GET_ITER before the unpack
            instrs = list(dis.get_instructions(frame.f_code))
            for idx, i in enumerate(instrs):
                if i.offset >= frame.f_lasti:
                    inst = instrs[idx]
                    break
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self):
        return self.tracer.to_bool(self)

    def keys(self):
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = {}

        def find_tracer(a):
            if isinstance(a, cls):
                tracers[a.tracer] = None
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers.keys())} while trying to trace "
                               f"operations {orig_method}")
        tracer = next(iter(tracers))
        if orig_method is None:
            raise RuntimeError("a Proxy reached an ember function that has no public name to record; call it "
                               "through ember.<name> or ember.nn.functional.<name>")
        if _is_tensor_method(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


def _is_tensor_method(fn):
    """A Tensor method that is not also the public function of the same name (ember's generated
    functions serve as both `ember.add` and `Tensor.add`: those record call_function)."""
    name = getattr(fn, "__name__", None)
    if name is None or getattr(ember, name, None) is fn:
        return False
    attr = inspect.getattr_static(ember.Tensor, name, None)
    if isinstance(attr, property):
        return attr.fget is fn
    return attr is fn or getattr(ember.Tensor, name, None) is fn


class Attribute(Proxy):
    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        # the getattr node is made only when the attribute is used as a value, not when called
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A Proxy for a parameter: its shape, size(), dim() and ndim are read from the parameter."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _make_magic(method):
    def impl(*args, **kwargs):
        tracer = args[0].tracer
        target = getattr(operator, method)
        return tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = method
    as_magic = f'__{method.strip("_")}__'
    setattr(Proxy, as_magic, impl)


for _method in magic_methods:
    _make_magic(_method)


def _define_reflectable(orig_method_name):
    method_name = f'__r{orig_method_name.strip("_")}__'

    def impl(self, rhs):
        target = getattr(operator, orig_method_name)
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = method_name
    impl.__qualname__ = method_name
    setattr(Proxy, method_name, impl)


for _orig in reflectable_magic_methods:
    _define_reflectable(_orig)
