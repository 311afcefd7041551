"""Multi-stream memory for runtime_v2: GE's MIF protocol at the allocator level (hicann/ge: runtime/v2, the
multi-stream memory of the RT2 allocator).

The rule it enforces: memory freed on stream A may be reused on stream B only after B has waited on an
event recorded on A after the free, or once the memory is back on its birth stream and every stream that
used it is known (on that stream) to have released it.

How (a Python model of `multi_stream_mem_block` / `multi_stream_l2_allocator` / `borrow_allocator`):
  1. Each stream has its own L2 pool (a ScalableAllocator over the shared device). A block is born on the
     stream that allocated it; `occupants` are the streams using it (the birth stream, plus every stream
     that `access`es it: GE's AccessMemCrossStream).
  2. Every stream keeps its own view of a block: the set of occupants it knows have freed it. `free(b, t)`
     adds t to t's view (a stream knows its own frees).
  3. When stream s's view covers all occupants, the block is recycled *on s*: into the birth pool if s is
     the birth stream ("birth recycle"), else into s's borrow pool, where s may reuse it for requests it fits.
     Otherwise it stays pending.
  4. `record(s)` snapshots s's views of pending blocks (and s's idle borrowed blocks) into a token, which an
     event carries; `wait(d, token)` merges them into d's views (versions filter stale entries) and recycles
     what became complete; borrowed blocks born on d go home.
  5. `synchronize()` (all streams idle, GE's LastWaitEvents) settles everything: pending blocks whose
     occupants all freed, and idle borrowed blocks, go back to their birth pools.
One lock guards it all: streams are threads.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ge.errors import GEError

from .allocator import FETCH_BYTES, PAGE_BYTES, DeviceMemory, ScalableAllocator, Span


class Block:
    """A multi-stream allocation: the span, its birth stream, who uses it, who knows it is freed."""
    __slots__ = ("span", "nbytes", "birth", "version", "occupants", "freed", "views", "live", "addr")

    def __init__(self, span: Span, nbytes: int, birth: int, addr: int = 0):
        self.span, self.nbytes, self.birth = span, nbytes, birth
        self.addr = addr   # of its first byte: launches posted to native threads take addresses
        self.version = 0
        self._reset(birth)

    def _reset(self, stream: int) -> None:
        self.version += 1
        self.occupants = {stream}
        self.freed: set[int] = set()        # occupants that have freed it (ground truth, for checks)
        self.views: dict[int, set[int]] = {}  # observer stream -> occupants it knows have freed it
        self.live = True

    def array(self, dtype, count: int):
        return self.span.as_array(dtype, count)

    as_array = array   # the caching allocator's span interface: the executor's steps take either


@dataclass(frozen=True)
class EventToken:
    """What an event recorded on `stream` carries: its views of pending blocks and its idle borrowed blocks."""
    stream: int
    views: tuple      # (block, version, frozenset of freed occupants)
    borrowed: tuple   # (block, version)


class MultiStreamAllocator:
    """Per-stream page-span pools over one device, with MIF's rules for blocks that cross streams."""

    def __init__(self, device: DeviceMemory, streams: int, page_bytes: int = PAGE_BYTES,
                 fetch_bytes: int = FETCH_BYTES):
        self._pools = [ScalableAllocator(device, page_bytes, fetch_bytes) for _ in range(streams)]
        self.device = device   # host_outputs.py checks run-time-shaped host outputs against its cap
        self._borrow: list[dict[Block, None]] = [{} for _ in range(streams)]
        self._pending: list[dict[Block, None]] = [{} for _ in range(streams)]  # blocks s has a view of
        self._lock = threading.Lock()
        self.borrow_hits = 0
        # how blocks crossed streams: accesses from another stream, recycles into a borrow pool (freed on
        # a stream that is not the block's birth stream), borrowed blocks an event sent home
        self.counters = dict.fromkeys(("cross_stream_accesses", "borrow_recycles", "sent_home"), 0)

    # -- per stream -------------------------------------------------------------------------------
    def alloc(self, nbytes: int, stream: int) -> Block:
        with self._lock:
            blk = self._from_borrow(nbytes, stream) if self._borrow[stream] else None
            if blk is not None:
                self.borrow_hits += 1
                blk._reset(stream)
                return blk
            span = self._pools[stream].alloc(nbytes)
            span.stream = stream
            return Block(span, nbytes, stream, self.device.address(span.offset))

    def access(self, blk: Block, stream: int) -> None:
        """Stream `stream` will use the block (launch of a consumer on another stream)."""
        with self._lock:
            if not blk.live:
                raise GEError("access to a block that was recycled")
            if stream not in blk.occupants:
                blk.occupants.add(stream)
                self.counters["cross_stream_accesses"] += 1

    def free(self, blk: Block, stream: int) -> None:
        """Stream `stream` is done with the block (its last use there was launched before this)."""
        with self._lock:
            if stream not in blk.occupants or stream in blk.freed:
                raise GEError(f"stream {stream} frees a block it does not hold")
            if len(blk.occupants) == 1 and not blk.views:   # only this stream used it: no view to keep
                blk.freed.add(stream)
                blk.live = False   # as _recycle: no stream has it pending (nobody settled it yet)
                blk.version += 1
                self._recycled(blk, stream)
                return
            blk.freed.add(stream)
            blk.views.setdefault(stream, set()).add(stream)
            self._settle(blk, stream)

    def record(self, stream: int) -> EventToken:
        """Call when an event is recorded on `stream`; the event carries the token."""
        with self._lock:
            views = tuple((b, b.version, frozenset(b.views[stream])) for b in self._pending[stream])
            borrowed = tuple((b, b.version) for b in self._borrow[stream])
        return EventToken(stream, views, borrowed)

    def wait(self, stream: int, token: EventToken) -> None:
        """Call when `stream` waits on an event that carries `token`."""
        with self._lock:
            for blk, version, freed in token.views:
                if blk.version == version and blk.live:
                    blk.views.setdefault(stream, set()).update(freed)
                    self._settle(blk, stream)
            src = self._borrow[token.stream]
            for blk, version in token.borrowed:
                if blk.birth == stream and blk.version == version and blk in src:
                    del src[blk]
                    self._home(blk)
                    self.counters["sent_home"] += 1

    def synchronize(self) -> None:
        """Every stream is idle: settle all views, send borrowed blocks home (GE's LastWaitEvents)."""
        with self._lock:
            for blk in {b: None for pend in self._pending for b in pend}:
                if blk.freed >= blk.occupants:
                    self._recycle(blk)
                    self._home(blk)
                else:  # still in use somewhere: after a full sync every stream knows every free so far
                    for s in blk.views:
                        blk.views[s] = set(blk.freed)
            for pool in self._borrow:
                for blk in pool:
                    self._home(blk)
                pool.clear()

    def abandon(self, blocks) -> None:
        """After a failed run: every block still live is released by all its occupants, then settled."""
        with self._lock:
            for blk in {id(b): b for b in blocks if b is not None and b.live}.values():
                blk.freed = set(blk.occupants)
                self._recycle(blk)
                self._home(blk)
        self.synchronize()

    def empty_cache(self) -> int:
        self.synchronize()
        with self._lock:
            return sum(p.empty_cache() for p in self._pools)

    def stats(self) -> list[dict]:
        with self._lock:
            return [dict(p.stats.as_dict(), borrowed=len(b), pending=len(q))
                    for p, b, q in zip(self._pools, self._borrow, self._pending)]

    # -- the protocol -----------------------------------------------------------------------------
    def _settle(self, blk: Block, stream: int) -> None:
        """Recycle the block on `stream` if that stream knows every occupant freed it; else keep it pending."""
        if blk.views[stream] >= blk.occupants:
            self._recycle(blk)
            self._recycled(blk, stream)
        else:
            self._pending[stream][blk] = None

    def _recycled(self, blk: Block, stream: int) -> None:
        """Step 3's destination: the birth pool, or (freed on another stream) that stream's borrow pool."""
        if stream == blk.birth:
            self._home(blk)
        else:
            self._borrow[stream][blk] = None
            self.counters["borrow_recycles"] += 1

    def _recycle(self, blk: Block) -> None:
        blk.live = False
        blk.version += 1  # tokens taken before are stale now
        for pend in self._pending:
            pend.pop(blk, None)

    def _home(self, blk: Block) -> None:
        self._pools[blk.birth].free(blk.span)

    def _from_borrow(self, nbytes: int, stream: int) -> Block | None:
        best, best_size = None, 0
        for blk in self._borrow[stream]:
            size = blk.span.pages * self._pools[stream].page
            if size >= nbytes and (best is None or size < best_size):
                best, best_size = blk, size
        if best is not None:
            del self._borrow[stream][best]
        return best
