"""Comparisons, logical/bitwise ops, where, masked_fill, isclose & co. against PyTorch."""
import warnings

import numpy as np
import pytest
import torch
from harness import (COMPLEX, DTYPES, FLOATS, INTS, binary_inputs, check, make_pair, pair_from,
                     same_error, unary_inputs)

from opdb import COMPARISONS

import ember

CMP = COMPARISONS


def ones(lib, *shape, dtype=None):
    if not shape:
        return scalar(lib, 1.0, dtype)
    return lib.tensor(np.ones(shape).tolist(), dtype=dtype)


def scalar(lib, v, dtype=None):
    """A 0-d tensor holding v (dtype inferred as PyTorch does)."""
    if dtype is None:
        dtype = lib.bool if isinstance(v, bool) else lib.int64 if isinstance(v, int) else lib.float32
    return lib.from_numpy(np.array(v)).to(dtype)


def both(fn, e_args, t_args):
    return fn(ember, *e_args), fn(torch, *t_args)


# ---- comparisons -----------------------------------------------------------------------------
# test_compare_same_dtype (every comparison, function and method, in every dtype on
# harness.BINARY_SHAPES in each layout; complex ordering raises torch's error) is the op_db value
# test of the comparison entries: tests/ops/test_opdb.py


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare_operators(op, rng):
    sym = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__",
           "ge": "__ge__"}[op]
    (ea, ta), (eb, tb) = make_pair((3, 4), "int64", rng), make_pair((4,), "int64", rng)
    check(getattr(ea, sym)(eb), getattr(ta, sym)(tb))
    check(getattr(ea, sym)(2), getattr(ta, sym)(2))
    check(getattr(ea, sym)(2.5), getattr(ta, sym)(2.5))


MIXED = [("int32", "int64"), ("uint8", "int8"), ("bool", "float32"), ("float16", "bfloat16"),
         ("int64", "float16"), ("float32", "float64"), ("int16", "complex64")]


@pytest.mark.parametrize("da,db", MIXED)
@pytest.mark.parametrize("op", ["eq", "lt", "ge"])
def test_compare_mixed(op, da, db, rng):
    for (ea, eb), (ta, tb) in binary_inputs(da, db, rng):
        if op != "eq" and "complex" in da + db:
            same_error(lambda lib, ea=ea, eb=eb, ta=ta, tb=tb: getattr(lib, op)(
                ta if lib is torch else ea, tb if lib is torch else eb))
            return
        check(*both(lambda lib, a, b: getattr(lib, op)(a, b), (ea, eb), (ta, tb)))


SCALARS = [0, 2, -1, 257, 1000, 2.5, -0.5, True, False, 1j, 2 ** 40, 65505.0, -2 ** 63]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "ge"])
def test_compare_scalar(op, dtype, rng):
    e, t = make_pair((6,), dtype, rng)
    for s in SCALARS:
        if op in ("lt", "ge") and (isinstance(s, complex) or dtype in COMPLEX):
            # float16 with a complex scalar is complex32 in torch; ember has no complex32 (complex64)
            same_error(lambda lib, s=s: getattr(lib, op)(t if lib is torch else e, s),
                       match="not implemented for" if dtype == "float16" else None)
            continue
        check(getattr(ember, op)(e, s), getattr(torch, op)(t, s))
    # 0-d tensors take part in promotion like scalars of their category
    for s in (torch.tensor(-1), torch.tensor(300), torch.tensor(0.5, dtype=torch.float64)):
        es = scalar(ember, s.item(), getattr(ember, str(s.dtype)[6:]))
        if dtype in COMPLEX and op in ("lt", "ge"):
            continue
        check(getattr(ember, op)(e, es), getattr(torch, op)(t, s))


def test_compare_0d_and_empty(rng):
    for shape in [(), (0,), (0, 3)]:
        (e, t) = make_pair(shape, "float32", rng)
        check(ember.lt(e, 0.5), torch.lt(t, 0.5))
        check(ember.eq(e, e), torch.eq(t, t))


@pytest.mark.parametrize("op", ["eq", "lt", "greater_equal"])
def test_compare_inplace_out(op, rng):
    for dtype in ["float32", "int64", "bool", "float16"]:
        (ea, ta), (eb, tb) = make_pair((3, 4), dtype, rng), make_pair((4,), dtype, rng)
        e2, t2 = ea.clone(), ta.clone()
        check(getattr(e2, op + "_")(eb), getattr(t2, op + "_")(tb))
        check(e2, t2)
        e2, t2 = ea.clone(), ta.clone()
        check(getattr(e2, op + "_")(1), getattr(t2, op + "_")(1))
        for od in ["bool", "float32", "int32"]:
            eo, to = ember.empty(3, 4, dtype=getattr(ember, od)), torch.empty(3, 4, dtype=getattr(torch, od))
            r = getattr(ember, op)(ea, eb, out=eo)
            assert r is eo
            getattr(torch, op)(ta, tb, out=to)
            check(eo, to)
        eo, to = ember.empty(0, dtype=ember.bool), torch.empty(0, dtype=torch.bool)
        getattr(ember, op)(ea, 2, out=eo)
        getattr(torch, op)(ta, 2, out=to)
        check(eo, to)


def test_compare_errors(rng):
    (ea, ta), (eb, tb) = make_pair((2,), "float32", rng), make_pair((3,), "float32", rng)
    same_error(lambda lib: lib.eq(ta if lib is torch else ea, tb if lib is torch else eb))
    same_error(lambda lib: lib.lt(ta if lib is torch else ea, tb if lib is torch else eb))
    (ec, tc) = make_pair((3, 2), "float32", rng)
    same_error(lambda lib: (ta if lib is torch else ea).clone().lt_(tc if lib is torch else ec))
    (ez, tz) = make_pair((2,), "complex64", rng)
    same_error(lambda lib: lib.gt(tz if lib is torch else ez, 1))
    same_error(lambda lib: lib.le(ta if lib is torch else ea, 1j))


@pytest.mark.parametrize("op", ["eq", "lt", "isnan", "isposinf", "signbit", "logical_and",
                                "bitwise_and", "bitwise_left_shift", "where", "masked_fill",
                                "isclose", "logical_not"])
def test_meta(op, rng):
    dtype = "int32" if "bitwise" in op else "float32"
    (ea, ta), (eb, tb) = make_pair((3, 4), dtype, rng), make_pair((4,), dtype, rng)
    ec, tc = make_pair((3, 1), "bool", rng)
    fns = {
        "eq": lambda lib, a, b, c: lib.eq(a, b), "lt": lambda lib, a, b, c: lib.lt(a, 2),
        "isnan": lambda lib, a, b, c: lib.isnan(a), "isposinf": lambda lib, a, b, c: lib.isposinf(a),
        "signbit": lambda lib, a, b, c: lib.signbit(a),
        "logical_and": lambda lib, a, b, c: lib.logical_and(a, b),
        "logical_not": lambda lib, a, b, c: lib.logical_not(a),
        "bitwise_and": lambda lib, a, b, c: lib.bitwise_and(a, b),
        "bitwise_left_shift": lambda lib, a, b, c: lib.bitwise_left_shift(a, 1),
        "where": lambda lib, a, b, c: lib.where(c, a, b),
        "masked_fill": lambda lib, a, b, c: a.masked_fill(c, 2.0),
        "isclose": lambda lib, a, b, c: lib.isclose(a, b),
    }
    fn = fns[op]
    e = fn(ember, ea, eb, ec)
    em = fn(ember, ea.to("meta"), eb.to("meta"), ec.to("meta"))
    tm = fn(torch, ta.to("meta"), tb.to("meta"), tc.to("meta"))
    assert em.device.type == "meta"
    check(em, tm)
    assert em.dtype == e.dtype and em.shape == e.shape


def test_meta_errors():
    em = ember.empty(2, dtype=ember.complex64, device="meta")
    with pytest.raises(NotImplementedError, match="lt_cpu"):
        ember.lt(em, em)
    with pytest.raises(RuntimeError, match="isposinf does not support complex"):
        ember.isposinf(em)
    ef = ember.empty(2, device="meta")
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu"):
        ember.bitwise_and(ef, ef)
    with pytest.raises(RuntimeError, match="where expected condition"):
        ember.where(ef, ef, ef)
    with pytest.raises(RuntimeError, match="must match"):
        ember.eq(ef, ember.empty(3, device="meta"))


# ---- equal / isclose / allclose --------------------------------------------------------------
def test_equal(rng):
    for dtype in DTYPES:
        e, t = make_pair((3, 4), dtype, rng)
        assert ember.equal(e, e.clone()) is torch.equal(t, t.clone()) is True
        assert e.equal(e) is True
        e2, t2 = make_pair((3, 4), dtype, rng)
        assert ember.equal(e, e2) == torch.equal(t, t2)
    e, t = make_pair((2,), "float32", rng)
    assert ember.equal(e, ones(ember, 3)) is torch.equal(t, torch.ones(3)) is False
    assert ember.equal(ember.tensor([1.0, -2.0]), ember.tensor([1, -2])) is True
    nan = [float("nan")]
    assert ember.equal(ember.tensor(nan), ember.tensor(nan)) is torch.equal(torch.tensor(nan),
                                                                          torch.tensor(nan))
    same_error(lambda lib: lib.equal(ones(lib, 2), 1))


def _close_pair(dtype, rng):
    base = np_base = rng.uniform(-3, 3, 12)
    if dtype in ("bool",):
        a, b = rng.random(12) < 0.5, rng.random(12) < 0.5
    elif dtype in INTS:
        a = rng.integers(0, 10, 12).astype(dtype)
        b = (a + rng.integers(-1, 2, 12)).clip(0, 100).astype(dtype)
    else:
        np_base = base.astype(np.float64)
        noise = np.array([0, 1e-9, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, np.nan, np.inf, -np.inf, 0.1])
        a = np_base.copy()
        b = np_base * (1 + noise)
        a[8] = np.nan
        b[9] = a[9] = np.inf
        if dtype in COMPLEX:
            a = a + 1j * np_base
            b = b + 1j * np_base
        if dtype in ("float16", "bfloat16"):
            a = torch.tensor(a).to(getattr(torch, dtype)).double().numpy()
            b = torch.tensor(b).to(getattr(torch, dtype)).double().numpy()
        else:
            a, b = a.astype(dtype), b.astype(dtype)
    return pair_from(a, dtype), pair_from(b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_isclose(dtype, rng):
    (ea, ta), (eb, tb) = _close_pair(dtype, rng)
    if dtype in ("float16", "bfloat16"):
        ea, eb = ea.to(getattr(ember, dtype)), eb.to(getattr(ember, dtype))
        ta, tb = ta.to(getattr(torch, dtype)), tb.to(getattr(torch, dtype))
    for kw in [{}, {"equal_nan": True}, {"rtol": 0, "atol": 0}, {"rtol": 1e-3, "atol": 1e-4},
               {"atol": 1}, {"rtol": 0.01}]:
        check(ember.isclose(ea, eb, **kw), torch.isclose(ta, tb, **kw))
        check(ea.isclose(eb, **kw), ta.isclose(tb, **kw))
        assert ember.allclose(ea, eb, **kw) == torch.allclose(ta, tb, **kw)
    assert ember.allclose(ea, ea) == torch.allclose(ta, ta)
    assert ea.allclose(ea, equal_nan=True) == ta.allclose(ta, equal_nan=True)


def test_isclose_special():
    for a, b, kw in [([100], [-100], {"atol": 200}), ([100], [-100], {"atol": 100}),
                     ([1, 2], [2, 1], {"atol": 1})]:
        for d in ["int8", "uint8"]:
            if d == "uint8" and min(a + b) < 0:
                continue
            ta, tb = torch.tensor(a, dtype=getattr(torch, d)), torch.tensor(b, dtype=getattr(torch, d))
            ea, eb = ember.tensor(a, dtype=getattr(ember, d)), ember.tensor(b, dtype=getattr(ember, d))
            check(ember.isclose(ea, eb, **kw), torch.isclose(ta, tb, **kw))
    # broadcasting
    check(ember.isclose(ones(ember, 2), ones(ember, 3, 1)), torch.isclose(torch.ones(2), torch.ones(3, 1)))
    assert ember.allclose(ones(ember, 2), ones(ember, 3, 1)) is True


def test_isclose_errors():
    same_error(lambda lib: lib.isclose(ones(lib, 2), ones(lib, 2, dtype=lib.int64)))
    same_error(lambda lib: lib.isclose(ones(lib, 2), ones(lib, 2), rtol=-1))
    same_error(lambda lib: lib.isclose(ones(lib, 2), ones(lib, 2), atol=-1.5))
    same_error(lambda lib: lib.isclose(ones(lib, 2), 1))
    same_error(lambda lib: lib.allclose(ones(lib, 2), ones(lib, 2, dtype=lib.float64)))
    same_error(lambda lib: lib.allclose(ones(lib, 2), 1.0))
    same_error(lambda lib: lib.isclose(ones(lib, 2), ones(lib, 3)))


# ---- unary predicates --------------------------------------------------------------------------
SPECIAL = np.array([1.0, -2.0, np.nan, np.inf, -np.inf, -0.0, 0.0, 3.5])


def special_pair(dtype):
    if dtype in FLOATS:
        return pair_from(SPECIAL.astype(np.float32 if dtype == "bfloat16" else dtype), dtype)
    if dtype in COMPLEX:
        v = np.array([1 + 1j, complex(np.nan, 0), complex(0, np.inf), complex(-np.inf, 1), 0j, 2 - 0j,
                      complex(1, np.nan), 3j], dtype=dtype)
        return pair_from(v, dtype)
    if dtype == "bool":
        return pair_from(np.array([True, False, True]), dtype)
    return pair_from(np.array([0, 1, 5, 9]).astype(dtype) if dtype == "uint8"
                     else np.array([0, -1, 5, -9]).astype(dtype), dtype)


PREDICATES = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit"]


@pytest.mark.parametrize("op", PREDICATES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_predicates(op, dtype, rng):
    e, t = special_pair(dtype)
    if dtype in COMPLEX and op in ("isposinf", "isneginf", "signbit"):
        same_error(lambda lib: getattr(lib, op)(t if lib is torch else e))
        return
    if dtype == "bfloat16" and op == "signbit":  # PyTorch's bfloat16 NaN has its sign bit set
        e, t = pair_from(SPECIAL[[0, 1, 3, 4, 5, 6, 7]].astype(np.float32), dtype)
    check(getattr(ember, op)(e), getattr(torch, op)(t))
    check(getattr(e, op)(), getattr(t, op)())
    for e2, t2 in unary_inputs(dtype, rng, shapes=[(), (0,), (3, 4)]):
        check(getattr(ember, op)(e2), getattr(torch, op)(t2))


@pytest.mark.parametrize("op", ["isposinf", "isneginf", "signbit"])
def test_predicates_out(op):
    e, t = special_pair("float32")
    eo, to = ember.empty(8, dtype=ember.bool), torch.empty(8, dtype=torch.bool)
    assert getattr(ember, op)(e, out=eo) is eo
    getattr(torch, op)(t, out=to)
    check(eo, to)


# ---- logical -----------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Casting complex values")
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("da,db", [("bool", "bool"), ("float32", "int64"), ("complex64", "uint8"),
                                   ("bfloat16", "float16"), ("int8", "bool")])
def test_logical(op, da, db, rng):
    for (ea, eb), (ta, tb) in binary_inputs(da, db, rng, low=-1, high=2):
        check(getattr(ember, op)(ea, eb), getattr(torch, op)(ta, tb))
        check(getattr(ea, op)(eb), getattr(ta, op)(tb))
    (ea, ta), (eb, tb) = make_pair((3, 4), da, rng, low=-1, high=2), make_pair((4,), db, rng, low=-1, high=2)
    e2, t2 = ea.clone(), ta.clone()
    getattr(e2, op + "_")(eb)
    getattr(t2, op + "_")(tb)
    check(e2, t2)
    eo, to = ember.empty(3, 4, dtype=ember.int32), torch.empty(3, 4, dtype=torch.int32)
    getattr(ember, op)(ea, eb, out=eo)
    getattr(torch, op)(ta, tb, out=to)
    check(eo, to)
    same_error(lambda lib: getattr(lib, op)(ta if lib is torch else ea, 1))
    nan = [float("nan"), 0.0]
    check(getattr(ember, op)(ember.tensor(nan), ember.tensor(nan)),
          getattr(torch, op)(torch.tensor(nan), torch.tensor(nan)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_logical_not(dtype, rng):
    for e, t in unary_inputs(dtype, rng, low=-1, high=2, shapes=[(), (0,), (3, 4)]):
        check(ember.logical_not(e), torch.logical_not(t))
        check(e.logical_not(), t.logical_not())
        e2, t2 = e.clone(), t.clone()
        check(e2.logical_not_(), t2.logical_not_())


# ---- bitwise -----------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_bitwise(op, dtype, rng):
    for (ea, eb), (ta, tb) in binary_inputs(dtype, dtype, rng):
        check(getattr(ember, op)(ea, eb), getattr(torch, op)(ta, tb))
    (ea, ta), (eb, tb) = make_pair((3, 4), dtype, rng), make_pair((4,), dtype, rng)
    for s in [3, -1, True, 300]:
        check(getattr(ember, op)(ea, s), getattr(torch, op)(ta, s))
        check(getattr(ember, op)(s, ea), getattr(torch, op)(s, ta))
        check(getattr(ea, op)(s), getattr(ta, op)(s))
    e2, t2 = ea.clone(), ta.clone()
    check(getattr(e2, op + "_")(eb), getattr(t2, op + "_")(tb))
    eo, to = ember.empty(0, dtype=ember.int64), torch.empty(0, dtype=torch.int64)
    getattr(ember, op)(ea, eb, out=eo)
    getattr(torch, op)(ta, tb, out=to)
    check(eo, to)


def test_bitwise_operators(rng):
    (ea, ta), (eb, tb) = make_pair((3, 4), "int32", rng), make_pair((4,), "int32", rng)
    check(ea & eb, ta & tb)
    check(ea | 5, ta | 5)
    check(ea ^ eb, ta ^ tb)
    check(3 & ea, 3 & ta)
    check(~ea, ~ta)
    e2, t2 = ea.clone(), ta.clone()
    e2 &= eb
    t2 &= tb
    check(e2, t2)
    (eb_, tb_) = make_pair((5,), "bool", rng)
    check(~eb_, ~tb_)
    check(eb_ & True, tb_ & True)
    check(eb_ | 1, tb_ | 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bitwise_not(dtype, rng):
    e, t = make_pair((3, 4), dtype, rng)
    if dtype in FLOATS or dtype in COMPLEX:
        same_error(lambda lib: lib.bitwise_not(t if lib is torch else e))
        same_error(lambda lib: lib.bitwise_and(t if lib is torch else e, t if lib is torch else e))
        return
    check(ember.bitwise_not(e), torch.bitwise_not(t))
    e2, t2 = e.clone(), t.clone()
    check(e2.bitwise_not_(), t2.bitwise_not_())


def test_bitwise_errors(rng):
    (ef, tf), (ei, ti) = make_pair((3,), "float32", rng), make_pair((3,), "int64", rng)
    same_error(lambda lib: lib.bitwise_and(ti if lib is torch else ei, 1.5))
    same_error(lambda lib: lib.bitwise_or(ti if lib is torch else ei, tf if lib is torch else ef))
    same_error(lambda lib: lib.bitwise_xor(3, tf if lib is torch else ef))
    same_error(lambda lib: lib.bitwise_and(ti if lib is torch else ei, ones(lib, 2, dtype=lib.int64)))


@pytest.mark.parametrize("op", ["bitwise_left_shift", "bitwise_right_shift"])
@pytest.mark.parametrize("dtype", INTS)
def test_shifts(op, dtype, rng):
    lo = 0 if dtype == "uint8" else -100
    a = rng.integers(lo, 100, 40).astype(dtype)
    sh = np.concatenate([np.arange(-2, 70), [7, 8, 15, 16, 31, 32, 63, 64]])[:40].astype(
        "int64" if dtype != "uint8" else "uint8")
    (ea, ta), (eb, tb) = pair_from(a, dtype), pair_from(sh.astype(dtype), dtype)
    check(getattr(ember, op)(ea, eb), getattr(torch, op)(ta, tb))
    for s in [0, 1, 3, 7, 8, 9, 33, 64, 70, -1]:
        check(getattr(ember, op)(ea, s), getattr(torch, op)(ta, s))
        check(getattr(ea, op)(s), getattr(ta, op)(s))
    (es, ts) = pair_from(np.array([0, 1, 2, 5, 9]).astype(dtype), dtype)
    check(getattr(ember, op)(3, es), getattr(torch, op)(3, ts))
    e2, t2 = ea.clone(), ta.clone()
    check(getattr(e2, op + "_")(2), getattr(t2, op + "_")(2))
    eo, to = ember.empty(40, dtype=ember.int64), torch.empty(40, dtype=torch.int64)
    getattr(ember, op)(ea, eb, out=eo)
    getattr(torch, op)(ta, tb, out=to)
    check(eo, to)
    check(ea << 2, ta << 2)
    check(ea >> eb, ta >> tb)


def test_shift_errors(rng):
    (ef, tf), (ei, ti), (eb, tb) = (make_pair((3,), "float32", rng), make_pair((3,), "int64", rng),
                                    make_pair((3,), "bool", rng))
    same_error(lambda lib: lib.bitwise_left_shift(tf if lib is torch else ef, 1))
    same_error(lambda lib: lib.bitwise_right_shift(ti if lib is torch else ei, 1.5))
    same_error(lambda lib: lib.bitwise_left_shift(tb if lib is torch else eb, tb if lib is torch else eb))
    check(eb << 1, tb << 1)


# ---- where ------------------------------------------------------------------------------------
@pytest.mark.parametrize("da,db", [("float32", "float32"), ("int64", "float16"), ("bool", "int8"),
                                   ("complex64", "float64"), ("bfloat16", "bfloat16"),
                                   ("uint8", "int8")])
def test_where(da, db, rng):
    for (ea, eb), (ta, tb) in binary_inputs(da, db, rng):
        shape = torch.broadcast_shapes(ta.shape, tb.shape)
        ec, tc = make_pair(shape[-1:] if shape else (), "bool", rng)
        check(ember.where(ec, ea, eb), torch.where(tc, ta, tb))
    ec, tc = make_pair((3, 4), "bool", rng, "transposed")
    (ea, ta) = make_pair((3, 4), da, rng)
    for s in [0, 2.5, True, -1, 1j]:
        check(ember.where(ec, ea, s), torch.where(tc, ta, s))
        check(ember.where(ec, s, ea), torch.where(tc, s, ta))
    for s1, s2 in [(1, 2), (1.0, 2), (True, False), (1j, 2), (True, 2)]:
        check(ember.where(ec, s1, s2), torch.where(tc, s1, s2))
    eo, to = ember.empty(0, dtype=ea.dtype), torch.empty(0, dtype=ta.dtype)
    ember.where(ec, ea, ea, out=eo)
    torch.where(tc, ta, ta, out=to)
    check(eo, to)


def test_where_0d_and_empty(rng):
    for shape in [(), (0,), (0, 2)]:
        ec, tc = make_pair(shape, "bool", rng)
        ea, ta = make_pair(shape, "float32", rng)
        check(ember.where(ec, ea, 0.0), torch.where(tc, ta, 0.0))
        check(ember.where(ec, 1, 0), torch.where(tc, 1, 0))
    check(ember.where(scalar(ember, True), ones(ember, 3), 2.0),
          torch.where(torch.tensor(True), torch.ones(3), 2.0))


def test_where_condition_only(rng):
    for shape, dtype in [((3, 4), "bool"), ((5,), "float32"), ((0, 3), "bool"), ((), "bool"),
                         ((2, 3, 2), "int64")]:
        e, t = make_pair(shape, dtype, rng, low=-1, high=2)
        check(list(ember.where(e)), list(torch.where(t)))
    check(list(ember.where(scalar(ember, False))), list(torch.where(torch.tensor(False))))


def test_where_errors(rng):
    (ef, tf) = make_pair((3,), "float32", rng)
    same_error(lambda lib: lib.where(tf if lib is torch else ef, tf if lib is torch else ef, 0.0))
    same_error(lambda lib: lib.where(lib.tensor([1, 0]), ones(lib, 2), 0.0))
    same_error(lambda lib: lib.where(lib.tensor([True, False]), ones(lib, 2, dtype=lib.int8), 1000))
    same_error(lambda lib: lib.where(lib.tensor([True, False]), ones(lib, 2), ones(lib, 3)))
    # uint8 conditions are deprecated but accepted
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = ember.where(ember.tensor([1, 0], dtype=ember.uint8), ones(ember, 2), 0.0)
    assert any("uint8 condition" in str(x.message) for x in w)
    check(r, torch.tensor([1.0, 0.0]))


# ---- masked_fill -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype, rng):
    values = [0, 1, True, 2.5, -1] if dtype != "bool" else [True, 0, 2.5]
    if dtype in COMPLEX:
        values.append(1 + 2j)
    if dtype == "uint8":
        values.remove(-1)
    for e, t in unary_inputs(dtype, rng, shapes=[(), (0,), (3, 4)]):
        em, tm = make_pair(tuple(t.shape), "bool", rng)
        for v in values:
            check(ember.masked_fill(e, em, v), torch.masked_fill(t, tm, v))
            check(e.masked_fill(em, v), t.masked_fill(tm, v))
            e2, t2 = e.clone(), t.clone()
            r = e2.masked_fill_(em, v)
            assert r is e2
            t2.masked_fill_(tm, v)
            check(e2, t2)
        vt = torch.tensor(3)
        check(e.masked_fill(em, scalar(ember, 3)), t.masked_fill(tm, vt))
        e2, t2 = e.clone(), t.clone()
        e2.masked_fill_(em, scalar(ember, 1.0))
        t2.masked_fill_(tm, torch.tensor(1.0))
        check(e2, t2)


def test_masked_fill_broadcast(rng):
    (e, t), (em, tm) = make_pair((3, 4), "float32", rng), make_pair((4,), "bool", rng)
    check(e.masked_fill(em, -1.0), t.masked_fill(tm, -1.0))
    (em2, tm2) = make_pair((2, 3, 1), "bool", rng)
    check(e.masked_fill(em2, 7), t.masked_fill(tm2, 7))
    e2, t2 = e.clone(), t.clone()
    check(e2.masked_fill_(em, 5), t2.masked_fill_(tm, 5))
    (e2, t2) = make_pair((3, 4), "float32", rng, "transposed")  # non-contiguous, written in place
    check(e2.masked_fill_(em, 5), t2.masked_fill_(tm, 5))


def test_masked_fill_errors(rng):
    (e, t) = make_pair((2,), "float32", rng)
    E = lambda lib: t if lib is torch else e  # noqa: E731
    for d in ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
              "float64", "complex64", "complex128"]:
        same_error(lambda lib, d=d: E(lib).masked_fill(ones(lib, 2, dtype=getattr(lib, d)), 1))
    same_error(lambda lib: E(lib).masked_fill(lib.tensor([True, False]), lib.tensor([1.0])))
    same_error(lambda lib: E(lib).clone().masked_fill_(lib.tensor([True, False]), ones(lib, 1, 1)))
    same_error(lambda lib: E(lib).clone().masked_fill_(lib.tensor([[True], [False]]), 1))
    same_error(lambda lib: E(lib).clone().masked_fill_(lib.tensor([True, False, True]), 1))
    same_error(lambda lib: E(lib).masked_fill(lib.tensor([True, False, True]), 1))
    for d, v in [("int8", 300), ("int32", 10 ** 10), ("int64", 1j), ("uint8", -256), ("uint8", -1.0),
                 ("float16", 1e10), ("float32", 1e300), ("bfloat16", 1e300), ("int64", float("nan")),
                 ("complex64", 1e300)]:
        same_error(lambda lib, d=d, v=v: ones(lib, 2, dtype=getattr(lib, d)).masked_fill(
            lib.tensor([True, False]), v))
    for d, v in [("uint8", -255), ("float16", float("inf")), ("bool", 7), ("int64", 1.9)]:
        check(ones(ember, 2, dtype=getattr(ember, d)).masked_fill(ember.tensor([True, False]), v),
              torch.ones(2, dtype=getattr(torch, d)).masked_fill(torch.tensor([True, False]), v))


def test_masked_fill_meta(rng):
    e = ember.empty(3, 4, device="meta")
    r = e.masked_fill(ember.empty(4, dtype=ember.bool, device="meta"), 1.0)
    assert r.shape == (3, 4) and r.dtype == ember.float32 and r.device.type == "meta"
    assert e.masked_fill_(ember.empty(4, dtype=ember.bool, device="meta"), 1.0) is e
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        e.masked_fill(ember.empty(4, device="meta"), 1.0)
