"""Sparse CSR tensors against torch 2.13: the SparseCsrCPU key, to_sparse_csr, sparse_csr_tensor,
crow_indices/col_indices/values, printing, save/load, mm with a CSR operand and its gradients."""
import io
import warnings

import numpy as np
import pytest
import torch

import ember
from harness import check, same_error

warnings.filterwarnings("ignore", message="Sparse invariant checks")

DENSE = np.array([[1., 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, -1]], dtype=np.float32)
W = np.arange(8, dtype=np.float32).reshape(4, 2) / 3 - 1


def both(fn):
    return fn(ember), fn(torch)


def csr(lib, dtype="float32"):
    return lib.tensor(DENSE).to(getattr(lib, dtype)).to_sparse_csr()


def check_csr(e, t):
    assert e.is_sparse_csr == t.is_sparse_csr and e.is_sparse == t.is_sparse
    if not t.is_sparse_csr:
        check(e, t)
        return
    assert tuple(e.shape) == tuple(t.shape) and e._nnz() == t._nnz()
    check(e.crow_indices(), t.crow_indices())
    check(e.col_indices(), t.col_indices())
    check(e.values(), t.values())


def test_key_layout_fields():
    e, t = both(csr)
    assert "SparseCsrCPU" in str(torch._C._dispatch_keys(t))
    assert e._keys >> ember.DispatchKey.SparseCsrCPU & 1
    assert e.layout is ember.sparse_csr and repr(ember.sparse_csr) == "ember.sparse_csr"
    assert e.is_sparse_csr and not e.is_sparse and not ember.ones(2).is_sparse_csr
    assert (e.sparse_dim(), e.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    check_csr(e, t)
    check(e.to_dense(), t.to_dense())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_to_sparse_csr_and_back(dtype):
    e, t = both(lambda lib: csr(lib, dtype))
    check_csr(e, t)
    check(e.to_dense(), t.to_dense())
    ec, tc = e.to_sparse(), t.to_sparse()
    assert ec.is_sparse and tc.is_sparse and ec.is_coalesced() == tc.is_coalesced()
    check(ec._indices(), tc._indices())
    check(ec._values(), tc._values())
    check_csr(*both(lambda lib: lib.tensor(DENSE).to_sparse().to_sparse_csr()))
    check_csr(*both(lambda lib: lib.tensor(DENSE).to_sparse(layout=lib.sparse_csr)))
    ec, tc = both(lambda lib: csr(lib).to_sparse_coo())
    check(ec._indices(), tc._indices())


@pytest.mark.parametrize("case", ["size", "no_size", "empty", "lists"])
def test_sparse_csr_tensor(case):
    def build(lib):
        if case == "size":
            return lib.sparse_csr_tensor(lib.tensor([0, 2, 3]), lib.tensor([0, 2, 1]), lib.tensor([1., 2., 3.]), (2, 4))
        if case == "no_size":
            return lib.sparse_csr_tensor(lib.tensor([0, 2, 3]), lib.tensor([0, 2, 1]), lib.tensor([1., 2., 3.]))
        if case == "empty":
            return lib.zeros(2, 3).to_sparse_csr()
        return lib.sparse_csr_tensor([0, 1, 1], [2], [5.], (2, 3))
    e, t = both(build)
    check_csr(e, t)
    check(e.to_dense(), t.to_dense())
    assert repr(e).replace("ember", "torch") == repr(t)


def test_printing_and_save_load():
    for fn in (lambda lib: csr(lib), lambda lib: csr(lib, "float64"), lambda lib: csr(lib) * 2,
               lambda lib: -csr(lib), lambda lib: csr(lib).requires_grad_()):
        e, t = both(fn)
        assert repr(e).replace("ember", "torch") == repr(t)
    e, t = both(csr)
    b = io.BytesIO()
    ember.save({"c": e}, b)
    b.seek(0)
    check_csr(ember.load(b)["c"], t)
    b.seek(0)
    check_csr(e, torch.load(b)["c"])
    b = io.BytesIO()
    torch.save({"c": t}, b)
    b.seek(0)
    check_csr(ember.load(b)["c"], t)


OPS = {
    "mm": lambda lib, c: lib.mm(c, lib.tensor(W)),
    "matmul": lambda lib, c: c @ lib.tensor(W),
    "matvec": lambda lib, c: c @ lib.tensor(W[:, 0]),
    "sparse.mm": lambda lib, c: lib.sparse.mm(c, lib.tensor(W)),
    "addmm": lambda lib, c: lib.addmm(lib.ones(3, 2), c, lib.tensor(W), beta=0.5, alpha=2),
    "sparse.addmm": lambda lib, c: lib.sparse.addmm(lib.ones(3, 2), c, lib.tensor(W), beta=0.5, alpha=2),
    "mul": lambda lib, c: c * 3,
    "neg": lambda lib, c: -c,
    "sum": lambda lib, c: c.sum(),
    "double": lambda lib, c: c.double(),
    "clone": lambda lib, c: c.clone(),
    "detach": lambda lib, c: c.detach(),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op(name):
    check_csr(*both(lambda lib: OPS[name](lib, csr(lib))))


@pytest.mark.parametrize("name", ["mm", "matmul", "sparse.mm", "addmm", "to_dense", "values"])
def test_grads(name):
    def run(lib):
        w = lib.tensor(W, requires_grad=True)
        x = lib.tensor(DENSE, requires_grad=True)
        v = lib.tensor([1., 2., 3., 4.], requires_grad=True)
        if name == "to_dense":
            y = x.to_sparse_csr()
            (y.to_dense() ** 2).sum().backward()
            return type(y.grad_fn).__name__, x.grad
        if name == "values":
            c = lib.sparse_csr_tensor(lib.tensor([0, 2, 2, 4]), lib.tensor([0, 2, 1, 3]), v, (3, 4))
            (c.to_dense() * lib.arange(12.).reshape(3, 4)).sum().backward()
            return type(c.grad_fn).__name__, v.grad
        c = csr(lib)
        prod = {"mm": lib.mm, "matmul": lib.matmul, "sparse.mm": lib.sparse.mm,
                "addmm": lambda a, b: lib.addmm(lib.ones(3, 2), a, b, beta=0.5, alpha=2)}[name]
        y = prod(c, w)
        (y ** 2).sum().backward()
        return type(y.grad_fn).__name__, w.grad
    e, t = both(run)
    assert e[0] == t[0]
    if t[1] is not None:
        check(e[1], t[1])


ERRORS = {
    "indices": lambda lib: csr(lib).indices(),
    "strides": lambda lib: csr(lib).stride(),
    "crow_dense": lambda lib: lib.ones(2, 3).crow_indices(),
    "col_dense": lambda lib: lib.ones(2, 3).col_indices(),
    "coalesce": lambda lib: csr(lib).coalesce(),
    "numpy": lambda lib: csr(lib).numpy(),
    "storage": lambda lib: csr(lib).untyped_storage(),
    "mm_shape": lambda lib: lib.mm(csr(lib), lib.ones(3, 2)),
    "mm_dtype": lambda lib: lib.mm(csr(lib), lib.ones(4, 2, dtype=lib.float64)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error(name):
    same_error(ERRORS[name])
