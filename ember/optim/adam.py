"""Adam (and AdamW's decoupled weight decay) with amsgrad and maximize (torch/optim/adam.py)."""
import numpy as np

import ember
from ember.optim.optimizer import (Optimizer, _check_capturable, _compiler, _device_dtype_check_for_fused,
                                   _get_scalar_dtype, _get_value, _scalar_value, _scratch,
                                   _to_scalar, _use_grad_for_differentiable, _view_as_real)
from ember.tensor import Tensor

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    """Implements the Adam algorithm (decoupled_weight_decay=True gives AdamW)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(map(_to_scalar, betas))
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            self._step_supports_amp_scaling = True
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            fused = group.setdefault("fused", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                    step_val = float(p_state["step"])
                    p_state["step"] = (ember.tensor(step_val, dtype=_get_scalar_dtype(is_fused=fused),
                                                    device=p.device)
                                       if group["capturable"] or group["fused"]
                                       else ember.tensor(step_val, dtype=_get_scalar_dtype()))

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                    state_steps):
        has_complex = False
        for p in group["params"]:
            if p.grad is None:
                continue
            has_complex |= p.is_complex()
            params_with_grad.append(p)
            if p.grad.is_sparse:
                raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                _compiler.note_lazy_state_init()   # new state: a capture running now is not kept
                if group["fused"]:
                    _device_dtype_check_for_fused(p)
                state["step"] = (ember.zeros((), dtype=_get_scalar_dtype(is_fused=group["fused"]),
                                             device=p.device)
                                 if group["capturable"] or group["fused"]
                                 else ember.tensor(0.0, dtype=_get_scalar_dtype(), device="cpu"))
                state["exp_avg"] = ember.zeros_like(p)
                state["exp_avg_sq"] = ember.zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = ember.zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            if group["differentiable"] and state["step"].requires_grad:
                raise RuntimeError("`requires_grad` is not supported for `step` in differentiable mode")
            if group["foreach"] and isinstance(group["lr"], Tensor) and not group["capturable"]:
                raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")
            state_steps.append(state["step"])
        return has_complex

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step (closure re-evaluates the model, returns the loss)."""
        self._accelerator_graph_capture_health_check()
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
            beta1, beta2 = group["betas"]
            has_complex = self._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs,
                                           max_exp_avg_sqs, state_steps)
            adam(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                 amsgrad=group["amsgrad"], has_complex=has_complex, beta1=beta1, beta2=beta2,
                 lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                 maximize=group["maximize"], foreach=group["foreach"], capturable=group["capturable"],
                 differentiable=group["differentiable"], fused=group["fused"],
                 decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """Functional API that performs the Adam computation (single-tensor algorithm)."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    if _compiler._compiling and not differentiable:
        # a tensor lr stays a tensor: the graph reads it, so a scheduler's fill_ needs no recompile
        _adam_graph(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
                    _scalar_value(beta1), _scalar_value(beta2), lr, _scalar_value(weight_decay), eps, maximize,
                    decoupled_weight_decay, capturable)
        return
    lr, beta1, beta2 = _scalar_value(lr), _scalar_value(beta1), _scalar_value(beta2)
    weight_decay = _scalar_value(weight_decay)
    if (not (capturable or differentiable or amsgrad) and not ember.is_grad_enabled()
            and _fast_ok(params, grads, exp_avgs, exp_avg_sqs, state_steps)):
        _adam_arrays(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1, beta2, lr, weight_decay,
                     eps, maximize, decoupled_weight_decay)
        return
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]
        if capturable:
            _check_capturable(param, step_t)
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        max_exp_avg_sq = max_exp_avg_sqs[i] if amsgrad else None
        if param.is_complex():
            grad = _view_as_real(grad)
            exp_avg = _view_as_real(exp_avg)
            exp_avg_sq = _view_as_real(exp_avg_sq)
            if amsgrad:
                max_exp_avg_sq = _view_as_real(max_exp_avg_sq)
            param = _view_as_real(param)

        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

        step = _get_value(step_t)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            ember.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def _adam_graph(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr,
                weight_decay, eps, maximize, decoupled_weight_decay, capturable):
    """The update while ember.compile captures it (ember.compiler.is_compiling()). Every write is an
    in-place op on the state's own tensors (parameters, moments, step), so replaying the graph
    writes them back; the step count stays a tensor and the bias corrections are tensor ops
    (torch's `capturable` math), in float64 as the eager update computes them in Python floats, so
    nothing reads a value into Python and one graph serves every step. The operations and their
    order are _adam_block's: the numbers are eager's up to the rounding of a bias correction."""
    if isinstance(lr, Tensor):
        lr = _to_scalar(lr).to(ember.float64)   # eager reads it into a Python float
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        max_exp_avg_sq = max_exp_avg_sqs[i] if amsgrad else None
        if capturable:
            _check_capturable(param, step_t)
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        if param.is_complex():
            grad, exp_avg, exp_avg_sq = _view_as_real(grad), _view_as_real(exp_avg), _view_as_real(exp_avg_sq)
            if amsgrad:
                max_exp_avg_sq = _view_as_real(max_exp_avg_sq)
            param = _view_as_real(param)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = step_t.to(ember.float64)
        neg_step_size = -lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step).sqrt()
        if amsgrad:
            ember.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            denom = max_exp_avg_sq.sqrt().div_(bias_correction2_sqrt)
        else:
            denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt)
        denom.add_(eps)
        param.add_(exp_avg.mul(neg_step_size).div_(denom))


_FAST_DT = (np.dtype(np.float32), np.dtype(np.float64))


_PLAIN = []


def _plain_types():
    if not _PLAIN:
        from ember.nn.parameter import Parameter
        _PLAIN.extend((Tensor, Parameter))
    return _PLAIN


def _fast_ok(params, grads, exp_avgs, exp_avg_sqs, state_steps):
    """Plain CPU float32/float64 tensors of one dtype per parameter: the update can run on arrays."""
    plain = _plain_types()
    for group in (params, grads, exp_avgs, exp_avg_sqs, state_steps):
        for t in group:
            if type(t) not in plain or t.device.type != "cpu" or not t._np.flags.writeable:
                return False
    for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs):
        d = p._np.dtype
        if d not in _FAST_DT or g._np.dtype != d or m._np.dtype != d or v._np.dtype != d:
            return False
        if g.shape != p.shape or m.shape != p.shape or v.shape != p.shape:
            return False
    return True


_BLOCK = 1 << 15     # elements per block: the update's ~14 passes then run on L2-resident data


def _adam_arrays(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1, beta2, lr, weight_decay, eps,
                 maximize, decoupled_weight_decay):
    """The single-tensor update on the arrays, in place, without dispatch: the same float operations
    in the same order as the Tensor path (scalars rounded to the parameter's dtype as its CPU kernels
    round them), so the numbers are those of the Tensor path. Large contiguous parameters go block by
    block (elementwise, so the result is the same) with two scratch buffers serving all."""
    for param, grad_t, m_t, v_t, step_t in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps):
        p, g, m, v, st = param._np, grad_t._np, m_t._np, v_t._np, step_t._np
        if not g.flags.c_contiguous and p.flags.c_contiguous:
            # a gradient in another layout (a transposed matmul result): one copy here beats
            # strided access in each of the passes below
            gc = _scratch(2, g.dtype, g.size)[:g.size].reshape(g.shape)
            g = np.negative(g, out=gc) if maximize else np.copyto(gc, g) or gc
        elif maximize:
            g = np.negative(g)
        np.add(st, 1, out=st, casting="unsafe")
        step_t._bump_version()
        step = st.item()
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        n = p.size
        if n > _BLOCK and all(x.flags.c_contiguous for x in (p, g, m, v)):
            p, g, m, v = p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1)
            tmp, den = _scratch(0, p.dtype, _BLOCK), _scratch(1, p.dtype, _BLOCK)
            for i in range(0, n, _BLOCK):
                j = min(i + _BLOCK, n)
                _adam_block(p[i:j], g[i:j], m[i:j], v[i:j], tmp[:j - i], den[:j - i], beta1, beta2,
                            lr, weight_decay, eps, decoupled_weight_decay, bias_correction1,
                            bias_correction2)
        else:
            tmp = _scratch(0, p.dtype, n)[:n].reshape(p.shape)
            den = _scratch(1, p.dtype, n)[:n].reshape(p.shape)
            _adam_block(p, g, m, v, tmp, den, beta1, beta2, lr, weight_decay, eps,
                        decoupled_weight_decay, bias_correction1, bias_correction2)
        m_t._bump_version()
        v_t._bump_version()
        param._bump_version()
        if weight_decay != 0 and decoupled_weight_decay:
            param._bump_version()          # the Tensor path's param.mul_ is a second write


def _adam_block(p, g, m, v, tmp, den, beta1, beta2, lr, weight_decay, eps, decoupled_weight_decay,
                bias_correction1, bias_correction2):
    s = p.dtype.type
    if weight_decay != 0:
        if decoupled_weight_decay:
            np.multiply(p, 1 - lr * weight_decay, out=p)
        else:
            g = np.add(g, np.multiply(p, s(weight_decay)))
    # exp_avg.lerp_(grad, 1 - beta1)
    w = s(1 - beta1)
    np.subtract(g, m, out=tmp)
    if abs(w) < 0.5:
        tmp *= w
        m += tmp
    else:
        tmp *= s(1) - w
        np.subtract(g, tmp, out=m)
    # exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    np.multiply(g, s(1 - beta2), out=tmp)
    tmp *= g
    v *= beta2
    v += tmp
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5
    # denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps; param.addcdiv_(m, denom, -step_size)
    np.sqrt(v, out=den)
    den /= bias_correction2_sqrt
    den += eps
    np.multiply(m, s(-step_size), out=tmp)
    tmp /= den
    p += tmp
