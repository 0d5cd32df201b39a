"""One fresh process timing the compile of chain C (benchmarks/compile.py's issue-11 section starts it).

    python benchmarks/_compile_child.py ember    # or torch; prints one JSON line

The parent chooses the kernel cache through the environment (EMBER_INDUCTOR_CACHE_DIR for ember,
TORCHINDUCTOR_CACHE_DIR for torch): a new empty directory for a cold compile, the same directory
again for a warm disk cache. Figures, in seconds:
  import_s        `import ember` / `import torch`
  first_s         the first FIRST calls of the compiled chain C on N float32 elements (capture,
                  code generation, kernel compile or cache load, and the runs), one figure each
  steady_s        a later call at the same shape (the median of a few)
  compile_s       sum(first_s) - FIRST * steady_s
  new_first_s     the first FIRST calls at a new shape (N2 elements) in the same process
  new_steady_s    a later call at that shape
  new_compile_s   sum(new_first_s) - FIRST * new_steady_s
  static_*        the same for the new shape with a second compiled chain C, compiled with
                  dynamic=False (a static graph per shape; the default marks the size dynamic at
                  its second shape), after three calls at N
  cache_files     files under the cache directory after the first call, and after the new shape
Chain C and the 8-op chain are defined here so that compile.py times the very same functions.
"""
import json
import os
import statistics
import sys
import time

N = 1_000_000
N2 = 999_000
FIRST = 3     # a backend may capture or compile on a later call than the first


def chain_c(lib):
    """0.5*x*(1+tanh(0.7978846*(x+0.044715*x*x*x))) * sigmoid(x) + 0.1*x (12 ops)."""
    tanh, sigmoid = lib.tanh, lib.sigmoid

    def chain_c(x):
        return 0.5 * x * (1 + tanh(0.7978846 * (x + 0.044715 * x * x * x))) * sigmoid(x) + 0.1 * x
    return chain_c


def arith8(x):
    """((x*2+1)*x-3)/(x*x+1)+x: 8 arithmetic ops."""
    return ((x * 2 + 1) * x - 3) / (x * x + 1) + x


def count_files(d):
    if not d or not os.path.isdir(d):
        return None
    return sum(len(files) for _, _, files in os.walk(d))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    which = argv[0] if argv else "ember"
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    t0 = time.perf_counter()
    if which == "torch":
        import torch as lib
        lib.set_num_threads(1)
        cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    else:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import ember as lib
        if hasattr(lib, "set_num_threads"):
            lib.set_num_threads(1)
        cache = os.environ.get("EMBER_INDUCTOR_CACHE_DIR")
    import_s = time.perf_counter() - t0
    lib.manual_seed(0)
    x = lib.randn(N)
    x2 = lib.randn(N2)
    f = lib.compile(chain_c(lib))

    def first_and_steady(x, f=f):
        ts = []
        for _ in range(FIRST + 5):
            t = time.perf_counter()
            f(x)
            ts.append(time.perf_counter() - t)
        return ts[:FIRST], statistics.median(ts[FIRST:])

    first, steady = first_and_steady(x)
    files1 = count_files(cache)
    new_first, new_steady = first_and_steady(x2)
    g = lib.compile(chain_c(lib), dynamic=False)
    for _ in range(FIRST):
        g(x)
    static_first, static_steady = first_and_steady(x2, g)
    out = {"lib": which, "import_s": import_s, "first_s": first, "steady_s": steady,
           "compile_s": sum(first) - FIRST * steady, "new_first_s": new_first, "new_steady_s": new_steady,
           "new_compile_s": sum(new_first) - FIRST * new_steady,
           "static_first_s": static_first, "static_steady_s": static_steady,
           "static_compile_s": sum(static_first) - FIRST * static_steady, "cache_files": [files1, count_files(cache)]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
