"""A caching allocator generic over raw device memory (c10/cuda/CUDACachingAllocator.cpp's model).

Asking a device for memory (cudaMalloc) is slow and synchronizes the device, so PyTorch never
gives freed memory back. It reserves *segments* (2 MiB for requests up to 1 MiB, 20 MiB for
requests under 10 MiB, else the request rounded up to 2 MiB), cuts them into *blocks* (multiples
of 512 bytes), and when a block is freed merges it with free neighbours of its segment and keeps
it in a free pool. Pools are per stream: reuse on the stream that freed the block needs no
synchronization (the stream runs its kernels in order, so a kernel still reading the old tensor
finishes before one writing the new tensor starts); reuse on another stream would race. A block
that was also used on other streams (`record_stream`) returns to its pool only once events
recorded on those streams at free time have completed. empty_cache() gives back the segments
that are entirely free.

Not modelled: max_split_size / oversize blocks (PyTorch's default, no limit, is what is modelled),
expandable segments, private pools (graphs), garbage-collection thresholds.
"""
import bisect
import itertools
import threading
import weakref
from collections import OrderedDict, deque

__all__ = ["CachingAllocator", "Block", "OutOfMemoryError", "round_size", "allocation_size"]

MIN_BLOCK = 512              # kMinBlockSize: every block is a multiple of 512 bytes
SMALL_SIZE = 1 << 20         # kSmallSize: requests up to 1 MiB go to the small pool
SMALL_BUFFER = 2 << 20       # kSmallBuffer: the small pool's segments
LARGE_BUFFER = 20 << 20      # kLargeBuffer: segments for large requests under MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20   # kMinLargeAlloc
ROUND_LARGE = 2 << 20        # kRoundLarge: larger requests get their own segment, rounded to this

_STAT_NAMES = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
               "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
_POOLS = ("all", "large_pool", "small_pool")


class OutOfMemoryError(RuntimeError):
    """Raised when raw memory is exhausted even after the cache was released
    (torch.OutOfMemoryError is likewise a RuntimeError)."""


def round_size(nbytes):
    if nbytes < MIN_BLOCK:
        return MIN_BLOCK
    return MIN_BLOCK * ((nbytes + MIN_BLOCK - 1) // MIN_BLOCK)


def allocation_size(size):
    """Bytes of the segment reserved for a block of `size` (PyTorch's get_allocation_size)."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


class _Segment:
    __slots__ = ("buf", "size", "stream", "small", "id", "head")

    def __init__(self, buf, size, stream, small, sid):
        self.buf, self.size, self.stream, self.small, self.id = buf, size, stream, small, sid
        self.head = None  # the block at offset 0


class Block:
    """A piece of a segment: `buf` (1-D uint8 of `size` bytes, set while allocated), the
    `stream` whose pool owns it, the other streams it was used on (`stream_uses`, from
    record_stream), and its neighbours in the segment (`prev`, `next`)."""
    __slots__ = ("buf", "size", "requested", "stream", "stream_uses", "allocated", "small",
                 "event_count", "segment", "offset", "prev", "next", "inactive", "view",
                 "__weakref__")

    def __init__(self, segment, offset, size):
        self.buf = None
        self.view = None  # (offset, size, buf): the slice, kept for the block's next malloc
        self.segment = segment
        self.offset = offset
        self.size = size
        self.requested = 0
        self.stream = segment.stream
        self.stream_uses = set()
        self.allocated = False
        self.small = segment.small
        self.event_count = 0
        self.prev = self.next = None
        self.inactive = False    # counted in inactive_split (free, in a split segment)

    def is_split(self):
        return self.prev is not None or self.next is not None

    def _key(self):
        return (self.size, self.segment.id, self.offset)

    def __repr__(self):
        return (f"Block(size={self.size}, offset={self.offset}, requested={self.requested}, "
                f"stream={self.stream!r}, allocated={self.allocated})")


class _Stat:
    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, n):
        if n >= 0:
            self.current += n
            self.allocated += n
            if self.current > self.peak:
                self.peak = self.current
        else:
            self.current += n
            self.freed -= n


class _StatArray:
    """A statistic broken down by pool as PyTorch's StatArray: all, large_pool, small_pool."""
    __slots__ = ("all", "large_pool", "small_pool")

    def __init__(self):
        self.all, self.large_pool, self.small_pool = _Stat(), _Stat(), _Stat()

    def add(self, n, small):  # _Stat.add on `all` and on the block's pool, inlined (hot path)
        a = self.all
        p = self.small_pool if small else self.large_pool
        if n >= 0:
            c = a.current + n
            a.current = c
            a.allocated += n
            if c > a.peak:
                a.peak = c
            c = p.current + n
            p.current = c
            p.allocated += n
            if c > p.peak:
                p.peak = c
        else:
            a.current += n
            a.freed -= n
            p.current += n
            p.freed -= n


class CachingAllocator:
    """raw_malloc(nbytes) -> buffer of exactly nbytes, 1-D uint8, sliceable (a MemoryError
    means out of memory); raw_free(buffer) -> None (None: let the garbage collector have it);
    record_event(stream) -> object whose .query() says whether the stream's work enqueued so far
    has finished, and optionally .synchronize() (None: streams are synchronous, every event is
    complete); memory_limit: raw bytes this allocator may hold (None: no limit; PyTorch's
    set_per_process_memory_fraction)."""

    def __init__(self, raw_malloc, raw_free=None, *, record_event=None, device_index=0,
                 memory_limit=None):
        self.raw_malloc = raw_malloc
        self.raw_free = raw_free
        self.record_event = record_event
        self.device_index = device_index
        self.memory_limit = memory_limit
        self._lock = threading.RLock()
        self._pools = {}          # (stream, small) -> free blocks sorted by (size, segment, offset)
        self._pool_keys = {}      # same keys -> the sort keys, for bisect
        self._segments = []
        self._seg_ids = itertools.count()
        self._pending = []        # (event, block) waiting for other streams' work
        self._by_storage = {}     # id(storage) -> block, while the storage lives
        self._deferred = deque()  # blocks freed while the lock was busy
        self._reset_all_stats()

    # ---- statistics --------------------------------------------------------------------------
    def _reset_all_stats(self):
        self._stats = {name: _StatArray() for name in _STAT_NAMES}
        self._oversize_allocations = _Stat()
        self._oversize_segments = _Stat()
        self._counters = dict(num_alloc_retries=0, num_ooms=0, num_sync_all_streams=0,
                              num_device_alloc=0, num_device_free=0)

    def _stat(self, name, field):
        with self._lock:
            self._drain()
            return getattr(self._stats[name].all, field)

    def memory_allocated(self):
        return self._stat("allocated_bytes", "current")

    def max_memory_allocated(self):
        return self._stat("allocated_bytes", "peak")

    def memory_reserved(self):
        return self._stat("reserved_bytes", "current")

    def max_memory_reserved(self):
        return self._stat("reserved_bytes", "peak")

    def reset_peak_memory_stats(self):
        with self._lock:
            self._drain()
            for arr in self._stats.values():
                for s in (arr.all, arr.large_pool, arr.small_pool):
                    s.peak = s.current
            for s in (self._oversize_allocations, self._oversize_segments):
                s.peak = s.current

    def reset_accumulated_memory_stats(self):
        with self._lock:
            for arr in self._stats.values():
                for s in (arr.all, arr.large_pool, arr.small_pool):
                    s.allocated = s.freed = 0
            for s in (self._oversize_allocations, self._oversize_segments):
                s.allocated = s.freed = 0
            for k in self._counters:
                self._counters[k] = 0

    def memory_stats_as_nested_dict(self):
        with self._lock:
            self._drain()
            self._process_events()
            out = {}
            for name, arr in self._stats.items():
                out[name] = {p: {m: getattr(getattr(arr, p), m)
                                 for m in ("current", "peak", "allocated", "freed")}
                             for p in _POOLS}
            for name, s in (("oversize_allocations", self._oversize_allocations),
                            ("oversize_segments", self._oversize_segments)):
                out[name] = {m: getattr(s, m) for m in ("current", "peak", "allocated", "freed")}
            out.update(self._counters)
            out["num_oom_rejections"] = 0
            out["max_split_size"] = -1  # no limit configured, as PyTorch reports it
            return out

    def memory_stats(self):
        """Flat, sorted OrderedDict with PyTorch's key names ("allocated_bytes.all.current", ...)."""
        flat = []

        def walk(prefix, obj):
            if isinstance(obj, dict):
                for k, v in obj.items():
                    walk(f"{prefix}.{k}" if prefix else str(k), v)
            else:
                flat.append((prefix, obj))

        walk("", self.memory_stats_as_nested_dict())
        flat.sort()
        return OrderedDict(flat)

    def memory_summary(self, device=None, abbreviated=False, title="ember"):
        """A text table laid out like torch.cuda.memory_summary."""
        stats = self.memory_stats()
        dev = self.device_index if device is None else device

        def fmt_size(sz, pref):
            prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
            p = prefixes[0]
            for q in prefixes[1:]:
                if pref < 768 * 1024:
                    break
                p = q
                sz //= 1024
                pref /= 1024
            return f"{sz:6d} {p}"

        def fmt_count(cnt, pref):
            p = " "
            for q in ("K", "M"):
                if pref < 750 * 1000:
                    break
                p = q
                cnt //= 1000
                pref /= 1000
            return f"{cnt:7d} {p} "

        metrics = [("allocated_bytes", "Allocated memory", fmt_size),
                   ("active_bytes", "Active memory", fmt_size),
                   ("requested_bytes", "Requested memory", fmt_size),
                   ("reserved_bytes", "Reserved memory", fmt_size),
                   ("inactive_split_bytes", "Non-releasable memory", fmt_size),
                   ("allocation", "Allocations", fmt_count),
                   ("active", "Active allocs", fmt_count),
                   ("segment", "Reserved segments", fmt_count),
                   ("inactive_split", "Non-releasable allocs", fmt_count)]
        lines = ["=" * 75,
                 f" {'':16} {title} memory summary, device ID {dev:<17d}".ljust(75)[:75],
                 "-" * 75,
                 f"  {'':9} OOMs: {stats['num_ooms']:<12d} | {'':6} raw alloc retries: "
                 f"{stats['num_alloc_retries']:<8d}".ljust(75)[:75],
                 "=" * 75,
                 "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
        for key, name, fmt in metrics:
            lines.append("-" * 75)
            subs = [("all", name)]
            if not abbreviated:
                subs += [("large_pool", "      from large pool"), ("small_pool", "      from small pool")]
            pref = None
            for sub, label in subs:
                vals = [stats[f"{key}.{sub}.{m}"] for m in ("current", "peak", "allocated", "freed")]
                if pref is None:
                    pref = vals
                cells = " | ".join(fmt(v, p) for v, p in zip(vals, pref))
                lines.append(f" {label:<21} | {cells} ")
        for key, name in (("oversize_allocations", "Oversize allocations"),
                          ("oversize_segments", "Oversize segments")):
            lines.append("-" * 75)
            vals = [stats[f"{key}.{m}"] for m in ("current", "peak", "allocated", "freed")]
            lines.append(f" {name:<21} | " + " | ".join(fmt_count(v, v) for v in vals) + " ")
        lines.append("=" * 75)
        return "|" + "|\n|".join(lines) + "|\n"

    # ---- allocation ---------------------------------------------------------------------------
    def malloc(self, nbytes, stream):
        """A block of at least nbytes (rounded to 512) usable on `stream`."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        with self._lock:
            if self._deferred:
                self._drain()
            if self._pending:
                self._process_events()
            block = self._take_free(stream, small, size)
            if block is None:
                block = self._alloc_segment(size, stream, small)
            remaining = block.size - size
            if remaining >= MIN_BLOCK if small else remaining > SMALL_SIZE:
                rest = Block(block.segment, block.offset + size, remaining)
                rest.prev, rest.next = block, block.next
                if block.next is not None:
                    block.next.prev = rest
                block.next = rest
                block.size = size
                self._insert_free(rest)
            block.allocated = True
            block.requested = nbytes
            # slicing a device array costs tens of microseconds with numba-cuda: reuse the
            # block's last slice when it still covers the same bytes
            v = block.view
            if v is None or v[0] != block.offset or v[1] != block.size:
                v = block.view = (block.offset, block.size,
                                  block.segment.buf[block.offset:block.offset + block.size])
            block.buf = v[2]
            st = self._stats
            st["allocation"].add(1, small)
            st["allocated_bytes"].add(block.size, small)
            st["requested_bytes"].add(nbytes, small)
            st["active"].add(1, small)
            st["active_bytes"].add(block.size, small)
            return block

    def _insert_free(self, block):
        k = (block.stream, block.small)
        pool = self._pools.get(k)
        if pool is None:
            pool = self._pools[k] = []
            self._pool_keys[k] = []
        keys = self._pool_keys[k]
        key = block._key()
        i = bisect.bisect_left(keys, key)
        keys.insert(i, key)
        pool.insert(i, block)
        if block.is_split():
            block.inactive = True
            self._stats["inactive_split"].add(1, block.small)
            self._stats["inactive_split_bytes"].add(block.size, block.small)

    def _remove_free(self, block):
        k = (block.stream, block.small)
        keys = self._pool_keys[k]
        i = bisect.bisect_left(keys, block._key())
        del keys[i]
        del self._pools[k][i]
        if block.inactive:
            block.inactive = False
            self._stats["inactive_split"].add(-1, block.small)
            self._stats["inactive_split_bytes"].add(-block.size, block.small)

    def _take_free(self, stream, small, size):
        """Best fit: the smallest free block of the stream's pool that holds `size`."""
        keys = self._pool_keys.get((stream, small))
        if not keys:
            return None
        i = bisect.bisect_left(keys, (size, -1, -1))
        if i == len(keys):
            return None
        block = self._pools[(stream, small)][i]
        self._remove_free(block)
        return block

    def _alloc_segment(self, size, stream, small):
        seg_size = allocation_size(size)
        buf = self._raw_alloc(seg_size)
        if buf is None:
            # PyTorch: wait for pending events, free every entirely cached segment, retry once
            self._counters["num_alloc_retries"] += 1
            self._synchronize_and_free_events()
            self._release_cached()
            buf = self._raw_alloc(seg_size)
            if buf is None:
                self._counters["num_ooms"] += 1
                raise OutOfMemoryError(
                    f"Out of memory. Tried to allocate {_fmt_bytes(size)}. Device "
                    f"{self.device_index} has {_fmt_bytes(self.memory_reserved())} reserved in "
                    f"total by the caching allocator, of which {_fmt_bytes(self.memory_allocated())} "
                    "is allocated" + (f" (limit {_fmt_bytes(self.memory_limit)})"
                                      if self.memory_limit is not None else "") + ".")
        self._counters["num_device_alloc"] += 1
        seg = _Segment(buf, seg_size, stream, small, next(self._seg_ids))
        self._segments.append(seg)
        self._stats["segment"].add(1, small)
        self._stats["reserved_bytes"].add(seg_size, small)
        seg.head = Block(seg, 0, seg_size)
        return seg.head

    def _raw_alloc(self, n):
        if self.memory_limit is not None and self._stats["reserved_bytes"].all.current + n > self.memory_limit:
            return None
        try:
            return self.raw_malloc(n)
        except MemoryError:
            return None

    def free(self, block):
        """Give the block back: to its stream's pool, or, when other streams used it, once the
        events recorded on them now have completed.

        Frees come from finalizers, which may run on any thread at any allocation (a device's
        worker thread included, while the host waits for it holding the lock): so a free never
        blocks; when the lock is busy the block waits in a deque for the next call."""
        if not self._lock.acquire(blocking=False):
            self._deferred.append(block)
            return
        try:
            self._drain()
            self._free_locked(block)
        finally:
            self._lock.release()

    def _drain(self):
        d = self._deferred
        while d:
            self._free_locked(d.popleft())

    def _free_locked(self, block):
        if not block.allocated:
            return
        block.allocated = False
        block.buf = None
        small = block.small
        st = self._stats
        st["allocation"].add(-1, small)
        st["allocated_bytes"].add(-block.size, small)
        st["requested_bytes"].add(-block.requested, small)
        uses = block.stream_uses
        block.stream_uses = set()
        if uses and self.record_event is not None:
            for s in uses:
                self._pending.append((self.record_event(s), block))
                block.event_count += 1
        else:
            self._free_block(block)

    def _free_block(self, block):
        """Active -> free: merge with free neighbours in the segment, back to the pool."""
        small = block.small
        self._stats["active"].add(-1, small)
        self._stats["active_bytes"].add(-block.size, small)
        p = block.prev
        if p is not None and not p.allocated and p.event_count == 0:
            self._remove_free(p)
            block.offset = p.offset
            block.size += p.size
            block.prev = p.prev
            if p.prev is not None:
                p.prev.next = block
            else:
                block.segment.head = block
        n = block.next
        if n is not None and not n.allocated and n.event_count == 0:
            self._remove_free(n)
            block.size += n.size
            block.next = n.next
            if n.next is not None:
                n.next.prev = block
        self._insert_free(block)

    def _process_events(self):
        keep = []
        for ev, block in self._pending:
            if ev.query():
                block.event_count -= 1
                if block.event_count == 0:
                    self._free_block(block)
            else:
                keep.append((ev, block))
        self._pending = keep

    def _synchronize_and_free_events(self):
        self._counters["num_sync_all_streams"] += 1
        pending, self._pending = self._pending, []
        for ev, block in pending:
            sync = getattr(ev, "synchronize", None)
            if sync is not None:
                sync()
            block.event_count -= 1
            if block.event_count == 0:
                self._free_block(block)

    def record_stream(self, block, stream):
        """Mark the block as used by work on `stream` (Tensor.record_stream)."""
        with self._lock:
            if stream != block.stream:
                block.stream_uses.add(stream)

    def _release_cached(self):
        """Give every entirely free segment back to the raw allocator."""
        for pool in list(self._pools.values()):
            for b in [b for b in pool if not b.is_split()]:
                self._remove_free(b)
                seg = b.segment
                self._segments.remove(seg)
                self._stats["segment"].add(-1, seg.small)
                self._stats["reserved_bytes"].add(-seg.size, seg.small)
                self._counters["num_device_free"] += 1
                if self.raw_free is not None:
                    self.raw_free(seg.buf)
                seg.buf = None

    def empty_cache(self):
        """Release every entirely free segment, after waiting for the events of blocks freed
        while other streams still used them."""
        with self._lock:
            self._drain()
            self._synchronize_and_free_events()
            self._release_cached()

    # ---- storages -----------------------------------------------------------------------------
    def attach(self, storage, block):
        """Free `block` when `storage` dies, and remember it for record_stream (block_of)."""
        key = id(storage)
        self._by_storage[key] = block
        weakref.finalize(storage, self._storage_died, key, block)

    def _storage_died(self, key, block):
        if self._by_storage.get(key) is block:  # no lock: finalizers must never block
            self._by_storage.pop(key, None)
        self.free(block)

    def block_of(self, storage):
        b = self._by_storage.get(id(storage))
        return b if b is not None and b.allocated else None

    def cached_blocks(self):
        """(stream, size) of every free block in the pools (for tests and summaries)."""
        with self._lock:
            self._drain()
            return [(s, b.size) for (s, _), pool in self._pools.items() for b in pool]

    def segments(self):
        """[(stream, segment size, [(offset, size, allocated), ...])] for every reserved segment
        (the information of torch.cuda.memory_snapshot, as tuples)."""
        with self._lock:
            self._drain()
            out = []
            for seg in self._segments:
                blocks, b = [], seg.head
                while b is not None:
                    blocks.append((b.offset, b.size, b.allocated))
                    b = b.next
                out.append((seg.stream, seg.size, blocks))
            return out


def _fmt_bytes(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
