"""torch.autograd.profiler_util: FunctionEvent, FunctionEventAvg, EventList and the summary table.

The table (EventList.table) has torch's columns, widths, number formats, separator lines and
"Self CPU time total" footer; the Chrome trace has torch's event kinds (ph "X" cpu_op /
user_annotation spans, ph "i" [memory] instant events, ph "M" metadata), times in microseconds.
"""
import json
import math
import os
import threading
from collections import defaultdict

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "MemRecordsAcc", "Interval", "Kernel",
           "DeviceType"]


class DeviceType:
    CPU = "CPU"
    CUDA = "CUDA"


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class Kernel:
    def __init__(self, name, device, duration):
        self.name, self.device, self.duration = name, device, duration


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    KB = 1024
    MB = 1024 * KB
    GB = 1024 * MB
    if abs(nbytes) >= GB:
        return f"{nbytes * 1.0 / GB:.2f} GB"
    if abs(nbytes) >= MB:
        return f"{nbytes * 1.0 / MB:.2f} MB"
    if abs(nbytes) >= KB:
        return f"{nbytes * 1.0 / KB:.2f} KB"
    return str(nbytes) + " B"


def _attr_formatter(name):
    return property(lambda self: _format_time(getattr(self, name)))


class FormattedTimesMixin:
    cpu_time_str = _attr_formatter("cpu_time")
    device_time_str = _attr_formatter("device_time")
    cpu_time_total_str = _attr_formatter("cpu_time_total")
    device_time_total_str = _attr_formatter("device_time_total")
    self_cpu_time_total_str = _attr_formatter("self_cpu_time_total")
    self_device_time_total_str = _attr_formatter("self_device_time_total")

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count

    @property
    def cuda_time(self):
        return self.device_time


class FunctionEvent(FormattedTimesMixin):
    """One profiled range: an op, a record_function, an autograd node, or a [memory] record."""

    def __init__(self, id, name, thread, start_us, end_us, fwd_thread=None, input_shapes=None,
                 stack=None, scope=0, use_device=None, cpu_memory_usage=0, device_memory_usage=0,
                 is_async=False, is_remote=False, sequence_nr=-1, node_id=-1, device_type=DeviceType.CPU,
                 device_index=0, is_legacy=False, flops=None, trace_name=None, concrete_inputs=None,
                 kwinputs=None, is_user_annotation=False, overload_name="", category="cpu_op"):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.kernels = []
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs or {}
        self.stack = stack
        self.scope = scope
        self.use_device = use_device
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.is_legacy = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1
        self._category = category

    def append_kernel(self, name, device, duration):
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    @property
    def cpu_time_total(self):
        if self.device_type == DeviceType.CPU:
            return self.time_range.elapsed_us()
        return 0

    @property
    def self_cpu_time_total(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if self.is_async or not self.use_device:
            return 0
        if self.device_type == DeviceType.CPU:
            return sum(k.duration for k in self.kernels) + sum(c.device_time_total for c in self.cpu_children)
        return self.time_range.elapsed_us()

    @property
    def self_device_time_total(self):
        if self.is_async or not self.use_device:
            return 0
        if self.device_type == DeviceType.CPU:
            return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)
        return self.device_time_total

    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total

    @property
    def key(self):
        return self.name

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
                f"device_type={self.device_type} node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start} end_us={self.time_range.end} "
                f"cpu_children={str([child.id for child in self.cpu_children])} "
                f"cpu_time={self.cpu_time_str} name={self.name} thread={self.thread} "
                f"input_shapes={str(self.input_shapes)} cpu_memory_usage={self.cpu_memory_usage} "
                f"device_memory_usage={self.device_memory_usage} is_async={self.is_async} "
                f"is_remote={self.is_remote} seq_nr={self.sequence_nr} is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """Averaged statistics over several FunctionEvents with one key."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_device_time={self.self_device_time_total_str} "
                f"device_time={self.device_time_str} input_shapes={str(self.input_shapes)} "
                f"cpu_memory_usage={self.cpu_memory_usage} device_memory_usage={self.device_memory_usage}>")


class MemRecordsAcc:
    """Memory records in time order (torch's helper, for records in an interval)."""

    def __init__(self, mem_records):
        self._mem_records = sorted(mem_records, key=lambda r: r[0])

    def in_interval(self, start_us, end_us):
        for r in self._mem_records:
            if start_us <= r[0] <= end_us:
                yield r


class EventList(list):
    """A list of FunctionEvents (torch.autograd.profiler_util.EventList)."""

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._tree_built = False
        self._with_flops = with_flops

    def _build_tree(self):
        self._populate_cpu_children()
        self._tree_built = True

    def _populate_cpu_children(self):
        # events arrive with parents already linked by the collector; rebuild from intervals for
        # lists made by hand
        by_thread = defaultdict(list)
        for e in self:
            if not e.is_async and e.device_type == DeviceType.CPU:
                by_thread[e.thread].append(e)
        for events in by_thread.values():
            events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
            stack = []
            for e in events:
                while stack and stack[-1].time_range.end <= e.time_range.start and stack[-1] is not e:
                    stack.pop()
                while stack and not (e.time_range.end <= stack[-1].time_range.end):
                    stack.pop()
                if stack and e.cpu_parent is None:
                    e.set_cpu_parent(stack[-1])
                    stack[-1].append_cpu_child(e)
                stack.append(e)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        return _build_table(self, sort_by=sort_by, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory, with_flops=self._with_flops,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump(_chrome_trace(self), f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path, metric):
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: " + str(self.supported_export_stacks_metrics()))
        translate_table = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack and len(evt.stack) > 0:
                    metric_value = getattr(evt, attr, 0)
                    if int(metric_value) > 0:
                        stack_str = ""
                        for entry in reversed(evt.stack):
                            stack_str += entry.translate(translate_table)
                            stack_str += ";"
                        stack_str = stack_str[:-1] + " " + str(int(metric_value))
                        f.write(stack_str + "\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        if not self._tree_built:
            self._build_tree()
        stats = defaultdict(FunctionEventAvg)

        def get_key(event):
            key = [str(event.key), str(event.node_id), str(event.device_type), str(event.is_legacy),
                   str(event.is_user_annotation)]
            if group_by_overload_name:
                key.append(event.overload_name)
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += event.stack[:group_by_stack_n] if event.stack else []
            return tuple(key)

        for evt in self:
            stats[get_key(evt)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device,
                             profile_memory=self._profile_memory, with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n] if evt.stack else []
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self):
        total_stat = FunctionEventAvg()
        for evt in self:
            total_stat += evt
            total_stat.key = None
        total_stat.key = "Total"
        return total_stat

    def __str__(self):
        return self.table()


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, time_unit=None):
    """The summary table, with torch's layout (torch/autograd/profiler_util.py _build_table)."""
    if len(events) == 0:
        return ""
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    use_device = events[0].use_device
    if not use_device and has_device_time:
        raise RuntimeError("use_device is None, but there is device performance data.")
    has_input_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_overload_names = any(e.overload_name is not None and len(e.overload_name) > 0 for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = EventList(sorted(events, key=lambda e: getattr(e, attr), reverse=True),
                           use_device=use_device, profile_memory=profile_memory, with_flops=with_flops)
    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    W = 12
    stacks = [e.stack for e in events if e.stack is not None and len(e.stack) > 0]
    has_stack = len(stacks) > 0
    src_w = None
    if has_stack:
        src_w = max(max(len(s) for s in st) for st in stacks) + 4
        if max_src_column_width is not None:
            src_w = min(src_w, max_src_column_width)
    headers = ["Name"]
    if has_overload_names:
        headers.append("Overload Name")
    headers += ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    dev = use_device.upper() if use_device is not None else "None"
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    append_node_id = any(e.node_id != -1 for e in events)
    if append_node_id:
        headers.append("Node ID")
    row_format, header_sep, line_length = "", "", -2

    def add_column(padding, text_dir=">"):
        nonlocal row_format, header_sep, line_length
        row_format += "{: " + text_dir + str(padding) + "}" + "  "
        header_sep += "-" * padding + "  "
        line_length += padding + 2

    add_column(name_w)
    if has_overload_names:
        add_column(name_w)
    for _ in headers[1 + has_overload_names:]:
        add_column(W)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_w)
    if has_stack:
        headers.append("Source Location")
        add_column(src_w, text_dir="<")
    flops_scale = 1.0
    if with_flops:
        raw = [e.flops for e in events if e.flops and e.flops > 0]
        if raw:
            names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            lf = max(0, min(math.log10(min(raw)) / 3, float(len(names) - 1)))
            flops_scale = pow(10, math.floor(lf) * -3.0)
            headers.append(f"Total {names[int(lf)]}")
            add_column(W)
        else:
            with_flops = False
    result = []

    def append(s):
        result.append(s)
        result.append("\n")

    total_cpu = sum(e.self_cpu_time_total for e in events)
    total_dev = sum(e.self_device_time_total for e in events
                    if e.device_type != DeviceType.CPU or e.is_legacy)

    def unit(t, default):
        if time_unit == "s":
            return f"{t / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{t / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{t:.3f}us"
        return default

    def trim_path(path, width):
        if len(path) > width:
            path = path[len(path) - width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    if header is not None:
        append("=" * line_length)
        append(header)
    if top_level_events_only:
        append("=" * line_length)
        append("This report only display top-level ops statistics")
    append(header_sep)
    append(row_format.format(*headers))
    append(header_sep)
    n = 0
    for e in events:
        if n == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        n += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        e.self_cpu_percent = _format_time_share(e.self_cpu_time_total, total_cpu)
        e.total_cpu_percent = _format_time_share(e.cpu_time_total, total_cpu) if not e.is_async else 0
        row = [name]
        if has_overload_names:
            row.append(e.overload_name)
        row += [e.self_cpu_percent, unit(e.self_cpu_time_total, e.self_cpu_time_total_str),
                e.total_cpu_percent, unit(e.cpu_time_total, e.cpu_time_total_str),
                unit(e.cpu_time, e.cpu_time_str)]
        if has_device_time:
            e.total_device_percent = _format_time_share(e.self_device_time_total, total_dev)
            row += [unit(e.self_device_time_total, e.self_device_time_total_str), e.total_device_percent,
                    unit(e.device_time_total, e.device_time_total_str), unit(e.device_time, e.device_time_str)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if append_node_id:
            row.append(e.node_id)
        if has_input_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if with_flops:
            row.append("--" if not e.flops or e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        if has_stack:
            row.append(trim_path(e.stack[0], src_w) if len(e.stack) > 0 else "")
        append(row_format.format(*row))
        if has_stack:
            empty = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                append(row_format.format(*(empty + [trim_path(entry, src_w)])))
            empty.append("")
            append(row_format.format(*empty))
    append(header_sep)
    append(f"Self CPU time total: {unit(total_cpu, _format_time(total_cpu))}")
    if has_device_time:
        append(f"Self {dev} time total: {unit(total_dev, _format_time(total_dev))}")
    return "".join(result)


def _chrome_trace(events, mem_records=(), extra=None):
    """torch's Chrome trace JSON: spans (ph "X"), [memory] instants (ph "i"), process/thread names."""
    pid = os.getpid()
    trace = []
    tids = sorted({e.thread for e in events} | {threading.get_ident()})
    t0 = min((e.time_range.start for e in events), default=0.0)
    trace.append({"ph": "M", "name": "process_name", "ts": t0, "pid": pid, "tid": 0, "args": {"name": "python"}})
    trace.append({"ph": "M", "name": "process_labels", "ts": t0, "pid": pid, "tid": 0, "args": {"labels": "CPU"}})
    for tid in tids:
        trace.append({"ph": "M", "name": "thread_name", "ts": t0, "pid": pid, "tid": tid,
                      "args": {"name": f"thread {tid} (python)"}})
    for i, e in enumerate(events):
        if e.name == "[memory]":
            continue
        if e.device_type != DeviceType.CPU:
            stream = getattr(e, "stream", 0)
            trace.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": e.device_index, "tid": f"stream {stream}",
                          "ts": e.time_range.start, "dur": e.time_range.elapsed_us(),
                          "args": {"device": e.device_index, "stream": stream, "correlation": e.id}})
            continue
        args = {"External id": e.id, "Ev Idx": i}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        trace.append({"ph": "X", "cat": e._category, "name": e.trace_name or e.name, "pid": pid, "tid": e.thread,
                      "ts": e.time_range.start, "dur": e.time_range.elapsed_us(), "args": args})
        for k in getattr(e, "_launches", ()):
            # flow from the launch (on the CPU) to the kernel (on its stream)
            trace.append({"ph": "s", "id": k.id, "pid": pid, "tid": e.thread, "ts": e.time_range.start,
                          "cat": "ac2g", "name": "ac2g"})
            trace.append({"ph": "f", "id": k.id, "pid": k.device_index, "tid": f"stream {k.stream}",
                          "ts": k.time_range.start, "cat": "ac2g", "name": "ac2g", "bp": "e"})
    for i, r in enumerate(mem_records):
        ts, nbytes, total, dev_type, dev_id, addr = r
        trace.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                      "tid": threading.get_ident(), "ts": ts,
                      "args": {"Total Reserved": 0, "Total Allocated": total, "Bytes": nbytes,
                               "Device Id": dev_id, "Device Type": dev_type, "Addr": addr,
                               "Ev Idx": len(events) + i}})
    out = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": trace, "displayTimeUnit": "ms"}
    if extra:
        out.update(extra)
    return out
