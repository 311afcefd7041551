"""kv_cache_pad (Options.kv_cache_static): the sizes a decoder step makes of its past length padded to the cache's,
its values left as data. Before/Expected on the exporter's two uses of the past: the key positions
Range(0, past + new) and the mask's Expand to [1, past + new] (sizes: padded) and the position ids
Range(past, past + new) (new long: kept)."""
import numpy as np
from onnx import TensorProto, helper
from pass_check import node

from ge.compiler import import_model
from ge.ir.verify import verify
from ge.kv_cache import PAST_SYMBOL
from ge.passes import fold_symbolic, infer_shapes, kv_cache_pad

MAX = 24


def _step():
    i64 = lambda *v: helper.make_tensor("c" + "_".join(map(str, v)), TensorProto.INT64, [], list(v))  # noqa: E731
    nodes = [node("Squeeze", ["past"], ["p"]), node("Add", ["p", "c1"], ["total"]),
             node("Range", ["c0", "total", "c1"], ["keys"]),        # the key positions: a size
             node("Range", ["p", "total", "c1"], ["positions"]),    # the position ids: one long, values
             node("Unsqueeze", ["total", "ax0"], ["t1"]), node("Concat", ["one", "t1"], ["shape"], axis=0),
             node("Expand", ["m", "shape"], ["mask"])]              # the 4-D mask's expand: a size
    inits = [i64(0), i64(1), helper.make_tensor("ax0", TensorProto.INT64, [1], [0]),
             helper.make_tensor("one", TensorProto.INT64, [1], [1])]
    g = helper.make_graph(nodes, "step", [helper.make_tensor_value_info("past", TensorProto.INT64, [1]),
                                          helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 1])],
                          [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None)
                           for n in ("keys", "positions", "mask")], inits)
    graph = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    graph.values["past"].sym = (PAST_SYMBOL,)   # as ge/kv_cache.py's in_place makes the input
    graph.kv_cache = {"past": "past", "past_symbol": PAST_SYMBOL, "padded_past": MAX - 1}
    infer_shapes(graph)
    fold_symbolic(graph)
    return graph


def test_sizes_made_of_the_past_are_padded_and_its_values_kept():
    g = _step()
    assert g.values["keys"].shape == ("kv_past+1",)   # Before: the step's shapes follow the past
    assert kv_cache_pad(g)
    verify(g)
    keys, positions, expand = (g.values[n].producer for n in ("keys", "positions", "mask"))
    assert keys.inputs[1].const is not None and int(keys.inputs[1].const) == MAX   # Range(0, MAX)
    assert positions.inputs[1].name == "total" and positions.inputs[0].name == "p"   # kept: data
    assert expand.inputs[1].const.tolist() == [1, MAX]
    infer_shapes(g)
    fold_symbolic(g)
    assert g.values["keys"].shape == (MAX,) and g.values["mask"].shape == (1, MAX) \
        and g.values["positions"].shape == (1,)   # Expected: static, the position ids one long
    assert not kv_cache_pad(g)   # nothing left to pad


def test_without_kv_cache_static_nothing_changes():
    g = _step()
    g.kv_cache = {"past": None}
    assert not kv_cache_pad(g)
