"""View operators against torch: shape, strides, storage offset, values, aliasing, errors, meta."""
import numpy as np
import pytest
import torch
from harness import DTYPES, check as _check, make_pair, same_error

import ember

pytestmark = pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")

# (name, fn(lib, x), input shape): fn uses only the API both libraries share
VIEWS = [
    ("transpose", lambda L, x: x.transpose(0, 2), (2, 3, 4)),
    ("transpose_neg", lambda L, x: L.transpose(x, -1, 0), (2, 3, 4)),
    ("select", lambda L, x: x.select(1, -2), (2, 3, 4)),
    ("select_fn", lambda L, x: L.select(x, 0, 1), (2, 3, 4)),
    ("select_last", lambda L, x: x.select(0, 4), (5,)),
    ("slice", lambda L, x: L.ops.aten.slice.Tensor(x, 1, 1, None, 2), (2, 5, 4)),
    ("slice_neg", lambda L, x: L.ops.aten.slice.Tensor(x, -1, -3, -1), (2, 5, 4)),
    ("slice_clamp", lambda L, x: L.ops.aten.slice.Tensor(x, 0, -10, 10, 3), (7, 2)),
    ("slice_default", lambda L, x: L.ops.aten.slice.Tensor(x), (3, 2)),
    ("narrow", lambda L, x: x.narrow(1, 1, 3), (2, 5, 4)),
    ("narrow_neg", lambda L, x: L.narrow(x, -1, -2, 2), (2, 5, 4)),
    ("unsqueeze0", lambda L, x: x.unsqueeze(0), (3, 4)),
    ("unsqueeze1", lambda L, x: x.unsqueeze(1), (3, 4)),
    ("unsqueeze_last", lambda L, x: L.unsqueeze(x, -1), (3, 4)),
    ("unsqueeze_0d", lambda L, x: x.unsqueeze(0), ()),
    ("squeeze_all", lambda L, x: x.squeeze(), (1, 3, 1, 4)),
    ("squeeze_dim", lambda L, x: x.squeeze(2), (1, 3, 1, 4)),
    ("squeeze_dim_noop", lambda L, x: x.squeeze(1), (1, 3, 1, 4)),
    ("squeeze_dims", lambda L, x: L.squeeze(x, (0, -2, 1)), (1, 3, 1, 4)),
    ("squeeze_0d", lambda L, x: x.squeeze(0), ()),
    ("expand", lambda L, x: x.unsqueeze(1).expand(3, 5, 4), (3, 4)),
    ("expand_new", lambda L, x: x.expand(2, 1, 3, 4), (3, 4)),
    ("expand_minus1", lambda L, x: x.unsqueeze(0).expand(2, -1, -1), (3, 4)),
    ("expand_0d", lambda L, x: x.expand(1, 3), ()),
    ("expand_same", lambda L, x: x.expand(3, 4), (3, 4)),
    ("expand_as", lambda L, x: x.unsqueeze(0).expand_as(L.zeros(2, 3, 4)), (3, 4)),
    ("broadcast_to", lambda L, x: L.broadcast_to(x, (2, 3, 4)), (3, 4)),
    ("permute", lambda L, x: x.permute(2, 0, 1), (2, 3, 4)),
    ("permute_fn", lambda L, x: L.permute(x, (-1, 0, 1)), (2, 3, 4)),
    ("view", lambda L, x: x.view(4, 6), (2, 3, 4)),
    ("view_minus1", lambda L, x: x.view(-1), (2, 3, 4)),
    ("view_split", lambda L, x: x.view(2, 3, 2, 2), (2, 3, 4)),
    ("view_0d", lambda L, x: x.view(1, 1), ()),
    ("view_size_kw", lambda L, x: x.view((3, 8)), (2, 3, 4)),
    ("view_as", lambda L, x: x.view_as(L.zeros(6, 4)), (2, 3, 4)),
    ("reshape", lambda L, x: x.reshape(6, 4), (2, 3, 4)),
    ("reshape_fn", lambda L, x: L.reshape(x, (4, -1)), (2, 3, 4)),
    ("reshape_as", lambda L, x: x.reshape_as(L.zeros(4, 6)), (2, 3, 4)),
    ("flatten", lambda L, x: x.flatten(), (2, 3, 4)),
    ("flatten_part", lambda L, x: L.flatten(x, 1), (2, 3, 4)),
    ("flatten_mid", lambda L, x: x.flatten(0, 1), (2, 3, 4)),
    ("flatten_0d", lambda L, x: x.flatten(), ()),
    ("ravel", lambda L, x: L.ravel(x), (2, 3, 4)),
    ("unflatten", lambda L, x: x.unflatten(2, (2, 2)), (2, 3, 4)),
    ("unflatten_infer", lambda L, x: L.unflatten(x, -1, (-1, 2)), (2, 3, 4)),
    ("t", lambda L, x: x.t(), (3, 4)),
    ("t_1d", lambda L, x: L.t(x), (3,)),
    ("t_0d", lambda L, x: x.t(), ()),
    ("movedim", lambda L, x: x.movedim(0, -1), (2, 3, 4)),
    ("movedim_list", lambda L, x: L.movedim(x, (0, 1), (2, 0)), (2, 3, 4)),
    ("moveaxis", lambda L, x: L.moveaxis(x, 2, 0), (2, 3, 4)),
    ("swapaxes", lambda L, x: x.swapaxes(0, 1), (2, 3, 4)),
    ("swapdims", lambda L, x: L.swapdims(x, 2, 0), (2, 3, 4)),
    ("diagonal", lambda L, x: x.diagonal(), (3, 4)),
    ("diagonal_off", lambda L, x: L.diagonal(x, 1), (3, 4)),
    ("diagonal_neg", lambda L, x: x.diagonal(-1), (3, 4)),
    ("diagonal_dims", lambda L, x: x.diagonal(1, 2, 0), (3, 2, 4)),
    ("diagonal_empty", lambda L, x: x.diagonal(5), (3, 4)),
    ("unfold", lambda L, x: x.unfold(1, 2, 1), (3, 4)),
    ("unfold_step", lambda L, x: x.unfold(0, 2, 2), (5, 2)),
    ("unfold_0d", lambda L, x: x.unfold(0, 1, 1), ()),
    ("alias", lambda L, x: L.ops.aten.alias(x), (3, 4)),
    ("detach", lambda L, x: x.detach(), (3, 4)),
    ("as_strided", lambda L, x: x.as_strided((2, 2), (1, 2), 1), (3, 4)),
    ("mT", lambda L, x: x.mT, (2, 3, 4)),
    ("T", lambda L, x: x.T, (3, 4)),
]

LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]


def check(e, t, **kw):
    """harness.check; a zero-size CPU view reports storage offset 0 in ember (its NumPy array has no
    data pointer of its own), so strides only are compared there."""
    if kw.get("check_stride") and isinstance(t, torch.Tensor) and t.numel() == 0 and \
            t.device.type == "cpu":
        assert e.stride() == t.stride(), f"strides {e.stride()} != {t.stride()}"
        kw = dict(kw, check_stride=False)
    if isinstance(t, (list, tuple)):
        assert isinstance(e, (list, tuple)) and len(e) == len(t)
        for a, b in zip(e, t):
            check(a, b, **kw)
        return
    _check(e, t, **kw)


def _both(fn, shape, dtype, layout, rng):
    e, t = make_pair(shape, dtype, rng, layout)
    return fn(ember, e), fn(torch, t), e, t


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,fn,shape", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_geometry(name, fn, shape, layout, rng):
    if layout != "contiguous" and (len(shape) < 1 or 0 in shape):
        return
    try:
        rt = fn(torch, make_pair(shape, "float32", rng, layout)[1])
    except RuntimeError:  # e.g. view of a non-viewable layout: the error must match
        same_error(lambda L: fn(L, make_pair(shape, "float32", np.random.default_rng(0),
                                             layout)[0 if L is ember else 1]))
        return
    re, rt, e, t = _both(fn, shape, "float32", layout, rng)
    check(re, rt, check_stride=True)
    # a view shares the input's storage (reshape may copy: then it must not alias)
    assert (re.untyped_storage().data_ptr() == e.untyped_storage().data_ptr()) == \
        (rt.untyped_storage().data_ptr() == t.untyped_storage().data_ptr())


@pytest.mark.parametrize("name,fn,shape", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_meta(name, fn, shape, rng):
    e, t = make_pair(shape, "float32", rng, "transposed" if len(shape) >= 2 else "contiguous")
    em, tm = ember.empty_strided(tuple(t.shape), t.stride(), device="meta"), \
        torch.empty_strided(t.shape, t.stride(), device="meta")
    try:
        rt = fn(torch, tm)
    except RuntimeError:
        same_error(lambda L: fn(L, em if L is ember else tm))
        return
    re = fn(ember, em)
    assert re.device.type == "meta"
    check(re, rt, check_stride=True)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("name,fn,shape", [v for v in VIEWS if v[0] not in (
    "expand", "expand_new", "expand_minus1", "expand_0d", "expand_as", "broadcast_to",
    "as_strided", "reshape", "reshape_fn", "reshape_as", "ravel", "flatten", "flatten_part",
    "flatten_mid", "unfold")], ids=lambda v: v if isinstance(v, str) else "")
def test_write_through_view(name, fn, shape, layout, rng):
    """Writing into the view changes the base, as in torch."""
    if layout != "contiguous" and (len(shape) < 1 or 0 in shape):
        return
    e, t = make_pair(shape, "float64", rng, layout)
    try:
        rt = fn(torch, t)
    except RuntimeError:
        return
    re = fn(ember, e)
    re.mul_(-2)
    rt.mul_(-2)
    check(e, t)
    check(re, rt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_views_all_dtypes(dtype, rng):
    e, t = make_pair((2, 3, 4), dtype, rng, "transposed")
    for fn in (lambda x: x.select(1, 1), lambda x: x.permute(1, 2, 0), lambda x: x.unsqueeze(1),
               lambda x: x.diagonal(0, 0, 2), lambda x: x.unfold(2, 2, 1),
               lambda x: x[0:1].squeeze(0) if False else x.narrow(0, 1, 1).squeeze(0),
               lambda x: x.unsqueeze(0).expand(2, 2, 3, 4), lambda x: x.reshape(-1),
               lambda x: x.movedim(0, 1), lambda x: x.flatten(1)):
        check(fn(e), fn(t), check_stride=True)


def test_expanded_is_not_writable_but_its_slices_are():
    e, t = ember.zeros(3), torch.zeros(3)
    same_error(lambda L: (e if L is ember else t).expand(2, 3).mul_(2))
    xe, xt = e.expand(2, 3).select(0, 1), t.expand(2, 3).select(0, 1)
    xe.mul_(2)
    xt.mul_(2)
    check(e, t)


def test_reshape_copies_when_needed(rng):
    e, t = make_pair((3, 4), "float32", rng, "transposed")
    re, rt = e.reshape(12), t.reshape(12)
    check(re, rt, check_stride=True)
    assert re._base is None
    re.mul_(0)
    assert e.abs().sum().item() != 0


# ---- view(dtype), view_as_real / view_as_complex ------------------------------------------------
@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "int16"), ("float32", "uint8"),
                                     ("float32", "float64"), ("float32", "complex64"),
                                     ("int64", "complex128"), ("bool", "uint8"),
                                     ("bfloat16", "int16"), ("float16", "bfloat16"),
                                     ("int8", "bool"), ("complex64", "float32"),
                                     ("float64", "int8")])
def test_view_dtype(src, dst, rng):
    for shape, layout in [((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((4,), "contiguous"),
                          ((0, 4), "contiguous")]:
        e, t = make_pair(shape, src, rng, layout)
        ed, td = getattr(ember, dst), getattr(torch, dst)
        try:
            rt = t.view(td)
        except RuntimeError:
            same_error(lambda L, e=e, t=t, ed=ed, td=td: (e if L is ember else t).view(
                ed if L is ember else td))
            continue
        if dst == "bool" or src in ("float32", "float64", "int64") and dst in ("bool",):
            continue
        re = e.view(ed)
        assert re.dtype is ed
        assert re.shape == rt.shape
        assert re.stride() == rt.stride() or rt.numel() == 0
        assert re.storage_offset() == rt.storage_offset()
        np.testing.assert_array_equal(re.view(e.dtype).numpy() if src != "bfloat16" else
                                      re.view(e.dtype).float().numpy(),
                                      e.numpy() if src != "bfloat16" else e.float().numpy())
        if dst not in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
            np.testing.assert_array_equal(re.numpy(), rt.numpy())


def test_view_dtype_offsets_and_errors():
    x = ember.arange(24, dtype=ember.float32).reshape(4, 6) if hasattr(ember, "arange") else None
    e, t = make_pair((4, 6), "float32", np.random.default_rng(0))
    for fn in [lambda L, x: L.ops.aten.slice.Tensor(x, 1, 2, 6).view(L.float64),
               lambda L, x: L.ops.aten.slice.Tensor(x, 1, 1, 5).view(L.float64),
               lambda L, x: L.ops.aten.slice.Tensor(x, 1, 1, 4).view(L.float64),
               lambda L, x: L.ops.aten.slice.Tensor(x, 1, 0, 6, 2).view(L.int16),
               lambda L, x: x.t().view(L.float64),
               lambda L, x: x.select(0, 0).select(0, 0).view(L.int16),
               lambda L, x: L.ops.aten.slice.Tensor(x, 1, 1, 5).view(L.int16)]:
        try:
            rt = fn(torch, t)
        except RuntimeError:
            same_error(lambda L, fn=fn: fn(L, e if L is ember else t))
            continue
        check(fn(ember, e).view(ember.float32), rt.view(torch.float32), check_stride=True)
        assert fn(ember, e).stride() == rt.stride()
        assert fn(ember, e).storage_offset() == rt.storage_offset()
    del x


def test_view_dtype_meta():
    for shape in [(3, 4), (2, 6)]:
        em = ember.empty(shape, device="meta")
        tm = torch.empty(shape, device="meta")
        for ed, td in [(ember.float64, torch.float64), (ember.int8, torch.int8)]:
            re, rt = em.view(ed), tm.view(td)
            assert re.dtype is ed and re.device.type == "meta"
            assert tuple(re.shape) == tuple(rt.shape) and re.stride() == rt.stride()


def test_view_dtype_write_through():
    e = ember.from_numpy(np.zeros(4, np.float32))
    v = e.view(ember.int32)
    v.copy_(ember.from_numpy(np.array([0x3F800000] * 4, np.int32)))
    np.testing.assert_array_equal(e.numpy(), np.ones(4, np.float32))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_view_as_real(dtype, rng):
    for shape, layout in [((3, 4), "contiguous"), ((2, 3, 4), "transposed"), ((5,), "strided"),
                          ((), "contiguous"), ((0, 2), "contiguous")]:
        e, t = make_pair(shape, dtype, rng, layout)
        re, rt = ember.view_as_real(e), torch.view_as_real(t)
        check(re, rt, check_stride=True)
        back_e, back_t = ember.view_as_complex(re), torch.view_as_complex(rt)
        check(back_e, back_t, check_stride=True)
    e, t = make_pair((3,), dtype, rng)
    ember.view_as_real(e).mul_(2)
    torch.view_as_real(t).mul_(2)
    check(e, t)
    em = ember.empty((3, 4), dtype=getattr(ember, dtype), device="meta")
    tm = torch.empty((3, 4), dtype=getattr(torch, dtype), device="meta")
    check(ember.view_as_real(em), torch.view_as_real(tm), check_stride=True)


def test_view_as_complex_errors(rng):
    cases = [lambda L: L.view_as_complex(L.zeros(3, 4)),
             lambda L: L.view_as_complex(L.zeros(3, 2, dtype=L.int32)),
             lambda L: L.view_as_complex(L.zeros(3, 2, dtype=L.bfloat16)),
             lambda L: L.view_as_complex(L.zeros(())),
             lambda L: L.view_as_complex(L.zeros(2, 3).t()),
             lambda L: L.view_as_complex(L.zeros(5, 4).unfold(1, 2, 2).select(2, 0)),
             lambda L: L.view_as_complex(L.ops.aten.slice.Tensor(L.zeros(12), 0, 1, 5).view(2, 2)),
             lambda L: L.view_as_complex(L.zeros(3, 3, 2).select(1, 0).unsqueeze(0)
                                         .as_strided((1, 3, 2), (1, 3, 1))),
             lambda L: L.view_as_real(L.zeros(3))]
    for c in cases:
        same_error(c)
    e, t = make_pair((6, 2), "float32", rng)
    check(ember.view_as_complex(e.narrow(0, 1, 4)), torch.view_as_complex(t.narrow(0, 1, 4)),
          check_stride=True)


# ---- lists of views -----------------------------------------------------------------------------
SPLITS = [
    ("split_int", lambda L, x: x.split(2, 1)),
    ("split_int_fn", lambda L, x: L.split(x, 3)),
    ("split_list", lambda L, x: x.split([1, 3, 1], 1)),
    ("split_big", lambda L, x: x.split(10, -1)),
    ("split_with_sizes", lambda L, x: L.split_with_sizes(x, [2, 2], 2)),
    ("split_with_sizes_m", lambda L, x: x.split_with_sizes([1, 0, 3], 0)),
    ("chunk", lambda L, x: x.chunk(2, 1)),
    ("chunk_fn", lambda L, x: L.chunk(x, 3, -1)),
    ("chunk_more", lambda L, x: x.chunk(10, 0)),
    ("unbind", lambda L, x: x.unbind(1)),
    ("unbind_fn", lambda L, x: L.unbind(x)),
    ("tensor_split_sections", lambda L, x: L.tensor_split(x, 3, 1)),
    ("tensor_split_indices", lambda L, x: x.tensor_split([1, 4, 2], 1)),
    ("tensor_split_tensor", lambda L, x: L.tensor_split(x, L.tensor([1, 3]), dim=2)),
    ("tensor_split_tensor0d", lambda L, x: x.tensor_split(L.tensor(2), 0)),
    ("hsplit", lambda L, x: L.hsplit(x, 5)),
    ("hsplit_list", lambda L, x: x.hsplit([2, 3])),
    ("vsplit", lambda L, x: L.vsplit(x, 2)),
    ("dsplit", lambda L, x: L.dsplit(x, [1])),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name,fn", SPLITS, ids=[s[0] for s in SPLITS])
def test_splits(name, fn, layout, rng):
    e, t = make_pair((4, 5, 4), "float32", rng, layout)
    re, rt = fn(ember, e), fn(torch, t)
    assert isinstance(re, tuple)
    check(re, rt, check_stride=True)
    if re:
        assert re[0]._base is not None


def test_split_zero_size(rng):
    e, t = make_pair((0, 3), "float32", rng)
    for fn in [lambda x: x.split(0), lambda x: x.split(2), lambda x: x.chunk(3),
               lambda x: x.unbind(0), lambda x: x.unbind(1), lambda x: x.tensor_split(2)]:
        check(fn(e), fn(t), check_stride=True)


def test_split_meta():
    em, tm = ember.empty((4, 6), device="meta"), torch.empty((4, 6), device="meta")
    for fn in [lambda x: x.split(4, 1), lambda x: x.chunk(3), lambda x: x.unbind(1)]:
        check(fn(em), fn(tm), check_stride=True)


def test_split_errors():
    x = (ember.zeros(4, 5), torch.zeros(4, 5))
    s = (ember.zeros(()), torch.zeros(()))

    def on(pair, L):
        return pair[0] if L is ember else pair[1]
    for c in [lambda L: on(x, L).split(-1),
              lambda L: on(x, L).split(0),
              lambda L: on(s, L).split(1),
              lambda L: on(x, L).split([1, 2]),
              lambda L: on(x, L).split([5, -1]),
              lambda L: on(x, L).split(1, 2),
              lambda L: on(x, L).chunk(0),
              lambda L: on(s, L).chunk(1),
              lambda L: on(s, L).unbind(),
              lambda L: on(x, L).unbind(2),
              lambda L: on(x, L).tensor_split(0),
              lambda L: on(s, L).tensor_split(2),
              lambda L: on(x, L).tensor_split(L.tensor([1.0])),
              lambda L: on(x, L).tensor_split(L.tensor([[1]])),
              lambda L: L.hsplit(on(s, L), 2),
              lambda L: L.hsplit(on(x, L), 2),
              lambda L: L.hsplit(on(x, L), 0),
              lambda L: L.vsplit(on(x, L), 3),
              lambda L: L.vsplit(L.zeros(3), 3),
              lambda L: L.dsplit(on(x, L), 3)]:
        same_error(c)


# ---- in-place views -----------------------------------------------------------------------------
INPLACE = [
    ("t_", lambda x: x.t_(), (3, 4)),
    ("transpose_", lambda x: x.transpose_(0, 2), (2, 3, 4)),
    ("swapaxes_", lambda x: x.swapaxes_(0, 1), (2, 3, 4)),
    ("swapdims_", lambda x: x.swapdims_(1, 2), (2, 3, 4)),
    ("squeeze_", lambda x: x.squeeze_(), (1, 3, 1)),
    ("squeeze_dim", lambda x: x.squeeze_(2), (1, 3, 1)),
    ("squeeze_dims", lambda x: x.squeeze_((0, 2)), (1, 3, 1)),
    ("unsqueeze_", lambda x: x.unsqueeze_(1), (3, 4)),
    ("as_strided_", lambda x: x.as_strided_((2, 2), (1, 3), 1), (3, 4)),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name,fn,shape", INPLACE, ids=[v[0] for v in INPLACE])
def test_inplace_views(name, fn, shape, device, rng):
    e, t = make_pair(shape, "float32", rng, "transposed" if len(shape) > 1 else "contiguous")
    if device == "meta":
        e = ember.empty_strided(e.shape, e.stride(), device="meta")
        t = torch.empty_strided(t.shape, t.stride(), device="meta")
    v0e, v0t = e._version, t._version
    re, rt = fn(e), fn(t)
    assert re is e and rt is t
    check(e, t, check_stride=True)
    assert (e._version - v0e) == (t._version - v0t)
    if device == "cpu":
        e.mul_(3)
        t.mul_(3)
        check(e, t)


def test_inplace_view_errors():
    for c in [lambda L: L.zeros(2, 3, 4).t_(), lambda L: L.zeros(2, 3).transpose_(0, 2),
              lambda L: L.zeros(2, 3).unsqueeze_(4), lambda L: L.zeros(2, 3).squeeze_(3)]:
        same_error(c)


# ---- errors ---------------------------------------------------------------------------------------
def _x(L):
    return L.zeros(3, 4)


ERRORS = [
    lambda L: _x(L).select(0, 5), lambda L: _x(L).select(1, -5), lambda L: _x(L).select(2, 0),
    lambda L: L.zeros(()).select(0, 0),
    lambda L: L.ops.aten.slice.Tensor(_x(L), 0, 0, 3, 0),
    lambda L: L.ops.aten.slice.Tensor(_x(L), 0, 0, 3, -1),
    lambda L: L.ops.aten.slice.Tensor(L.zeros(()), 0, 0, 1),
    lambda L: L.ops.aten.slice.Tensor(_x(L), 2),
    lambda L: _x(L).unsqueeze(3), lambda L: _x(L).unsqueeze(-4),
    lambda L: _x(L).squeeze(2), lambda L: _x(L).squeeze((0, 0)), lambda L: _x(L).squeeze((0, 5)),
    lambda L: _x(L).expand(3), lambda L: _x(L).expand(4, 5), lambda L: _x(L).expand(-1, 4, 4),
    lambda L: _x(L).expand(2, -2, 4), lambda L: L.zeros(3, dtype=L.bfloat16).expand(()),
    lambda L: L.zeros(3, dtype=L.int8).expand(()), lambda L: L.zeros(3, dtype=L.bool).expand(()),
    lambda L: L.zeros(3, dtype=L.float16).expand(()),
    lambda L: L.zeros(3, 4, device="meta").expand(3),
    lambda L: _x(L).expand(-1, 3, 4),
    lambda L: _x(L).permute(0), lambda L: _x(L).permute(0, 0), lambda L: _x(L).permute(0, 2),
    lambda L: _x(L).view(5), lambda L: _x(L).view(-1, -1), lambda L: _x(L).view(-2, 6),
    lambda L: _x(L).view(-1, 5), lambda L: L.zeros(0, 3).view(-1, 0),
    lambda L: _x(L).t().view(12), lambda L: _x(L).reshape(5), lambda L: _x(L).view_as(L.zeros(5)),
    lambda L: _x(L).narrow(0, 1, 5), lambda L: _x(L).narrow(0, 4, 0),
    lambda L: _x(L).narrow(0, -4, 0), lambda L: _x(L).narrow(0, 0, -1),
    lambda L: L.zeros(()).narrow(0, 0, 1), lambda L: _x(L).narrow(2, 0, 1),
    lambda L: L.zeros(2, 3, 4).t(),
    lambda L: L.zeros(2, 3, 4).movedim((0, 1), (1,)),
    lambda L: L.zeros(2, 3, 4).movedim((0, 0), (1, 2)),
    lambda L: L.zeros(2, 3, 4).movedim((0, 1), (2, 2)),
    lambda L: L.zeros(2, 3, 4).movedim(3, 0),
    lambda L: _x(L).swapaxes(0, 2),
    lambda L: _x(L).flatten(1, 0), lambda L: _x(L).flatten(2),
    lambda L: _x(L).unflatten(1, (3, 2)), lambda L: _x(L).unflatten(1, (-1, 3)),
    lambda L: _x(L).unflatten(1, (-1, -1)), lambda L: _x(L).unflatten(2, (2, 2)),
    lambda L: _x(L).diagonal(0, 0, 0), lambda L: _x(L).diagonal(0, 0, -2),
    lambda L: L.zeros(3).diagonal(), lambda L: _x(L).diagonal(0, 0, 2),
    lambda L: _x(L).unfold(1, 5, 1), lambda L: _x(L).unfold(1, -1, 1),
    lambda L: _x(L).unfold(1, 2, 0), lambda L: _x(L).unfold(2, 2, 1),
    lambda L: L.zeros(()).unfold(0, 2, 1),
    lambda L: _x(L).as_strided((3, 4), (4, 2)), lambda L: _x(L).as_strided((3,), (1, 1)),
    lambda L: _x(L).as_strided((3,), (-1,)), lambda L: _x(L).as_strided((3,), (1,), -1),
    lambda L: L.ops.aten.slice.Tensor(_x(L), 1, 0, 4, 2).view(L.int16),
    lambda L: L.zeros(()).view(L.int16),
    lambda L: L.zeros(3).view(L.float64),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    same_error(ERRORS[i])


# ---- argument forms (keywords, sizes as lists / Size / varargs) ---------------------------------
API = [
    lambda L: L.zeros(2, 3).narrow(0, L.tensor(1), 1),
    lambda L: L.zeros(2, 3).view(size=(3, 2)), lambda L: L.zeros(2, 3).view(L.Size([3, 2])),
    lambda L: L.zeros(2, 3).view([3, 2]),
    lambda L: L.zeros(2, 3).permute([1, 0]), lambda L: L.zeros(2, 3).permute(dims=(1, 0)),
    lambda L: L.zeros(2, 3).expand(L.Size([4, 2, 3])), lambda L: L.zeros(2, 3).expand([4, 2, 3]),
    lambda L: L.zeros(2, 3).reshape([3, 2]), lambda L: L.zeros(2, 3).reshape(shape=(3, 2)),
    lambda L: L.zeros(2, 1).squeeze(dim=1), lambda L: L.squeeze(L.zeros(2, 1), dim=1),
    lambda L: L.zeros(1, 2, 1).squeeze(0, 2),
    lambda L: L.zeros(2, 3).split(split_size=1), lambda L: L.zeros(2, 3).split([1, 2], dim=1),
    lambda L: L.split(L.zeros(2, 3), split_size_or_sections=1),
    lambda L: L.zeros(2, 3).tensor_split(indices=(1,), dim=1),
    lambda L: L.zeros(2, 3).tensor_split(sections=2, dim=1),
    lambda L: L.zeros(2, 3).unbind(dim=1), lambda L: L.zeros(2, 3).chunk(chunks=2, dim=1),
    lambda L: L.zeros(2, 3).movedim(source=0, destination=1),
    lambda L: L.zeros(2, 3).diagonal(offset=1, dim1=1, dim2=0),
    lambda L: L.zeros(2, 3).transpose(dim0=0, dim1=1),
    lambda L: L.zeros(2, 3).unfold(dimension=1, size=2, step=1),
    lambda L: L.zeros(2, 3).select(dim=1, index=0), lambda L: L.zeros(2, 3).unsqueeze(dim=0),
    lambda L: L.zeros(2, 3).swapaxes(axis0=0, axis1=1),
    lambda L: L.zeros(2, 3).flatten(start_dim=0, end_dim=1),
    lambda L: L.zeros(2, 3).unflatten(dim=1, sizes=(3, 1)),
    lambda L: L.zeros(2, 3).as_strided(size=(2,), stride=(1,), storage_offset=1),
    lambda L: L.zeros(2, 6).unflatten(1, ()), lambda L: L.zeros(2, 0).unflatten(1, (0, -1)),
    lambda L: L.zeros(2, 0).unflatten(1, (2, -1)), lambda L: L.zeros(()).flatten(0, -1),
]


@pytest.mark.parametrize("i", range(len(API)))
def test_argument_forms(i):
    try:
        rt = API[i](torch)
    except RuntimeError:
        same_error(API[i])
        return
    check(API[i](ember), rt, check_stride=True)
