"""RNN, GRU, LSTM (rnn.py) against onnxruntime (onnx.reference has no bidirectional, sequence_lens or layout
1), and a 2-layer LSTM / torch-like exports through both runtimes against onnxruntime and onnx.reference."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from op_check import make_model, run_ge, run_sessions

from ge.errors import ShapeError

rng = np.random.default_rng(0)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def randn(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _ort(model, feeds):
    for out in model.graph.output:
        out.type.tensor_type.elem_type = TensorProto.FLOAT
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _inputs(op, T=5, B=3, I=4, H=6, D=1, layout=0, bias=True, seq=False, h0=False, c0=False, peep=False):
    G = GATES[op]
    x = randn(T, B, I) if layout == 0 else randn(B, T, I)
    state = (D, B, H) if layout == 0 else (B, D, H)
    ins = [x, randn(D, G * H, I), randn(D, G * H, H), randn(D, 2 * G * H) if bias else None,
           rng.integers(1, T + 1, B).astype(np.int32) if seq else None, randn(*state) if h0 else None]
    if op == "LSTM":
        ins += [randn(*state) if c0 else None, randn(D, 3 * H) if peep else None]
    while ins[-1] is None:
        ins.pop()
    return ins


def check_rnn(op, inputs, attrs, n_outputs):
    """Kernel (1 block and tiled for 3 cores), runtime_v1 and runtime_v2 bit for bit; onnxruntime close."""
    model, feeds = make_model(op, inputs, attrs, opset=14 if op != "RNN" else 14, n_outputs=n_outputs)
    got = run_ge(model, feeds)
    for k, g in enumerate(run_ge(model, feeds, cores=3)):
        np.testing.assert_array_equal(g, got[k], err_msg=f"{op} output {k} tiled")
    for runtime, outs in run_sessions(model, feeds).items():
        for k, g in enumerate(outs):
            np.testing.assert_array_equal(g, got[k], err_msg=f"{op} output {k} on runtime_{runtime}")
    want = _ort_layout0(op, inputs, attrs, n_outputs) if attrs.get("layout") else _ort(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=op)


def _ort_layout0(op, inputs, attrs, n_outputs):
    """onnxruntime has no layout 1: the same node in layout 0, its inputs and outputs transposed."""
    ins = [None if a is None else (a.transpose(1, 0, 2) if i in (0, 5, 6) else a) for i, a in enumerate(inputs)]
    model, feeds = make_model(op, ins, {**attrs, "layout": 0}, 14, n_outputs=n_outputs)
    outs = _ort(model, feeds)
    return [o.transpose(2, 0, 1, 3) if k == 0 else o.transpose(1, 0, 2) for k, o in enumerate(outs)]


H = 6


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_lstm(direction, layout):
    D = 2 if direction == "bidirectional" else 1
    ins = _inputs("LSTM", D=D, layout=layout, seq=True, h0=True, c0=True, peep=True)
    check_rnn("LSTM", ins, {"hidden_size": H, "direction": direction, "layout": layout}, 3)


def test_lstm_clip_input_forget_activations():
    ins = _inputs("LSTM", D=2, h0=True, c0=True)
    attrs = {"hidden_size": H, "direction": "bidirectional", "clip": 0.7, "input_forget": 1,
             "activations": ["HardSigmoid", "Tanh", "Softsign", "Sigmoid", "LeakyRelu", "ScaledTanh"],
             "activation_alpha": [0.3, 0.2, 0.8], "activation_beta": [0.4, 1.5]}
    check_rnn("LSTM", ins, attrs, 3)


@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("direction,layout", [("bidirectional", 0), ("reverse", 1), ("forward", 0)])
def test_gru(lbr, direction, layout):
    D = 2 if direction == "bidirectional" else 1
    ins = _inputs("GRU", D=D, layout=layout, seq=True, h0=True)
    check_rnn("GRU", ins, {"hidden_size": H, "direction": direction, "layout": layout,
                           "linear_before_reset": lbr}, 2)


@pytest.mark.parametrize("acts", [["Relu"], ["Affine"], ["Elu"], ["Softplus"], ["ThresholdedRelu"]])
def test_rnn_activations(acts):
    ins = _inputs("RNN", D=1, bias=False, h0=True)
    check_rnn("RNN", ins, {"hidden_size": H, "activations": acts, "activation_alpha": [0.6],
                           "activation_beta": [0.1]}, 2)


def test_omitted_outputs():
    """Only Y_h asked for (Y named ""), and a node declaring Y alone: the others are workspaces."""
    ins = _inputs("LSTM", D=2, h0=True)
    model, feeds = make_model("LSTM", ins, {"hidden_size": H, "direction": "bidirectional"}, 14, n_outputs=3)
    full = run_ge(model, feeds)
    node = model.graph.node[0]
    node.output[0] = ""
    node.output[2] = ""
    del model.graph.output[2]
    del model.graph.output[0]
    (yh,) = run_sessions(model, feeds)["v1"]
    np.testing.assert_array_equal(yh, full[1])
    model, feeds = make_model("GRU", _inputs("GRU"), {"hidden_size": H}, 14, n_outputs=1)
    (y,) = run_ge(model, feeds)
    np.testing.assert_allclose(y, _ort(model, feeds)[0], rtol=1e-4, atol=1e-5)


def test_bad_shapes():
    ins = _inputs("GRU")
    ins[2] = randn(1, 3 * H, H + 1)
    model, feeds = make_model("GRU", ins, {"hidden_size": H}, 14)
    with pytest.raises(ShapeError, match="input 2 has shape"):
        run_ge(model, feeds)
    model, feeds = make_model("RNN", _inputs("RNN"), {"hidden_size": H, "activations": ["Gelu"]}, 14)
    with pytest.raises(ShapeError, match="activation 'Gelu'"):
        run_ge(model, feeds)


def _init(name, a):
    return numpy_helper.from_array(a, name)


def _lstm_layer(k, I, Hd, x, inits, nodes):
    """One torch-style LSTM layer: W/R/B initializers, sequence_lens omitted (""), zero initial states
    as initializers, Y [T, 1, B, H] squeezed to [T, B, H] for the next layer."""
    inits += [_init(f"W{k}", randn(1, 4 * Hd, I)), _init(f"R{k}", randn(1, 4 * Hd, Hd)),
              _init(f"B{k}", randn(1, 8 * Hd)), _init(f"h{k}", np.zeros((1, 2, Hd), np.float32)),
              _init(f"c{k}", np.zeros((1, 2, Hd), np.float32))]
    nodes.append(helper.make_node("LSTM", [x, f"W{k}", f"R{k}", f"B{k}", "", f"h{k}", f"c{k}"],
                                  [f"Y{k}", f"Yh{k}", f"Yc{k}"], hidden_size=Hd))
    nodes.append(helper.make_node("Squeeze", [f"Y{k}", "axes1"], [f"S{k}"]))
    return f"S{k}"


def _check_model(model, feeds, rtol=1e-4, atol=1e-5):
    want = _ort(model, feeds)
    ref = ReferenceEvaluator(model).run(None, feeds)
    for runtime, outs in run_sessions(model, feeds).items():
        for g, w, r in zip(outs, want, ref):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=runtime)
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, err_msg=runtime)


def test_two_layer_lstm_torch_like():
    T, B, I, Hd = 7, 2, 5, 8
    nodes, inits = [], [_init("axes1", np.array([1], np.int64))]
    s = _lstm_layer(0, I, Hd, "x", inits, nodes)
    s = _lstm_layer(1, Hd, Hd, s, inits, nodes)
    graph = helper.make_graph(nodes, "lstm2", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, I])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in (s, "Yh1", "Yc1")],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    _check_model(model, {"x": randn(T, B, I, scale=1.0)})


def test_gru_batch_first_torch_like():
    """torch's GRU (linear_before_reset=1) with batch_first: Transposes around a layout-0 node, initial_h
    fed, Y_h the second output."""
    T, B, I, Hd = 6, 3, 4, 5
    inits = [_init("W", randn(2, 3 * Hd, I)), _init("R", randn(2, 3 * Hd, Hd)), _init("B", randn(2, 6 * Hd))]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node("GRU", ["xt", "W", "R", "B", "", "h0"], ["Y", "Yh"], hidden_size=Hd,
                              direction="bidirectional", linear_before_reset=1),
             helper.make_node("Transpose", ["Y"], ["y"], perm=[2, 0, 1, 3])]
    graph = helper.make_graph(nodes, "gru", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, I]),
                                             helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, B, Hd])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "Yh")],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    feeds = {"x": randn(B, T, I, scale=1.0), "h0": randn(2, B, Hd)}
    want = _ort(model, feeds)
    for runtime, outs in run_sessions(model, feeds).items():
        for g, w in zip(outs, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=runtime)
