"""ember.profiler against torch.profiler on one MLP train step: event names, nesting and counts,
the table's layout, the Chrome trace, memory records, schedules and record_function."""
import json
import os
import warnings
from collections import Counter

import pytest
import torch

import ember
from profiler_common import flat, mlp, tree

# probed at collection, as tests/cuda does: the simulator must come up before numba is loaded
_HAS_CUDA = ember.cuda.is_available()

# Ops torch's CPU kernels call through its dispatcher where ember's NumPy kernels do the same work
# in-line (so no event): (parent event, child event) pairs pruned, subtree and all, from torch's tree.
TORCH_KERNEL_INTERNALS = {
    ("aten::transpose", "aten::as_strided"): "torch's view kernels restride through as_strided",
    ("aten::addmm", "aten::expand"): "torch's addmm CPU kernel expands and copies the bias",
    ("aten::addmm", "aten::copy_"): "same",
    ("aten::addmm", "aten::resolve_conj"): "torch's gemm resolves conjugate views through ops",
    ("aten::mm", "aten::resolve_conj"): "same",
    ("aten::relu", "aten::clamp_min"): "torch's relu is clamp_min(0); ember's relu kernel is direct",
    ("aten::mse_loss", "aten::resize_"): "torch's mse_loss kernel: out buffer, elementwise loss, mean",
    ("aten::mse_loss", "aten::empty"): "same",
    ("aten::mse_loss", "aten::mean"): "same",
    ("aten::ones_like", "aten::empty_like"): "ember's ones_like calls empty directly",
    ("aten::sum", "aten::fill_"): "torch's sum kernel zero-fills its output through fill_",
    (None, "aten::broadcast_tensors"): "torch's Python F.mse_loss calls torch.broadcast_tensors first",
}
# the same on ember's side
EMBER_KERNEL_INTERNALS = {
    ("aten::ones_like", "aten::empty"): "ember's ones_like calls empty, torch's empty_like (pruned above)",
}
# Events whose children differ because ember's formula or engine does the work another way:
# (event, torch's children, ember's children)
REPLACED = [
    ("MseLossBackward0", ["aten::mse_loss_backward"], ["aten::sub", "aten::mul", "aten::mul", "aten::div"],
     "ember's mse_loss backward formula is written with pointwise ops, torch's is one kernel"),
    ("torch::autograd::AccumulateGrad", ["aten::detach"], ["aten::clone"],
     "torch's AccumulateGrad steals a fresh gradient (detach); ember stores a clone"),
    ("Optimizer.step#SGD.step", ["aten::add_"] * 4, [],
     "ember's SGD updates plain CPU float arrays in place (sgd._sgd_arrays) without dispatch"),
]
# ember's sum_to ends in aten::reshape (which calls aten::view) where torch calls aten::view: an
# ember reshape whose only child is view counts as that view


def _normalize_torch(t, parent=None):
    out = []
    for name, kids in t:
        if (parent, name) in TORCH_KERNEL_INTERNALS:
            continue
        out.append((name, _normalize_torch(kids, name)))
    return out


def _normalize_ember(t, parent=None):
    out = []
    for name, kids in t:
        if (parent, name) in EMBER_KERNEL_INTERNALS:
            continue
        kids = _normalize_ember(kids, name)
        if name == "aten::reshape" and [k[0] for k in kids] == ["aten::view"]:
            name, kids = kids[0]
        out.append((name, kids))
    return out


def _replace(t, lib):
    out = []
    for name, kids in t:
        for ev, tk, ek, _ in REPLACED:
            if name == ev and [k[0] for k in kids] == (tk if lib == "torch" else ek):
                kids = [("<replaced>", [])]
        out.append((name, _replace(kids, lib)))
    return out


def _profile(lib, **kw):
    step = mlp(lib)
    step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as p:
            step()
    return p


@pytest.fixture(scope="module")
def profs():
    kw = dict(record_shapes=True, profile_memory=True)
    return _profile(torch, **kw), _profile(ember, **kw)


def test_event_tree_matches_torch(profs):
    tp, ep = profs
    t = _replace(_normalize_torch(tree(tp.events())), "torch")
    e = _replace(_normalize_ember(tree(ep.events())), "ember")
    assert flat(e) == flat(t)


def test_autograd_and_annotation_counts(profs):
    tp, ep = profs

    def counts(p):
        return Counter(e.name for e in p.events()
                       if e.name.startswith(("autograd::", "Optimizer.", "torch::autograd"))
                       or e.name.endswith("Backward0"))
    c = counts(ep)
    assert c == counts(tp)
    assert c["autograd::engine::evaluate_function: AddmmBackward0"] == 2
    assert c["Optimizer.step#SGD.step"] == 1 and c["Optimizer.zero_grad#SGD.zero_grad"] == 1


def test_key_averages_counts(profs):
    tp, ep = profs
    tk = {e.key: e.count for e in tp.key_averages()}
    ek = {e.key: e.count for e in ep.key_averages()}
    for name in ("aten::linear", "aten::addmm", "aten::mm", "aten::t", "aten::transpose", "aten::relu",
                 "aten::threshold_backward", "aten::mse_loss", "aten::ones_like", "aten::view",
                 "TBackward0", "ReluBackward0", "AddmmBackward0", "MseLossBackward0"):
        assert ek[name] == tk[name], name
    # the shapes grouping of torch
    tg = {(e.key, str(e.input_shapes)): e.count for e in tp.key_averages(group_by_input_shape=True)}
    eg = {(e.key, str(e.input_shapes)): e.count for e in ep.key_averages(group_by_input_shape=True)}
    for k in [k for k in tg if k[0] in ("aten::linear", "aten::addmm", "aten::relu", "aten::mm")]:
        assert eg.get(k) == tg[k], k


def _layout(table):
    lines = table.splitlines()
    return lines[0], lines[1], lines[2], lines[-2], lines[-1].split(":")[0]


@pytest.mark.parametrize("kw", [dict(), dict(sort_by="cpu_time_total", row_limit=5),
                                dict(sort_by="self_cpu_time_total", row_limit=3, max_name_column_width=30)])
def test_table_layout(profs, kw):
    tp, ep = profs
    tt, et = tp.key_averages().table(**kw), ep.key_averages().table(**kw)
    assert _layout(et) == _layout(tt)
    assert len(et.splitlines()) == len(tt.splitlines()) or "row_limit" not in kw
    assert "Self CPU time total: " in et and et.endswith("\n")
    # with input shapes: the extra column, same width rule
    ts = tp.key_averages(group_by_input_shape=True).table(row_limit=4)
    es = ep.key_averages(group_by_input_shape=True).table(row_limit=4)
    assert _layout(es)[:3] == _layout(ts)[:3] or es.splitlines()[1].split() == ts.splitlines()[1].split()


def test_table_without_memory_columns():
    tp, ep = _profile(torch), _profile(ember)
    assert ep.key_averages().table(row_limit=2).splitlines()[1] == tp.key_averages().table(row_limit=2).splitlines()[1]
    assert "CPU Mem" not in ep.key_averages().table()


def test_chrome_trace(profs, tmp_path):
    _, ep = profs
    path = str(tmp_path / "trace.json")
    ep.export_chrome_trace(path)
    with open(path) as f:
        data = json.load(f)
    evs = data["traceEvents"]
    spans = [e for e in evs if e["ph"] == "X"]
    names = {e["name"] for e in spans}
    assert {"aten::linear", "aten::addmm", "autograd::engine::evaluate_function: AddmmBackward0",
            "Optimizer.step#SGD.step"} <= names
    for e in spans:
        assert isinstance(e["ts"], float) and e["dur"] >= 0 and "pid" in e and "tid" in e and "args" in e
        assert e["cat"] in ("cpu_op", "user_annotation")
    assert any(e["ph"] == "i" and e["name"] == "[memory]" for e in evs)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in evs)
    # children lie inside their parents
    by_id = {e["args"]["External id"]: e for e in spans}
    for ev in ep.events():
        if ev.cpu_parent is not None and ev.name != "[memory]":
            c, p = by_id[ev.id], by_id[ev.cpu_parent.id]
            assert p["ts"] <= c["ts"] and c["ts"] + c["dur"] <= p["ts"] + p["dur"] + 1e-3


def test_memory(profs):
    tp, ep = profs
    # bytes an op allocates, as torch counts them (its output buffers)
    for name in ("aten::linear", "aten::addmm", "aten::relu", "aten::mm", "aten::threshold_backward"):
        t = [e.cpu_memory_usage for e in tp.events() if e.name == name]
        e = [e.cpu_memory_usage for e in ep.events() if e.name == name]
        assert e == t, name
    # the records add up: each one's running total is the sum so far, and every allocation freed
    # in the window shows as a negative record
    recs = ep.profiler._collector.mem_records
    total = 0
    for _, nbytes, running, *_ in recs:
        total += nbytes
        assert running == total
    assert sum(e.cpu_memory_usage for e in ep.events() if e.cpu_parent is None) == total
    # an event's memory is its own plus its children's
    for e in ep.events():
        assert e.self_cpu_memory_usage == e.cpu_memory_usage - sum(c.cpu_memory_usage for c in e.cpu_children)


def test_memory_frees_balance():
    x = ember.randn(100, 100)
    with ember.profiler.profile(profile_memory=True) as p:
        y = x * 2
        del y
    mem = [e for e in p.events() if e.name == "[memory]"]
    assert [e.cpu_memory_usage for e in mem] == [-40000]
    assert [e.cpu_memory_usage for e in p.events() if e.name == "aten::mul"] == [40000]


def _run_schedule(lib, sched, steps):
    calls = []

    def ready(p):
        calls.append((p.step_num, Counter(e.name for e in p.events()),
                      sorted(e.trace_name for e in p.events() if e.name == "ProfilerStep*")))
    a = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], schedule=sched,
                                  on_trace_ready=ready) as p:
            for _ in range(steps):
                a + a
                p.step()
    return calls


@pytest.mark.parametrize("args,steps", [((1, 1, 2, 0, 0), 8), ((1, 1, 2, 2, 0), 12), ((0, 1, 1, 1, 2), 6),
                                        ((2, 0, 1, 0, 1), 7), ((1, 1, 3, 1, 0), 4)])
def test_schedule(args, steps):
    wait, warmup, active, repeat, skip = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip)
        es = ember.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip)
    assert [es(i).name for i in range(20)] == [ts(i).name for i in range(20)]
    assert _run_schedule(ember, es, steps) == _run_schedule(torch, ts, steps)


def test_schedule_errors():
    with pytest.raises(AssertionError) as te:
        torch.profiler.schedule(wait=0, warmup=0, active=0)
    with pytest.raises(AssertionError) as ee:
        ember.profiler.schedule(wait=0, warmup=0, active=0)
    assert str(ee.value) == str(te.value)
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        ember.profiler.schedule(wait=0, warmup=0, active=1)


def test_no_schedule_calls_on_trace_ready_once():
    calls = []
    with ember.profiler.profile(on_trace_ready=calls.append) as p:
        p.step()
        p.step()
    assert calls == [p]


def test_start_stop():
    p = ember.profiler.profile()
    p.start()
    ember.ones(3).add(1)
    p.stop()
    assert [e.name for e in p.events()] == ["aten::ones", "aten::empty", "aten::fill_", "aten::add"] or \
        "aten::add" in [e.name for e in p.events()]


def test_record_function():
    @ember.profiler.record_function("decorated")
    def f(a):
        return a * 2

    for lib, fn in ((ember, f),):
        a = lib.ones(2)
        with lib.profiler.profile() as p:
            with lib.profiler.record_function("outer") as r:
                fn(a)
            assert isinstance(r, lib.profiler.record_function)
        t = tree(p.events())
        assert t == [("outer", [("decorated", [("aten::mul", [])])])]
        kinds = {e.name: e.is_user_annotation for e in p.events()}
        assert kinds == {"outer": True, "decorated": True, "aten::mul": False}
    # off the profiler: plain calls
    assert f(ember.ones(1)).tolist() == [2.0]


def test_record_function_against_torch():
    out = {}
    for lib in (torch, ember):
        a = lib.ones(2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU]) as p:
                with lib.profiler.record_function("my_block"):
                    a.add(a)
                    a.mul(a)
        out[lib.__name__] = tree(p.events())
    assert out["ember"] == out["torch"]


def test_autograd_profiler_aliases():
    import ember.autograd.profiler as ap
    assert ember.autograd.profiler is ap
    assert ember.profiler.record_function is ap.record_function
    a = ember.ones(2, requires_grad=True)
    with ap.profile(record_shapes=True) as p:
        (a * 3).sum().backward()
    names = [e.name for e in p.function_events]
    assert "aten::mul" in names and "autograd::engine::evaluate_function: MulBackward0" in names
    assert "Self CPU time total" in p.table()
    assert p.key_averages().table().splitlines()[1].split()[:2] == ["Name", "Self"]


def test_export_stacks(tmp_path):
    p = _profile(ember, with_stack=True)
    path = str(tmp_path / "stacks.txt")
    p.export_stacks(path, "self_cpu_time_total")
    lines = open(path).read().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert any("profiler_common.py" in line for line in lines)
    with pytest.raises(ValueError, match="metric should be one of"):
        p.export_stacks(path, "bogus")


def test_tensorboard_trace_handler(tmp_path):
    d = str(tmp_path / "tb")
    with ember.profiler.profile(on_trace_ready=ember.profiler.tensorboard_trace_handler(d, worker_name="w")):
        ember.ones(2) + 1
    files = os.listdir(d)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")
    with open(os.path.join(d, files[0])) as f:
        assert any(e.get("name") == "aten::add" for e in json.load(f)["traceEvents"])


def test_off_costs_nothing():
    from ember.autograd import engine
    from ember.dispatch import operator
    with ember.profiler.profile():
        pass
    assert operator.observers == [] and engine.node_hook[0] is None


def test_api_names():
    for name in torch.profiler.__all__:
        if name != "ExecutionTraceObserver":
            assert hasattr(ember.profiler, name), name
    assert [a.name for a in ember.profiler.ProfilerAction] == [a.name for a in torch.profiler.ProfilerAction]
    assert ember.profiler.ProfilerActivity.CPU.name == "CPU"


def test_cuda_ops_are_recorded():
    # ops on (simulated) CUDA tensors are events like any other; their kernels' device time shows
    # as torch's CUDA columns (tests/profiler/test_profiler_device.py checks the per-stream tracks)
    if not _HAS_CUDA:
        pytest.skip("needs ember's CUDA backend: install numba (EMBER_CUDA_SIM=1 runs its simulator)")
    a = ember.ones(3, device="cuda")
    with ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CPU,
                                            ember.profiler.ProfilerActivity.CUDA], record_shapes=True) as p:
        a.add(a)
    ev = [e for e in p.events() if e.name == "aten::add"]
    assert len(ev) == 1 and ev[0].input_shapes == [[3], [3], []]
    assert "Self CUDA" in p.key_averages().table()
