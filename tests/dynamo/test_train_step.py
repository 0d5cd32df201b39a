"""Compiling a whole training step (forward, loss.backward(), optimizer.step(), zero_grad()).

The compiled step must capture into one graph and replay it, writing the parameters, gradients
and optimizer state (step, exp_avg, exp_avg_sq, max_exp_avg_sq, momentum_buffer) back: after each
of 20 steps they equal eager's (1e-6). The first call creates the optimizer's state and is not
kept, the second captures, the rest hit the cache. Backends: "eager", "aot_eager" and a custom
backend that counts the graphs it is given. ember.compiler (torch.compiler) is tested at the end.
"""
import subprocess
import sys

import pytest

import ember
import ember._dynamo as dynamo
import ember.compiler

nn = ember.nn
F = nn.functional
TOL = 1e-6
STEPS = 20


class Counter:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    yield
    dynamo.reset()


def _cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 2 * 2, 10))


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))


MODELS = {
    "cnn": (_cnn, lambda g: (ember.randn(8, 1, 8, 8, generator=g), ember.randint(0, 10, (8,), generator=g))),
    "mlp": (_mlp, lambda g: (ember.randn(5, 6, generator=g), ember.randint(0, 4, (5,), generator=g))),
}

OPTIMIZERS = {
    "sgd": (ember.optim.SGD, {"lr": 0.05}),
    "sgd_momentum": (ember.optim.SGD, {"lr": 0.05, "momentum": 0.9, "dampening": 0.1}),
    "sgd_nesterov_wd": (ember.optim.SGD, {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-2}),
    "adam": (ember.optim.Adam, {"lr": 1e-2}),
    "adam_wd_amsgrad": (ember.optim.Adam, {"lr": 1e-2, "weight_decay": 1e-2, "amsgrad": True}),
    "adam_maximize": (ember.optim.Adam, {"lr": 1e-2, "maximize": True}),
    "adamw": (ember.optim.AdamW, {"lr": 1e-2}),
    "adamw_amsgrad": (ember.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1, "amsgrad": True}),
}


def _setup(model_name, opt_name):
    make_model, make_batch = MODELS[model_name]
    opt_cls, kw = OPTIMIZERS[opt_name]
    g = ember.Generator().manual_seed(0)
    data = [make_batch(g) for _ in range(4)]
    ember.manual_seed(0)
    ref_model = make_model()
    ember.manual_seed(0)
    model = make_model()
    return data, (ref_model, opt_cls(ref_model.parameters(), **kw)), (model, opt_cls(model.parameters(), **kw))


def _step_fn(model, opt, zero_first):
    if zero_first:   # torch's usual order: the gradients live on after the step
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
    else:
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
    return step


def _diff(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def _assert_same(ref, got, i):
    (rm, ro), (cm, co) = ref, got
    for (n, p), q in zip(rm.named_parameters(), cm.parameters()):
        assert _diff(p, q) <= TOL, (i, n, _diff(p, q))
        assert (p.grad is None) == (q.grad is None), (i, n)
        if p.grad is not None:
            assert _diff(p.grad, q.grad) <= TOL, (i, n, "grad")
        sr, sc = ro.state.get(p, {}), co.state.get(q, {})   # .get: do not create entries
        assert sorted(sr) == sorted(sc), (i, n, sorted(sr), sorted(sc))
        for k in sr:
            assert sr[k].dtype == sc[k].dtype and sr[k].shape == sc[k].shape, (i, n, k)
            assert _diff(sr[k], sc[k]) <= TOL, (i, n, k, _diff(sr[k], sc[k]))


def _run(model_name, opt_name, backend, zero_first=False):
    data, ref, got = _setup(model_name, opt_name)
    ref_step = _step_fn(*ref, zero_first)
    counter = Counter() if backend == "counting" else None
    compiled = ember.compile(_step_fn(*got, zero_first), backend=counter or backend)
    for i in range(STEPS):
        x, y = data[i % len(data)]
        lr_ = ref_step(x, y)
        lc = compiled(x, y)
        assert abs(lr_.item() - lc.item()) <= TOL, (i, lr_.item(), lc.item())
        _assert_same(ref, got, i)
        if i == 1:   # the first call created the state; the second captured the one graph
            assert compiled.n_compiles == 1 and len(compiled.compile_times) == 1
    # compiled for real: one graph, no reason to run eagerly, every call after the second a cache hit
    assert compiled.eager_reason is None, compiled.eager_reason
    assert compiled.break_reasons == []
    assert len(compiled.entries) == 1 and compiled.n_compiles == 1
    assert len(compiled.compile_times) == 1      # captured once: 18 calls replayed the graph
    if counter is not None:
        assert len(counter.graphs) == 1
    return compiled, got


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor", "counting"])
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_mlp_train_step(opt_name, backend):
    _run("mlp", opt_name, backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor", "counting"])
@pytest.mark.parametrize("opt_name", ["sgd_nesterov_wd", "adam", "adamw_amsgrad"])
def test_cnn_train_step(opt_name, backend):
    _run("cnn", opt_name, backend)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam"])
def test_zero_grad_first_keeps_grads(opt_name, backend):
    # zero_grad() at the start: the step's gradients are set after each call, as in eager
    _run("cnn", opt_name, backend, zero_first=True)


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adamw"])
def test_zero_grad_set_to_none_false(opt_name):
    # zero_grad(set_to_none=False) zeroes the gradients in place: the graph writes them too
    data, ref, got = _setup("mlp", opt_name)

    def make(model, opt):
        def step(x, y):
            opt.zero_grad(set_to_none=False)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    ref_step, compiled = make(*ref), ember.compile(make(*got), backend="aot_eager")
    for i in range(8):
        ref_step(*data[i % 4])
        compiled(*data[i % 4])
        _assert_same(ref, got, i)
    assert compiled.eager_reason is None and compiled.n_compiles == 1 and len(compiled.compile_times) == 1


def test_graph_holds_the_updates():
    compiled, (model, opt) = _run("mlp", "adam", "counting")
    gm = compiled.entries[0].root.gm
    code = gm.code
    # the optimizer's writes are ops in the graph, on the state's own tensors
    for op in ("lerp_", "addcmul_", "add_", "pow"):
        assert op in code, op
    assert "_local_scalar_dense" not in code


def test_explain_after_warmup():
    data, _ref, (model, opt) = _setup("mlp", "adamw")
    step = _step_fn(model, opt, False)
    step(*data[0])   # eager: creates the optimizer state
    out = dynamo.explain(step)(*data[1])
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    assert out.break_reasons == []


def test_fullgraph_train_step():
    data, ref, got = _setup("mlp", "sgd_momentum")
    ref_step = _step_fn(*ref, False)
    compiled = ember.compile(_step_fn(*got, False), backend="eager", fullgraph=True)
    for i in range(4):
        ref_step(*data[i])
        compiled(*data[i])
        _assert_same(ref, got, i)
    assert compiled.n_compiles == 1 and len(compiled.compile_times) == 1


def test_lr_change_recompiles():
    # the learning rate is a Python float of the optimizer: changing it is a guard failure, the
    # step is captured again with the new value (torch guards on it too)
    data, ref, got = _setup("mlp", "adam")
    ref_step = _step_fn(*ref, False)
    compiled = ember.compile(_step_fn(*got, False), backend="eager")
    for i in range(6):
        if i == 3:
            for o in (ref[1], got[1]):
                o.param_groups[0]["lr"] = 5e-3
        ref_step(*data[i % 4])
        compiled(*data[i % 4])
        _assert_same(ref, got, i)
    assert compiled.n_compiles == 2 and compiled.eager_reason is None


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam", "adamw_amsgrad"])
def test_tensor_lr_with_scheduler(opt_name):
    # lr as a tensor: the graph reads it, so a scheduler's fill_ between steps needs no recompile
    opt_cls, kw = OPTIMIZERS[opt_name]
    kw = dict(kw, lr=ember.tensor(kw["lr"]))
    data, _r, _g = _setup("mlp", opt_name)
    ember.manual_seed(0)
    ref = (rm := _mlp(), opt_cls(rm.parameters(), **dict(kw, lr=kw["lr"].clone())))
    ember.manual_seed(0)
    got = (cm := _mlp(), opt_cls(cm.parameters(), **kw))
    scheds = [ember.optim.lr_scheduler.ExponentialLR(o, gamma=0.8) for o in (ref[1], got[1])]
    ref_step = _step_fn(*ref, False)
    compiled = ember.compile(_step_fn(*got, False), backend="eager")
    for i in range(10):
        ref_step(*data[i % 4])
        compiled(*data[i % 4])
        for sch in scheds:
            sch.step()
        _assert_same(ref, got, i)
    lr = got[1].param_groups[0]["lr"]
    assert lr is kw["lr"] and abs(lr.item() - OPTIMIZERS[opt_name][1]["lr"] * 0.8 ** 10) < 1e-7
    assert compiled.eager_reason is None and compiled.n_compiles == 1 and len(compiled.compile_times) == 1


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam", "adamw_amsgrad"])
def test_compile_only_the_model(opt_name):
    # torch's default: compile the model, step the optimizer eagerly (its fast paths)
    data, ref, got = _setup("cnn", opt_name)
    (rm, ro), (cm, co) = ref, got
    compiled = ember.compile(cm, backend="aot_eager")
    for i in range(STEPS):
        x, y = data[i % len(data)]
        for m, o in ((rm, ro), (compiled, co)):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
            o.step()
        _assert_same(ref, got, i)
    assert compiled._compiled.n_compiles == 1


def test_is_compiling():
    def f(x):
        return x * 2 if ember.compiler.is_compiling() else x * 3

    assert not ember.compiler.is_compiling() and not ember.compiler.is_dynamo_compiling()
    counter = Counter()
    cf = ember.compile(f, backend=counter)
    x = ember.ones(3)
    assert cf(x).tolist() == [2.0, 2.0, 2.0]     # captured: the Python ran under capture
    assert cf(x).tolist() == [2.0, 2.0, 2.0]     # replayed
    assert len(counter.graphs) == 1 and len(cf.compile_times) == 1 and cf.eager_reason is None
    assert f(x).tolist() == [3.0, 3.0, 3.0]
    assert not ember.compiler.is_compiling()
    assert ember.compiler.is_exporting() is False


def test_compiler_reexports():
    def f(x):
        return x + 1

    cf = ember.compiler.compile(f, backend="eager")
    cf(ember.ones(2))
    cf(ember.ones(2))
    assert len(cf.compile_times) == 1
    ember.compiler.reset()
    assert cf.entries == []
    cf(ember.ones(2))
    assert len(cf.entries) == 1
    g = ember.compiler.disable(f)
    assert g._ember_dynamo_disable and g(ember.ones(1)).item() == 2.0
    assert ember.compiler.allow_in_graph(f) is f
    assert "inductor" in ember.compiler.list_backends()
    assert ember.compiler.assume_constant_result(f) is f
    ember.compiler.cudagraph_mark_step_begin()


def test_compiler_is_light():
    # ember.compiler must not import ember._dynamo until one of its functions needs it
    code = ("import sys, ember, ember.compiler; ember.compiler.is_compiling(); "
            "assert 'ember._dynamo' not in sys.modules, 'imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_compiler_names_are_torchs():
    torch = pytest.importorskip("torch")
    for name in ember.compiler.__all__:
        assert hasattr(torch.compiler, name), name
