"""ONNX's own node test cases (onnx.backend.test.case.node) through ge.backend, for every op ge registers.

A failing case of a registered op is a bug. The few genuinely unsupported combinations are listed in
UNSUPPORTED with the reason and expected to fail (strictly: a fix shows up as an unexpected pass).
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx.backend.test.case.node import collect_testcases

import ge.backend
from ge.kernels import is_registered

UNSUPPORTED: dict[str, str] = {}

_CASES = [c for c in collect_testcases()
          if c.model is not None and c.data_sets
          and all(is_registered(n.op_type, n.domain) for n in c.model.graph.node)]
_RESULTS: dict[str, bool] = {}


def _run(case):
    rep = ge.backend.prepare(case.model)
    for inputs, expected in case.data_sets:
        got = rep.run([np.asarray(x) for x in inputs])
        assert len(got) == len(expected)
        for g, w in zip(got, expected):
            w = np.asarray(w)
            assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}"
            assert g.shape == w.shape, f"shape {g.shape} != {w.shape}"
            np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def test_node_case(case):
    if case.name in UNSUPPORTED:
        with pytest.raises(Exception):
            _run(case)
        pytest.xfail(UNSUPPORTED[case.name])
    _RESULTS[case.name] = False
    _run(case)
    _RESULTS[case.name] = True


def test_pass_rate():
    """At least 97% of the registered ops' cases pass; at least 90 op types are registered."""
    ops = {n.op_type for c in _CASES for n in c.model.graph.node}
    passed = sum(_RESULTS.values())
    total = len(_CASES)
    print(f"\nONNX node cases: {passed} passed of {total} for {len(ops)} registered op types "
          f"({len(UNSUPPORTED)} marked unsupported)")
    if len(_RESULTS) < total - len(UNSUPPORTED):
        pytest.skip("run the whole module to measure the pass rate")
    assert passed >= 0.97 * total
    assert len(ge.kernels.registered_ops()) >= 90
