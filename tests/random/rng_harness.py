"""Shared helpers of tests/random: bitwise comparison of ember's and torch's random streams."""
import numpy as np
import torch

import ember

INTEL = False
try:
    with open("/proc/cpuinfo") as f:
        INTEL = "GenuineIntel" in f.read(4096)
except OSError:
    pass
# torch's pip CPU build draws bernoulli_(float p) from MKL's VSL_BRNG_MCG31 on Intel CPUs (and the
# default mt19937 kernel elsewhere); ember reproduces the default kernel only.
MKL_BERNOULLI = "torch draws bernoulli_(p) (dropout) from MKL's MCG31 on Intel CPUs; ember reproduces the default kernel"


def bits(x):
    """A tensor (either library) as a NumPy array whose == is bitwise (bfloat16 as int16)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().contiguous()
        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy()
        if x.dtype == torch.float16:
            return x.view(torch.int16).numpy()
        if x.dtype.is_floating_point:
            return x.numpy().view(np.int32 if x.dtype == torch.float32 else np.int64)
        if x.dtype.is_complex:
            return x.numpy().view(np.int64 if x.dtype == torch.complex128 else np.int32)
        return x.numpy()
    a = np.ascontiguousarray(x.detach().numpy())
    if a.dtype.kind in "fcV" or a.dtype.name == "bfloat16":
        return a.view({2: np.int16, 4: np.int32, 8: np.int64, 16: np.int64}[a.dtype.itemsize]
                      if a.dtype.kind != "c" else (np.int32 if a.dtype.itemsize == 8 else np.int64))
    return a


def assert_same(e, t, what=""):
    """ember result e equals torch result t bit for bit (tensors, or lists/tuples of them)."""
    if isinstance(t, (list, tuple)):
        assert len(e) == len(t), what
        for i, (a, b) in enumerate(zip(e, t)):
            assert_same(a, b, f"{what}[{i}]")
        return
    if not isinstance(t, torch.Tensor):
        assert e == t, f"{what}: {e} != {t}"
        return
    assert e.dtype.name == str(t.dtype).split(".")[1], f"{what}: dtype {e.dtype} != {t.dtype}"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} != {tuple(t.shape)}"
    a, b = bits(e), bits(t)
    bad = a != b
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {a.size} differ, e.g. "
                           f"{e.detach().numpy()[bad][:3]} vs {t.detach().numpy()[bad][:3]}")


def same_state():
    assert np.array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy()), \
        "generator states differ"


def run_both(fn, seed):
    """fn(lib) under manual_seed(seed) in each library; asserts equal values and equal states."""
    torch.manual_seed(seed)
    t = fn(torch)
    ember.manual_seed(seed)
    e = fn(ember)
    assert_same(e, t)
    same_state()
    return e, t
