"""Shape-manipulating copies against torch: cat/stack family, flip/roll/rot90, repeat/tile,
repeat_interleave, tril/triu, meshgrid, broadcasting helpers, atleast_*d."""
import warnings

import pytest
import torch
from harness import DTYPES, check, make_pair, same_error

import ember

pytestmark = pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")


def pairs(specs, rng):
    """[(shape, dtype, layout)] -> (ember list, torch list)."""
    es, ts = [], []
    for shape, dtype, layout in specs:
        e, t = make_pair(shape, dtype, rng, layout)
        es.append(e)
        ts.append(t)
    return es, ts


# ---- cat / stack ---------------------------------------------------------------------------------
CAT_CASES = [
    ([((2, 3), "float32", "contiguous"), ((4, 3), "float32", "transposed")], 0),
    ([((2, 3), "float32", "contiguous"), ((2, 5), "float32", "strided")], 1),
    ([((2, 3), "float32", "contiguous"), ((2, 5), "float32", "contiguous")], -1),
    ([((2, 3), "int64", "contiguous"), ((2, 3), "float32", "contiguous")], 0),
    ([((2, 3), "bool", "contiguous"), ((2, 3), "int8", "contiguous")], 1),
    ([((2, 3), "uint8", "contiguous"), ((2, 3), "int8", "contiguous")], 0),
    ([((2, 3), "float16", "contiguous"), ((2, 3), "bfloat16", "contiguous")], 0),
    ([((2, 3), "complex64", "contiguous"), ((2, 3), "float64", "contiguous")], 0),
    ([((0,), "float64", "contiguous"), ((2, 3), "float32", "contiguous")], 1),
    ([((0,), "float32", "contiguous"), ((0,), "float32", "contiguous")], 0),
    ([((0, 3), "float32", "contiguous"), ((2, 3), "float32", "contiguous")], 0),
    ([((2, 0), "float32", "contiguous"), ((2, 3), "float32", "contiguous")], 1),
    ([((3, 4), "float32", "expanded"), ((3, 4), "float32", "expanded")], 1),
    ([((5,), "int32", "contiguous")], 0),
    ([((2, 3, 4), "float64", "transposed")] * 3, 2),
]


@pytest.mark.parametrize("i", range(len(CAT_CASES)))
def test_cat(i, rng):
    specs, dim = CAT_CASES[i]
    es, ts = pairs(specs, rng)
    for name in ("cat", "concat", "concatenate"):
        check(getattr(ember, name)(es, dim), getattr(torch, name)(ts, dim), check_stride=True)
    check(ember.cat(tuple(es), dim=dim), torch.cat(tuple(ts), dim=dim))
    check(ember.cat(es, axis=dim), torch.cat(ts, axis=dim))
    check(ember.concatenate(es, dim=dim), torch.concatenate(ts, dim=dim))
    em = [ember.empty_strided(e.shape, e.stride(), dtype=e.dtype, device="meta") for e in es]
    tm = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta") for t in ts]
    check(ember.cat(em, dim), torch.cat(tm, dim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_stack_dtypes(dtype, rng):
    es, ts = pairs([((2, 3), dtype, "contiguous"), ((2, 3), dtype, "transposed")], rng)
    check(ember.cat(es, 1), torch.cat(ts, 1))
    check(ember.stack(es, 1), torch.stack(ts, 1))


def test_cat_out(rng):
    es, ts = pairs([((2, 3), "float32", "contiguous"), ((1, 3), "int64", "contiguous")], rng)
    oe, ot = ember.zeros(3, 3, dtype=ember.float64), torch.zeros(3, 3, dtype=torch.float64)
    re = ember.cat(es, out=oe)
    torch.cat(ts, out=ot)
    assert re is oe
    check(oe, ot)
    oe, ot = ember.zeros(0), torch.zeros(0)
    ember.cat(es, out=oe)
    torch.cat(ts, out=ot)
    check(oe, ot)
    same_error(lambda L: L.cat([L.zeros(2), L.ones(2)], out=L.zeros(4, dtype=L.int32)))
    oe, ot = ember.zeros(2, 2, 3), torch.zeros(2, 2, 3)
    ember.stack([es[0], es[0]], out=oe)
    torch.stack([ts[0], ts[0]], out=ot)
    check(oe, ot)


CAT_ERRORS = [
    lambda L: L.cat([]),
    lambda L: L.cat([L.zeros(2, 3), L.zeros(3, 3)], 1),
    lambda L: L.cat([L.zeros(2, 3), L.zeros(3)]),
    lambda L: L.cat([L.zeros(2, 3), L.tensor(1.0)]),
    lambda L: L.cat([L.tensor(1.0)]),
    lambda L: L.cat([L.zeros(2, 3)], 2),
    lambda L: L.cat([L.zeros(0), L.zeros(2, 3)], 2),
    lambda L: L.cat([L.zeros(2), L.zeros(2, device="meta")]),
    lambda L: L.stack([]),
    lambda L: L.stack([L.zeros(2, 3), L.zeros(3, 2)]),
    lambda L: L.stack([L.zeros(2, 3), L.zeros(2, 3)], 3),
    lambda L: L.hstack([]), lambda L: L.vstack([]), lambda L: L.dstack([]),
    lambda L: L.column_stack([]),
    lambda L: L.hstack([L.zeros(2, 3), L.zeros(3, 3)]),
]


@pytest.mark.parametrize("i", range(len(CAT_ERRORS)))
def test_cat_errors(i):
    same_error(CAT_ERRORS[i])


STACK_CASES = [
    ([((2, 3), "float32", "contiguous"), ((2, 3), "int64", "transposed")], 0),
    ([((2, 3), "float32", "contiguous"), ((2, 3), "float32", "strided")], 2),
    ([((2, 3), "float32", "contiguous")] * 3, -1),
    ([((), "int64", "contiguous"), ((), "float32", "contiguous")], 0),
    ([((0, 3), "float32", "contiguous")] * 2, 1),
]


@pytest.mark.parametrize("i", range(len(STACK_CASES)))
def test_stack(i, rng):
    specs, dim = STACK_CASES[i]
    es, ts = pairs(specs, rng)
    check(ember.stack(es, dim), torch.stack(ts, dim), check_stride=True)
    em = [ember.empty(e.shape, dtype=e.dtype, device="meta") for e in es]
    tm = [torch.empty(t.shape, dtype=t.dtype, device="meta") for t in ts]
    check(ember.stack(em, dim), torch.stack(tm, dim))


STACKS = [
    [((), "float32"), ((), "int64")],
    [((3,), "float32"), ((3,), "float32")],
    [((2,), "float32"), ((3,), "float32")],
    [((2, 3), "float32"), ((2, 3), "float64")],
    [((1, 3), "int32"), ((2, 3), "int32")],
    [((2, 3, 4), "float32"), ((2, 3, 4), "float32")],
    [((3,), "float32"), ((3, 2), "float32")],
    [((), "float32"), ((1, 1), "float32")],
]


@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
@pytest.mark.parametrize("i", range(len(STACKS)))
def test_hvd_stack(name, i, rng):
    es, ts = pairs([(s, d, "contiguous") for s, d in STACKS[i]], rng)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rt = getattr(torch, name)(ts)
    except RuntimeError:
        same_error(lambda L: getattr(L, name)(es if L is ember else ts))
        return
    check(getattr(ember, name)(es), rt, check_stride=True)
    check(getattr(ember, name)(tuple(es)), rt)
    oe = ember.zeros(0, dtype=rt.dtype and getattr(ember, str(rt.dtype).split(".")[1]))
    getattr(ember, name)(es, out=oe)
    check(oe, rt)


# ---- flip / roll / rot90 -------------------------------------------------------------------------
LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]
FLIPS = [
    ("flip0", lambda L, x: L.flip(x, (0,)), (3, 4)),
    ("flip_all", lambda L, x: x.flip((0, 1, 2)), (2, 3, 4)),
    ("flip_neg", lambda L, x: x.flip(-1), (2, 3, 4)),
    ("flip_none", lambda L, x: L.flip(x, ()), (2, 3)),
    ("flip_0d", lambda L, x: L.flip(x, (0,)), ()),
    ("flip_zero", lambda L, x: L.flip(x, (1,)), (0, 3)),
    ("fliplr", lambda L, x: L.fliplr(x), (3, 4)),
    ("flipud", lambda L, x: x.flipud(), (3, 4, 2)),
    ("roll", lambda L, x: L.roll(x, 2), (3, 4)),
    ("roll_dim", lambda L, x: x.roll(1, 1), (3, 4)),
    ("roll_neg", lambda L, x: L.roll(x, -5, 0), (3, 4)),
    ("roll_dims", lambda L, x: L.roll(x, (1, -2), (0, 2)), (2, 3, 4)),
    ("roll_0d", lambda L, x: L.roll(x, 3), ()),
    ("roll_zero", lambda L, x: L.roll(x, 1, 0), (0, 3)),
    ("rot90", lambda L, x: L.rot90(x), (3, 4)),
    ("rot90_2", lambda L, x: x.rot90(2), (3, 4)),
    ("rot90_3", lambda L, x: L.rot90(x, 3, (1, 2)), (2, 3, 4)),
    ("rot90_neg", lambda L, x: L.rot90(x, -1, (2, 0)), (2, 3, 4)),
    ("rot90_0", lambda L, x: L.rot90(x, 4), (3, 4)),
    ("repeat", lambda L, x: x.repeat(2, 3), (3, 4)),
    ("repeat_more", lambda L, x: x.repeat(2, 1, 3), (3, 4)),
    ("repeat_zero", lambda L, x: x.repeat(0, 2), (3, 4)),
    ("repeat_0d", lambda L, x: x.repeat(2), ()),
    ("repeat_empty", lambda L, x: x.repeat(2, 2), (0, 3)),
    ("tile", lambda L, x: L.tile(x, (2,)), (3, 4)),
    ("tile_more", lambda L, x: x.tile((2, 1, 2)), (3, 4)),
    ("tril", lambda L, x: L.tril(x), (3, 4)),
    ("tril_k", lambda L, x: x.tril(1), (2, 3, 4)),
    ("tril_negk", lambda L, x: L.tril(x, -2), (4, 3)),
    ("triu", lambda L, x: L.triu(x), (3, 4)),
    ("triu_k", lambda L, x: x.triu(-1), (2, 3, 4)),
    ("triu_big", lambda L, x: x.triu(10), (3, 4)),
    ("ri_int", lambda L, x: x.repeat_interleave(2), (2, 3)),
    ("ri_int_dim", lambda L, x: L.repeat_interleave(x, 3, dim=1), (2, 3)),
    ("ri_int_negdim", lambda L, x: x.repeat_interleave(2, -2), (2, 3)),
    ("ri_int_0d", lambda L, x: x.repeat_interleave(3), ()),
    ("ri_tensor", lambda L, x: x.repeat_interleave(L.tensor([1, 0, 2]), dim=1), (2, 3)),
    ("ri_tensor_flat", lambda L, x: L.repeat_interleave(x, L.tensor([2])), (2, 3)),
    ("ri_tensor_0d", lambda L, x: x.repeat_interleave(L.tensor(2), 0), (2, 3)),
    ("ri_tensor_i32", lambda L, x: x.repeat_interleave(L.tensor([1, 2], dtype=L.int32), 0), (2, 3)),
    ("ri_output_size", lambda L, x: x.repeat_interleave(2, 0, output_size=4), (2, 3)),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,fn,shape", FLIPS, ids=[f[0] for f in FLIPS])
def test_copies(name, fn, shape, layout, rng):
    if layout != "contiguous" and (len(shape) < 1 or 0 in shape):
        return
    e, t = make_pair(shape, "float32", rng, layout)
    re, rt = fn(ember, e), fn(torch, t)
    # (zero-size inputs from the harness differ in strides between the libraries)
    check(re, rt, check_stride=name not in ("ri_tensor_flat",) and rt.numel() > 0)
    assert re.untyped_storage().data_ptr() != e.untyped_storage().data_ptr() or re.numel() == 0


@pytest.mark.parametrize("name,fn,shape", [f for f in FLIPS if not f[0].startswith("ri_tensor")],
                         ids=[f[0] for f in FLIPS if not f[0].startswith("ri_tensor")])
def test_copies_meta(name, fn, shape, rng):
    e, t = make_pair(shape, "float32", rng, "transposed" if len(shape) > 1 else "contiguous")
    em = ember.empty_strided(tuple(t.shape), t.stride(), device="meta")
    tm = torch.empty_strided(t.shape, t.stride(), device="meta")
    re, rt = fn(ember, em), fn(torch, tm)
    assert re.device.type == "meta"
    # (torch's meta empty_like makes zero-size outputs contiguous, its CPU one keeps the strides)
    check(re, rt, check_stride=name.startswith(("flip", "rot90", "tril", "triu")) and rt.numel())


@pytest.mark.parametrize("dtype", DTYPES)
def test_copies_dtypes(dtype, rng):
    e, t = make_pair((3, 4), dtype, rng, "transposed")
    for fn in (lambda L, x: L.flip(x, (1,)), lambda L, x: L.roll(x, 1, 0), lambda L, x: L.rot90(x),
               lambda L, x: x.repeat(2, 1), lambda L, x: L.tril(x), lambda L, x: L.triu(x, 1),
               lambda L, x: x.repeat_interleave(2, 0), lambda L, x: L.tile(x, (2, 2))):
        check(fn(ember, e), fn(torch, t), check_stride=True)


def test_inplace_and_out(rng):
    e, t = make_pair((3, 4), "float32", rng, "transposed")
    assert e.tril_(1) is e
    t.tril_(1)
    check(e, t)
    e.triu_(-1)
    t.triu_(-1)
    check(e, t)
    for name, args in [("tril", ()), ("triu", (1,))]:
        oe, ot = ember.zeros(1), torch.zeros(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(ember, name)(e, *args, out=oe)
            getattr(torch, name)(t, *args, out=ot)
        check(oe, ot)


COPY_ERRORS = [
    lambda L: L.flip(L.zeros(2, 3), (0, 0)), lambda L: L.flip(L.zeros(2, 3), (2,)),
    lambda L: L.fliplr(L.zeros(3)), lambda L: L.flipud(L.tensor(1.0)),
    lambda L: L.roll(L.zeros(2, 3), (1, 2), (0,)), lambda L: L.roll(L.zeros(2, 3), (1, 2)),
    lambda L: L.roll(L.zeros(2, 3), 1, 2),
    lambda L: L.rot90(L.zeros(2, 3), 1, (0, 0)), lambda L: L.rot90(L.zeros(2, 3), 1, (0,)),
    lambda L: L.rot90(L.zeros(3), 1), lambda L: L.rot90(L.zeros(2, 3), 1, (0, 5)),
    lambda L: L.rot90(L.zeros(2, 3), 1, (0, -2)),
    lambda L: L.zeros(2, 3).repeat(2), lambda L: L.zeros(2, 3).repeat(2, -1),
    lambda L: L.tile(L.zeros(2, 3), (-1,)),
    lambda L: L.tril(L.zeros(3)), lambda L: L.triu(L.tensor(1.0)),
    lambda L: L.zeros(2, 3).repeat_interleave(-1),
    lambda L: L.zeros(2, 3).repeat_interleave(2, 2),
    lambda L: L.tensor(5.0).repeat_interleave(3, dim=0),
    lambda L: L.zeros(2, 3).repeat_interleave(L.tensor([1, 2]), dim=1),
    lambda L: L.zeros(2, 3).repeat_interleave(L.tensor([1, -2, 1]), dim=1),
    lambda L: L.zeros(2, 3).repeat_interleave(L.tensor([[1, 2]]), dim=0),
    lambda L: L.zeros(2, 3).repeat_interleave(L.tensor([1.0, 2.0]), dim=0),
    lambda L: L.zeros(2, 3).repeat_interleave(L.tensor([1, 2], dtype=L.int16), dim=0),
    lambda L: L.zeros(2, 3).repeat_interleave(2, dim=0, output_size=3),
    lambda L: L.tensor(5.0).repeat_interleave(L.tensor([3]), dim=0),
    lambda L: L.repeat_interleave(L.tensor(2)),
    lambda L: L.repeat_interleave(L.tensor([2, -1])),
    lambda L: L.repeat_interleave(L.tensor([2, 3]), output_size=4),
    lambda L: L.repeat_interleave(L.tensor([2.0, 3.0])),
    lambda L: L.zeros(2, 3, device="meta").repeat_interleave(L.tensor([1, 2], device="meta"), 0),
]


@pytest.mark.parametrize("i", range(len(COPY_ERRORS)))
def test_copy_errors(i):
    same_error(COPY_ERRORS[i])


def test_repeat_interleave_repeats_only():
    for dt in ("int64", "int32"):
        re = ember.repeat_interleave(ember.tensor([2, 0, 3], dtype=getattr(ember, dt)))
        rt = torch.repeat_interleave(torch.tensor([2, 0, 3], dtype=getattr(torch, dt)))
        check(re, rt)
    check(ember.repeat_interleave(ember.tensor([2, 3]), output_size=5),
          torch.repeat_interleave(torch.tensor([2, 3]), output_size=5))
    check(ember.repeat_interleave(ember.zeros(0, dtype=ember.int64)),
          torch.repeat_interleave(torch.zeros(0, dtype=torch.int64)))
    em = ember.empty((2, 3), device="meta")
    check(em.repeat_interleave(ember.tensor([1, 2], device="meta"), 0, output_size=3),
          torch.empty((2, 3), device="meta").repeat_interleave(
              torch.tensor([1, 2], device="meta"), 0, output_size=3))


# ---- meshgrid / broadcasting / atleast ------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing, rng):
    for specs in ([((3,), "float32", "contiguous"), ((4,), "float32", "strided")],
                  [((2,), "int64", "contiguous"), ((), "int64", "contiguous"),
                   ((3,), "int64", "contiguous")],
                  [((5,), "float64", "contiguous")],
                  [((0,), "float32", "contiguous"), ((2,), "float32", "contiguous")]):
        es, ts = pairs(specs, rng)
        re, rt = ember.meshgrid(*es, indexing=indexing), torch.meshgrid(*ts, indexing=indexing)
        assert isinstance(re, tuple)
        check(re, rt, check_stride=True)
        check(ember.meshgrid(es, indexing=indexing), torch.meshgrid(ts, indexing=indexing))


def test_meshgrid_default_warns(rng):
    import ember._python_api.shape as sh
    sh._meshgrid_warned[0] = False
    es, ts = pairs([((2,), "float32", "contiguous"), ((3,), "float32", "contiguous")], rng)
    with pytest.warns(UserWarning, match="indexing argument"):
        re = ember.meshgrid(*es)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(re, torch.meshgrid(*ts))


def test_meshgrid_errors():
    same_error(lambda L: L.meshgrid(indexing="ij"))
    same_error(lambda L: L.meshgrid(L.zeros(2), L.zeros(3), indexing="foo"))
    same_error(lambda L: L.meshgrid(L.zeros(2), L.zeros(3, dtype=L.int64), indexing="ij"))
    same_error(lambda L: L.meshgrid(L.zeros(2), L.zeros(3, 2), indexing="ij"),
               match="torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got")


def test_broadcast_helpers(rng):
    es, ts = pairs([((3, 1), "float32", "contiguous"), ((4,), "int64", "contiguous"),
                    ((), "float64", "contiguous")], rng)
    re, rt = ember.broadcast_tensors(*es), torch.broadcast_tensors(*ts)
    assert isinstance(re, tuple)
    check(re, rt, check_stride=True)
    assert re[0]._base is not None
    for shapes in [((2,), (3, 1), (1, 1, 1)), ((3, 4),), (), ((), (2, 3)), (5, (1,)), ([2, 1], (1, 3)),
                   ((0,), (1,)), ((1, 0), (3, 1))]:
        r = ember.broadcast_shapes(*shapes)
        assert r == torch.broadcast_shapes(*shapes)
        assert isinstance(r, ember.Size)
    for shapes in [((2, 3), (3, 2)), ((2, -1),), ((3,), (-1,)), ((1,), "ab")]:
        same_error(lambda L, shapes=shapes: L.broadcast_shapes(*shapes))
    same_error(lambda L: L.broadcast_tensors(L.zeros(2, 3), L.zeros(3, 2)))
    same_error(lambda L: L.broadcast_to(L.zeros(2, 3), (3,)))
    check(ember.broadcast_to(es[0], (2, 3, 4)), torch.broadcast_to(ts[0], (2, 3, 4)),
          check_stride=True)
    check(es[1].broadcast_to((2, 4)), ts[1].broadcast_to((2, 4)), check_stride=True)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast(n, rng):
    fe, ft = getattr(ember, f"atleast_{n}d"), getattr(torch, f"atleast_{n}d")
    es, ts = pairs([((), "float32", "contiguous"), ((3,), "int64", "contiguous"),
                    ((2, 3), "float32", "transposed"), ((2, 3, 4), "float32", "contiguous")], rng)
    for e, t in zip(es, ts):
        re, rt = fe(e), ft(t)
        check(re, rt, check_stride=True)
        assert (re is e) == (rt is t)
    check(fe(*es), ft(*ts), check_stride=True)
    check(fe(es), ft(ts))
    assert isinstance(fe(es[0], es[1]), tuple)
