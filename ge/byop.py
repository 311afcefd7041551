"""Where the time goes, per op family, on ge and on onnxruntime side by side (`ge bench MODEL --by-op`).

ge's side: traced runs (Session.run_traced), one slice per kernel task. onnxruntime's side: its own node
profile (SessionOptions.enable_profiling), one "<node>_kernel_time" event per node and run. Per node the
median over the runs (first runs dropped as warm-up), summed per family.

A family is what the two engines run as one kind of kernel, named from the op type and the input shapes
(both profiles carry the original NCHW shapes, also for onnxruntime's NCHWc convolutions):
  - fused forms fold back to their op (ge::FusedConv and onnxruntime's FusedConv -> Conv), so an activation
    fused on one side and not on the other shows as time moved between families, which is the point;
  - convolutions split by shape class: "Conv 1x1", "Conv 3x3", "Conv depthwise 3x3", "Conv grouped", since
    those are different kernels on both sides;
  - MatMul with two batched operands is "MatMul batched" (attention); other MatMuls and Gemms are one
    family, "MatMul / Gemm" (onnxruntime turns MatMul + Add into Gemm, ge into FusedMatMul);
  - onnxruntime's NCHWc layout changes (ReorderInput / ReorderOutput) are "Reorder (NCHWc)": ge has none.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np


def family(op_type: str, shapes: list) -> str:
    """The family of one node from its op type and its input shapes (None for an absent input)."""
    op = op_type[5:] if op_type.startswith("Fused") else "Conv" if op_type == "ScaledConv" else op_type
    if op in ("ReorderInput", "ReorderOutput"):
        return "Reorder (NCHWc)"
    if op in ("Conv", "ConvTranspose") and len(shapes) > 1 and shapes[0] and shapes[1] and len(shapes[1]) >= 3:
        x, w = shapes[0], shapes[1]
        groups = x[1] // w[1] if op == "Conv" and w[1] else 1
        k = "x".join(str(d) for d in w[2:])
        if groups > 1 and groups == x[1]:
            return f"{op} depthwise {k}"
        return f"{op} grouped {k}" if groups > 1 else f"{op} {k}"
    if op == "MatMul" and len(shapes) > 1 and all(s is not None and len(s) > 2 for s in shapes[:2]):
        return "MatMul batched"
    if op in ("MatMul", "Gemm"):  # onnxruntime runs MatMul + Add as Gemm; ge as FusedMatMul
        return "MatMul / Gemm"
    return op


@dataclass(frozen=True)
class Family:
    name: str
    ge_ms: float
    ge_nodes: int
    ort_ms: float
    ort_nodes: int

    @property
    def ratio(self) -> float:
        return self.ge_ms / self.ort_ms if self.ort_ms else float("inf")


# A node's time over the runs: the median, or the fastest run (on a loaded machine a slice's wall time holds
# the waits for a core; the fastest of many runs is the nearest to what the node costs)
STATS = {"median": np.median, "fastest": np.min}


def _per_family(durations: dict[str, list[float]], families: dict[str, str], stat: str = "median"
                ) -> dict[str, tuple[float, int]]:
    """{node: [seconds per run]} -> {family: (ms per run, nodes)}, each node's `stat` over its runs."""
    out: dict[str, tuple[float, int]] = {}
    for node, ds in durations.items():
        f = families[node]
        ms, k = out.get(f, (0.0, 0))
        out[f] = (ms + float(STATS[stat](ds)) * 1e3, k + 1)
    return out


def _shapes(plan, node) -> list:
    """A plan node's input shapes as the model gives them (a packed conv weight: its weight_shape)."""
    shapes = [tuple(plan.tensors[t].shape) if t >= 0 else None for t in node.inputs]
    if "weight_shape" in node.attrs:
        shapes[1] = tuple(node.attrs["weight_shape"])
    return shapes


def ge_profile(sess, feeds: dict, runs: int = 10, warmup: int = 2, stat: str = "median"
               ) -> dict[str, tuple[float, int]]:
    """ge's kernel time per family: {family: (ms per run, nodes)} from traced runs (`stat`: STATS)."""
    from .npu import Tracer
    plan = sess.plan
    families = {n.name: family(n.op_type, _shapes(plan, n)) for n in plan.nodes}
    for _ in range(warmup):
        sess.run(None, feeds)
    tracer = Tracer("by-op")
    for _ in range(runs):
        sess.run_traced(feeds, tracer)
    durations: dict[str, list[float]] = {}
    for s in tracer.slices:
        if s.kind == "kernel" and s.name in families:
            durations.setdefault(s.name, []).append(s.end - s.start)
    return _per_family(durations, families, stat)


def ort_profile(model, feeds: dict, threads: int = 0, runs: int = 10, warmup: int = 2, stat: str = "median"
                ) -> dict[str, tuple[float, int]]:
    """onnxruntime's kernel time per family from its own profile (same model, same feeds, `threads` intra-op
    threads, 0 = its default; `stat`: STATS). The profile file is written to a temporary folder and removed."""
    import tempfile

    from .bench import onnxruntime_session
    with tempfile.TemporaryDirectory() as tmp:
        sess = onnxruntime_session(model, threads, profile_prefix=os.path.join(tmp, "ort"))
        for _ in range(warmup + runs):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    durations: dict[str, list[float]] = {}
    families: dict[str, str] = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        node, args = e["name"][:-len("_kernel_time")], e.get("args", {})
        shapes = [next(iter(d.values())) for d in args.get("input_type_shape", [])]
        families[node] = family(args.get("op_name", node), shapes)
        durations.setdefault(node, []).append(e["dur"] * 1e-6)
    durations = {k: v[-runs:] for k, v in durations.items()}   # warm-up runs dropped
    return _per_family(durations, families, stat)


def compare(ge_side: dict, ort_side: dict) -> list[Family]:
    """Families of either side, largest ge time first."""
    names = set(ge_side) | set(ort_side)
    rows = [Family(n, *ge_side.get(n, (0.0, 0)), *ort_side.get(n, (0.0, 0))) for n in names]
    return sorted(rows, key=lambda r: -max(r.ge_ms, r.ort_ms))


def format_families(rows: list[Family]) -> str:
    width = max([len(r.name) for r in rows] + [6])
    ge_total, ort_total = sum(r.ge_ms for r in rows), sum(r.ort_ms for r in rows)
    lines = [f"{'family':{width}s}  {'ge ms':>8s} {'nodes':>5s}  {'ort ms':>8s} {'nodes':>5s}  {'ge/ort':>7s}"
             f"  {'share of ge':>11s}"]
    for r in rows:
        ratio = f"{r.ratio:7.2f}" if r.ort_ms and r.ge_ms else "      -"
        lines.append(f"{r.name:{width}s}  {r.ge_ms:8.3f} {r.ge_nodes:5d}  {r.ort_ms:8.3f} {r.ort_nodes:5d}  {ratio}"
                     f"  {r.ge_ms / ge_total if ge_total else 0:11.1%}")
    lines.append(f"{'kernels':{width}s}  {ge_total:8.3f} {sum(r.ge_nodes for r in rows):5d}  {ort_total:8.3f} "
                 f"{sum(r.ort_nodes for r in rows):5d}  {ge_total / ort_total if ort_total else 0:7.2f}")
    return "\n".join(lines)
