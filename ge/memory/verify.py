"""An independent check of a MemoryPlan against its Plan (shares no code with the assigners or lifetime.py).

Checks:
  1. Placement: constants in weights, graph inputs and outputs in io; every static tensor has an offset;
     offsets are 512-aligned; every tensor lies inside its segment; a tensor marked `alias_of` sits at its
     source's offset, and the output of an alias node sits at its input's offset. An output sharing an
     input's block in place must be declared by the kernel, and nothing may read that input afterwards.
     The inputs of a no-task Concat lie back to back, in order, from its output's offset (the only
     offsets allowed off the 512 grid), and the Concat keeps one byte order (dims before the axis are 1).
  2. Exclusivity in feature_map: group tensors that share a block (alias nodes, no-task Concats: the group
     spans its members' bytes); a group is defined at its
     producers' steps and used there and at every reader, where reading a view (the output of any node that
     may alias) counts as reading its source; a workspace is defined and used at its node's step. Under the
     plan's stream and event order (happens-before: same stream in order, or joined by events), two groups
     may share a byte only when every use of one happens before every definition of the other. On one
     stream this is "disjoint step intervals"; across streams it needs events. Weights, io, atomic and
     variable blocks never share a byte at all (atomic: outputs a kernel accumulates into, zeroed once per
     run; variable: state carried across runs, Options.state_pairs).
  2b. The fixed segment (tasks that keep their load-time addresses, Options.fixed_address_ops) is checked as
     feature_map is, on its own bytes; every feature-map block such a task touches, and its workspaces,
     must be there (else a re-based feature map would move memory the task still points at).
  3. No-reuse nodes (Options.no_reuse_ops / env OP_NO_REUSE_MEM): the block group of each feature-map output
     they compute (an alias node computes nothing: its output stays a view of its source), and each of their
     workspaces, shares no byte with any other item, whatever the times.
Raises MemoryPlanError listing the first problems found.
"""
from __future__ import annotations

from ..errors import GEError
from ..npu.memory import ALIGN
from ..plan import fixed_address_steps
from .lifetime import no_reuse_steps



class MemoryPlanError(GEError):
    pass


def _groups(plan, mem, errors):
    """Union-find: blocks shared through alias nodes and legal in-place pairs; the view relation of
    may-alias nodes. In-place sharing is legal when the kernel declares the (input, output) pair, both have
    one dtype and size, and nothing reads the input's block after that node."""
    block = list(range(len(plan.tensors)))
    view = list(range(len(plan.tensors)))

    def find(p, t):
        while p[t] != t:
            t = p[t]
        return t
    for n in plan.nodes:
        if n.may_alias and n.outputs[0] >= 0 and n.inputs[n.kernel.alias] >= 0:
            src, out = n.inputs[n.kernel.alias], n.outputs[0]
            view[find(view, out)] = find(view, src)
            if n.is_alias:
                block[find(block, out)] = find(block, src)
        if n.no_task:  # the inputs are slices of the output's block
            for t in n.inputs:
                block[find(block, t)] = find(block, n.outputs[0])
    for n in plan.nodes:
        if n.launch is None:
            continue
        for i, o in n.kernel.inplace:
            src = n.inputs[i] if i < len(n.inputs) else -1
            out = n.outputs[o] if o < len(n.outputs) else -1
            if src < 0 or out < 0:
                continue
            ms, mo = mem.tensors[src], mem.tensors[out]
            if mo.alias_of is None or ms.segment != "feature_map" or (ms.segment, ms.offset) != (
                    mo.segment, mo.offset) or find(block, out) == find(block, src):
                continue
            g = find(block, src)
            late = [m.name for m in plan.nodes[n.step + 1:] if any(
                t >= 0 and g in (find(block, t), find(block, find(view, t))) for t in m.inputs)]
            a, b = plan.tensors[src], plan.tensors[out]
            if late or a.dtype != b.dtype or a.nbytes != b.nbytes:
                errors.append(f"node '{n.name}' writes '{b.name}' over '{a.name}' in place, but "
                              + (f"{late[0]!r} reads it later" if late else "their dtype or size differ"))
            block[find(block, out)] = g
    return [find(block, t) for t in range(len(block))], [find(view, t) for t in range(len(view))]


def _check_placement(plan, mem, block, errors):
    size = dict(mem.segments)
    index = {t.name: t.index for t in plan.tensors}
    states = {block[index[n]] for pair in plan.options.state_pairs for n in pair if n in index}
    io = {block[t] for t in (*plan.inputs, *plan.outputs)} - states
    atomic = {block[n.outputs[k]] for n in plan.nodes if n.launch is not None and not n.no_task
              for k in n.launch.atomic} if plan.options.atomic_clean_policy == 0 else set()  # 1: per op
    steps = fixed_address_steps(plan)
    fixed = {block[t] for s in steps for t in (*plan.nodes[s].inputs, *plan.nodes[s].outputs) if t >= 0}
    for s in steps:
        if any(nbytes for _, nbytes in mem.workspaces[s]) and s not in mem.fixed_workspaces:
            errors.append(f"the workspaces of '{plan.nodes[s].name}' (it keeps its addresses) are not in fixed")
    for t, m in zip(plan.tensors, mem.tensors):
        want = ("weights" if t.index in plan.constants else "variable" if block[t.index] in states
                else "io" if block[t.index] in io
                else "atomic" if block[t.index] in atomic and t.is_static else None)
        if want and m.segment != want:
            errors.append(f"tensor '{t.name}' is in {m.segment}, expected {want}")
        if m.segment == "feature_map" and block[t.index] in fixed:
            errors.append(f"tensor '{t.name}' is in feature_map, but a task that keeps its addresses uses it: "
                          "expected fixed")
        if m.segment == "dynamic" or not t.is_static:
            continue
        if m.offset is None:
            errors.append(f"static tensor '{t.name}' has no offset")
            continue
        if m.offset % ALIGN and m.part_of is None:
            errors.append(f"tensor '{t.name}' offset {m.offset} is not {ALIGN}-aligned")
        if m.offset + t.nbytes > size.get(m.segment, 0):
            errors.append(f"tensor '{t.name}' [{m.offset}, {m.offset + t.nbytes}) exceeds segment "
                          f"{m.segment} ({size.get(m.segment, 0)} B)")
        if m.alias_of is not None:
            src = mem.tensors[plan.tensor(m.alias_of).index]
            if (src.segment, src.offset) != (m.segment, m.offset):
                errors.append(f"tensor '{t.name}' is an alias of '{m.alias_of}' but sits elsewhere")
    for n in plan.nodes:
        if n.is_alias and n.outputs[0] >= 0 and n.inputs[n.kernel.alias] >= 0:
            a, b = mem.tensors[n.inputs[n.kernel.alias]], mem.tensors[n.outputs[0]]
            if (a.segment, a.offset) != (b.segment, b.offset):
                errors.append(f"alias node '{n.name}': output '{b.name}' is not at its input's offset")
        if n.no_task:
            _check_concat_in_place(plan, mem, n, errors)


def _check_concat_in_place(plan, mem, n, errors) -> None:
    """A no-task Concat: the inputs, back to back in order, are its output (so the concat is free). That
    needs a Concat, one byte order (every dim before the axis is 1) and distinct feature-map inputs."""
    out = plan.tensors[n.outputs[0]]
    axis = int(n.attrs.get("axis", 0)) % len(out.shape)
    cursor, segment = mem.tensors[out.index].offset, mem.tensors[out.index].segment   # feature_map or io
    if n.op_type != "Concat" or any(d != 1 for d in out.shape[:axis]) or len(set(n.inputs)) != len(n.inputs):
        errors.append(f"node '{n.name}' ({n.op_type}, axis {axis} of {list(out.shape)}) cannot be laid out "
                      "in place")
        return
    for t in n.inputs:
        m = mem.tensors[t]
        if (m.segment, m.offset) != (segment, cursor) or segment not in ("feature_map", "io") \
                or plan.tensors[t].kind != "activation":
            errors.append(f"no-task Concat '{n.name}': input '{m.name}' is at {m.segment}@{m.offset}, "
                          f"expected {segment}@{cursor}")
        cursor += plan.tensors[t].nbytes


def _items(plan, mem, block, view):
    """[group, segment, offset, bytes, defs, uses] per block group and per workspace (defs/uses: steps)."""
    producer = {t: n for n in plan.nodes for t in n.outputs if t >= 0}
    life: dict[int, list] = {}
    for t, m in zip(plan.tensors, mem.tensors):
        if m.segment in ("weights", "io", "atomic", "variable") or (
                m.segment in ("feature_map", "fixed") and t.is_static and t.nbytes):
            g = block[t.index]
            item = life.setdefault(g, [g, m.segment, m.offset, 0, set(), set()])
            if m.offset is not None and item[2] is not None:  # the group's byte span
                end = max(item[2] + item[3], m.offset + (t.nbytes or 0))
                item[2] = min(item[2], m.offset)
                item[3] = end - item[2]
            if t.index in producer:
                item[4].add(producer[t.index].step)
                item[5].add(producer[t.index].step)
    for n in plan.nodes:
        for t in n.inputs:
            if t < 0:
                continue
            for g in {block[t], block[view[t]]}:
                if g in life:
                    life[g][5].add(n.step)
    items = list(life.values())
    for n, ws in zip(plan.nodes, mem.workspaces):
        for k, (off, nbytes) in enumerate(ws):
            if nbytes:
                seg = "fixed" if n.step in mem.fixed_workspaces else "feature_map"
                items.append([("ws", n.step, k), seg, off, nbytes, {n.step}, {n.step}])
    return items


class _Order:
    """Happens-before on plan steps: stream order plus events (a bitset of later steps per step)."""

    def __init__(self, plan):
        n = len(plan.nodes)
        succ = [[] for _ in range(n)]
        last: dict[int, int] = {}
        for node in plan.nodes:
            if node.stream in last:
                succ[last[node.stream]].append(node.step)
            last[node.stream] = node.step
        for e in plan.events:
            succ[e.record_after].append(e.wait_before)
        self.later = [0] * n
        for u in range(n - 1, -1, -1):
            for w in succ[u]:
                self.later[u] |= self.later[w] | (1 << w)

    def all_before(self, uses, defs) -> bool:
        return bool(uses) and all((self.later[u] >> d) & 1 for u in uses for d in defs)


def verify_memory(plan, mem) -> None:
    errors: list[str] = []
    block, view = _groups(plan, mem, errors)
    _check_placement(plan, mem, block, errors)
    items = [i for i in _items(plan, mem, block, view) if i[2] is not None and i[3] > 0]
    order = _Order(plan)
    steps = no_reuse_steps(plan)
    launched = {t: n.step for n in plan.nodes if n.launch is not None for t in n.outputs if t >= 0}
    own = {block[t] for t, s in launched.items() if s in steps} | {
        (s, k) for s in steps for k, (_, nbytes) in enumerate(mem.workspaces[s]) if nbytes}
    for i, a in enumerate(items):
        if a[1] in ("feature_map", "fixed") and a[2] % ALIGN:
            errors.append(f"workspace {a[0]} offset {a[2]} is not aligned")
        for b in items[i + 1:]:
            if a[1] != b[1] or a[2] + a[3] <= b[2] or b[2] + b[3] <= a[2]:
                continue  # different segments or disjoint bytes
            if a[1] == "feature_map" and (_key(a) in own or _key(b) in own):
                errors.append(f"feature_map: {_name(plan, a)} and {_name(plan, b)} share bytes ({a[2]}+{a[3]} "
                              f"vs {b[2]}+{b[3]}) but one belongs to a no-reuse node")
                continue
            if a[1] in ("feature_map", "fixed") and a[4] and b[4] and (
                    order.all_before(a[5], b[4]) or order.all_before(b[5], a[4])):
                continue  # one's last use happens before the other's first definition
            errors.append(f"{a[1]}: {_name(plan, a)} {_span(a)} and {_name(plan, b)} {_span(b)} share bytes "
                          f"({a[2]}+{a[3]} vs {b[2]}+{b[3]}) but neither's uses happen before the other's "
                          f"definitions (steps and streams: {_streams(plan, a)} vs {_streams(plan, b)})")
            if len(errors) > 20:
                break
    if errors:
        raise MemoryPlanError(f"memory plan of '{plan.name}' is invalid ({len(errors)} problems):\n  "
                              + "\n  ".join(errors[:20]))


def _key(item):
    g = item[0]
    return (g[1], g[2]) if isinstance(g, tuple) else g


def _span(item) -> str:
    return f"[{min(item[5], default='-')}, {max(item[5], default='-')}]"


def _streams(plan, item) -> str:
    return "{" + ", ".join(f"{u}:s{plan.nodes[u].stream}" for u in sorted(item[5])[:6]) + "}"


def _name(plan, item) -> str:
    g = item[0]
    return f"workspace {g[2]} of node {plan.nodes[g[1]].name!r}" if isinstance(g, tuple) else \
        f"tensor '{plan.tensors[g].name}'"
