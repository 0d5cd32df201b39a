"""Small pieces of torch's API programs reach for: Tensor.data's own version counter,
torch._C._LinAlgError, torch.onnx's import, is_in_onnx_export and dynamo_export's error."""
import pytest
import torch

import ember


def _data_cases(lib):
    r = []
    w = lib.ones(3, requires_grad=True)
    scratch = lib.zeros(3)
    y = w * scratch
    scratch.data[0] = 5  # "to sneak past the version checker"
    y.sum().backward()
    r.append(w.grad.tolist())
    x = lib.ones(3, requires_grad=True)
    z = (x * x).sum()
    x.data.mul_(2)
    z.backward()
    r.append(x.grad.tolist())
    a = lib.ones(3)
    d = a.data
    d.add_(1)
    r.append((a._version, d._version, a.data._version, d._is_view(), a.tolist()))
    b = lib.ones(2, requires_grad=True)
    r.append((b.data.requires_grad, b.data.is_leaf, b.data.grad_fn is None))
    c = lib.ones(3)
    cd = c.data
    cd[1:].add_(1)
    r.append((c._version, cd._version, c.tolist()))
    e = lib.ones(3)
    e.add_(1)
    r.append((e._version, e.data._version, e.detach()._version))
    return r


def test_data_has_its_own_version_counter():
    assert _data_cases(ember) == _data_cases(torch)


def test_data_write_still_caught_through_the_tensor():
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        s = lib.zeros(3)
        y = w * s
        s[0] = 5  # a write through the tensor itself bumps its version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_linalg_error_alias():
    assert ember._C._LinAlgError is ember.linalg.LinAlgError
    assert issubclass(ember._C._LinAlgError, RuntimeError)
    for lib in (torch, ember):
        with pytest.raises(lib._C._LinAlgError):
            lib.linalg.cholesky(-lib.eye(2))


def test_onnx():
    import ember.onnx
    assert ember.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    # export itself is tested in tests/test_onnx.py (it needs the optional onnx package)
    with pytest.raises(NotImplementedError, match="dynamo_export"):
        ember.onnx.dynamo_export(ember.nn.Linear(2, 2), ember.ones(1, 2))


@pytest.mark.parametrize("call", [
    lambda lib: lib.pow(2, 3),
    lambda lib: lib.xlogy(2, 3),
    lambda lib: lib.special.xlogy(2, 3),
    lambda lib: lib.float_power(2, 3),
    lambda lib: lib.bitwise_and(1, 3),
    lambda lib: lib.special.zeta(2.0, 1.0),
    lambda lib: lib.atan2(1.0, 2.0),
    lambda lib: lib.maximum(1, 2),
    lambda lib: lib.linalg.vector_norm(1),
    lambda lib: lib.fft.fft(1),
])
def test_number_number_calls_are_type_errors(call):
    from harness import same_error
    same_error(call, exc=TypeError)


@pytest.mark.parametrize("call", [
    lambda lib: lib.add(2, 3),
    lambda lib: lib.add(2, 3.5),
    lambda lib: lib.mul(2.0, 3),
    lambda lib: lib.sub(1, 2),
    lambda lib: lib.div(1, 2),
    lambda lib: lib.div(7, 2, rounding_mode="floor"),
    lambda lib: lib.true_divide(3, 2),
    lambda lib: lib.floor_divide(7, 2),
    lambda lib: lib.add(True, True),
    lambda lib: lib.mul(2j, 2),
    lambda lib: lib.add(1, 2, alpha=3),
    lambda lib: lib.add(2, lib.tensor([1, 2], dtype=lib.int32)),
    lambda lib: lib.mul(2.5, lib.tensor([1, 2], dtype=lib.float16)),
    lambda lib: lib.sub(2, lib.tensor(1.0)),
    lambda lib: lib.pow(2, lib.tensor(3)),
])
def test_numbers_as_tensors(call):
    from harness import check
    check(call(ember), call(torch))


ZERO_SIZE_VIEWS = [
    lambda a: a[2:2], lambda a: a[5:], lambda a: a[2:5][3:], lambda a: a.view(2, 5)[1:, :0],
    lambda a: a.narrow(0, 4, 0), lambda a: a[10:], lambda a: a[8:2], lambda a: a.view(2, 5)[:, 5:],
    lambda a: a.as_strided((0,), (1,), 7), lambda a: a[2:2].view(0), lambda a: a[4:4].as_strided((0,), (1,)),
    lambda a: a[3:3].reshape(0, 2), lambda a: a.view(2, 5)[1][5:], lambda a: a.chunk(5)[3][1:1],
    lambda a: a.view(2, 5).select(1, 3)[1:1], lambda a: a.view(2, 5)[1:1, 2:4],
]


@pytest.mark.parametrize("k", range(len(ZERO_SIZE_VIEWS)))
def test_zero_size_views_keep_storage_offset(k):
    f = ZERO_SIZE_VIEWS[k]
    e, t = f(ember.arange(10.0)), f(torch.arange(10.0))
    assert (e.storage_offset(), tuple(e.shape), e.stride()) == (t.storage_offset(), tuple(t.shape), t.stride())
    em = f(ember.arange(10.0, device="meta"))
    assert em.storage_offset() == t.storage_offset()


def test_assert_and_set_grad_enabled():
    import pytest
    import torch

    import ember
    for L in (ember, torch):
        L._assert(True, "fine")
        L._assert(L.tensor(True), "fine")
        with pytest.raises(AssertionError, match="^boom$"):
            L._assert(L.tensor(False), "boom")
        L._C._set_grad_enabled(False)
        assert not L.is_grad_enabled()
        L._C._set_grad_enabled(True)
        assert L.is_grad_enabled()
