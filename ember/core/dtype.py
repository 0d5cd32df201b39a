"""dtypes and PyTorch's type promotion (c10/core/ScalarType.h)."""
import numpy as np

try:
    import ml_dtypes
    _bf16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bfloat16 needs ml_dtypes; everything else runs without it
    _bf16 = None

# categories, in promotion order
BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


class dtype:
    __slots__ = ("name", "np", "itemsize", "category", "is_signed", "_rank", "_short")

    def __init__(self, name, np_dtype, category, signed, rank, short):
        self.name = name
        self.np = np_dtype
        self.itemsize = np_dtype.itemsize if np_dtype is not None else 2
        self.category = category
        self.is_signed = signed
        self._rank = rank
        self._short = short

    @property
    def is_floating_point(self):
        return self.category == FLOAT

    @property
    def is_complex(self):
        return self.category == COMPLEX

    def to_real(self):
        return _TO_REAL.get(self, self)

    def to_complex(self):
        if self.category < FLOAT:
            raise RuntimeError(f"Unknown Complex ScalarType for {self._short}")
        return _TO_COMPLEX[self]

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name):
    return _NAMES[name]


bool_ = dtype("bool", np.dtype(np.bool_), BOOL, False, 0, "Bool")
uint8 = dtype("uint8", np.dtype(np.uint8), INT, False, 1, "Byte")
int8 = dtype("int8", np.dtype(np.int8), INT, True, 1, "Char")
int16 = dtype("int16", np.dtype(np.int16), INT, True, 2, "Short")
int32 = dtype("int32", np.dtype(np.int32), INT, True, 3, "Int")
int64 = dtype("int64", np.dtype(np.int64), INT, True, 4, "Long")
float16 = dtype("float16", np.dtype(np.float16), FLOAT, True, 1, "Half")
bfloat16 = dtype("bfloat16", _bf16, FLOAT, True, 1, "BFloat16")
float32 = dtype("float32", np.dtype(np.float32), FLOAT, True, 2, "Float")
float64 = dtype("float64", np.dtype(np.float64), FLOAT, True, 3, "Double")
complex64 = dtype("complex64", np.dtype(np.complex64), COMPLEX, True, 2, "ComplexFloat")
complex128 = dtype("complex128", np.dtype(np.complex128), COMPLEX, True, 3, "ComplexDouble")
# complex32 (torch.chalf, "ComplexHalf"): NumPy has no complex of two float16s. Its arrays use a
# structured dtype of two float16 fields (itemsize 4, torch's layout: real then imaginary), so the
# array layer (shapes, strides, views, transposes, indexing, concatenation, copies) works on it
# unchanged and view_as_real is a plain .view(float16). Arithmetic cannot run on it: the kernels
# that support ComplexHalf (as torch's CPU kernels do: add, mul, abs, ==, ...) widen it to complex64,
# compute, and round each component back to float16 (ember.kernels.cpu._chalf); NumPy refuses ufuncs
# on a structured dtype, so an unsupported kernel fails instead of computing something wrong.
CHALF_NP = np.dtype([("real", "<f2"), ("imag", "<f2")])
complex32 = dtype("complex32", CHALF_NP, COMPLEX, True, 1, "ComplexHalf")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
       complex32, complex64, complex128)
_TO_REAL = {complex32: float16, complex64: float32, complex128: float64}
_TO_COMPLEX = {float16: complex32, bfloat16: complex64, float32: complex64, float64: complex128,
               complex32: complex32, complex64: complex64, complex128: complex128}
_NAMES = {d.name: d for d in ALL}
# PyTorch's aliases
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
           "long": int64, "cfloat": complex64, "cdouble": complex128, "bool": bool_,
           "uint8": uint8, "int8": int8, "chalf": complex32}
# numpy dtype -> ember dtype; the kernels return arrays and this maps them back
NP2DT = {d.np: d for d in ALL if d.np is not None}
for _d in ALL:
    if _d.np is not None and _d is not complex32:  # CHALF_NP.type is np.void
        NP2DT[_d.np.type] = _d


def from_numpy_dtype(npdt):
    d = NP2DT.get(npdt)
    if d is None or d is complex32:
        d = NP2DT.get(np.dtype(npdt))
        if d is None or d is complex32:  # a structured dtype is no number type to NumPy users
            raise TypeError(f"can't convert np.ndarray of type {np.dtype(npdt)}. The only supported "
                            "types are: float64, float32, float16, complex64, complex128, int64, "
                            "int32, int16, int8, uint8, and bool.")
    return d


# ---- promote_types (c10::promoteTypes) ------------------------------------------------------
def _promote(a, b):
    if a is b:
        return a
    if a is bool_:
        return b
    if b is bool_:
        return a
    ca, cb = a.category, b.category
    if ca == INT and cb == INT:
        if a.is_signed == b.is_signed:
            return a if a._rank >= b._rank else b
        u, s = (a, b) if not a.is_signed else (b, a)
        return int16 if s is int8 else s
    if ca == INT:
        return b
    if cb == INT:
        return a
    if ca == FLOAT and cb == FLOAT:
        if a._rank == b._rank:  # float16 with bfloat16
            return float32
        return a if a._rank > b._rank else b
    # at least one complex
    ra = a.to_real() if ca == COMPLEX else a
    rb = b.to_real() if cb == COMPLEX else b
    r = _promote(ra, rb)
    return complex128 if r is float64 else complex32 if r is float16 else complex64


PROMOTE = {(a, b): _promote(a, b) for a in ALL for b in ALL}


def promote_types(type1, type2):
    return PROMOTE[(type1, type2)]


# ---- default dtype -------------------------------------------------------------------------
class _Defaults:
    float = float32
    complex = complex64


defaults = _Defaults()


def get_default_dtype():
    return defaults.float


def set_default_dtype(d):
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    if d.category != FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    defaults.float = d
    defaults.complex = complex128 if d is float64 else complex64
    _RT_CACHE.clear()


# ---- result_type with dimension categories (ATen's ResultTypeState) -------------------------
# participant priority: 0 = tensor with dim > 0, 1 = 0-d tensor, 2 = Python scalar (wrapped number)


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool_ or lower.category == FLOAT:
        return PROMOTE[(higher, lower)]
    return higher


def scalar_dtype(v):
    """The dtype a Python scalar takes part in promotion as (before default-dtype mapping)."""
    t = type(v)
    if t is bool:
        return bool_
    if t is int:
        return int64
    if t is float:
        return defaults.float
    if t is complex:
        return defaults.complex
    if isinstance(v, (bool, np.bool_)):
        return bool_
    if isinstance(v, (int, np.integer)):
        return int64
    if isinstance(v, (float, np.floating)):
        return defaults.float
    if isinstance(v, (complex, np.complexfloating)):
        return defaults.complex
    raise TypeError(f"expected a number, got {type(v).__name__}")


_RT_CACHE = {}


def result_type_of(parts):
    """parts: iterable of (dtype, priority). Cached on the tuple."""
    key = tuple(parts)
    r = _RT_CACHE.get(key)
    if r is None:
        res = [None, None, None]
        for d, p in key:
            res[p] = d if res[p] is None else PROMOTE[(res[p], d)]
        r = _combine(res[0], _combine(res[1], res[2]))
        _RT_CACHE[key] = r
    return r


# legacy type names used by x.type() and error messages ("torch.FloatTensor")
LEGACY_NAMES = {float32: "FloatTensor", float64: "DoubleTensor", float16: "HalfTensor",
                bfloat16: "BFloat16Tensor", int64: "LongTensor", int32: "IntTensor",
                int16: "ShortTensor", int8: "CharTensor", uint8: "ByteTensor", bool_: "BoolTensor",
                complex32: "ComplexHalfTensor", complex64: "ComplexFloatTensor",
                complex128: "ComplexDoubleTensor"}


def legacy_type_name(dtype, device_type="cpu"):
    mid = "" if device_type == "cpu" else device_type + "."
    return "torch." + mid + LEGACY_NAMES[dtype]


def check_cast(from_, to):
    """Raise TensorIterator's error when a result of dtype from_ cannot be written into `to`."""
    if from_ is not to and not can_cast(from_, to):
        raise RuntimeError(f"result type {from_._short} can't be cast to the desired output type {to._short}")


def can_cast(from_, to):
    """PyTorch's canCast: no float->int, complex->non-complex, non-bool->bool."""
    if from_.category == COMPLEX and to.category != COMPLEX:
        return False
    if from_.category == FLOAT and to.category in (INT, BOOL):
        return False
    if from_ is not bool_ and to is bool_:
        return False
    return True
