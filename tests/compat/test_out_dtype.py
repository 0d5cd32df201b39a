"""out= with a dtype torch refuses even though the result could be cast to it (structured kernels,
same-dtype TensorIterator ops, ops with their own check): ember refuses it with torch's message;
castable out= dtypes torch accepts stay accepted."""
import pytest
import torch

import ember
from harness import check, same_error

A = [[1.0, 2.0], [3.0, 4.0]]
SPD = [[2.0, 1.0], [1.0, 2.0]]


def _cases():
    L = None  # noqa: F841 - the lambdas take the library as `L`
    return {
        "mm": lambda L, o: L.mm(L.tensor(A), L.tensor(A), out=o),
        "matmul": lambda L, o: L.matmul(L.tensor(A), L.tensor(A), out=o),
        "bmm": lambda L, o: L.bmm(L.tensor([A]), L.tensor([A]), out=o),
        "addmm": lambda L, o: L.addmm(L.tensor(A), L.tensor(A), L.tensor(A), out=o),
        "addmv": lambda L, o: L.addmv(L.tensor([1.0, 2.0]), L.tensor(A), L.tensor([1.0, 2.0]), out=o),
        "baddbmm": lambda L, o: L.baddbmm(L.tensor([A]), L.tensor([A]), L.tensor([A]), out=o),
        "mv": lambda L, o: L.mv(L.tensor(A), L.tensor([1.0, 2.0]), out=o),
        "dot": lambda L, o: L.dot(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), out=o),
        "vdot": lambda L, o: L.vdot(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]), out=o),
        "argmax": lambda L, o: L.argmax(L.tensor(A), 0, out=o),
        "gather": lambda L, o: L.gather(L.tensor(A), 0, L.tensor([[1, 0]]), out=o),
        "sort": lambda L, o: L.sort(L.tensor(A), 0, out=(o, L.empty(0, dtype=L.long))),
        "topk": lambda L, o: L.topk(L.tensor([1.0, 3.0, 2.0]), 2, out=(o, L.empty(0, dtype=L.long))),
        "tril": lambda L, o: L.tril(L.tensor(A), out=o),
        "triu": lambda L, o: L.triu(L.tensor(A), out=o),
        "diag": lambda L, o: L.diag(L.tensor(A), out=o),
        "where": lambda L, o: L.where(L.tensor(A) > 1, L.tensor(A), L.tensor(A), out=o),
        "round": lambda L, o: L.round(L.tensor(A), out=o),
        "sign": lambda L, o: L.sign(L.tensor(A), out=o),
        "neg": lambda L, o: L.neg(L.tensor(A), out=o),
        "floor": lambda L, o: L.floor(L.tensor(A), out=o),
        "frac": lambda L, o: L.frac(L.tensor(A), out=o),
        "clamp": lambda L, o: L.clamp(L.tensor(A), 0, 1, out=o),
        "clamp_min": lambda L, o: L.clamp_min(L.tensor(A), 1.0, out=o),
        "clamp_max": lambda L, o: L.clamp_max(L.tensor(A), 1.0, out=o),
        "linalg_inv": lambda L, o: L.linalg.inv(L.tensor(A), out=o),
        "linalg_det": lambda L, o: L.linalg.det(L.tensor(A), out=o),
        "linalg_solve": lambda L, o: L.linalg.solve(L.tensor(A), L.tensor(A), out=o),
        "cholesky": lambda L, o: L.linalg.cholesky(L.tensor(SPD), out=o),
        "eigvalsh": lambda L, o: L.linalg.eigvalsh(L.tensor(SPD), out=o),
        "svdvals": lambda L, o: L.linalg.svdvals(L.tensor(A), out=o),
        "matrix_norm": lambda L, o: L.linalg.matrix_norm(L.tensor(A), out=o),
        "vector_norm": lambda L, o: L.linalg.vector_norm(L.tensor(A), out=o),
        "matrix_power": lambda L, o: L.linalg.matrix_power(L.tensor(A), 2, out=o),
        "multi_dot": lambda L, o: L.linalg.multi_dot([L.tensor(A), L.tensor(A)], out=o),
        "cross": lambda L, o: L.linalg.cross(L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.0, 3.0]), out=o),
        "tensordot": lambda L, o: L.tensordot(L.tensor(A), L.tensor(A), 1, out=o),
        "index_select": lambda L, o: L.index_select(L.tensor(A), 0, L.tensor([1]), out=o),
        "masked_select": lambda L, o: L.masked_select(L.tensor(A), L.tensor(A) > 1, out=o),
        "take": lambda L, o: L.take(L.tensor(A), L.tensor([1]), out=o),
        "cummax": lambda L, o: L.cummax(L.tensor(A), 0, out=(o, L.empty(0, dtype=L.long))),
        "logcumsumexp": lambda L, o: L.logcumsumexp(L.tensor(A), 0, out=o),
        "nan_to_num": lambda L, o: L.nan_to_num(L.tensor(A), out=o),
        "amax": lambda L, o: L.amax(L.tensor(A), 0, out=o),
        "max_dim": lambda L, o: L.max(L.tensor(A), 0, out=(o, L.empty(0, dtype=L.long))),
        "aminmax": lambda L, o: L.aminmax(L.tensor(A), dim=0, out=(o, o.clone())),
        "slogdet": lambda L, o: L.linalg.slogdet(L.tensor(A), out=(o, o.clone())),
        "eigh": lambda L, o: L.linalg.eigh(L.tensor(SPD), out=(o, o.clone())),
    }


CASES = _cases()
REFUSED = ["float64", "float16", "complex64"]


@pytest.mark.parametrize("dtype", REFUSED)
@pytest.mark.parametrize("name", list(CASES))
def test_refused_like_torch(name, dtype):
    f = CASES[name]
    same_error(lambda L: f(L, L.empty(0, dtype=getattr(L, dtype))))


@pytest.mark.parametrize("name", list(CASES))
def test_right_dtype_accepted(name):
    f = CASES[name]
    dt = "int64" if name == "argmax" else "float32"
    e, t = f(ember, ember.empty(0, dtype=getattr(ember, dt))), f(torch, torch.empty(0, dtype=getattr(torch, dt)))
    if isinstance(t, tuple):
        for a, b in zip(e, t):
            check(a, b)
    else:
        check(e, t)


@pytest.mark.parametrize("call", [
    lambda L, o: L.add(L.ones(2), L.ones(2), out=o),
    lambda L, o: L.exp(L.ones(2), out=o),
    lambda L, o: L.mean(L.ones(2, 2), 0, out=o),
    lambda L, o: L.sum(L.ones(2, 2), 0, out=o),
    lambda L, o: L.cat([L.ones(2), L.ones(2)], out=o),
    lambda L, o: L.outer(L.ones(2), L.ones(2), out=o),
    lambda L, o: L.linalg.pinv(L.tensor(A), out=o),
    lambda L, o: L.clamp_min(L.tensor([1, 2]), L.tensor([1.5, 0.0]), out=o),
    lambda L, o: L.clamp(L.ones(2), L.zeros(2), L.ones(2), out=o),
    lambda L, o: L.abs(L.ones(2, dtype=L.complex64), out=o),
])
def test_castable_still_accepted(call):
    check(call(ember, ember.empty(0, dtype=ember.float64)), call(torch, torch.empty(0, dtype=torch.float64)),
          atol=1e-5, rtol=1e-5)  # computed in float32, stored in float64


def test_index_outputs():
    same_error(lambda L: L.sort(L.tensor(A), 0, out=(L.empty(0), L.empty(0, dtype=L.int32))))
    same_error(lambda L: L.argmax(L.tensor(A), 0, out=L.empty(0, dtype=L.int32)))
    same_error(lambda L: L.cummax(L.tensor(A), 0, out=(L.empty(0), L.empty(0, dtype=L.int32))))
    same_error(lambda L: L.nonzero(L.tensor(A), out=L.empty(0, dtype=L.int32)))
    same_error(lambda L: L.neg(L.tensor([1, -2]), out=L.empty(0, dtype=L.int32)))
    same_error(lambda L: L.clamp_min(L.tensor([1, 2]), 1.5, out=L.empty(0, dtype=L.float64)))
    same_error(lambda L: L.sgn(L.ones(2, dtype=L.complex64), out=L.empty(0, dtype=L.complex128)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float64", "float16", "complex64"])
@pytest.mark.parametrize("call", [
    lambda L, o: L.sum(L.tensor([[1.5, 1.5], [2.7, 0.6]]), 0, out=o),
    lambda L, o: L.sum(L.tensor([[1.5, 1.5], [2.7, 0.6]]), (0, 1), out=o),
    lambda L, o: L.prod(L.tensor([[1.5, 1.5], [2.7, 0.6]]), 0, out=o),
    lambda L, o: L.cumsum(L.tensor([[1.5, 1.5], [2.7, 0.6]]), 0, out=o),
    lambda L, o: L.cumprod(L.tensor([[1.5, 1.5], [2.7, 0.6]]), 1, out=o),
    lambda L, o: L.sum(L.tensor([1, 2, 3]), 0, keepdim=True, out=o),
], ids=["sum_dim", "sum_all_dims", "prod_dim", "cumsum", "cumprod", "sum_int"])
def test_reductions_compute_in_out_dtype(call, dtype):
    """sum(x, dim, out=o) is sum(x, dim, dtype=o.dtype) in torch: the input is cast to out's dtype
    first. (nansum does the same; its kernel in ember also takes the integer dtypes torch's refuses.)"""
    try:
        t = call(torch, torch.empty(0, dtype=getattr(torch, dtype)))
    except Exception:
        same_error(lambda L: call(L, L.empty(0, dtype=getattr(L, dtype))))
        return
    e = call(ember, ember.empty(0, dtype=getattr(ember, dtype)))
    check(e, t)
