"""The Tensor's Python surface against PyTorch: conversion to Python/NumPy, DLPack, protocols,
pickling, dtype/device conversion, storage and version counters, Size, transposes, real/imag."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember
from harness import DTYPES, check, edtype, make_pair, same_error, tdtype


def same_msg(fn):
    """Like same_error, with torch's `torch.` written `ember.` (dtype/Size/device names)."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(Exception) as ee:
        fn(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0].replace("torch.", "ember.")


def both(data, dtype=None):
    e = ember.tensor(data, dtype=None if dtype is None else edtype(dtype))
    t = torch.tensor(data, dtype=None if dtype is None else tdtype(dtype))
    return e, t


# ---- item / tolist -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_item_and_tolist(dtype, rng):
    for shape in [(), (1,), (1, 1), (3,), (2, 3), (0,), (2, 0, 3)]:
        e, t = make_pair(shape, dtype, rng)
        el, tl = e.tolist(), t.tolist()
        assert el == tl and type(el) is type(tl)
        if shape == ():
            assert type(el) is type(tl)
        if e.numel() == 1:
            ei, ti = e.item(), t.item()
            assert ei == ti and type(ei) is type(ti)
    e, t = make_pair((3, 4), dtype, rng, "transposed")
    assert e.tolist() == t.tolist()


def test_item_errors():
    same_error(lambda lib: lib.tensor([1.0, 2.0]).item())
    same_error(lambda lib: lib.empty(0).item())
    same_error(lambda lib: lib.empty(1, device="meta").item())
    same_error(lambda lib: lib.empty(2, device="meta").tolist())


# ---- NumPy interop -------------------------------------------------------------------------
def test_numpy_shares_memory():
    e = ember.tensor([1.0, 2.0, 3.0])
    n = e.numpy()
    n[0] = 10
    assert e.tolist() == [10.0, 2.0, 3.0]
    e.add_(1)
    assert n.tolist() == [11.0, 3.0, 4.0]
    v = e.as_strided((2,), (1,), 1)
    assert np.shares_memory(v.numpy(), n)


def test_numpy_errors():
    same_error(lambda lib: lib.tensor([1.0], requires_grad=True).numpy())
    same_error(lambda lib: lib.empty(2, device="meta").numpy())
    same_error(lambda lib: np.asarray(lib.tensor([1.0], requires_grad=True)))
    same_error(lambda lib: np.asarray(lib.empty(2, device="meta")))
    assert ember.tensor([1.0], requires_grad=True).numpy(force=True).tolist() == [1.0]


def test_array_protocol():
    e = ember.tensor([[1, 2], [3, 4]], dtype=ember.int32)
    a = np.asarray(e)
    assert a.dtype == np.int32 and np.shares_memory(a, e.numpy())
    assert np.asarray(e, dtype=np.float64).dtype == np.float64
    assert np.array(e).tolist() == [[1, 2], [3, 4]]
    assert not np.shares_memory(np.array(e, copy=True), e.numpy())
    # ufuncs give tensors back, as torch's __array_wrap__ does (bool results become uint8)
    t = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    for fn in (np.sin, lambda x: np.add(x, 1), lambda x: np.greater(x, 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            check(fn(e), fn(t))


def test_from_numpy_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    e = ember.from_numpy(a)
    a[0, 0] = 7
    assert e[0, 0].item() == 7
    e.mul_(2)
    assert a[0, 0] == 14
    assert e.data_ptr() == a.__array_interface__["data"][0]
    ee = ember.from_numpy(a[:, 1:])
    assert ee.stride() == (3, 1) and ee.storage_offset() == 1


# ---- DLPack -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
def test_dlpack_ember_to_torch(dtype, rng):
    for layout in ("contiguous", "transposed", "strided"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        tt = torch.from_dlpack(e)
        assert tt.stride() == e.stride()
        check(e, tt)
        assert tt.data_ptr() == e.data_ptr()


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
def test_dlpack_torch_to_ember(dtype, rng):
    for layout in ("contiguous", "transposed", "strided"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        ee = ember.from_dlpack(t)
        check(ee, t)
        assert ee.stride() == t.stride()
        assert ee.data_ptr() == t.data_ptr()


def test_dlpack_shares_memory_and_numpy():
    t = torch.arange(4.0)
    e = ember.from_dlpack(t)
    t[0] = 9
    assert e.tolist() == [9.0, 1.0, 2.0, 3.0]
    e.add_(1)
    assert t.tolist() == [10.0, 2.0, 3.0, 4.0]
    n = np.from_dlpack(e)
    n[1] = -1
    assert e.tolist()[1] == -1
    ea = ember.from_dlpack(np.arange(3))
    assert ea.dtype is ember.int64 and ea.tolist() == [0, 1, 2]
    assert e.__dlpack_device__() == tuple(int(x) for x in t.__dlpack_device__())


def test_dlpack_errors():
    same_error(lambda lib: lib.tensor([1.0], requires_grad=True).__dlpack__())
    same_error(lambda lib: lib.empty(2, device="meta").__dlpack__())
    same_error(lambda lib: lib.empty(2, device="meta").__dlpack_device__())


# ---- Python protocols ----------------------------------------------------------------------
def test_len_iter():
    e, t = both([[1, 2], [3, 4], [5, 6]])
    assert len(e) == len(t) == 3
    rows = list(e)
    assert len(rows) == 3
    for r, tr in zip(rows, t):
        check(r, tr)
    check(list(ember.tensor([1.0, 2.0]))[1], list(torch.tensor([1.0, 2.0]))[1])
    same_error(lambda lib: len(lib.tensor(1.0)))
    same_error(lambda lib: iter(lib.tensor(1.0)))
    assert len(ember.empty(0, 3)) == 0 and list(ember.empty(0, 3)) == []


@pytest.mark.parametrize("fn", [bool, float, int, complex])
@pytest.mark.parametrize("data,dtype", [(2.5, "float32"), (-2.7, "float64"), (3, "int64"),
                                        (0, "int32"), (True, "bool"), ([1.5], "float32"),
                                        ([[7]], "int16"), (1 + 0j, "complex64"),
                                        (1 + 2j, "complex128"), (0.0, "float16"),
                                        (1.5, "bfloat16"), (float("nan"), "float32"),
                                        (float("inf"), "float64")])
def test_scalar_conversions(fn, data, dtype):
    e, t = both(data, dtype)
    try:
        tv = fn(t)
    except Exception:
        same_error(lambda lib: fn(lib.tensor(data, dtype=getattr(lib, dtype))))
        return
    ev = fn(e)
    assert type(ev) is type(tv)
    assert ev == tv or (ev != ev and tv != tv)


@pytest.mark.parametrize("fn", [bool, float, int, complex])
def test_scalar_conversion_errors(fn):
    same_error(lambda lib: fn(lib.tensor([1.0, 2.0])))
    same_error(lambda lib: fn(lib.empty(0)))
    same_error(lambda lib: fn(lib.empty(1, device="meta")))


def test_index():
    lst = [10, 20, 30]
    for data in (1, [2], True, [[0]]):
        e, t = both(data)
        assert lst[e] == lst[t]
        assert e.__index__() == t.__index__()
    for data in (1.0, [1, 2], [1.5]):
        same_error(lambda lib, data=data: lst[lib.tensor(data)])
    assert range(10)[ember.tensor(3)] == 3


def test_contains():
    e, t = both([[1.0, 5.0], [2.0, 3.0]])
    for v in (1.0, 4, 5, np.float64(2.0)):
        assert (v in e) == (v in t)
    assert (ember.tensor([1.0, 5.0]) in e) == (torch.tensor([1.0, 5.0]) in t)
    same_error(lambda lib: "a" in lib.tensor([1.0]))


def test_format():
    for spec in ("", ".2f", ">10", "e"):
        assert format(ember.tensor(2.5), spec) == format(torch.tensor(2.5), spec)
    assert format(ember.tensor(3), "03d") == format(torch.tensor(3), "03d")
    assert format(ember.tensor([2.5])) == format(torch.tensor([2.5]))
    same_error(lambda lib: format(lib.tensor([2.5]), ".3f"))
    assert format(ember.tensor(2.5, requires_grad=True), ".1f") == "2.5"


def test_hash_and_identity():
    e = ember.tensor([1.0])
    assert hash(e) == hash(e) and {e: 1}[e] == 1
    assert len({e, ember.tensor([1.0])}) == 2


# ---- pickle / deepcopy ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_roundtrip(dtype, rng):
    for layout in ("contiguous", "transposed", "strided", "expanded"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        r = pickle.loads(pickle.dumps(e))
        rt = pickle.loads(pickle.dumps(t))
        check(r, rt, check_stride=True)
    for shape in ((), (0, 2)):
        e, t = make_pair(shape, dtype, rng)
        check(pickle.loads(pickle.dumps(e)), t)


def test_pickle_details():
    a = ember.from_numpy(np.arange(6.0).reshape(2, 3))
    A, B = pickle.loads(pickle.dumps([a, a[1:]]))
    assert B.storage_offset() == 3 and B.untyped_storage().nbytes() == 48
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.foo = 5
    y = pickle.loads(pickle.dumps(x))
    assert y.requires_grad and y.is_leaf and y.foo == 5 and y.tolist() == [1.0, 2.0]
    m = pickle.loads(pickle.dumps(ember.empty(2, 3, device="meta").transpose(0, 1)))
    assert m.device.type == "meta" and m.shape == (3, 2) and m.stride() == (1, 3)
    assert pickle.loads(pickle.dumps(ember.Size([2, 3]))) == ember.Size([2, 3])
    assert type(pickle.loads(pickle.dumps(ember.Size([2, 3])))) is ember.Size
    assert pickle.loads(pickle.dumps(ember.float16)) is ember.float16
    assert pickle.loads(pickle.dumps(ember.device("cuda:1"))) == ember.device("cuda:1")


def test_deepcopy():
    a = ember.from_numpy(np.arange(6.0).reshape(2, 3))
    b, c = a.transpose(0, 1), a.as_strided((3,), (1,), 3)
    A, B, C = copy.deepcopy([a, b, c])
    assert B.stride() == (1, 3) and C.storage_offset() == 3
    assert A.data_ptr() != a.data_ptr()
    A.add_(1)  # views copied together stay views of one copied storage, as in torch
    assert C.tolist() == [4.0, 5.0, 6.0] and a.tolist() == [[0, 1, 2], [3, 4, 5]]
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    x.grad = ember.tensor([3.0, 4.0])
    x.tag = {"k": [1]}
    y = copy.deepcopy(x)
    assert y.requires_grad and y.grad.tolist() == [3.0, 4.0] and y.tag == {"k": [1]}
    assert y.tag is not x.tag
    m = copy.deepcopy(ember.empty(2, device="meta", dtype=ember.int32))
    assert m.device.type == "meta" and m.dtype is ember.int32
    assert copy.copy(x) is not x


def test_deepcopy_non_leaf_error():
    def f(lib):
        x = lib.tensor([1.0], requires_grad=True)
        copy.deepcopy(x * 2)
    same_error(f)


# ---- conversions ---------------------------------------------------------------------------
METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
           "int": "int32", "long": "int64", "short": "int16", "char": "int8", "byte": "uint8",
           "bool": "bool", "cfloat": "complex64", "cdouble": "complex128"}


@pytest.mark.parametrize("src", ["float32", "int64", "bool", "complex64", "float16"])
@pytest.mark.parametrize("meth", sorted(METHODS))
def test_dtype_methods(src, meth, rng):
    e, t = make_pair((2, 3), src, rng, "transposed", low=0, high=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r, rt = getattr(e, meth)(), getattr(t, meth)()
    check(r, rt, check_stride=True)
    assert (r is e) == (rt is t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_to_dtype_all(dtype, rng):
    e, t = make_pair((3,), "float64", rng, low=0, high=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(e.to(edtype(dtype)), t.to(tdtype(dtype)))
        check(e.to(dtype=edtype(dtype)), t.to(dtype=tdtype(dtype)))


def test_to_forms():
    e, t = both([1.0, 2.0])
    assert e.to(ember.float32) is e and e.to("cpu") is e and e.to(e) is e
    assert e.to(ember.float32, copy=True) is not e
    assert e.to("cpu", ember.float32) is e
    for conv in (lambda x, lib: x.to(float), lambda x, lib: x.to(int), lambda x, lib: x.to(bool),
                 lambda x, lib: x.to(complex), lambda x, lib: x.to(lib.float64, True, True),
                 lambda x, lib: x.to(dtype=float), lambda x, lib: x.to(None),
                 lambda x, lib: x.to("meta", lib.int32),
                 lambda x, lib: x.to(lib.device("meta"), dtype=lib.int64),
                 lambda x, lib: x.to(lib.tensor([1], device="meta")),
                 lambda x, lib: x.to(lib.tensor([1], dtype=lib.int16)),
                 lambda x, lib: x.to(tensor=lib.tensor([1], dtype=lib.int8)),
                 lambda x, lib: x.to(memory_format=lib.contiguous_format)):
        check(conv(e, ember), conv(t, torch))
    m = e.to("meta")
    assert m.device == ember.device("meta") and m.dtype is ember.float32
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        m.to("cpu")


def test_to_non_contiguous_preserves_strides(rng):
    e, t = make_pair((3, 4), "float32", rng, "transposed")
    check(e.to(ember.float64), t.to(torch.float64), check_stride=True)
    check(e.to(memory_format=ember.contiguous_format), t.to(memory_format=torch.contiguous_format),
          check_stride=True)


@pytest.mark.parametrize("args", [("cpu", "cpu"), ([1],), ("float32", "float32"), ("t", "cpu"),
                                  ("float64", "cpu"), ("t", "float64"), ("foo",), ("npfloat",)])
def test_to_errors(args):
    def f(lib):
        x = lib.tensor([1.0, 2.0])
        conv = {"float32": lib.float32, "float64": lib.float64, "t": x, "npfloat": np.float64}
        return x.to(*[conv.get(a, a) if isinstance(a, str) else a for a in args])

    with pytest.raises(Exception) as te:
        f(torch)
    with pytest.raises(Exception) as ee:
        f(ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0].replace("torch.", "ember.")


def test_to_keyword_errors():
    for kw in ({"foo": 1}, {"device": 1.5}, {"other": None}):
        def f(lib, kw=kw):
            x = lib.tensor([1.0])
            return x.to(lib.float64, **kw) if "foo" in kw else x.to(
                **({"other": x} if "other" in kw else kw))
        with pytest.raises(TypeError) as te:
            f(torch)
        with pytest.raises(TypeError) as ee:
            f(ember)
        assert str(ee.value).split("\n")[0] == str(te.value).split("\n")[0].replace("torch.",
                                                                                    "ember.")


def test_type():
    for d in DTYPES:
        e, t = both([1, 0], d)
        assert e.type() == t.type()
    assert ember.empty(2, device="meta").type() == torch.empty(2, device="meta").type()
    e, t = both([1.5, 2.0])
    for arg in ("torch.IntTensor", "torch.DoubleTensor"):
        check(e.type(arg), t.type(arg))
    check(e.type(ember.float64), t.type(torch.float64))
    assert e.type(ember.float32) is e and t.type(torch.float32) is t
    same_error(lambda lib: lib.tensor([1.5]).type("foo"))
    same_error(lambda lib: lib.tensor([1.5]).type(float))
    same_error(lambda lib: lib.tensor([1.5]).type(1))
    check(e.type_as(ember.tensor([1])), t.type_as(torch.tensor([1])))
    check(e.type_as(ember.empty(1, device="meta", dtype=ember.int32)),
          t.type_as(torch.empty(1, device="meta", dtype=torch.int32)))


def test_new_tensor_and_legacy_constructor():
    e, t = both([1, 2], "int16")
    check(e.new_tensor([3, 4]), t.new_tensor([3, 4]))
    check(e.new_tensor([3.5], dtype=ember.float64), t.new_tensor([3.5], dtype=torch.float64))
    check(ember.Tensor([1, 2]), torch.Tensor([1, 2]))
    check(ember.Tensor(), torch.Tensor())
    assert ember.Tensor(2, 3).shape == (2, 3) and ember.Tensor(2, 3).dtype is ember.float32
    assert ember.Tensor(ember.Size([4])).shape == (4,)
    same_error(lambda lib: lib.Tensor(2.5))
    same_error(lambda lib: lib.Tensor([1], device="meta"))


# ---- sizes, storage, versions --------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_sizes(dtype, rng):
    for shape in [(), (0,), (3,), (2, 3, 4), (0, 3)]:
        e, t = make_pair(shape, dtype, rng)
        assert e.element_size() == t.element_size()
        assert e.itemsize == t.itemsize
        assert e.nbytes == t.nbytes
        assert e.dim() == e.ndim == t.dim() and e.ndimension() == t.ndimension()
        assert e.numel() == e.nelement() == t.numel()
        assert e.shape == t.shape and e.size() == t.size()
        assert isinstance(e.shape, ember.Size) and isinstance(e.size(), ember.Size)
        for d in range(-len(shape), len(shape)):
            assert e.size(d) == t.size(d)
        if e.numel():
            assert e.stride() == t.stride()
        assert e.is_floating_point() == t.is_floating_point()
        assert e.is_complex() == t.is_complex() and e.is_signed() == t.is_signed()


def test_size_errors():
    same_error(lambda lib: lib.tensor([1.0, 2.0]).size(2))
    same_error(lambda lib: lib.tensor([1.0, 2.0]).size(-2))
    same_error(lambda lib: lib.tensor([1.0, 2.0]).stride(2))
    same_error(lambda lib: lib.tensor(1.0).size(0))
    same_error(lambda lib: lib.tensor(1.0).size(-1))


def test_storage_sharing():
    a = ember.from_numpy(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    t = torch.arange(12.0).reshape(3, 4).clone()
    for f in (lambda x: x.transpose(0, 1), lambda x: x.as_strided((2, 2), (4, 1), 5),
              lambda x: x.view(12), lambda x: x.detach(), lambda x: x[1], lambda x: x[:, 2:]):
        v, tv = f(a), f(t)
        assert v.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
        assert v.storage_offset() == tv.storage_offset()
        assert v.data_ptr() - a.data_ptr() == tv.data_ptr() - t.data_ptr()
        assert v.untyped_storage().nbytes() == tv.untyped_storage().nbytes() == 48
        assert (v._base is a) == (tv._base is t)
    assert a.untyped_storage().nbytes() == 48
    assert a.clone().untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


def test_version_counter():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    v, tv = x.transpose(0, 1), tx.transpose(0, 1)
    assert x._version == tx._version == 0
    v.add_(1)
    tv.add_(1)
    assert x._version == v._version == tx._version == tv._version == 1
    x.mul_(2)
    tx.mul_(2)
    w, tw = x.view(4), tx.view(4)
    assert w._version == tw._version == 2
    w.neg_()
    tw.neg_()
    assert v._version == tv._version == 3
    x.add(1)  # out-of-place ops do not bump
    assert x._version == 3
    ember.add(x, 1, out=ember.empty(2, 2))
    assert x._version == 3
    y = x.detach()
    y.zero_()
    assert x._version == tx.detach().zero_()._version


def test_contiguous(rng):
    e, t = make_pair((3, 4), "float32", rng, "transposed")
    assert e.is_contiguous() == t.is_contiguous() is False
    c, tc = e.contiguous(), t.contiguous()
    check(c, tc)
    for layout in ("strided", "expanded"):
        e, t = make_pair((3, 4), "float32", rng, layout)
        assert e.is_contiguous() == t.is_contiguous()
        check(e.contiguous(), t.contiguous())
    for shape in [(), (0, 3), (1, 4), (4, 1)]:
        e, t = make_pair(shape, "float32", rng)
        assert e.is_contiguous() == t.is_contiguous()
    e, t = make_pair((2, 3, 4, 5), "float32", rng)
    assert e.is_contiguous(memory_format=ember.channels_last) == \
        t.is_contiguous(memory_format=torch.channels_last)


def test_contiguous_result_is_contiguous(rng):
    for layout in ("transposed", "strided", "expanded"):
        e, t = make_pair((3, 4), "float32", rng, layout)
        c, tc = e.contiguous(), t.contiguous()
        check(c, tc, check_stride=True)
        assert c.is_contiguous() and c.contiguous() is c


# ---- Size --------------------------------------------------------------------------------
def test_size_type():
    s, ts = ember.Size([2, 3]), torch.Size([2, 3])
    assert repr(s) == "ember.Size([2, 3])" and str(s) == repr(ts).replace("torch", "ember")
    assert s == ts == (2, 3) and hash(s) == hash((2, 3)) and isinstance(s, tuple)
    assert s.numel() == 6 and ember.Size([]).numel() == 1 and ember.Size([2, 0]).numel() == 0
    for r in (s[1:], s[::-1], s + (4,), (1,) + s, s * 2, 2 * s, s + ember.Size([5])):
        assert type(r) is ember.Size
    assert s[0] == 2 and type(s[0]) is int and s[-1] == 3
    assert ember.Size() == () and ember.Size((x for x in (1, 2))) == (1, 2)
    assert ember.Size([ember.tensor(2), np.int64(3), True]) == (2, 3, 1)
    assert repr(ember.Size([])) == "ember.Size([])"
    for bad in ([2.5], [2, "a"], [ember.tensor(2.0)]):
        with pytest.raises(TypeError) as ee:
            ember.Size(bad)
        with pytest.raises(TypeError) as te:
            torch.Size([torch.tensor(2.0)] if isinstance(bad[-1], ember.Tensor) else bad)
        assert str(ee.value) == str(te.value).replace("torch.", "ember.")
    same_msg(lambda lib: lib.Size([2]) + [1])
    same_error(lambda lib: lib.Size([2])[5])
    assert copy.deepcopy(s) == s and type(copy.deepcopy(s)) is ember.Size


# ---- transposes, real/imag ---------------------------------------------------------------
@pytest.mark.parametrize("attr", ["T", "mT", "H", "mH"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_transposes(attr, shape, dtype, rng):
    e, t = make_pair(shape, dtype, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rt = getattr(t, attr)
        except RuntimeError:
            same_error(lambda lib: getattr(e if lib is ember else t, attr))
            return
        r = getattr(e, attr)
    check(r, rt, check_stride=True)


def test_T_warning():
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        import sys
        sys.modules["ember.tensor"]._WARNED.clear()
        _ = ember.tensor([[[1.0]]]).T


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_real_imag(dtype, rng):
    for layout in ("contiguous", "transposed", "strided"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        check(e.real, t.real, check_stride=True)
        check(e.imag, t.imag, check_stride=True)
        assert e.real._base is (e if e._base is None else e._base)
    e, t = make_pair((3,), dtype, rng)
    e.real.mul_(0)
    t.real.mul_(0)
    check(e, t)
    assert e._version == t._version
    e.imag = ember.tensor([1.0, 2.0, 3.0])
    t.imag = torch.tensor([1.0, 2.0, 3.0])
    check(e, t)
    m = ember.empty(3, dtype=edtype(dtype), device="meta").as_strided((2,), (1,), 1)
    tm = torch.empty(3, dtype=tdtype(dtype), device="meta").as_strided((2,), (1,), 1)
    check(m.imag, tm.imag, check_stride=True)
    check(m.real, tm.real, check_stride=True)


def test_real_imag_of_real():
    e, t = both([1.0, 2.0])
    assert e.real is e and t.real is t
    same_error(lambda lib: lib.tensor([1, 2]).imag)


# ---- requires_grad ---------------------------------------------------------------------------
def test_requires_grad_int_error():
    same_error(lambda lib: lib.tensor([1, 2]).requires_grad_())
    same_error(lambda lib: lib.tensor([True]).requires_grad_())

    def setter(lib):
        t = lib.tensor([1, 2])
        t.requires_grad = True
    same_error(setter)
    assert ember.tensor([1, 2]).requires_grad_(False).requires_grad is False
    assert ember.tensor([1j]).requires_grad_().requires_grad


@pytest.mark.xfail(strict=True, reason="factory requires_grad message: _creation/_bindings "
                   "call Tensor.requires_grad_ (torch: 'Only Tensors of floating point and "
                   "complex dtype can require gradients')")
def test_requires_grad_factory_error():
    same_error(lambda lib: lib.tensor([1], requires_grad=True))


def test_misc_attributes():
    e = ember.tensor([1.0])
    assert e.is_cpu and not e.is_cuda and not e.is_meta and not e.is_sparse
    assert e.get_device() == torch.tensor([1.0]).get_device() == -1
    assert ember.empty(1, device="meta").is_meta
    assert e.is_leaf and e.grad is None and e.grad_fn is None
    assert e.layout == ember.strided
    assert e.device == ember.device("cpu")


def test_real_imag_record_autograd():
    x = ember.tensor([1 + 2j, 3 + 4j], requires_grad=True)
    tx = torch.tensor([1 + 2j, 3 + 4j], requires_grad=True)
    check(x.real.detach(), tx.real.detach())
    check(x.imag.detach(), tx.imag.detach())
    assert x.real._base is x and tx.real._base is tx


def test_real_grad_fn():
    x = ember.tensor([1 + 2j, 3 + 4j], requires_grad=True)
    assert repr(x.real) == repr(torch.tensor([1 + 2j, 3 + 4j], requires_grad=True).real)


def test_rdiv_alias():
    # torch keeps Tensor.__rdiv__ as the same function as __rtruediv__ (an op_db name)
    assert ember.Tensor.__rdiv__ is ember.Tensor.__rtruediv__
    np.testing.assert_array_equal(ember.tensor([1.0, 2.0]).__rdiv__(3).numpy(),
                                  torch.tensor([1.0, 2.0]).__rdiv__(3).numpy())
