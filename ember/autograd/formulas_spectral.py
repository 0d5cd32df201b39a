"""Backward helpers of the FFT operators (FunctionsManual.cpp's fft_r2c_backward / fft_c2r_backward).

Written with ember operators only, so the gradients are themselves differentiable.
"""
import ember

__all__ = ["fft_r2c_backward", "fft_c2r_backward"]


def fft_r2c_backward(grad, dim, normalization, onesided, self_sizes):
    """A one-sided r2c is a c2c of the real input with half the output dropped: zero-fill that half,
    take the inverse c2c, keep the real part."""
    if onesided:
        last = dim[-1] % grad.dim()
        missing = self_sizes[last] - grad.shape[last]
        if missing > 0:
            pad = [0] * (2 * grad.dim())
            pad[len(pad) - 2 * last - 1] = missing
            grad = ember.constant_pad_nd(grad, pad)
    return ember.real(ember._fft_c2c(grad, dim, normalization, False))


def fft_c2r_backward(grad, dim, normalization):
    """A c2r fills the missing half by conjugate symmetry: take the r2c of grad and double the bins
    whose mirror image lies outside the one-sided range (1 .. n - (n // 2 + 1))."""
    gI = ember._fft_r2c(grad, dim, normalization, True)
    last = dim[-1] % grad.dim()
    double_length = grad.shape[last] - gI.shape[last]
    if double_length > 0:
        half = gI.shape[last]
        w = ember.ones(half, dtype=grad.dtype, device=grad.device)
        w[1:1 + double_length] = 2.0
        gI = gI * w.reshape([half] + [1] * (gI.dim() - 1 - last))
    return gI
