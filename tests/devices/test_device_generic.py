"""Device-generic tests: the same core-op and autograd cases on every device ember has here.

Devices: cpu; meta (shapes and dtypes only); cuda (numba's CUDA simulator in CI, a real GPU where
one is present: tests/conftest.py sets EMBER_CUDA_SIM); adev, the asynchronous PrivateUse1 backend
of examples/async_device. Each case runs in torch on the CPU as the oracle; ember runs it with its
inputs on the device (contiguous and non-contiguous), and the result must come back equal, on the
same device. Shapes are tiny: the simulator runs every GPU thread in Python.
"""
import warnings

import numpy as np
import pytest
import torch

import ember
from device_harness import _arrays, _ember_inputs, _pair, _same, _torch_inputs
from opdb import REDUCTION_META as REDUCTIONS  # (the op database, run here per device)
from opdb import _with_domain, materialize, op_db, op_ids

# (name, fn(lib, *inputs), input specs)
OPS = [
    ("add", lambda L, x, y: x + y, [(3, 4), (3, 4)]),
    ("add alpha, broadcast", lambda L, x, y: L.add(x, y, alpha=2), [(3, 4), (4,)]),
    ("sub transposed", lambda L, x, y: x - y, [("T", (3, 4)), (3, 4)]),
    ("mul scalar", lambda L, x: x * 2.5, [(2, 3)]),
    ("div", lambda L, x, y: x / (y.abs() + 1), [(5,), (5,)]),
    ("0-d cpu tensor joins", lambda L, x: x + L.tensor(2.0), [(4,)]),
    ("neg exp", lambda L, x: (-x).exp(), [(3, 4)]),
    ("log sqrt", lambda L, x: (x.abs() + 1).log() + x.abs().sqrt(), [(3, 4)]),
    ("sigmoid tanh", lambda L, x: x.sigmoid() * x.tanh(), [("T", (2, 5))]),
    ("relu gelu silu", lambda L, x: L.relu(x) + L.nn.functional.gelu(x) + L.nn.functional.silu(x), [(6,)]),
    ("pow clamp", lambda L, x: x.pow(2).clamp(0.1, 2.0), [(3, 4)]),
    ("where compare", lambda L, x, y: L.where(x > y, x, y), [(3, 4), (4,)]),
    ("maximum", lambda L, x, y: L.maximum(x, y), [(3, 1), (1, 4)]),
    ("comparison dtype", lambda L, x, y: (x <= y), [(3, 4), (3, 4)]),
    ("int arithmetic", lambda L, i, j: i * 3 + j, [("i", (5,), 9), ("i", (5,), 9)]),
    ("sum all", lambda L, x: x.sum(), [(3, 4)]),
    ("sum dim", lambda L, x: x.sum(1), [("T", (3, 4))]),
    ("mean keepdim", lambda L, x: x.mean(0, keepdim=True), [(3, 4)]),
    ("amax", lambda L, x: x.amax(1), [(3, 5)]),
    ("max dim", lambda L, x: x.max(dim=1), [(4, 3)]),
    ("argmax", lambda L, x: x.argmax(0), [(4, 3)]),
    ("softmax", lambda L, x: x.softmax(-1), [(3, 5)]),
    ("log_softmax dim 0", lambda L, x: x.log_softmax(0), [("T", (3, 5))]),
    ("mm", lambda L, a, b: a @ b, [(3, 4), (4, 5)]),
    ("mm transposed", lambda L, a, b: a @ b, [("T", (3, 4)), (4, 2)]),
    ("bmm matmul", lambda L, a, b: L.matmul(a, b), [(2, 3, 4), (4, 2)]),
    ("addmm", lambda L, c, a, b: L.addmm(c, a, b), [(5,), (3, 4), (4, 5)]),
    ("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), [(2, 4), (3, 4), (3,)]),
    ("views", lambda L, x: x.view(4, 3).t().unsqueeze(0).permute(2, 0, 1).contiguous(), [(3, 4)]),
    ("reshape of transposed", lambda L, x: x.reshape(-1), [("T", (3, 4))]),
    ("slice and select", lambda L, x: x[:, 1:3] * x[1, :2], [(3, 3)]),
    ("expand", lambda L, x, y: x.expand(3, 4) + y, [(1, 4), (3, 4)]),
    ("cat stack", lambda L, x, y: L.stack([L.cat([x, y]), L.cat([y, x])]), [(2, 3), (2, 3)]),
    ("index_select", lambda L, x, i: x.index_select(0, i), [(4, 3), ("i", (5,), 4)]),
    ("advanced index", lambda L, x, i: x[i], [(4, 3), ("i", (2, 2), 4)]),
    ("masked_fill", lambda L, x: x.masked_fill(x > 0, 0.5), [(3, 4)]),
    ("layer_norm", lambda L, x: L.nn.functional.layer_norm(x, (4,)), [(3, 4)]),
    ("cross_entropy", lambda L, x, t: L.nn.functional.cross_entropy(x, t), [(4, 3), ("i", (4,), 3)]),
    ("mse_loss", lambda L, x, y: L.nn.functional.mse_loss(x, y), [(3, 4), (3, 4)]),
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # fallback notices ("... falls back to the CPU")
@pytest.mark.parametrize("case", OPS, ids=[c[0] for c in OPS])
def test_op_on_device(case, device):
    name, fn, specs = case
    arrays = _arrays(specs, 0)
    tr = fn(torch, *_torch_inputs(arrays))
    er = fn(ember, *_ember_inputs(arrays, device))
    _same(er, tr, device, atol=1e-5, rtol=1e-4)


DEVICE_OPS = [op for op in op_db if op.device_sample]


def _device_sample(op):
    """The entry's device sample in float32, its tensors inside the op's device domain."""
    sample = next(s for s in op.sample_inputs("float32") if s.name == op.device_sample)
    return _with_domain(sample, *op.device_domain)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("op", DEVICE_OPS, ids=op_ids(DEVICE_OPS))
def test_op_db_on_device(op, device):
    """Every op_db entry with a device sample (pointwise, comparisons, reductions, activations,
    matrix products, nn losses and poolings): its values on the device, non-contiguous inputs viewed
    there; and where it has a gradient, the first-order gradients of sum(op(x) ** 2)."""
    sample = _device_sample(op)
    ea, ta, ek, tk = materialize(sample, "float32", seed=3, device=device)
    _same(op.op(ember, *ea, **ek), op.op(torch, *ta, **tk), device, atol=1e-5, rtol=1e-4)
    if not op.supports_autograd:
        return
    req = [i for i, x in enumerate(ta) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    ex, tx = list(ea), list(ta)
    for i in req:
        ex[i], tx[i] = ea[i].detach().requires_grad_(), ta[i].detach().requires_grad_()
    tl, el = _loss(op.op(torch, *tx, **tk)), _loss(op.op(ember, *ex, **ek))
    _same(el, tl, device, atol=1e-4, rtol=1e-4)
    el.backward()
    if device == "meta":
        assert all(ex[i].grad.device.type == "meta" and ex[i].grad.shape == ex[i].shape for i in req)
        return
    tl.backward()
    for i in req:
        _same(ex[i].grad, tx[i].grad, device, atol=1e-4, rtol=1e-4)


def _loss(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return sum((o ** 2).sum() for o in outs if o.is_floating_point())


def test_device_suite_reads_op_db():
    assert {op.family for op in DEVICE_OPS} >= {"pointwise", "comparison", "reduction", "activation", "linalg",
                                                "nn"}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("i", range(len(REDUCTIONS)))
def test_reduction_table_on_device(i, device):
    """The reduction suite's table (sum/mean/prod/max/var/norm/logsumexp/softmax/cumsum/sort/topk/...)."""
    fn = REDUCTIONS[i]
    arrays = _pair((3, 4), 10, -2.0, 2.0, transposed=True)
    (tx,), (ex,) = _torch_inputs(arrays), _ember_inputs(arrays, device)
    _same(fn(ember, ex), fn(torch, tx), device, atol=1e-5, rtol=1e-4)


FACTORIES = [
    ("zeros", lambda L, d: L.zeros(2, 3, device=d)),
    ("ones int", lambda L, d: L.ones(4, dtype=L.int64, device=d)),
    ("full", lambda L, d: L.full((2, 2), 1.5, device=d)),
    ("arange", lambda L, d: L.arange(0, 10, 3, device=d)),
    ("eye", lambda L, d: L.eye(3, device=d)),
    ("zeros_like", lambda L, d: L.zeros_like(L.ones(2, 3, device=d))),
    ("tensor", lambda L, d: L.tensor([[1, 2], [3, 4]], device=d)),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", FACTORIES, ids=[c[0] for c in FACTORIES])
def test_factory_on_device(case, device):
    name, fn = case
    _same(fn(ember, device), fn(torch, "cpu"), device)


# autograd: (name, fn(lib, *inputs) -> scalar loss, input specs); every float input requires grad
GRADS = [
    ("mlp", lambda L, x, w1, b1, w2: ((x @ w1 + b1).relu() @ w2).pow(2).mean(),
     [(4, 3), (3, 5), (5,), (5, 2)]),
    ("softmax chain", lambda L, x: (x.softmax(-1) * x.exp()).sum(), [(3, 4)]),
    ("broadcast and views", lambda L, x, y: ((x.t() * y).sum(0) ** 2).sum(), [(4, 3), (4,)]),
    ("cross_entropy", lambda L, x, w, t: L.nn.functional.cross_entropy(x @ w, t),
     [(4, 3), (3, 5), ("i", (4,), 5)]),
    ("reductions", lambda L, x: x.amax(1).sum() + x.mean() + x.sum(0).tanh().sum(), [("T", (3, 4))]),
    ("layer_norm", lambda L, x: L.nn.functional.layer_norm(x, (4,)).sin().sum(), [(3, 4)]),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", GRADS, ids=[c[0] for c in GRADS])
def test_grad_on_device(case, device):
    name, fn, specs = case
    arrays = _arrays(specs, 1)
    tx = [x.requires_grad_() if x.is_floating_point() else x for x in _torch_inputs(arrays)]
    ex = [x.requires_grad_() if x.is_floating_point() else x for x in _ember_inputs(arrays, device)]
    tl, el = fn(torch, *tx), fn(ember, *ex)
    _same(el, tl, device, atol=1e-5, rtol=1e-4)
    if device == "meta":
        el.backward()  # the graph runs on meta tensors too: gradients have the inputs' shapes
        for e, t in zip(ex, tx):
            if t.requires_grad:
                assert e.grad.device.type == "meta" and tuple(e.grad.shape) == tuple(t.shape)
        return
    tl.backward()
    el.backward()
    for e, t in zip(ex, tx):
        if t.requires_grad:
            # a transposed input is a non-leaf view here; its gradient is compared through .grad
            # of the leaf when it is one, else skipped (torch has none either)
            if t.grad is None:
                continue
            _same(e.grad, t.grad, device, atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_module_and_optimizer_follow_device(device):
    if device == "meta":
        pytest.skip("an optimiser step needs values")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    em = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    with ember.no_grad():
        for ep, tp in zip(em.parameters(), tm.parameters()):
            ep.copy_(ember.from_numpy(tp.detach().numpy().copy()))
    em.to(device)
    assert all(p.device.type == device for p in em.parameters())
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    eopt = ember.optim.SGD(em.parameters(), lr=0.1, momentum=0.9)
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    for _ in range(3):
        for m, opt, inp in ((tm, topt, torch.from_numpy(x)), (em, eopt, ember.from_numpy(x).to(device))):
            opt.zero_grad()
            m(inp).pow(2).mean().backward()
            opt.step()
    for ep, tp in zip(em.parameters(), tm.parameters()):
        _same(ep.detach(), tp.detach(), device, atol=1e-5, rtol=1e-4)
    state = eopt.state[next(iter(em.parameters()))]
    assert state["momentum_buffer"].device.type == device


def test_mixing_devices_raises(device):
    if device == "cpu":
        pytest.skip("needs a second device")
    a = ember.ones(2, device=device)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found "
                       "at least two devices"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a + ember.ones(2)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_mixing_devices_names_the_argument(device):
    """Ops that are not TensorIterator ops fail the device check of their generated wrapper, which
    names the argument and the wrapper (c10::impl::common_device_check_failure); composites
    (linear, embedding through index_select) leave the check to the op they call."""
    if device in ("cpu", "meta"):
        pytest.skip("needs a backend beside the CPU")
    key = "CUDA" if device == "cuda" else "PrivateUse1"
    d = f"{device}:0"
    a, w = ember.ones(2, 3, device=device), ember.ones(3, 4)
    cases = [
        (lambda: ember.mm(a, w), f"got mat2 is on cpu, different from other tensors on {d} (when checking "
                                 f"argument in method wrapper_{key}_mm)"),
        (lambda: ember.nn.functional.linear(w, ember.ones(5, 4, device=device), ember.ones(5, device=device)),
         f"got mat1 is on cpu, different from other tensors on {d} (when checking argument in method "
         f"wrapper_{key}_addmm)"),
        (lambda: a.index_select(0, ember.tensor([0])), f"got index is on cpu, different from other tensors "
                                                       f"on {d} (when checking argument in method "
                                                       f"wrapper_{key}__index_select)"),
        (lambda: ember.cat([ember.ones(1, 3), a]), f"got tensors is on {d}, different from other tensors on "
                                                   f"cpu (when checking argument in method wrapper_{key}_cat)"),
        (lambda: a * ember.ones(2, 3), f"found at least two devices, {d} and cpu!"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError) as e:
            fn()
        assert str(e.value) == "Expected all tensors to be on the same device, but " + msg
