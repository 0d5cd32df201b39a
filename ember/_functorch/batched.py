"""BatchedTensor: a logical tensor of vmap, holding its physical tensor, batch dimension and level
(aten/src/ATen/functorch/BatchedTensorImpl.h).

A BatchedTensor is an ember Tensor with the logical shape, dtype and device and no data. Its keys are
FuncTorchBatched, ADInplaceOrView and its value's backend (autocast) keys, plus an Autograd key once it
requires grad: autograd records on the logical tensor, above the batching layer (ember's order, see
ember/core/keys.py), and the recorded formulas run through the batching rules in backward.

Levels are numbered in creation order, never reused: a BatchedTensor keeps working after its vmap
returned (a backward pass after vmap exits runs the rules on it), and nesting is the order of the
numbers (an inner vmap's level is higher than the outer one's).
"""
import itertools

from ember._generated import ops as _ops
from ember.core.keys import AUTOCAST_MASK, BACKEND_MASK, DispatchKey as K
from ember.tensor import Tensor

FTB = 1 << K.FuncTorchBatched
_KEEP = BACKEND_MASK | AUTOCAST_MASK
_BASE_KEYS = FTB | (1 << K.ADInplaceOrView)
_new = object.__new__

ITEM_ERR = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
            ".item() on a Tensor, please try to rewrite what you're doing with other operations. If error "
            "is occurring somewhere inside PyTorch internals, please file a bug report.")
CONTROL_FLOW_ERR = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                    "flow. We don't support that yet, please file an issue at "
                    "https://github.com/pytorch/pytorch/issues .")
NO_STORAGE_ERR = "Cannot access data pointer of Tensor that doesn't have storage"


class Level:
    """One vmap in progress: its level number, batch size and randomness mode (functorch's
    DynamicLayer for a vmap)."""
    __slots__ = ("level", "size", "randomness")

    def __init__(self, level, size, randomness):
        self.level, self.size, self.randomness = level, size, randomness


_counter = itertools.count(1)
STACK = []  # the vmaps in progress, innermost last


def push_level(size, randomness):
    lv = Level(next(_counter), size, randomness)
    STACK.append(lv)
    return lv


def pop_level(lv):
    STACK.remove(lv)


def is_alive(level):
    for lv in STACK:
        if lv.level == level:
            return True
    return False


class BatchedTensor(Tensor):
    # _value, _bdim and _level live in the instance __dict__ (TensorImpl has one), not in slots: ember's
    # autograd copies a subclass's own state through __dict__ when it aliases a tensor it saves
    __slots__ = ()

    # ---- what needs memory: there is none at the logical level -----------------------------
    def _get_strides(self):
        s = self._value.stride()
        b = self._bdim
        return s[:b] + s[b + 1:]

    def storage_offset(self):
        return self._value.storage_offset()

    def data_ptr(self):
        raise RuntimeError(NO_STORAGE_ERR)

    def untyped_storage(self):
        return self._value.untyped_storage()  # the physical storage (a view's base shares it)

    def numpy(self, *, force=False):
        raise RuntimeError(NO_STORAGE_ERR)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(NO_STORAGE_ERR)

    def tolist(self):
        raise RuntimeError(NO_STORAGE_ERR)

    def __bool__(self):
        raise RuntimeError(CONTROL_FLOW_ERR)

    # Tensor.real / .imag build a NumPy view: here, the ops that make those views
    @property
    def real(self):
        if not self.is_complex():
            return self
        return _ops.select_int.call(_ops.view_as_real.call(self), -1, 0)

    @real.setter
    def real(self, value):
        self.real.copy_(value)

    @property
    def imag(self):
        if not self.is_complex():
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return _ops.select_int.call(_ops.view_as_real.call(self), -1, 1)

    @imag.setter
    def imag(self, value):
        self.imag.copy_(value)

    def __repr__(self):
        inner = repr(self._value).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n    {inner}\n)"

    __str__ = __repr__


def make_batched(value, bdim, level):
    """The logical tensor of `value` batched over its dimension `bdim` at `level` (no checks)."""
    t = _new(BatchedTensor)
    shape = value._shape
    t._shape = shape[:bdim] + shape[bdim + 1:]
    t._np = None
    t._dtype = value._dtype
    t._device = value._device
    t._keys = (value._keys & _KEEP) | _BASE_KEYS
    t._base = None
    t._vc = None
    t._ameta = None
    t._value = value
    t._bdim = bdim
    t._level = level
    return t


def is_batched_at(x, level):
    return x.__class__ is BatchedTensor and x._level == level


def get_unwrapped(x):
    """The physical tensor under every batching level (torch._C._functorch.get_unwrapped)."""
    while x.__class__ is BatchedTensor:
        x = x._value
    return x


def maybe_get_level(x):
    return x._level if x.__class__ is BatchedTensor else -1


def maybe_get_bdim(x):
    return x._bdim if x.__class__ is BatchedTensor else None


def is_batchedtensor(x):
    return x.__class__ is BatchedTensor
