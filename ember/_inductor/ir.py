"""The inductor IR: what lowering produces and the scheduler groups.

V: a scalar value inside a kernel: ("load", slot) an element of a slot's tensor, ("tmp", k) the
result of the node's k-th primitive, ("const", value); dt is the NumPy dtype it has.
Prim: one primitive operation (add, mul, exp, where, cast, ...) computing in dtype dt.
Pointwise: a node as a scalar program over its loads (elementwise, with broadcasting of the loads
to `shape`); `result` is the value stored (rounded to `dtype` on store).
MatMul: mm/bmm/matmul into a planned buffer (np.matmul(out=) on the calling thread: linalg.matmul_out).
Extern: any other node, called through op.call inside the generated code.
"""


class V:
    __slots__ = ("kind", "a", "dt")

    def __init__(self, kind, a, dt):
        self.kind, self.a, self.dt = kind, a, dt

    def __repr__(self):
        return f"V({self.kind},{self.a!r},{self.dt})"


class Prim:
    __slots__ = ("name", "k", "args", "dt")

    def __init__(self, name, k, args, dt):
        self.name, self.k, self.args, self.dt = name, k, args, dt


class Meta:
    """Example-value stand-in for slots the lowering invents (a matmul's result before its bias)."""
    __slots__ = ("_shape", "_dtype", "_np")

    def __init__(self, shape, dtype, arr):
        self._shape, self._dtype, self._np = shape, dtype, arr


class Pointwise:
    kind = "pointwise"

    inplace = False   # out is a graph input written in place (lowering.lower_inplace)

    def __init__(self, out, shape, dtype, loads, prims, result, origin):
        self.out, self.shape, self.dtype = out, shape, dtype
        self.loads, self.prims, self.result, self.origin = loads, prims, result, origin

    def reads(self):
        return list(self.loads)


class MatMul:
    kind = "matmul"

    def __init__(self, out, shape, dtype, a, b, bias, origin):
        self.out, self.shape, self.dtype = out, shape, dtype
        self.a, self.b, self.bias, self.origin = a, b, bias, origin

    def reads(self):
        return [self.a, self.b] + ([self.bias] if self.bias is not None else [])


class Extern:
    kind = "extern"

    def __init__(self, node, reads, outs, writes):
        self.node, self._reads, self.outs, self.writes = node, reads, outs, writes

    def reads(self):
        return list(self._reads)


class View:
    """A view made in the call as a NumPy view expression (`a{src}{expr}`): only for values that
    kernels and matmuls read (an extern or a graph output gets the dispatcher's view instead)."""
    kind = "view"

    def __init__(self, out, shape, dtype, src, expr, origin, node):
        self.out, self.shape, self.dtype = out, shape, dtype
        self.src, self.expr, self.origin, self.node = src, expr, origin, node

    def reads(self):
        return [self.src]


class NpOp:
    """A reduction or softmax written as NumPy statements in the call into a planned buffer
    (`lines` use {o} for it and {0}, {1}... for the reads)."""
    kind = "npop"

    def __init__(self, out, shape, dtype, reads_, lines, origin):
        self.out, self.shape, self.dtype = out, shape, dtype
        self._reads, self.lines, self.origin = reads_, lines, origin
        self.row = None     # (kind, row length) for a reduction over trailing dims

    def reads(self):
        return list(self._reads)


class Step:
    """A call in the output code that is neither a kernel nor an extern (ember/_inductor/steps.py):
    `outs = fn(*args)`, each tensor argument passed as its array, except the slots in `as_tensor`,
    passed as tensors. `out_tensor`: fn returns tensors (else arrays); `writes`: it writes an
    argument in place."""
    kind = "step"

    def __init__(self, name, fn, args, outs, as_tensor, out_tensor, writes, origin):
        self.name, self.fn, self.args, self.outs = name, fn, args, outs
        self.as_tensor, self.out_tensor, self.writes, self.origin = as_tensor, out_tensor, writes, origin
        self._reads = []

        def walk(a):
            if hasattr(a, "i") and a.__class__.__name__ == "Ref":
                self._reads.append(a.i)
            elif isinstance(a, (list, tuple)):
                for e in a:
                    walk(e)
        walk(args)

    def reads(self):
        return list(self._reads)
