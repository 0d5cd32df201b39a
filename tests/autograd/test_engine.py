"""The autograd engine and graph: structure, hooks, errors, memory (issue: autograd layer)."""
import gc
import weakref

import numpy as np
import pytest
import torch

import ember
from harness import same_error


def t3(lib, rg=True):
    return lib.tensor([1.0, 2.0, 3.0], requires_grad=rg)


def names(fn):
    out = []
    for nf, _ in fn.next_functions:
        out.append(None if nf is None else nf.name())
    return out


def test_grad_fn_structure_matches_torch():
    for lib_expr in [lambda L, a, b: a * b + a, lambda L, a, b: (a - b) * 2, lambda L, a, b: -(a * b),
                     lambda L, a, b: a.to(L.float64) * 3]:
        ea, eb, ta, tb = t3(ember), t3(ember), t3(torch), t3(torch)
        e, t = lib_expr(ember, ea, eb), lib_expr(torch, ta, tb)
        assert e.grad_fn.name() == t.grad_fn.name()
        assert names(e.grad_fn) == names(t.grad_fn)
        for (en, _), (tn, _) in zip(e.grad_fn.next_functions, t.grad_fn.next_functions):
            if en is not None:
                assert names(en) == names(tn)


def test_leaf_properties():
    a = t3(ember)
    assert a.is_leaf and a.requires_grad and a.grad_fn is None
    b = a * 2
    assert not b.is_leaf and b.requires_grad
    c = ember.tensor([1.0])
    assert c.is_leaf and not c.requires_grad
    with ember.no_grad():
        d = a * 2
    assert not d.requires_grad and d.grad_fn is None


def test_accumulates_across_backward_calls():
    a = t3(ember)
    (a * 2).backward(ember.tensor([1.0, 1.0, 1.0]))
    (a * 3).backward(ember.tensor([1.0, 1.0, 1.0]))
    assert a.grad.tolist() == [5.0, 5.0, 5.0]


def test_shared_gradient_is_not_aliased():
    a, b = t3(ember), t3(ember)
    (a + b).backward(ember.tensor([1.0, 1.0, 1.0]))
    a.grad.add_(1)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_broadcast_gradient_reduced():
    a = ember.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    b = ember.tensor([[1.0], [2.0]], requires_grad=True)
    (a * b).backward(ember.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]))
    assert a.grad.tolist() == [[3.0, 3.0, 3.0]]
    assert b.grad.tolist() == [[6.0], [6.0]]


def test_nonscalar_implicit_grad_error():
    same_error(lambda L: (t3(L) * 2).backward())


def test_no_grad_fn_error():
    same_error(lambda L: L.tensor([1.0]).backward())


def test_backward_twice_error():
    def f(L):
        a = t3(L)
        y = a * a
        y.backward(L.tensor([1.0, 1.0, 1.0]))
        y.backward(L.tensor([1.0, 1.0, 1.0]))
    same_error(f)


def test_retain_graph_allows_second_backward():
    a = t3(ember)
    y = a * a
    y.backward(ember.tensor([1.0, 1.0, 1.0]), retain_graph=True)
    y.backward(ember.tensor([1.0, 1.0, 1.0]))
    assert a.grad.tolist() == [4.0, 8.0, 12.0]


def test_leaf_inplace_errors():
    def leaf(L):
        t3(L).add_(1)
    same_error(leaf)

    def view_of_leaf(L):
        a = t3(L)
        a.transpose(0, 0).add_(1)
    same_error(view_of_leaf)


def test_version_counter_error_message():
    def f(L):
        a = t3(L)
        z = a * 2
        w = z * z
        z.add_(1)
        w.backward(L.tensor([1.0, 1.0, 1.0]))
    same_error(f)


def test_inplace_on_view_rewrites_base_history():
    for L in (ember, torch):
        b = L.tensor([1.0, 2.0, 3.0, 4.0])
        w = L.tensor([2.0, 3.0], requires_grad=True)
        v = b.as_strided((2,), (1,), 1)
        v.mul_(w)
        assert b.grad_fn.name() == "torch::autograd::CopySlices"
        b.backward(L.tensor([1.0, 10.0, 100.0, 1000.0]))
        if L is ember:
            eg = w.grad.tolist()
        else:
            assert eg == w.grad.tolist()


def test_hooks_order_and_modification():
    calls = []
    a = t3(ember)
    b = a * 2
    b.register_hook(lambda g: calls.append("tensor1") or g * 10)
    b.register_hook(lambda g: calls.append("tensor2"))
    b.grad_fn.register_prehook(lambda go: calls.append("pre"))
    b.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    a.register_hook(lambda g: calls.append("leaf"))
    a.register_post_accumulate_grad_hook(lambda t: calls.append("post_acc"))
    b.backward(ember.tensor([1.0, 1.0, 1.0]))
    assert calls == ["tensor1", "tensor2", "pre", "post", "leaf", "post_acc"]
    assert a.grad.tolist() == [20.0, 20.0, 20.0]


def test_retain_grad():
    a = t3(ember)
    b = a * 2
    b.retain_grad()
    (b * b).backward(ember.tensor([1.0, 1.0, 1.0]))
    assert b.grad.tolist() == [4.0, 8.0, 12.0]
    assert b.retains_grad


def test_autograd_grad_and_allow_unused():
    a, b = t3(ember), t3(ember)
    y = a * 3
    ga, = ember.autograd.grad(y, a, ember.tensor([1.0, 1.0, 1.0]), retain_graph=True)
    assert ga.tolist() == [3.0, 3.0, 3.0] and a.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(y, [a, b], ember.tensor([1.0, 1.0, 1.0]), retain_graph=True)
    ga, gb = ember.autograd.grad(y, [a, b], ember.tensor([1.0, 1.0, 1.0]), allow_unused=True)
    assert gb is None


def test_backward_inputs_argument():
    a, b = t3(ember), t3(ember)
    (a * b).backward(ember.tensor([1.0, 1.0, 1.0]), inputs=[a])
    assert a.grad.tolist() == [1.0, 2.0, 3.0] and b.grad is None


def test_double_backward_create_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * x * x
    g, = ember.autograd.grad(y, x, ember.tensor([1.0, 1.0]), create_graph=True)
    assert g.tolist() == [3.0, 12.0]
    g2, = ember.autograd.grad(g, x, ember.tensor([1.0, 1.0]))
    assert g2.tolist() == [6.0, 12.0]


def test_deep_chain_no_recursion():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward(ember.tensor([1.0]))
    assert x.grad.tolist() == [1.0]


def test_saved_tensors_released_and_no_cycles():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    y = h * h  # saves h twice
    ref = weakref.ref(h)
    node = weakref.ref(y.grad_fn)
    del h
    assert ref() is not None  # held by the graph
    y.backward(ember.tensor([1.0, 1.0]))
    assert ref() is None  # released by backward without retain_graph
    del y
    assert node() is None  # nothing cyclic keeps the graph alive (no gc needed)
    gc.collect()


def test_saved_output_has_no_cycle():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(ember.float64)
    node = weakref.ref(y.grad_fn)
    del y
    assert node() is None


def test_grad_modes():
    a = t3(ember)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        with ember.enable_grad():
            assert (a * 2).requires_grad
    ember.set_grad_enabled(False)
    assert not (a * 2).requires_grad
    ember.set_grad_enabled(True)
    with ember.inference_mode():
        r = a * 2
        assert not r.requires_grad

    @ember.no_grad()
    def f(x):
        return x * 2
    assert not f(a).requires_grad


def test_requires_grad_int_error():
    same_error(lambda L: L.tensor([1, 2]).requires_grad_())


def test_detach_shares_memory_not_history():
    a = t3(ember)
    d = (a * 2).detach()
    assert not d.requires_grad and d.grad_fn is None
    b = a * 2
    d = b.detach()
    d.add_(1)  # allowed: modifies data, not history
    assert b._version == d._version == 1


def test_saved_tensor_hooks():
    packed = []
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t * 1, lambda t: t):
        y = x * x
    y.backward(ember.tensor([1.0, 1.0]))
    assert packed and x.grad.tolist() == [2.0, 4.0]


def test_custom_function():
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.needs_input_grad == (True,)
    y.backward(ember.tensor([1.0, 1.0]))
    assert x.grad.tolist() == [3.0, 12.0]


def test_gradcheck_and_gradgradcheck():
    x = ember.tensor(np.array([0.5, -1.5, 2.0]), requires_grad=True)
    y = ember.tensor(np.array([1.5, 2.5, -0.5]), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: a * b * a, (x, y))
    assert ember.autograd.gradgradcheck(lambda a, b: a * b * a, (x, y))


def test_anomaly_mode_nan_check():
    x = ember.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with ember.autograd.detect_anomaly():
            y = x * float("nan")
            with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
                y.backward(ember.tensor([1.0]))


def test_checkpoint_recomputes():
    from ember.utils.checkpoint import checkpoint
    calls = []

    def seg(x):
        calls.append(1)
        return x * x * 2
    x = ember.tensor([1.0, 3.0], requires_grad=True)
    y = checkpoint(seg, x, use_reentrant=True)
    y.backward(ember.tensor([1.0, 1.0]))
    assert len(calls) == 2 and x.grad.tolist() == [4.0, 12.0]


def test_out_variant_refuses_grad():
    same_error(lambda L: L.add(t3(L), t3(L), out=L.tensor([0.0, 0.0, 0.0])))


def test_torch_gradients_match_simple():
    from autograd_harness import compare_grads
    from harness import make_pair
    rng = np.random.default_rng(0)
    ea, ta = make_pair((3, 4), "float64", rng, "transposed")
    eb, tb = make_pair((4,), "float64", rng)
    compare_grads(lambda L, a, b: (a * b - a) * a, [ea, eb], [ta, tb])


def _scale_function(lib, log):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(x, k=2.0):
            log.append(("forward", lib.is_grad_enabled()))
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            log.append(("setup", type(inputs).__name__, len(inputs), tuple(output.shape), lib.is_grad_enabled()))
            ctx.save_for_backward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k + x * 0, None
    return Scale


def test_function_setup_context_style_like_torch():
    # PyTorch 2's style: forward(*args) without ctx, then setup_context(ctx, inputs, output), with
    # keyword and default arguments bound to positions
    out = {}
    for lib in (ember, torch):
        log = []
        Scale = _scale_function(lib, log)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Scale.apply(x)
        y.sum().backward()
        z = Scale.apply(x, k=3.0)
        with lib.no_grad():
            n = Scale.apply(x)
        out[lib] = (log, y.grad_fn.name(), x.grad.tolist(), z.tolist(), n.requires_grad,
                    Scale.apply(lib.ones(2)).requires_grad)
    assert out[ember] == out[torch]


def test_function_without_setup_context_says_so():
    class F(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x
    with pytest.raises(NotImplementedError, match="setup_context is not implemented"):
        ember.autograd.Function.setup_context(None, (), None)
    assert F.apply(ember.ones(1)).tolist() == [1.0]


def test_gradient_edges_like_torch():
    out = {}
    for lib in (ember, torch):
        G = lib.autograd.graph
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        e = G.get_gradient_edge(y)
        (gy,) = lib.autograd.grad((y * y).sum(), e)  # d/dy, through the edge
        out[lib] = (e.node.name(), e.output_nr, e.ownership_token, G.get_gradient_edge(x).node.name(),
                    gy.tolist(), isinstance(e, tuple))
    assert out[ember] == out[torch]
    same_error(lambda L: L.autograd.graph.get_gradient_edge(L.ones(2)))


def test_variable_increment_version_and_multithreading_flag():
    for lib in (ember, torch):
        V = lib.autograd.Variable
        t = lib.ones(2)
        v = V(t, requires_grad=True)
        assert v.requires_grad and v.is_leaf and v is not t and isinstance(t, V) and not V(t).requires_grad
        assert v.data_ptr() == t.data_ptr()
        before = t._version
        lib.autograd.graph.increment_version(t)
        assert t._version == before + 1
        with lib.autograd.set_multithreading_enabled(False):
            pass
    same_error(lambda L: L.autograd.Variable([1, 2]))


def test_vhp_hvp_like_torch():
    def f(lib):
        return lambda x, y: (x ** 3 * y).sum() + (y.sin() * x).sum()
    res = {}
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64)
        y = lib.tensor([0.5, -1.0], dtype=lib.float64)
        v = (lib.tensor([1.0, 0.5], dtype=lib.float64), lib.tensor([-1.0, 2.0], dtype=lib.float64))
        a = lib.autograd.functional.vhp(f(lib), (x, y), v)
        b = lib.autograd.functional.hvp(f(lib), (x, y), v)
        c = lib.autograd.functional.vhp(lambda z: (z ** 3).sum(), lib.tensor([3.0], dtype=lib.float64))
        res[lib] = [a[0].item()] + [t.tolist() for t in a[1]] + [b[0].item()] + [t.tolist() for t in b[1]] + \
            [c[0].item(), c[1].tolist()]
    assert np.allclose(np.concatenate([np.ravel(r) for r in res[ember]]),
                       np.concatenate([np.ravel(r) for r in res[torch]]))
