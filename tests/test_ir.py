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


def test_replaced_constant_is_freed_at_once_without_a_cyclic_collection():
    """A pass that replaces weights (folded, packed) frees the old array when it lets go, not at Python's next
    cyclic GC: an erased node and its outputs hold no cycle, and replace_pattern forgets an orphaned constant
    (issue 44: ResNet-50's compile held every old copy of its weights beside the new)."""
    import gc
    import weakref

    from ge.passes.pattern import replace_pattern
    g = Graph("g")
    x = g.add_input("x", np.float32, (4,))
    old = np.ones(4, np.float32)
    w = g.add_const("w", old)
    node = g.add_node("Add", [x, w], ["y"])
    g.outputs = [node.outputs[0]]
    gone = weakref.ref(old)
    del old
    nodes = list(g.nodes)   # a pass's copy of the node list still holds the erased node
    gc.disable()
    try:
        replace_pattern(g, [node], "Add", [x, g.add_const("w2", np.zeros(4, np.float32))], {}, name="add")
        del node, w
        assert "w" not in g.values and gone() is None
    finally:
        gc.enable()
    verify(g)
    assert len(nodes) == 1
