"""Settings of the "inductor" backend (torch._inductor.config's role).

kernel_backend: "numba" (generated njit kernels; the default when numba is importable) or "numpy"
    (the NumPy code generator: ufuncs into planned buffers). EMBER_INDUCTOR_BACKEND=numpy in the
    environment selects NumPy too (ember/_inductor/runtime.py reads both).
parallel_threshold: a fused kernel over at least this many elements runs its outer loop with
    numba's prange (when more than one thread is available); smaller ones stay serial.
num_threads: threads a parallel kernel may use; None means os.cpu_count().
numpy_block: elements per block of the NumPy generator's blocked loops (temporaries stay in cache).
max_fusion_size: the most ops fused into one kernel (a longer chain starts a new kernel).
fuse_matmul_epilogue: a pointwise epilogue of mm/addmm/matmul/bmm runs in place on the BLAS result.
"""
import os

kernel_backend = os.environ.get("EMBER_INDUCTOR_BACKEND", "numba").lower() or "numba"
parallel_threshold = 65536
num_threads = None
numpy_block = 32768
max_fusion_size = 64
fuse_matmul_epilogue = True


def threads():
    return num_threads if num_threads is not None else (os.cpu_count() or 1)
