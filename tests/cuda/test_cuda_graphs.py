"""CUDA Graphs (ember.cuda.CUDAGraph, graph, graph_pool_handle, make_graphed_callables,
is_current_stream_capturing) on numba's simulator (EMBER_CUDA_SIM=1, tests/conftest.py), or on
a GPU with EMBER_CUDA_SIM=0.

torch cannot run CUDA graphs here (its CPU build has no CUDA), so the oracle is eager ember on
the same simulated device, and torch's error texts are copied below as facts (from
aten/src/ATen/cuda/CUDAGraph.cpp, torch/csrc/cuda/Graph.cpp and torch/cuda/graphs.py).
Sizes stay tiny: the simulator runs each GPU thread in Python."""
import gc
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember import nn

pytestmark = [pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA and no simulator"),
              pytest.mark.filterwarnings("ignore:ember. the CUDA backend has no kernel")]

# torch's messages (TORCH_CHECK -> RuntimeError; AT_CUDA_CHECK -> "CUDA error: <cudaGetErrorString>")
NON_DEFAULT = ("CUDA graphs must be captured on a non-default stream. (However, after capture, "
               "it's ok to replay them on the default stream.)")
NO_CAPTURE = "Called CUDAGraph::replay without a preceding successful capture."
NO_POOL = "Called CUDAGraph::pool() without a preceding successful capture."
OWNS = ("This CUDAGraph instance already owns a captured graph. To capture a new graph, create a "
        "new instance.")
SAME_STREAM = "Capture must end on the same stream it began on."
BAD_MODE = "Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, got bogus"
CAPTURING = "CUDA error: operation not permitted when stream is capturing"
INVALIDATED = "CUDA error: operation failed due to a previous error during capture"
EMPTY = ("The CUDA Graph is empty. This usually means that the graph was attempted to be captured "
         "on wrong device or stream.")


def _np(t):
    return t.detach().cpu().numpy()


def _rand(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32),
                        device="cuda")


def _close(a, b, atol=1e-6):
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=atol)


def _first_line(e):
    return str(e).split("\n")[0]


# ---- capture and replay ---------------------------------------------------------------------------
def test_capture_runs_nothing_and_replay_runs_it_in_order():
    x = ember.zeros(3, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        assert ember.cuda.is_current_stream_capturing()
        x.add_(1)
        x.mul_(3)
    assert not ember.cuda.is_current_stream_capturing()
    assert _np(x).tolist() == [0, 0, 0]          # torch does not execute captured work either
    g.replay()
    assert _np(x).tolist() == [3, 3, 3]          # (0 + 1) * 3
    g.replay()
    assert _np(x).tolist() == [12, 12, 12]       # (3 + 1) * 3: in order, on the same memory
    for _ in range(5):
        g.replay()
    assert _np(x)[0] == 3 * (((((12 + 1) * 3 + 1) * 3 + 1) * 3 + 1) * 3 + 1)


@pytest.mark.parametrize("case", ["pointwise", "matmul", "reduction", "mixed"])
def test_replay_matches_eager_with_static_input_updates(case):
    fns = {
        "pointwise": lambda x, w: ((x * 2 + 1).relu() - x.sigmoid()).exp() / (x.abs() + 1),
        "matmul": lambda x, w: (x @ w).tanh() @ w.t(),
        "reduction": lambda x, w: (x - x.mean(1, keepdim=True)).pow(2).sum(0) + x.amax(1).sum(),
        "mixed": lambda x, w: ember.softmax(x @ w, dim=1).sum(1) * x.norm(),
    }
    fn = fns[case]
    static_x = _rand(4, 3, seed=1)
    w = _rand(3, 3, seed=2)
    fn(static_x, w)                              # warm up (compiles the kernels) outside capture
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        static_out = fn(static_x, w)
    for seed in (3, 4, 5):
        new = _rand(4, 3, seed=seed)
        static_x.copy_(new)                      # update the static input in place
        g.replay()
        _close(static_out, fn(new, w), atol=1e-5)


def test_static_output_is_the_buffer_a_later_replay_overwrites():
    # torch's static-output semantics: the tensor made during capture IS the graph's output
    # memory; every replay writes its new values there, so a reference kept from an earlier
    # replay shows the new values. Keep a clone() to keep the old ones.
    x = ember.tensor([1.0, 2.0], device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        out = x * 10
    g.replay()
    first = out                                   # the caller "keeps" the first result
    kept = out.clone()
    ptr = out.data_ptr()
    x.copy_(ember.tensor([5.0, 6.0], device="cuda"))
    g.replay()
    assert out.data_ptr() == ptr                  # same storage across replays
    assert _np(first).tolist() == [50.0, 60.0]    # overwritten by the second replay
    assert _np(kept).tolist() == [10.0, 20.0]


def test_replay_on_default_stream_and_inside_another_capture():
    x = ember.ones(2, device="cuda")
    g1 = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g1):
        x.add_(1)
    g2 = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g2):
        g1.replay()                               # becomes part of g2's graph
        x.mul_(10)
    assert _np(x).tolist() == [1, 1]
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    g2.replay()                                   # on the default stream: allowed after capture
    assert _np(x).tolist() == [20, 20]
    g1.replay()
    assert _np(x).tolist() == [21, 21]
    with ember.cuda.stream(ember.cuda.Stream()):  # or on any other stream
        g1.replay()
    ember.cuda.synchronize()
    assert _np(x).tolist() == [22, 22]


def test_factories_and_copies_are_captured():
    x = _rand(3, seed=7)
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        z = ember.zeros(3, device="cuda")         # the fill is a graph node
        o = ember.ones_like(x)
        y = x.clone()                             # device-to-device copy
        y[1:] = x[:2]                             # strided copy kernel
        r = z + o + y
    x.copy_(ember.tensor([1.0, 2.0, 3.0], device="cuda"))
    g.replay()
    assert _np(r).tolist() == [2.0, 2.0, 3.0]


def test_pinned_host_copies_are_graph_nodes():
    # a non_blocking copy from/to pinned host memory is captured: each replay reads / writes it
    src = ember.zeros(3).pin_memory()
    dst = ember.zeros(3).pin_memory()
    dev = ember.empty(3, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        dev.copy_(src, non_blocking=True)
        out = dev * 2
        dst.copy_(out, non_blocking=True)
    src.copy_(ember.tensor([1.0, 2.0, 3.0]))
    g.replay()
    ember.cuda.synchronize()
    assert dst.tolist() == [2.0, 4.0, 6.0]
    src.fill_(5.0)
    g.replay()
    ember.cuda.synchronize()
    assert dst.tolist() == [10.0, 10.0, 10.0]


def test_reset_capture_again_and_keep_graph():
    x = ember.zeros(2, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        x.add_(1)
    with pytest.raises(RuntimeError) as e:
        g.capture_begin()
    assert str(e.value) == OWNS
    g.reset()
    with pytest.raises(RuntimeError) as e:
        g.replay()
    assert str(e.value) == NO_CAPTURE
    with ember.cuda.graph(g):
        x.add_(5)
    g.replay()
    assert _np(x).tolist() == [5, 5]

    k = ember.cuda.CUDAGraph(keep_graph=True)
    with ember.cuda.graph(k):
        x.add_(1)
    with pytest.raises(RuntimeError, match="until instantiate"):
        k.raw_cuda_graph_exec()
    assert isinstance(k.raw_cuda_graph(), int)
    k.instantiate()
    k.replay()
    assert _np(x).tolist() == [6, 6]
    with pytest.raises(RuntimeError, match="unless CUDAGraph was initialized with keep_graph=true"):
        g.raw_cuda_graph()


# ---- memory pools ---------------------------------------------------------------------------------
def _pool_of(t):
    alloc = ember.cuda._runtime.state(0).allocator
    return alloc.block_of(t.untyped_storage()).stream


def test_private_pool_and_sharing():
    from ember.cuda.graphs import _Pool
    x = _rand(8, seed=1)
    g1 = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g1):
        a = (x + 1) * 2                           # x + 1 dies inside the capture
    p1 = g1.pool()
    assert isinstance(p1, tuple) and len(p1) == 2 and p1[0] > 0 and p1[1] == 0
    assert isinstance(_pool_of(a), _Pool) and _pool_of(a).handle == p1
    eager = x + 3                                 # eager memory never comes from a graph pool
    assert _pool_of(eager) == ember.cuda.current_stream()

    reserved = ember.cuda.memory_reserved()
    g2 = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g2, pool=p1):           # shares g1's pool: no new segment
        b = a.sin() + x
    assert g2.pool() == p1 and _pool_of(b).handle == p1
    assert ember.cuda.memory_reserved() == reserved

    h = ember.cuda.graph_pool_handle()
    assert isinstance(h, tuple) and h[0] == 0 and h[1] > 0
    assert ember.cuda.graph_pool_handle() != h
    g3 = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g3, pool=h):
        c = b * 2
    assert g3.pool() == h and _pool_of(c).handle == h
    assert ember.cuda.memory_reserved() > reserved  # a new pool, a new segment

    # replays of graphs sharing a pool, in capture order, give eager's values
    x.copy_(_rand(8, seed=9))
    for gr in (g1, g2, g3):
        gr.replay()
    a_e = (x + 1) * 2
    _close(c, (a_e.sin() + x) * 2, atol=1e-5)


def test_graph_outputs_stay_alive_with_the_graph():
    x = _rand(4, seed=2)
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        y = x.exp() + 1
    ptr = y.data_ptr()
    expect = _np(x.exp() + 1)
    del y
    gc.collect()
    junk = [ember.empty(4, device="cuda").fill_(-7) for _ in range(4)]   # eager churn
    g.replay()                                     # writes the (dropped) output: no eager tensor hurt
    for j in junk:
        assert j.data_ptr() != ptr and _np(j).tolist() == [-7] * 4
    assert np.isfinite(expect).all()


# ---- errors ---------------------------------------------------------------------------------------
def test_capture_on_default_stream_raises():
    g = ember.cuda.CUDAGraph()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    with pytest.raises(RuntimeError) as e:
        g.capture_begin()
    assert str(e.value) == NON_DEFAULT
    with pytest.raises(RuntimeError) as e:
        with ember.cuda.graph(g, stream=ember.cuda.default_stream()):
            pass
    assert str(e.value) == NON_DEFAULT
    assert not ember.cuda.is_current_stream_capturing()


def test_replay_and_pool_without_capture_raise():
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError) as e:
        g.replay()
    assert str(e.value) == NO_CAPTURE
    with pytest.raises(RuntimeError) as e:
        g.pool()
    assert str(e.value) == NO_POOL
    with pytest.raises(RuntimeError) as e:
        g.instantiate()
    assert str(e.value) == "capture_end() must have been called before calling instantiate"
    with pytest.raises(RuntimeError) as e:
        with ember.cuda.graph(g, capture_error_mode="bogus"):
            pass
    assert str(e.value) == BAD_MODE


def test_capture_end_on_another_stream_raises():
    g = ember.cuda.CUDAGraph()
    s1, s2 = ember.cuda.Stream(), ember.cuda.Stream()
    with ember.cuda.stream(s1):
        g.capture_begin()
        ember.ones(1, device="cuda")
        with pytest.raises(RuntimeError) as e:
            g.replay()                             # replay before capture_end
        assert str(e.value) == NO_CAPTURE
        with pytest.raises(RuntimeError) as e:
            g.capture_begin()                      # a capture is already underway
        assert str(e.value) == OWNS
    with ember.cuda.stream(s2):
        with pytest.raises(RuntimeError) as e:
            g.capture_end()
    assert str(e.value) == SAME_STREAM
    with ember.cuda.stream(s1):
        g.capture_end()
    g.replay()


def test_debug_dump_warnings(tmp_path):
    g = ember.cuda.CUDAGraph()
    with pytest.warns(UserWarning, match=r"CUDA Graphs debug not enabled, set with \[graph\]"):
        g.debug_dump(str(tmp_path / "g.dot"))


def test_empty_capture_warns():
    g = ember.cuda.CUDAGraph()
    with pytest.warns(UserWarning) as rec:
        with ember.cuda.graph(g):
            pass
    assert any(str(w.message) == EMPTY for w in rec)


@pytest.mark.parametrize("what", ["item", "synchronize", "stream_synchronize", "cpu", "print",
                                  "pageable_h2d"])
def test_host_sync_during_capture_raises_and_invalidates(what):
    x = _rand(3, seed=3)
    fns = {"item": lambda: x.sum().item(),
           "synchronize": lambda: ember.cuda.synchronize(),
           "stream_synchronize": lambda: ember.cuda.current_stream().synchronize(),
           "cpu": lambda: x.cpu(),
           "print": lambda: repr(x),
           "pageable_h2d": lambda: x.copy_(ember.ones(3))}
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError) as e:
        with ember.cuda.graph(g):
            fns[what]()
    # as in torch: the call raises, the capture is invalidated, and capture_end (the context
    # manager's exit) raises "operation failed due to a previous error during capture"
    assert _first_line(e.value) == INVALIDATED
    assert _first_line(e.value.__context__) == CAPTURING
    assert not ember.cuda.is_current_stream_capturing()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    with pytest.raises(RuntimeError) as e:
        g.replay()
    assert str(e.value) == NO_CAPTURE
    ember.cuda.synchronize()                      # the device is usable again
    assert np.isfinite(x.sum().item())


@pytest.mark.parametrize("what", ["bfloat16", "complex", "random"])
def test_ops_the_backend_runs_on_the_host_raise_clearly(what):
    x = _rand(3, seed=4)
    xb = x.to(ember.bfloat16)
    fns = {"bfloat16": lambda: xb * 2,
           "complex": lambda: x.to(ember.complex64),
           "random": lambda: ember.randn(3, device="cuda")}
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError) as e:
        with ember.cuda.graph(g):
            fns[what]()
    inner = str(e.value.__context__)
    assert inner.startswith(CAPTURING)
    assert "ember:" in inner and "host" in inner   # says why (the host fallback), not silently run


def test_synchronize_on_other_stream_while_capturing_is_fine():
    # only the capturing stream (or a device-wide sync) is off limits
    other = ember.cuda.Stream()
    x = ember.zeros(2, device="cuda")
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        with ember.cuda.stream(other):
            assert not ember.cuda.is_current_stream_capturing()
            y = ember.ones(2, device="cuda") * 4       # runs now, on the other stream
            other.synchronize()
            assert _np(y).tolist() == [4, 4]
        x.add_(1)
    g.replay()
    assert _np(x).tolist() == [1, 1]


def test_fork_and_join_a_side_stream_during_capture():
    x = ember.zeros(4, device="cuda")
    side = ember.cuda.Stream()
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        cur = ember.cuda.current_stream()
        side.wait_stream(cur)                      # fork: side joins the capture
        with ember.cuda.stream(side):
            assert ember.cuda.is_current_stream_capturing()
            y = x + 1                              # recorded, not run
        cur.wait_stream(side)                      # join back
        z = y * 2
    assert not ember.cuda.is_current_stream_capturing()
    with ember.cuda.stream(side):
        assert not ember.cuda.is_current_stream_capturing()   # the fork ended with the capture
    assert _np(x).tolist() == [0] * 4
    g.replay()
    assert _np(z).tolist() == [2] * 4
    x.fill_(3)
    g.replay()
    assert _np(z).tolist() == [8] * 4


def test_events_recorded_during_capture_cannot_be_waited_on_by_the_host():
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError) as e:
        with ember.cuda.graph(g):
            ev = ember.cuda.current_stream().record_event()
            ev.synchronize()
    assert _first_line(e.value) == INVALIDATED
    assert _first_line(e.value.__context__) == CAPTURING
    ev.synchronize()                               # after the capture: an ordinary event
    assert ev.query()


def test_unjoined_fork_raises_at_capture_end():
    side = ember.cuda.Stream()
    x = ember.zeros(2, device="cuda")
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="fork that was not joined to the primary stream"):
        with ember.cuda.graph(g):
            side.wait_stream(ember.cuda.current_stream())
            with ember.cuda.stream(side):
                x.add_(1)                          # never joined back
    with ember.cuda.stream(side):
        assert not ember.cuda.is_current_stream_capturing()
        side.synchronize()                         # usable again


def test_is_current_stream_capturing_before_init():
    code = ("import ember; print(ember.cuda.is_current_stream_capturing(), "
            "ember.cuda.is_initialized())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


_NO_CUDA = """
import ember, torch
if ember.cuda.is_available() or torch.cuda.is_available():
    print("SKIP")
else:
    calls = [lambda c: c.CUDAGraph(), lambda c: c.graph_pool_handle(),
             lambda c: c.is_current_stream_capturing(),
             lambda c: c.make_graphed_callables(lambda x: x * 2, ((ember if c is ember.cuda else torch).ones(1),))]
    for f in calls:
        got = []
        for c in (ember.cuda, torch.cuda):
            try:
                f(c)
                got.append("no error")
            except Exception as e:
                got.append(f"{type(e).__name__}: {e}")
        assert got[0] == got[1], got
        print("OK", got[0])
"""


def test_without_cuda_matches_torchs_cpu_build():
    # torch's CPU build (the oracle here) has dummy graph classes that raise when used
    env = dict(os.environ, EMBER_CUDA_SIM="0")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", _NO_CUDA], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.strip() == "SKIP":
        pytest.skip("CUDA is available without the simulator (or torch has CUDA)")
    assert out.stdout.count("OK RuntimeError: Tried to instantiate dummy base class") == 4, out.stdout


# ---- make_graphed_callables -----------------------------------------------------------------------
def _model(seed):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).cuda()


def test_make_graphed_callables_training_matches_eager():
    eager, graphed = _model(0), _model(0)
    gmod = ember.cuda.make_graphed_callables(graphed, (_rand(5, 3, seed=10),))
    assert gmod is graphed                          # a Module comes back with its forward graphed
    calls = []
    graphed[0].register_forward_hook(lambda *a: calls.append(1))   # allowed after graphing
    opt_e = ember.optim.SGD(eager.parameters(), lr=0.1)
    opt_g = ember.optim.SGD(graphed.parameters(), lr=0.1)
    for step in range(3):
        x, y = _rand(5, 3, seed=20 + step), _rand(5, 2, seed=30 + step)
        losses = []
        for m, opt in ((eager, opt_e), (gmod, opt_g)):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            losses.append(loss)
            for p in m.parameters():
                assert p.grad is not None
        assert type(losses[1].grad_fn).__name__ == "MeanBackward0"
        assert calls == []                          # the graph ran, not Linear.forward
        _close(losses[0], losses[1])
        for pe, pg in zip(eager.parameters(), graphed.parameters()):
            _close(pe.grad, pg.grad)
        opt_e.step()
        opt_g.step()
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        _close(pe, pg)
    # eval mode was not graphed: it runs the original forward
    graphed.eval()
    x = _rand(2, 3, seed=40)
    _close(graphed(x), eager.eval()(x))


def test_make_graphed_callables_function_and_input_grads():
    w = _rand(3, 2, seed=1).requires_grad_()

    def fn(a, b):
        return (a @ w).relu() * b.sum(), a.mean()

    a0 = _rand(4, 3, seed=2).requires_grad_()
    b0 = _rand(2, seed=3)                           # no grad: its grad slot is None
    gfn = ember.cuda.make_graphed_callables(fn, (a0, b0), num_warmup_iters=1, allow_unused_input=True)
    a = _rand(4, 3, seed=4).requires_grad_()
    b = _rand(2, seed=5)
    out, m = gfn(a, b)
    assert type(out.grad_fn).__name__ == "GraphedBackward"
    (out.sum() + m).backward()
    ga = a.grad.clone()
    assert w.grad is None
    a_e = a.detach().clone().requires_grad_()
    out_e, m_e = fn(a_e, b)
    _close(out, out_e)
    _close(m, m_e)
    # fn's parameter w is not an input of the graphed function (only Modules' parameters are):
    # the graphed path gives grads for the user args only
    (out_e.sum() + m_e).backward()
    _close(ga, a_e.grad)


def test_make_graphed_callables_tuple_shares_one_pool():
    # torch's partial-network example: several callables graphed together, run in capture order
    ember.manual_seed(3)
    m1, m2 = nn.Linear(3, 4).cuda(), nn.Linear(4, 2).cuda()
    ember.manual_seed(3)
    e1, e2 = nn.Linear(3, 4).cuda(), nn.Linear(4, 2).cuda()
    x = _rand(2, 3, seed=50)
    h = _rand(2, 4, seed=51).requires_grad_()
    g1, g2 = ember.cuda.make_graphed_callables((m1, m2), ((x,), (h,)), num_warmup_iters=1)
    params = list(m1.parameters()) + list(m2.parameters())
    ref_params = list(e1.parameters()) + list(e2.parameters())
    for seed in (52, 53):
        for p in params + ref_params:
            p.grad = None
        xs = _rand(2, 3, seed=seed)
        out = g2(g1(xs).relu())
        out.pow(2).sum().backward()
        ref = e2(e1(xs).relu())
        ref.pow(2).sum().backward()
        _close(out, ref)
        for pg, pe in zip(params, ref_params):
            _close(pg.grad, pe.grad)


def test_whole_network_capture_with_optimizer_step():
    # torch's "whole network capture" example: forward, backward and SGD's step in one graph
    def model():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).cuda()
    m, e = model(), model()
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    opt_e = ember.optim.SGD(e.parameters(), lr=0.1, momentum=0.9)
    static_x, static_y = _rand(5, 3, seed=70), _rand(5, 2, seed=71)
    s = ember.cuda.Stream()
    s.wait_stream(ember.cuda.current_stream())
    with ember.cuda.stream(s):                     # warm up on a side stream (momentum buffers)
        opt.zero_grad(set_to_none=True)
        ((m(static_x) - static_y) ** 2).mean().backward()
        opt.step()
    ember.cuda.current_stream().wait_stream(s)
    opt_e.zero_grad(set_to_none=True)
    ((e(static_x) - static_y) ** 2).mean().backward()
    opt_e.step()
    g = ember.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with ember.cuda.graph(g):
        static_loss = ((m(static_x) - static_y) ** 2).mean()
        static_loss.backward()
        opt.step()
    for step in range(3):
        x, y = _rand(5, 3, seed=72 + step), _rand(5, 2, seed=75 + step)
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        opt_e.zero_grad(set_to_none=True)
        loss = ((e(x) - y) ** 2).mean()
        loss.backward()
        opt_e.step()
        _close(static_loss, loss)
        for pg, pe in zip(m.parameters(), e.parameters()):
            _close(pg, pe)
            _close(pg.grad, pe.grad)


def test_graphed_param_grads_alias_the_static_buffers():
    # As in torch 2.13 (pytorch/pytorch#181723): the backward returns the graph's static grad
    # buffers, AccumulateGrad steals them, so a parameter's first .grad IS a static buffer that
    # the next backward replay overwrites. Accumulating over several backwards without clearing
    # .grad therefore differs from eager; the workaround (a hook that clones the grad)
    # gives eager's numbers.
    ember.manual_seed(4)
    m = nn.Linear(3, 2).cuda()
    ember.manual_seed(4)
    e = nn.Linear(3, 2).cuda()
    gm = ember.cuda.make_graphed_callables(m, (_rand(2, 3, seed=60),), num_warmup_iters=1)
    gm(_rand(2, 3, seed=61)).sum().backward()
    ptr = m.weight.grad.data_ptr()
    m.weight.grad = None
    gm(_rand(2, 3, seed=62)).sum().backward()
    assert m.weight.grad.data_ptr() == ptr          # the same static buffer again
    for p in m.parameters():
        p.grad = None
        p.register_hook(lambda g: g.clone())
    for seed in (63, 64):                           # accumulate two backwards
        xs = _rand(2, 3, seed=seed)
        gm(xs).pow(2).sum().backward()
        e(xs).pow(2).sum().backward()
    for pg, pe in zip(m.parameters(), e.parameters()):
        _close(pg.grad, pe.grad)


def test_make_graphed_callables_checks():
    with pytest.raises(AssertionError, match="sample_args for each callable must contain only Tensors"):
        ember.cuda.make_graphed_callables(lambda a, n: a * n, (_rand(2), 3))
    m = _model(1)
    m.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="Modules must not have hooks registered"):
        ember.cuda.make_graphed_callables(m, (_rand(1, 3),))


def test_module_level_warnings_are_clean():
    # capture on a side stream and replay emits no warning of ember's own
    x = _rand(2, seed=6)
    g = ember.cuda.CUDAGraph()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.cuda.graph(g):
            y = x * 2
        g.replay()
    _close(y, x * 2)
