"""symbolic_trace and Tracer (torch/fx/_symbolic_trace.py).

The tracer calls the module's forward with Proxies for its arguments. While it runs, nn.Module's
`__call__` and `__getattr__` are patched: calls to leaf modules (ember.nn's own modules) record
`call_module`, other modules are traced through; parameters read as attributes become `get_attr`.
Functions registered with `wrap` are patched in their module's globals to record `call_function`.
"""
import collections
import functools
import inspect
import types

import ember
from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.proxy import ParameterProxy, Proxy, TracerBase
from ember.nn.modules.module import Module

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]


class _PH:
    pass


PH = _PH()  # a placeholder marker for concrete_args

_wrapped_fns_to_patch = {}   # (id(globals), name) -> globals dict


def wrap(fn_or_name):
    """Record calls to a module-level function as call_function nodes instead of tracing into it.
    Call it at module scope: `ember.fx.wrap('len')` or `@ember.fx.wrap`."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    if callable(fn_or_name):
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(frame.f_globals), fn_name)] = frame.f_globals
    return fn_or_name


def _find_proxy(*objects):
    found = []

    def visit(a):
        if isinstance(a, Proxy):
            found.append(a)
        elif isinstance(a, (tuple, list)):
            for x in a:
                visit(x)
        elif isinstance(a, dict):
            for x in a.values():
                visit(x)
    for o in objects:
        visit(o)
    return found[0] if found else None


def _create_wrapped_func(orig_fn):
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return_proxy = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            return_proxy.node.meta["is_wrapped"] = True
            return return_proxy
        return orig_fn(*args, **kwargs)
    return wrapped


# how many leading arguments torch's Python functional functions hand to __torch_function__
# positionally (the rest go by keyword); 1 for those not listed
_POSITIONAL = {
    "adaptive_avg_pool2d": 2, "adaptive_avg_pool3d": 2, "adaptive_max_pool1d_with_indices": 2,
    "adaptive_max_pool2d_with_indices": 2, "adaptive_max_pool3d_with_indices": 2, "affine_grid": 2, "batch_norm": 3,
    "binary_cross_entropy": 2, "binary_cross_entropy_with_logits": 2, "cosine_embedding_loss": 3, "cross_entropy": 2,
    "ctc_loss": 4, "embedding": 2, "embedding_bag": 2, "fold": 3, "fractional_max_pool2d_with_indices": 2,
    "fractional_max_pool3d_with_indices": 2, "gaussian_nll_loss": 3, "grid_sample": 2, "group_norm": 2,
    "hinge_embedding_loss": 2, "huber_loss": 2, "kl_div": 2, "l1_loss": 2, "layer_norm": 2, "local_response_norm": 2,
    "lp_pool1d": 3, "lp_pool2d": 3, "lp_pool3d": 3, "margin_ranking_loss": 3, "max_pool1d_with_indices": 2,
    "max_pool2d_with_indices": 2, "max_pool3d_with_indices": 2, "max_unpool1d": 3, "max_unpool2d": 3,
    "max_unpool3d": 3, "mse_loss": 2, "multi_head_attention_forward": 13, "multi_margin_loss": 2,
    "multilabel_margin_loss": 2, "multilabel_soft_margin_loss": 2, "nll_loss": 2, "pad": 2, "poisson_nll_loss": 2,
    "rms_norm": 2, "smooth_l1_loss": 2, "soft_margin_loss": 2, "threshold": 3, "triplet_margin_loss": 3,
    "triplet_margin_with_distance_loss": 3, "unfold": 2,
}


def _functional_wrapper(orig_fn):
    """ember.nn.functional's `fn`, recording call_function(fn) when an argument is a Proxy, with the
    first argument positional and the others by keyword, as torch's functions hand themselves to
    __torch_function__ (`relu(x, inplace = False)`)."""
    sig = inspect.signature(orig_fn)
    npos = _POSITIONAL.get(orig_fn.__name__, 1)

    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
        bound.apply_defaults()
        items = list(bound.arguments.items())
        params = sig.parameters
        pos, kw = [], {}
        for i, (k, v) in enumerate(items):
            kind = params[k].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                pos.extend(v)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                kw.update(v)
            elif i < npos and kind is not inspect.Parameter.KEYWORD_ONLY:
                pos.append(v)
            else:
                kw[k] = v
        return proxy.tracer.create_proxy("call_function", orig_fn, tuple(pos), kw)
    return wrapped


def _functional_names():
    F = ember.nn.functional
    return [n for n in getattr(F, "__all__", dir(F))
            if not n.startswith("_") and inspect.isfunction(getattr(F, n, None))
            and getattr(F, n).__module__.startswith("ember.")]


def _functional_patch(fn):
    """The recording wrapper for an ember.nn.functional function: the Python-written ones name their
    arguments as torch's Python functions do; the generated bindings (C++ functions in torch) record
    the arguments as given."""
    if fn.__module__.startswith("ember.nn"):
        return _functional_wrapper(fn)
    return _create_wrapped_func(fn)


_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _patch_function(fn, nargs):
    """`fn` with its *args/**kwargs turned into ordinary parameters, so that each receives one
    Proxy (the placeholder `*args`) instead of a tuple of them."""
    co = fn.__code__
    new_code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0,
                          co_flags=co.co_flags & ~_HAS_VARSTUFF)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class _Patcher:
    def __init__(self):
        self.patches = []

    def patch_method(self, cls, name, new_fn):
        orig = cls.__dict__.get(name, _MISSING)
        self.patches.append((cls, name, orig))
        setattr(cls, name, new_fn)

    def patch_global(self, globals_, name, new_fn):
        orig = globals_.get(name, _MISSING)
        self.patches.append((globals_, name, orig))
        globals_[name] = new_fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self.patches):
            if isinstance(owner, dict):
                if orig is _MISSING:
                    owner.pop(name, None)
                else:
                    owner[name] = orig
            elif orig is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, orig)
        self.patches.clear()


_MISSING = object()


class Tracer(TracerBase):
    """Traces a module or function into a Graph. Override `is_leaf_module` to choose which
    submodules stay `call_module` nodes."""

    def __init__(self, autowrap_modules=(), autowrap_functions=(), param_shapes_constant=False):
        super().__init__()
        self._autowrap_function_ids = {id(f) for f in autowrap_functions}
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root = None
        self.tensor_attrs = {}
        self.scope = None
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}

    # ---- values ------------------------------------------------------------------------------
    def create_arg(self, a):
        if isinstance(a, ember.nn.Parameter):
            for n_, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Module):
            for n_, p in self.root.named_modules():
                if a is p:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("module is not installed as a submodule")
        if isinstance(a, ember.Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                i = 0
                while True:
                    qualname = f"_tensor_constant{i}"
                    if not hasattr(self.root, qualname):
                        break
                    i += 1
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    # ---- modules -----------------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """ember.nn's own modules (except Sequential) are leaves, as torch.nn's are in torch."""
        return ((m.__module__.startswith("ember.nn") or m.__module__.startswith("ember.ao.nn"))
                and not isinstance(m, ember.nn.Sequential))

    def path_of_module(self, mod):
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        module_qualified_name = self.path_of_module(m)
        key = module_qualified_name
        self.module_stack[key] = (module_qualified_name, type(m))
        try:
            if not self.is_leaf_module(m, module_qualified_name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", module_qualified_name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if isinstance(attr_val, ember.nn.Parameter):
            for n, p in self.root.named_parameters():
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        kwargs = {}
                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            kwargs["proxy_factory_fn"] = (
                                None if not self.param_shapes_constant
                                else lambda node, n=n: ParameterProxy(self, node, n, attr_val))
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {}, **kwargs)
                    return parameter_proxy_cache[n]
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            for n, p in self.root.named_buffers():
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
        return attr_val

    # ---- arguments ---------------------------------------------------------------------------
    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        orig_args = list(co.co_varnames)
        names_iter = iter(co.co_varnames)
        args = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        concrete_args = dict(concrete_args or {})
        if not isinstance(concrete_args, dict):
            raise AssertionError("concrete_args must be a dict")

        def proxy_placeholder(name):
            if name in concrete_args:
                value = concrete_args[name]
                if value is PH or isinstance(value, ember.Tensor):
                    return self.create_proxy("placeholder", name, (), {})
                # a specialised argument: a placeholder with the value as default, and the value itself
                # a specialised argument: the generated forward keeps the parameter (as `flag_1`,
                # with the function's default), the traced code uses the value
                param = sig.parameters.get(name)
                default = () if param is None or param.default is inspect.Parameter.empty else (param.default,)
                self.create_proxy("placeholder", f"{name}_1", default, {},
                                  type_expr=fn_for_analysis.__annotations__.get(name, None))
                return value
            if name[0] == "*":
                default = ()
            else:
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
            return self.create_proxy("placeholder", name, default, {},
                                     type_expr=fn_for_analysis.__annotations__.get(name, None))

        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        args.extend(proxy_placeholder(n) for n in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(proxy_placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(proxy_placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        del orig_args
        return root_fn, args

    # ---- tracing -----------------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """Trace `root` (an nn.Module or a function) and return the Graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self.traced_func_name = "forward"
        else:
            self.root = Module()
            fn = root
            self.traced_func_name = fn.__name__
        tracer_cls = getattr(self, "__class__", None)
        self.graph = Graph(tracer_cls=tracer_cls)
        self.tensor_attrs = {}

        def collect_tensor_attrs(m, prefix_atoms):
            for k, v in m.__dict__.items():
                if isinstance(v, ember.Tensor):
                    self.tensor_attrs[v] = ".".join(prefix_atoms + [k])
            for k, v in m._buffers.items():
                if v is not None:
                    self.tensor_attrs[v] = ".".join(prefix_atoms + [k])
            for k, v in m._modules.items():
                if v is not None:
                    collect_tensor_attrs(v, prefix_atoms + [k])
        collect_tensor_attrs(self.root, [])
        self.submodule_paths = {mod: name for name, mod in self.root.named_modules()}

        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        parameter_proxy_cache = {}
        tracer = self
        orig_getattr = Module.__getattr__
        orig_call = Module.__call__

        def module_getattr_wrapper(mod, attr):
            attr_val = orig_getattr(mod, attr)
            return tracer.getattr(attr, attr_val, parameter_proxy_cache)

        def module_call_wrapper(mod, *args, **kwargs):
            def forward(*args, **kwargs):
                return orig_call(mod, *args, **kwargs)
            return tracer.call_module(mod, forward, args, kwargs)

        try:
            with _Patcher() as patcher:
                patcher.patch_method(Module, "__getattr__", module_getattr_wrapper)
                patcher.patch_method(Module, "__call__", module_call_wrapper)
                F = ember.nn.functional
                for name in _functional_names():
                    patcher.patch_method(F, name, _functional_patch(getattr(F, name)))
                for (_, name), globals_ in list(_wrapped_fns_to_patch.items()):
                    if name in globals_:
                        patcher.patch_global(globals_, name, _create_wrapped_func(globals_[name]))
                    elif name in __builtins__ if isinstance(__builtins__, dict) else hasattr(__builtins__, name):
                        import builtins  # lazy: only for wrap('len')-style builtins
                        patcher.patch_global(globals_, name, _create_wrapped_func(getattr(builtins, name)))
                for f in self._autowrap_functions:
                    if fn_globals.get(f.__name__) is f:
                        patcher.patch_global(fn_globals, f.__name__, _create_wrapped_func(f))
                result = fn(*args)
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=fn.__annotations__.get("return", None))
        finally:
            self.submodule_paths = None
        return self.graph


def symbolic_trace(root, concrete_args=None):
    """Trace `root` (an nn.Module or a function) into a GraphModule."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

