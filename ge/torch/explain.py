"""ge.torch.explain(model, *inputs): what ge did with a torch model, as text (and, with report=DIR, one
`ge report` page per plan).

Step 1: the model runs once under torch.no_grad() through torch.compile with ge's backend wrapped in Dynamo's
        ExplainWithBackend (Dynamo's own graph breaks: Python code Dynamo cannot trace), while the backend
        tells this recorder of every ATen node it leaves to PyTorch (with the reason and source line) and of
        every graph or partition it compiles (backend.WATCHERS).
Step 2: per compiled graph, the ATen ops ge converted and its plan: runtime, nodes, streams and events,
        feature map and weights, gears; `report=DIR` writes ge/report's page of each plan there.
Nothing is cached or kept: Dynamo is reset before and after.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import torch

from ..plan import GearPlans
from .backend import WATCHERS, get_backend
from .partition import source_line
from .registry import op_name


@dataclass
class GraphBreak:
    where: str      # "dynamo" (Python Dynamo does not trace) | "ge" (an ATen op ge leaves to PyTorch)
    op: str
    reason: str
    source: str


@dataclass
class Compiled:
    name: str
    aten_ops: Counter
    runtime: str = ""
    why: str = ""
    nodes: int = 0
    streams: int = 0
    events: int = 0
    feature_map_mib: float = 0.0
    weights_mib: float = 0.0
    gears: list = field(default_factory=list)
    report: str = ""


@dataclass
class Explanation:
    dynamo_graphs: int
    breaks: list[GraphBreak]
    graphs: list[Compiled]

    @property
    def aten_ops(self) -> Counter:
        return sum((g.aten_ops for g in self.graphs), Counter())

    def __str__(self) -> str:
        lines = [f"ge.torch.explain: {self.dynamo_graphs} Dynamo graph(s), {len(self.graphs)} ge plan(s), "
                 f"{len(self.breaks)} graph break(s)"]
        for b in self.breaks:
            lines.append(f"  break ({b.where}) at {b.op}: {b.reason}; from {b.source}")
        for g in self.graphs:
            gears = f", gears {[list(x) for x in g.gears]}" if g.gears else ""
            lines.append(f"  plan {g.name}: runtime_{g.runtime} ({g.why}){gears}; {g.nodes} nodes, "
                         f"{g.streams} stream(s), {g.events} event(s); feature map {g.feature_map_mib:.2f} MiB, "
                         f"weights {g.weights_mib:.2f} MiB" + (f"; report {g.report}" if g.report else ""))
            lines.append("    ATen ops: " + ", ".join(f"{op} x{n}" for op, n in g.aten_ops.most_common()))
        return "\n".join(lines)


class _Recorder:
    def __init__(self):
        self.breaks: list[GraphBreak] = []
        self.made_graphs: list = []

    def broke(self, refused: dict) -> None:
        for node, why in refused.items():
            self.breaks.append(GraphBreak("ge", op_name(node.target), why, source_line(node)))

    def made(self, g) -> None:
        self.made_graphs.append(g)


def explain(model, *inputs, config=None, report: str | os.PathLike | None = None, **kwargs) -> Explanation:
    """Run `model(*inputs, **kwargs)` once through ge's backend and say what ge did (see the module doc)."""
    from torch._dynamo.backends.debugging import ExplainWithBackend
    rec = _Recorder()
    dynamo = ExplainWithBackend(get_backend(config))
    torch._dynamo.reset()
    WATCHERS.append(rec)
    try:
        with torch.no_grad():
            torch.compile(model, backend=dynamo)(*inputs, **kwargs)
    finally:
        WATCHERS.remove(rec)
        torch._dynamo.reset()
    out = dynamo.output()
    breaks = [GraphBreak("dynamo", "python", _short(r.reason), _frame(r)) for r in out.break_reasons]
    graphs = [_compiled(g, report, k) for k, g in enumerate(rec.made_graphs)]
    return Explanation(out.graph_count, breaks + rec.breaks, graphs)


def _short(reason: str) -> str:
    """Dynamo's reason without its hints: the first two lines (what, and its explanation)."""
    lines = [x.strip() for x in str(reason).splitlines() if x.strip()]
    return " ".join(lines[:2])


def _frame(reason) -> str:
    stack = getattr(reason, "user_stack", None) or []
    if not stack:
        return "source line unknown"
    f = stack[-1]
    return f"{f.filename}:{f.lineno}: {(f.line or '').strip()}"


def _compiled(g, report, k: int) -> Compiled:
    ops = Counter(op_name(n.target) for n in g.gm.graph.nodes
                  if n.op == "call_function" and op_name(n.target) != "getitem")
    c = Compiled(g.name, ops)
    sess = g.session
    if sess is None:
        return c
    c.runtime, c.why = sess.runtime, sess.stats().get("runtime_reason", "")
    plan = sess.plan
    c.nodes, c.streams, c.events = len(plan.nodes), plan.num_streams, len(plan.events)
    if plan.memory is not None:
        c.feature_map_mib = plan.memory.stats.feature_map_bytes / 2**20
    c.weights_mib = sum(a.nbytes for a in plan.constants.values()) / 2**20
    if isinstance(sess.gear_plans, GearPlans):
        c.gears = list(sess.gear_plans.gears)
    if report is not None:
        from ..report import render
        os.makedirs(report, exist_ok=True)
        c.report = os.path.join(os.fspath(report), f"{k}_{g.name}.html")
        with open(c.report, "w", encoding="utf-8") as f:
            f.write(render(plan, f"{g.name} (ge.torch)"))
    return c
