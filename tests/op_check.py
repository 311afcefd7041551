"""check_op: one node through ge against onnx.reference.ReferenceEvaluator (the oracle).

The node runs three ways: its kernel called directly (one block, and tiled for 3 AI cores: bitwise the
same), and a one-node graph through ge.Session on runtime_v1 (when its shapes are static) and runtime_v2,
which must give the kernel's bits. Inputs listed in `const_inputs` become initializers (their values are
known at compile time, as a Reshape's shape usually is); the others are fed at run time.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
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


def run_ge(model, feeds, cores: int = 1):
    """The kernel's answer for a single-node model, tiled for `cores` AI cores."""
    node = model.graph.node[0]
    env = dict(feeds)
    env.update({t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
    consts = {t.name for t in model.graph.initializer}
    arrays = [env[n] if n else None for n in node.input]
    kernel = lookup(node.op_type, node.domain, model.opset_import[0].version, node.name or "n")
    values = [env[n] if n in consts else None for n in node.input]
    specs = [None if a is None else TensorSpec(a.shape, a.dtype) for a in arrays]
    ctx = KernelContext(node.op_type, "n", node_attributes(node), specs, values,
                        model.opset_import[0].version, n_outputs=len(node.output), cores=cores)
    return run_kernel(kernel, ctx, arrays)


def ge_only(op_type, inputs, attrs=None, opset=17, const_inputs=()):
    """The kernel's answer alone, for bad input (the oracle would raise its own error first)."""
    return run_ge(*make_model(op_type, inputs, attrs, opset, const_inputs=const_inputs))


def run_sessions(model, feeds) -> dict:
    """{runtime: outputs} of the model on each runtime that can run it (v1 needs static shapes)."""
    out = {}
    for runtime in ("v1", "v2"):
        plan = ge.compile(model)
        if runtime == "v1" and plan.is_dynamic:
            continue
        with ge.Session(plan, runtime=runtime) as sess:
            out[runtime] = sess.run(None, feeds)
    return out


def _same(a, b, what):
    assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    np.testing.assert_array_equal(a, b, err_msg=what)


def check_op(op_type, inputs, attrs=None, opset=17, domain="", n_outputs=1, const_inputs=(),
             rtol=1e-4, atol=1e-5):
    model, feeds = make_model(op_type, inputs, attrs, opset, domain, n_outputs, const_inputs)
    want = ReferenceEvaluator(model).run(None, feeds)
    got = run_ge(model, feeds)
    for k, g in enumerate(run_ge(model, feeds, cores=3)):
        _same(g, got[k], f"{op_type} output {k} tiled for 3 cores vs one block")
    for runtime, outs in run_sessions(model, feeds).items():
        for k, g in enumerate(outs):
            _same(g, got[k], f"{op_type} output {k} on runtime_{runtime} vs the kernel")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, f"{op_type}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"{op_type}: dtype {g.dtype} != {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=op_type)
    return got
