"""ge.models' block builders (issue #17): each is a valid ONNX model at its network's real shapes, and ge
runs it as onnxruntime does, on both runtimes."""
import numpy as np
import pytest

import ge
from ge.models import BLOCKS

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_block_matches_onnxruntime(name):
    model = BLOCKS[name]()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for runtime in ("v1", "v2"):
        got = ge.Session(model, runtime=runtime).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
