"""ember.profiler's with_dispatch_layers=True (ember only): one span per dispatch layer inside each
op's span, the compiled-kernel span hook, and that neither changes what torch's profiler shows."""
import json
import warnings
from collections import Counter

import pytest
import torch

import ember
from ember.autograd import profiler as aprof
from ember.dispatch import operator as _op
from profiler_common import flat, mlp, tree
from test_profiler import _normalize_ember, _normalize_torch, _replace


def _profile(lib, **kw):
    step = mlp(lib)
    step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as p:
            step()
    return p


@pytest.fixture(scope="module")
def layered():
    return _profile(ember, with_dispatch_layers=True)


def _strip_layers(t):
    """The tree without the layer spans: their children move up to the op."""
    out = []
    for name, kids in t:
        kids = _strip_layers(kids)
        if ": aten::" in name:
            out.extend(kids)
        else:
            out.append((name, kids))
    return out


def _is_layer(e):
    return e.name.split(": ")[0] in LAYER_NAMES and ": aten::" in e.name


LAYER_NAMES = {"AutogradCPU", "CPU", "ADInplaceOrView", "AutocastCPU", "CompositeImplicitAutograd",
               "CompositeExplicitAutograd", "Python", "Meta"}


def test_off_by_default_no_layer_spans():
    p = _profile(ember)
    assert not [e for e in p.events() if ": aten::" in e.name]
    assert _op.observers == []


def test_op_tree_unchanged_and_matches_torch(layered):
    plain = _profile(ember)
    assert flat(_strip_layers(tree(layered.events()))) == flat(tree(plain.events()))
    # and against torch's profiler, with the normalisation test_profiler uses
    tp = _profile(torch)
    t = _replace(_normalize_torch(tree(tp.events())), "torch")
    e = _replace(_normalize_ember(_strip_layers(tree(layered.events()))), "ember")
    assert flat(e) == flat(t)


def test_layers_nest_inside_their_op(layered):
    evs = layered.events()
    layers = [e for e in evs if ": aten::" in e.name]
    assert layers
    for e in layers:
        layer, op = e.name.split(": ")
        assert layer in LAYER_NAMES, e.name
        # the parent is the op itself or the layer above it for the same op
        p = e.cpu_parent
        assert p is not None and (p.name == op or p.name.endswith(": " + op)), (e.name, p.name)
        assert p.time_range.start <= e.time_range.start and e.time_range.end <= p.time_range.end
    # every aten op passes through at least one layer
    for e in evs:
        if e.name.startswith("aten::"):
            assert any(c.name.endswith(": " + e.name) for c in e.cpu_children), e.name
    names = Counter(e.name for e in layers)
    # forward: linear -> addmm through Autograd to the CPU kernel; backward: no Autograd layer (grad mode off)
    assert names["AutogradCPU: aten::addmm"] == 2 and names["CPU: aten::addmm"] == 2
    assert names["CPU: aten::mm"] == sum(e.name == "aten::mm" for e in evs) >= 2
    assert names["AutogradCPU: aten::mm"] == 0
    chain = [e for e in evs if e.name == "aten::relu"][0]
    assert [c.name for c in chain.cpu_children] == ["AutogradCPU: aten::relu"]
    assert [c.name for c in chain.cpu_children[0].cpu_children] == ["CPU: aten::relu"]


def test_layer_times_add_up(layered):
    # an op's self time is what its layers leave: the front door
    for e in layered.events():
        if e.name.startswith("aten::"):
            inner = sum(c.cpu_time_total for c in e.cpu_children)
            assert inner <= e.cpu_time_total + 1e-6
            assert abs(e.self_cpu_time_total - (e.cpu_time_total - inner)) < 1e-3


def test_autocast_inplace_and_grad_mode_layers():
    a = ember.randn(4, 4, requires_grad=True)
    b = ember.randn(4, 4)
    with ember.profiler.profile(with_dispatch_layers=True) as p:
        with ember.autocast(device_type="cpu", dtype=ember.bfloat16):
            a @ b
        a.detach().add_(1)
        with ember.no_grad():
            ember.mul(a, b)  # the Autograd layer still runs (and records nothing), as in torch
        with ember.inference_mode():
            ember.mul(a, b)
    names = [e.name for e in p.events()]
    assert "AutocastCPU: aten::matmul" in names
    assert "ADInplaceOrView: aten::add_" in names and "CPU: aten::add_" in names
    mul = [e for e in p.events() if e.name == "aten::mul"]
    assert [c.name for c in mul[0].cpu_children] == ["AutogradCPU: aten::mul"]
    assert [c.name for c in mul[1].cpu_children] == ["CPU: aten::mul"]  # inference_mode: no Autograd key


def test_composite_layer_named_by_alias(layered):
    names = {e.name for e in layered.events()}
    # linear is CompositeImplicitAutograd: it runs at the Autograd key, and says what it is
    lin = [e for e in layered.events() if e.name == "aten::linear"][0]
    assert [c.name for c in lin.cpu_children] == ["CompositeImplicitAutograd: aten::linear"]
    assert "CompositeImplicitAutograd: aten::linear" in names


def test_chrome_trace(layered, tmp_path):
    path = str(tmp_path / "trace.json")
    layered.export_chrome_trace(path)
    with open(path) as f:
        data = json.load(f)
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    cats = Counter(e["cat"] for e in spans)
    assert cats["dispatch_layer"] > 0 and cats["cpu_op"] > 0
    by_id = {e["args"]["External id"]: e for e in spans}
    for ev in layered.events():
        if ev.cpu_parent is not None and ev.name != "[memory]":
            c, p = by_id[ev.id], by_id[ev.cpu_parent.id]
            assert p["ts"] <= c["ts"] and c["ts"] + c["dur"] <= p["ts"] + p["dur"] + 1e-3


def test_table_lists_layers(layered):
    t = layered.key_averages().table(sort_by="self_cpu_time_total", row_limit=200)
    assert "CPU: aten::addmm" in t and "AutogradCPU: aten::addmm" in t
    ka = {e.key: e.count for e in layered.key_averages()}
    assert ka["CPU: aten::addmm"] == ka["aten::addmm"] == 2


def test_legacy_profiler_and_observer_cleanup():
    x = ember.randn(3)
    with ember.autograd.profiler.profile(with_dispatch_layers=True) as p:
        x + x
    assert [e.name for e in p.function_events] == ["aten::add", "CPU: aten::add"]
    assert _op.observers == []
    # after the window the entries are plain again: a new window without layers records none
    with ember.autograd.profiler.profile() as p:
        x + x
    assert [e.name for e in p.function_events] == ["aten::add"]


def test_kernel_span_hook():
    # off: a shared no-op context
    assert aprof._kernel_span("k") is aprof._kernel_span("k2")
    with ember.profiler._kernel_span("k"):
        pass
    # on without the switch: nothing recorded (the default trace stays torch's)
    with ember.profiler.profile() as p:
        with ember.profiler.record_function("graph"):
            with ember.profiler._kernel_span("cpp_fused_add_0"):
                pass
    assert [e.name for e in p.events()] == ["graph"]
    with ember.profiler.profile(with_dispatch_layers=True) as p:
        with ember.profiler.record_function("graph"):
            with ember.profiler._kernel_span("cpp_fused_add_0"):
                x = ember.ones(2)
            with ember.profiler._kernel_span("cpp_fused_mul_1"):
                pass
    evs = p.events()
    k = [e for e in evs if e.name == "cpp_fused_add_0"][0]
    assert k.cpu_parent.name == "graph" and k._category == "compiled_kernel"
    assert [c.name for c in k.cpu_children] == ["aten::ones"]
    assert [c.name for c in evs if c.cpu_parent is k.cpu_parent] == ["cpp_fused_add_0", "cpp_fused_mul_1"]
    assert x.sum().item() == 2


def test_exception_in_kernel_closes_spans():
    with ember.profiler.profile(with_dispatch_layers=True) as p:
        with pytest.raises(RuntimeError):
            ember.ones(2) @ ember.ones(3)
    evs = p.events()
    for e in evs:
        assert e.time_range.end >= e.time_range.start
    assert any(e.name.endswith(": aten::matmul") or e.name.endswith(": aten::dot") for e in evs)


@pytest.mark.skipif(not ember.cuda.is_available(),
                    reason="no CUDA device and no simulator: pip install numba (EMBER_CUDA_SIM=1 is set by conftest)")
def test_cuda_layers_hold_the_launch():
    x = ember.randn(8, device="cuda", requires_grad=True)
    y = ember.randn(8, device="cuda")
    x * y  # compile the kernel outside the window
    with ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CPU,
                                            ember.profiler.ProfilerActivity.CUDA], with_dispatch_layers=True) as p:
        x * y
    evs = p.events()
    op = [e for e in evs if e.name == "aten::mul"][0]
    ag = op.cpu_children[0]
    assert ag.name == "AutogradCUDA: aten::mul"
    assert [c.name for c in ag.cpu_children] == ["CUDA: aten::mul"]
    assert [c.name for c in ag.cpu_children[0].cpu_children] == ["cudaLaunchKernel"]
    # the kernel is still the op's (its device time and name), not the layer's
    kern = [e for e in evs if e.device_type != ember.profiler.DeviceType.CPU]
    assert kern and kern[0].name.endswith("(aten::mul)")
