"""torch.fft: values, dtypes, gradients, out=, helpers and errors against torch."""
import numpy as np
import pytest
import torch

import ember
from tests.harness import check, make_pair, np_data, pair_from, same_error

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = [f + "2" for f in ONE_D]
N_D = [f + "n" for f in ONE_D]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
NORMS = [None, "backward", "ortho", "forward"]
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10}


def _dtypes(name):
    return ["float32", "float64"] if name in REAL_ONLY else ["float32", "float64", "complex64", "complex128"]


def _check(e, t, dtype, scale=1.0):
    tol = TOL[dtype] * scale
    check(e, t, atol=tol, rtol=tol)


def _both(name, e, t, **kw):
    return getattr(ember.fft, name)(e, **kw), getattr(torch.fft, name)(t, **kw)


@pytest.mark.parametrize("name", ONE_D)
def test_one_dim_values(name, rng):
    for dtype in _dtypes(name):
        for shape, layout in (((7,), "contiguous"), ((3, 8), "transposed"), ((4, 5), "strided")):
            e, t = make_pair(shape, dtype, rng, layout)
            for norm in NORMS:
                _check(*_both(name, e, t, norm=norm), dtype)
            for kw in ({"n": 3}, {"n": 11}, {"n": 6, "dim": 0, "norm": "ortho"}, {"dim": -2}):
                if len(shape) > 1 or kw.get("dim", -1) == -1:
                    _check(*_both(name, e, t, **kw), dtype)


@pytest.mark.parametrize("name", TWO_D + N_D)
def test_multi_dim_values(name, rng):
    for dtype in _dtypes(name):
        e, t = make_pair((3, 4, 6), dtype, rng, "transposed")
        for norm in NORMS:
            _check(*_both(name, e, t, norm=norm), dtype, 10)
        cases = [{"s": (5, 3)}, {"s": (2, -1), "dim": (2, 0)}, {"dim": (0, 2), "norm": "forward"}]
        if name.endswith("n"):
            cases += [{"dim": (1,)}, {"s": (4, 2, 9), "norm": "ortho"}, {"s": (5,)}]
        for kw in cases:
            _check(*_both(name, e, t, **kw), dtype, 10)


def test_float32_rounding():
    # torch transforms complex64 in single precision (MKL): hfftn's c2c over the leading dims then
    # c2r carries those roundings into values near zero, which float64-then-round misses by more than
    # the float32 tolerance; default tolerances here
    for seed in range(4):
        g = np.random.default_rng(seed)
        x = g.uniform(-9, 9, (5, 6, 7)).astype(np.float32)
        e, t = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
        check(ember.fft.hfft2(e, dim=(-3, -2, -1)), torch.fft.hfft2(t, dim=(-3, -2, -1)))
        check(ember.fft.hfftn(e), torch.fft.hfftn(t))
        z = (g.uniform(-9, 9, (3, 10, 12, 15)) + 1j * g.uniform(-9, 9, (3, 10, 12, 15))).astype(np.complex64)
        ez, tz = ember.from_numpy(z.copy()), torch.from_numpy(z.copy())
        for norm in NORMS:
            check(ember.fft.fftn(ez, norm=norm), torch.fft.fftn(tz, norm=norm))
            check(ember.fft.ifftn(ez, dim=(0, 2), norm=norm), torch.fft.ifftn(tz, dim=(0, 2), norm=norm))
        for n in range(1, 17):
            w = z[..., :n]
            check(ember.fft.fft(ember.from_numpy(w.copy())), torch.fft.fft(torch.from_numpy(w.copy())))
            check(ember.fft.ifft(ember.from_numpy(w.copy()), dim=1, norm="ortho"),
                  torch.fft.ifft(torch.from_numpy(w.copy()), dim=1, norm="ortho"))


@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "irfft", "rfftn", "hfft"])
def test_integer_and_bool_inputs_promote(name):
    for data in ([1, 2, 3, 4], [True, False, True, True]):
        e, t = ember.tensor(data), torch.tensor(data)
        check(*_both(name, e, t), atol=1e-5, rtol=1e-5)


def test_zero_dim_and_empty_batch():
    e, t = pair_from(np.float32(2.5), "float32")
    check(ember.fft.fftn(e), torch.fft.fftn(t))
    # torch's MKL build refuses an empty batch; pocketfft (torch's other CPU backend) returns it empty
    r = ember.fft.fft(ember.zeros(3, 0), dim=0)
    assert (tuple(r.shape), r.dtype) == ((3, 0), ember.complex64)


def test_meta_device():
    x = ember.empty(3, 8, device="meta")
    for name, kw, shape, dtype in (("fft", {}, (3, 8), ember.complex64), ("rfft", {"n": 5}, (3, 3), ember.complex64),
                                   ("irfftn", {}, (3, 14), ember.float32), ("hfft", {"n": 9}, (3, 9), ember.float32)):
        r = getattr(ember.fft, name)(x, **kw)
        assert (tuple(r.shape), r.dtype, r.device.type) == (shape, dtype, "meta")


def test_private_ops():
    e, t = make_pair((4, 6), "float64", rng=np.random.default_rng(1))
    check(ember._fft_r2c(e, [0, 1], 2, False), torch._fft_r2c(t, [0, 1], 2, False))
    c = ember._fft_r2c(e, [1], 1, True)
    tc = torch._fft_r2c(t, [1], 1, True)
    check(ember._fft_c2r(c, [1], 1, 6), torch._fft_c2r(tc, [1], 1, 6))
    check(ember._fft_c2c(c, [0], 0, False), torch._fft_c2c(tc, [0], 0, False))


# ---- out= ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,dtype,out_dtype", [("fft", "float32", "complex64"), ("ifft", "complex64", "complex128"),
                                                  ("irfft", "complex64", "float32"), ("rfftn", "float64", "complex128"),
                                                  ("ihfft2", "float32", "complex64"), ("hfftn", "complex128", "float64")])
def test_out(name, dtype, out_dtype, rng):
    e, t = make_pair((3, 4), dtype, rng)
    eo, to = ember.empty(0, dtype=getattr(ember, out_dtype)), torch.empty(0, dtype=getattr(torch, out_dtype))
    er = getattr(ember.fft, name)(e, out=eo)
    tr = getattr(torch.fft, name)(t, out=to)
    assert er is eo
    _check(eo, to, dtype)
    _check(er, tr, dtype)


def test_out_resize_warns():
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        ember.fft.rfft(ember.ones(6), out=ember.empty(2, dtype=ember.complex64))


@pytest.mark.parametrize("name,out_dtype", [("fft", "float32"), ("rfft", "float32"), ("ihfft", "float32"),
                                            ("fftn", "float32"), ("irfft", "complex64"), ("hfftn", "complex64"),
                                            ("ihfftn", "float32"), ("rfftn", "float32")])
def test_out_dtype_errors(name, out_dtype):
    same_error(lambda L: getattr(L.fft, name)(L.ones(3, 4), out=L.empty(0, dtype=getattr(L, out_dtype))))


# ---- gradients ---------------------------------------------------------------------------------------
GRAD_CASES = [("fft", {}), ("fft", {"n": 9, "norm": "ortho"}), ("ifft", {"n": 4}), ("rfft", {}), ("rfft", {"n": 9}),
              ("rfft", {"n": 4, "norm": "forward"}), ("irfft", {}), ("irfft", {"n": 7}), ("irfft", {"n": 12}),
              ("fft2", {"s": (5, 3)}), ("rfftn", {}), ("rfftn", {"s": (2, 7), "norm": "ortho"}), ("hfft", {}),
              ("hfft", {"n": 9}), ("ihfft", {}), ("ihfft", {"n": 7, "norm": "ortho"}), ("ihfftn", {}),
              ("hfft2", {"s": (3, 8)}), ("irfftn", {"norm": "forward"})]


def _loss(lib, r, w):
    return ((r.abs() if r.is_complex() else r) * w).sum()


@pytest.mark.parametrize("name,kw", GRAD_CASES)
def test_gradients(name, kw, rng):
    for dtype in _dtypes(name)[::2]:  # float32 and complex64 (or float64 for the real-only ones)
        e, t = make_pair((3, 6), dtype, rng)
        e.requires_grad_()
        t.requires_grad_()
        er, tr = _both(name, e, t, **kw)
        w = np_data(tuple(tr.shape), "float32", rng)
        _loss(ember, er, ember.from_numpy(w)).backward()
        _loss(torch, tr, torch.from_numpy(w)).backward()
        _check(e.grad, t.grad, dtype, 100)


@pytest.mark.parametrize("name,nodes", [("fft", ["FftR2CBackward0"]), ("rfft2", ["FftR2CBackward0"]),
                                        ("irfft", ["FftC2RBackward0", "ToCopyBackward0"]),
                                        ("ihfft2", ["FftC2CBackward0", "ConjPhysicalBackward0", "FftR2CBackward0"])])
def test_graph_nodes(name, nodes):
    x = ember.ones(4, 5, requires_grad=True)
    fn, seen = getattr(ember.fft, name)(x).grad_fn, []
    while fn is not None and fn.next_functions:
        seen.append(fn.name())
        fn = fn.next_functions[0][0]
    assert seen == nodes


@pytest.mark.parametrize("name,kw,dtype", [("fft", {"n": 5}, "complex128"), ("rfft", {"norm": "ortho"}, "float64"),
                                           ("irfft", {"n": 7}, "complex128"), ("hfft", {}, "complex128"),
                                           ("ihfftn", {}, "float64"), ("fftn", {"s": (3, 2)}, "float64")])
def test_gradcheck(name, kw, dtype, rng):
    # complex inputs and outputs through their real views: gradcheck of the real function torch checks
    complex_in = dtype == "complex128"
    x = ember.from_numpy(np_data((3, 4) + ((2,) if complex_in else ()), "float64", rng)).requires_grad_()

    def fn(v):
        r = getattr(ember.fft, name)(ember.view_as_complex(v) if complex_in else v, **kw)
        return ember.view_as_real(r) if r.is_complex() else r
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


# ---- helpers -----------------------------------------------------------------------------------------
def test_fftfreq():
    for n, d in ((1, 1.0), (5, 1.0), (8, 0.25), (0, 1.0), (4, 0.0)):
        check(ember.fft.fftfreq(n, d), torch.fft.fftfreq(n, d))
        check(ember.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d))
    check(ember.fft.fftfreq(7, 0.1, dtype=ember.float64), torch.fft.fftfreq(7, 0.1, dtype=torch.float64))
    r = ember.fft.rfftfreq(6, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    for name in ("fftfreq", "rfftfreq"):
        # the .out overloads (the public out= keyword of factories lives in ember/_python_api)
        eo, to = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
        assert getattr(ember.ops.aten, "fft_" + name).out(9, 2.0, out=eo) is eo
        getattr(torch.fft, name)(9, 2.0, out=to)
        check(eo, to)
        same_error(lambda L: getattr(L.fft, name)(4, dtype=L.int64))
        same_error(lambda L: getattr(L.ops.aten, "fft_" + name).out(4, out=L.empty(0, dtype=L.int32)))
    same_error(lambda L: L.fft.fftfreq(4, dtype=L.complex64))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, rng):
    e, t = make_pair((4, 5, 3), "float32", rng)
    for kw in ({}, {"dim": 1}, {"dim": (0, -1)}):
        check(*_both(name, e, t, **kw))
    f = ember.fft.fftfreq(7)
    check(getattr(ember.fft, name)(f), getattr(torch.fft, name)(torch.fft.fftfreq(7)))
    same_error(lambda L: getattr(L.fft, name)(L.ones(3), dim=2))


# ---- bad input ---------------------------------------------------------------------------------------
BAD = [
    lambda L: L.fft.fft(L.ones(4), norm="bad"),
    lambda L: L.fft.rfftn(L.ones(4, 4), norm="Ortho"),
    lambda L: L.fft.fft(L.ones(4), n=0),
    lambda L: L.fft.irfft(L.ones(1)),
    lambda L: L.fft.hfft(L.ones(3), n=-2),
    lambda L: L.fft.fft(L.ones(4), dim=1),
    lambda L: L.fft.fft2(L.ones(4)),
    lambda L: L.fft.fft(L.tensor(1.0)),
    lambda L: L.fft.fftn(L.ones(3, 3), dim=(0, -2)),
    lambda L: L.fft.fftn(L.ones(3, 3), s=(2,), dim=(0, 1)),
    lambda L: L.fft.rfftn(L.ones(3, 3), s=(2, 2, 2)),
    lambda L: L.fft.ifftn(L.ones(3, 3), s=(0, 2)),
    lambda L: L.fft.rfftn(L.ones(3), dim=()),
    lambda L: L.fft.irfftn(L.ones(3), dim=()),
    lambda L: L.fft.rfft(L.ones(3, dtype=L.complex64)),
    lambda L: L.fft.ihfft(L.ones(3, dtype=L.complex64)),
    lambda L: L.fft.rfft2(L.ones(3, 3, dtype=L.complex64)),
    lambda L: L.fft.ihfft2(L.ones(3, 3, dtype=L.complex64)),
    lambda L: L.fft.fft(L.ones(3, dtype=L.float16)),
    lambda L: L.fft.irfft(L.ones(3, dtype=L.float16)),
    lambda L: L.fft.fftn(L.ones(3, dtype=L.bfloat16)),
    lambda L: L._fft_c2c(L.ones(3), [0], 0, True),
    lambda L: L._fft_r2c(L.ones(3, dtype=L.complex64), [0], 0, True),
    lambda L: L._fft_c2r(L.ones(3), [0], 0, 4),
    lambda L: L.fft.fftshift(L.tensor(1.0)),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input(i):
    same_error(BAD[i])
