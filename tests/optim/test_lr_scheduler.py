"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: learning-rate (and momentum) sequences
over 30 steps must be equal to PyTorch's."""
import math
import warnings

import pytest
import torch
from harness import same_error

import ember

STEPS = 30


def make_opt(lib, opt="SGD", lrs=(0.1, 0.05)):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    if opt == "SGD":
        return lib.optim.SGD(groups, lr=lrs[0], momentum=0.9)
    return getattr(lib.optim, opt)(groups, lr=lrs[0])


def lib_of(mod):
    return mod.optim.lr_scheduler


SCHEDULERS = {
    "StepLR": lambda L, o: L.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, milestones=[3, 10, 10, 20], gamma=0.3),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "CosineAnnealingLR-nomin": lambda L, o: L.CosineAnnealingLR(o, T_max=7),
    "LambdaLR": lambda L, o: L.LambdaLR(o, lr_lambda=lambda e: 0.95 ** e),
    "LambdaLR-list": lambda L, o: L.LambdaLR(o, lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.9 ** e]),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "LinearLR": lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=8),
    "LinearLR-down": lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=12),
    "ConstantLR": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda L, o: L.PolynomialLR(o, total_iters=20, power=2.0),
    "OneCycleLR": lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=STEPS + 1),
    "OneCycleLR-linear": lambda L, o: L.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS + 1,
                                                   anneal_strategy="linear"),
    "OneCycleLR-three-phase": lambda L, o: L.OneCycleLR(o, max_lr=0.3, epochs=4, steps_per_epoch=8,
                                                        three_phase=True, pct_start=0.25, div_factor=10.0),
    "OneCycleLR-nomomentum": lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=40, cycle_momentum=False),
    "SequentialLR": lambda L, o: L.SequentialLR(o, schedulers=[L.LinearLR(o, start_factor=0.1, total_iters=5),
                                                               L.ExponentialLR(o, gamma=0.9)], milestones=[5]),
    "SequentialLR-3": lambda L, o: L.SequentialLR(o, schedulers=[L.ConstantLR(o, factor=0.2, total_iters=3),
                                                                 L.CosineAnnealingLR(o, T_max=8),
                                                                 L.StepLR(o, step_size=2)], milestones=[4, 15]),
    "ChainedScheduler": lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.5, total_iters=4),
                                                         L.ExponentialLR(o, gamma=0.9)]),
    "CyclicLR": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-tri2": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    "CyclicLR-exp": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5,
                                            mode="exp_range", gamma=0.95),
    "CosineAnnealingWarmRestarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.001),
}


def trace(mod, name, opt_name="SGD"):
    opt = make_opt(mod, opt_name)
    sched = SCHEDULERS[name](lib_of(mod), opt)
    out = [(list(sched.get_last_lr()), [g.get("momentum") for g in opt.param_groups],
            [g.get("betas") for g in opt.param_groups])]
    for _ in range(STEPS):
        opt.step()
        sched.step()
        out.append((list(sched.get_last_lr()), [g.get("momentum") for g in opt.param_groups],
                    [g.get("betas") for g in opt.param_groups]))
    return out, [g["lr"] for g in opt.param_groups]


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_equals_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace(torch, name)
        e = trace(ember, name)
    assert e == t


@pytest.mark.parametrize("name", ["OneCycleLR", "OneCycleLR-three-phase", "CyclicLR"])
def test_cycle_momentum_betas_adam(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace(torch, name, "Adam")
        e = trace(ember, name, "Adam")
    assert e == t


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("min", "abs"), ("max", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau(mode, threshold_mode):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85] * 3
    if mode == "max":
        metrics = [-m for m in metrics]
    res = {}
    for lib in (torch, ember):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=1,
                                                         threshold=0.01, threshold_mode=threshold_mode,
                                                         cooldown=1, min_lr=[0.01, 0.02])
        seq = []
        for m in metrics[:STEPS]:
            opt.step()
            sched.step(m)
            seq.append((sched.get_last_lr(), sched.num_bad_epochs, sched.best, sched.cooldown_counter))
        res[lib] = seq
    assert res[ember] == res[torch]


def test_reduce_lr_on_plateau_tensor_metric_and_state():
    for lib in (torch, ember):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        for v in [1.0, 2.0, 3.0]:
            sched.step(lib.tensor(v))
        assert sched.get_last_lr() == pytest.approx([0.001, 0.0005])
    t = torch.optim.lr_scheduler.ReduceLROnPlateau(make_opt(torch)).state_dict()
    e = ember.optim.lr_scheduler.ReduceLROnPlateau(make_opt(ember)).state_dict()
    assert sorted(t) == sorted(e)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "LambdaLR", "SequentialLR", "OneCycleLR",
                                  "LinearLR", "CyclicLR"])
def test_state_dict_keys_and_resume(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tsched = SCHEDULERS[name](torch.optim.lr_scheduler, make_opt(torch))
        opt = make_opt(ember)
        esched = SCHEDULERS[name](ember.optim.lr_scheduler, opt)
        assert sorted(esched.state_dict()) == sorted(tsched.state_dict())
        for _ in range(6):
            opt.step()
            esched.step()
        sd = esched.state_dict()
        opt_sd = opt.state_dict()
        # resume: a fresh optimizer + scheduler loaded from the state dicts continue the same sequence
        opt2 = make_opt(ember)
        esched2 = SCHEDULERS[name](ember.optim.lr_scheduler, opt2)
        opt2.load_state_dict(opt_sd)
        esched2.load_state_dict(sd)
        for _ in range(5):
            opt.step()
            esched.step()
            opt2.step()
            esched2.step()
            assert esched2.get_last_lr() == esched.get_last_lr()


def test_closed_form_step_epoch():
    res = {}
    for lib in (torch, ember):
        opt = make_opt(lib)
        L = lib.optim.lr_scheduler
        scheds = [L.StepLR(opt, 3, gamma=0.5)]
        seq = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for ep in [2, 5, 9, 4]:
                opt.step()
                scheds[0].step(ep)
                seq.append(scheds[0].get_last_lr())
        assert any("epoch parameter" in str(x.message) for x in w)
        res[lib] = seq
    assert res[ember] == res[torch]


def test_warning_scheduler_before_optimizer():
    for lib in (torch, ember):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
            sched.step()


def test_no_warning_in_normal_order():
    opt = make_opt(ember)
    sched = ember.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            opt.step()
            sched.step()


def test_initial_lr_and_base_lrs():
    for lib in (torch, ember):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
        assert sched.base_lrs == [0.1, 0.05] and sched.last_epoch == 0


def test_tensor_lr():
    res = {}
    for lib in (torch, ember):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=lib.tensor(0.1))
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, 0.5)
        out = []
        for _ in range(4):
            opt.step()
            sched.step()
            out.append(float(opt.param_groups[0]["lr"]))
        assert isinstance(opt.param_groups[0]["lr"], lib.Tensor)
        res[lib] = out
    assert res[ember] == pytest.approx(res[torch])


def test_cosine_values():
    opt = make_opt(ember, lrs=(1.0,))
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    lrs = []
    for _ in range(4):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs == pytest.approx([(1 + math.cos(math.pi * k / 4)) / 2 for k in range(1, 5)])


def test_epoch_deprecation_message():
    from torch.optim.lr_scheduler import EPOCH_DEPRECATION_WARNING as T
    from ember.optim.lr_scheduler import EPOCH_DEPRECATION_WARNING as E
    assert T == E


def _opt(lib):
    return make_opt(lib)


@pytest.mark.parametrize("fn", [
    lambda lib: lib.optim.lr_scheduler.StepLR([1], 2),
    lambda lib: lib.optim.lr_scheduler.StepLR(_opt(lib), 2, last_epoch=3),
    lambda lib: lib.optim.lr_scheduler.ConstantLR(_opt(lib), factor=1.5),
    lambda lib: lib.optim.lr_scheduler.LinearLR(_opt(lib), start_factor=0),
    lambda lib: lib.optim.lr_scheduler.LinearLR(_opt(lib), end_factor=2),
    lambda lib: lib.optim.lr_scheduler.LambdaLR(_opt(lib), [lambda e: 1.0]),
    lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(_opt(lib), 0.5),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), max_lr=1.0),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), max_lr=1.0, total_steps=0),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), max_lr=1.0, total_steps=10, pct_start=2.0),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), max_lr=1.0, total_steps=10, anneal_strategy="x"),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), max_lr=[1.0], total_steps=10),
    lambda lib: lib.optim.lr_scheduler.OneCycleLR(lib.optim.Adagrad([lib.zeros(1, requires_grad=True)]),
                                                  max_lr=1.0, total_steps=10),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), factor=1.0),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), mode="avg"),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), threshold_mode="x"),
    lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), min_lr=[0.1]),
    lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(lib), T_0=0),
    lambda lib: lib.optim.lr_scheduler.CyclicLR(_opt(lib), 0.1, 1.0, mode="x"),
])
def test_errors(fn):
    same_error(fn)


def test_sequential_errors():
    def milestones(lib):
        o = _opt(lib)
        L = lib.optim.lr_scheduler
        L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], milestones=[1, 2])
    same_error(milestones)

    def empty(lib):
        lib.optim.lr_scheduler.SequentialLR(_opt(lib), [], milestones=[])
    same_error(empty)

    def plateau(lib):
        o = _opt(lib)
        L = lib.optim.lr_scheduler
        L.SequentialLR(o, [L.ReduceLROnPlateau(o), L.StepLR(o, 2)], milestones=[1])
    same_error(plateau)


def test_onecycle_overstep():
    def fn(lib):
        o = _opt(lib)
        s = lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(5):
                o.step()
                s.step()
    same_error(fn)
