"""The inductor's kernel runtime (ember/_inductor/runtime.py): numba switch, flags, the on-disk module
cache, and the counters that tell numba compiles from cache loads."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember._inductor import runtime

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _py(code, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=e,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _need_numba():
    pytest.importorskip("numba", reason="numba kernels need numba: pip install numba")


def test_import_does_not_import_numba():
    out = _py("""
        import sys, ember, ember._inductor, ember._inductor.runtime, ember._inductor.mathlib
        from ember._inductor import runtime
        runtime.have_numba(); runtime.cache_dir()
        print(sorted(m for m in sys.modules if m == "numba" or m.startswith(("numba.", "llvmlite"))))
    """)
    assert out.strip() == "[]"


def test_have_numba_switches(monkeypatch):
    import importlib.util
    present = importlib.util.find_spec("numba") is not None
    monkeypatch.delenv("EMBER_INDUCTOR_BACKEND", raising=False)
    config = sys.modules.get("ember._inductor.config")
    if config is not None:
        monkeypatch.setattr(config, "kernel_backend", "numba")
    assert runtime.have_numba() is present
    monkeypatch.setenv("EMBER_INDUCTOR_BACKEND", "numpy")
    assert runtime.have_numba() is False
    monkeypatch.setenv("EMBER_INDUCTOR_BACKEND", "numba")
    assert runtime.have_numba() is present
    import ember._inductor.config as config
    monkeypatch.setattr(config, "kernel_backend", "numpy")
    assert runtime.have_numba() is False


def test_njit_flags():
    assert runtime.NJIT_FLAGS == dict(cache=True, nogil=True, error_model="numpy",
                                      fastmath={"contract", "nsz"})
    runtime.NJIT_FLAGS["fastmath"].discard("nsz")    # a caller's edit does not leak into FASTMATH
    assert runtime.FASTMATH == {"contract", "nsz"}
    runtime.NJIT_FLAGS["fastmath"].add("nsz")


def test_flags_keep_inf_and_nan(tmp_path, monkeypatch):
    """The kernel flags keep IEEE inf/NaN semantics: division by zero, inf - inf, NaN comparisons,
    max/min with NaN, 1/sqrt at 0 and inf (the issue's arcp/afn made these NaN) and sums that
    reassociation would fold ((x + 1) - x, x*2*3 + x*-6 at inf) behave as in NumPy."""
    _need_numba()
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(tmp_path))
    mod = runtime.load_module(textwrap.dedent("""
        import numba
        from ember._inductor.runtime import NJIT_FLAGS

        @numba.njit(**NJIT_FLAGS)
        def k(x, y, out, isn):
            for i in range(x.size):
                a = x[i]
                b = y[i]
                out[i, 0] = a / b
                out[i, 1] = a - b
                out[i, 2] = a * b
                out[i, 3] = a if a > b else b
                out[i, 4] = b if b != b else (a if a != a else (a if a < b else b))
                out[i, 5] = numba.float32(1.0) / math.sqrt(a)            # arcp/afn: rsqrt
                out[i, 6] = (a + numba.float32(1.0)) - a                   # reassoc folds to 1
                out[i, 7] = a * numba.float32(2.0) * numba.float32(3.0) + a * numba.float32(-6.0)
                isn[i] = a != a
    """).replace("import numba", "import math\nimport numba"), "flags")
    vals = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3e38], np.float32)
    x, y = [a.ravel() for a in np.meshgrid(vals, vals, indexing="ij")]
    out = np.empty((x.size, 8), np.float32)
    isn = np.empty(x.size, np.bool_)
    mod.k(x, y, out, isn)
    one = np.float32(1)
    with np.errstate(all="ignore"):
        want = np.stack([x / y, x - y, x * y, np.where(x > y, x, y), np.minimum(x, y), one / np.sqrt(x),
                         (x + one) - x, x * np.float32(2) * np.float32(3) + x * np.float32(-6)], 1)
    # nsz lets the compiler drop a zero's sign: compare zeros by value only
    assert np.array_equal(np.isnan(out), np.isnan(want)), np.argwhere(np.isnan(out) != np.isnan(want))
    fin = ~np.isnan(want)
    fin[:, 7] &= np.isinf(want[:, 7])    # column 7 differs by fma rounding on finite x ("contract")
    assert np.array_equal(out[fin], want[fin])
    assert np.array_equal(isn, np.isnan(x))


def test_cache_dir_precedence(tmp_path, monkeypatch):
    d = tmp_path / "explicit"
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(d))
    assert runtime.cache_dir() == str(d) and d.is_dir()
    monkeypatch.delenv("EMBER_INDUCTOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert runtime.cache_dir() == str(tmp_path / "xdg" / "ember" / "inductor")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert runtime.cache_dir() == str(tmp_path / "home" / ".cache" / "ember" / "inductor")


def test_cache_dir_not_writable_falls_back(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(blocker / "sub"))
    d = runtime.cache_dir()
    assert d != str(blocker / "sub") and os.path.isdir(d) and os.access(d, os.W_OK)
    assert runtime.cache_dir() == d      # the same fallback every time in a process


def test_load_module_writes_once_and_memoises(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(tmp_path))
    src = "VALUE = 41 + 1\n"
    before = dict(runtime.counters)
    m1 = runtime.load_module(src, "my kernel/1")
    assert m1.VALUE == 42
    files = [f for f in os.listdir(tmp_path) if f.endswith(".py")]
    path = runtime.module_path(src, "my kernel/1")
    assert os.path.basename(path) in files and os.path.basename(path).startswith("my_kernel_1_")
    h = runtime.source_hash(src)
    assert os.path.basename(path) == "my_kernel_1_%s.py" % h[:16] and m1.__ember_hash__ == h
    assert open(path).read() == src
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp_")]
    assert runtime.load_module(src, "my kernel/1") is m1
    assert runtime.counters["modules_written"] == before["modules_written"] + 1
    assert runtime.counters["modules_loaded"] == before["modules_loaded"] + 1
    assert runtime.counters["memo_hits"] == before["memo_hits"] + 1
    assert m1.__file__ == path
    # another source: another module; the same source after the memo is gone: read, not rewritten
    m2 = runtime.load_module("VALUE = 7\n", "my kernel/1")
    assert m2 is not m1 and m2.VALUE == 7 and m2.__name__ != m1.__name__
    mtime = os.stat(path).st_mtime_ns
    runtime.clear_memo()
    m3 = runtime.load_module(src, "my kernel/1")
    assert m3 is not m1 and m3.VALUE == 42 and os.stat(path).st_mtime_ns == mtime
    assert runtime.counters["modules_written"] == before["modules_written"] + 2


def test_load_module_repairs_a_different_file(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(tmp_path))
    src = "VALUE = 'right'\n"
    path = runtime.module_path(src, "k")
    with open(path, "w") as f:
        f.write("VALUE = 'torn")                     # a torn or colliding file
    assert runtime.load_module(src, "k").VALUE == "right"
    assert open(path).read() == src


def test_load_module_error_propagates(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(tmp_path))
    with pytest.raises(ZeroDivisionError):
        runtime.load_module("X = 1 / 0\n", "bad")
    assert not [m for m in sys.modules if m.startswith("_ember_inductor_bad_")]


def test_hash_covers_math_library_and_numba(monkeypatch):
    src = "A = 1\n"
    h = runtime.source_hash(src)
    salt = runtime.source_salt()
    assert "numba=" in salt and "math=" in salt
    monkeypatch.setattr(runtime, "_salt", salt.replace("math=", "math=changed"))
    assert runtime.source_hash(src) != h


KERNEL = """
import numba
from ember._inductor import jit_math as m
from ember._inductor.runtime import NJIT_FLAGS

@numba.njit(**NJIT_FLAGS)
def k(x, out):
    for i in range(x.size):
        out[i] = m.tanh_f32(x[i]) + m.exp_f32(-x[i])
"""

CHILD = """
import json, time, numpy as np
t0 = time.perf_counter()
from ember._inductor import runtime
mod = runtime.load_module(%r, "child")
x = np.linspace(-3, 3, 1000, dtype=np.float32); out = np.empty_like(x)
mod.k(x, out)
t1 = time.perf_counter()
before = runtime.numba_counts()
y = np.linspace(-3, 3, 77, dtype=np.float32); o2 = np.empty_like(y)
mod.k(y, o2)                              # a new shape: the same kernel, no compile
after = runtime.numba_counts()
ok = bool(np.allclose(out, np.tanh(x) + np.exp(-x), rtol=1e-5))
print(json.dumps(dict(first=before, second=after, counters=runtime.counters, ok=ok, s=t1 - t0)))
""" % KERNEL


def test_fresh_process_loads_compiled_kernels(tmp_path):
    """A first process compiles (numba cache misses) and writes the module; a second process with the
    same cache dir compiles nothing: every kernel and math function comes from the disk cache. A new
    shape in the same process needs no compile either."""
    _need_numba()
    env = {"EMBER_INDUCTOR_CACHE_DIR": str(tmp_path)}
    a = json.loads(_py(CHILD, env).strip().splitlines()[-1])
    assert a["ok"] and a["first"]["compiled"] > 0 and a["counters"]["modules_written"] == 1
    assert a["second"] == a["first"]
    b = json.loads(_py(CHILD, env).strip().splitlines()[-1])
    assert b["ok"] and b["first"]["compiled"] == 0 and b["first"]["cache_loaded"] > 0
    assert b["counters"]["modules_written"] == 0 and b["counters"]["modules_loaded"] == 1
    assert b["second"] == b["first"]


def test_numba_counts_in_process(tmp_path, monkeypatch):
    _need_numba()
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(tmp_path))
    src = KERNEL.replace("m.tanh_f32(x[i]) + m.exp_f32(-x[i])",
                         "m.tanh_f32(numba.float32(x[i])) * m.exp_f32(numba.float32(-x[i]))")
    c0 = runtime.numba_counts()
    mod = runtime.load_module(src, "inproc")
    x = np.ones(10, np.float32)
    out = np.empty_like(x)
    mod.k(x, out)
    c1 = runtime.numba_counts()
    assert c1["compiled"] >= c0["compiled"] + 1
    mod.k(np.ones(1000, np.float32), np.empty(1000, np.float32))
    assert runtime.numba_counts() == c1
    mod.k(np.ones(10), np.empty(10))             # float64: a new signature, one compile
    assert runtime.numba_counts()["compiled"] == c1["compiled"] + 1


CUDA_KERNEL = """
from numba import cuda


@cuda.jit(cache=True)
def axpb(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * a + b
"""


def test_load_cuda_module(tmp_path, monkeypatch):
    """load_cuda_module caches cuda.jit sources like load_module (a distinct file and hash) and the
    kernel runs on ember's CUDA (numba's simulator under EMBER_CUDA_SIM=1, a GPU otherwise)."""
    _need_numba()
    import ember
    if not ember.cuda.is_available():
        pytest.skip("needs ember.cuda: a GPU, or EMBER_CUDA_SIM=1 for numba's simulator")
    monkeypatch.setenv("EMBER_INDUCTOR_CACHE_DIR", str(tmp_path))
    before = dict(runtime.counters)
    mod = runtime.load_cuda_module(CUDA_KERNEL, "axpb")
    assert runtime.load_cuda_module(CUDA_KERNEL, "axpb") is mod
    assert runtime.counters["cuda_modules_loaded"] == before["cuda_modules_loaded"] + 1
    assert os.path.basename(mod.__file__).startswith("cuda_axpb_")
    assert os.path.dirname(mod.__file__) == str(tmp_path)
    # the same text as a CPU module is another module (another hash, another file)
    assert runtime.load_module(CUDA_KERNEL, "axpb").__file__ != mod.__file__
    from numba import cuda
    x = np.arange(40, dtype=np.float32)
    dx = cuda.to_device(x)
    dout = cuda.device_array_like(dx)
    mod.axpb[2, 32](dx, dout, np.float32(2), np.float32(1))
    assert np.array_equal(dout.copy_to_host(), x * 2 + 1)


def test_numba_first_keeps_the_cuda_simulator():
    """Importing jit_math (numba) before ember.cuda initialises still gives ember.cuda numba's
    simulator under EMBER_CUDA_SIM=1 (numba reads NUMBA_ENABLE_CUDASIM once, at its import)."""
    _need_numba()
    env = {"EMBER_CUDA_SIM": "1"}
    env_clean = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env_clean.update(env)
    r = subprocess.run([sys.executable, "-c", "from ember._inductor import jit_math\nimport ember\n"
                        "print(ember.cuda.is_available())"], cwd=REPO, env=env_clean,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "True"


def test_without_numba(tmp_path):
    """numba missing: have_numba() is False, plain Python modules still load from the cache, and
    the math library runs as plain Python."""
    out = _py("""
        import sys
        sys.modules["numba"] = None          # as if numba were not installed
        from ember._inductor import mathlib, runtime
        assert not runtime.have_numba()
        m = runtime.load_module("import numpy as np\\nY = np.float32(2) * 3\\n", "np_kernel")
        print(float(m.Y), round(mathlib.tanh_f32(0.5), 6), runtime.counters["modules_written"])
    """, env={"EMBER_INDUCTOR_CACHE_DIR": str(tmp_path)})
    assert out.split() == ["6.0", str(round(0.46211715726000974, 6)), "1"]
