"""Indexing against PyTorch: __getitem__/__setitem__ (views, advanced indexing), index.Tensor,
index_put, gather/scatter, index_* along a dim, masked ops, nonzero, take, put."""
import warnings
from functools import partial

import numpy as np
import pytest
import torch
from harness import DTYPES, make_pair, same_error
from harness import check as _check

import ember

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*(non-tuple sequence|index_reduce|uint8|deprecated|not writable).*:UserWarning")


def ipair(a, dtype=np.int64):
    a = np.asarray(a, dtype=dtype)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def conv(idx, lib):
    """An index expression with ("T", array) / ("B", array) placeholders made into lib tensors."""
    if isinstance(idx, tuple) and len(idx) == 2 and isinstance(idx[0], str) and idx[0] in "TBI":
        kind, a = idx
        dt = {"T": np.int64, "B": np.bool_, "I": np.int32}[kind]
        return lib.from_numpy(np.asarray(a, dtype=dt).copy())
    if isinstance(idx, tuple):
        return tuple(conv(i, lib) for i in idx)
    if isinstance(idx, list):
        return [conv(i, lib) for i in idx]
    return idx


def check(e, t, check_stride=False, **kw):
    """harness.check; strides are not compared for empty results (ember gives a fresh empty
    tensor contiguous strides and storage offset 0)."""
    if check_stride and isinstance(t, torch.Tensor) and t.numel() == 0:
        check_stride = False
    _check(e, t, check_stride=check_stride, **kw)


def checkv(e, t):
    """check with strides; not for empty results (ember gives a fresh empty tensor contiguous
    strides and storage offset 0)."""
    if t.numel() == 0:
        check(e, t)
    else:
        check(e, t, check_stride=True)


def shares(e, base):
    return e.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


# ---- basic indexing: views ------------------------------------------------------------------------
BASIC = [0, -1, 2, slice(None), slice(1, 3), slice(0, 100), slice(-100, 2), slice(None, None, 2),
         slice(1, None, 3), slice(5, 1), slice(10, 20), None, Ellipsis, (), (1,), (1, 2),
         (slice(None), 1), (slice(1, 3), slice(None, None, 2)), (None, 1), (1, None),
         (None, None, 1), (Ellipsis, None), (Ellipsis, 1), (1, Ellipsis), (Ellipsis, 0, Ellipsis),
         (slice(None), None, slice(1, 2)), (np.int64(1),), np.int32(-2), (0, slice(0, 3)),
         (slice(0, 3), 1), (slice(0, 2), 1), (None, Ellipsis, None), (slice(None), slice(None))]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "expanded"])
def test_basic_views(layout, rng):
    e, t = make_pair((3, 4, 5), "float32", rng, layout)
    for idx in BASIC:
        er, tr = e[idx], t[idx]
        checkv(er, tr)
        assert shares(er, e) or tr.numel() == 0, idx
        assert er._base is not None


def test_basic_views_small_shapes(rng):
    for shape, idxs in [((), [Ellipsis, None, (), (None, Ellipsis), (Ellipsis, None)]),
                        ((5,), [0, -5, slice(2), slice(None, None, 3), None, (None, 4)]),
                        ((0, 3), [slice(None), (slice(None), 1), None, (Ellipsis, 2)]),
                        ((2, 0), [1, (0, slice(None))])]:
        e, t = make_pair(shape, "int64", rng)
        for idx in idxs:
            checkv(e[idx], t[idx])


@pytest.mark.parametrize("dtype", DTYPES)
def test_basic_dtypes(dtype, rng):
    e, t = make_pair((3, 4), dtype, rng)
    for idx in [1, (slice(None), 2), (None, slice(1, 3)), (1, 2)]:
        check(e[idx], t[idx], check_stride=True)


def test_basic_index_writes_through(rng):
    e, t = make_pair((3, 4), "float32", rng)
    e[1][2] = 7.0
    t[1][2] = 7.0
    e[:, 1:3][0] = -1.0
    t[:, 1:3][0] = -1.0
    check(e, t)


BASIC_ERRORS = [5, -4, (0, 0, 0), (slice(None), 7), slice(None, None, -1), slice(None, None, 0),
                (0, slice(None, None, -1)), 1.5, (0, 1.5), "a", {}, np.bool_(True), (None, 5),
                (Ellipsis, None, slice(None), 9), 2 ** 63, (0, "x")]


def test_basic_errors(rng):
    for idx in BASIC_ERRORS:
        same_error(lambda lib, idx=idx: (lib.arange(12.).reshape(3, 4) if lib is torch else
                                         ember.from_numpy(np.arange(12.).reshape(3, 4)))[idx])


def test_zero_dim_errors():
    for idx in [0, 1, -1, (0,), (5,), slice(None), (slice(None),), (slice(0, 1),), [0],
                ("T", [0]), (None, 0)]:
        same_error(lambda lib, idx=idx: lib.tensor(5.0)[conv(idx, lib)])


def test_zero_dim_ok():
    for idx in [Ellipsis, None, True, False, ("B", True), ("B", False), (Ellipsis, None)]:
        check(ember.tensor(5.0)[conv(idx, ember)], torch.tensor(5.0)[conv(idx, torch)],
              check_stride=True)


# ---- advanced indexing ------------------------------------------------------------------------------
ADV = [("T", [0, 2]), ("T", [[0, 1], [2, 0]]), ("I", [1, -1]), ("T", []), ("T", 1), [0, 2],
       [[0, 1], [1, 0]], [0.5, 1.7], [True, False, True], ("B", [True, False, True]),
       ("B", [[True, False, True, False, True]] * 3), (slice(None), ("T", [4, 0])),
       (("T", [0, 2]), ("T", [1, 3])), (("T", [0, 2]), slice(None), ("T", [1, 3])),
       (slice(None), ("T", [1, 3]), ("T", [0, 0])), (("T", [[0], [2]]), slice(1, 3), ("T", [0, 1, 2])),
       (1, ("T", [0, 3])), (("T", [0, 1]), 2), (None, ("T", [0, 1]), None), (Ellipsis, ("T", [1, 2])),
       (("B", [True, False, True]), 1), (("B", [[True, False, False, False, True], [False] * 5, [False, True, False, False, False]]),
        ("T", [0, 1, 2])), True, False,
       (True, 1), (1, ("B", True)), (("T", [0, 1]), None, ("T", [1, 2])), ("T", [[[0, 1]]]),
       (slice(None), None, ("I", [0, 2, 4])), ("T", [-3, -1]),
       (("T", [[0], [1]]), ("T", [[0, 1, 2]])), ((("T", [0, 1]),) + (slice(None, None, 2),)),
       (("B", [[True, False, True, True, False]] * 3),), [0, [1]], [[True, False, True]]]


def _adv_input(layout, rng, dtype="float32"):
    return make_pair((3, 5, 4), dtype, rng, layout)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "expanded"])
def test_advanced_getitem(layout, rng):
    e, t = _adv_input(layout, rng)
    for idx in ADV:
        er, tr = e[conv(idx, ember)], t[conv(idx, torch)]
        checkv(er, tr)
        assert shares(er, e) == (tr.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()) \
            or er.numel() == 0, idx


def test_advanced_index_layouts(rng):
    """Result strides follow TensorIterator's layout rules for permuted inputs and indices."""
    e, t = make_pair((2, 3, 4), "float32", rng)
    pe, pt = e.permute(2, 1, 0), t.permute(2, 1, 0)
    ie, it = ipair([[0, 1], [1, 0]])
    for f in [lambda x, i: x[i], lambda x, i: x[:, i], lambda x, i: x[:, :, i], lambda x, i: x[i.t()],
              lambda x, i: x[:, i.t()], lambda x, i: x[i, :, i], lambda x, i: x[..., ::2][i[0]],
              lambda x, i: x[i[:, :1], 1:, i[0]]]:
        check(f(pe, ie), f(pt, it), check_stride=True)
        check(f(e, ie), f(t, it), check_stride=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_advanced_dtypes(dtype, rng):
    e, t = make_pair((4, 3), dtype, rng)
    for idx in [("T", [3, 0, 0]), ("B", [True, False, True, True]), (slice(None), ("I", [2, 0]))]:
        check(e[conv(idx, ember)], t[conv(idx, torch)], check_stride=True)


ADV_ERRORS = [("T", [3]), ("T", [-4]), (slice(None), ("T", [0, 5])), ("B", [True, False]),
              ("B", [[True] * 4] * 3), (("T", [0, 1]), ("T", [0, 1, 2])), [0.5, "a"],
              ("T", [[0, 7]]), (("T", [0]), ("T", [0]), ("T", [0])), (0, ("T", [9]))]


def test_advanced_errors():
    for idx in ADV_ERRORS:
        same_error(lambda lib, idx=idx: lib.zeros(3, 5)[conv(idx, lib)])
    for dt in ("float32", "int16", "int8", "complex64"):
        same_error(lambda lib, dt=dt: lib.zeros(3)[lib.zeros(1, dtype=getattr(lib, dt))])
    same_error(lambda lib: lib.zeros(0, 3)[lib.tensor([0])])


def test_index_op_direct(rng):
    e, t = make_pair((3, 4), "float32", rng)
    ie, it = ipair([2, 0])
    check(ember.ops.aten.index.Tensor(e, [None, ie]), torch.ops.aten.index.Tensor(t, [None, it]),
          check_stride=True)
    same_error(lambda lib: lib.ops.aten.index.Tensor(lib.zeros(3), [lib.tensor([0])] * 2))
    same_error(lambda lib: lib.ops.aten.index.Tensor(lib.zeros(3, 3),
                                                     [None, lib.ones(3, 3, dtype=lib.bool)]))
    # empty iteration never reads the indices
    check(ember.ops.aten.index.Tensor(ember.zeros(2, 0), [ember.tensor([5])]),
          torch.ops.aten.index.Tensor(torch.zeros(2, 0), [torch.tensor([5])]))
    oe, ot = ember.empty(0), torch.empty(0)
    ember.ops.aten.index.Tensor_out(e, [ie], out=oe)
    torch.ops.aten.index.Tensor_out(t, [it], out=ot)
    check(oe, ot)


def test_meta_getitem(rng):
    e, t = make_pair((3, 5, 4), "float32", rng, "transposed")
    em, tm = e.to("meta"), t.to("meta")
    for idx in BASIC[:20] + [("T", [0, 2]), (slice(None), ("T", [[1], [0]])), [0, 1],
                             (("T", [0, 1]), slice(None), ("T", [1, 2]))]:
        if isinstance(idx, int) and idx >= 2:
            continue
        er = em[conv(idx, ember).to("meta") if isinstance(conv(idx, ember), ember.Tensor) else
                conv(idx, ember)]
        tr = tm[conv(idx, torch)]
        assert er.device.type == "meta"
        check(er, tr, check_stride=True)


# ---- __setitem__ ------------------------------------------------------------------------------------
SET = [(0, 5), (0, 2.5), (-1, ("V", [1, 2, 3, 4])), (slice(0, 2), ("V", [[1, 2, 3, 4]])),
       ((slice(None), 1), 7), ((1, 2), -3), (Ellipsis, 1), (None, 2), (True, 3), (False, 4),
       ((None, 1), ("V", [9, 8, 7, 6])), (0, ("V", [[[1, 1, 1, 1]]])), (("T", [0, 2]), 1),
       (("T", [0, 2]), ("V", [[1, 2, 3, 4], [5, 6, 7, 8]])), ([0, 2], ("V", [[1], [2]])),
       ((("T", [0, 2]), ("T", [1, 3])), ("V", [7, 8])), (("B", [True, False, True]), -1),
       ("MASK", 0), ("MASK", ("V", [1])), ((slice(None), ("T", [1, 3])), ("V", [[5], [6], [7]])),
       ((("T", [0, 0]), ("T", [1, 1])), ("V", [7, 8])), ((1, ("T", [0, 3])), ("V", [2, 3])),
       (slice(1, None, 2), ("V", [4, 3, 2, 1])), (("T", [[0, 1]]), ("V", [[[2, 2, 2, 2]]])),
       ((Ellipsis, ("T", [0, 1])), ("V", [[1, 2]] * 3)), (np.int64(1), 0), (slice(0, 100), 1)]


def _val(v, lib, dtype):
    if isinstance(v, tuple) and v[0] == "V":
        return lib.from_numpy(np.asarray(v[1])).to(getattr(lib, dtype))
    return v


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64", "bfloat16"])
def test_setitem(dtype, rng):
    for layout in ("contiguous", "transposed"):
        for idx, val in SET:
            e, t = make_pair((3, 4), dtype, rng, layout)
            ie = (e > 0 if dtype != "complex64" else e.real > 0) if idx == "MASK" else conv(idx, ember)
            it = (t > 0 if dtype != "complex64" else t.real > 0) if idx == "MASK" else conv(idx, torch)
            if dtype == "bool" and not isinstance(val, tuple):
                val = bool(val)
            e[ie] = _val(val, ember, dtype)
            t[it] = _val(val, torch, dtype)
            check(e, t)


def test_setitem_casts_and_views(rng):
    e, t = make_pair((3, 4), "int32", rng)
    e[0] = 2.7
    t[0] = 2.7
    e[1] = ember.tensor([1.5, 2.5, 3.5, 4.5])
    t[1] = torch.tensor([1.5, 2.5, 3.5, 4.5])
    e[2, 1:] = ember.tensor(9.9, dtype=ember.float64)
    t[2, 1:] = torch.tensor(9.9, dtype=torch.float64)
    check(e, t)
    # writes go to the storage of a view's base
    be, bt = make_pair((4, 4), "float32", rng)
    ve, vt = be[1:3], bt[1:3]
    ve[:, 0] = 100.0
    vt[:, 0] = 100.0
    ve[ember.tensor([0]), 1] = -5.0
    vt[torch.tensor([0]), 1] = -5.0
    check(be, bt)
    # expanded target
    ee, te = make_pair((3, 4), "float32", rng, "expanded")
    ee[0] = 1.0
    te[0] = 1.0
    check(ee, te)
    # numpy float64 scalar is a float; numpy integers are ints
    e2, t2 = make_pair((3,), "float64", rng)
    e2[np.int64(0)] = np.float64(2.5)
    t2[np.int64(0)] = np.float64(2.5)
    check(e2, t2)
    for dt in ("float16", "bfloat16"):  # no overflow check for reduced floats (inf)
        eh, th = ember.zeros(2, dtype=getattr(ember, dt)), torch.zeros(2, dtype=getattr(torch, dt))
        eh[0], th[0] = 70000.0, 70000.0
        eh[1], th[1] = 1e300, 1e300
        check(eh, th)
    e0, t0 = ember.tensor(1.0), torch.tensor(1.0)
    e0[()] = 3
    t0[()] = 3
    e0[...] = ember.tensor([4.0])
    t0[...] = torch.tensor([4.0])
    check(e0, t0)
    e0[ember.tensor(True)] = 9.0
    t0[torch.tensor(True)] = 9.0
    check(e0, t0)


def _setter(idx, val, dtype="float32", shape=(3, 4)):
    def f(lib):
        x = lib.zeros(*shape, dtype=getattr(lib, dtype))
        x[conv(idx, lib)] = _val(val, lib, "float32") if isinstance(val, tuple) else val
    return f


def test_setitem_errors():
    for idx, val, dt in [(slice(0, 2), ("V", np.ones((3, 4))), "float32"),
                         (0, ("V", np.ones(5)), "float32"), (0, ("V", np.ones((2, 1, 4))), "float32"),
                         (("B", [[True] * 4, [False] * 4]), 1.0, "float32"), (5, 1, "float32"),
                         (slice(None, None, -1), 1, "float32"), (0, 1j, "float32"),
                         (0, 300, "uint8"), (0, -256, "uint8"), (0, float("inf"), "int32"),
                         (0, float("nan"), "int64"), (0, 1e300, "float32"), (0, 2 ** 70, "float32"),
                         (0, [1, 2], "float32"), (0, "a", "float32"), (0, np.float32(1), "float32"),
                         ((("T", [0, 2]), ("T", [1, 3])), ("V", [7, 8, 9]), "float32"),
                         (("T", [0, 5]), 1.0, "float32"), (("T", [0]), ("V", np.ones((2, 4))), "float32")]:
        same_error(_setter(idx, val, dt))
    # value tensors keep their dtype in advanced assignment
    same_error(lambda lib: lib.zeros(3, 4).__setitem__(([0, 2], [1, 3]), lib.tensor([7, 8])))
    same_error(lambda lib: lib.tensor(1.0).__setitem__(0, 2.0))
    # overlapping source and destination
    same_error(lambda lib: (lambda x: x.__setitem__([1, 2, 3], x[0:3]))(lib.zeros(4)))


def test_setitem_meta():
    for idx, val in [(0, 1.0), (("T", [0, 1]), 2.0), (slice(1, 2), ("V", [1.0] * 4))]:
        e = ember.zeros(3, 4, device="meta")
        ie = conv(idx, ember)
        e[ie.to("meta") if isinstance(ie, ember.Tensor) else ie] = \
            _val(val, ember, "float32").to("meta") if isinstance(val, tuple) else val
        assert e.device.type == "meta" and tuple(e.shape) == (3, 4)


# ---- index_put -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put(dtype, rng):
    for accumulate in (False, True):
        e, t = make_pair((4, 3), dtype, rng, "transposed")
        ie, it = ipair([0, 2, 0] if accumulate else [3, 1])
        ve, vt = make_pair((len(ie), 3), dtype, rng)
        check(ember.index_put(e, (ie,), ve, accumulate), torch.index_put(t, (it,), vt, accumulate),
              check_stride=True)
        e.index_put_((ie,), ve, accumulate=accumulate)
        t.index_put_((it,), vt, accumulate=accumulate)
        check(e, t)
        me, mt = ipair([True, False, True, True], np.bool_)
        s_e, s_t = make_pair((), dtype, rng)
        check(ember.index_put(e, (me,), s_e, accumulate), torch.index_put(t, (mt,), s_t, accumulate))


def test_index_put_errors():
    cases = [
        lambda lib: lib.zeros(3).index_put_((lib.tensor([0]),), lib.tensor(1)),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([0, 1]),), lib.tensor([1., 2, 3])),
        lambda lib: lib.zeros(3, 4).index_put_((lib.tensor([0, 1]),), lib.ones(3)),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([0]), lib.tensor([0])), lib.tensor(5.)),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([3]),), lib.tensor(5.)),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([3]),), lib.tensor(5.), accumulate=True),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([0.]),), lib.tensor(5.)),
        lambda lib: lib.zeros(3, 2).index_put_((lib.tensor([1, 2]),), lib.ones(1, 2, 2)),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([], dtype=lib.long),), lib.ones(5)),
        lambda lib: lib.zeros(3, dtype=lib.uint8).index_put_((lib.tensor([True, False, True]),),
                                                             lib.tensor(300)),
        lambda lib: lib.zeros(3).index_put_((lib.tensor([1, 0, 1], dtype=lib.uint8),), lib.tensor(1.)),
    ]
    for f in cases:
        same_error(f)


# ---- gather / scatter ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype, rng):
    for layout in ("contiguous", "transposed", "expanded"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        for dim, idx in [(0, [[0, 1, 2, 0], [2, 2, 1, 0]]), (1, [[3, 0], [1, 1], [0, 2]]),
                         (-1, [[0], [3]]), (1, np.zeros((3, 7), int)), (0, np.zeros((0, 4), int))]:
            ie, it = ipair(idx)
            check(ember.gather(e, dim, ie), torch.gather(t, dim, it), check_stride=True)
            check(e.gather(dim, ie.t().contiguous().t()), t.gather(dim, it.t().contiguous().t()),
                  check_stride=True)
    ie, it = ipair([[1]], np.int32)
    check(ember.gather(e, 1, ie), torch.gather(t, 1, it))
    oe, ot = ember.empty(0, dtype=e.dtype), torch.empty(0, dtype=t.dtype)
    ember.gather(e, 0, ember.tensor([[2, 1, 0, 0]]), out=oe)
    torch.gather(t, 0, torch.tensor([[2, 1, 0, 0]]), out=ot)
    check(oe, ot)


def test_gather_small():
    for s, i in [(5.0, 0), (5.0, [0, 0]), ([1., 2, 3], 2), ([1., 2, 3], [])]:
        check(ember.gather(ember.tensor(s), 0, ember.tensor(i, dtype=ember.long)),
              torch.gather(torch.tensor(s), 0, torch.tensor(i, dtype=torch.long)))


GATHER_ERRORS = [((3, 4), 1, [[5]]), ((3, 4), 1, [[-1]]), ((3, 4), 1, [1]), ((3, 4), 1, np.zeros((4, 1))),
                 ((3, 4), 2, np.zeros((3, 1))), ((3, 0), 1, np.zeros((3, 1)))]


def test_gather_errors():
    for shape, dim, idx in GATHER_ERRORS:
        same_error(lambda lib, shape=shape, dim=dim, idx=idx: lib.gather(
            lib.zeros(*shape), dim, lib.from_numpy(np.asarray(idx, dtype=np.int64))))
    same_error(lambda lib: lib.gather(lib.zeros(3, 4), 1, lib.zeros(3, 1)))


def _scatter_inputs(dtype, rng, layout="contiguous"):
    e, t = make_pair((3, 5), dtype, rng, layout)
    se, st = make_pair((2, 5), dtype, rng)
    return (e, t), (se, st)


SCAT_IDX = [(0, [[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]]), (1, [[4, 0, 2], [1, 3, 0]]), (-1, [[0], [4]]),
            (0, np.zeros((0, 5), int))]
UNIQUE_IDX = [(0, [[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]]), (1, [[4, 0, 2], [1, 3, 0]]), (1, [[2]])]


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter(dtype, rng):
    for layout in ("contiguous", "transposed"):
        (e, t), (se, st) = _scatter_inputs(dtype, rng, layout)
        for dim, idx in UNIQUE_IDX:
            ie, it = ipair(idx)
            if dim == 0:
                ie, it = ipair(np.asarray(idx)[:1])
            check(ember.scatter(e, dim, ie, se), torch.scatter(t, dim, it, st), check_stride=True)
            v = True if dtype == "bool" else 2
            check(ember.scatter(e, dim, ie, v), torch.scatter(t, dim, it, v), check_stride=True)
            check(e.clone().scatter_(dim, ie, se), t.clone().scatter_(dim, it, st))
            check(e.clone().scatter_(dim, ie, v), t.clone().scatter_(dim, it, v))
        for dim, idx in SCAT_IDX:
            ie, it = ipair(idx)
            for red in ("add", "multiply"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    check(ember.scatter(e, dim, ie, se, reduce=red),
                          torch.scatter(t, dim, it, st, reduce=red))
                    check(e.clone().scatter_(dim, ie, se, reduce=red),
                          t.clone().scatter_(dim, it, st, reduce=red))
                v = True if dtype == "bool" else 3
                check(ember.scatter(e, dim, ie, v, reduce=red), torch.scatter(t, dim, it, v, reduce=red))
            check(ember.scatter_add(e, dim, ie, se), torch.scatter_add(t, dim, it, st))
            check(e.clone().scatter_add_(dim, ie, se), t.clone().scatter_add_(dim, it, st))
    oe, ot = ember.empty(0, dtype=e.dtype), torch.empty(0, dtype=t.dtype)
    check(ember.scatter(e, 1, ember.tensor([[1]]), se, out=oe), torch.scatter(t, 1, torch.tensor([[1]]), st, out=ot))
    check(oe, ot)


def test_scatter_small_and_int32(rng):
    check(ember.scatter(ember.tensor(1.0), 0, ember.tensor(0), ember.tensor(5.0)),
          torch.scatter(torch.tensor(1.0), 0, torch.tensor(0), torch.tensor(5.0)))
    check(ember.scatter(ember.tensor(1.0), 0, ember.tensor([0]), ember.tensor([5.0])),
          torch.scatter(torch.tensor(1.0), 0, torch.tensor([0]), torch.tensor([5.0])))
    (e, t), (se, st) = _scatter_inputs("float32", rng)
    ie, it = ipair([[1, 0, 2]], np.int32)
    check(ember.scatter(e, 0, ie, se), torch.scatter(t, 0, it, st))
    ie, it = ipair(np.zeros(0, int))
    check(ember.scatter(e, 0, ie, torch.zeros(5) if False else ember.zeros(5)),
          torch.scatter(t, 0, it, torch.zeros(5)))
    check(ember.scatter(e, 1, ember.tensor([[1]]), 7).to("meta"), torch.scatter(t, 1, torch.tensor([[1]]), 7).to("meta"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_reduce(dtype, rng):
    (e, t), (se, st) = _scatter_inputs(dtype, rng)
    for dim, idx in SCAT_IDX:
        ie, it = ipair(idx)
        for red in ("sum", "prod", "mean", "amax", "amin"):
            for inc in (True, False):
                fe = partial(ember.scatter_reduce, e, dim, ie, se, red, include_self=inc)
                ft = partial(torch.scatter_reduce, t, dim, it, st, red, include_self=inc)
                try:
                    tr = ft()
                except NotImplementedError:
                    same_error(lambda lib, fe=fe, ft=ft: (fe if lib is ember else ft)())
                    continue
                check(fe(), tr, check_stride=True)
                check(e.clone().scatter_reduce_(dim, ie, se, red, include_self=inc),
                      t.clone().scatter_reduce_(dim, it, st, red, include_self=inc))


def test_scatter_reduce_special():
    nan = float("nan")
    for red in ("amax", "amin", "sum", "mean"):
        for inc in (True, False):
            check(ember.scatter_reduce(ember.tensor([1., nan, 3.]), 0, ember.tensor([0, 0, 2]),
                                       ember.tensor([nan, 2., -1.]), red, include_self=inc),
                  torch.scatter_reduce(torch.tensor([1., nan, 3.]), 0, torch.tensor([0, 0, 2]),
                                       torch.tensor([nan, 2., -1.]), red, include_self=inc))
    check(ember.scatter_reduce(ember.tensor([10, 20, 30, 40]), 0, ember.tensor([0, 1, 0, 1, 2, 1]),
                               ember.tensor([-1, -2, -3, -4, -5, -6]), "mean"),
          torch.scatter_reduce(torch.tensor([10, 20, 30, 40]), 0, torch.tensor([0, 1, 0, 1, 2, 1]),
                               torch.tensor([-1, -2, -3, -4, -5, -6]), "mean"))


def test_scatter_errors():
    L = lambda lib, *a: lib.tensor(*a, dtype=lib.long)  # noqa: E731
    cases = [
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, L(lib, [[5]]), lib.zeros(3, 4)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 0, L(lib, [[-1]]), lib.zeros(3, 4)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, L(lib, [[1]]), lib.zeros(3, 4, dtype=lib.long)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, lib.zeros(1, 1), lib.zeros(3, 4)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, lib.zeros(1, 1, dtype=lib.int16), 1.0),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, lib.zeros(3, 4, dtype=lib.long), lib.ones(2, 4)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, lib.zeros(4, 4, dtype=lib.long), lib.ones(5, 5)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 0, lib.zeros(1, dtype=lib.long), lib.ones(3, 4)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 0, lib.zeros(1, 1, dtype=lib.long), lib.ones(5)),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, L(lib, [[1]]), 1j),
        lambda lib: lib.scatter(lib.zeros(3, dtype=lib.uint8), 0, L(lib, [1]), 300),
        lambda lib: lib.scatter(lib.zeros(3, 4), 1, L(lib, [[1]]), lib.ones(3, 4), reduce="max"),
        lambda lib: lib.scatter_add(lib.zeros(3, 4), 1, L(lib, [[1]]), lib.ones(3, 4).double()),
        lambda lib: lib.scatter_add(lib.zeros(3, 4), 0, L(lib, [[3]]), lib.ones(3, 4)),
        lambda lib: lib.scatter_reduce(lib.zeros(3, 4), 1, L(lib, [[1]]), lib.ones(3, 4), "foo"),
        lambda lib: lib.scatter_reduce(lib.zeros(3, dtype=lib.bool), 0, L(lib, [1]),
                                       lib.ones(3, dtype=lib.bool), "mean"),
        lambda lib: lib.scatter_reduce(lib.zeros(3, dtype=lib.complex64), 0, L(lib, [1]),
                                       lib.ones(3, dtype=lib.complex64), "amax"),
        lambda lib: lib.zeros(1, 3).expand(2, 3).scatter_(0, L(lib, [[0]]), 1.0),
        lambda lib: lib.zeros(3, 4).scatter_(3, L(lib, [[0]]), 1.0),
    ]
    for f in cases:
        same_error(f)


def test_scatter_meta():
    e = ember.zeros(3, 4, device="meta")
    i = ember.zeros(2, 4, dtype=ember.long, device="meta")
    assert tuple(ember.scatter(e, 0, i, 1.0).shape) == (3, 4)
    assert tuple(ember.scatter_add(e, 0, i, e).shape) == (3, 4)
    assert tuple(ember.scatter_reduce(e, 0, i, e, "amax").shape) == (3, 4)
    assert tuple(ember.gather(e, 0, i).shape) == (2, 4)
    same_error(lambda lib: lib.scatter(lib.zeros(3, 4, device="meta"), 1,
                                       lib.zeros(1, 1, device="meta"), 1.0))


# ---- index_select / index_add / index_copy / index_fill / index_reduce --------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_dim_ops(dtype, rng):
    for layout in ("contiguous", "transposed"):
        e, t = make_pair((4, 3, 2), dtype, rng, layout)
        for dim in (0, 1, -1):
            n = e.shape[dim]
            for idx in ([n - 1, 0], [0, 0, 1], []):
                ie, it = ipair(idx)
                check(ember.index_select(e, dim, ie), torch.index_select(t, dim, it), check_stride=True)
                shp = list(e.shape)
                shp[dim] = len(idx)
                se, st = make_pair(tuple(shp), dtype, rng)
                check(ember.index_add(e, dim, ie, se), torch.index_add(t, dim, it, st), check_stride=True)
                alpha = True if dtype == "bool" else 2
                check(e.index_add(dim, ie, se, alpha=alpha), t.index_add(dim, it, st, alpha=alpha))
                check(e.clone().index_add_(dim, ie, se), t.clone().index_add_(dim, it, st))
                fill = False if dtype == "bool" else -1
                check(ember.index_fill(e, dim, ie, fill), torch.index_fill(t, dim, it, fill),
                      check_stride=True)
                check(e.clone().index_fill_(dim, ie, ember.tensor(fill)),
                      t.clone().index_fill_(dim, it, torch.tensor(fill)))
                if len(set(idx)) == len(idx):
                    check(ember.index_copy(e, dim, ie, se), torch.index_copy(t, dim, it, st),
                          check_stride=True)
                    check(e.clone().index_copy_(dim, ie, se), t.clone().index_copy_(dim, it, st))
        ie, it = ipair([1, -1], np.int32)
        check(ember.index_select(e, 0, ie.abs() if False else ember.tensor([1, 0], dtype=ember.int32)),
              torch.index_select(t, 0, torch.tensor([1, 0], dtype=torch.int32)))
        check(ember.index_fill(e, 0, ember.tensor([-1]), 1), torch.index_fill(t, 0, torch.tensor([-1]), 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_reduce(dtype, rng):
    e, t = make_pair((4, 3), dtype, rng)
    se, st = make_pair((5, 3), dtype, rng)
    ie, it = ipair([0, 1, 0, 3, 1])
    for red in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            fe = partial(ember.index_reduce, e, 0, ie, se, red, include_self=inc)
            ft = partial(torch.index_reduce, t, 0, it, st, red, include_self=inc)
            try:
                tr = ft()
            except NotImplementedError:
                same_error(lambda lib, fe=fe, ft=ft: (fe if lib is ember else ft)())
                continue
            check(fe(), tr, check_stride=True)
            check(e.clone().index_reduce_(0, ie, se, red, include_self=inc),
                  t.clone().index_reduce_(0, it, st, red, include_self=inc))


def test_index_dim_small():
    check(ember.index_select(ember.tensor(3.0), 0, ember.tensor([0])),
          torch.index_select(torch.tensor(3.0), 0, torch.tensor([0])))
    check(ember.index_select(ember.zeros(3, 2), 0, ember.tensor(1)),
          torch.index_select(torch.zeros(3, 2), 0, torch.tensor(1)))
    check(ember.index_add(ember.tensor(1.), 0, ember.tensor([0]), ember.tensor(2.)),
          torch.index_add(torch.tensor(1.), 0, torch.tensor([0]), torch.tensor(2.)))
    check(ember.index_copy(ember.tensor(1.), 0, ember.tensor([0]), ember.tensor(2.)),
          torch.index_copy(torch.tensor(1.), 0, torch.tensor([0]), torch.tensor(2.)))
    check(ember.index_fill(ember.tensor(1.), 0, ember.tensor([0]), 2.),
          torch.index_fill(torch.tensor(1.), 0, torch.tensor([0]), 2.))
    check(ember.index_fill(ember.tensor([1., 2.]), 0, ember.tensor(1), True),
          torch.index_fill(torch.tensor([1., 2.]), 0, torch.tensor(1), True))
    check(ember.index_reduce(ember.tensor(2.), 0, ember.tensor([0]), ember.tensor(3.), "prod"),
          torch.index_reduce(torch.tensor(2.), 0, torch.tensor([0]), torch.tensor(3.), "prod"))
    oe, ot = ember.empty(0), torch.empty(0)
    ember.index_select(ember.ones(3, 2), 1, ember.tensor([1]), out=oe)
    torch.index_select(torch.ones(3, 2), 1, torch.tensor([1]), out=ot)
    check(oe, ot)


def test_index_dim_errors():
    x = lambda lib: lib.zeros(3, 4)  # noqa: E731
    cases = [
        lambda lib: lib.index_select(x(lib), 0, lib.tensor([5])),
        lambda lib: lib.index_select(x(lib), 0, lib.tensor([-1])),
        lambda lib: lib.index_select(x(lib), 0, lib.tensor([[1]])),
        lambda lib: lib.index_select(x(lib), 0, lib.tensor([1.])),
        lambda lib: lib.index_select(x(lib), 2, lib.tensor([1])),
        lambda lib: lib.index_select(lib.tensor(2.), 0, lib.tensor([0, 0])),
        lambda lib: lib.index_select(lib.tensor(2.), 0, lib.tensor([1])),
        lambda lib: lib.index_select(x(lib), 1, lib.tensor([1, 7])),
        lambda lib: lib.index_select(lib.zeros(3, 0), 0, lib.tensor([5])),
        lambda lib: lib.index_select(lib.zeros(0, 2), 0, lib.tensor([0])),
        lambda lib: lib.index_select(lib.zeros(3, 2, 2), 2, lib.tensor([-1])),
        lambda lib: lib.index_add(lib.zeros(3, 4, 2), 1, lib.tensor([5]), lib.ones(3, 1, 2)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([5]), lib.ones(1, 4), alpha=2),
        lambda lib: lib.index_add(lib.zeros(3), 0, lib.tensor([-1]), lib.ones(1)),
        lambda lib: lib.index_add(lib.tensor(1.), 0, lib.tensor([0, 0]), lib.tensor(1.)),
        lambda lib: lib.index_reduce(x(lib), 0, lib.tensor([0, 3]), lib.ones(2, 4), "amax",
                                     include_self=False),
        lambda lib: lib.index_reduce(x(lib), 0, lib.tensor([0, -1]), lib.ones(2, 4), "amax",
                                     include_self=False),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([5]), lib.ones(1, 4)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([-1]), lib.ones(1, 4)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([1]), lib.ones(2, 4)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([1]), lib.ones(1, 5)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([1]), lib.ones(1, 4).long()),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([[0]]), lib.ones(1, 4)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([0.]), lib.ones(1, 4)),
        lambda lib: lib.index_add(lib.zeros(3, 2), 1, lib.tensor([0]), lib.ones(3)),
        lambda lib: lib.index_add(x(lib), 0, lib.tensor([0]), lib.ones(1, 4), alpha=1j),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([5]), lib.ones(1, 4)),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([-1]), lib.ones(1, 4)),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([1], dtype=lib.int32), lib.ones(1, 4)),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([1]), lib.ones(1, 4).long()),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([1]), lib.ones(2, 4)),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([[1]]), lib.ones(1, 4)),
        lambda lib: lib.index_copy(x(lib), 0, lib.tensor([1]), lib.ones(4)),
        lambda lib: lib.index_copy(lib.zeros(2, 3, 4), 1, lib.tensor([0]), lib.ones(2, 1, 5)),
        lambda lib: lib.index_fill(x(lib), 0, lib.tensor([5]), 1.),
        lambda lib: lib.index_fill(x(lib), 0, lib.tensor([1], dtype=lib.int32), 1.),
        lambda lib: lib.index_fill(x(lib), 0, lib.tensor([1]), lib.tensor([1.])),
        lambda lib: lib.index_fill(x(lib), 0, lib.tensor([[1]]), 1.),
        lambda lib: lib.index_fill(x(lib), 0, lib.tensor([1]), 1j),
        lambda lib: lib.index_fill(x(lib).to(lib.uint8), 0, lib.tensor([1]), 300),
        lambda lib: lib.index_reduce(x(lib), 0, lib.tensor([0]), lib.ones(1, 4), "sum"),
        lambda lib: lib.index_reduce(x(lib), 0, lib.tensor([5]), lib.ones(1, 4), "prod"),
        lambda lib: lib.index_reduce(x(lib), 0, lib.tensor([0]), lib.ones(1, 4).double(), "prod"),
        lambda lib: lib.index_reduce(x(lib).bool(), 0, lib.tensor([0]), lib.ones(1, 4).bool(), "mean"),
        lambda lib: lib.index_reduce(x(lib).cfloat(), 0, lib.tensor([0]), lib.ones(1, 4).cfloat(), "amax"),
    ]
    for f in cases:
        same_error(f)


def test_index_dim_meta():
    e = ember.zeros(4, 3, device="meta")
    i = ember.tensor([0, 2]).to("meta")
    s = ember.zeros(2, 3, device="meta")
    assert tuple(ember.index_select(e, 0, i).shape) == (2, 3)
    for r in (ember.index_add(e, 0, i, s), ember.index_copy(e, 0, i, s), ember.index_fill(e, 0, i, 1.),
              ember.index_reduce(e, 0, i, s, "amax")):
        assert r.device.type == "meta" and tuple(r.shape) == (4, 3)
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        ember.index_add(e, 0, ember.zeros(2, device="meta"), s)


# ---- masked ops, nonzero, take, put -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_and_nonzero(dtype, rng):
    for layout in ("contiguous", "transposed", "expanded"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        me, mt = ipair(rng.random((3, 4)) < 0.5, np.bool_)
        check(ember.masked_select(e, me), torch.masked_select(t, mt))
        check(e.masked_select(me[0]), t.masked_select(mt[0]))
        se, st = make_pair((13,), dtype, rng)
        check(ember.masked_scatter(e, me, se), torch.masked_scatter(t, mt, st), check_stride=True)
        check(e.clone().masked_scatter_(me, se), t.clone().masked_scatter_(mt, st))
        check(ember.nonzero(e), torch.nonzero(t), check_stride=True)
        check(ember.argwhere(e), torch.argwhere(t), check_stride=True)
        check(e.nonzero(), t.nonzero(), check_stride=True)
    for shape in [(), (0,), (2, 0, 3), (1, 1, 1), (5,)]:
        e, t = make_pair(shape, dtype, rng)
        check(ember.nonzero(e), torch.nonzero(t), check_stride=True)
        check(ember.nonzero_static(e, size=3), torch.nonzero_static(t, size=3))
    check(ember.masked_select(ember.arange(4.), ember.ones(3, 4, dtype=ember.bool)),
          torch.masked_select(torch.arange(4.), torch.ones(3, 4, dtype=torch.bool)))
    check(ember.masked_select(ember.tensor(2.), ember.tensor(True)),
          torch.masked_select(torch.tensor(2.), torch.tensor(True)))


def test_masked_errors():
    cases = [
        lambda lib: lib.masked_select(lib.zeros(3, 4), lib.zeros(3, 4).long()),
        lambda lib: lib.masked_select(lib.zeros(3, 4), lib.ones(3, 4, dtype=lib.uint8)),
        lambda lib: lib.masked_select(lib.zeros(3, 4), lib.ones(5, dtype=lib.bool)),
        lambda lib: lib.masked_scatter(lib.zeros(3, 4), lib.ones(3, 4) > 0, lib.ones(3)),
        lambda lib: lib.masked_scatter(lib.zeros(3, 4), lib.ones(3, 4) > 0, lib.ones(30).long()),
        lambda lib: lib.masked_scatter(lib.zeros(3, 4), lib.ones(3, 4).long(), lib.ones(30)),
        lambda lib: lib.masked_scatter(lib.zeros(3, 4), lib.ones(5, dtype=lib.bool), lib.ones(30)),
        lambda lib: lib.arange(4.).masked_scatter_(lib.ones(3, 4, dtype=lib.bool), lib.ones(30)),
        lambda lib: lib.zeros(3, 4).masked_scatter_(lib.ones(5, dtype=lib.bool), lib.ones(30)),
        lambda lib: lib.zeros(1, 3).expand(2, 3).masked_scatter_(lib.ones(2, 3, dtype=lib.bool),
                                                                 lib.ones(6)),
        lambda lib: lib.nonzero_static(lib.ones(3), size=-1),
        lambda lib: lib.nonzero(lib.zeros(3, device="meta")),
    ]
    for f in cases:
        same_error(f)


def test_nonzero_as_tuple_and_out():
    from ember._indexing import nonzero
    for data in ([[1, 0], [0, 1]], 5.0, 0.0, [0, 3, 0, 4]):
        check(nonzero(ember.tensor(data), as_tuple=True), torch.nonzero(torch.tensor(data), as_tuple=True))
    oe, ot = ember.empty(0, dtype=ember.long), torch.empty(0, dtype=torch.long)
    ember.nonzero(ember.eye(2) if hasattr(ember, "eye") else ember.tensor([[1., 0], [0, 1]]), out=oe)
    torch.nonzero(torch.eye(2), out=ot)
    check(oe, ot)


@pytest.mark.parametrize("dtype", DTYPES)
def test_take_put(dtype, rng):
    for layout in ("contiguous", "transposed"):
        e, t = make_pair((3, 4), dtype, rng, layout)
        for idx in ([0, 11, -12, 5], [[1, 2], [3, 4]], [], 7):
            ie, it = ipair(idx)
            check(ember.take(e, ie), torch.take(t, it), check_stride=True)
            se, st = make_pair(tuple(ie.shape), dtype, rng)
            if len(set(np.ravel(idx).tolist())) == np.size(idx):
                check(ember.put(e, ie, se), torch.put(t, it, st), check_stride=True)
                check(e.clone().put_(ie, se), t.clone().put_(it, st))
            if dtype != "bool":
                check(e.clone().put_(ie, se, accumulate=True), t.clone().put_(it, st, accumulate=True))
        for dim, idx in [(0, [[0, 2, 1, 0]]), (1, [[3], [0], [1]]), (1, [[1, 2]]), (-1, [[0, 3, 3]] * 3)]:
            ie, it = ipair(idx)
            check(ember.take_along_dim(e, ie, dim), torch.take_along_dim(t, it, dim), check_stride=True)
        ce, ct = e.contiguous(), t.contiguous()
        ie, it = ipair([[0, 11], [3, 2]])
        check(ember.take_along_dim(ce, ie), torch.take_along_dim(ct, it))
        ie, it = ipair([0, 5], np.int32)
        check(ember.take_along_dim(ce, ie), torch.take_along_dim(ct, it))
    check(ember.take_along_dim(ember.tensor(2.), ember.tensor(0)),
          torch.take_along_dim(torch.tensor(2.), torch.tensor(0)))


def test_take_put_errors():
    x = lambda lib: lib.arange(12.).reshape(3, 4)  # noqa: E731
    cases = [
        lambda lib: lib.take(x(lib), lib.tensor([12])),
        lambda lib: lib.take(x(lib), lib.tensor([-13])),
        lambda lib: lib.take(x(lib), lib.tensor([1], dtype=lib.int32)),
        lambda lib: lib.take(lib.zeros(0), lib.tensor([0])),
        lambda lib: lib.take_along_dim(x(lib), lib.tensor([1]), 1),
        lambda lib: lib.take_along_dim(x(lib), lib.tensor([[1]], dtype=lib.int32), 1),
        lambda lib: lib.take_along_dim(x(lib), lib.zeros(2, 2, dtype=lib.long), 1),
        lambda lib: lib.take_along_dim(x(lib), lib.zeros(3, 2, dtype=lib.long), 2),
        lambda lib: lib.take_along_dim(x(lib).t(), lib.zeros(3, 2, dtype=lib.long)),
        lambda lib: lib.take_along_dim(lib.tensor(2.), lib.tensor(0), 0),
        lambda lib: x(lib).put_(lib.tensor([12]), lib.ones(1)),
        lambda lib: x(lib).put_(lib.tensor([1, 2]), lib.ones(1)),
        lambda lib: x(lib).put_(lib.tensor([1], dtype=lib.int32), lib.ones(1)),
        lambda lib: x(lib).put_(lib.tensor([1]), lib.ones(1).long()),
        lambda lib: lib.zeros(0).put_(lib.tensor([0]), lib.ones(1)),
    ]
    for f in cases:
        same_error(f)


def test_out_variants(rng):
    e, t = make_pair((3, 4), "float32", rng)
    ie, it = ipair([[0, 2, 1, 0]])
    for fe, ft in [
        (lambda o: ember.scatter_add(e, 0, ie, e, out=o), lambda o: torch.scatter_add(t, 0, it, t, out=o)),
        (lambda o: ember.scatter_reduce(e, 0, ie, e, "amax", out=o),
         lambda o: torch.scatter_reduce(t, 0, it, t, "amax", out=o)),
        (lambda o: ember.index_add(e, 0, ie[0, :2], e[:2], out=o),
         lambda o: torch.index_add(t, 0, it[0, :2], t[:2], out=o)),
        (lambda o: ember.index_copy(e, 0, ie[0, 1:3], e[:2], out=o),
         lambda o: torch.index_copy(t, 0, it[0, 1:3], t[:2], out=o)),
        (lambda o: ember.index_reduce(e, 0, ie[0, :3], e, "prod", out=o),
         lambda o: torch.index_reduce(t, 0, it[0, :3], t, "prod", out=o)),
        (lambda o: ember.masked_select(e, e > 0, out=o), lambda o: torch.masked_select(t, t > 0, out=o)),
        (lambda o: ember.take(e, ie, out=o), lambda o: torch.take(t, it, out=o)),
        (lambda o: ember.take_along_dim(e, ie, 0, out=o), lambda o: torch.take_along_dim(t, it, 0, out=o)),
    ]:
        oe, ot = ember.empty(0), torch.empty(0)
        fe(oe)
        ft(ot)
        check(oe, ot)


def test_inplace_versions_and_aliasing(rng):
    e, t = make_pair((4, 3), "float32", rng)
    be, bt = e[1:], t[1:]
    be.index_fill_(0, ember.tensor([0, 2]), 7.0)
    bt.index_fill_(0, torch.tensor([0, 2]), 7.0)
    be.scatter_(1, ember.tensor([[2], [0], [1]]), -1.0)
    bt.scatter_(1, torch.tensor([[2], [0], [1]]), -1.0)
    be.index_put_((ember.tensor([1]), ember.tensor([1])), ember.tensor(5.0), accumulate=True)
    bt.index_put_((torch.tensor([1]), torch.tensor([1])), torch.tensor(5.0), accumulate=True)
    check(e, t)
    v0 = e._version
    e.index_add_(0, ember.tensor([0]), ember.ones(1, 3))
    assert e._version > v0
    r = e.put_(ember.tensor([0]), ember.tensor([3.0]))
    assert r is e


def test_inplace_on_empty_tensors_no_overlap_error():
    # an empty tensor is contiguous for PyTorch: no internal-overlap error (NumPy may give 0 strides)
    for L in (ember, torch):
        z = L.zeros((0, 3))
        z.index_add_(1, L.tensor([2, 0]), L.zeros((0, 2)))
        z.masked_scatter_(L.tensor([True, False, True]), L.zeros(0))
        z.scatter_add_(0, L.zeros((0, 3), dtype=L.int64), L.zeros((0, 3)))
        assert tuple(z.shape) == (0, 3)
