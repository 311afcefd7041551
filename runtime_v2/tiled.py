"""Tiled launches from runtime_v2's host loop: the blocks run on the device's AI cores, this thread among them.

A launch with block_dim > 1 becomes a `TiledCall`, made once per static step or per prepared shape of a
dynamic node:
  1. Its thunk (ge.npu.thunks: the same C-callable adapter runtime_v1's task tables call) and its int and
     float rows, encoded once. Buffer argument k lives in base slot BUF0 + k at offset 0, so the rows never
     change, only the base table does; static array arguments get slots after the buffers.
  2. `bound(team, slot, fixed)` gives the callable a launching thread uses: its own base table, with the
     addresses of arrays fixed for its life (an instance's arena views) filled once. Calling it with the
     buffers (in call order) writes the other addresses (inputs, fresh outputs), zeroes atomic outputs,
     and runs the blocks on the team (`ge.npu.aicore.launch`); it returns when every block is done.
  3. A kernel that raised sets the STATUS slot: the blocks are re-run from Python one after the other, so
     the kernel's own exception (and message) reaches the executor.
  4. `post_bases(slot)`: a base table of the launching thread's own, for posting the launch to a native
     stream thread (queues.py) instead of running it here; `fill` writes the buffers' addresses into it.
"""
from __future__ import annotations

import numpy as np

from ge.kernels.registry import Launch, serial_blocks
from ge.npu.aicore import launch as launch_blocks
from ge.npu.native import STATUS
from ge.npu.thunks import ThunkError, task_args, thunk_address

BUF0 = STATUS + 1


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class TiledCall:
    """A tiled launch encoded once: `specs` are (count, dtype) of its tensors and workspaces in call order,
    `n_inputs` how many of them are inputs. ThunkError when it has no table encoding."""

    def __init__(self, launch: Launch, specs, n_inputs: int):
        self.launch, self.n = launch, len(specs)
        statics: list[np.ndarray] = []

        def place(a):
            statics.append(np.ascontiguousarray(a))
            return BUF0 + self.n + len(statics) - 1, 0

        args = task_args(launch, [(BUF0 + k, 0, count, dtype) for k, (count, dtype) in enumerate(specs)], place)
        if args.sig is None:
            raise ThunkError(args.reason)
        self.addr = thunk_address(args.sig)
        self.irow, self.frow = args.rows()
        self.bases = np.zeros(BUF0 + self.n + len(statics), np.int64)
        for k, a in enumerate(statics):
            self.bases[BUF0 + self.n + k] = _addr(a)
        self.statics = statics   # alive as long as a base table points at them
        self.atomic = tuple(n_inputs + k for k in launch.atomic)
        self.ip, self.fp = self.irow.ctypes.data, self.frow.ctypes.data
        self._posted: dict = {}   # launch slot -> its posted base table (post_bases): one per thread

    def post_bases(self, slot: int):
        """[base table, its address, the buffers last written] of the thread with launch `slot` (a slot
        is one thread's)."""
        got = self._posted.get(slot)
        if got is None:
            bases = self.bases.copy()
            got = self._posted[slot] = [bases, bases.ctypes.data, [None] * self.n]
        return got

    @staticmethod
    def fill(posted, buffers, blocks) -> None:
        """The buffers' addresses (in call order) into a posted base table, STATUS cleared. A buffer that is
        a caching-allocator block's view (`blocks[k]`, else None) has its address on the block; another's
        is read (~1.5 us) only when it is not the array written there last time (constants, the feeds)."""
        bases, _, last = posted
        for k, a in enumerate(buffers):
            blk = blocks[k]
            if blk is not None:
                bases[BUF0 + k] = blk.addr
                last[k] = None
            elif last[k] is not a:
                bases[BUF0 + k] = a.__array_interface__["data"][0]
                last[k] = a
        bases[STATUS] = 0

    def bound(self, team, slot: int, fixed: dict | None = None):
        """fn(*buffers) for one launching thread; `fixed` {position: array}: buffers that never change."""
        fixed = dict(fixed or {})
        bases = self.bases.copy()
        for k, a in fixed.items():
            bases[BUF0 + k] = _addr(a)
        open_ = tuple(k for k in range(self.n) if k not in fixed)
        ip, fp, bp = self.irow.ctypes.data, self.frow.ctypes.data, bases.ctypes.data
        addr, bd, atomic, launch, slot = self.addr, self.launch.block_dim, self.atomic, self.launch, int(slot)

        def call(*buffers):
            for k in atomic:
                buffers[k][:] = 0
            for k in open_:
                bases[BUF0 + k] = _addr(buffers[k])
            bases[STATUS] = 0
            launch_blocks(team, slot, addr, ip, fp, bp, bd)
            if bases[STATUS] != 0:   # the kernel's own exception, from Python
                serial_blocks(launch)(*buffers, *launch.args)
                raise RuntimeError("the kernel raised on the AI cores (it did not raise when re-run)")
        call.keep = (self, bases, fixed)
        return call
