"""Factories against PyTorch: zeros/ones/full/arange/linspace/logspace/eye/scalar_tensor, fill_/zero_,
*_like, Tensor.new_*, tensor/as_tensor/asarray/from_numpy/from_dlpack, default dtype."""
import warnings

import numpy as np
import pytest
import torch
from harness import DTYPES, FLOATS, check, edtype, make_pair, same_error, tdtype

import ember


def both(fn, **kw):
    check(fn(ember), fn(torch), **kw)


NONBOOL = [d for d in DTYPES if d != "bool"]


# ---- zeros / ones / full --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["zeros", "ones"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_ones_dtypes(name, dtype):
    both(lambda L: getattr(L, name)(2, 3, dtype=getattr(L, "bool" if dtype == "bool" else dtype)))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],), ((),), ((0, 4),), (5,), (1, 1, 1)])
def test_factory_size_forms(name, size):
    e, t = getattr(ember, name)(*size), getattr(torch, name)(*size)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]
    if name in ("zeros", "ones"):
        check(e, t)
    e = getattr(ember, name)(size=ember.Size((2, 3)) if name != "empty" else (2, 3))
    assert tuple(e.shape) == (2, 3)


@pytest.mark.parametrize("name", ["zeros", "ones", "rand", "randn", "empty"])
def test_factory_meta_and_requires_grad(name):
    e = getattr(ember, name)(2, 3, device="meta")
    t = getattr(torch, name)(2, 3, device="meta")
    assert e.device.type == "meta" and e.is_meta
    check(e, t)
    e = getattr(ember, name)(2, dtype=ember.float64, requires_grad=True)
    assert e.requires_grad and e.dtype is ember.float64 and e.is_leaf


@pytest.mark.parametrize("fn", [
    lambda L: L.zeros(-1, 2), lambda L: L.zeros((2, -3)), lambda L: L.ones(-1, 2), lambda L: L.rand(-1),
    lambda L: L.randn(-2, 3), lambda L: L.full((-1,), 2), lambda L: L.zeros(2.5),
    lambda L: L.zeros("a"), lambda L: L.zeros(2, dtype=L.int64, out=L.empty(2)),
])
def test_factory_errors(fn):
    same_error(fn)


@pytest.mark.parametrize("value", [3, True, 3.5, 3j, -1, 2 ** 40, float("inf"), float("nan"),
                                   np.float32(1.5), np.int16(7)])
def test_full_dtype_inference(value):
    both(lambda L: L.full((2, 2), value))
    both(lambda L: L.full((2,), value, device="meta"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [0, 1, -1, 2.75, -3.5, True, 127, 255, 1 + 2j])
def test_full_with_dtype(dtype, value):
    def f(L):
        return L.full((3,), value, dtype=getattr(L, "bool" if dtype == "bool" else dtype))
    try:
        t = f(torch)
    except RuntimeError:
        same_error(f)
        return
    check(f(ember), t)


@pytest.mark.parametrize("args", [
    (300, "int8"), (-1, "uint8"), (-255, "uint8"), (-256, "uint8"), (256, "uint8"), (40000, "int16"),
    (2 ** 31, "int32"), (2 ** 63, "int64"), (float("nan"), "int64"), (float("inf"), "int32"),
    (1e40, "float32"), (1e40, "float16"), (70000, "float16"), (1e39, "bfloat16"), (3j, "float32"),
    (1e39, "complex64"), (127.5, "int8"), (-0.5, "uint8"), (2 ** 64, "float32"), (1e300, "float64"),
])
def test_full_overflow(args):
    v, dt = args
    f = (lambda L: L.full((2,), v, dtype=getattr(L, dt)))
    try:
        t = f(torch)
    except Exception:
        same_error(f)
        return
    check(f(ember), t)


def test_full_out_and_scalar_tensor():
    both(lambda L: L.full((2,), 1.5, out=L.empty(2, dtype=L.int64)))
    both(lambda L: L.zeros(2, 3, out=L.empty(6)))
    both(lambda L: L.ones(4, out=L.empty(0, dtype=L.int32)))
    both(lambda L: L.full((2,), L.tensor(3.0)))
    for args in [(3,), (True,), (2.5,), (3, "int64"), (1.5, "float16"), (2j, "complex64")]:
        both(lambda L, a=args: L.scalar_tensor(a[0], **({"dtype": getattr(L, a[1])} if len(a) > 1 else {})))
    same_error(lambda L: L.scalar_tensor(300, dtype=L.int8))
    same_error(lambda L: L.scalar_tensor(3j))
    e = ember.scalar_tensor(2.5, device="meta")
    assert e.is_meta and e.shape == () and e.dtype is ember.float32


# ---- fill_ / zero_ ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "expanded"])
def test_fill_zero(dtype, layout, rng):
    e, t = make_pair((3, 4), dtype, rng, layout)
    check(e.fill_(1), t.fill_(1))
    check(e.zero_(), t.zero_())
    if layout == "expanded":
        same_error(lambda L: (e if L is ember else t).fill_(L.tensor(2)))
    else:
        check(e.fill_(ember.tensor(2)), t.fill_(torch.tensor(2)))
    check(ember.fill(e, 3), torch.fill(t, 3))
    check(ember.fill_(e, 0.5 if dtype in FLOATS else 1), torch.fill_(t, 0.5 if dtype in FLOATS else 1))


@pytest.mark.parametrize("fn", [
    lambda L: L.zeros(3).fill_(2 ** 70), lambda L: L.zeros(3, dtype=L.int8).fill_(300),
    lambda L: L.zeros(3, dtype=L.int64).fill_(3j), lambda L: L.zeros(3).fill_(L.tensor([1.0])),
    lambda L: L.zeros(3, device="meta").fill_(L.ones(2, device="meta")),
    lambda L: L.zeros(3).expand(2, 3).uniform_(),
])
def test_fill_errors(fn):
    same_error(fn)


def test_fill_values_and_versions():
    both(lambda L: L.zeros(3, dtype=L.uint8).fill_(-1))
    both(lambda L: L.zeros(3, dtype=L.int64).fill_(2.7))
    both(lambda L: L.zeros(3, dtype=L.int32).fill_(L.tensor(1.5)))
    both(lambda L: L.zeros(3).fill_(L.tensor(1.0, dtype=L.float64)))
    both(lambda L: L.zeros(4)[::2].fill_(5))
    e = ember.zeros(3)
    v = e._version
    e.fill_(1)
    e.zero_()
    assert e._version == v + 2
    m = ember.zeros(3, dtype=ember.int8, device="meta").fill_(300)  # meta checks no values
    assert m.is_meta


# ---- arange -----------------------------------------------------------------------------------
ARANGE = [(5,), (5.0,), (1, 5), (1, 5, 0.5), (0, 1, 0.1), (5, 1, -1), (True,), (3 + 0j,), (0.1, 0.3, 0.1),
          (1, 2.5, 0.5), (10, 0, -3), (-5, 5, 2.5), (0, 0), (0, 1e-3, 1e-4), (2, -3, -0.7), (0, 10, 3),
          (np.int32(5),), (np.float64(5),), (-3.5, 2.25, 0.25)]


@pytest.mark.parametrize("args", ARANGE)
def test_arange_inferred(args):
    both(lambda L: L.arange(*args))
    if not any(isinstance(a, complex) for a in args):  # torch's meta arange rejects complex
        both(lambda L: L.arange(*args, device="meta"))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d not in ("bool", "complex64", "complex128")])
@pytest.mark.parametrize("args", [(5,), (0, 10, 3), (-0.5, 3, 1), (0.5, 3), (10, 0, -2.5), (0, 300),
                                  (0, 1, 0.25), (-4, 4)])
def test_arange_dtype(dtype, args):
    def f(L):
        return L.arange(*args, dtype=getattr(L, dtype))
    try:
        t = f(torch)
    except Exception:
        same_error(f)
        return
    check(f(ember), t)


@pytest.mark.parametrize("fn", [
    lambda L: L.arange(1, 5, 0), lambda L: L.arange(5, 1), lambda L: L.arange(1, 5, -1),
    lambda L: L.arange(3j), lambda L: L.arange(10, dtype=L.bool), lambda L: L.arange(5, dtype=L.complex64),
    lambda L: L.arange(float("inf")), lambda L: L.arange(float("nan")), lambda L: L.arange(0, 1e20, 1),
    lambda L: L.arange(0, 1, 0.3, dtype=L.int64), lambda L: L.arange(0, float("inf"), dtype=L.int64),
    lambda L: L.arange(1e40, dtype=L.float16), lambda L: L.arange(), lambda L: L.arange(0, 5, 0, device="meta"),
    lambda L: L.arange(0, 5, out=L.empty(2, dtype=L.int64), dtype=L.float32),
])
def test_arange_errors(fn):
    same_error(fn)


def test_arange_forms_and_out():
    both(lambda L: L.arange(end=5))
    both(lambda L: L.arange(start=1, end=5))
    both(lambda L: L.arange(1, end=5))
    both(lambda L: L.arange(L.tensor(5)))
    both(lambda L: L.arange(L.tensor(5.0)))
    both(lambda L: L.arange(5, dtype=L.bool, device="meta"))
    both(lambda L: L.arange(5, out=L.empty(0, dtype=L.int32)))
    both(lambda L: L.arange(5, out=L.empty(5)))
    with pytest.warns(UserWarning, match="does not match the computed number of elements 5"):
        e = ember.arange(5, out=ember.empty(3))
    check(e, torch.arange(5.0))
    assert ember.arange(3, requires_grad=True, dtype=ember.float32).requires_grad


@pytest.mark.parametrize("fn", [
    lambda L: L.range(1, 4), lambda L: L.range(0, 1, 0.25), lambda L: L.range(1, 4, dtype=L.int64),
    lambda L: L.range(4, 1, -1), lambda L: L.range(0, 1, 0.3), lambda L: L.range(0, 5, 2, device="meta"),
])
def test_range(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(fn)


@pytest.mark.parametrize("fn", [lambda L: L.range(4), lambda L: L.range(1, 4, -1), lambda L: L.range(1, 4, 0)])
def test_range_errors(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(fn)


# ---- linspace / logspace ---------------------------------------------------------------------------
SPACE = [(0, 10, 5), (0, 10, 0), (0, 10, 1), (-3, 7, 13), (10, -3, 6), (0, 1, 11), (1, 2, 3),
         (-1, 1, 7), (0.5, 4.25, 17), (0, 1j, 3), (2, 2, 4)]
SPACE_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                "complex64", "complex128"]


@pytest.mark.parametrize("args", SPACE)
@pytest.mark.parametrize("dtype", [None] + SPACE_DTYPES)
def test_linspace(args, dtype):
    def f(L):
        return L.linspace(*args, **({} if dtype is None else {"dtype": getattr(L, dtype)}))
    try:
        t = f(torch)
    except Exception:
        same_error(f)
        return
    check(f(ember), t)


@pytest.mark.parametrize("args", [(0, 2, 3), (0, 2, 3, 2), (-2, 2, 9), (0, 3, 4), (0, 2, 1), (0, 1j, 3),
                                  (1, -1, 5, 3.0), (0, 5, 6, 2)])
@pytest.mark.parametrize("dtype", [None, "int64", "int16", "uint8", "float16", "bfloat16", "float32",
                                   "float64", "complex64"])
def test_logspace(args, dtype):
    def f(L):
        return L.logspace(*args, **({} if dtype is None else {"dtype": getattr(L, dtype)}))
    try:
        t = f(torch)
    except Exception:
        same_error(f)
        return
    check(f(ember), t)


@pytest.mark.parametrize("fn", [
    lambda L: L.linspace(0, 10, -1), lambda L: L.linspace(L.tensor([0.0]), 10, 5),
    lambda L: L.linspace(0, 1j, 3, dtype=L.float32), lambda L: L.linspace(0, 10, 5, dtype=L.bool),
    lambda L: L.linspace(0, 300, 3, dtype=L.int8), lambda L: L.linspace(0, 1e40, 3),
    lambda L: L.logspace(0, 2, -1), lambda L: L.logspace(0, 2, 3, dtype=L.bool),
])
def test_space_errors(fn):
    same_error(fn)


def test_space_tensor_args_out_meta():
    both(lambda L: L.linspace(L.tensor(0), L.tensor(10), 5))
    both(lambda L: L.linspace(L.tensor(0, dtype=L.float64), 10, 5))
    both(lambda L: L.linspace(0, L.tensor(1.0), 3))
    both(lambda L: L.logspace(L.tensor(0.0), 2, 3))
    both(lambda L: L.logspace(0, 2, 3, base=2))
    both(lambda L: L.linspace(0, 1, 3, out=L.empty(3, dtype=L.float64)))
    both(lambda L: L.linspace(0, 1, 5, device="meta"))
    both(lambda L: L.logspace(0, 1, 5, device="meta"))


# ---- eye ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_eye(dtype):
    d = "bool" if dtype == "bool" else dtype
    both(lambda L: L.eye(3, dtype=getattr(L, d)))
    both(lambda L: L.eye(2, 4, dtype=getattr(L, d)))


def test_eye_misc():
    both(lambda L: L.eye(0))
    both(lambda L: L.eye(3, 0))
    both(lambda L: L.eye(3, device="meta"))
    both(lambda L: L.eye(2, out=L.empty(0, dtype=L.int32)))
    for f in [lambda L: L.eye(-1), lambda L: L.eye(2, -1), lambda L: L.eye(2.5)]:
        same_error(f)


# ---- *_like and new_* ----------------------------------------------------------------------------
LIKE = ["empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"]


@pytest.mark.parametrize("name", LIKE + ["full_like", "randint_like"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "expanded"])
def test_like_layouts(name, layout, rng):
    e, t = make_pair((3, 4), "float32", rng, layout)
    extra = (2.5,) if name == "full_like" else (5,) if name == "randint_like" else ()
    er, tr = getattr(ember, name)(e, *extra), getattr(torch, name)(t, *extra)
    if name in ("zeros_like", "ones_like", "full_like"):
        check(er, tr, check_stride=True)
    else:  # values are random or uninitialised: layout and dtype only
        assert er.stride() == tr.stride() and er.dtype.name == str(tr.dtype)[6:]
        assert tuple(er.shape) == tuple(tr.shape)
    er = getattr(ember, name)(e, *extra, memory_format=ember.contiguous_format)
    assert er.is_contiguous()
    assert getattr(ember, name)(e, *extra, device="meta").is_meta


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_dtypes(dtype, rng):
    e, t = make_pair((2, 3), dtype, rng)
    check(ember.zeros_like(e), torch.zeros_like(t))
    check(ember.ones_like(e), torch.ones_like(t))
    check(ember.full_like(e, 1), torch.full_like(t, 1))
    check(ember.zeros_like(e, dtype=ember.float64), torch.zeros_like(t, dtype=torch.float64))
    f = lambda L, x: L.rand_like(x)  # noqa: E731
    try:
        tr = f(torch, t)
    except Exception:
        same_error(lambda L: f(L, L.zeros(2, 3, dtype=edtype(dtype) if L is ember else tdtype(dtype))))
    else:
        er = f(ember, e)
        assert er.dtype.name == str(tr.dtype)[6:] and er.shape == tuple(tr.shape)


def test_like_misc():
    both(lambda L: L.full_like(L.zeros(3, dtype=L.int64), 2.5))
    same_error(lambda L: L.full_like(L.zeros(3, dtype=L.int8), 300))
    e = ember.zeros_like(ember.zeros(2), requires_grad=True)
    assert e.requires_grad
    both(lambda L: L.zeros_like(L.zeros(3), device="meta"))
    assert ember.randint_like(ember.zeros(3), 2, 5).dtype is ember.float32
    r = ember.randint_like(ember.zeros(200, dtype=ember.int32), 2, 5)
    assert r.dtype is ember.int32 and r.min().item() >= 2 and r.max().item() <= 4
    r = ember.randint_like(ember.zeros(200), high=5)
    assert 0 <= r.min().item() and r.max().item() <= 4
    g = ember.Generator().manual_seed(1)
    a = ember.rand_like(ember.zeros(4), generator=g)
    g.manual_seed(1)
    assert ember.equal(a, ember.rand_like(ember.zeros(4), generator=g))


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bool", "complex64"])
def test_new_methods(dtype, rng):
    e, t = make_pair((3,), dtype, rng)
    check(e.new_zeros(2, 3), t.new_zeros(2, 3))
    check(e.new_zeros((2, 3), dtype=ember.int64), t.new_zeros((2, 3), dtype=torch.int64))
    check(e.new_ones(2), t.new_ones(2))
    check(e.new_ones([]), t.new_ones([]))
    check(e.new_full((2,), 1), t.new_full((2,), 1))
    check(e.new_tensor([1, 0]), t.new_tensor([1, 0]))
    assert e.new_empty(2, 3).shape == (2, 3) and e.new_empty(2).dtype is e.dtype
    assert e.new_empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    assert e.new_zeros(2, device="meta").is_meta


def test_new_misc():
    both(lambda L: L.zeros(3, dtype=L.int64).new_full((2,), 5.5))
    r = ember.zeros(3).new_ones(2, requires_grad=True)
    assert r.requires_grad
    assert ember.zeros(3, device="meta").new_zeros(2).is_meta


# ---- tensor() --------------------------------------------------------------------------------
TENSOR_DATA = [
    [1, 2.0], [True, 2], [1, 2j], [], [[], []], [[[]]], np.float32(1), np.int32(1), np.float64(1),
    [np.float64(1)], [np.float32(1), 1], [np.int32(1), 1], [np.float16(1)], np.bool_(True), np.complex64(1),
    np.array([1, 2], dtype=np.int32), range(3), (1, 2), [[1, 2], (3, 4)], 5, 2.5, True, 1 + 1j,
    [[1.5, 2], [3, 4]], [[True, False]], np.zeros((2, 3)).T, np.zeros((2, 3))[:, ::2],
]


@pytest.mark.parametrize("data", TENSOR_DATA, ids=range(len(TENSOR_DATA)))
def test_tensor_inference(data):
    both(lambda L: L.tensor(data), check_stride=True)
    both(lambda L: L.tensor(data, device="meta"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("data", [[1, 2], [1.5, -2.5], [True, False], [[0, 3], [7, 1]], 3, [1e6], [-1]])
def test_tensor_with_dtype(dtype, data):
    def f(L):
        return L.tensor(data, dtype=getattr(L, "bool" if dtype == "bool" else dtype))
    try:
        t = f(torch)
    except Exception:
        same_error(f)
        return
    check(f(ember), t)


@pytest.mark.parametrize("data", [
    [[1, 2], [3]], [[1, 2], 3], [1, [2]], ["a"], "a", None, [None], {1: 2}, 2 ** 63, [2 ** 63],
    -(2 ** 63) - 1, [1, "a"], [[1, 2], [3, 4, 5]], [[[1], [2]], [[3]]], [1, None], [[1, 2], [3, [4]]],
    [[1], [2, 3]], b"ab", [b"a"], np.array([1.0, 2.0])[::-1], (x for x in range(3)),
], ids=range(21))
def test_tensor_errors(data):
    same_error(lambda L: L.tensor(data))


@pytest.mark.parametrize("args", [
    ([300], "int8"), ([2 ** 40], "int32"), ([float("nan")], "int64"), ([1j], "float32"), ([1j], "int32"),
    ([-0.5], "uint8"), ([255.9], "uint8"), ([127.5], "int8"), (-300, "uint8"), (256, "uint8"),
    ([float("inf")], "int32"),
])
def test_tensor_conversion_errors(args):
    data, dt = args
    same_error(lambda L: L.tensor(data, dtype=getattr(L, dt)))


def test_tensor_from_tensors_and_arrays():
    both(lambda L: L.tensor([L.tensor(1, dtype=L.int32), 2]))
    both(lambda L: L.tensor([L.tensor(1.0, dtype=L.float64), 2]))
    both(lambda L: L.tensor([L.tensor(1.0), L.tensor(2.0)]))
    both(lambda L: L.tensor([L.tensor([1.0]), L.tensor([2.0])]))
    same_error(lambda L: L.tensor([L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda L: L.tensor([np.array([1, 2], dtype=np.int32)]))
        both(lambda L: L.tensor([[1, 2], np.array([3, 4])]))
    both(lambda L: L.tensor(np.array([300]), dtype=L.int8))
    both(lambda L: L.tensor(np.array([1.5]), dtype=L.int64))
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        e = ember.tensor(ember.tensor([1, 2]), dtype=ember.float32)
    check(e, torch.tensor([1.0, 2.0]))
    src = ember.tensor([1.0, 2.0])
    with pytest.warns(UserWarning):
        c = ember.tensor(src)
    c[0] = 5.0
    assert src[0].item() == 1.0
    a = np.array([1.0, 2.0])
    t = ember.tensor(a)
    a[0] = 7
    assert t[0].item() == 1.0
    r = ember.tensor([1.5, 2], requires_grad=True)
    assert r.requires_grad and r.is_leaf


# ---- as_tensor / asarray / from_numpy / from_dlpack ----------------------------------------------
def test_as_tensor_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.as_tensor(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    u = ember.asarray(a)
    a[0, 1] = 43
    assert u[0, 1].item() == 43
    x = ember.ones(3)
    assert ember.as_tensor(x) is x and ember.asarray(x) is x
    c = ember.asarray(x, copy=True)
    c[0] = 5
    assert x[0].item() == 1
    check(ember.as_tensor(a, dtype=ember.float32), torch.as_tensor(a, dtype=torch.float32))
    assert ember.as_tensor(x, device="meta").is_meta
    both(lambda L: L.as_tensor([1, 2]))
    both(lambda L: L.as_tensor([1, 2], dtype=L.float64))
    both(lambda L: L.as_tensor(3))
    both(lambda L: L.asarray(np.float64(3)))
    both(lambda L: L.asarray(np.float32(2)))
    both(lambda L: L.asarray(3.5))
    both(lambda L: L.asarray([1, 2], dtype=L.int8))
    both(lambda L: L.asarray(L.ones(2), dtype=L.float64))
    both(lambda L: L.asarray(b"abcd"))
    both(lambda L: L.as_tensor(np.ones(2), dtype=L.float32, device="meta"))
    assert ember.asarray(np.ones(2), requires_grad=True).requires_grad


@pytest.mark.parametrize("fn", [
    lambda L: L.asarray([1, 2], copy=False), lambda L: L.asarray(np.ones(2), dtype=L.float32, copy=False),
    lambda L: L.asarray(L.ones(2), dtype=L.float64, copy=False), lambda L: L.asarray(b"ab"),
    lambda L: L.as_tensor(np.arange(4)[::-1]), lambda L: L.as_tensor(np.ones(3, dtype=">f4")),
    lambda L: L.asarray([L.ones(2), L.ones(2)]),
])
def test_asarray_errors(fn):
    same_error(fn)


@pytest.mark.parametrize("npdtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                     "float32", "float64", "complex64", "complex128"])
def test_from_numpy(npdtype):
    a = np.ones((2, 3), dtype=npdtype)
    check(ember.from_numpy(a), torch.from_numpy(a.copy()))
    e = ember.from_numpy(a)
    a[1, 2] = 0
    assert not e[1, 2].item()
    b = np.ones((3, 3), dtype=npdtype)[:, ::2]
    check(ember.from_numpy(b), torch.from_numpy(b), check_stride=True)
    check(ember.from_numpy(np.array(3, dtype=npdtype)), torch.from_numpy(np.array(3, dtype=npdtype)))


@pytest.mark.parametrize("fn", [
    lambda L: L.from_numpy([1]), lambda L: L.from_numpy(np.zeros(4)[::-1]),
    lambda L: L.from_numpy(np.ones(3, dtype=">f4")),
])
def test_from_numpy_errors(fn):
    same_error(fn)


def test_from_numpy_unsupported_dtype():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.str_"):
        ember.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.uint16"):
        ember.from_numpy(np.ones(2, dtype=np.uint16))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                   "float32", "float64", "complex64", "complex128"])
def test_from_dlpack(dtype):
    t = torch.arange(6).reshape(2, 3).to(getattr(torch, dtype))
    e = ember.from_dlpack(t)
    check(e, t)
    e2 = ember.from_dlpack(t[:, 1:])
    check(e2, t[:, 1:])
    assert e2.stride() == t[:, 1:].stride()
    if dtype != "bool":
        t[0, 0] = 5
        assert e[0, 0].item() == 5  # shares memory
    a = np.arange(6).astype(dtype)
    check(ember.from_dlpack(a), torch.from_dlpack(a))
    check(ember.from_dlpack(t.__dlpack__()), t)
    back = torch.from_dlpack(ember.from_dlpack(t))
    assert torch.equal(back, t)


def test_from_dlpack_errors():
    same_error(lambda L: L.from_dlpack(3))
    x = ember.ones(2)
    y = ember.from_dlpack(x)
    y[0] = 3
    assert x[0].item() == 3


# ---- default dtype ------------------------------------------------------------------------------
def test_set_default_dtype_changes_factories():
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for f in [lambda L: L.zeros(2), lambda L: L.ones(2), lambda L: L.full((2,), 1.5),
                  lambda L: L.arange(0.0, 1, 0.25), lambda L: L.linspace(0, 1, 3), lambda L: L.eye(2),
                  lambda L: L.tensor([1.5, 2]), lambda L: L.tensor([1j]), lambda L: L.scalar_tensor(1),
                  lambda L: L.asarray(2.5), lambda L: L.full((2,), 1j)]:
            both(f)
        for f in [lambda L: L.empty(2), lambda L: L.rand(2), lambda L: L.randn(2),
                  lambda L: L.normal(0.0, 1.0, (2,)), lambda L: L.rand_like(L.zeros(2, dtype=L.float16))]:
            assert f(ember).dtype.name == str(f(torch).dtype)[6:]
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)
    assert ember.zeros(1).dtype is ember.float32
