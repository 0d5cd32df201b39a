"""dtypes, type promotion, can_cast, default dtype, finfo/iinfo against PyTorch."""
import pickle

import numpy as np
import pytest
import torch

import ember
from harness import DTYPES, edtype, pair_from, tdtype


def name(d):
    return str(d).split(".")[-1]


@pytest.mark.parametrize("a", DTYPES)
def test_promote_types_all_pairs(a):
    for b in DTYPES:
        r = ember.promote_types(edtype(a), edtype(b))
        assert isinstance(r, ember.dtype)
        assert name(r) == name(torch.promote_types(tdtype(a), tdtype(b))), (a, b)


@pytest.mark.parametrize("a", DTYPES)
def test_can_cast_all_pairs(a):
    for b in DTYPES:
        assert ember.can_cast(edtype(a), edtype(b)) == torch.can_cast(tdtype(a), tdtype(b)), (a, b)


def _participants():
    """(ember, torch, label) for tensors with dim > 0, 0-d tensors and Python scalars."""
    out = []
    for n in DTYPES:
        for shape in ((2,), ()):
            base = np.zeros(shape, dtype=np.float32 if n == "bfloat16" else n)
            e, t = pair_from(base, n)
            out.append((e, t, f"{n}{list(shape)}"))
    for s in (True, 3, -2.5, 1 + 2j):
        out.append((s, s, repr(s)))
    return out


PARTS = _participants()


def _torch_result(ta, tb):
    return name(torch.result_type(ta, tb))


@pytest.mark.parametrize("i", range(len(PARTS)), ids=[p[2] for p in PARTS])
def test_result_type_all_categories(i):
    ea, ta, la = PARTS[i]
    for eb, tb, lb in PARTS:
        assert name(ember.result_type(ea, eb)) == _torch_result(ta, tb), (la, lb)


def test_result_type_default_dtype():
    e, t = pair_from(np.zeros(3, dtype=np.int32), "int32")
    old = ember.get_default_dtype()
    try:
        for d in ("float64", "float16", "bfloat16"):
            ember.set_default_dtype(edtype(d))
            torch.set_default_dtype(tdtype(d))
            assert name(ember.result_type(e, 1.5)) == name(torch.result_type(t, 1.5)) == d
            assert name(ember.result_type(2.5, 1)) == name(torch.result_type(2.5, 1))
            assert ember.get_default_dtype() is edtype(d)
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_default_dtype_effects():
    assert ember.get_default_dtype() is ember.float32
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.get_default_dtype() is ember.float64
        assert ember.tensor([1.0]).dtype is ember.float64
        assert ember.tensor([1j]).dtype is ember.complex128
        assert ember.tensor([1]).dtype is ember.int64
        assert ember.empty(2).dtype is ember.float64
        ember.set_default_dtype(ember.float16)
        assert ember.tensor([1.0]).dtype is ember.float16
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.tensor([1.0]).dtype is ember.float32
    assert ember.tensor([1j]).dtype is ember.complex64


@pytest.mark.parametrize("bad", ["int64", "complex64", "bool", "pyfloat", "str"])
def test_set_default_dtype_errors(bad):
    def arg(lib):
        return {"pyfloat": float, "str": "float32"}.get(bad) or getattr(lib, bad)

    for lib in (torch, ember):
        with pytest.raises(TypeError) as ei:
            lib.set_default_dtype(arg(lib))
        msg = str(ei.value)
        if lib is torch:
            tmsg = msg
    assert msg == tmsg
    assert ember.get_default_dtype() is ember.float32


@pytest.mark.parametrize("n", DTYPES)
def test_dtype_attributes(n):
    e, t = edtype(n), tdtype(n)
    assert e.is_floating_point == t.is_floating_point
    assert e.is_complex == t.is_complex
    assert e.is_signed == t.is_signed
    assert e.itemsize == t.itemsize
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert str(e) == str(t).replace("torch.", "ember.")
    assert pickle.loads(pickle.dumps(e)) is e
    assert hash(e) == hash(edtype(n))
    if t.is_complex or t.is_floating_point:
        tr = t.to_real()
        assert name(e.to_real()) == name(tr)
        tc = t.to_complex()
        assert name(e.to_complex()) == name(tc)
    else:
        assert e.to_real() is e
        with pytest.raises(RuntimeError) as te:
            t.to_complex()
        with pytest.raises(RuntimeError) as ee:
            e.to_complex()
        assert str(ee.value) == str(te.value)


def test_aliases():
    for a in ("half", "float", "double", "short", "int", "long", "cfloat", "cdouble", "bool",
              "uint8", "int8", "bfloat16", "float16", "complex64"):
        assert repr(getattr(ember, a)) == repr(getattr(torch, a)).replace("torch.", "ember.")
    assert ember.float is ember.float32 and ember.long is ember.int64
    assert isinstance(ember.float32, ember.dtype)


FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("n", FLOATS)
def test_finfo(n):
    e, t = ember.finfo(edtype(n)), torch.finfo(tdtype(n))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        ev, tv = getattr(e, attr), getattr(t, attr)
        assert ev == tv and type(ev) is type(tv), (attr, ev, tv)
    assert repr(e) == repr(t)
    assert str(e) == str(t)
    assert e == ember.finfo(edtype(n))


def test_finfo_default_and_python_types():
    assert repr(ember.finfo()) == repr(torch.finfo())
    assert repr(ember.finfo(float)) == repr(torch.finfo(float))
    assert repr(ember.iinfo(int)) == repr(torch.iinfo(int))
    assert ember.finfo(ember.float32) != ember.finfo(ember.float64)
    with pytest.raises(AttributeError):
        ember.finfo(ember.float32).eps = 1.0


@pytest.mark.parametrize("n", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(n):
    e, t = ember.iinfo(edtype(n)), torch.iinfo(tdtype(n))
    for attr in ("bits", "max", "min", "dtype"):
        ev, tv = getattr(e, attr), getattr(t, attr)
        assert ev == tv and type(ev) is type(tv), (attr, ev, tv)
    assert repr(e) == repr(t)


@pytest.mark.parametrize("fn,n", [("finfo", "int32"), ("finfo", "bool"), ("iinfo", "float32"),
                                  ("iinfo", "bool"), ("iinfo", "complex64"), ("finfo", "str")])
def test_info_errors(fn, n):
    for lib in (torch, ember):
        arg = "float32" if n == "str" else edtype(n) if lib is ember else tdtype(n)
        with pytest.raises(TypeError) as ei:
            getattr(lib, fn)(arg)
        if lib is torch:
            tmsg = str(ei.value).replace("torch.", "ember.")
    assert str(ei.value) == tmsg
