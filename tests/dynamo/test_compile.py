"""ember.compile: graph breaks, guards and recompiles, side effects, footguns, explain, logs.

Every behaviour test runs with backend="eager", "aot_eager" and a custom backend callable that
counts the graphs it is given (torch's way of counting compiles)."""
import logging
import random

import pytest

import ember
import ember._dynamo as dynamo
from ember._dynamo import exc


class Counter:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    @property
    def n(self):
        return len(self.graphs)


BACKENDS = ["eager", "aot_eager", "inductor", "counting"]


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    yield
    dynamo.reset()


def backend_of(name):
    return Counter() if name == "counting" else name


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.stride() == b.stride()
    assert ember.equal(a, b) or (a.isnan() == b.isnan()).all() and ember.allclose(a, b, equal_nan=True)


# ---- torch's documented toy ---------------------------------------------------------------------
def toy(a, b):
    x = a / (ember.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_toy_explain():
    e = dynamo.explain(toy)(ember.randn(10), ember.randn(10))
    assert e.graph_count == 2
    assert e.graph_break_count == 1
    assert len(e.break_reasons) == 1
    frame = e.break_reasons[0].user_stack[0]
    assert frame.filename == __file__ and frame.lineno == toy.__code__.co_firstlineno + 2
    assert "b.sum() < 0" in frame.line
    assert "generic_jump" in e.break_reasons[0].reason
    assert len(e.ops_per_graph) == 2 and e.op_count == sum(len(o) for o in e.ops_per_graph)
    assert e.out_guards and "Graph Count: 2" in str(e)
    assert len(e.graphs) == 2 and "def forward" in e.graphs[0].code


@pytest.mark.parametrize("backend", BACKENDS)
def test_toy_both_branches(backend):
    be = backend_of(backend)
    f = ember.compile(toy, backend=be)
    a, b = ember.randn(10), ember.randn(10).abs() + 0.1
    for _ in range(3):
        for s in (1, -1):
            same(f(a, b * s), toy(a, b * s))
    cf = f
    assert cf.n_compiles == 2   # the first path, then the other branch once
    if isinstance(be, Counter):
        assert be.n == 3        # segment 1, and one tail per branch: later calls hit the cache


def test_fullgraph_raises_unsupported():
    f = ember.compile(toy, backend="eager", fullgraph=True)
    with pytest.raises(exc.Unsupported) as ei:
        f(ember.randn(10), ember.randn(10))
    msg = str(ei.value)
    assert msg.startswith("Data-dependent branching")
    assert "Explanation:" in msg and "Hint:" in msg
    assert f'File "{__file__}", line {toy.__code__.co_firstlineno + 2}, in toy' in msg
    assert "if b.sum() < 0:" in msg
    assert isinstance(ei.value, RuntimeError)


@pytest.mark.parametrize("backend", BACKENDS)
def test_item_and_index_break_and_stay_correct(backend):
    def f(x, n):
        k = int(n.sum().item())         # .item() baked in -> a branch per value
        return x[:k] * 2 + float(x[0])

    c = ember.compile(f, backend=backend_of(backend))
    x = ember.arange(6.)
    for k in (1, 3, 1, 5, 3):
        n = ember.tensor([k])
        same(c(x, n), f(x, n))


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_dependent_shape_ops(backend):
    def f(x):
        i = ember.nonzero(x > 0)
        m = x[x > 0]
        u = ember.unique(x.round())
        return i.sum() + m.sum() + ember.masked_select(x, x < 0).sum() + u.numel()

    c = ember.compile(f, backend=backend_of(backend))
    g = ember.Generator().manual_seed(0)
    for _ in range(4):
        x = ember.randn(8, generator=g)
        same(c(x), f(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tolist_breaks(backend):
    def f(x):
        vals = x.tolist()
        return x * vals[0]

    c = ember.compile(f, backend=backend_of(backend))
    for v in (1., 2., 1., 3.):
        x = ember.tensor([v, 5.])
        same(c(x), f(x))


def test_numpy_runs_eagerly():
    def f(x):
        a = x.numpy()
        return x + float(a.sum())
    c = ember.compile(f, backend="eager")
    for v in (1., 2.):
        x = ember.tensor([v, 5.])
        same(c(x), f(x))
    assert "numpy" in c.eager_reason


_GC_PHASE = None


def test_gc_callback_during_capture_is_no_side_effect():
    """A gc callback (hypothesis installs one that stores a global) runs in whatever frame a collection
    starts: the capture must not count its global store as the function's side effect."""
    import gc

    def cb(phase, info):
        global _GC_PHASE
        _GC_PHASE = phase

    def f(x):
        gc.collect()
        return x * 2

    gc.callbacks.append(cb)
    try:
        c = ember.compile(f, backend="eager")
        x = ember.tensor([1., 5.])
        same(c(x), f(x))
        assert _GC_PHASE == "stop" and c.eager_reason is None
    finally:
        gc.callbacks.remove(cb)


# ---- recompiles -----------------------------------------------------------------------------------
def test_same_shape_compiles_once():
    be = Counter()
    f = ember.compile(lambda x: (x * 2).relu(), backend=be)
    for _ in range(10):
        f(ember.randn(4, 3))
    assert be.n == 1


def test_dtype_change_recompiles_and_logs(caplog):
    be = Counter()

    def fn(x):
        return x + 1
    f = ember.compile(fn, backend=be)
    dynamo.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._dynamo"):
            f(ember.randn(64))
            f(ember.randn(128))
            f(ember.randn(128, dtype=ember.float64))
            f(ember.randn(128, dtype=ember.float64, requires_grad=True))
            f(ember.randn(128, 2).t()[0])
    finally:
        dynamo.set_logs(recompiles=False)
    assert be.n == 5
    text = caplog.text
    assert "Recompiling function fn in" in text
    assert "triggered by the following guard failure(s):" in text
    assert "- 0/0: tensor 'x' size mismatch at index 0. expected 64, actual 128" in text
    assert "tensor 'x' dtype mismatch. expected Float, actual Double" in text
    assert "tensor 'x' requires_grad mismatch. expected requires_grad=0" in text
    assert "tensor 'x' stride mismatch at index 0. expected 1, actual 2" in text


def test_recompile_limit_warns_and_runs_eagerly(caplog):
    be = Counter()

    def fn(x):
        return x * 3
    f = ember.compile(fn, backend=be, dynamic=False)
    assert dynamo.config.recompile_limit == 8 and dynamo.config.cache_size_limit == 8
    with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
        for n in range(1, 13):
            same(f(ember.ones(n)), fn(ember.ones(n)))
    assert be.n == 8
    assert "hit config.recompile_limit (8)" in caplog.text
    assert "function: 'fn'" in caplog.text
    assert "last reason: 0/7: tensor 'x' size mismatch at index 0. expected 8, actual 9" in caplog.text
    dynamo.config.cache_size_limit = 2
    try:
        assert dynamo.config.recompile_limit == 2
    finally:
        dynamo.config.recompile_limit = 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_guards_grad_mode_module_training(backend):
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Dropout(0.5))
    be = backend_of(backend)
    c = ember.compile(m, backend=be)
    x = ember.randn(2, 3)
    m.eval()
    same(c(x), m(x))
    with ember.no_grad():
        same(c(x), m(x))
        assert not c(x).requires_grad
    m.train()
    ember.manual_seed(1)
    a = c(x)
    ember.manual_seed(1)
    b = m(x)
    same(a, b)
    # a replaced parameter is seen
    with ember.no_grad():
        m[0].weight = ember.nn.Parameter(ember.randn(4, 3))
    m.eval()
    same(c(x), m(x))


def test_mark_dynamic_and_dynamic_flag_accepted():
    x = ember.randn(4, 3)
    dynamo.mark_dynamic(x, 0)
    assert 0 in x._dynamo_dynamic_indices
    f = ember.compile(lambda t: t.sum(0), backend="eager", dynamic=True)
    same(f(x), x.sum(0))


# ---- side effects ---------------------------------------------------------------------------------
LOG = []
COUNTER = 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_runs_every_call(backend, capsys):
    def f(x):
        print("hello")
        return x + 1
    c = ember.compile(f, backend=backend_of(backend))
    for _ in range(3):
        c(ember.ones(2))
    assert capsys.readouterr().out.count("hello") == 3
    assert "print" in c.eager_reason
    e = dynamo.explain(f)(ember.ones(2))
    assert e.graph_break_count == 1 and "print" in e.break_reasons[0].reason
    assert e.break_reasons[0].user_stack[0].lineno == f.__code__.co_firstlineno + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_append_global_setattr_random(backend):
    def app(x):
        LOG.append(1)
        return x * 2

    def glob(x):
        global COUNTER
        COUNTER += 1
        return x * 2

    class Obj:
        n = 0

    o = Obj()

    def attr(x):
        o.n = o.n + 1
        return x * 2

    def rnd(x):
        return x * random.random()

    LOG.clear()
    for fn in (app, glob, attr):
        c = ember.compile(fn, backend=backend_of(backend))
        for _ in range(3):
            c(ember.ones(2))
        assert c.eager_reason is not None
    assert len(LOG) == 3 and COUNTER % 3 == 0 and COUNTER > 0 and o.n == 3
    c = ember.compile(rnd, backend=backend_of(backend))
    vals = {float(c(ember.ones(1))) for _ in range(4)}
    assert len(vals) == 4 and "random" in c.eager_reason


def test_side_effect_fullgraph_raises():
    def f(x):
        print("x")
        return x
    with pytest.raises(exc.Unsupported, match="print"):
        ember.compile(f, backend="eager", fullgraph=True)(ember.ones(1))


def test_local_lists_are_not_side_effects():
    def f(x):
        out = []
        for i in range(3):
            out.append(x * i)
        return ember.stack(out)
    c = ember.compile(f, backend="eager")
    c(ember.ones(2))
    same(c(ember.ones(2)), f(ember.ones(2)))
    assert c.eager_reason is None


# ---- tinygrad's jit footguns: correct or raise, never silently wrong -------------------------------
SCALE = 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_footgun_frozen_python_constant(backend):
    global SCALE

    def f(x):
        return x * SCALE
    c = ember.compile(f, backend=backend_of(backend))
    x = ember.ones(3)
    try:
        for s in (2.0, 3.0, 2.0, 5.0):
            SCALE = s
            same(c(x), f(x))
    finally:
        SCALE = 2.0
    k = [1.0]

    def g(x):
        return x * k[0]
    c = ember.compile(g, backend=backend_of(backend))
    c(x)
    k[0] = 4.0
    same(c(x), g(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_footgun_item_baked_in(backend):
    def f(x, s):
        return x * s.item()
    c = ember.compile(f, backend=backend_of(backend))
    x = ember.ones(3)
    for v in (1.0, 2.0, 3.0, 2.0):
        same(c(x, ember.tensor(v)), f(x, ember.tensor(v)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_footgun_output_buffers_not_reused(backend):
    c = ember.compile(lambda x: x + 1, backend=backend_of(backend))
    a = c(ember.zeros(3))
    b = c(ember.ones(3))
    assert a is not b
    same(a, ember.ones(3))
    same(b, ember.full((3,), 2.))


@pytest.mark.parametrize("backend", BACKENDS)
def test_footgun_same_tensor_twice(backend):
    def f(a, b):
        a.add_(1)
        return a + b
    c = ember.compile(f, backend=backend_of(backend))
    for _ in range(2):
        x, y = ember.zeros(2), ember.zeros(2)
        same(c(x, y), ember.ones(2))
        same(x, ember.ones(2))
    x = ember.zeros(2)
    same(c(x, x), ember.full((2,), 2.))
    x, y = ember.zeros(2), ember.zeros(2)
    same(c(x, y), ember.ones(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_footgun_tensor_swapped_for_number(backend):
    def f(a, b):
        return a * b
    c = ember.compile(f, backend=backend_of(backend))
    x = ember.full((2,), 3.)
    same(c(x, ember.full((2,), 2.)), ember.full((2,), 6.))
    same(c(x, 5.0), ember.full((2,), 15.))
    same(c(x, 7.0), ember.full((2,), 21.))
    same(c(x, ember.full((2,), 2.)), ember.full((2,), 6.))


@pytest.mark.parametrize("backend", BACKENDS)
def test_unknown_origin_tensor_returned(backend):
    def f(x):
        c = ember.tensor([1., 2.])
        return c, x + c
    c = ember.compile(f, backend=backend_of(backend))
    a, _ = c(ember.ones(2))
    a.add_(10)
    b, s = c(ember.ones(2))
    same(b, ember.tensor([1., 2.]))
    same(s, ember.tensor([2., 3.]))


# ---- inputs: views, in-place, 0-d, empty, ints and bools, non-contiguous ------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_views_inplace_and_odd_inputs(backend):
    def f(x, y):
        v = x.t()
        y.mul_(2)
        return v, v[0], y.view(-1), (x > 0).sum(), x.sum(0, keepdim=True)

    c = ember.compile(f, backend=backend_of(backend))
    for shape in ((2, 3), (0, 3), (1, 1)):
        for _ in range(2):
            x = ember.randn(*shape)
            y1, y2 = ember.arange(6).view(2, 3), ember.arange(6).view(2, 3)
            got, ref = c(x, y1), f(x, y2)
            for a, b in zip(got, ref):
                same(a, b)
            assert got[0]._base is x or got[0]._base is x._base or got[0].data_ptr() == x.data_ptr()
            same(y1, y2)
    x = ember.randn(3, 4).t()[::2]
    same(c(x, ember.zeros(2, dtype=ember.bool)), f(x, ember.zeros(2, dtype=ember.bool))) if False else None
    g = ember.compile(lambda t: (t * 2, t.sum()), backend=backend_of(backend))
    for t in (ember.tensor(3.), ember.tensor(True), ember.randn(4, 6)[:, ::2], ember.tensor([1, 2])):
        for a, b in zip(g(t), (t * 2, t.sum())):
            same(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_backward_hooks_retain_graph_no_grad(backend):
    m = ember.nn.Linear(3, 2)
    c = ember.compile(m, backend=backend_of(backend))
    x = ember.randn(4, 3, requires_grad=True)
    seen = []
    y = c(x)
    y = c(x)
    h = y.register_hook(lambda g: seen.append(g.shape))
    y.sum().backward(retain_graph=True)
    gx, gw = x.grad.clone(), m.weight.grad.clone()
    y.sum().backward()
    same(x.grad, gx * 2)
    h.remove()
    assert seen == [(4, 2), (4, 2)]
    x2 = x.detach().clone().requires_grad_()
    m.zero_grad()
    m(x2).sum().backward()
    same(x2.grad, gx)
    same(m.weight.grad, gw)
    with ember.no_grad():
        r = c(x)
    assert r.grad_fn is None and not r.requires_grad


def test_aot_node_name_and_partitioners():
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 1))
    x = ember.randn(5, 3)
    for use_min_cut in (False, True):
        with dynamo.config.patch(use_min_cut_partitioner=use_min_cut):
            dynamo.reset()
            c = ember.compile(m, backend="aot_eager")
            y = c(x)
            y = c(x)
            assert y.grad_fn.name() == "CompiledFunctionBackward"
            y.sum().backward()
            g = [p.grad.clone() for p in m.parameters()]
            m.zero_grad()
            m(x).sum().backward()
            for a, p in zip(g, m.parameters()):
                assert (a - p.grad).abs().max().item() < 1e-6
            m.zero_grad()


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_step_compiled_whole(backend):
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    ember.manual_seed(0)
    m2 = ember.nn.Linear(3, 1)
    opt2 = ember.optim.SGD(m2.parameters(), lr=0.1, momentum=0.9)
    x = ember.randn(4, 3)

    def step(model, o):
        o.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        o.step()
        return loss

    c = ember.compile(step, backend=backend_of(backend))
    for _ in range(4):
        a = c(m, opt)
        b = step(m2, opt2)
        assert abs(a.item() - b.item()) < 1e-6
    for p, q in zip(m.parameters(), m2.parameters()):
        same(p.detach(), q.detach())


# ---- API --------------------------------------------------------------------------------------------
def test_backends_registry_and_api():
    assert "inductor" in dynamo.list_backends()
    assert {"eager", "aot_eager", "inductor"} <= set(dynamo.list_backends(exclude_tags=()))

    @dynamo.register_backend
    def my_ember_backend(gm, example_inputs):
        return gm.forward
    assert "my_ember_backend" in dynamo.list_backends(exclude_tags=())
    f = ember.compile(lambda x: x + 1, backend="my_ember_backend")
    same(f(ember.ones(2)), ember.full((2,), 2.))
    with pytest.raises(Exception, match="Invalid backend"):
        ember.compile(lambda x: x, backend="no_such_backend")
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(lambda x: x, mode="fastest")
    assert ember.compile(toy, disable=True) is toy

    @ember.compile(backend="eager")
    def deco(x):
        return x * 2
    same(deco(ember.ones(1)), ember.full((1,), 2.))

    d = dynamo.disable(lambda x: x - 1)
    same(d(ember.ones(1)), ember.zeros(1))
    assert dynamo.allow_in_graph(toy) is toy


def test_module_compile_and_optimized_module():
    m = ember.nn.Linear(2, 2)
    om = ember.compile(m, backend="eager")
    assert type(om).__name__ == "OptimizedModule" and om._orig_mod is m
    assert list(om.parameters()) == list(m.parameters())
    assert set(om.state_dict()) == {"_orig_mod.weight", "_orig_mod.bias"}
    x = ember.randn(3, 2)
    same(om(x), m(x))
    m.compile(backend="eager")
    assert m._compiled_call_impl is not None
    same(m(x), om(x))
    same(m(x), ember.nn.functional.linear(x, m.weight, m.bias))


def test_graph_code_logs_and_debug_dir(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_DEBUG", "1")
    dynamo.config.debug_dir_root = str(tmp_path)
    dynamo.set_logs(graph_code=True, output_code=True, guards=True, aot_graphs=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._dynamo"):
            m = ember.nn.Linear(2, 2)
            c = ember.compile(m, backend="aot_eager")
            c(ember.randn(3, 2))
    finally:
        dynamo.set_logs(graph_code=False, output_code=False, guards=False, aot_graphs=False)
        dynamo.config.debug_dir_root = None
    assert "TRACED GRAPH" in caplog.text and "def forward" in caplog.text
    assert "[__guards]" in caplog.text and "TENSOR_MATCH" in caplog.text
    assert "Forward graph" in caplog.text and "Backward graph" in caplog.text
    files = [p.name for p in tmp_path.rglob("*.py")]
    assert any("fx_graph_readable" in f for f in files)
    assert any("forward_graph" in f for f in files) and any("backward_graph" in f for f in files)
    assert any("joint_graph" in f for f in files)


# ---- automatic dynamic shapes -----------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_sizes_1_to_64_compile_at_most_twice(backend):
    be = Counter()
    m = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU())

    def f(x):
        B = x.shape[0]
        return m(x).view(B * 2, -1).sum(0), x.reshape(B, 2, 2).transpose(0, 1)
    c = ember.compile(f, backend=be if backend == "counting" else backend)
    for B in list(range(1, 65)) + [7, 1, 64]:
        x = ember.randn(B, 4)
        for _ in range(2):
            for a, b in zip(c(x), f(x)):
                same(a, b)
    assert c.n_compiles <= 2
    if backend == "counting":
        assert be.n <= 2


def test_size_dependent_python_stays_correct():
    be = Counter()

    def f(x):
        if x.shape[0] > 10:        # Python control flow on a size: a symbolic graph must not serve it
            return x * 2
        return x.view(x.shape[0] // 2, -1) + 1
    c = ember.compile(f, backend=be)
    for B in (2, 4, 6, 8, 12, 14, 6, 12):
        x = ember.randn(B, 3)
        same(c(x), f(x))
        same(c(x), f(x))


def test_dynamic_false_keeps_sizes_static():
    be = Counter()
    c = ember.compile(lambda x: x.view(-1, 2) * 2, backend=be, dynamic=False)
    for B in (2, 4, 6, 8):
        x = ember.randn(B, 2)
        same(c(x), x.view(-1, 2) * 2)
    assert be.n == 4


# ---- state reached otherwise ------------------------------------------------------------------------
class _STE(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g * 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_autograd_function_keeps_its_backward(backend):
    def f(x):
        return _STE.apply(x * 2).sum()
    c = ember.compile(f, backend=backend_of(backend))
    for _ in range(2):
        x = ember.randn(4, requires_grad=True)
        c(x).backward()
        same(x.grad, ember.full((4,), 6.))
    assert "autograd.Function" in c.eager_reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_tensor_attribute_and_input_grad_are_guarded(backend):
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = ember.ones(3)    # a plain attribute, not a buffer

        def forward(self, x):
            return x * self.mask

    m = M()
    c = ember.compile(m, backend=backend_of(backend))
    x = ember.ones(3)
    same(c(x), ember.ones(3))
    m.mask = ember.full((3,), 2.)
    same(c(x), ember.full((3,), 2.))

    def g(t):
        return t.grad * 2
    cg = ember.compile(g, backend=backend_of(backend))
    t = ember.zeros(2, requires_grad=True)
    t.grad = ember.ones(2)
    same(cg(t), ember.full((2,), 2.))
    t.grad = ember.full((2,), 5.)
    same(cg(t), ember.full((2,), 10.))


@pytest.mark.parametrize("backend", BACKENDS)
def test_kwargs_and_nested_inputs(backend):
    def f(xs, *, scale=1.0, d=None):
        return [x * scale for x in xs], d["a"] + 1
    c = ember.compile(f, backend=backend_of(backend))
    for s in (1.0, 2.0, 2.0):
        xs = [ember.ones(2), ember.ones(3)]
        got, ref = c(xs, scale=s, d={"a": ember.ones(1)}), f(xs, scale=s, d={"a": ember.ones(1)})
        for a, b in zip(got[0] + [got[1]], ref[0] + [ref[1]]):
            same(a, b)


def test_ember_logs_environment_variable():
    import subprocess
    import sys
    code = ("import ember\n"
            "f = ember.compile(lambda x: x + 1, backend='eager', dynamic=False)\n"
            "f(ember.ones(2)); f(ember.ones(3))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**__import__("os").environ, "EMBER_LOGS": "recompiles,graph_code"})
    assert "[__recompiles]" in r.stderr and "size mismatch at index 0. expected 2, actual 3" in r.stderr
    assert "[__graph_code]" in r.stderr and "def forward" in r.stderr
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={k: v for k, v in __import__("os").environ.items() if k != "EMBER_LOGS"})
    assert "[__recompiles]" not in r.stderr and "[__graph_code]" not in r.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_object_attributes_read_are_guarded(backend):
    class Cfg:
        def __init__(self):
            self.groups = [{"lr": 0.1}]

    cfg = Cfg()

    def f(x, c):
        return x * c.groups[0]["lr"]
    cc = ember.compile(f, backend=backend_of(backend))
    x = ember.ones(2)
    same(cc(x, cfg), f(x, cfg))
    cfg.groups[0]["lr"] = 0.5
    same(cc(x, cfg), f(x, cfg))

    def g(x):
        return x * cfg.groups[0]["lr"]
    cg = ember.compile(g, backend=backend_of(backend))
    same(cg(x), g(x))
    cfg.groups[0]["lr"] = 0.25
    same(cg(x), g(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_inside_compiled_function(backend):
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 1))
    ember.manual_seed(0)
    m2 = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 1))
    x = ember.randn(5, 3)

    def step(model, accumulate):
        if not accumulate:
            model.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss

    c = ember.compile(step, backend=backend_of(backend))
    for accumulate in (False, False, False, True, True, False):
        a, b = c(m, accumulate), step(m2, accumulate)
        assert abs(a.item() - b.item()) < 1e-7
        for p, q in zip(m.parameters(), m2.parameters()):
            same(p.grad, q.grad)
        with ember.no_grad():   # an update outside, through ember ops
            for p, q in zip(m.parameters(), m2.parameters()):
                p.sub_(p.grad * 0.1)
                q.sub_(q.grad * 0.1)
    assert c.eager_reason is None and c.n_compiles >= 1


def test_compiled_method_and_grad_mode_restored_on_error():
    class A:
        def __init__(self):
            self.k = 3.0

        @ember.compile(backend="eager")
        def f(self, x):
            return x * self.k
    a = A()
    same(a.f(ember.ones(2)), ember.full((2,), 3.))
    same(a.f(ember.ones(2)), ember.full((2,), 3.))

    def g(x, i):
        with ember.no_grad():
            z = x * 2
        return z.index_select(0, i) + x.sum()
    c = ember.compile(g, backend="eager")
    x = ember.ones(3, requires_grad=True)
    c(x, ember.tensor([0]))
    c(x, ember.tensor([1]))
    with pytest.raises(Exception) as ei:       # the replay raises inside its no_grad stretch
        c(x, ember.tensor([7]))
    with pytest.raises(type(ei.value)):
        g(x, ember.tensor([7]))
    assert ember.is_grad_enabled()


def test_dispatch_mode_inside_or_around_runs_eagerly():
    from ember.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    def f(x):
        with Count() as m:
            y = x * 2
        return y + m.n
    c = ember.compile(f, backend="eager")
    for _ in range(2):
        same(c(ember.ones(2)), f(ember.ones(2)))
    assert "mode" in c.eager_reason
    g = ember.compile(lambda x: x * 3, backend="eager")
    x = ember.ones(2)
    with Count() as m:
        g(x)
        g(x)
    assert m.n == 2   # the mode sees every op of every call


@pytest.mark.parametrize("backend", BACKENDS)
def test_hooks_registered_after_compile_run(backend):
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    c = ember.compile(m, backend=backend_of(backend))
    x = ember.randn(3, 2)
    c(x)
    c(x)
    seen = []
    h = m[0].register_forward_hook(lambda mod, i, o: seen.append(o.shape))
    same(c(x), m(x))
    assert len(seen) == 2
    h.remove()
    g = ember.nn.modules.module.register_module_forward_hook(lambda mod, i, o: seen.append(1))
    try:
        c(x)
    finally:
        g.remove()
    assert seen.count(1) == 3   # the global hook ran for the Sequential and both children


def test_dynamic_sizes_with_aot_backward():
    m = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(), ember.nn.Linear(8, 2))

    def f(x):
        B = x.shape[0]
        return m(x).view(B * 2).sum() + x.reshape(B, 2, 2).pow(2).sum()
    c = ember.compile(f, backend="aot_eager")
    for B in (1, 2, 3, 4, 4, 7, 7, 3):
        x = ember.randn(B, 4, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        a, b = c(x), f(x2)
        a.backward()
        b.backward()
        assert abs(a.item() - b.item()) < 1e-5
        same(x.grad, x2.grad)
        for p in m.parameters():
            p.grad = None
    assert a.grad_fn.name() == "CompiledFunctionBackward"   # a size seen before: the symbolic joint graph
    assert c.n_compiles <= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_config_object_is_guarded(backend):
    class Cfg:
        scale = 2.0

    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = Cfg()
            self.cfg.scale = 2.0
            self.sizes = [1, 2]

        def forward(self, x):
            return x * self.cfg.scale + self.sizes[-1]

    m = M()
    c = ember.compile(m, backend=backend_of(backend))
    x = ember.ones(2)
    same(c(x), m(x))
    m.cfg.scale = 5.0
    same(c(x), m(x))
    m.sizes.append(7)
    same(c(x), m(x))
