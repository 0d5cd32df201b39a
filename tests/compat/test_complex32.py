"""complex32 (torch.chalf, "ComplexHalf") against torch 2.13's CPU build: the dtype and promotion,
factories, conversions, views, the kernels torch supports for it (values bit for bit, through
view_as_real's float16 bit patterns), and the errors of the kernels torch refuses it in."""
import pickle

import numpy as np
import pytest
import torch

import ember
from harness import same_error

pytestmark = [pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental"),
              pytest.mark.filterwarnings("ignore:Casting complex values to real")]

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex32", "complex64", "complex128"]


def _name(d):
    return str(d).split(".")[1]


def bits(t):
    """A tensor's value as comparable Python data: complex32 as the int16 patterns of its parts."""
    if t.dtype in (torch.chalf, ember.chalf):
        lib = torch if isinstance(t, torch.Tensor) else ember
        return lib.view_as_real(t.resolve_conj()).contiguous().view(lib.int16).tolist()
    if t.dtype in (torch.float16, ember.float16):
        lib = torch if isinstance(t, torch.Tensor) else ember
        return t.contiguous().view(lib.int16).tolist()
    return repr(t.tolist())  # nan == nan, -0.0 != 0.0


def same(e, t, strides=True):
    assert _name(e.dtype) == _name(t.dtype), (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    if strides:
        assert e.stride() == t.stride(), (e.stride(), t.stride())
    assert bits(e) == bits(t)


def pair(values):
    """The same complex32 tensor in ember and torch (from complex64 values)."""
    v = np.asarray(values, np.complex64)
    return ember.tensor(v).to(ember.chalf), torch.from_numpy(v.copy()).to(torch.chalf)


def random_pair(rng, shape, special=True):
    re = rng.standard_normal(shape) * rng.choice([1, 100, 1e4], shape)
    im = rng.standard_normal(shape) * rng.choice([1, 100, 1e4], shape)
    if special:
        flat_re, flat_im = re.reshape(-1), im.reshape(-1)
        sv = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 6e-8, -1e5]
        for i in range(min(len(sv), flat_re.size)):
            flat_re[i] = sv[i]
            flat_im[-1 - i] = sv[(i + 3) % len(sv)]
    return pair((re + 1j * im).astype(np.complex64))


# ---- the dtype -------------------------------------------------------------------------------------
def test_dtype_attributes():
    assert ember.complex32 is ember.chalf
    assert repr(ember.chalf) == "ember.complex32"
    for lib in (torch, ember):
        d = lib.chalf
        assert d.is_complex and not d.is_floating_point and d.is_signed and d.itemsize == 4
        assert d.to_real() is lib.float16 and d.to_complex() is lib.chalf
        assert lib.float16.to_complex() is lib.chalf and lib.bfloat16.to_complex() is lib.complex64
    assert pickle.loads(pickle.dumps(ember.chalf)) is ember.chalf
    e, t = pair([1 + 2j])
    assert e.element_size() == t.element_size() == 4 and e.is_complex() and not e.is_floating_point()
    assert e.type().replace("ember", "torch") == t.type() == "torch.ComplexHalfTensor"


@pytest.mark.parametrize("other", DTYPES)
def test_promote_types(other):
    for a, b in ((ember.chalf, getattr(ember, other)), (getattr(ember, other), ember.chalf)):
        t = torch.promote_types(getattr(torch, _name(a)), getattr(torch, _name(b)))
        assert _name(ember.promote_types(a, b)) == _name(t)


def test_result_type_with_scalars_and_0d():
    cases = [lambda L: L.ones(2, dtype=L.half) * 1j, lambda L: L.ones(2, dtype=L.half) * L.tensor(1j),
             lambda L: L.ones(2, dtype=L.bfloat16) * 1j, lambda L: L.ones(2, dtype=L.int8) * L.tensor(1j, dtype=L.chalf),
             lambda L: L.ones(2, dtype=L.chalf) + L.ones(2), lambda L: L.ones(2, dtype=L.chalf) * 2.5,
             lambda L: L.ones(2, dtype=L.chalf) * L.tensor(2.0, dtype=L.float64)]
    for f in cases:
        same(f(ember), f(torch))
    assert _name(ember.result_type(ember.ones(2, dtype=ember.chalf), 1.0)) == "complex32"


def test_finfo():
    e, t = ember.finfo(ember.chalf), torch.finfo(torch.chalf)
    assert (e.bits, e.eps, e.max, e.tiny) == (t.bits, t.eps, t.max, t.tiny)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] == "float16"


# ---- factories and conversions -----------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda L: L.zeros(2, 3, dtype=L.chalf), lambda L: L.ones(2, 3, dtype=L.chalf),
    lambda L: L.full((2,), 1 - 2j, dtype=L.chalf), lambda L: L.full((2,), 3, dtype=L.chalf),
    lambda L: L.full((2,), 70000, dtype=L.chalf), lambda L: L.tensor([1, 2.5, 1j], dtype=L.chalf),
    lambda L: L.tensor(1.5 - 2j, dtype=L.chalf), lambda L: L.tensor([[True], [False]], dtype=L.chalf),
    lambda L: L.zeros_like(L.ones(2, dtype=L.chalf)), lambda L: L.ones_like(L.ones(2, dtype=L.chalf)),
    lambda L: L.full_like(L.ones(2, dtype=L.chalf), 2j), lambda L: L.ones(2, dtype=L.chalf).new_full((2,), 3 - 1j),
    lambda L: L.ones(2, dtype=L.chalf).new_ones(3), lambda L: L.ones(2, dtype=L.chalf).new_zeros(3),
    lambda L: L.linspace(0, 1, 1, dtype=L.chalf), lambda L: L.logspace(0, 1, 1, dtype=L.chalf),
    lambda L: L.linspace(0, 1, 0, dtype=L.chalf), lambda L: L.ones(3).chalf(),
    lambda L: L.ones(2, 2, dtype=L.chalf).fill_(2 + 1j), lambda L: L.ones(2, dtype=L.chalf).fill_(L.tensor(1 + 1j)),
    lambda L: L.ones(2, 2, dtype=L.chalf).zero_(),
])
def test_factories(make):
    same(make(ember), make(torch))
    assert ember.empty(2, 3, dtype=ember.chalf).shape == (2, 3)


def test_random_factories_match_torch():
    for name in ("rand", "randn"):
        torch.manual_seed(3)
        ember.manual_seed(3)
        same(getattr(ember, name)(4, 3, dtype=ember.chalf), getattr(torch, name)(4, 3, dtype=torch.chalf))
    torch.manual_seed(4)
    ember.manual_seed(4)
    same(ember.empty(5, dtype=ember.chalf).normal_(), torch.empty(5, dtype=torch.chalf).normal_())
    same(ember.empty(5, dtype=ember.chalf).uniform_(), torch.empty(5, dtype=torch.chalf).uniform_())


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "complex32"])
def test_to_and_from(rng, dtype):
    e, t = random_pair(rng, (3, 4))
    same(e.to(getattr(ember, dtype)), t.to(getattr(torch, dtype)))
    same(e.t().to(getattr(ember, dtype)), t.t().to(getattr(torch, dtype)))
    src = (rng.standard_normal((3, 4)) * 3000).astype(np.float64)
    if dtype.startswith("complex"):
        src = src + 1j * (rng.standard_normal((3, 4)) * 3)
    if dtype in ("bool", "uint8"):
        src = np.abs(src)
    tt = torch.from_numpy(src.copy()).to(getattr(torch, dtype))
    et = ember.tensor(src).to(getattr(ember, dtype))
    same(et.to(ember.chalf), tt.to(torch.chalf))
    # copy_ both ways, broadcasting and non-contiguous
    same(ember.zeros(4, 3, dtype=ember.chalf).copy_(et.t()), torch.zeros(4, 3, dtype=torch.chalf).copy_(tt.t()))
    same(ember.zeros(3, 4, dtype=getattr(ember, dtype)).copy_(e), torch.zeros(3, 4, dtype=getattr(torch, dtype)).copy_(t))


def test_conversion_rounding_through_float(rng):
    # doubles become Half through float (two roundings), as c10::Half(double) does
    v = np.array([1 + 2 ** -11 + 2 ** -40, 65519.99, 65520.0, 2 ** -25 + 2 ** -50, 2049, -70000], np.float64)
    same(ember.tensor(v).to(ember.chalf), torch.from_numpy(v.copy()).to(torch.chalf))
    same(ember.tensor(v, dtype=ember.chalf), torch.tensor(v, dtype=torch.chalf))
    iv = np.array([2049, 4097, 65519, 65520, 100000, -70000], np.int64)
    same(ember.tensor(iv).to(ember.chalf), torch.from_numpy(iv.copy()).to(torch.chalf))


def test_python_values():
    e, t = pair([[1 + 2j, 3 - 1j], [0.5j, -2]])
    assert e.tolist() == t.tolist()
    assert e[0, 0].item() == t[0, 0].item() == 1 + 2j
    assert complex(e[1, 0]) == complex(t[1, 0]) and bool(e[0, 0]) == bool(t[0, 0])
    assert repr(e).replace("ember", "torch") == repr(t)
    assert repr(e[0]).replace("ember", "torch") == repr(t[0]) == "tensor([1.+2.j, 3.-1.j], dtype=torch.complex32)"
    assert str(ember.zeros(0, dtype=ember.chalf)).replace("ember", "torch") == str(torch.zeros(0, dtype=torch.chalf))
    same_error(lambda L: float(L.tensor([1 + 2j], dtype=L.chalf)))


def test_numpy_is_refused():
    same_error(lambda L: L.ones(2, dtype=L.chalf).numpy())
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        np.asarray(ember.ones(2, dtype=ember.chalf))
    structured = np.zeros(2, dtype=[("re", "<f2"), ("im", "<f2")])
    with pytest.raises(TypeError, match="numpy.void"):
        ember.from_numpy(structured)
    with pytest.raises(TypeError, match="numpy.void"):
        ember.tensor(structured)


def test_serialization(tmp_path):
    e, t = pair([[1 + 2j, 3 - 1j], [0.5j, -2]])
    ember.save({"x": e, "v": e.t()}, tmp_path / "a.pt")
    d = ember.load(tmp_path / "a.pt")
    same(d["x"], t)
    same(d["v"], t.t())
    torch.save(t, tmp_path / "t.pt")
    same(ember.load(tmp_path / "t.pt"), t)
    ember.save(e, tmp_path / "e.pt")
    same(e, torch.load(tmp_path / "e.pt"))


# ---- views and data movement -------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda x, L: x.t(), lambda x, L: x.t().contiguous(), lambda x, L: x.clone(), lambda x, L: x.t().clone(),
    lambda x, L: x[0], lambda x, L: x[:, 1:], lambda x, L: x[::2], lambda x, L: x.permute(1, 0),
    lambda x, L: x.view(-1), lambda x, L: x.t().reshape(-1), lambda x, L: x.unsqueeze(0), lambda x, L: x.flatten(),
    lambda x, L: x[:1].expand(3, 4), lambda x, L: x[:1].expand(3, 4).contiguous(), lambda x, L: x.narrow(1, 1, 2),
    lambda x, L: L.view_as_real(x), lambda x, L: L.view_as_real(x.t()), lambda x, L: x.real, lambda x, L: x.imag,
    lambda x, L: x.t().imag, lambda x, L: L.view_as_complex(L.view_as_real(x)), lambda x, L: x.conj(),
    lambda x, L: x.conj_physical(), lambda x, L: x.conj().resolve_conj(), lambda x, L: L.cat([x, x]),
    lambda x, L: L.cat([x, x.t().t()], 1), lambda x, L: L.stack([x, x]), lambda x, L: L.where(x.real > 0, x, x.t().t()),
    lambda x, L: x.flip(0), lambda x, L: x.roll(1), lambda x, L: x.index_select(0, L.tensor([2, 0])),
    lambda x, L: x.masked_fill(x.real > 0, 0), lambda x, L: x.masked_fill(x.real > 0, 1 - 1j), lambda x, L: x.repeat(2, 1),
    lambda x, L: x.tril(), lambda x, L: x.diagonal(), lambda x, L: x.masked_select(x.real > 0), lambda x, L: x[x.real > 0],
    lambda x, L: x.view(L.float32), lambda x, L: x.view(L.int16), lambda x, L: L.nn.functional.pad(x, (1, 1)),
    lambda x, L: L.cat([x, L.ones(3, 4)]), lambda x, L: L.cat([x, L.ones(1, 4, dtype=L.half)]),
    lambda x, L: L.where(x.real > 0, x, L.ones(3, 4)), lambda x, L: x.split(1), lambda x, L: x.unbind(1),
    lambda x, L: x.nonzero(), lambda x, L: x.any(), lambda x, L: x.all(), lambda x, L: x.count_nonzero(),
    lambda x, L: x ** 1, lambda x, L: x ** 0, lambda x, L: L.nn.functional.pad(x[None], (1, 1), mode="circular"),
])
def test_views_and_movement(rng, op):
    e, t = random_pair(rng, (3, 4))
    re, rt = op(e, ember), op(t, torch)
    if isinstance(rt, tuple):
        assert len(re) == len(rt)
        for a, b in zip(re, rt):
            same(a, b)
    else:
        same(re, rt)


def test_view_as_complex_of_half():
    h = torch.randn(3, 2).half()
    eh = ember.tensor(h.float().numpy()).half()
    same(ember.view_as_complex(eh), torch.view_as_complex(h))
    ec = ember.view_as_complex(eh)
    ec.real.fill_(7)  # a view: the half tensor sees the write
    assert eh[:, 0].tolist() == [7.0] * 3
    same(ember.complex(eh[:, 0], eh[:, 1]), torch.complex(h[:, 0] * 0 + 7, h[:, 1]))


def test_setitem_and_inplace(rng):
    for f in [lambda x, L: x.__setitem__((0, 1), 2 - 1j), lambda x, L: x.__setitem__(0, 1),
              lambda x, L: x.__setitem__(1, x[0]), lambda x, L: x.__setitem__(0, L.ones(4)),
              lambda x, L: x.index_put_((L.tensor([0]),), L.tensor(1j, dtype=L.chalf)),
              lambda x, L: x.add_(x), lambda x, L: x.mul_(x), lambda x, L: x.neg_(), lambda x, L: x.add_(L.ones(4)),
              lambda x, L: x.sub_(x, alpha=2), lambda x, L: x.mul_(2), lambda x, L: x.real.copy_(L.ones(3, 4)),
              lambda x, L: x.imag.fill_(3)]:
        e, t = random_pair(rng, (3, 4))
        f(e, ember)
        f(t, torch)
        same(e, t)


# ---- computation, bit for bit ---------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda a, b, L: a + b, lambda a, b, L: a - b, lambda a, b, L: a * b, lambda a, b, L: -a, lambda a, b, L: a.abs(),
    lambda a, b, L: a * 2, lambda a, b, L: a * 2.5, lambda a, b, L: a * (1 + 1j), lambda a, b, L: a + 1,
    lambda a, b, L: 1 - a, lambda a, b, L: a * 70000, lambda a, b, L: L.add(a, b, alpha=2),
    lambda a, b, L: L.sub(a, b, alpha=0.3), lambda a, b, L: a == b, lambda a, b, L: a != b, lambda a, b, L: a == a,
    lambda a, b, L: a == 1, lambda a, b, L: a.isfinite(), lambda a, b, L: a.isnan(), lambda a, b, L: a.isinf(),
    lambda a, b, L: a.isreal(), lambda a, b, L: a.t() * b.t(), lambda a, b, L: a * b[0],
    lambda a, b, L: a[0, 0] + b, lambda a, b, L: a + b.real, lambda a, b, L: a * b.to(L.complex64),
    lambda a, b, L: a + L.ones(4, dtype=L.int64) * 2049, lambda a, b, L: a * L.tensor([True, False, True, True]),
    lambda a, b, L: a * L.ones(4, dtype=L.bfloat16), lambda a, b, L: a.real * 1j, lambda a, b, L: L.isclose(a, b),
    lambda a, b, L: L.isclose(a, a, equal_nan=True), lambda a, b, L: L.sub(a, b, alpha=1j),
    lambda a, b, L: L.add(a, b, alpha=-0.7), lambda a, b, L: a.abs() * 1j,
])
def test_compute_bit_exact(rng, op):
    for special in (False, True):
        a_e, a_t = random_pair(rng, (3, 4), special)
        b_e, b_t = random_pair(rng, (3, 4), special)
        same(op(a_e, b_e, ember), op(a_t, b_t, torch), strides=False)


@pytest.mark.parametrize("op", [lambda a: a.sgn(), lambda a: a.std(), lambda a: a.var(1), lambda a: a.norm(),
                                lambda a: a.norm(dim=0), lambda a: a.std(0, correction=0)])
def test_compute_finite(rng, op):
    # finite values of a moderate size (sgn's NaN signs and the overflow of half accumulations aside)
    for _ in range(3):
        v = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
        e, t = pair(v)
        same(op(e), op(t), strides=False)


def test_empty_and_0d():
    for f in [lambda L: L.zeros(0, 2, dtype=L.chalf) + L.zeros(0, 2, dtype=L.chalf),
              lambda L: L.tensor(1 + 1j, dtype=L.chalf) * L.tensor(2 - 1j, dtype=L.chalf),
              lambda L: L.tensor(1 + 1j, dtype=L.chalf).abs()]:
        same(f(ember), f(torch))


# ---- what torch refuses --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda x, L: x / x, lambda x, L: x / 2, lambda x, L: L.div(x, x, rounding_mode="floor"), lambda x, L: x.sum(),
    lambda x, L: x.sum(0), lambda x, L: x.mean(), lambda x, L: x.mean(0), lambda x, L: x.prod(), lambda x, L: x.cumsum(0),
    lambda x, L: x.cumprod(0), lambda x, L: x.exp(), lambda x, L: x.sqrt(), lambda x, L: x.sin(), lambda x, L: x.log(),
    lambda x, L: x.tanh(), lambda x, L: x.sigmoid(), lambda x, L: x.reciprocal(), lambda x, L: x.rsqrt(),
    lambda x, L: x.exp2(), lambda x, L: x.sinh(), lambda x, L: x.angle(), lambda x, L: x @ x.t(), lambda x, L: x.mm(x.t()),
    lambda x, L: L.addmm(x, x, x.t()[:, :3]), lambda x, L: x[None].bmm(x.t()[None]), lambda x, L: x[0].dot(x[0]),
    lambda x, L: x[0].vdot(x[0]), lambda x, L: x ** 2, lambda x, L: x.square(), lambda x, L: x.max(), lambda x, L: x.min(),
    lambda x, L: x < x, lambda x, L: x >= x, lambda x, L: x.clone().abs_(), lambda x, L: x.nan_to_num(),
    lambda x, L: L.equal(x, x), lambda x, L: x.logical_not(), lambda x, L: x.logical_and(x), lambda x, L: x.sign(),
    lambda x, L: x.signbit(), lambda x, L: x.floor(), lambda x, L: x.round(), lambda x, L: x.argmax(),
    lambda x, L: L.arange(3, dtype=L.chalf), lambda x, L: L.linspace(0, 1, 3, dtype=L.chalf),
    lambda x, L: L.logspace(0, 1, 3, dtype=L.chalf), lambda x, L: L.eye(2, dtype=L.chalf),
    lambda x, L: L.randint(0, 3, (2,), dtype=L.chalf), lambda x, L: x.erf(), lambda x, L: x.frac(),
    lambda x, L: x ** 0.5, lambda x, L: x ** -1, lambda x, L: L.nn.functional.pad(x[None], (1, 1), mode="reflect"),
    lambda x, L: L.nn.functional.pad(x[None], (1, 1), mode="replicate"),
])
def test_refused_like_torch(op):
    same_error(lambda L: op(L.tensor([[1 + 2j, 3 - 1j, 0.5j], [-2, 1, 1j]], dtype=L.chalf), L))


def test_bad_input():
    same_error(lambda L: L.ones(2, dtype=L.chalf) + L.ones(3, dtype=L.chalf))
    same_error(lambda L: L.ones(2, dtype=L.chalf) * L.ones(3))
    same_error(lambda L: L.view_as_real(L.ones(2, dtype=L.half)))
    same_error(lambda L: L.view_as_complex(L.ones(2, 3, dtype=L.half)))
    same_error(lambda L: L.view_as_complex(L.ones(3, 2, dtype=L.half).t()))
    same_error(lambda L: L.ones(3, dtype=L.chalf)[1:].view(L.float16).view(L.complex64))
    same_error(lambda L: L.ones(2, dtype=L.float16).add_(L.ones(2, dtype=L.chalf)))
    same_error(lambda L: L.ones(2, dtype=L.chalf).add(L.ones(2, dtype=L.chalf), alpha=True))
    same_error(lambda L: L.ones(2, dtype=L.half).copy_(L.ones(3, dtype=L.chalf)))


# ---- products and accumulations torch computes in c10::complex<Half> ------------------------------
def bits_nan(t):
    """bits(), every NaN one pattern: a NaN's sign and payload follow the order of the float
    operations, which NumPy and torch's (vectorized) complex products do not share."""
    r = np.array(bits(t), np.int16)
    r[((r & 0x7C00) == 0x7C00) & ((r & 0x3FF) != 0)] = 0x7E00
    return r.tolist()


def same_values(e, t):
    """Results (Tensors or tuples of them) of equal dtype and shape, bit for bit up to NaN patterns."""
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            same_values(a, b)
        return
    assert _name(e.dtype) == _name(t.dtype), (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    if t.dtype in (torch.chalf, torch.float16):
        assert bits_nan(e) == bits_nan(t)
    else:
        assert bits(e) == bits(t)


_IDX = [0, 2, 2, 3, 0, 0, 1]


@pytest.mark.parametrize("op", [
    # addcmul: ((value * tensor1) * tensor2) + self, each product and the sum rounded to ComplexHalf
    lambda a, b, c, L: L.addcmul(a, b, c), lambda a, b, c, L: L.addcmul(a, b, c, value=0.3 - 2j),
    lambda a, b, c, L: L.addcmul(a, b[0], c[:, :1], value=2), lambda a, b, c, L: a.clone().addcmul_(b, c, value=-1.5),
    lambda a, b, c, L: L.addcmul(a, b, c, out=L.empty(4, 7, dtype=L.chalf)), lambda a, b, c, L: L.addcmul(a.real, b, c),
    lambda a, b, c, L: L.addcmul(a, b.to(L.complex64), c), lambda a, b, c, L: L.addcmul(a, b.real.float(), c),
    lambda a, b, c, L: L.addcmul(a[0, 0], b[0, 0], c[0, 0]),
    # index_add: source * alpha rounded, then each sum in index order (duplicates accumulate in turn)
    lambda a, b, c, L: a.index_add(0, L.tensor(_IDX), c.repeat(2, 1)[:7]),
    lambda a, b, c, L: a.index_add(1, L.tensor(_IDX), b, alpha=0.7j),
    lambda a, b, c, L: a.clone().index_add_(0, L.tensor(_IDX, dtype=L.int32), c.repeat(2, 1)[:7], alpha=2),
    lambda a, b, c, L: a[0].index_add(0, L.tensor(_IDX), b[1]), lambda a, b, c, L: a[0, 0].index_add(0, L.tensor([0]), b[0, 0]),
    lambda a, b, c, L: L.index_add(a, 1, L.tensor(_IDX), b, out=L.empty(4, 7, dtype=L.chalf)),
    # kron, outer, ger: torch's mul of views
    lambda a, b, c, L: L.kron(a, b), lambda a, b, c, L: L.kron(a[0], b), lambda a, b, c, L: L.kron(a, b.real),
    lambda a, b, c, L: L.kron(a.to(L.complex64), b), lambda a, b, c, L: L.kron(a[0, 0], b[0, 0]),
    lambda a, b, c, L: L.kron(a[:2, :3], b[:3, :2], out=L.empty(6, 6, dtype=L.chalf)),
    lambda a, b, c, L: L.outer(a[0], b[1]), lambda a, b, c, L: L.outer(a[0].real, b[1]), lambda a, b, c, L: L.outer(a[0], L.arange(3)),
    lambda a, b, c, L: L.outer(a[0], b[1].to(L.complex64)), lambda a, b, c, L: L.outer(a[0], b[1], out=L.empty(7, 7, dtype=L.chalf)),
    # index_put_ with accumulate: serial `+=` in ComplexHalf
    lambda a, b, c, L: a.index_put((L.tensor(_IDX[:4]),), b, accumulate=True),
    lambda a, b, c, L: a.index_put((L.tensor(_IDX[:5]), L.tensor(_IDX[:5])), b[0, :5], accumulate=True),
    lambda a, b, c, L: a.clone().index_put_((L.tensor(_IDX),), b[0], accumulate=True),
    lambda a, b, c, L: a.index_put((a.real > 0,), b[0, 0], accumulate=True),
    # einsum where torch reaches no sum or product kernel (views and mul)
    lambda a, b, c, L: L.einsum("i,j->ij", a[0], b[1]), lambda a, b, c, L: L.einsum("ij,ij->ij", a, b),
    lambda a, b, c, L: L.einsum("ij->ji", a), lambda a, b, c, L: L.einsum("ii->i", a[:, :4]),
    lambda a, b, c, L: L.einsum("i,i,i->i", a[0], a[1], a[2]), lambda a, b, c, L: L.einsum("ij,j->ij", a, b[0]),
    lambda a, b, c, L: L.float_power(a, 2), lambda a, b, c, L: L.float_power(a, b),
])
def test_products_bit_exact(rng, op):
    for special in (False, True):
        a, b, c = (random_pair(rng, (4, 7), special) for _ in range(3))
        same_values(op(a[0], b[0], c[0], ember), op(a[1], b[1], c[1], torch))


@pytest.mark.parametrize("op", [
    lambda x, L: L.std_mean(x), lambda x, L: L.var_mean(x, 1), lambda x, L: L.std_mean(x, 0, keepdim=True, correction=0),
    lambda x, L: L.linalg.vector_norm(x), lambda x, L: L.linalg.norm(x), lambda x, L: L.linalg.norm(x, dim=1),
    lambda x, L: L.linalg.norm(x, 1), lambda x, L: L.linalg.matrix_norm(x), lambda x, L: L.linalg.matrix_norm(x, 1),
    lambda x, L: L.linalg.matrix_norm(x, -1), lambda x, L: L.linalg.matrix_norm(x, float("inf")),
    lambda x, L: L.linalg.matrix_norm(x, -float("inf")),
])
def test_reductions_finite(rng, op):
    for _ in range(3):
        v = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(np.complex64)
        e, t = pair(v)
        same_values(op(e, ember), op(t, torch))


# ---- more of what torch refuses (3 x 3, so that square-matrix ops reach their dtype checks) -------
@pytest.mark.parametrize("op", [
    lambda x, L: L.clamp(x, 0, 1), lambda x, L: L.clamp(x, min=0), lambda x, L: x.clone().clamp_(max=1),
    lambda x, L: L.clip(x, 0, 1), lambda x, L: L.clamp(x, x, x), lambda x, L: L.clamp(x, min=x),
    lambda x, L: L.clamp(x.real, min=x), lambda x, L: L.clamp(x.real, x, x), lambda x, L: L.clamp_min(x, x),
    lambda x, L: L.clamp_max(x, x), lambda x, L: L.clamp_min(x, 0), lambda x, L: L.clamp(x, 0, 1, out=L.empty_like(x)),
    lambda x, L: L.maximum(x, x), lambda x, L: L.minimum(x, x), lambda x, L: L.fmax(x, x), lambda x, L: L.fmin(x, x),
    lambda x, L: L.maximum(x.real, x), lambda x, L: L.minimum(x, x.to(L.complex64)), lambda x, L: L.max(x, x),
    lambda x, L: L.min(x, x.real), lambda x, L: L.lerp(x, x, 0.5), lambda x, L: L.lerp(x, x, x),
    lambda x, L: x.clone().lerp_(x, 0.5), lambda x, L: L.lerp(x, x, L.tensor(0.5)),
    lambda x, L: L.lerp(x, x, 0.5, out=L.empty_like(x)), lambda x, L: L.trace(x), lambda x, L: L.trace(x[0]),
    lambda x, L: L.einsum("ij,jk->ik", x, x), lambda x, L: L.einsum("ij->i", x), lambda x, L: L.einsum("ii", x),
    lambda x, L: L.einsum("bij,bjk->bik", x[None], x[None]), lambda x, L: L.addcdiv(x, x, x),
    lambda x, L: x.clone().addcdiv_(x, x), lambda x, L: L.atan2(x, x), lambda x, L: L.atan2(x.real, x),
    lambda x, L: L.amax(x), lambda x, L: L.amin(x, 0), lambda x, L: L.linalg.cross(x, x), lambda x, L: L.cross(x, x, dim=1),
    lambda x, L: L.mv(x, x[0]), lambda x, L: L.addmv(x[0], x, x[0]), lambda x, L: L.addr(x, x[0], x[1]),
    lambda x, L: L.baddbmm(x[None], x[None], x[None]), lambda x, L: L.addbmm(x, x[None], x[None]),
    lambda x, L: L.matrix_exp(x), lambda x, L: L.cholesky_inverse(x), lambda x, L: L.cholesky_solve(x, x),
    lambda x, L: L.linalg.qr(x), lambda x, L: L.logsumexp(x, 0), lambda x, L: L.logcumsumexp(x, 0),
    lambda x, L: L.nn.functional.silu(x), lambda x, L: x.scatter_add(0, L.tensor([[0, 1, 2]]), x),
    lambda x, L: x.scatter_reduce(0, L.tensor([[0, 1, 2]]), x, "sum"),
    lambda x, L: x.put(L.tensor([0]), x[0, :1], accumulate=True), lambda x, L: L.linalg.vecdot(x, x),
    lambda x, L: L.linalg.det(x), lambda x, L: L.linalg.inv(x), lambda x, L: L.linalg.slogdet(x), lambda x, L: L.logdet(x),
    lambda x, L: L.linalg.cholesky(x), lambda x, L: L.linalg.svd(x), lambda x, L: L.linalg.lu_factor(x),
    lambda x, L: L.triangular_solve(x, x), lambda x, L: L.linalg.matrix_power(x, 0),
    lambda x, L: L.linalg.matrix_power(x, 3), lambda x, L: L.linalg.matrix_power(x[None], 2),
    lambda x, L: L.linalg.matrix_power(x, -1), lambda x, L: L.deg2rad(x), lambda x, L: L.rad2deg(x),
    lambda x, L: L.logaddexp(x, x), lambda x, L: L.logaddexp(x.real, x), lambda x, L: L.logaddexp2(x, x),
    lambda x, L: L.sinc(x), lambda x, L: x.clone().sinc_(), lambda x, L: x.clone().float_power_(2),
    lambda x, L: L.equal(x, x.clone()), lambda x, L: L.equal(x, x.t()), lambda x, L: L.equal(x[0], x[0]),
    lambda x, L: L.equal(x, x.real), lambda x, L: L.isin(x, x), lambda x, L: L.isin(x, x, assume_unique=True),
    lambda x, L: L.isin(x, x[0, :0]), lambda x, L: L.isin(x.repeat(4, 4), x[0, :2]), lambda x, L: L.isin(1.0, x),
    lambda x, L: L.isin(x, x.real.float()), lambda x, L: L.isin(x, x.to(L.complex64)),
    lambda x, L: L.nn.functional.embedding(x, L.ones(3, 3)), lambda x, L: L.ones(3, 3).masked_fill(x, 1.0),
    lambda x, L: x.index_add(0, L.tensor([3]), x[:1]), lambda x, L: x[0].index_add(0, L.tensor([3]), x[0, :1]),
    lambda x, L: x.index_add(0, L.tensor([0]), x[:1].to(L.complex64)),
    lambda x, L: x.real.clone().addcmul_(x, x), lambda x, L: x.index_put((L.tensor([5]),), x[0], accumulate=True),
])
def test_refused_like_torch_square(op):
    same_error(lambda L: op(L.tensor([[1 + 2j, 3 - 1j, 0.5j], [-2, 1, 1j], [0.25 - 0.5j, 2, -1 - 1j]], dtype=L.chalf), L))


def test_isin_number_and_empty():
    for f in [lambda L, x: L.isin(x, 3.0), lambda L, x: L.isin(x, 3.0, invert=True), lambda L, x: L.isin(x[:0], x)]:
        same(f(ember, ember.arange(6).to(ember.chalf)), f(torch, torch.arange(6).to(torch.chalf)))


# ---- kernels torch has no ComplexHalf instance of, where NumPy would have copied values --------------
_X3 = [[1 + 2j, 3 - 1j, 0.5j], [-2, 1, 1j], [0.25 - 0.5j, 2, -1 - 1j]]


@pytest.mark.parametrize("op", [
    lambda x, L: L.gather(x, 1, L.tensor([[0, 1], [1, 0], [2, 2]])),
    lambda x, L: L.take_along_dim(x, L.tensor([[0], [1], [2]]), 1), lambda x, L: L.take_along_dim(x, L.tensor([0, 4])),
    lambda x, L: x.clone().scatter_(1, L.tensor([[0], [1], [2]]), x[:, :1].clone()),
    lambda x, L: L.scatter(x, 1, L.tensor([[0], [1], [2]]), 2.0),
    lambda x, L: x.clone().scatter_(1, L.tensor([[0], [1], [2]]), x.clone(), reduce="add"),
    lambda x, L: x.clone().scatter_add_(1, L.tensor([[0], [1], [2]]), x.clone()),
    lambda x, L: x.clone().scatter_reduce_(1, L.tensor([[0], [1], [2]]), x.clone(), "sum"),
    lambda x, L: L.take(x, L.tensor([0, 4])), lambda x, L: x.clone().put_(L.tensor([0, 4]), x[0, :2].clone()),
    lambda x, L: x.put(L.tensor([0]), x[0, :1]),
    lambda x, L: x.masked_scatter(L.tensor([True, False, True]), x),
    lambda x, L: x.masked_scatter(L.zeros(3, dtype=L.bool), x), lambda x, L: x.clone().masked_scatter_(x.real > 0, x),
    lambda x, L: L.unique(x), lambda x, L: L.unique(x[:0]), lambda x, L: L.unique(x, sorted=False, return_counts=True),
    lambda x, L: L.unique_consecutive(x), lambda x, L: L.unique(x, dim=0), lambda x, L: L.unique_consecutive(x, dim=1),
    lambda x, L: x.flip(1), lambda x, L: x.flip(-1, 0), lambda x, L: x.t().flip(0), lambda x, L: x[0].flip(0),
    lambda x, L: L.fliplr(x), lambda x, L: L.rot90(x), lambda x, L: x[:, :1].flip(0),
    lambda x, L: L.ldexp(x, L.tensor([1, 2, 3])), lambda x, L: L.ldexp(x[:0], L.tensor([1])),
    lambda x, L: L.ldexp(L.ones(3), x), lambda x, L: x.clone().ldexp_(L.tensor([1, 2, 3])),
])
def test_refused_indexing_like_torch(op):
    same_error(lambda L: op(L.tensor(_X3, dtype=L.chalf), L))


@pytest.mark.parametrize("op", [
    lambda x, L: x.flip(0), lambda x, L: x.t().flip(1), lambda x, L: x[:, :1].flip(1), lambda x, L: x[:0].flip(1),
    lambda x, L: x[0, 0].flip(()), lambda x, L: x[:1, :1].flip(0, 1), lambda x, L: L.flipud(x),
    lambda x, L: L.gather(x, 1, L.zeros(3, 0, dtype=L.long)), lambda x, L: L.take(x, L.zeros(0, dtype=L.long)),
    lambda x, L: x.clone().scatter_(1, L.zeros(3, 0, dtype=L.long), 1.0),
    lambda x, L: x.clone().put_(L.zeros(0, dtype=L.long), x[0, :0]),
    lambda x, L: L.ldexp(x, L.tensor([1.0, 2.0, 3.0])), lambda x, L: x.clone().ldexp_(L.tensor([1.0, 2.0, 3.0])),
])
def test_computed_like_torch(op):
    e, t = op(ember.tensor(_X3, dtype=ember.chalf), ember), op(torch.tensor(_X3, dtype=torch.chalf), torch)
    same(e, t, strides=False)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("stride,padding,dilation,groups,bias", [(1, 0, 1, 1, False), (2, 1, 1, 1, True),
                                                                 (1, 1, 2, 2, True)])
def test_convolution_like_torch(rng, dim, transposed, stride, padding, dilation, groups, bias):
    """torch convolves complex inputs as three real convolutions of the parts (Gauss's trick), which
    for complex32 run in float16: the combination is bit for bit; the float16 kernels under it are
    ember's (its transposed ones round differently from torch's)."""
    def make(shape):
        return pair(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
    x = make((2, 4) + (7, 6, 5)[:dim])
    w = make(((4, 6 // groups) if transposed else (6, 4 // groups)) + (3,) * dim)
    b = make((6,)) if bias else (None, None)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    name = f"conv_transpose{dim}d" if transposed else f"conv{dim}d"
    e = getattr(ember.nn.functional, name)(x[0], w[0], b[0], **kw)
    t = getattr(torch.nn.functional, name)(x[1], w[1], b[1], **kw)
    assert e.dtype == ember.chalf and e.shape == t.shape
    ev, tv = e.to(ember.complex64).numpy(), t.to(torch.complex64).numpy()
    if not transposed and dim == 1:
        np.testing.assert_array_equal(ev, tv)
    tol = 2e-2 if transposed else 2e-3  # torch's float16 transposed kernels round as they accumulate
    np.testing.assert_allclose(ev, tv, rtol=tol, atol=tol * np.abs(tv).max())
