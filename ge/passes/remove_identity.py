"""remove_identity: drop Identity and inference-mode Dropout nodes; their readers read the input instead.

Algorithm, per node in order:
  Step 1: match Identity, or Dropout in inference mode (no `training_mode` input, or a constant false
          one) whose mask output, if any, nobody reads and is not a graph output.
  Step 2: if the node's output is not a graph output, its readers read the node's input; erase the node.
  Step 3: if the output is a graph output, the output's name must stay. When the input is made by a
          node (P) for this node alone, P is rebuilt to produce the output under its name (P's own
          output name disappears). Otherwise the node stays (see limits).

Limits: an Identity/Dropout whose output is a graph output stays when its input is a graph input, a
constant, another graph output, or read by other nodes: removing it would rename an output or make an
output alias an input (Identity is a free alias at run time; runtimes copy such outputs out).
Dropout in training mode (a non-constant or true `training_mode`) stays: it is random.
Invariant: no value changes; every graph output keeps its name.
"""
from __future__ import annotations

from .pattern import const_of, only_reader, replace_pattern


def _is_removable(graph, node) -> bool:
    if node.domain != "" or not node.inputs or node.inputs[0] is None:
        return False
    if node.op_type == "Identity":
        return True
    if node.op_type != "Dropout":
        return False
    training = node.inputs[2] if len(node.inputs) > 2 else None
    if training is not None and (const_of(training) is None or bool(const_of(training).any())):
        return False
    return all(not v.users and v not in graph.outputs for v in node.outputs[1:])


def remove_identity(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        # Step 1: Identity, or an inference Dropout whose mask nobody reads
        if not _is_removable(graph, node):
            continue
        src, out = node.inputs[0], node.outputs[0]
        # Step 2: an internal value: readers read the input directly
        if out not in graph.outputs:
            graph.replace_all_uses_with(out, src)
            graph.erase_node(node)
            changed = True
            continue
        # Step 3: a graph output: its producer takes over the output's name, when that is legal
        p = src.producer
        if p is not None and len(p.outputs) == 1 and only_reader(graph, src, node):
            replace_pattern(graph, [p, node], p.op_type, p.inputs, p.attrs, p.domain, name=p.name,
                            results=[out])
            changed = True
    return changed
