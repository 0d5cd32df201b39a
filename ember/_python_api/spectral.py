"""torch.stft and torch.istft (ATen's SpectralOps.cpp), composed of ember ops so that autograd and
every device work by themselves.

stft: with center=True the signal is padded by n_fft // 2 on both sides (pad_mode, 'reflect' by
default); frames of n_fft samples every hop_length are multiplied by the window (win_length
samples, centred in n_fft with zeros) and transformed by fft.rfft (onesided, the default for real
input and window) or fft.fft; normalized=True scales by n_fft ** -0.5. The result is
(freq, frames) per signal, complex, or view_as_real of it with return_complex=False (deprecated
in torch, which warns).

istft inverts it: irfft or ifft of each frame, times the window, overlap-added (index_add over the
frames' sample positions), divided by the overlap-added squared window, which must stay above
1e-11 wherever the output is kept; center trims n_fft // 2 from the start; `length` trims or
zero-pads the end.
"""
import warnings

import ember
from ember._generated import functions_nn as _nn

__all__ = ["stft", "istft"]

_STFT_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known to "
                   "cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window "
                   "are recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
                   "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_ISTFT_NO_WINDOW = ("A window was not provided. A rectangular window will be applied.Please provide the same "
                    "window used by stft to make the inversion lossless.To suppress this warning and use a "
                    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_warned = set()  # ATen warns about a missing window once per process (TORCH_WARN_ONCE)


def _warn_once(msg):
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, UserWarning, stacklevel=3)


_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _tname(t):
    return "torch." + _TYPES.get(str(t.dtype).split(".")[-1], "") + "Tensor"


def _opt(v):
    return "None" if v is None else str(int(v))


def _centered_window(window, win_length, n_fft, dtype, device):
    if window is None:
        w = ember.ones(win_length, dtype=dtype, device=device)
    else:
        w = window
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        w = _nn.pad(w, (left, n_fft - win_length - left))
    return w


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """torch.stft."""
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and "
                               "will further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will "
                      "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
                      "Note: you can still call torch.view_as_real on the complex output to recover the old "
                      "return format.", UserWarning, stacklevel=2)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if window is None:
        _warn_once(_STFT_NO_WINDOW)
    x = input
    if center:  # as torch.functional.stft: viewed as 3-D, the last dim padded, viewed back
        pad = n_fft // 2
        nd = x.dim()
        x3 = _nn.pad(x.reshape((1,) * (3 - nd) + tuple(x.shape)), (pad, pad), mode=pad_mode)
        x = x3.reshape(tuple(x3.shape[3 - nd:]) if nd <= 3 else tuple(x3.shape))

    def fail(msg):
        wdesc = "None" if window is None else f"{_tname(window)}{{{list(window.shape)}}}"
        raise RuntimeError(f"stft({_tname(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, "
                           f"win_length={win}, window={wdesc}, normalized={int(normalized)}, "
                           f"onesided={_opt(onesided)}, return_complex={int(return_complex)}, "
                           f"align_to_window={_opt(align_to_window)}) : {msg}")
    if x.dim() not in (1, 2):
        fail("expected a 1D or 2D tensor")
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window with size "
             f"{list(window.shape)}")
    w = _centered_window(window, win, n_fft, x.dtype if not x.is_complex() else
                         (ember.float32 if x.dtype == ember.complex64 else ember.float64), x.device)
    frames = x.unfold(-1, n_fft, hop) * w                    # (..., n_frames, n_fft)
    two_sided = onesided is False or complex_in
    if onesided and complex_in:
        fail("Cannot have onesided output if window or input is complex")
    out = ember.fft.fft(frames, dim=-1) if two_sided else ember.fft.rfft(frames, dim=-1)
    if normalized:
        out = out * (n_fft ** -0.5)
    out = out.transpose(-1, -2)                              # (..., freq, n_frames)
    return out if return_complex else ember.view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """torch.istft."""
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft "
                           "with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if window is None:
        _warn_once(_ISTFT_NO_WINDOW)

    def fail(msg):
        wdesc = "None" if window is None else f"{_tname(window)}{{{list(window.shape)}}}"
        ctype = "CPU" + _TYPES[str(input.dtype).split(".")[-1]] + "Type"
        raise RuntimeError(f"istft({ctype}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
                           f"win_length={win}, window={wdesc}, center={int(center)}, "
                           f"normalized={int(normalized)}, onesided={_opt(onesided)}, "
                           f"length={'None' if length is None else length}, "
                           f"return_complex={int(return_complex)}) {msg}")
    if input.dim() not in (2, 3):
        fail(": expected a tensor with 2 or 3 dimensions of complex dtype, but got "
             f"{input.dim()}")
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    one = onesided if onesided is not None else n_freq != n_fft
    if one and n_fft // 2 + 1 != n_freq:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match "
             f"n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not one and n_fft != n_freq:
        fail(": expected the frequency dimension (3rd to the last) of the input tensor to match "
             f"n_fft when onesided=False, but got {n_freq}")
    if not 0 < win <= n_fft:
        fail(f": expected 0 < win_length <= n_fft, but got win_length={win}")
    if hop <= 0 or hop > win:
        fail(": expected 0 < hop_length <= win_length")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(": Invalid window shape. window has to be 1D and length of `win_length`")
    real = ember.float32 if input.dtype == ember.complex64 else ember.float64
    w = _centered_window(window, win, n_fft, real, input.device)
    frames = spec.transpose(-1, -2)                          # (B, n_frames, freq)
    if normalized:
        frames = frames * (n_fft ** 0.5)
    if not one and not return_complex:
        # a real result: PyTorch keeps the first n_fft // 2 + 1 frequencies and inverts them with irfft
        # (not ifft's real part: the two differ where the input is not Hermitian)
        frames, one = frames[..., :n_fft // 2 + 1], True
    if one:
        y = ember.fft.irfft(frames, n=n_fft, dim=-1)
    else:
        y = ember.fft.ifft(frames, n=n_fft, dim=-1)
        if not return_complex:
            y = y.real
    y = y * w                                                # (B, n_frames, n_fft)
    total = n_fft + hop * (n_frames - 1)
    pos = (ember.arange(n_frames, device=input.device)[:, None] * hop +
           ember.arange(n_fft, device=input.device)[None, :]).reshape(-1)
    out = ember.zeros(spec.shape[0], total, dtype=y.dtype, device=input.device)
    out = out.index_add(1, pos, y.reshape(spec.shape[0], -1))
    ww = w * w  # (complex for a complex window, as PyTorch's window envelope)
    env = ember.zeros(total, dtype=ww.dtype, device=input.device).index_add(
        0, pos, ww.expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    end_env = min(end, total)
    out = out[:, start:end_env]
    env = env[start:end_env]
    if env.numel() and bool(env.abs().min() < 1e-11):
        fail("window overlap add min: 1")
    out = out / env
    if length is not None and out.shape[-1] < length:
        out = _nn.pad(out, (0, length - out.shape[-1]))
    return out if batched else out.squeeze(0)
