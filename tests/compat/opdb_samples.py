"""Run every resolved op_db OpInfo's sample inputs through torch and ember and compare (a plain script).

    python tests/compat/opdb_samples.py [--only name1,name2] [--list-failures] [--max-samples N]
                                        [--no-grad] [--timeout S]

For each OpInfo in torch.testing._internal.common_methods_invocations.op_db whose name ember resolves
(the lookup of tests/compat/opdb_coverage.py, imported from there):

- values: `sample_inputs('cpu', float32)` (an OpInfo without float32 on the CPU: complex64, else its
  first integer or bool dtype); each SampleInput (tensors anywhere in nested lists, tuples and dicts,
  sparse COO/CSR ones too; torch dtypes, devices, layouts, memory formats, parameterless nn modules and
  lambdas) is mirrored in ember (same strides and storage offset) and the ember op is called the way
  the OpInfo calls torch's: the resolved ember callable with the same arguments; a method
  (`torch.Tensor.__radd__`, `.cdouble`) as ember.Tensor's method; an OpInfo `op` that is a lambda
  (`lambda x, shape: x.view(shape)`, `wrapper_set_seed(torch.randn, ...)`) is the same code object run
  with `torch` bound to ember (and wrapper_set_seed seeding ember with torch's 42). Results must agree
  in structure, dtype, shape and values: torch.testing.assert_close's float32 tolerances (rtol 1.3e-6,
  atol 1e-5, equal NaNs), or the larger ones the OpInfo itself declares for float32 on the CPU in
  TestCommon (toleranceOverride). Where the raw results differ and the sample made with
  requires_grad=True has an `output_process_fn_grad` (the gauge-invariant part of svd, eigh, qr ...),
  the processed results are compared instead. A sample torch rejects must be rejected by ember too.
- gradients (OpInfos with autograd on the CPU): `sample_inputs('cpu', float64, requires_grad=True)`
  (complex128 for the complex-only ones); the outputs that require grad (after output_process_fn_grad)
  are pulled back with a fixed random cotangent in both libraries and the input gradients compared
  (rtol 1e-7, atol 1e-7). Where the OpInfo marks torch's own gradcheck an expected failure
  (as_strided_scatter) and the two differ, ember's gradient is checked by central differences instead.
  An output torch records and ember does not is its own category, split by whether torch's gradient
  through it is zero.
- random ops (aten tag nondeterministic_seeded, or an OpInfo op wrapped in wrapper_set_seed) and the
  uninitialised factories (empty*, new_empty*) pass on structure, dtype and shape; the script also counts
  the ones whose values equal torch's under the same seed.

Each sample runs under a SIGALRM guard (--timeout, 5 s): a sample that takes longer is skipped and
counted. Failures are classified (exception type, dtype, shape, values, tolerance: values that agree at
100x the tolerance, structure, grad categories, harness: what the script cannot mirror). Prints one line
per OpInfo and the totals; needs torch and `expecttest` (pip install expecttest).
"""
import argparse
import collections
import os
import signal
import sys
import time
import types
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ember  # noqa: E402
from ember.dispatch.library import OpOverloadPacket  # noqa: E402
from tests.compat.opdb_coverage import _inplace_method, resolve  # noqa: E402
from tests.harness import check  # noqa: E402

VALUE_DTYPES = (torch.float32, torch.complex64, torch.int64, torch.int32, torch.uint8, torch.bool)
UNINITIALISED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted"}


class Harness(Exception):
    """The harness cannot mirror this sample (not an ember failure)."""


class SampleTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise SampleTimeout()


# --- mirroring torch values in ember -------------------------------------------------------------

def _edtype(dt):
    return getattr(ember, str(dt).split(".")[1])


def to_ember(x):
    if isinstance(x, torch.Tensor):
        return _tensor(x)
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_ember(y) for y in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_ember(y) for y in x)
    if isinstance(x, dict):
        return {k: to_ember(v) for k, v in x.items()}
    if isinstance(x, torch.dtype):
        return _edtype(x)
    if isinstance(x, torch.device):
        return ember.device(str(x))
    if isinstance(x, (torch.layout, torch.memory_format)):
        e = getattr(ember, str(x).split(".")[1], None)
        if e is None:
            raise Harness(f"no ember counterpart for {x}")
        return e
    if isinstance(x, torch.Generator):
        raise Harness("torch.Generator argument")
    if isinstance(x, torch.nn.Module):
        return _module(x)
    if isinstance(x, types.FunctionType) and x.__name__ == "<lambda>":
        return _rebind(x)
    if callable(x) and str(getattr(x, "__module__", None)).startswith("torch"):
        raise Harness(f"torch callable argument {x!r}")
    return x


def _module(m):
    """ember's instance of a parameterless torch.nn module (PairwiseDistance(), ...), same attributes."""
    cls = getattr(ember.nn, type(m).__name__, None)
    if cls is None or list(m.parameters()) or list(m.buffers()):
        raise Harness(f"torch module argument {m!r}")
    e = cls.__new__(cls)
    ember.nn.Module.__init__(e)
    for k, v in vars(m).items():
        if not k.startswith("_"):
            setattr(e, k, v)
    return e


def _tensor(t):
    """An ember tensor over a copy of t's storage, viewed with t's sizes, strides and offset."""
    if t.layout != torch.strided:
        conv = _SPARSE_TO.get(t.layout)
        if conv is None:
            raise Harness(f"{t.layout} input")
        e = getattr(_tensor(t.detach().to_dense()), conv)()
        return e.requires_grad_() if t.requires_grad else e
    if t.device.type != "cpu":
        raise Harness(f"{t.device} input")
    d = t.detach()
    if d.is_conj() or d.is_neg() or d._is_zerotensor():
        d = d.resolve_conj().resolve_neg().clone() if not d._is_zerotensor() else torch.zeros_like(d)
    n = d.untyped_storage().nbytes() // max(d.element_size(), 1)
    flat = torch.empty(0, dtype=d.dtype).set_(d.untyped_storage(), 0, (n,), (1,))
    if d.dtype == torch.bfloat16:
        base = ember.from_numpy(flat.float().numpy().copy()).to(ember.bfloat16)
    elif d.dtype == torch.complex32:  # no NumPy dtype: through complex64 (exact both ways)
        base = ember.from_numpy(flat.to(torch.complex64).numpy().copy()).to(ember.complex32)
    else:
        base = ember.from_numpy(flat.numpy().copy())
    e = base.as_strided(tuple(d.shape), d.stride(), d.storage_offset()).detach()
    if t.requires_grad:
        e.requires_grad_(True)
    return e


_SPARSE_TO = {torch.sparse_coo: "to_sparse", torch.sparse_csr: "to_sparse_csr"}


def _tensors(x):
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in _tensors(y)]
    if isinstance(x, dict):
        return [t for y in x.values() for t in _tensors(y)]
    return []


# --- how the OpInfo calls torch, in ember ---------------------------------------------------------

def _wrapper_set_seed(op, *args, **kwargs):
    """torch's wrapper_set_seed in ember: seed 42 for the call, the generator's state kept around it (ember's
    CPU generator is torch's mt19937, so the draws can be compared too)."""
    state = ember.get_rng_state()
    ember.manual_seed(42)
    try:
        return op(*args, **kwargs)
    finally:
        ember.set_rng_state(state)


_TEST_MODULE = "torch.testing._internal.common_methods_invocations"


def _is_lambda(f):
    return isinstance(f, types.FunctionType) and f.__name__ == "<lambda>"


def _rebind(f):
    """The function `f` (a lambda of torch's test code) with its globals `torch` -> ember."""
    g = dict(f.__globals__)
    g["torch"] = ember
    g["wrapper_set_seed"] = _wrapper_set_seed
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)


def resolves(op):
    """opdb_coverage's test: the name (or aten_name, or the random samplers' in-place method) resolves."""
    aten = getattr(op, "aten_name", None)
    inplace = _inplace_method(op)
    return resolve(op.name) is not None or (aten and resolve(aten) is not None) or \
        bool(inplace and getattr(ember.Tensor, inplace, None) is not None)


def ember_callable(op):
    """(callable, how) for the OpInfo, or (None, why). Only names opdb_coverage resolves are run."""
    f = op.op
    if not resolves(op):
        return None, "unresolved"
    if _is_lambda(f) or (isinstance(f, types.FunctionType) and f.__module__ == _TEST_MODULE):
        return _rebind(f), "lambda"  # a function of torch's test code (max_pool2d_backward) is run the same way
    if isinstance(f, (types.MethodDescriptorType, types.WrapperDescriptorType)) or \
            getattr(f, "__module__", None) == "torch._tensor":
        m = getattr(ember.Tensor, f.__name__, None)
        if m is not None:
            return m, "method"
    for name in (op.name, getattr(op, "aten_name", None)):
        if name:
            obj = resolve(name)
            if obj is not None and callable(obj) and not isinstance(obj, ember.dtype):
                overload = getattr(f, "_overloadname", None)  # op is torch.ops.aten.slice.Tensor: the same overload
                if overload is not None and isinstance(obj, OpOverloadPacket):
                    obj = getattr(obj, overload)
                return obj, "name"
    inplace = _inplace_method(op)
    if inplace and getattr(ember.Tensor, inplace, None) is not None:
        return getattr(ember.Tensor, inplace), "inplace"
    return None, "unresolved"


def is_random(op):
    if op.name in UNINITIALISED:
        return True
    code = getattr(op.op, "__code__", None)
    if code is not None and "wrapper_set_seed" in code.co_names and op.name != "item":
        return True
    pkt = getattr(torch.ops.aten, getattr(op, "aten_name", None) or op.name.split(".")[-1], None)
    try:
        return any(torch.Tag.nondeterministic_seeded in pkt[o].tags for o in pkt.overloads())
    except Exception:  # noqa: BLE001 - not an aten op packet
        return False


def _processed(fn, out, lib):
    if fn is None:
        return out
    if lib is ember and isinstance(fn, types.FunctionType):
        fn = _rebind(fn)
    return fn(out)


def _identity(fn):
    """fn is SampleInput's default output_process_fn_grad, `lambda x: x`."""
    if fn is None:
        return True
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_code == _IDENTITY.co_code and not code.co_names and \
        code.co_argcount == 1


_IDENTITY = (lambda x: x).__code__


# --- comparing ----------------------------------------------------------------------------------

def _shape_only(e, t):
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"expected Tensor, got {type(e).__name__}"
        assert e.dtype.name == str(t.dtype).replace("torch.", ""), f"dtype {e.dtype} != {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), f"shape {tuple(e.shape)} != {tuple(t.shape)}"
    elif isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t), "structure"
        for a, b in zip(e, t):
            _shape_only(a, b)


def _classify_assert(msg):
    m = str(msg)
    for key, cat in (("dtype", "dtype"), ("shape", "shape"), ("expected Tensor", "structure"),
                     ("expected sequence", "structure"), ("length", "structure"), ("structure", "structure"),
                     ("type ", "structure"), ("Size", "structure"), ("layout", "layout")):
        if m.startswith(key) or f" {key}" in m[:20]:
            return cat
    return "values"


def _dense(e, t):
    """(e, t) with sparse results turned dense once their layouts are found equal."""
    if isinstance(t, torch.Tensor) and t.layout != torch.strided:
        assert isinstance(e, ember.Tensor), f"expected Tensor, got {type(e).__name__}"
        assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1], f"layout {e.layout} != {t.layout}"
        return e.to_dense(), t.to_dense()
    if isinstance(t, (list, tuple)) and isinstance(e, (list, tuple)) and len(e) == len(t):
        pairs = [_dense(a, b) for a, b in zip(e, t)]
        return [a for a, _ in pairs], [b for _, b in pairs]
    return e, t


def compare(e, t, random, atol=None, rtol=None, loose=True):
    """None when e matches t, else a category."""
    try:
        e, t = _dense(e, t)
        if random:
            _shape_only(e, t)
        else:
            check(e, t, atol=atol, rtol=rtol)
        return None
    except AssertionError as err:
        cat = _classify_assert(err)
        if cat == "values" and loose and not random:
            try:
                check(e, t, atol=(atol or 1e-5) * 100, rtol=(rtol or 1.3e-6) * 100)
                return "tolerance"
            except AssertionError:
                pass
        return cat


# --- running ------------------------------------------------------------------------------------

def _guarded(fn, timeout):
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


_DETAIL = {}


def _exc_cat(side, err):
    """The category of an exception ember raised; its message is kept for --list-failures."""
    _DETAIL["last"] = str(err).split("\n")[0][:200]
    return f"{side} {type(err).__name__}"


def op_tolerance(op, dtype):
    """(atol, rtol): the largest `toleranceOverride` the OpInfo declares for `dtype` on the CPU (or on every
    device) in TestCommon's comparisons of an op with itself or with a reference; None where it declares none."""
    from torch.testing._internal.common_device_type import toleranceOverride
    best = None
    for d in op.decorators:
        if getattr(d, "cls_name", None) not in (None, "TestCommon") or \
                getattr(d, "device_type", None) not in (None, "cpu"):
            continue
        for dec in getattr(d, "decorators", [d]):
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                t = dec.d[dtype]
                best = (max(t.atol, best[0]), max(t.rtol, best[1])) if best else (t.atol, t.rtol)
    if best is None:
        return None
    default = {torch.float32: (1e-5, 1.3e-6), torch.complex64: (1e-5, 1.3e-6)}.get(dtype, (1e-7, 1e-7))
    return max(best[0], default[0]), max(best[1], default[1])


def _to64(x):
    if isinstance(x, torch.Tensor):
        return x.double() if x.dtype == torch.float32 else x.cdouble() if x.dtype == torch.complex64 else x
    if isinstance(x, (list, tuple)):
        return type(x)(_to64(v) for v in x)
    if isinstance(x, dict):
        return {k: _to64(v) for k, v in x.items()}
    return x


def _closer_to_float64(op, s, e, t):
    """Whether ember's float32 result is nearer torch's float64 one (the sample's float32 tensors cast)
    than torch's own float32 result is: a rounding difference in ember's favour, still a failure."""
    try:
        r = op.op(_to64(s.input), *_to64(s.args), **_to64(s.kwargs))
        e, t = _dense(e, t)
        es = e if isinstance(e, (list, tuple)) else [e]
        ts = t if isinstance(t, (list, tuple)) else [t]
        rs = r if isinstance(r, (list, tuple)) else [r]
        de = max(float((torch.as_tensor(np.asarray(a.numpy())).double() - c.double()).abs().max())
                 for a, c in zip(es, rs))
        dt = max(float((b.double() - c.double()).abs().max()) for b, c in zip(ts, rs))
        return de <= dt
    except Exception:  # noqa: BLE001 - no float64 result to compare with
        return False


def run_value_sample(op, efn, s, random, timeout, tol=None, process=None):
    """None (pass), 'skip:<why>' or a failure category. `process()` gives the output_process_fn_grad of
    the same sample made with requires_grad=True (samples without grad carry none)."""
    def body():
        try:
            ein, eargs, ekw = to_ember(s.input), to_ember(s.args), to_ember(s.kwargs)
        except Harness as h:
            return f"harness: {h}"
        try:
            t = op.op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 - an error sample: ember must reject it as well
            try:
                efn(ein, *eargs, **ekw)
            except Exception:  # noqa: BLE001
                return None
            return "accepts what torch rejects"
        try:
            e = efn(ein, *eargs, **ekw)
        except Harness as h:
            return f"harness: {h}"
        except Exception as err:  # noqa: BLE001
            return _exc_cat("raises", err)
        cat = compare(e, t, random)
        if random and cat is None:
            _DETAIL["random_equal"] = compare(e, t, False) is None
        if cat == "tolerance" and tol is not None and compare(e, t, random, atol=tol[0], rtol=tol[1]) is None:
            _DETAIL["note"] = "OpInfo tolerance"
            return None
        if cat == "tolerance" and _closer_to_float64(op, s, e, t):
            cat = "tolerance, ember closer to float64 than torch's float32"
        proc = s.output_process_fn_grad
        if cat in ("values", "tolerance") and _identity(proc) and process is not None:
            proc = process()
        if cat in ("values", "tolerance") and not _identity(proc):
            try:
                if compare(_processed(proc, e, ember), _processed(proc, t, torch), random) is None:
                    _DETAIL["note"] = "output_process_fn_grad"
                    return None
            except Exception:  # noqa: BLE001 - the processing function does not run on ember's result
                pass
        return cat
    return _guarded(body, timeout)


def known_bad_torch_grad(op):
    """The OpInfo marks torch's own gradcheck (TestBwdGradients.test_fn_grad) as an expected failure."""
    for d in op.decorators:
        if getattr(d, "cls_name", None) == "TestBwdGradients" and \
                getattr(d, "test_name", None) in (None, "test_fn_grad") and \
                getattr(d, "device_type", None) in (None, "cpu") and \
                any(getattr(x, "__name__", "") == "expectedFailure" for x in getattr(d, "decorators", ())):
            return True
    return False


def _numerical_check(efn, ein, eargs, ekw, eins, eg, tg, process, positions, gs, eps=1e-6):
    """ember's gradients `eg` of L = sum(Re(conj(g) * out)) over the outputs at `positions` (after
    `process`) against central differences, for each input where ember's and torch's (`tg`) differ;
    complex inputs are perturbed in their real and imaginary parts (torch's convention:
    dL/dre + i dL/dim)."""
    def f():
        with ember.no_grad():
            outs = _tensors(_processed(process, efn(ein, *eargs, **ekw), ember))
        total = 0.0
        for i, g in zip(positions, gs):
            o, ge = outs[i], to_ember(g)
            if o.is_complex():
                total += float((o.real.double() * ge.real + o.imag.double() * ge.imag).sum())
            else:
                total += float((o.double() * ge).sum())
        return total

    def diff(xd, j, step):
        old = xd[j].item()
        xd[j] = old + step
        hi = f()
        xd[j] = old - step
        lo = f()
        xd[j] = old
        return (hi - lo) / (2 * eps)

    for x, g, t in zip(eins, eg, tg):
        if _compare_grads([g], [t], False) is None:
            continue
        if x.numel() > 400:
            return "skip:too large for finite differences"
        xd = x.detach()  # a view of x's storage: perturbed in place, element by element
        idxs = list(np.ndindex(*tuple(x.shape)))
        num = np.zeros(len(idxs), np.complex128 if x.is_complex() else np.float64)
        with ember.no_grad():
            for k, j in enumerate(idxs):
                num[k] = diff(xd, j, eps)
                if x.is_complex():
                    num[k] += 1j * diff(xd, j, 1j * eps)
        got = np.zeros(len(idxs)) if g is None else g.detach().numpy().reshape(-1)
        if not np.allclose(got, num, rtol=1e-4, atol=1e-5):
            return "grad: values (checked by finite differences)"
    return None


def run_grad_sample(op, efn, s, random, timeout, seed):
    def body():
        try:
            ein, eargs, ekw = to_ember(s.input), to_ember(s.args), to_ember(s.kwargs)
        except Harness as h:
            return f"harness: {h}"
        tins = [x for x in _tensors((s.input, s.args, s.kwargs)) if x.requires_grad]
        eins = [x for x in _tensors((ein, eargs, ekw)) if x.requires_grad]
        if not tins:
            return "skip:no input requires grad"
        try:
            t = op.op(s.input, *s.args, **s.kwargs)
            t = _processed(s.output_process_fn_grad, t, torch)
            touts = [o for o in _tensors(t) if o.requires_grad]
        except Exception:  # noqa: BLE001 - torch rejects the sample: not a gradient case
            return "skip:torch raises"
        if not touts:
            return "skip:no output requires grad"
        try:
            e = efn(ein, *eargs, **ekw)
        except Harness as h:
            return f"harness: {h}"
        except Exception as err:  # noqa: BLE001
            return _exc_cat("grad: forward raises", err)
        try:
            e = _processed(s.output_process_fn_grad, e, ember)
        except Exception:  # noqa: BLE001
            return "harness: output_process_fn_grad"
        eall, tall = _tensors(e), _tensors(t)
        if len(eall) != len(tall):
            return "grad: structure"
        positions = [i for i, b in enumerate(tall) if b.requires_grad]
        pairs = [(eall[i], tall[i]) for i in positions]
        gen = torch.Generator().manual_seed(seed)
        gs = [torch.randn(b.shape, dtype=b.dtype, generator=gen) for _, b in pairs]
        flag_only = None
        if any(not a.requires_grad for a, _ in pairs):
            # outputs torch records and ember does not: only a requires_grad difference where torch's
            # gradient through them is zero; the gradients through the others are compared
            off = [(b, g) for (a, b), g in zip(pairs, gs) if not a.requires_grad]
            try:
                tz = torch.autograd.grad([b for b, _ in off], tins, [g for _, g in off], allow_unused=True,
                                         retain_graph=True)
            except Exception:  # noqa: BLE001
                return "skip:torch backward raises"
            if not all(g is None or not g.abs().sum().item() for g in tz):
                return "grad: output does not require grad"
            flag_only = "grad: output does not require grad (torch's gradient through it is zero)"
            keep = [i for i, (a, _) in enumerate(pairs) if a.requires_grad]
            pairs, gs, positions = [pairs[i] for i in keep], [gs[i] for i in keep], [positions[i] for i in keep]
            if not pairs:
                return flag_only
        try:
            tg = torch.autograd.grad([b for _, b in pairs], tins, gs, allow_unused=True)
        except Exception:  # noqa: BLE001
            return "skip:torch backward raises"
        try:
            eg = ember.autograd.grad([a for a, _ in pairs], eins, [to_ember(g) for g in gs], allow_unused=True)
        except Exception as err:  # noqa: BLE001
            return _exc_cat("grad: backward raises", err)
        r = _compare_grads(eg, tg, random)
        if r is None and flag_only:
            return flag_only
        if r is not None and known_bad_torch_grad(op):
            # torch's own backward fails its gradcheck for this OpInfo (as_strided_scatter's is wrong):
            # check ember's against finite differences instead of against torch's
            return _numerical_check(efn, ein, eargs, ekw, eins, eg, tg, s.output_process_fn_grad, positions, gs)
        return r
    return _guarded(body, timeout)


def _compare_grads(eg, tg, random):
    for a, b in zip(eg, tg):
        if b is None:
            if a is not None and a.abs().sum().item():
                return "grad: nonzero where torch has none"
            continue
        if a is None:
            if b.abs().sum().item():
                return "grad: missing"
            continue
        cat = compare(a, b, random, atol=1e-7, rtol=1e-7)
        if cat is not None:
            return f"grad: {cat}"
    return None


def value_dtype(op):
    """float32, or the dtype an OpInfo that does not take float32 is tested in (complex64, int64, ...)."""
    dts = op.supported_dtypes("cpu")
    return next((d for d in VALUE_DTYPES if d in dts), None)


def grad_dtype(op):
    """float64 (complex128 for the complex-only ops) where the OpInfo supports autograd on the CPU."""
    if not op.supports_autograd:
        return None
    dts = op.supported_backward_dtypes("cpu")
    return next((d for d in (torch.float64, torch.complex128) if d in dts), None)


_PROCESS = {}


def _grad_process(op, dtype, i):
    """The i-th requires_grad sample's output_process_fn_grad (torch seeded as for the value samples)."""
    key = (op.name, op.variant_test_name, dtype)
    if key not in _PROCESS:
        state = torch.get_rng_state()
        torch.manual_seed(0)
        try:
            _PROCESS[key] = [s.output_process_fn_grad for s in op.sample_inputs("cpu", dtype, requires_grad=True)]
        except Exception:  # noqa: BLE001
            _PROCESS[key] = []
        torch.set_rng_state(state)
    fns = _PROCESS[key]
    return fns[i] if i < len(fns) else None


def run_op(op, efn, args):
    random = is_random(op)
    res = {"values": collections.Counter(), "grads": collections.Counter(), "vfail": [], "gfail": []}

    def loop(dtype, grad):
        torch.manual_seed(0)
        key, fails = ("grads", res["gfail"]) if grad else ("values", res["vfail"])
        try:
            samples = op.sample_inputs("cpu", dtype, requires_grad=grad)
            for i, s in enumerate(samples):
                if args.max_samples and i >= args.max_samples:
                    break
                t0 = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        r = run_grad_sample(op, efn, s, random, args.timeout, i) if grad else \
                            run_value_sample(op, efn, s, random, args.timeout, op_tolerance(op, dtype),
                                             lambda i=i: _grad_process(op, dtype, i))
                except SampleTimeout:
                    r = "skip:timeout"
                except Exception as err:  # noqa: BLE001 - an error of the harness itself
                    r = f"harness: {type(err).__name__}"
                detail = _DETAIL.pop("last", "")
                if _DETAIL.pop("random_equal", False):
                    res[key]["random values equal"] += 1
                note = _DETAIL.pop("note", None)
                if note and r is None:
                    res[key]["note:" + note] += 1
                if r is None:
                    res[key]["pass"] += 1
                elif r.startswith("skip:"):
                    res[key][r] += 1
                else:
                    res[key]["fail"] += 1
                    fails.append((i, r, detail, time.perf_counter() - t0, s))
        except SampleTimeout:
            res[key]["skip:timeout"] += 1
        except Exception as err:  # noqa: BLE001 - torch's sample generator failed
            res[key]["skip:samples raise " + type(err).__name__] += 1

    loop(value_dtype(op), False)
    if grad_dtype(op) is not None and not args.no_grad:
        loop(grad_dtype(op), True)
    return res, random


def _cat(fails):
    c = collections.Counter(r for _, r, _, _, _ in fails)
    return c.most_common(1)[0][0] if c else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None, help="comma-separated OpInfo names")
    ap.add_argument("--list-failures", action="store_true", help="print each failing sample")
    ap.add_argument("--max-samples", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--no-grad", action="store_true")
    args = ap.parse_args()

    from torch.testing._internal.common_methods_invocations import op_db
    signal.signal(signal.SIGALRM, _alarm)
    torch.set_num_threads(1)

    only = set(args.only.split(",")) if args.only else None
    ops = [op for op in op_db if only is None or op.name in only]
    names = sorted({op.name for op in op_db})
    per_name_v, per_name_g = {}, {}
    v_cats, g_cats = collections.Counter(), collections.Counter()
    v_fail_ops, g_fail_ops = collections.defaultdict(list), collections.defaultdict(list)
    unresolved, no_cpu, t_start = set(), [], time.perf_counter()
    n_ops = n_vpass = n_gpass = n_grad_ops = n_timeouts = n_random_equal = 0
    randoms, noted = [], collections.defaultdict(list)
    for op in ops:
        full = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        efn, how = ember_callable(op)
        if efn is None:
            unresolved.add(op.name)
            continue
        if value_dtype(op) is None:
            no_cpu.append(full)
            continue
        n_ops += 1
        t0 = time.perf_counter()
        res, random = run_op(op, efn, args)
        dt = time.perf_counter() - t0
        v, g = res["values"], res["grads"]
        vok = v["fail"] == 0 and v["pass"] > 0
        grad_applicable = grad_dtype(op) is not None and not args.no_grad
        gok = g["fail"] == 0 and g["pass"] > 0
        n_vpass += vok
        per_name_v[op.name] = per_name_v.get(op.name, True) and vok
        if grad_applicable:
            n_grad_ops += 1
            n_gpass += gok
            per_name_g[op.name] = per_name_g.get(op.name, True) and gok
        n_timeouts += bool(v["skip:timeout"] or g["skip:timeout"])
        for k in v:
            if k.startswith("note:") and vok:
                noted[k[5:]].append(full)
        if random:
            randoms.append(full)
            n_random_equal += vok and v["random values equal"] == v["pass"]
        vc, gc = _cat(res["vfail"]), _cat(res["gfail"])
        if vc:
            v_cats[vc] += 1
            v_fail_ops[vc].append(full)
        elif not vok:
            v_cats["no sample ran"] += 1
            v_fail_ops["no sample ran"].append(full)
        if grad_applicable:
            if gc:
                g_cats[gc] += 1
                g_fail_ops[gc].append(full)
            elif not gok:
                g_cats["no grad sample ran"] += 1
                g_fail_ops["no grad sample ran"].append(full)
        skips = {k[5:]: n for k, n in list(v.items()) + list(g.items()) if k.startswith("skip:")}
        print(f"{'PASS' if vok else 'FAIL'} {'PASS' if gok else ('FAIL' if grad_applicable else ' -- ')} {full:45s} "
              f"values {v['pass']}/{v['pass'] + v['fail']}"
              + (f" grads {g['pass']}/{g['pass'] + g['fail']}" if grad_applicable else "")
              + (f" [shape/dtype only; values equal torch's in {v['random values equal']}]" if random else "") + (f" via {how}" if how != "name" else "")
              + (f" {vc}" if vc else "") + (f" | {gc}" if gc and gc != vc else "")
              + (f" skipped {skips}" if skips else "") + f" ({dt:.1f}s)", flush=True)
        if args.list_failures:
            for i, r, detail, st, s in res["vfail"][:5] + res["gfail"][:5]:
                print(f"      sample {i}: {r}{': ' + detail if detail else ''} ({st:.2f}s) "
                      f"{s.summary() if hasattr(s, 'summary') else s}"[:500])

    print()
    print(f"op_db: {len(op_db)} OpInfos, {len(names)} names; run here: {n_ops} OpInfos "
          f"({len(set(per_name_v))} names); not resolved: {len(unresolved)} names; "
          f"{time.perf_counter() - t_start:.0f}s")
    if no_cpu:
        print(f"OpInfos with no CPU dtypes (not run): {', '.join(no_cpu)}")
    print(f"float32 values, all samples pass: {n_vpass}/{n_ops} OpInfos, "
          f"{sum(per_name_v.values())}/{len(per_name_v)} names")
    print(f"float64 gradients, all samples pass: {n_gpass}/{n_grad_ops} OpInfos with autograd, "
          f"{sum(per_name_g.values())}/{len(per_name_g)} names")
    print(f"random or uninitialised OpInfos (shape/dtype compared): {len(randoms)}; of these, every sample's "
          f"values equal torch's (same seed): {n_random_equal}")
    for k, names_ in noted.items():
        print(f"passing OpInfos with a sample that passes only through the {k}: {len(names_)} "
              f"({', '.join(names_)})")
    print(f"OpInfos with a sample skipped for time (> {args.timeout:g}s): {n_timeouts}")
    print("value failures by category (OpInfos, by most frequent failing-sample category):")
    for c, n in v_cats.most_common():
        print(f"  {n:4d} {c}: {', '.join(v_fail_ops[c])}")
    print("gradient failures by category:")
    for c, n in g_cats.most_common():
        print(f"  {n:4d} {c}: {', '.join(g_fail_ops[c])}")


if __name__ == "__main__":
    main()
