"""Settings of the "inductor" backend (torch._inductor.config's role).

kernel_backend: "numba" (generated njit kernels; the default when numba is importable) or "numpy"
    (the NumPy code generator: ufuncs into planned buffers). EMBER_INDUCTOR_BACKEND=numpy in the
    environment selects NumPy too (ember/_inductor/runtime.py reads both).
parallel_threshold: a fused kernel over at least this many elements runs its outer loop with
    numba's prange (when more than one thread is available); smaller ones stay serial.
num_threads: threads the kernels may use (None: ember.get_num_threads(), torch's setting); 1 keeps
    every kernel serial. Decided when a graph is compiled.
numpy_block: elements per block of the NumPy generator's blocked loops (temporaries stay in cache).
exact_numba_min_numel: in a training graph (NumPy's ufuncs, so that the numbers are eager's), a
    kernel of exact operations over at least this many elements is a numba loop instead (the same
    numbers, one pass). Each distinct kernel is one numba compile (~0.3 s) on a machine's first
    run, then a disk-cache load: the digits CNN step compiles 15 of them (5.7 s cold, 0.6 s warm);
    16384 leaves it 4 (1.5 s cold) but makes the MLP steps 10-60% slower.
max_fusion_size: the most ops fused into one kernel (a longer chain starts a new kernel).
fuse_reductions: a sum/mean/amax/amin over the trailing dims of a value a numba kernel computes
    ends that kernel (a row loop accumulating in float64; the value is not written to memory), up to
    fuse_reductions_max_numel elements (the loop is not vectorised: larger ones store the value and
    reduce it with NumPy, which is faster there). softmax/log_softmax over the last dim end their
    input's kernel the same way up to fuse_softmax_max_numel elements: their row loop (max, then a
    float64 sum of exps, then the normalisation) is not vectorised, so past ~1K elements NumPy's
    statements after the kernel are faster (1M-element rows: 2.5-4.7x slower fused; 128 elements:
    3-4x faster fused).
"""
import os

kernel_backend = os.environ.get("EMBER_INDUCTOR_BACKEND", "numba").lower() or "numba"
parallel_threshold = 65536
num_threads = None
numpy_block = 32768
exact_numba_min_numel = 0
max_fusion_size = 64
fuse_reductions = True
fuse_reductions_max_numel = 65536
fuse_softmax_max_numel = 1024


def threads():
    if num_threads is not None:
        return num_threads
    from ember._python_api.threads import get_num_threads  # lazy: config loads before ember finishes
    return get_num_threads()
