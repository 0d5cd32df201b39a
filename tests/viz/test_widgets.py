"""ember.viz's four widgets: each measures real calls, draws, and writes a non-empty SVG (text kept as
text) with the expected labels; PNG by extension. No timing assertions: only what was measured
(which layers, which ops) and what was drawn."""
import html
import re
import sys

import pytest

import ember

pytest.importorskip("matplotlib", reason="ember.viz's widgets need matplotlib: pip install matplotlib "
                                         "(or pip install ember[viz])")
from ember import viz  # noqa: E402


def svg_texts(path):
    text = path.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", text)]


def _has(texts, s):
    return any(s in t for t in texts)


@pytest.fixture
def mm():
    x = ember.randn(8, 16, requires_grad=True)
    w = ember.randn(16, 4, requires_grad=True)
    return x, w


def test_dispatcher_trace_plot(tmp_path, mm):
    x, w = mm
    path = tmp_path / "trace.svg"
    fig = viz.dispatcher_trace_plot(lambda: x @ w, path, repeat=3, warmup=1)
    texts = svg_texts(path)
    for label in ("autograd on", "autograd off", "autocast on", "autocast off", "Python", "dispatch",
                  "AutogradCPU", "AutocastCPU", "CPU", "layer"):
        assert _has(texts, label), label
    assert _has(texts, "µs")
    data = fig.ember_data
    assert {"Python", "dispatch", "AutogradCPU", "AutocastCPU", "CPU"} <= set(data["layers"])
    assert len(data["us"]) == 4
    off = data["us"]["autograd on\nautocast off"]
    assert off.get("AutocastCPU", 0.0) == 0.0  # autocast off: no Autocast layer ran
    assert all(v >= 0 for c in data["us"].values() for v in c.values())


def test_autograd_graph_plot(tmp_path, mm):
    x, w = mm
    b = ember.zeros(4, requires_grad=True)

    def expr():
        h = (x @ w + b).relu()
        return (h * h.sigmoid()).sum()
    path = tmp_path / "graph.svg"
    fig = viz.autograd_graph_plot(expr, path, params={"x": x, "w": w, "b": b})
    texts = svg_texts(path)
    for label in ("#1", "mm", "relu", "sigmoid", "sum", "MmBackward0", "ReluBackward0", "SigmoidBackward0",
                  "MulBackward0", "SumBackward0", "AccumulateGrad", "→ w.grad", "saved: mat2, self",
                  "saved: result", "forward", "backward", "grad_output"):
        assert _has(texts, label), label
    data = fig.ember_data
    assert [op for _, op in data["forward"]] == ["mm", "add", "relu", "sigmoid", "mul", "sum"]
    assert [s for s, _ in data["forward"]] == [1, 2, 3, 4, 5, 6]
    assert data["backward"].count("AccumulateGrad") == 3
    assert data["saved"]["ReluBackward0"] == ["result"]


def test_autograd_graph_plot_needs_a_graph():
    with pytest.raises(RuntimeError, match="must return a tensor with a grad_fn"):
        viz.autograd_graph_plot(lambda: ember.ones(3) * 2)


def test_python_tax_timeline(tmp_path, mm):
    x, w = mm

    def step():
        return (x @ w).relu().sum()
    path = tmp_path / "tax.svg"
    fig = viz.python_tax_timeline(step, path, backend="aot_eager", repeat=3, warmup=2)
    texts = svg_texts(path)
    for label in ("eager", "compiled (aot_eager)", "framework overhead", "kernel", "Python / outside the dispatcher",
                  "matmul", "relu", "sum", "µs since the call began"):
        assert _has(texts, label), label
    eager = fig.ember_data["eager"]
    assert [name for name, *_ in eager["ops"]] == ["aten::matmul", "aten::relu", "aten::sum"]
    starts = [s for _, s, _, _ in eager["ops"]]
    assert starts == sorted(starts) and all(fw >= 0 and k >= 0 for _, _, fw, k in eager["ops"])
    assert fig.ember_data["compiled (aot_eager)"]["ops"]  # aot_eager replays the graph's ops through the dispatcher


def test_python_tax_timeline_eager_only_png(tmp_path, mm):
    x, w = mm
    path = tmp_path / "tax.png"
    fig = viz.python_tax_timeline(lambda: (x * 2).exp(), path, compiled=False, repeat=2, warmup=1)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
    assert list(fig.ember_data) == ["eager"]


def test_overhead_curve(tmp_path):
    path = tmp_path / "curve.svg"
    fig = viz.overhead_curve("mul", path, sizes=(1, 256, 65536), min_run_time=0.005)
    texts = svg_texts(path)
    for label in ("ember: framework", "ember: kernel", "torch: framework", "torch: kernel", "elements per input tensor",
                  "µs per call", "mul"):
        assert _has(texts, label), label
    for name in ("ember", "torch"):
        c = fig.ember_data[name]
        assert c["numel"] == [1, 256, 65536]
        assert len(c["kernel_us"]) == len(c["framework_us"]) == 3
        assert all(v >= 0 for v in c["kernel_us"] + c["framework_us"])
        if c["crossover"] is not None:
            assert 1 <= c["crossover"] <= 65536
            assert _has(texts, f"{name} crossover")


def test_overhead_curve_matmul_ember_only(tmp_path):
    fig = viz.overhead_curve("matmul", tmp_path / "mm.svg", sizes=(16, 4096), with_torch=False, min_run_time=0.005)
    assert list(fig.ember_data) == ["ember"] and fig.ember_data["ember"]["numel"] == [16, 4096]


def test_crossover_interpolates():
    from ember.viz.widgets import _crossover
    assert _crossover([1, 100], [2.0, 2.0], [1.0, 3.0]) == pytest.approx(10.0)
    assert _crossover([1, 100], [2.0, 2.0], [1.0, 1.5]) is None


def test_missing_matplotlib_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=re.escape("pip install matplotlib (or pip install ember[viz])")):
        viz.dispatcher_trace_plot(lambda: ember.ones(2) + 1, tmp_path / "x.svg", repeat=1, warmup=0)
