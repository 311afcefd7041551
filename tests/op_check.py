"""check_op: one node through ge against onnx.reference.ReferenceEvaluator (the oracle).

Inputs listed in `const_inputs` become initializers (their values are known at compile time, as a
Reshape's shape usually is); the others are fed at run time.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from ge.frontends.onnx_attrs import node_attributes
from ge.ir.dtypes import to_onnx
from ge.kernels import KernelContext, TensorSpec, lookup, run_kernel


def make_model(op_type, inputs, attrs=None, opset=17, domain="", n_outputs=1, const_inputs=()):
    names = [None if x is None else f"x{i}" for i, x in enumerate(inputs)]
    node = helper.make_node(op_type, [n or "" for n in names], [f"y{i}" for i in range(n_outputs)],
                            domain=domain or None, **(attrs or {}))
    feeds, graph_inputs, inits = {}, [], []
    for i, (n, x) in enumerate(zip(names, inputs)):
        if x is None:
            continue
        x = np.asarray(x)
        if i in const_inputs:
            inits.append(numpy_helper.from_array(x, n))
        else:
            graph_inputs.append(helper.make_tensor_value_info(n, to_onnx(x.dtype), x.shape))
            feeds[n] = x
    outs = [helper.make_tensor_value_info(f"y{i}", onnx.TensorProto.UNDEFINED, None)
            for i in range(n_outputs)]
    graph = helper.make_graph([node], f"{op_type}_test", graph_inputs, outs, inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets), feeds


def run_ge(model, feeds):
    """ge's answer for a single-node model (kernel level until the Session lands)."""
    node = model.graph.node[0]
    env = dict(feeds)
    env.update({t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
    consts = {t.name for t in model.graph.initializer}
    arrays = [env[n] if n else None for n in node.input]
    kernel = lookup(node.op_type, node.domain, model.opset_import[0].version, node.name or "n")
    values = [env[n] if n in consts else None for n in node.input]
    specs = [None if a is None else TensorSpec(a.shape, a.dtype) for a in arrays]
    ctx = KernelContext(node.op_type, "n", node_attributes(node), specs, values,
                        model.opset_import[0].version, n_outputs=len(node.output))
    return run_kernel(kernel, ctx, arrays)


def check_op(op_type, inputs, attrs=None, opset=17, domain="", n_outputs=1, const_inputs=(),
             rtol=1e-4, atol=1e-5):
    model, feeds = make_model(op_type, inputs, attrs, opset, domain, n_outputs, const_inputs)
    want = ReferenceEvaluator(model).run(None, feeds)
    got = run_ge(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, f"{op_type}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"{op_type}: dtype {g.dtype} != {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=op_type)
    return got
