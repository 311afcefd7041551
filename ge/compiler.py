"""compile(model, options) -> Plan: import, optimize, order, bind kernels. Each stage returns data.

compile_gears(model, options) -> GearPlans: for Options.dynamic_batch, one static plan per batch gear
(runtime_v1.gears runs them): find the batch dim the inputs share, bind it to each gear, compile; for
Options.dynamic_dims, one per entry (compile_dims_gears).
"""
from __future__ import annotations

import copy
import gc
import dataclasses
import logging
import math
import os
from types import MappingProxyType

from .errors import DeviceMemoryError, GEError
from . import partition
from .ir import Graph, Node
from .kernels.bind import node_context, node_kernel, static_spec
from .kernels.registry import UnknownValueError
from .bodies import compile_bodies, host_kernel
from .hccl import ops as _hccl_ops  # noqa: F401 (registers the Hcom ops' kernels)
from .hccl.world import launched_rank
from .memory import continuous, plan_memory
from .memory.gear_weights import share_weights
from .npu import progress
from .plan_rules import check_compile_options
from .options import Options, as_options
from . import kv_cache
from .parallel.data import split_batch
from .parallel.tensor import split_tensor
from .passes import run_pipeline
from .plan import ACTIVATION, CONST, INPUT, GearPlans, Plan, PlanNode, PlanTensor, host_driven, host_task, runs_on_v1
from .npu.engines import GE_LOCAL, LABEL_OPS, engine_for_op
from .schedule import schedule
from .schedule.toposort import topological_order

log = logging.getLogger("ge")
COLLECT_BYTES = 16 << 20   # weights from which a compile collects its cyclic IR at once (see compile)


def import_model(model, inputs=None, outputs=None) -> Graph:
    """Any supported model form -> ir.Graph. `inputs`/`outputs` (tensor names) pick the feeds and results
    of a TensorFlow graph (.pb, .pbtxt, SavedModel folder, GraphDef)."""
    if isinstance(model, Graph):
        return model
    if _is_tensorflow(model):
        from .frontends.tensorflow import import_tensorflow  # optional extra
        return import_tensorflow(model, inputs, outputs)
    if inputs is not None or outputs is not None:
        raise GEError("inputs=/outputs= select tensors of TensorFlow models only; an ONNX model names its own")
    from .frontends.onnx import import_onnx
    return import_onnx(model)


def _is_tensorflow(model) -> bool:
    if isinstance(model, (str, os.PathLike)):
        return str(model).endswith((".pb", ".pbtxt")) or os.path.isdir(model)
    return type(model).__name__ == "GraphDef"


def optimize(graph: Graph, options: Options) -> Graph:
    run_pipeline(graph, options)
    return graph


def compile(model, options: Options | dict | None = None, *, inputs=None,  # noqa: A001 - the public verb
            outputs=None) -> Plan:
    options = as_options(options)
    # the tiling's core count, fixed in the plan; a Plan holds one gear (ge/plan_rules.py, shared with load)
    options = options.replace(aicore_num=check_compile_options(options))
    with progress.phase("import"):   # phases: for the CLI's "where the time went" (ge.npu.progress)
        graph = bind_input_shapes(import_model(model, inputs, outputs), options.input_shape)
        if options.kv_cache_max_len:   # a decoder's past keys/values in place (docs/kv-cache.md)
            if options.kv_cache_static:   # one step plan for every past length: [batch, 1] tokens, a padded mask
                graph = bind_input_shapes(graph, kv_cache.static_shapes(graph, options.kv_cache_max_len))
            graph = kv_cache.in_place(graph, options.kv_cache_max_len, options.kv_cache_static)
        if options.parallel == "data":
            graph = split_batch(graph, options.device_count)
        elif options.parallel == "tensor":
            rank = options.device_id if options.device_id >= 0 else launched_rank()
            graph = split_tensor(graph, rank, options.device_count)
    for value in list(graph.values.values()):  # before a pass (constant folding) materialises one
        _check_size(graph, value, options)
    value = None   # (a Value reaches the whole graph: the collection below must not find it held)
    with progress.phase("passes"):
        graph = optimize(graph, options)
        if options.kv_cache_max_len:
            kv_cache.check(graph)
    with progress.phase("planning"):
        order = topological_order(graph, options.topo_sorting_mode)
        plan = build_plan(graph, order, options, sink=not options.parallel)
        # the IR is cyclic (values <-> nodes): without a collection its arrays (every constant, the plan's and
        # the ones the passes replaced) would stay until Python's next cyclic GC, beside the runtime's copy.
        # Only for weights worth it: a full collection costs ~0.6 s in a process with a large heap (a test
        # run's), which thousands of small compiles paid (the suite took 4x as long)
        del graph, order
        if sum(a.nbytes for a in plan.constants.values()) >= COLLECT_BYTES:
            gc.collect()
    dyn = host_driven(plan) if options.kv_cache_static else ()
    if dyn:   # its promise is one static step plan for every past length
        raise GEError(f"kv_cache_static: {dyn[0].op_type} node '{dyn[0].name}' (and {len(dyn) - 1} more) still has "
                      "shapes known only at run time: the export uses the past length as a size ge cannot pad "
                      "(run it without kv_cache_static; `ge plan` says why each node is dynamic)")
    return plan


def _static_gear(graph: Graph, options: Options, what: str, advice: str) -> Plan:
    """One gear's plan, which runtime_v1 runs: a GEError (`what` ... `advice`) naming a node left dynamic."""
    plan = compile(graph, options)
    dyn = [n for n in host_driven(plan) if not host_task(n)]   # host tasks run on runtime_v1 (runtime_v1/host.py)
    if dyn or not runs_on_v1(plan):
        dyn = dyn or host_driven(plan)
        raise GEError(f"{what} {dyn[0].op_type} node '{dyn[0].name}' (and {len(dyn) - 1} more) still has shapes "
                      f"known only at run time{advice}")
    return plan


def compile_gears(model, options: Options | dict | None = None, *, inputs=None, outputs=None,
                  fallback: bool = False) -> GearPlans:
    """Options.dynamic_batch: bind the inputs' shared symbolic leading dim to each gear, compile each.
    Options.dynamic_dims: compile_dims_gears (`fallback`: with the dynamic plan runtime_v2 runs for other
    shapes)."""
    options = as_options(options)
    if options.dynamic_dims:
        return compile_dims_gears(model, options, inputs=inputs, outputs=outputs, fallback=fallback)
    if not options.dynamic_batch:
        raise GEError("compile_gears needs Options.dynamic_batch (e.g. [1, 2, 4, 8]) or dynamic_dims")
    check_compile_options(options, gears=True)
    static = options.replace(dynamic_batch=())  # each gear's plan is an ordinary static plan
    if options.gear_memory_split_bytes and options.memory_assigner == "hybrid":
        # the split cuts between blocks (runtime_v1/gear_memory.py): GE's block strategies place whole
        # blocks, the offset planners overlap tensors partially, which leaves nowhere to cut
        static = static.replace(memory_assigner="blocks")
    plans, symbol, declared = {}, None, None
    for gear in options.dynamic_batch:
        # a fresh graph per gear: the passes rewrite it in place
        with progress.phase("import"):
            graph = copy.deepcopy(model) if isinstance(model, Graph) else import_model(model, inputs, outputs)
            graph = bind_input_shapes(graph, options.input_shape)
        if symbol is None:
            symbol = _batch_symbol(graph)
            declared = [v.shape for v in graph.outputs]  # the frontend's view, before binding
        for v in graph.values.values():  # one symbol means one size everywhere it appears
            if v.shape is not None and symbol in v.shape:
                v.shape = tuple(gear if d == symbol else d for d in v.shape)
        plans[gear] = _static_gear(graph, static, f"dynamic_batch binds only the batch dim '{symbol}'; with "
                                   f"it at {gear},", ". runtime_v1 runs static plans only: use runtime='v2', which "
                                   "runs dynamic shapes")
    plans = share_weights(plans)   # one weight image for all gears (runtime_v1/gears.py)
    top = plans[max(plans)]
    batched = tuple(_is_batched(k, symbol, declared[k], plans) for k in range(len(top.outputs)))
    sym = lambda t: dataclasses.replace(t, shape=(symbol,) + tuple(t.shape[1:]))  # noqa: E731
    ins = tuple(sym(top.tensors[i]) for i in top.inputs)
    outs = tuple(sym(top.tensors[o]) if b else top.tensors[o] for o, b in zip(top.outputs, batched))
    return GearPlans(symbol, MappingProxyType(plans), ins, outs, batched)


def compile_dims_gears(model, options: Options, *, inputs=None, outputs=None,
                       fallback: bool = False) -> GearPlans:
    """Options.dynamic_dims (GE's ge.dynamicDims over the -1s of ge.inputShape): per entry, input_shape with
    its -1s replaced by the entry's sizes in order (a symbol so bound takes the size everywhere), compiled to
    a static plan. GE builds one model with a case branch per gear (docs/ge-reference.md §4.4); ge keeps one
    plan per gear and runtime_v1/gears.py shares their feature map. A run needs its feeds' shapes to match a
    gear exactly, as GE does: padding a dim other than the batch is not sound (a padded sequence changes the
    softmax over it). `fallback`: also the plan with the -1 dims dynamic, which runtime_v2 runs for a shape
    that matches no gear (runtime="auto")."""
    if options.parallel:
        raise GEError(f"parallel={options.parallel!r} with dynamic_dims: compile one static shape instead")
    holes = [(name, axis) for name, shape in options.input_shape for axis, d in enumerate(shape) if d == -1]
    static = options.replace(dynamic_dims=(), input_shape=())  # each gear's plan is an ordinary static plan
    if options.gear_memory_split_bytes and options.memory_assigner == "hybrid":
        static = static.replace(memory_assigner="blocks")  # whole blocks leave places to cut (as compile_gears)
    def fresh():
        return copy.deepcopy(model) if isinstance(model, Graph) else import_model(model, inputs, outputs)
    plans, declared = {}, None
    for k, entry in enumerate(options.dynamic_dims):
        with progress.phase("import"):   # a fresh graph per gear: the passes rewrite it in place
            graph = bind_input_shapes(fresh(), options.input_shape)   # checks the -1s; binds the fixed dims
        if declared is None:   # the model's view with the -1 dims still symbolic
            declared = ([v.shape for v in graph.inputs], [v.shape for v in graph.outputs])
        sizes = iter(entry)
        shapes = tuple((name, tuple(next(sizes) if d == -1 else d for d in shape))
                       for name, shape in options.input_shape)
        try:
            bind_input_shapes(graph, shapes)
        except GEError as e:
            raise GEError(f"dynamic_dims entry {k} ({','.join(map(str, entry))}) on input_shape's -1 dims "
                          f"{', '.join(f'{n}[{a}]' for n, a in holes)}: {e}") from None
        plan = _static_gear(graph, static, f"dynamic_dims entry {k} ({','.join(map(str, entry))}): with "
                            "input_shape's -1 dims bound,", " (a symbolic dim input_shape leaves free, or shape "
                            "arithmetic the compiler does not fold); runtime_v1 runs static plans only: fix the other "
                            "dims in input_shape, or use runtime='v2', which runs dynamic shapes")
        plans[entry] = plan
    dynamic = compile(fresh(), options.replace(dynamic_dims=())) if fallback else None
    return dims_gear_plans(plans, holes, declared, dynamic)


def dims_gear_plans(plans: dict, holes, declared, fallback: Plan | None = None) -> GearPlans:
    """Static plans of one graph, one per dims gear ({entry: plan}), as GearPlans: their weights laid out as
    one image; `holes` the (input name, axis) of each varying dim; `declared` the model's (input shapes,
    output shapes) with those dims symbolic (an output dim that differs between gears and that the model
    leaves unnamed is named after the output)."""
    plans = share_weights(plans)   # one weight image for all gears (runtime_v1/gears.py)
    top = plans[max(plans)]
    # (an input the compile added, kv_cache_static's past length, keeps the plan's shape)
    ins = tuple(dataclasses.replace(top.tensors[i], shape=tuple(declared[0][k])) if k < len(declared[0])
                else top.tensors[i] for k, i in enumerate(top.inputs))
    outs = []
    for k, o in enumerate(top.outputs):
        per_gear = [p.tensors[p.outputs[k]].shape for p in plans.values()]
        want = declared[1][k] or ()
        outs.append(dataclasses.replace(top.tensors[o], shape=tuple(
            dims[0] if len(set(dims)) == 1 else want[a] if a < len(want) and isinstance(want[a], str)
            else f"{top.tensors[o].name}_{a}" for a, dims in enumerate(zip(*per_gear)))))
    return GearPlans("", MappingProxyType(plans), ins, tuple(outs), (False,) * len(outs), dims=tuple(holes),
                     fallback=fallback)


def bind_input_shapes(graph: Graph, shapes) -> Graph:
    """Options.input_shape: give inputs fixed sizes (atc --input_shape). A symbolic dim takes its size
    everywhere it appears; a fixed dim must agree; an input of unknown shape takes the given one."""
    if not shapes:
        return graph
    by_name = {v.name: v for v in graph.inputs}
    sizes: dict[str, int] = {}
    for name, shape in shapes:
        v = by_name.get(name) or by_name.get(name[:-2] if name.endswith(":0") else name)
        if v is None:
            raise GEError(f"input_shape names '{name}', which is not an input of '{graph.name}'; inputs: "
                          + ", ".join(f"{u.name}{list(u.shape) if u.shape is not None else '[?]'}"
                                      for u in graph.inputs))
        if v.shape is None:   # -1: a symbolic dim of its own
            v.shape = tuple(f"{v.name}_{axis}" if d == -1 else d for axis, d in enumerate(shape))
            continue
        if len(v.shape) != len(shape):
            raise GEError(f"input_shape gives '{name}' {len(shape)} dims {list(shape)}; the model declares "
                          f"{len(v.shape)}: {list(v.shape)}")
        for axis, (have, want) in enumerate(zip(v.shape, shape)):
            if want == -1 and isinstance(have, int):   # GE's -1 marks a dynamic dim; this one is fixed
                raise GEError(f"input_shape gives '{name}' -1 (dynamic) on axis {axis}, where the model fixes "
                              f"{have}: {list(v.shape)}; only the model's symbolic dims can vary")
            if want == -1:
                continue
            if isinstance(have, int) and have != want:
                raise GEError(f"input_shape gives '{name}' size {want} on axis {axis}, where the model fixes "
                              f"{have}: {list(v.shape)}")
            if isinstance(have, str) and sizes.setdefault(have, want) != want:
                raise GEError(f"input_shape gives the symbolic dim '{have}' two sizes: {sizes[have]} and "
                              f"{want} ('{name}' axis {axis})")
    for v in graph.values.values():  # one symbol means one size everywhere it appears
        if v.shape is not None and any(isinstance(d, str) and d in sizes for d in v.shape):
            v.shape = tuple(sizes.get(d, d) if isinstance(d, str) else d for d in v.shape)
    return graph


def _batch_symbol(graph: Graph) -> str:
    """The symbolic leading dim every input shares (the batch), or a GEError saying what is there."""
    found = {v.name: v.shape[0] if v.shape else None for v in graph.inputs}
    symbols = {d for d in found.values() if isinstance(d, str)}
    if len(symbols) == 1 and all(isinstance(d, str) for d in found.values()):
        return symbols.pop()
    shapes = ", ".join(f"{v.name}{list(v.shape) if v.shape is not None else '[?]'}" for v in graph.inputs)
    why = ("inputs disagree on it" if len(symbols) > 1 or (symbols and len(found) > 1)
           else "no input has one")
    raise GEError(f"dynamic_batch needs every input of '{graph.name}' to lead with one symbolic batch dim "
                  f"(an ONNX dim_param such as 'N'), but {why}: {shapes}")


def _is_batched(k: int, symbol: str, declared, plans) -> bool:
    """Output k's leading dim is the batch: declared so, or (shape unknown before binding) it equals the
    gear in every gear's plan."""
    if declared:
        if declared[0] == symbol:
            return True
        if isinstance(declared[0], int):
            return False
    lead = [_rows(p, p.outputs[k]) for p in plans.values()]
    return all(d == (g,) for d, g in zip(lead, plans))


def _rows(plan: Plan, t: int) -> tuple:
    """The leading dim of tensor t; of a sequence of maps (ZipMap), its input's (a map per row)."""
    spec = plan.tensors[t]
    if spec.value_kind.startswith("seq(map"):
        node = next((n for n in plan.nodes if t in n.outputs), None)
        return plan.tensors[node.inputs[0]].shape[:1] if node is not None and node.op_type == "ZipMap" else ()
    return spec.shape[:1]


def build_plan(graph: Graph, order: list, options: Options, sink: bool = False, bound: dict | None = None) -> Plan:
    """Number the tensors, bind each node's kernel and (where shapes are static) its launch, plan memory.
    `sink`: a dynamic graph's static pieces become PartitionedCall nodes (ge/partition.py); `bound`: nodes
    already bound (a piece's, bound with the whole graph)."""
    tensors: list[PlanTensor] = []
    index: dict[int, int] = {}
    constants = {}
    input_ids = {id(v) for v in graph.inputs}   # a set: `in graph.inputs` per tensor was quadratic (10,000 inputs)

    def tensor_of(v) -> int:
        if v is None:
            return -1
        if id(v) not in index:
            if v.dtype is None:
                raise GEError(f"value '{v.name}' of graph '{graph.name}' has no known dtype")
            kind = CONST if v.is_const else INPUT if id(v) in input_ids else ACTIVATION
            _check_size(graph, v, options)
            i = index[id(v)] = len(tensors)
            shape = v.shape if v.shape is not None else ("?",)
            tensors.append(PlanTensor(i, v.name, v.dtype, tuple(shape) if v.is_tensor else ("?",), kind,
                                      v.kind))
            if v.is_const:
                constants[i] = v.const
        return index[id(v)]

    inputs = tuple(tensor_of(v) for v in graph.inputs)
    bound = dict(bound or {})   # id(node) -> (kernel, launch, dynamic, bodies)
    for node in order:
        if id(node) in bound:
            continue
        kernel = host_kernel(node, node_kernel(graph, node))
        if kernel.host is not None:   # control flow, sequences: on the host, bodies compiled into plans
            bound[id(node)] = kernel, None, True, compile_bodies(node, lambda g: _compile_body(g, options))
        else:
            bound[id(node)] = (kernel, *_bind_launch(graph, node, kernel, options.aicore_num), ())
    if sink:   # a dynamic plan's static pieces, each a static plan of its own (ge/partition.py)
        order = _sink_pieces(graph, order, bound, options)
    nodes = []
    for step, node in enumerate(order):
        kernel, launch, dynamic, bodies = bound[id(node)]
        ins = tuple(tensor_of(v) for v in node.inputs)
        outs = tuple(tensor_of(v) for v in node.outputs)
        nodes.append(PlanNode(step, node.name, node.op_type, node.domain, node_context(
            graph, node, kernel).opset, dict(node.attrs), ins, outs, kernel, launch, dynamic,
            kernel.engine, bodies=bodies))
    outputs = tuple(tensor_of(v) for v in graph.outputs)
    nodes, events, reason = _assign_streams(order, nodes, options)
    plan = Plan(graph.name, tuple(tensors), tuple(nodes), inputs, outputs, constants, options,
                events=events, single_stream_reason=reason)
    # after streams: a Concat placed like the copy it was keeps the branches parallel (as GE_LOCAL from the
    # start it would pull them onto one stream); it then runs nothing, on that stream
    free = continuous.choose(plan)
    if free:
        plan = dataclasses.replace(plan, nodes=tuple(
            dataclasses.replace(n, no_task=True, engine=GE_LOCAL) if n.step in free else n for n in nodes))
    memory = plan_memory(plan)
    log.debug("plan %s: %s", plan.name, memory.summary())
    return dataclasses.replace(plan, memory=memory)


def _sink_pieces(graph: Graph, order: list, bound: dict, options: Options) -> list:
    """The order with each static piece of a dynamic graph (ge/partition.py, Steps 1-5) as one stand-in
    PartitionedCall node, its piece compiled into a static plan (the launches bound above; its own streams
    and memory plan)."""
    flags = [bound[id(n)] for n in order]
    if all(not dynamic for _, _, dynamic, _ in flags):
        return order
    if all(not dynamic or (bodies and n.op_type in LABEL_OPS) for n, (_, _, dynamic, bodies) in zip(order, flags)):
        # only If / Loop / Scan are dynamic: when they are static control flow the task sink runs the whole
        # plan (label tasks, runs_on_v1), better than any piece of it; the trial plan reuses the binds
        if runs_on_v1(build_plan(graph, order, options, bound=bound)):
            return order
    known = [not dynamic for _, _, dynamic, _ in flags]
    tasks = [launch is not None and not dynamic for _, launch, dynamic, _ in flags]
    pieces = partition.static_pieces(graph, order, known, tasks, options.static_model_ops_lower_limit)
    if not pieces:
        return order
    inner = options.replace(state_pairs=())
    out = []
    for unit in partition.unit_order(order, pieces):
        if not isinstance(unit, partition.Piece):
            out.append(unit)
            continue
        body = build_plan(partition.piece_graph(graph, unit), unit.nodes, inner,
                          bound={id(n): bound[id(n)] for n in unit.nodes})
        call = Node(partition.OP, unit.name, list(unit.inputs), list(unit.outputs), domain=partition.DOMAIN)
        bound[id(call)] = node_kernel(graph, call), None, True, ((partition.BODY, body, 0),)
        out.append(call)
    return out


def _compile_body(graph: Graph, options: Options) -> Plan:
    """A body into a plan of its own: passes, order, kernels, streams and memory, as for a model (the
    model's state pairs name the model's values, not the body's)."""
    options = options.replace(state_pairs=())
    graph = optimize(graph, options)
    return build_plan(graph, topological_order(graph, options.topo_sorting_mode), options)


def _check_size(graph, v, options) -> None:
    """Refuse, before anything is planned or allocated, a static tensor larger than the whole device."""
    if v.dtype is None or v.shape is None or not all(isinstance(d, int) for d in v.shape):
        return
    nbytes = math.prod(v.shape) * v.dtype.itemsize  # Python ints: no int64 overflow for huge dims
    if nbytes > options.device_memory_bytes:
        raise DeviceMemoryError(nbytes, options.device_memory_bytes, 0,
                                f"tensor '{v.name}' {v.dtype}{list(v.shape)} of graph '{graph.name}' "
                                "(larger than the whole device; refused at compile time)")


def _assign_streams(order, nodes, options):
    """Engines (GE_LOCAL for no-task aliases), GE's logical streams and the pruned sync events
    (ge.schedule). One stream, with the reason logged, when options or the graph ask for it."""
    engines = [GE_LOCAL if n.is_alias else engine_for_op(n.op_type, n.kernel.engine) for n in nodes]
    host = next((o for o, n in zip(order, nodes) if n.kernel.host is not None and n.op_type not in LABEL_OPS), None)
    sched = schedule(order, engines, options, host)
    a = sched.streams
    nodes = [dataclasses.replace(n, engine=e, stream=s) for n, e, s in zip(nodes, engines, a.streams)]
    if a.single_stream_reason:
        log.info("plan: single stream (%s)", a.single_stream_reason)
    else:
        log.info("plan: %d streams, %d events", a.num_streams, len(sched.events.events))
    return nodes, sched.events.events, a.single_stream_reason


def _bind_launch(graph, node, kernel, cores: int):
    """(launch, dynamic): the node's Launch, tiled for `cores` AI cores, when its shapes are static (None: no
    task, an alias), or (None, True) when shapes are known only at run time."""
    specs = [static_spec(v) for v in node.inputs]
    if any(v is not None and s is None for v, s in zip(node.inputs, specs)):
        return None, True
    try:
        return kernel.bind(node_context(graph, node, kernel, specs, cores=cores)), False
    except UnknownValueError:
        return None, True
