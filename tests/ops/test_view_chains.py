"""Property test: random chains of view ops on the same base in ember and torch agree on shape,
strides, storage offset and values, and a write through the final view shows in the base."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import ember

pytestmark = pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")


def _slice(L, x, dim, start, end, step):
    return L.ops.aten.slice.Tensor(x, dim, start, end, step)


def draw_op(data, t):
    """An op (name, fn(L, x)) valid or invalid for torch tensor t (invalid ones must raise alike)."""
    n = t.dim()
    shape = tuple(t.shape)
    ops = ["unsqueeze", "as_strided", "view_flat"]
    if n >= 1:
        ops += ["slice", "narrow", "select", "unfold", "squeeze", "expand", "view_split"]
    if n >= 2:
        ops += ["transpose", "permute", "diagonal", "view_merge"]
    name = data.draw(st.sampled_from(ops))
    dim = data.draw(st.integers(-n, n - 1)) if n else 0
    d = dim % n if n else 0
    size = shape[d] if n else 1
    if name == "transpose":
        d1 = data.draw(st.integers(-n, n - 1))
        return name, lambda L, x: x.transpose(dim, d1)
    if name == "permute":
        p = data.draw(st.permutations(range(n)))
        return name, lambda L, x: x.permute(*p)
    if name == "slice":
        a = data.draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
        b = data.draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
        step = data.draw(st.integers(1, 3))
        return name, lambda L, x: _slice(L, x, dim, a, b, step)
    if name == "narrow":
        a = data.draw(st.integers(0, size))
        length = data.draw(st.integers(0, size - a))
        return name, lambda L, x: x.narrow(dim, a, length)
    if name == "select":
        if size == 0:
            return "unsqueeze", lambda L, x: x.unsqueeze(0)
        i = data.draw(st.integers(-size, size - 1))
        return name, lambda L, x: x.select(dim, i)
    if name == "unsqueeze":
        u = data.draw(st.integers(-n - 1, n))
        return name, lambda L, x: x.unsqueeze(u)
    if name == "squeeze":
        which = data.draw(st.sampled_from(["all", "dim", "dims"]))
        if which == "all":
            return name, lambda L, x: x.squeeze()
        if which == "dim":
            return name, lambda L, x: x.squeeze(dim)
        ds = tuple(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
        return name, lambda L, x: x.squeeze(ds)
    if name == "expand":
        new = data.draw(st.integers(0, 2))
        target = [data.draw(st.integers(1, 3)) for _ in range(new)]
        for s in shape:
            target.append(data.draw(st.sampled_from([-1, 2, 3])) if s == 1 else
                          data.draw(st.sampled_from([-1, s])))
        return name, lambda L, x: x.expand(*target)
    if name == "diagonal":
        off = data.draw(st.integers(-3, 3))
        d1 = data.draw(st.integers(0, n - 1))
        d2 = data.draw(st.integers(0, n - 1).filter(lambda v: v != d1))
        return name, lambda L, x: x.diagonal(off, d1, d2)
    if name == "unfold":
        sz = data.draw(st.integers(0, max(size, 0)))
        step = data.draw(st.integers(1, 3))
        return name, lambda L, x: x.unfold(dim, sz, step)
    if name == "view_flat":
        return name, lambda L, x: x.view(-1) if data else x
    if name == "view_split":
        if size % 2 == 0 and size:
            new_shape = shape[:d] + (2, size // 2) + shape[d + 1:]
        else:
            new_shape = shape[:d] + (size, 1) + shape[d + 1:]
        use_reshape = data.draw(st.booleans())
        return name, (lambda L, x: x.reshape(new_shape)) if use_reshape else \
            (lambda L, x: x.view(new_shape))
    if name == "view_merge":
        d0 = data.draw(st.integers(0, n - 2))
        new_shape = shape[:d0] + (shape[d0] * shape[d0 + 1],) + shape[d0 + 2:]
        use_reshape = data.draw(st.booleans())
        return name, (lambda L, x: x.reshape(new_shape)) if use_reshape else \
            (lambda L, x: x.view(new_shape))
    # as_strided over the whole storage
    storage = t.untyped_storage().nbytes() // t.element_size()
    k = data.draw(st.integers(0, 3))
    sizes = [data.draw(st.integers(1, 3)) for _ in range(k)]
    strides = [data.draw(st.integers(0, 4)) for _ in range(k)]
    span = sum((a - 1) * b for a, b in zip(sizes, strides))
    if span >= storage:
        return "view_flat", lambda L, x: x.view(-1)
    off = data.draw(st.integers(0, storage - 1 - span))
    return name, lambda L, x: x.as_strided(sizes, strides, off)


def _addresses(t):
    idx = np.zeros(tuple(t.shape), dtype=np.int64) + t.storage_offset()
    for d, s in enumerate(t.stride()):
        shp = [1] * t.dim()
        shp[d] = t.shape[d]
        idx = idx + (np.arange(t.shape[d]) * s).reshape(shp)
    return idx.reshape(-1)


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride(), (e.stride(), t.stride())
    if t.numel():
        assert e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_view_chains(shape, data):
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    be, bt = ember.from_numpy(base.copy()), torch.from_numpy(base.copy())
    e, t = be, bt
    for _ in range(data.draw(st.integers(1, 6))):
        name, fn = draw_op(data, t)
        try:
            nt = fn(torch, t)
        except (RuntimeError, IndexError) as err:
            with pytest.raises(type(err)) as ee:
                fn(ember, e)
            assert str(ee.value).split("\n")[0] == str(err).split("\n")[0], name
            continue
        ne = fn(ember, e)
        _same(ne, nt)
        e, t = ne, nt
    shares = t.untyped_storage().data_ptr() == bt.untyped_storage().data_ptr()
    assert (e.untyped_storage().data_ptr() == be.untyped_storage().data_ptr()) == shares
    addr = _addresses(t)
    if t.numel() and len(np.unique(addr)) == addr.size:
        vals = np.asarray(-1.0 - np.arange(t.numel(), dtype=np.float64)).reshape(tuple(t.shape))
        e.copy_(ember.from_numpy(vals.copy()))
        t.copy_(torch.from_numpy(vals.copy()))
        np.testing.assert_array_equal(be.numpy(), bt.numpy())
        _same(e, t)
