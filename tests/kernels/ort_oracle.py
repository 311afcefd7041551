"""check_ort: onnxruntime as the oracle, for the few cases where onnx's reference evaluator is wrong or
missing (GlobalLpPool, GlobalMaxPool beyond 2-D, Softmax before opset 13, BatchNormalization opset 9)."""
import numpy as np
import onnxruntime as ort
from op_check import make_model, run_ge

from ge.ir.dtypes import to_onnx


def check_ort(op, inputs, attrs=None, opset=17, n_outputs=1, rtol=1e-4, atol=1e-5):
    model, feeds = make_model(op, inputs, attrs, opset, n_outputs=n_outputs)
    got = run_ge(model, feeds)
    for out, g in zip(model.graph.output, got):
        out.type.tensor_type.elem_type = to_onnx(g.dtype)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{op}: {g.shape} {g.dtype} != {w.shape} {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=op)
    return got
