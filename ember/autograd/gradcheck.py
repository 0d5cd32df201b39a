"""gradcheck / gradgradcheck: analytical Jacobians against central finite differences."""
import numpy as np

import ember


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_outputs(fn, inputs):
    out = _as_tuple(fn(*inputs))
    return [o for o in out if isinstance(o, ember.Tensor) and (o.is_floating_point() or o.is_complex())]


def _real_parts(t):
    """A tensor's values as one flat real NumPy vector: a complex tensor's element k gives two entries,
    its real part then its imaginary part (gradcheck compares real Jacobians, as torch's slow mode
    does through Wirtinger calculus)."""
    a = t.detach().resolve_conj().numpy().reshape(-1)
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], -1).reshape(-1)
    return np.array(a, dtype=np.float64)  # a copy: an output may be a view of the perturbed input


def _directions(t):
    """The real directions of an element of t: 1 for a real tensor; 1 and 1j for a complex one."""
    return (1.0, 1j) if t.is_complex() else (1.0,)


def _numerical(fn, inputs, i, eps):
    """Central differences: one column per real direction of each element of inputs[i] (its real and
    imaginary part for a complex input), each column the flat real parts of every output."""
    x = inputs[i]
    data = x.detach()
    cols = []
    for k in range(x.numel()):
        idx = np.unravel_index(k, tuple(x.shape)) if x.dim() else ()
        for d in _directions(x):
            with ember.no_grad():
                orig = data[idx].item() if x.dim() else data.item()
                data[idx] = orig + eps * d
            plus = [_real_parts(o) for o in _flat_outputs(fn, inputs)]
            with ember.no_grad():
                data[idx] = orig - eps * d
            minus = [_real_parts(o) for o in _flat_outputs(fn, inputs)]
            with ember.no_grad():
                data[idx] = orig
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    return cols


def _analytical(fn, inputs, i):
    """Backward passes: one row per real direction of each output element (grad_output 1, then 1j for
    a complex output: the gradients of Re(y_k) and Im(y_k)), each row the input's gradient as flat real
    parts. torch's convention makes a complex gradient dL/dRe(x) + i dL/dIm(x), so its real parts are
    exactly the row of the real Jacobian."""
    outs = _flat_outputs(fn, inputs)
    x = inputs[i]
    rows = []
    for oi, o in enumerate(outs):
        for k in range(o.numel()):
            for d in _directions(o):
                out = _flat_outputs(fn, inputs)[oi]
                if not out.requires_grad:
                    rows.append(None)
                    continue
                go = ember.zeros(tuple(o.shape), dtype=o.dtype)
                go.reshape(-1)[k] = d
                g, = ember.autograd.grad(out, x, go, allow_unused=True, retain_graph=True)
                if g is not None and x.is_complex() and not g.is_complex():
                    g = g.to(x.dtype)
                rows.append(None if g is None else _real_parts(g))
    return outs, rows


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    inputs = _as_tuple(inputs)
    for i, x in enumerate(inputs):
        if not (isinstance(x, ember.Tensor) and x.requires_grad):
            continue
        if x.dtype not in (ember.float64, ember.complex128):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or "
                          "complex. This check will likely fail if all the inputs are not of double "
                          "precision floating point or complex. ", UserWarning, stacklevel=2)
        num = _numerical(func, inputs, i, eps)
        outs, rows = _analytical(func, inputs, i)
        r = 0
        for oi, o in enumerate(outs):
            for _ in range(o.numel() * len(_directions(o))):
                arow = rows[r]
                nrow = r - sum(p.numel() * len(_directions(p)) for p in outs[:oi])
                r += 1
                for j, col in enumerate(num):
                    n = float(col[oi][nrow])
                    a = 0.0 if arow is None else float(arow[j])
                    if abs(a - n) > atol + rtol * abs(n):
                        msg = (f"Jacobian mismatch for output {oi} with respect to input {i},\n"
                               f"numerical:{n}\nanalytical:{a}\n")
                        if raise_exception:
                            raise GradcheckError(msg)
                        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **kw):
    inputs = _as_tuple(inputs)
    outs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        gen = np.random.default_rng(0)
        grad_outputs = tuple(ember.tensor(gen.standard_normal(tuple(o.shape)), dtype=o.dtype,
                                          requires_grad=True) for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    diff_in = [x for x in inputs if isinstance(x, ember.Tensor) and x.requires_grad]

    def first_grads(*args):
        xs, gos = args[:len(inputs)], args[len(inputs):]
        o = _as_tuple(func(*xs))
        dx = [x for x in xs if isinstance(x, ember.Tensor) and x.requires_grad]
        return ember.autograd.grad(o, dx, gos, create_graph=True, allow_unused=True)
    del diff_in
    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
