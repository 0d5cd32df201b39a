"""The Python key and the PythonTorchFunction key: where the dispatcher hands a call to Python code.

* Python (PyTorch's PythonFallbackKernel): a Tensor subclass that defines `__torch_dispatch__`
  carries the Python key, and an active TorchDispatchMode includes it in the thread's key set. The
  key sits below Autograd, ADInplaceOrView and the batching layer, so a handler sees every aten op
  after those layers ran: the decomposition of composite ops, the ops backward formulas call, the
  factory ops. The handler runs with those upper layers excluded (as PyTorch's kernels below
  Autograd run under AutoDispatchBelowADInplaceOrView): calling `func` again inside it does not
  record a second autograd node. The innermost mode handles a call first and is popped while it
  runs, so its own calls reach the next mode or the kernels.
* PythonTorchFunction: `__torch_function__` of Tensor subclasses and TorchFunctionMode. PyTorch
  runs it in its Python argument parser; ember gives it the highest key, so it costs one bit of the
  key set when unused. The handler gets the public function (`ember.add`) where one has the op's
  name, else the op. Objects that are not Tensors but define `__torch_function__` (fx's Proxy)
  reach it from the bindings' error path (ember/_bindings.py), which costs nothing on good calls.

Handlers receive torch's (func, types, args, kwargs): arguments equal to their default are left out,
keyword-only ones go to kwargs.
"""
from ember.core import tls
from ember.core.keys import AUTOCAST_KEYS, AUTOGRAD_KEYS, DispatchKey as K
from ember.dispatch import operator as _op

PYTHON = 1 << K.Python
TORCH_FUNCTION = 1 << K.PythonTorchFunction
# the layers above the Python key that a __torch_dispatch__ handler runs below
_ABOVE_PYTHON = sum(1 << k for k in (K.FuncTorchBatched, K.ADInplaceOrView, K.ForwardAD, *AUTOGRAD_KEYS,
                                     *AUTOCAST_KEYS))
_state = tls.current


def torch_args(op, args):
    """Positional schema-order arguments -> torch's (args, kwargs) for a handler."""
    sch = op.schema.arguments
    pos, kw = [], {}
    for a, v in zip(sch, args):
        if a.kwarg_only:
            if not (a.has_default and _same(v, a.default)) and not (v is None and a.optional and not a.has_default):
                kw[a.name] = v
        else:
            pos.append((a, v))
    while pos:
        a, v = pos[-1]
        if (a.has_default and _same(v, a.default)) or (v is None and a.optional and not a.has_default):
            pos.pop()
        else:
            break
    return tuple(v for _, v in pos), kw


def _same(v, d):
    if v is d:
        return True
    if type(v) is bool or type(d) is bool:
        return type(v) is type(d) and v == d
    try:
        return type(v) in (int, float, str, type(None)) and type(d) in (int, float, str, type(None)) and v == d or (
            isinstance(v, (list, tuple)) and isinstance(d, (list, tuple)) and list(v) == list(d))
    except Exception:
        return False


def _overriding(args, bit):
    """Classes of the Tensor arguments that override the handler of `bit` (their class's _py_keys,
    set by Tensor.__init_subclass__), subclasses before their parents (PyTorch's rule)."""
    types = []
    for a in _op._iter_tensors(args):
        t = type(a)
        if getattr(t, "_py_keys", 0) & bit and t not in types:
            types.append(t)
    if len(types) > 1:
        types.sort(key=lambda t: -len(t.__mro__))
    return tuple(types)


# ---- modes ---------------------------------------------------------------------------------------
# Each stack lives on the thread state; a non-empty stack includes its key in every dispatch.
def _push(attr, bit, mode):
    st = _state()
    setattr(st, attr, getattr(st, attr) + (mode,))
    d = st.dk
    st.dk = (d[0] | bit, d[1] | bit)


def _pop(attr, bit):
    st = _state()
    modes = getattr(st, attr)
    if not modes:
        raise RuntimeError("trying to pop from empty mode stack")
    setattr(st, attr, modes[:-1])
    if len(modes) == 1:
        d = st.dk
        st.dk = (d[0] & ~bit, d[1])
    return modes[-1]


def push_dispatch_mode(mode):
    _push("dispatch_modes", PYTHON, mode)


def pop_dispatch_mode():
    return _pop("dispatch_modes", PYTHON)


def push_function_mode(mode):
    _push("function_modes", TORCH_FUNCTION, mode)


def pop_function_mode():
    return _pop("function_modes", TORCH_FUNCTION)


class _Below:
    """Run a handler below the given layers, with the handling mode popped (restored after)."""
    __slots__ = ("mask", "pop", "prev", "mode", "push")

    def __init__(self, mask, pop=None, push=None):
        self.mask, self.pop, self.push = mask, pop, push

    def __enter__(self):
        self.mode = self.pop() if self.pop is not None else None
        self.prev = d = _state().dk
        _state().dk = (d[0], d[1] & ~self.mask)

    def __exit__(self, *exc):
        st = _state()
        d = st.dk
        # keep what the handler did to the mode masks; restore only the layers excluded here
        st.dk = (d[0], (d[1] & ~self.mask) | (self.prev[1] & self.mask))
        if self.mode is not None:
            self.push(self.mode)


def _python_fallback(op, below, args):
    modes = _state().dispatch_modes
    if modes:
        types = _overriding(args, PYTHON)
        a, kw = torch_args(op, args)
        with _Below(_ABOVE_PYTHON, pop_dispatch_mode, push_dispatch_mode):
            r = modes[-1].__torch_dispatch__(op, types, a, kw)
        if r is not NotImplemented:
            return r
        args = tuple(args)
    types = _overriding(args, PYTHON)
    if not types:
        return below(*args)
    a, kw = torch_args(op, args)
    for t in types:
        with _Below(_ABOVE_PYTHON):
            r = t.__torch_dispatch__(op, types, a, kw)
        if r is not NotImplemented:
            return r
    raise TypeError(f"Multiple dispatch failed for '{op.name()}'; all __torch_dispatch__ handlers returned "
                    f"NotImplemented:\n\n" + "".join(f"  - tensor subclass {t}\n" for t in types) +
                    "\nFor more information, try re-running with TORCH_LOGS=not_implemented")


# op -> the public callable a __torch_function__ handler receives (found once per op)
_public = {}


def public_function(op):
    f = _public.get(op)
    if f is None:
        import ember  # lazy: the public namespace, read when a handler first sees this op
        f = getattr(ember, str(op.name), None)
        if not callable(f):
            f = getattr(ember.Tensor, str(op.name), None) or op
        _public[op] = f
    return f


def _torch_function_fallback(op, below, args):
    modes = _state().function_modes
    func = None
    if modes:
        func = public_function(op)
        types = _overriding(args, TORCH_FUNCTION)
        a, kw = torch_args(op, args)
        with _Below(TORCH_FUNCTION, pop_function_mode, push_function_mode):
            r = modes[-1].__torch_function__(func, types, a, kw)
        if r is not NotImplemented:
            return r
    types = _overriding(args, TORCH_FUNCTION)
    if not types:
        return below(*args)
    func = func or public_function(op)
    a, kw = torch_args(op, args)
    for t in types:
        r = t.__torch_function__(func, types, a, kw)
        if r is not NotImplemented:
            return r
    raise TypeError(f"no implementation found for '{getattr(func, '__module__', 'ember')}.{func.__name__}' on "
                    f"types that implement __torch_function__: {list(types)}")


class DisableTorchFunctionSubclass:
    """Inside it, __torch_function__ of subclasses is not called (torch._C.DisableTorchFunctionSubclass)."""
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = d = _state().dk
        _state().dk = (d[0] & ~TORCH_FUNCTION, d[1] & ~TORCH_FUNCTION)

    def __exit__(self, *exc):
        _state().dk = self.prev


def torch_function_enabled():
    d = _state().dk
    return bool(d[1] & TORCH_FUNCTION)


_op.BACKEND_FALLBACKS[K.Python] = _op.Kernel(_python_fallback, boxed=True, name="PythonFallback")
_op.BACKEND_FALLBACKS[K.PythonTorchFunction] = _op.Kernel(_torch_function_fallback, boxed=True,
                                                          name="TorchFunctionFallback")
_op.invalidate()


def objects_with_torch_function(args, kwargs):
    """Arguments that are not Tensors but define __torch_function__ (fx's Proxy), in lists too."""
    from ember.core.tensor_impl import TensorImpl
    out = []
    for a in (*args, *kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if not isinstance(x, (TensorImpl, type)) and hasattr(type(x), "__torch_function__") and \
                    type(x) not in [type(o) for o in out]:
                out.append(x)
    return out


def handle_objects(name, ops, objs, args, kwargs):
    """A binding could not parse its arguments because some are not Tensors but define
    __torch_function__: hand the call to them (torch's handle_torch_function), modes first. Arguments
    are given as the user would write them: positional in schema order, defaults left out."""
    import ember  # lazy: the public function of this name
    args, kwargs = list(args), dict(kwargs)
    def pname(a):  # the binding calls a schema's `self` `input`
        return "input" if a.name == "self" else a.name
    fits = [o.schema.arguments for o in ops if len(o.schema.arguments) >= len(args) and
            set(kwargs) <= {pname(a) for a in o.schema.arguments}]
    sch = fits[0] if fits else ops[0].schema.arguments if ops else ()
    for a in sch[len(args):]:
        if a.kwarg_only or pname(a) not in kwargs:
            break
        args.append(kwargs.pop(pname(a)))
    defaults = {a.name: a.default for a in sch if a.has_default}
    kwargs = {k: v for k, v in kwargs.items() if v is not None and not (k in defaults and _same(v, defaults[k]))
              and type(v).__name__ != "_Missing"}
    while args and sch and len(args) <= len(sch) and sch[len(args) - 1].has_default and \
            _same(args[-1], sch[len(args) - 1].default):
        args.pop()
    args = tuple(args)
    func = getattr(ember, name, None) or getattr(ember.Tensor, name, None)
    types = tuple(type(o) for o in objs)
    modes = _state().function_modes
    if modes:
        with _Below(TORCH_FUNCTION, pop_function_mode, push_function_mode):
            r = modes[-1].__torch_function__(func, types, args, kwargs)
        if r is not NotImplemented:
            return r
    for o in objs:
        r = type(o).__torch_function__(func, types, args, kwargs)
        if r is not NotImplemented:
            return r
    raise TypeError(f"no implementation found for 'ember.{name}' on types that implement "
                    f"__torch_function__: {list(types)}")
