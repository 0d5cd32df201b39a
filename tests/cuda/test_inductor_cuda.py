"""backend="inductor" on CUDA tensors (ember/_inductor/cuda_codegen.py): pointwise ops fuse into
generated numba.cuda kernels, everything else runs as dispatcher calls on the device. On numba's
simulator (EMBER_CUDA_SIM=1, tests/conftest.py) or a GPU with EMBER_CUDA_SIM=0. The oracle is
eager ember on the same device (torch's CPU build has no CUDA); sizes stay tiny: the simulator
runs each GPU thread in Python."""
import pytest

import ember
import ember._dynamo as dynamo
from ember import nn

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA and no simulator")


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    yield
    dynamo.reset()


def _fn(c):
    (e,) = c.entries
    return e.root.fn


def _same(a, b, tol=1e-6):
    assert a.device == b.device and a.dtype == b.dtype and a.shape == b.shape
    assert ember.allclose(a.cpu().double(), b.cpu().double(), atol=tol, rtol=tol), (a, b)


def test_pointwise_chain_is_one_kernel_with_broadcast_and_strided_inputs():
    def f(x, y, z):
        return ember.tanh(x * 2 + y).sigmoid() * z.exp() + ember.sqrt(x.abs()) - 1
    x = ember.randn(6, 5, device="cuda")
    y = ember.randn(5, device="cuda")              # broadcast over rows
    z = ember.randn(5, 6, device="cuda").t()       # transposed (strided)
    c = ember.compile(f, backend="inductor")
    for _ in range(3):
        _same(c(x, y, z), f(x, y, z))
    fn = _fn(c)
    assert fn.kernels == 1 and fn.externs == 0, fn.source
    assert "def kern(" in fn.source


def test_matmul_and_reduction_stay_externs_around_kernels():
    lin = nn.Linear(4, 3).to("cuda")

    def f(x):
        h = ember.relu(lin(x)) * 0.5 + 1
        return h.sum(1) * h.mean()
    x = ember.randn(7, 4, device="cuda")
    c = ember.compile(f, backend="inductor")
    with ember.no_grad():
        for _ in range(3):
            _same(c(x), f(x), 1e-5)
    fn = _fn(c)
    assert fn.kernels >= 1 and fn.externs >= 1, fn.source


def test_half_inputs_compute_in_float32():
    def f(x):
        return (x * 3).tanh() + x
    x = ember.randn(9, device="cuda").half()
    c = ember.compile(f, backend="inductor")
    for _ in range(3):
        _same(c(x), f(x), 1e-3)
    assert _fn(c).kernels == 1


def test_training_through_compiled_module_on_cuda():
    ember.manual_seed(0)
    m0 = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to("cuda")
    ember.manual_seed(0)
    m1 = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to("cuda")
    cm = ember.compile(m1, backend="inductor")
    x = ember.randn(5, 4, device="cuda")
    for _ in range(3):
        for m in (m0, m1):
            m.zero_grad()
        m0(x).pow(2).sum().backward()
        cm(x).pow(2).sum().backward()
    for p, q in zip(m0.parameters(), m1.parameters()):
        _same(p.grad, q.grad, 1e-5)
