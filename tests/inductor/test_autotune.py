"""mode="max-autotune" (ember/_inductor/autotune.py): each fused kernel's variants are timed on the
graph's shapes and the fastest kept; the choice and the times are reported (the compiled call's
`autotune` list, a comment in the output code, EMBER_LOGS=autotuning). Whatever it picks, the
results are those of the default mode: within the kernels' error bound for an inference graph,
and bit for bit in a training step (only variants exact there are tried)."""
import logging

import pytest

import ember
import ember._dynamo as dynamo
from ember._dynamo import logs
from ember._inductor import autotune, runtime

pytestmark = pytest.mark.skipif(not runtime.have_numba(), reason="numba is not installed (pip install numba)")


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    monkeypatch.setattr(autotune, "BUDGET", 1e-4)   # short timing rounds: the test checks the plumbing
    dynamo.reset()
    yield
    dynamo.reset()


def f(x, y):
    return ember.tanh(x * 2 + y).sigmoid() * x + 1


@pytest.mark.parametrize("mode", ["max-autotune", "max-autotune-no-cudagraphs"])
def test_choice_reported_and_results_unchanged(mode, caplog):
    x, y = ember.randn(300, 70), ember.randn(70)
    ref = ember.compile(f, backend="inductor")(x, y)
    logs.set_logs(autotuning=True)
    try:
        with caplog.at_level(logging.INFO):
            c = ember.compile(f, backend="inductor", mode=mode)
            for _ in range(3):
                out = c(x, y)
    finally:
        logs.set_logs(autotuning=False)
    assert ember.allclose(out, ref, rtol=1e-6, atol=1e-6)
    fn = c.entries[0].root.fn
    (rep,) = fn.autotune
    assert rep["choice"] in rep["times"] and len(rep["times"]) >= 3
    assert rep["times"][rep["choice"]] == min(rep["times"].values())
    assert "# max-autotune:" in fn.source and f"-> {rep['choice']}" in fn.source
    assert "AUTOTUNE" in caplog.text and rep["choice"] in caplog.text


def test_training_step_stays_exact(train_step):
    g = ember.Generator().manual_seed(0)
    x, y = ember.randn(16, 6, generator=g), ember.randint(0, 4, (16,), generator=g)
    runs = []
    for mode in (None, "max-autotune"):
        ember.manual_seed(0)
        m = ember.nn.Sequential(ember.nn.Linear(6, 9), ember.nn.ReLU(), ember.nn.Linear(9, 4))
        opt = ember.optim.Adam(m.parameters(), lr=1e-2)

        c = ember.compile(train_step(m, opt), backend="inductor", mode=mode)
        runs.append(([c(x, y).item() for _ in range(5)], [p.clone() for p in m.parameters()]))
        assert c.eager_reason is None and c.entries
        if mode is not None:
            assert any(fn.autotune for fn in (e.root.fn for e in c.entries))
    assert runs[0][0] == runs[1][0]
    assert all(ember.equal(p, q) for p, q in zip(runs[0][1], runs[1][1]))
