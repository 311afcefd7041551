"""LinearAttention's kernel against onnx.reference (which runs the op's ONNX function, a Scan): each update
rule, GQA, per-head and per-key-dim decay, a past state; tiled, v1 and v2 by check_op."""
import numpy as np
import pytest

import ge
from op_check import check_op, ge_only

RNG = np.random.default_rng(0)
B, T, HQ, HKV, DK, DV = 2, 3, 4, 2, 4, 3


def _inputs(decay_width, past, rule="gated_delta"):
    q, k = RNG.standard_normal((B, T, HQ * DK), np.float32), RNG.standard_normal((B, T, HKV * DK), np.float32)
    v = RNG.standard_normal((B, T, HKV * DV), np.float32)
    state = RNG.standard_normal((B, HKV, DK, DV), np.float32) if past else None
    decay = -RNG.random((B, T, HKV * decay_width), np.float32)
    beta = RNG.random((B, T, HKV), np.float32)
    return [q, k, v, state, decay if "gated" in rule else None, beta if "delta" in rule else None]


@pytest.mark.parametrize("rule,decay_width,past", [("linear", 1, False), ("gated", DK, True), ("delta", 1, True),
                                                   ("gated_delta", 1, False), ("gated_delta", DK, True)])
def test_linear_attention_rules(rule, decay_width, past):
    check_op("LinearAttention", _inputs(decay_width, past, rule), dict(q_num_heads=HQ, kv_num_heads=HKV, update_rule=rule),
             opset=27, n_outputs=2, rtol=1e-5, atol=1e-5)


def test_linear_attention_needs_the_rules_inputs():
    ins = _inputs(1, False)
    ins[5] = None
    with pytest.raises(ge.GEError, match="takes decay and beta"):
        ge_only("LinearAttention", ins, dict(q_num_heads=HQ, kv_num_heads=HKV), opset=27)
