"""Meta functions of factories, and the checks and dtype rules the CPU kernels share with them
(ATen's TensorFactories.cpp / RangeFactories.cpp and c10's checked scalar conversion)."""
import math

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.layout import format_strides

_BOOL, _INT, _FLOAT, _COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX

# C++ type names PyTorch prints in "value cannot be converted to type X without overflow"
CNAME = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
         "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
         "float64": "double", "complex32": "c10::complex<c10::Half>",
         "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
# typeid names (caffe2::TypeMeta) PyTorch prints in random ops' bound checks
TMNAME = dict(CNAME, uint8="unsigned char", int8="signed char", int16="short int", int64="long int")
# (lowest, max) of each real type (complex: of its parts)
LIMITS = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767),
          "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1),
          "float16": (-65504.0, 65504.0), "bfloat16": (-3.3895313892515355e38, 3.3895313892515355e38),
          "float32": (-3.4028234663852886e38, 3.4028234663852886e38),
          "float64": (-1.7976931348623157e308, 1.7976931348623157e308),
          # torch converts into ComplexHalf without an overflow check (70000 becomes inf)
          "complex32": (-math.inf, math.inf), "complex64": (-3.4028234663852886e38, 3.4028234663852886e38),
          "complex128": (-1.7976931348623157e308, 1.7976931348623157e308), "bool": (0, 1)}
DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def fmt_double(x):
    """A double as a C++ stream prints it (precision 6, like %g)."""
    return "%g" % x


def not_implemented(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype._short}\'')


# ---- sizes -----------------------------------------------------------------------------------
def check_size(size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {fmt_shape(size)}")


def check_size_zeros(size):
    for s in size:
        if s < 0:
            raise RuntimeError("zeros: Dimension size must be non-negative.")


# ---- Python numbers converted to a dtype with PyTorch's overflow check (c10::checked_convert) --
def _overflow(dtype, names):
    return RuntimeError(f"value cannot be converted to type {names[dtype.name]} without overflow")


def checked(v, dtype, names=CNAME):
    """`v` (a Python or NumPy number) as a Python value of dtype's kind; RuntimeError on overflow."""
    c = dtype.category
    if c == _BOOL:
        return bool(v)
    t = type(v)
    if t is not int and t is not float:
        if isinstance(v, bool) or hasattr(v, "dtype") and v.dtype.kind == "b":
            v = int(v)
        elif isinstance(v, complex) or hasattr(v, "dtype") and v.dtype.kind == "c":
            v = complex(v)
            if c == _COMPLEX:
                lo, hi = LIMITS[dtype.name]
                for part in (v.real, v.imag):
                    if not math.isinf(part) and not math.isnan(part) and (part < lo or part > hi):
                        raise _overflow(dtype, names)
                return v
            if v.imag != 0:
                raise _overflow(dtype, names)
            v = v.real
        elif hasattr(v, "dtype") and v.dtype.kind in "iu":
            v = int(v)
        else:
            v = float(v)
        t = type(v)
    if t is int:
        if v >= 1 << 64 or v < -(1 << 63):
            raise OverflowError("int too big to convert")
        lo, hi = LIMITS[dtype.name]
        if c == _INT:
            if lo == 0:  # unsigned: negatives wrap (two's complement) down to -max
                if v > hi or (v < 0 and -v > hi):
                    raise _overflow(dtype, names)
                return v % (hi + 1)
            if v < lo or v > hi:
                raise _overflow(dtype, names)
            return v
        if v < lo or v > hi:
            raise _overflow(dtype, names)
        return float(v) if c == _FLOAT else complex(v)
    # float
    lo, hi = LIMITS[dtype.name]
    if c == _INT:
        if v != v or v < lo or v > hi:
            raise _overflow(dtype, names)
        r = int(v)
        if r > hi:
            raise _overflow(dtype, names)
        return r
    if v != v or math.isinf(v):
        return v if c == _FLOAT else complex(v)
    if v < lo or v > hi:
        raise _overflow(dtype, names)
    return v if c == _FLOAT else complex(v)


def fill_dtype(value):
    """full()'s dtype from its fill value: bool, int64, default float or default complex."""
    return _dt.scalar_dtype(value)


# ---- meta functions ---------------------------------------------------------------------------
def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    check_size(size)
    if memory_format is not None and memory_format.name != "contiguous_format":
        return tuple(size), dtype or _dt.defaults.float, format_strides(size, memory_format)
    return tuple(size), dtype or _dt.defaults.float


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    check_size(size)
    return tuple(size), dtype or _dt.defaults.float, tuple(stride)


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    check_size_zeros(size)
    return tuple(size), dtype or _dt.defaults.float


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    check_size(size)
    return tuple(size), dtype or _dt.defaults.float


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    check_size(size)
    return tuple(size), dtype or fill_dtype(fill_value)


def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    return (), dtype or _dt.defaults.float


def eye_check(n, m):
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")


def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    eye_check(n, n)
    return (n, n), dtype or _dt.defaults.float


def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    eye_check(n, m)
    return (n, m), dtype or _dt.defaults.float


# ---- arange ---------------------------------------------------------------------------------
def _is_integral(v):
    return isinstance(v, int) or (hasattr(v, "dtype") and v.dtype.kind in "biu")


def _as_double(v):
    if isinstance(v, complex) or (hasattr(v, "dtype") and v.dtype.kind == "c"):
        v = complex(v)
        if v.imag != 0:
            raise RuntimeError("value cannot be converted to type double without overflow")
        return v.real
    return float(v)


def arange_plan(start, end, step, dtype, cpu=False):
    """(size, dtype, xstart, xstep) of arange, with PyTorch's checks and dtype inference.

    xstart/xstep are in the accumulate type: int64 for integral dtypes (Scalar.to<int64_t>
    truncates), float for float16/bfloat16, double otherwise."""
    if dtype is None:
        integral = _is_integral(start) and _is_integral(end) and _is_integral(step)
        dtype = _dt.int64 if integral else _dt.defaults.float
    c = dtype.category
    ds, de, dst = _as_double(start), _as_double(end), _as_double(step)
    if c == _BOOL or c == _COMPLEX:
        if cpu:
            raise not_implemented("arange_cpu", dtype)
        c = _FLOAT  # the meta function only computes the size
    if dst == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(ds) and math.isfinite(de)):
        raise RuntimeError(f"unsupported range: {fmt_double(ds)} -> {fmt_double(de)}")
    if not ((dst > 0 and de >= ds) or (dst < 0 and de <= ds)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if c == _INT:
        acc = _dt.int64
        xs, xe, xst = (checked(v, acc) for v in (start, end, step))
        if dtype is _dt.int64:
            if xst == 0:
                raise ValueError("step must be nonzero")
            sgn = 1 if xst > 0 else -1
            return (xe - xs + xst - sgn) // xst, dtype, xs, xst
    q = (de - ds) / dst
    size = math.ceil(q) if math.isfinite(q) else q
    if not (size >= 0 and size <= 9223372036854775807):
        raise RuntimeError("invalid size, possible overflow?")
    size = int(size)
    if c != _INT:
        acc = _dt.float32 if dtype.name in ("float16", "bfloat16") else _dt.float64
        xs, xst = checked(ds, acc), checked(dst, acc)
    return size, dtype, xs, xst


def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(0, end, 1, dtype)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(start, end, 1, dtype)


def arange_start_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    n, dtype, _, _ = arange_plan(start, end, step, dtype)
    return (n,), dtype


# ---- linspace / logspace ----------------------------------------------------------------------
def _is_complex(v):
    return isinstance(v, complex) or (hasattr(v, "dtype") and v.dtype.kind == "c")


def space_dtype(start, end, steps, dtype, name):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if _is_complex(start) or _is_complex(end):
        inferred = _dt.defaults.complex
        if dtype is None:
            return inferred
        if dtype.category != _COMPLEX:
            raise RuntimeError(f"torch.{name}(): inferred dtype {CNAME[inferred.name]} can't be safely "
                               f"cast to passed dtype {dtype._short}")
        return dtype
    return dtype or _dt.defaults.float


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    return (steps,), space_dtype(start, end, steps, dtype, "linspace")


def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    return (steps,), space_dtype(start, end, steps, dtype, "logspace")


# ---- fill -------------------------------------------------------------------------------------
def check_fill_value(value):
    nd = len(value._shape) if hasattr(value, "_shape") else getattr(value, "ndim", 0)
    if nd != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {nd} "
                           "dimensions.")


def fill_(self, value):
    pass


def fill_tensor_(self, value):
    check_fill_value(value)


def zero_(self):
    pass


def fill(self, value):
    return self._shape, self._dtype


def fill_tensor(self, value):
    check_fill_value(value)
    return self._shape, self._dtype
