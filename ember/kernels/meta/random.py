"""Meta functions of random ops (shapes and dtypes; no draws), and the argument checks of
random_/randint that the CPU kernels share (ATen's DistributionTemplates.h)."""
import warnings

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.kernels.meta.creation import DIGITS, LIMITS, TMNAME, check_size, checked
from ember.kernels.meta.pointwise import broadcast_shapes

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


# ---- random_ / randint bounds -----------------------------------------------------------------
def _update_from(frm, d):
    """from + 1 rounded in a float dtype: the smallest representable start (ATen's update_from)."""
    r = _round_int(frm + 1, d)
    if r < frm:
        f = abs(frm + 1)
        n = f.bit_length() - 1 if f else 0
        frm = r + (1 << (n - DIGITS[d.name] + 1))
    return frm


def _update_to(to, d):
    r = _round_int(to - 1, d)
    if r >= to:
        t = abs(to - 1)
        n = t.bit_length() - 1 if t else 0
        to = r - (1 << (n - DIGITS[d.name] + 1))
    return to


def _round_int(v, d):
    import numpy as np
    with np.errstate(over="ignore"):
        x = np.array(v, dtype=np.float64).astype(d.np)
    f = float(x)
    if f != f or abs(f) == float("inf") or f >= 2.0 ** 63:
        return _INT64_MAX
    if f < -(2.0 ** 63):
        return _INT64_MIN
    return int(f)


def check_from_to_in_range(frm, to_inc, d):
    c = d.category
    name = TMNAME[d.name]
    if c == _dt.FLOAT:
        lo, hi = LIMITS[d.name]
        if not (lo <= frm <= hi):
            raise RuntimeError(f"from is out of bounds for {name}")
        if not (lo <= to_inc <= hi):
            raise RuntimeError(f"to - 1 is out of bounds for {name}")
        digits = DIGITS[d.name]
        for v, what in ((frm, "from"), (to_inc, "to - 1")):
            if v < -(1 << digits) or v > (1 << digits):
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                    f"{name} can support discrete uniform distribution only within this range. This "
                    "warning will become an error in version 1.7 release, please fix the code in advance",
                    UserWarning, stacklevel=5)
    elif c in (_dt.INT, _dt.BOOL):
        lo, hi = LIMITS[d.name]
        if not (lo <= frm <= hi):
            raise RuntimeError(f"from is out of bounds for {name}")
        if not (lo <= to_inc <= hi):
            raise RuntimeError(f"to - 1 is out of bounds for {name}")
    else:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")


def random_from_to_plan(d, frm, to):
    """(from, range) of random_(from, to) on dtype d; range None means the full 64-bit range."""
    if to is not None:
        if not frm < to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if d.category == _dt.FLOAT:
            frm, to = _update_from(frm, d), _update_to(to, d)
            if not frm < to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to "
                                   f"dtype, but got from={frm} >= to={to}")
        check_from_to_in_range(frm, to - 1, d)
        return frm, to - frm
    if frm != _INT64_MIN:
        c = d.category
        if c == _dt.FLOAT:
            to_inc = min(1 << DIGITS[d.name], _INT64_MAX)
            frm = _update_from(frm, d)
            if not frm < to_inc:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to "
                                   f"'to_inc' casted to dtype, but got from={frm} > to_inc={to_inc}")
        elif c in (_dt.INT, _dt.BOOL):
            to_inc = LIMITS[d.name][1]
        else:
            raise RuntimeError("random_from_to_impl handles only integral, floating-point and boolean types")
        check_from_to_in_range(frm, to_inc, d)
        return frm, to_inc - frm + 1
    return frm, None


# ---- meta functions ---------------------------------------------------------------------------
def _factory(size, dtype):
    check_size(size)
    return tuple(size), dtype or _dt.defaults.float


def rand(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _factory(size, dtype)


def rand_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    return _factory(size, dtype)


randn = rand
randn_generator = rand_generator


def randint(high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(0, high, size, None, dtype)


def randint_generator(high, size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(0, high, size, generator, dtype)


def randint_low(low, high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(low, high, size, None, dtype)


def randint_low_generator(low, high, size, generator, dtype=None, layout=None, device=None,
                          pin_memory=None):
    d = dtype or _dt.int64
    check_size(size)
    random_from_to_plan(d, low, high)
    return tuple(size), d


def randperm_check(n, d):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    checked(n - 1 if n > 0 else n, d)
    lim = {"float16": (2049, "2049 for Half"), "float32": ((1 << 24) + 1, "2^24+1 for Float"),
           "float64": ((1 << 53) + 1, "2^53+1 for Double")}.get(d.name)
    if lim is not None and n > lim[0]:
        raise RuntimeError(f"n cannot be greater than {lim[1]} type.")


def randperm(n, dtype=None, layout=None, device=None, pin_memory=None):
    return randperm_generator(n, None, dtype)


def randperm_generator(n, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.int64
    randperm_check(n, d)
    return (n,), d


def normal_tensor_float(mean, std=1.0, generator=None):
    return mean._shape, mean._dtype


def normal_float_tensor(mean, std, generator=None):
    return std._shape, std._dtype


def normal_tensor_tensor(mean, std, generator=None):
    return broadcast_shapes(mean._shape, std._shape), mean._dtype


def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None,
                       pin_memory=None):
    return _factory(size, dtype)


def bernoulli(self, generator=None):
    return self._shape, self._dtype


def bernoulli_p(self, p, generator=None):
    return self._shape, self._dtype


def bernoulli_tensor(self, p, generator=None):
    expand_check(p._shape, self._shape)
    return self._shape, self._dtype


def expand_check(shape, target):
    """PyTorch's expand error when `shape` cannot be expanded to `target`."""
    shape, target = tuple(shape), tuple(target)
    if len(shape) > len(target):
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({len(shape)})")
    off = len(target) - len(shape)
    for i in range(len(shape) - 1, -1, -1):
        s, t = shape[i], target[i + off]
        if s != t and s != 1:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size "
                               f"({s}) at non-singleton dimension {i + off}.  Target sizes: "
                               f"{fmt_shape(target)}.  Tensor sizes: {fmt_shape(shape)}")


def multinomial_check(shape, d, n, replacement):
    if not 0 < len(shape) <= 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if d.category != _dt.FLOAT:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {d._short}")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    ncat = shape[-1]
    if not replacement and n > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if ncat > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    return (n,) if len(shape) == 1 else (shape[0], n)


def multinomial(self, num_samples, replacement=False, generator=None):
    return multinomial_check(self._shape, self._dtype, num_samples, replacement), _dt.int64


# in-place random ops on meta tensors: nothing to draw, nothing to check (as PyTorch's meta kernels)
def inplace(self, *args, **kwargs):
    pass


uniform_ = normal_ = random_ = random_to = random_from = inplace
exponential_ = geometric_ = log_normal_ = cauchy_ = inplace
bernoulli_float_ = inplace


def bernoulli_tensor_(self, p, generator=None):
    expand_check(p._shape, self._shape)
