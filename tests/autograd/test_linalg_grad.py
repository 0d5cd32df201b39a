"""Gradients of the linear-algebra family against torch (first and second order), PyTorch's node
names (composites decompose as ATen's do), gradcheck, and the errors raised in backward."""
import warnings

import numpy as np
import pytest
import torch
from autograd_harness import compare_grads
from harness import check, pair_from, same_error

from opdb import LINALG_CASES as CASES
from opdb import _matrix, _sq, make

import ember


# ---- ops of other families the decompositions record -----------------------------------------
def _records(fn):
    x = ember.ones(2, 2, requires_grad=True)
    try:
        return fn(x).requires_grad
    except Exception:
        return False


DIFFERENTIABLE = {
    "permute": _records(lambda x: x.permute(1, 0)),
    "diagonal": _records(lambda x: x.diagonal()),
}
# case -> (ops its forward records, ops its double backward records)
NEEDS = {
    "einsum_diag": ({"permute", "diagonal"}, set()),
    "einsum_trace": ({"permute", "diagonal"}, set()),
    "svd_usv": (set(), {"diagonal"}),
}
for _n in ("einsum_mm", "einsum_batched", "einsum_ellipsis", "einsum_outer", "einsum_three",
           "einsum_sum", "tensordot", "tensordot_int", "inner", "matrix_norm_2", "matrix_norm_-2",
           "matrix_norm_nuc", "norm_mat_nuc"):
    NEEDS[_n] = ({"permute"}, set())


def _require(name, second=False):
    first, snd = NEEDS.get(name, (set(), set()))
    missing = sorted(op for op in (first | snd if second else first) if not DIFFERENTIABLE[op])
    if missing:
        pytest.skip(f"{', '.join(missing)} has no derivative yet (views family)")



# products also checked in float32
FLOAT32 = ["mm", "matmul_2d", "matmul_dot", "matmul_mv", "matmul_batched", "matmul_bcast", "bmm",
           "addmm", "addmv", "addr", "baddbmm", "addbmm", "dot", "mv", "outer", "einsum_three",
           "tensordot", "kron", "cross", "trace", "diag_mat", "det", "inv", "solve", "cholesky",
           "matrix_norm_fro", "matrix_norm_dtype", "matrix_norm_2_dtype", "norm_dtype"]

TOL = {"float32": {"atol": 1e-4, "rtol": 1e-4}, "float64": {}}


def _inputs(specs, dtype, rng, layout="contiguous"):
    es, ts = [], []
    for kind, shape in specs:
        e, t = make(kind, shape, dtype, rng, layout)
        es.append(e)
        ts.append(t)
    return es, ts


def _quiet(fn):
    def run(L, *xs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(L, *xs)
    return run


@pytest.mark.parametrize("name", sorted(CASES))
def test_grads_float64(name, rng):
    fn, specs, second = CASES[name]
    _require(name, second)
    es, ts = _inputs(specs, "float64", rng)
    compare_grads(_quiet(fn), es, ts, second_order=second)


@pytest.mark.parametrize("name", FLOAT32)
def test_grads_float32(name, rng):
    fn, specs, second = CASES[name]
    _require(name, second)
    es, ts = _inputs(specs, "float32", rng)
    compare_grads(_quiet(fn), es, ts, second_order=second, **TOL["float32"])


COMPLEX = ["mm", "matmul_2d", "matmul_dot", "matmul_vm", "matmul_batched", "matmul_bcast", "bmm",
           "addmm_scaled", "addmv", "addr", "baddbmm", "addbmm", "dot", "vdot", "mv", "outer",
           "inner", "einsum_three", "einsum_diag", "tensordot", "kron", "linalg_cross", "vecdot",
           "multi_dot", "matrix_power5", "diag_mat", "diag_vec", "trace", "det", "slogdet",
           "logdet", "inv", "solve", "solve_vec", "solve_right", "solve_triangular", "cholesky",
           "cholesky_upper", "cholesky_solve", "cholesky_inverse", "matrix_exp", "pinv", "qr",
           "qr_wide", "svd", "svd_wide", "svdvals", "eigh", "eigvalsh", "matrix_norm_fro",
           "matrix_norm_nuc", "matrix_norm_2", "norm", "lu", "lu_tall", "lu_factor", "lu_solve",
           "lu_solve_right_adjoint", "eig", "eigvals"]


@pytest.mark.parametrize("name", COMPLEX)
def test_grads_complex(name, rng):
    fn, specs, second = CASES[name]
    _require(name, second)
    es, ts = _inputs(specs, "complex128", rng)
    compare_grads(_quiet(fn), es, ts, second_order=second)


@pytest.mark.parametrize("name", ["eig_general", "eigvals", "mm", "det", "inv", "solve", "svd",
                                  "eigh", "qr", "cholesky", "einsum_three", "matrix_exp"])
def test_complex_cotangents(name, rng):
    """Complex outputs get complex gradients (compare_grads seeds real ones): first order, and the
    gradient's gradient along a complex direction."""
    fn, specs, _ = CASES[name]
    _require(name, True)
    dtype = "float64" if name in ("eig_general", "eigvals") else "complex128"
    es, ts = _inputs(specs, dtype, rng)
    es = [e.requires_grad_() for e in es]
    ts = [t.requires_grad_() for t in ts]
    eo, to = _quiet(fn)(ember, *es), _quiet(fn)(torch, *ts)
    eo = eo if isinstance(eo, tuple) else (eo,)
    to = to if isinstance(to, tuple) else (to,)
    gs = [rng.standard_normal(tuple(t.shape)) + 1j * rng.standard_normal(tuple(t.shape)) for t in to]
    eg = ember.autograd.grad(eo, es, [ember.tensor(g, dtype=o.dtype) for g, o in zip(gs, eo)],
                             create_graph=True)
    tg = torch.autograd.grad(to, ts, [torch.tensor(g, dtype=o.dtype) for g, o in zip(gs, to)],
                             create_graph=True)
    for a, b in zip(eg, tg):
        check(a, b)
    vs = [rng.standard_normal(tuple(t.shape)) * (1 + 1j if t.is_complex() else 1) for t in tg]
    eg2 = ember.autograd.grad(eg, es, [ember.tensor(v, dtype=g.dtype) for v, g in zip(vs, eg)],
                              allow_unused=True)
    tg2 = torch.autograd.grad(tg, ts, [torch.tensor(v, dtype=g.dtype) for v, g in zip(vs, tg)],
                              allow_unused=True)
    for a, b in zip(eg2, tg2):
        if b is not None:
            check(a, b)


NON_CONTIGUOUS = ["mm", "matmul_batched", "matmul_fold", "bmm", "addmm", "addmv", "addr",
                  "baddbmm", "addbmm", "dot", "mv", "outer", "einsum_three", "tensordot", "kron",
                  "linalg_cross", "diag_mat", "trace", "det", "inv", "solve", "cholesky", "qr",
                  "svdvals", "eigvalsh", "matrix_norm_nuc"]


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("name", NON_CONTIGUOUS)
def test_grads_non_contiguous(name, layout, rng):
    fn, specs, second = CASES[name]
    _require(name, second)
    es, ts = _inputs(specs, "float64", rng, layout)
    compare_grads(_quiet(fn), es, ts, second_order=second)


EXPANDED = {  # broadcast (stride-0) inputs: gradients summed over the expanded dims
    "mm": [("gen", (3, 4)), ("gen", (4, 2))],
    "matmul_batched": [("gen", (2, 3, 4)), ("gen", (2, 4, 5))],
    "addmm": [("gen", (3, 2)), ("gen", (3, 4)), ("gen", (4, 2))],
    "bmm": [("gen", (2, 3, 4)), ("gen", (2, 4, 2))],
    "einsum_batched": [("gen", (2, 3, 4)), ("gen", (2, 4, 2))],
}


@pytest.mark.parametrize("name", sorted(EXPANDED))
def test_grads_expanded(name, rng):
    fn = CASES[name][0]
    _require(name, True)
    es, ts = _inputs(EXPANDED[name], "float64", rng, "expanded")
    compare_grads(fn, es, ts)


ZERO_SIZE = {
    "mm": [("gen", (3, 0)), ("gen", (0, 2))],
    "matmul_batched": [("gen", (2, 3, 0)), ("gen", (2, 0, 5))],
    "matmul_bcast": [("gen", (0, 1, 3, 4)), ("gen", (3, 4, 2))],
    "bmm": [("gen", (0, 3, 4)), ("gen", (0, 4, 2))],
    "addmm": [("gen", (3, 2)), ("gen", (3, 0)), ("gen", (0, 2))],
    "dot": [("gen", (0,)), ("gen", (0,))],
    "mv": [("gen", (0, 4)), ("gen", (4,))],
    "outer": [("gen", (0,)), ("gen", (4,))],
    "einsum_three": [("gen", (2, 0)), ("gen", (0, 4)), ("gen", (4, 2))],
    "kron": [("gen", (2, 0)), ("gen", (3, 2))],
    "trace": [("gen", (0, 4))],
    "diag_vec": [("gen", (0,))],
    "det": [("gen", (0, 0))],
    "inv": [("gen", (2, 0, 0))],
    "matrix_norm_fro": [("gen", (0, 3))],
}


@pytest.mark.parametrize("name", sorted(ZERO_SIZE))
def test_zero_size(name, rng):
    fn, _, second = CASES[name]
    _require(name, second)
    es, ts = _inputs(ZERO_SIZE[name], "float64", rng)
    compare_grads(fn, es, ts, second_order=second)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["mm", "matmul_batched", "bmm", "addmm", "mv", "dot", "outer",
                                  "einsum_mm", "trace", "diag_mat"])
def test_half_precision_grads(name, dtype, rng):
    fn, specs, _ = CASES[name]
    _require(name)
    tol = {"atol": 2e-2, "rtol": 2e-2} if dtype == "float16" else {"atol": 1e-1, "rtol": 5e-2}
    es, ts = _inputs(specs, dtype, rng)
    es = [e.requires_grad_() for e in es]
    ts = [t.requires_grad_() for t in ts]
    eo, to = fn(ember, *es), fn(torch, *ts)
    go = np.random.default_rng(1).standard_normal(tuple(to.shape))
    eg = ember.autograd.grad(eo, es, ember.tensor(go, dtype=eo.dtype))
    tg = torch.autograd.grad(to, ts, torch.tensor(go, dtype=to.dtype))
    for a, b in zip(eg, tg):
        check(a, b, **tol)


# ---- node names -----------------------------------------------------------------------------------
NAMES = sorted(CASES)


@pytest.mark.parametrize("name", NAMES)
def test_node_names(name, rng):
    fn, specs, _ = CASES[name]
    _require(name)
    if name == "tensorinv":
        pytest.skip("reshape of a column-major inverse: PyTorch records _reshape_alias")
    es, ts = _inputs(specs, "float64", rng)
    eo = _quiet(fn)(ember, *[e.requires_grad_() for e in es])
    to = _quiet(fn)(torch, *[t.requires_grad_() for t in ts])
    if isinstance(to, tuple):
        assert [x.grad_fn.name() for x in eo] == [x.grad_fn.name() for x in to]
        return
    assert eo.grad_fn.name() == to.grad_fn.name()


@pytest.mark.parametrize("name", ["svd", "eigh", "eig", "slogdet", "qr", "qr_legacy",
                                  "svd_legacy"])
def test_node_names_multi_output(name, rng):
    fn = {"svd": lambda L, a: L.linalg.svd(a), "eigh": lambda L, a: L.linalg.eigh(a),
          "eig": lambda L, a: L.linalg.eig(a),
          "slogdet": lambda L, a: L.linalg.slogdet(a), "qr": lambda L, a: L.linalg.qr(a),
          "qr_legacy": lambda L, a: L.qr(a), "svd_legacy": lambda L, a: L.svd(a)}[name]
    e, t = make("sym", (3, 3), "float64", rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        er, tr = fn(ember, e.requires_grad_()), fn(torch, t.requires_grad_())
    for a, b in zip(er, tr):
        assert a.grad_fn.name() == b.grad_fn.name()


def test_matmul_graph_is_the_decomposition():
    a = ember.randn(3, 4, requires_grad=True)
    b = ember.randn(4, 2, requires_grad=True)
    y = a @ b
    assert type(y.grad_fn).__name__ == "MmBackward0"
    # the plain call (no grad) does not go through the decomposition
    with ember.no_grad():
        assert (a @ b).grad_fn is None
    assert (a.detach() @ b.detach()).grad_fn is None


MATMUL_ERRORS = [((2, 3), (5, 4, 5)), ((3,), (4, 5)), ((2, 3), (4,)), ((4,), (3,)), ((2, 3), (4, 2)),
                 ((2, 3, 4), (5, 2)), ((2, 3, 4), (2, 5, 4)), ((), (3,))]


@pytest.mark.parametrize("sa,sb", MATMUL_ERRORS)
def test_matmul_errors_under_autograd(sa, sb):
    """The decomposition raises what PyTorch's does (for a requires-grad operand)."""
    for ga, gb in ((True, True), (True, False), (False, True)):
        same_error(lambda L: L.matmul(L.ones(sa, requires_grad=ga), L.ones(sb, requires_grad=gb)))
    same_error(lambda L: L.matmul(L.ones(2, 3, requires_grad=True),
                                  L.ones(4, 3, 2, dtype=L.float64)))


def test_double_backward_node_names(rng):
    for fn in (lambda L, a, b: L.mm(a, b), lambda L, a, b: L.linalg.solve(a, b)):
        names = []
        es, ts = _inputs([("wellcond", (3, 3)), ("gen", (3, 3))], "float64", rng)
        for L, (a, b) in ((ember, es), (torch, ts)):
            a.requires_grad_()
            b.requires_grad_()
            y = fn(L, a, b)
            g, = L.autograd.grad(y, a, L.ones_like(y), create_graph=True)
            names.append(g.grad_fn.name())
        assert names[0] == names[1]


def test_saved_values():
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    y = ember.addmm(ember.zeros(3, 2, dtype=ember.float64), a, b, beta=0.5, alpha=2)
    assert y.grad_fn._saved_alpha == 2 and y.grad_fn._saved_beta == 0.5
    assert y.grad_fn._saved_mat1 is not None


# ---- gradcheck ------------------------------------------------------------------------------------
GRADCHECK = ["mm", "matmul_fold", "matmul_v_batched", "addmm_scaled", "baddbmm", "einsum_three",
             "einsum_diag", "tensordot", "kron", "linalg_cross", "diag_mat_offset2", "det", "inv",
             "solve_vec", "solve_right", "solve_triangular", "cholesky_upper", "cholesky_solve",
             "qr", "qr_wide", "svd", "eigh", "pinv", "matrix_exp", "matrix_norm_2", "logdet",
             "lu_wide", "lu_solve_adjoint"]


# functions of symmetric inputs get a symmetrized argument (gradcheck perturbs every entry)
def _sym(x):
    return (x + x.mT) / 2


GRADCHECK_FN = {
    "cholesky_upper": lambda L, a: L.linalg.cholesky(_sym(a), upper=True),
    "cholesky_solve": lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(_sym(a))),
    "eigh": lambda L, a: (lambda r: (r[0], _sq(L, r[1])))(L.linalg.eigh(_sym(a))),
    "logdet": lambda L, a: L.logdet(_sym(a)),
}


@pytest.mark.parametrize("name", GRADCHECK)
def test_gradcheck(name, rng):
    fn, specs, _ = CASES[name]
    _require(name, True)
    fn = GRADCHECK_FN.get(name, fn)
    es, _ = _inputs(specs, "float64", rng)
    es = [e.requires_grad_() for e in es]

    def f(*xs):
        return fn(ember, *xs)
    assert ember.autograd.gradcheck(f, tuple(es))
    assert ember.autograd.gradgradcheck(f, tuple(es))


# ---- special values and errors ----------------------------------------------------------------
def test_det_singular(rng):
    """The cofactor gradient of a singular matrix (through the SVD), as PyTorch gives it."""
    for base in ([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],
                 [[1.0, 2.0], [2.0, 4.0]], np.zeros((2, 2))):
        e, t = pair_from(np.array(base), "float64")
        compare_grads(lambda L, a: L.linalg.det(a), [e], [t], second_order=False)


def test_logdet_negative_det(rng):
    e, t = pair_from(np.array([[0.0, 1.0], [1.0, 0.0]]), "float64")
    compare_grads(lambda L, a: L.logdet(a), [e], [t], second_order=False)


def _backward_error(fn, shape, kind="gen"):
    def run(L):
        x = L.tensor(_matrix(kind, shape, np.random.default_rng(0)), dtype=L.float64,
                     requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = fn(L, x)
        y = y if isinstance(y, (tuple, list)) else (y,)
        y = [v for v in y if v.requires_grad]
        L.autograd.grad([v.sum() for v in y], x)
    return run


def test_backward_errors():
    same_error(_backward_error(lambda L, a: L.linalg.qr(a, "complete"), (4, 3)))
    same_error(_backward_error(lambda L, a: L.linalg.qr(a, "r")[1], (3, 3)))


OUT_CALLS = {
    "mm": lambda L, a, v: L.mm(a, a, out=L.empty(3, 3)),
    "mv": lambda L, a, v: L.mv(a, v, out=L.empty(3)),
    "dot": lambda L, a, v: L.dot(v, v, out=L.empty(())),
    "bmm": lambda L, a, v: L.bmm(a[None], a[None], out=L.empty(1, 3, 3)),
    "addmm": lambda L, a, v: L.addmm(a, a, a, out=L.empty(3, 3)),
    "linalg_cross": lambda L, a, v: L.linalg.cross(a, a, out=L.empty(3, 3)),
    "pinv": lambda L, a, v: L.linalg.pinv(a, out=L.empty(3, 3)),
    "solve_triangular": lambda L, a, v: L.linalg.solve_triangular(a, a, upper=True,
                                                                  out=L.empty(3, 3)),
}


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_with_requires_grad_errors(name):
    def run(L):
        a = L.tensor(_matrix("wellcond", (3, 3), np.random.default_rng(0)), dtype=L.float32,
                     requires_grad=True)
        OUT_CALLS[name](L, a, a[0].detach().clone().requires_grad_())
    same_error(run)
    # without grad mode the out= call runs
    with ember.no_grad():
        a = ember.eye(3, requires_grad=True)
        OUT_CALLS[name](ember, a, a[0])


def test_int_inputs_do_not_require_grad():
    a = ember.ones(2, 2, dtype=ember.int64)
    assert not ember.mm(a, a).requires_grad
    b = ember.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError):
        ember.mm(a, b)


@pytest.mark.parametrize("name", ["mm", "matmul_fold", "matmul_v_batched", "addmm", "baddbmm",
                                  "einsum_three", "kron", "diag_mat", "trace", "det", "inv",
                                  "solve_vec", "cholesky", "matrix_norm_fro", "matrix_power5"])
def test_meta_grads(name, rng):
    """Backward on meta tensors gives gradients of the CPU gradients' shapes and dtypes."""
    fn, specs, _ = CASES[name]
    es, _ = _inputs(specs, "float64", rng)
    cpu = [e.requires_grad_() for e in es]
    meta = [e.detach().to("meta").requires_grad_() for e in es]
    gc = ember.autograd.grad(fn(ember, *cpu).sum(), cpu)
    gm = ember.autograd.grad(fn(ember, *meta).sum(), meta)
    for a, b in zip(gc, gm):
        assert b.device.type == "meta"
        assert (tuple(a.shape), a.dtype) == (tuple(b.shape), b.dtype)


COMPOSITE_ERRORS = {
    "einsum_subscripts": lambda L, a: L.einsum("ij,jk->il", a, a),
    "einsum_sizes": lambda L, a: L.einsum("ij,jk->ik", a, a[:2]),
    "tensordot": lambda L, a: L.tensordot(a, a[:2], dims=([0], [0])),
    "inner": lambda L, a: L.inner(a, a[:, :2]),
    "outer": lambda L, a: L.outer(a, a[0]),
    "diag": lambda L, a: L.diag(a[None]),
    "diagflat_dims": lambda L, a: L.diag_embed(a, 0, 1, 1),
    "vecdot": lambda L, a: L.linalg.vecdot(a, a.double()),
    "matrix_power": lambda L, a: L.linalg.matrix_power(a[:2], 2),
    "multi_dot": lambda L, a: L.linalg.multi_dot([a]),
    "matrix_norm_ord": lambda L, a: L.linalg.matrix_norm(a, 3),
    "matrix_norm_dim": lambda L, a: L.linalg.matrix_norm(a, dim=(0, 0)),
    "norm_dim": lambda L, a: L.linalg.norm(a, dim=(0, 1, 0)),
    "norm_ord_str": lambda L, a: L.linalg.norm(a[0], "fro"),
    "logdet": lambda L, a: L.logdet(a[:2]),
    "svd": lambda L, a: L.svd(a[0]),
}


@pytest.mark.parametrize("name", sorted(COMPOSITE_ERRORS))
def test_composite_errors_under_autograd(name):
    same_error(lambda L: COMPOSITE_ERRORS[name](L, L.ones(3, 3, requires_grad=True)))
