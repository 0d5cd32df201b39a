"""The inductor's kernel runtime and float32 math library (issue 11, item 2), measured directly.

    python benchmarks/inductor_math.py           # everything below
    python benchmarks/inductor_math.py --quick   # fewer rounds, no fresh-process timings

One thread (NUMBA_NUM_THREADS=1 for the serial figures, torch.set_num_threads(1)), 1M float32
elements, medians over rounds. What it prints:

1. chain C, 0.5*x*(1+tanh(0.7978846*(x+0.044715*x*x*x))) * sigmoid(x) + 0.1*x, as one hand-written
   numba loop over jit_math (serial, and prange on 2 threads) against NumPy, ember eager and torch
   eager, with ratios; the same loop with the math functions inlined at numba's IR level
   (inline="always") to show why jit_math does not; and each result's max error against float64.
2. each jit_math function alone in a loop against NumPy's (or ember's) float32 function.
3. numba's costs: the first kernel of a fresh process from an empty cache dir (numba import, the
   math functions and the kernel compiled) and from a warm cache dir (everything loaded), a new
   kernel in a warm process, a further cached kernel, and the per-call cost of a compiled kernel.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
N = 1 << 20

CHAIN_SRC = '''
import numba
from numba import float32 as f
from ember._inductor import jit_math as m
from ember._inductor.runtime import NJIT_FLAGS


@numba.njit(**NJIT_FLAGS)
def chain_c(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = (f(0.5) * v * (f(1.0) + m.tanh_f32(f(0.7978846) * (v + f(0.044715) * v * v * v)))
                  * m.sigmoid_f32(v) + f(0.1) * v)


@numba.njit(parallel=True, **NJIT_FLAGS)
def chain_c_par(x, out):
    for i in numba.prange(x.size):
        v = x[i]
        out[i] = (f(0.5) * v * (f(1.0) + m.tanh_f32(f(0.7978846) * (v + f(0.044715) * v * v * v)))
                  * m.sigmoid_f32(v) + f(0.1) * v)
'''

FUNCS_SRC_HEAD = '''
import numba
from ember._inductor import jit_math as m
from ember._inductor.runtime import NJIT_FLAGS
'''
FUNCS = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "gelu", "silu"]


_MINS = {}


def _median_ms(fn, rounds, inner=1):
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t) / inner)
    _MINS[fn] = float(np.min(ts)) * 1e3
    return float(np.median(ts)) * 1e3


def _timed(res, mins, key, fn, rounds):
    res[key] = _median_ms(fn, rounds)
    mins[key] = _MINS.pop(fn)


def _chain_np(x):
    return 0.5 * x * (1 + np.tanh(0.7978846 * (x + 0.044715 * x * x * x))) * (1 / (1 + np.exp(-x))) + 0.1 * x


def _chain_lib(lib, x):
    return 0.5 * x * (1 + lib.tanh(0.7978846 * (x + 0.044715 * x * x * x))) * lib.sigmoid(x) + 0.1 * x


def _max_err(y, x):
    ref = _chain_np(x.astype(np.float64))
    return float(np.max(np.abs(np.asarray(y, np.float64) - ref)))


def section_chain(rounds):
    import numba

    import ember
    from ember._inductor import jit_math, runtime
    numba.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    out = np.empty_like(x)
    mod = runtime.load_module(CHAIN_SRC, "bench_chain_c")
    mod.chain_c(x, out)
    res, mins = {}, {}
    _timed(res, mins, "numpy", lambda: _chain_np(x), rounds)
    ex = ember.tensor(x)
    _timed(res, mins, "ember eager", lambda: _chain_lib(ember, ex), rounds)
    try:
        import torch
        torch.set_num_threads(1)
        tx = torch.from_numpy(x)
        _timed(res, mins, "torch eager", lambda: _chain_lib(torch, tx), rounds)
    except ImportError:
        torch = None
    _timed(res, mins, "numba serial", lambda: mod.chain_c(x, out), rounds)
    err_serial = _max_err(out, x)
    # the same loop, math functions inlined at numba's IR level (compiled under the kernel's flags)
    g = {"numba": numba, "f": numba.float32, "m": jit_math.variant("always"),
         "NJIT_FLAGS": dict(runtime.NJIT_FLAGS, cache=False)}
    exec(CHAIN_SRC.split("@numba.njit(parallel", 1)[0].split("\n\n\n", 1)[1], g)
    g["chain_c"](x, out)
    _timed(res, mins, "numba serial, inline=always", lambda: g["chain_c"](x, out), rounds)
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    mod.chain_c_par(x, out)
    _timed(res, mins, "numba prange, %d threads (%s)" % (numba.get_num_threads(), numba.threading_layer()),
           lambda: mod.chain_c_par(x, out), rounds)
    err_par = _max_err(out, x)
    numba.set_num_threads(1)
    print("\n1. chain C, %d float32 elements, medians of %d rounds (ms; min in brackets)" % (N, rounds))
    eager = res["ember eager"]
    for k, v in res.items():
        line = "  %-38s %7.3f ms [%7.3f]  %6.2fx numpy  %6.2fx ember eager" % (
            k, v, mins[k], res["numpy"] / v, eager / v)
        if "torch eager" in res:
            line += "  %6.2fx torch eager" % (res["torch eager"] / v)
        print(line)
    print("  max |error| vs float64: numba %.2e (prange %.2e), numpy float32 %.2e, ember eager %.2e"
          % (err_serial, err_par, _max_err(_chain_np(x), x), _max_err(_chain_lib(ember, ex).numpy(), x)))
    return res


def section_funcs(rounds):
    import ember
    from ember._inductor import runtime
    src = FUNCS_SRC_HEAD
    for n in FUNCS:
        src += ("\n@numba.njit(**NJIT_FLAGS)\ndef k_%s(x, out):\n    for i in range(x.size):\n"
                "        out[i] = m.%s_f32(x[i])\n" % (n, n))
    mod = runtime.load_module(src, "bench_funcs")
    rng = np.random.default_rng(1)
    x = rng.uniform(-5, 5, N).astype(np.float32)
    xp = np.abs(x) + np.float32(0.01)
    out = np.empty_like(x)
    ex, exp_ = ember.tensor(x), ember.tensor(xp)
    ef = ember.nn.functional
    ref = {"exp": lambda: np.exp(x), "expm1": lambda: np.expm1(x), "log": lambda: np.log(xp),
           "log1p": lambda: np.log1p(xp), "tanh": lambda: np.tanh(x),
           "sigmoid": lambda: ember.sigmoid(ex), "erf": lambda: ember.erf(ex),
           "gelu": lambda: ef.gelu(ex), "silu": lambda: ef.silu(ex)}
    print("\n2. one function per loop, %d float32 elements (ms); eager = NumPy's float32 ufunc "
          "(exp..tanh) or ember's eager op" % N)
    for n in FUNCS:
        arg = xp if n in ("log", "log1p") else x
        k = getattr(mod, "k_" + n)
        k(arg, out)
        a = _median_ms(lambda k=k, arg=arg: k(arg, out), rounds)
        b = _median_ms(ref[n], rounds)
        print("  %-8s jit_math %7.3f ms   eager %7.3f ms   %5.2fx" % (n, a, b, b / a))
    del exp_


CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from ember._inductor import runtime
t_ember = time.perf_counter()
import numba
t_numba = time.perf_counter()
numba.set_num_threads(1)
src = sys.argv[1]
tag = sys.argv[2]
x = np.ones(1000, np.float32); out = np.empty_like(x)
c0 = runtime.numba_counts()
p0 = time.process_time()
mod = runtime.load_module(src, "first")
mod.chain_c(x, out)
t1 = time.perf_counter()
p1 = time.process_time()
c1 = runtime.numba_counts()
src2 = src.replace("f(0.1) * v", "f(0.25) * v").replace("def chain_c(", "def chain_2_%s(" % tag)
mod2 = runtime.load_module(src2, "second")
getattr(mod2, "chain_2_%s" % tag)(x, out)
t2 = time.perf_counter()
p2 = time.process_time()
c2 = runtime.numba_counts()
print(json.dumps(dict(import_ember=t_ember - t0, import_numba=t_numba - t_ember, first=t1 - t_numba,
                      second=t2 - t1, first_cpu=p1 - p0, second_cpu=p2 - p1, counts=[c0, c1, c2])))
'''


def _child(cache, tag):
    env = dict(os.environ, EMBER_INDUCTOR_CACHE_DIR=cache, NUMBA_NUM_THREADS="1")
    src = CHAIN_SRC.split("@numba.njit(parallel", 1)[0]
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CHILD, src, tag], cwd=REPO, env=env,
                       capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    d = json.loads(r.stdout.strip().splitlines()[-1])
    d["wall"] = wall
    return d


def section_startup():
    print("\n3. numba costs (fresh processes; one thread)")
    with tempfile.TemporaryDirectory() as cache:
        cold = _child(cache, "a")
        warm = _child(cache, "a")
        newk = _child(cache, "b")     # warm math library, a kernel never compiled before
    print("  process wall (python start .. exit): cold %.2f s, warm %.2f s" % (cold["wall"], warm["wall"]))
    print("  import ember._inductor.runtime: %.3f s; import numba: %.3f s (cold) %.3f s (warm)"
          % (cold["import_ember"], cold["import_numba"], warm["import_numba"]))
    print("  (wall s / this process's CPU s: the CPU figure is what an idle machine's wall would be)")
    print("  first kernel (load_module + first call, incl. jit_math), empty cache: %.3f / %.3f s  [%s]"
          % (cold["first"], cold["first_cpu"], cold["counts"][1]))
    print("  first kernel, warm disk cache (fresh process):             %.3f / %.3f s  [%s]"
          % (warm["first"], warm["first_cpu"], warm["counts"][1]))
    print("  numba start-up incl. import, empty cache: %.3f s; warm cache: %.3f s (wall)"
          % (cold["import_numba"] + cold["first"], warm["import_numba"] + warm["first"]))
    print("  a new kernel in a warm process (math functions cached):   %.3f / %.3f s"
          % (newk["second"], newk["second_cpu"]))
    print("  a further cached kernel in a warm process:                %.3f / %.3f s"
          % (warm["second"], warm["second_cpu"]))
    # per-call cost, in this process
    from ember._inductor import runtime
    mod = runtime.load_module(CHAIN_SRC, "bench_chain_c")
    x = np.ones(1, np.float32)
    out = np.empty_like(x)
    k = mod.chain_c
    k(x, out)
    per = _median_ms(lambda: k(x, out), 21, inner=20000) * 1e3
    print("  per call (1 element, 2 array args): %.2f us" % per)
    return cold, warm, newk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    rounds = 7 if a.quick else 21
    section_chain(rounds)
    section_funcs(rounds)
    if not a.quick:
        section_startup()


if __name__ == "__main__":
    main()
