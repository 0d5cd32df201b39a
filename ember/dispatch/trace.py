"""ember.dispatch_trace(): watch every call go through the dispatcher's layers.

Observers cost nothing when off: cached dispatch entries are rebuilt with timing wrappers when
a trace starts and rebuilt plain when it ends, so the hot path never tests a flag.
"""
import time

from ember.core.keys import format_keyset
from ember.dispatch import operator as _op

_perf = time.perf_counter


class Layer:
    __slots__ = ("key", "kernel", "seconds", "calls")

    def __init__(self, key, kernel):
        self.key, self.kernel, self.seconds, self.calls = key, kernel, 0.0, []

    @property
    def self_seconds(self):
        return self.seconds - sum(c.seconds for c in self.calls)


class Call:
    __slots__ = ("op", "keyset", "layers", "seconds")

    def __init__(self, op, keyset):
        self.op, self.keyset, self.layers, self.seconds = op, keyset, [], 0.0


class DispatchTrace:
    """Context manager; after exit, `.calls` holds the top-level calls and str() draws them."""

    def __init__(self):
        self.calls = []
        self._stack = []  # the Layer (or trace) new calls attach to

    def __enter__(self):
        _op.observers.append(self)
        _op.invalidate()
        return self

    def __exit__(self, *exc):
        _op.observers.remove(self)
        _op.invalidate()

    # the operator builds its entries with these while a trace is on (see operator.observers);
    # the wrappers find the innermost trace when called
    @staticmethod
    def wrap_call(op, ks, entry):
        return traced_call(op, ks, entry)

    @staticmethod
    def wrap_kernel(op, key, kernel, fn):
        return traced(op, key, kernel, fn)

    # attach points
    def _sink(self):
        return self._stack[-1].calls if self._stack else self.calls

    def __str__(self):
        lines = []
        for c in self.calls:
            _draw(c, "", lines)
        return "\n".join(lines)

    def print(self):
        print(str(self))


def _draw(call, indent, lines):
    lines.append(f"{indent}{call.op.qualname}  {format_keyset(call.keyset)}  "
                 f"{call.seconds * 1e6:.1f} us")
    for i, layer in enumerate(call.layers):
        pad = indent + "  " * (i + 1)
        below = call.layers[i + 1].seconds if i + 1 < len(call.layers) else 0.0
        lines.append(f"{pad}└─ {layer.key.name:<18} {layer.kernel:<40} "
                     f"{(layer.self_seconds - below) * 1e6:8.1f} us")
        for sub in layer.calls:
            _draw(sub, pad + "     ", lines)


def traced(op, key, kernel, fn):
    name = kernel.name

    def layer(*args):
        tr = _op.observers[-1] if _op.observers else None
        call = None
        if tr is not None:
            for x in reversed(tr._stack):
                if isinstance(x, Call):
                    call = x
                    break
        if call is None:
            return fn(*args)
        rec = Layer(key, name)
        call.layers.append(rec)
        tr._stack.append(rec)
        t0 = _perf()
        try:
            return fn(*args)
        finally:
            rec.seconds = _perf() - t0
            tr._stack.pop()
    return layer


def traced_call(op, ks, entry):
    def call(*args):
        tr = _op.observers[-1] if _op.observers else None
        if tr is None:
            return entry(*args)
        rec = Call(op, ks)
        tr._sink().append(rec)
        tr._stack.append(rec)
        t0 = _perf()
        try:
            return entry(*args)
        finally:
            rec.seconds = _perf() - t0
            tr._stack.pop()
    return call


def dispatch_trace():
    return DispatchTrace()
