"""Memory formats against torch: channels_last / channels_last_3d / contiguous_format /
preserve_format through clone, Tensor.to, Tensor.contiguous, empty, the *_like factories and
is_contiguous (strides, values, aliasing, errors), on the CPU and on meta, and through autograd."""
import numpy as np
import pytest
import torch

import ember
from harness import check, np_data, pair_from, same_error

FORMATS = ["none", "preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]


def fmt(lib, name):
    return None if name == "none" else getattr(lib, name)


def kw(lib, name):
    return {} if name == "none" else {"memory_format": getattr(lib, name)}


# (name, shape, strides or None (contiguous), storage size): inputs seen through as_strided
INPUTS = [
    ("nchw", (2, 3, 4, 5), None),
    ("nhwc", (2, 3, 4, 5), (60, 1, 15, 3)),
    ("permuted", (2, 3, 4, 5), (1, 2, 30, 6)),            # dense, neither format
    ("sliced", (2, 3, 4, 5), (120, 40, 10, 2)),           # not dense (step 2 in W)
    ("sliced_nhwc", (2, 3, 4, 5), (120, 1, 30, 6)),       # channels-last order, not dense
    ("expanded", (2, 3, 4, 5), (0, 20, 5, 1)),
    ("n111", (3, 1, 1, 1), None),
    ("n111_cl", (3, 1, 1, 1), (1, 1, 1, 1)),
    ("c1", (2, 1, 4, 5), (20, 1, 5, 1)),                  # both contiguous and channels-last
    ("odd_size1", (2, 1, 4, 5), (20, 7, 5, 1)),           # a size-1 dim with any stride
    ("h1w1", (2, 3, 1, 1), (3, 1, 3, 3)),
    ("ncdhw", (2, 3, 4, 5, 6), None),
    ("ndhwc", (2, 3, 4, 5, 6), (360, 1, 90, 18, 3)),
    ("sliced5", (2, 3, 4, 5, 3), (360, 120, 30, 6, 2)),
    ("permuted5", (2, 3, 4, 5, 6), (1, 2, 6, 24, 120)),
    ("3d", (3, 4, 5), None),
    ("3d_t", (3, 4, 5), (1, 3, 12)),
    ("2d_t", (4, 3), (1, 4)),
    ("col", (3, 1), (1, 3)),
    ("1d", (7,), None),
    ("0d", (), None),
]


def _storage_size(shape, strides):
    if strides is None:
        return int(np.prod(shape)) if shape else 1
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def make(name, dtype="float32", seed=0, device=None):
    shape, strides = next((s, st) for n, s, st in INPUTS if n == name)
    base = np_data((_storage_size(shape, strides),), dtype, np.random.default_rng(seed))
    if strides is None:
        return pair_from(base.reshape(shape), dtype, device=device)
    return pair_from(base, dtype, shape, strides, device=device)


def to_meta(e, t):
    # as_strided on meta keeps the strides exactly
    return (ember.empty_strided(e.shape, e.stride(), dtype=e.dtype, device="meta"),
            torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta"))


def run(fn, lib, x):
    try:
        return fn(lib, x), None
    except Exception as exc:  # noqa: BLE001 - compared with torch's below
        return None, exc


def compare(fn, e, t, values=True, alias=True):
    re_, ee = run(fn, ember, e)
    rt, te = run(fn, torch, t)
    if te is not None or ee is not None:
        assert te is not None, f"torch: {tuple(rt.stride())}, ember raised {ee!r}"
        assert ee is not None, f"ember: {tuple(re_.stride())}, torch raised {te!r}"
        assert type(ee) is type(te), (ee, te)
        assert str(ee).split("\n")[0] == str(te).split("\n")[0], (str(ee), str(te))
        return
    assert tuple(re_.shape) == tuple(rt.shape)
    assert tuple(re_.stride()) == tuple(rt.stride()), (tuple(re_.stride()), tuple(rt.stride()))
    assert str(re_.dtype).split(".")[1] == str(rt.dtype).split(".")[1]
    for f in ("contiguous_format", "channels_last", "channels_last_3d"):
        assert re_.is_contiguous(memory_format=getattr(ember, f)) == \
            rt.is_contiguous(memory_format=getattr(torch, f)), f
    if alias:
        assert (re_ is e) == (rt is t), f"aliasing: ember {re_ is e}, torch {rt is t}"
    if values and t.device.type == "cpu":
        check(re_, rt)


COPIES = {
    "clone": lambda lib, x, f: x.clone(**kw(lib, f)),
    "torch.clone": lambda lib, x, f: lib.clone(x, **kw(lib, f)),
    "to": lambda lib, x, f: x.to(**kw(lib, f)),
    "to_dtype": lambda lib, x, f: x.to(lib.float64, **kw(lib, f)),
    "to_copy": lambda lib, x, f: x.to(x.dtype, copy=True, **kw(lib, f)),
    "to_device": lambda lib, x, f: x.to(x.device, **kw(lib, f)),
    "contiguous": lambda lib, x, f: x.contiguous(**kw(lib, f)),
}
LIKES = {
    "empty_like": lambda lib, x, f: lib.empty_like(x, **kw(lib, f)),
    "zeros_like": lambda lib, x, f: lib.zeros_like(x, **kw(lib, f)),
    "ones_like": lambda lib, x, f: lib.ones_like(x, **kw(lib, f)),
    "full_like": lambda lib, x, f: lib.full_like(x, 2.5, **kw(lib, f)),
    "rand_like": lambda lib, x, f: lib.rand_like(x, **kw(lib, f)),
    "randn_like": lambda lib, x, f: lib.randn_like(x, **kw(lib, f)),
    "randint_like": lambda lib, x, f: lib.randint_like(x, 5, **kw(lib, f)),
    "empty_like_dtype": lambda lib, x, f: lib.empty_like(x, dtype=lib.int32, **kw(lib, f)),
}
NAMES = [n for n, _, _ in INPUTS]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("op", sorted(COPIES))
@pytest.mark.parametrize("f", FORMATS)
def test_copies(op, f, device):
    for name in NAMES:
        e, t = make(name)
        if device == "meta":
            e, t = to_meta(e, t)
        try:
            compare(lambda lib, x: COPIES[op](lib, x, f), e, t)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from exc


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("op", sorted(LIKES))
@pytest.mark.parametrize("f", FORMATS)
def test_likes(op, f, device):
    for name in NAMES:
        e, t = make(name)
        if device == "meta":
            e, t = to_meta(e, t)
        try:
            compare(lambda lib, x: LIKES[op](lib, x, f), e, t, values=op in ("zeros_like", "ones_like", "full_like"),
                    alias=False)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from exc


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("f", FORMATS)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4, 5, 6), (2, 3, 1, 5), (1, 1, 1, 1), (3, 4, 5), (4,),
                                   (), (2, 3, 4, 5, 6, 7)])
def test_empty(shape, f, device):
    def fn(lib, _):
        return lib.empty(shape, device=device, **kw(lib, f))
    compare(fn, None, None, values=False, alias=False)

    if shape:  # (torch.empty() with no size is a TypeError)
        def fn2(lib, _):
            return lib.empty(*shape, dtype=lib.float64, device=device, **kw(lib, f))
        compare(fn2, None, None, values=False, alias=False)


@pytest.mark.parametrize("shape", [(2, 0, 4, 5), (2, 3, 0, 5), (0, 3, 4, 5, 6)])
@pytest.mark.parametrize("f", ["channels_last", "channels_last_3d"])
def test_empty_zero_size_meta(shape, f):
    # c10's channels-last strides multiply by a size 0 (CPU tensors of no elements report
    # contiguous strides in ember: their NumPy arrays have no layout)
    compare(lambda lib, _: lib.empty(shape, device="meta", **kw(lib, f)), None, None, values=False, alias=False)


@pytest.mark.parametrize("op", sorted(COPIES) + sorted(LIKES))
def test_zero_size_meta(op):
    # zero-size inputs on meta (on the CPU an empty tensor reports contiguous strides in ember)
    fn = COPIES.get(op) or LIKES[op]
    for shape, strides in [((2, 0, 4, 5), None), ((2, 0, 4, 5), (0, 1, 0, 0)), ((2, 3, 0, 5), (0, 1, 15, 3)),
                           ((0, 3, 4, 5, 6), None), ((2, 3, 0, 5, 6), (0, 1, 0, 0, 3)), ((0, 4), (1, 0))]:
        e = ember.empty_strided(shape, strides or ember.empty(shape).stride(), device="meta")
        t = torch.empty_strided(shape, strides or torch.empty(shape).stride(), device="meta")
        for f in FORMATS:
            try:
                compare(lambda lib, x: fn(lib, x, f), e, t, values=False, alias=op in COPIES)
            except AssertionError as exc:
                raise AssertionError(f"{shape} {strides} {f}: {exc}") from exc


def test_is_contiguous():
    for name in NAMES:
        e, t = make(name)
        for f in FORMATS:
            re_, ee = run(lambda lib, x: x.is_contiguous(**kw(lib, f)), ember, e)
            rt, te = run(lambda lib, x: x.is_contiguous(**kw(lib, f)), torch, t)
            assert (re_, type(ee)) == (rt, type(te)), (name, f, re_, rt, ee, te)
    # empty tensors: c10 has no shortcut for the channels-last formats (on meta: an empty CPU
    # tensor's NumPy array has no layout, ember reports contiguous strides for it)
    for shape in [(0, 3, 4, 5), (2, 0, 4, 5, 6), (2, 3, 0, 5)]:
        for strides in [None, "cl"]:
            t = torch.empty(shape, device="meta")
            e = ember.empty(shape, device="meta")
            if strides:
                f = "channels_last" if len(shape) == 4 else "channels_last_3d"
                t = torch.empty(shape, memory_format=getattr(torch, f), device="meta")
                e = ember.empty_strided(shape, t.stride(), device="meta")
            for f in FORMATS:
                assert e.is_contiguous(**kw(ember, f)) == t.is_contiguous(**kw(torch, f)), (shape, strides, f)


def test_constants():
    assert repr(ember.channels_last_3d) == "ember.channels_last_3d"
    assert isinstance(ember.channels_last_3d, ember.memory_format)
    assert ember.channels_last_3d is not ember.channels_last
    e = ember.empty(2, 3, 4, 5, 6, memory_format=ember.channels_last_3d)
    assert e.stride() == (360, 1, 90, 18, 3)
    assert e.is_contiguous(memory_format=ember.channels_last_3d)
    assert not e.is_contiguous()
    import pickle
    assert pickle.loads(pickle.dumps(ember.channels_last_3d)) is ember.channels_last_3d
    assert pickle.loads(pickle.dumps(ember.channels_last)) is ember.channels_last


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "bfloat16", "complex64"])
def test_dtypes(dtype):
    for name in ("nchw", "sliced", "ndhwc", "permuted5"):
        e, t = make(name, dtype)
        for f in ("channels_last", "channels_last_3d", "contiguous_format", "preserve_format"):
            compare(lambda lib, x: x.clone(**kw(lib, f)), e, t)
            compare(lambda lib, x: x.contiguous(**kw(lib, f)), e, t)
            compare(lambda lib, x: x.to(lib.float32, **kw(lib, f)), e, t)


def test_errors():
    def err(fn):
        compare(lambda lib, _: fn(lib), None, None)
        with pytest.raises(RuntimeError):
            fn(ember)
    err(lambda lib: lib.randn(3, 4, 5).to(memory_format=lib.channels_last))
    err(lambda lib: lib.randn(3, 4, 5).contiguous(memory_format=lib.channels_last))
    err(lambda lib: lib.randn(3, 4, 5).clone(memory_format=lib.channels_last))
    err(lambda lib: lib.empty_like(lib.randn(3, 4, 5), memory_format=lib.channels_last))
    err(lambda lib: lib.empty(3, 4, 5, memory_format=lib.channels_last))
    err(lambda lib: lib.randn(2, 3, 4, 5).to(memory_format=lib.channels_last_3d))
    err(lambda lib: lib.randn(2, 3, 4, 5).contiguous(memory_format=lib.channels_last_3d))
    err(lambda lib: lib.zeros_like(lib.randn(2, 3, 4, 5), memory_format=lib.channels_last_3d))
    err(lambda lib: lib.empty(2, 3, 4, 5, memory_format=lib.channels_last_3d, device="meta"))
    err(lambda lib: lib.empty(2, 3, memory_format=lib.preserve_format))
    err(lambda lib: lib.randn(3, 4).t().contiguous(memory_format=lib.preserve_format))
    err(lambda lib: lib.empty(-1, 3, 4, 5, memory_format=lib.channels_last))


@pytest.mark.parametrize("via", ["contiguous", "clone", "to", "to_dtype"])
@pytest.mark.parametrize("leaf", ["nchw", "nhwc", "permuted", "ndhwc", "ncdhw"])
@pytest.mark.parametrize("f", ["channels_last", "channels_last_3d", "contiguous_format", "preserve_format"])
def test_autograd(leaf, f, via):
    """Gradients through the copies; a leaf's .grad is laid out as the leaf (AccumulateGrad's
    layout contract)."""
    if via == "contiguous" and f == "preserve_format":
        via = "clone"
    for head in ("sum", "mul_nchw", "mul_nhwc"):
        out = {}
        for lib in (ember, torch):
            e, t = make(leaf)
            x = (e if lib is ember else t).detach().requires_grad_()
            mf = getattr(lib, f)
            try:
                y = (x.contiguous(memory_format=mf) if via == "contiguous" else
                     x.clone(memory_format=mf) if via == "clone" else
                     x.to(memory_format=mf) if via == "to" else x.to(lib.float64, memory_format=mf))
            except RuntimeError as exc:
                out[lib] = str(exc)
                continue
            if head == "sum":
                loss = y.sum()
            else:
                w = lib.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)
                if head == "mul_nhwc" and y.dim() == 4:
                    w = w.contiguous(memory_format=lib.channels_last)
                loss = (y * w).sum()
            loss.backward()
            out[lib] = (tuple(y.stride()), x.grad)
        if isinstance(out[torch], str):
            assert out[ember] == out[torch]
            continue
        assert out[ember][0] == out[torch][0]
        check(out[ember][1], out[torch][1], check_stride=True)


def test_to_through_module():
    # nn.Module.to(memory_format=) converts the 4-d parameters only
    for lib in (ember, torch):
        m = lib.nn.Conv2d(3, 4, 3)
        m.to(memory_format=lib.channels_last)
        assert m.weight.is_contiguous(memory_format=lib.channels_last)
        assert m.weight.stride() == (27, 1, 9, 3)
        assert m.bias.stride() == (1,)


@pytest.mark.parametrize("method", ["float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte",
                                    "bool", "cfloat", "cdouble", "cpu"])
@pytest.mark.parametrize("f", FORMATS)
def test_conversion_methods(method, f):
    for name in ("nchw", "nhwc", "permuted", "ndhwc", "2d_t"):
        e, t = make(name)
        # (negative floats to uint8 are undefined behaviour in C++: values not compared)
        compare(lambda lib, x: getattr(x, method)(**kw(lib, f)), e, t, values=method != "byte")


@pytest.mark.parametrize("device", ["cuda", "adev"])
def test_other_backends(device):
    """The CUDA backend (numba's simulator in CI) and examples/async_device: strides as torch's CPU
    ones, values as the CPU's."""
    if device == "cuda" and not ember.cuda.is_available():
        pytest.skip("no CUDA backend here (numba with a GPU, or EMBER_CUDA_SIM=1)")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from examples import async_device
    if device == "adev":
        async_device.install()
    try:
        for name in ("nchw", "nhwc", "permuted", "sliced", "ndhwc", "sliced5", "3d_t"):
            d, t = make(name, device=device)
            for f in FORMATS:
                for op in ("clone", "contiguous", "to", "empty_like"):
                    fn = (COPIES.get(op) or LIKES[op])
                    rt, te = run(lambda lib, x: fn(lib, x, f), torch, t)
                    re_, ee = run(lambda lib, x: fn(lib, x, f), ember, d)
                    if te is not None:
                        assert ee is not None and str(ee) == str(te), (name, f, op, ee, te)
                        continue
                    assert ee is None, (name, f, op, ee)
                    assert re_.device.type == device
                    assert tuple(re_.stride()) == tuple(rt.stride()), (name, f, op, re_.stride(), rt.stride())
                    if op != "empty_like":
                        check(re_.cpu(), rt)
            for shape, f in [((2, 3, 4, 5), "channels_last"), ((2, 3, 4, 5, 6), "channels_last_3d"),
                             ((2, 3, 4), "channels_last"), ((2, 3), "preserve_format")]:
                rt, te = run(lambda lib, _: lib.empty(shape, memory_format=getattr(lib, f)), torch, None)
                re_, ee = run(lambda lib, _: lib.empty(shape, memory_format=getattr(lib, f), device=device), ember, None)
                if te is not None:
                    assert ee is not None and str(ee) == str(te), (shape, f, ee, te)
                else:
                    assert tuple(re_.stride()) == tuple(rt.stride()), (shape, f)
    finally:
        if device == "adev":
            async_device.uninstall()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("leaf", ["nchw", "nhwc", "ndhwc", "sliced", "permuted"])
def test_grad_layout_contract(leaf):
    """AccumulateGrad: the first gradient is laid out as a dense leaf (contiguous for another leaf),
    with and without create_graph; a second one adds in place."""
    for create_graph in (False, True):
        out = {}
        for lib in (ember, torch):
            e, t = make(leaf)
            x = (e if lib is ember else t).detach().requires_grad_()
            y = x.contiguous(memory_format=lib.channels_last) if x.dim() == 4 else x.contiguous()
            g = lib.ones_like(y).contiguous(memory_format=lib.channels_last) if x.dim() == 4 else \
                lib.ones_like(y).transpose(0, 1).contiguous().transpose(0, 1)
            (y * y).backward(g, create_graph=create_graph)
            s1 = tuple(x.grad.stride())
            (y * 3).sum().backward()
            out[lib] = (s1, tuple(x.grad.stride()), x.grad.detach())
        assert out[ember][:2] == out[torch][:2], (create_graph, out[ember][:2], out[torch][:2])
        check(out[ember][2], out[torch][2])


def test_module_to_formats():
    for lib in (ember, torch):
        m = lib.nn.Conv3d(2, 3, 3)
        m.to(memory_format=lib.channels_last_3d)
        assert m.weight.stride() == (54, 1, 18, 6, 2) and m.bias.stride() == (1,)
    same_error(lambda lib: lib.nn.Conv3d(2, 3, 3).to(memory_format=lib.channels_last))
    same_error(lambda lib: lib.nn.Conv2d(2, 3, 3).to(memory_format=lib.channels_last_3d))


@pytest.mark.parametrize("name", ["gelu", "erf", "logsigmoid"])
@pytest.mark.parametrize("view", ["permuted", "transposed_slice", "flipped"])
def test_unary_special_kernels_follow_torchs_output_layout(name, view):
    """gelu and erf (float32 fast kernels) lay their output out as a permuted input is laid out, as
    TensorIterator does; log_sigmoid's forward returns a contiguous tensor in torch."""
    a = np.random.default_rng(0).standard_normal((3, 4, 6)).astype(np.float32)
    res = {}
    for lib in (ember, torch):
        x = lib.tensor(a)
        x = {"permuted": lambda: x.permute(2, 0, 1), "transposed_slice": lambda: x[:, :, ::2].transpose(0, 2),
             "flipped": lambda: x.flip(1).permute(1, 2, 0)}[view]()
        f = {"gelu": lib.nn.functional.gelu, "erf": lib.erf, "logsigmoid": lib.nn.functional.logsigmoid}[name]
        y = f(x)
        res[lib] = (tuple(y.stride()), y)
    assert res[ember][0] == res[torch][0]
    check(res[ember][1], res[torch][1])
