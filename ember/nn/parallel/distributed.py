"""torch.nn.parallel.DistributedDataParallel on ember.distributed.

Every rank holds a replica (parameters and buffers broadcast from rank 0 at construction) and runs
its slice of the batch; gradients are averaged over the ranks during backward. As in torch's
Reducer:

- parameters are grouped into buckets by dtype, up to `bucket_cap_mb` (25 MiB) each, in reverse
  registration order. Like torch 2.13, the first iteration without find_unused_parameters uses
  one bucket; the buckets are then rebuilt in the order the gradients arrived (the first one
  capped at 1 MiB when bucket_cap_mb is the default), which is the order later backward passes
  produce them in;
- a post-accumulate-grad hook on each parameter copies its gradient (divided by the world size)
  into its bucket; a full bucket's all-reduce starts at once, asynchronously, in bucket order, so
  communication overlaps the rest of the backward pass. When the last bucket has been launched
  (the end of this module's part of the backward) the reductions are waited for and the averaged
  values written back into the gradients (or the gradients are views of the buckets, with
  gradient_as_bucket_view=True);
- find_unused_parameters walks the autograd graph from the forward's outputs and marks the
  parameters it does not reach ready at the first hook; no_sync() skips the reduction (gradients
  accumulate locally); register_comm_hook replaces the all-reduce (see
  ember.distributed.algorithms.ddp_comm_hooks.default_hooks).
"""
import contextlib
import sys

import numpy as np

import ember
from ember import distributed as dist
from ember.autograd.graph import AccumulateGrad
from ember.nn.modules.module import Module
from ember.distributed.distributed_c10d import GradBucket
from ember.tensor import Tensor

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25

_PRIOR_ITERATION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error "
    "indicates that your module has parameters that were not used in producing loss. You can enable unused "
    "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs "
    "participate in calculating loss. \nIf you already have done the above, then the distributed data parallel "
    "module wasn't able to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of your module when "
    "reporting this issue (e.g. list, dict, iterable).")


def _compute_bucket_assignment_by_size(sizes_bytes, dtypes, limits, order=None):
    """torch's compute_bucket_assignment_by_size: walk the tensors (in `order`, or index order),
    one open bucket per dtype; a bucket closes once it reaches its limit, and the limits advance
    per dtype ([first, rest...]). Without `order` the buckets are sorted by their smallest index."""
    idx = list(range(len(sizes_bytes))) if order is None else list(order)
    result, open_, size, lim_pos = [], {}, {}, {}
    for i in idx:
        key = dtypes[i]
        open_.setdefault(key, []).append(i)
        size[key] = size.get(key, 0) + sizes_bytes[i]
        p = lim_pos.setdefault(key, 0)
        if size[key] >= limits[p]:
            result.append(open_.pop(key))
            size[key] = 0
            if p + 1 < len(limits):
                lim_pos[key] = p + 1
    result.extend(b for b in open_.values() if b)
    if order is None:
        result.sort(key=lambda b: b[0])
    return result


class _Bucket:
    def __init__(self, indices, params):
        self.indices = indices
        self.params = [params[i] for i in indices]
        dtype = self.params[0].dtype
        self.numels = [p.numel() for p in self.params]
        self.offsets = list(np.cumsum([0] + self.numels[:-1]))
        self.array = np.zeros(sum(self.numels), dtype=self.params[0]._np.dtype)
        self.buffer = ember.from_numpy(self.array)
        if self.buffer.dtype != dtype:
            raise RuntimeError(f"DistributedDataParallel: no bucket buffer for parameters of dtype {dtype}")
        self.views = [self.buffer[o:o + n].view(p.shape) for o, n, p in zip(self.offsets, self.numels, self.params)]
        self.pending = len(self.params)
        self.future = None


def _tensors_in(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reached_params(outputs):
    """ids of the leaves the autograd graph of `outputs` reaches (their AccumulateGrad nodes)."""
    used, seen, stack = set(), set(), []
    for t in _tensors_in(outputs, []):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            used.add(id(t))
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, AccumulateGrad):
            used.add(id(n.variable))
            continue
        for e in n._next:
            if e is not None and e[0] is not None:
                stack.append(e[0])
    return used


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self.parameters_to_ignore = ignore
        self._module_parameters = [p for n, p in module.named_parameters() if n not in ignore]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        types = {p.device.type for p in self._module_parameters}
        if len(types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type of devices, but "
                             f"input module parameters locate in {types}.")
        self.device_type = next(iter(types))
        if device_ids is None or len(device_ids) == 0 or self.device_type == "cpu":
            if device_ids or output_device:
                devices = {p.device for p in self._module_parameters}
                raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                                 "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                                 f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
            self.device_ids = self.output_device = None
        else:
            self.device_ids = list(device_ids)
            self.output_device = output_device if output_device is not None else device_ids[0]
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:
            self.forward_sync_buffers = init_sync_buffers = broadcast_buffers if broadcast_buffers is not None \
                else True
        self.broadcast_buffers = self.forward_sync_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.process_group = dist.distributed_c10d._group(process_group)
        self._pg = self.process_group
        self._world = self._pg.size()
        default_cap = bucket_cap_mb is None
        cap_mb = _DEFAULT_BUCKET_CAP_MB if default_cap else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MB)
        self._first_bucket_bytes_cap = dist._DEFAULT_FIRST_BUCKET_BYTES if default_cap else self.bucket_bytes_cap
        self._comm_hook = None
        self._comm_state = None

        # the parameters the reducer averages: requires_grad, shared ones once (registration order)
        seen, params = set(), []
        for n, p in module.named_parameters():
            if n in ignore or not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            params.append(p)
        self._params = params
        self._index = {id(p): i for i, p in enumerate(params)}
        self._verify_params()
        if init_sync and self._world > 1:
            self._sync_states([p for _, p in module.named_parameters() if _ not in ignore] +
                              ([b for n, b in module.named_buffers() if n not in ignore] if init_sync_buffers else []))

        if static_graph or not find_unused_parameters:
            limits = [sys.maxsize]
        elif self._first_bucket_bytes_cap < self.bucket_bytes_cap:
            limits = [self._first_bucket_bytes_cap, self.bucket_bytes_cap]
        else:
            limits = [self.bucket_bytes_cap]
        assignment = _compute_bucket_assignment_by_size(
            [p.numel() * p.element_size() for p in params], [p.dtype for p in params], limits)
        self._set_buckets(list(reversed(assignment)))
        self._should_rebuild = static_graph or not find_unused_parameters
        self._ready_order = []
        self._expect = False  # a backward with reduction is expected
        self._require_finalize = False  # ... and it has begun
        self._unused = []
        self._marked_unused = False
        self._next_bucket = 0
        self._launched = []
        self._log = None  # a list to record (event, detail) in, for tests
        self._handles = [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(params)]

    # -- set-up
    def _verify_params(self):
        if self._world == 1:
            return
        shapes = [tuple(p.shape) for p in self._params]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, shapes, group=self._pg)
        for r, s in enumerate(everyone):
            if len(s) != len(shapes):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self._pg.rank()} has "
                                   f"{len(shapes)} params, while rank {r} has inconsistent {len(s)} params.")
            for i, (a, b) in enumerate(zip(shapes, s)):
                if a != b:
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self._pg.rank()} has "
                                       f"param {i} of shape {list(a)}, while rank {r} has it of shape {list(b)}.")

    def _sync_states(self, tensors):
        root = dist.get_global_rank(self._pg, 0)
        with ember.no_grad():
            works = [dist.broadcast(t.detach(), src=root, group=self._pg, async_op=True) for t in tensors]
            for w in works:
                w.wait()

    def _set_buckets(self, assignment):
        old = getattr(self, "_buckets", None)
        self._buckets = [_Bucket(ix, self._params) for ix in assignment]
        self._where = {}
        for bi, b in enumerate(self._buckets):
            for j, i in enumerate(b.indices):
                self._where[i] = (bi, j)
        if old is not None and self.gradient_as_bucket_view:
            for i, p in enumerate(self._params):  # gradients that were views of the old buckets move
                g = p.grad
                if g is not None:
                    bi, j = self._where[i]
                    v = self._buckets[bi].views[j]
                    v._np[...] = g._np
                    p.grad = v

    def _rebuild_buckets(self):
        order = np.array(self._ready_order if len(self._ready_order) == len(self._params)
                         else list(range(len(self._params)))[::-1], np.int64)
        if self._world > 1:
            t = ember.from_numpy(order)
            dist.broadcast(t, src=dist.get_global_rank(self._pg, 0), group=self._pg)
            order = t.numpy()
        limits = [self._first_bucket_bytes_cap, self.bucket_bytes_cap]
        assignment = _compute_bucket_assignment_by_size(
            [p.numel() * p.element_size() for p in self._params], [p.dtype for p in self._params], limits,
            order=[int(i) for i in order])
        self._set_buckets(assignment)
        self._should_rebuild = False
        if self._log is not None:
            self._log.append(("rebuilt", [list(b.indices) for b in self._buckets]))

    # -- forward
    def forward(self, *inputs, **kwargs):
        if self._expect and self._require_finalize:  # a backward began and did not reduce every bucket
            raise RuntimeError(_PRIOR_ITERATION)
        grad_on = ember.is_grad_enabled()
        if grad_on and self.require_backward_grad_sync:
            if self._should_rebuild and self._ready_order:
                self._rebuild_buckets()
        if self.forward_sync_buffers and self.require_forward_param_sync and self._world > 1:
            bufs = [b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]
            if bufs:
                self._sync_states(bufs)
        out = self.module(*inputs, **kwargs)
        if grad_on and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        return out

    def _prepare_for_backward(self, out):
        self._expect = True
        self._require_finalize = False
        if self._should_rebuild:
            self._ready_order = []
        self._next_bucket = 0
        self._launched = []
        self._marked_unused = False
        self._ready = [False] * len(self._params)
        for b in self._buckets:
            b.pending = len(b.params)
            b.future = None
        if self.find_unused_parameters:
            used = _reached_params(out)
            self._unused = [i for i, p in enumerate(self._params) if id(p) not in used]
        else:
            self._unused = []
        self._local_used = np.ones(len(self._params), np.int32)
        for i in self._unused:
            self._local_used[i] = 0

    # -- backward: hooks
    def _make_hook(self, i):
        def hook(p):
            if self._expect:
                self._mark_ready(i, p)
        return hook

    def _mark_ready(self, i, p):
        self._require_finalize = True
        if not self._marked_unused:
            self._marked_unused = True
            for u in self._unused:
                self._mark(u, self._params[u])
        self._mark(i, p)
        for f in self._launched:  # let MPI progress the reductions in flight
            if f is not None:
                f.done()
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _mark(self, i, p):
        if self._ready[i]:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of the following "
                f"reasons: 1) Use of a module parameter outside the `forward` function. 2) Reused parameters in "
                f"multiple reentrant backward passes. Parameter at index {i} has been marked as ready twice.")
        self._ready[i] = True
        if self._should_rebuild:
            self._ready_order.append(i)
        bi, j = self._where[i]
        b = self._buckets[bi]
        view = b.views[j]
        arr = b.array[b.offsets[j]:b.offsets[j] + b.numels[j]]
        g = p.grad
        scale = self._comm_hook is None
        if g is None:
            arr[...] = 0
        elif g._np is not None and np.shares_memory(g._np, b.array):
            if scale:
                arr /= self._world
        else:
            src = g._np.reshape(-1)
            if scale:
                np.multiply(src, 1.0 / self._world, out=arr, casting="unsafe")
            else:
                arr[...] = src
            if self.gradient_as_bucket_view:
                p.grad = view
        b.pending -= 1
        if b.pending == 0:
            while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
                self._launch(self._next_bucket)
                self._next_bucket += 1

    def _launch(self, bi):
        b = self._buckets[bi]
        if self._log is not None:
            self._log.append(("allreduce", bi, list(b.indices)))
        b.buffer._bump_version()
        if self._comm_hook is not None:
            b.future = self._comm_hook(self._comm_state, GradBucket(bi, b, bi == len(self._buckets) - 1))
        elif self._world > 1:
            b.future = dist.all_reduce(b.buffer, group=self._pg, async_op=True).get_future()
        else:
            b.future = None
        self._launched.append(b.future)

    def _finalize(self):
        self._expect = False
        globally_used = None
        if self.find_unused_parameters:
            t = ember.from_numpy(self._local_used.copy())
            if self._world > 1:
                dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self._pg)
            globally_used = t.numpy()
        for bi, b in enumerate(self._buckets):
            if b.future is not None:
                res = b.future.wait()
                if isinstance(res, list):
                    res = res[0]
                if isinstance(res, Tensor) and res is not b.buffer:
                    if tuple(res.shape) != tuple(b.buffer.shape):
                        raise ValueError(f"Callback must return a tensor of the bucket's size: expected "
                                         f"{tuple(b.buffer.shape)}, got {tuple(res.shape)}")
                    b.array[...] = res.numpy().reshape(-1)
            if self._log is not None:
                self._log.append(("reduced", bi))
            for j, p in enumerate(b.params):
                i = b.indices[j]
                view = b.views[j]
                g = p.grad
                if g is None:
                    if globally_used is not None and not globally_used[i]:
                        continue
                    p.grad = view if self.gradient_as_bucket_view else view.clone()
                elif g._np is not None and np.shares_memory(g._np, b.array):
                    g._bump_version()
                else:
                    np.copyto(g._np, view._np, casting="unsafe")
                    g._bump_version()
        if self._log is not None:
            self._log.append(("finalized",))

    # -- API
    @contextlib.contextmanager
    def no_sync(self):
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self._comm_hook, self._comm_state = hook, state

    def _set_static_graph(self):
        self.static_graph = True

    def will_sync_module_buffers(self):
        return self.require_forward_param_sync and self.forward_sync_buffers and \
            any(True for _ in self.module.buffers())

    def _get_ddp_logging_data(self):
        return {"world_size": self._world, "bucket_sizes": [b.array.nbytes for b in self._buckets],
                "find_unused_parameters": self.find_unused_parameters,
                "gradient_as_bucket_view": self.gradient_as_bucket_view}
