"""torch.distributed's process groups and collectives (distributed_c10d.py), on MPI.

Backends: "mpi" is MPI through mpi4py; "gloo" (torch's CPU backend) is mapped onto the same MPI
engine, so programs written for torch's gloo run with their backend name unchanged, under the
launcher (`python -m ember.distributed.run`) or mpirun. "nccl" runs CUDA tensors through NCCL
(CuPy) where a GPU is present (see _nccl.py). Collectives work on the tensors' NumPy buffers in
place; non-contiguous tensors go through a contiguous copy that is written back.
"""
import datetime
import enum
import functools
import io
import os
import warnings

import numpy as np

import ember
from ember.distributed import _mpi
from ember.distributed._mpi import DistError
from ember.tensor import Tensor

default_pg_timeout = datetime.timedelta(minutes=30)

_INIT_MSG = "Default process group has not been initialized, please make sure to call init_process_group."


class DistNetworkError(DistError):
    pass


class DistStoreError(DistError):
    pass


class Backend(str):
    """torch.distributed.Backend: the backend names, lower case."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, MPI]

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = name.lower()
        if value not in cls.backend_list and ":" not in value:
            raise ValueError(f"Unknown backend type {name}")
        return super().__new__(cls, value)


class ReduceOp:
    """torch.distributed.ReduceOp: ReduceOp.SUM is a RedOpType member (repr <RedOpType.SUM: 0>)."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class reduce_op:  # the deprecated spelling
    SUM, PRODUCT, MIN, MAX = ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX


_RT = ReduceOp.RedOpType


# -- process groups --------------------------------------------------------------------------

class ProcessGroup:
    """A communicator over some ranks (torch.distributed.ProcessGroup). Its collectives are
    reached through the module functions; rank() and size() are this group's."""

    def __init__(self, comm, ranks, backend, timeout_s, desc=""):
        self._comm = comm
        self._ranks = list(ranks)  # global ranks, by group rank
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._backend = backend
        self._timeout_s = timeout_s
        self._seq = 0
        self._desc = desc
        self._nccl = None

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return self._backend

    @property
    def group_desc(self):
        return self._desc

    def __repr__(self):
        return f"<ember.distributed.ProcessGroup {self._desc or 'group'} ranks={self._ranks} backend={self._backend}>"

    def _next(self, name):
        self._seq += 1
        return f"{name} (#{self._seq} of {self._desc or 'the group'})"

    def _wait(self, reqs, desc, timeout_s=None, statuses=None):
        _engine().poll(reqs, desc, self._timeout_s if timeout_s is None else timeout_s, self._ranks, statuses)


class GroupMember:
    WORLD = None  # the default group once initialised
    NON_GROUP_MEMBER = -100


class group:
    WORLD = None


class _State:
    engine = None
    world = None
    backend = None
    groups = []


_S = _State()


def _engine():
    if _S.engine is None:
        raise ValueError(_INIT_MSG)
    return _S.engine


def _group(g):
    if g is None or g is GroupMember.WORLD:
        if _S.world is None:
            raise ValueError(_INIT_MSG)
        return _S.world
    if _is_non_member(g):
        return None
    return g


def _is_non_member(g):
    return isinstance(g, int) and g == GroupMember.NON_GROUP_MEMBER


def _not_member(g, what):
    if _is_non_member(g):
        warnings.warn(f"Running {what} on global rank {get_rank()} which does not belong to the given group.")
        return True
    return False


# -- work and futures ----------------------------------------------------------------------

class Future:
    """torch.futures.Future, enough for DDP communication hooks: value(), wait(), then(), done()."""

    def __init__(self, waiter=None):
        self._waiter = waiter
        self._done = waiter is None and False
        self._value = None
        self._has_value = False
        self._exc = None

    def set_result(self, value):
        self._value, self._has_value, self._waiter = value, True, None

    def set_exception(self, exc):
        self._exc, self._has_value, self._waiter = exc, True, None

    def done(self):
        if self._has_value:
            return True
        w = self._waiter
        return w is not None and w(False)

    def wait(self):
        if not self._has_value:
            w = self._waiter
            if w is None:
                raise RuntimeError("Future has no result yet and nothing to wait on")
            w(True)
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self):
        return self.wait()

    def then(self, callback):
        parent = self
        fut = Future()

        def waiter(block):
            if not block and not parent.done():
                return False
            parent.wait()
            try:
                fut.set_result(callback(parent))
            except Exception as e:  # the callback's error is the new future's result
                fut.set_exception(e)
            return True
        fut._waiter = waiter
        return fut


class Work:
    """The handle of an asynchronous operation (async_op=True): wait(), is_completed()."""

    def __init__(self, pg, reqs, desc, finish=None, result=()):
        self._pg, self._reqs, self._desc = pg, reqs, desc
        self._finish = finish
        self._result = list(result)
        self._done = not reqs and finish is None
        self._source = -1
        self._statuses = None

    def _complete(self):
        if not self._done:
            self._done = True
            if self._finish is not None:
                r = self._finish()
                if r is not None:
                    self._source = r

    def is_completed(self):
        if self._done:
            return True
        if _mpi.MPI.Request.Testall(self._reqs, self._statuses):
            self._complete()
            return True
        return False

    def wait(self, timeout=None):
        if not self._done:
            t = None if timeout is None else (timeout.total_seconds() if hasattr(timeout, "total_seconds")
                                              else float(timeout))
            if self._reqs:
                self._pg._wait(self._reqs, self._desc, t, self._statuses)
            self._complete()
        return True

    def is_success(self):
        return self._done

    def exception(self):
        return None

    def source_rank(self):
        return self._source

    def result(self):
        return self._result

    def synchronize(self):
        self.wait()

    def get_future(self):
        return future_of(self)


def future_of(work):
    """The Future of a Work (MPI's or NCCL's): done when the work is, its value the work's result()."""
    def waiter(block):
        if block:
            work.wait()
            return True
        return work.is_completed()
    fut = Future(waiter)
    orig = fut.wait

    def wait():
        if not fut._has_value:
            work.wait()
            fut.set_result(work.result())
        return orig()
    fut.wait = wait
    fut.done = work.is_completed
    return fut


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


class GradBucket:
    """torch.distributed.GradBucket: what a communication hook receives."""

    def __init__(self, index, bucket, is_last):
        self._index, self._b, self._last = index, bucket, is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._b.buffer

    def gradients(self):
        return list(self._b.views)

    def parameters(self):
        return list(self._b.params)

    def is_last(self):
        return self._last

    def set_buffer(self, tensor):
        self._b.buffer.copy_(tensor)


# -- set-up and queries --------------------------------------------------------------------

def is_available():
    return True


def is_mpi_available():
    import importlib.util  # lazy: only asked here
    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available():
    return is_mpi_available()  # gloo is served by the MPI engine


def is_nccl_available():
    from ember.distributed import _nccl  # lazy: probes CuPy and a GPU only when asked
    return _nccl.available()


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_backend_available(backend):
    b = str(backend).lower()
    return {"mpi": is_mpi_available, "gloo": is_gloo_available, "nccl": is_nccl_available}.get(b, lambda: False)()


def is_initialized():
    return _S.world is not None


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _env_int(*names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return int(v)
    return None


def _seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    raise TypeError(f"Expected timeout argument to be of typedatetime.timedelta, got {timeout}")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group. The ranks are MPI's (start them with the launcher or
    mpirun); rank/world_size, or RANK/WORLD_SIZE from the environment, must agree with MPI's."""
    if _S.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is None:
        backend = "gloo"
    b = Backend(backend)
    if ":" in b:  # "cpu:gloo,cuda:nccl": the CPU entry decides
        parts = dict(p.split(":") for p in b.split(","))
        b = Backend(parts.get("cpu", "gloo"))
    if b == Backend.UNDEFINED:
        raise ValueError("Unknown backend type undefined")
    timeout_s = _seconds(timeout)
    if init_method is not None and not str(init_method).startswith(("env://", "tcp://", "file://", "mpi://")):
        raise ValueError(f"No rendezvous handler for {str(init_method).split('://')[0]}://")
    if not is_mpi_available():
        raise RuntimeError("ember.distributed needs mpi4py over an MPI library: pip install mpi4py "
                           "(Debian: apt-get install openmpi-bin libopenmpi-dev)")
    if b == Backend.NCCL and not is_nccl_available():
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    eng = _mpi._Engine(timeout_s)
    want_size = world_size if world_size != -1 else _env_int("WORLD_SIZE")
    want_rank = rank if rank != -1 else _env_int("RANK")
    if want_size is not None and want_size != eng.size:
        raise RuntimeError(
            f"ember.distributed: world_size is {want_size} but MPI started {eng.size} process(es); start the "
            f"ranks with `python -m ember.distributed.run --nproc-per-node {want_size} script.py` or "
            f"`mpirun -n {want_size} python script.py`")
    if want_rank is not None and want_rank != eng.rank and b != Backend.MPI:
        raise RuntimeError(f"ember.distributed: rank is {want_rank} but MPI numbers this process {eng.rank}; "
                           "let the launcher set RANK")
    _S.engine = eng
    _S.backend = str(b)
    world = ProcessGroup(eng.world, range(eng.size), str(b), timeout_s, group_name or "default_pg")
    if b == Backend.NCCL:
        from ember.distributed import _nccl  # lazy: CuPy only for the NCCL backend
        world._nccl = _nccl.NcclComm(world)
    _S.world = world
    GroupMember.WORLD = group.WORLD = world
    _S.groups = [world]
    eng.install_hook()


def destroy_process_group(group=None):
    if group is None or group is GroupMember.WORLD:
        if _S.world is None:
            raise AssertionError("Process group cannot be None")
        eng = _S.engine
        for g in _S.groups[1:]:
            g._comm.Free()
        eng.close()
        eng.world.Free()
        _S.world = _S.engine = _S.backend = None
        _S.groups = []
        GroupMember.WORLD = globals()["group"].WORLD = None
        return
    if _is_non_member(group):
        return
    if group in _S.groups:
        _S.groups.remove(group)
        group._comm.Free()


def get_rank(group=None):
    g = _group(group)
    if g is None:
        return -1
    if g is _S.world:
        return g._rank
    return g._rank


def get_world_size(group=None):
    g = _group(group)
    if g is None:
        return -1
    return g._size


def get_backend(group=None):
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
    return Backend(g._backend)


def get_process_group_ranks(group):
    g = _group(group)
    return list(g._ranks)


def get_global_rank(group, group_rank):
    g = _group(group)
    if g is _S.world:
        return group_rank
    if group_rank < 0 or group_rank >= len(g._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return g._ranks[group_rank]


def get_group_rank(group, global_rank):
    g = _group(group)
    if g is _S.world:
        return global_rank
    if global_rank not in g._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return g._ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group over `ranks` (global ranks; all by default). Every rank of the default group
    calls it, as in torch; ranks outside get GroupMember.NON_GROUP_MEMBER."""
    world = _group(None)
    M = _mpi.MPI
    if ranks is None:
        ranks = list(range(world._size))
    ranks = sorted(ranks) if sort_ranks else list(ranks)
    for r in ranks:
        if r < 0 or r >= world._size:
            raise ValueError("The new group's rank should be within the world_size set by init_process_group")
    mg = world._comm.Get_group().Incl(ranks)
    comm = world._comm.Create(mg)
    mg.Free()
    if comm == M.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    t = world._timeout_s if timeout is None else _seconds(timeout)
    g = ProcessGroup(comm, ranks, str(Backend(backend)) if backend else world._backend, t,
                     group_desc or f"group {ranks}")
    _S.groups.append(g)
    return g


def get_default_group():
    return _group(None)


# -- argument checks -----------------------------------------------------------------------

def _check_single_tensor(param, name):
    if not isinstance(param, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(param)} instead.")


def _check_tensor_list(param, name):
    if not isinstance(param, list) or not all(isinstance(p, Tensor) for p in param):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(param)} instead.")


def _check_op(op):
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError("(): incompatible function arguments. The following argument types are supported:\n"
                        "    1. (self: torch._C._distributed_c10d.AllreduceOptions, arg0: "
                        "torch._C._distributed_c10d.ReduceOp) -> None\n")
    if op is _RT.PREMUL_SUM:
        raise RuntimeError("PREMUL_SUM is not supported by ember's MPI backend")


def _prefix(g, op):
    return f"ProcessGroup{'Gloo' if g._backend == 'gloo' else 'MPI'}::{op}"


def _sizes(shape):
    return "(" + ", ".join(str(s) for s in shape) + ")"  # gloo's spelling: (3, 4)


def _cpu(g, *tensors, nccl_ok=False):
    for t in tensors:
        dev = t._device
        if dev.type != "cpu":
            if dev.type == "meta":
                raise _MetaNoop
            if dev.type == "cuda" and nccl_ok and g._nccl is not None:
                return False
            raise RuntimeError(f"No backend type associated with device type {dev.type}")
    return True


class _MetaNoop(Exception):
    """Raised by _cpu for meta tensors: torch's gloo completes a collective on them doing nothing."""


def _meta_noop(fn):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _MetaNoop:
            return Work(None, [], "no-op") if kwargs.get("async_op") else None
    return op


def _contig(t):
    """(contiguous writable array holding t's values, the tensor's own array to write back to or None)."""
    a = t._np
    if a.flags.c_contiguous and a.flags.writeable:
        return a, None
    return np.ascontiguousarray(a), a


def _readable(t):
    a = t._np
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _write(t, a, src):
    """Write `src` into tensor t (whose array is a) and bump its version."""
    if src is not a:
        np.copyto(a, src.reshape(a.shape), casting="unsafe")
    t._bump_version()


_MPI_OPS = None


def _mpi_op(op):
    global _MPI_OPS
    if _MPI_OPS is None:
        M = _mpi.MPI
        _MPI_OPS = {_RT.SUM: M.SUM, _RT.AVG: M.SUM, _RT.PRODUCT: M.PROD, _RT.MIN: M.MIN, _RT.MAX: M.MAX,
                    _RT.BAND: M.BAND, _RT.BOR: M.BOR, _RT.BXOR: M.BXOR}
    return _MPI_OPS[op]


def _reduce_stack(stack, op, dtype):
    """Reduce the rows of `stack` (one per rank, in rank order) with `op`, in NumPy: the path of
    the dtypes MPI cannot reduce (float16, bfloat16, bool)."""
    if dtype == np.bool_:
        if op in (_RT.SUM, _RT.MAX, _RT.BOR, _RT.AVG):
            return np.logical_or.reduce(stack, axis=0)
        if op in (_RT.PRODUCT, _RT.MIN, _RT.BAND):
            return np.logical_and.reduce(stack, axis=0)
        return np.logical_xor.reduce(stack, axis=0)
    wide = stack.astype(np.float32) if dtype.kind in "fV" and dtype.itemsize == 2 else stack
    if op in (_RT.SUM, _RT.AVG):
        out = wide[0].copy()
        for row in wide[1:]:
            out = out + row
        if op is _RT.AVG:
            out = out / len(stack)
    elif op is _RT.PRODUCT:
        out = wide[0].copy()
        for row in wide[1:]:
            out = out * row
    elif op is _RT.MIN:
        out = np.min(wide, axis=0)
    elif op is _RT.MAX:
        out = np.max(wide, axis=0)
    elif op is _RT.BAND:
        out = np.bitwise_and.reduce(stack, axis=0)
    elif op is _RT.BOR:
        out = np.bitwise_or.reduce(stack, axis=0)
    else:
        out = np.bitwise_xor.reduce(stack, axis=0)
    return out.astype(dtype)


def _avg(buf, n):
    if buf.dtype.kind in "fc":
        buf /= n
    else:
        np.floor_divide(buf, n, out=buf)


def _check_complex(t, op, what):
    if t.is_complex() and op not in (_RT.SUM, _RT.AVG, _RT.PREMUL_SUM):
        raise ValueError(f"{what} does not support {op} on complex tensors")


# -- collectives ---------------------------------------------------------------------------

@_meta_noop
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_single_tensor(tensor, "tensor")
    if _not_member(group, "all_reduce"):
        return None
    g = _group(group)
    _check_op(op)
    _check_complex(tensor, op, "all_reduce")
    if not _cpu(g, tensor, nccl_ok=True):
        return _run(g._nccl.all_reduce(tensor, op), async_op)
    desc = g._next("ALLREDUCE")
    buf, back = _contig(tensor)
    n = g._size
    if _mpi.native(buf.dtype):
        req = g._comm.Iallreduce(_mpi.MPI.IN_PLACE, _mpi.typed(buf), _mpi_op(op))

        def finish():
            if op is _RT.AVG:
                _avg(buf, n)
            _write(tensor, tensor._np if back is not None else buf, buf)
        return _run(Work(g, [req], desc, finish, [tensor]), async_op)
    stack = np.empty((n,) + buf.shape, buf.dtype)
    req = g._comm.Iallgather(_mpi.raw(buf), _mpi.raw(stack))

    def finish_np():
        _write(tensor, tensor._np, _reduce_stack(stack, op, buf.dtype))
    return _run(Work(g, [req], desc, finish_np, [tensor]), async_op)


def _root(g, src, group_src, what, name="src"):
    if group_src is not None:
        if src is not None:
            raise ValueError(f"Can not specify both group_{name} and {name}")
        r = group_src
    elif src is None:
        r = 0
    else:
        r = get_group_rank(g, src)
    if r < 0 or r >= g._size:
        raise RuntimeError(f"{_prefix(g, what)}: invalid root rank: {r}")
    return r


@_meta_noop
def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    _check_single_tensor(tensor, "tensor")
    if _not_member(group, "broadcast"):
        return None
    g = _group(group)
    root = _root(g, src, group_src, "broadcast")
    if not _cpu(g, tensor, nccl_ok=True):
        return _run(g._nccl.broadcast(tensor, root), async_op)
    desc = g._next("BROADCAST")
    buf, back = _contig(tensor)
    req = g._comm.Ibcast(_mpi.raw(buf), root=root)
    mine = g._rank == root

    def finish():
        if not mine:
            _write(tensor, tensor._np if back is not None else buf, buf)
    return _run(Work(g, [req], desc, finish, [tensor]), async_op)


@_meta_noop
def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    _check_single_tensor(tensor, "tensor")
    if _not_member(group, "reduce"):
        return None
    g = _group(group)
    _check_op(op)
    _check_complex(tensor, op, "reduce")
    root = _root(g, dst, group_dst, "reduce", "dst")
    _cpu(g, tensor)
    desc = g._next("REDUCE")
    buf, back = _contig(tensor)
    n = g._size
    mine = g._rank == root
    if _mpi.native(buf.dtype):
        M = _mpi.MPI
        if mine:
            req = g._comm.Ireduce(M.IN_PLACE, _mpi.typed(buf), _mpi_op(op), root=root)
        else:
            req = g._comm.Ireduce(_mpi.typed(buf), None, _mpi_op(op), root=root)

        def finish():
            if mine:
                if op is _RT.AVG:
                    _avg(buf, n)
                _write(tensor, tensor._np if back is not None else buf, buf)
        return _run(Work(g, [req], desc, finish, [tensor]), async_op)
    stack = np.empty((n,) + buf.shape, buf.dtype) if mine else None
    req = g._comm.Igather(_mpi.raw(buf), _mpi.raw(stack) if mine else None, root=root)

    def finish_np():
        if mine:
            _write(tensor, tensor._np, _reduce_stack(stack, op, buf.dtype))
    return _run(Work(g, [req], desc, finish_np, [tensor]), async_op)


def _check_list_sizes(g, what, lst, t, check_dtype=True):
    if len(lst) != g._size:
        raise RuntimeError(f"{_prefix(g, what)}: invalid output tensor list at index 0 "
                           f"(expected length {g._size}, got {len(lst)})")
    for i, o in enumerate(lst):
        if tuple(o._shape) != tuple(t._shape):
            raise RuntimeError(f"{_prefix(g, what)}: invalid tensor size at index {i} "
                               f"(expected {_sizes(t._shape)}, got {_sizes(o._shape)})")
        if check_dtype and o._dtype is not t._dtype:
            raise RuntimeError(f"{_prefix(g, what)}: invalid tensor type at index {i} "
                               f"(expected {t._dtype}, got {o._dtype})")


@_meta_noop
def all_gather(tensor_list, tensor, group=None, async_op=False):
    _check_tensor_list(tensor_list, "tensor_list")
    _check_single_tensor(tensor, "tensor")
    if _not_member(group, "all_gather"):
        return None
    g = _group(group)
    _cpu(g, tensor, *tensor_list)
    _check_list_sizes(g, "allgather", tensor_list, tensor)
    desc = g._next("ALLGATHER")
    src = _readable(tensor)
    stack = np.empty((g._size,) + src.shape, src.dtype)
    req = g._comm.Iallgather(_mpi.raw(src), _mpi.raw(stack))

    def finish():
        for o, row in zip(tensor_list, stack):
            _write(o, o._np, row)
    return _run(Work(g, [req], desc, finish, tensor_list), async_op)


@_meta_noop
def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    _check_single_tensor(input_tensor, "input_tensor")
    _check_single_tensor(output_tensor, "output_tensor")
    if _not_member(group, "all_gather_into_tensor"):
        return None
    g = _group(group)
    if not _cpu(g, output_tensor, input_tensor, nccl_ok=True):
        return _run(g._nccl.all_gather_into_tensor(output_tensor, input_tensor), async_op)
    if output_tensor._dtype is not input_tensor._dtype:
        raise RuntimeError(f"{_prefix(g, 'allgather')}: invalid tensor type at index 0 "
                           f"(expected {input_tensor._dtype}, got {output_tensor._dtype})")
    oshape, ishape = tuple(output_tensor._shape), tuple(input_tensor._shape)
    if not oshape:
        raise RuntimeError(f"{_prefix(g, 'allgather')}: invalid tensor size at index 0 "
                           f"(expected {_sizes(ishape)}, got {_sizes(oshape)})")
    cs = -(-oshape[0] // g._size)  # the output split as torch.chunk splits it
    for i in range(g._size):
        part = (max(0, min(cs, oshape[0] - i * cs)),) + oshape[1:]
        if part != ishape:
            raise RuntimeError(f"{_prefix(g, 'allgather')}: invalid tensor size at index {i} "
                               f"(expected {_sizes(ishape)}, got {_sizes(part)})")
    desc = g._next("ALLGATHER")
    src = _readable(input_tensor)
    buf, back = _contig(output_tensor)
    req = g._comm.Iallgather(_mpi.raw(src), _mpi.raw(buf))

    def finish():
        _write(output_tensor, output_tensor._np if back is not None else buf, buf)
    return _run(Work(g, [req], desc, finish, [output_tensor]), async_op)


_all_gather_base = all_gather_into_tensor


def _reduce_scatter_rows(g, op, rows_src, out_tensor, desc, async_op):
    """rows_src: contiguous (size, *shape) array of this rank's inputs; the result row of this rank
    goes into out_tensor."""
    n = g._size
    buf, back = _contig(out_tensor)
    if _mpi.native(rows_src.dtype):
        req = g._comm.Ireduce_scatter_block(_mpi.typed(rows_src), _mpi.typed(buf), _mpi_op(op))

        def finish():
            if op is _RT.AVG:
                _avg(buf, n)
            _write(out_tensor, out_tensor._np if back is not None else buf, buf)
        return _run(Work(g, [req], desc, finish, [out_tensor]), async_op)
    # NumPy path: every rank receives every rank's row for it, then reduces
    got = np.empty_like(rows_src)
    req = g._comm.Ialltoall(_mpi.raw(rows_src), _mpi.raw(got))

    def finish_np():
        _write(out_tensor, out_tensor._np, _reduce_stack(got, op, rows_src.dtype))
    return _run(Work(g, [req], desc, finish_np, [out_tensor]), async_op)


@_meta_noop
def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    _check_single_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    if _not_member(group, "reduce_scatter"):
        return None
    g = _group(group)
    _check_op(op)
    _check_complex(output, op, "reduce_scatter")
    _cpu(g, output, *input_list)
    if len(input_list) != g._size:
        raise RuntimeError(f"{_prefix(g, 'reduce_scatter')}: invalid input tensor list "
                           f"(expected length {g._size}, got {len(input_list)})")
    for i, t in enumerate(input_list):
        if tuple(t._shape) != tuple(output._shape):
            raise RuntimeError(f"{_prefix(g, 'reduce_scatter')}: invalid tensor size at index {i} "
                               f"(expected {_sizes(output._shape)}, got {_sizes(t._shape)})")
    rows = np.stack([t._np for t in input_list]).astype(output._np.dtype, copy=False)
    return _reduce_scatter_rows(g, op, np.ascontiguousarray(rows), output, g._next("REDUCE_SCATTER"), async_op)


@_meta_noop
def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    if _not_member(group, "reduce_scatter_tensor"):
        return None
    g = _group(group)
    _check_op(op)
    _check_complex(output, op, "reduce_scatter_tensor")
    if not _cpu(g, output, input, nccl_ok=True):
        return _run(g._nccl.reduce_scatter_tensor(output, input, op), async_op)
    if input.numel() != output.numel() * g._size:
        raise RuntimeError(f"{_prefix(g, 'reduce_scatter')}: invalid tensor size "
                           f"(expected input of {output.numel() * g._size} elements, got {input.numel()})")
    rows = _readable(input).reshape((g._size,) + tuple(output._shape))
    return _reduce_scatter_rows(g, op, rows, output, g._next("REDUCE_SCATTER"), async_op)


_reduce_scatter_base = reduce_scatter_tensor


@_meta_noop
def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    _check_single_tensor(tensor, "tensor")
    if gather_list:
        _check_tensor_list(gather_list, "gather_list")
    else:
        gather_list = []
    if _not_member(group, "gather"):
        return None
    g = _group(group)
    root = _root(g, dst, group_dst, "gather", "dst")
    mine = g._rank == root
    _cpu(g, tensor, *gather_list)
    if mine:
        _check_list_sizes(g, "gather", gather_list, tensor)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    desc = g._next("GATHER")
    src = _readable(tensor)
    stack = np.empty((g._size,) + src.shape, src.dtype) if mine else None
    req = g._comm.Igather(_mpi.raw(src), _mpi.raw(stack) if mine else None, root=root)

    def finish():
        if mine:
            for o, row in zip(gather_list, stack):
                _write(o, o._np, row)
    return _run(Work(g, [req], desc, finish, gather_list), async_op)


@_meta_noop
def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    _check_single_tensor(tensor, "tensor")
    if scatter_list:
        _check_tensor_list(scatter_list, "scatter_list")
    else:
        scatter_list = []
    if _not_member(group, "scatter"):
        return None
    g = _group(group)
    root = _root(g, src, group_src, "scatter")
    mine = g._rank == root
    _cpu(g, tensor, *scatter_list)
    if mine:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list_sizes(g, "scatter", scatter_list, tensor)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    desc = g._next("SCATTER")
    buf, back = _contig(tensor)
    rows = np.ascontiguousarray(np.stack([t._np for t in scatter_list])) if mine else None
    req = g._comm.Iscatter(_mpi.raw(rows) if mine else None, _mpi.raw(buf), root=root)

    def finish():
        _write(tensor, tensor._np if back is not None else buf, buf)
    return _run(Work(g, [req], desc, finish, [tensor]), async_op)


@_meta_noop
def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    if _not_member(group, "all_to_all"):
        return None
    g = _group(group)
    _cpu(g, *output_tensor_list, *input_tensor_list)
    n = g._size
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise RuntimeError(f"{_prefix(g, 'alltoall')}: the number of input and output tensors must equal "
                           f"the group size {n}")
    desc = g._next("ALLTOALL")
    M = _mpi.MPI
    reqs, outs = [], []
    comm = g._comm
    # each pair exchanges its own slot: shapes may differ per peer, as torch allows
    tag = 9000 + (g._seq % 1000)
    for peer in range(n):
        src = _readable(input_tensor_list[peer])
        o = output_tensor_list[peer]
        ob, _ = _contig(o)
        if peer == g._rank:
            if src.nbytes != ob.nbytes:
                raise RuntimeError(f"{_prefix(g, 'alltoall')}: input and output tensors must have the same size")
            ob[...] = src.reshape(ob.shape)
        else:
            reqs.append(comm.Isend(_mpi.raw(src), dest=peer, tag=tag))
            reqs.append(comm.Irecv(_mpi.raw(ob), source=peer, tag=tag))
        outs.append((o, ob))
    del M

    def finish():
        for o, ob in outs:
            _write(o, o._np, ob)
    return _run(Work(g, reqs, desc, finish, output_tensor_list), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    g = _group(group)
    n = g._size
    d0o, d0i = (output._shape[0] if output._shape else 1), (input._shape[0] if input._shape else 1)
    os_ = list(output_split_sizes) if output_split_sizes else [d0o // n] * n
    is_ = list(input_split_sizes) if input_split_sizes else [d0i // n] * n
    ins = list(input.split(is_, 0)) if input._shape else [input]
    outs = list(output.split(os_, 0)) if output._shape else [output]
    return all_to_all(outs, ins, group=group, async_op=async_op)


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    if _not_member(group, "barrier"):
        return None
    g = _group(group)
    desc = g._next("BARRIER")
    req = g._comm.Ibarrier()
    w = Work(g, [req], desc)
    if async_op:
        return w
    w.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    return barrier(group, timeout=timeout)


# -- point to point ------------------------------------------------------------------------

def _peer(g, r, group_r, name):
    if group_r is not None:
        if r is not None:
            raise ValueError(f"Can not specify both group_{name} and {name}")
        return group_r
    if r is None:
        raise ValueError(f"Must specify either group_{name} or {name}")
    return get_group_rank(g, r)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    _check_single_tensor(tensor, "tensor")
    if _not_member(group, "isend"):
        return None
    g = _group(group)
    peer = _peer(g, dst, group_dst, "dst")
    if peer == g._rank:
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank "
                         "of the current process.")
    if peer < 0 or peer >= g._size:
        raise RuntimeError(f"{_prefix(g, 'send')}: invalid destination rank: {peer}")
    _cpu(g, tensor)
    src = _readable(tensor)
    req = g._comm.Isend(_mpi.raw(src), dest=peer, tag=tag)
    return Work(g, [req], g._next(f"SEND to rank {g._ranks[peer]}"), None, [tensor])


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    _check_single_tensor(tensor, "tensor")
    if _not_member(group, "irecv"):
        return None
    g = _group(group)
    M = _mpi.MPI
    if src is None and group_src is None:
        peer = M.ANY_SOURCE
    else:
        peer = _peer(g, src, group_src, "src")
        if peer == g._rank:
            raise RuntimeError("Invalid source rank: source rank should not be the same as the rank of the "
                               "current process.")
        if peer < 0 or peer >= g._size:
            raise RuntimeError(f"{_prefix(g, 'recv')}: invalid source rank: {peer}")
    _cpu(g, tensor)
    buf, back = _contig(tensor)
    req = g._comm.Irecv(_mpi.raw(buf), source=peer, tag=tag)
    w = Work(g, [req], g._next("RECV"), None, [tensor])
    w._statuses = [M.Status()]

    def finish():
        _write(tensor, tensor._np if back is not None else buf, buf)
        s = w._statuses[0].Get_source()
        return g._ranks[s] if s >= 0 else -1
    w._finish = finish
    return w


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    return w.source_rank()


class P2POp:
    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer


def batch_isend_irecv(p2p_op_list):
    return [op.op(op.tensor, op.peer, op.group, op.tag) for op in p2p_op_list]


# -- object collectives (ember.save / ember.load: the weights_only unpickler's rules) -------

def _to_bytes(obj):
    f = io.BytesIO()
    ember.save(obj, f)
    return np.frombuffer(f.getvalue(), np.uint8)


def _from_bytes(b):
    return ember.load(io.BytesIO(b.tobytes()), weights_only=True)


def all_gather_object(object_list, obj, group=None):
    """Gather picklable objects from every rank. They travel as ember.save archives and are read
    with ember.load(weights_only=True): the same allowlist as ember.load (tensors, containers,
    numbers, strings; other classes through ember.serialization.add_safe_globals)."""
    if _not_member(group, "all_gather_object"):
        return
    g = _group(group)
    data = _to_bytes(obj)
    sizes = np.empty(g._size, np.int64)
    desc = g._next("ALLGATHER (object sizes)")
    g._wait([g._comm.Iallgather(np.array([data.size], np.int64), sizes)], desc)
    out = np.empty(int(sizes.sum()), np.uint8)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    M = _mpi.MPI
    req = g._comm.Iallgatherv([data, M.BYTE], [out, (sizes.tolist(), displs.tolist()), M.BYTE])
    g._wait([req], g._next("ALLGATHER (objects)"))
    for i in range(g._size):
        object_list[i] = _from_bytes(out[displs[i]:displs[i] + sizes[i]])


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    if _not_member(group, "broadcast_object_list"):
        return
    g = _group(group)
    root = _root(g, src, group_src, "broadcast")
    mine = g._rank == root
    n = len(object_list)
    if mine:
        parts = [_to_bytes(o) for o in object_list]
        sizes = np.array([p.size for p in parts], np.int64)
    else:
        sizes = np.empty(n, np.int64)
    g._wait([g._comm.Ibcast(sizes, root=root)], g._next("BROADCAST (object sizes)"))
    data = np.concatenate(parts) if mine and n else np.empty(int(sizes.sum()), np.uint8)
    g._wait([g._comm.Ibcast(_mpi.raw(data), root=root)], g._next("BROADCAST (objects)"))
    if not mine:
        off = 0
        for i in range(n):
            object_list[i] = _from_bytes(data[off:off + sizes[i]])
            off += int(sizes[i])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    g = _group(group)
    out = [None] * g._size
    all_gather_object(out, obj, group)
    root = _root(g, dst, group_dst, "gather", "dst")
    if g._rank == root:
        object_gather_list[:] = out


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    g = _group(group)
    root = _root(g, src, group_src, "scatter")
    objs = list(scatter_object_input_list) if g._rank == root else [None] * g._size
    broadcast_object_list(objs, src=None, group=group, group_src=root)
    scatter_object_output_list[0] = objs[g._rank]
