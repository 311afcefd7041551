"""pack_rnn_weights: Before/Expected, the bits against the unpacked run, and what stays."""
import numpy as np
from pass_check import check_numerics, model, node, printed, randn, run_pass

from ge.passes import pack_rnn_weights

X = {"x": [5, 2, 3]}


def _lstm(**inits):
    return model([node("LSTM", ["x", "w", "r", "b"], ["y", "yh"], name="lstm", hidden_size=4)], X, ["y", "yh"],
                 {"w": randn(1, 16, 3), "r": randn(1, 16, 4), "b": randn(1, 32), **inits}, opset=14)


def test_lstm_reads_transposed_weights():
    g, changed = run_pass(_lstm(), pack_rnn_weights)
    assert changed
    assert printed(g) == ["%y:f32[5,1,2,4], %yh:f32[1,2,4] = ge::LSTM[hidden_size=4,weights_kn=1]"
                          "(%x, %w_kn, %r_kn, %b)  # lstm"]
    assert g.nodes[0].inputs[1].const.shape == (1, 3, 16)


def test_packed_run_keeps_the_bits():
    m = _lstm()
    x = {"x": randn(5, 2, 3)}
    packed = check_numerics(m, x)
    unpacked = check_numerics(m, x, disabled=("pack_rnn_weights",))
    for p, u in zip(packed, unpacked):
        assert np.array_equal(p, u)


def test_fed_weights_stay():
    m = model([node("GRU", ["x", "w", "r"], ["y"], name="gru", hidden_size=4)],
              {**X, "w": [1, 12, 3], "r": [1, 12, 4]}, ["y"], opset=14)
    _, changed = run_pass(m, pack_rnn_weights)
    assert not changed
