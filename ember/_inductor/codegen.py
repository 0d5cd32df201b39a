"""Kernel source: one fused Kernel -> a numba njit function or a NumPy function.

Both take (out0, out1, ..., in0, in1, ...) arrays: outputs have the kernel's shape and its compute
dtype (float32 for float16/bfloat16 results; the caller rounds), inputs are the loads, each of a
shape that broadcasts to the kernel's. Two loop forms:
- flat: every output and full-size input C-contiguous, the rest of one element: one loop over
  out0.size (prange when parallel), one-element inputs hoisted;
- n-d: a loop nest over the kernel's shape, each input indexed by the loop variables of its
  non-broadcast dims (numba handles any strides).
Each element's loads all happen before its stores, so an output may share memory with an input
of the same shape (in-place planning). The source names no sizes, so a new shape reuses the
cached kernel. float32 transcendentals call ember._inductor.jit_math (vectorising polynomials with
a stated error bound); float64 ones call libm through math.*.
"""
import math

import numpy as np

_NPNAME = {np.dtype(t): f"np.{np.dtype(t).name}" for t in
           (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_)}
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)
_I64 = np.dtype(np.int64)


def _const(v, dt):
    if dt == _BOOL:
        return "True" if v else "False"
    if dt.kind == "f":
        if math.isnan(v):
            r = "math.nan"
        elif math.isinf(v):
            r = "math.inf" if v > 0 else "-math.inf"
        else:
            r = repr(float(v))
        return r if dt == _F64 else f"{_NPNAME[dt]}({r})"
    return repr(int(v)) if dt == _I64 else f"{_NPNAME[dt]}({int(v)})"


_JM = {"exp": "exp_f32", "log": "log_f32", "log1p": "log1p_f32", "expm1": "expm1_f32", "tanh": "tanh_f32",
       "sigmoid": "sigmoid_f32", "erf": "erf_f32"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


# prims a numba loop without fast-math rounds exactly as NumPy's ufuncs do (IEEE operations)
EXACT_PRIMS = frozenset(_BIN) | frozenset(_CMP) | frozenset(
    ("neg", "abs", "sqrt", "recip", "maximum", "minimum", "and", "or", "not", "where", "cast"))


def exact(kernel):
    """Whether every prim of the kernel is in EXACT_PRIMS (numba's loop equals NumPy's bit for bit)."""
    return all(p.name in EXACT_PRIMS for m in kernel.members for p in m.prims)


def _scalar_expr(p, a, uses_jm):
    """numba scalar source for prim p over operand sources a."""
    n, dt = p.name, p.dt
    wrap = dt not in (_F64, _I64, _BOOL)
    if n in _BIN:
        e = f"({a[0]} {_BIN[n]} {a[1]})"
    elif n in _CMP:
        return f"({a[0]} {_CMP[n]} {a[1]})"
    elif n == "neg":
        e = f"(-{a[0]})"
    elif n == "abs":
        e = f"abs({a[0]})"
    elif n in _JM:
        if dt == _F32:
            uses_jm[0] = True
            return f"m.{_JM[n]}({a[0]})"
        if n == "sigmoid":
            return f"(1.0 / (1.0 + math.exp(-{a[0]})))"
        return f"math.{n}({a[0]})"
    elif n == "sqrt":
        e = f"math.sqrt({a[0]})"
    elif n == "rsqrt":
        e = f"({_const(1.0, dt)} / math.sqrt({a[0]}))"
    elif n == "recip":
        e = f"({_const(1.0, dt)} / {a[0]})"
    elif n == "pow":
        e = f"({a[0]} ** {a[1]})"
    elif n == "maximum":
        if dt.kind == "f":
            return f"({a[0]} if ({a[0]} > {a[1]} or {a[0]} != {a[0]}) else {a[1]})"
        return f"max({a[0]}, {a[1]})"
    elif n == "minimum":
        if dt.kind == "f":
            return f"({a[0]} if ({a[0]} < {a[1]} or {a[0]} != {a[0]}) else {a[1]})"
        return f"min({a[0]}, {a[1]})"
    elif n == "and":
        return f"({a[0]} and {a[1]})"
    elif n == "or":
        return f"({a[0]} or {a[1]})"
    elif n == "not":
        return f"(not {a[0]})"
    elif n == "where":
        return f"({a[1]} if {a[0]} else {a[2]})"
    elif n == "cast":
        if dt == _BOOL:
            return f"({a[0]} != 0)"
        return f"{_NPNAME[dt]}({a[0]})"
    else:
        raise AssertionError(n)
    return f"{_NPNAME[dt]}({e})" if wrap or n == "pow" else e


_UFUNC = {"add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide", "neg": "np.negative",
          "abs": "np.abs", "exp": "np.exp", "log": "np.log", "log1p": "np.log1p", "expm1": "np.expm1",
          "sqrt": "np.sqrt", "tanh": "np.tanh", "recip": "np.reciprocal", "pow": "np.power",
          "maximum": "np.maximum", "minimum": "np.minimum", "lt": "np.less", "le": "np.less_equal",
          "gt": "np.greater", "ge": "np.greater_equal", "eq": "np.equal", "ne": "np.not_equal",
          "and": "np.logical_and", "or": "np.logical_or", "not": "np.logical_not"}


def _array_expr(p, a):
    """NumPy array source for prim p."""
    n, dt = p.name, p.dt
    if n in _UFUNC:
        return f"{_UFUNC[n]}({', '.join(a)})"
    if n == "sigmoid":
        one = _const(1.0, dt)
        return f"({one} / ({one} + np.exp(np.negative({a[0]}))))"
    if n == "rsqrt":
        return f"({_const(1.0, dt)} / np.sqrt({a[0]}))"
    if n == "where":
        return f"np.where({a[0]}, {a[1]}, {a[2]})"
    if n == "cast":
        if dt == _BOOL:
            return f"np.not_equal({a[0]}, 0)"
        return f"np.asarray({a[0]}).astype({_NPNAME[dt]})"
    raise AssertionError(n)


def _body(kernel, load_names, render):
    """Lines computing every member; returns (lines, {slot: value source})."""
    env = {}
    lines = []
    for j, m in enumerate(kernel.members):
        names = {}

        def val(v, names=names):
            if v.kind == "load":
                return env[v.a] if v.a in env else load_names[v.a]
            if v.kind == "const":
                return _const(v.a, v.dt)
            return names[v.a]
        for p in m.prims:
            src = render(p, [val(a) for a in p.args])
            nm = f"t{j}_{p.k}"
            lines.append(f"{nm} = {src}")
            names[p.k] = nm
        env[m.out] = val(m.result)
    return lines, env


def flat_ok(kernel, in_meta, out_contig):
    """in_meta[slot] = (shape, contiguous); all outputs contiguous; full inputs contiguous."""
    if not out_contig:
        return False
    n = 1
    for d in kernel.shape:
        n *= d
    for s in kernel.ins:
        shape, contig = in_meta[s]
        size = 1
        for d in shape:
            size *= d
        if size == 1 and n != 1:
            continue
        if tuple(shape) != tuple(kernel.shape) or not contig:
            return False
    return True


_RED_INIT = {"sum": "0.0", "mean": "0.0", "max": "-math.inf", "min": "math.inf"}


def numba_source(kernel, in_meta, flat, parallel, red=None):
    nin = len(kernel.ins)
    outs = [f"out{i}" for i in range(len(kernel.outs))]
    ins = [f"in{i}" for i in range(nin)]
    uses_jm = [False]
    lines = []
    rng = "prange" if parallel else "range"
    if red is not None and red.row[0] in ("softmax", "log_softmax"):
        outs.append("red")
        ins.append("C")
        lines += _softmax_rows(kernel, in_meta, red, rng, uses_jm)
    elif red is not None:
        # flat row loop: rows of C elements, each reduced into red[r] (float64 accumulator)
        kind = red.row[0]
        outs.append("red")
        ins.append("C")
        lines += ["R = red.size", "n = R * C", "rr = red.reshape(R)"]
        load_names, loads = _row_operands(kernel, in_meta, lines)
        body, env = _body(kernel, load_names, lambda p, a: _scalar_expr(p, a, uses_jm))
        src_v = env[red.reads()[0]]
        if kind in ("sum", "mean"):
            acc = [f"acc += np.float64({src_v})"]
        elif kind == "max":
            acc = [f"w = np.float64({src_v})", "if w > acc or w != w:", "    acc = w"]
        else:
            acc = [f"w = np.float64({src_v})", "if w < acc or w != w:", "    acc = w"]
        inner = loads + body + [f"o{i}[i] = {env[s]}" for i, s in enumerate(kernel.outs)] + acc
        lines.append(f"for r in {rng}(R):")
        lines.append(f"    acc = {_RED_INIT[kind]}")
        lines.append("    for j in range(C):")
        lines.append("        i = r * C + j")
        lines += ["        " + ln for ln in inner]
        fin = "acc / C" if kind == "mean" else "acc"
        lines.append(f"    rr[r] = {_NPNAME[np.dtype(red.dtype.np)]}({fin})")
    elif flat:
        load_names, loads = _flat_operands(kernel, in_meta, len(outs), lines, "[i]")
        body, env = _body(kernel, load_names, lambda p, a: _scalar_expr(p, a, uses_jm))
        lines.append(f"for i in {rng}(n):")
        inner = loads + body + [f"o{i}[i] = {env[s]}" for i, s in enumerate(kernel.outs)]
        lines += ["    " + ln for ln in inner]
    else:
        nd = len(kernel.shape)
        idx = [f"i{d}" for d in range(nd)]
        if nd:
            lines.append(f"{', '.join(f'S{d}' for d in range(nd))}{',' if nd == 1 else ''} = out0.shape")
        load_names = {}
        loads = []
        for i, s in enumerate(kernel.ins):
            shape, _c = in_meta[s]
            off = nd - len(shape)
            ix = [("0" if shape[d] == 1 and kernel.shape[off + d] != 1 else idx[off + d]) for d in range(len(shape))]
            loads.append(f"l{i} = in{i}[{', '.join(ix) if ix else '()'}]")
            load_names[s] = f"l{i}"
        body, env = _body(kernel, load_names, lambda p, a: _scalar_expr(p, a, uses_jm))
        oix = ", ".join(idx) if idx else "()"
        inner = loads + body + [f"out{i}[{oix}] = {env[s]}" for i, s in enumerate(kernel.outs)]
        ind = ""
        for d in range(nd):
            lines.append(f"{ind}for i{d} in {rng if d == 0 else 'range'}(S{d}):")
            ind += "    "
        lines += [ind + ln for ln in inner]
    head = ["import math", "", "import numba", "import numpy as np", "from numba import prange", "",
            "from ember._inductor.runtime import NJIT_FLAGS", "",
            "# elementwise loops vectorise without fast-math (jit_math keeps its own flags), so none is",
            "# used: 'reassoc' turns eager's inf*0 = NaN into inf (x*a*b + x*c -> x*(a*b + c)), 'arcp'/'afn'",
            "# make 1/sqrt(0) NaN (an approximate rsqrt), 'contract' (fma) rounds differently from eager",
            "FLAGS = dict(NJIT_FLAGS, fastmath=False)"]
    if uses_jm[0]:
        head.append("from ember._inductor import jit_math as m")
    deco = "@numba.njit(parallel=True, **FLAGS)" if parallel else "@numba.njit(**FLAGS)"
    src = "\n".join(head) + "\n\n\n" + deco + f"\ndef kernel({', '.join(outs + ins)}):\n"
    src += "".join("    " + ln + "\n" for ln in lines)
    return src


def _row_operands(kernel, in_meta, lines):
    """A row loop's set-up over n elements: outputs and full inputs as flat views, one-element
    inputs read once (appended to lines); returns each input slot's name and the per-element loads."""
    lines += [f"o{i} = out{i}.reshape(n)" for i in range(len(kernel.outs))]
    load_names, loads = {}, []
    for i, s in enumerate(kernel.ins):
        size = 1
        for d in in_meta[s][0]:
            size *= d
        if size == 1 and kernel.shape != ():
            lines.append(f"l{i} = in{i}.ravel()[0]")
        else:
            lines.append(f"f{i} = in{i}.reshape(n)")
            loads.append(f"l{i} = f{i}[i]")
        load_names[s] = f"l{i}"
    return load_names, loads


def _softmax_rows(kernel, in_meta, red, rng, uses_jm):
    """The row loop of a kernel ending in softmax / log_softmax over rows of C elements: pass 1
    computes the kernel's values (storing its other outputs) into the result and the row's max;
    pass 2 exponentiates (x - max) and sums in float64; pass 3 divides by the sum (softmax) or
    subtracts its log (log_softmax, from the values kept in pass 2's place)."""
    log = red.row[0] == "log_softmax"
    dt = np.dtype(red.dtype.np)
    ot = _NPNAME[dt]
    lines = ["R = red.size // C", "n = R * C", "rr = red.reshape(n)"]
    load_names, loads = _row_operands(kernel, in_meta, lines)
    body, env = _body(kernel, load_names, lambda p, a: _scalar_expr(p, a, uses_jm))
    v = env[red.reads()[0]]
    if dt == _F32:
        uses_jm[0] = True
        ex = "m.exp_f32(rr[i] - mx)"
    else:
        ex = "math.exp(rr[i] - mx)"
    out = [f"for r in {rng}(R):", "    mx = -math.inf", "    for j in range(C):", "        i = r * C + j"]
    out += ["        " + ln for ln in loads + body]
    out += [f"        o{i}[i] = {env[s]}" for i, s in enumerate(kernel.outs)]
    out += [f"        w = {ot}({v})", "        rr[i] = w", "        if w > mx or w != w:", "            mx = w",
            f"    mx = {ot}(mx)", "    acc = 0.0", "    for j in range(C):", "        i = r * C + j"]
    if log:
        out += [f"        acc += np.float64({ex})", f"    ls = {ot}(math.log(acc))", "    for j in range(C):",
                "        i = r * C + j", f"        rr[i] = {ot}({ot}(rr[i] - mx) - ls)"]
    else:
        out += [f"        e = {ot}({ex})", "        rr[i] = e", "        acc += np.float64(e)",
                f"    sm = {ot}(acc)", "    for j in range(C):", "        i = r * C + j",
                f"        rr[i] = {ot}(rr[i] / sm)"]
    return lines + out


def _flat_operands(kernel, in_meta, n_outs, lines, index):
    """The flat loop's set-up, shared by the numba and NumPy generators: outputs and inputs as 1-D
    views of n elements (a one-element input read once as a scalar). Appends the set-up to lines;
    returns each input slot's name and the loads to run per element or block (`index`)."""
    lines.append("n = out0.size")
    load_names, loads, flat_in = {}, [], {}
    for i, s in enumerate(kernel.ins):
        size = 1
        for d in in_meta[s][0]:
            size *= d
        if size == 1:
            lines.append(f"l{i} = in{i}.reshape(-1)[0]")
        else:
            lines.append(f"f{i} = in{i}.reshape(n)")
            loads.append(f"l{i} = f{i}{index}")
            flat_in[s] = f"f{i}"
        load_names[s] = f"l{i}"
    for i, s in enumerate(kernel.outs[:n_outs]):
        # an output written in place over an input is stored through the input's own view: LLVM
        # then sees one pointer, not two that may alias (which keeps the loop scalar)
        lines.append(f"o{i} = {flat_in[s]}" if s in flat_in else f"o{i} = out{i}.reshape(n)")
    return load_names, loads


def numpy_source(kernel, in_meta, flat, block):
    outs = [f"out{i}" for i in range(len(kernel.outs))]
    ins = [f"in{i}" for i in range(len(kernel.ins))]
    lines = []
    load_names = {}
    if flat:
        load_names, blocked = _flat_operands(kernel, in_meta, len(outs), lines, "[s:e]")
        body, env = _body(kernel, load_names, _array_expr)
        inner = blocked + body + [f"o{i}[s:e] = {env[s]}" for i, s in enumerate(kernel.outs)]
        lines.append(f"for s in range(0, n, {block}):")
        lines.append(f"    e = min(n, s + {block})")
        lines += ["    " + ln for ln in inner]
    else:
        for i, s in enumerate(kernel.ins):
            load_names[s] = f"in{i}"
        body, env = _body(kernel, load_names, _array_expr)
        lines += body + [f"out{i}[...] = {env[s]}" for i, s in enumerate(kernel.outs)]
    src = "import math\n\nimport numpy as np\n\n\n" + f"def kernel({', '.join(outs + ins)}):\n"
    src += "".join("    " + ln + "\n" for ln in lines)
    return src
