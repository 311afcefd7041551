"""One compiled body per argument *types* for the big shared kernels, not one per constant value.

Called from jitted code, a Numba dispatcher compiles for the caller's argument types as they are, and a
constant argument is typed as its value (`Literal[int](0)`, `Literal[bool](False)`): every call site that
passes a different mix of constants gets its own copy of the callee. The GEMM's block (register tiles
inlined, ~35 s to compile on these machines) was called with seven such mixes, per dtype: minutes of every
cold start and of every CI run went into identical machine code. `by_type` makes a dispatcher forget the
values, so each caller links the one body compiled for plain int64/bool arguments. Inline functions keep
their constants, and so does everything not marked; `keep` names the parameters whose constants pick code
worth its own copy (the GEMM's unit k stride: gemm_block and the micro-kernel's units keep `sak`, so a
model whose GEMMs all read A with stride 1 compiles the register tiles once, not once per stride kind).

A few kernels choose a path by a module flag set from the CPU at import (conv_depthwise.DIRECT,
pool_plane.BUFFERED, conv_lowering.PAIR): `both_ways` compiles a kernel once each way, for the tests that hold
both paths to the same bits and for bench/kernel_paths.py, which times them on the machine at hand.
"""
from __future__ import annotations

import inspect

from numba import njit
from numba.core import types


def by_type(dispatcher=None, *, keep: tuple[str, ...] = ()):
    """Resolve jitted calls to `dispatcher` on unliteral argument types (decorate above @njit); the
    parameters named in `keep` stay literal where a caller passes a constant (`@by_type(keep=("sak",))`:
    the GEMM's unit k stride, which picks faster code, and nothing else)."""
    if dispatcher is None:
        return lambda d: by_type(d, keep=keep)
    resolve = dispatcher.get_call_template
    names = list(inspect.signature(dispatcher.py_func).parameters)
    kept = {names.index(k) for k in keep}

    def get_call_template(args, kws):
        return resolve(tuple(a if i in kept else types.unliteral(a) for i, a in enumerate(args)),
                       {k: t if k in keep else types.unliteral(t) for k, t in kws.items()})

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
