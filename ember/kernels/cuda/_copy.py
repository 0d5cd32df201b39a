"""Strided copy and fill kernels (grid-stride loops with index math; src may broadcast with
stride 0 and differ in dtype: the store converts). Imported only after _glue.cuda() has set up
numba, and the kernels name `cuda` as a module global so the simulator can stand in for it."""
from numba import cuda


@cuda.jit
def strided_copy(dst, doff, dstr, src, soff, sstr, shape, n):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    nd = len(shape)
    while i < n:
        rem = i
        di = doff
        si = soff
        for k in range(nd - 1, -1, -1):
            idx = rem % shape[k]
            rem //= shape[k]
            di += idx * dstr[k]
            si += idx * sstr[k]
        dst[di] = src[si]
        i += step


@cuda.jit
def strided_fill(dst, doff, dstr, val, shape, n):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    nd = len(shape)
    while i < n:
        rem = i
        di = doff
        for k in range(nd - 1, -1, -1):
            idx = rem % shape[k]
            rem //= shape[k]
            di += idx * dstr[k]
        dst[di] = val
        i += step
