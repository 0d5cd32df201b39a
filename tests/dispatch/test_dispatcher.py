"""The dispatcher: precedence, fallthrough, boxed fallbacks, Library, errors, tracing."""
import numpy as np
import pytest

import ember
from ember.core.keys import DispatchKey, format_keyset
from ember.dispatch import operator as _op
from ember.library import Library, fallthrough_kernel


@pytest.fixture
def lib():
    libs = []

    def make(ns, kind, key=""):
        lb = Library(ns, kind, key)
        libs.append(lb)
        return lb
    yield make
    for lb in reversed(libs):
        lb._destroy()


def x():
    return ember.from_numpy(np.arange(4, dtype=np.float32))


def test_define_impl_and_call(lib):
    L = lib("ember_test", "DEF")
    L.define("twice(Tensor self) -> Tensor")
    L.impl("twice", lambda t: t * 2, "CPU")
    r = ember.ops.ember_test.twice.default(x())
    assert r.tolist() == [0, 2, 4, 6]
    r = ember.ops.ember_test.twice(x())  # the overload packet resolves too
    assert r.tolist() == [0, 2, 4, 6]


def test_missing_backend_error(lib):
    L = lib("ember_test2", "DEF")
    L.define("only_cpu(Tensor self) -> Tensor")
    L.impl("only_cpu", lambda t: t, "CPU")
    m = ember.empty(3, device="meta")
    with pytest.raises(NotImplementedError, match=r"Could not run 'ember_test2::only_cpu' with arguments "
                       r"from the 'Meta' backend.*only available for these backends: \[CPU\]"):
        ember.ops.ember_test2.only_cpu.default(m)


def test_precedence_direct_over_composite(lib):
    L = lib("ember_test3", "DEF")
    L.define("f(Tensor self) -> Tensor")
    L.impl("f", lambda t: t + 100, "CompositeImplicitAutograd")
    assert ember.ops.ember_test3.f.default(x()).tolist() == [100, 101, 102, 103]
    L.impl("f", lambda t: t + 1, "CPU")
    assert ember.ops.ember_test3.f.default(x()).tolist() == [1, 2, 3, 4]
    # meta has no direct kernel: CompositeImplicit serves it
    assert ember.ops.ember_test3.f.default(ember.empty(2, device="meta")).device.type == "meta"


def test_composite_explicit_serves_backends(lib):
    L = lib("ember_test4", "DEF")
    L.define("g(Tensor self) -> Tensor")
    L.impl("g", lambda t: t - 1, "CompositeExplicitAutograd")
    assert ember.ops.ember_test4.g.default(x()).tolist() == [-1, 0, 1, 2]


def test_layer_kernel_redispatches_and_fallthrough(lib):
    L = lib("ember_test5", "DEF")
    L.define("h(Tensor self) -> Tensor")
    L.impl("h", lambda t: t + 1, "CPU")
    seen = []

    def python_layer(below, t):
        seen.append("Python")
        return below(t) * 10
    L.impl("h", python_layer, "Python", with_keyset=True)
    from ember.core.tls import IncludeKeys
    with IncludeKeys(1 << DispatchKey.Python):
        assert ember.ops.ember_test5.h.default(x()).tolist() == [10, 20, 30, 40]
    assert seen == ["Python"]
    L.impl("h", fallthrough_kernel, "Python")
    with IncludeKeys(1 << DispatchKey.Python):
        assert ember.ops.ember_test5.h.default(x()).tolist() == [1, 2, 3, 4]


def test_boxed_fallback_serves_every_op(lib):
    calls = []

    def fallback(op, below, args):
        calls.append(op.qualname)
        return below(*args)
    L = lib("_", "IMPL")
    L.fallback(fallback, "Python")
    from ember.core.tls import IncludeKeys
    with IncludeKeys(1 << DispatchKey.Python):
        a = x()
        (a + a).neg()
    assert calls == ["aten::add.Tensor", "aten::neg"]


def test_registration_invalidates_cache(lib):
    L = lib("ember_test6", "DEF")
    L.define("k(Tensor self) -> Tensor")
    L.impl("k", lambda t: t + 1, "CPU")
    op = ember.ops.ember_test6.k.default
    assert op(x()).tolist() == [1, 2, 3, 4]
    assert len(op.table) == 1
    L.impl("k", lambda t: t + 2, "CPU")
    assert len(op.table) == 0
    assert op(x()).tolist() == [2, 3, 4, 5]


def test_duplicate_define_error(lib):
    L = lib("ember_test7", "DEF")
    L.define("d(Tensor self) -> Tensor")
    with pytest.raises(RuntimeError, match="same name and overload name multiple times"):
        L.define("d(Tensor self) -> Tensor")


def test_ops_namespace_and_schema():
    op = ember.ops.aten.add.Tensor
    assert str(op.schema) == "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert op(x(), x()).tolist() == [0, 2, 4, 6]
    assert ember.ops.aten.add_.Tensor.schema.is_inplace
    with pytest.raises(AttributeError):
        ember.ops.aten.add.nonexistent  # noqa: B018


def test_inplace_bumps_version():
    a = x()
    v = a[1:] if hasattr(ember.Tensor, "__getitem__") and False else a.transpose(0, 0)
    assert a._version == 0
    a.add_(1)
    assert a._version == 1 and v._version == 1
    ember.add(a, 1, out=a)
    assert a._version == 2


def test_device_mismatch():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at "
                       "least two devices, cpu and meta!"):
        x() + ember.empty(4, device="meta")
    # a 0-d CPU tensor may join a tensor of another device
    r = ember.empty(4, device="meta") + ember.from_numpy(np.array(2.0, dtype=np.float32))
    assert r.device.type == "meta"


def test_trace_records_layers_and_costs_nothing_after():
    a = x()
    with ember.dispatch_trace() as tr:
        a.add_(1)
    text = str(tr)
    assert "aten::add_.Tensor" in text and "ADInplaceOrView" in text and "CPU" in text
    assert format_keyset(tr.calls[0].keyset).startswith("DispatchKeySet(")
    assert [layer.key.name for layer in tr.calls[0].layers] == ["ADInplaceOrView", "CPU"]
    assert not _op.observers
    entry = ember.ops.aten.add_.Tensor.table[a._keys & ~ember.core.tls.state.excluded]
    assert "traced" not in getattr(entry, "__qualname__", "")


def test_bad_arguments_list_signatures():
    with pytest.raises(TypeError, match=r"add\(\): argument 'other' \(position 2\) must be Tensor, not str"):
        ember.add(x(), "nope")


def test_generated_autograd_kernels_get_below_as_a_default():
    """operator._bind_below: a kernel whose last parameter is `below=None` is bound as a copy of the
    function with that default (a plain Python call); one taking `below` first keeps a partial."""
    import functools

    from ember.dispatch.operator import _bind_below

    def last(x, below=None):
        return below(x) + 1

    def first(below, x):
        return below(x) * 2

    def below(x):
        return x + 10

    g = _bind_below(last, below)
    assert g.__class__ is last.__class__ and g is not last and g.__defaults__ == (below,)
    assert g(1) == 12 and last.__defaults__ == (None,)
    p = _bind_below(first, below)
    assert isinstance(p, functools.partial) and p(1) == 22
    x = ember.ones(2, requires_grad=True)
    entry = ember.ops.aten.tanh.default.table[x._keys]
    assert not isinstance(entry, functools.partial) and entry.__defaults__[0] is not None
    assert (x.tanh()).grad_fn.name() == "TanhBackward0"
