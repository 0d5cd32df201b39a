"""ember.fx.symbolic_trace against torch.fx.symbolic_trace on the same programs: node ops, names and
targets, printed graph, generated code (ember's `ember.` for torch's `torch.`), and the traced
module's results equal to eager."""
import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx
from harness import check, same_error


def norm(s):
    return s.replace("ember.", "torch.")


def models(lib):
    F = lib.nn.functional

    class Inner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.nn.Parameter(lib.ones(4) * 2)
            self.register_buffer("shift", lib.arange(4.0))

        def forward(self, h):
            return h * self.scale + self.shift

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)
            self.inner = Inner()
            self.seq = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Linear(4, 4))
            self.p = lib.nn.Parameter(lib.ones(4))

        def forward(self, x, y=2):
            a = self.lin(x) + self.p
            b = lib.relu(a).sum(dim=1, keepdim=True)
            c = F.relu(b) * y
            d = self.inner(a)
            e = self.seq(d)
            f = lib.cat([e, a], 1)
            n = x.shape[0] + x.size(1)
            g = f[:, 1:3] @ lib.ones(2, 2) - 1
            h = 2 * g / (1 + g.abs()) ** 2
            return (c.view(-1), [h, {"k": f.transpose(0, 1)}], n, -h, h > 0, ~(h > 0))

    return M


def trace_both(make, *args):
    torch.manual_seed(0)
    tm = make(torch)()
    ember.manual_seed(0)
    em = make(ember)()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return (torch.fx.symbolic_trace(tm, *args), tm), (ember.fx.symbolic_trace(em, *args), em)


def summary(gm):
    return [(n.op, n.name, n.target if isinstance(n.target, str) else norm(n._pretty_print_target(n.target)),
             len(n.users)) for n in gm.graph.nodes]


def compare_results(e, t):
    if isinstance(t, torch.Tensor):
        check(e, t, atol=1e-5, rtol=1e-5)
    elif isinstance(t, (list, tuple)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            compare_results(a, b)
    elif isinstance(t, dict):
        assert list(e) == list(t)
        for k in t:
            compare_results(e[k], t[k])
    else:
        assert e == t


def test_module_trace_matches_torch():
    (tgm, tm), (egm, em) = trace_both(models)
    assert summary(egm) == summary(tgm)
    assert norm(str(egm.graph)) == str(tgm.graph)
    assert norm(egm.code) == tgm.code
    assert type(egm).__name__ == "M"
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    compare_results(egm(ember.tensor(x)), tgm(torch.tensor(x)))
    compare_results(em(ember.tensor(x)), tm(torch.tensor(x)))   # eager equals the traced module
    compare_results(egm(ember.tensor(x), 5), tgm(torch.tensor(x), 5))
    # the leaf modules and parameters are the root's own objects
    assert egm.lin is em.lin and egm.p is em.p
    assert egm.inner.scale is em.inner.scale
    # call_module nodes carry the module stack
    lin = [n for n in egm.graph.nodes if n.op == "call_module"][0]
    assert list(lin.meta["nn_module_stack"]) == ["lin"]


def test_function_trace_tuple_unpack_constants_and_varargs():
    def make(lib):
        def f(x, y, *rest):
            a, b = x.split(2)
            c = lib.tensor([1.0, 2.0])
            return lib.add(a + b, y, alpha=2) * c, lib.nn.functional.softmax(x, dim=0), rest
        return f
    tgm, egm = torch.fx.symbolic_trace(make(torch)), ember.fx.symbolic_trace(make(ember))
    assert summary(egm) == summary(tgm)
    assert norm(egm.code) == tgm.code
    assert type(egm).__name__ == "f"
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    y = np.ones(2, dtype=np.float32)
    compare_results(egm(ember.tensor(x), ember.tensor(y), 7), tgm(torch.tensor(x), torch.tensor(y), 7))


def test_concrete_args():
    def make(lib):
        def f(x, flag=True):
            if flag:
                return x * 2
            return x - 1
        return f
    egm = ember.fx.symbolic_trace(make(ember), concrete_args={"flag": False})
    tgm = torch.fx.symbolic_trace(make(torch), concrete_args={"flag": False})
    x = np.arange(3, dtype=np.float32)
    compare_results(egm(ember.tensor(x), False), tgm(torch.tensor(x), False))
    assert [n.name for n in egm.graph.nodes if n.op == "placeholder"] == ["x", "flag_1"]
    assert [n.op for n in egm.graph.nodes if n.op != "call_function" or n.target is not None][0] == "placeholder"
    assert any(n.name == "sub" for n in egm.graph.nodes) and not any(n.name == "mul" for n in egm.graph.nodes)


def test_trace_errors():
    def control_flow(lib):
        def f(x):
            if x.sum() > 0:
                return x
            return -x
        lib.fx.symbolic_trace(f)
    same_error(control_flow, exc=ember.fx.proxy.TraceError)

    def iterate(lib):
        def f(x):
            return [t for t in x]
        lib.fx.symbolic_trace(f)
    same_error(iterate, exc=ember.fx.proxy.TraceError)

    def length(lib):
        lib.fx.symbolic_trace(lambda x: len(x))
    same_error(length)

    def too_few(lib):
        gm = lib.fx.symbolic_trace(lambda x, y: x + y)
        gm(lib.ones(1))
    same_error(too_few)

    def bad_arg(lib):
        lib.fx.symbolic_trace(lambda x: x + object())
    same_error(bad_arg, match="argument of type: <class 'object'>")


def _helper(x, k):
    return x * k + len(x.shape) if isinstance(x, ember.Tensor) else None


ember.fx.wrap("_helper")


def test_wrap_records_call_function():
    gm = ember.fx.symbolic_trace(lambda x: _helper(x, 3) + 1)
    node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
    assert node.target.__name__ == "_helper" and node.meta.get("is_wrapped")
    assert "_helper(x, 3)" in gm.code
    x = ember.ones(2)
    np.testing.assert_allclose(gm(x).numpy(), (x * 3 + 1 + 1).numpy())


def test_custom_leaf_and_stack_traces():
    class Block(ember.nn.Module):
        def forward(self, x):
            return x.relu() + 1

    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x) * 2

    class LeafTracer(ember.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)

    g = LeafTracer().trace(Net())
    assert [n.op for n in g.nodes] == ["placeholder", "call_module", "call_function", "output"]
    g = ember.fx.Tracer().trace(Net())
    assert [n.op for n in g.nodes] == ["placeholder", "call_method", "call_function", "call_function", "output"]
    tracer = ember.fx.Tracer()
    tracer.record_stack_traces = True
    g = tracer.trace(Net())
    relu = [n for n in g.nodes if n.op == "call_method"][0]
    assert f"{__file__}" in relu.meta["stack_trace"] and "return x.relu() + 1" in relu.meta["stack_trace"]
    gm = ember.fx.GraphModule(tracer.root, g)
    text = gm.print_readable(print_output=False)
    assert f"# File: {__file__}:" in text and "code: return x.relu() + 1" in text


@pytest.mark.parametrize("name", ["Linear", "ReLU", "Conv2d", "Dropout", "LayerNorm"])
def test_ember_nn_modules_are_leaves(name):
    args = {"Linear": (2, 2), "Conv2d": (1, 1, 1), "LayerNorm": (2,)}.get(name, ())
    mod = getattr(ember.nn, name)(*args)
    assert ember.fx.Tracer().is_leaf_module(mod, "")
    assert not ember.fx.Tracer().is_leaf_module(ember.nn.Sequential(mod), "")


def test_functional_calls_recorded_like_torch():
    def make(lib):
        F = lib.nn.functional

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.ones(4, 3) / 3)

            def forward(self, x, t):
                return (F.dropout(x, 0.2, self.training), F.softmax(x, dim=-1), F.mse_loss(x, t),
                        F.layer_norm(x, (3,)), F.gelu(x), F.cross_entropy(x, lib.tensor([0, 2])),
                        F.relu(x, inplace=False), F.linear(x, self.w).sum())
        m = M()
        m.eval()
        return m
    tgm, egm = torch.fx.symbolic_trace(make(torch)), ember.fx.symbolic_trace(make(ember))
    # torch's F.linear and F.gelu are C++ functions (torch._C._nn.linear); ember's live in ember.nn.functional
    tcode = tgm.code.replace("torch._C._nn.", "torch.nn.functional.")
    assert norm(egm.code) == tcode
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    t = np.ones((2, 3), np.float32)
    compare_results(egm(ember.tensor(x), ember.tensor(t)), tgm(torch.tensor(x), torch.tensor(t)))
