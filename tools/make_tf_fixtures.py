"""Make the TensorFlow fixtures of tests/tf (run by hand, with TensorFlow installed; not part of the suite).

    python tools/make_tf_fixtures.py [--out tests/tf/fixtures] [NAME ...]

Each fixture is NAME.pb, a frozen GraphDef (variables folded into Const by convert_variables_to_constants_v2),
and NAME.npz with the seeded inputs ("in/<tensor>") and TensorFlow's outputs ("out/<tensor>").

Keras models are built with weights=None, random BatchNormalization statistics (so BN does something) and 10
classes without softmax (logits compare better than near-uniform probabilities), at small sizes:
  mobilenet_v2   alpha=0.35, 96x96
  resnet50       ResNet50's topology (blocks 3-4-6-3, bottlenecks, 7x7 stem) at 1/16 of its stage widths,
                 64x64: the real one has 25.6 M weights (~100 MB frozen) whatever the input size
  inception_v3   InceptionV3's topology with every conv at 1/16 of its filters, 75x75 (the real one: 23.9 M)
`--divisor 1` builds the full-width models (for benchmarks; too big to commit).
Op graphs (ops_*) are small tf.functions that together use every op the frontend maps.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # plain reference numerics

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

raw = tf.raw_ops
WIDTH_DIVISOR = 16  # --divisor


def freeze(fn, specs):
    """(GraphDef, input tensor names, output tensor names, frozen concrete function)."""
    concrete = tf.function(fn).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete)
    return (frozen.graph.as_graph_def(), [t.name for t in frozen.inputs], [t.name for t in frozen.outputs],
            frozen)


def save(out_dir, name, fn, specs, seed=0):
    graph_def, ins, outs, frozen = freeze(fn, specs)
    rng = np.random.default_rng(seed)
    feeds = [rng.standard_normal(s.shape).astype(s.dtype.as_numpy_dtype) for s in specs]
    results = frozen(*[tf.constant(a) for a in feeds])
    results = results if isinstance(results, (list, tuple)) else [results]
    with open(os.path.join(out_dir, f"{name}.pb"), "wb") as f:
        f.write(graph_def.SerializeToString())
    arrays = {f"in/{n}": a for n, a in zip(ins, feeds)}
    arrays.update({f"out/{n}": np.asarray(r) for n, r in zip(outs, results)})
    np.savez_compressed(os.path.join(out_dir, f"{name}.npz"), **arrays)
    ops = sorted({n.op for n in graph_def.node})
    size = os.path.getsize(os.path.join(out_dir, f"{name}.pb"))
    print(f"{name}: {size / 1e6:.2f} MB, {len(graph_def.node)} nodes, ops {', '.join(ops)}")


# -- Keras models --------------------------------------------------------------------------------------

def _randomize_bn(model, seed=1):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            weights = []
            for w in layer.weights:
                shape, name = w.shape, w.name
                if "moving_variance" in name:
                    weights.append(rng.uniform(0.5, 1.5, shape))
                elif "gamma" in name:
                    weights.append(rng.uniform(0.5, 1.5, shape))
                else:
                    weights.append(rng.normal(0, 0.1, shape))
            layer.set_weights([w.astype(np.float32) for w in weights])
    return model


def _narrow(module, fn_name, filters_arg):
    """Patch a Keras application helper so it builds 1/WIDTH_DIVISOR of the filters."""
    original = getattr(module, fn_name)

    def narrow(x, filters, *args, **kwargs):
        return original(x, max(1, filters // WIDTH_DIVISOR), *args, **kwargs)
    setattr(module, fn_name, narrow)
    return original


def keras_model(name):
    apps = tf.keras.applications
    tf.keras.utils.set_random_seed(0)
    if name == "mobilenet_v2":
        m = apps.MobileNetV2((96, 96, 3), alpha=0.35, weights=None, classes=10, classifier_activation=None)
    elif name == "resnet50":
        from keras.src.applications import resnet
        original = _narrow(resnet, "stack_residual_blocks_v1", 1)
        try:
            m = apps.ResNet50(input_shape=(64, 64, 3), weights=None, classes=10, classifier_activation=None)
        finally:
            resnet.stack_residual_blocks_v1 = original
    elif name == "inception_v3":
        from keras.src.applications import inception_v3
        original = _narrow(inception_v3, "conv2d_bn", 1)
        try:
            m = apps.InceptionV3(input_shape=(75, 75, 3), weights=None, classes=10, classifier_activation=None)
        finally:
            inception_v3.conv2d_bn = original
    else:
        raise KeyError(name)
    return _randomize_bn(m)


def save_keras(out_dir, name):
    model = keras_model(name)
    shape = (1,) + tuple(model.input_shape[1:])
    save(out_dir, name, lambda x: model(x, training=False), [tf.TensorSpec(shape, tf.float32, name="input")])


# -- op graphs -----------------------------------------------------------------------------------------

def _const(seed, *shape, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return tf.constant(np.abs(a) + 0.5 if positive else a)


def ops_conv(x):
    """NHWC convolution family: x [1, 9, 11, 4]."""
    w = _const(1, 3, 3, 4, 8)
    y = raw.Conv2D(input=x, filter=w, strides=[1, 2, 2, 1], padding="SAME")
    y = raw.Relu6(features=raw.BiasAdd(value=y, bias=_const(2, 8)))
    d = raw.DepthwiseConv2dNative(input=x, filter=_const(3, 3, 3, 4, 2), strides=[1, 1, 1, 1], padding="VALID")
    d = raw.FusedBatchNormV3(x=d, scale=_const(4, 8, positive=True), offset=_const(5, 8),
                             mean=_const(6, 8), variance=_const(7, 8, positive=True), epsilon=1e-3,
                             is_training=False)[0]
    d = raw.Elu(features=d)
    e = raw.Conv2D(input=x, filter=_const(8, 3, 3, 4, 6), strides=[1, 1, 1, 1], padding="SAME",
                   dilations=[1, 2, 2, 1])
    e = raw.FusedBatchNorm(x=e, scale=_const(9, 6, positive=True), offset=_const(10, 6), mean=_const(11, 6),
                           variance=_const(12, 6, positive=True), epsilon=1e-3, is_training=False)[0]
    m = raw.MaxPool(input=x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    a = raw.AvgPool(value=x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    a2 = raw.AvgPool(value=e, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID")
    p = raw.Pad(input=raw.Sigmoid(x=x), paddings=tf.constant([[0, 0], [1, 2], [0, 1], [0, 0]]))
    c = raw.ConcatV2(values=[m, a, y], axis=3)
    c = raw.Tanh(x=raw.Relu(features=c))
    return c, d, a2, p


def ops_dense(a, b):
    """MatMul family, elementwise and reductions: a [4, 6], b [2, 3, 6]."""
    w = _const(20, 5, 6)
    y = raw.MatMul(a=a, b=w, transpose_b=True)                                # [4, 5]
    y2 = raw.MatMul(a=_const(21, 4, 6), b=y, transpose_a=True)                # [6, 5]
    bm = raw.BatchMatMulV2(x=b, y=_const(22, 2, 4, 6), adj_y=True)            # [2, 3, 4]
    bm2 = raw.BatchMatMulV2(x=b, y=_const(23, 3, 5), adj_x=True)              # [2, 6, 5]
    s = raw.Softmax(logits=bm)
    e = raw.AddV2(x=a, y=_const(24, 6))
    e = raw.Sub(x=e, y=raw.Mul(x=a, y=_const(25, 4, 1)))
    e = raw.RealDiv(x=e, y=_const(26, 6, positive=True))
    e = raw.Maximum(x=e, y=raw.Minimum(x=a, y=0.5))
    e = raw.Add(x=e, y=raw.Rsqrt(x=raw.Square(x=a) + 1.0))
    e = raw.SquaredDifference(x=e, y=a)
    r1 = raw.Mean(input=bm2, axis=tf.constant([1]), keep_dims=True)
    r2 = raw.Sum(input=bm2, axis=tf.constant([0, 2]), keep_dims=False)
    r3 = raw.Max(input=b, axis=tf.constant(-1), keep_dims=False)
    return y2, s, e, r1, r2, r3


def ops_shape(x, i):
    """Shape and index ops: x [2, 3, 4, 5] float, i [3] (fed as float, cast to int)."""
    r = raw.Reshape(tensor=x, shape=tf.constant([2, -1, 5]))                   # [2, 12, 5]
    sq = raw.Squeeze(input=raw.ExpandDims(input=r, axis=1), axis=[1])            # [2, 12, 5]
    sq = raw.ExpandDims(input=sq, axis=-1)                                       # [2, 12, 5, 1]
    t = raw.Transpose(x=x, perm=tf.constant([0, 2, 3, 1]))
    sh = raw.Shape(input=t)
    s1 = x[:, 1:3, ::2, -1]                                 # shrink last
    s2 = x[..., tf.newaxis, 1::-1]                          # ellipsis, new axis, negative stride
    s3 = x[1, :, tf.newaxis, 2:, :3]                        # shrink first, new axis
    s4 = raw.StridedSlice(input=x, begin=tf.constant([0, 0, 0]), end=tf.constant([2, 3, 3]),
                          strides=tf.constant([1, 2, 1]), begin_mask=2, end_mask=1)
    p = raw.Pack(values=[x[0], x[1]], axis=-2)                                   # [3, 4, 2, 5]
    idx = raw.Minimum(x=raw.Cast(x=raw.Abs(x=i) * 2.0, DstT=tf.int32), y=3)          # in [0, 4)
    g = raw.GatherV2(params=x, indices=idx, axis=tf.constant(2))                 # [2, 3, 3, 5]
    f = raw.Fill(dims=tf.constant([2, 3]), value=raw.Sum(input=i, axis=tf.constant([0])))
    rg = raw.Range(start=tf.constant(1.0), limit=tf.constant(7.0), delta=tf.constant(1.5)) * i[0]
    tl = raw.Tile(input=t[:, :, :, :2], multiples=tf.constant([1, 2, 1, 3]))
    return sq, sh, s1, s2, s3, s4, p, g, f, rg, tl


def ops_resize(x):
    """ResizeBilinear / ResizeNearestNeighbor in every coordinate mode: x [1, 5, 7, 3]."""
    outs = []
    for op in (raw.ResizeBilinear, raw.ResizeNearestNeighbor):
        for size in ([9, 13], [3, 4]):
            for ac, hp in ((False, False), (True, False), (False, True)):
                outs.append(op(images=x, size=tf.constant(size), align_corners=ac, half_pixel_centers=hp))
    return tuple(outs)


def ops_extra(x, y):
    """Unary, comparison, split and the less common ops: x, y [2, 4, 6]."""
    pos = raw.Abs(x=x) + 0.1
    unary = [raw.Exp(x=x), raw.Neg(x=x), raw.Floor(x=x), raw.Ceil(x=x), raw.Softplus(features=x),
             raw.Softsign(features=x), raw.Erf(x=x), raw.Sign(x=x), raw.Round(x=x * 3.0), raw.Log(x=pos),
             raw.Sqrt(x=pos), raw.Reciprocal(x=pos), raw.Selu(features=x), raw.LeakyRelu(features=x, alpha=0.1),
             raw.Pow(x=pos, y=y), raw.LogSoftmax(logits=x), raw.AddN(inputs=[x, y, x])]
    gt, lt = raw.Greater(x=x, y=y), raw.Less(x=x, y=0.0)
    logic = [raw.LogicalAnd(x=gt, y=raw.LogicalNot(x=lt)), raw.LogicalOr(x=raw.Equal(x=raw.Round(x=x), y=0.0),
                                                                       y=raw.GreaterEqual(x=y, y=x)),
             raw.LessEqual(x=x, y=y)]
    red = [raw.Min(input=x, axis=tf.constant([2]), keep_dims=True), raw.Prod(input=y, axis=tf.constant(1)),
           raw.ArgMax(input=x, dimension=tf.constant(1), output_type=tf.int32),
           raw.ArgMin(input=x, dimension=tf.constant(-1))]
    moved = [raw.MirrorPad(input=x, paddings=tf.constant([[0, 0], [1, 1], [2, 0]]), mode="REFLECT"),
             raw.PadV2(input=x, paddings=tf.constant([[1, 0], [0, 0], [0, 2]]), constant_values=1.5),
             raw.Concat(concat_dim=tf.constant(1), values=[x, y]), raw.Size(input=x),
             raw.Slice(input=x, begin=tf.constant([0, 1, 1]), size=tf.constant([-1, 2, 3])),
             raw.SelectV2(condition=gt, t=x, e=y), raw.Select(condition=tf.constant([True, False]), x=x, y=y),
             raw.ClipByValue(t=x, clip_value_min=-0.5, clip_value_max=0.5),
             raw.FloorMod(x=x, y=raw.Abs(x=y) + 0.5), raw.FloorDiv(x=x, y=raw.Abs(x=y) + 0.5)]
    split = (list(raw.Split(axis=tf.constant(2), value=x, num_split=3))
             + list(raw.SplitV(value=y, size_splits=tf.constant([1, -1]), axis=tf.constant(1), num_split=2))
             + list(raw.Unpack(value=x, num=2, axis=0)) + list(raw.IdentityN(input=[x, y])))
    dy = raw.Relu(features=raw.Conv2D(input=x[:1, :, :, tf.newaxis] * y[:1, :, :, tf.newaxis],
                                      filter=_const(30, 3, 3, 1, 2), strides=[1, 2, 2, 1], padding="SAME"))
    deconv = [raw.Conv2DBackpropInput(input_sizes=tf.constant([1, 4, 6, 3]), filter=_const(31, 3, 3, 3, 2),
                                      out_backprop=dy, strides=[1, 2, 2, 1], padding="SAME"),
              raw.Conv2DBackpropInput(input_sizes=tf.constant([1, 6, 8, 3]), filter=_const(32, 3, 3, 3, 2),
                                      out_backprop=dy, strides=[1, 2, 2, 1], padding="VALID")]
    return tuple(unary + logic + red + moved + split + deconv)


OP_GRAPHS = {
    "ops_conv": (ops_conv, [tf.TensorSpec([1, 9, 11, 4], tf.float32, name="x")]),
    "ops_dense": (ops_dense, [tf.TensorSpec([4, 6], tf.float32, name="a"),
                              tf.TensorSpec([2, 3, 6], tf.float32, name="b")]),
    "ops_shape": (ops_shape, [tf.TensorSpec([2, 3, 4, 5], tf.float32, name="x"),
                              tf.TensorSpec([3], tf.float32, name="i")]),
    "ops_resize": (ops_resize, [tf.TensorSpec([1, 5, 7, 3], tf.float32, name="x")]),
    "ops_extra": (ops_extra, [tf.TensorSpec([2, 4, 6], tf.float32, name="x"),
                              tf.TensorSpec([2, 4, 6], tf.float32, name="y")]),
}
KERAS = ("mobilenet_v2", "resnet50", "inception_v3")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"fixtures to make (default all): {', '.join(KERAS + tuple(OP_GRAPHS))}")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "tf", "fixtures"))
    ap.add_argument("--divisor", type=int, default=WIDTH_DIVISOR, help="width divisor of resnet50/inception_v3")
    args = ap.parse_args(argv)
    globals()["WIDTH_DIVISOR"] = args.divisor
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or list(OP_GRAPHS) + list(KERAS):
        if name in OP_GRAPHS:
            fn, specs = OP_GRAPHS[name]
            save(args.out, name, fn, specs)
        elif name in KERAS:
            save_keras(args.out, name)
        else:
            sys.exit(f"unknown fixture {name!r}")


if __name__ == "__main__":
    main()
