"""Measurements the widgets draw: dispatch traces with start times, per-layer exclusive times."""
import statistics
import time

from ember.core import keys as _keys
from ember.dispatch import trace as _trace

_perf = time.perf_counter

# the backend keys: a layer under one of these is "the kernel" (the rest is framework overhead)
_BACKENDS = frozenset({"CPU", "CUDA", "Meta", "PrivateUse1", "MPS", "XPU", "HIP", "XLA", "MTIA", "HPU",
                       "CompositeExplicitAutograd", "CompositeImplicitAutograd"})
_BACKENDS_PLAIN = frozenset({"CPU", "CUDA", "Meta", "PrivateUse1"})


class TimedCall(_trace.Call):
    """A dispatch_trace Call that also knows when it started (seconds since the trace began)."""
    __slots__ = ("start",)


class TimedTrace(_trace.DispatchTrace):
    """ember.dispatch_trace() whose calls carry start times; `mark()` / `since(i)` split the calls of
    one trace (kept open across iterations, so dispatch entries are built once, in the warmup)."""

    def __enter__(self):
        self.t0 = _perf()
        return super().__enter__()

    def wrap_call(self, op, ks, entry):
        def call(*args):
            rec = TimedCall(op, ks)
            self._sink().append(rec)
            self._stack.append(rec)
            t0 = _perf()
            rec.start = t0 - self.t0
            try:
                return entry(*args)
            finally:
                rec.seconds = _perf() - t0
                self._stack.pop()
        return call

    def mark(self):
        return len(self.calls)


def key_name(layer):
    key = layer.key
    return key.name if hasattr(key, "name") else _keys.DispatchKey(key).name


def layer_seconds(call, acc, kernel_keys=_BACKENDS_PLAIN):
    """Add one call's time, by layer, into acc (name -> seconds): "dispatch" for the front door
    (key set, table look-up, the device check), each layer's own time (less the layer below it and
    the calls it makes, which are counted by their own layers)."""
    first = call.layers[0].seconds if call.layers else 0.0
    acc["dispatch"] = acc.get("dispatch", 0.0) + max(call.seconds - first, 0.0)
    for i, layer in enumerate(call.layers):
        below = call.layers[i + 1].seconds if i + 1 < len(call.layers) else 0.0
        own = layer.seconds - below - sum(c.seconds for c in layer.calls)
        name = key_name(layer)
        acc[name] = acc.get(name, 0.0) + max(own, 0.0)
        for sub in layer.calls:
            layer_seconds(sub, acc, kernel_keys)
    return acc


def kernel_seconds(call):
    """Seconds spent in backend kernels (CPU, CUDA, Meta, ...) inside one call, nested calls included,
    each counted without the calls it makes."""
    acc = layer_seconds(call, {})
    return sum(v for k, v in acc.items() if k in _BACKENDS_PLAIN)


def run_traced(fn, repeat, warmup):
    """Run fn warmup + repeat times inside one TimedTrace: a list, per measured iteration, of
    (wall seconds of fn, top-level calls)."""
    out = []
    with TimedTrace() as tr:
        for i in range(warmup + repeat):
            m = tr.mark()
            t0 = _perf()
            fn()
            wall = _perf() - t0
            if i >= warmup:
                out.append((wall, tr.calls[m:], t0 - tr.t0))
    return out


def median(xs):
    return statistics.median(xs) if xs else 0.0
