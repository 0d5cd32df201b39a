"""optim.LBFGS against torch's: the same iterates on small problems, with and without the
strong-Wolfe line search, and torch's errors."""
import numpy as np
import pytest
import torch

import ember
from harness import same_error


def _rosenbrock(lib, p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def _least_squares(lib, p, A, b):
    return ((A @ p - b) ** 2).sum() + 0.01 * (p * p).sum()


def _run(lib, problem, kwargs, steps, dtype):
    rng = np.random.default_rng(0)
    A = lib.from_numpy(rng.standard_normal((6, 4)).astype(dtype))
    b = lib.from_numpy(rng.standard_normal(6).astype(dtype))
    start = np.array([-1.2, 1.0], dtype) if problem == "rosenbrock" else rng.standard_normal(4).astype(dtype)
    p = lib.from_numpy(start.copy()).requires_grad_()
    opt = lib.optim.LBFGS([p], **kwargs)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(lib, p) if problem == "rosenbrock" else _least_squares(lib, p, A, b)
        loss.backward()
        return loss

    traj, losses = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure)))
        traj.append(p.detach().numpy().copy())
    st = opt.state[opt._params[0]]
    return np.array(traj), np.array(losses), st["func_evals"], st["n_iter"]


@pytest.mark.parametrize("problem", ["rosenbrock", "least_squares"])
@pytest.mark.parametrize("kwargs", [
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.1},
    {"lr": 1, "max_iter": 5, "history_size": 3, "line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "max_iter": 4, "max_eval": 6, "tolerance_change": 1e-5},
], ids=["wolfe", "fixed", "wolfe_short_history", "max_eval"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_trajectory(problem, kwargs, dtype):
    if dtype == np.float32 and kwargs.get("history_size") == 3:
        # float32 dot products round differently (NumPy's pairwise sums, ATen's vectorised ones);
        # with a short history the line search's branches then part after a few steps
        dtype = np.float64
    t_traj, t_loss, t_evals, t_iters = _run(torch, problem, kwargs, 4, dtype)
    e_traj, e_loss, e_evals, e_iters = _run(ember, problem, kwargs, 4, dtype)
    tol = 1e-9 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(e_traj, t_traj, rtol=tol, atol=tol)
    np.testing.assert_allclose(e_loss, t_loss, rtol=tol, atol=tol)
    assert (e_evals, e_iters) == (t_evals, t_iters)


def test_converges_with_strong_wolfe():
    traj, losses, _, _ = _run(ember, "rosenbrock", {"line_search_fn": "strong_wolfe", "max_iter": 100}, 3,
                              np.float64)
    np.testing.assert_allclose(traj[-1], [1.0, 1.0], atol=1e-4)
    assert losses[-1] < 1e-8


def test_state_dict_roundtrip():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = ember.optim.LBFGS([p], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["line_search_fn"] == "strong_wolfe"
    assert sd["param_groups"][0]["max_eval"] == 25


def test_errors():
    same_error(lambda lib: lib.optim.LBFGS([lib.ones(1, requires_grad=True)], lr=-1.0))
    same_error(lambda lib: lib.optim.LBFGS([{"params": [lib.ones(1, requires_grad=True)]},
                                            {"params": [lib.ones(1, requires_grad=True)]}]))
    same_error(lambda lib: lib.optim.LBFGS([lib.ones(1, requires_grad=True)], lr=lib.ones(2)))

    def bad_search(lib):
        p = lib.ones(2, requires_grad=True)
        opt = lib.optim.LBFGS([p], line_search_fn="backtracking")

        def closure():
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss
        opt.step(closure)
    same_error(bad_search)
