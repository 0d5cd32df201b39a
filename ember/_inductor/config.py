"""Settings of the "inductor" backend (torch._inductor.config's role).

kernel_backend: "numba" (generated njit kernels; the default when numba is importable) or "numpy"
    (the NumPy code generator: ufuncs into planned buffers). EMBER_INDUCTOR_BACKEND=numpy in the
    environment selects NumPy too (ember/_inductor/runtime.py reads both).
parallel_threshold: a fused kernel over at least this many elements runs its outer loop with
    numba's prange (when more than one thread is available); smaller ones stay serial.
num_threads: threads the kernels may use (None: ember.get_num_threads(), torch's setting); 1 keeps
    every kernel serial. Decided when a graph is compiled.
numpy_block: elements per block of the NumPy generator's blocked loops (temporaries stay in cache).
max_fusion_size: the most ops fused into one kernel (a longer chain starts a new kernel).
fuse_reductions: a sum/mean/amax/amin over the trailing dims of a value a numba kernel computes
    ends that kernel (a row loop accumulating in float64; the value is not written to memory), up to
    fuse_reductions_max_numel elements (the loop is not vectorised: larger ones store the value and
    reduce it with NumPy, which is faster there).
"""
import os

kernel_backend = os.environ.get("EMBER_INDUCTOR_BACKEND", "numba").lower() or "numba"
parallel_threshold = 65536
num_threads = None
numpy_block = 32768
max_fusion_size = 64
fuse_reductions = True
fuse_reductions_max_numel = 65536


def threads():
    if num_threads is not None:
        return num_threads
    from ember._python_api.threads import get_num_threads  # lazy: config loads before ember finishes
    return get_num_threads()
