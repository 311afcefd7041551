"""Offline models are untrusted input: an edited plan.json is refused by its digest, and a plan re-sealed
after an edit (as someone who knows the format could) goes through the verifier, which names the field."""
import functools
import json
import os
import shutil

import numpy as np
import pytest

import ge
from ge.errors import ModelLoadError
from ge.offline.format import seal
from ge.zoo import light_model_path, reference_feeds


@functools.lru_cache(maxsize=None)
def saved(tmp_root: str) -> str:
    path = os.path.join(tmp_root, "squeezenet.gem/")
    ge.save(ge.compile(light_model_path("squeezenet")), path)   # 2 streams, Concats in place, workspaces
    return path


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return saved(str(tmp_path_factory.mktemp("good")))


def edited(good: str, tmp_path, edit, reseal: bool = True) -> str:
    """A copy of the saved model whose plan.json went through `edit(doc)` (re-sealed unless told not to)."""
    out = tmp_path / "m.gem"
    shutil.copytree(good, out)
    with open(out / "plan.json") as f:
        doc = json.load(f)
    doc.pop("digest")
    edit(doc)
    (out / "plan.json").write_text(seal(doc) if reseal else json.dumps(doc))
    return str(out)


def node_of(doc, op):
    return next(n for n in doc["nodes"] if n["op_type"] == op and not n["alias"])


def set_mem(doc, name, field, value):
    fields = doc["memory"]["tensor_fields"]
    row = next(r for r in doc["memory"]["tensors"] if r[1] == name)
    row[fields.index(field)] = value


def tensor_named(doc, i):
    return doc["tensors"][i][0]


CASES = {
    "tensor index": (lambda d: d["nodes"][3]["inputs"].__setitem__(0, 10 ** 6), r"nodes\[3\]\.inputs\[0\]"),
    "bool for an int": (lambda d: d["nodes"][2].__setitem__("stream", True), r"nodes\[2\]\.stream: expected an int"),
    "dtype": (lambda d: d["tensors"][5].__setitem__(1, "<c8"), r"tensors\[5\]\.dtype"),
    "shape vs infer": (lambda d: d["tensors"][node_of(d, "FusedConv")["outputs"][0]][2].__setitem__(1, 7),
                       r"nodes\[\d+\]\.outputs\[0\].*computes"),
    "weights vs tensor": (lambda d: d["tensors"][1][2].__setitem__(0, 32), r"constants\['1'\]|computes"),
    "unknown op": (lambda d: d["nodes"][0].__setitem__("op_type", "NoSuchOp"), r"nodes\[0\]\.op_type"),
    "engine": (lambda d: d["nodes"][0].__setitem__("engine", "GPU"), r"nodes\[0\]\.engine"),
    "options": (lambda d: d["options"].__setitem__("max_streams", "many"), r"options"),
    "order": (lambda d: d["nodes"].insert(0, d["nodes"].pop(5)), r"(topological|computes|cannot be prepared)"),
    "event dropped": (lambda d: d["events"].pop(0), r"not ordered|not dense"),
    "event streams": (lambda d: d["events"][0].__setitem__(3, 7), r"event e0 says streams"),
    "overlap": (lambda d: set_mem(d, tensor_named(d, d["nodes"][1]["outputs"][0]), "offset", 0),
                r"share bytes|not at its|exceeds"),
    "outside segment": (lambda d: set_mem(d, tensor_named(d, d["nodes"][1]["outputs"][0]), "offset", 1 << 40),
                        r"exceeds segment|memory\.tensors"),
    "misaligned": (lambda d: set_mem(d, tensor_named(d, d["nodes"][1]["outputs"][0]), "offset", 100),
                   r"aligned"),
    "workspace": (lambda d: next(w for ws in d["memory"]["workspaces"] for w in ws if w[1] > 8).__setitem__(1, 8),
                  r"workspace 0"),
    "huge segment": (lambda d: d["memory"]["segments"].__setitem__("feature_map", 1 << 40), r"segment 'feature_map'"),
    "alias_of": (lambda d: set_mem(d, tensor_named(d, 3), "alias_of", "nowhere"), r"alias_of 'nowhere'"),
    "defined twice": (lambda d: d["nodes"][4]["outputs"].__setitem__(0, d["nodes"][3]["outputs"][0]),
                      r"already the output|computes"),
    "nesting": (lambda d: d["nodes"][0]["attrs"].__setitem__("strides", functools.reduce(lambda a, _: [a], range(40), [1])),
                r"nest deeper"),
    "missing field": (lambda d: d["nodes"][0].pop("inputs"), r"nodes\[0\]: missing 'inputs'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resealed_bad_plan_is_refused_naming_the_field(good, tmp_path, case):
    edit, match = CASES[case]
    with pytest.raises(ModelLoadError, match=match):
        ge.load(edited(good, tmp_path, edit))


def test_an_edit_without_the_digest_is_refused(good, tmp_path):
    path = edited(good, tmp_path, lambda d: d.__setitem__("name", "renamed"), reseal=False)
    with pytest.raises(ModelLoadError, match="digest"):
        ge.load(path)


def test_harmless_resealed_edits_load_and_compute_the_same(good, tmp_path):
    want = ge.Session(good).run(None, reference_feeds(ge.Session(good)))

    def edit(d):
        d["name"] = "renamed"
        d["nodes"][0]["name"] = "first"
        d["options"]["aicore_num"] = 1   # another tiling: the same bits
    sess = ge.Session(edited(good, tmp_path, edit))
    assert sess.plan.options.aicore_num == 1
    for g, w in zip(sess.run(None, reference_feeds(sess)), want):
        np.testing.assert_array_equal(g, w)


def test_json_too_deep_for_the_parser_is_typed(good, tmp_path):
    path = edited(good, tmp_path, lambda d: None)
    with open(os.path.join(path, "plan.json"), "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    with pytest.raises(ModelLoadError, match="not"):
        ge.load(path)
