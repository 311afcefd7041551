"""`ge report`: one self-contained HTML page about a compiled plan (and, when given, measured runs).

Sections: the plan summary; the memory map (feature-map blocks over the steps); the stream timeline on the
modelled clock (ge.npu.sim, the plan's streams and events); per-op times, modelled and measured (a traced
run's kernel slices, per op type and the slowest nodes). Everything is inline SVG and CSS: no script, no
server, no CDN.
"""
from __future__ import annotations

import datetime
import platform
from html import escape

from ..npu import compare
from ..npu.sim import tasks_from_plan
from . import svg

CSS = """body{font:14px/1.45 sans-serif;margin:24px auto;max-width:1080px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.note{color:#666;font-size:12px}
svg{display:block;margin:8px 0}table.kv td{text-align:left}"""


def _table(head: list[str] | None, rows: list[list], cls: str = "") -> str:
    h = "<tr>" + "".join(f"<th>{escape(str(c))}</th>" for c in head) + "</tr>" if head else ""
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='{cls}'>{h}{body}</table>"


def _summary(plan, title: str, run: dict | None) -> str:
    mib = lambda n: f"{n / 2**20:.2f} MiB"  # noqa: E731
    weights = sum(a.nbytes for a in plan.constants.values())
    rows = [["model", title], ["nodes", len(plan.nodes)], ["tensors", len(plan.tensors)],
            ["streams / events", f"{plan.num_streams} / {len(plan.events)}"
             + (f" (single stream: {plan.single_stream_reason})" if plan.single_stream_reason else "")],
            ["AI cores (tiling)", plan.options.aicore_num], ["order", plan.options.topo_sorting_mode],
            ["weights", mib(weights)]]
    if plan.memory is not None:
        s = plan.memory.stats
        rows += [["feature map: no reuse", mib(s.no_reuse_bytes)], ["feature map: lower bound", mib(s.lower_bound_bytes)],
                 ["feature map: planned", f"{mib(s.feature_map_bytes)} ({s.ratio:.3f}x bound, by {s.assigner})"]]
    if run:
        rows += [[k, v] for k, v in run.items()]
    return _table(None, rows, "kv")


def _per_op(plan, tasks, result, measured: dict | None) -> str:
    op_of = {n.name: n.op_type for n in plan.nodes}
    modelled: dict[str, float] = {}
    count: dict[str, int] = {}
    for k, t in enumerate(tasks):
        op = op_of[t.name]
        modelled[op] = modelled.get(op, 0.0) + result.end_s[k] - result.start_s[k]
        count[op] = count.get(op, 0) + 1
    real: dict[str, float] = {}
    for name, sec in (measured or {}).items():
        real[op_of.get(name, "?")] = real.get(op_of.get(name, "?"), 0.0) + sec
    key = real if measured else modelled
    ops = sorted(count, key=lambda o: -key.get(o, 0.0))
    total_m, total_r = sum(modelled.values()) or 1.0, sum(real.values()) or 1.0
    head = ["op type", "nodes", "modelled us", "share"] + (["measured ms per run", "share"] if measured else [])
    rows = [[o, count[o], f"{modelled.get(o, 0) * 1e6:.1f}", f"{modelled.get(o, 0) / total_m:.1%}"]
            + ([f"{real.get(o, 0) * 1e3:.3f}", f"{real.get(o, 0) / total_r:.1%}"] if measured else []) for o in ops]
    out = _table(head, rows)
    src = real if measured else modelled
    unit, scale = ("ms", 1e3) if measured else ("us", 1e6)
    out += svg.bars([(o, src.get(o, 0.0) * scale, svg.color(o)) for o in ops[:20]], unit)
    if measured:
        top = sorted(measured.items(), key=lambda kv: -kv[1])[:15]
        out += "<h3>Slowest nodes (measured)</h3>" + _table(
            ["node", "op type", "ms per run", "share"],
            [[n, op_of.get(n, "?"), f"{s * 1e3:.3f}", f"{s / total_r:.1%}"] for n, s in top])
    return out


def render(plan, title: str, measured: dict | None = None, run: dict | None = None) -> str:
    """The page. `measured`: {node name: seconds per run} from traced runs; `run`: extra summary rows."""
    tasks = tasks_from_plan(plan)
    single, multi = compare(plan)
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>ge report: {escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>ge report: {escape(title)}</h1>",
             f"<p class='note'>{when}, {escape(platform.node())}, {escape(platform.processor() or platform.machine())}"
             "; hover a box for details</p>",
             "<h2>Plan</h2>", _summary(plan, title, run)]
    if plan.memory is not None:
        parts += ["<h2>Memory map</h2><p class='note'>Each feature-map block from the step that writes it to its "
                  "last reader (x), at its planned offset (y); workspaces dark red; dashed: the live lower bound.</p>",
                  svg.memory_map(plan)]
    parts += ["<h2>Stream timeline (modelled clock)</h2>",
              f"<p class='note'>The plan on an Ascend-910-like NPU (ge.npu.sim): {multi.makespan_s * 1e6:.1f} us "
              f"on {multi.num_streams} stream(s) with {multi.num_events} events, against "
              f"{single.makespan_s * 1e6:.1f} us on one ({single.makespan_s / max(multi.makespan_s, 1e-12):.2f}x); "
              f"AICORE utilization {multi.aicore_utilization:.1%}.</p>",
              svg.timeline(plan, multi, tasks),
              "<h2>Per-op times</h2>",
              "<p class='note'>" + ("Measured: traced runs on this machine, kernel time per run. " if measured else "")
              + "Modelled: the NPU model's task times.</p>",
              _per_op(plan, tasks, multi, measured), "</body></html>"]
    return "".join(parts)
