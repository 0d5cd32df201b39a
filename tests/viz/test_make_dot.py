"""ember.viz.make_dot against torchviz.make_dot on the same graphs built in ember and in torch: the
same node labels and colours, the same edges (node ids differ, so graphs are compared up to them)."""
import re
import sys

import pytest
import torch

import ember
from viz_common import assert_same_graph, parse

pytest.importorskip("graphviz", reason="make_dot needs graphviz: pip install graphviz (or ember[viz])")
torchviz = pytest.importorskip("torchviz", reason="the oracle is torchviz: pip install torchviz")
from ember.viz import make_dot  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torchviz imports distutils


def _same(build, **kw):
    ey, ep = build(ember)
    ty, tp = build(torch)
    e, t = make_dot(ey, ep, **kw), torchviz.make_dot(ty, tp, **kw)
    assert_same_graph(e, t)
    return e, t


def mlp(lib, input_grad=False):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    x, y = lib.randn(5, 4, requires_grad=input_grad), lib.randn(5, 2)
    loss = lib.nn.functional.mse_loss(model(x), y)
    return loss, dict(model.named_parameters())


def mlp_input_grad(lib):
    return mlp(lib, input_grad=True)


def shared_input(lib):
    x = lib.randn(3, 4, requires_grad=True)
    w = lib.randn(4, requires_grad=True)
    out = (x * x + x.exp() * w).tanh() - lib.sigmoid(x).pow(3)
    return out, {"x": x, "w": w}


def deep_mlp_with_shared_weight(lib):
    lib.manual_seed(0)
    lin = lib.nn.Linear(6, 6)
    h = lib.randn(2, 6, requires_grad=True)
    for _ in range(3):  # the same Linear three times: one AccumulateGrad per parameter, many edges
        h = lib.relu(lin(h))
    return h.log_softmax(1).max(), dict(lin.named_parameters())


@pytest.mark.parametrize("build", [mlp, mlp_input_grad, shared_input, deep_mlp_with_shared_weight])
@pytest.mark.parametrize("kw", [{}, {"show_saved": True}], ids=["plain", "show_saved"])
def test_graph_matches_torchviz(build, kw):
    # (with show_saved: ember's nodes save an input only when the gradient that reads it is needed,
    # as PyTorch's generated code does, so an MLP's first AddmmBackward0 shows no mat2)
    e, _ = _same(build, **kw)
    nodes, edges = parse(e)
    assert any(a.get("fillcolor") == "lightblue" for a in nodes.values())
    if kw:
        assert any(a.get("fillcolor") == "orange" for a in nodes.values())


def test_mlp_parameter_boxes():
    e, _ = _same(mlp)
    labels = sorted(a["label"] for a in parse(e)[0].values() if a.get("fillcolor") == "lightblue")
    assert labels == ["0.bias\n (8)", "0.weight\n (8, 4)", "2.bias\n (2)", "2.weight\n (2, 8)"]
    names = {a["label"] for a in parse(e)[0].values() if "fillcolor" not in a}
    assert {"AddmmBackward0", "ReluBackward0", "MseLossBackward0", "AccumulateGrad", "TBackward0"} <= names


def test_show_attrs_matches_torchviz():
    # nodes whose saved values ember and torch name alike
    _same(shared_input, show_attrs=True)
    _same(shared_input, show_attrs=True, show_saved=True)
    _same(shared_input, show_attrs=True, max_attr_chars=4)


# Saved values that ember's nodes name differently from torch's (reported to the autograd owner):
# torch saves SymInt sizes under `*_sym_sizes` / `*_sym_numel`, ember under `*_sizes` / `*_numel`.
_SYM_RENAMES = ((re.compile(r"_sym_(sizes|numel|strides)$"), r"_\1"),)


def _attr_table(label):
    name, _, rest = label.partition("\n")
    rows = rest.split("\n")[1:] if rest else []
    table = {}
    for row in rows:
        k, _, v = row.partition(":")
        k = k.strip()
        for pat, rep in _SYM_RENAMES:
            k = pat.sub(rep, k)
        table[k] = v.strip()
    return name, table


def test_show_attrs_sizes_up_to_sym_names():
    def build(lib):
        x = lib.randn(4, 3, requires_grad=True)
        return x.view(12).reshape(3, 4).transpose(0, 1)[1:].mean(0).sum(), {"x": x}
    ey, ep = build(ember)
    ty, tp = build(torch)
    e = make_dot(ey, ep, show_attrs=True, max_attr_chars=12)
    t = torchviz.make_dot(ty, tp, show_attrs=True, max_attr_chars=12)
    en = sorted((_attr_table(a.get("label", "")) for a in parse(e)[0].values() if "fillcolor" not in a), key=repr)
    tn = sorted((_attr_table(a.get("label", "")) for a in parse(t)[0].values() if "fillcolor" not in a), key=repr)
    assert [n for n, _ in en] == [n for n, _ in tn]
    assert en == tn
    assert any(v.endswith("...") for _, tab in en for v in tab.values())  # SliceBackward0's end truncated


def test_multiple_outputs_and_views():
    def build(lib):
        x = lib.randn(4, 3, requires_grad=True)
        y = x * 2
        return (y[1:], y.sum(0), x.t()), {"x": x}
    e, _ = _same(build)
    colors = sorted(a.get("fillcolor", "") for a in parse(e)[0].values())
    assert colors.count("darkolivegreen1") == 3 and colors.count("darkolivegreen3") == 1  # x is a leaf already drawn


def test_custom_function_saved_tensors():
    def build(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 3 * x * x * g
        x = lib.randn(3, requires_grad=True)
        return Cube.apply(x.sin()).sum(), {"x": x}
    e, _ = _same(build)
    assert "CubeBackward" in {a.get("label") for a in parse(e)[0].values()}


def test_saved_tensor_lists():
    # IndexBackward0 saves its indices: torch returns a tuple, ember a list; both draw indices[0]
    def build(lib):
        x = lib.randn(4, 3, requires_grad=True)
        return x[lib.tensor([0, 2])].sum(), {"x": x}
    e, _ = _same(build, show_saved=True)
    assert any(a.get("label", "").startswith("indices[0]") for a in parse(e)[0].values())


def test_overload_classes_use_torchs_names():
    # ember has one node class per overload variant (LogSoftmaxBackward0_1, ...); the label is torch's
    def build(lib):
        x = lib.randn(2, 5, requires_grad=True)
        return x.log_softmax(1).softmax(0), {"x": x}
    _same(build, show_saved=True)


def test_leaf_without_grad_fn_and_errors():
    e = make_dot(ember.ones(2, 3))
    t = torchviz.make_dot(torch.ones(2, 3))
    assert_same_graph(e, t)
    for lib, fn in ((ember, make_dot), (torch, torchviz.make_dot)):
        with pytest.raises(AssertionError):
            fn(lib.ones(2, requires_grad=True).sum(), params={"x": 1.0})


def test_missing_graphviz_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=re.escape("pip install graphviz (or pip install ember[viz])")):
        make_dot(ember.ones(2, requires_grad=True).sum())
