"""The autograd graph: Node (a backward function with saved context), edges, SavedVariable,
AccumulateGrad, and how results get their history (torch/csrc/autograd/{function,variable}.h).

An edge is a `(node, input_nr)` tuple or None for an input that needs no gradient.
"""
import collections
import itertools
import sys
import weakref

import numpy as np

from ember.autograd.meta import _BACKENDS, _BIT_OF_BACKEND, AutogradMeta, autograd_key_bit
from ember.core import tls
from ember.core.keys import AUTOGRAD_MASK as _AUTOGRAD_MASK, DispatchKey as _DK
from ember.core.layout import contiguous_format as _contiguous_format, is_non_overlapping_and_dense as _dense
from ember.core.tensor_impl import SPARSE_BIT as _SPARSE_BIT, TensorImpl, sparse_shallow_copy as _sparse_shallow_copy
from ember.core.tensor_impl import tensor_class as _tensor_class

# forward-mode AD (ember/autograd/forward_ad.py) sets this: copy_tangent[0](saved, alias)
copy_tangent = [None]
_FORWARD_AD = 1 << _DK.ForwardAD
_NOT_AUTOGRAD = ~_AUTOGRAD_MASK
_NUMBERS = frozenset((bool, int, float, complex))

_state = tls.current
_seq = itertools.count()
_new = object.__new__
_getrefcount = sys.getrefcount
_nd = np.ndarray
_np_add = np.add


class Node:
    # Rarely-set fields are class-level defaults: a node is created per recorded op, and each
    # attribute stored in __init__ costs on that path.
    _pre_hooks = _post_hooks = _tensor_pre_hooks = _retain_hooks = None
    _metadata = None
    _released = False
    _anomaly = None
    _has_hooks = False  # True: the engine runs the node through _call_node (hooks, an anomaly trace)
    _saves = True  # False: release_variables has nothing to free (the engine skips the call)

    def __init__(self):
        self._seq = next_seq()
        self._next = ()
        self._input_meta = []

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        return tuple((None, 0) if e is None else e for e in self._next)

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def apply(self, grads):
        raise NotImplementedError

    def __call__(self, *grads):
        return self.apply(list(grads))

    def release_variables(self):
        self._released = True

    def register_hook(self, fn):
        self._has_hooks = True
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return _Handle(self._post_hooks, fn)

    def register_prehook(self, fn):
        self._has_hooks = True
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _Handle(self._pre_hooks, fn)

    def _register_tensor_pre_hook(self, output_nr, fn, retain=False):
        self._has_hooks = True
        attr = "_retain_hooks" if retain else "_tensor_pre_hooks"
        d = getattr(self, attr)
        if d is None:
            d = {}
            setattr(self, attr, d)
        lst = d.setdefault(output_nr, [])
        if retain:
            lst.clear()
        lst.append(fn)
        return _Handle(lst, fn)

    def _sequence_nr(self):
        return self._seq


class _Handle:
    """RemovableHandle."""

    def __init__(self, lst, fn):
        self._lst, self._fn = lst, fn

    def remove(self):
        try:
            self._lst.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.remove()


class AccumulateGrad(Node):
    """The sink for a leaf: adds the incoming gradient into `variable.grad`."""

    def name(self):
        return "torch::autograd::AccumulateGrad"  # PyTorch's exact name: programs compare it

    def __init__(self, variable):  # Node.__init__'s fields set here: one call per leaf per graph
        self._seq = next_seq()
        self._next = ()
        self.variable = variable
        self._input_meta = [(variable._shape, variable._dtype, variable._device)]

    def apply(self, grads):
        g = grads[0]
        var = self.variable
        if g is None:
            return ()
        m = var._ameta
        old = m.grad
        if old is None:
            if _state().ag:  # grad mode on
                m.grad = g if _obeys_layout_contract(g, var) else _clone_obey_contract(g, var)
            elif g._keys & _SPARSE_BIT:
                # torch stores _sparse_coo_tensor_unsafe(g._indices(), g._values()): a shallow copy whose
                # coalesced flag is recomputed (true only below two entries)
                m.grad = _sparse_shallow_copy(g)
            elif (_getrefcount(g) <= 3 and g._base is None and g._ameta is None
                  and g._shape == var._shape and _obeys_layout_contract(g, var)):
                m.grad = g  # nobody else holds it: take it, as PyTorch steals a use_count()==1 grad
            else:
                m.grad = _clone_obey_contract(g, var)  # shared with another leaf, or a view: own a copy
        elif _state().ag:
            m.grad = old + g
        else:
            a, b = old._np, g._np
            if (a.__class__ is _nd and b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape
                    and old._ameta is None and a.flags.writeable and old._device.type == "cpu"):
                _np_add(a, b, a)  # old.add_(g) without the dispatch
                old._bump_version()
            else:
                old.add_(g)
        hooks = m.post_acc_hooks
        if hooks:
            for h in list(hooks):
                h(var)
        return ()


def _obeys_layout_contract(g, var):
    """torch's obeys_layout_contract: a leaf's .grad has the leaf's strides (size-1 dims aside)
    when the leaf is non-overlapping and dense, else it is contiguous."""
    gs, vs = g.stride(), var.stride()
    shape = var._shape
    if g._shape != shape:
        return g.is_contiguous()
    if not _dense(shape, vs):
        return g.is_contiguous()
    if gs == vs:
        return True
    for n, a, b in zip(shape, gs, vs):
        if n != 1:
            if a != b:
                return False
        elif a == 0:
            return False
    return True


def _clone_obey_contract(g, var):
    """torch's clone_obey_contract: a copy of g laid out as the leaf (contiguous if it is not dense)."""
    a, b = g._np, var._np
    if a is not None and b is not None and a.flags.c_contiguous and b.flags.c_contiguous:
        return g.clone()  # the common CPU case, two flag tests: a plain copy is already laid out so
    if var.is_contiguous():
        return g.clone(memory_format=_contiguous_format)
    if g._shape == var._shape and _dense(var._shape, var.stride()):
        r = g.new_empty_strided(var._shape, var.stride())
        r.copy_(g)
        return r
    return g.clone(memory_format=_contiguous_format)


def grad_accumulator(t):
    m = t._ameta
    ref = m.grad_accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        m.grad_accumulator = weakref.ref(acc)
        if m.grad_fn is None:  # a leaf: its defaults on the instance (see collect_next_edges_2)
            m.grad_fn, m.output_nr = None, 0
    return acc


class GradientEdge(collections.namedtuple("GradientEdge", ["node", "output_nr", "ownership_token"],
                                          defaults=[None])):
    """An edge of the graph (torch.autograd.graph.GradientEdge): autograd.grad accepts it in place of
    a tensor, for gradients with respect to a node's output."""


def get_gradient_edge(tensor):
    e = edge(tensor)
    if e is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    return GradientEdge(e[0], e[1])


def increment_version(tensor):
    """Bump the tensor's version counter, as an in-place change would (for writes autograd cannot see)."""
    for t in (tensor,) if isinstance(tensor, TensorImpl) else tensor:
        t._bump_version()


def edge(t):
    """The edge a gradient for `t` flows along: (node, input_nr), or None for an input that needs no
    gradient (a Python number, a tensor without grad). The one definition of a tensor's edge: the
    collect_next_edges functions inline its two commonest cases and call it for the others."""
    m = getattr(t, "_ameta", None)  # a number raises no AttributeError here (raising costs ~0.4 µs)
    if m is None:
        return (t.node, t.output_nr) if t.__class__ is GradientEdge else None
    fn = m.grad_fn
    if fn is not None:  # an op's result: its grad_fn (a stale view's is recomputed first)
        if t._base is not None and m.view_version != t._vc[0]:
            fn = refresh_view_history(t)
        return (fn, m.output_nr)
    if m.requires_grad:  # a leaf: its AccumulateGrad while the graph holds it
        ref = m.grad_accumulator
        fn = ref() if ref is not None else None
        return (fn if fn is not None else grad_accumulator(t), 0)
    return None


def collect_next_edges(tensors):
    """The edges a node's gradients flow along, one per tensor of the sequence `tensors`; None in place
    of the tuple when no input needs a gradient: the op records nothing."""
    edges = tuple([edge(t) for t in tensors])
    return None if edges.count(None) == len(edges) else edges


# collect_next_edges for one and for two tensors (most ops), without a loop, a list or a call per
# tensor. Inline, edge()'s two commonest cases: an op's result that is no view, and a leaf whose
# AccumulateGrad is alive (grad_accumulator() stores the fields read here on the leaf's meta: a read
# that falls back to a class-level default is several times slower); edge() decides the others.

def collect_next_edges_1(t):
    try:
        m = t._ameta
    except AttributeError:  # a Python number (or a GradientEdge): edge() decides
        e = edge(t)
        return None if e is None else (e,)
    if m is None:
        return None
    if (fn := m.grad_fn) is not None and t._base is None:
        return ((fn, m.output_nr),)
    if fn is None and m.requires_grad and (fn := m.grad_accumulator) is not None and (fn := fn()) is not None:
        return ((fn, 0),)
    e = edge(t)
    return None if e is None else (e,)


def collect_next_edges_2(a, b):
    if b.__class__ in _NUMBERS:  # x + 1: a Python number's edge is None, without raising (~0.4 us)
        e = collect_next_edges_1(a)
        return None if e is None else (e[0], None)
    try:
        m, n = a._ameta, b._ameta
    except AttributeError:  # a Python number (or a GradientEdge) for one of them: edge() decides
        e, f = edge(a), edge(b)
        return None if e is None and f is None else (e, f)
    if m is None:
        e = None
    elif (fn := m.grad_fn) is not None and a._base is None:
        e = (fn, m.output_nr)
    elif fn is None and m.requires_grad and (fn := m.grad_accumulator) is not None and (fn := fn()) is not None:
        e = (fn, 0)
    else:
        e = edge(a)
    if n is None:
        return None if e is None else (e, None)
    if (fn := n.grad_fn) is not None and b._base is None:
        return (e, (fn, n.output_nr))
    if fn is None and n.requires_grad and (fn := n.grad_accumulator) is not None and (fn := fn()) is not None:
        return (e, (fn, 0))
    f = edge(b)
    return None if e is None and f is None else (e, f)


def refresh_view_history(t):
    """A view whose base was written through another view since its history was recorded gets a
    new history from the base's (PyTorch regenerates the grad_fn of a stale view the same way)."""
    m = t._ameta
    base = t._base
    bm = base._ameta
    if bm is None or bm.grad_fn is None or m.view_version is None:
        m.view_version = t._vc[0] if t._vc is not None else 0
        return m.grad_fn
    # lazy: views.py defines this node on top of graph's Node; moving it here would end the cycle
    from ember.autograd.views import AsStridedBackward0, _geometry
    vn = AsStridedBackward0()
    vn.base_geom, vn.view_geom = _geometry(base), _geometry(t)
    vn._next = (edge(base),)
    vn._input_meta = [(t._shape, t._dtype, t._device)]
    m.grad_fn = vn
    m.output_nr = 0
    m.view_version = t._vc[0]
    return vn


def set_history(t, node, output_nr=0):
    """Make `t` (a fresh result) output `output_nr` of `node`."""
    m = t._ameta
    if m is None:
        m = t._ameta = AutogradMeta()
    m.requires_grad = True
    m.grad_fn = node
    m.output_nr = output_nr
    if t._base is not None:
        m.view_version = t._version_counter()[0]
    bit = _BIT_OF_BACKEND.get(t._keys & _BACKENDS)
    t._keys |= bit if bit is not None else autograd_key_bit(t)
    im = node._input_meta
    if im.__class__ is tuple:  # _set_history's short way keeps its one output's metadata in a tuple
        im = node._input_meta = list(im)
    if output_nr == 0 and not im:
        im.append((t._shape, t._dtype, t._device))
    else:
        while len(im) <= output_nr:
            im.append(None)
        im[output_nr] = (t._shape, t._dtype, t._device)
    if _state()._anomaly:
        from ember.autograd.anomaly import record_forward_trace
        record_forward_trace(node)


def alias(t):
    """A new tensor object over the same memory and version counter, with no autograd history."""
    r = _new(t.__class__)
    r._np = a = t._np
    r._shape = t._shape
    r._dtype = t._dtype
    r._device = t._device
    keys = t._keys
    bit = _BIT_OF_BACKEND.get(keys & _BACKENDS)
    r._keys = keys & ~(bit if bit is not None else autograd_key_bit(t))
    r._base = t._base  # not t: a saved output's alias holding its result would make a cycle
    vc = t._vc
    r._vc = vc if vc is not None else t._version_counter()
    r._ameta = None
    if a is None:  # CPU tensors derive strides and offset from the array; others carry them
        for s in ("_strides", "_offset", "_sp", "_storage"):  # _sp: a sparse tensor's fields
            try:
                setattr(r, s, getattr(t, s))
            except AttributeError:
                pass
        if t.__class__ is not _tensor_class[0]:  # a subclass's own state (a FakeTensor's meta tensor)
            r.__dict__.update(t.__dict__)
    return r


_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
          "they have already been freed). Saved intermediate values of the graph are freed when you call "
          ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
          "graph a second time or if you need to access saved tensors after calling backward.")


class CompiledFunctionBackward(Node):
    """grad_fn of a compiled training step's output whose graph the step's own backward() consumed:
    the compiled step computes it without recording autograd (ember/_inductor/compile_fx.py), as
    eager's freed graph could not be run again either. torch.compile's outputs carry this name."""
    _released = True
    _saves = False

    def apply(self, grads):
        raise RuntimeError(_FREED)


def freed_history(t):
    """Give t (a fresh result) a CompiledFunctionBackward as grad_fn: requires_grad, not a leaf."""
    set_history(t, CompiledFunctionBackward())
    return t


def release_graph(*ts):
    """Free the saved tensors of each tensor's grad_fn, as a backward() without retain_graph frees
    the nodes it ran."""
    for t in ts:
        m = t._ameta
        fn = m.grad_fn if m is not None else None
        if fn is not None and fn._saves:
            fn.release_variables()


class SavedVariable:
    """A tensor saved for backward, with the version it had then (saved_variable.cpp)."""
    __slots__ = ("data", "version", "is_output", "output_nr", "grad_fn_name", "packed", "unpack_hook",
                 "_released", "leaf_grad_fn", "requires_grad", "raw")

    def __init__(self, t, is_output, node=None):
        self._released = False
        if not isinstance(t, TensorImpl):
            # None, or a Python number given for a Tensor argument (x * 2)
            self.raw = True
            self.data = t
            self.packed = None
            self.unpack_hook = None
            return
        self.raw = False
        self.is_output = is_output
        vc = t._vc
        self.version = (vc if vc is not None else t._version_counter())[0]
        m = t._ameta
        self.leaf_grad_fn = None
        if m is None:
            self.requires_grad = False
            self.output_nr = 0
            self.grad_fn_name = None
            self.data = alias(t) if is_output else t
        else:
            fn = m.grad_fn
            self.requires_grad = fn is not None or m.requires_grad
            self.output_nr = m.output_nr
            if is_output:
                # saving an output strongly would make a cycle (output -> grad_fn -> saved output)
                self.data = alias(t)
                self.grad_fn_name = None if fn is None else fn.name()
            else:
                self.data = t
                self.grad_fn_name = None  # only an output's is reported (see _version_error)
        hooks = _state().saved_hooks
        if hooks:
            pack, unpack = hooks[-1]
            _state().saved_hooks = ()  # ops inside a pack hook do not re-enter it
            try:
                self.packed = pack(t)
            finally:
                _state().saved_hooks = hooks
            self.unpack_hook = unpack
            self.data = None
        else:
            self.packed = None
            self.unpack_hook = None

    def unpack(self, node=None):
        if self._released:
            raise RuntimeError(_FREED)
        if self.raw:
            return self.data
        if self.unpack_hook is not None:
            r = self.unpack_hook(self.packed)
            if not isinstance(r, TensorImpl):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                                f"result of type {type(r).__name__}")
            return r
        d = self.data
        if d is None:
            return None
        vc = d._vc if d._vc is not None else d._version_counter()
        if vc[0] != self.version:
            raise RuntimeError(self._version_error(d, vc[0]))
        if self.is_output and node is not None and self.requires_grad and _state().ag:
            # reconnect the output to the node that produced it (double backward)
            r = alias(d)
            set_history_quiet(r, node, self.output_nr)
            if copy_tangent[0] is not None and d._keys & _FORWARD_AD:
                copy_tangent[0](d, r)  # the alias keeps the saved output's forward-mode tangent
            return r
        return d

    def _version_error(self, d, now):
        name = self.grad_fn_name if self.is_output else _grad_fn_name(d)
        return _version_error(d, now, self.version, self.output_nr, name)

    def release(self):
        self._released = True
        self.data = None
        self.packed = None


def save_output(t, ag):
    """What a node keeps of its result t to read in backward (SavedVariable(t, is_output=True)). Without
    saved-tensor hooks (ag == 1), for output 0 that is a plain Tensor on the CPU: an alias of t alone,
    or (alias, version) when t is past version 0 (an in-place op's result); unpack_output reads them.
    An alias, not t: saving t would make a cycle (output -> grad_fn -> saved output). A tanh or
    sigmoid records one per call: no SavedVariable to fill and free."""
    if ag != 1 or t.__class__ is not _tensor_class[0] or t._np is None or (m := t._ameta) is None or m.output_nr:
        return SavedVariable(t, True)
    vc = t._vc
    if vc is None:
        vc = t._vc = [0] if t._base is None else t._version_counter()
    r = _new(t.__class__)  # alias(t)
    r._np = t._np
    r._shape = t._shape
    r._dtype = t._dtype
    r._device = t._device
    r._keys = t._keys & _NOT_AUTOGRAD
    r._base = t._base
    r._vc = vc
    r._ameta = None
    return (r, v) if (v := vc[0]) else r


def _saved_alias(s, node):
    """The alias in save_output's own forms (alias, or (alias, version)), version-checked: the error
    names node, as torch's does. None for anything else (FREED, a SavedVariable, None)."""
    if s.__class__ is tuple:
        d, version = s
    elif isinstance(s, TensorImpl):
        d, version = s, 0
    else:
        return None
    if (now := d._vc[0]) != version:
        raise RuntimeError(_version_error(d, now, version, 0, node.name()))
    return d


def unpack_output(s, node):
    """A saved output (save_output's forms) for node's backward, version-checked. The generated apply()
    tests the common case inline (a bare alias at version 0, grad mode off: the alias itself) and
    calls this for the others. With grad mode on (create_graph), a new alias that is output 0 of node
    again, as SavedVariable.unpack gives: double backward reaches node through it."""
    d = _saved_alias(s, node)
    if d is None:
        return s.unpack(node)  # FREED, or a SavedVariable (saved-tensor hooks, anomaly mode, ...)
    if not _state().ag:
        return d
    r = alias(d)
    set_history_quiet(r, node, 0)
    if copy_tangent[0] is not None and d._keys & _FORWARD_AD:
        copy_tangent[0](d, r)  # the alias keeps the saved output's forward-mode tangent
    return r


def unpack_saved_output(s, node):
    """A saved output as its `_saved_<name>` accessor shows it: version-checked and, when it required
    grad, a new alias reconnected to `node` whatever the grad mode (SavedVariable::unpack(grad_fn):
    `y.grad_fn._saved_result` has requires_grad and y's grad_fn, and is not y)."""
    d = _saved_alias(s, node)
    nr = 0
    if d is None:  # None, FREED or a SavedVariable
        d = unpack_saved(s)
        if d is None or not (s.__class__ is SavedVariable and not s.raw and s.is_output and s.requires_grad):
            return d  # an unpack hook's result is reconnected too, as torch's is
        nr = s.output_nr
    r = alias(d)
    set_history_quiet(r, node, nr)
    return r


def _grad_fn_name(d):
    m = d._ameta
    return m.grad_fn.name() if m is not None and m.grad_fn is not None else None


def _version_error(d, now, version, output_nr, fn_name):
    import re

    from ember.core.dtype import legacy_type_name
    tname = legacy_type_name(d._dtype, d._device.type)
    shape = ", ".join(str(s) for s in d._shape)
    where = ""
    if fn_name is not None:
        where = f", which is output {output_nr} of {re.sub(r'Backward[0-9]*$', '', fn_name)},"
    if _state()._anomaly:  # anomaly mode has already warned with the forward traceback of the node
        hint = ("the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("enable anomaly detection to find the operation that failed to compute its gradient, "
                "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return ("one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{tname} [{shape}]]{where} is at version {now}; expected version "
            f"{version} instead. Hint: {hint}")


# A saved input tensor is, in the common case (no saved-tensor hooks), the tuple
# (tensor, version when saved, output_nr when saved): generated nodes store it in a slot and check
# the version inline. A saved output is save_output's alias or (alias, version) (unpack_output reads
# them). Anything else (Python numbers, None, hooks) is a SavedVariable.
# Releasing a node puts FREED in its slots.

class _Freed:
    __slots__ = ()

    def unpack(self, node=None):
        raise RuntimeError(_FREED)


FREED = _Freed()


def save(t, is_output=False):
    """What a node keeps for a tensor it needs in backward: the tuple form or a SavedVariable."""
    if not is_output and not _state()._hooks and isinstance(t, TensorImpl):
        vc = t._vc
        m = t._ameta
        return (t, 0 if vc is None else vc[0], 0 if m is None else m.output_nr)
    return SavedVariable(t, is_output)


def unpack(s, node=None):
    """The tensor behind a saved entry, version-checked. The generated kernels save a tensor bare
    (saved at version 0, output 0), as (tensor, version, output_nr), or as a SavedVariable."""
    if s.__class__ is tuple:
        t = s[0]
        vc = t._vc
        if vc is not None and vc[0] != s[1]:
            raise_version_error(s)
        return t
    if isinstance(s, TensorImpl):
        vc = s._vc
        if vc is not None and vc[0]:
            raise_version_error((s, 0, 0))
        return s
    if s.__class__ in _NUMBERS:  # a Python number given for a Tensor argument, saved as it is
        return s
    return s.unpack(node)


def unpack_list(ss, node=None):
    if ss is FREED:
        raise RuntimeError(_FREED)
    return [unpack(s, node) for s in ss]


def unpack_saved(s):
    """A saved field as its `_saved_<name>` accessor shows it: a tensor, a list for a Tensor[], or
    None for an input the node did not save (its gradient was not needed, as PyTorch's guards)."""
    if s is None:
        return None
    return unpack_list(s) if s.__class__ is list else unpack(s)


def raise_version_error(s):
    t = s[0]
    raise RuntimeError(_version_error(t, t._vc[0], s[1], s[2], _grad_fn_name(t)))


def set_history_quiet(t, node, output_nr):
    m = t._ameta = AutogradMeta()
    m.requires_grad = True
    m.grad_fn = node
    m.output_nr = output_nr
    t._keys |= autograd_key_bit(t)


next_seq = _seq.__next__  # a node's sequence number (creation order)


class saved_tensors_hooks:
    """with saved_tensors_hooks(pack, unpack): tensors saved for backward go through pack at save time
    and unpack when backward needs them (torch.autograd.graph.saved_tensors_hooks)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        self.prev = _state().saved_hooks
        _state().saved_hooks = tuple(self.prev) + ((self.pack_hook, self.unpack_hook),)
        return self

    def __exit__(self, *a):
        _state().saved_hooks = self.prev


class save_on_cpu(saved_tensors_hooks):
    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t._device, t.cpu() if t._device.type != "cpu" else t)

        def unpack(p):
            dev, t = p
            return t.to(dev) if dev.type != "cpu" else t
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    def __init__(self, error_message):
        self.msg = error_message

    def __enter__(self):
        self.prev = _state().saved_hooks

        def refuse(t):
            raise RuntimeError(self.msg)
        _state().saved_hooks = ((refuse, None),)

    def __exit__(self, *a):
        _state().saved_hooks = self.prev
