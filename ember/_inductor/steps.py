"""Steps: calls in the output code that are neither fused kernels nor dispatcher externs.

A compiled training step (forward, backward() and the optimizer inside one graph) is mostly small
ops whose dispatcher round trip costs more than their arithmetic. Two kinds run here instead (an
optimizer's in-place updates are kernels: lowering.lower_inplace):

- CPU array kernels: ops without a NumPy lowering whose CPU kernel takes and returns arrays
  (nll_loss_forward/backward), called as Inductor's generated code calls its extern kernels
  through the C shim (aoti_torch_cpu_*): the op's own kernel, its checks and errors included,
  without the dispatcher around it.
- the Python steps autograd takes without an aten op (ember/_dynamo/capture.py's PyOps): a leaf's
  first gradient copied into `.grad`, and `.grad = None` (zero_grad).

Each helper checks what its fast path assumes at run time and otherwise takes the general way
(the PyOp's own function), so a guard-equal call can never compute otherwise.
Only nodes that run with grad mode off are lowered here, and `.grad = None` whatever the mode.
"""
import numpy as np

from ember._dynamo import capture as _cap
from ember._dynamo.capture import Ref
from ember._inductor import ir
from ember.core import dtype as _dt
from ember.core.tensor_impl import wrap_cpu
from ember.kernels.cpu import nn_norm_loss as _nll

_nd = np.ndarray
_FLOATS = (_dt.float32, _dt.float64)


def acc_grad_clone(var, a):
    """AccumulateGrad on a leaf without a gradient, where the capture saw eager copy the incoming
    one: `.grad` becomes a copy of array a (AccumulateGrad's clone, for a contiguous leaf and a
    contiguous gradient). Returns the new `.grad`."""
    m = var._ameta
    b = var._np
    if (m is not None and m.grad is None and b.__class__ is _nd and b.flags.c_contiguous
            and a.shape == b.shape and a.dtype is b.dtype and a.flags.c_contiguous
            and (c := a.copy()).strides == a.strides):
        # (eager's clone keeps a's strides, which a C-contiguous array with a size-1 dimension
        # need not share with its NumPy copy)
        g = m.grad = wrap_cpu(c)
        hooks = m.post_acc_hooks
        if hooks:
            for h in list(hooks):
                h(var)
        return g
    return _cap._accumulate_grad_step(var, wrap_cpu(a), "clone")


def set_grad_none(t):
    """`t.grad = None` (what zero_grad does by default)."""
    m = t._ameta
    if m is not None:
        m.grad = None


# op (name, overload) -> its CPU kernel over arrays (the schema's `CPU:` entry)
ARRAY_KERNELS = {
    ("nll_loss_forward", ""): ("nll_loss_forward_cpu", _nll.nll_loss_forward),
    ("nll_loss_backward", ""): ("nll_loss_backward_cpu", _nll.nll_loss_backward),
}


def _plain(v, dtypes=None):
    """A CPU tensor over an ndarray of a non-half dtype (steps pass its array itself)."""
    return (getattr(v, "_np", None).__class__ is _nd and v._dtype not in (_dt.float16, _dt.bfloat16)
            and (dtypes is None or v._dtype in dtypes))


def lower_step(n, vals):
    """An ir.Step for node n (run with grad mode off), or None."""
    op = n.op
    if op is _cap.ACCUMULATE_GRAD:
        var, g, mode = n.args
        if mode == "clone" and isinstance(var, Ref) and isinstance(g, Ref) and isinstance(n.out, Ref) and _plain(
                vals[g.i], _FLOATS):
            return ir.Step("_acc_grad_clone", acc_grad_clone, n.args[:2], [n.out.i], {var.i}, True,
                           False, "accumulate_grad")
        return None
    if op is _cap.SET_GRAD:
        t, value = n.args
        if value is None and isinstance(t, Ref):
            return ir.Step("_set_grad_none", set_grad_none, (t,), [], {t.i}, True, False, "set_grad")
        return None
    if isinstance(op, _cap.PyOp):
        return None
    key = (str(op.name), op.overload or "")
    for a in n.args:
        if isinstance(a, Ref) and not _plain(vals[a.i]):
            return None
        if isinstance(a, (list, tuple)) and any(isinstance(x, Ref) for x in a):
            return None
    k = ARRAY_KERNELS.get(key)
    if k is None:
        return None
    outs = _cap.ref_slots(n.out)
    if len(outs) != len(n.out if isinstance(n.out, tuple) else (n.out,)) or not all(_plain(vals[s]) for s in outs):
        return None
    return ir.Step(k[0], k[1], n.args, outs, set(), False, False, f"{key[0]}.{key[1] or 'default'}")
