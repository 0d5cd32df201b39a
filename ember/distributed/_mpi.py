"""The MPI engine under ember.distributed: mpi4py over Open MPI, with requests polled until a timeout.

Every operation is a nonblocking MPI request (Iallreduce, Ibcast, Isend, ...). Waiting on it
polls `Testall` until it completes, the process group's timeout passes, or a peer reports that it
failed. A second communicator (`ctrl`, a duplicate of the world) carries that control traffic:

- FAIL: a rank whose program raised sends its exception text to every other rank before it
  exits (the excepthook installed by init_process_group); a rank waiting in a collective raises
  DistBackendError naming the failed rank and acknowledges (ACK), so the failing rank exits only
  once its peers have reported it (or after a grace period).
- QUERY/STATUS: a rank whose wait timed out asks the others what they are waiting in; a rank
  that does not answer is not in any ember collective (hung in its own code, or dead), and the
  error names it.

mpi4py is imported only when a process group is created (it initialises MPI).
"""
import os
import sys
import time

import numpy as np

_FAIL, _ACK, _QUERY, _STATUS = 7101, 7102, 7103, 7104
_sched_yield = getattr(os, "sched_yield", lambda: time.sleep(0))

MPI = None  # mpi4py.MPI once loaded


def load():
    global MPI
    if MPI is None:
        import mpi4py  # lazy: optional dependency, and importing mpi4py.MPI initialises MPI
        mpi4py.rc.threads = False
        from mpi4py import MPI as _M  # lazy: see above
        MPI = _M
    return MPI


class DistError(RuntimeError):
    """torch.distributed.DistError"""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError: an error in the communication backend (a timeout, a
    failed peer)."""


DistError.__module__ = DistBackendError.__module__ = "ember.distributed"


class _Engine:
    """Per-process state of the MPI engine: the world and control communicators, what this rank
    is waiting in, and what it has heard from its peers."""

    def __init__(self, timeout_s):
        M = load()
        self.world = M.COMM_WORLD.Dup()
        self.ctrl = M.COMM_WORLD.Dup()
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.timeout_s = timeout_s
        self.current = None  # description of the operation being waited on
        self.failed = {}  # rank -> text
        self.unresponsive = set()  # ranks that did not answer after a timeout
        self.acks = set()
        self.replies = {}
        self._sends = []  # control sends kept alive until done
        self._prev_hook = None
        self.closed = False

    # -- control traffic
    def _isend(self, obj, dst, tag):
        self._sends = [r for r in self._sends if not r.Test()]
        self._sends.append(self.ctrl.isend(obj, dest=dst, tag=tag))

    def service(self):
        """Answer and record control messages; raise if a peer reported a failure."""
        M = MPI
        ctrl = self.ctrl
        st = M.Status()
        while ctrl.Iprobe(source=M.ANY_SOURCE, tag=M.ANY_TAG, status=st):
            src, tag = st.Get_source(), st.Get_tag()
            msg = ctrl.recv(source=src, tag=tag)
            if tag == _FAIL:
                self.failed[src] = msg
                text = (f"[Rank {self.rank}] rank {src} failed while this rank waited in "
                        f"{self.current or 'a collective'}: {msg}")
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
                self._isend(None, src, _ACK)
                raise DistBackendError(text)
            if tag == _QUERY:
                self._isend(self.current, src, _STATUS)
            elif tag == _STATUS:
                self.replies[src] = msg
            elif tag == _ACK:
                self.acks.add(src)

    def poll(self, reqs, desc, timeout_s, peers, statuses=None):
        """Wait for every request in `reqs`; raise DistBackendError on a peer's failure or on
        timeout (naming the peers, global ranks, that did not join)."""
        if statuses is not None:
            def Testall(r, _t=MPI.Request.Testall):
                return _t(r, statuses)
        else:
            Testall = MPI.Request.Testall
        if Testall(reqs):
            return
        prev, self.current = self.current, desc
        try:
            t0 = time.monotonic()
            deadline = t0 + timeout_s
            n = 0
            waited = 0.0
            yield_ = _sched_yield
            while not Testall(reqs):
                n += 1
                if n & 31 == 0:
                    self.service()
                    now = time.monotonic()
                    if now > deadline:
                        if self._timed_out(reqs, desc, timeout_s, peers, Testall):
                            return
                    waited = now - t0
                # spin for 100 µs, then give the core to whoever needs it (ranks may share cores)
                # until 5 ms, then sleep between polls
                if waited > 0.005:
                    time.sleep(0.0002)
                elif waited > 0.0001:
                    yield_()
        finally:
            self.current = prev

    def _timed_out(self, reqs, desc, timeout_s, peers, Testall):
        others = [r for r in peers if r != self.rank]
        self.replies = {}
        for r in others:
            self._isend(desc, r, _QUERY)
        end = time.monotonic() + min(max(0.5, timeout_s / 2), 5.0)
        while time.monotonic() < end and len(self.replies) < len(others):
            if Testall(reqs):
                return True
            self.service()
            time.sleep(0.001)
        parts = []
        for r in others:
            if r not in self.replies:
                self.unresponsive.add(r)
                parts.append(f"rank {r} did not join it and does not answer (it is hung outside the process "
                             f"group's collectives, or dead)")
            elif self.replies[r] != desc:
                parts.append(f"rank {r} is waiting in {self.replies[r]}")
        if not parts:
            parts.append("every rank is waiting in it")
        ms = int(round(timeout_s * 1000))
        raise DistBackendError(f"[Rank {self.rank}] Timed out waiting {ms}ms for {desc} to complete: "
                               + "; ".join(parts))

    def notify_failure(self, text):
        """Tell every other rank this one failed, and wait (bounded) until they acknowledge."""
        others = [r for r in range(self.size) if r != self.rank and r not in self.failed]
        for r in others:
            self._isend(text, r, _FAIL)
        end = time.monotonic() + min(self.timeout_s, 30.0)
        waiting = [r for r in others if r not in self.unresponsive]
        while time.monotonic() < end and not all(r in self.acks or r in self.failed for r in waiting):
            try:
                self.service()
            except DistBackendError:
                pass  # a peer failed too: it is already counted in self.failed
            time.sleep(0.002)

    # -- the excepthook that reports an uncaught exception to the peers
    def install_hook(self):
        self._prev_hook = sys.excepthook
        sys.excepthook = self._excepthook

    def _excepthook(self, tp, val, tb):
        (self._prev_hook or sys.__excepthook__)(tp, val, tb)
        if self.closed or self.size == 1:
            return
        try:
            self.notify_failure(f"{tp.__name__}: {val}")
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)  # MPI_Finalize would wait for the peers: leave now, mpirun ends the job

    def close(self):
        if sys.excepthook == self._excepthook:
            sys.excepthook = self._prev_hook or sys.__excepthook__
        self.closed = True


# -- buffers -----------------------------------------------------------------------------

# NumPy dtypes MPI reduces natively (mpi4py maps them from the buffer format)
_NATIVE = {np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                 np.uint64, np.float32, np.float64, np.complex64, np.complex128)}


def native(dtype):
    return dtype in _NATIVE


def raw(a):
    """An MPI buffer spec of the contiguous array `a` as bytes."""
    return [a.reshape(-1).view(np.uint8), MPI.BYTE]


def typed(a):
    return a.reshape(-1)
