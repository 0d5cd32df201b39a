"""Dynamic sizes from the first compile: ember._dynamo.mark_dynamic(t, dim) and dynamic=True.

torch makes a marked size (or, with dynamic=True, every size other than 0 and 1) symbolic on the
first compile. ember builds symbolic graphs by diffing two traces at two sizes, and one trace
cannot show how the ops follow a size, so its first compile with a size asked dynamic is "symbolic
pending": that call runs eagerly under capture (as every first call does), the trace is kept and
not compiled, and the next call at another size compiles one symbolic graph. Compile counts then
equal torch's for sizes 2..N (one compile); sizes that start at 1 cost two, as in torch. Every new
size is still checked once by a capturing run before the symbolic graph serves it.

Where the captured ops change with a marked size, torch raises ConstraintViolationError if the
code specialized it (`x.shape[0] == 4`, `x.view(4, 3)`) and guards if it only branched on it
(`x.shape[0] > 5`); ember sees two different traces in both cases, so it never raises: it compiles
a separate static entry (equal to eager) and logs why under EMBER_LOGS=recompiles."""
import logging

import pytest

import ember
import ember._dynamo as dynamo

torch = pytest.importorskip("torch")


class Counter:
    def __init__(self):
        self.n = 0

    def __call__(self, gm, example_inputs):
        self.n += 1
        return gm.forward


class TorchCounter(Counter):
    pass


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    torch._dynamo.reset()
    yield
    dynamo.reset()
    torch._dynamo.reset()


def f(x):
    return (x * 2).sum(0) + x.mean()


def run(fn, sizes, mark=False, cols=3, **kw):
    """ember's compile count over `sizes` of dim 0, checking every result against eager."""
    c = Counter()
    cf = ember.compile(fn, backend=c, **kw)
    for b in sizes:
        x = ember.randn(b, cols)
        if mark:
            dynamo.mark_dynamic(x, 0)
        r = cf(x)
        assert ember.allclose(r, fn(x), rtol=1e-6, atol=1e-6), b
    return c.n


def torch_count(fn, sizes, mark=False, cols=3, **kw):
    c = TorchCounter()
    cf = torch.compile(fn, backend=c, **kw)
    for b in sizes:
        x = torch.randn(b, cols)
        if mark:
            torch._dynamo.mark_dynamic(x, 0)
        cf(x)
    return c.n


def tf(x):
    return (x * 2).sum(0) + x.mean()


@pytest.mark.parametrize("sizes,mark,kw", [
    (range(2, 7), True, {}),
    (range(1, 7), True, {}),
    (range(2, 7), False, {"dynamic": True}),
    (range(1, 7), False, {"dynamic": True}),
    (range(2, 7), True, {"dynamic": False}),
    (range(2, 7), False, {}),
    (range(1, 7), False, {}),
])
def test_compile_counts_equal_torch(sizes, mark, kw):
    assert run(f, sizes, mark, **kw) == torch_count(tf, sizes, mark, **kw)


def test_mark_dynamic_batch_sizes_1_to_64():
    assert run(f, range(2, 65), mark=True) == 1
    dynamo.reset()
    assert run(f, range(1, 65), mark=True) <= 2
    dynamo.reset()
    assert run(f, range(1, 65), dynamic=True) <= 2
    dynamo.reset()
    assert run(f, range(64, 0, -1), mark=True) <= 2


def test_symbolic_pending_then_same_size():
    # the second call repeats the size: the kept trace cannot become symbolic yet, so that size
    # compiles static; the next size recompiles symbolic (torch: 1 compile, ember: 2)
    assert run(f, [4, 4, 4, 5, 6, 7], mark=True) == 2


def test_first_call_runs_eagerly_and_logs_why(caplog):
    dynamo.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._dynamo"):
            c = Counter()
            cf = ember.compile(f, backend=c)
            x = ember.randn(4, 3)
            dynamo.mark_dynamic(x, 0)
            cf(x)
            assert c.n == 0 and cf.n_compiles == 0
            y = ember.randn(7, 3)
            dynamo.mark_dynamic(y, 0)
            assert ember.allclose(cf(y), f(y))
            assert c.n == 1
    finally:
        dynamo.set_logs(recompiles=False)
    text = caplog.text
    assert "deferred: size 0 of input 0 is marked dynamic (mark_dynamic)" in text
    assert "size 0 of input 0 is marked dynamic (mark_dynamic): " in text and "symbolic (4 -> 7)" in text


def test_dynamic_true_log_names_the_flag(caplog):
    dynamo.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._dynamo"):
            assert run(f, [3, 5, 8], dynamic=True) == 1
    finally:
        dynamo.set_logs(recompiles=False)
    assert "is dynamic (dynamic=True)" in caplog.text


def test_unmarked_later_calls_reuse_the_symbolic_graph():
    c = Counter()
    cf = ember.compile(f, backend=c)
    for b in (3, 5, 9, 12):
        x = ember.randn(b, 3)
        if b < 6:
            dynamo.mark_dynamic(x, 0)
        assert ember.allclose(cf(x), f(x))
    assert c.n == 1


def view_model(x):
    B, T, C = x.shape
    return (x.reshape(B * T, C) @ ember.ones(C, 2)).view(B, T, 2).relu()


def test_mark_dynamic_through_view_arithmetic():
    c = Counter()
    cf = ember.compile(view_model, backend=c)
    for b in (2, 3, 5, 8):
        x = ember.randn(b, 4, 6)
        dynamo.mark_dynamic(x, 0)
        assert ember.allclose(cf(x), view_model(x))
    assert c.n == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_training_with_mark_dynamic_equals_eager(backend):
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 2)

    def step(x):
        return lin(x).tanh().sum()

    cf = ember.compile(step, backend=backend)
    for b in (4, 6, 9, 6):
        x = ember.randn(b, 3, requires_grad=True)
        dynamo.mark_dynamic(x, 0)
        lin.zero_grad()
        cf(x).backward()
        got = [p.grad.clone() for p in lin.parameters()] + [x.grad.clone()]
        x2 = x.detach().requires_grad_(True)
        lin.zero_grad()
        step(x2).backward()
        want = [p.grad for p in lin.parameters()] + [x2.grad]
        for a, w in zip(got, want):
            assert ember.allclose(a, w, rtol=1e-6, atol=1e-6)
    assert cf.n_compiles == 1


def specializes(x):
    if x.shape[0] == 4:
        return x + 1
    return x - 1


def t_specializes(x):
    if x.shape[0] == 4:
        return x + 1
    return x - 1


def test_specialized_marked_size_torch_raises_ember_stays_correct(caplog):
    from torch.fx.experimental.symbolic_shapes import ConstraintViolationError
    x = torch.randn(4, 3)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(ConstraintViolationError, match=r"You marked L\['x'\].size\(\)\[0\] as dynamic but your "
                       r"code specialized it to be a constant \(4\)"):
        torch.compile(t_specializes, backend="eager")(x)
    # ember cannot tell this specialization from a branch: separate entries, every result eager's
    dynamo.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._dynamo"):
            assert run(specializes, [4, 5, 4, 6, 7], mark=True) <= 2
    finally:
        dynamo.set_logs(recompiles=False)
    assert "but the captured ops change with it (4 -> 5" in caplog.text


def branches(x):
    if x.shape[0] > 5:
        return x * 3
    return x - 1


def test_size_dependent_branch_is_never_served_the_wrong_graph():
    assert run(branches, [4, 7, 8, 3, 2, 9, 5, 6], mark=True) <= 3


def test_two_sizes_changing_at_once_stay_correct():
    c = Counter()
    cf = ember.compile(f, backend=c, dynamic=True)
    for b, k in ((3, 4), (5, 6), (5, 7), (8, 7)):
        x = ember.randn(b, k)
        assert ember.allclose(cf(x), f(x))


def test_non_contiguous_marked_input_equals_eager():
    c = Counter()
    cf = ember.compile(f, backend=c)
    for b in (3, 5, 7):
        x = ember.randn(3, b).t()
        dynamo.mark_dynamic(x, 0)
        assert ember.allclose(cf(x), f(x))


def test_explain_with_a_marked_input_still_counts_its_graph():
    x = ember.randn(4, 3)
    dynamo.mark_dynamic(x, 0)
    out = dynamo.explain(f)(x)
    assert out.graph_count == 1


def test_reset_forgets_a_pending_trace():
    c = Counter()
    cf = ember.compile(f, backend=c)
    x = ember.randn(4, 3)
    dynamo.mark_dynamic(x, 0)
    cf(x)
    assert cf.deferred is not None
    dynamo.reset()
    assert cf.deferred is None
    y = ember.randn(6, 3)
    dynamo.mark_dynamic(y, 0)
    assert ember.allclose(cf(y), f(y)) and c.n == 0   # pending again: nothing compiled yet
    z = ember.randn(9, 3)
    dynamo.mark_dynamic(z, 0)
    assert ember.allclose(cf(z), f(z)) and c.n == 1
