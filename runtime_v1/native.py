"""The native part of the task sink: llvmlite intrinsics, the interpreter loops and cross-stream events.

- `call_thunk(addr, iargs, fargs, bases)` calls the C function at `addr` with three table pointers (the
  task's int64 slots, its float64 slots, the base-pointer table). Every thunk (thunks.py) has THUNK_SIG.
- `as_pointer(addr, dtype)` turns an integer address into a typed pointer, so a thunk cuts `carray` views
  out of any buffer whose address sits in the base-pointer table (the arena's segments or a user's array).
- `interpret(...)` runs tasks [start, stop) of one stream's table. It is compiled once for the whole kernel
  library (it only calls addresses) and cached on disk; it releases the GIL. A kernel's exception cannot
  cross a C call: the thunk catches it and sets the STATUS slot of the base table; the loop stops there
  and returns the task index, and the executor re-runs that task from Python for the real message.
- `interpret_sync(...)` is the same loop for a stream of a multi-stream plan, whose table also holds event
  ops. Single-stream plans keep `interpret`: no event branch per task.

Program encoding (model.py builds it): a table row is a task when its address is > 0; RECORD (-1) and
WAIT (-2) rows are event ops with the event id in the row's int offset (ioffs). Between the stream threads
of one instance, `ctrl` is an int64 array of flags, one 64-byte line per group so streams never share one:
  line 0: ABORT   a task failed somewhere: waits give up (interpret_sync returns ABORTED)
  line 1: GO, its waiter count, STOP   the run generation the workers park on (`release` starts all of them)
  line 2: DONE, its waiter count       worker arrivals, cumulative (`join` waits for runs x workers)
  line 3: configuration: libc `syscall` address, the futex syscall number (0: none), `sched_yield`
          address, the spin count, the yield count, a 1 ms timespec
  line 4 + e: event e's flag and its waiter count. RECORD stores the run's generation (release order);
          WAIT loads it (acquire) until it equals the generation, so flags are never reset between runs.
Waiting: spin briefly (SPIN loads), then give the core away with sched_yield (YIELDS calls: another
runnable stream takes it, an idle machine wakes fast), then sleep in the kernel on the flag's futex (Linux)
with its waiter count raised; a RECORD / bump wakes the futex only when that count is non-zero (no syscall
on the fast path). Measured on inception_v1, 2 cores, 4 streams: spin + futex only was slowest (futex
wake-up latency sits on the critical path), yield-only fastest but burns the idle core (40 ms of CPU per
21 ms run); spin + 200 yields + futex lands between, with a sleeping waiter costing nothing. Waits on
event flags time out every millisecond to re-check ABORT (an abort changes no flag). Without futex (not
Linux), the waiter keeps yielding. Atomic loads and stores are llvmlite
intrinsics: a plain load in a spin loop may be hoisted by LLVM.
"""
from __future__ import annotations

import ctypes
import platform
import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

THUNK_SIG = types.void(types.CPointer(types.int64), types.CPointer(types.float64),
                       types.CPointer(types.int64))


@intrinsic
def call_thunk(typingctx, addr, iargs, fargs, bases):
    sig = types.void(addr, iargs, fargs, bases)

    def codegen(context, builder, signature, args):
        a, ip, fp, bp = args
        i64p, f64p = ir.IntType(64).as_pointer(), ir.DoubleType().as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i64p, f64p, i64p])
        fptr = builder.inttoptr(a, fnty.as_pointer())
        builder.call(fptr, [builder.inttoptr(ip, i64p), builder.inttoptr(fp, f64p), builder.inttoptr(bp, i64p)])
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
    """Sequentially consistent: a later load of a waiter count cannot move before it (see _wake)."""
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

STATUS = 3  # the base-table slot a thunk sets to 1 when its kernel raised
RECORD, WAIT = -1, -2   # event ops in a table's address column (the event id in ioffs)
DONE_OK, ABORTED = -1, -2
LINE = 8
ABORT, GO, STOP, DONE, ZERO = 0, LINE, LINE + 2, 2 * LINE, 2 * LINE + 2
SYSCALL, FUTEX_NR, YIELD, SPIN, YIELDS = 3 * LINE, 3 * LINE + 1, 3 * LINE + 2, 3 * LINE + 3, 3 * LINE + 4
TIMEOUT = 3 * LINE + 6   # a timespec: two words
EV0 = 4 * LINE
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
AVAILABLE = bool(LIBC[1] or LIBC[2])  # a way to wait exists: multi-stream plans can run on threads


def new_ctrl(n_events: int, futex: bool = True, spin: int = SPIN_LOADS, yields: int = YIELD_CALLS) -> np.ndarray:
    """A zeroed, 64-byte aligned control array for `n_events` events, with the configuration line set
    (`futex=False`: waiters yield instead of sleeping; for measurements)."""
    n = EV0 + LINE * max(n_events, 0)
    raw = np.zeros(n + LINE, np.int64)
    start = (-raw.ctypes.data % 64) // 8
    ctrl = raw[start:start + n]
    sysc, nr, yld = LIBC
    ctrl[SYSCALL], ctrl[FUTEX_NR], ctrl[YIELD], ctrl[SPIN], ctrl[YIELDS] = sysc, nr if futex else 0, yld, spin, yields
    ctrl[TIMEOUT], ctrl[TIMEOUT + 1] = 0, 1_000_000
    return ctrl


@njit(nogil=True, cache=True)
def _wait(ctrl, word, target, stop_word, timed):
    """Until ctrl[word] == target (True) or ctrl[stop_word] != 0 (False): spin, then sleep (module doc)."""
    base = ctrl.ctypes.data
    addr, stop = base + 8 * word, base + 8 * stop_word
    spin, yields, nr = ctrl[SPIN], ctrl[SPIN] + ctrl[YIELDS], ctrl[FUTEX_NR]
    timeout = base + 8 * TIMEOUT if timed else 0
    n = 0
    while True:
        seen = load_acquire(addr)
        if seen == target:
            return True
        if load_acquire(stop) != 0:
            return False
        n += 1
        if n <= spin:
            continue
        if n <= yields or nr == 0:
            call_noarg(ctrl[YIELD])
            continue
        fetch_add(addr + 8, 1)   # the waiter count sits right after the word
        # the kernel sleeps only while the word still holds `seen`: a record in between is not lost
        call_syscall(ctrl[SYSCALL], nr, addr, FUTEX_WAIT_PRIVATE, seen & 0xFFFFFFFF, timeout)
        fetch_add(addr + 8, -1)


@njit(nogil=True, cache=True)
def _wake(ctrl, addr):
    """Wake the futex at `addr` if anyone sleeps on it (its store was seq_cst: no lost wake-up)."""
    nr = ctrl[FUTEX_NR]
    if nr != 0 and load_seqcst(addr + 8) != 0:
        call_syscall(ctrl[SYSCALL], nr, addr, FUTEX_WAKE_PRIVATE, 0x7FFFFFFF, 0)


@njit(nogil=True, cache=True)
def _bump(ctrl, word):
    addr = ctrl.ctypes.data + 8 * word
    fetch_add(addr, 1)
    _wake(ctrl, addr)


@njit(nogil=True, cache=True)
def release(ctrl):
    """Start one run on every parked worker (they wait for the next GO generation)."""
    _bump(ctrl, GO)


@njit(nogil=True, cache=True)
def park(ctrl, generation):
    """A worker waits for GO == generation; False when stopped."""
    return _wait(ctrl, GO, generation, STOP, False)


@njit(nogil=True, cache=True)
def arrive(ctrl):
    _bump(ctrl, DONE)


@njit(nogil=True, cache=True)
def join(ctrl, arrivals):
    """The caller waits until DONE reaches `arrivals` (cumulative over runs)."""
    _wait(ctrl, DONE, arrivals, ZERO, False)


@njit(nogil=True, cache=True)
def abort(ctrl, n_events):
    """Set ABORT and wake every sleeping waiter (a waiter that misses it re-checks within 1 ms)."""
    base = ctrl.ctypes.data
    store_seqcst(base + 8 * ABORT, 1)
    for e in range(n_events):
        _wake(ctrl, base + 8 * (EV0 + LINE * e))


@njit(nogil=True, cache=True)
def stop(ctrl):
    """Workers leave their loop: STOP, then a GO bump so a sleeping worker wakes."""
    store_seqcst(ctrl.ctypes.data + 8 * STOP, 1)
    _bump(ctrl, GO)


@njit(nogil=True, cache=True)
def interpret(addrs, ioffs, foffs, itab, ftab, bases, start, stop):
    """Run tasks [start, stop); -1, or the index of the task whose kernel raised (the run stops there)."""
    ip, fp, bp = itab.ctypes.data, ftab.ctypes.data, bases.ctypes.data
    for t in range(start, stop):
        call_thunk(addrs[t], ip + 8 * ioffs[t], fp + 8 * foffs[t], bp)
        if bases[STATUS] != 0:
            return t
    return -1


@njit(nogil=True, cache=True)
def interpret_sync(addrs, ioffs, foffs, itab, ftab, bases, ctrl, generation, start, stop):
    """Run rows [start, stop) of a stream with event ops: DONE_OK, ABORTED (a wait saw ABORT), or the
    index of the task whose kernel raised."""
    ip, fp, bp, base = itab.ctypes.data, ftab.ctypes.data, bases.ctypes.data, ctrl.ctypes.data
    for t in range(start, stop):
        a = addrs[t]
        if a > 0:
            call_thunk(a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp)
            if bases[STATUS] != 0:
                return t
        elif a == RECORD:
            word = EV0 + LINE * ioffs[t]
            store_seqcst(base + 8 * word, generation)
            _wake(ctrl, base + 8 * word)
        elif not _wait(ctrl, EV0 + LINE * ioffs[t], generation, ABORT, True):
            return ABORTED
    return DONE_OK
