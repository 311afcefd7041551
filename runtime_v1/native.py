"""The native part of the task sink: two llvmlite intrinsics and the one interpreter loop.

- `call_thunk(addr, iargs, fargs, bases)` calls the C function at `addr` with three table pointers (the
  task's int64 slots, its float64 slots, the base-pointer table). Every thunk (thunks.py) has THUNK_SIG.
- `as_pointer(addr, dtype)` turns an integer address into a typed pointer, so a thunk cuts `carray` views
  out of any buffer whose address sits in the base-pointer table (the arena's segments or a user's array).
- `interpret(...)` runs tasks [start, stop) of one stream's table. It is compiled once for the whole kernel
  library (it only calls addresses) and cached on disk; it releases the GIL. A kernel's exception cannot
  cross a C call: the thunk catches it and sets the STATUS slot of the base table; the loop stops there
  and returns the task index, and the executor re-runs that task from Python for the real message.
"""
from __future__ import annotations

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


STATUS = 3  # the base-table slot a thunk sets to 1 when its kernel raised


@njit(nogil=True, cache=True)
def interpret(addrs, ioffs, foffs, itab, ftab, bases, start, stop):
    """Run tasks [start, stop); -1, or the index of the task whose kernel raised (the run stops there)."""
    ip, fp, bp = itab.ctypes.data, ftab.ctypes.data, bases.ctypes.data
    for t in range(start, stop):
        call_thunk(addrs[t], ip + 8 * ioffs[t], fp + 8 * foffs[t], bp)
        if bases[STATUS] != 0:
            return t
    return -1
