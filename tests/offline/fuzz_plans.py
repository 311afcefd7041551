"""Mutants of saved plans, and the worker process that loads and runs them.

`mutants(doc, rng, n)`: n edits of one plan.json document, each one operator on one leaf (a number, a
string, a flag) or one container (a list, an object) at a random path. A path is *structural* when it only
says where and how the plan runs (tensor dtypes and shapes, node placement, streams, events, the memory
plan, options): a mutant that loads must compute the same outputs. *Semantic* paths (attribute values,
op types, which tensor a node reads, the graph's outputs) may make another valid model: it must only load
or fail cleanly, and run if it loads. Every mutant is re-sealed (its digest recomputed), so the verifier
sees it, as a file from someone who knows the format would be; `unsealed` mutants keep the old digest.

`python fuzz_plans.py ORIGINAL_DIR MUTANT_DIR START`: loads MUTANT_DIR/<k>.json for k >= START in turn
(with ORIGINAL_DIR's weights), runs each that loads on the original's inputs, and prints one line each:
`<k> refused|same|differs|ran|untyped <detail>`. A crash of the process ends it: the caller restarts after
the last line and counts the crash.
"""
from __future__ import annotations

import copy
import json
import os
import random
import shutil
import sys

SKIP = ("digest", "format", "version")


def leaves(v, path=()):
    """Every (path, value) of a JSON document, containers included."""
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))


def semantic(path) -> bool:
    """A path whose edit may make another valid model (node inputs, graph inputs/outputs, attributes...);
    a node's `outputs` and the memory plan stay structural."""
    if path[0] == "nodes" and len(path) > 2:
        return path[2] in ("attrs", "op_type", "domain", "opset", "inputs")
    return path[0] in ("outputs", "inputs", "constants")


def _operators(v, rng):
    if isinstance(v, bool):
        return [not v, 0, None]
    if isinstance(v, int):
        return [v + 1, v - 1, 0, -7, v * 2 + 1, v + 512, 2 ** 40, -(2 ** 62), str(v), True, None, float(v) + 0.5]
    if isinstance(v, float):
        return [v * 2, -v, float("nan"), "x", None]
    if isinstance(v, str):
        return ["", "x", v + "_", v[::-1], 5, None]
    if isinstance(v, list):
        ops = [[], v + v[-1:], v[:-1], list(reversed(v)), [v], None, "[]"]
        if len(v) > 1:
            i, j = rng.sample(range(len(v)), 2)
            w = list(v)
            w[i], w[j] = w[j], w[i]
            ops.append(w)
        return ops
    if isinstance(v, dict):
        ops = [{}, None, []]
        if v:
            k = rng.choice(sorted(v, key=str))
            ops.append({key: x for key, x in v.items() if key != k})
        return ops
    return [0, "x"]


def _set(doc, path, value):
    target = doc
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value


def mutants(doc, rng: random.Random, n: int) -> list[tuple[str, bool, dict]]:
    """n (description, semantic, mutated document) triples."""
    paths = [(p, v) for p, v in leaves(doc) if p and p[0] not in SKIP]
    out = []
    while len(out) < n:
        path, value = rng.choice(paths)
        new = rng.choice(_operators(value, rng))
        if new == value and type(new) is type(value):
            continue
        mutant = copy.deepcopy(doc)
        _set(mutant, path, new)
        out.append((f"{'.'.join(map(str, path))}: {json.dumps(value)[:30]} -> {json.dumps(new)[:30]}",
                    semantic(path), mutant))
    return out


def main(original: str, mutant_dir: str, start: int) -> None:
    import numpy as np

    import ge
    sess = ge.Session(original)
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in sess.get_inputs()}
    want = sess.run(None, feeds)
    work = os.path.join(mutant_dir, "m.gem")
    k = start
    while os.path.exists(os.path.join(mutant_dir, f"{k}.json")):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        os.link(os.path.join(original, "weights.npz"), os.path.join(work, "weights.npz"))
        shutil.copy(os.path.join(mutant_dir, f"{k}.json"), os.path.join(work, "plan.json"))
        try:
            got = ge.Session(work).run(None, feeds)
            same = len(got) == len(want) and all(
                g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
                for g, w in zip(got, want))
            result, detail = ("same" if same else "differs"), ""
        except ge.GEError as e:
            result, detail = "refused", type(e).__name__
        except Exception as e:  # noqa: BLE001 - what the test counts as a failure
            result, detail = "untyped", f"{type(e).__name__}: {str(e)[:100]}"
        print(f"{k} {result} {detail}", flush=True)
        k += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
