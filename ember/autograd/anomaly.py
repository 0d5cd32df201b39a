"""Anomaly detection: record each node's forward traceback; on a backward error, show it; check
for NaN in every gradient a node returns (torch.autograd.set_detect_anomaly)."""
import traceback
import warnings

from ember.core import tls

_state = tls.current


def record_forward_trace(node):
    node._anomaly = "".join(traceback.format_stack()[:-3])
    node._has_hooks = True  # the engine's one per-node test for taking _call_node, which reports it


def report(node):
    if node._anomaly:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                      f"{node._anomaly}", UserWarning, stacklevel=2)


def check_nan(node, outs):
    for i, g in enumerate(outs):
        if g is not None and (g.is_floating_point() or g.is_complex()) and bool(g.isnan().any()):
            report(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


class detect_anomaly:
    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                      "only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (_state().anomaly, _state().anomaly_check_nan)
        _state().anomaly, _state().anomaly_check_nan = True, self.check_nan

    def __exit__(self, *a):
        _state().anomaly, _state().anomaly_check_nan = self.prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def w(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)
        return w


class set_detect_anomaly:
    def __init__(self, mode, check_nan=True):
        self.prev = (_state().anomaly, _state().anomaly_check_nan)
        _state().anomaly, _state().anomaly_check_nan = bool(mode), check_nan

    def __enter__(self):
        return self

    def __exit__(self, *a):
        _state().anomaly, _state().anomaly_check_nan = self.prev


def is_anomaly_enabled():
    return _state().anomaly


def is_anomaly_check_nan_enabled():
    return _state().anomaly_check_nan
