"""with_modules=True against torch 2.13's profiler: "nn.Module: Linear_0" spans (torch records them
with its Python tracer, so only together with with_stack=True), their names, nesting and counts,
the module entries in the op stacks (group_by_stack_n, export_stacks) and the Chrome trace."""
import json
import warnings
from collections import Counter

import numpy as np
import pytest
import torch
from torch._C._profiler import _ExperimentalConfig

import ember
from ember.nn.modules import module as _module
from profiler_common import mlp


def _net(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(4, 4)
            self.b = lib.nn.Linear(4, 4)
            self.r = lib.nn.ReLU()

        def forward(self, x):
            return self.b(self.r(self.a(self.a(x))))  # the same Linear twice: one name

    m = lib.nn.Sequential(Block(), lib.nn.Tanh(), Block())
    x = lib.tensor(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    return m, x


def _run(lib, fn, **kw):
    fn()
    if lib is torch and kw.get("with_stack"):
        kw.setdefault("experimental_config", _ExperimentalConfig(verbose=True))  # stacks on the ops
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as p:
            fn()
    return p


def _module_tree(events):
    """The module spans only, each under its nearest module ancestor."""
    def up(e):
        p = e.cpu_parent
        while p is not None and not p.name.startswith("nn.Module: "):
            p = p.cpu_parent
        return p
    mods = [e for e in events if e.name.startswith("nn.Module: ")]
    return [(e.name, up(e).name if up(e) is not None else None) for e in mods]


def _both(make, **kw):
    out = []
    for lib in (torch, ember):
        m, x = make(lib)
        out.append(_run(lib, lambda: m(x), **kw))
    return out


@pytest.fixture(scope="module")
def nets():
    return _both(_net, with_modules=True, with_stack=True)


def test_module_names_and_nesting(nets):
    tp, ep = nets
    assert _module_tree(ep.events()) == _module_tree(tp.events())
    names = [n for n, _ in _module_tree(ep.events())]
    assert names[:3] == ["nn.Module: Sequential_0", "nn.Module: Block_0", "nn.Module: Linear_0"]
    assert "nn.Module: Block_1" in names and "nn.Module: Linear_3" in names


def test_module_counts_in_key_averages(nets):
    tp, ep = nets

    def mods(p):
        return {e.key: e.count for e in p.key_averages() if e.key.startswith("nn.Module: ")}
    assert mods(ep) == mods(tp)
    assert mods(ep)["nn.Module: Linear_0"] == 2


def test_ops_inside_their_module(nets):
    tp, ep = nets

    def owners(p):
        out = []
        for e in p.events():
            if e.name in ("aten::addmm", "aten::relu", "aten::tanh"):
                q = e.cpu_parent
                while q is not None and not q.name.startswith("nn.Module: "):
                    q = q.cpu_parent
                out.append((e.name, q.name if q is not None else None))
        return out
    assert owners(ep) == owners(tp)
    for e in ep.events():
        if e.name.startswith("nn.Module: "):
            for c in e.cpu_children:
                assert e.time_range.start <= c.time_range.start and c.time_range.end <= e.time_range.end


def test_module_entries_in_op_stacks(nets):
    tp, ep = nets

    def mstacks(p):
        return [(e.name, [s for s in e.stack if s.startswith("nn.Module: ")])
                for e in p.events() if e.name in ("aten::addmm", "aten::relu", "aten::tanh")]
    got = mstacks(ep)
    assert got == mstacks(tp)
    assert got[0] == ("aten::addmm", ["nn.Module: Linear_0", "nn.Module: Block_0", "nn.Module: Sequential_0"])


def test_group_by_stack_n_splits_by_module():
    # the MLP's two Linear layers: their addmm calls differ only by module, so grouping by the
    # stack keeps them apart in both libraries
    tp, ep = (_run(lib, mlp(lib), with_modules=True, with_stack=True) for lib in (torch, ember))

    def rows(p, n):
        return Counter(e.key for e in p.key_averages(group_by_stack_n=n))
    assert rows(ep, 50)["aten::addmm"] == rows(tp, 50)["aten::addmm"] == 2
    stacks = [e.stack for e in ep.key_averages(group_by_stack_n=1) if e.key == "aten::addmm"]
    assert sorted(s[0] for s in stacks) == ["nn.Module: Linear_0", "nn.Module: Linear_1"]
    table = ep.key_averages(group_by_stack_n=3).table(sort_by="cpu_time_total", row_limit=100)
    assert "Source Location" in table and "nn.Module: Linear_1" in table
    # without with_modules the stacks are the same, and the rows merge
    plain = _run(ember, mlp(ember), with_stack=True)
    assert Counter(e.key for e in plain.key_averages(group_by_stack_n=50))["aten::addmm"] == 1


def test_export_stacks_names_modules(nets, tmp_path):
    _, ep = nets
    path = str(tmp_path / "stacks.txt")
    ep.export_stacks(path, "self_cpu_time_total")
    with open(path) as f:
        lines = f.read().splitlines()
    # torch's format: outermost first, spaces as underscores
    assert any("nn.Module:_Sequential_0;nn.Module:_Block_0;" in ln and "(27):_forward;nn.Module:_Linear_0" in ln
               for ln in lines)
    assert not any("front_door" in ln for ln in lines)  # ember's generated call frames stay out


def test_chrome_trace(nets, tmp_path):
    tp, ep = nets
    traces = []
    for p, name in ((tp, "t.json"), (ep, "e.json")):
        path = str(tmp_path / name)
        p.export_chrome_trace(path)
        with open(path) as f:
            traces.append(json.load(f)["traceEvents"])

    def mods(evs):
        return [(e["cat"], e["name"]) for e in evs if e.get("ph") == "X" and e["name"].startswith("nn.Module: ")]
    assert mods(traces[1]) == mods(traces[0])
    assert mods(traces[1])[0] == ("python_function", "nn.Module: Sequential_0")


def test_needs_with_stack_as_torch():
    tp, ep = _both(_net, with_modules=True)
    assert not [e for e in tp.events() if e.name.startswith("nn.Module: ")]
    assert not [e for e in ep.events() if e.name.startswith("nn.Module: ")]
    assert not _module._global_forward_pre_hooks


def test_names_restart_each_window():
    m, x = _net(ember)
    with ember.profiler.profile(with_modules=True, with_stack=True) as p:
        m[2](x)
    assert _module_tree(p.events())[0][0] == "nn.Module: Block_0"
    with ember.profiler.profile(with_modules=True, with_stack=True) as p:
        m(x)
    assert _module_tree(p.events())[1][0] == "nn.Module: Block_0"


def test_hooks_only_while_recording_and_exception_closes_span():
    class Boom(ember.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = ember.nn.Sequential(ember.nn.Linear(2, 2), Boom())
    with ember.profiler.profile(with_modules=True, with_stack=True) as p:
        with pytest.raises(ValueError, match="boom"):
            m(ember.ones(1, 2))
        ember.ones(1)
    assert not _module._global_forward_pre_hooks and not _module._global_forward_hooks
    evs = p.events()
    assert [n for n, _ in _module_tree(evs)] == ["nn.Module: Sequential_0", "nn.Module: Linear_0",
                                                "nn.Module: Boom_0"]
    ones = [e for e in evs if e.name == "aten::ones"]
    assert ones[-1].cpu_parent is None  # the module spans closed when forward raised
    assert all("nn.Module" not in s for s in ones[-1].stack)
