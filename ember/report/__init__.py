"""ember.report: run a script or a function under ember.profiler and write ONE self-contained HTML file.

    python -m ember.report SCRIPT [args...]          # writes ./ember_report.html, prints its path
    python -m ember.report -o out.html SCRIPT [args...]

    import ember.report
    path = ember.report.profile(train_step, model, batch, path="step.html")

The page holds: the op table (key_averages, torch's columns, plus the text tables grouped by input
shape and by stack), the four ember.viz pictures as inline SVG (measured on the run's representative
op, or on a small default workload when the run has none; the page says which), the Chrome trace
(embedded as JSON, with a button that downloads it for chrome://tracing or Perfetto, and drawn as a
timeline), memory over time from the profiler's [memory] events, and the environment. Everything is
inline: the page loads nothing from the network.

The run is profiled with record_shapes, profile_memory and with_stack, for the CPU, CUDA (when
available: its kernels on per-stream tracks) and an out-of-tree PrivateUse1 device the script may
register (examples/async_device). A script that starts its own ember.profiler.profile inside the
run takes the events over while its profiler records.
"""
import os
import runpy
import sys
import tempfile
import time
import traceback

from ember.report import _widgets
from ember.report import html as _html

__all__ = ["profile", "run_script", "write_report", "DEFAULT_PATH"]

DEFAULT_PATH = "ember_report.html"


def _profiler():
    # lazy: same layer; keeps `import ember.report` light
    from ember.profiler import ProfilerActivity, profile as _profile, supported_activities

    # an out-of-tree device (PrivateUse1) the script may register: its work on its stream tracks
    acts = set(supported_activities()) | {ProfilerActivity.PrivateUse1}
    return _profile(activities=acts, record_shapes=True, profile_memory=True, with_stack=True)


def _trace_of(prof):
    import json  # lazy: only when a report is written

    fd, tmp = tempfile.mkstemp(suffix=".json", prefix="ember_report_")
    os.close(fd)
    try:
        prof.export_chrome_trace(tmp)
        with open(tmp) as f:
            return json.load(f)
    finally:
        os.unlink(tmp)


def write_report(prof, path=None, *, title="ember report", subtitle="", status=None, widgets=True, fast=False):
    """Write the HTML report of a finished ember.profiler.profile to `path` (default
    ./ember_report.html); returns the absolute path. widgets=False leaves the four pictures out
    (they re-run the representative op for a few seconds); fast=True measures them more briefly."""
    path = os.path.abspath(path or DEFAULT_PATH)
    averages = prof.key_averages()
    events = prof.events()
    text_tables = [("key_averages().table(sort_by=\"self_cpu_time_total\")",
                    averages.table(sort_by="self_cpu_time_total", row_limit=60))]
    if any(e.input_shapes for e in events):
        text_tables.append(("key_averages(group_by_input_shape=True).table(...)",
                            prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total",
                                                                               row_limit=40)))
    if prof.with_stack:
        text_tables.append(("key_averages(group_by_stack_n=5).table(...)",
                            prof.key_averages(group_by_stack_n=5).table(sort_by="self_cpu_time_total",
                                                                        row_limit=20)))
    trace = _trace_of(prof)
    work = _widgets.representative(averages, events)
    pictures = _widgets.draw(work, fast=fast) if widgets else {k: (None, "left out (widgets=False)")
                                                               for k, _, _ in _widgets.WIDGETS}
    page = _html.render(title=title, subtitle=subtitle, averages=averages, text_tables=text_tables, trace=trace,
                        widgets=pictures, workload=work, env=_html.environment(), status=status)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def profile(fn, *args, path=None, **kwargs):
    """Run fn(*args, **kwargs) under ember.profiler (record_shapes, profile_memory, with_stack) and
    write the HTML report to `path` (default ./ember_report.html). Returns the report's absolute path;
    an exception from fn propagates after the report (with the error noted) is written."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    t0 = time.perf_counter()
    err = None
    with _profiler() as prof:
        try:
            fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - reported in the page, then raised again
            err = e
    wall = time.perf_counter() - t0
    status = f"{name} ran for {wall:.3f} s" + (f" and raised {type(err).__name__}: {err}" if err else "")
    out = write_report(prof, path, title=f"ember report: {name}", subtitle=status)
    if err is not None:
        raise err
    return out


def run_script(script, args=(), path=None, *, widgets=True, fast=False):
    """Run a Python script as `python SCRIPT args...` would (runpy, __name__ == "__main__", sys.argv
    and sys.path[0] set) under the profiler, then write the report. Returns (report path, exit
    status): the script's sys.exit code, 1 for an uncaught exception (its traceback is printed)."""
    script_abs = os.path.abspath(script)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script_abs))
    code = 0
    note = ""
    t0 = time.perf_counter()
    try:
        with _profiler() as prof:
            try:
                runpy.run_path(script_abs, run_name="__main__")
            except SystemExit as e:
                if e.code is None:
                    code = 0
                elif isinstance(e.code, int):
                    code = e.code
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except Exception as e:  # noqa: BLE001 - the report is still written, as python would exit 1
                traceback.print_exc()
                code = 1
                note = f"; it raised {type(e).__name__}: {e}"
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    wall = time.perf_counter() - t0
    cmd = " ".join([script, *args])
    status = f"{cmd}: ran for {wall:.2f} s, exit status {code}{note}"
    out = write_report(prof, path, title=f"ember report: {os.path.basename(script)}", subtitle=status,
                       widgets=widgets, fast=fast)
    return out, code
