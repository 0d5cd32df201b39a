"""The acceptance test of issue 16's sparse layout: a 2-layer graph convolution (Kipf & Welling)
on a normalised sparse adjacency (COO, and CSR), trained 50 steps with Adam, gives torch's losses."""
import numpy as np
import pytest
import torch

import ember


def _graph(rng, n=40, edges=120):
    """Symmetric adjacency with self loops, normalised D^-1/2 (A + I) D^-1/2, as COO arrays."""
    src = rng.integers(0, n, edges)
    dst = rng.integers(0, n, edges)
    a = np.zeros((n, n))
    a[src, dst] = 1
    a[dst, src] = 1
    a[np.arange(n), np.arange(n)] = 1
    d = a.sum(1) ** -0.5
    a = d[:, None] * a * d[None, :]
    rows, cols = np.nonzero(a)
    return np.stack([rows, cols]), a[rows, cols].astype(np.float32)


def _train(lib, idx, vals, n, x, y, state, product, steps=50):
    A = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (n, n))
    if product.startswith("csr"):
        A = A.to_sparse_csr()
    lin1 = lib.nn.Linear(x.shape[1], 16)
    lin2 = lib.nn.Linear(16, 3)
    for m, prefix in ((lin1, "l1"), (lin2, "l2")):
        m.load_state_dict({k: lib.tensor(state[f"{prefix}.{k}"]) for k in ("weight", "bias")})
    params = list(lin1.parameters()) + list(lin2.parameters())
    opt = lib.optim.Adam(params, lr=0.01)
    X, Y = lib.tensor(x), lib.tensor(y)
    prod = {"sparse.mm": lib.sparse.mm, "mm": lib.mm, "matmul": lib.matmul, "csr_mm": lib.mm,
            "csr_sparse.mm": lib.sparse.mm}[product]
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        h = lib.nn.functional.relu(prod(A, lin1(X)))
        out = prod(A, lin2(h))
        loss = lib.nn.functional.cross_entropy(out, Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("product", ["sparse.mm", "mm", "matmul", "csr_mm", "csr_sparse.mm"])
def test_gcn_trains_as_torch(product):
    rng = np.random.default_rng(0)
    n = 40
    idx, vals = _graph(rng, n)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = rng.integers(0, 3, n)
    torch.manual_seed(0)
    l1, l2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 3)
    state = {f"{p}.{k}": getattr(m, k).detach().numpy().copy() for p, m in (("l1", l1), ("l2", l2))
             for k in ("weight", "bias")}
    tl, tp = _train(torch, idx, vals, n, x, y, state, product)
    el, ep = _train(ember, idx, vals, n, x, y, state, product)
    assert tl[-1] < tl[0]  # it learns
    np.testing.assert_allclose(el, tl, rtol=0, atol=1e-6)
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _examples_gcn(lib, feats, edges, labels, epochs=8, dropout_p=0.5):
    """pytorch/examples' gcn/main.py (its load_cora on synthetic data, GraphConv, GCN, train_iter), written
    against `lib`: the sparse APIs that program reaches (diag(...).to_sparse(), sparse @ dense, dense + sparse,
    dense @ sparse, sparse_coo_tensor from a NumPy int32 array with dtype=int64, spmm, a sparse input to mm)."""
    nn, F = lib.nn, lib.nn.functional

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super().__init__()
            self.kernel = nn.Parameter(lib.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(lib.Tensor(output_dim))
                nn.init.zeros_(self.bias)

        def forward(self, input_tensor, adj_mat):
            support = lib.mm(input_tensor, self.kernel)
            output = lib.spmm(adj_mat, support)
            if self.bias is not None:
                output = output + self.bias
            return output

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
            super().__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input_tensor, adj_mat):
            x = F.relu(self.gc1(input_tensor, adj_mat))
            x = self.dropout(x)
            return F.log_softmax(self.gc2(x, adj_mat), dim=1)

    features = lib.FloatTensor(feats)
    scale_vector = 1 / lib.sum(features, dim=1)
    scale_vector[scale_vector == float("inf")] = 0
    features = lib.diag(scale_vector).to_sparse() @ features
    V, E = feats.shape[0], edges.shape[0]
    adj_mat = lib.sparse_coo_tensor(edges.T, lib.ones(E), (V, V), dtype=lib.int64)
    adj_mat = lib.eye(V) + adj_mat
    degree_mat = lib.sqrt(1 / lib.sum(adj_mat, dim=1))
    degree_mat[degree_mat == float("inf")] = 0
    degree_mat = lib.diag(degree_mat).to_sparse()
    adj_mat = (degree_mat @ adj_mat @ degree_mat).to_sparse()
    features = features.to_sparse()
    target = lib.LongTensor(labels)

    lib.manual_seed(42)
    idx = lib.randperm(V)
    idx_val, idx_train = idx[:20], idx[20:]
    gcn = GCN(features.shape[1], 16, int(labels.max()) + 1, True, dropout_p)
    optimizer = lib.optim.Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    losses = []
    for _ in range(epochs):
        gcn.train()
        optimizer.zero_grad()
        output = gcn(features, adj_mat)
        loss = criterion(output[idx_train], target[idx_train])
        loss.backward()
        optimizer.step()
        gcn.eval()
        with lib.no_grad():
            val = criterion(gcn(features, adj_mat)[idx_val], target[idx_val])
        losses.append((loss.item(), val.item()))
    return losses


def test_pytorch_examples_gcn():
    rng = np.random.default_rng(1)
    V = 60
    feats = (rng.random((V, 30)) < 0.2).astype(np.int32)
    edges = rng.integers(0, V, (150, 2)).astype(np.int32)
    labels = rng.integers(0, 4, V)
    tl = _examples_gcn(torch, feats, edges, labels)
    el = _examples_gcn(ember, feats, edges, labels)
    np.testing.assert_allclose(el, tl, rtol=0, atol=1e-6)
