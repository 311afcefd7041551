"""Human-readable memory report for `ge plan`: the headline numbers and one row per assigner tried."""
from __future__ import annotations


def _mib(n: int) -> str:
    return f"{n / 2**20:10.2f} MiB"


def memory_table(plan) -> str:
    mem = plan.memory
    s = mem.stats
    lines = [
        f"plan      {plan.name}: {len(plan.nodes)} nodes, order {plan.options.topo_sorting_mode}"
        f"{', reuse disabled' if plan.options.disable_reuse_memory else ''}",
        f"segments  weights {mem.segments['weights'] / 2**20:.2f} MiB   "
        f"io {mem.segments['io'] / 2**20:.2f} MiB   "
        f"feature_map {mem.segments['feature_map'] / 2**20:.2f} MiB",
        "",
        f"  no reuse     {_mib(s.no_reuse_bytes)}",
        f"  lower bound  {_mib(s.lower_bound_bytes)}   (max live bytes over the order)",
        f"  planned      {_mib(s.feature_map_bytes)}   {s.ratio:.3f}x lower bound, "
        f"{s.reduction:.1%} saved vs no reuse",
        f"  assigner     {s.assigner}   (planned in {s.seconds * 1e3:.1f} ms)",
        "",
        f"  {'assigner':38s} {'planned':>14s}  {'x bound':>7s}",
    ]
    for name, total in sorted(s.totals.items(), key=lambda kv: (kv[1], kv[0])):
        mark = " *" if name == s.assigner else ""
        ratio = total / s.lower_bound_bytes if s.lower_bound_bytes else 1.0
        lines.append(f"  {name:38s} {_mib(total):>14s}  {ratio:7.3f}{mark}")
    return "\n".join(lines)


def plot_memory(plan, path: str) -> None:
    """Each feature-map request as a rectangle: steps across, offsets up (needs matplotlib: the [plot] extra)."""
    from ..extras import require
    require("plot", "drawing the memory plan")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mem = plan.memory
    fig, ax = plt.subplots(figsize=(12, 6))
    for m in mem.tensors:
        if m.segment == "feature_map" and m.alias_of is None and m.bytes and m.first is not None:
            last = min(m.last, len(plan.nodes) - 1)
            ax.add_patch(plt.Rectangle((m.first, m.offset / 2**20), last - m.first + 1, m.bytes / 2**20,
                                       alpha=0.6, ec="k", lw=0.3))
    for n, ws in zip(plan.nodes, mem.workspaces):
        for off, nbytes in ws:
            if nbytes:
                ax.add_patch(plt.Rectangle((n.step, off / 2**20), 1, nbytes / 2**20, alpha=0.6,
                                           color="tab:red"))
    s = mem.stats
    ax.axhline(s.lower_bound_bytes / 2**20, ls="--", color="gray", label="live lower bound")
    ax.set_xlim(0, len(plan.nodes))
    ax.set_ylim(0, max(s.feature_map_bytes, 1) / 2**20 * 1.05)
    ax.set_xlabel("step")
    ax.set_ylabel("offset (MiB)")
    ax.set_title(f"{plan.name}: {s.feature_map_bytes / 2**20:.2f} MiB by {s.assigner} "
                 f"({s.ratio:.3f}x bound); workspaces red")
    ax.legend()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def memory_layout(plan) -> str:
    """One line per node: its outputs and workspaces with segment, offset, bytes and life (golden tests)."""
    mem = plan.memory
    lines = [f"feature_map {mem.segments['feature_map']} B by {mem.stats.assigner}; "
             f"bound {mem.stats.lower_bound_bytes} B; io {mem.segments['io']} B"]
    for n in plan.nodes:
        parts = []
        for t in n.outputs:
            if t < 0:
                continue
            m = mem.tensors[t]
            where = "-" if m.offset is None else f"{m.segment}@{m.offset}+{m.bytes}"
            life = f"[{m.first},{m.last}]" if m.first is not None and m.segment == "feature_map" else ""
            alias = f" ={m.alias_of}" if m.alias_of else f" in {m.part_of}" if m.part_of else ""
            parts.append(f"%{m.name} {where}{life}{alias}")
        parts += [f"ws feature_map@{off}+{nbytes}" for off, nbytes in mem.workspaces[n.step] if nbytes]
        lines.append(f"{n.step:3d} {n.op_type:10s} " + "  ".join(parts) + (" (no task)" if n.no_task else ""))
    return "\n".join(lines)
