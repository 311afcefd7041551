"""Data parallel (Options.parallel="data"): each of N devices runs 1/N of the batch; outputs are gathered.

Step 1: every graph input's axis 0 is the batch; it must be static and split into N equal slices. The
        plan's inputs become one slice each (the session cuts the caller's full batch: every rank is fed
        the whole batch and reads its own rows, a view, no copy).
Step 2: shapes are inferred again from the sliced inputs (the kernels' infers, as the pipeline does).
Step 3: an output whose axis 0 shrank N-fold is the batch: an HcomAllGather (rank_size N) stacks the
        devices' slices in rank order under the output's name, so every device returns the whole batch;
        an output that kept its size does not depend on the batch and is left as it is.
The plan is the same on every rank (no rank in it): the group's plan check compares them bit for bit.
"""
from __future__ import annotations

from ..errors import GEError
from ..hccl.world import DEFAULT_GROUP
from ..passes import infer_shapes


def split_batch(graph, size: int):
    if size == 1:
        return graph
    infer_shapes(graph)   # the one-device shapes, where the frontend did not know them
    before = {id(v): v.shape for v in graph.outputs}
    # Step 1
    for x in graph.inputs:
        if not x.is_tensor or not x.is_static or not x.shape:
            raise GEError(f"data parallel splits every input on axis 0 (the batch); input '{x.name}' has "
                          f"shape {list(x.shape) if x.shape is not None else '?'} (give it a static batch, "
                          "e.g. Options.input_shape)")
        if x.shape[0] % size:
            raise GEError(f"data parallel over {size} devices: input '{x.name}' has batch {x.shape[0]}, "
                          f"which does not split into {size} equal slices")
        x.shape = (x.shape[0] // size, *x.shape[1:])
    # Step 2
    for node in graph.nodes:
        for v in node.outputs:
            v.shape = None
    infer_shapes(graph)
    # Step 3
    outputs = []
    for y in graph.outputs:
        old, new = before[id(y)], y.shape
        if old is None or new is None or not old or not new:
            raise GEError(f"data parallel: the shape of output '{y.name}' is not known after splitting the batch")
        if tuple(old) == tuple(new):
            outputs.append(y)
            continue
        if old[0] != new[0] * size or tuple(old[1:]) != tuple(new[1:]):
            raise GEError(f"data parallel: output '{y.name}' is {list(old)} on one device but {list(new)} on "
                          f"a slice of 1/{size} of the batch: its axis 0 is not the batch")
        outputs.append(_gather(graph, y, size))
    graph.outputs = outputs
    return graph


def _gather(graph, y, size: int):
    name = y.name
    del graph.values[name]
    y.name = graph.fresh_name(f"{name}/rank_slice")
    graph.values[y.name] = y
    node = graph.add_node("HcomAllGather", [y], [name], {"group": DEFAULT_GROUP, "rank_size": size},
                          name=graph.fresh_name(f"{name}/all_gather"), domain="ge")
    out = node.outputs[0]
    out.dtype, out.shape = y.dtype, (y.shape[0] * size, *y.shape[1:])
    return out
