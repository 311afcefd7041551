import numpy as np
import pytest

from ge.ir import Graph, VerifyError, verify


def small_graph():
    g = Graph("g")
    x = g.add_input("x", np.float32, (1, 4))
    w = g.add_const("w", np.ones((1, 4), np.float32))
    a = g.add_node("Add", [x, w], ["a"], name="add")
    r = g.add_node("Relu", [a.outputs[0]], ["y"], name="relu")
    g.outputs.append(r.outputs[0])
    return g


def test_printed_form():
    g = small_graph()
    g.values["a"].dtype, g.values["a"].shape = np.dtype(np.float32), (1, 4)
    text = str(g)
    assert "%a:f32[1,4] = Add(%x, %w)  # add" in text
    assert "return %y" in text
    verify(g)


def test_replace_all_uses_and_erase():
    g = small_graph()
    add, relu = g.nodes
    g.replace_all_uses_with(relu.outputs[0], add.outputs[0])
    g.erase_node(relu)
    verify(g)
    assert g.outputs[0].name == "a" and [n.name for n in g.nodes] == ["add"]


def test_erase_used_node_refused():
    g = small_graph()
    with pytest.raises(ValueError, match="still used"):
        g.erase_node(g.nodes[0])


def test_verify_reports_order_problem():
    g = small_graph()
    g.nodes.reverse()
    with pytest.raises(VerifyError, match="before it is defined"):
        verify(g)


def test_fold_node_keeps_readers():
    g = small_graph()
    add = g.nodes[0]
    g.fold_node(add, [np.full((1, 4), 2, np.float32)])
    verify(g)
    assert g.values["a"].is_const and g.nodes[0].inputs[0] is g.values["a"]
