"""Differential fuzzing: random valid ONNX DAGs run on runtime v1 and v2 in every sort mode, with memory
reuse on and off, on one stream and on several; each plan passes verify_memory and every output matches
onnx's ReferenceEvaluator and onnxruntime. GE_FUZZ_EXAMPLES=500 runs the long mode."""
import numpy as np
import onnx
import onnxruntime as ort
from hypothesis import given
from hypothesis import strategies as st
from onnx.reference import ReferenceEvaluator

import ge
from ge.memory.verify import verify_memory
from ge.options import TOPO_MODES
from rel_models import dags, fuzz_settings

CONFIGS = st.fixed_dictionaries({
    "runtime": st.sampled_from(["v1", "v2"]),
    "topo_sorting_mode": st.sampled_from(TOPO_MODES),
    "disable_reuse_memory": st.booleans(),
    "max_streams": st.sampled_from([1, 8]),
    "inplace_memory": st.booleans(),
    "symbolic_batch": st.booleans(),   # inputs declared [N, ...]: dynamic nodes, runtime v2 only
})


def _oracles(model, feeds):
    ref = ReferenceEvaluator(model).run(None, feeds)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return ref, sess.run(None, feeds)


def _symbolic(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i in m.graph.input:
        i.type.tensor_type.shape.dim[0].dim_param = "N"
    return m


def _check(model, feeds, cfg, ref, ort_out):
    rt = cfg["runtime"]
    if cfg.get("symbolic_batch"):
        model, rt = _symbolic(model), "v2"
    opts = ge.Options(**{k: v for k, v in cfg.items() if k not in ("runtime", "symbolic_batch")})
    plan = ge.compile(model, opts)
    if plan.memory is not None:
        verify_memory(plan, plan.memory)
    with ge.Session(plan, runtime=rt) as sess:
        for _ in range(2):  # a second run on the same instance: nothing stale survives a run
            got = sess.run(None, {k: v.copy() for k, v in feeds.items()})
            for g, r, o, vi in zip(got, ref, ort_out, model.graph.output):
                assert g.shape == r.shape, (vi.name, cfg)
                np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4, err_msg=f"{vi.name} {cfg}")
                np.testing.assert_allclose(g, o, rtol=1e-4, atol=1e-4, err_msg=f"{vi.name} {cfg} (ort)")


@fuzz_settings(300)
@given(case=dags(), cfg=CONFIGS)
def test_random_dag_matches_reference(case, cfg):
    model, feeds = case
    ref, ort_out = _oracles(model, feeds)
    _check(model, feeds, cfg, ref, ort_out)


@fuzz_settings(20)
@given(case=dags())
def test_random_dag_full_matrix(case):
    """DAGs through every combination: 2 runtimes x 4 sort modes x reuse on/off x 1 or 8 streams."""
    model, feeds = case
    ref, ort_out = _oracles(model, feeds)
    for rt in ("v1", "v2"):
        for mode in TOPO_MODES:
            for no_reuse in (False, True):
                for streams in (1, 8):
                    _check(model, feeds, {"runtime": rt, "topo_sorting_mode": mode,
                                          "disable_reuse_memory": no_reuse, "max_streams": streams}, ref, ort_out)


@fuzz_settings(30)
@given(case=dags(max_c=8, max_hw=40), runtime=st.sampled_from(["v1", "v2"]))
def test_bigger_random_dags_on_several_streams_repeatedly(case, runtime):
    """Tensors big enough for stream threads to overlap; five runs each, with reuse (the racy case)."""
    model, feeds = case
    ref, ort_out = _oracles(model, feeds)
    plan = ge.compile(model, ge.Options(thread_budget=2))
    verify_memory(plan, plan.memory)
    with ge.Session(plan, runtime=runtime) as sess:
        for _ in range(5):
            for g, r in zip(sess.run(None, feeds), ref):
                np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-4)
