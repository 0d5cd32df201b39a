"""An out-of-tree backend through PrivateUse1, as torch's extension tutorial does it: kernels
registered with ember.library under "PrivateUse1" over host NumPy memory, the backend renamed
"toy", its Tensor/Module methods generated and its module registered as ember.toy."""
import sys
import types

import numpy as np
import pytest

import ember
from ember.core.keys import backend_keyset
from ember.core.storage import UntypedStorage
from ember.core.tensor_impl import contiguous_strides, make_meta
from ember.utils import backend_registration as br


def _alloc(size, stride, dtype, device):
    dtype = dtype or ember.get_default_dtype()
    dev = ember.device(device) if device is not None else ember.device("toy", 0)
    if dev.index is None:
        dev = ember.device(dev.type, 0)
    t = make_meta(size, dtype, stride, device=dev, keys=backend_keyset(dev.type))
    n = 1 + sum((s - 1) * st for s, st in zip(size, t._strides)) if all(size) else 0
    nbytes = n * dtype.itemsize
    t._storage = UntypedStorage(np.zeros(nbytes, np.uint8), nbytes, dev)
    return t


def _arr(t):
    """The NumPy view of a toy tensor's host memory (a CPU tensor's own array)."""
    if t._device.type == "cpu":
        return t._np
    buf = t.untyped_storage().data.view(t._dtype.np)
    isz = t._dtype.itemsize
    return np.lib.stride_tricks.as_strided(buf[t._offset:], t._shape,
                                           tuple(s * isz for s in t._strides))


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    return _alloc(tuple(size), contiguous_strides(tuple(size)), dtype, device)


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _alloc(tuple(size), tuple(stride), dtype, device)


def copy_(dst, src, non_blocking=False):
    np.copyto(_arr(dst), _arr(src), casting="unsafe")
    return dst


def _binary(f):
    def kernel(a, b, alpha=1):
        y = _arr(b) if isinstance(b, ember.Tensor) else b
        r = f(_arr(a), y * alpha if alpha != 1 else y)
        out = _alloc(r.shape, contiguous_strides(r.shape), ember.result_type(a, b), a._device)
        np.copyto(_arr(out), r, casting="unsafe")
        return out
    return kernel


def fill_(a, value):
    _arr(a)[...] = value
    return a


def local_scalar_dense(a):
    return _arr(a).reshape(()).item()


class ToyModule(types.ModuleType):
    """What a backend registers as ember.toy."""

    def __init__(self):
        super().__init__("ember.toy")

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def current_device():
        return 0


@pytest.fixture
def toy():
    lib = ember.library.Library("aten", "IMPL")
    try:
        lib.impl("empty.memory_format", empty_memory_format, "PrivateUse1")
        lib.impl("empty_strided", empty_strided, "PrivateUse1")
        lib.impl("copy_", copy_, "PrivateUse1")
        lib.impl("add.Tensor", _binary(np.add), "PrivateUse1")
        lib.impl("mul.Tensor", _binary(lambda x, y: np.multiply(x, y)), "PrivateUse1")
        lib.impl("fill_.Scalar", fill_, "PrivateUse1")
        lib.impl("_local_scalar_dense", local_scalar_dense, "PrivateUse1")
        ember.utils.rename_privateuse1_backend("toy")
        ember.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                                             for_storage=False)
        ember._register_device_module("toy", ToyModule())
        yield
    finally:
        lib._destroy()
        br._reset_privateuse1_backend()


def test_toy_end_to_end(toy):
    d = ember.device("toy:0")
    assert d.type == "toy" and d.index == 0 and str(d) == "toy:0"
    assert ember.device("privateuseone:0") is d  # torch: the old name parses to the new one
    a = ember.tensor([1.0, 2.0, 3.0]).to("toy")
    b = ember.empty(3, device="toy").fill_(1)  # aten::ones has no composite kernel in ember
    assert a.device == d and b.device == d
    assert a.is_toy and not a.is_cpu and not ember.ones(1).is_toy
    c = a + b
    assert c.device == d and c.is_toy
    assert c.cpu().tolist() == [2.0, 3.0, 4.0]
    assert (a * 2).to("cpu").tolist() == [2.0, 4.0, 6.0]
    assert (a * b).add(a, alpha=2).cpu().tolist() == [3.0, 6.0, 9.0]
    s = ember.tensor(5).toy()
    assert s.device == d and s.item() == 5
    # a 0-d CPU tensor may join a toy tensor, as in torch
    assert (a + ember.tensor(1.0)).cpu().tolist() == [2.0, 3.0, 4.0]
    assert ember.ones(2).toy(0).device == d
    assert ember.ones(2).toy("toy:0").device == d
    assert ember.ones(2, dtype=ember.int64).toy().dtype == ember.int64
    assert ember.toy.device_count() == 1 and sys.modules["ember.toy"] is ember.toy


def test_toy_errors(toy):
    a = ember.empty(2, device="toy")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                       "found at least two devices, toy:0 and cpu!"):
        a + ember.ones(2)
    with pytest.raises(RuntimeError, match=", mtia, privateuseone device type at start of device "
                       "string: xyz"):  # torch keeps listing "privateuseone" after a rename
        ember.device("xyz")
    with pytest.raises(RuntimeError, match="Invalid device, must be toy device"):
        ember.ones(2).toy("cpu")
    with pytest.raises(NotImplementedError, match="'PrivateUse1' backend"):
        a.sub(a)  # no kernel registered for it
    with pytest.raises(RuntimeError, match="has already been set! Current backend: toy"):
        ember.utils.rename_privateuse1_backend("other")
    ember.utils.rename_privateuse1_backend("toy")  # the same name again is fine
    with pytest.raises(RuntimeError, match="has already been registered with is_toy"):
        ember.utils.generate_methods_for_privateuse1_backend()
    with pytest.raises(RuntimeError, match="runtime module of 'toy' has already been registered"):
        ember._register_device_module("toy", types.ModuleType("m"))


def test_toy_module(toy):
    m = ember.nn.Linear(3, 2)
    assert m.toy() is m
    assert m.weight.is_toy and m.bias.device == ember.device("toy:0")


def test_toy_storage_methods(toy):
    ember.utils.generate_methods_for_privateuse1_backend(for_tensor=False, for_module=False,
                                                         for_storage=True)
    assert ember.empty(2, device="toy").untyped_storage().is_toy
    assert not ember.ones(2).untyped_storage().is_toy


def test_unregistered_afterwards():
    assert not hasattr(ember.Tensor, "toy") and not hasattr(ember.Tensor, "is_toy")
    assert not hasattr(ember.nn.Module, "toy") and not hasattr(ember, "toy")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ember.device("toy:0")
    with pytest.raises(RuntimeError, match="in-tree device name: cuda"):
        ember.utils.rename_privateuse1_backend("cuda")
    assert ember.device("privateuseone:0").type == "privateuseone"
