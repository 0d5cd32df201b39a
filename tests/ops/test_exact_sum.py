"""ATen's float32/float64 sum and mean, bit for bit: kernels/cpu/_cascade_sum.py against torch.

The kernel's entry point, sum_array(a, axes, keepdim), is what a reduction kernel calls (mean is
its sum divided by the count in the dtype, as ATen's CPU mean does). Each case runs with ember and torch both at 1 and at 2 intra-op threads (a full sum of 32768
elements or more adds one partial sum per thread), and through both implementations: NumPy only,
and the numba-jitted loops where numba is installed.
"""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember.core import parallel
from ember.kernels.cpu import _cascade_sum as cs

DTYPES = [np.float32, np.float64]
SIZES = sorted(set(list(range(0, 301)) + [(1 << k) + d for k in range(9, 21) for d in (-1, 0, 1)]
                   + [10**5 + 3, 10**6 + 3]))
ROW_WIDTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 1000,
              4095, 4096, 4097]


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    before_t, before_e = torch.get_num_threads(), ember.get_num_threads()
    # ember's first: once numba's OpenMP pool is up, numba.set_num_threads (which ember's calls)
    # can change the count torch reports in the same process
    ember.set_num_threads(request.param)
    torch.set_num_threads(request.param)
    assert torch.get_num_threads() == request.param
    yield request.param
    ember.set_num_threads(before_e)
    torch.set_num_threads(before_t)


@pytest.fixture(params=["numpy", "jit"])
def path(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(cs, "_jit_rows", None)
        monkeypatch.setitem(cs._NB, "off", True)
    else:
        pytest.importorskip("numba")
        assert cs._jitted(1)
    return request.param


def _data(rng, shape, dtype):
    """Values of mixed magnitudes, so that most additions round."""
    n = int(np.prod(shape))
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)
    return x.astype(dtype).reshape(shape)


def _bits(a):
    a = np.ascontiguousarray(np.asarray(a))
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64)


def _same(e, t):
    e, t = np.asarray(e), t.numpy()
    return e.dtype == t.dtype and e.shape == t.shape and np.array_equal(_bits(e), _bits(t))


class _E:
    """A NumPy array with torch's sum/mean signatures, summed by the kernel."""

    def __init__(self, a):
        self.a = a

    def _axes(self, dim):
        if dim is None:
            return None
        dims = (dim,) if isinstance(dim, int) else dim
        return tuple(d % self.a.ndim for d in dims)

    def sum(self, dim=None, keepdim=False):
        r = cs.sum_array(self.a, self._axes(dim), keepdim)
        assert r is not None
        return r

    def mean(self, dim=None, keepdim=False):
        axes = self._axes(dim)
        n = self.a.size if axes is None else int(np.prod([self.a.shape[d] for d in axes]))
        s = self.sum(dim, keepdim)
        return np.true_divide(s, n, dtype=s.dtype)

    def t(self):
        return _E(self.a.T)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_full_sum_and_mean(dtype, threads, path):
    rng = np.random.default_rng(1)
    bad = []
    for n in SIZES:
        x = _data(rng, (n,), dtype)
        e, t = _E(x), torch.from_numpy(x)
        if not _same(e.sum(), t.sum()):
            bad.append(("sum", n))
        if n and not _same(e.mean(), t.mean()):
            bad.append(("mean", n))
    assert not bad


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_rows(dtype, threads, path):
    rng = np.random.default_rng(2)
    bad = []
    shapes = [(b, n) for n in ROW_WIDTHS for b in (1, 2, 3, 7)]
    shapes += [(1, 70001), (2, 40000), (3, 4, 50), (2, 3, 4, 9)]
    for shape in shapes:
        x = _data(rng, shape, dtype)
        e, t = _E(x), torch.from_numpy(x)
        for keepdim in (False, True):
            if not _same(e.sum(-1, keepdim=keepdim), t.sum(-1, keepdim=keepdim)):
                bad.append(("sum", shape, keepdim))
            if not _same(e.mean(-1, keepdim=keepdim), t.mean(-1, keepdim=keepdim)):
                bad.append(("mean", shape, keepdim))
        if len(shape) > 2 and not _same(e.sum((-2, -1)), t.sum((-2, -1))):
            bad.append(("sum trailing two", shape))
        if not _same(e.sum(tuple(range(len(shape)))), t.sum(tuple(range(len(shape))))):
            bad.append(("sum all dims", shape))
    assert not bad


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_dense_layouts(dtype, threads, path):
    rng = np.random.default_rng(3)
    bad = []
    for shape in [(3, 5), (16, 9), (300, 7), (257, 300), (40000, 2)]:
        x = _data(rng, shape, dtype)
        e, t = _E(x).t(), torch.from_numpy(x).t()       # F-contiguous
        if not _same(e.sum(), t.sum()) or not _same(e.mean(), t.mean()):
            bad.append(("transposed", shape))
        col = _E(x[:, :1].copy()), torch.from_numpy(x[:, :1].copy())
        if not _same(col[0].sum(0), col[1].sum(0)):                     # (n, 1) over dim 0
            bad.append(("column", shape))
    assert not bad


def test_other_layouts_and_dtypes_are_left_to_the_caller():
    x = np.ones((64, 33), np.float32)
    assert cs.sum_array(x[::2]) is None                  # strided
    assert cs.sum_array(x.T, (1,)) is None               # rows of an F-contiguous array
    assert cs.sum_array(x, (0,)) is None                 # not the trailing dims
    assert cs.sum_array(x.astype(np.float16)) is None
    assert cs.sum_array(x.astype(np.int64)) is None


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_zeros_nan_inf(dtype, threads, path):
    bad = []
    for n in list(range(1, 70)) + [4097, 100000]:
        x = np.full(n, -0.0, dtype)
        for arr in (x, x.reshape(1, n)):
            e, t = _E(arr), torch.from_numpy(arr)
            if not _same(e.sum(), t.sum()) or not _same(e.sum(-1), t.sum(-1)):
                bad.append(("-0.0", arr.shape))
        rng = np.random.default_rng(n)
        for special in ([np.nan], [np.inf], [-np.inf], [np.inf, -np.inf]):
            y = _data(rng, (n,), dtype)
            y[rng.choice(n, min(n, len(special)), replace=False)] = special[:n]
            e, t = _E(y), torch.from_numpy(y)
            es, ts = float(e.sum()), t.sum().item()
            if not (es == ts or (np.isnan(es) and np.isnan(ts))):
                bad.append((special, n))
    assert not bad
    e, t = _E(np.array(-0.0, np.float32)), torch.tensor(-0.0, dtype=torch.float32)
    assert _same(e.sum(), t.sum())


def test_thread_count_lives_in_core():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(3)
        assert parallel.num_threads() == 3 == ember.get_num_threads()
        with pytest.raises(RuntimeError):
            ember.set_num_threads(0)
    finally:
        ember.set_num_threads(before)


def test_short_rows_do_not_load_numba():
    code = ("import sys, numpy as np, ember\n"
            "from ember.kernels.cpu import _cascade_sum as cs\n"
            "x = np.ones(4095, np.float32)\n"
            "cs.sum_array(x); cs.sum_array(x.reshape(35, 117), (1,))\n"
            "assert 'numba' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_short_rows_in_python_floats(dtype):
    """Rows shorter than 4 vectors take Python floats while numba is not loaded: checked directly,
    whatever else the process has loaded."""
    rng = np.random.default_rng(4)
    for n in range(0, 4 * cs._LANES[np.dtype(dtype)]):
        for x in (_data(rng, (n,), dtype), np.full(n, -0.0, dtype)):
            assert _same(cs._short_sum(x, n), torch.from_numpy(x).sum()), n
