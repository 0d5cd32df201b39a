"""examples/async_device: a PrivateUse1 backend whose kernels run on one worker thread per stream.

What the tests show is what a GPU does: a launch returns before its kernel finishes, events and
wait_stream order work across streams, the caching allocator keeps a block away from other
streams while work may still use it, and a host timer without synchronize measures only the
enqueueing. No test relies on a timing threshold: a "gate" (a kernel blocked on a
threading.Event the test releases) holds a stream still for as long as the test needs, and every
wait has a safety timeout so a bug fails the test instead of hanging it.
"""
import gc
import os
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from examples import async_device  # noqa: E402
from examples.async_device import kernels as adk  # noqa: E402

SAFETY = 20.0  # seconds: a stuck gate is released after this, and the test fails


@pytest.fixture
def adev():
    mod = async_device.install()
    try:
        yield mod
    finally:
        async_device.uninstall()


class Gate:
    """A kernel that holds its stream until opened (or until SAFETY seconds passed)."""

    def __init__(self, stream):
        self.ev = threading.Event()
        self.timer = threading.Timer(SAFETY, self.ev.set)
        self.timer.daemon = True
        self.timer.start()
        stream.launch(self.ev.wait)

    def open(self):
        assert not self.ev.is_set(), "the safety timer opened the gate: something waited for it"
        self.ev.set()
        self.timer.cancel()


def raw(t):
    """The device memory of t as the host sees it right now (no synchronization)."""
    return adk.host_view(t).copy()


def test_launch_returns_before_kernel_finishes(adev):
    a = ember.ones(1000, device="adev")
    adev.synchronize()
    s = adev.current_stream()
    gate = Gate(s)
    r = a.add_(1)                 # enqueued behind the gate: returns at once
    b = a * 3                     # so does a new output
    done = adev.Event()
    done.record()
    assert r is a and b.device == ember.device("adev:0") and b.shape == (1000,)
    assert not done.query() and not s.query()
    assert (raw(a) == 1).all()    # the kernel has not run yet
    gate.open()
    done.synchronize()
    assert done.query() and s.query()
    assert (raw(a) == 2).all() and (raw(b) == 6).all()


def test_timing_without_synchronize_measures_only_enqueueing(adev):
    s = adev.current_stream()
    start, end = adev.Event(enable_timing=True), adev.Event(enable_timing=True)
    gate = Gate(s)
    t0 = time.perf_counter()
    start.record()
    adev._sleep(0.25)             # 250 ms of device work
    end.record()
    host_without_sync = time.perf_counter() - t0
    assert not end.query()        # the host clock stopped before the work even began
    gate.open()
    t0 = time.perf_counter()
    start.record()
    adev._sleep(0.25)
    end.record()
    adev.synchronize()
    host_with_sync = time.perf_counter() - t0
    assert host_with_sync >= 0.25
    assert start.elapsed_time(end) >= 0.25 * 1000 * 0.99  # device time, measured by events
    assert host_without_sync < host_with_sync


def test_item_tolist_print_cpu_synchronize(adev):
    n = 100
    a = ember.ones(n, device="adev")
    s = adev.current_stream()
    reads = {"item": lambda: a.sum().item() == 3 * n,
             "tolist": lambda: a.tolist() == [3.0] * n,
             "cpu": lambda: (a.cpu().numpy() == 3).all(),
             "print": lambda: "3., 3." in repr(a)}
    for name, read in reads.items():
        a.fill_(1)
        gate = Gate(s)
        threading.Timer(0.05, gate.open).start()  # opened from another thread, later
        a.add_(2)
        assert read(), name          # the read waited for the add_ behind the gate


def test_non_blocking_copy_to_pinned_memory_does_not_synchronize(adev):
    n = 64
    a = ember.ones(n, device="adev")
    pinned = adev.pin_memory(ember.zeros(n))
    pageable = ember.zeros(n)
    s = adev.current_stream()
    gate = Gate(s)
    a.add_(1)
    pinned.copy_(a, non_blocking=True)   # returns while the stream is held
    assert not gate.ev.is_set()
    assert (pinned.numpy() == 0).all()   # the copy is still queued
    ev = adev.Event()
    ev.record()
    gate.open()
    ev.synchronize()
    assert (pinned.numpy() == 2).all()
    # into pageable memory non_blocking means nothing: the copy waits
    gate = Gate(s)
    threading.Timer(0.05, gate.open).start()
    a.add_(1)
    pageable.copy_(a, non_blocking=True)
    assert (pageable.numpy() == 3).all()


def test_host_to_device_copy_snapshots_pageable_memory(adev):
    h = ember.ones(8)
    s = adev.current_stream()
    gate = Gate(s)
    d = h.to("adev")
    h.fill_(7)                       # overwriting the source after the call is safe
    gate.open()
    assert d.cpu().tolist() == [1.0] * 8


def test_events_order_work_across_two_streams(adev):
    s1, s2 = adev.Stream(), adev.Stream()
    x = ember.ones(16, device="adev")
    adev.synchronize()
    gate = Gate(s1)
    with adev.stream(s1):
        x.fill_(5)
        filled = s1.record_event()
    with adev.stream(s2):
        racy = x * 2                 # no ordering: s2 runs now, before s1's fill
        s2.synchronize()
        s2.wait_event(filled)
        ordered = x * 2              # ordered after the fill
        ordered_done = s2.record_event()
    assert (raw(racy) == 2).all()
    assert not ordered_done.query()  # s2 waits for s1, which waits for the gate
    gate.open()
    ordered_done.synchronize()
    assert (raw(ordered) == 10).all()
    assert adev.current_stream() is adev.default_stream()


def test_wait_stream_makes_consumer_wait(adev):
    producer, consumer = adev.Stream(), adev.Stream()
    gate = Gate(producer)
    with adev.stream(producer):
        data = ember.full((32,), 3.0, device="adev")
    consumer.wait_stream(producer)
    with adev.stream(consumer):
        total = data.sum()
    done = consumer.record_event()
    assert not done.query() and not consumer.query()
    gate.open()
    done.synchronize()
    assert total.item() == 96.0


def test_allocator_never_hands_in_use_block_to_other_stream(adev):
    s1, s2 = adev.Stream(), adev.Stream()
    with adev.stream(s1):
        x = ember.empty(1024, device="adev")
        p = x.untyped_storage().data_ptr()
        gate = Gate(s1)
        x.fill_(1)                   # pending work on s1 still writes x
    del x
    gc.collect()                     # x is dead on the host; its block is cached for s1
    with adev.stream(s2):
        y = ember.empty(1024, device="adev")
    assert y.untyped_storage().data_ptr() != p
    with adev.stream(s1):
        z = ember.empty(1024, device="adev")  # same stream: ordered after the fill, safe
    assert z.untyped_storage().data_ptr() == p
    gate.open()
    adev.synchronize()


def test_record_stream_delays_reuse_until_other_stream_done(adev):
    s1, s2 = adev.Stream(), adev.Stream()
    with adev.stream(s1):
        x = ember.ones(1024, device="adev")
    p = x.untyped_storage().data_ptr()
    s2.wait_stream(s1)
    gate = Gate(s2)
    with adev.stream(s2):
        y = x * 2                    # s2 reads x (after the gate)
    x.record_stream(s2)             # Tensor.record_stream reaches the device module
    del x
    gc.collect()
    with adev.stream(s1):
        z = ember.empty(1024, device="adev")
    assert z.untyped_storage().data_ptr() != p  # s2 may still read the old block
    gate.open()
    s2.synchronize()
    with adev.stream(s1):
        w = ember.empty(1024, device="adev")
    assert w.untyped_storage().data_ptr() == p
    assert (raw(y) == 2).all()
    del z, w


def test_memory_stats_balance_after_tensors_die(adev):
    assert adev.memory_allocated() == 0
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).adev()
    x = ember.randn(32, 8).adev()
    loss = m(x).pow(2).mean()
    loss.backward()
    assert adev.memory_allocated() > 0
    peak = adev.max_memory_allocated()
    assert peak >= adev.memory_allocated()
    del m, x, loss
    gc.collect()
    adev.synchronize()
    st = adev.memory_stats()
    assert adev.memory_allocated() == 0
    assert st["active_bytes.all.current"] == 0 and st["allocation.all.current"] == 0
    assert st["allocated_bytes.all.allocated"] == st["allocated_bytes.all.freed"]
    assert adev.memory_reserved() > 0 and adev.max_memory_allocated() == peak
    adev.reset_peak_memory_stats()
    assert adev.max_memory_allocated() == 0
    adev.empty_cache()
    assert adev.memory_reserved() == 0
    assert "adev memory summary" in adev.memory_summary()


def _train(dev, steps=4):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(dev)
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    g = ember.Generator().manual_seed(1)
    x = ember.randn(20, 6, generator=g).to(dev)
    y = ember.randint(0, 3, (20,), generator=g).to(dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().numpy() for p in m.parameters()]


def test_mlp_trains_and_matches_cpu(adev):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no op of a training step takes the CPU fallback
        la, pa = _train("adev")
    lc, pc = _train("cpu")
    np.testing.assert_allclose(la, lc, rtol=1e-6, atol=1e-6)
    for p, q in zip(pa, pc):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    assert la[-1] < la[0]


def test_autograd_key_on_device(adev):
    w = ember.randn(3, 3).adev().requires_grad_()
    assert w.is_adev and w.requires_grad
    from ember.core.keys import DispatchKey
    assert w._keys & (1 << DispatchKey.AutogradPrivateUse1)
    out = (w @ w).relu().sum()
    assert out.grad_fn is not None and out.device == ember.device("adev:0")
    out.backward()
    assert w.grad.device == w.device
    wc = w.detach().cpu().requires_grad_()
    (wc @ wc).relu().sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), wc.grad.numpy(), rtol=1e-6)


def test_fallback_runs_on_cpu_and_warns_once(adev):
    xc = ember.randn(4, 5)
    x = xc.adev()
    with pytest.warns(UserWarning, match="'aten::cumsum' is not currently supported on the adev "
                                         "backend and will fall back to run on the CPU"):
        y = x.cumsum(1)
    assert y.device == x.device
    np.testing.assert_allclose(y.cpu().numpy(), xc.cumsum(1).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.cumsum(0)                  # once per operator
    with pytest.warns(UserWarning, match="aten::exp_"):
        r = x.exp_()                 # in-place through the fallback writes back
    assert r is x
    np.testing.assert_allclose(x.cpu().numpy(), xc.exp().numpy(), rtol=1e-6)
    with pytest.warns(UserWarning, match="aten::randperm"):
        p = ember.randperm(5, device="adev")  # factories too
    assert p.device == ember.device("adev:0") and sorted(p.tolist()) == [0, 1, 2, 3, 4]


def test_views_and_strided_inputs(adev):
    xc = ember.randn(4, 6)
    x = xc.adev()
    for f in (lambda t: t.t() @ t, lambda t: t[1:, ::2] * 2, lambda t: t.view(6, 4).sum(0),
              lambda t: t.unsqueeze(0).expand(2, 4, 6).sum(), lambda t: t.permute(1, 0).relu()):
        np.testing.assert_allclose(f(x).cpu().numpy(), f(xc).numpy(), rtol=1e-5, atol=1e-6)
    v = x[1]
    v.fill_(0)                       # a view writes through to its base
    assert x.cpu()[1].tolist() == [0.0] * 6 and v._base is x


def test_kernel_error_reported_at_synchronize(adev):
    adev.current_stream().launch(lambda: 1 / 0)
    with pytest.raises(adev.AsyncKernelError, match="ZeroDivisionError"):
        adev.synchronize()
    adev.synchronize()               # reported once


def test_events_and_streams_api(adev):
    e = adev.Event()
    assert e.query()                 # never recorded: complete
    e.synchronize()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        e.elapsed_time(adev.Event())
    s = adev.Stream()
    assert s.device == ember.device("adev:0") and s != adev.default_stream()
    with s:
        assert adev.current_stream() is s
    assert adev.current_stream() is adev.default_stream()
    assert adev.device_count() == 2 and adev.is_available()
    a = ember.ones(3, device="adev:1")
    assert a.device.index == 1 and adev.current_stream(1) is not adev.current_stream(0)
    b = a.to("adev:0")
    assert b.device.index == 0 and b.cpu().tolist() == [1.0, 1.0, 1.0]
    with adev.device(1):
        assert adev.current_device() == 1
        assert ember.empty(2, device="adev").device == ember.device("adev:1")
    assert adev.current_device() == 0


def test_errors(adev):
    a = ember.ones(2, device="adev")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                       "found at least two devices, adev:0 and cpu!"):
        a + ember.ones(2)
    assert (a + ember.tensor(1.0)).cpu().tolist() == [2.0, 2.0]  # 0-d CPU tensors may join
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        a + ember.ones(3, device="adev")  # checked on the host, at the call
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.ones(2, device="adev:5")


def test_install_uninstall_roundtrip():
    async_device.install()
    async_device.uninstall()
    assert not hasattr(ember, "adev") and not hasattr(ember.Tensor, "adev")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ember.device("adev:0")
    with async_device.enabled() as adev:
        assert ember.ones(1, device="adev").cpu().tolist() == [1.0] and adev is ember.adev
    assert not hasattr(ember, "adev")


def test_example_runs_as_a_module():
    import subprocess
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "examples.async_device", "--steps", "3"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "enqueueing only" in proc.stdout
    assert float(proc.stdout.split("max difference ")[1].split()[0]) < 1e-5


OPS = {
    "add_alpha": lambda a, b: a.add(b, alpha=2), "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 1), "div_scalar": lambda a, b: a / 3, "neg_exp": lambda a, b: (-a).exp(),
    "log": lambda a, b: (a.abs() + 1).log(), "sqrt": lambda a, b: a.abs().sqrt(), "pow": lambda a, b: a.pow(2),
    "maximum": lambda a, b: ember.maximum(a, b), "where": lambda a, b: ember.where(a > b, a, b),
    "mm": lambda a, b: a @ b.t(), "relu_sigmoid_tanh": lambda a, b: a.relu() + a.sigmoid() + b.tanh(),
    "sum_dim": lambda a, b: a.sum(1, keepdim=True), "mean": lambda a, b: a.mean(), "mean_dim": lambda a, b: b.mean(0),
    "argmax": lambda a, b: a.argmax(1), "amax": lambda a, b: a.amax(0), "max_dim": lambda a, b: a.max(1)[0],
    "log_softmax": lambda a, b: a.log_softmax(1), "softmax": lambda a, b: b.softmax(0),
    "cat_stack": lambda a, b: ember.cat([a, b]).sum(0) + ember.stack([a, b]).sum((0, 1)),
    "clamp": lambda a, b: a.clamp(-0.3, 0.3), "masked_fill": lambda a, b: a.masked_fill(a > 0, 0.5),
    "compare": lambda a, b: (a > 0).float() + (a == b).float() + (a != 0).float(),
    "broadcast_0d_cpu": lambda a, b: a * ember.tensor(2.0) + ember.tensor(1.0),
    "int_dtype": lambda a, b: (a * 10).long() + 3, "gelu": lambda a, b: ember.nn.functional.gelu(a),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_launched_ops_match_cpu(adev, name):
    """Launched kernels on transposed (non-contiguous) inputs give the CPU's values and dtypes."""
    f = OPS[name]
    g = ember.Generator().manual_seed(3)
    ac, bc = ember.randn(5, 4, generator=g).t(), ember.randn(4, 5, generator=g)
    r, rc = f(ac.adev(), bc.adev()), f(ac, bc)
    assert r.device == ember.device("adev:0") and r.dtype == rc.dtype and r.shape == rc.shape
    np.testing.assert_allclose(r.cpu().numpy(), rc.numpy(), rtol=1e-5, atol=1e-6)
