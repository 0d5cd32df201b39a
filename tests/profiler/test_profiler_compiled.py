"""A graph compiled by the inductor backend shows its kernels as spans when the profiler records
dispatch layers (ember only: profile(with_dispatch_layers=True)); without the switch it adds none."""
import json

import ember
from ember.profiler import ProfilerActivity, profile


def _f(x):
    return (x * 2 + 1).tanh() * x


def test_kernels_are_spans_with_dispatch_layers(tmp_path):
    c = ember.compile(_f)
    x = ember.randn(64)
    c(x)
    c(x)
    with profile(activities=[ProfilerActivity.CPU], with_dispatch_layers=True) as p:
        y = c(x)
    assert ember.allclose(y, _f(x))
    names = [e.name for e in p.events()]
    kernels = [n for n in names if n.endswith(".kernel0")]
    assert len(kernels) == 1, names
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("name") == kernels[0] and e.get("cat") == "compiled_kernel" for e in events)


def test_no_kernel_spans_without_the_switch():
    c = ember.compile(_f)
    x = ember.randn(64)
    c(x)
    c(x)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        c(x)
    assert not [e.name for e in p.events() if ".kernel" in e.name]
