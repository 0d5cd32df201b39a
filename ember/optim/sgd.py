"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch/optim/sgd.py)."""
import numpy as np

import ember
from ember.optim.optimizer import (Optimizer, _compiler, _device_dtype_check_for_fused, _scalar_value,
                                   _scratch, _use_grad_for_differentiable)
from ember.tensor import Tensor

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:
            self._step_supports_amp_scaling = True
            self._need_device_dtype_check_for_fused = True
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _init_group(self, group, params, grads, momentum_buffer_list):
        for p in group["params"]:
            if p.grad is not None:
                if group["fused"] and getattr(self, "_need_device_dtype_check_for_fused", True):
                    _device_dtype_check_for_fused(p)
                    self._need_device_dtype_check_for_fused = False
                params.append(p)
                grads.append(p.grad)
                if group["momentum"] != 0:
                    momentum_buffer_list.append(self.state[p].get("momentum_buffer"))
        return False

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (closure re-evaluates the model, returns the loss)."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, momentum_buffer_list = [], [], []
            self._init_group(group, params, grads, momentum_buffer_list)
            sgd(params, grads, momentum_buffer_list, weight_decay=group["weight_decay"],
                momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
                nesterov=group["nesterov"], maximize=group["maximize"])
            if group["momentum"] != 0:
                for p, buf in zip(params, momentum_buffer_list):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """Functional API that performs the SGD computation (single-tensor algorithm)."""
    # while ember.compile captures the step (ember.compiler.is_compiling()): the Tensor path below,
    # whose writes are ops on the parameters and buffers themselves (the graph replays them), and a
    # tensor lr stays a tensor (the graph reads it: a scheduler's fill_ needs no recompile)
    compiling = _compiler._compiling
    lr = lr.reshape(()).double() if compiling and isinstance(lr, Tensor) else _scalar_value(lr)
    weight_decay = _scalar_value(weight_decay)
    arrays = not compiling and not ember.is_grad_enabled() and _scalars_ok(weight_decay, momentum, lr, dampening)
    for i, param in enumerate(params):
        grad = d_p_list[i]
        buf = momentum_buffer_list[i] if momentum != 0 else None
        if arrays and (buf is not None or momentum == 0) and _arrays_ok(param, grad, buf):
            _sgd_arrays(param, grad, buf, weight_decay, momentum, lr, dampening, nesterov, maximize)
            continue
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            if buf is None:
                _compiler.note_lazy_state_init()   # a new buffer: a capture running now is not kept
                # in the parameter's layout (PyTorch's gradients always have it)
                buf = grad.detach().clone(memory_format=ember.contiguous_format
                                          if param.is_contiguous() else ember.preserve_format)
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            if nesterov:
                grad = grad.add(buf, alpha=momentum)
            else:
                grad = buf
        if isinstance(lr, Tensor):   # compiling with a tensor lr (above)
            param.add_(grad.mul(lr.neg()))
        else:
            param.add_(grad, alpha=-lr)


_FAST_DT = (np.dtype(np.float32), np.dtype(np.float64))
_NUM = (int, float)


def _scalars_ok(*xs):
    return all(x.__class__ in _NUM for x in xs)


def _arrays_ok(param, grad, buf):
    """Plain CPU float32/float64 tensors of one dtype and shape: the update can run on arrays."""
    plain = _plain_types()
    p = param._np if type(param) in plain and param.device.type == "cpu" else None
    if p is None or p.dtype not in _FAST_DT or not p.flags.writeable:
        return False
    for t in (grad, buf):
        if t is not None and (type(t) not in plain or t.device.type != "cpu" or t._np is None or t._np.dtype != p.dtype
                              or t._np.shape != p.shape):
            return False
    return buf is None or buf._np.flags.writeable


def _add_into(a, b, alpha):
    """a.add_(b, alpha=alpha) as the CPU kernel computes it (b scaled first unless alpha is 1)."""
    if alpha != 1:
        b = np.multiply(b, alpha, out=_scratch(0, b.dtype, b.size)[:b.size].reshape(b.shape))
    np.add(a, b, a)


def _add(a, b, alpha):
    """a.add(b, alpha=alpha), a new array."""
    return np.add(a, b if alpha == 1 else np.multiply(b, alpha))


def _sgd_arrays(param, grad_t, buf_t, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """One parameter's update on its arrays: the Tensor path's operations in its order, in place."""
    p, g = param._np, grad_t._np
    if not g.flags.c_contiguous and p.flags.c_contiguous:
        # a gradient in another layout (a transposed matmul result): copy once, then every pass
        # below runs over contiguous memory
        gc = _scratch(1, g.dtype, g.size)[:g.size].reshape(g.shape)
        g = np.negative(g, out=gc) if maximize else np.copyto(gc, g) or gc
    elif maximize:
        g = np.negative(g)
    if weight_decay != 0:
        g = _add(g, p, weight_decay)
    if buf_t is not None:
        buf = buf_t._np
        np.multiply(buf, momentum, out=buf)
        _add_into(buf, g, 1 - dampening)
        buf_t._bump_version()
        g = _add(g, buf, momentum) if nesterov else buf
    _add_into(p, g, -lr)
    param._bump_version()


_PLAIN = []


def _plain_types():
    if not _PLAIN:
        from ember.nn.parameter import Parameter
        _PLAIN.extend((Tensor, Parameter))
    return _PLAIN
