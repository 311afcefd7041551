"""Why a plan is dynamic, node by node, and which runtime `runtime="auto"` picks for it and why.

A plan node is dynamic when one of its input shapes is symbolic or its kernel's infer needs an input value
that is not a constant (Reshape's target, Expand's shape, Range's limits...: UnknownValueError). Most
dynamic nodes are dynamic only because a node above them is: the lines here name the roots, the nodes whose
own inputs all have static shapes, and for each the cause (a value fed or computed from data, a data-sized
output such as NonZero's, a host op), and the inputs whose symbolic dims make the rest dynamic. `ge plan`,
`ge run` and `Session.stats()` print them (GE's atc prints the unknown-shape nodes the same way).
"""
from __future__ import annotations

from .kernels.bind import prepare_launch
from .kernels.registry import TensorSpec, UnknownValueError
from .partition import describe
from .plan import Plan, host_driven, host_task, runs_on_v1, static_control_reason, sunk_plan


def _spec(plan: Plan, t: int):
    if t < 0:
        return None
    pt = plan.tensors[t]
    return TensorSpec(pt.shape, pt.dtype) if pt.is_static and pt.value_kind == "tensor" else None


def _root_reason(plan: Plan, node, producer: dict) -> tuple[str, object]:
    """(why a node whose input shapes are all static still has shapes known only at run time, the node or
    input whose run-time shape it reads: None when it reads data)."""
    what = f"{node.op_type} node '{node.name}'"
    sized = next((plan.tensors[t].name for t in node.outputs if t >= 0 and not plan.tensors[t].is_static), None)
    if host_task(node) and sized is not None:
        return f"{what} runs on the host and the data decides the size of its output '{sized}'", None
    if node.kernel.host is not None:
        return static_control_reason(plan, node) or f"{what} runs on the host (its outputs are known at run " \
            "time)", None
    specs = [_spec(plan, t) for t in node.inputs]
    values = [plan.constants.get(t) if (t >= 0 and k in node.kernel.value_inputs) else None
              for k, t in enumerate(node.inputs)]
    try:
        prepare_launch(node.kernel, node.op_type, node.name, node.attrs, specs, values, node.opset,
                       len(node.outputs))
    except UnknownValueError as e:
        missing = [k for k in node.kernel.value_inputs
                   if k < len(node.inputs) and node.inputs[k] >= 0 and values[k] is None]
        if not missing:
            return f"{what}: {e}", None
        t = node.inputs[missing[0]]
        source, shape_of = _data_source(plan, t, producer)
        return (f"{what}: its output shape depends on the value of input {missing[0]} ('{plan.tensors[t].name}'), "
                f"{source or 'known only at run time'}"), shape_of
    except Exception as e:  # noqa: BLE001 - a reason, not a failure: the plan compiled
        return f"{what}: {type(e).__name__}: {e}", None
    return f"{what}: shapes known only at run time", None


def _data_source(plan: Plan, t: int, producer: dict) -> tuple[str, object]:
    """(where the run-time value of tensor t comes from: the graph input fed, the first node up its chain that
    reads data rather than shapes, or a run-time shape; the node or input tensor whose shape it is, or None)."""
    seen, todo = set(), [t]
    while todo:
        t = todo.pop()
        if t in seen or t < 0:
            continue
        seen.add(t)
        if t in plan.inputs:
            return f"fed at run time (input '{plan.tensors[t].name}')", None
        node = producer.get(t)
        if node is None:
            continue
        if node.op_type not in SHAPE_OPS:
            return f"computed from data by {node.op_type} node '{node.name}'", None
        if node.op_type in ("Shape", "Size"):
            src = producer.get(node.inputs[0])
            if node.inputs[0] in plan.inputs:
                return f"the shape of input '{plan.tensors[node.inputs[0]].name}', known only at run time", \
                    node.inputs[0]
            if src is not None:
                return f"the shape of {src.op_type} node '{src.name}''s output, known only at run time", src
        todo.extend(node.inputs)
    return "", None


# ops that move or compute shape values (the exporters' shape arithmetic): a run-time value passing through
# them still comes from where it entered
SHAPE_OPS = {"Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Reshape", "Identity",
             "Add", "Sub", "Mul", "Div", "Equal", "Where", "Max", "Min", "ConstantOfShape", "Expand", "Range"}


def dynamic_reasons(plan: Plan) -> list[str]:
    """One line per cause: each root dynamic node whose shapes depend on data (or a host op) and why, then the
    inputs with symbolic dims and how many roots only follow their run-time shapes."""
    producer = {o: n for n in plan.nodes for o in n.outputs}
    data, shaped = [], []
    from_data: set[int] = set()   # steps whose shapes depend on data, not only on the input shapes
    for node in plan.nodes:
        if not node.is_dynamic or sunk_plan(node) is not None or (node.bodies and not static_control_reason(plan, node)):
            continue
        if host_task(node) and all(t < 0 or plan.tensors[t].is_static for t in node.outputs):
            continue   # a host task with static outputs: runtime_v1 runs it (runtime_v1/host.py)
        if any(t >= 0 and producer.get(t) is not None and producer[t].step in from_data for t in node.inputs):
            from_data.add(node.step)
        if all(t < 0 or _spec(plan, t) is not None for t in node.inputs):
            why, shape_of = _root_reason(plan, node, producer)
            if shape_of is None or getattr(shape_of, "step", None) in from_data:
                data.append(why)
                from_data.add(node.step)
            else:
                shaped.append(why)
    free = [plan.tensors[t] for t in plan.inputs
            if plan.tensors[t].value_kind == "tensor" and not plan.tensors[t].is_static]
    if free:
        data.append("input dims known only at run time: " + ", ".join(f"{t.name}{list(t.shape)}" for t in free)
                    + (f" ({len(shaped)} node(s) read their sizes as values)" if shaped else "")
                    + "; fix them: Options(input_shape=...) or --input-shape")
    else:
        data.extend(shaped)
    return data


def runtime_reason(plan: Plan, runtime: str, asked: str) -> str:
    """Why the session runs on `runtime`: the user's choice, or auto's reason."""
    if asked != "auto":
        return f"runtime='{asked}' was asked for"
    if runtime == "v1":
        host = sum(host_task(n) for n in plan.nodes)
        if host:
            return (f"auto: the task sink (runtime_v1) runs the plan: {host} host op{'s' * (host != 1)} as host "
                    "tasks (strings, ONNX-ML), every other task of static shapes")
        return "auto: every shape is static, the task sink (runtime_v1) runs the plan"
    if runs_on_v1(plan):
        return "auto: runtime_v1 is not available in this build"
    dyn = len(host_driven(plan))
    why = dynamic_reasons(plan)
    sunk = describe(plan)
    nodes = len(plan.nodes) + sum(len(sunk_plan(n).nodes) - 1 for n in plan.nodes if sunk_plan(n) is not None)
    head = f"auto: {dyn} of {nodes} nodes have shapes known only at run time, runtime_v2 runs them"
    return head + (f" ({why[0]}" + (f"; and {len(why) - 1} more causes" if len(why) > 1 else "") + ")"
                   if why else "") + (f"; {sunk.split('; host-driven')[0]} (runtime_v1's task sink)" if sunk else "")
