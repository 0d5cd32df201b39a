"""Random ops and generators against PyTorch: shapes, dtypes, devices, errors (same_error), value
ranges, distributions (mean/std within a few standard errors), and reproducibility under
manual_seed / Generator / get_state-set_state. The values themselves equal torch's bit for bit
(ember's CPU generator is torch's mt19937): tests/random checks that."""
import math
import pickle
import warnings

import numpy as np
import pytest
import torch
from harness import DTYPES, check, edtype, make_pair, same_error, tdtype

import ember

N = 20000


def close(x, expected, sigma, n=N, k=5.0):
    """x is within k standard errors of `expected` (sigma = the distribution's std)."""
    assert abs(x - expected) <= k * sigma / math.sqrt(n) + 1e-12, (x, expected, sigma)


def stats(t):
    a = t.detach().double().numpy().ravel()
    return a.mean(), a.std()


def same_meta(fn):
    """fn(lib) on both libraries: the same dtype and shape (random values differ)."""
    e, t = fn(ember), fn(torch)
    assert e.dtype.name == str(t.dtype)[6:], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.device.type == t.device.type
    return e, t


def same_dtype_or_error(fn):
    try:
        fn(torch)
    except Exception:
        same_error(fn)
        return None
    return same_meta(fn)


# ---- factories: dtypes, shapes, meta, errors ------------------------------------------------------
@pytest.mark.parametrize("name", ["rand", "randn"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rand_randn_dtypes(name, dtype):
    r = same_dtype_or_error(lambda L: getattr(L, name)(3, 4, dtype=getattr(L, "bool" if dtype == "bool" else dtype)))
    if r is not None:
        same_meta(lambda L: getattr(L, name)(3, 4, dtype=getattr(L, "bool" if dtype == "bool" else dtype),
                                              device="meta"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", [(5, (3,)), (2, 9, (2, 3)), (300, (3,)), (256, (2,)), (-5, 0, (3,)),
                                  (0, 2 ** 25, (3,)), (-300, 1, (3,)), (2, (0,))])
def test_randint_dtypes(dtype, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = same_dtype_or_error(lambda L: L.randint(*args, dtype=getattr(L, "bool" if dtype == "bool" else dtype)))
    if r is not None and r[0].numel():
        lo, hi = (0, args[0]) if len(args) == 2 else args[:2]
        v = r[0].double()
        assert v.min().item() >= lo and v.max().item() < hi


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 5, 256, 300, 3000])
def test_randperm_dtypes(dtype, n):
    r = same_dtype_or_error(lambda L: L.randperm(n, dtype=getattr(L, "bool" if dtype == "bool" else dtype)))
    if r is not None and (dtype not in ("float16", "bfloat16") or n <= 256):
        assert sorted(r[0].long().tolist()) == list(range(n))


@pytest.mark.parametrize("fn", [
    lambda L: L.rand(-1), lambda L: L.randn(-2, 3), lambda L: L.rand(2, generator=3),
    lambda L: L.randint(5, 2, (3,)), lambda L: L.randint(5, 5, (3,)), lambda L: L.randint(-1, (3,)),
    lambda L: L.randint(0, (3,)), lambda L: L.randint(3, 2), lambda L: L.randint(3),
    lambda L: L.randint(5, 2, (3,), device="meta"), lambda L: L.randint(5, (3,), dtype=L.complex64),
    lambda L: L.randperm(-1), lambda L: L.randperm(2.5), lambda L: L.randperm(3000, dtype=L.float16),
    lambda L: L.rand(2, dtype=L.int64, out=L.empty(2)),
])
def test_factory_errors(fn):
    same_error(fn)


def test_factory_forms():
    for f in [lambda L: L.rand(2, 3), lambda L: L.rand((2, 3)), lambda L: L.rand([2, 3]), lambda L: L.rand(()),
              lambda L: L.rand(size=(2, 3)), lambda L: L.randn(2, dtype=L.float64),
              lambda L: L.rand(2, 3, device="meta"), lambda L: L.rand(3, dtype=L.int64, device="meta"),
              lambda L: L.randint(3, (2,)), lambda L: L.randint(1, 3, (2,)), lambda L: L.randint(3, size=(2,)),
              lambda L: L.randint(low=1, high=3, size=(2,)), lambda L: L.randint(high=5, size=(2,)),
              lambda L: L.randint(5, (3,), device="meta"), lambda L: L.randint(0, 2 ** 63 - 1, (2,)),
              lambda L: L.randint(-2 ** 63, 2 ** 63 - 1, (2,)), lambda L: L.randperm(5, device="meta"),
              lambda L: L.rand(2, out=L.empty(2, dtype=L.float64)),
              lambda L: L.randint(5, (2,), out=L.empty(0, dtype=L.int32)),
              lambda L: L.randperm(3, out=L.empty(0, dtype=L.int32)),
              lambda L: L.normal(0.0, 1.0, (2,), out=L.empty(0, dtype=L.float64))]:
        same_meta(f)
    r = ember.rand(2, 3, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    assert ember.randn(2, device="meta").is_meta


# ---- distributions ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_rand_distribution(dtype):
    ember.manual_seed(0)
    r = ember.rand(N, dtype=edtype(dtype))
    assert r.min().item() >= 0 and r.max().item() < 1
    m, s = stats(r)
    close(m, 0.5, math.sqrt(1 / 12))
    assert abs(s - math.sqrt(1 / 12)) < 0.01
    u = ember.empty(N, dtype=edtype(dtype)).uniform_(-2, 3)
    assert u.min().item() >= -2 and u.max().item() < 3
    close(stats(u)[0], 0.5, 5 / math.sqrt(12))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_randn_distribution(dtype):
    ember.manual_seed(1)
    r = ember.randn(N, dtype=edtype(dtype))
    if r.is_complex():
        a = r.numpy()
        close(a.real.mean(), 0, math.sqrt(0.5))
        close(a.imag.mean(), 0, math.sqrt(0.5))
        assert abs((np.abs(a) ** 2).mean() - 1) < 0.05  # E|z|^2 = 1: each part has variance 1/2
        return
    m, s = stats(r)
    close(m, 0, 1)
    assert abs(s - 1) < 0.03
    x = ember.empty(N, dtype=edtype(dtype)).normal_(2, 3)
    m, s = stats(x)
    close(m, 2, 3)
    assert abs(s - 3) < 0.1


def test_complex_uniform():
    r = ember.rand(N, dtype=ember.complex64).numpy()
    for part in (r.real, r.imag):
        assert part.min() >= 0 and part.max() < 1
        close(part.mean(), 0.5, math.sqrt(1 / 12))


def test_normal_overloads():
    ember.manual_seed(2)
    mean = ember.full((N,), 3.0)
    m, s = stats(ember.normal(mean, 2.0))
    close(m, 3, 2)
    assert abs(s - 2) < 0.06
    m, s = stats(ember.normal(-1.0, ember.full((N,), 0.5)))
    close(m, -1, 0.5)
    assert abs(s - 0.5) < 0.02
    m, s = stats(ember.normal(mean, ember.full((N,), 0.5)))
    close(m, 3, 0.5)
    m, s = stats(ember.normal(1.0, 2.0, (N,)))
    close(m, 1, 2)
    assert abs(s - 2) < 0.06
    # broadcast and per-element parameters
    r = ember.normal(ember.tensor([0.0, 100.0]).reshape(2, 1), ember.tensor([1e-6, 1e-6, 1e-6]))
    assert r.shape == (2, 3) and abs(r[1, 2].item() - 100) < 1e-3
    r = ember.normal(ember.zeros(2), 1.0, out=ember.empty(2))
    assert r.shape == (2,)


@pytest.mark.parametrize("fn", [
    lambda L: L.normal(L.zeros(3), 1.0), lambda L: L.normal(0.0, L.ones(3)),
    lambda L: L.normal(L.zeros(3), L.ones(2, 1)), lambda L: L.normal(L.zeros(3).double(), L.ones(3)),
    lambda L: L.normal(L.zeros(3)), lambda L: L.normal(L.zeros(3).half(), 1.0),
    lambda L: L.normal(L.zeros(3, dtype=L.complex64), 1.0), lambda L: L.normal(0.0, 1.0, (2, 3)),
    lambda L: L.normal(0, 1, (2, 3)), lambda L: L.normal(0.0, 1.0, size=(2, 3), dtype=L.float64),
    lambda L: L.normal(L.zeros(3), L.ones(3, dtype=L.float64)), lambda L: L.normal(mean=L.zeros(2)),
    lambda L: L.normal(L.zeros(2), std=2.0), lambda L: L.normal(L.zeros(2, device="meta"), 1.0),
    lambda L: L.normal(0.0, 1.0, (2,), device="meta"),
])
def test_normal_shapes(fn):
    same_meta(fn)


@pytest.mark.parametrize("fn", [
    lambda L: L.normal(L.zeros(3), -1.0), lambda L: L.normal(0.0, -L.ones(3)), lambda L: L.normal(0.0, -1.0, (2,)),
    lambda L: L.normal(L.zeros(3, dtype=L.int64), 1.0), lambda L: L.normal(L.zeros(3), L.ones(4)),
    lambda L: L.normal(0.0, 1.0, (2,), dtype=L.int64), lambda L: L.normal(2.0, L.ones(3, dtype=L.int64)),
    lambda L: L.normal(L.zeros(3), L.ones(3) * 1j), lambda L: L.normal(L.zeros(0), -1.0),
    lambda L: L.normal(L.zeros(3), float("nan")), lambda L: L.normal(0.0, 1.0),
    lambda L: L.zeros(3).normal_(0, -1), lambda L: L.zeros(3, dtype=L.int64).normal_(),
    lambda L: L.zeros(3).normal_(0, float("nan")),
])
def test_normal_errors(fn):
    same_error(fn)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_bernoulli(dtype):
    ember.manual_seed(3)
    p = ember.full((N,), 0.3, dtype=edtype(dtype))
    r = ember.bernoulli(p)
    assert r.dtype is p.dtype and set(np.unique(r.float().numpy())) <= {0.0, 1.0}
    close(stats(r)[0], 0.3, math.sqrt(0.21))
    r = ember.bernoulli(ember.zeros(N, dtype=edtype(dtype)), 0.7)
    close(stats(r)[0], 0.7, math.sqrt(0.21))
    x = ember.empty(N, dtype=edtype(dtype)).bernoulli_(ember.tensor(0.9))
    close(stats(x)[0], 0.9, 0.3)
    pt = ember.rand(N)
    r = ember.bernoulli(pt)  # per-element probabilities: E[r] = E[p] = 1/2
    close(stats(r)[0], 0.5, 0.5)
    assert ember.bernoulli(ember.ones(10)).sum().item() == 10
    assert ember.bernoulli(ember.zeros(10)).sum().item() == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_dtypes(dtype):
    d = "bool" if dtype == "bool" else dtype
    same_dtype_or_error(lambda L: L.bernoulli(L.zeros(3, dtype=getattr(L, d))))
    same_dtype_or_error(lambda L: L.bernoulli(L.zeros(3, dtype=getattr(L, d)), 0.5))
    same_dtype_or_error(lambda L: L.zeros(3, dtype=getattr(L, d)).bernoulli_(0.5))
    same_dtype_or_error(lambda L: L.zeros(3, dtype=getattr(L, d)).bernoulli_(L.full((3,), 0.5)))
    same_dtype_or_error(lambda L: L.zeros(3).bernoulli_(L.ones(3, dtype=getattr(L, d))))


@pytest.mark.parametrize("fn", [
    lambda L: L.bernoulli(L.full((3,), 2.0)), lambda L: L.bernoulli(L.zeros(3), 1.5),
    lambda L: L.bernoulli(L.full((3,), float("nan"))), lambda L: L.bernoulli(L.zeros(3), float("nan")),
    lambda L: L.zeros(3).bernoulli_(L.ones(2)), lambda L: L.zeros(3).bernoulli_(L.full((3,), -1.0)),
    lambda L: L.zeros(3, dtype=L.int64).bernoulli_(2.0), lambda L: L.bernoulli(L.zeros(2), 0.5, out=L.empty(2)),
])
def test_bernoulli_errors(fn):
    same_error(fn)


def test_multinomial_distribution():
    ember.manual_seed(4)
    p = ember.tensor([0.1, 0.2, 0.0, 0.7])
    r = ember.multinomial(p, N, replacement=True)
    assert r.dtype is ember.int64 and r.shape == (N,)
    counts = np.bincount(r.numpy(), minlength=4) / N
    assert counts[2] == 0
    for c, q in zip(counts, [0.1, 0.2, 0.0, 0.7]):
        close(c, q, math.sqrt(q * (1 - q)))
    # without replacement: distinct indices, never a zero-probability one while others remain
    rows = ember.tensor([[1.0, 2.0, 0.0, 3.0]] * 500)
    r = ember.multinomial(rows, 3)
    assert r.shape == (500, 3)
    for row in r.tolist():
        assert len(set(row)) == 3 and 2 not in row
    first = np.bincount(r[:, 0].numpy(), minlength=4) / 500  # first draw follows p
    close(first[3], 0.5, 0.5, n=500)
    one = ember.multinomial(ember.tensor([0.0, 0.0, 1.0]), 1)
    assert one.tolist() == [2]
    assert ember.multinomial(ember.tensor([0.2, 0.8]).double(), 2).dtype is ember.int64


@pytest.mark.parametrize("fn", [
    lambda L: L.multinomial(L.tensor([0.2, 0.3, 0.5]), 2), lambda L: L.multinomial(L.ones(2, 3), 2),
    lambda L: L.multinomial(L.ones(0, 3), 1), lambda L: L.multinomial(L.ones(3, device="meta"), 2),
    lambda L: L.tensor([0.2, 0.8]).multinomial(3, True), lambda L: L.multinomial(L.ones(3).half(), 1),
    lambda L: L.multinomial(L.ones(3), 2, out=L.empty(0, dtype=L.int64)),
])
def test_multinomial_shapes(fn):
    same_meta(fn)


@pytest.mark.parametrize("fn", [
    lambda L: L.multinomial(L.tensor([0.2, 0.3, 0.5]), 5), lambda L: L.multinomial(L.tensor([0.2, 0.8]), 0),
    lambda L: L.multinomial(L.tensor([0.2, 0.8]), -1), lambda L: L.multinomial(L.ones(2, 3, 4), 2),
    lambda L: L.multinomial(L.tensor(1.0), 1), lambda L: L.multinomial(L.tensor([-0.2, 0.3]), 1),
    lambda L: L.multinomial(L.zeros(3), 1), lambda L: L.multinomial(L.tensor([1.0, float("nan")]), 1),
    lambda L: L.multinomial(L.tensor([1.0, float("inf")]), 1), lambda L: L.multinomial(L.tensor([1, 2]), 1),
    lambda L: L.multinomial(L.zeros(0), 1), lambda L: L.multinomial(L.tensor([-0.2, 0.3]), 2, True),
    lambda L: L.multinomial(L.zeros(3), 2, True), lambda L: L.multinomial(L.tensor([1.0, float("inf")]), 2, True),
    lambda L: L.multinomial(L.tensor([1.0, float("nan")]), 2, True),
])
def test_multinomial_errors(fn):
    same_error(fn)


def test_randint_randperm_distribution():
    ember.manual_seed(5)
    r = ember.randint(-3, 7, (N,))
    counts = np.bincount(r.numpy() + 3, minlength=10) / N
    assert len(counts) == 10
    for c in counts:
        close(c, 0.1, 0.3)
    p = ember.randperm(1000)
    assert sorted(p.tolist()) == list(range(1000)) and p.tolist() != list(range(1000))
    b = ember.randint(2, (N,), dtype=ember.bool)
    close(stats(b)[0], 0.5, 0.5)


# ---- in-place distributions -----------------------------------------------------------------------
def test_inplace_distributions():
    ember.manual_seed(6)
    x = ember.empty(N, dtype=ember.float64)
    m, s = stats(x.exponential_(2.0))
    close(m, 0.5, 0.5)
    assert x.min().item() >= 0
    g = ember.empty(N).geometric_(0.25)
    close(stats(g)[0], 4.0, math.sqrt(0.75) / 0.25)
    assert g.min().item() >= 1 and (g == g.round()).all().item()
    gi = ember.empty(N, dtype=ember.int32).geometric_(0.5)
    assert gi.dtype is ember.int32 and gi.min().item() >= 1
    ln = ember.empty(N, dtype=ember.float64).log_normal_(1.0, 0.5)
    assert ln.min().item() > 0
    close(np.log(ln.numpy()).mean(), 1.0, 0.5)
    c = ember.empty(N, dtype=ember.float64).cauchy_(2.0, 0.5)
    assert abs(np.median(c.numpy()) - 2.0) < 0.05
    q = np.quantile(c.numpy(), [0.25, 0.75])  # quartiles at median -/+ sigma
    assert abs(q[0] - 1.5) < 0.05 and abs(q[1] - 2.5) < 0.05


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_ranges(dtype):
    d = "bool" if dtype == "bool" else dtype
    r = same_dtype_or_error(lambda L: L.zeros(1000, dtype=getattr(L, d)).random_())
    if r is not None:
        hi = {"bool": 1, "uint8": 255, "int8": 127, "int16": 32767, "int32": 2 ** 31 - 1,
              "int64": 2 ** 63 - 1, "float16": 2 ** 11, "bfloat16": 2 ** 8, "float32": 2 ** 24,
              "float64": 2 ** 53}[dtype]
        v = r[0].double().numpy()
        assert v.min() >= 0 and v.max() <= hi and (v == np.floor(v)).all()
        assert v.max() > hi / 2  # spans the range
    r = same_dtype_or_error(lambda L: L.zeros(1000, dtype=getattr(L, d)).random_(0, 2))
    if r is not None:
        assert set(r[0].long().tolist()) == {0, 1}
    r = same_dtype_or_error(lambda L: L.zeros(1000, dtype=getattr(L, d)).random_(1))
    if r is not None:
        assert set(r[0].long().tolist()) == {0}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["uniform_", "normal_", "exponential_", "geometric_", "log_normal_",
                                "cauchy_"])
def test_inplace_dtypes(op, dtype):
    d = "bool" if dtype == "bool" else dtype
    args = (0.5,) if op == "geometric_" else ()
    same_dtype_or_error(lambda L: getattr(L.zeros(3, dtype=getattr(L, d)), op)(*args))


@pytest.mark.parametrize("fn", [
    lambda L: L.zeros(3).uniform_(3, 2), lambda L: L.zeros(0).uniform_(3, 2),
    lambda L: L.zeros(3).uniform_(0, float("inf")), lambda L: L.zeros(3).uniform_(-3e38, 3e38),
    lambda L: L.zeros(3).uniform_(float("nan"), 1), lambda L: L.zeros(3, dtype=L.float16).uniform_(0, 7e4),
    lambda L: L.zeros(3, dtype=L.float16).uniform_(0, 1e39), lambda L: L.zeros(3).exponential_(-1),
    lambda L: L.zeros(3).exponential_(0), lambda L: L.zeros(3, dtype=L.int64).exponential_(-1),
    lambda L: L.zeros(3).geometric_(0), lambda L: L.zeros(3).geometric_(1.5),
    lambda L: L.zeros(3).geometric_(float("nan")), lambda L: L.zeros(3).log_normal_(1, -1),
    lambda L: L.zeros(3).cauchy_(0, -1), lambda L: L.zeros(3).random_(-1), lambda L: L.zeros(3).random_(5, 2),
    lambda L: L.zeros(3, dtype=L.int8).random_(300), lambda L: L.zeros(3, dtype=L.int8).random_(-200, 1),
    lambda L: L.zeros(3, dtype=L.complex64).random_(), lambda L: L.zeros(3, dtype=L.complex64).random_(0, 5),
    lambda L: L.zeros(3).expand(2, 3).normal_(), lambda L: L.zeros(3).expand(2, 3).random_(),
])
def test_inplace_errors(fn):
    same_error(fn)


def test_random_float_bound_warning():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
            lib.zeros(3).random_(0, 2 ** 25)
    for f in [lambda L: L.zeros(3).random_(2, None), lambda L: L.zeros(3, dtype=L.int64).random_(0, 2 ** 62),
              lambda L: L.zeros(3, dtype=L.int64).random_(-2 ** 63, None),
              lambda L: L.zeros(3).exponential_(float("inf")),
              lambda L: L.zeros(3).normal_(0, float("inf"))]:
        same_meta(f)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("op", ["uniform_", "normal_", "random_", "bernoulli_", "exponential_", "fill_"])
def test_inplace_noncontiguous(op, layout, rng):
    e, t = make_pair((4, 6), "float32", rng, layout)
    base = e._base if e._base is not None else e
    before = base.clone()
    args = (1.0,) if op == "fill_" else ()
    v = e._version
    r = getattr(e, op)(*args)
    assert r is e and e._version == v + 1
    if op in ("uniform_", "normal_", "exponential_", "fill_"):
        assert (e != before.as_strided(e.shape, e.stride(), e.storage_offset())).all().item()
    # memory outside the view is untouched
    mask = np.ones(base.numel(), bool)
    idx = np.lib.stride_tricks.as_strided(np.arange(base.numel()), e.shape,
                                          tuple(s * 8 for s in e.stride()))
    mask[(idx + e.storage_offset()).ravel() if layout == "strided" else idx.ravel()] = False
    assert np.array_equal(base.numpy().ravel()[mask], before.numpy().ravel()[mask])


def test_inplace_meta_and_like():
    m = ember.zeros(3, device="meta")
    assert m.uniform_(3, 2) is m and m.normal_().is_meta  # meta checks nothing, draws nothing
    for f in [lambda L: L.rand_like(L.zeros(3, dtype=L.float64)), lambda L: L.randn_like(L.zeros(2, 3)),
              lambda L: L.randint_like(L.zeros(3), 5), lambda L: L.randint_like(L.zeros(3), 2, 5),
              lambda L: L.randint_like(L.zeros(3, dtype=L.int32), 5), lambda L: L.rand_like(L.zeros(3), device="meta"),
              lambda L: L.randn_like(L.zeros(2), dtype=L.complex64)]:
        same_meta(f)
    same_error(lambda L: L.rand_like(L.zeros(3, dtype=L.int64)))
    same_error(lambda L: L.randn_like(L.zeros(3, dtype=L.int64)))


# ---- generators and reproducibility --------------------------------------------------------------
DRAWS = [
    lambda g: ember.rand(5, generator=g), lambda g: ember.randn(5, generator=g),
    lambda g: ember.randint(0, 100, (5,), generator=g), lambda g: ember.randperm(7, generator=g),
    lambda g: ember.normal(0.0, 1.0, (5,), generator=g), lambda g: ember.normal(ember.zeros(5), 1.0, generator=g),
    lambda g: ember.normal(0.0, ember.ones(5), generator=g),
    lambda g: ember.normal(ember.zeros(5), ember.ones(5), generator=g),
    lambda g: ember.bernoulli(ember.full((5,), 0.5), generator=g),
    lambda g: ember.bernoulli(ember.zeros(5), 0.5, generator=g),
    lambda g: ember.multinomial(ember.ones(6), 3, generator=g),
    lambda g: ember.multinomial(ember.ones(6), 9, True, generator=g),
    lambda g: ember.empty(5).uniform_(generator=g), lambda g: ember.empty(5).normal_(generator=g),
    lambda g: ember.empty(5).random_(generator=g), lambda g: ember.empty(5).random_(10, generator=g),
    lambda g: ember.empty(5).random_(3, 10, generator=g), lambda g: ember.empty(5).exponential_(generator=g),
    lambda g: ember.empty(5).geometric_(0.3, generator=g), lambda g: ember.empty(5).log_normal_(generator=g),
    lambda g: ember.empty(5).cauchy_(generator=g), lambda g: ember.empty(5).bernoulli_(0.5, generator=g),
    lambda g: ember.empty(5).bernoulli_(ember.full((5,), 0.5), generator=g),
    lambda g: ember.rand_like(ember.zeros(5), generator=g), lambda g: ember.randn_like(ember.zeros(5), generator=g),
    lambda g: ember.randint_like(ember.zeros(5), 0, 9, generator=g),
]


@pytest.mark.parametrize("draw", DRAWS, ids=range(len(DRAWS)))
def test_generator_argument(draw):
    g = ember.Generator().manual_seed(123)
    state = ember.get_rng_state()
    a = draw(g)
    assert ember.equal(ember.get_rng_state(), state)  # the default generator is untouched
    g.manual_seed(123)
    b = draw(g)
    assert ember.equal(a, b)
    g2 = ember.Generator().manual_seed(124)
    c, d = draw(g2), draw(g2)
    assert not (ember.equal(c, d) and ember.equal(a, c)) or a.numel() <= 1


@pytest.mark.parametrize("draw", DRAWS, ids=range(len(DRAWS)))
def test_manual_seed_reproducible(draw):
    ember.manual_seed(7)
    a = draw(None)
    ember.manual_seed(7)
    assert ember.equal(a, draw(None))


def test_generator_api():
    g = ember.Generator()
    tg = torch.Generator()
    assert g.initial_seed() == tg.initial_seed() == 67280421310721
    assert g.device == ember.device("cpu") and str(g.device) == str(tg.device)
    assert g.manual_seed(5) is g
    assert g.initial_seed() == 5
    assert ember.Generator().manual_seed(-5).initial_seed() == torch.Generator().manual_seed(-5).initial_seed()
    assert ember.Generator().manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64
    st = g.get_state()
    assert st.dtype is ember.uint8 and st.dim() == 1
    a = ember.rand(4, generator=g)
    g.set_state(st)
    assert ember.equal(a, ember.rand(4, generator=g))
    c = g.clone_state()
    assert ember.equal(ember.rand(3, generator=c), ember.rand(3, generator=g))
    g2 = pickle.loads(pickle.dumps(g))
    assert g2.initial_seed() == g.initial_seed()
    assert ember.equal(ember.rand(3, generator=g2), ember.rand(3, generator=g))
    for f in [lambda L: L.Generator("meta"), lambda L: L.manual_seed(2 ** 64),
              lambda L: L.manual_seed(-2 ** 63 - 1), lambda L: L.manual_seed("a"),
              lambda L: L.set_rng_state(L.zeros(3)), lambda L: L.Generator().set_state(3)]:
        same_error(f)
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size"):
        ember.set_rng_state(ember.zeros(3, dtype=ember.uint8))


def test_default_generator_and_state():
    assert ember.default_generator is ember.random.default_generator
    assert ember.manual_seed(11) is ember.default_generator
    assert ember.initial_seed() == 11 and ember.random.initial_seed() == 11
    ember.manual_seed(1.5)  # int(seed), as torch
    assert ember.initial_seed() == 1
    ember.manual_seed(ember.tensor(3))
    assert ember.initial_seed() == 3
    st = ember.get_rng_state()
    a = ember.randn(5)
    ember.set_rng_state(st)
    assert ember.equal(a, ember.randn(5))
    st2 = ember.random.get_rng_state()
    with ember.random.fork_rng():
        ember.rand(10)
    assert ember.equal(ember.random.get_rng_state(), st2)
    s = ember.seed()
    assert ember.initial_seed() == s
    ember.random.manual_seed(0)
    assert ember.initial_seed() == 0


def test_seeded_streams_are_independent_of_torch_but_stable():
    ember.manual_seed(0)
    a = ember.rand(3)
    ember.manual_seed(0)
    b = ember.rand(3)
    check(a, torch.from_numpy(b.numpy().copy()))
    assert a.dtype is ember.float32 and tdtype("float32") == torch.float32
