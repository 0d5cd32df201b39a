"""Random kernels on the CUDA backend: torch's CUDA streams.

Each op reserves its Philox offset from the device's generator and turns the words into values
as ATen's CUDA kernels do (aten/src/ATen/native/cuda/DistributionTemplates.h, Dropout.cu, and
curand's transforms in curand_kernel.h / curand_uniform.h / curand_normal.h): the grid-stride
layout of core/philox.py, the element order of TensorIterator (memory order of the output), and
the same float arithmetic (the fused multiply-adds nvcc emits included).

The words and most transforms are computed on the host with NumPy and copied to the device (slow
for big tensors; the numbers are the point). Measured against torch 2.11 on an H200 (132 SMs;
the grid, and so the numbers, depend on the SM count, which is read from the device; the
simulator uses the H200's):
- bit for bit: rand / uniform_ and bernoulli_(p) (float32, float64, float16, bfloat16), random_ /
  randint (every range), geometric_, contiguous and non-contiguous outputs, and the generator's
  offsets (so every later draw stays in step);
- exponential_ and cauchy_ in float32 call the GPU's fast __logf / __tanf: on a real GPU they run
  in a numba kernel through libdevice's same intrinsics and match bit for bit; on the simulator
  the accurate functions stand in (within 1e-6 relative);
- randn / normal_ / log_normal_ go through curand's Box-Muller with __logf and __sincosf, which
  neither the host nor a numba kernel reproduce exactly (a libdevice kernel matched 41% of
  values): float32 normals are within 4e-6 of torch's (absolute, mean 1.5, std 2; 2.3e-6 for
  randn), float64 within 5e-15 (log and sincospi differ in the last bit);
- other random ops (randperm from 30000 elements, multinomial, poisson, bernoulli with tensor p,
  normal with tensor arguments, rrelu) run on the host's mt19937 in the CPU fallback, from a CPU
  generator seeded by the device generator's (seed, offset): reproducible, but not torch's
  numbers. Dropout is ember's composite (a bernoulli_ mask, torch's Philox values), not torch's
  fused CUDA kernel, which lays the draws out differently: its masks differ from torch's.
  randperm below 30000 elements uses the default CPU generator, as torch's does (its values
  equal torch's).
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.core import philox as _ph
from ember.core.device import device as _device
from ember.core.generator import device_default_generator
from ember.kernels.cpu import random as _cpu
from ember.kernels.cpu._glue import wrap
from ember.kernels.cuda import _glue
from ember.kernels.cuda import _launch as L
from ember.kernels.meta.creation import DIGITS, LIMITS, check_size
from ember.kernels.meta.random import random_from_to_plan

_f32, _f64 = np.float32, np.float64
_INV32 = _f32(2.0 ** -32)
_HALF32 = _f32(2.0 ** -33)
_INV53 = 2.0 ** -53
_TWO_PI_INV32 = _f32(2.0 ** -32 * 2.0 * math.pi)  # CURAND_2POW32_INV_2PI
_limits = {}


def engine(generator, dev):
    """The Philox engine a kernel on CUDA device `dev` draws from."""
    if generator is None:
        return device_default_generator(_device("cuda", dev.index or 0))._rng
    if generator.device.type != "cuda":
        raise RuntimeError(f"Expected a 'cuda' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._rng


def limits(dev):
    """(multiProcessorCount, maxThreadsPerMultiProcessor) of the device (the simulator: an
    H200's)."""
    i = dev.index or 0
    r = _limits.get(i)
    if r is None:
        r = _ph.DEFAULT_LIMITS
        if not _glue.is_sim():
            with _glue._ctx(i):
                d = _glue.cuda().get_current_device()
                r = (d.MULTIPROCESSOR_COUNT, d.MAX_THREADS_PER_MULTIPROCESSOR)
        _limits[i] = r
    return r


def _draw(e, dev, n, unroll, per_call=False):
    """The words of a distribution_nullary_kernel over n elements (see core/philox.py): per
    element, or with per_call=True each thread's whole blocks (trips, stride, 4)."""
    co, stride = _ph.policy(n, unroll, limits(dev))
    seed, off = e.reserve(co)
    if per_call:
        return _ph.calls(seed, off, n, unroll, stride)
    return _ph.blocks(seed, off, n, unroll, stride)


# ---- curand's transforms --------------------------------------------------------------------
def _uniform32(w):
    """curand_uniform: (0, 1] floats."""
    return w.astype(_f32) * _INV32 + _HALF32


def _uniform64(x, y):
    """curand_uniform2_double's _curand_uniform_double_hq: 53 bits from two words, (0, 1]."""
    z = x.astype(np.uint64) ^ (y.astype(np.uint64) << np.uint64(21))
    return z.astype(_f64) * _INV53 + _INV53 / 2


def _box_muller32(x, y):
    """_curand_box_muller: (sin, cos) * sqrt(-2 log u). The GPU uses __logf and __sincosf; here
    the accurate functions in double, rounded to float (see the module doc)."""
    u = _uniform32(x)
    v = y.astype(_f32) * _TWO_PI_INV32 + _f32(_TWO_PI_INV32 / 2)
    s = np.sqrt(_f32(-2.0) * np.log(u.astype(_f64)).astype(_f32))
    vd = v.astype(_f64)
    return np.sin(vd).astype(_f32) * s, np.cos(vd).astype(_f32) * s


def _box_muller64(x0, x1, y0, y1):
    """_curand_box_muller_double: u from (x0, x1), v in (0, 2], sincospi(v) * sqrt(-2 log u)."""
    u = _uniform64(x0, x1)
    zy = y0.astype(np.uint64) ^ (y1.astype(np.uint64) << np.uint64(21))
    v = zy.astype(_f64) * (_INV53 * 2.0) + _INV53
    s = np.sqrt(-2.0 * np.log(u))
    return np.sin(math.pi * v) * s, np.cos(math.pi * v) * s


def _uniform_vals(e, dev, n, d):
    """uniform_and_transform's draws: float32 (0, 1] for every dtype but float64 (double)."""
    if d is _dt.float64:
        w = _draw(e, dev, n, 2)
        return _uniform64(w[:, 0], w[:, 1])
    return _uniform32(_draw(e, dev, n, 4)[:, 0])


def _normal_vals(e, dev, n, d):
    """normal_and_transform's draws: curand_normal4 (float) or curand_normal2_double."""
    if d is _dt.float64:
        w = _draw(e, dev, n, 2, per_call=True)
        return _ph.lay_out(np.stack(_box_muller64(*np.moveaxis(w, -1, 0)), -1), n)
    w = _draw(e, dev, n, 4, per_call=True)
    s0, c0 = _box_muller32(w[..., 0], w[..., 1])
    s1, c1 = _box_muller32(w[..., 2], w[..., 3])
    return _ph.lay_out(np.stack((s0, c0, s1, c1), -1), n)


def _fma(a, b, c, d):
    """a * b + c as nvcc contracts it (one rounding) in the op-math type of dtype d."""
    if d is _dt.float64:
        return _cpu._fma64(a, np.full(a.shape, b), c)
    return _cpu._fma32(a, _f32(b), _f32(c))


# ---- writing the values ---------------------------------------------------------------------
def _store(self, vals):
    """vals (in TensorIterator's order: the output's memory order) into CUDA tensor self."""
    shape, strides = self._shape, self._strides
    perm = sorted(range(len(shape)), key=lambda i: -strides[i])
    h = np.asarray(vals).astype(self._dtype.np, copy=False).reshape([shape[i] for i in perm])
    _glue.copy_(self, wrap(np.ascontiguousarray(h.transpose(np.argsort(perm)))))
    return self


def _checked(cpu_fn, self, *args):
    """Run the CPU kernel's argument checks (they come before its draws) on an empty array."""
    cpu_fn(np.empty(0, self._dtype.np), *args)
    return self.numel()


def _cast_back(v, d, lo, hi):
    """static_cast<scalar_t>(value), and reverse_bound_value: value == to gives from."""
    r = v.astype(d.np)
    r[r == np.asarray(hi, d.np)] = np.asarray(lo, d.np)
    return r


# ---- the kernels ----------------------------------------------------------------------------
def uniform_(self, from_=0.0, to=1.0, generator=None):
    n = _checked(_cpu.uniform_, self, from_, to)
    if n == 0:
        return self
    d = self._dtype
    if d.category == _dt.COMPLEX:
        raise L.Unsupported()
    e = engine(generator, self._device)
    r = _uniform_vals(e, self._device, n, d)
    # value = static_cast<scalar_t>(rand * range + from) with range and from in op-math
    lo, hi = (float(np.asarray(v, d.np)) for v in (from_, to))
    span = hi - lo if d is _dt.float64 else float(np.asarray(_f32(hi - lo), d.np))  # to - from in scalar_t
    return _store(self, _cast_back(_fma(r, span, lo, d), d, lo, hi))


def _normal_into(self, mean, std, generator, cpu_check, exp=False):
    """normal_and_transform: rand * std + mean (fused), exponentiated for log_normal_."""
    n = _checked(cpu_check, self, mean, std)
    if n == 0:
        return self
    d = self._dtype
    if d.category == _dt.COMPLEX:
        raise L.Unsupported()
    v = _fma(_normal_vals(engine(generator, self._device), self._device, n, d), std, mean, d)
    if exp:
        with np.errstate(over="ignore"):
            v = np.exp(v.astype(_f64)).astype(v.dtype)
    return _store(self, v.astype(d.np))


def normal_(self, mean=0.0, std=1.0, generator=None):
    return _normal_into(self, mean, std, generator, _cpu.normal_)


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    return _normal_into(self, mean, std, generator, _cpu.log_normal_, exp=True)


_fast = {}


def _fast_transform(kind, u, a, b, dev):
    """float32 exponential_ / cauchy_ transforms on a real GPU, with the fast intrinsics torch's
    kernels compile to (__logf, __tanf): there the values equal torch's bit for bit."""
    k = _fast.get(kind)
    if k is None:
        from numba import float32
        from numba.cuda import libdevice as LD
        cuda = _glue.cuda()
        if kind == "exponential":
            def body(u, out, a, b):
                i = cuda.grid(1)
                if i < u.shape[0]:
                    x = u[i]
                    out[i] = a * (b if x >= float32(1.0) + b else LD.fast_logf(x))
        else:
            def body(u, out, a, b):
                i = cuda.grid(1)
                if i < u.shape[0]:
                    out[i] = a + b * LD.fast_tanf(float32(3.14159265358979) * (u[i] - float32(0.5)))
        k = _fast[kind] = cuda.jit(body)
    with _glue._ctx(dev.index or 0):
        du = _glue.cuda().to_device(u)
        out = _glue.cuda().device_array(u.shape[0], np.float32)
        k[(u.shape[0] + 255) // 256, 256](du, out, _f32(a), _f32(b))
        return out.copy_to_host()


def _uniforms(check, self, generator, *args):
    """The checked draw behind a distribution's transform: (uniforms, dtype, compute type), or None
    for an empty tensor."""
    n = _checked(check, self, *args)
    if n == 0:
        return None
    d = self._dtype
    return _uniform_vals(engine(generator, self._device), self._device, n, d), d, _f64 if d is _dt.float64 else _f32


def exponential_(self, lambd=1.0, generator=None):
    drawn = _uniforms(_cpu.exponential_, self, generator, lambd)
    if drawn is None:
        return self
    r, d, acc = drawn
    eps = np.finfo(acc).eps
    if acc is _f32 and not _glue.is_sim():
        v = _fast_transform("exponential", r, acc(-1.0) / acc(lambd), -eps / 2, self._device)
        return _store(self, v.astype(d.np))
    # curand's (0, 1]: log(1) = 0 would give 0, which the exponential excludes
    lg = np.where(r >= acc(1) - acc(eps / 2), acc(-eps / 2), np.log(r.astype(_f64)).astype(acc))
    v = (acc(-1.0) / acc(lambd)) * lg
    return _store(self, v.astype(d.np))


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    drawn = _uniforms(_cpu.cauchy_, self, generator, median, sigma)
    if drawn is None:
        return self
    r, d, acc = drawn
    if acc is _f32 and not _glue.is_sim():
        return _store(self, _fast_transform("cauchy", r, median, sigma, self._device).astype(d.np))
    t = np.tan((acc(math.pi) * (r - acc(0.5))).astype(_f64)).astype(acc)
    v = (acc(median) + acc(sigma) * t) if acc is _f64 else _fma(t, sigma, median, d)
    return _store(self, v.astype(d.np))


def geometric_(self, p, generator=None):
    drawn = _uniforms(_cpu.geometric_, self, generator, p)
    if drawn is None:
        return self
    r, d, acc = drawn
    lg = np.log(r.astype(_f64)).astype(acc)
    den = acc(np.log1p(-np.float64(acc(p))))
    return _store(self, np.ceil(lg / den).astype(d.np))


def bernoulli_float_(self, p=0.5, generator=None):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    n = self.numel()
    if n == 0:
        return self
    d = self._dtype
    if d.category == _dt.COMPLEX:
        raise L.Unsupported()
    r = _uniform_vals(engine(generator, self._device), self._device, n, d)
    return _store(self, (r < (p if d is _dt.float64 else _f32(p))).astype(d.np))


def bernoulli_p(self, p, generator=None):
    out = _glue.empty(self._shape, self._dtype, self._device)
    return bernoulli_float_(out, p, generator)


def _words64(w):
    return (w[:, 0].astype(np.uint64) << np.uint64(32)) | w[:, 1].astype(np.uint64)


def _random_words(e, dev, n, wide):
    return _words64(_draw(e, dev, n, 2)) if wide else _draw(e, dev, n, 4)[:, 0].astype(np.uint64)


def _int_cast(v, d):
    """static_cast<scalar_t>(int64 value) (wrapping for the narrow integers)."""
    v = v.astype(np.int64)
    return v.astype(d.np) if d.category != _dt.FLOAT else v.astype(_f64).astype(d.np)


def random_(self, generator=None):
    n = self.numel()
    d = self._dtype
    if d.category == _dt.COMPLEX:
        raise L.Unsupported()
    if n == 0:
        return self
    wide = d is _dt.int64 or d is _dt.float64
    w = _random_words(engine(generator, self._device), self._device, n, wide)
    if d.category == _dt.BOOL:
        return _store(self, (w & np.uint64(1)) != 0)
    if d.category == _dt.FLOAT:
        mod = np.uint64((1 << DIGITS[d.name]) + 1)
    else:
        mod = np.uint64(LIMITS[d.name][1] + 1)
    return _store(self, _int_cast(w % mod, d))


def random_to(self, to, generator=None):
    return random_from(self, 0, to, generator)


def random_from(self, from_, to=None, generator=None):
    d = self._dtype
    frm, span = random_from_to_plan(d, from_, to)
    n = self.numel()
    if n == 0:
        return self
    e = engine(generator, self._device)
    if span is None:  # random_full_64_bits_range: the 64-bit word as int64
        w = _random_words(e, self._device, n, True)
        return _store(self, _int_cast(w.view(np.int64), d))
    wide = span >= 1 << 32 and d.name in ("int64", "float64", "float32", "bfloat16")
    w = _random_words(e, self._device, n, wide)
    v = (w % np.uint64(span)).astype(np.int64) + np.int64(frm)
    return _store(self, _int_cast(v, d))


# ---- factories: empty on the device, then the in-place kernel (as ATen composes them) ---------
def _factory(size, dtype, device, default=None):
    check_size(size)
    d = dtype or default or _dt.defaults.float
    return _glue.empty(tuple(size), d, _glue.normalize(device))


def rand_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    return uniform_(_factory(size, dtype, device), 0.0, 1.0, generator)


def rand(size, dtype=None, layout=None, device=None, pin_memory=None):
    return rand_generator(size, None, dtype, layout, device)


def randn_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    return normal_(_factory(size, dtype, device), 0.0, 1.0, generator)


def randn(size, dtype=None, layout=None, device=None, pin_memory=None):
    return randn_generator(size, None, dtype, layout, device)


def randint_low_generator(low, high, size, generator, dtype=None, layout=None, device=None,
                          pin_memory=None):
    return random_from(_factory(size, dtype, device, _dt.int64), low, high, generator)


def randint_low(low, high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(low, high, size, None, dtype, layout, device)


def randint_generator(high, size, generator, dtype=None, layout=None, device=None,
                      pin_memory=None):
    return randint_low_generator(0, high, size, generator, dtype, layout, device)


def randint(high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(0, high, size, None, dtype, layout, device)


KERNELS = L.guarded({
    "uniform_": uniform_, "normal_": normal_, "log_normal_": log_normal_,
    "exponential_": exponential_, "cauchy_": cauchy_, "geometric_": geometric_,
    "bernoulli_.float": bernoulli_float_, "bernoulli.p": bernoulli_p,
    "random_": random_, "random_.to": random_to, "random_.from": random_from,
    "rand": rand, "rand.generator": rand_generator, "randn": randn,
    "randn.generator": randn_generator, "randint": randint, "randint.generator": randint_generator,
    "randint.low": randint_low, "randint.low_generator": randint_low_generator,
})
