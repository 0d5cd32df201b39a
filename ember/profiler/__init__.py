"""torch.profiler: ember's profiler, with torch's API, event names and output formats.

    with ember.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(x).sum().backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

With ProfilerActivity.CUDA (or PrivateUse1, for an out-of-tree device such as
examples/async_device) each kernel is a span on its device's per-stream track, with a flow arrow
from its launch (a cudaLaunchKernel span inside the op) and its time in the op's device columns:
see ember/profiler/_device.py.

ember only: profile(..., with_dispatch_layers=True) nests one span per dispatch layer inside each
op's span (where the microseconds go, layer by layer), and a compiled graph's generated code
marks each kernel it runs with `ember.profiler._kernel_span(name)`.
"""
from ember.autograd.profiler import _kernel_span, record_function  # noqa: F401 - _kernel_span: compiled graphs
from ember.autograd.profiler_util import DeviceType
from ember.profiler.profiler import (ProfilerAction, ProfilerActivity, _KinetoProfile, kineto_available, profile,
                                     schedule, supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function", "_KinetoProfile"]
