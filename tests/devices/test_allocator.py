"""The generic caching allocator (ember/core/allocator.py) over NumPy buffers, with hand-driven
events standing in for a device's streams; and the shared strided view kernels."""
import gc

import numpy as np
import pytest

import ember
from ember.core.allocator import CachingAllocator, OutOfMemoryError, round_size
from ember.core.storage import UntypedStorage


class FakeEvent:
    """Completes when the test says so (the stream's work 'finishes')."""

    def __init__(self, stream):
        self.stream = stream
        self.done = False

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True


class Recorder:
    def __init__(self):
        self.events = []

    def __call__(self, stream):
        ev = FakeEvent(stream)
        self.events.append(ev)
        return ev


def ptr(b):
    return b.buf.__array_interface__["data"][0]


MiB = 1 << 20


def make(**kw):
    freed = []
    rec = Recorder()
    a = CachingAllocator(lambda n: np.zeros(n, np.uint8), freed.append, record_event=rec, **kw)
    return a, rec, freed


def test_round_size():
    assert round_size(0) == 512 and round_size(1) == 512 and round_size(512) == 512
    assert round_size(513) == 1024


def test_reuse_on_same_stream():
    a, _, _ = make()
    b1 = a.malloc(1000, "s0")
    assert b1.size == 1024 and b1.requested == 1000 and b1.buf.size == 1024 and b1.stream == "s0"
    p1 = ptr(b1)
    a.free(b1)
    assert a.memory_allocated() == 0 and a.memory_reserved() == 2 * MiB  # one small segment
    b2 = a.malloc(900, "s0")
    assert ptr(b2) == p1  # the cached memory comes back without a raw allocation
    assert a.memory_stats()["num_device_alloc"] == 1


def test_no_reuse_across_streams():
    a, _, _ = make()
    b1 = a.malloc(1000, "s0")
    b2 = a.malloc(1000, "s1")
    assert b1.segment is not b2.segment  # a stream's blocks come from its own segments
    p1 = ptr(b1)
    a.free(b1)
    b3 = a.malloc(1000, "s1")  # s0's free memory is not s1's
    assert b3.segment is b2.segment and ptr(b3) != p1
    assert a.memory_reserved() == 2 * 2 * MiB
    b4 = a.malloc(1000, "s0")
    assert ptr(b4) == p1


def test_record_stream_delays_reuse():
    a, rec, _ = make()
    b = a.malloc(2048, "s0")
    p = ptr(b)
    a.record_stream(b, "s1")
    a.free(b)
    assert len(rec.events) == 1 and rec.events[0].stream == "s1"
    assert a.memory_allocated() == 0
    assert a.memory_stats()["active_bytes.all.current"] == 2048  # waiting for s1's work
    c = a.malloc(2048, "s0")
    assert ptr(c) != p  # s1 may still be reading the old block
    rec.events[0].done = True
    d = a.malloc(2048, "s0")
    assert ptr(d) == p
    a.free(c)
    a.free(d)
    assert a.memory_stats()["active_bytes.all.current"] == 0


def test_record_stream_same_stream_is_noop():
    a, rec, _ = make()
    b = a.malloc(10, "s0")
    a.record_stream(b, "s0")
    a.free(b)
    assert rec.events == []


def test_empty_cache_waits_for_events_and_releases():
    a, rec, freed = make()
    b1 = a.malloc(100, "s0")
    b2 = a.malloc(100, "s0")
    a.record_stream(b2, "s1")
    a.free(b1)
    a.free(b2)
    assert a.memory_reserved() == 2 * MiB
    a.empty_cache()
    assert rec.events[0].done  # synchronized
    assert a.memory_reserved() == 0 and len(freed) == 1
    st = a.memory_stats()
    assert st["segment.all.current"] == 0 and st["num_device_free"] == 1
    assert st["num_sync_all_streams"] == 1


def test_stats_balance_after_storages_die():
    a, _, _ = make()
    dev = ember.device("meta")
    storages = []
    for n in (10, 5000, 2 << 20):
        blk = a.malloc(n, 0)
        st = UntypedStorage(blk.buf, n, dev)
        a.attach(st, blk)
        assert a.block_of(st) is blk
        storages.append(st)
    assert a.memory_allocated() == 512 + 5120 + (2 << 20)
    s = a.memory_stats()
    assert s["allocation.all.current"] == 3 and s["allocation.large_pool.current"] == 1
    assert s["requested_bytes.all.current"] == 10 + 5000 + (2 << 20)
    del storages, st
    gc.collect()
    s = a.memory_stats()
    for k in ("allocated_bytes", "active_bytes", "requested_bytes", "allocation", "active"):
        for pool in ("all", "large_pool", "small_pool"):
            assert s[f"{k}.{pool}.current"] == 0, k
    assert s["allocated_bytes.all.allocated"] == s["allocated_bytes.all.freed"]
    assert a.memory_reserved() == 2 * MiB + 20 * MiB  # cached, not released
    a.empty_cache()
    assert a.memory_reserved() == 0


def test_peak_reset_and_accumulated():
    a, _, _ = make()
    b1 = a.malloc(4096, 0)
    b2 = a.malloc(4096, 0)
    a.free(b1)
    assert a.max_memory_allocated() == 8192 and a.memory_allocated() == 4096
    a.reset_peak_memory_stats()
    assert a.max_memory_allocated() == 4096
    assert a.max_memory_reserved() == a.memory_reserved()
    a.reset_accumulated_memory_stats()
    s = a.memory_stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["allocated_bytes.all.current"] == 4096
    a.free(b2)
    assert a.max_memory_allocated() == 4096


def test_memory_stats_keys_like_torch():
    import torch  # oracle for the key names only
    a, _, _ = make()
    keys = set(a.memory_stats())
    expected = {f"{s}.{p}.{m}" for s in ("allocation", "segment", "active", "inactive_split",
                                         "allocated_bytes", "reserved_bytes", "active_bytes",
                                         "inactive_split_bytes", "requested_bytes")
                for p in ("all", "large_pool", "small_pool")
                for m in ("current", "peak", "allocated", "freed")}
    expected |= {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                 "num_device_free", "max_split_size"}
    assert expected <= keys
    assert list(a.memory_stats()) == sorted(keys)
    assert callable(torch.cuda.memory_stats)


def test_memory_summary_text():
    a, _, _ = make()
    b = a.malloc(3000, 0)
    text = a.memory_summary()
    lines = text.splitlines()
    assert lines[0] == "|" + "=" * 75 + "|"
    assert all(len(ln) == 77 for ln in lines), {len(ln) for ln in lines}
    assert "Allocated memory" in text and "from large pool" in text and "3072 B" in text
    assert len(a.memory_summary(abbreviated=True).splitlines()) < len(lines)
    a.free(b)


def test_oom_retries_after_releasing_cache():
    a, _, freed = make(memory_limit=3 * MiB)
    b = a.malloc(4096, "s0")
    a.free(b)
    c = a.malloc(4096, "s1")  # s0's cached segment is released to make room
    assert freed and a.memory_stats()["num_alloc_retries"] == 1
    with pytest.raises(OutOfMemoryError, match="Out of memory. Tried to allocate 3.00 MiB"):
        a.malloc(3 * MiB, "s1")
    assert a.memory_stats()["num_ooms"] == 1
    assert isinstance(OutOfMemoryError("x"), RuntimeError)
    a.free(c)


def test_double_free_is_ignored():
    a, _, _ = make()
    b = a.malloc(10, 0)
    a.free(b)
    a.free(b)
    assert a.memory_stats()["allocation.all.freed"] == 1


# ---- ember.kernels.strided_views --------------------------------------------------------------
def test_strided_views_register_meta_view_kernels():
    from ember.core.keys import DispatchKey
    from ember.dispatch.operator import OPERATORS
    from ember.kernels.strided_views import register_strided_views, view_operator_names
    names = view_operator_names()
    for q in ("aten::view", "aten::transpose.int", "aten::select.int", "aten::slice.Tensor",
              "aten::expand", "aten::permute", "aten::as_strided", "aten::unfold"):
        assert q in names
    lib = ember.library.Library("aten", "IMPL")
    try:
        register_strided_views(lib, "PrivateUse1")
        op = OPERATORS["aten::view"]
        assert op.kernels[DispatchKey.PrivateUse1].fn is op.kernels[DispatchKey.Meta].fn
        assert DispatchKey.PrivateUse1 in OPERATORS["aten::_unsafe_view"].kernels
    finally:
        lib._destroy()
    assert DispatchKey.PrivateUse1 not in OPERATORS["aten::view"].kernels


def test_free_never_blocks_when_lock_is_busy():
    """Finalizers may run on a thread the lock holder waits for: free defers instead of waiting."""
    import threading
    a, _, _ = make()
    b = a.malloc(100, 0)
    held, release = threading.Event(), threading.Event()

    def holder():
        with a._lock:
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    a.free(b)                        # returns although another thread holds the lock
    assert len(a._deferred) == 1
    release.set()
    t.join()
    assert a.memory_allocated() == 0 and not a._deferred


def test_segments_split_and_merge():
    a, _, freed = make()
    b1, b2, b3 = a.malloc(1000, 0), a.malloc(3000, 0), a.malloc(500, 0)
    (stream, size, blocks), = a.segments()
    assert size == 2 * MiB and blocks[:3] == [(0, 1024, True), (1024, 3072, True), (4096, 512, True)]
    assert np.shares_memory(b1.buf, a._segments[0].buf) and not np.shares_memory(b1.buf, b2.buf)
    a.free(b2)                       # a hole: free, but its segment cannot be released
    s = a.memory_stats()
    assert s["inactive_split.all.current"] == 2  # the hole and the tail
    assert s["inactive_split_bytes.all.current"] == 2 * MiB - 1024 - 512
    b4 = a.malloc(2000, 0)           # best fit: the 3072-byte hole, split again
    assert b4.offset == 1024 and b4.size == 2048
    a.empty_cache()
    assert a.memory_reserved() == 2 * MiB and not freed  # still in use
    for b in (b1, b3, b4):
        a.free(b)
    assert a.segments()[0][2] == [(0, 2 * MiB, False)]  # merged back into one block
    assert a.memory_stats()["inactive_split.all.current"] == 0
    a.empty_cache()
    assert a.memory_reserved() == 0 and len(freed) == 1


def test_large_pool_segment_sizes():
    a, _, _ = make()
    big = a.malloc(3 * MiB, 0)       # under 10 MiB: a 20 MiB segment, split
    assert a.memory_reserved() == 20 * MiB and big.size == 3 * MiB and not big.small
    huge = a.malloc(30 * MiB + 5, 0)  # more than the cache holds: its own segment, to 2 MiB
    assert a.memory_reserved() == 20 * MiB + 32 * MiB
    mid = a.malloc(11 * MiB, 0)      # best fit in the 17 MiB left of the first segment
    assert mid.segment is big.segment and a.memory_reserved() == 52 * MiB
    small = a.malloc(100, 0)         # small requests never come from large segments
    assert small.small and small.segment is not big.segment
    s = a.memory_stats()
    assert s["segment.large_pool.current"] == 2 and s["segment.small_pool.current"] == 1
    for b in (big, huge, small, mid):
        a.free(b)
