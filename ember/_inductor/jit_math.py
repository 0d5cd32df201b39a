"""mathlib's float32 functions compiled by numba, for generated kernels.

    from ember._inductor import jit_math as m
    @numba.njit(**runtime.NJIT_FLAGS)
    def kernel(x, out):
        for i in range(x.size):
            out[i] = m.tanh_f32(x[i])

Importing this module imports numba (~0.5 s): only kernel modules and tests do. Each public name of
`mathlib.__all__` is here as a numba dispatcher compiled from mathlib's source with a globals table
in which float constants are numpy.float32 and the bit primitives are LLVM instructions (see
mathlib's docstring), so a float32 argument is computed in float32 throughout (another numeric
argument, float64 or integer, is converted to float32 first; the result is always float32).

Flags: `MATH_FLAGS` (fastmath "contract" only: fma contraction; no "reassoc", which would let LLVM
undo the Cody-Waite reduction and the log1p correction term, and no "nsz", which would lose -0.0).

Inlining: the public functions are not inlined into kernels at numba's IR level (inline="always"
would compile their bodies under the calling kernel's fastmath flags: with `reassoc`, log1p is off
by up to 2**24 ulp). Each is compiled on its own under MATH_FLAGS and given LLVM's `alwaysinline`,
so LLVM inlines it when a kernel links it, keeping its per-instruction flags, and then vectorises
the kernel's loop (without the attribute LLVM leaves large ones such as erf as calls, and the loop
stays scalar: 27 ms instead of 1.2 ms per 1M). Calls between math functions (tanh -> expm1 ->
_expm1_poly) are inlined at numba's IR level, where the caller is a math function with the same
flags: a kernel using tanh_f32 costs one numba compilation of the math library, not four.
benchmarks/inductor_math.py times chain C both ways (the speed is about the same).

Caching: numba's disk cache for these functions is keyed by the file their code claims to come from.
That file is a copy of mathlib.py written to `runtime.cache_dir()` under a name carrying the hash of
mathlib.py, jit_math.py and runtime.py, so editing any of them recompiles, and nothing is written
into the installed package.
"""
import os
import types as _pytypes

from ember._inductor import mathlib as _ml
from ember._inductor import runtime as _rt  # first: it prepares numba's environment (see there)

import numba  # noqa: E402, I001
import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba.core import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

MATH_FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
INLINE = "never"


# ---- primitives as LLVM instructions ------------------------------------------------------------
@intrinsic
def _bits(typingctx, x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(32))
        return types.int32(x), codegen


@intrinsic
def _from_bits(typingctx, i):
    if isinstance(i, types.Integer):
        def codegen(context, builder, sig, args):
            v = args[0]
            w = sig.args[0].bitwidth
            if w > 32:
                v = builder.trunc(v, ir.IntType(32))
            elif w < 32:
                v = builder.sext(v, ir.IntType(32)) if sig.args[0].signed else builder.zext(v, ir.IntType(32))
            return builder.bitcast(v, ir.FloatType())
        return types.float32(i), codegen


@intrinsic
def _to_float(typingctx, i):
    if isinstance(i, types.Integer):
        def codegen(context, builder, sig, args):
            if sig.args[0].signed:
                return builder.sitofp(args[0], ir.FloatType())
            return builder.uitofp(args[0], ir.FloatType())
        return types.float32(i), codegen


@intrinsic
def _to_int(typingctx, x):
    if isinstance(x, types.Float):
        def codegen(context, builder, sig, args):
            return builder.fptosi(args[0], ir.IntType(32))
        return types.int32(x), codegen


@intrinsic
def _floor(typingctx, x):
    if isinstance(x, types.Float):
        def codegen(context, builder, sig, args):
            fn = builder.module.declare_intrinsic("llvm.floor", [args[0].type])
            return builder.call(fn, [args[0]])
        return x(x), codegen


@intrinsic
def _f32(typingctx, x):
    if isinstance(x, types.Float):
        def codegen(context, builder, sig, args):
            v = args[0]
            return v if sig.args[0].bitwidth == 32 else builder.fptrunc(v, ir.FloatType())
        return types.float32(x), codegen
    if isinstance(x, (types.Integer, types.Boolean)):
        def codegen(context, builder, sig, args):
            t = sig.args[0]
            if isinstance(t, types.Integer) and t.signed:
                return builder.sitofp(args[0], ir.FloatType())
            return builder.uitofp(args[0], ir.FloatType())
        return types.float32(x), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    if all(isinstance(v, types.Float) and v.bitwidth == 32 for v in (a, b, c)):
        def codegen(context, builder, sig, args):
            t = args[0].type
            fn = builder.module.declare_intrinsic("llvm.fma", [t], ir.FunctionType(t, [t, t, t]))
            return builder.call(fn, list(args))
        return types.float32(a, b, c), codegen


_PRIMITIVES = {"_fma": _fma, "_f32": _f32, "_bits": _bits, "_from_bits": _from_bits, "_to_float": _to_float,
               "_to_int": _to_int, "_floor": _floor}


# ---- LLVM-level inlining ------------------------------------------------------------------------
def _mark_always_inline(library):
    """Give the functions of a compiled library LLVM's `alwaysinline` in the module that callers
    link: a kernel then inlines them (keeping their own fast-math flags) whatever their size, and
    can vectorise its loop. Without it LLVM's inliner keeps large ones (erf, gelu) as calls, and a
    loop with a call stays scalar (~40x slower)."""
    mod = library._get_module_for_linking()
    for fn in mod.functions:
        if fn.is_declaration or fn.name.startswith("cpython."):
            continue
        attrs = b" ".join(fn.attributes)
        if b"noinline" not in attrs and b"alwaysinline" not in attrs:
            fn.add_function_attribute("alwaysinline")


def _always_inline_at_link(d):
    """Mark every overload of dispatcher d (compiled or loaded from the disk cache) as it is added,
    before any kernel links it (numba's Dispatcher.add_overload is the one door for both)."""
    add = d.add_overload

    def add_overload(cres):
        _mark_always_inline(cres.library)
        return add(cres)
    d.add_overload = add_overload


# ---- compile mathlib over a float32 globals table ----------------------------------------------
def _source_file():
    """The copy of mathlib.py whose path keys numba's cache for these functions (see above)."""
    with open(_ml.__file__, encoding="utf-8") as f:
        src = f.read()
    path = os.path.join(_rt.cache_dir(), "jit_math_%s.py" % _rt._mathlib_hash()[:16])
    if not os.path.exists(path):
        _rt._write_atomic(path, src)
    return path


def _build(inline=INLINE, flags=None):
    """Compile every mathlib function; returns {name: dispatcher}. `inline`/`flags` other than the
    defaults are for benchmarks (they compile without a disk cache: numba's cache key would not
    tell the variants apart)."""
    flags = MATH_FLAGS if flags is None else dict(flags, cache=False)
    g = {"__name__": __name__, "__builtins__": __builtins__}
    funcs = []
    for name, v in vars(_ml).items():
        if name.startswith("__"):
            continue
        if isinstance(v, bool):
            continue
        if isinstance(v, float):
            g[name] = np.float32(v)
        elif isinstance(v, int):
            g[name] = v
        elif isinstance(v, _pytypes.FunctionType) and v.__module__ == _ml.__name__:
            funcs.append((name, v))
    g.update(_PRIMITIVES)
    src = _source_file()
    out = {}
    for name, f in funcs:
        if name in _PRIMITIVES:
            continue
        code = f.__code__.replace(co_filename=src)
        clone = _pytypes.FunctionType(code, g, name, f.__defaults__, f.__closure__)
        clone.__qualname__ = f.__qualname__
        clone.__doc__ = f.__doc__
        clone.__module__ = g["__name__"]
        # calls between mathlib functions go to an inline="always" twin: inlined at numba's IR
        # level into the calling math function (under MATH_FLAGS, the caller's), so compiling
        # tanh_f32 is one compilation, not four (tanh, expm1, _expm1_poly, _pow2)
        g[name] = numba.njit(inline="always", **dict(flags, cache=False))(clone)
        if name in _ml.__all__:
            d = numba.njit(inline=inline, **flags)(clone)
            if inline == "never":
                _always_inline_at_link(d)
            out[name] = d
    return out


_compiled = _build()
globals().update({n: _compiled[n] for n in _ml.__all__})
__all__ = list(_ml.__all__)


def variant(inline=INLINE, flags=None):
    """A module object holding the functions compiled with other options (benchmarks: a kernel
    written against `m.tanh_f32` can take this module as `m`)."""
    mod = _pytypes.ModuleType("ember._inductor.jit_math_variant")
    for name, d in _build(inline, flags if flags is not None else MATH_FLAGS).items():
        setattr(mod, name, d)
    return mod


def dispatchers():
    """Every numba dispatcher of this module (runtime.numba_counts sums their cache statistics)."""
    return list(_compiled.values())
