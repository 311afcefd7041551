"""GE's AllReduce-parallel pass (Options.hcom_parallel, ge.hcomParallel) on ge.models.all_reduce_layers:
each layer's AllReduce consumer moves off the compute stream, outputs stay equal, the runs keep the order
(a consumer starts after its collective), and the modelled clock and its trace show the collective
overlapping the next layer's compute on another stream; the modelled ring of N devices (ge/npu/ring.py)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

import ge
from ge.models import all_reduce_layers
from ge.npu import Tracer, compare
from ge.npu.ring import HCCS_RING

MODEL = all_reduce_layers(layers=3, batch=4, width=16)
X = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)


def first_weight():
    return next(numpy_helper.to_array(w) for w in MODEL.graph.initializer if w.name.startswith("w0"))


def session(hcom_parallel: bool, runtime: str = "v2"):
    return ge.Session(MODEL, runtime=runtime, options=ge.Options(device_count=2, hcom_parallel=hcom_parallel,
                                                                 thread_budget=3))


def streams(plan) -> dict:
    return {n.name: n.stream for n in plan.nodes}


def test_the_option_and_its_ge_names():
    assert ge.Options.from_dict({"ge.hcomParallel": "1"}).hcom_parallel
    assert ge.Options.from_dict({"HCOM_PARALLEL": "1"}).hcom_parallel
    assert not ge.Options.from_dict({"ge.hcomParallel": "0"}).hcom_parallel


def test_consumers_leave_the_compute_stream():
    off, on = streams(session(False).plan), streams(session(True).plan)
    assert off["g0"] == off["fc1_7"]                 # without: g0 waits for the AllReduce before fc1
    assert on["g0"] == on["g1"] == on["g2"] not in (on["fc1_7"], on["allreduce0_5"])
    assert on["fc0_3"] == on["fc1_7"] == on["fc2_11"]   # the layers keep their stream


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_outputs_equal_and_order_kept(runtime):
    ref = session(False, runtime).run(None, {"x": X})
    s = session(True, runtime)
    out = s.run(None, {"x": X})
    for a, b in zip(out, ref):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(out[1], np.maximum(X @ first_weight(), 0), rtol=1e-6)  # g0 = (h0 + h0) / 2; numpy's
    # BLAS sums in its own order (AVX2: 1 ulp apart)
    t = Tracer("hcom_parallel")
    s.run_traced({"x": X}, t)                          # a group's trace: its first device
    spans = {sl.name: sl for sl in t.slices if sl.kind == "kernel"}
    for i, ar in enumerate(("allreduce0_5", "allreduce1_9", "allreduce2_13")):
        assert spans[f"g{i}"].start >= spans[ar].end


def test_modelled_clock_and_trace_show_the_overlap():
    results = {}
    for hp in (False, True):
        t = Tracer("modelled")
        _, multi = compare(session(hp).plan, tracer=t)
        ks = [sl for sl in t.slices if sl.kind == "kernel"]
        ar = next(sl for sl in ks if sl.name == "allreduce0_5")
        fc1 = next(sl for sl in ks if sl.name == "fc1_7")
        results[hp] = multi.makespan_s, fc1.start < ar.end and fc1.track != ar.track
    assert results[True][1] and not results[False][1]
    assert results[True][0] < results[False][0]


def test_ring_projection():
    r = HCCS_RING
    assert r.collective_s("HcomAllReduce", 1e6, 1) == 0.0
    assert r.collective_s("HcomAllReduce", 8e6, 8) == pytest.approx(14 * (r.step_latency + 1e6 / r.link_bandwidth))
    assert r.collective_s("HcomAllGather", 1e6, 8) == pytest.approx(7 * (r.step_latency + 1e6 / r.link_bandwidth))
    plan = session(True).plan
    two, eight = compare(plan, devices=2)[1], compare(plan, devices=8)[1]
    assert eight.makespan_s > two.makespan_s
