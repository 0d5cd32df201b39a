"""The inductor backend's output code: one readable, standalone module per graph (imports, kernels,
call, benchmark_compiled_module), deterministic kernel sources (disk-cache hits), logging under
EMBER_LOGS=output_code and the debug directory; graphs it cannot compile replay; and the op
database compiled with inductor equals eager (within float32 rounding: fused kernels round once
and use polynomial transcendentals) in dtype, shape and strides."""
import logging
import os
import re
import warnings

import pytest
from opdb import materialize, op_db, op_ids

import ember
import ember._dynamo as dynamo
from ember._dynamo import logs
from ember._inductor import compile_fx, lowering, runtime


def _spy(fn, *args, **kw):
    got = []
    old = compile_fx.compile_nodes

    def spy(*a, **k):
        f = old(*a, **k)
        got.append(f)
        return f
    compile_fx.compile_nodes = spy
    try:
        c = ember.compile(fn, **kw)
        r = c(*args)
        r2 = c(*args)
    finally:
        compile_fx.compile_nodes = old
    return got, r, r2


def f_mix(x, y):
    a = (x * y).relu() + 1
    b = a.cumsum(-1)                  # an extern between kernels
    return (b.to(ember.float64) * 2).sigmoid(), a.exp()


def test_output_code_is_a_standalone_module(kernel_backend):
    x, y = ember.randn(4, 6), ember.randn(6)
    got, r, r2 = _spy(f_mix, x, y)
    src = got[0].source
    for piece in ("import numpy as np", "def call(", "def benchmark_compiled_module(", "load_module(",
                  "cumsum_default = ember.ops.aten.cumsum.default.call", "if __name__ == '__main__':"):
        assert piece in src, piece
    ns = {"__name__": "output_code"}
    exec(compile(src, "output_code.py", "exec"), ns)
    again = ns["call"](x, y)
    for a, b in zip(again, r2):
        assert ember.equal(a, b)
    assert ns["benchmark_compiled_module"](times=1, repeat=1) > 0


def test_kernel_source_is_deterministic(kernel_backend):
    x = ember.randn(50)
    g1, _, _ = _spy(lambda t: (t * 3).tanh() - t, x)
    dynamo.reset()
    before = dict(runtime.counters)
    g2, _, _ = _spy(lambda t: (t * 3).tanh() - t, ember.randn(70))     # a new shape: same kernel
    def kernels(src):
        return re.findall(r"load_module\('''(.*?)'''", src, re.S)
    assert kernels(g1[0].source) == kernels(g2[0].source) != []
    assert runtime.counters["memo_hits"] > before["memo_hits"]


def test_output_code_log_and_debug_dir(kernel_backend, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(dynamo.config, "debug_dir_root", str(tmp_path))
    logs.set_logs(output_code=True)
    try:
        with caplog.at_level(logging.INFO, logger="ember._dynamo"):
            c = ember.compile(lambda t: (t + 1).relu() * 2, options={"trace.enabled": True})
            c(ember.randn(5))
    finally:
        logs.set_logs(output_code=False)
    assert any("def call(" in rec.getMessage() and "kernel0" in rec.getMessage() for rec in caplog.records)
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs if f.endswith("_output_code.py")]
    assert files and "def call(" in open(files[0]).read()


def test_meta_tensors_replay():
    def f(t):
        return t * 2 + 1
    x = ember.empty(3, 4, device="meta")
    got, r, r2 = _spy(f, x)
    assert got and "replayed through the dispatcher" in got[0].source
    assert r2.device.type == "meta" and r2.shape == (3, 4)


def test_numpy_generator_leaves_erf_to_externs(kernel_backend):
    got, r, r2 = _spy(lambda t: ember.nn.functional.gelu(t) * 2, ember.randn(8))
    assert ember.allclose(r2, ember.nn.functional.gelu(ember.randn(1)) * 0 + r, atol=0)
    if not runtime.have_numba():     # the numpy parameter, or EMBER_INDUCTOR_BACKEND=numpy
        assert "gelu_default = " in got[0].source
    else:
        assert "m.erf_f32" in got[0].source


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_zero_size_buffers_keep_eagers_strides(kernel_backend, mode, dtype):
    """A zero-size buffer the output code allocates has the strides eager's result has (NumPy's
    empty arrays report none of their own: ember/core/tensor_impl.py records torch's): a clone of
    zeros(3, 0).t() keeps (1, 1), of a NumPy array with zero strides (0, 0), also when the result
    is written in place and when a half dtype is computed in float32."""
    import numpy as np
    import torch
    dt = getattr(ember, dtype)
    fns = [lambda x: x.clone(), lambda x: x.clone().relu_(), lambda x: x.clone().mul_(2),
           lambda x: (x.clone().add_(1), x + x)]
    inputs = [(lambda m: m.zeros(3, 0).t()),
              (lambda m: m.from_numpy(np.array(np.zeros((0,), np.float32).reshape(0, 4), order="C")))]
    for make in inputs:
        x = make(ember).to(dt)
        tx = make(torch).to(getattr(torch, dtype))
        for f in fns:
            want = [(tuple(r.shape), r.stride()) for r in _tuple(f(tx))]
            c = ember.compile(f, backend="inductor", mode=mode)
            assert [(tuple(e.shape), e.stride()) for e in _tuple(f(x))] == want  # eager
            for _ in range(2):  # the capturing call, then the output code's
                got = _tuple(c(x))
                assert [(tuple(e.shape), e.stride()) for e in got] == want
                assert all(e.dtype == dt for e in got)
            dynamo.reset()


def _tuple(r):
    return r if isinstance(r, tuple) else (r,)


# ---- the op database through inductor --------------------------------------------------------
_LOWERED = {name for name, _ in lowering.RULES} | {"mm", "addmm", "bmm", "matmul"}
OPS = [op for op in op_db if op.name.split(".")[-1].split("_")[0] in _LOWERED or op.name in _LOWERED]


def _leaves(r):
    if isinstance(r, ember.Tensor):
        return [r]
    if isinstance(r, (list, tuple)):
        return [x for e in r for x in _leaves(e)]
    return []


def _close(a, b):
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert x.stride() == y.stride(), (x.stride(), y.stride())
        if x.numel():
            if x.dtype.is_floating_point:
                tol = 1e-5 if x.dtype in (ember.float32, ember.float64) else 1e-2
                assert ember.allclose(x.float(), y.float(), rtol=tol, atol=tol, equal_nan=True), (x, y)
            else:
                assert ember.equal(x, y), (x, y)


def _call(op, kw):
    def fn(*a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return op.op(ember, *a, **kw)
    return fn


@pytest.mark.parametrize("op", OPS, ids=op_ids(OPS))
def test_opdb_compiled_equals_eager(op, kernel_backend):
    """NumPy generator: float32 (or the op's first dtype) and, where the op has them, int32, bool
    and bfloat16, every sample; numba (each new kernel costs a numba compile): float32, the first
    three samples (ordinary, 0-d, zero-size); tests/inductor/test_fusion.py covers the layouts."""
    dtypes = ["float32" if "float32" in op.dtypes else op.dtypes[0]]
    extra = ("int32", "bool", "bfloat16") if kernel_backend == "numpy" else ()
    dtypes += [d for d in extra if d in op.dtypes]
    for dtype in dtypes:
        samples = op.sample_inputs(dtype)
        for i, sample in enumerate(samples if kernel_backend == "numpy" else samples[:3]):
            fn = _call(op, materialize(sample, dtype, seed=i)[2])
            try:
                ref = fn(*materialize(sample, dtype, seed=i)[0])
            except Exception as e:
                c = ember.compile(fn, backend="inductor")
                with pytest.raises(type(e)):
                    c(*materialize(sample, dtype, seed=i)[0])
                continue
            c = ember.compile(fn, backend="inductor")
            for _ in range(2):
                _close(c(*materialize(sample, dtype, seed=i)[0]), ref)
    dynamo.reset()
