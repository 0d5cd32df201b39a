"""ember.autograd.Function: user-defined forward/backward (torch/autograd/function.py)."""
import functools
import inspect

from ember.autograd.graph import Node, SavedVariable, edge, set_history
from ember.core import tls
from ember.core.tensor_impl import TensorImpl

_state = tls.current


class FunctionCtx:
    __slots__ = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, TensorImpl):
                raise TypeError("save_for_backward can only save variables, but argument 0 is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one Function.apply call; it is also the `ctx` the user's code sees."""
    __slots__ = ("_cls", "_saved", "_out_meta", "needs_input_grad", "_n_inputs", "_input_pos")

    def apply(self, grads):
        if getattr(self, "materialize_grads", True):
            import ember
            grads = [g if g is not None else ember.zeros(m[0], dtype=m[1], device=m[2])
                     for g, m in zip(grads, self._input_meta)]
        with _grad_mode(_state().grad_enabled):
            res = self._cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) != self._n_inputs:
            if len(res) > self._n_inputs and all(r is None for r in res[self._n_inputs:]):
                res = res[:self._n_inputs]
            else:
                raise RuntimeError(f"function {self._cls.__name__}Backward returned an incorrect number of "
                                   f"gradients (expected {self._n_inputs}, got {len(res)})")
        out = [None] * len(self._next)
        for k, pos in enumerate(self._input_pos):
            if pos is not None:
                out[pos] = res[k]
        return out

    def name(self):
        return f"{self._cls.__name__}Backward"

    @property
    def saved_tensors(self):
        if self._released:
            from ember.autograd.graph import _FREED
            raise RuntimeError(_FREED)
        return tuple(s.unpack(self) if s is not None else None for s in self._saved)

    def release_variables(self):
        self._released = True
        for s in self._saved or ():
            if s is not None:
                s.release()


class _grad_mode:
    def __init__(self, m):
        self.m = m

    def __enter__(self):
        self.prev = _state().grad_enabled
        _state().grad_enabled = self.m

    def __exit__(self, *a):
        _state().grad_enabled = self.prev


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"__slots__": ()})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Override it to write forward(*args) without ctx (PyTorch 2's style): apply then calls
        setup_context(ctx, inputs, output) to save what backward needs."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup = cls.setup_context is not Function.setup_context
        if setup:  # forward(*args): bind keyword and default arguments to positions, as torch does
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        node = cls._backward_cls()
        Node.__init__(node)
        node._cls = cls
        node._saved = None
        tensor_args = [a for a in args if isinstance(a, TensorImpl)]
        needs = tuple(isinstance(a, TensorImpl) and a.requires_grad for a in args)
        node.needs_input_grad = needs
        record = _state().grad_enabled and any(needs)
        with _grad_mode(False):
            if setup:
                out = cls.forward(*args)
                cls.setup_context(node, args, out)
            else:
                out = cls.forward(node, *args, **kwargs)
        if not record:
            return out
        edges = []
        pos = []
        for a in args:
            if isinstance(a, TensorImpl):
                pos.append(len(edges))
                edges.append(edge(a))
            else:
                pos.append(None)
        node._next = tuple(edges)
        node._n_inputs = len(args)
        node._input_pos = pos
        outs = out if isinstance(out, tuple) else (out,)
        nondiff = {id(t) for t in getattr(node, "non_differentiable", ())}
        dirty = {id(t) for t in getattr(node, "dirty_tensors", ())}
        for i, o in enumerate(outs):
            if not isinstance(o, TensorImpl):
                continue
            if id(o) in nondiff:
                node._input_meta.append((o._shape, o._dtype, o._device))
                continue
            if id(o) in dirty:
                from ember.autograd.views import check_inplace
                check_inplace(o)
            elif any(o is a for a in tensor_args):
                # returning an input as is: PyTorch returns a view of it
                o = o.view_as(o) if hasattr(o, "view_as") else o
                outs = outs[:i] + (o,) + outs[i + 1:]
            set_history(o, node, i)
        to_save = getattr(node, "to_save", None)
        if to_save is not None:
            node._saved = [None if t is None else SavedVariable(t, any(t is o for o in outs), node)
                           for t in to_save]
            node.to_save = None
        return outs if isinstance(out, tuple) else outs[0]


def once_differentiable(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with _grad_mode(False):
            return fn(ctx, *args)
    return wrapper
