"""Gradients of reductions, statistics, norms, softmax, scans and sorting/selection against torch
(first and second order), node names, gradcheck / gradgradcheck, and PyTorch's special cases:
ties split evenly (max(), amax, median()), zeros in prod / cumprod, the subgradient 0 of norms
at 0, NaN/inf gradients of var/std without degrees of freedom."""
import numpy as np
import pytest
import torch
from autograd_harness import compare_grads
from harness import check, make_pair, pair_from

import ember


def _works(fn):
    try:
        return bool(fn())
    except Exception:
        return False


def _diff(f):
    """Whether f(x) records a node (the op another family owns has its derivative yet)."""
    return _works(lambda: f(ember.ones(2, 3, dtype=ember.float64, requires_grad=True)).grad_fn
                  is not None)


_I = ember.zeros(1, 3, dtype=ember.int64)
HAVE = {
    "flip": _diff(lambda x: x.flip(0)),
    "cat": _diff(lambda x: ember.cat([x, x])),
    "expand": _diff(lambda x: x.expand(2, 2, 3)),
    "scatter": _diff(lambda x: ember.zeros(2, 3, dtype=x.dtype).scatter(0, _I, x[:1])),
    "scatter_add": _diff(lambda x: ember.zeros(2, 3, dtype=x.dtype).scatter_add(0, _I, x[:1])),
    "div": _diff(lambda x: x / 3),
    "pow": _diff(lambda x: x.pow(2.5)),
    "exp": _diff(lambda x: x.exp()),
    "log": _diff(lambda x: x.log()),
    "abs": _diff(lambda x: x.abs()),
    "sgn": _diff(lambda x: x.sgn()),
    "where": _diff(lambda x: ember.where(x > 0, x, 0.0)),
    "masked_fill": _diff(lambda x: x.masked_fill(x > 0, 0)),
    "unsqueeze": _diff(lambda x: x.unsqueeze(0)),
    "narrow": _diff(lambda x: x.narrow(0, 0, 1)),
    "to": _diff(lambda x: x.to(ember.float32)),
}
HAVE_CONJ = hasattr(ember.Tensor, "conj")


def second(deps):
    return all(HAVE[d] for d in deps)


SEL = ("scatter", "unsqueeze")        # value_selecting_reduction_backward
SCAN = ("flip",)                      # reversed cumsum


# name -> (fn(lib, x), data range, ops the second-order graph needs from other families)
CASES = {
    "sum": (lambda L, x: x.sum(), None, ("expand",)),
    "sum_dim": (lambda L, x: L.sum(x, 1), None, ("expand", "unsqueeze")),
    "sum_dims_keepdim": (lambda L, x: x.sum((0, -1), keepdim=True), None, ("expand",)),
    "sum_dtype": (lambda L, x: x.sum(-1, dtype=L.float64), None, ("expand", "unsqueeze", "to")),
    "sum_empty_dims": (lambda L, x: x.sum([]), None, ("expand",)),
    "nansum": (lambda L, x: x.nansum(), None, ("expand",)),
    "nansum_dim": (lambda L, x: L.nansum(x, 0, keepdim=True), None, ("expand",)),
    "mean": (lambda L, x: x.mean(), None, ("expand", "div")),
    "mean_dim": (lambda L, x: x.mean(-1), None, ("expand", "div", "unsqueeze")),
    "mean_keepdim": (lambda L, x: L.mean(x, (0, 1), True), None, ("expand", "div")),
    "nanmean": (lambda L, x: x.nanmean(), None, ("expand", "div")),
    "nanmean_dim": (lambda L, x: L.nanmean(x, 1), None, ("expand", "div", "unsqueeze")),
    "prod": (lambda L, x: x.prod(), (0.5, 1.5), ("div",)),
    "prod_dim": (lambda L, x: x.prod(1), (0.5, 1.5), ("div", "unsqueeze")),
    "prod_keepdim": (lambda L, x: L.prod(x, 0, True), (-1.5, -0.5), ("div",)),
    "max": (lambda L, x: x.max(), None, ("masked_fill", "div")),
    "max_dim": (lambda L, x: L.max(x, 1), None, SEL),
    "max_dim_keepdim": (lambda L, x: x.max(0, keepdim=True), None, SEL),
    "min": (lambda L, x: L.min(x), None, ("masked_fill", "div")),
    "min_dim": (lambda L, x: x.min(-1), None, SEL),
    "amax": (lambda L, x: x.amax(), None, ("div",)),
    "amax_dim": (lambda L, x: L.amax(x, 1), None, ("div", "unsqueeze")),
    "amin": (lambda L, x: x.amin((0, 1), True), None, ("div",)),
    "aminmax": (lambda L, x: L.aminmax(x), None, ("div",)),
    "aminmax_dim": (lambda L, x: x.aminmax(dim=1), None, ("div", "unsqueeze")),
    "var": (lambda L, x: x.var(), None, ()),
    "var_unbiased": (lambda L, x: L.var(x, False), None, ()),
    "var_dim": (lambda L, x: x.var(1), None, ("unsqueeze",)),
    "var_dim_unbiased": (lambda L, x: L.var(x, 0, False, True), None, ()),
    "var_correction": (lambda L, x: x.var(dim=(0, 1), correction=2, keepdim=True), None, ()),
    "std": (lambda L, x: x.std(), None, ("div", "masked_fill")),
    "std_dim": (lambda L, x: L.std(x, -1, keepdim=True), None, ("div", "masked_fill")),
    "std_correction": (lambda L, x: x.std(dim=0, correction=0), None,
                       ("div", "masked_fill", "unsqueeze")),
    "var_mean": (lambda L, x: L.var_mean(x), None, ("expand", "div")),
    "var_mean_dim": (lambda L, x: L.var_mean(x, 1, keepdim=True), None, ("expand", "div")),
    "std_mean": (lambda L, x: L.std_mean(x, 0, correction=0), None,
                 ("expand", "div", "masked_fill", "unsqueeze")),
    "norm": (lambda L, x: x.norm(), None, ("div", "masked_fill")),
    "norm_dim": (lambda L, x: L.norm(x, 2, 1), None, ("div", "masked_fill", "unsqueeze")),
    "norm3": (lambda L, x: x.norm(3), None, ("div", "masked_fill", "pow", "abs")),
    "norm1_5": (lambda L, x: L.linalg.vector_norm(x, 1.5, 0, True), None,
                ("div", "masked_fill", "pow", "abs", "sgn")),
    "norm0_5": (lambda L, x: L.linalg.vector_norm(x, 0.5), None, ("masked_fill", "pow", "abs", "sgn")),
    "norm_neg": (lambda L, x: L.linalg.vector_norm(x, -2, 1), None,
                 ("masked_fill", "pow", "abs", "sgn", "unsqueeze")),
    "norm_dtype": (lambda L, x: L.linalg.vector_norm(x, dtype=L.float64), None,
                   ("div", "masked_fill", "to")),
    "logsumexp": (lambda L, x: x.logsumexp(1), None, ("exp", "unsqueeze")),
    "logsumexp_all": (lambda L, x: L.logsumexp(x, (0, 1), True), None, ("exp",)),
    "softmax": (lambda L, x: x.softmax(1), None, ()),
    "softmax_dtype": (lambda L, x: L.softmax(x, 0, dtype=L.float64), None, ("to",)),
    "log_softmax": (lambda L, x: x.log_softmax(-1), None, ("exp",)),
    "_softmax": (lambda L, x: L._softmax(x, 0, False), None, ()),
    "_log_softmax": (lambda L, x: L._log_softmax(x, 1, False), None, ("exp",)),
    "special_softmax": (lambda L, x: L.special.softmax(x, 1), None, ()),
    "special_log_softmax": (lambda L, x: L.special.log_softmax(x, 0), None, ("exp",)),
    "cumsum": (lambda L, x: x.cumsum(1), None, SCAN),
    "cumsum0": (lambda L, x: L.cumsum(x, 0, dtype=L.float64), None, SCAN + ("to",)),
    "cumprod": (lambda L, x: x.cumprod(1), (0.5, 1.5), SCAN + ("div",)),
    "cumprod_neg": (lambda L, x: L.cumprod(x, 0), (-1.5, -0.5), SCAN + ("div",)),
    "cummax": (lambda L, x: x.cummax(1), None, ("scatter_add",)),
    "cummin": (lambda L, x: L.cummin(x, 0), None, ("scatter_add",)),
    "logcumsumexp": (lambda L, x: x.logcumsumexp(1), None,
                     SCAN + ("where", "log", "abs", "exp")),
    "sort": (lambda L, x: x.sort(), None, SEL),
    "sort_desc": (lambda L, x: L.sort(x, 0, True), None, SEL),
    "sort_stable": (lambda L, x: x.sort(stable=True, dim=0), None, SEL),
    "msort": (lambda L, x: L.msort(x), None, SEL),
    "topk": (lambda L, x: x.topk(2), None, SEL),
    "topk_smallest": (lambda L, x: L.topk(x, 2, 0, False, True), None, SEL),
    "kthvalue": (lambda L, x: x.kthvalue(2, 1), None, SEL),
    "kthvalue_keepdim": (lambda L, x: L.kthvalue(x, 3, 0, True), None, SEL),
    "median": (lambda L, x: x.median(), None, ("masked_fill", "div")),
    "median_dim": (lambda L, x: L.median(x, 1), None, SEL),
    "nanmedian": (lambda L, x: x.nanmedian(), None, ("masked_fill", "div")),
    "nanmedian_dim": (lambda L, x: L.nanmedian(x, 0, True), None, SEL),
    "mode": (lambda L, x: x.mode(1), None, SEL),
}


def _data(case, shape, dtype, rng, layout="contiguous"):
    lo, hi = CASES[case][1] or (-2.0, 2.0)
    return make_pair(shape, dtype, rng, layout, low=lo, high=hi)


def _tol(dtype):
    return {"atol": 1e-4, "rtol": 1e-4} if dtype == "float32" else {}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_grads(name, dtype, rng):
    fn, _, deps = CASES[name]
    so = second(deps)
    for shape, layout in [((3, 4), "contiguous"), ((4, 5), "transposed")]:
        e, t = _data(name, shape, dtype, rng, layout)
        compare_grads(fn, [e], [t], second_order=so, **_tol(dtype))


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_fn_names(name, rng):
    fn = CASES[name][0]
    e, t = _data(name, (3, 4), "float64", rng)
    eo = fn(ember, e.requires_grad_())
    to = fn(torch, t.requires_grad_())
    eo = eo[0] if isinstance(eo, tuple) else eo
    to = to[0] if isinstance(to, tuple) else to
    expected = "NanmeanBackward0" if name.startswith("nanmean") else to.grad_fn.name()  # torch: DivBackward0
    assert eo.grad_fn.name() == expected


# ---- 0-d, zero-size, strided and broadcast inputs ----------------------------------------------------
ZERO_D = {
    "sum": lambda L, x: x.sum(), "sum_dim": lambda L, x: x.sum(0), "mean_dim": lambda L, x: x.mean(-1, True),
    "nansum": lambda L, x: x.nansum(0), "prod": lambda L, x: x.prod(), "prod_dim": lambda L, x: x.prod(0),
    "max": lambda L, x: x.max(), "max_dim": lambda L, x: x.max(0), "amax_dim": lambda L, x: x.amax(0),
    "aminmax": lambda L, x: x.aminmax(), "var_dim": lambda L, x: x.var(0, False),
    "std": lambda L, x: x.std(correction=0), "norm": lambda L, x: x.norm(),
    "norm_dim": lambda L, x: L.linalg.vector_norm(x, 3, 0), "logsumexp": lambda L, x: x.logsumexp(0),
    "softmax": lambda L, x: x.softmax(0), "log_softmax": lambda L, x: x.log_softmax(-1),
    "cumsum": lambda L, x: x.cumsum(0), "cumprod": lambda L, x: x.cumprod(0),
    "cummax": lambda L, x: x.cummax(0), "logcumsumexp": lambda L, x: x.logcumsumexp(0),
    "sort": lambda L, x: x.sort(), "msort": lambda L, x: x.msort(), "topk": lambda L, x: x.topk(1),
    "kthvalue": lambda L, x: x.kthvalue(1), "median": lambda L, x: x.median(),
    "median_dim": lambda L, x: x.median(0), "mode": lambda L, x: x.mode(),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_zero_dim_inputs(name):
    for v in (0.75, -1.5):
        e, t = ember.tensor(v, dtype=ember.float64), torch.tensor(v, dtype=torch.float64)
        compare_grads(ZERO_D[name], [e], [t], second_order=second(("div", "scatter", "masked_fill")))


EMPTY = {
    "sum": lambda L, x: x.sum(), "sum_dim": lambda L, x: x.sum(0), "mean_dim": lambda L, x: x.mean(1),
    "prod": lambda L, x: x.prod(), "prod_dim": lambda L, x: x.prod(0), "nansum": lambda L, x: x.nansum(1),
    "norm": lambda L, x: x.norm(), "norm_dim": lambda L, x: L.linalg.vector_norm(x, 3, 1),
    "logsumexp": lambda L, x: x.logsumexp(0), "softmax": lambda L, x: x.softmax(1),
    "cumsum": lambda L, x: x.cumsum(0), "cumprod": lambda L, x: x.cumprod(1),
    "cummax": lambda L, x: x.cummax(0), "logcumsumexp": lambda L, x: x.logcumsumexp(1),
    "sort": lambda L, x: x.sort(0), "amax": lambda L, x: x.amax(1), "var": lambda L, x: x.var(0),
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_zero_size_inputs(name, rng):
    e, t = make_pair((0, 3), "float64", rng)
    compare_grads(EMPTY[name], [e], [t], second_order=False)


@pytest.mark.parametrize("name", ["sum_dim", "mean_dim", "prod_dim", "max_dim", "var_dim", "std",
                                  "norm_dim", "softmax", "cumsum", "cumprod", "sort", "topk",
                                  "amax_dim", "logsumexp"])
@pytest.mark.parametrize("layout", ["strided", "expanded"])
def test_strided_and_expanded_inputs(name, layout, rng):
    fn, _, deps = CASES[name]
    e, t = _data(name, (3, 4), "float64", rng, layout)
    compare_grads(fn, [e], [t], second_order=second(deps))


def test_broadcast_into_reduction(rng):
    """A broadcast operand: the engine reduces its gradient with sum(dims, keepdim=True), which must be
    differentiable for second order."""
    ex, tx = make_pair((3, 4), "float64", rng, low=-2, high=2)
    eb, tb = make_pair((4,), "float64", rng, low=-2, high=2)

    def f(L, x, b):
        return ((x * b).softmax(1) * b).sum(0)
    compare_grads(f, [ex, eb], [tx, tb], second_order=True)

    def g(L, x, b):
        return (x * b).var(1) + (x * b).amax(0).sum()
    compare_grads(g, [ex, eb], [tx, tb], second_order=second(("div",)))


# ---- elementwise max/min (torch.maximum's formula, ties split in half) -------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_elementwise_max_min(dtype, rng):
    ea, ta = make_pair((3, 4), dtype, rng, low=-2, high=2)
    eb, tb = make_pair((4,), dtype, rng, low=-2, high=2)
    for f in (lambda L, a, b: L.max(a, b), lambda L, a, b: L.min(a, b), lambda L, a, b: a.max(b)):
        compare_grads(f, [ea, eb], [ta, tb], second_order=second(("where", "masked_fill")), **_tol(dtype))
    # ties: half the gradient to each side
    base = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]])
    other = np.array([[1.0, 0.0, 3.0], [0.0, 4.0, -5.0]])
    ea, ta = pair_from(base, "float64")
    eb, tb = pair_from(other, "float64")
    for f in (lambda L, a, b: L.max(a, b), lambda L, a, b: L.min(a, b)):
        compare_grads(f, [ea, eb], [ta, tb], second_order=second(("where", "masked_fill")))
    x = ember.ones(2, dtype=ember.float64, requires_grad=True)
    assert ember.max(x, x * 2).grad_fn.name() == "MaximumBackward0"
    assert ember.min(x, x * 2).grad_fn.name() == "MinimumBackward0"


# ---- ties and NaN: gradients split evenly / scattered to one index ----------------------------------
TIES = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 0.0, 2.0, 2.0], [5.0, 5.0, 5.0, 5.0]])
TIE_FNS = {
    "max": lambda L, x: x.max(), "min": lambda L, x: x.min(), "amax": lambda L, x: x.amax(),
    "amax_dim": lambda L, x: x.amax(1), "amin_dim": lambda L, x: x.amin(0, True),
    "aminmax": lambda L, x: x.aminmax(), "aminmax_dim": lambda L, x: x.aminmax(dim=1),
    "median": lambda L, x: x.median(), "nanmedian": lambda L, x: x.nanmedian(),
    "max_dim": lambda L, x: x.max(1), "min_dim": lambda L, x: x.min(0),
    "median_dim": lambda L, x: x.median(1), "mode": lambda L, x: x.mode(1),
    "cummax": lambda L, x: x.cummax(1), "cummin": lambda L, x: x.cummin(1),
    "sort": lambda L, x: x.sort(1), "sort_stable": lambda L, x: x.sort(stable=True, dim=1),
    "norm_inf": lambda L, x: x.norm(float("inf")), "norm_inf_dim": lambda L, x: x.norm(float("inf"), 1),
}


@pytest.mark.parametrize("name", sorted(TIE_FNS))
def test_ties(name):
    e, t = pair_from(TIES.copy(), "float64")
    compare_grads(TIE_FNS[name], [e], [t], second_order=not name.startswith("norm_inf") and second(
        ("masked_fill", "div", "scatter", "scatter_add", "unsqueeze")))


def test_nan_extrema():
    v = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 0.5]])
    for f in (lambda L, x: x.max(), lambda L, x: x.min(), lambda L, x: x.median(),
              lambda L, x: x.nanmedian(), lambda L, x: x.max(1), lambda L, x: x.nanmedian(1),
              lambda L, x: x.amax(1), lambda L, x: x.nansum(), lambda L, x: x.nanmean(0),
              lambda L, x: x.cummax(1), lambda L, x: x.sort(1)):
        e, t = pair_from(v.copy(), "float64")
        compare_grads(f, [e], [t], second_order=False)


# ---- zeros in products ---------------------------------------------------------------------------------
ZEROS = [np.array([[1.5, 0.0, 2.0, -0.5], [0.5, 1.25, -2.0, 1.5], [0.0, 3.0, 0.0, 0.75]]),
         np.array([[0.0, 0.0, 2.0], [1.0, 2.0, 3.0]])]


@pytest.mark.parametrize("k", range(len(ZEROS)))
@pytest.mark.parametrize("fn", [lambda L, x: x.prod(), lambda L, x: x.prod(1), lambda L, x: x.prod(0, True),
                                lambda L, x: x.cumprod(1), lambda L, x: x.cumprod(0)])
def test_zeros_in_prod_and_cumprod(fn, k):
    e, t = pair_from(ZEROS[k].copy(), "float64")
    compare_grads(fn, [e], [t], second_order=second(("cat", "flip", "narrow", "div")))


# ---- norms at zero and statistics without degrees of freedom ----------------------------------------
@pytest.mark.parametrize("p", [2, 1, 3, 1.5, 0.5, 0, float("inf"), -1])
def test_norm_subgradient_at_zero(p):
    v = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.0]])
    for f in (lambda L, x: L.linalg.vector_norm(x, p, 1), lambda L, x: L.linalg.vector_norm(x[:1], p),
              lambda L, x: x.norm(p, 1, True)):
        e, t = pair_from(v.copy(), "float64")
        compare_grads(f, [e], [t], second_order=False)


def test_var_std_without_degrees_of_freedom():
    import warnings
    v = np.array([[1.0, 2.0], [3.0, 3.0]])
    fns = [lambda L, x: x[:1, :1].var(), lambda L, x: x[:1, :1].std(),
           lambda L, x: x.var(1, correction=2), lambda L, x: x.var(correction=4),
           lambda L, x: x.var(correction=5), lambda L, x: x.std(0, correction=3),
           lambda L, x: x.var(dim=[]), lambda L, x: L.var_mean(x, 1, correction=2),
           lambda L, x: L.std_mean(x[1], correction=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in fns:
            e, t = pair_from(v.copy(), "float64")
            compare_grads(f, [e], [t], second_order=False)


def test_std_at_zero_spread():
    e, t = pair_from(np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]), "float64")
    compare_grads(lambda L, x: x.std(1), [e], [t], second_order=False)


# ---- multi-output ops: one output used, both used, indices not differentiable ----------------------
def test_multi_output_partial_use(rng):
    e, t = make_pair((3, 4), "float64", rng, low=-2, high=2)
    compare_grads(lambda L, x: L.var_mean(x, 1)[0], [e], [t], second_order=False)
    compare_grads(lambda L, x: L.var_mean(x, 1)[1], [e], [t], second_order=False)
    compare_grads(lambda L, x: L.std_mean(x)[1] * 2, [e], [t], second_order=False)
    compare_grads(lambda L, x: x.aminmax(dim=0)[1], [e], [t], second_order=False)
    compare_grads(lambda L, x: x.aminmax().min, [e], [t], second_order=False)
    x = ember.ones(2, 3, requires_grad=True)
    for r in (x.max(1), x.sort(), x.topk(1), x.cummax(0), x.kthvalue(1), x.mode(), x.median(0)):
        assert r[0].requires_grad and not r[1].requires_grad and r[1].grad_fn is None


# ---- in-place scans, half precision, meta ----------------------------------------------------------
def test_inplace_scans(rng):
    e, t = make_pair((3, 4), "float64", rng, low=0.5, high=1.5)
    compare_grads(lambda L, x: (x * 1).cumsum_(1), [e], [t], second_order=second(SCAN))
    compare_grads(lambda L, x: (x * 1).cumprod_(0), [e], [t], second_order=second(SCAN + ("div",)))
    y = (ember.ones(3, requires_grad=True) * 1).cumsum_(0)
    assert y.grad_fn.name() == "CumsumBackward0"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_grads(dtype, rng):
    tol = {"atol": 1e-3, "rtol": 1e-2} if dtype == "float16" else {"atol": 1e-2, "rtol": 2e-2}
    for name in ["sum_dim", "mean", "softmax", "log_softmax", "amax_dim", "max_dim", "cumsum", "var_dim",
                 "norm", "logsumexp", "sort"]:
        e, t = _data(name, (3, 4), dtype, rng)
        e.requires_grad_()
        t.requires_grad_()
        eo, to = CASES[name][0](ember, e), CASES[name][0](torch, t)
        eo = eo[0] if isinstance(eo, tuple) else eo
        to = to[0] if isinstance(to, tuple) else to
        go = np.random.default_rng(1).standard_normal(tuple(to.shape))
        eg, = ember.autograd.grad(eo, e, ember.tensor(go, dtype=eo.dtype))
        tg, = torch.autograd.grad(to, t, torch.tensor(go, dtype=to.dtype))
        check(eg, tg, **tol)


@pytest.mark.parametrize("name", ["sum", "mean_dim", "prod_dim", "max", "max_dim", "amax_dim", "var_dim",
                                  "std", "norm_dim", "softmax", "log_softmax", "cumsum", "cumprod",
                                  "cummax", "sort", "topk", "median"])
def test_meta_backward(name):
    fn = CASES[name][0]
    res = []
    for L in (ember, torch):
        x = L.empty(3, 4, device="meta", dtype=L.float32).requires_grad_()
        out = fn(L, x)
        out = out[0] if isinstance(out, tuple) else out
        g, = L.autograd.grad(out, x, L.ones(tuple(out.shape), device="meta", dtype=out.dtype))
        res.append((tuple(g.shape), str(g.dtype).split(".")[-1], g.device.type))
    assert res[0] == res[1]


@pytest.mark.skipif(not HAVE_CONJ, reason="ember has no Tensor.conj yet")
@pytest.mark.parametrize("name", ["sum", "mean_dim", "prod", "cumsum", "cumprod", "var", "std_dim",
                                  "norm", "norm_dim", "logsumexp"])
def test_complex_grads(name, rng):
    e, t = make_pair((3, 4), "complex128", rng, low=0.5, high=1.5)
    compare_grads(CASES[name][0], [e], [t], second_order=False)


# ---- gradcheck / gradgradcheck -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum_dim", "mean_keepdim", "prod_dim", "var_dim", "std", "norm3",
                                  "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "max_dim",
                                  "topk", "amax_dim", "logcumsumexp"])
def test_gradcheck(name, rng):
    fn, rg, deps = CASES[name]
    lo, hi = rg or (-2.0, 2.0)
    x = ember.tensor(rng.uniform(lo, hi, (3, 4)), dtype=ember.float64, requires_grad=True)

    def f(x):
        r = fn(ember, x)
        return r[0] if isinstance(r, tuple) else r
    assert ember.autograd.gradcheck(f, (x,))
    if second(deps):
        assert ember.autograd.gradgradcheck(f, (x,))
