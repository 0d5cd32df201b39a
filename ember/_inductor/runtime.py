"""The kernel runtime of the "inductor" backend: where generated kernel modules live and how they load.

The code generator (ember/_inductor, helper "core") writes one Python module per graph. This module

- decides whether numba kernels are used at all (`have_numba()`; `EMBER_INDUCTOR_BACKEND=numpy` or
  `ember._inductor.config.kernel_backend = "numpy"` select the NumPy code generator instead);
- holds the numba flags every kernel uses (`NJIT_FLAGS`): `error_model="numpy"` (Python's division
  checks stop vectorisation) and fastmath {contract, nsz} only (see NJIT_FLAGS for why not more);
- caches modules on disk by a hash of their content (`load_module`): the file is written once,
  atomically, into `cache_dir()`, and imported from there, so numba's own cache (`cache=True`, kept in
  the `__pycache__` next to the file) lets a fresh process load the compiled kernels instead of
  compiling them again. The hash also covers numba's version and the source of the math library
  (`mathlib.py`), whose functions the kernels inline: changing a polynomial invalidates every kernel;
- counts what happened (`counters`, `numba_counts()`), so tests and benchmarks can check that a new
  shape reuses cached kernels without a numba compile.

numba is imported lazily: nothing here imports it at module import time (`import ember` and
`import ember._inductor` must stay free of it; numba's own import costs ~0.5 s).
"""
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading

# The flags every kernel uses. error_model="numpy": Python's division checks stop vectorisation.
# fastmath: only fma contraction and no-signed-zeros. Issue 11 measured the set {contract, arcp, nsz,
# afn, reassoc} on chain C, but on inf/NaN/0 inputs it breaks eager's answers (checked with numba
# 0.68 / LLVM here, tests/inductor/test_runtime.py::test_flags_keep_inf_and_nan):
#   arcp/afn: 1/sqrt(x) becomes an approximate rsqrt: NaN (not inf) at 0, NaN (not 0) at inf;
#   reassoc:  (x + 1) - x is folded to 1 (NaN at +-inf), x*2*3 + x*-6 to x*0 (0, not NaN, at inf).
# An elementwise loop vectorises without them (chain C: 1.60 ms against 1.56 ms with the full set,
# min of 31, one thread); a float reduction needs "reassoc" to vectorise its accumulator, and a
# kernel that wants it adds it knowingly: dict(NJIT_FLAGS, fastmath=FASTMATH | {"reassoc"}).
# "contract" (fma) changes results within rounding: x*6 - x*6 done as fma(x, 6, -(x*6)) is the
# rounding error of x*6, not 0 (as in torch.compile's C++ with -ffp-contract=on).
FASTMATH = frozenset({"contract", "nsz"})
NJIT_FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath=set(FASTMATH))

# What the runtime did in this process. modules_loaded: load_module/load_cuda_module calls that
# imported a module (not the memoised ones), cuda_modules_loaded the load_cuda_module part of them;
# modules_written: files written to the cache dir; memo_hits: calls answered from the memo.
counters = {"modules_loaded": 0, "modules_written": 0, "memo_hits": 0, "cuda_modules_loaded": 0}

# EMBER_CUDA_SIM=1 makes ember's CUDA numba's simulator, which numba reads from NUMBA_ENABLE_CUDASIM
# when it is first imported. ember.cuda sets it just before it imports numba.cuda; a kernel module
# or jit_math importing numba earlier would fix numba's config without it (and ember.cuda would then
# find no simulator), so the runtime sets it first: the same switch, the same meaning.
if os.environ.get("EMBER_CUDA_SIM") == "1" and "numba" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

_lock = threading.RLock()
_modules = {}            # full hash -> module
_dispatchers = []        # numba dispatchers found in loaded modules (for numba_counts)
_have_numba = None       # cached: is numba importable at all
_cache_dirs = {}         # wanted dir -> usable dir
_salt = None


def have_numba():
    """True when generated kernels use numba: it is importable and not switched off.

    `EMBER_INDUCTOR_BACKEND=numpy` (environment) or `ember._inductor.config.kernel_backend == "numpy"`
    switch it off. numba is not imported here (only looked up), so this is cheap to call.
    """
    global _have_numba
    if os.environ.get("EMBER_INDUCTOR_BACKEND", "").lower() == "numpy":
        return False
    # config belongs to the code generator; it is only consulted once someone imported it (setting
    # config.kernel_backend imports it), so the runtime never imports it itself.
    config = sys.modules.get("ember._inductor.config")
    if getattr(config, "kernel_backend", None) == "numpy":
        return False
    if _have_numba is None:
        if "numba" in sys.modules:       # imported, or blocked (sys.modules["numba"] = None)
            _have_numba = sys.modules["numba"] is not None
        else:
            _have_numba = importlib.util.find_spec("numba") is not None
    return _have_numba


def _writable(d):
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK | os.X_OK)


def cache_dir():
    """The directory kernel modules are cached in (created on first use).

    EMBER_INDUCTOR_CACHE_DIR, else $XDG_CACHE_HOME/ember/inductor, else ~/.cache/ember/inductor; a
    temporary directory when that one cannot be written.
    """
    d = os.environ.get("EMBER_INDUCTOR_CACHE_DIR")
    if not d:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "ember", "inductor")
    got = _cache_dirs.get(d)
    if got is None:
        with _lock:
            got = _cache_dirs.get(d)
            if got is None:
                got = d if _writable(d) else tempfile.mkdtemp(prefix="ember_inductor_")
                _cache_dirs[d] = got
    return got


def _numba_version():
    m = sys.modules.get("numba")
    if m is not None:
        return m.__version__
    if not have_numba():
        return "none"
    from importlib import metadata  # lazy: only the first load_module of a process needs it
    try:
        return metadata.version("numba")
    except metadata.PackageNotFoundError:
        return "unknown"


def _mathlib_hash():
    """sha256 of mathlib.py and jit_math.py: the code every kernel inlines."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("mathlib.py", "jit_math.py", "runtime.py"):
        with open(os.path.join(here, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def source_salt():
    """What besides a module's own text decides its compiled code (numba, Python, the math library)."""
    global _salt
    if _salt is None:
        _salt = "numba=%s;python=%d.%d;math=%s" % (
            _numba_version(), sys.version_info[0], sys.version_info[1], _mathlib_hash())
    return _salt


def source_hash(source):
    """The hex digest that names a module: its source plus `source_salt()`."""
    h = hashlib.sha256(source_salt().encode())
    h.update(b"\0")
    h.update(source.encode())
    return h.hexdigest()


def _safe_hint(name_hint):
    s = "".join(c if (c.isalnum() or c == "_") else "_" for c in str(name_hint))[:48]
    return s or "kernel"


def _write_atomic(path, source):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp_", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def module_path(source, name_hint="kernel"):
    """Where load_module keeps (or will keep) this source."""
    return os.path.join(cache_dir(), "%s_%s.py" % (_safe_hint(name_hint), source_hash(source)[:16]))


def load_module(source, name_hint="kernel"):
    """Import generated Python `source` from the on-disk cache, writing it there first if absent.

    The file is cache_dir()/<name_hint>_<hash16>.py; an existing file is never rewritten (its
    timestamp keys numba's cache). The module gets a unique top-level name (_ember_inductor_<file>)
    and is memoised per process by the hash, so the same source returns the same module object.
    """
    # numba's OpenMP pool spin-waits between parallel kernels by default: on a machine with more
    # runnable threads than cores that stalled a 2-thread prange kernel from 0.8 ms to 6-16 ms.
    # Sleeping waits cost nothing measurable when the cores are free (set before OpenMP loads).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return _load(source, _safe_hint(name_hint), source_hash(source))


def load_cuda_module(source, name_hint="kernel"):
    """load_module for numba.cuda kernel sources (`@cuda.jit(cache=True)` functions).

    The same on-disk cache and memo, under cache_dir()/cuda_<name_hint>_<hash16>.py with "cuda" in
    the hash. numba.cuda is imported the way ember's CUDA backend imports it first
    (ember.cuda._runtime.cuda(): numba's simulator when EMBER_CUDA_SIM=1), so a module that says
    `from numba import cuda` gets the same CUDA (or simulator) as the rest of ember. numba.cuda
    keeps compiled kernels in the __pycache__ next to the file, keyed by the GPU's compute
    capability; on the simulator kernels run as Python and nothing is compiled.
    """
    from ember.cuda import _runtime  # lazy: numba.cuda is imported only when a CUDA kernel is
    _runtime.cuda()
    before = counters["modules_loaded"]
    mod = _load(source, "cuda_" + _safe_hint(name_hint), source_hash("cuda\0" + source))
    counters["cuda_modules_loaded"] += counters["modules_loaded"] - before
    return mod


def _load(source, hint, full):
    mod = _modules.get(full)
    if mod is not None:
        counters["memo_hits"] += 1
        return mod
    with _lock:
        mod = _modules.get(full)
        if mod is not None:
            counters["memo_hits"] += 1
            return mod
        stem = "%s_%s" % (hint, full[:16])
        path = os.path.join(cache_dir(), stem + ".py")
        existing = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                existing = f.read()
        if existing != source:   # absent, or (a 16-hex-digit collision / a torn file) different
            _write_atomic(path, source)
            counters["modules_written"] += 1
        modname = "_ember_inductor_" + stem
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[modname]
            raise
        mod.__ember_hash__ = full
        _modules[full] = mod
        counters["modules_loaded"] += 1
        _track(mod)
        return mod


def _is_dispatcher(obj):
    # numba dispatchers (njit functions) without importing numba: they carry these three.
    return hasattr(obj, "stats") and hasattr(obj, "py_func") and hasattr(obj, "signatures")


def _track(mod):
    for v in vars(mod).values():
        if _is_dispatcher(v):
            _dispatchers.append(v)


def track_dispatcher(d):
    """Count another numba dispatcher in numba_counts() (e.g. a kernel built outside load_module)."""
    if _is_dispatcher(d):
        with _lock:
            _dispatchers.append(d)
    return d


def numba_counts():
    """{"compiled": n, "cache_loaded": m}: numba compilations vs disk-cache loads so far in this
    process, summed over the dispatchers of every module load_module imported and those of
    jit_math (once imported). Take a snapshot before and after: an unchanged "compiled" means no
    numba compile happened. numba counts these for dispatchers with cache=True (NJIT_FLAGS) only.
    """
    ds = list(_dispatchers)
    jm = sys.modules.get("ember._inductor.jit_math")
    if jm is not None:
        ds.extend(jm.dispatchers())
    compiled = loaded = 0
    seen = set()
    for d in ds:
        if id(d) in seen:
            continue
        seen.add(id(d))
        st = d.stats
        compiled += sum(st.cache_misses.values())
        loaded += sum(st.cache_hits.values())
    return {"compiled": compiled, "cache_loaded": loaded}


def clear_memo():
    """Forget the per-process memo (tests: force a fresh import from the disk cache)."""
    with _lock:
        _modules.clear()
        del _dispatchers[:]
