"""Variable memory (GE's VariableMemoryAssigner, docs/ge-reference.md §2.12; §8.6: GE's tree of assigners lists
it next to the hybrid assigner): state that persists across runs gets a segment of its own that the planner never
reuses. ge's state is an ONNX model's output carried to one of its inputs on the next run (a KV cache):
Options.state_pairs names (output, input) pairs.

Step 1. Check each pair: the input is a graph input, the output a graph output computed by a task of this
        plan (not a view of an input or a constant), both of one static shape and dtype, each in one pair.
Step 2. Layout: per pair, the input's block, then the output's (512-aligned). A run reads one block and
        writes the other, and the runtimes swap their roles after every run, so the new state never
        overwrites the old while the run still reads it (GE updates variables in place with Assign ops; an
        ONNX output is a new tensor, hence two blocks).
"""
from __future__ import annotations

from ..errors import GEError
from ..npu.memory import align_up
from ..plan import sunk_plan


def check_states(plan, root) -> tuple[tuple[int, int], ...]:
    """Step 1: the plan's (input, output) state pairs, or GEError naming the pair at fault."""
    names = {t.name for t in plan.tensors}
    # (a static piece's outputs too: runtime_v1 computes or copies each into the block it is given, sunk.py)
    produced = {t: n for n in plan.nodes if (n.launch is not None and not n.no_task) or sunk_plan(n) is not None
                for t in n.outputs}
    seen = set()
    for out, inp in plan.options.state_pairs:
        where = f"state pair '{out}' -> '{inp}' (Options.state_pairs)"
        for name, what in ((out, "output"), (inp, "input")):
            if name not in names:
                raise GEError(f"{where}: '{name}' is not a tensor of '{plan.name}'")
            if name in seen:
                raise GEError(f"{where}: '{name}' is in another state pair too")
            seen.add(name)
        i, o = plan.tensor(inp), plan.tensor(out)
        if i.index not in plan.inputs:
            raise GEError(f"{where}: '{inp}' is not a graph input")
        if o.index not in plan.outputs:
            raise GEError(f"{where}: '{out}' is not a graph output")
        if (i.dtype, i.shape) != (o.dtype, o.shape) or not i.is_static:
            raise GEError(f"{where}: the output is {o.dtype}{list(o.shape)}, the input {i.dtype}{list(i.shape)}; "
                          "a state needs one static shape and dtype")
        if root[o.index] != o.index or o.index not in produced:
            raise GEError(f"{where}: '{out}' is not computed by a task of its own (a view of an input or a "
                          "constant); nothing would carry it")
    return plan.states


def layout_states(plan, states, offsets: dict) -> int:
    """Step 2: offsets of the input and output blocks per pair; the segment's bytes."""
    cursor = 0
    for i, o in states:
        for t in (i, o):
            offsets[t] = cursor
            cursor += align_up(plan.tensors[t].nbytes)
    return cursor
