"""Model builders and the random-DAG strategy shared by the reliability suite (tests/reliability)."""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
UNARY = ("Relu", "Sigmoid", "Softmax")
BINARY = ("Add", "Mul", "Sub")
OPS = UNARY + BINARY + ("Concat", "Conv", "MaxPool", "Reshape", "Transpose", "MatMul", "ReduceMean")

# the default run stays within a few minutes on 2 cores; GE_FUZZ_EXAMPLES=500 is the long mode
FUZZ_EXAMPLES = int(os.environ.get("GE_FUZZ_EXAMPLES", "0")) or None


def fuzz_settings(default: int):
    """Bounded, derandomized hypothesis settings (the same examples every run)."""
    return settings(max_examples=FUZZ_EXAMPLES or default, deadline=None, derandomize=True,
                    database=None, suppress_health_check=list(HealthCheck))


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def make_model(nodes, inputs, outputs, inits=(), opset=OPSET, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def relu_chain(shape, n=3, name="chain"):
    """x -> Relu -> Sigmoid -> Relu ... (n nodes named r0..r{n-1}); every tensor has `shape`."""
    ops = ["Relu", "Sigmoid"]
    names = ["x"] + [f"t{i}" for i in range(n - 1)] + ["y"]
    nodes = [helper.make_node(ops[i % 2], [names[i]], [names[i + 1]], name=f"r{i}") for i in range(n)]
    return make_model(nodes, [vi("x", shape)], [vi("y", None)], name=name)


def gather_model(n_rows=4):
    """y = Relu(Gather(table, idx)) with a constant table of n_rows rows: an index >= n_rows fails."""
    table = numpy_helper.from_array(np.arange(n_rows * 3, dtype=np.float32).reshape(n_rows, 3), "table")
    nodes = [helper.make_node("Relu", ["x"], ["rx"], name="relu_x"),
             helper.make_node("Gather", ["table", "idx"], ["g"], name="gather_rows", axis=0),
             helper.make_node("Add", ["g", "rx"], ["y"], name="add_out")]
    return make_model(nodes, [vi("x", [2, 3]), vi("idx", [2], TensorProto.INT64)], [vi("y", None)], [table])


@st.composite
def dags(draw, max_c=3, max_hw=5):
    """A random valid ONNX DAG over 4-D float tensors: branches (any earlier value may be read again) and
    joins (binary ops, Concat). Returns (model, feeds)."""
    c, h, w = draw(st.integers(1, max_c)), draw(st.integers(2, max_hw)), draw(st.integers(2, max_hw))
    shapes = {"x": (1, c, h, w)}
    inputs = [vi("x", [1, c, h, w])]
    if draw(st.booleans()):  # a second graph input of the same shape: joins of two feeds
        shapes["x2"] = (1, c, h, w)
        inputs.append(vi("x2", [1, c, h, w]))
    nodes, inits = [], []
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    for i in range(draw(st.integers(1, 14))):
        op = draw(st.sampled_from(OPS))
        a = draw(st.sampled_from(sorted(shapes)))
        s = shapes[a]
        out, name = f"v{i}", f"n{i}_{op.lower()}"
        if op in ("Relu", "Sigmoid"):
            node, shape = helper.make_node(op, [a], [out], name=name), s
        elif op == "Softmax":
            node, shape = helper.make_node(op, [a], [out], name=name, axis=draw(st.integers(-4, 3))), s
        elif op in BINARY:
            same = sorted(k for k, v in shapes.items() if v == s)
            kind = draw(st.sampled_from(["value", "bcast"]))
            b = draw(st.sampled_from(same)) if kind == "value" else const(
                f"c{i}", rng.standard_normal((s[1], 1, s[3])).astype(np.float32))
            node, shape = helper.make_node(op, [a, b], [out], name=name), s
        elif op == "Concat":
            axis = draw(st.integers(1, 3))
            fits = sorted(k for k, v in shapes.items() if all(v[d] == s[d] for d in range(4) if d != axis))
            b = draw(st.sampled_from(fits))
            shape = tuple(s[d] + shapes[b][d] if d == axis else s[d] for d in range(4))
            node = helper.make_node(op, [a, b], [out], name=name, axis=axis)
        elif op == "Conv":
            cout, k = draw(st.integers(1, 3)), draw(st.sampled_from([1, 3]))
            wname = const(f"w{i}", rng.standard_normal((cout, s[1], k, k)).astype(np.float32))
            ins = [a, wname] + ([const(f"b{i}", rng.standard_normal(cout).astype(np.float32))]
                                if draw(st.booleans()) else [])
            node = helper.make_node(op, ins, [out], name=name, pads=[k // 2] * 4)
            shape = (1, cout, s[2], s[3])
        elif op == "MaxPool":
            node = helper.make_node(op, [a], [out], name=name, kernel_shape=[2, 2], strides=[1, 1])
            if s[2] < 2 or s[3] < 2:
                node, shape = helper.make_node("Relu", [a], [out], name=name), s
            else:
                shape = (1, s[1], s[2] - 1, s[3] - 1)
        elif op == "Reshape":  # a pair: [1, C*H, W, 1] and back, through a view and a branch
            shape = (1, s[1] * s[2], s[3], 1)
            nodes.append(helper.make_node(op, [a, const(f"s{i}", np.array(shape, np.int64))], [f"{out}_r"],
                                          name=f"{name}_a"))
            shapes[f"{out}_r"] = shape
            node = helper.make_node(op, [f"{out}_r", const(f"s{i}b", np.array(s, np.int64))], [out],
                                    name=f"{name}_b")
            shape = s
        elif op == "Transpose":
            perm = [0] + draw(st.permutations([1, 2, 3]))
            node, shape = helper.make_node(op, [a], [out], name=name, perm=perm), tuple(s[p] for p in perm)
        elif op == "MatMul":
            kdim = draw(st.integers(1, 4))
            wname = const(f"m{i}", rng.standard_normal((s[3], kdim)).astype(np.float32))
            node, shape = helper.make_node(op, [a, wname], [out], name=name), (*s[:3], kdim)
        else:  # ReduceMean, keepdims
            axis = draw(st.integers(1, 3))
            node = helper.make_node(op, [a], [out], name=name, axes=[axis], keepdims=1)
            shape = tuple(1 if d == axis else s[d] for d in range(4))
        nodes.append(node)
        shapes[out] = shape
    produced = [o for n in nodes for o in n.output]
    outs = sorted({produced[-1], draw(st.sampled_from(produced))})
    model = make_model(nodes, inputs, [vi(o, None) for o in outs], inits, name="fuzz")
    feeds = {i.name: rng.standard_normal(shapes[i.name]).astype(np.float32) for i in inputs}
    return model, feeds
