"""End to end on real threads: a compiled plan's kernels launched on GE's streams with the pruned events
give the expected outputs of the Inception light model, while streams really overlap (nogil kernels).

This is a sketch of how the plan wires the schedule in (positions = plan steps, engines from PlanNode):
each tensor gets its own buffer here (the memory plan is not yet stream-aware)."""
import numpy as np

import ge
from ge.kernels.registry import call
from ge.npu import Event, Stream, Tracer
from ge.npu.engines import GE_LOCAL
from ge.schedule.events import plan_events, verify_events
from ge.schedule.stream_allocator import assign_streams
from ge.zoo import expected_outputs, light_model_path


def plan_dependencies(plan):
    producer = {o: n.step for n in plan.nodes for o in n.outputs}
    return [sorted({producer[t] for t in n.inputs if t in producer}) for n in plan.nodes]


def test_inception_v1_runs_on_streams_with_events():
    plan = ge.compile(light_model_path("inception_v1"))
    preds = plan_dependencies(plan)
    engines = [GE_LOCAL if n.is_alias else n.engine for n in plan.nodes]
    streams = assign_streams(engines, preds, names=[n.name for n in plan.nodes]).streams
    events = plan_events(preds, streams).events
    assert verify_events(preds, streams, events) == []

    arrays = {i: np.asarray(a) for i, a in plan.constants.items()}
    (x,) = plan.inputs
    shape = plan.tensors[x].shape
    arrays[x] = (np.arange(int(np.prod(shape))) / np.prod(shape)).reshape(shape).astype(np.float32)
    tracer = Tracer("inception_v1")
    workers = {s: Stream(s, tracer=tracer) for s in sorted(set(streams))}
    handles = [Event(f"e{e.id}") for e in events]
    waits = {}
    for e in events:
        waits.setdefault(e.wait_before, []).append(e.id)
    records = {}
    for e in events:
        records.setdefault(e.record_after, []).append(e.id)
    try:
        for node in plan.nodes:
            s = workers[streams[node.step]]
            for k in waits.get(node.step, ()):
                s.wait(handles[k])
            if node.is_alias:     # no task: a view of its input, made when the host enqueues
                src = arrays[node.inputs[node.kernel.alias]]
                arrays[node.outputs[0]] = src.reshape(plan.tensors[node.outputs[0]].shape)
            else:
                outs = [np.empty(plan.tensors[o].shape, plan.tensors[o].dtype) for o in node.outputs]
                for o, a in zip(node.outputs, outs):
                    arrays[o] = a
                ins = [arrays[i] if i >= 0 else None for i in node.inputs]
                s.launch(call, node.launch, ins, outs, name=node.name)
            for k in records.get(node.step, ()):
                s.record(handles[k])
        for s in workers.values():
            s.synchronize(timeout=120)
    finally:
        for s in workers.values():
            s.close()
    want = expected_outputs("inception_v1")
    np.testing.assert_allclose(arrays[plan.outputs[0]], want[0], rtol=1e-3, atol=1e-5)
    stats = tracer.stats()
    print(f"inception_v1 on {len(workers)} streams: span {stats['span'] * 1e3:.1f} ms, busy "
          f"{sum(stats['busy'].values()) * 1e3:.1f} ms, overlap {stats['overlap'] * 1e3:.1f} ms")
    assert len(stats["busy"]) == len(set(streams)) > 1
