"""One compile per dtype for kernels over a variable number of inputs (Concat, Sum/Max/Min/Mean).

Numba compiles a star-args kernel once per argument count: a model with Concats of 2, 3 and 4 inputs
compiled movement.concat three times per dtype (bert_tiny: 3 int64 copies for its shape arithmetic), the ONNX
node cases Sum once per input count. A node of at most ARITY inputs (split_variadic leaves no more) passes
ARITY: its own, then its first input again as filler (Launch.inputs may repeat an index), which the kernel
never reads (a width of 0, or past the count it is given). A node of more inputs keeps its own count.
"""
from __future__ import annotations

ARITY = 8


def padded_inputs(n: int) -> tuple[int, ...] | None:
    """Launch.inputs for a node of n inputs: 0..n-1 then fillers up to ARITY (None: n > ARITY, all n as they are)."""
    return tuple(range(n)) + (0,) * (ARITY - n) if n <= ARITY else None
