"""How the generated Autograd kernels record an op (torch/csrc/autograd/VariableTypeUtils.h).

A kernel runs: edges = collect_next_edges*(inputs) (graph.py; nothing to record when no input needs a
gradient), node = <Op>Backward(), the inputs it saves (save_input), the op below, then one of the
node's methods here, which gives the node its sequence number and edges and the results their
history."""
import operator
import types

from ember.autograd import views
from ember.autograd.graph import _NUMBERS, _seq as _seq_numbers, FREED, Node, SavedVariable, unpack_saved
from ember.autograd.graph import _NOT_AUTOGRAD, _new, save_output, unpack_saved_output
from ember.autograd.graph import collect_next_edges_1, set_history as _set_history
from ember.autograd.meta import _WITH_AUTOGRAD, AutogradMeta, with_autograd_key
from ember.core import tls
from ember.core.tensor_impl import TensorImpl, tensor_class

_tensor_class = tensor_class
_state = tls.current
_autograd_keys = _WITH_AUTOGRAD.get  # bound once: a method read per call is a slow attribute read


def save_input(t, ag):
    """What a node keeps of input `t` (SavedVariable(t, is_output=False)). Without saved-tensor hooks
    (ag == 1) a cheaper form: the tensor itself when it is at version 0 (no counter yet, or one at 0)
    and output 0 of its node,
    else (tensor, version, output_nr); a Python number (x * 2) as it is. graph.unpack reads them all."""
    if ag == 2:  # saved-tensor hooks or anomaly mode
        return SavedVariable(t, False)
    if t.__class__ is _tensor_class[0]:
        vc = t._vc
        m = t._ameta
        if (vc is None or not vc[0]) and (m is None or not m.output_nr):
            return t
        return (t, 0 if vc is None else vc[0], 0 if m is None else m.output_nr)
    if t.__class__ in _NUMBERS:
        return t
    if isinstance(t, TensorImpl):  # a Tensor subclass
        vc = t._vc
        m = t._ameta
        return (t, 0 if vc is None else vc[0], 0 if m is None else m.output_nr)
    return SavedVariable(t, False)


def record_inplace_1(cls):
    """The Autograd kernel of an in-place op whose one differentiable input is self and whose node
    saves nothing (sign_, fill_, the random fills...): the generated layer names it in one line. Its
    *args costs ~50 ns a call; these ops are off the hot path (optimizers write under no_grad)."""
    def kernel(below, self, *args):
        if not _state().ag or not (edges := collect_next_edges_1(self)):
            return below(self, *args)
        views.check_inplace(self)
        node = cls()
        below(self, *args)
        return node._rebase_history(self, edges)
    return kernel


def save_inputs(ts, ag):
    """save_input for each tensor of a Tensor[] argument."""
    return [save_input(t, ag) for t in ts]


class _PerClass:
    """A method that each node class runs its own copy of, made on first use and then found on the
    class itself. The methods below store to the node: CPython (3.11+) specialises an attribute store
    for one class at a time, so one copy shared by every op's node would miss its cache on each call."""

    def __init__(self, fn):
        self.fn = fn

    def __set_name__(self, owner, name):
        self.owner, self.name = owner, name

    def __get__(self, node, cls):
        f = self.fn
        own = types.FunctionType(f.__code__.replace(), f.__globals__, f.__name__, f.__defaults__)
        if cls is not self.owner:  # the base keeps the descriptor, for the classes still to come
            setattr(cls, self.name, own)
        return own if node is None else own.__get__(node, cls)


class TraceableFunction(Node):
    """The base of the generated nodes (as in PyTorch's generated Functions.h). A generated node is
    made without __init__: the Autograd kernel fills its fields. It declares its saved fields as
    slots, `<name>_` for a saved tensor (the first `saved` slots, `class XBackward0(TraceableFunction,
    saved=2)`, listed in `_tensors_saved`; the last `outputs` of them hold saved outputs, in
    save_output's forms), the `meta` slots after them saved metadata (`<tensor>_sizes`, `_dtype`...),
    then argument values. Each gets PyTorch's `_saved_<name>` accessor (metadata under its name in
    PyTorch: `_saved_self_sym_sizes`; a dtype or device has none, as in PyTorch), and
    release_variables frees the saved tensors."""
    __init__ = object.__init__  # a C-level call: the cheapest way to make one per recorded op
    _tensors_saved = ()
    _tensor_slots = ()  # the slots release_variables frees
    _output_slots = ()  # those that hold a saved output (save_output)
    _node_name = None  # PyTorch's name of the node, where the class name differs

    def __init_subclass__(cls, saved=0, outputs=0, meta=0, **kwargs):
        super().__init_subclass__(**kwargs)
        if saved:  # a generated node's class line: its first `saved` slots hold saved tensors
            cls._tensors_saved = tuple(slot[:-1] for slot in cls.__slots__[:saved])
            cls._output_slots = cls.__slots__[saved - outputs:saved]
        metas = cls.__slots__[saved:saved + meta] if meta else ()
        tensors = cls._tensors_saved
        cls._tensor_slots = tuple(n + "_" for n in tensors)
        cls._saves = bool(tensors)
        for slot in cls.__dict__.get("__slots__", ()):
            if slot.startswith("_"):
                continue  # bookkeeping, not a saved field
            name = slot[:-1] if slot.endswith("_") else slot
            if slot in metas:
                base, suffix = slot.rsplit("_", 1)
                if suffix in ("dtype", "device"):
                    continue
                if suffix in ("sizes", "strides", "numel"):
                    name = f"{base}_sym_{suffix}"
            get = operator.attrgetter(slot)
            if slot in cls._output_slots:
                acc = lambda node, get=get: unpack_saved_output(get(node), node)  # noqa: E731
            else:
                acc = (lambda node, get=get: unpack_saved(get(node))) if name in tensors else get
            setattr(cls, "_saved_" + name, property(acc))

    def name(self):
        n = self._node_name
        return type(self).__name__ if n is None else n

    def release_variables(self):
        # The first call for a class makes its own release_variables, one attribute store per saved
        # tensor (as PyTorch's generated release_variables resets each SavedVariable), which the class
        # answers from then on: setattr in a loop costs three times as much per node.
        cls = type(self)
        frees = "".join(f"\n    node.{slot} = FREED" for slot in cls._tensor_slots)
        ns = {}
        exec(f"def release_variables(node):\n    node._released = True{frees}\n", {"FREED": FREED}, ns)
        cls.release_variables = ns["release_variables"]
        self.release_variables()

    @_PerClass
    def _set_history(node, result, next_edges, ag):
        """The node (with its next edges) produced `result`, its only output; returns result. A fresh
        result that is no view, outside anomaly mode, takes the short way: a new AutogradMeta."""
        node._seq = next(_seq_numbers)  # after the op below, which records nothing: same order
        node._next = next_edges
        if result._ameta is None and result._base is None and ag == 1:
            m = result._ameta = AutogradMeta()
            m.requires_grad = True
            m.grad_fn = node
            m.output_nr = 0  # on the instance: reading a class-level default is several times slower
            result._keys = _autograd_keys(result._keys) or with_autograd_key(result)
            node._input_meta = ((result._shape, result._dtype, result._device),)  # a tuple: one object less
        else:
            node._input_meta = []
            _set_history(result, node)
        return result

    @_PerClass
    def _set_history_saved(node, result, next_edges, ag):
        """_set_history, then node.result_ = save_output(result): for the ops whose formula reads their
        own result (tanh, sigmoid, exp...), one call for both. A fresh result of a plain Tensor takes
        the short way of both: its alias at version 0 is saved here. The short ways repeat those of
        _set_history and save_output on purpose: calling them would cost the calls this saves."""
        node._seq = next(_seq_numbers)
        node._next = next_edges
        if result._ameta is None and result._base is None and ag == 1:
            m = result._ameta = AutogradMeta()
            m.requires_grad = True
            m.grad_fn = node
            m.output_nr = 0
            result._keys = ks = _autograd_keys(result._keys) or with_autograd_key(result)
            node._input_meta = ((result._shape, result._dtype, result._device),)  # a tuple: one object less
            if result._vc is None and result.__class__ is _tensor_class[0] and (a := result._np) is not None:
                r = _new(result.__class__)  # save_output's alias, at version 0
                r._np = a
                r._shape = result._shape
                r._dtype = result._dtype
                r._device = result._device
                r._keys = ks & _NOT_AUTOGRAD
                r._base = None
                r._vc = result._vc = [0]
                r._ameta = None
                node.result_ = r
                return result
        else:
            node._input_meta = []
            _set_history(result, node)
        node.result_ = save_output(result, ag)
        return result

    @_PerClass
    def _set_outputs_history(node, results, next_edges, which=None):
        """The node (with its next edges) produced `results`: results[i] is its output i for each i in
        `which` (all when None; a result an output mask left out, None, gets no history)."""
        node._seq = next(_seq_numbers)
        node._next = next_edges
        node._input_meta = []
        for i in range(len(results)) if which is None else which:
            t = results[i]
            if t is not None:
                _set_history(t, node, i)
        return results

    @_PerClass
    def _rebase_history(node, t, next_edges):
        """An in-place op: the node (with its next edges) now produced `t` (for a view, through its
        base); returns t."""
        node._seq = next(_seq_numbers)
        node._next = next_edges
        node._input_meta = []
        views.rebase_history(t, node)
        return t
