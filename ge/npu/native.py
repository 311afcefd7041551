"""Native building blocks of the modelled NPU: llvmlite intrinsics, atomics, and waiting on int64 words.

Everything here runs inside jitted code with the GIL released: runtime_v1's task sink (its interpreter
loops and stream threads) and the AI-core team (aicore.py) are built from these pieces.

- `call_thunk(addr, iargs, fargs, bases, block_idx, block_dim)` calls a kernel thunk (thunks.py) at `addr`:
  every thunk has THUNK_SIG, so one function-pointer type reaches the whole kernel library.
- `as_pointer(addr, dtype)` turns an integer address into a typed pointer (thunks cut `carray` views with it).
- Atomics on int64 addresses (`load_acquire`, `store_seqcst`, `fetch_add`, `cas`): plain loads in a spin
  loop may be hoisted by LLVM, so every shared word goes through these.
- A control array (`new_ctrl`) is int64 words in 64-byte lines, so two threads' hot words never share one:
    line 0: ABORT   a task failed somewhere: waits give up
    line 1: GO, its waiter count, STOP   a generation counter sleepers wait on (`release` bumps it)
    line 2: DONE, its waiter count, ZERO    arrivals, cumulative (`join` waits for a count); ZERO stays 0
    line 3: configuration: libc `syscall` address, the futex syscall number (0: none), `sched_yield`
            address, the spin count, the yield count, a 1 ms timespec
    lines 4...: the user's (runtime_v1: one line per event; aicore.py: launch slots).
- Waiting (`wait`): spin briefly (SPIN loads), then give the core away with sched_yield (YIELDS calls:
  another runnable thread takes it, an idle machine wakes fast), then sleep in the kernel on the word's
  futex (Linux) with its waiter count (the word after it) raised; a store or bump wakes the futex only when
  that count is non-zero (no syscall on the fast path). Measured on inception_v1, 2 cores, 4 streams:
  spin + futex only was slowest (the futex wake-up latency sits on the critical path), yield-only fastest
  but burns the idle core (40 ms of CPU per 21 ms run); spin + 200 yields + futex lands between, with a
  sleeping waiter costing nothing. Timed waits wake every millisecond to re-check their stop word (an
  abort changes no flag). Without futex (not Linux), a waiter keeps yielding.
"""
from __future__ import annotations

import ctypes
import platform
import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

STATUS = 3  # the slot of a thunk's base table that it sets to 1 when its kernel raised (the thunk ABI)
THUNK_SIG = types.void(types.CPointer(types.int64), types.CPointer(types.float64),
                       types.CPointer(types.int64), types.int64, types.int64)


@intrinsic
def call_thunk(typingctx, addr, iargs, fargs, bases, block_idx, block_dim):
    """thunk(iargs, fargs, bases, block_idx, block_dim) at `addr` (int64 addresses, int64 block numbers)."""
    sig = types.void(types.int64, types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        a, ip, fp, bp, bi, bd = args
        i64, i64p, f64p = ir.IntType(64), ir.IntType(64).as_pointer(), ir.DoubleType().as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i64p, f64p, i64p, i64, i64])
        fptr = builder.inttoptr(a, fnty.as_pointer())
        builder.call(fptr, [builder.inttoptr(ip, i64p), builder.inttoptr(fp, f64p), builder.inttoptr(bp, i64p),
                            bi, bd])
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def as_pointer(typingctx, addr, dtype):
    """(int64 address, a numpy scalar class such as np.float32) -> CPointer of that type."""
    if not isinstance(addr, types.Integer) or not isinstance(dtype, types.NumberClass):
        return None
    ptr = types.CPointer(dtype.instance_type)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(ptr))
    return ptr(addr, dtype), codegen


# -- atomics and libc calls on int64 addresses ------------------------------------------------------

def _i64_ptr(builder, addr):
    return builder.inttoptr(addr, ir.IntType(64).as_pointer())


@intrinsic
def load_acquire(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.load_atomic(_i64_ptr(builder, args[0]), "acquire", 8)
    return types.int64(types.int64), codegen


@intrinsic
def load_seqcst(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.load_atomic(_i64_ptr(builder, args[0]), "seq_cst", 8)
    return types.int64(types.int64), codegen


@intrinsic
def store_seqcst(typingctx, addr, value):
    """Sequentially consistent: a later load of a waiter count cannot move before it (see wake)."""
    def codegen(context, builder, signature, args):
        builder.store_atomic(args[1], _i64_ptr(builder, args[0]), "seq_cst", 8)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


@intrinsic
def fetch_add(typingctx, addr, value):
    def codegen(context, builder, signature, args):
        return builder.atomic_rmw("add", _i64_ptr(builder, args[0]), args[1], "seq_cst")
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def cas(typingctx, addr, expected, value):
    """Compare-and-swap (seq_cst): the word's old value (the swap happened iff it equals `expected`)."""
    def codegen(context, builder, signature, args):
        pair = builder.cmpxchg(_i64_ptr(builder, args[0]), args[1], args[2], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 0)
    return types.int64(types.int64, types.int64, types.int64), codegen


@intrinsic
def cycles(typingctx):
    """The CPU's cycle counter (llvm.readcyclecounter: rdtsc on x86): cheap timestamps for traces."""
    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.readcyclecounter", fnty=ir.FunctionType(ir.IntType(64), []))
        return builder.call(fn, [])
    return types.int64(), codegen


@intrinsic
def call_syscall(typingctx, fn, nr, a1, a2, a3, a4):
    """libc's variadic `long syscall(long nr, ...)` at address `fn`, with four int64 arguments."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64], var_arg=True)
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), list(args[1:]))
    return types.int64(types.int64, types.int64, types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def call_noarg(typingctx, fn):
    """`int f(void)` at address `fn` (sched_yield)."""
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [])
        return context.get_dummy_value()
    return types.void(types.int64), codegen


# -- the control array ----------------------------------------------------------------------------

LINE = 8
ABORT, GO, STOP, DONE, ZERO = 0, LINE, LINE + 2, 2 * LINE, 2 * LINE + 2
SYSCALL, FUTEX_NR, YIELD, SPIN, YIELDS = 3 * LINE, 3 * LINE + 1, 3 * LINE + 2, 3 * LINE + 3, 3 * LINE + 4
TIMEOUT = 3 * LINE + 6   # a timespec: two words
USER0 = 4 * LINE   # the first word after the header lines
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
YIELD_CALLS = 200
SPIN_LOADS = 2000   # ~2-4 us of spinning before yielding (2 cores: a spinner steals a stream's core)
_FUTEX_NR = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}


def _libc() -> tuple[int, int, int]:
    """(syscall address, futex syscall number or 0, sched_yield address); zeros where unavailable."""
    try:
        libc = ctypes.CDLL(None)
        sysc = ctypes.cast(libc.syscall, ctypes.c_void_p).value or 0
        yld = ctypes.cast(libc.sched_yield, ctypes.c_void_p).value or 0
    except (OSError, AttributeError, TypeError):
        return 0, 0, 0
    nr = _FUTEX_NR.get(platform.machine().lower(), 0) if sys.platform.startswith("linux") and sysc else 0
    return sysc, nr, yld


LIBC = _libc()
AVAILABLE = bool(LIBC[1] or LIBC[2])  # a way to wait exists: native threads can wait for each other


def new_ctrl(user_lines: int, futex: bool = True, spin: int = SPIN_LOADS, yields: int = YIELD_CALLS) -> np.ndarray:
    """A zeroed, 64-byte aligned control array with `user_lines` lines after the header, the configuration
    line set (`futex=False`: waiters yield instead of sleeping; for measurements)."""
    n = USER0 + LINE * max(user_lines, 0)
    raw = np.zeros(n + LINE, np.int64)
    start = (-raw.ctypes.data % 64) // 8
    ctrl = raw[start:start + n]
    sysc, nr, yld = LIBC
    ctrl[SYSCALL], ctrl[FUTEX_NR], ctrl[YIELD], ctrl[SPIN], ctrl[YIELDS] = sysc, nr if futex else 0, yld, spin, yields
    ctrl[TIMEOUT], ctrl[TIMEOUT + 1] = 0, 1_000_000
    return ctrl


@njit(nogil=True, cache=True, inline="always")
def _wait(ctrl, word, target, stop_word, timed, change):
    """Until ctrl[word] == target (or, with `change`, != target): its value, or -1 when ctrl[stop_word]
    became non-zero first. Spin, then yield, then sleep on the word's futex (module doc)."""
    base = ctrl.ctypes.data
    addr, stop = base + 8 * word, base + 8 * stop_word
    spin, yields, nr = ctrl[SPIN], ctrl[SPIN] + ctrl[YIELDS], ctrl[FUTEX_NR]
    timeout = base + 8 * TIMEOUT if timed else 0
    n = 0
    while True:
        seen = load_acquire(addr)
        if (seen != target) if change else (seen == target):
            return seen
        if load_acquire(stop) != 0:
            return -1
        n += 1
        if n <= spin:
            continue
        if n <= yields or nr == 0:
            call_noarg(ctrl[YIELD])
            continue
        fetch_add(addr + 8, 1)   # the waiter count sits right after the word
        # the kernel sleeps only while the word still holds `seen`: a store in between is not lost
        call_syscall(ctrl[SYSCALL], nr, addr, FUTEX_WAIT_PRIVATE, seen & 0xFFFFFFFF, timeout)
        fetch_add(addr + 8, -1)


@njit(nogil=True, cache=True)
def wait(ctrl, word, target, stop_word, timed):
    """Until ctrl[word] == target (True) or ctrl[stop_word] != 0 (False)."""
    return _wait(ctrl, word, target, stop_word, timed, False) != -1  # values waited for are >= 0


@njit(nogil=True, cache=True)
def wait_change(ctrl, word, seen, stop_word, timed=False):
    """Until ctrl[word] != seen: the new value, or -1 when ctrl[stop_word] became non-zero first (`timed`:
    re-checked every millisecond, for a stop word set without a wake-up on this word)."""
    return _wait(ctrl, word, seen, stop_word, timed, True)


@njit(nogil=True, cache=True)
def wake(ctrl, addr):
    """Wake the futex at `addr` if anyone sleeps on it (its store was seq_cst: no lost wake-up)."""
    nr = ctrl[FUTEX_NR]
    if nr != 0 and load_seqcst(addr + 8) != 0:
        call_syscall(ctrl[SYSCALL], nr, addr, FUTEX_WAKE_PRIVATE, 0x7FFFFFFF, 0)


@njit(nogil=True, cache=True)
def bump(ctrl, word):
    addr = ctrl.ctypes.data + 8 * word
    fetch_add(addr, 1)
    wake(ctrl, addr)


@njit(nogil=True, cache=True)
def release(ctrl):
    """Start one run on every parked worker (they wait for the next GO generation)."""
    bump(ctrl, GO)


@njit(nogil=True, cache=True)
def park(ctrl, generation):
    """A worker waits for GO == generation; False when stopped."""
    return wait(ctrl, GO, generation, STOP, False)


@njit(nogil=True, cache=True)
def arrive(ctrl):
    bump(ctrl, DONE)


@njit(nogil=True, cache=True)
def join(ctrl, arrivals):
    """The caller waits until DONE reaches `arrivals` (cumulative over runs)."""
    wait(ctrl, DONE, arrivals, ZERO, False)


@njit(nogil=True, cache=True)
def stop(ctrl):
    """Workers leave their loop: STOP, then a GO bump so a sleeping worker wakes."""
    store_seqcst(ctrl.ctypes.data + 8 * STOP, 1)
    bump(ctrl, GO)
