"""Issue 46's held-out hostile suite: cases written apart from tests/reliability (which ge was fixed
against), of the same classes (bad models, memory and time bombs in shapes and attributes, feeds, edited
`.gem` files, options), each in a child process under an address-space cap and a timeout. Every case must
end as a typed refusal (a ge.errors.GEError) or a correct run; anything else is listed.

    python bench/hostile_heldout.py [-k substring] [--cap-gib 3] [--jobs 2]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "reliability"))
from limited import GIB, run_limited  # noqa: E402

# each case: code run in the child. It calls check(model_or_session_maker...) helpers from PRELUDE and ends
# with _report(ok=...) for a run whose result it checked; an exception is classified by its type.
PRELUDE = """
import numpy as np, onnx, ge, ge.compiler, io, json, zipfile, os, tempfile
from onnx import helper, numpy_helper, TensorProto as T
def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
def vi(n, s, t=T.FLOAT):
    return helper.make_tensor_value_info(n, t, s)
def ort(m, feeds):
    import onnxruntime as rt
    return rt.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
def same_as_ort(m, feeds, runtime="v2"):
    with ge.Session(m, runtime=runtime) as s:
        got = s.run(None, feeds)
    want = ort(m, feeds)
    _report(ok=all(g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
                   for g, w in zip(got, want)))
def run(m, feeds, runtime="v2"):
    with ge.Session(m, runtime=runtime) as s:
        return s.run(None, feeds)
def gem_with(edit):
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])])
    d = tempfile.mkdtemp()
    p = ge.save(ge.compile(m), os.path.join(d, "a.gem"))
    with zipfile.ZipFile(p) as z:
        members = {n: z.read(n) for n in z.namelist()}
    doc = json.loads(members["plan.json"])
    doc.pop("digest")
    edit(doc)
    from ge.offline.format import seal   # re-sealed: the digest matches the edit
    members["plan.json"] = seal(doc).encode()
    q = os.path.join(d, "b.gem")
    with zipfile.ZipFile(q, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    return q
X = np.arange(6, dtype=np.float32).reshape(2, 3)
"""

CASES = {
    # -- models -------------------------------------------------------------------------------------
    "identity graph (no nodes)": """
        m = model([], [vi("x", [2, 3])], [vi("x", [2, 3])])
        out = run(m, {"x": X})
        _report(ok=bool(np.array_equal(out[0], X)))""",
    "output listed twice": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3]), vi("y", [2, 3])])
        same_as_ort(m, {"x": X})""",
    "Add with an empty-name input": """
        m = model([helper.make_node("Add", ["x", ""], ["y"])], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": X}); _report(ok=False)""",
    "Reshape with two -1": """
        s = numpy_helper.from_array(np.array([-1, -1], np.int64), "s")
        m = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], [s])
        run(m, {"x": X}); _report(ok=False)""",
    "Expand to 2^20 x 2^20 (constant)": """
        s = numpy_helper.from_array(np.array([1 << 20, 1 << 20], np.int64), "s")
        m = model([helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", [1, 1])], [vi("y", None)], [s])
        run(m, {"x": np.ones((1, 1), np.float32)}); _report(ok=False)""",
    "Tile repeats 2^30 (constant)": """
        r = numpy_helper.from_array(np.array([1 << 30, 1 << 30], np.int64), "r")
        m = model([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], [r])
        run(m, {"x": X}); _report(ok=False)""",
    "Tile repeats from a feed, 2^30": """
        m = model([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", [2, 3]), vi("r", [2], T.INT64)],
                  [vi("y", None)])
        run(m, {"x": X, "r": np.array([1 << 30, 1 << 30], np.int64)}); _report(ok=False)""",
    "ConstantOfShape from a feed, 2^40": """
        m = model([helper.make_node("ConstantOfShape", ["s"], ["y"])], [vi("s", [1], T.INT64)], [vi("y", None)])
        run(m, {"s": np.array([1 << 40], np.int64)}); _report(ok=False)""",
    "Range of 10^12 elements from feeds": """
        m = model([helper.make_node("Range", ["a", "b", "c"], ["y"])],
                  [vi("a", [], T.INT64), vi("b", [], T.INT64), vi("c", [], T.INT64)], [vi("y", None, T.INT64)])
        run(m, {"a": np.array(0), "b": np.array(10 ** 12), "c": np.array(1)}); _report(ok=False)""",
    "Range with delta 0": """
        m = model([helper.make_node("Range", ["a", "b", "c"], ["y"])],
                  [vi("a", [], T.INT64), vi("b", [], T.INT64), vi("c", [], T.INT64)], [vi("y", None, T.INT64)])
        run(m, {"a": np.array(0), "b": np.array(10), "c": np.array(0)}); _report(ok=False)""",
    "Pad by 2^30 (constant)": """
        p = numpy_helper.from_array(np.array([0, 0, 1 << 30, 1 << 30], np.int64), "p")
        m = model([helper.make_node("Pad", ["x", "p"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], [p])
        run(m, {"x": X}); _report(ok=False)""",
    "Resize by scale 10^5": """
        sc = numpy_helper.from_array(np.array([1, 1, 1e5, 1e5], np.float32), "sc")
        m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"])], [vi("x", [1, 1, 2, 3])], [vi("y", None)], [sc])
        run(m, {"x": X.reshape(1, 1, 2, 3)}); _report(ok=False)""",
    "Gather index out of range (feed)": """
        m = model([helper.make_node("Gather", ["x", "i"], ["y"])], [vi("x", [2, 3]), vi("i", [1], T.INT64)],
                  [vi("y", None)])
        run(m, {"x": X, "i": np.array([7], np.int64)}); _report(ok=False)""",
    "Transpose perm with a duplicate": """
        m = model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": X}); _report(ok=False)""",
    "Transpose perm of 10^6 entries": """
        m = model([helper.make_node("Transpose", ["x"], ["y"], perm=list(range(10 ** 6)))], [vi("x", [2, 3])],
                  [vi("y", None)])
        run(m, {"x": X}); _report(ok=False)""",
    "Softmax axis 9": """
        m = model([helper.make_node("Softmax", ["x"], ["y"], axis=9)], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": X}); _report(ok=False)""",
    "Slice step 0": """
        i = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("s", [0]), ("e", [2]), ("a", [1]), ("t", [0]))]
        m = model([helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], i)
        run(m, {"x": X}); _report(ok=False)""",
    "TopK k above the dim": """
        k = numpy_helper.from_array(np.array([9], np.int64), "k")
        m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"])], [vi("x", [2, 3])],
                  [vi("v", None), vi("i", None, T.INT64)], [k])
        run(m, {"x": X}); _report(ok=False)""",
    "Split sizes not summing to the dim": """
        s = numpy_helper.from_array(np.array([1, 1], np.int64), "s")
        m = model([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=1)], [vi("x", [2, 3])],
                  [vi("a", None), vi("b", None)], [s])
        run(m, {"x": X}); _report(ok=False)""",
    "initializer raw_data shorter than its dims": """
        w = numpy_helper.from_array(np.zeros(2, np.float32), "w"); w.ClearField("dims"); w.dims.extend([2, 3])
        m = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], [w])
        run(m, {"x": X}); _report(ok=False)""",
    "initializer raw_data longer than its dims": """
        w = numpy_helper.from_array(np.zeros(16, np.float32), "w"); w.ClearField("dims"); w.dims.extend([2, 3])
        m = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3])], [vi("y", None)], [w])
        run(m, {"x": X}); _report(ok=False)""",
    "complex64 input": """
        m = model([helper.make_node("Identity", ["x"], ["y"])], [vi("x", [2], T.COMPLEX64)], [vi("y", None, T.COMPLEX64)])
        run(m, {"x": np.ones(2, np.complex64)}); _report(ok=False)""",
    "If nested 25 deep": """
        def branch(depth):
            if depth == 0:
                return helper.make_graph([helper.make_node("Identity", ["x"], ["o0"])], "b0", [], [vi("o0", [2, 3])])
            inner = branch(depth - 1)
            leaf = helper.make_graph([helper.make_node("Neg", ["x"], [f"e{depth}"])], f"e{depth}", [], [vi(f"e{depth}", [2, 3])])
            return helper.make_graph([helper.make_node("If", ["c"], [f"o{depth}"], then_branch=inner, else_branch=leaf)],
                                     f"b{depth}", [], [vi(f"o{depth}", [2, 3])])
        top = branch(25)
        m = model(list(top.node), [vi("x", [2, 3]), vi("c", [], T.BOOL)], [vi("o25", [2, 3])])
        out = run(m, {"x": X, "c": np.array(True)})
        _report(ok=bool(np.array_equal(out[0], X)))""",
    "a chain of 20,000 Relu": """
        n = 20000
        names = ["x"] + [f"t{i}" for i in range(n - 1)] + ["y"]
        m = model([helper.make_node("Relu", [names[i]], [names[i + 1]]) for i in range(n)], [vi("x", [2, 3])],
                  [vi("y", None)])
        out = run(m, {"x": X})
        _report(ok=bool(np.array_equal(out[0], X)))""",
    "3,000 Relu outputs all alive into one Concat": """
        n = 3000
        nodes = [helper.make_node("Relu", ["x"], [f"r{i}"]) for i in range(n)]
        nodes.append(helper.make_node("Concat", [f"r{i}" for i in range(n)], ["y"], axis=1))
        m = model(nodes, [vi("x", [2, 3])], [vi("y", None)])
        out = run(m, {"x": X})
        _report(ok=bool(np.array_equal(out[0], np.concatenate([X] * n, 1))))""",
    "a 1 MB node name": """
        m = model([helper.make_node("Relu", ["x"], ["y"], name="n" * (1 << 20))], [vi("x", [2, 3])], [vi("y", None)])
        same_as_ort(m, {"x": X})""",
    "Mean of 2,000 inputs": """
        n = 2000
        m = model([helper.make_node("Mean", [f"x{i}" for i in range(n)], ["y"])], [vi(f"x{i}", [2, 3]) for i in range(n)],
                  [vi("y", None)])
        same_as_ort(m, {f"x{i}": X + i for i in range(n)})""",
    # -- feeds ----------------------------------------------------------------------------------------
    "feed of another dtype (int64 for float)": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": np.ones((2, 3), np.int64)}); _report(ok=False)""",
    "feed with an extra unknown name": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": X, "nope": X}); _report(ok=False)""",
    "0-d feed for a 2-d input": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": np.float32(1)}); _report(ok=False)""",
    "object-dtype feed": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", None)])
        run(m, {"x": np.array([[object()] * 3] * 2)}); _report(ok=False)""",
    "symbolic input fed 2^23 x 16 (twice the device)": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", 16])], [vi("y", None)])
        with ge.Session(m, options=ge.Options(device_memory_bytes=1 << 28)) as s:
            s.run(None, {"x": np.zeros((1 << 23, 16), np.float32)})
        _report(ok=False)""",
    # -- edited .gem ----------------------------------------------------------------------------------
    "gem: a node reads tensor index 10^6": """
        def edit(doc):
            doc["nodes"][0]["inputs"] = [10 ** 6]
        ge.Session(gem_with(edit)).run(None, {"x": X}); _report(ok=False)""",
    "gem: a tensor shape of 2^40 elements": """
        def edit(doc):
            doc["tensors"][1][2] = [1 << 20, 1 << 20]
        ge.Session(gem_with(edit)).run(None, {"x": X}); _report(ok=False)""",
    "gem: a negative memory offset": """
        def edit(doc):
            for t in doc["memory"]["tensors"]:
                t[3] = -4096
        ge.Session(gem_with(edit)).run(None, {"x": X}); _report(ok=False)""",
    "gem: op_type changed to one ge lacks": """
        def edit(doc):
            doc["nodes"][0]["op_type"] = "NoSuchOp"
        ge.Session(gem_with(edit)).run(None, {"x": X}); _report(ok=False)""",
    "gem: plan.json emptied": """
        def edit(doc):
            doc.clear()
        ge.Session(gem_with(edit)).run(None, {"x": X}); _report(ok=False)""",
    # -- options --------------------------------------------------------------------------------------
    "device_memory_bytes=2^70": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", None)])
        with ge.Session(m, options=ge.Options(device_memory_bytes=1 << 70)) as s:
            _report(ok=bool(np.array_equal(s.run(None, {"x": X})[0], X.clip(0))))""",
    "input_shape with a negative dim": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", 3])], [vi("y", None)])
        ge.compile(m, ge.Options(input_shape="x:-5,3")); _report(ok=False)""",
    "input_shape of 2^31 x 2^31": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", "k"])], [vi("y", None)])
        ge.compile(m, ge.Options(input_shape=f"x:{1 << 31},{1 << 31}")); _report(ok=False)""",
    "dynamic_dims with 10,000 gears": """
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", 3])], [vi("y", None)])
        ge.compiler.compile_gears(m, ge.Options(input_shape="x:-1,3", dynamic_dims=";".join(str(i) for i in range(1, 10001))))
        _report(ok=False)""",
}


def classify(r: dict) -> str:
    if "error" in r:
        return "typed" if "GEError" in r.get("mro", []) else "UNTYPED"
    if "ok" in r:
        return "ran, correct" if r["ok"] else "RAN, WRONG (or accepted)"
    return f"CRASH rc={r.get('rc')}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("--cap-gib", type=float, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}, "
          f"commit {commit}, RLIMIT_AS {args.cap_gib} GiB, timeout {args.timeout:.0f} s")
    chosen = {k: v for k, v in CASES.items() if args.k in k}

    def one(item):
        name, body = item
        t = time.perf_counter()
        try:
            r = run_limited(PRELUDE + textwrap.dedent(body), cap=int(args.cap_gib * GIB), timeout=args.timeout)
        except subprocess.TimeoutExpired:
            r = {"rc": "timeout"}
        return name, r, time.perf_counter() - t

    tally: dict[str, int] = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for name, r, secs in pool.map(one, chosen.items()):
            kind = classify(r)
            tally[kind] = tally.get(kind, 0) + 1
            detail = (f"{r['error']}: {r['message'][:150]}" if "error" in r else
                      "" if "ok" in r else r.get("stderr", "")[-300:].replace("\n", " | "))
            print(f"{kind:24} {secs:6.1f} s  {name}: {detail}", flush=True)
    print(", ".join(f"{v} {k}" for k, v in sorted(tally.items())), f"of {len(chosen)}")


if __name__ == "__main__":
    main()
