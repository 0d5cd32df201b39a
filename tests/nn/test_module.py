"""nn.Module / Parameter / containers against torch.nn: registration, iteration, conversion,
state_dict, hooks, repr."""
import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from harness import check, same_error


def _linalg_has_grad():
    a = ember.ones(2, 2, requires_grad=True)
    return ember.mm(a, a).grad_fn is not None and ember.addmm(a, a, a).grad_fn is not None


# Linear's gradient comes from addmm / mm (linear is a composite, as in PyTorch)
needs_linalg_grad = pytest.mark.skipif(not _linalg_has_grad(),
                                       reason="mm/addmm derivatives are not registered yet")


def R(x):
    return repr(x).replace("ember", "torch")


def same_error_named(fn):
    """same_error, with ember's names ("ember.int32") read as torch's."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(Exception) as ee:
        fn(ember)
    assert isinstance(ee.value, type(te.value)) or isinstance(te.value, type(ee.value)), \
        (type(ee.value), type(te.value), str(ee.value), str(te.value))
    assert str(ee.value).replace("ember", "torch") == str(te.value)


def copy_params(e_mod, t_mod):
    """Give the ember module the torch module's parameter and buffer values."""
    sd = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in t_mod.state_dict().items()}
    e_mod.load_state_dict(sd)


class Affine:
    """x * weight + bias (elementwise): a parametrized module whose gradient needs no matmul."""

    @staticmethod
    def build(L):
        class Affine(L.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = L.nn.Parameter(L.linspace(-1, 1, n))
                self.bias = L.nn.Parameter(L.linspace(0.5, 1, n))

            def forward(self, x):
                return x * self.weight + self.bias

        return Affine


class Net:
    """The same small network built from either library."""

    @staticmethod
    def build(L):
        class Block(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(4, 4)
                self.act = L.nn.ReLU()
                self.register_buffer("running", L.zeros(4))
                self.register_buffer("tmp", L.ones(2), persistent=False)

            def forward(self, x):
                return self.act(self.lin(x)) + self.running

        class Top(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.first = L.nn.Linear(3, 4, bias=False)
                self.blocks = L.nn.Sequential(Block(), Block())
                self.shared = self.first  # the same module twice
                self.scale = L.nn.Parameter(L.ones(()))
                self.extra = L.nn.ModuleDict({"head": L.nn.Linear(4, 2)})

            def forward(self, x):
                return self.extra["head"](self.blocks(self.first(x))) * self.scale

        return Top()


# ---- Parameter ----------------------------------------------------------------------------------
def test_parameter_basics():
    p = ember.nn.Parameter(ember.zeros(2, 3))
    tp = torch.nn.Parameter(torch.zeros(2, 3))
    assert type(p) is ember.nn.Parameter and isinstance(p, ember.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert R(p) == repr(tp)
    q = ember.nn.Parameter(ember.zeros(2), requires_grad=False)
    assert not q.requires_grad
    assert R(q) == repr(torch.nn.Parameter(torch.zeros(2), requires_grad=False))
    assert type(p * 2) is ember.Tensor and (p * 2).grad_fn is not None
    assert type(p.detach()) is ember.Tensor
    e = ember.nn.Parameter()
    assert tuple(e.shape) == (0,) and e.requires_grad
    # the parameter aliases its data
    d = ember.ones(3)
    p2 = ember.nn.Parameter(d)
    with ember.no_grad():
        p2.mul_(2)
    assert d.tolist() == [2.0, 2.0, 2.0]
    same_error(lambda L: L.nn.Parameter(L.tensor([1, 2])))
    assert isinstance(ember.nn.Parameter(ember.tensor([1, 2]), requires_grad=False), ember.nn.Parameter)


def test_parameter_deepcopy_pickle():
    p = ember.nn.Parameter(ember.arange(6.).view(2, 3))
    p.grad = ember.ones(2, 3)
    q = copy.deepcopy(p)
    assert type(q) is ember.nn.Parameter and q.requires_grad
    assert q.tolist() == p.tolist() and q.data_ptr() != p.data_ptr()
    assert q.grad is None  # torch's Parameter.__deepcopy__ drops .grad
    memo = {}
    assert copy.deepcopy([p, p], memo)[0] is memo[id(p)]
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is ember.nn.Parameter and r.requires_grad and r.tolist() == p.tolist()
    r2 = pickle.loads(pickle.dumps(ember.nn.Parameter(ember.ones(2), requires_grad=False)))
    assert not r2.requires_grad


def test_buffer():
    for L in (ember, torch):
        m = L.nn.Module()
        m.a = L.nn.Buffer(L.ones(2))
        m.b = L.nn.Buffer(L.zeros(1), persistent=False)
        assert list(dict(m.named_buffers())) == ["a", "b"]
        assert list(m.state_dict()) == ["a"]
        assert isinstance(m.a, L.nn.Buffer) and not isinstance(m.a, L.nn.Parameter)
        m.a = L.zeros(3)  # assigning a tensor to a buffer name keeps it a buffer
        assert tuple(m._buffers["a"].shape) == (3,)


# ---- registration -------------------------------------------------------------------------------
def test_setattr_routing():
    for L in (ember, torch):
        m = L.nn.Module()
        m.w = L.nn.Parameter(L.ones(2))
        m.sub = L.nn.Linear(2, 2)
        m.register_buffer("buf", L.zeros(2))
        m.plain = 3
        assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"]
        assert list(m._buffers) == ["buf"] and m.__dict__["plain"] == 3
        m.w = None
        assert m._parameters["w"] is None and m.w is None
        m.sub = None
        assert m._modules["sub"] is None
        del m.buf
        assert "buf" not in m._buffers
        m.w = L.nn.Parameter(L.ones(1))
        del m.w
        assert "w" not in m._parameters
        m.x = L.nn.Linear(1, 1)
        m.x = L.nn.Parameter(L.ones(1))  # a parameter replaces the module of that name
        assert "x" not in m._modules and "x" in m._parameters


def _mod(L):
    m = L.nn.Module()
    m.w = L.nn.Parameter(L.ones(2))
    m.sub = L.nn.Linear(2, 2)
    m.register_buffer("buf", L.zeros(2))
    return m


@pytest.mark.parametrize("case", [
    lambda L: setattr(_mod(L), "w", L.ones(2)),
    lambda L: setattr(_mod(L), "sub", 3),
    lambda L: setattr(_mod(L), "buf", 3),
    lambda L: _mod(L).register_parameter("a.b", None),
    lambda L: _mod(L).register_parameter("", None),
    lambda L: _mod(L).register_parameter("buf", None),
    lambda L: _mod(L).register_parameter("p", L.ones(2)),
    lambda L: _mod(L).register_parameter("p", L.nn.Parameter(L.ones(2)) * 2),
    lambda L: _mod(L).register_parameter(1, None),
    lambda L: _mod(L).register_buffer("w", L.ones(1)),
    lambda L: _mod(L).register_buffer("x.y", L.ones(1)),
    lambda L: _mod(L).register_buffer("", L.ones(1)),
    lambda L: _mod(L).register_buffer("x", 3),
    lambda L: _mod(L).add_module("w", L.nn.ReLU()),
    lambda L: _mod(L).add_module("a.b", L.nn.ReLU()),
    lambda L: _mod(L).add_module("", L.nn.ReLU()),
    lambda L: _mod(L).add_module("x", 3),
    lambda L: _mod(L).nothing,
    lambda L: _mod(L).get_submodule("sub.weight"),
    lambda L: _mod(L).get_submodule("nope"),
    lambda L: _mod(L).get_parameter("sub.nope"),
    lambda L: _mod(L).get_parameter("buf"),
    lambda L: _mod(L).get_buffer("w"),
    lambda L: L.nn.Module().forward(1),
    lambda L: L.nn.Module(1),
    lambda L: L.nn.Module(a=1),
    lambda L: _mod(L).train(1),
    lambda L: _mod(L).to(L.int32),
    lambda L: _mod(L).load_state_dict([1]),
    lambda L: L.nn.ParameterList()(1),
    lambda L: L.nn.ParameterDict()(1),
    lambda L: L.nn.ParameterDict()[1],
    lambda L: L.nn.Sequential(L.nn.ReLU())[3],
    lambda L: L.nn.ModuleList([L.nn.ReLU()])[-2],
    lambda L: L.nn.Sequential() + 1,
    lambda L: L.nn.Sequential(L.nn.ReLU()) * 0,
    lambda L: L.nn.ModuleList().extend(1),
    lambda L: L.nn.Unflatten(1, 2),
    lambda L: L.nn.Unflatten(1, (2, 2.0)),
])
def test_errors(case):
    same_error_named(case)


def test_get_submodule_parameter():
    for L in (ember, torch):
        m = Net.build(L)
        assert m.get_submodule("blocks.0.lin") is m.blocks[0].lin
        assert m.get_submodule("") is m
        assert m.get_parameter("blocks.1.lin.bias") is m.blocks[1].lin.bias
        assert m.get_buffer("blocks.0.running") is m.blocks[0].running
        m.set_submodule("blocks.1.act", L.nn.Tanh())
        assert isinstance(m.blocks[1].act, L.nn.Tanh)


# ---- iteration ----------------------------------------------------------------------------------
def test_iteration_matches_torch():
    e, t = Net.build(ember), Net.build(torch)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert ([n for n, _ in e.named_parameters(remove_duplicate=False)]
            == [n for n, _ in t.named_parameters(remove_duplicate=False)])
    assert ([n for n, _ in e.named_parameters(prefix="m", recurse=False)]
            == [n for n, _ in t.named_parameters(prefix="m", recurse=False)])
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert ([n for n, _ in e.named_modules(remove_duplicate=False)]
            == [n for n, _ in t.named_modules(remove_duplicate=False)])
    assert ([n for n, _ in e.named_modules(prefix="top")]
            == [n for n, _ in t.named_modules(prefix="top")])
    assert len(list(e.parameters())) == len(list(t.parameters()))
    assert len(list(e.modules())) == len(list(t.modules()))
    assert len(list(e.buffers(recurse=False))) == 0
    assert all(isinstance(p, ember.nn.Parameter) for p in e.parameters())


def test_train_eval_apply_requires_grad():
    for L in (ember, torch):
        m = Net.build(L)
        assert m.training and m.blocks[0].act.training
        assert m.eval() is m
        assert not any(x.training for x in m.modules())
        m.train()
        assert all(x.training for x in m.modules())
        seen = []
        m.apply(lambda x: seen.append(type(x).__name__))
        assert seen[-1] == "Top" and seen[0] == "Linear"
        m.requires_grad_(False)
        assert not any(p.requires_grad for p in m.parameters())


def test_zero_grad():
    m = Affine.build(ember)(3)
    m(ember.ones(4, 3)).sum().backward()
    g = m.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is g and float(g.abs().sum()) == 0
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None


@needs_linalg_grad
def test_linear_zero_grad():
    m = ember.nn.Linear(3, 2)
    m(ember.ones(4, 3)).sum().backward()
    assert m.weight.grad.tolist() == [[4.0] * 3] * 2 and m.bias.grad.tolist() == [4.0, 4.0]
    m.zero_grad()
    assert m.weight.grad is None


# ---- conversion ---------------------------------------------------------------------------------
def test_to_keeps_parameter_identity():
    m = Net.build(ember)
    m.register_buffer("count", ember.tensor(3))
    m.first.weight.grad = ember.ones(4, 3)
    w = m.first.weight
    g = w.grad
    assert m.double() is m
    assert m.first.weight is w and w.dtype is ember.float64 and type(w) is ember.nn.Parameter
    assert w.requires_grad and w.grad is g and g.dtype is ember.float64
    assert m.count.dtype is ember.int64  # integer buffers are not converted
    assert m.blocks[0].running.dtype is ember.float64
    # a converted module still trains
    a = Affine.build(ember)(3).double()
    a(ember.ones(2, 3, dtype=ember.float64)).sum().backward()
    assert a.weight.grad.dtype is ember.float64 and a.weight.grad.tolist() == [2.0] * 3
    for conv, dt in (("half", ember.float16), ("bfloat16", ember.bfloat16), ("float", ember.float32)):
        getattr(m, conv)()
        assert w.dtype is dt and m.first.weight is w
    m.to(ember.float64)
    assert w.dtype is ember.float64
    m.to("cpu", ember.float32)
    assert w.dtype is ember.float32
    m.to(ember.zeros(1, dtype=ember.float64))
    assert w.dtype is ember.float64
    m.type(ember.float32)
    assert w.dtype is ember.float32 and m.count.dtype is ember.float32  # type() converts all
    assert m.cpu() is m
    m2 = ember.nn.Linear(2, 2).to("meta")
    assert m2.weight.device.type == "meta" and type(m2.weight) is ember.nn.Parameter
    m3 = m2.to_empty(device="cpu")
    assert m3.weight.device.type == "cpu"


def test_to_complex_warns():
    m = ember.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="Complex modules"):
        m.to(ember.complex64)
    assert m.weight.dtype is ember.complex64


# ---- state dict ---------------------------------------------------------------------------------
def test_state_dict_matches_torch():
    e, t = Net.build(ember), Net.build(torch)
    es, ts = e.state_dict(), t.state_dict()
    assert type(es) is OrderedDict
    assert list(es) == list(ts)
    assert list(es._metadata) == list(ts._metadata)
    assert es._metadata[""] == ts._metadata[""] == {"version": 1}
    assert all(type(v) is ember.Tensor and not v.requires_grad for v in es.values())
    kv = e.state_dict(keep_vars=True)
    assert kv["first.weight"] is e.first.weight
    assert list(e.state_dict(prefix="p.")) == list(t.state_dict(prefix="p."))
    # values round-trip
    copy_params(e, t)
    for k, v in t.state_dict().items():
        check(e.state_dict()[k], v)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    check(e(ember.from_numpy(x)), t(torch.from_numpy(x)))


def _load_msg(L, sd_fn, strict=True):
    m = Net.build(L)
    return m.load_state_dict(sd_fn(L, m), strict=strict)


@pytest.mark.parametrize("sd_fn", [
    lambda L, m: {k: v for k, v in m.state_dict().items() if "bias" not in k},
    lambda L, m: dict(m.state_dict(), foo=L.ones(1), **{"blocks.0.bar": L.ones(1)}),
    lambda L, m: dict(m.state_dict(), **{"first.weight": L.ones(3, 3)}),
    lambda L, m: dict(m.state_dict(), **{"scale": 3}),
    lambda L, m: {"first.weight": L.ones(3, 3), "zzz": L.ones(1)},
])
def test_load_state_dict_errors(sd_fn):
    with pytest.raises(RuntimeError) as te:
        _load_msg(torch, sd_fn)
    with pytest.raises(RuntimeError) as ee:
        _load_msg(ember, sd_fn)
    msg = str(ee.value).replace("ember", "torch")
    assert msg == str(te.value)


def test_load_state_dict_non_strict_and_assign():
    for strict_sd in (lambda L, m: {"first.weight": L.ones(4, 3), "zzz": L.ones(1)},):
        r_e = _load_msg(ember, strict_sd, strict=False)
        r_t = _load_msg(torch, strict_sd, strict=False)
        assert r_e.missing_keys == r_t.missing_keys and r_e.unexpected_keys == r_t.unexpected_keys
        assert R(r_e) == repr(r_t)
    m = ember.nn.Linear(2, 3)
    w = m.weight
    new = ember.ones(3, 2)
    m.load_state_dict({"weight": new, "bias": ember.zeros(3)})
    assert m.weight is w and w.tolist() == new.tolist()  # copied in place
    m.load_state_dict({"weight": new, "bias": ember.zeros(3)}, assign=True)
    assert m.weight is not w and type(m.weight) is ember.nn.Parameter and m.weight.requires_grad
    # a 0-d parameter accepts a 1-element 1-d value
    s = ember.nn.Module()
    s.p = ember.nn.Parameter(ember.tensor(1.0))
    s.load_state_dict({"p": ember.tensor([5.0])})
    assert s.p.item() == 5.0


def test_state_dict_hooks_and_extra_state():
    class WithExtra(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(1, 1)
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    m = WithExtra()
    m.value = 7
    sd = m.state_dict()
    assert list(sd) == ["_extra_state", "lin.weight", "lin.bias"]
    m2 = WithExtra()
    m2.load_state_dict(sd)
    assert m2.value == 7
    calls = []
    m2.register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append("pre"))
    m2.register_state_dict_post_hook(lambda mod, sd, prefix, meta: calls.append("post"))
    m2.register_load_state_dict_pre_hook(lambda mod, *a: calls.append("lpre"))
    m2.register_load_state_dict_post_hook(lambda mod, keys: calls.append("lpost"))
    m2.load_state_dict(m2.state_dict())
    assert calls == ["pre", "post", "lpre", "lpost"]


def test_save_load_state_dict(tmp_path):
    m = Net.build(ember)
    f = tmp_path / "m.pt"
    ember.save(m.state_dict(), str(f))
    sd = torch.load(str(f))
    assert list(sd) == list(m.state_dict())
    m2 = Net.build(ember)
    m2.load_state_dict(ember.load(str(f)))
    for (k, a), b in zip(m.state_dict().items(), m2.state_dict().values()):
        assert a.tolist() == b.tolist(), k
    # whole parameters round-trip as Parameters
    ember.save(m.first.weight, str(f))
    p = ember.load(str(f))
    assert type(p) is ember.nn.Parameter and p.requires_grad
    assert type(torch.load(str(f))) is torch.nn.Parameter


def test_module_deepcopy_pickle():
    m = Net.build(ember)
    c = copy.deepcopy(m)
    assert c.shared is c.first and c.first.weight is not m.first.weight
    assert type(c.first.weight) is ember.nn.Parameter
    assert c.first.weight.tolist() == m.first.weight.tolist()
    lin = ember.nn.Linear(3, 2)
    r = pickle.loads(pickle.dumps(lin))
    assert r.weight.tolist() == lin.weight.tolist() and type(r.weight) is ember.nn.Parameter


# ---- hooks --------------------------------------------------------------------------------------
def _hook_log(L):
    log = []
    m = L.nn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
    m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)

    def pre_kw(mod, args, kwargs):
        log.append(("prekw", sorted(kwargs)))
        return (args[0] * 2,), kwargs

    m.register_forward_pre_hook(pre_kw, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append("fwd1"))
    m.register_forward_hook(lambda mod, args, out: log.append("fwd0"), prepend=True)

    def fwd_kw(mod, args, kwargs, out):
        log.append(("fwdkw", tuple(args[0].shape)))
        return out + 1

    m.register_forward_hook(fwd_kw, with_kwargs=True)
    with torch.no_grad():
        m.weight.copy_(L.eye(2))
        m.bias.zero_()
    out = m(L.ones(1, 2))
    h1.remove()
    m(L.ones(1, 2))
    return log, out.tolist()


def test_forward_hooks_order_and_results():
    with ember.no_grad():
        e = _hook_log(ember)
    assert e == _hook_log(torch)
    assert e[1] == [[3.0, 3.0]]


def test_forward_hook_always_called_and_errors():
    for L in (ember, torch):
        calls = []

        class Bad(L.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Bad()
        m.register_forward_hook(lambda mod, a, o: calls.append("always"), always_call=True)
        m.register_forward_hook(lambda mod, a, o: calls.append("normal"))
        with pytest.raises(ValueError):
            m(1)
        assert calls == ["always"]
    same_error(lambda L: _bad_pre_kw(L))


def _bad_pre_kw(L):
    m = L.nn.Linear(1, 1)
    m.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    return m(L.ones(1))


def _backward_hooks(L):
    rng = np.random.default_rng(1)
    log = []
    A = Affine.build(L)
    m = L.nn.Sequential(A(3), L.nn.Tanh(), A(3))
    with torch.no_grad(), ember.no_grad():
        for p in m.parameters():
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))

    def full(name):
        def h(mod, gin, gout):
            log.append((name, "full", [None if g is None else np.round(g.detach().numpy(), 4).tolist()
                                       for g in gin],
                        [np.round(g.detach().numpy(), 4).tolist() for g in gout]))
        return h

    def pre(name, scale=None):
        def h(mod, gout):
            log.append((name, "pre", [np.round(g.detach().numpy(), 4).tolist() for g in gout]))
            if scale is not None:
                return tuple(g * scale for g in gout)
        return h

    m[0].register_full_backward_hook(full("lin0"))
    m[2].register_full_backward_hook(full("lin2"))
    m[2].register_full_backward_pre_hook(pre("lin2", 2.0))
    m.register_full_backward_pre_hook(pre("seq"))
    m.register_full_backward_hook(full("seq"))

    def double_gin(mod, gin, gout):
        return tuple(None if g is None else g * 3 for g in gin)

    m[1].register_full_backward_hook(double_gin)
    x = L.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    out = m(x)
    out.sum().backward()
    return log, x.grad.numpy().round(4).tolist(), m[0].weight.grad.numpy().round(4).tolist()


def test_full_backward_hooks_match_torch():
    e = _backward_hooks(ember)
    t = _backward_hooks(torch)
    assert [x[:2] for x in e[0]] == [x[:2] for x in t[0]]
    np.testing.assert_allclose(np.array(e[1]), np.array(t[1]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(e[2]), np.array(t[2]), rtol=1e-4, atol=1e-4)
    for a, b in zip(e[0], t[0]):
        for ga, gb in zip(a[2:], b[2:]):
            for u, v in zip(ga, gb):
                if v is None:
                    assert u is None
                else:
                    np.testing.assert_allclose(np.array(u), np.array(v), rtol=1e-3, atol=1e-3)


def test_backward_hook_no_input_grad_and_mixing():
    for L in (ember, torch):
        m = Affine.build(L)(2)
        seen = []
        m.register_full_backward_hook(lambda mod, gin, gout: seen.append((gin, len(gout))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(L.ones(1, 2)).sum().backward()
        assert seen == [((None,), 1)]
    same_error(lambda L: _mix_hooks(L))


def _mix_hooks(L):
    m = L.nn.Linear(1, 1)
    m.register_full_backward_hook(lambda *a: None)
    m.register_backward_hook(lambda *a: None)


def test_global_hooks():
    from ember.nn.modules import module as mm
    calls = []
    h = mm.register_module_forward_hook(lambda mod, a, o: calls.append(type(mod).__name__))
    try:
        ember.nn.Sequential(ember.nn.ReLU())(ember.ones(1))
    finally:
        h.remove()
    ember.nn.ReLU()(ember.ones(1))
    assert calls == ["ReLU", "Sequential"]


# ---- repr, dir ----------------------------------------------------------------------------------
def test_repr_matches_torch():
    assert R(Net.build(ember)) == repr(Net.build(torch))
    for L in (ember, torch):
        class WithExtra(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(1, 1)

            def extra_repr(self):
                return "a=1\nb=2"
    cases = [
        lambda L: L.nn.Module(),
        lambda L: L.nn.Sequential(),
        lambda L: L.nn.ModuleList(),
        lambda L: L.nn.Sequential(L.nn.Linear(1, 2), L.nn.Sequential(L.nn.ReLU(), L.nn.ModuleList(
            [L.nn.Dropout(0.2), L.nn.Dropout(0.2), L.nn.GELU()]))),
        lambda L: L.nn.ModuleList([L.nn.ReLU(), L.nn.ReLU(), L.nn.Tanh(), L.nn.ReLU()]),
        lambda L: L.nn.Bilinear(2, 3, 4, bias=False),
        lambda L: L.nn.Flatten(0, 2),
        lambda L: L.nn.Unflatten(1, (2, 3)),
        lambda L: L.nn.Identity(54, unused="x"),
        lambda L: L.nn.ParameterList([L.nn.Parameter(L.ones(2, 2)), L.ones(3, dtype=L.float64)]),
        lambda L: L.nn.ParameterDict({"b": L.ones(2), "a": L.nn.Parameter(L.ones(1, 2))}),
    ]
    for c in cases:
        assert R(c(ember)) == repr(c(torch))


def test_dir():
    m = Net.build(ember)
    d = dir(m)
    for name in ("first", "blocks", "scale", "forward", "state_dict", "training"):
        assert name in d
    assert "0" not in dir(m.blocks)


# ---- containers ---------------------------------------------------------------------------------
def test_sequential():
    for L in (ember, torch):
        a, b, c = L.nn.ReLU(), L.nn.Tanh(), L.nn.Sigmoid()
        s = L.nn.Sequential(a, b)
        assert len(s) == 2 and s[0] is a and s[-1] is b and list(s) == [a, b]
        s.append(c)
        assert s[2] is c and list(s._modules) == ["0", "1", "2"]
        sl = s[1:]
        assert type(sl) is L.nn.Sequential and list(sl) == [b, c] and list(sl._modules) == ["1", "2"]
        del s[0]
        assert list(s._modules) == ["0", "1"] and s[0] is b
        s.insert(0, a)
        assert list(s) == [a, b, c]
        s[1] = L.nn.Identity()
        assert isinstance(s[1], L.nn.Identity)
        assert len(s + s) == 6 and len(s * 2) == 6 and len(2 * s) == 6
        assert s.pop(0) is a and len(s) == 2
        s.extend([a])
        assert len(s) == 3
        od = L.nn.Sequential(OrderedDict([("x", a), ("y", b)]))
        assert list(od._modules) == ["x", "y"] and od.x is a
        x = L.tensor([[-1.0, 2.0]])
        assert L.nn.Sequential(L.nn.ReLU(), L.nn.Tanh())(x).tolist() == L.tanh(L.relu(x)).tolist()


def test_module_list_dict():
    for L in (ember, torch):
        a, b = L.nn.ReLU(), L.nn.Tanh()
        ml = L.nn.ModuleList([a])
        ml.append(b)
        ml += [L.nn.Sigmoid()]
        assert len(ml) == 3 and ml[1] is b and ml[-3] is a
        assert type(ml[:2]) is L.nn.ModuleList and len(ml[:2]) == 2
        del ml[0]
        assert ml[0] is b and list(ml._modules) == ["0", "1"]
        ml.insert(0, a)
        assert ml[0] is a and ml[1] is b
        md = L.nn.ModuleDict({"a": a})
        md["b"] = b
        md.update([("c", L.nn.Sigmoid())])
        assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
        assert md.pop("a") is a and list(md.keys()) == ["b", "c"]
        assert [k for k, _ in md.items()] == ["b", "c"]
        md.clear()
        assert len(md) == 0


def test_parameter_list_dict():
    for L in (ember, torch):
        pl = L.nn.ParameterList([L.ones(2), L.nn.Parameter(L.zeros(1))])
        assert len(pl) == 2 and all(isinstance(p, L.nn.Parameter) for p in pl)
        pl.append(L.ones(3))
        assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
        assert len(pl[1:]) == 2
        pd = L.nn.ParameterDict({"b": L.ones(1), "a": L.ones(2)})
        assert list(pd) == ["a", "b"]  # a plain dict is sorted
        pd["c"] = L.ones(3)
        assert isinstance(pd["c"], L.nn.Parameter) and list(pd.keys()) == ["a", "b", "c"]
        assert pd.get("zz") is None and "a" in pd
        del pd["a"]
        assert [n for n, _ in pd.named_parameters()] == ["b", "c"]
        k, v = pd.popitem()
        assert k == "c" and len(pd) == 1
        assert len(pd | L.nn.ParameterDict({"z": L.ones(1)})) == 2


def test_call_fast_path_and_forward_kwargs():
    class M(ember.nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    m = M()
    assert m(ember.ones(2), scale=3.0).tolist() == [3.0, 3.0]
    seen = []
    m.register_forward_pre_hook(lambda mod, a, k: seen.append(k), with_kwargs=True)
    m(ember.ones(1), scale=2.0)
    assert seen == [{"scale": 2.0}]
