"""Run ONNX's own node test cases for some ops straight through ge's kernels (no compiler).

    python tools/node_cases.py Conv MaxPool      # only these op types
    python tools/node_cases.py -v                # every registered op, print failures
"""
from __future__ import annotations

import sys
import traceback

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case.node import collect_testcases

from ge.frontends.onnx_attrs import node_attributes
from ge.kernels import KernelContext, TensorSpec, is_registered, lookup, run_kernel
from ge.kernels.registry import is_expanded


def _array(x):
    return numpy_helper.to_array(x) if isinstance(x, TensorProto) else np.asarray(x)


def run_case(case):
    model = case.model
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 21)
    (node,) = model.graph.node
    for inputs, expected in case.data_sets:
        inputs = [None if x is None else _array(x) for x in inputs]
        names = [i.name for i in model.graph.input]
        env = dict(zip(names, inputs))
        arrays = [env.get(n) if n else None for n in node.input]
        specs = [None if a is None else TensorSpec(a.shape, a.dtype) for a in arrays]
        kernel = lookup(node.op_type, node.domain, opset, node.name or node.op_type)
        values = [a if (i in kernel.value_inputs and a is not None) else None for i, a in enumerate(arrays)]
        ctx = KernelContext(node.op_type, node.name or node.op_type, node_attributes(node), specs, values,
                            opset, n_outputs=len(node.output))
        outs = run_kernel(kernel, ctx, arrays)
        for got, want in zip(outs, expected):
            want = _array(want)
            assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
            assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
            np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)


def main(argv):
    verbose = "-v" in argv
    ops = [a for a in argv if not a.startswith("-")]
    passed = failed = 0
    for case in collect_testcases():
        if case.model is None or len(case.model.graph.node) != 1:
            continue
        op = case.model.graph.node[0].op_type
        domain = case.model.graph.node[0].domain
        if (ops and op not in ops) or not is_registered(op, domain) or is_expanded(op, domain):
            continue  # an expanded op has no kernel to run straight (the importer inlines its function)
        try:
            run_case(case)
            passed += 1
        except Exception as e:  # noqa: BLE001
            failed += 1
            if verbose or ops:
                print(f"FAIL {case.name}: {type(e).__name__}: {str(e)[:300]}")
                if "-vv" in argv:
                    traceback.print_exc()
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main(sys.argv[1:])
