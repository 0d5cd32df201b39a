"""ember.optim against torch.optim: the same parameters and gradients (copied through NumPy) for 20
steps must give the same parameters and state, for every optimizer and option combination."""
import warnings

import numpy as np
import pytest
import torch
from harness import same_error

import ember

SHAPES = [(3, 4), (5,), ()]
STEPS = 20

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, weight_decay=0.01, nesterov=True, momentum=0.3)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.6), maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-8)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, lr_decay=0.05, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
]


def ids(c):
    return c[0] + "-" + "-".join(f"{k}={v}" for k, v in c[1].items())


def make_params(lib, arrays, dtype):
    out = []
    for a in arrays:
        t = lib.from_numpy(a.copy())
        if dtype is not None:
            t = t.to(getattr(lib, dtype))
        out.append(t.requires_grad_())
    return out


def run_both(name, kwargs, rng, dtype="float64", steps=STEPS, complex_=False, groups=None):
    def sample(shape):
        a = rng.standard_normal(shape)
        if complex_:
            a = a + 1j * rng.standard_normal(shape)
        return np.asarray(a)

    arrays = [sample(s) for s in SHAPES]
    grads = [[sample(s) for s in SHAPES] for _ in range(steps)]
    results = {}
    for lib in (torch, ember):
        params = make_params(lib, arrays, None if complex_ else dtype)
        spec = params if groups is None else [dict(g, params=[params[i] for i in idx]) for idx, g in groups]
        opt = getattr(lib.optim, name)(spec, **kwargs)
        for k in range(steps):
            for p, g in zip(params, grads[k]):
                p.grad = lib.from_numpy(g.copy()).to(p.dtype)
            opt.step()
        results[lib] = (params, opt)
    return results


def check_close(tp, ep, rtol=1e-6, atol=1e-9):
    assert str(ep.dtype).split(".")[1] == str(tp.dtype).split(".")[1]
    assert tuple(ep.shape) == tuple(tp.shape)
    if tp.dtype == torch.bfloat16:
        tp, ep = tp.float(), ep.float()
    np.testing.assert_allclose(ep.detach().numpy().astype(np.complex128),
                               tp.detach().numpy().astype(np.complex128), rtol=rtol, atol=atol)


def check_state(res, rtol=1e-6, atol=1e-9):
    (tparams, topt), (eparams, eopt) = res[torch], res[ember]
    for tp, ep in zip(tparams, eparams):
        check_close(tp, ep, rtol, atol)
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert sorted(tsd["state"]) == sorted(esd["state"])
    for k, tstate in tsd["state"].items():
        estate = esd["state"][k]
        assert sorted(tstate) == sorted(estate)
        for key, tv in tstate.items():
            ev = estate[key]
            if isinstance(tv, torch.Tensor):
                check_close(tv, ev, rtol, atol)
            else:
                assert tv == ev
    assert len(tsd["param_groups"]) == len(esd["param_groups"])
    for tg, eg in zip(tsd["param_groups"], esd["param_groups"]):
        assert sorted(tg) == sorted(eg)
        assert tg["params"] == eg["params"]
        for key in tg:
            assert tg[key] == eg[key], key


@pytest.mark.parametrize("config", CONFIGS, ids=ids)
def test_matches_torch_float64(config, rng):
    check_state(run_both(*config, rng))


@pytest.mark.parametrize("config", CONFIGS[::3], ids=ids)
def test_matches_torch_float32(config, rng):
    check_state(run_both(*config, rng, dtype="float32"), rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("config", CONFIGS[1::4], ids=ids)
def test_matches_torch_low_precision(config, dtype, rng):
    check_state(run_both(*config, rng, dtype=dtype, steps=5), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("config", [c for c in CONFIGS if c[0] != "SGD" or c[1].get("momentum")][::2], ids=ids)
def test_matches_torch_complex(config, rng):
    check_state(run_both(*config, rng, complex_=True))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
def test_param_groups(name, rng):
    groups = [([0, 2], dict(lr=0.05)), ([1], dict(weight_decay=0.1))]
    kwargs = dict(lr=0.01, momentum=0.5) if name == "SGD" else dict(lr=0.01)
    check_state(run_both(name, kwargs, rng, groups=groups, steps=5))


def test_state_step_dtype_and_defaults():
    for lib in (torch, ember):
        p = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        opt = lib.optim.Adam([p])
        p.grad = lib.ones(3, dtype=lib.float64)
        opt.step()
        st = opt.state[p]
        assert str(st["step"].dtype).endswith("float32") and st["step"].dim() == 0 and st["step"].item() == 1.0
    assert ember.optim.Adam([ember.zeros(1, requires_grad=True)]).defaults == \
        torch.optim.Adam([torch.zeros(1, requires_grad=True)]).defaults
    for name in ["SGD", "AdamW", "RMSprop", "Adagrad", "Adadelta"]:
        e = getattr(ember.optim, name)([ember.zeros(1, requires_grad=True)]).defaults
        t = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)]).defaults
        assert e == t, name


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(amsgrad=True)),
                                         ("RMSprop", dict(centered=True, momentum=0.5)), ("Adagrad", {}),
                                         ("Adadelta", {})])
def test_state_dict_round_trip(name, kwargs, rng):
    arrays = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(8)]

    def run(params, opt, ks):
        for k in ks:
            for p, g in zip(params, grads[k]):
                p.grad = ember.from_numpy(g.copy())
            opt.step()

    params = make_params(ember, arrays, None)
    opt = getattr(ember.optim, name)(params, **kwargs)
    run(params, opt, range(8))

    params2 = make_params(ember, arrays, None)
    opt2 = getattr(ember.optim, name)(params2, **kwargs)
    run(params2, opt2, range(4))
    sd = opt2.state_dict()
    assert all(isinstance(k, int) for k in sd["state"])
    params3 = [p.detach().clone().requires_grad_() for p in params2]
    opt3 = getattr(ember.optim, name)(params3, **kwargs)
    opt3.load_state_dict(sd)
    assert opt3.state_dict()["param_groups"] == sd["param_groups"]
    run(params3, opt3, range(4, 8))
    for a, b in zip(params, params3):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def test_load_state_dict_from_torch_format(rng):
    """A torch state_dict with its tensors converted loads into ember and continues identically."""
    arrays = [rng.standard_normal(s) for s in SHAPES]
    g = [rng.standard_normal(s) for s in SHAPES]
    tparams = make_params(torch, arrays, None)
    topt = torch.optim.Adam(tparams, lr=0.01)
    for p, gi in zip(tparams, g):
        p.grad = torch.from_numpy(gi.copy())
    topt.step()
    tsd = topt.state_dict()
    esd = {"state": {k: {n: ember.from_numpy(v.numpy().copy()) for n, v in s.items()} for k, s in tsd["state"].items()},
           "param_groups": tsd["param_groups"]}
    eparams = [ember.from_numpy(p.detach().numpy().copy()).requires_grad_() for p in tparams]
    eopt = ember.optim.Adam(eparams, lr=0.01)
    eopt.load_state_dict(esd)
    for lib, params, opt in ((torch, tparams, topt), (ember, eparams, eopt)):
        for p, gi in zip(params, g):
            p.grad = lib.from_numpy(gi.copy())
        opt.step()
    for tp, ep in zip(tparams, eparams):
        check_close(tp, ep)


def _closure_run(lib):
    w = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)

    def closure():
        opt.zero_grad()
        loss = w * w + 3 * w
        loss.backward(lib.ones_like(loss))
        return loss
    losses = [opt.step(closure).detach().numpy().copy() for _ in range(5)]
    return w.detach().numpy().copy(), losses


def test_closure_and_backward():
    ew, el = _closure_run(ember)
    tw, tl = _closure_run(torch)
    np.testing.assert_allclose(ew, tw, rtol=1e-12)
    np.testing.assert_allclose(el, tl, rtol=1e-12)


def test_step_skips_params_without_grad():
    for lib in (torch, ember):
        a = lib.ones(2, dtype=lib.float64, requires_grad=True)
        b = lib.ones(2, dtype=lib.float64, requires_grad=True)
        opt = lib.optim.Adam([a, b], lr=0.1)
        a.grad = lib.ones(2, dtype=lib.float64)
        opt.step()
        assert b.tolist() == [1.0, 1.0] and len(opt.state) == 1
        assert not a.requires_grad or a.grad_fn is None  # step ran under no_grad


def test_zero_grad():
    for lib in (torch, ember):
        p = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        p.grad = lib.ones(2)
        opt.zero_grad(set_to_none=False)
        assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
        opt.zero_grad()
        assert p.grad is None


def test_add_param_group_and_repr():
    for lib in (torch, ember):
        a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([a], lr=0.1, momentum=0.9)
        opt.add_param_group({"params": b, "lr": 0.5})
        assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
        assert opt.param_groups[1]["momentum"] == 0.9
        assert len(opt.param_groups[1]["params"]) == 1
    er = repr(ember.optim.Adam([ember.ones(1, requires_grad=True)], lr=0.5))
    tr = repr(torch.optim.Adam([torch.ones(1, requires_grad=True)], lr=0.5))
    assert er == tr


def test_named_params():
    for lib in (torch, ember):
        a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([("a", a), ("b", b)], lr=0.1)
        assert opt.param_groups[0]["param_names"] == ["a", "b"]
        assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]


def _hook_calls(lib):
    p = lib.ones(2, requires_grad=True)
    opt = lib.optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("sd"))
    p.grad = lib.ones(2)
    opt.step()
    h1.remove()
    opt.step()
    opt.state_dict()
    return calls


def test_hooks():
    assert _hook_calls(ember) == _hook_calls(torch) == ["pre", "post", "post", "sd"]


def test_global_hooks_and_pre_hook_rewrites_args():
    from ember.optim.optimizer import register_optimizer_step_post_hook
    seen = []
    h = register_optimizer_step_post_hook(lambda o, a, k: seen.append(type(o).__name__))
    try:
        p = ember.ones(2, requires_grad=True)
        opt = ember.optim.Adam([p])
        p.grad = ember.ones(2)
        opt.step()
    finally:
        h.remove()
    opt.step()
    assert seen == ["Adam"]
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: 7}))
    assert opt.step() == 7


def test_duplicate_params_warn():
    p = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        ember.optim.SGD([p, p], lr=0.1)


def _leaf(lib):
    return lib.ones(2, requires_grad=True)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.optim.SGD([_leaf(lib)], lr=-1.0),
    lambda lib: lib.optim.SGD([_leaf(lib)], lr=0.1, momentum=-0.5),
    lambda lib: lib.optim.SGD([_leaf(lib)], lr=0.1, weight_decay=-0.5),
    lambda lib: lib.optim.SGD([_leaf(lib)], lr=0.1, nesterov=True),
    lambda lib: lib.optim.SGD([_leaf(lib)], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
    lambda lib: lib.optim.SGD([], lr=0.1),
    lambda lib: lib.optim.SGD(_leaf(lib), lr=0.1),
    lambda lib: lib.optim.SGD([1.0], lr=0.1),
    lambda lib: lib.optim.SGD([{"params": {_leaf(lib)}}], lr=0.1),
    lambda lib: lib.optim.SGD([_leaf(lib) * 2], lr=0.1),
    lambda lib: lib.optim.SGD([{"params": _leaf(lib)}, {"params": 1}], lr=0.1),
    lambda lib: lib.optim.Adam([_leaf(lib)], lr=-0.1),
    lambda lib: lib.optim.Adam([_leaf(lib)], eps=-1.0),
    lambda lib: lib.optim.Adam([_leaf(lib)], betas=(1.0, 0.9)),
    lambda lib: lib.optim.Adam([_leaf(lib)], betas=(0.9, -0.1)),
    lambda lib: lib.optim.Adam([_leaf(lib)], weight_decay=-0.1),
    lambda lib: lib.optim.Adam([_leaf(lib)], betas=(0.9, 1)),
    lambda lib: lib.optim.AdamW([_leaf(lib)], lr=-0.1),
    lambda lib: lib.optim.RMSprop([_leaf(lib)], alpha=-0.1),
    lambda lib: lib.optim.RMSprop([_leaf(lib)], momentum=-0.1),
    lambda lib: lib.optim.Adagrad([_leaf(lib)], lr_decay=-0.1),
    lambda lib: lib.optim.Adagrad([_leaf(lib)], initial_accumulator_value=-0.1),
    lambda lib: lib.optim.Adadelta([_leaf(lib)], rho=1.5),
])
def test_errors(fn):
    same_error(fn)


def _step_once(lib, name, **kw):
    p = lib.ones(2, requires_grad=True)
    o = getattr(lib.optim, name)([p], **kw)
    p.grad = lib.ones(2)
    o.step()
    return o


@pytest.mark.parametrize("fn", [
    lambda lib: _step_once(lib, "Adam", capturable=True),
    lambda lib: _step_once(lib, "RMSprop", capturable=True),
    lambda lib: _step_once(lib, "Adadelta", capturable=True),
    lambda lib: _step_once(lib, "Adam", fused=True, foreach=True),
    lambda lib: _step_once(lib, "Adam", fused=True, differentiable=True),
    lambda lib: _step_once(lib, "SGD", lr=0.1, fused=True, foreach=True),
    lambda lib: _step_once(lib, "Adam", betas=(lib.tensor(0.9), 0.99)),
    lambda lib: _step_once(lib, "Adam", lr=lib.tensor([0.1, 0.2])),
    lambda lib: _step_once(lib, "SGD", lr=lib.tensor([0.1, 0.2])),
])
def test_flag_errors(fn):
    same_error(fn)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_fused_flag_runs_same_numbers(name):
    t = _step_once(torch, name, lr=0.1, fused=True).param_groups[0]["params"][0]
    e = _step_once(ember, name, lr=0.1, fused=True).param_groups[0]["params"][0]
    check_close(t, e)


def test_shared_params_across_groups_error():
    def fn(lib):
        p = _leaf(lib)
        lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    same_error(fn)


def test_param_group_missing_required_and_load_errors():
    def fn(lib):
        opt = lib.optim.SGD([_leaf(lib)], lr=0.1)
        opt.load_state_dict({"state": {}, "param_groups": []})
    same_error(fn)

    def fn2(lib):
        opt = lib.optim.SGD([_leaf(lib)], lr=0.1)
        sd = opt.state_dict()
        sd["param_groups"][0]["params"] = [0, 1]
        opt.load_state_dict(sd)
    same_error(fn2)


def test_no_warnings_on_plain_step():
    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([p])
    p.grad = ember.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()


def test_functional_module_attributes():
    import ember.optim.adam as eadam
    import ember.optim.sgd as esgd
    assert callable(esgd.sgd) and callable(eadam.adam)
    assert ember.optim.lr_scheduler.StepLR is not None
