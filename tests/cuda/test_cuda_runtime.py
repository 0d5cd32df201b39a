"""The CUDA runtime on numba's simulator (or a real GPU with EMBER_CUDA_SIM=0): devices, streams,
events, the caching allocator's statistics, copies, pinned memory, device rules, and an MLP
training step matching the CPU. Sizes stay tiny: the simulator runs each GPU thread in Python."""
import gc
import warnings

import numpy as np
import pytest

import ember

pytestmark = [pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA and no simulator"),
              pytest.mark.filterwarnings("ignore:ember. the CUDA backend has no kernel")]


def _drain():
    gc.collect()
    ember.cuda.synchronize()


# ---- device API --------------------------------------------------------------------------------
def test_device_queries():
    c = ember.cuda
    assert c.is_available() and c.device_count() >= 1
    c.init()
    assert c.is_initialized()
    assert c.current_device() == 0
    assert isinstance(c.get_device_name(), str) and c.get_device_name(0) == c.get_device_name("cuda:0")
    p = c.get_device_properties(0)
    assert p.total_memory > 0 and p.name == c.get_device_name()
    assert c.get_device_capability() == (p.major, p.minor)
    free, total = c.mem_get_info()
    assert 0 <= free <= total
    with pytest.raises(AssertionError, match="Invalid device id"):
        c.get_device_properties(c.device_count() + 4)
    c.set_device(0)
    assert c.current_device() == 0
    with c.device(0):
        assert c.current_device() == 0
    with c.device(None):
        pass
    t = ember.ones(1, device="cuda")
    with c.device_of(t):
        assert c.current_device() == 0
    c.synchronize()
    c.synchronize(0)


def test_invalid_ordinals():
    bad = ember.cuda.device_count() + 4
    for fn in (lambda: ember.ones(2, device=f"cuda:{bad}"), lambda: ember.ones(2).to(f"cuda:{bad}"),
               lambda: ember.ones(2).cuda(bad), lambda: ember.cuda.set_device(bad)):
        with pytest.raises(RuntimeError, match="CUDA error: invalid device ordinal"):
            fn()
    with pytest.raises(RuntimeError, match="Invalid device string"):
        ember.device("cuda:x")
    with pytest.raises(ValueError, match="Expected a cuda device"):
        ember.cuda.set_device("cpu")


# ---- streams and events --------------------------------------------------------------------------
def test_streams():
    c = ember.cuda
    d = c.default_stream()
    assert c.current_stream() == d and d.device == ember.device("cuda:0")
    s = c.Stream(priority=-1)
    assert s.priority == -1 and s != d
    assert c.Stream(priority=-100).priority == c.Stream.priority_range()[1]
    with c.stream(s):
        assert c.current_stream() == s
        x = ember.ones(4, device="cuda") * 3
    assert c.current_stream() == d
    with s:
        assert c.current_stream() == s
    d.wait_stream(s)
    assert (x.cpu().numpy() == 3).all()
    ev = s.record_event()
    assert isinstance(ev, c.Event)
    d.wait_event(ev)
    ev.synchronize()
    assert ev.query() and s.query()
    s.synchronize()
    with c.stream(None):
        assert c.current_stream() == d
    c.set_stream(s)
    assert c.current_stream() == s
    c.set_stream(d)


def test_events_time_device_work():
    c = ember.cuda
    a = c.Event(enable_timing=True)
    b = c.Event(enable_timing=True)
    assert a.query()  # never recorded: nothing to wait for
    a.record()
    y = ember.ones(8, device="cuda") + 1
    b.record()
    b.synchronize()
    assert a.query() and b.query()
    assert a.elapsed_time(b) >= 0.0
    assert (y.cpu().numpy() == 2).all()
    with pytest.raises(RuntimeError, match="Both events must be created with argument 'enable_timing=True'"):
        c.Event().elapsed_time(b)
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        c.Event(enable_timing=True).elapsed_time(b)
    e = c.Event()
    e.record(c.current_stream())
    e.wait()


# ---- memory statistics ---------------------------------------------------------------------------
def test_memory_stats_balance():
    c = ember.cuda
    _drain()
    base = c.memory_allocated()
    c.reset_peak_memory_stats()
    x = ember.empty(1000, device="cuda")           # 4000 bytes -> one 4096-byte block
    assert c.memory_allocated() == base + 4096
    y = x[10:20]                                     # a view holds the storage, not new memory
    assert c.memory_allocated() == base + 4096
    del x
    assert c.memory_allocated() == base + 4096
    del y
    gc.collect()
    assert c.memory_allocated() == base
    assert c.max_memory_allocated() >= base + 4096
    assert c.memory_reserved() >= 4096               # cached for reuse
    st = c.memory_stats()
    assert st["allocated_bytes.all.current"] == base
    assert st["allocation.all.allocated"] >= 1 and "num_alloc_retries" in st
    z = ember.empty(1000, device="cuda")            # served from the cache
    assert c.memory_stats()["segment.all.allocated"] == st["segment.all.allocated"]
    del z
    gc.collect()
    assert isinstance(c.memory_summary(), str) and "Allocated memory" in c.memory_summary()
    c.empty_cache()
    if base == 0:
        assert c.memory_reserved() == 0
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == c.memory_allocated()


def test_memory_stats_after_work():
    """Temporaries of a computation die with it: the counters come back to where they were."""
    c = ember.cuda
    _drain()
    base = c.memory_allocated()
    a = ember.randn(3, 4, device="cuda")
    b = (a * 2 + 1).sum(1)
    assert b.shape == (3,)
    del a, b
    gc.collect()
    assert c.memory_allocated() == base


# ---- copies --------------------------------------------------------------------------------------
def test_copies_both_ways():
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ember.from_numpy(h)
    d = t.cuda()
    assert d.is_cuda and d.device == ember.device("cuda:0") and d.dtype == ember.float32
    assert not t.is_cuda and d.get_device() == 0
    np.testing.assert_array_equal(d.cpu().numpy(), h)
    np.testing.assert_array_equal(d.to("cpu", ember.float64).numpy(), h.astype(np.float64))
    # host -> device with a dtype change, into a non-contiguous destination
    dst = ember.zeros(4, 3, device="cuda", dtype=ember.int64).t()
    dst.copy_(t)
    np.testing.assert_array_equal(dst.cpu().numpy(), h.astype(np.int64))
    # device -> device: transposed source, dtype conversion, broadcasting
    e = ember.empty(4, 3, device="cuda", dtype=ember.float64)
    e.copy_(d.t())
    np.testing.assert_array_equal(e.cpu().numpy(), h.T)
    f = ember.empty(2, 3, 4, device="cuda")
    f.copy_(d)
    np.testing.assert_array_equal(f.cpu().numpy(), np.broadcast_to(h, (2, 3, 4)))
    g = ember.empty(3, 4, device="cuda", dtype=ember.bool)
    g.copy_(d - 5)
    np.testing.assert_array_equal(g.cpu().numpy(), (h - 5) != 0)
    # device -> host into a strided CPU view
    out = ember.zeros(4, 3)
    out.t().copy_(d)
    np.testing.assert_array_equal(out.numpy(), h.T)
    # views and slices keep the storage
    v = d[1:, ::2]
    assert v.storage_offset() == 4 and v.stride() == (4, 2)
    np.testing.assert_array_equal(v.cpu().numpy(), h[1:, ::2])
    np.testing.assert_array_equal(v.contiguous().cpu().numpy(), h[1:, ::2])
    assert d.data_ptr() != 0 and d.untyped_storage().nbytes() == 48
    # 0-d, empty, bool, integer
    assert ember.tensor(3.5, device="cuda").item() == 3.5
    assert ember.empty(0, 3, device="cuda").cpu().shape == (0, 3)
    assert ember.tensor([True, False], device="cuda").tolist() == [True, False]
    assert ember.tensor([1, 2], device="cuda").dtype == ember.int64


def test_non_blocking_and_pinned():
    t = ember.arange(6.0)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and not t.is_pinned() and p.pin_memory() is p
    assert p[2:].is_pinned()
    np.testing.assert_array_equal(p.numpy(), t.numpy())
    d = p.to("cuda", non_blocking=True)
    back = ember.empty(6).pin_memory()
    back.copy_(d * 2, non_blocking=True)
    ember.cuda.current_stream().synchronize()        # the host sees it after a synchronize
    np.testing.assert_array_equal(back.numpy(), t.numpy() * 2)
    d2 = t.cuda(non_blocking=True)                   # pageable source: still correct
    np.testing.assert_array_equal(d2.cpu().numpy(), t.numpy())
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        d.pin_memory()


def test_record_stream_keeps_block_from_other_streams():
    c = ember.cuda
    s = c.Stream()
    _drain()
    x = ember.empty(256, device="cuda")
    alloc = ember.kernels.cuda._glue.state(0).allocator
    blk = alloc.block_of(x.untyped_storage())
    assert blk is not None and blk.stream == c.current_stream()
    with c.stream(s):
        y = x * 2
    x.record_stream(s)
    assert s in blk.stream_uses
    del x
    gc.collect()
    # on a real GPU the block waits for s's work; the simulator's streams are synchronous
    y.cpu()
    c.synchronize()
    z = ember.empty(256, device="cuda")             # only ever reuses a block of its own stream
    assert alloc.block_of(z.untyped_storage()).stream == c.current_stream()
    del z
    gc.collect()
    d = c.current_stream()
    cached = sorted(n for st, n in alloc.cached_blocks() if st == d)
    assert sum(cached) >= 1024                       # free memory on the default stream ...
    with c.stream(s):
        w = ember.empty(256, device="cuda")          # ... is not handed to another stream
    assert alloc.block_of(w.untyped_storage()).stream == s
    # nothing was taken from the default stream's pool (a late garbage collection may only add to it)
    assert sum(n for st, n in alloc.cached_blocks() if st == d) >= sum(cached)
    with pytest.raises(RuntimeError):
        ember.ones(2).record_stream(s)


# ---- factories ---------------------------------------------------------------------------------
FACTORIES = [
    ("zeros", lambda L, **k: L.zeros(2, 3, **k)),
    ("ones", lambda L, **k: L.ones(2, 3, dtype=L.int32, **k)),
    ("full", lambda L, **k: L.full((2, 2), 7.5, **k)),
    ("full_int", lambda L, **k: L.full((3,), 4, **k)),
    ("arange", lambda L, **k: L.arange(1, 7, 2, **k)),
    ("linspace", lambda L, **k: L.linspace(0, 1, 5, **k)),
    ("eye", lambda L, **k: L.eye(3, **k)),
    ("tensor", lambda L, **k: L.tensor([[1, 2], [3, 4]], **k)),
    ("empty_like", lambda L, **k: L.zeros_like(L.empty(2, 2, **k))),
    ("ones_like", lambda L, **k: L.ones_like(L.empty(2, **k))),
    ("full_like", lambda L, **k: L.full_like(L.empty(2, **k), 3)),
]
# random factories draw torch's CUDA streams on CUDA (tests/cuda/test_cuda_random.py)


@pytest.mark.parametrize("name,fn", FACTORIES, ids=[n for n, _ in FACTORIES])
def test_factories_on_cuda(name, fn):
    c = fn(ember)
    d = fn(ember, device="cuda")
    assert d.is_cuda and d.device == ember.device("cuda:0")
    assert d.dtype == c.dtype and d.shape == c.shape
    np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())


# ---- synchronising reads -----------------------------------------------------------------------
def test_item_tolist_print():
    d = ember.tensor([[1.5, 2.0], [3.0, 4.0]], device="cuda")
    assert d.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert d[1, 0].item() == 3.0
    assert float(d[0, 0]) == 1.5
    assert repr(d) == "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], device='cuda:0')"
    assert "device='cuda:0'" in str(ember.tensor([1, 2], device="cuda"))
    assert d.numel() == 4 and d.is_contiguous()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        d.numpy()


# ---- device rules --------------------------------------------------------------------------------
def test_device_mismatch():
    a = ember.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least "
                       "two devices, cuda:0 and cpu!"):
        a + ember.ones(2)
    with pytest.raises(RuntimeError, match="found at least two devices, cpu and cuda:0!"):
        ember.ones(2) * a
    # a 0-d CPU tensor joins a CUDA tensor, as in torch; the result is on CUDA
    r = a + ember.tensor(2.0)
    assert r.is_cuda and r.tolist() == [3.0, 3.0]
    assert (ember.tensor(2.0) * a).is_cuda
    assert (a * 2).is_cuda and (2 + a).is_cuda


def test_outputs_follow_inputs():
    a = ember.arange(6.0, device="cuda").reshape(2, 3)
    for r in (a.sum(), a.mean(0), a.t(), a.exp(), a[0], a.view(-1), a.unsqueeze(0), a.clone(),
              a.argmax(1), a.softmax(-1), a @ a.t(), a.to(ember.int64)):
        assert r.is_cuda, r
    np.testing.assert_allclose((a @ a.t()).cpu().numpy(), np.arange(6.0).reshape(2, 3) @ np.arange(
        6.0).reshape(2, 3).T, rtol=1e-5)


def test_fallback_warns_once_and_matches_cpu():
    from ember.kernels import cuda as K
    a = ember.tensor([[3.0, 1.0, 2.0]], device="cuda")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v, i = a.sort(1)
        a.sort(1)
    seen = [str(x.message) for x in w if "aten::sort" in str(x.message)]
    if "sort" not in K.registered_kernels():
        assert len(seen) <= 1 and "aten::sort" in K.fallback_ops_seen()
    assert v.is_cuda and i.is_cuda and v.tolist() == [[1.0, 2.0, 3.0]] and i.tolist() == [[1, 2, 0]]
    # in-place ops through the fallback update the CUDA tensor itself (same memory)
    b = ember.tensor([1.0, -2.0, 3.0], device="cuda")
    ptr = b.data_ptr()
    r = b.index_fill_(0, ember.tensor([1], device="cuda"), 5.0)
    assert r is b and b.data_ptr() == ptr and b.tolist() == [1.0, 5.0, 3.0]
    b.clamp_(max=4.0)
    assert b.tolist() == [1.0, 4.0, 3.0]
    c = ember.zeros(3, device="cuda")
    ember.cumsum(b, 0, out=c)
    assert c.tolist() == [1.0, 5.0, 8.0]
    vals, idx = ember.zeros(2, device="cuda"), ember.zeros(2, dtype=ember.int64, device="cuda")
    ember.topk(b, 2, out=(vals, idx))
    assert vals.tolist() == [4.0, 3.0] and idx.tolist() == [1, 2]


# ---- modules, optimisers, data -------------------------------------------------------------------
def _mlp():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_training_step_matches_cpu(opt):
    ember.manual_seed(1)
    x = ember.randn(5, 4)
    y = ember.tensor([0, 2, 1, 1, 0])
    results = []
    for dev in ("cpu", "cuda"):
        m = _mlp()
        if dev == "cuda":
            m = m.cuda()
            assert all(p.is_cuda for p in m.parameters())
        o = (ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) if opt == "sgd"
             else ember.optim.Adam(m.parameters(), lr=0.01))
        for _ in range(2):
            o.zero_grad()
            loss = ember.nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
            loss.backward()
            o.step()
        for p in m.parameters():
            assert p.device.type == dev and p.grad.device.type == dev
            for v in o.state[p].values():
                if isinstance(v, ember.Tensor) and v.dim() > 0:
                    assert v.device.type == dev
        results.append(([p.detach().cpu().numpy() for p in m.parameters()], loss.item()))
    (pc, lc), (pg, lg) = results
    assert abs(lc - lg) < 1e-5
    for a, b in zip(pc, pg):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert m.cpu()[0].weight.is_cpu


def test_dataloader_pin_memory():
    from ember.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(ember.arange(8.0).reshape(4, 2), ember.arange(4))
    batches = list(DataLoader(ds, batch_size=2, pin_memory=True))
    assert len(batches) == 2
    for xb, yb in batches:
        assert xb.is_pinned() and yb.is_pinned() and xb.is_cpu
        assert xb.to("cuda", non_blocking=True).is_cuda
    assert not next(iter(DataLoader(ds, batch_size=2)))[0].is_pinned()


def test_autograd_on_cuda():
    w = ember.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.is_cuda and w.grad.tolist() == [2.0, 4.0, 6.0]
    x = ember.ones(3, requires_grad=True)
    x.cuda().sum().backward()   # the copy to CUDA is differentiable: the gradient comes back to CPU
    assert x.grad.is_cpu and x.grad.tolist() == [1.0, 1.0, 1.0]


def test_like_factories_follow_device_argument():
    a = ember.ones(2, 3, device="cuda")
    assert ember.zeros_like(a).is_cuda
    assert ember.zeros_like(a, device="cpu").is_cpu
    assert ember.ones_like(ember.ones(2), device="cuda").is_cuda
    assert ember.full_like(a, 2, device="cpu").tolist() == [[2.0] * 3] * 2
    assert ember.randn_like(a).is_cuda and ember.rand_like(a, device="cpu").is_cpu


def test_pickle_and_deepcopy_cuda_tensor():
    import copy
    import io
    import pickle
    a = ember.arange(4.0, device="cuda")
    b = pickle.loads(pickle.dumps(a))
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0]
    c = copy.deepcopy(a)
    assert c.is_cuda and c.tolist() == a.tolist() and c.data_ptr() != a.data_ptr()
    buf = io.BytesIO()
    ember.save({"a": a}, buf)
    buf.seek(0)
    assert ember.load(buf, map_location="cpu")["a"].is_cpu


def test_optimizer_state_dict_moves_to_param_device():
    m = _mlp()
    o = ember.optim.Adam(m.parameters(), lr=0.01)
    m(ember.randn(2, 4)).sum().backward()
    o.step()
    sd = o.state_dict()
    mc = _mlp().cuda()
    oc = ember.optim.Adam(mc.parameters(), lr=0.01)
    oc.load_state_dict(sd)
    for p in mc.parameters():
        assert oc.state[p]["exp_avg"].is_cuda and oc.state[p]["exp_avg_sq"].is_cuda


def test_overlapping_device_copy():
    a = ember.arange(6.0, device="cuda")
    a[1:].copy_(a[:-1])
    assert a.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    b = ember.arange(4.0, device="cuda").reshape(2, 2)
    b.copy_(b.t())
    assert b.tolist() == [[0.0, 2.0], [1.0, 3.0]]
