"""CUDA kernels in ember.profiler's Chrome trace, on numba's CUDA simulator (EMBER_CUDA_SIM=1, set
by tests/conftest.py): each launch a cudaLaunchKernel span inside its op, each kernel a span on its
device's per-stream track, a flow arrow (ph "s" -> "f") from the launch to the kernel, and the
kernel's time counted as the op's device time."""
import importlib.util
import json
import os
import sys

import pytest

import ember
from ember.profiler import ProfilerActivity, profile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from examples import async_device  # noqa: E402

# (numba is not imported here: ember picks the simulator before numba.cuda first loads)
_NO_CUDA = ("the CUDA backend runs on numba's simulator here: pip install numba"
            if importlib.util.find_spec("numba") is None else
            None if ember.cuda.is_available() else "no CUDA device and no simulator (EMBER_CUDA_SIM=1)")
needs_cuda = pytest.mark.skipif(_NO_CUDA is not None, reason=_NO_CUDA or "")


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    x = ember.randn(16, 16, device="cuda")
    (x + 1).relu()  # compile the kernels outside the window
    x * 2
    side = ember.cuda.Stream()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        y = (x + 1).relu()
        with ember.cuda.stream(side):
            z = x * 2
        side.synchronize()
    path = tmp_path_factory.mktemp("trace") / "cuda.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        trace = json.load(f)
    assert y.device.type == z.device.type == "cuda"
    return prof, trace, side


def _spans(trace, cat):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat]


@needs_cuda
def test_kernels_on_per_stream_tracks(traced):
    prof, trace, side = traced
    kernels = _spans(trace, "kernel")
    names = [k["name"] for k in kernels]
    assert names == ["kern (aten::add)", "kern (aten::relu)", "kern (aten::mul)"]
    assert all(k["pid"] == 0 for k in kernels)
    # the default stream is "stream 7" (as in torch's traces); the side stream has its own track
    assert [k["tid"] for k in kernels] == ["stream 7", "stream 7", f"stream {side.cuda_stream}"]
    assert kernels[2]["args"]["stream"] == side.cuda_stream
    # the tracks are named for chrome://tracing and Perfetto
    meta = {(e["pid"], e["tid"], e["name"]): e["args"].get("name") for e in trace["traceEvents"] if e["ph"] == "M"}
    assert meta[(0, 0, "process_name")] == "GPU 0"
    assert meta[(0, "stream 7", "thread_name")] == "stream 7"


@needs_cuda
def test_flow_from_each_launch_to_its_kernel(traced):
    _, trace, _ = traced
    ev = trace["traceEvents"]
    launches = _spans(trace, "cuda_runtime")
    kernels = _spans(trace, "kernel")
    assert [e["name"] for e in launches] == ["cudaLaunchKernel"] * 3
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(starts) == len(ends) == 3 and starts.keys() == ends.keys()
    ops = {e["name"]: e for e in ev if e.get("cat") == "cpu_op"}
    for fid, s in starts.items():
        f = ends[fid]
        assert s["cat"] == f["cat"] == "ac2g" and f["bp"] == "e"
        # the start binds to a cudaLaunchKernel span on the CPU thread, the end to a kernel on its stream
        la = next(e for e in launches if e["tid"] == s["tid"] and e["ts"] <= s["ts"] <= e["ts"] + e["dur"])
        k = next(e for e in kernels if e["tid"] == f["tid"] and e["pid"] == f["pid"] and e["ts"] == f["ts"])
        # the launch lies inside the op that launched the kernel, and the kernel starts after its launch
        op = ops["aten::" + k["name"].split("aten::")[1].rstrip(")")]
        assert op["ts"] <= la["ts"] and la["ts"] + la["dur"] <= op["ts"] + op["dur"]
        assert k["ts"] >= la["ts"]


@needs_cuda
def test_kernel_time_is_the_ops_device_time(traced):
    prof, _, _ = traced
    avg = {e.key: e for e in prof.key_averages()}
    for op in ("aten::add", "aten::relu", "aten::mul"):
        kern = avg[f"kern ({op})"]
        assert kern.self_device_time_total > 0 and kern.count == 1
        assert avg[op].device_time_total == pytest.approx(kern.self_device_time_total)
    assert avg["cudaLaunchKernel"].count == 3
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    assert "Self CUDA" in table and "kern (aten::add)" in table


@needs_cuda
def test_no_hook_without_the_cuda_activity_or_after_the_window():
    from ember.cuda import _runtime

    plain = _runtime.Kernel.__dict__["__getitem__"]
    x = ember.randn(8, device="cuda")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        assert _runtime.Kernel.__dict__["__getitem__"] is plain
        x + 1
    assert not [e for e in prof.events() if e.device_type != "CPU" or e.name == "cudaLaunchKernel"]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        assert _runtime.Kernel.__dict__["__getitem__"] is not plain
    assert _runtime.Kernel.__dict__["__getitem__"] is plain


def test_async_device_work_on_its_stream_tracks(tmp_path):
    # examples/async_device runs each stream's work on a thread of its own: the work waits in the
    # queue behind a sleeping "kernel", and the trace shows the gap between enqueue and run
    with async_device.enabled() as adev:
        x = ember.ones(32, 32).to("adev")
        adev.synchronize()
        side = adev.Stream()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            adev._sleep(0.05)
            y = x + 1
            with adev.stream(side):
                z = x * 2
            adev.synchronize()
            side.synchronize()
        assert y.device.type == z.device.type == "adev"
    trace = prof.profiler.function_events
    kernels = {e.name: e for e in trace if e.device_type == "PrivateUse1"}
    assert set(kernels) == {"adev_kernel", "adev_kernel (aten::add)", "adev_kernel (aten::mul)"}
    assert kernels["adev_kernel (aten::add)"].stream == 0 and kernels["adev_kernel (aten::mul)"].stream == side.stream_id
    launches = {k.name: e for e in trace for k in getattr(e, "_launches", ())}
    assert all(e.name == "adevLaunchKernel" for e in launches.values())
    add_k, add_l = kernels["adev_kernel (aten::add)"], launches["adev_kernel (aten::add)"]
    # queued behind the 50 ms sleep on the same stream; the side stream's work did not wait for it
    assert add_k.time_range.start - add_l.time_range.end >= 40e3
    assert add_k.time_range.start >= kernels["adev_kernel"].time_range.end
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::add"].device_time_total == pytest.approx(add_k.time_range.elapsed_us())
    assert "Self ADEV" in prof.key_averages().table(row_limit=5)
    # the Chrome trace: the device named, one track per stream, a flow per enqueue
    prof.export_chrome_trace(str(tmp_path / "adev.json"))
    with open(tmp_path / "adev.json") as f:
        ev = json.load(f)["traceEvents"]
    meta = {(e["pid"], e["tid"], e["name"]): e["args"].get("name") for e in ev if e["ph"] == "M"}
    assert meta[(0, 0, "process_name")] == "adev 0"
    assert {e["tid"] for e in ev if e.get("cat") == "kernel"} == {"stream 0", f"stream {side.stream_id}"}
    assert len([e for e in ev if e["ph"] == "s"]) == len([e for e in ev if e["ph"] == "f"]) == 3
