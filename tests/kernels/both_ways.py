"""Kernels whose path is chosen by a module flag at import (by the CPU): both paths, on any machine."""
from numba import njit


def compiled_both_ways(module, flag: str, fn, warm) -> dict:
    """{False: copy, True: copy}: fresh jitted copies of fn, each compiled by warm(copy) while module.<flag>
    has that value (Numba freezes a global when it compiles)."""
    saved, copies = getattr(module, flag), {}
    try:
        for value in (False, True):
            setattr(module, flag, value)
            copies[value] = njit(nogil=True)(fn.py_func)
            warm(copies[value])
    finally:
        setattr(module, flag, saved)
    return copies
