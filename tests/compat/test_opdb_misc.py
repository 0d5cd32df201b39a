"""grid_sampler_2d/3d, _native_batch_norm_legit and empty_permuted (thin compositions) against torch 2.13:
OpInfo samples (float32 values, float64 gradients), strides of empty_permuted, running-stat updates and
error texts; and the ember fixes tests/compat/opdb_samples.py found (each against torch)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, check_grads, same_error


@pytest.mark.parametrize("name", ["grid_sampler_2d", "grid_sampler_3d", "_native_batch_norm_legit"])
def test_opinfo(name):
    for op in opinfos(names={name}):
        assert run_samples(op, torch.float32, atol=1e-4, rtol=1e-4)
        assert run_samples(op, torch.float64, grad=op.supports_autograd, max_samples=8)


def test_native_batch_norm_legit_running_stats():
    t = torch.randn(4, 3, 5, dtype=torch.float64)
    e = ember.tensor(t.numpy())
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    erm, erv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    for a, b in zip(ember._native_batch_norm_legit(e, None, None, erm, erv, True, 0.1, 1e-5),
                    torch._native_batch_norm_legit(t, None, None, trm, trv, True, 0.1, 1e-5)):
        check(a, b)
    check(erm, trm)
    check(erv, trv)
    for a, b in zip(ember._native_batch_norm_legit(e, None, None, True, 0.1, 1e-5),
                    torch._native_batch_norm_legit(t, None, None, True, 0.1, 1e-5)):
        check(a, b)


def test_empty_permuted():
    # zero-size cases are left out: ember's permute of a zero-size tensor reports strides 0 (an ember view
    # metadata deviation outside this file's ops)
    for size, perm in (((2, 3, 4), (2, 0, 1)), ((2, 3), (1, 0)), ((), ())):
        e = ember.empty_permuted(size, perm, dtype=ember.float64)
        t = torch.empty_permuted(size, perm, dtype=torch.float64)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride() and e.dtype == ember.float64
    assert ember.empty_permuted((2, 3), (1, 0), requires_grad=True).requires_grad
    same_error(lambda lib: lib.empty_permuted((2, 3), (0,)))
    same_error(lambda lib: lib.empty_permuted((2, 3), (0, 0)))
    same_error(lambda lib: lib.empty_permuted((2, 3), (0, 5)))


# ---- fixes found by tests/compat/opdb_samples.py (op_db's samples run through both libraries) ----------
def _pair(shape, dtype="float64", seed=0, requires_grad=False):
    t = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(getattr(torch, dtype))
    e = ember.tensor(t.numpy() if dtype != "bfloat16" else t.float().numpy()).to(getattr(ember, dtype))
    if requires_grad:
        t.requires_grad_()
        e.requires_grad_()
    return e, t


def test_take_along_dim_wraps_indices_along_dim():
    # PyTorch's take_along_dim with a dim takes `indices % size` (negative and too-large indices wrap)
    e, t = _pair((5, 5), requires_grad=True)
    idx = [[-1], [5], [-6], [0], [2]]
    te, tt = ember.tensor(idx), torch.tensor(idx)
    check(ember.take_along_dim(e, te, 1), torch.take_along_dim(t, tt, 1))
    check(e.take_along_dim(te.expand(5, 3), -1), t.take_along_dim(tt.expand(5, 3), -1))
    check_grads(ember.take_along_dim(e, te, 1), torch.take_along_dim(t, tt, 1), (e,), (t,))
    # without a dim the flattened input is indexed: no wrapping
    same_error(lambda lib: lib.take_along_dim(lib.ones(2, 2), lib.tensor([[7]]), None))


@pytest.mark.parametrize("shape", [(0, 2), (0, 6, 3), (2, 6, 0)])
def test_group_norm_empty_batch(shape):
    e, t = _pair(shape, requires_grad=True)
    ew, tw = _pair(shape[1:2], seed=2, requires_grad=True)
    check(ember.nn.functional.group_norm(e, 2, ew), torch.nn.functional.group_norm(t, 2, tw))
    for a, b in zip(ember.native_group_norm(e, ew, None, shape[0], shape[1], shape[2] if len(shape) > 2 else 1, 2,
                                            1e-5),
                    torch.native_group_norm(t, tw, None, shape[0], shape[1], shape[2] if len(shape) > 2 else 1, 2,
                                            1e-5)):
        check(a, b)
    if shape[0]:  # (empty groups: torch's weight gradient is nan there, (ds - db * mean) * rstd; ember's is 0)
        return
    check_grads(ember.nn.functional.group_norm(e, 2, ew), torch.nn.functional.group_norm(t, 2, tw), (e, ew), (t, tw))


def test_matrix_rank_tensor_tolerances():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 5))
    a[0] = 0
    a[2] = np.eye(5) * 3
    cases = [dict(atol=[0.0, 1.0, 100.0]), dict(rtol=0.5), dict(atol=1.0, rtol=[0.0, 0.5, 0.9]),
             dict(atol=[-1.0, 0.0, 2.0]), dict(atol=2.0, rtol=None)]
    for kw in cases:
        ek = {k: ember.tensor(v, dtype=ember.float64) if v is not None else None for k, v in kw.items()}
        tk = {k: torch.tensor(v, dtype=torch.float64) if v is not None else None for k, v in kw.items()}
        check(ember.linalg.matrix_rank(ember.tensor(a), **ek), torch.linalg.matrix_rank(torch.tensor(a), **tk))
        check(ember.linalg.matrix_rank(ember.tensor(a), hermitian=True, **ek),
              torch.linalg.matrix_rank(torch.tensor(a), hermitian=True, **tk))
    for lib in (ember, torch):  # empty batches, with empty tolerance tensors
        assert lib.linalg.matrix_rank(lib.zeros(0, 5, 5), rtol=lib.zeros(0)).shape == (0,)
        assert lib.linalg.matrix_rank(lib.zeros(0, 5, 5), atol=lib.zeros(0), rtol=lib.zeros(0)).shape == (0,)
    check(ember.linalg.matrix_rank(ember.zeros(3, 0, 5), atol=ember.zeros(3)),
          torch.linalg.matrix_rank(torch.zeros(3, 0, 5), atol=torch.zeros(3)))


def test_empty_complex_views_backward():
    # imag/real of an empty complex tensor: the backward's view_as_complex of the empty gradient
    for fn in ("imag", "real"):
        e = ember.zeros(1, 0, 3, dtype=ember.complex128, requires_grad=True)
        t = torch.zeros(1, 0, 3, dtype=torch.complex128, requires_grad=True)
        ge = ember.autograd.grad(getattr(ember, fn)(e), e, ember.ones(1, 0, 3, dtype=ember.float64))[0]
        gt = torch.autograd.grad(getattr(torch, fn)(t), t, torch.ones(1, 0, 3, dtype=torch.float64))[0]
        check(ge, gt)


def test_circular_pad_empty_batch_backward():
    # the backward writes into an empty (read-only in NumPy) broadcast view: nothing to write, no error
    e, t = _pair((0, 3, 3), requires_grad=True)
    eo = ember.nn.functional.pad(e, (1, 2), mode="circular")
    to = torch.nn.functional.pad(t, (1, 2), mode="circular")
    check(eo, to)
    check_grads(eo, to, (e,), (t,))
    x = ember.zeros(0, 3)
    x.copy_(ember.ones(3).expand(0, 3))
    assert x.shape == (0, 3)


def test_sdpa_mask_gradient():
    # a float mask that requires grad: PyTorch takes the math path (not the fused CPU kernel) and the mask
    # gets its gradient
    q, tq = _pair((2, 2, 3, 8), seed=1, requires_grad=True)
    k, tk = _pair((2, 2, 6, 8), seed=2, requires_grad=True)
    v, tv = _pair((2, 2, 6, 8), seed=3, requires_grad=True)
    m, tm = _pair((3, 6), seed=4, requires_grad=True)
    eo = ember.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm)
    check(eo, to)
    check_grads(eo, to, (q, k, v, m), (tq, tk, tv, tm))


_INTERP = [((2, 3, 4, 4, 4), dict(size=(3, 5, 7), mode="nearest")),
           ((2, 3, 4, 3, 5), dict(size=(5, 4, 6), mode="nearest-exact")),
           ((2, 2, 5, 2, 3), dict(scale_factor=1.7, mode="nearest")),
           ((2, 3, 4, 4, 4), dict(size=(3, 3, 3), mode="area")),
           ((2, 3, 4, 3, 5), dict(size=(5, 4, 6), mode="trilinear", align_corners=True)),
           ((2, 3, 4, 3, 5), dict(scale_factor=(1.5, 0.7, 2.0), mode="trilinear")),
           ((2, 3, 4, 5), dict(size=(3, 7), mode="bicubic", align_corners=True)),
           ((2, 3, 4, 5), dict(size=(6, 3), mode="bicubic")),
           ((1, 2, 4, 4), dict(scale_factor=1.7, mode="bicubic", recompute_scale_factor=False)),
           ((1, 2, 3, 3), dict(scale_factor=(0.6, 2.5), mode="bicubic"))]


@pytest.mark.parametrize("shape,kw", _INTERP)
def test_interpolate_5d_and_bicubic(shape, kw):
    e32, t32 = _pair(shape, "float32")
    check(ember.nn.functional.interpolate(e32, **kw), torch.nn.functional.interpolate(t32, **kw))
    e, t = _pair(shape, requires_grad=True)
    eo, to = ember.nn.functional.interpolate(e, **kw), torch.nn.functional.interpolate(t, **kw)
    check(eo, to)
    check_grads(eo, to, (e,), (t,))


def test_sparse_mm_reduce():
    a = np.random.default_rng(0).standard_normal((5, 5))
    a[a < 0.3] = 0
    a[2] = 0  # a row with no stored entries gives zeros
    b = np.random.default_rng(1).standard_normal((5, 3))
    for reduce in ("sum", "mean", "amax", "amin"):
        check(ember.sparse.mm(ember.tensor(a).to_sparse_csr(), ember.tensor(b), reduce),
              torch.sparse.mm(torch.tensor(a).to_sparse_csr(), torch.tensor(b), reduce))
    eb = ember.tensor(b, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    check_grads(ember.sparse.mm(ember.tensor(a).to_sparse_csr(), eb, "mean"),
           torch.sparse.mm(torch.tensor(a).to_sparse_csr(), tb, "mean"), (eb,), (tb,))
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="prod has not been enabled"):
            lib.sparse.mm(lib.tensor(a).to_sparse_csr(), lib.tensor(b), "prod")
        with pytest.raises(RuntimeError, match="reduce argument must be"):
            lib.sparse.mm(lib.tensor(a).to_sparse_csr(), lib.tensor(b), "foo")
    for alias, name in (("max", "amax"), ("min", "amin")):  # accepted, as amax and amin
        check(ember.sparse.mm(ember.tensor(a).to_sparse_csr(), ember.tensor(b), alias),
              torch.sparse.mm(torch.tensor(a).to_sparse_csr(), torch.tensor(b), name))


@pytest.mark.parametrize("name", ["take_along_dim", "native_group_norm", "nn.functional.group_norm",
                                  "linalg.matrix_rank", "imag", "nn.functional.pad",
                                  "nn.functional.scaled_dot_product_attention", "nn.functional.interpolate",
                                  "nn.functional.upsample_nearest", "sparse.mm"])
def test_opinfo_samples_fixed(name):
    """The OpInfos these fixes were found with: float32 values (float64 gradients for the differentiable
    ones whose inputs the helper mirrors)."""
    for op in opinfos(names={name}):
        if name == "sparse.mm" or name == "nn.functional.scaled_dot_product_attention":
            continue  # CSR samples and dropout samples: covered by the direct tests above
        dt = torch.float32 if torch.float32 in op.supported_dtypes("cpu") else torch.complex64
        assert run_samples(op, dt, max_samples=60)
        if op.supports_autograd and name not in ("native_group_norm", "linalg.matrix_rank"):
            gdt = torch.float64 if dt == torch.float32 else torch.complex128
            assert run_samples(op, gdt, grad=True, max_samples=60)


@pytest.mark.parametrize("driver", ["gels", "gelsd", "gelss", "gelsy"])
def test_lstsq_residuals_differentiable(driver):
    # residuals are differentiable in PyTorch: a real gradient for tall full-rank systems (gels/gelsd/gelss),
    # an empty tensor that still requires grad otherwise
    a = np.random.default_rng(0).standard_normal((2, 5, 3))
    b = np.random.default_rng(1).standard_normal((2, 5, 2))
    e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    eb, tb = ember.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    er, tr = ember.linalg.lstsq(e, eb, driver=driver), torch.linalg.lstsq(t, tb, driver=driver)
    check(er.residuals, tr.residuals)
    assert er.residuals.requires_grad == tr.residuals.requires_grad
    if tr.residuals.numel():
        check_grads(er.residuals, tr.residuals, (e, eb), (t, tb))
    er, tr = ember.linalg.lstsq(e, eb, driver=driver), torch.linalg.lstsq(t, tb, driver=driver)
    check_grads(er.solution, tr.solution, (e, eb), (t, tb))


@pytest.mark.parametrize("name", ["hermite_polynomial_h", "hermite_polynomial_he"])
def test_hermite_float32_matches_fused_recurrence(name):
    # ATen's vectorised kernels fuse the recurrence's multiply-add (one rounding): ember's float32 values
    # equal torch's at the default tolerances (op_db's hermite_polynomial_he sample 4 did not before)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal(20000).astype(np.float32) * 3)
    n = torch.from_numpy(np.random.default_rng(1).integers(0, 12, 20000).astype(np.float32))
    check(getattr(ember.special, name)(ember.tensor(x.numpy()), ember.tensor(n.numpy())),
          getattr(torch.special, name)(x, n))


def test_householder_product_no_reflectors_requires_grad():
    # k = 0 reflectors: the identity's first n columns, recorded with its inputs as in PyTorch
    for shape in ((5, 5), (2, 4, 3), (0, 0)):
        a = np.random.default_rng(0).standard_normal(shape)
        e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        et = ember.zeros(shape[:-2] + (0,), dtype=ember.float64, requires_grad=True)
        tt = torch.zeros(shape[:-2] + (0,), dtype=torch.float64, requires_grad=True)
        eq, tq = ember.linalg.householder_product(e, et), torch.linalg.householder_product(t, tt)
        check(eq, tq)
        assert eq.requires_grad and tq.requires_grad
        check_grads(eq, tq, (e, et), (t, tt))


def test_native_group_norm_mean_rstd_differentiable():
    # all three outputs are differentiable in PyTorch: the mean's and rstd's cotangents reach the input
    # (infinitely_differentiable_native_group_norm_backward), and forward AD gives their tangents
    e, t = _pair((2, 6, 3), requires_grad=True)
    ew, tw = _pair((6,), seed=2, requires_grad=True)
    eo, to = ember.native_group_norm(e, ew, None, 2, 6, 3, 2, 1e-5), torch.native_group_norm(t, tw, None, 2, 6, 3, 2, 1e-5)
    assert [o.requires_grad for o in eo] == [o.requires_grad for o in to] == [True, True, True]
    gs = [torch.from_numpy(np.random.default_rng(i).standard_normal(tuple(o.shape))) for i, o in enumerate(to)]
    tg = torch.autograd.grad(to, (t, tw), gs)
    eg = ember.autograd.grad(eo, (e, ew), [ember.tensor(g.numpy()) for g in gs])
    for a, b in zip(eg, tg):
        check(a, b)
    import ember.autograd.forward_ad as efa
    import torch.autograd.forward_ad as tfa
    tangent = np.random.default_rng(5).standard_normal((2, 6, 3))
    outs = []
    for lib, fa in ((ember, efa), (torch, tfa)):
        with fa.dual_level():
            d = fa.make_dual(lib.tensor(e.detach().numpy()), lib.tensor(tangent))
            outs.append([fa.unpack_dual(o).tangent for o in lib.native_group_norm(d, None, None, 2, 6, 3, 2, 1e-5)])
    for a, b in zip(*outs):
        check(a, b)


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_empty_batch(nd):
    shape = (0, 1, 4, 5, 4)[:2 + nd]
    e, t = _pair(shape, requires_grad=True)
    fn = f"fractional_max_pool{nd}d"
    eo = getattr(ember.nn.functional, fn)(e, 2, output_size=2, return_indices=True)
    to = getattr(torch.nn.functional, fn)(t, 2, output_size=2, return_indices=True)
    for a, b in zip(eo, to):
        check(a, b)
    check_grads(eo[0], to[0], (e,), (t,))


def test_csr_values_backward_and_sparse_mm_reduce_gradient():
    # ValuesBackward0 of a CSR tensor builds a CSR gradient with its compressed indices (it asked a CSR
    # tensor for COO indices); sparse.mm's reduce= then differentiates for the sparse operand too
    a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    b = np.random.default_rng(0).standard_normal((3, 2))
    for reduce in ("sum", "mean", "amax", "amin"):
        ea = ember.tensor(a).to_sparse_csr().requires_grad_()
        ta = torch.tensor(a).to_sparse_csr().requires_grad_()
        eb, tb = ember.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
        eo, to = ember.sparse.mm(ea, eb, reduce), torch.sparse.mm(ta, tb, reduce)
        g = np.random.default_rng(1).standard_normal((3, 2))
        eg = ember.autograd.grad(eo, (ea, eb), ember.tensor(g))
        tg = torch.autograd.grad(to, (ta, tb), torch.tensor(g))
        assert eg[0].layout == ember.sparse_csr
        check(eg[0].to_dense(), tg[0].to_dense())
        check(eg[1], tg[1])
    ea = ember.tensor(a).to_sparse_csr().requires_grad_()
    ta = torch.tensor(a).to_sparse_csr().requires_grad_()
    ge = ember.autograd.grad(ea.values().sum() * 2, ea)[0]
    gt = torch.autograd.grad(ta.values().sum() * 2, ta)[0]
    check(ge.crow_indices(), gt.crow_indices())
    check(ge.to_dense(), gt.to_dense())


def test_istft_full_spectrum_real_output_and_complex_window():
    # onesided=False with a real result: PyTorch inverts the first n_fft // 2 + 1 frequencies with irfft
    # (not the real part of ifft); a complex window makes the overlap-added envelope complex
    rng = np.random.default_rng(0)
    spec = rng.standard_normal((10, 6)) + 1j * rng.standard_normal((10, 6))
    win = rng.uniform(0.5, 1.5, 10) + 1j * rng.uniform(0.5, 1.5, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(ember.istft(ember.tensor(spec), 10), torch.istft(torch.tensor(spec), 10))
        check(ember.istft(ember.tensor(spec), 10, onesided=False), torch.istft(torch.tensor(spec), 10, onesided=False))
        check(ember.istft(ember.tensor(spec), 10, window=ember.tensor(win), return_complex=True),
              torch.istft(torch.tensor(spec), 10, window=torch.tensor(win), return_complex=True))


def test_interpolate_bicubic_errors():
    same_error(lambda lib: lib.nn.functional.interpolate(lib.ones(1, 1, 2, 2, dtype=lib.int64), size=(3, 3),
                                                         mode="bicubic"))
    same_error(lambda lib: lib.nn.functional.interpolate(lib.ones(1, 1, 0, 2), size=(3, 3), mode="bicubic"))
