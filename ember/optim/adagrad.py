"""Adagrad with learning-rate decay and an initial accumulator value (torch/optim/adagrad.py)."""
import ember
from ember.optim.optimizer import (Optimizer, _device_dtype_check_for_fused, _get_scalar_dtype, _get_value,
                                   _scalar_value, _use_grad_for_differentiable, _view_as_real)
from ember.tensor import Tensor

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Implements the Adagrad algorithm."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
            self._need_device_dtype_check_for_fused = True
            self._step_supports_amp_scaling = True
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = (ember.zeros((), dtype=_get_scalar_dtype(is_fused=group["fused"]),
                                             device=p.device)
                                 if group["fused"] else ember.tensor(0.0, dtype=_get_scalar_dtype()))
                init_value = (complex(initial_accumulator_value, initial_accumulator_value)
                              if p.is_complex() else initial_accumulator_value)
                state["sum"] = ember.full_like(p, init_value)

    def __setstate__(self, state):
        super().__setstate__(state)
        fused = None
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            fused = group.setdefault("fused", None)
        for s in self.state.values():
            if "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = ember.tensor(float(s["step"]), dtype=_get_scalar_dtype(is_fused=fused))

    def share_memory(self):
        """Calls share_memory_() on the state sum tensors (a no-op where unsupported)."""
        for group in self.param_groups:
            for p in group["params"]:
                t = self.state[p]["sum"]
                if hasattr(t, "share_memory_"):
                    t.share_memory_()

    def _init_group(self, group, params_with_grad, grads, state_sums, state_steps):
        has_sparse_grad, has_complex = False, False
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["fused"] and getattr(self, "_need_device_dtype_check_for_fused", True):
                _device_dtype_check_for_fused(p)
                self._need_device_dtype_check_for_fused = False
            has_sparse_grad |= p.grad.is_sparse
            has_complex |= p.is_complex()
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = ember.tensor(0.0, dtype=_get_scalar_dtype(is_fused=group["fused"]))
                v = self.defaults["initial_accumulator_value"]
                state["sum"] = ember.full_like(p, complex(v, v) if p.is_complex() else v)
            state_sums.append(state["sum"])
            state_steps.append(state["step"])
        return has_sparse_grad, has_complex

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (closure re-evaluates the model, returns the loss)."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params_with_grad, grads, state_sums, state_steps = [], [], [], []
            has_sparse_grad, has_complex = self._init_group(group, params_with_grad, grads, state_sums,
                                                            state_steps)
            adagrad(params_with_grad, grads, state_sums, state_steps, lr=group["lr"],
                    weight_decay=group["weight_decay"], lr_decay=group["lr_decay"], eps=group["eps"],
                    has_sparse_grad=has_sparse_grad, foreach=group["foreach"], maximize=group["maximize"],
                    differentiable=group["differentiable"], has_complex=has_complex, fused=group["fused"])
        return loss


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr, weight_decay,
            lr_decay, eps, maximize):
    """Functional API that performs the Adagrad computation (single-tensor algorithm)."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    lr = _scalar_value(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = _get_value(step_t)
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        if param.is_complex():
            grad = _view_as_real(grad)
            state_sum = _view_as_real(state_sum)
            param = _view_as_real(param)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
