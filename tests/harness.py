"""Differential testing against PyTorch: mirrored inputs, comparison of values/dtype/shape/strides.

`mirror` builds the same strided view over the same data in both libraries, so ember and torch
see identical non-contiguous inputs; `check` compares results the way torch.testing does.
"""
import warnings

import numpy as np
import pytest
import torch

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
FLOAT32_64 = ["float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
SIGNED_INTS = ["int8", "int16", "int32", "int64"]
REALS = INTS + FLOATS
ALL_NO_COMPLEX = ["bool"] + REALS
COMPLEX = ["complex64", "complex128"]


def edtype(name):
    return getattr(ember, "bool" if name == "bool" else name)


def tdtype(name):
    return getattr(torch, name)


def np_data(shape, dtype, rng, low=None, high=None):
    """Random data of `dtype` as a NumPy array (bfloat16 as float32 values exactly representable)."""
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        a = rng.random(n) < 0.5
    elif dtype in INTS:
        lo = 0 if dtype == "uint8" else (-9 if low is None else low)
        hi = 10 if high is None else high
        a = rng.integers(lo, hi, n).astype(dtype)
    elif dtype in COMPLEX:
        lo, hi = (-3 if low is None else low), (3 if high is None else high)
        a = (rng.uniform(lo, hi, n) + 1j * rng.uniform(lo, hi, n)).astype(dtype)
    else:
        lo, hi = (-3 if low is None else low), (3 if high is None else high)
        a = rng.uniform(lo, hi, n)
        if dtype in ("float16", "bfloat16"):
            a = torch.tensor(a).to(tdtype(dtype)).float().numpy()
            if dtype == "float16":
                a = a.astype(np.float16)
        else:
            a = a.astype(dtype)
    return a.reshape(shape)


def pair_from(base, dtype, shape=None, strides=None, offset=0, device=None):
    """(ember, torch) tensors over copies of `base` (NumPy), optionally as the same strided view;
    ember's on `device` (the view taken there) where one is given, torch's on the CPU."""
    base = np.array(base, order="C")  # (np.ascontiguousarray turns a 0-d array into 1-d)
    if dtype == "bfloat16":
        t = torch.from_numpy(base.astype(np.float32).copy()).to(torch.bfloat16)
        e = ember.from_numpy(base.astype(np.float32)).to(ember.bfloat16)
    else:
        t = torch.from_numpy(base.copy())
        e = ember.from_numpy(base.copy())
    if device is not None:
        e = e.to(device)
    if shape is not None:
        t = t.as_strided(shape, strides, offset)
        e = e.as_strided(shape, strides, offset)
    return e, t


def layout_of(shape, layout="contiguous"):
    """(base shape, strides, storage offset) of a view of `shape` in one of the layouts: contiguous,
    transposed, strided (step 2 in the last dim), expanded (stride 0 in the first dim)."""
    shape = tuple(shape)
    if layout == "contiguous" or not shape:
        return shape, None, 0
    if layout == "transposed":
        if len(shape) < 2:
            return layout_of(shape, "strided")
        rev = tuple(reversed(shape))
        return rev, tuple(reversed(_contiguous_strides(rev))), 0
    if layout == "strided":
        big = shape[:-1] + (shape[-1] * 2 + 1,)
        st = list(_contiguous_strides(big))
        st[-1] *= 2
        return big, tuple(st), 1 if shape[-1] else 0
    if layout == "expanded":
        return (1,) + shape[1:], (0,) + _contiguous_strides(shape[1:]), 0
    raise ValueError(layout)


def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def make_pair(shape, dtype, rng, layout="contiguous", low=None, high=None):
    """Input of `shape` in one of the layouts: contiguous, transposed, strided (step 2), expanded."""
    shape = tuple(shape)
    base_shape, strides, offset = layout_of(shape, layout)
    base = np_data(base_shape, dtype, rng, low, high)
    if strides is None:
        return pair_from(base, dtype)
    return pair_from(base, dtype, shape, strides, offset)


def to_numpy_t(t):
    if t._is_zerotensor():
        t = torch.zeros(t.shape, dtype=t.dtype)
    t = t.detach().cpu().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        t = t.float()
    elif t.dtype == torch.complex32:  # no NumPy dtype: compared as complex64 (exact widening)
        t = t.to(torch.complex64)
    return t.numpy()


def to_numpy_e(e):
    e = e.detach().cpu()
    if e.dtype is ember.bfloat16:
        return e.float().numpy()
    if e.dtype is ember.complex32:
        return e.to(ember.complex64).numpy()
    return e.numpy()


def tname(dt):
    return str(dt).replace("torch.", "")


def check(e, t, atol=None, rtol=None, check_stride=False, exact_dtype=True, equal_nan=True,
          check_requires_grad=False, strict_types=False):
    """ember result `e` equals torch result `t`: structure, dtype, shape, values (and strides).

    Also compares the objects around tensors (dicts, Size, dtype, device); with `strict_types`,
    containers and Python values must be of the very same type (list is not tuple)."""
    again = dict(atol=atol, rtol=rtol, check_stride=check_stride, exact_dtype=exact_dtype,
                 equal_nan=equal_nan, check_requires_grad=check_requires_grad, strict_types=strict_types)
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"expected Tensor, got {type(e).__name__}"
        if check_requires_grad:
            assert e.requires_grad == t.requires_grad, f"requires_grad {e.requires_grad} != {t.requires_grad}"
        if exact_dtype:
            assert e.dtype.name == tname(t.dtype), f"dtype {e.dtype} != {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), f"shape {tuple(e.shape)} != {tuple(t.shape)}"
        if check_stride:
            assert e.stride() == t.stride(), f"strides {e.stride()} != {t.stride()}"
            assert e.storage_offset() == t.storage_offset(), "storage offset differs"
        if t.device.type == "meta" or e.device.type == "meta":
            return
        en, tn = to_numpy_e(e), to_numpy_t(t)
        kw = {}
        if atol is not None:
            kw = {"atol": atol, "rtol": rtol if rtol is not None else 0}
        elif t.dtype in (torch.bfloat16, torch.float16):
            # values were widened to float32 for comparing: keep the narrow dtype's tolerances
            kw = {"atol": 1e-5, "rtol": 1.6e-2 if t.dtype == torch.bfloat16 else 1e-3}
        torch.testing.assert_close(torch.from_numpy(np.ascontiguousarray(en)),
                                   torch.from_numpy(np.ascontiguousarray(tn)), equal_nan=equal_nan,
                                   check_dtype=False, **kw)
    elif isinstance(t, torch.Size):
        assert type(e) is ember.Size and tuple(e) == tuple(t), f"{e!r} != {t!r}"
    elif isinstance(t, torch.dtype):
        assert isinstance(e, ember.dtype) and str(e) == str(t).replace("torch.", "ember."), f"{e} != {t}"
    elif isinstance(t, torch.device):
        assert isinstance(e, ember.device) and str(e) == str(t), f"{e} != {t}"
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t), f"{e!r} != {t!r}"
        for k in t:
            check(e[k], t[k], **again)
    elif isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)), f"expected sequence, got {type(e).__name__}"
        assert not strict_types or type(e) is type(t), f"type {type(e).__name__} != {type(t).__name__}"
        assert len(e) == len(t), f"length {len(e)} != {len(t)}"
        for a, b in zip(e, t):
            check(a, b, **again)
    elif isinstance(t, float) and isinstance(e, float):
        if np.isnan(t):
            assert np.isnan(e)
        else:
            assert abs(e - t) <= (atol or 1e-5) + (rtol or 1.3e-6) * abs(t), (e, t)
    else:
        assert e == t, f"{e!r} != {t!r}"
        if strict_types:
            assert type(e) is type(t), f"type {type(e).__name__} != {type(t).__name__}"
        assert type(e) is type(t) or isinstance(e, type(t)) or isinstance(t, type(e)), \
            f"type {type(e).__name__} != {type(t).__name__}"


def check_grads(e_out, t_out, e_in, t_in, seed=1):
    """ember's and torch's gradients of the outputs with respect to the inputs, for one random
    grad_output (float64 draws in torch's output dtype); an input torch gives no gradient must get
    None or zeros from ember."""
    g = torch.from_numpy(np.random.default_rng(seed).standard_normal(tuple(t_out.shape))).to(t_out.dtype)
    tg = torch.autograd.grad(t_out, t_in, g, allow_unused=True)
    eg = ember.autograd.grad(e_out, e_in, ember.tensor(g.numpy()), allow_unused=True)
    for a, b in zip(eg, tg):
        if b is None:
            assert a is None or not a.abs().sum().item()
        else:
            check(a, b)


def same_error(fn, match=None, exc=None):
    """fn(lib) raises in torch and in ember; ember's message equals torch's (or contains `match`)."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(Exception) as ee:
        fn(ember)
    tmsg, emsg = str(te.value), str(ee.value)
    if exc is not None:
        assert isinstance(ee.value, exc), f"{type(ee.value).__name__}: {emsg}"
    else:
        assert isinstance(ee.value, type(te.value)) or isinstance(te.value, type(ee.value)), \
            f"torch raised {type(te.value).__name__}: {tmsg}; ember raised {type(ee.value).__name__}: {emsg}"
    if match is not None:
        assert match in emsg, f"{match!r} not in ember's message {emsg!r} (torch: {tmsg!r})"
    else:
        assert emsg.split("\n")[0] == tmsg.split("\n")[0], f"ember: {emsg!r}\ntorch: {tmsg!r}"


# the order in which a tolerance table is consulted: the narrowest dtype among result and inputs wins
_TOL_ORDER = ["bfloat16", "float16", "float32", "complex64", "float64", "complex128"]


def tol_of(*ts, tols=None):
    """(atol, rtol) from `tols` (dtype name -> pair) for the narrowest dtype among tensors `ts`
    (results and inputs, nested in tuples); (None, None) where none applies."""
    names = set()

    def visit(x):
        if isinstance(x, torch.Tensor):
            names.add(tname(x.dtype))
        elif isinstance(x, (tuple, list)):
            for y in x:
                visit(y)
    for x in ts:
        visit(x)
    for n in _TOL_ORDER:
        if n in names and tols and n in tols:
            return tols[n]
    return (None, None)


def _run_quiet(fn, lib, args, kw, warn):
    with warnings.catch_warnings():
        if warn == "ignore":
            warnings.simplefilter("ignore")
        elif warn == "error":
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("error", RuntimeWarning)  # no NumPy warning may reach the user
        return fn(lib, *args, **kw)


def compare(fn, e_args, t_args, e_kw=None, t_kw=None, tol=None, tols=None, same_msg=True, meta=False,
            ember_warnings=None):
    """fn(lib, *args, **kw) in both libraries: the same error (type, and first line unless not
    `same_msg`), or the same result (harness.check: values, dtype, shape).

    tol: (atol, rtol) for every dtype; tols: dtype name -> (atol, rtol) (tol_of); meta: the call on
    meta copies of the inputs gives torch's shape and dtype too; ember_warnings: None (leave them),
    "ignore", or "error" (a RuntimeWarning from NumPy fails the test). Returns (ember, torch)
    results, or None where torch raised."""
    e_kw, t_kw = e_kw or {}, t_kw or {}
    try:
        t = _run_quiet(fn, torch, t_args, t_kw, "ignore")
    except Exception as te:
        try:
            er = _run_quiet(fn, ember, e_args, e_kw, ember_warnings)
        except Exception as ee:
            assert isinstance(ee, type(te)) or isinstance(te, type(ee)), \
                f"torch raised {type(te).__name__}: {te}; ember raised {type(ee).__name__}: {ee}"
            assert not same_msg or str(ee).split("\n")[0] == str(te).split("\n")[0], \
                f"ember: {ee!r}\ntorch: {te!r}"
            return None
        raise AssertionError(f"torch raised {type(te).__name__}: {te}; ember returned {er!r}")
    e = _run_quiet(fn, ember, e_args, e_kw, ember_warnings)
    atol, rtol = tol if tol is not None else tol_of(t, *t_args, tols=tols)
    check(e, t, atol=atol, rtol=rtol)
    if meta:
        em = [x.to("meta") if isinstance(x, ember.Tensor) else x for x in e_args]
        r = _run_quiet(fn, ember, em, e_kw, "ignore")
        assert r.device.type == "meta"
        assert tuple(r.shape) == tuple(t.shape) and r.dtype.name == tname(t.dtype)
    return e, t


LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]
SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 4), (0, 3)]


def unary_inputs(dtype, rng, low=None, high=None, shapes=SHAPES, layouts=LAYOUTS):
    for shape in shapes:
        for layout in layouts:
            if layout != "contiguous" and (len(shape) < 1 or 0 in shape):
                continue
            yield make_pair(shape, dtype, rng, layout, low, high)


BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((), (3,)), ((2, 3, 4), ()),
                 ((0, 4), (4,)), ((5,), (5,))]


def binary_inputs(dtype_a, dtype_b, rng, low=None, high=None, shapes=BINARY_SHAPES):
    for sa, sb in shapes:
        for layout in ("contiguous", "transposed", "expanded"):
            if layout != "contiguous" and (len(sa) < 2 or 0 in sa):
                continue
            ea, ta = make_pair(sa, dtype_a, rng, layout, low, high)
            eb, tb = make_pair(sb, dtype_b, rng, "contiguous", low, high)
            yield (ea, eb), (ta, tb)


def run_both(fn, e_args, t_args):
    """fn(lib, *args) with ember and torch; returns (ember_result, torch_result)."""
    return fn(ember, *e_args), fn(torch, *t_args)


def to_meta_pair(e, t):
    return e.to("meta"), t.to("meta")
