"""TensorFlow frontend: frozen GraphDefs made by real TensorFlow (tools/make_tf_fixtures.py) against TF's own
outputs, on every available runtime; text/bytes/GraphDef forms; inputs=/outputs=; bad files; unknown ops.

Neither TensorFlow nor tensorboard is needed: graphs are built with ge's own GraphDef classes
(ge.frontends.tensorflow_proto); one test reads the fixtures with tensorboard's classes too, when installed.
"""
from pathlib import Path

import numpy as np
import pytest

from google.protobuf import text_format  # noqa: E402

import ge  # noqa: E402
from ge.compiler import import_model, optimize  # noqa: E402
from ge.errors import GEError, ModelLoadError, UnsupportedOpError  # noqa: E402
from ge.frontends import tensorflow_proto as tfp  # noqa: E402
from ge.frontends.tensorflow import import_tensorflow  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
DT = {v.name: v.number for v in tfp.DataType.values}
NAMES = ["ops_conv", "ops_dense", "ops_shape", "ops_resize", "ops_extra", "mobilenet_v2", "resnet50", "inception_v3"]
RTOL, ATOL = 1e-3, 1e-4


def load_case(name):
    """({feed name: array}, {output name: TF's array}) of a fixture, tensor names without ':0'."""
    z = np.load(FIXTURES / f"{name}.npz")
    feeds = {k[3:].removesuffix(":0"): z[k] for k in z.files if k.startswith("in/")}
    want = {k[4:].removesuffix(":0"): z[k] for k in z.files if k.startswith("out/")}
    return feeds, want


def check(sess, feeds, want):
    names = [o.name for o in sess.get_outputs()]
    assert sorted(names) == sorted(want)
    for n, got in zip(names, sess.run(None, feeds)):
        assert got.dtype == want[n].dtype, n
        np.testing.assert_allclose(got, want[n], rtol=RTOL, atol=ATOL, err_msg=n)


@pytest.mark.parametrize("runtime", ge.available_runtimes())
@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_tensorflow(name, runtime):
    feeds, want = load_case(name)
    check(ge.Session(FIXTURES / f"{name}.pb", runtime=runtime), feeds, want)


def test_keras_models_keep_nhwc_only_at_the_boundary():
    """Layout tracking leaves one Transpose (NHWC input -> NCHW) in each Keras model; all BNs fold, and
    ZeroPadding2D's Pads fold into the convs and pools after them (fold_pad)."""
    for name in ("mobilenet_v2", "resnet50", "inception_v3"):
        g = optimize(import_model(FIXTURES / f"{name}.pb"), ge.Options(verify_passes=True))
        ops = [n.op_type for n in g.nodes]
        assert ops.count("Transpose") == 1, name
        assert not {"Mul", "BatchNormalization", "Relu", "Clip", "Pad"} & set(ops), name


@pytest.mark.parametrize("name", ["ops_conv", "mobilenet_v2", "ops_resize"])
def test_unknown_batch_dimension(name):
    """Placeholders with batch -1 import with a symbolic batch; a batch of two runs on runtime v2."""
    gd = tfp.GraphDef.FromString((FIXTURES / f"{name}.pb").read_bytes())
    for n in gd.node:
        if n.op == "Placeholder":
            n.attr["shape"].shape.dim[0].size = -1
    feeds, want = load_case(name)
    sess = ge.Session(gd, runtime="v2")
    assert [i.shape for i in sess.get_inputs()] == [["x_d0" if name != "mobilenet_v2" else "input_d0"]
                                                    + list(a.shape[1:]) for a in feeds.values()]
    names = [o.name for o in sess.get_outputs()]
    for n, got in zip(names, sess.run(None, {k: np.concatenate([a, a]) for k, a in feeds.items()})):
        for row in got:
            np.testing.assert_allclose(row, want[n][0], rtol=RTOL, atol=ATOL, err_msg=n)


def test_naive_layout_gives_the_same_results():
    feeds, want = load_case("ops_conv")
    g = import_tensorflow(FIXTURES / "ops_conv.pb", track_layout=False)
    check(ge.Session(g, runtime="v2"), feeds, want)


def test_text_bytes_and_graphdef_forms(tmp_path):
    gd = tfp.GraphDef.FromString((FIXTURES / "ops_dense.pb").read_bytes())
    feeds, want = load_case("ops_dense")
    (tmp_path / "m.pbtxt").write_text(text_format.MessageToString(gd))
    check(ge.Session(tmp_path / "m.pbtxt", runtime="v2"), feeds, want)
    check(ge.Session(import_tensorflow(gd.SerializeToString()), runtime="v2"), feeds, want)
    check(ge.Session(gd, runtime="v2"), feeds, want)


def test_inputs_and_outputs_by_tensor_name():
    feeds, want = load_case("ops_dense")
    sess = ge.Session(FIXTURES / "ops_dense.pb", runtime="v2", inputs=["a:0", "b"], outputs=["Identity_2:0"])
    assert [i.name for i in sess.get_inputs()] == ["a", "b"]
    got, = sess.run(["Identity_2"], feeds)
    np.testing.assert_allclose(got, want["Identity_2"], rtol=RTOL, atol=ATOL)
    # TensorFlow's tensor names with their ":0" port are accepted in run() too
    again, = sess.run(["Identity_2:0"], {f"{k}:0": v for k, v in feeds.items()})
    np.testing.assert_array_equal(again, got)
    # only what the output needs is converted, so an input it does not need is refused as unknown
    one = ge.Session(FIXTURES / "ops_dense.pb", runtime="v2", inputs=["a"], outputs=["Identity_2"])
    assert [i.name for i in one.get_inputs()] == ["a"]


def test_cut_at_an_inner_tensor():
    """An inner tensor given as input becomes a feed; the graph above it is not converted."""
    relu = _node("r", "Relu", ["x"])
    relu.attr["T"].type = DT["DT_FLOAT"]
    relu.attr["_output_shapes"].list.shape.add().dim.add(size=2)
    relu.attr["_output_shapes"].list.shape[0].dim.add(size=3)
    gd = _graph([_placeholder("x", [2, 3]), relu, _node("y", "Neg", ["r"])])
    sess = ge.Session(gd, runtime="v2", inputs=["r:0"], outputs=["y"])
    x = np.array([[-1, 2, 3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(sess.run(None, {"r": x})[0], -x)


def test_inputs_outputs_refused_for_onnx():
    with pytest.raises(GEError, match="TensorFlow models only"):
        import_model(b"not used", inputs=["x"])


# -- hand-built graphs ---------------------------------------------------------------------------------

def _node(name, op, inputs=(), **attrs):
    n = tfp.NodeDef(name=name, op=op, input=list(inputs))
    for k, v in attrs.items():
        if isinstance(v, bool):
            n.attr[k].b = v
        elif isinstance(v, int):
            n.attr[k].i = v
        elif isinstance(v, float):
            n.attr[k].f = v
        elif isinstance(v, str):
            n.attr[k].s = v.encode()
        else:
            n.attr[k].CopyFrom(v)
    return n


def _placeholder(name, shape, dtype=DT["DT_FLOAT"]):
    n = _node(name, "Placeholder")
    n.attr["dtype"].type = dtype
    for d in shape:
        n.attr["shape"].shape.dim.add(size=d)
    return n


def _const(name, tensor):
    n = _node(name, "Const")
    n.attr["dtype"].type = tensor.dtype
    n.attr["value"].tensor.CopyFrom(tensor)
    return n


def _tensor(dtype, shape, **fields):
    t = tfp.TensorProto(dtype=dtype, **fields)
    for d in shape:
        t.tensor_shape.dim.add(size=d)
    return t


def _graph(nodes):
    gd = tfp.GraphDef()
    gd.node.extend(nodes)
    return gd


def test_const_decoding_broadcast_and_content():
    gd = _graph([
        _const("one", _tensor(DT["DT_FLOAT"], [2, 3], float_val=[1.5])),
        _const("partial", _tensor(DT["DT_INT32"], [4], int_val=[7, 8])),
        _const("content", _tensor(DT["DT_INT64"], [2, 2],
                                  tensor_content=np.arange(4, dtype="<i8").tobytes())),
        _const("flags", _tensor(DT["DT_BOOL"], [3], bool_val=[True, False, True])),
        _const("empty", _tensor(DT["DT_DOUBLE"], [2])),
        _node("o1", "Identity", ["one"]), _node("o2", "Identity", ["partial"]),
        _node("o3", "Identity", ["content"]), _node("o4", "Identity", ["flags"]), _node("o5", "Identity", ["empty"])])
    a, b, c, d, e = ge.Session(gd, runtime="v2").run(None, {})
    np.testing.assert_array_equal(a, np.full((2, 3), 1.5, np.float32))
    np.testing.assert_array_equal(b, np.array([7, 8, 8, 8], np.int32))
    np.testing.assert_array_equal(c, np.arange(4).reshape(2, 2))
    np.testing.assert_array_equal(d, [True, False, True])
    np.testing.assert_array_equal(e, np.zeros(2))
    assert (a.dtype, b.dtype, c.dtype, e.dtype) == (np.float32, np.int32, np.int64, np.float64)


def test_default_outputs_are_sinks_without_noop_and_const():
    gd = _graph([_placeholder("x", [2]), _node("y", "Relu", ["x"]),
                 _const("unused", _tensor(DT["DT_FLOAT"], [1], float_val=[1.0])),
                 _node("init", "NoOp", ["^y"])])
    sess = ge.Session(gd, runtime="v2")
    assert [o.name for o in sess.get_outputs()] == ["y"]
    np.testing.assert_array_equal(sess.run(None, {"x": np.array([-1, 2], np.float32)})[0], [0, 2])


def test_nhwc_conv_block_layout_before_and_after_passes():
    """Conv2D -> BiasAdd -> Relu: NCHW between one Transpose in and one out; BiasAdd and Relu follow the
    NCHW layout, so the passes fuse the block into one Conv."""
    w = np.random.default_rng(0).standard_normal((1, 1, 2, 3)).astype(np.float32)
    conv = _node("conv", "Conv2D", ["x", "w"], padding="SAME")
    conv.attr["strides"].list.i.extend([1, 1, 1, 1])
    gd = _graph([_placeholder("x", [1, 4, 4, 2]), conv,
                 _const("w", _tensor(DT["DT_FLOAT"], [1, 1, 2, 3], tensor_content=w.tobytes())),
                 _const("b", _tensor(DT["DT_FLOAT"], [3], float_val=[0.5, -0.5, 0.0])),
                 _node("bias", "BiasAdd", ["conv", "b"]), _node("y", "Relu", ["bias"])])
    g = import_tensorflow(gd)
    assert [n.op_type for n in g.nodes] == ["Transpose", "Conv", "Transpose", "Add", "Transpose", "Relu",
                                            "Transpose", "Identity"]
    assert [n.inputs[0].producer.op_type for n in g.nodes if n.op_type in ("Add", "Relu")] == ["Conv", "Add"]
    optimize(g, ge.Options(verify_passes=True))
    assert [f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in g.nodes] == [
        "Transpose", "ge::FusedConv", "Transpose"]
    assert [v.name for v in g.outputs] == ["y"]


def test_unknown_op_names_node_and_op_and_lists_mapped_ops():
    gd = _graph([_placeholder("x", [2]), _node("weird/node", "FooBarOp", ["x"])])
    with pytest.raises(UnsupportedOpError) as e:
        import_tensorflow(gd)
    msg = str(e.value)
    assert "FooBarOp" in msg and "weird/node" in msg and "Conv2D" in msg and "StridedSlice" in msg
    assert e.value.node == "weird/node" and e.value.op_type == "FooBarOp"


def test_unknown_op_outside_the_outputs_cone_is_ignored():
    gd = _graph([_placeholder("x", [2]), _node("y", "Relu", ["x"]), _node("z", "FooBarOp", ["x"])])
    assert [v.name for v in import_tensorflow(gd, outputs=["y"]).outputs] == ["y"]


def test_training_batchnorm_is_refused():
    c = _const("c", _tensor(DT["DT_FLOAT"], [2], float_val=[1.0]))
    bn = _node("bn", "FusedBatchNormV3", ["x", "c", "c", "c", "c"], is_training=True)
    with pytest.raises(ModelLoadError, match="training mode"):
        import_tensorflow(_graph([_placeholder("x", [1, 2, 2, 2]), c, bn]))


@pytest.mark.parametrize("content,suffix", [
    (b"\x08\x07garbage that is not a protobuf \xff\xff\xff", ".pb"),
    (b"", ".pb"),
    (b"node { name: 'x' op: ", ".pbtxt"),
    (b"\xff\xfe not text", ".pbtxt"),
])
def test_bad_files_are_model_load_errors_naming_the_file(tmp_path, content, suffix):
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(content)
    with pytest.raises(ModelLoadError, match="bad"):
        ge.Session(path)


def test_oversized_file_is_refused_before_reading(monkeypatch):
    from ge.frontends import tensorflow_graphdef
    monkeypatch.setattr(tensorflow_graphdef, "MAX_PROTO_BYTES", 1000)  # a real 2 GiB file is too slow to write
    with pytest.raises(ModelLoadError, match="ops_conv.pb' is .* at most 2 GiB"):
        ge.Session(FIXTURES / "ops_conv.pb")


def test_missing_file_and_bad_dtype(tmp_path):
    with pytest.raises(ModelLoadError, match="missing.pb"):
        ge.Session(tmp_path / "missing.pb")
    gd = _graph([_placeholder("x", [2], DT["DT_STRING"]), _node("y", "Identity", ["x"])])
    with pytest.raises(ModelLoadError, match="DT_STRING"):
        import_tensorflow(gd)


def test_savedmodel_folder_with_tensorflow(tmp_path):
    """A SavedModel folder: its serving signature is frozen with TensorFlow (only where it is installed)."""
    tf = pytest.importorskip("tensorflow")

    class Model(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.random.default_rng(0).standard_normal((3, 3, 2, 4)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 2], tf.float32, name="image")])
        def __call__(self, x):
            return {"out": tf.nn.relu(tf.nn.conv2d(x, self.w, 1, "SAME"))}

    m = Model()
    tf.saved_model.save(m, str(tmp_path / "sm"), signatures=m.__call__)
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 2)).astype(np.float32)
    sess = ge.Session(tmp_path / "sm", runtime="v2")
    got, = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, m(x)["out"].numpy(), rtol=RTOL, atol=ATOL)


def test_savedmodel_folder_needs_tensorflow(tmp_path):
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        with pytest.raises(ModelLoadError, match="needs TensorFlow"):
            ge.Session(tmp_path)
    else:
        pytest.skip("TensorFlow is installed: test_savedmodel_folder_with_tensorflow runs instead")


def test_ge_run_cli_on_a_frozen_graph(capsys):
    from ge.cli import main
    assert main(["run", str(FIXTURES / "mobilenet_v2.pb"), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "mobilenet_v2.pb" in out and "Identity float32[1, 10]" in out


# NodeDef fields TensorFlow writes that ge's classes leave undeclared (kept as unknown fields, re-serialized as
# read): 6 experimental_debug_info, 7 experimental_type (a FullTypeDef TF 2 puts on Shape nodes)
IGNORED_NODE_FIELDS = {6, 7}


@pytest.mark.parametrize("name", NAMES)
def test_own_graphdef_classes_read_every_fixture_as_tensorflow_wrote_it(name):
    """ge's declared messages parse each fixture with nothing dropped (it re-serializes to as many bytes as
    TensorFlow wrote) and nothing unread but the NodeDef fields ge knowingly ignores; the graph is all there."""
    from google.protobuf import unknown_fields
    data = (FIXTURES / f"{name}.pb").read_bytes()
    gd = tfp.GraphDef.FromString(data)
    assert len(gd.SerializeToString()) == len(data)   # the same fields (TF orders its attr maps its own way)
    assert not list(unknown_fields.UnknownFieldSet(gd))
    for n in gd.node:
        assert {f.field_number for f in unknown_fields.UnknownFieldSet(n)} <= IGNORED_NODE_FIELDS, n.name
        for a in n.attr.values():
            assert not list(unknown_fields.UnknownFieldSet(a)), (n.name, a)
    assert gd.node and all(n.name and n.op for n in gd.node)
    assert sum(len(n.attr) for n in gd.node) >= len(gd.node)   # every TF node carries attrs (dtype at least)


def test_a_graphdef_of_another_package_is_read_as_it_is():
    """A GraphDef of another package's classes (tensorboard's, TensorFlow's) compiles as ge's own does."""
    data = (FIXTURES / "ops_extra.pb").read_bytes()
    gd = tfp.GraphDef.FromString(data)
    foreign = pytest.importorskip("tensorboard.compat.proto.graph_pb2").GraphDef.FromString(data)
    assert [n.SerializeToString(deterministic=True) for n in foreign.node] == \
        [n.SerializeToString(deterministic=True) for n in gd.node]
    a = ge.compile(foreign, inputs=None)
    b = ge.compile(gd)
    assert [n.op_type for n in a.nodes] == [n.op_type for n in b.nodes]


def test_cli_names_inputs_and_outputs_of_a_frozen_graph(capsys):
    from ge.cli import main
    assert main(["run", str(FIXTURES / "ops_dense.pb"), "--runtime", "v2", "--repeat", "1",
                 "--inputs-names", "a", "--outputs-names", "Identity_2:0"]) == 0
    out = capsys.readouterr().out
    assert "output    Identity_2 " in out and out.count("output ") == 1
