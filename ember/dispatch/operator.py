"""Operator entries, dispatch tables and calls (ATen's Dispatcher / OperatorEntry).

Each OperatorHandle maps a runtime key set to a ready-to-call entry. The entry for a key set is
computed once, from PyTorch's precedence, and cached; a call is the key-set OR done by the
binding, one dict look-up, and one Python call per layer actually present. Layer kernels
(Autograd, ADInplaceOrView, Autocast, Python) are registered with `redispatch=True`: they
receive the entry for the keys below them, bound once in the table, as their first argument or,
for the generated Autograd kernels, as the default of a last `below` parameter (_bind_below).
"""
import functools
import inspect
import types

from ember.core import tls
from ember.core.keys import (AUTOCAST_KEYS, AUTOGRAD_KEYS, AUTOGRAD_MASK, AUTOGRAD_OF, BACKEND_KEYS, BACKEND_MASK,
                             DispatchKey as K, keys_in)

FALLTHROUGH = object()  # marker: this key passes the call to the keys below it
_BACKENDS = frozenset(BACKEND_KEYS)
_LAYER_ALIASES = {K.Autograd: AUTOGRAD_KEYS, K.Autocast: AUTOCAST_KEYS}

# global state ------------------------------------------------------------------------------
OPERATORS = {}            # "ns::name.overload" -> OperatorHandle
BACKEND_FALLBACKS = {}    # runtime key -> Kernel or FALLTHROUGH
# dispatch observers (ember.dispatch_trace), empty when off. An observer wraps entries as they are
# built: wrap_call(op, ks, entry) for a whole call, wrap_kernel(op, key, kernel, fn) for one layer
observers = []


class Kernel:
    __slots__ = ("fn", "redispatch", "name", "boxed")

    def __init__(self, fn, redispatch=False, name=None, boxed=False):
        self.fn = fn
        self.redispatch = redispatch   # fn(next_entry, *args)
        self.boxed = boxed             # fn(op, next_entry, args, kwargs): serves every op
        self.name = name or getattr(fn, "__qualname__", repr(fn))


def _is_layer(key):
    return key not in _BACKENDS


class _Table(dict):
    __slots__ = ("op",)

    def __missing__(self, ks):
        entry = self.op._compute_entry(ks)
        self[ks] = entry
        return entry


class OperatorHandle:
    __slots__ = ("ns", "name", "overload", "_schema_obj", "_text", "kernels", "table", "tags", "py_kernels",
                 "__weakref__", "meta", "doc", "packet", "call", "call_below_autograd")

    def __init__(self, ns, schema, tags=(), name=None, overload=None):
        # `schema` is a FunctionSchema or its text; text is parsed on first use, since parsing a
        # thousand schemas would dominate `import ember`
        self.ns = ns
        if isinstance(schema, str):
            self._schema_obj, self._text = None, schema
            self.name, self.overload = _OpName(name, ns, overload), overload
        else:
            self._schema_obj, self._text = schema, schema.text
            self.name, self.overload = _OpName(schema.name, ns, schema.overload), schema.overload
        self.kernels = {}
        self.table = _Table()
        self.table.op = self
        self.tags = tuple(tags)
        self.meta = None
        self.packet = None

    # ---- identity --------------------------------------------------------------------------
    @property
    def schema(self):
        s = self._schema_obj
        if s is None:
            from ember.dispatch.schema import parse_schema
            s = self._schema_obj = parse_schema(self._text)
        return s

    @property
    def qualname(self):
        return f"{self.ns}::{self.name}" + (f".{self.overload}" if self.overload else "")

    def __repr__(self):
        return f"{self.ns}.{self.name}.{self.overload or 'default'}"

    # ---- torch's OpOverload surface, for __torch_dispatch__ handlers and fx graphs -------------
    @property
    def _schema(self):
        return self.schema

    @property
    def __name__(self):
        return f"{self.name}.{self.overload or 'default'}"

    @property
    def _opname(self):
        return str(self.name)

    @property
    def _overloadname(self):
        return self.overload or "default"

    @property
    def overloadpacket(self):
        return self.packet

    @property
    def namespace(self):
        return self.ns

    def __reduce__(self):
        # ops pickle by name (an fx graph holding them can be saved), as torch's OpOverload does
        return (_lookup_op, (self.ns, str(self.name), self.overload or ""))

    # ---- registration ----------------------------------------------------------------------
    def register(self, key, fn, redispatch=False, name=None):
        if fn is FALLTHROUGH:
            self.kernels[key] = FALLTHROUGH
        else:
            self.kernels[key] = fn if isinstance(fn, Kernel) else Kernel(fn, redispatch, name)
        invalidate(self)

    def deregister(self, key):
        self.kernels.pop(key, None)
        invalidate(self)

    def has_kernel_for(self, key):
        return key in self.kernels

    # ---- table computation (PyTorch's computeDispatchTableEntry) ---------------------------
    def _kernel_for(self, key):
        ks = self.kernels
        k = ks.get(key)
        if k is not None:
            return k
        if key in _BACKENDS:
            k = ks.get(K.CompositeExplicitAutograd)
            if k is not None:
                return k
            k = ks.get(K.CompositeImplicitAutograd)
            if k is not None:
                return k
        elif key in AUTOGRAD_KEYS:
            # CompositeImplicit serves autograd keys only without a backend/explicit kernel
            k = ks.get(K.CompositeImplicitAutograd)
            if k is not None:
                backend = next((b for b, a in AUTOGRAD_OF.items() if a == key), None)
                if backend not in ks and K.CompositeExplicitAutograd not in ks:
                    return k
            k = ks.get(K.Autograd)
            if k is not None:
                return k
        elif key in AUTOCAST_KEYS:
            k = ks.get(K.Autocast)
            if k is not None:
                return k
        return BACKEND_FALLBACKS.get(key)

    def _compute_entry(self, ks):
        chain = []
        for key in keys_in(ks):
            k = self._kernel_for(key)
            if k is FALLTHROUGH:
                continue
            if k is None:
                if key in _BACKENDS or not chain and not (ks & BACKEND_MASK):
                    return _missing(self, key)
                continue  # a layer without kernel or fallback passes through
            chain.append((key, k))
            if not (k.redispatch or k.boxed):
                break  # a backend or composite kernel ends the chain
        if not chain:
            return _missing(self, None)
        entry = None
        composite_below = False
        for key, k in reversed(chain):
            if composite_below and key in AUTOGRAD_KEYS:
                # kernels below autograd that call other ops must not record them again
                # (PyTorch's AutoDispatchBelowADInplaceOrView)
                entry = _below_autograd(entry)
            entry = _bind(self, key, k, entry)
            if not (k.redispatch or k.boxed) and key in _BACKENDS and self.kernels.get(key) is not k:
                composite_below = True
        if ((ks & BACKEND_MASK) & ((ks & BACKEND_MASK) - 1) and "cross_device" not in self.tags
                and chain[-1][1] is not self.kernels.get(K.CompositeImplicitAutograd)):
            # a CompositeImplicitAutograd op has no wrapper of its own: the ops it calls check
            entry = _device_check(self, ks, entry)
        if observers:
            entry = observers[-1].wrap_call(self, ks, entry)
        return entry

    # ---- calling ---------------------------------------------------------------------------
    # The front door for code inside ember (composites, formulas, nn, the Python API):
    #   op.call(*args)                 every argument positional, as the schema lists them; the
    #                                  key set comes from the Tensor arguments (TypedOperatorHandle::call)
    #   op.call_below_autograd(*args)  the same, below Autograd and ADInplaceOrView: for kernels that
    #                                  record their own node (AutoDispatchBelowADInplaceOrView)
    #   op.redispatch(ks, *args)       a layer kernel passing the call to the keys below itself
    # `call` and `call_below_autograd` are built from the schema on first use (see _typed_call).
    def __getattr__(self, name):
        if name == "call" or name == "call_below_autograd":
            fn = _typed_call(self, 0 if name == "call" else _BELOW_AUTOGRAD)
            object.__setattr__(self, name, fn)
            return fn
        raise AttributeError(f"'OperatorHandle' object has no attribute '{name}'")

    def __call__(self, *args, **kwargs):
        """Boxed call from Python: compute the key set from every tensor argument."""
        if kwargs or len(args) < len(self.schema.arguments):
            args = bind_kwargs(self.schema, args, kwargs)
        ks = keyset_of(args)
        if not ks & BACKEND_MASK:
            ks = self._factory_keys(args)
        return self.table[ks](*args)

    def _factory_keys(self, args):
        """No tensor argument: the backend comes from device= (BackendSelect's rule)."""
        from ember.dispatch.backend_select import dev_keys
        dev = next((v for a, v in zip(self.schema.arguments, args) if a.base == "Device"), None)
        d = tls.current().dk
        return (keyset_of(args) | dev_keys(dev) | d[0]) & d[1]

    def redispatch(self, ks, *args):
        return self.table[ks](*args)

    def entry(self, ks):
        return self.table[ks]

    def default(self, *args, **kwargs):
        return self(*args, **kwargs)


class _OpName(str):
    """An op's base name ("add"), which is also torch's `OpOverload.name()`: calling it gives the
    qualified name ("aten::add.Tensor")."""

    def __new__(cls, name, ns="aten", overload=None):
        s = str.__new__(cls, name)
        s.qualified = f"{ns}::{name}" + (f".{overload}" if overload else "")
        return s

    def __call__(self):
        return self.qualified


def _lookup_op(ns, name, overload):
    return OPERATORS[f"{ns}::{name}" + (f".{overload}" if overload else "")]


_NO_KEYS = frozenset((int, float, bool, complex, type(None)))


def _keys_of(x):
    """Keys a Tensor-typed argument adds: none for None or a Python number; a list ORs its items."""
    if x.__class__ in _NO_KEYS:  # a number where a Tensor goes: no exception, the path stays cheap
        return 0
    try:
        return x._keys
    except AttributeError:
        pass
    if isinstance(x, (list, tuple)):
        ks = 0
        for t in x:
            if t is not None:
                ks |= _keys_of(t)
        return ks
    return 0


def list_keys(xs):
    """Keys of a Tensor[] / Tensor?[] argument."""
    ks = 0
    for t in xs:
        if t is not None:
            ks |= t._keys
    return ks


def _typed_call(op, drop):
    """The positional call of `op` (all arguments given): the key set is the OR of its Tensor-typed
    arguments' keys (or, with none, the backend of its device=, BackendSelect's rule), with the
    thread-local include/exclude sets, less `drop`.

    Its source is written per schema, with one parameter per argument: composites and formulas run
    it in every training step, and a fixed-arity call with the key-set OR inline costs what the
    hand-written table look-up it replaces cost (a `*args` call costs a tenth more)."""
    from ember.dispatch.backend_select import dev_keys
    args = op.schema.arguments
    names = [f"a{i}" for i in range(len(args))]
    params = []
    defaults = {}
    for n, a in zip(names, args):
        if a.has_default:
            defaults[f"_d{n}"] = a.default
            params.append(f"{n}=_d{n}")
        elif a.optional:
            params.append(f"{n}=None")
        elif params and params[-1].count("="):  # a required argument after a defaulted one
            params = [p.split("=")[0] for p in params]
            params.append(n)
        else:
            params.append(n)
    fast, slow = [], []
    for n, a in zip(names, args):
        if a.base != "Tensor":
            continue
        slow.append(f"_keys_of({n})")
        if a.is_list:
            fast.append(f"list_keys({n})")
        elif a.optional:
            fast.append(f"(0 if {n} is None else {n}._keys)")
        elif fast:
            # a later Tensor argument may hold a Python number (`add.Tensor(x, 1)`, as graphs replay
            # it): a set look-up (~25 ns) instead of an AttributeError (~450 ns) on that path
            fast.append(f"(0 if {n}.__class__ in _NO_KEYS else {n}._keys)")
        else:
            fast.append(f"{n}._keys")
    mask = "" if not drop else f" & {~drop}"
    if fast:
        body = (f"    try:\n        ks = {' | '.join(fast)}\n"
                f"    except AttributeError:  # a number where a Tensor goes (where.Scalar's composites)\n"
                f"        ks = {' | '.join(slow)}\n")
    else:
        dev = next((n for n, a in zip(names, args) if a.base == "Device"), "None")
        body = f"    ks = dev_keys({dev})\n"
    src = (f"def call({', '.join(params)}):\n{body}"
           f"    d = st().dk\n    return table[(ks | d[0]) & d[1]{mask}]({', '.join(names)})\n")
    ns = dict(defaults, table=op.table, st=tls.current, dev_keys=dev_keys, _keys_of=_keys_of, _NO_KEYS=_NO_KEYS,
              list_keys=list_keys)
    exec(compile(src, f"<front door of {op.qualname}>", "exec"), ns)
    call = ns["call"]
    call.__qualname__ = call.__name__ = f"{op.name}_{op.overload or 'default'}_call"
    return call


def _bind(op, key, k, below):
    if k.boxed:
        def fn(*args, _f=k.fn, _below=below):
            return _f(op, _below, args)
    elif k.redispatch:
        fn = _bind_below(k.fn, below)
    else:
        fn = k.fn
    if observers:
        fn = observers[-1].wrap_kernel(op, key, k, fn)
    return fn


def _bind_below(f, below):
    """Redispatch kernel f with the entry below bound. A kernel that takes `below` as its last
    parameter, defaulting to None (the generated Autograd kernels), gets a copy of itself whose
    default is `below`: a plain Python call, which CPython 3.11 runs in the caller's eval loop,
    where a functools.partial costs a C-level call (~300 instructions more per recorded op)."""
    c = getattr(f, "__code__", None)
    if (c is not None and c.co_argcount and c.co_varnames[c.co_argcount - 1] == "below"
            and f.__defaults__ == (None,) and not c.co_kwonlyargcount and not c.co_flags & _VARARGS):
        g = types.FunctionType(c, f.__globals__, f.__name__, (below,), f.__closure__)
        g.__qualname__ = f.__qualname__
        g.__dict__.update(f.__dict__)
        return g
    return functools.partial(f, below)


_VARARGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_BELOW_AUTOGRAD = sum(1 << k for k in AUTOGRAD_KEYS) | (1 << K.ADInplaceOrView)


def _below_autograd(entry):
    current = tls.current

    def below(*args):
        st = current()
        prev = st.dk
        st.dk = (prev[0], prev[1] & ~_BELOW_AUTOGRAD)
        try:
            return entry(*args)
        finally:
            st.dk = prev
    return below


class NoTensorArgumentsError(NotImplementedError, TypeError):
    """A call with no tensor to take a backend from (`ember.pow(2, 3)`): the Undefined backend's
    error. It is a TypeError too, so a Python binding that made the call gives torch's argument
    error instead (resolve.bind refuses numbers in every Tensor slot)."""


def _missing(op, key):
    avail = sorted({K(x).name if isinstance(x, int) and x < 100 else x.name for x in op.kernels})

    def fail(*args, **kwargs):
        kname = key.name if key is not None else "Undefined"
        raise (NotImplementedError if key is not None else NoTensorArgumentsError)(
            f"Could not run '{op.qualname}' with arguments from the '{kname}' backend. This could "
            f"be because the operator doesn't exist for this backend. '{op.qualname}' is only "
            f"available for these backends: [{', '.join(avail)}].")
    return fail


def _device_check(op, ks, entry):
    """Several backends in one call: allowed only for 0-d CPU tensors (PyTorch's rule).

    PyTorch words the error two ways: TensorIterator ops (pointwise) name the two devices; other
    ops fail the check their generated wrapper makes, which names the argument and the wrapper."""
    def check(*args):
        devs = []
        for a in _iter_tensors(args):
            d = a._device
            if d.type == "cpu" and len(a._shape) == 0:
                continue
            if d not in devs:
                devs.append(d)
        if len(devs) > 1:
            if "pointwise" in op.tags:
                raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                                   f"two devices, {devs[0]} and {devs[1]}!")
            _wrapper_device_error(op, ks, args, devs)
        return entry(*args)
    return check


def _wrapper_device_error(op, ks, args, devs):
    from ember.core.tensor_impl import TensorImpl
    common = devs[0]
    names = [a.name for a in op.schema.arguments]
    for name, a in zip(names, args):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for x in items:
            if isinstance(x, TensorImpl) and x._device != common and not (
                    x._device.type == "cpu" and len(x._shape) == 0):
                key = K((ks & BACKEND_MASK).bit_length() - 1).name  # the kernel that would run
                # torchgen names a structured kernel's wrapper after the op, others after overload_op
                suffix = op.name if "structured" in op.tags else f"{op.overload}_{op.name}"
                raise RuntimeError(f"Expected all tensors to be on the same device, but got {name} is on "
                                   f"{x._device}, different from other tensors on {common} (when "
                                   f"checking argument in method wrapper_{key}_{suffix})")
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                       f"{devs[0]} and {devs[1]}!")


def _iter_tensors(args):
    from ember.core.tensor_impl import TensorImpl
    for a in args:
        if isinstance(a, TensorImpl):
            yield a
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, TensorImpl):
                    yield x


def reaches_autograd(t):
    """Whether a call on Tensor `t` would pass through an Autograd key now: `t` carries one and the
    thread's exclusions (a below-autograd region, backward with grad mode off) keep it. For
    composites that record their own node, or pick their inner call, by where they run."""
    d = tls.current().dk
    return ((t._keys | d[0]) & d[1] & AUTOGRAD_MASK) != 0


def keyset_of(args):
    ks = 0
    for a in _iter_tensors(args):
        ks |= a._keys
    d = tls.current().dk
    return (ks | d[0]) & d[1]


def bind_kwargs(schema, args, kwargs):
    kwargs = dict(kwargs)
    out = list(args)
    for a in schema.arguments[len(args):]:
        if a.name in kwargs:
            out.append(kwargs.pop(a.name))
        elif a.optional and not a.has_default:
            out.append(None)
        elif a.has_default:
            out.append(a.default)
        else:
            raise TypeError(f"{schema.full_name}() missing required argument '{a.name}'")
    if kwargs:
        raise TypeError(f"{schema.full_name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return tuple(out)


def invalidate(op=None):
    """Drop cached entries (after a registration, or when an observer comes or goes)."""
    if op is not None:
        op.table.clear()
    else:
        for o in OPERATORS.values():
            o.table.clear()


def register_fallback(key, fn, boxed=True):
    BACKEND_FALLBACKS[key] = FALLTHROUGH if fn is FALLTHROUGH else Kernel(fn, boxed=boxed)
    invalidate()


# Layers that most ops do not need pass through by default, so they cost nothing in the table.
for _k in (K.ADInplaceOrView, K.Python, K.BackendSelect, K.PythonDispatcher, K.FuncTorchBatched, K.ForwardAD,
           K.PythonTorchFunction) + AUTOCAST_KEYS:
    BACKEND_FALLBACKS[_k] = FALLTHROUGH
