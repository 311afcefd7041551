"""Inline SVG for the report: the memory map and the stream timeline, drawn by hand (no matplotlib, no
script, no CDN: the page opens anywhere, offline)."""
from __future__ import annotations

import colorsys
import hashlib
from html import escape

W, LANE, LEFT = 960, 26, 70   # drawing width, timeline lane height, room for lane labels


def color(key: str) -> str:
    """A stable, readable colour per op type."""
    h = int(hashlib.md5(key.encode()).hexdigest()[:6], 16) / 0xFFFFFF
    r, g, b = colorsys.hls_to_rgb(h, 0.62, 0.55)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _rect(x, y, w, h, fill, tip, extra="") -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.6):.1f}" height="{max(h, 0.6):.1f}" fill="{fill}" '
            f'{extra}><title>{escape(tip)}</title></rect>')


def _frame(height: int, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W + LEFT + 10}" height="{height}" role="img" '
            f'aria-label="{escape(label)}" font-family="sans-serif" font-size="11">' + "".join(body) + "</svg>")


def memory_map(plan, height: int = 320) -> str:
    """Feature-map blocks: steps across, offsets up; workspaces dark red; the live lower bound dashed."""
    mem = plan.memory
    steps = max(len(plan.nodes), 1)
    top = max(mem.stats.feature_map_bytes, 1)
    sx, sy = W / steps, (height - 30) / top
    y0 = height - 20
    body = [f'<line x1="{LEFT}" y1="{y0}" x2="{LEFT + W}" y2="{y0}" stroke="#888"/>']
    ops = {t: n.op_type for n in plan.nodes for t in n.outputs if t >= 0}
    for m in mem.tensors:
        if m.segment == "feature_map" and m.alias_of is None and m.bytes and m.first is not None:
            last = min(m.last, steps - 1)
            body.append(_rect(LEFT + m.first * sx, y0 - (m.offset + m.bytes) * sy, (last - m.first + 1) * sx,
                              m.bytes * sy, color(ops.get(m.index, "?")),
                              f"{m.name} ({ops.get(m.index, '?')}): {m.bytes / 2**20:.3f} MiB at "
                              f"{m.offset / 2**20:.3f} MiB, steps {m.first}-{m.last}", 'stroke="#333" stroke-width="0.3"'))
    for n, ws in zip(plan.nodes, mem.workspaces):
        for off, nbytes in ws:
            if nbytes:
                body.append(_rect(LEFT + n.step * sx, y0 - (off + nbytes) * sy, sx, nbytes * sy, "#8b0000",
                                  f"workspace of {n.name} ({n.op_type}): {nbytes / 2**20:.3f} MiB"))
    yb = y0 - mem.stats.lower_bound_bytes * sy
    body.append(f'<line x1="{LEFT}" y1="{yb:.1f}" x2="{LEFT + W}" y2="{yb:.1f}" stroke="#555" '
                f'stroke-dasharray="5,4"><title>live lower bound</title></line>')
    body += [f'<text x="{LEFT - 6}" y="{y0}" text-anchor="end">0</text>',
             f'<text x="{LEFT - 6}" y="{y0 - top * sy + 10:.1f}" text-anchor="end">{top / 2**20:.1f} MiB</text>',
             f'<text x="{LEFT + W / 2}" y="{height - 4}" text-anchor="middle">step (execution order)</text>']
    return _frame(height, body, "memory map")


def timeline(plan, result, tasks) -> str:
    """One lane per stream on the modelled clock (ge.npu.sim): a box per task, coloured by op type."""
    streams = sorted({t.stream for t in tasks})
    lane = {s: k for k, s in enumerate(streams)}
    end = max(result.makespan_s, 1e-12)
    sx = W / end
    height = LANE * len(streams) + 34
    body = []
    for s in streams:
        y = 6 + lane[s] * LANE
        body.append(f'<text x="{LEFT - 6}" y="{y + LANE / 2 + 4}" text-anchor="end">stream {s}</text>')
        body.append(f'<line x1="{LEFT}" y1="{y + LANE - 2}" x2="{LEFT + W}" y2="{y + LANE - 2}" stroke="#ddd"/>')
    ops = {n.name: n.op_type for n in plan.nodes}
    for k, t in enumerate(tasks):
        a, b = result.start_s[k], result.end_s[k]
        if b <= a:
            continue
        op = ops.get(t.name, "?")
        body.append(_rect(LEFT + a * sx, 6 + lane[t.stream] * LANE, (b - a) * sx, LANE - 6, color(op),
                          f"{op} {t.name}: {(b - a) * 1e6:.1f} us from {a * 1e6:.1f} us ({t.engine}, "
                          f"block_dim {t.block_dim})"))
    y = height - 8
    body += [f'<text x="{LEFT}" y="{y}">0</text>',
             f'<text x="{LEFT + W}" y="{y}" text-anchor="end">{end * 1e6:.1f} us (modelled)</text>']
    return _frame(height, body, "stream timeline")


def bars(rows: list[tuple[str, float, str]], unit: str) -> str:
    """Horizontal bars: (label, value, colour) largest first."""
    top = max((v for _, v, _ in rows), default=1.0) or 1.0
    height = 18 * len(rows) + 8
    body = []
    for k, (name, v, fill) in enumerate(rows):
        y = 4 + 18 * k
        body.append(f'<text x="{LEFT + 60}" y="{y + 12}" text-anchor="end">{escape(name)}</text>')
        body.append(_rect(LEFT + 66, y, (W - 200) * v / top, 14, fill, f"{name}: {v:.3f} {unit}"))
        body.append(f'<text x="{LEFT + 70 + (W - 200) * v / top:.1f}" y="{y + 12}">{v:.3f} {unit}</text>')
    return _frame(height, body, "per-op times")
