"""Autocast on CPU: output dtypes equal torch's for each op on PyTorch's lists; GradScaler."""
import numpy as np
import pytest
import torch

import ember

CASES = {
    "mm": lambda L, a, b, v: L.mm(a, b),
    "matmul": lambda L, a, b, v: a @ b,
    "bmm": lambda L, a, b, v: L.bmm(a.unsqueeze(0), b.unsqueeze(0)),
    "addmm": lambda L, a, b, v: L.addmm(a, a, b),
    "baddbmm": lambda L, a, b, v: L.baddbmm(a.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)),
    "einsum": lambda L, a, b, v: L.einsum("ij,jk->ik", a, b),
    "tensordot": lambda L, a, b, v: L.tensordot(a, b, 1),
    "mv": lambda L, a, b, v: L.mv(a, v),
    "dot": lambda L, a, b, v: L.dot(v, v),
    "softmax": lambda L, a, b, v: L.softmax(a, 0),
    "log_softmax": lambda L, a, b, v: L.log_softmax(a, 0),
    "exp": lambda L, a, b, v: a.exp(),
    "pow": lambda L, a, b, v: a.pow(2),
    "sum": lambda L, a, b, v: a.sum(),
    "prod": lambda L, a, b, v: a.prod(),
    "cumsum": lambda L, a, b, v: a.cumsum(0),
    "norm": lambda L, a, b, v: a.norm(),
    "logsumexp": lambda L, a, b, v: a.logsumexp(0),
    "trace": lambda L, a, b, v: L.trace(a),
    "cat": lambda L, a, b, v: L.cat([a, b.float()]),
    "stack": lambda L, a, b, v: L.stack([a, b.float()]),
    "addcmul": lambda L, a, b, v: L.addcmul(a.float(), a, b),
    "add": lambda L, a, b, v: a + b,
    "relu": lambda L, a, b, v: a.relu(),
    "mean": lambda L, a, b, v: a.mean(),
    "var": lambda L, a, b, v: a.var(),
    # losses (fp32 list), reached through the nn.functional entry points
    "nll_loss": lambda L, a, b, v: L.nn.functional.nll_loss(a, L.tensor([0, 1, 2, 3])),
    "nll_loss_4d": lambda L, a, b, v: L.nn.functional.nll_loss(a.reshape(1, 4, 2, 2), L.zeros(1, 2, 2, dtype=L.long)),
    "nll_loss_3d": lambda L, a, b, v: L.nn.functional.nll_loss(a.reshape(1, 4, 4), L.zeros(1, 4, dtype=L.long)),
    "cross_entropy": lambda L, a, b, v: L.nn.functional.cross_entropy(a, L.tensor([0, 1, 2, 3])),
    "mse_loss": lambda L, a, b, v: L.nn.functional.mse_loss(a, b),
    "l1_loss": lambda L, a, b, v: L.nn.functional.l1_loss(a, b),
    "smooth_l1_loss": lambda L, a, b, v: L.nn.functional.smooth_l1_loss(a, b),
    "huber_loss": lambda L, a, b, v: L.nn.functional.huber_loss(a, b),
    "kl_div": lambda L, a, b, v: L.nn.functional.kl_div(a, b.softmax(0), reduction="batchmean"),
    "bce_with_logits": lambda L, a, b, v: L.nn.functional.binary_cross_entropy_with_logits(a, b.sigmoid()),
    "linear": lambda L, a, b, v: L.nn.functional.linear(a, b, v),
    "conv2d": lambda L, a, b, v: L.nn.functional.conv2d(a[None, None], b[None, None, :2, :2]),
    "layer_norm": lambda L, a, b, v: L.nn.functional.layer_norm(a, (4,)),
    "inverse": lambda L, a, b, v: L.inverse(a + 4 * L.eye(4, dtype=a.dtype)),
}


def inputs(L, dtype):
    rng = np.random.default_rng(0)
    a = L.tensor(rng.standard_normal((4, 4)), dtype=L.float32).to(dtype)
    b = L.tensor(rng.standard_normal((4, 4)), dtype=L.float32).to(dtype)
    v = L.tensor(rng.standard_normal(4), dtype=L.float32).to(dtype)
    return a, b, v


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
def test_output_dtype_matches_torch(name, in_dtype):
    fn = CASES[name]
    with torch.autocast("cpu", torch.bfloat16):
        t = fn(torch, *inputs(torch, getattr(torch, in_dtype)))
    with ember.autocast("cpu", ember.bfloat16):
        e = fn(ember, *inputs(ember, getattr(ember, in_dtype)))
    assert e.dtype.name == str(t.dtype).replace("torch.", "")
    assert ember.get_autocast_dtype("cpu") is ember.bfloat16


def test_autocast_region_state_and_nesting():
    a = ember.ones(2, 2)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        assert (a @ a).dtype is ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert (a @ a).dtype is ember.float32
        assert (a @ a).dtype is ember.bfloat16
    assert (a @ a).dtype is ember.float32

    @ember.autocast("cpu")
    def f(x):
        return x @ x
    assert f(a).dtype is ember.bfloat16


def test_float64_not_cast():
    a = ember.ones(2, 2, dtype=ember.float64)
    with ember.autocast("cpu"):
        assert (a @ a).dtype is ember.float64


def test_weight_cast_cached_and_grads_flow():
    w = ember.ones(3, 3, requires_grad=True)
    x = ember.ones(2, 3)
    with ember.autocast("cpu"):
        y1 = x @ w
        y2 = x @ w
        assert y1.dtype is ember.bfloat16
        assert y1.grad_fn.next_functions[1][0] is y2.grad_fn.next_functions[1][0]  # one cached cast
        loss = (y1.float() + y2.float()).sum()
    loss.backward()
    assert w.grad is not None and w.grad.dtype is ember.float32
    assert w.grad.tolist() == [[4.0] * 3] * 3


def test_unsupported_device_type():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        ember.autocast("tpu")


class _Opt:
    def __init__(self, params):
        self.param_groups = [{"params": params}]
        self.steps = 0

    def step(self):
        self.steps += 1


def test_grad_scaler_skips_inf_step_like_torch():
    for L in (ember, torch):
        p = L.tensor([1.0, 2.0], requires_grad=True)
        opt = _Opt([p])
        scaler = L.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=1)
        loss = (p * 3).sum()
        scaler.scale(loss).backward()
        assert p.grad.tolist() == [3072.0, 3072.0]
        scaler.step(opt)
        scaler.update()
        assert opt.steps == 1 and p.grad.tolist() == [3.0, 3.0]
        assert scaler.get_scale() == 2048.0
        p.grad = L.tensor([float("inf"), 1.0])
        scaler.step(opt)
        scaler.update()
        assert opt.steps == 1
        assert scaler.get_scale() == 1024.0
        sd = scaler.state_dict()
        assert sd["scale"] == 1024.0 and sd["growth_factor"] == 2.0
