"""RTS tasks of static control flow (runtime_v1/labels.py): GE's MemcpyAsync and a Loop's counter tasks.

They are not ops (nothing registers them): runtime_v1's label maker launches them between a body's tasks,
through thunks like any kernel. Buffers are bytes (uint8), so one thunk serves every dtype; the counter is an
int64[1], a flag or condition a uint8[1] (ONNX's bool), as the SWITCH row reads it.
"""
from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True)
def memcpy(src, dst):
    dst[:] = src


@njit(nogil=True, cache=True)
def memcpy_at(src, dst, counter, reverse):
    """src into slot counter[0] of dst (slots of src.size bytes; from the end when reverse): a scan output's
    row, or (the other way) a scan input's row into src's place. Raises past the last slot."""
    n = dst.size // max(src.size, 1)
    k = counter[0]
    if k < 0 or k >= n:
        raise IndexError("a loop ran more iterations than its scan output has rows")
    k = n - 1 - k if reverse else k
    dst[k * src.size:(k + 1) * src.size] = src


@njit(nogil=True, cache=True)
def take_at(src, dst, counter, reverse):
    """Slot counter[0] of src (slots of dst.size bytes; from the end when reverse) into dst: a scan input's row."""
    n = src.size // max(dst.size, 1)
    k = counter[0]
    k = n - 1 - k if reverse else k
    dst[:] = src[k * dst.size:(k + 1) * dst.size]


@njit(nogil=True, cache=True)
def loop_test(counter, trips, cond, flag, has_trips, has_cond):
    """flag = counter < trips (when given) and cond (when given): ONNX Loop's test before an iteration."""
    go = True
    if has_trips and counter[0] >= trips[0]:
        go = False
    if has_cond and cond[0] == 0:
        go = False
    flag[0] = 1 if go else 0


@njit(nogil=True, cache=True)
def loop_next(counter):
    counter[0] += 1


@njit(nogil=True, cache=True)
def expect_count(counter, n):
    """After a loop with scan outputs: they were planned for n iterations."""
    if counter[0] != n:
        raise ValueError("a loop ended after a different number of iterations than its scan outputs' rows")
