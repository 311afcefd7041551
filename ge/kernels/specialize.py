"""One compiled body per argument *types* for the big shared kernels, not one per constant value.

Called from jitted code, a Numba dispatcher compiles for the caller's argument types as they are, and a
constant argument is typed as its value (`Literal[int](0)`, `Literal[bool](False)`): every call site that
passes a different mix of constants gets its own copy of the callee. The GEMM's block (register tiles
inlined, ~35 s to compile on these machines) was called with seven such mixes, per dtype: minutes of every
cold start and of every CI run went into identical machine code. `by_type` makes a dispatcher forget the
values, so each caller links the one body compiled for plain int64/bool arguments. Inline functions keep
their constants (the micro-kernel relies on a literal unit stride), and so does everything not marked.

A few kernels choose a path by a module flag set from the CPU at import (conv_depthwise.DIRECT,
pool_plane.BUFFERED, conv_lowering.PAIR): `both_ways` compiles a kernel once each way, for the tests that hold
both paths to the same bits and for bench/kernel_paths.py, which times them on the machine at hand.
"""
from __future__ import annotations

from numba import njit
from numba.core import types


def by_type(dispatcher):
    """Resolve jitted calls to `dispatcher` on unliteral argument types (decorate above @njit)."""
    resolve = dispatcher.get_call_template

    def get_call_template(args, kws):
        return resolve(tuple(types.unliteral(a) for a in args), {k: types.unliteral(t) for k, t in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


def both_ways(module, flag: str, fn, warm) -> dict:
    """{False: copy, True: copy}: fresh jitted (uncached) copies of fn, each compiled by warm(copy) while
    module.<flag> has that value (Numba freezes a global when it compiles)."""
    saved, copies = getattr(module, flag), {}
    try:
        for value in (False, True):
            setattr(module, flag, value)
            copies[value] = njit(nogil=True)(fn.py_func)
            warm(copies[value])
    finally:
        setattr(module, flag, saved)
    return copies
