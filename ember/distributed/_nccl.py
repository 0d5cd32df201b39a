"""The NCCL path for CUDA tensors (backend "nccl"), through CuPy's NCCL bindings.

The ranks still come from MPI: rank 0 creates the NCCL unique id and the MPI world broadcasts it;
each rank then opens an NcclCommunicator on its current CUDA device (LOCAL_RANK by default).
all_reduce, broadcast, all_gather_into_tensor and reduce_scatter_tensor run on CUDA tensors
through NCCL on the current stream; the other collectives take CPU tensors through MPI.

This path needs CuPy and a GPU; it is not exercised by the CPU test suite.
"""
import os

_AVAILABLE = None


def available():
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            import cupy  # lazy: optional dependency, probed only when asked
            from cupy.cuda import nccl  # lazy: see above
            _AVAILABLE = bool(nccl.available) and cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:  # no CuPy, no driver, no device: NCCL is not available
            _AVAILABLE = False
    return _AVAILABLE


def _ptr(t):
    a = t._np
    iface = getattr(a, "__cuda_array_interface__", None)
    if iface is None:
        raise RuntimeError("ProcessGroupNCCL: expected a CUDA tensor")
    if not t.is_contiguous():
        raise RuntimeError("Tensors must be contiguous")
    return iface["data"][0]


class _Work:
    def __init__(self, tensors, event):
        self._tensors, self._event, self._done = tensors, event, False

    def wait(self, timeout=None):
        if not self._done:
            self._event.synchronize()
            self._done = True
            for t in self._tensors:
                t._bump_version()
        return True

    def is_completed(self):
        return self._done or self._event.done

    def result(self):
        return self._tensors

    def get_future(self):
        from ember.distributed.distributed_c10d import future_of  # lazy: the module that imports this one
        return future_of(self)


class NcclComm:
    def __init__(self, pg):
        import cupy  # lazy: see available()
        from cupy.cuda import nccl  # lazy: see available()
        self._cp, self._nccl = cupy, nccl
        dev = int(os.environ.get("LOCAL_RANK", "0")) % max(cupy.cuda.runtime.getDeviceCount(), 1)
        cupy.cuda.Device(dev).use()
        uid = nccl.get_unique_id() if pg._rank == 0 else None
        uid = pg._comm.bcast(uid, root=0)
        self._comm = nccl.NcclCommunicator(pg._size, uid, pg._rank)
        self._size = pg._size

    def _dtype(self, t):
        n = self._nccl
        table = {"float32": n.NCCL_FLOAT32, "float64": n.NCCL_FLOAT64, "float16": n.NCCL_FLOAT16,
                 "int32": n.NCCL_INT32, "int64": n.NCCL_INT64, "uint8": n.NCCL_UINT8, "int8": n.NCCL_INT8}
        name = str(t._dtype).replace("torch.", "")
        if name not in table:
            raise RuntimeError(f"ProcessGroupNCCL: unsupported dtype {t._dtype}")
        return table[name]

    def _op(self, op):
        n = self._nccl
        name = op.name
        return {"SUM": n.NCCL_SUM, "AVG": getattr(n, "NCCL_AVG", n.NCCL_SUM), "PRODUCT": n.NCCL_PROD,
                "MIN": n.NCCL_MIN, "MAX": n.NCCL_MAX}[name]

    def _work(self, *tensors):
        ev = self._cp.cuda.Event()
        ev.record()
        return _Work(list(tensors), ev)

    def all_reduce(self, t, op):
        s = self._cp.cuda.get_current_stream().ptr
        self._comm.allReduce(_ptr(t), _ptr(t), t.numel(), self._dtype(t), self._op(op), s)
        return self._work(t)

    def broadcast(self, t, root):
        s = self._cp.cuda.get_current_stream().ptr
        self._comm.broadcast(_ptr(t), _ptr(t), t.numel(), self._dtype(t), root, s)
        return self._work(t)

    def all_gather_into_tensor(self, out, inp):
        s = self._cp.cuda.get_current_stream().ptr
        self._comm.allGather(_ptr(inp), _ptr(out), inp.numel(), self._dtype(inp), s)
        return self._work(out)

    def reduce_scatter_tensor(self, out, inp, op):
        s = self._cp.cuda.get_current_stream().ptr
        self._comm.reduceScatter(_ptr(inp), _ptr(out), out.numel(), self._dtype(out), self._op(op), s)
        return self._work(out)
