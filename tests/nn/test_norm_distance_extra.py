"""instance_norm / InstanceNorm1d-3d, local_response_norm / LocalResponseNorm, channel_shuffle /
ChannelShuffle, pdist and cdist against torch: values, gradients, running stats, errors."""
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from harness import check, same_error

EF, TF = ember.nn.functional, torch.nn.functional
DTYPES = ["float32", "float64"]


def _leaf(base, dtype):
    """The same NumPy data as (ember, torch) leaves that require grad."""
    base = np.asarray(base, dtype=dtype)
    return (ember.tensor(base.copy(), requires_grad=True), torch.tensor(base.copy(), requires_grad=True))


def _rand(rng, shape, dtype):
    return _leaf(rng.standard_normal(shape), dtype)


def _tol(dtype):
    return {"atol": 1e-5, "rtol": 1e-4} if dtype == "float32" else {"atol": 1e-10, "rtol": 1e-9}


def _backward(eo, to, rng):
    """Backpropagate the same random upstream gradient through both outputs."""
    g = rng.standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g, dtype=eo.dtype))
    to.backward(torch.tensor(g, dtype=to.dtype))


# ---- instance_norm ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 2, 3, 2)])
def test_instance_norm_functional(rng, dtype, shape):
    (ex, tx), (ew, tw), (eb, tb) = (_rand(rng, shape, dtype), _rand(rng, shape[1], dtype),
                                    _rand(rng, shape[1], dtype))
    eo, to = EF.instance_norm(ex, weight=ew, bias=eb, eps=1e-3), TF.instance_norm(tx, weight=tw, bias=tb, eps=1e-3)
    check(eo, to, **_tol(dtype))
    _backward(eo, to, rng)
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        check(e.grad, t.grad, **_tol(dtype))
    check(EF.instance_norm(ex.detach()), TF.instance_norm(tx.detach()), **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_instance_norm_running_stats(rng, dtype):
    ex, tx = _rand(rng, (4, 3, 6), dtype)
    erm, trm = (ember.zeros(3, dtype=getattr(ember, dtype)), torch.zeros(3, dtype=getattr(torch, dtype)))
    erv, trv = (ember.ones(3, dtype=getattr(ember, dtype)), torch.ones(3, dtype=getattr(torch, dtype)))
    for _ in range(2):
        check(EF.instance_norm(ex, erm, erv, momentum=0.3), TF.instance_norm(tx, trm, trv, momentum=0.3),
              **_tol(dtype))
    check(erm, trm, **_tol(dtype))
    check(erv, trv, **_tol(dtype))
    # use_input_stats=False normalizes with the running stats
    eo = EF.instance_norm(ex, erm, erv, use_input_stats=False)
    to = TF.instance_norm(tx, trm, trv, use_input_stats=False)
    check(eo, to, **_tol(dtype))
    _backward(eo, to, rng)
    check(ex.grad, tx.grad, **_tol(dtype))
    check(erm, trm, **_tol(dtype))


def test_instance_norm_errors():
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(3)), match="Expected more than 1 spatial element")
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(3, 4)), match="Expected more than 1 spatial element")
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 1)),
               match="Expected more than 1 spatial element when training, got input size")
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4), use_input_stats=False))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4), L.zeros(3), use_input_stats=False))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(3), L.zeros(3), L.ones(3), use_input_stats=False))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4), L.zeros(4), L.ones(4)))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4), weight=L.ones(4)))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 3, 4, dtype=L.long)))


def test_instance_norm_empty():
    for shape in [(0, 3, 4), (2, 0, 4), (2, 3, 0)]:
        check(EF.instance_norm(ember.ones(*shape)), TF.instance_norm(torch.ones(*shape)))
    erm, trm = ember.zeros(3), torch.zeros(3)
    EF.instance_norm(ember.ones(0, 3, 4), erm, ember.ones(3))
    TF.instance_norm(torch.ones(0, 3, 4), trm, torch.ones(3))
    check(erm, trm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_instance_norm_module_train_eval(rng, dtype, n):
    shape = (2, 3) + (4, 3, 2)[:n]
    kw = {"affine": True, "track_running_stats": True, "momentum": 0.2, "dtype": getattr(torch, dtype)}
    em = getattr(ember.nn, f"InstanceNorm{n}d")(3, **{**kw, "dtype": getattr(ember, dtype)})
    tm = getattr(torch.nn, f"InstanceNorm{n}d")(3, **kw)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor([0.5, 1.5, -1.0]))
        tm.bias.copy_(torch.tensor([0.1, 0.0, -0.2]))
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert list(em.state_dict()) == list(tm.state_dict())
    for _ in range(3):
        ex, tx = _rand(rng, shape, dtype)
        eo, to = em(ex), tm(tx)
        check(eo, to, **_tol(dtype))
        _backward(eo, to, rng)
        check(ex.grad, tx.grad, **_tol(dtype))
    check(em.running_mean, tm.running_mean, **_tol(dtype))
    check(em.running_var, tm.running_var, **_tol(dtype))
    check(em.num_batches_tracked, tm.num_batches_tracked)
    check(em.weight.grad, tm.weight.grad, **_tol(dtype))
    check(em.bias.grad, tm.bias.grad, **_tol(dtype))
    em.eval(), tm.eval()
    ex, tx = _rand(rng, shape, dtype)
    check(em(ex), tm(tx), **_tol(dtype))
    check(em(ex[0]), tm(tx[0]), **_tol(dtype))  # unbatched
    check(em.running_mean, tm.running_mean, **_tol(dtype))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_instance_norm_module_defaults(rng, momentum):
    em, tm = ember.nn.InstanceNorm2d(3, momentum=momentum), torch.nn.InstanceNorm2d(3, momentum=momentum)
    assert repr(em) == repr(tm)
    assert em.weight is None and em.running_mean is None and list(em.state_dict()) == []
    ex, tx = _rand(rng, (3, 4, 5), "float32")  # unbatched
    check(em(ex), tm(tx), atol=1e-5, rtol=1e-4)
    em, tm = (ember.nn.InstanceNorm1d(3, track_running_stats=True, momentum=momentum),
              torch.nn.InstanceNorm1d(3, track_running_stats=True, momentum=momentum))
    ex, tx = _rand(rng, (3, 4), "float64")  # unbatched, tracked
    check(em(ex), tm(tx))
    check(em.running_mean, tm.running_mean)
    check(em.running_var, tm.running_var)


def test_instance_norm_module_errors_and_warning():
    same_error(lambda L: L.nn.InstanceNorm1d(3)(L.ones(5)))
    same_error(lambda L: L.nn.InstanceNorm1d(3)(L.ones(2, 3, 4, 5)))
    same_error(lambda L: L.nn.InstanceNorm2d(3)(L.ones(3, 4)))
    same_error(lambda L: L.nn.InstanceNorm3d(3)(L.ones(2, 3, 4)))
    same_error(lambda L: L.nn.InstanceNorm1d(5, affine=True)(L.ones(2, 3, 4)))
    same_error(lambda L: L.nn.InstanceNorm1d(5, affine=True)(L.ones(3, 4)))
    msgs = []
    for L in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.nn.InstanceNorm2d(3)(L.randn(2, 3, 4))  # read as unbatched: dim 0 has 2 features
        msgs.append([str(x.message) for x in w if issubclass(x.category, UserWarning)])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


def test_instance_norm_old_state_dict():
    msgs = []
    for L in (torch, ember):
        sd = OrderedDict(running_mean=L.zeros(3), running_var=L.ones(3))
        sd._metadata = {"": {}}  # no version: saved before 0.4.0, when running stats were always kept
        with pytest.raises(RuntimeError, match="Unexpected running stats buffer") as e:
            L.nn.InstanceNorm1d(3).load_state_dict(sd)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# ---- local_response_norm ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,size", [((2, 5, 4), 2), ((2, 5, 4), 3), ((1, 6, 3, 4), 5), ((2, 4, 2, 3, 2), 1),
                                        ((1, 3, 2, 2, 2, 2), 4)])
def test_local_response_norm(rng, dtype, shape, size):
    ex, tx = _rand(rng, shape, dtype)
    eo = EF.local_response_norm(ex, size, alpha=0.5, beta=0.6, k=2.0)
    to = TF.local_response_norm(tx, size, alpha=0.5, beta=0.6, k=2.0)
    check(eo, to, **_tol(dtype))
    _backward(eo, to, rng)
    check(ex.grad, tx.grad, **_tol(dtype))
    em, tm = ember.nn.LocalResponseNorm(size), torch.nn.LocalResponseNorm(size)
    assert repr(em) == repr(tm)
    check(em(ex), tm(tx), **_tol(dtype))


def test_local_response_norm_errors_and_empty():
    same_error(lambda L: L.nn.functional.local_response_norm(L.ones(3, 4), 2))
    same_error(lambda L: L.nn.LocalResponseNorm(0)(L.ones(2, 3, 4)))
    check(EF.local_response_norm(ember.ones(2, 0, 4), 2), TF.local_response_norm(torch.ones(2, 0, 4), 2))


# ---- channel_shuffle ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 2), ((2, 6, 3, 2), 3), ((1, 4, 2, 1, 3), 4),
                                          ((2, 4, 3), 1)])
def test_channel_shuffle(rng, dtype, shape, groups):
    ex, tx = _rand(rng, shape, dtype)
    eo, to = EF.channel_shuffle(ex, groups), TF.channel_shuffle(tx, groups)
    check(eo, to, check_stride=True)
    _backward(eo, to, rng)
    check(ex.grad, tx.grad)
    em, tm = ember.nn.ChannelShuffle(groups), torch.nn.ChannelShuffle(groups)
    assert repr(em) == repr(tm)
    check(em(ex), tm(tx))
    # a new tensor, never a view of the input
    eo = EF.channel_shuffle(ex.detach(), groups)
    eo.zero_()
    assert bool((ex != 0).all())


def test_channel_shuffle_special():
    x = np.arange(24.0).reshape(2, 6, 2)
    check(EF.channel_shuffle(ember.tensor(x).mT.mT, np.int64(3)), TF.channel_shuffle(torch.tensor(x), 3))
    check(EF.channel_shuffle(ember.tensor(x, dtype=ember.long), 2), TF.channel_shuffle(torch.tensor(x).long(), 2))
    for shape in [(0, 6, 3), (2, 0, 3)]:
        check(EF.channel_shuffle(ember.ones(*shape), 3), TF.channel_shuffle(torch.ones(*shape), 3))
    same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(2, 6), 2))
    same_error(lambda L: L.nn.ChannelShuffle(2)(L.ones(2, 6)))
    same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(2, 6, 3), 0))
    same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(2, 6, 3), -1))
    same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(2, 6, 3), 4))
    same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(2, 6, 3), 2.0))
    same_error(lambda L: L.nn.functional.channel_shuffle(L.ones(2, 6, 3), True))


# ---- pdist / cdist ------------------------------------------------------------------------------
PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]


def _with_ties(rng, shape):
    """Integer data with repeated rows (zero distances) and tied coordinates."""
    x = rng.integers(-2, 3, size=shape).astype(np.float64)
    x[..., 1, :] = x[..., 0, :]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", PS)
def test_pdist(rng, dtype, p):
    for base in (rng.standard_normal((5, 3)), _with_ties(rng, (6, 3))):
        ex, tx = _leaf(base, dtype)
        eo, to = EF.pdist(ex, p), TF.pdist(tx, p)
        check(eo, to, **_tol(dtype))
        _backward(eo, to, rng)
        check(ex.grad, tx.grad, **_tol(dtype))
    check(ember.pdist(ex, p=p), torch.pdist(tx, p=p), **_tol(dtype))


def test_pdist_edge_and_errors(rng):
    for shape in [(1, 3), (0, 3), (4, 0)]:
        ex, tx = _leaf(np.ones(shape), "float32")
        eo, to = ember.pdist(ex), torch.pdist(tx)
        check(eo, to)
        if shape[0]:  # torch's pdist backward crashes on zero rows
            eo.sum().backward(), to.sum().backward()
            check(ex.grad, tx.grad)
    same_error(lambda L: L.pdist(L.ones(3)))
    same_error(lambda L: L.pdist(L.ones(2, 3, 4)))
    same_error(lambda L: L.pdist(L.ones(3, 4, dtype=L.long)))
    same_error(lambda L: L.pdist(L.ones(3, 4), -1))
    same_error(lambda L: L.pdist(L.ones(3, 4, dtype=L.float16)))
    same_error(lambda L: L.nn.functional.pdist(L.ones(3, 4, dtype=L.bfloat16)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", PS)
def test_cdist(rng, dtype, p):
    cases = [(rng.standard_normal((4, 3)), rng.standard_normal((5, 3))),
             (_with_ties(rng, (2, 4, 3)), _with_ties(rng, (3, 1, 2, 3))),  # batch dims broadcast
             (rng.standard_normal((1, 3, 2)), rng.standard_normal((2, 5, 2)))]
    for a, b in cases:
        for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
            (e1, t1), (e2, t2) = _leaf(a, dtype), _leaf(b, dtype)
            eo, to = ember.cdist(e1, e2, p, mode), torch.cdist(t1, t2, p, mode)
            check(eo, to, **_tol(dtype))
            _backward(eo, to, rng)
            check(e1.grad, t1.grad, **_tol(dtype))
            check(e2.grad, t2.grad, **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cdist_mm(rng, dtype):
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == "float32" else _tol(dtype)
    cases = [((30, 4), (6, 4), "use_mm_for_euclid_dist_if_necessary"),
             ((2, 3, 4), (1, 5, 4), "use_mm_for_euclid_dist"),
             ((30, 4), (6, 4), "donot_use_mm_for_euclid_dist")]
    for s1, s2, mode in cases:
        (e1, t1), (e2, t2) = _rand(rng, s1, dtype), _rand(rng, s2, dtype)
        eo, to = ember.cdist(e1, e2, compute_mode=mode), torch.cdist(t1, t2, compute_mode=mode)
        check(eo, to, **tol)
        _backward(eo, to, rng)
        check(e1.grad, t1.grad, **tol)
        check(e2.grad, t2.grad, **tol)
    # float16 goes through the matmul only
    x1, x2 = rng.standard_normal((30, 3)), rng.standard_normal((2, 3))
    check(ember.cdist(ember.tensor(x1, dtype=ember.float16), ember.tensor(x2, dtype=ember.float16)),
          torch.cdist(torch.tensor(x1, dtype=torch.float16), torch.tensor(x2, dtype=torch.float16)),
          atol=1e-2, rtol=1e-2)
    # exact zero distances through the matmul: zero gradient there, like torch's
    (e1, t1) = _leaf(_with_ties(rng, (30, 3)), dtype)
    eo, to = ember.cdist(e1, e1), torch.cdist(t1, t1)
    check(eo, to, **tol)
    _backward(eo, to, rng)
    check(e1.grad, t1.grad, **tol)


def test_cdist_empty():
    for s1, s2, p in [((0, 3), (4, 3), 2.0), ((2, 0), (4, 0), 2.0), ((2, 0), (4, 0), math.inf), ((2, 3, 0), (4, 0), 0.0),
                      ((0, 2, 3), (1, 30, 3), 2.0)]:
        (e1, t1), (e2, t2) = _leaf(np.ones(s1), "float32"), _leaf(np.ones(s2), "float32")
        eo, to = ember.cdist(e1, e2, p), torch.cdist(t1, t2, p)
        check(eo, to)
        eo.sum().backward(), to.sum().backward()
        check(e1.grad, t1.grad)
    check(ember.cdist(ember.ones(0, 3), ember.ones(2, 3, dtype=ember.float64)),
          torch.cdist(torch.ones(0, 3), torch.ones(2, 3, dtype=torch.float64)))


def test_cdist_errors():
    cases = [
        lambda L: L.cdist(L.ones(3), L.ones(2, 3)),
        lambda L: L.cdist(L.ones(2, 3), L.ones(3)),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 4)),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 4), p=-1),
        lambda L: L.cdist(L.ones(2, 3, dtype=L.long), L.ones(2, 3)),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3, dtype=L.long)),
        lambda L: L.cdist(L.ones(2, 3, dtype=L.long), L.ones(2, 3), p=-1),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), p=-1),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), p=float("nan")),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), p=-1, compute_mode="foo"),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3), compute_mode="foo"),
        lambda L: L.cdist(L.ones(3, 2, 3), L.ones(4, 5, 3)),
        lambda L: L.cdist(L.ones(0, 2, 3), L.ones(4, 5, 3)),
        lambda L: L.cdist(L.ones(2, 3), L.ones(2, 3, dtype=L.float64)),
        lambda L: L.cdist(L.ones(2, 3, dtype=L.float64), L.ones(2, 3)),
        lambda L: L.cdist(L.ones(30, 3), L.ones(2, 3, dtype=L.float64)),
        lambda L: L.cdist(L.ones(2, 3, dtype=L.float16), L.ones(2, 3, dtype=L.float16)),
        lambda L: L.cdist(L.ones(2, 3, dtype=L.bfloat16), L.ones(2, 3, dtype=L.bfloat16), p=1),
    ]
    for fn in cases:
        same_error(fn)
