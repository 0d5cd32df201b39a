"""torch.profiler.profiler: profile with activities, schedule and on_trace_ready; tensorboard's handler."""
import enum
import gzip
import json
import os
import socket
import time
import warnings

from ember.autograd import profiler as prof
from ember.autograd.profiler_util import _chrome_trace
from ember.profiler import _device

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler", "kineto_available", "_KinetoProfile"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"

    def __str__(self):
        return f"ProfilerActivity.{self.name}"


class ProfilerAction(enum.Enum):
    """Profiler actions that can be taken at the specified intervals."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def kineto_available():
    return True


def supported_activities():
    acts = {ProfilerActivity.CPU}
    try:
        import ember.cuda  # lazy: the CUDA runtime is optional
        if ember.cuda.is_available():
            acts.add(ProfilerActivity.CUDA)
    except Exception:  # noqa: BLE001 - no CUDA runtime: CPU only
        pass
    return acts


def _privateuse1_name():
    from ember.utils.backend_registration import _get_privateuse1_backend_name  # lazy: same layer, on use

    return _get_privateuse1_backend_name()


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """The profiler's schedule: skip `skip_first` steps, then cycles of wait / warmup / active
    steps (`repeat` of them, 0 for no limit); the last active step of a cycle saves."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """on_trace_ready handler writing `<worker>.<time_ns>.pt.trace.json[.gz]` into dir_name."""

    def handler_fn(p):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        p.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class _KinetoProfile:
    """The profiler without a schedule: start_trace / stop_trace around one window."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, custom_trace_id_callback=None, post_processing_timeout_s=None,
                 with_dispatch_layers=False):
        self.activities = set(activities) if activities else supported_activities()
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.with_dispatch_layers = with_dispatch_layers
        self.experimental_config = experimental_config
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.preset_metadata = {}
        self._metadata = {}
        self._launches = []
        self._track_labels = {}
        if self.use_device is None and ProfilerActivity.PrivateUse1 in self.activities:
            self.use_device = _privateuse1_name()

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is None or not self.acc_events:
            self.profiler = prof.profile(use_cpu=ProfilerActivity.CPU in self.activities,
                                         use_device=self.use_device, record_shapes=self.record_shapes,
                                         with_flops=self.with_flops, profile_memory=self.profile_memory,
                                         with_stack=self.with_stack, with_modules=self.with_modules,
                                         use_kineto=True, acc_events=self.acc_events,
                                         with_dispatch_layers=self.with_dispatch_layers)
        self.profiler._prepare_trace()

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start_trace()
        # device kernels on per-stream tracks, with a flow from each launch (see _device)
        recs = []
        if ProfilerActivity.CUDA in self.activities:
            recs.append(_device.LaunchRecorder(self.profiler._collector))
        if ProfilerActivity.PrivateUse1 in self.activities:
            recs.append(_device.AsyncRecorder(self.profiler._collector, _privateuse1_name))
        self._launches = [r for r in recs if r.install()]

    def stop_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        recs, self._launches = self._launches, []
        for r in recs:
            r.remove()
        self.profiler.__exit__(None, None, None)
        for r in recs:
            r.finish(self.profiler.function_events)
            if isinstance(r, _device.AsyncRecorder):
                self._track_labels.update({e.device_index: f"{r.backend} {e.device_index}"
                                           for e in self.profiler.function_events if e.device_type == "PrivateUse1"})

    def export_chrome_trace(self, path):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        c = self.profiler._collector
        extra = {"profile_memory": int(self.profile_memory), "record_shapes": int(self.record_shapes),
                 "traceName": path}
        extra.update(self._metadata)
        trace = _chrome_trace(self.profiler.function_events, c.mem_records, extra)
        _device.name_tracks(trace, self._track_labels)
        data = json.dumps(trace)
        if path.endswith(".gz"):
            with gzip.open(path, "wt") as f:
                f.write(data)
        else:
            with open(path, "w") as f:
                f.write(data)
        return path

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def events(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def add_metadata(self, key, value):
        self._metadata[key] = '"' + value.replace('"', '\\"') + '"'

    def add_metadata_json(self, key, value):
        self._metadata[key] = value


class profile(_KinetoProfile):
    """torch.profiler.profile: a context manager (or start()/step()/stop()) recording the steps its
    schedule marks active and calling on_trace_ready at the end of each active cycle.

    ember adds one keyword, with_dispatch_layers=False: when True, each aten op's span holds one
    child span per dispatch layer the call passes through ("AutogradCPU: aten::mul" around
    "CPU: aten::mul"; Autocast, ADInplaceOrView, Python, a backend fallback where they run), and a
    compiled graph's kernels appear as spans of their own (see ember.autograd.profiler)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, custom_trace_id_callback=None, post_processing_timeout_s=None,
                 with_dispatch_layers=False):
        activities_set = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning,
                          stacklevel=2)
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            elif ProfilerActivity.CUDA in activities_set:
                activities_set.remove(ProfilerActivity.CUDA)
        if len(activities_set) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities_set, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config, acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback,
                         with_dispatch_layers=with_dispatch_layers)
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        A = ProfilerAction
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [lambda: warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=2),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [lambda: warnings.warn("Incorrect schedule: RECORD followed by NONE", stacklevel=2),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [lambda: warnings.warn("Incorrect schedule: RECORD followed by WARMUP",
                                                         stacklevel=2), self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signals the profiler that the next profiling step has started."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action)) or ():
            action()
