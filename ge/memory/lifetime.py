"""Tensor lifetimes on the execution order: the feature-map requests every assigner plans.

The clock is the node's step (its index in the plan's order). Per node, in order (GE's AssignMemoryWithReuse):
  1. free the previous node's workspaces and its outputs that nobody reads;
  2. allocate the node's outputs;
  3. allocate its workspaces (they live for this step only);
  4. release the inputs whose last reader this node is.
So a request lives on the closed interval [begin, end] and two requests may share bytes only when their
intervals are disjoint: a node's outputs and workspaces never overlap its own inputs, but may take what the
previous node's workspaces or any earlier released tensor held.

Steps:
  1. Symbols. An alias node's output (Reshape, Flatten... `PlanNode.is_alias`) is a view of its source: both
     form one symbol placed once, at the root's offset. A dynamic node that *may* alias (its kernel declares
     `alias`) gets no placement, but its readers still extend the source's life: its output may be a view.
  2. Segments per symbol: constants -> weights; graph inputs and anything in a symbol that is a graph
     output -> io (own buffers, never reused: zero copy); symbolic shapes or outputs of dynamic nodes ->
     dynamic (not planned statically, runtime_v2 allocates them); outputs a kernel accumulates into
     (`Launch.atomic`) -> atomic (never reused, zeroed once per run: GE's atomic-clean region); everything
     else -> feature_map.
     2b. With `inplace_memory`, a node's output may join the symbol of an input its kernel declares it may
     overwrite, when this node is that input's last reader (ORT's and GE's in-place reuse).
  3. Life of a feature-map symbol: begin = producer step; end = last step reading any member on the
     producer's stream (the producer step when unread). A reader on another stream (GE's cross-stream rule,
     ARCHITECTURE.md, "Memory"): the block becomes free for the producer stream only at the first node there that the
     plan's events order after the reader (HappensBefore.first_after), so the life ends just before that
     node; with no such node it never ends.
     3b. Multi-stream plans: per other stream s, `Buffer.free_at[s]` is the first step on s that the events
     order after every use (producer and readers); a request on s beginning there may take the bytes
     (beyond GE, whose blocks never change streams). Without such a step, never. A no-task Concat's block
     whose parts are computed on several streams also records where it is first written on each other
     stream (`Buffer.starts`): a request is free for it only when free by then on each.
  4. Requests (`Buffer`) in allocation order: per node its outputs, then its workspaces; sizes rounded up to
     512 B (GE's MEM_ALIGN_SIZE); zero-byte requests are dropped.
No-reuse nodes (`no_reuse_steps`: Options.no_reuse_ops and GE's env OP_NO_REUSE_MEM, node names or op types):
the planner keeps their requests (outputs and workspaces) out of every assigner and gives each its own block
after the reused region (planner.py); in-place sharing never involves them.
`live_lower_bound`: no assigner can do better on this order (max live bytes over steps on one stream; a
clique of pairwise conflicting requests across streams).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import os

import numpy as np

from ..errors import GEError
from ..npu.memory import align_up
from ..plan import CONST, INPUT, fixed_address_steps, static_control_reason
from .conflicts import ConflictIndex
from .variables import check_states

NEVER = 2 ** 62  # the end of a life that never ends
WEIGHTS, FEATURE_MAP, ATOMIC, IO, DYNAMIC = "weights", "feature_map", "atomic", "io", "dynamic"
VARIABLE = "variable"   # state carried across runs (variables.py)
FIXED = "fixed"         # feature map of tasks that keep their addresses (resident; feature_map is refreshable)
PLANNED = (FEATURE_MAP, FIXED)   # the segments whose blocks are reused by lifetime


MAX_OP_NO_REUSE_MEM = 10  # GE's limit on the entries of OP_NO_REUSE_MEM
CLIQUE_STEPS = 32  # multi-stream lower bound: how many of the busiest steps seed a clique



def no_reuse_names(options) -> frozenset[str]:
    """Node names or op types whose outputs and workspaces never share memory: Options.no_reuse_ops plus
    the env OP_NO_REUSE_MEM="name_or_type,..." (GE: at most 10 entries, 2000 characters)."""
    names = {str(n).strip() for n in options.no_reuse_ops if str(n).strip()}
    env = os.environ.get("OP_NO_REUSE_MEM", "")
    if env.strip():
        listed = [e.strip() for e in env.split(",") if e.strip()]
        if len(listed) > MAX_OP_NO_REUSE_MEM or len(env) > 2000:
            raise GEError(f"OP_NO_REUSE_MEM lists {len(listed)} entries ({len(env)} characters); GE allows "
                          f"at most {MAX_OP_NO_REUSE_MEM} entries and 2000 characters")
        names.update(listed)
    return frozenset(names)


def no_reuse_steps(plan) -> frozenset[int]:
    """Steps of the nodes whose name or op type is marked no-reuse (see no_reuse_names)."""
    names = no_reuse_names(plan.options)
    if not names:
        return frozenset()
    return frozenset(n.step for n in plan.nodes if n.name in names or n.op_type in names)


@dataclass(frozen=True, slots=True)
class Buffer:
    """One feature-map request. id = position in allocation order."""
    id: int
    key: tuple        # ("tensor", root tensor index) or ("workspace", step, k)
    size: int         # bytes, 512-aligned
    begin: int
    end: int          # inclusive, on its own stream; NEVER if never released
    stream: int
    late_release: bool  # released at the start of the next node (workspace, unread output)
    # per stream s: the first step on s that runs after every use of this request (its bytes are free for
    # s from there on); () means "one stream": end + 1 on its own, never elsewhere
    free_at: tuple = ()
    # (stream, step) of writers on other streams (a no-task Concat's block: parts computed elsewhere)
    starts: tuple = ()

    def free_for(self, stream: int) -> int:
        if stream == self.stream:
            return self.end + 1
        return self.free_at[stream] if stream < len(self.free_at) else NEVER

    def before(self, other: "Buffer") -> bool:
        """Every use of this request happens before the other one is first written, on every stream."""
        return self.free_for(other.stream) <= other.begin and all(self.free_for(s) <= t for s, t in other.starts)

    def conflicts(self, other: "Buffer") -> bool:
        """True when the two may be alive at once: neither is free for the other's stream by the time the
        other begins (on one stream: the closed intervals overlap)."""
        if self.starts or other.starts:
            return not (self.before(other) or other.before(self))
        return other.begin < self.free_for(other.stream) and self.begin < other.free_for(self.stream)


@dataclass(frozen=True)
class Lifetimes:
    buffers: tuple[Buffer, ...]
    root: Mapping[int, int]       # tensor -> the tensor whose block it shares (itself when none)
    segment: Mapping[int, str]    # tensor -> weights | feature_map | io | dynamic
    first: Mapping[int, int]      # feature-map root tensor -> begin step
    last: Mapping[int, int]       # feature-map root tensor -> end step
    steps: int
    parts: Mapping[int, tuple] = field(default_factory=dict)  # no-task Concat input -> (output, byte offset)


def _symbols(plan):
    """Step 1: placement roots (static aliases) and life roots (any may-alias node)."""
    root = list(range(len(plan.tensors)))
    life = list(range(len(plan.tensors)))
    for node in plan.nodes:
        if not node.may_alias or node.outputs[0] < 0 or node.inputs[node.kernel.alias] < 0:
            continue
        src, out = node.inputs[node.kernel.alias], node.outputs[0]
        life[out] = life[src]
        if node.is_alias:
            root[out] = root[src]
    return root, life


def _segments(plan, root):
    """Step 2: a segment per tensor, decided on its symbol's root."""
    # a static If / Loop's outputs are planned like a task's: the task sink runs it from its tables
    dynamic = {t for n in plan.nodes if n.is_dynamic and (not n.bodies or static_control_reason(plan, n))
               for t in n.outputs if t >= 0}
    dynamic |= {t.index for t in plan.tensors if not t.is_static}
    io_roots = {root[t] for t in plan.outputs} | {root[t] for t in plan.inputs}
    # per-op clean (atomic_clean_policy 1): zeroed right before its producer, an atomic output is reusable
    atomic = {n.outputs[k] for n in plan.nodes if n.launch is not None and not n.no_task
              for k in n.launch.atomic if n.outputs[k] >= 0} if plan.options.atomic_clean_policy == 0 else set()
    states = {t for pair in check_states(plan, root) for t in pair}
    fixed = {root[t] for s in fixed_address_steps(plan) for t in (*plan.nodes[s].inputs, *plan.nodes[s].outputs)
             if t >= 0}
    seg = {}
    for t in plan.tensors:
        r = root[t.index]
        kind = plan.tensors[r].kind
        seg[t.index] = (WEIGHTS if kind == CONST else VARIABLE if r in states
                        else IO if kind == INPUT or r in io_roots
                        else DYNAMIC if r in dynamic else ATOMIC if r in atomic
                        else FIXED if r in fixed else FEATURE_MAP)
    return seg


def _inplace(plan, root, life, seg, no_reuse=frozenset(), laid_out=frozenset()) -> None:
    """Step 2b (option inplace_memory): an output joins the symbol of an input the kernel may overwrite
    (`OpKernel.inplace`) when that input's symbol is read for the last time by this node, on its stream,
    and both are feature-map tensors of one dtype and size."""
    end: dict[int, int] = {}
    readers: dict[int, set] = {}  # life root -> streams reading it
    stream = {t: n.stream for n in plan.nodes for t in n.outputs if t >= 0}
    producer = {t: n.step for n in plan.nodes for t in n.outputs if t >= 0}
    for n in plan.nodes:
        for t in n.inputs:
            if t >= 0:
                end[life[t]] = max(end.get(life[t], -1), n.step)
                readers.setdefault(life[t], set()).add(n.stream)
    for n in plan.nodes:
        if n.launch is None or not n.kernel.inplace or n.step in no_reuse:
            continue
        for i, o in n.kernel.inplace:
            if i >= len(n.inputs) or o >= len(n.outputs) or n.inputs[i] < 0 or n.outputs[o] < 0:
                continue
            src, out = n.inputs[i], n.outputs[o]
            a, b = plan.tensors[src], plan.tensors[out]
            if (seg[src] != FEATURE_MAP or seg[out] != FEATURE_MAP or root[out] != out or life[out] != out
                    or src in laid_out or out in laid_out
                    or a.dtype != b.dtype or a.nbytes != b.nbytes or end.get(life[src]) != n.step
                    or readers.get(life[src]) != {n.stream} or stream.get(root[src]) != n.stream
                    or producer.get(root[src]) in no_reuse):
                continue
            merged_end = end.pop(out, n.step)
            readers[life[src]] |= readers.pop(out, set())
            for t in range(len(root)):  # relabel out's symbol into src's
                if life[t] == out:
                    life[t] = life[src]
                if root[t] == out:
                    root[t] = root[src]
            end[life[src]] = max(n.step, merged_end)
            break  # one shared input per node


def concat_parts(plan) -> dict[int, tuple[int, int]]:
    """Step 1b: input tensor -> (output, byte offset inside it) of every no-task Concat: its producer writes
    it straight into its slice of the Concat's output (ge.memory.continuous picks those Concats)."""
    parts = {}
    for n in plan.nodes:
        if n.no_task:
            offset = 0
            for t in n.inputs:
                parts[t] = (n.outputs[0], offset)
                offset += plan.tensors[t].nbytes
    return parts


def compute_lifetimes(plan) -> Lifetimes:
    root, life = _symbols(plan)
    parts = concat_parts(plan)
    for part, (out, _) in parts.items():  # a part lives as long as the block it is a slice of
        life[:] = [out if x == part else x for x in life]
    seg = _segments(plan, root)
    for part, (out, _) in parts.items():  # a slice of a graph output's io block is io itself
        if seg[out] == IO:
            seg[part] = IO
    if plan.options.inplace_memory:
        _inplace(plan, root, life, seg, no_reuse_steps(plan), set(parts) | {o for o, _ in parts.values()})
    # Step 3: begin / end per feature-map root (a no-task Concat's output: from its first part's producer)
    first, writers = {}, {}
    for node in plan.nodes:
        for t in node.outputs:
            if t < 0 or seg[t] not in PLANNED:
                continue
            r = parts[t][0] if t in parts else t if root[t] == t else None
            if r is not None and not (node.no_task and r == t):
                first.setdefault(r, node.step)
                writers.setdefault(r, []).append(node.step)
    home = {r: plan.nodes[s].stream for r, s in first.items()}  # the stream a block is planned on
    last = dict(first)
    uses = {r: list(w) for r, w in writers.items()}  # every step touching a block (for free_at)
    reads = [(node, t) for node in plan.nodes for t in node.inputs if t >= 0]
    reads += [(plan.nodes[s], r) for r, w in writers.items() for s in w[1:]]  # other parts' producers
    hb = None
    for node, t in reads:
        r = root[life[t]]
        if r not in first:
            continue
        uses[r].append(node.step)
        if node.stream == home[r]:
            end = node.step
        else:
            if hb is None:
                hb = _happens_before(plan)
            free_at = hb.first_after(node.step, home[r])
            end = NEVER if free_at is None else free_at - 1
        last[r] = max(last[r], end)
    # Step 4: requests in allocation order
    read = {root[life[t]] for n in plan.nodes for t in n.inputs if t >= 0}
    streams = 1 + max((n.stream for n in plan.nodes), default=0)
    if streams > 1 and hb is None:
        hb = _happens_before(plan)

    def free_at(steps, own, end):
        """Step 3b: per stream, the first step there after every use (own stream: end + 1)."""
        if streams == 1:
            return ()
        out = []
        for s in range(streams):
            if s == own:
                out.append(end + 1)
                continue
            after = [hb.first_after(x, s) for x in steps]
            out.append(NEVER if None in after else max(after))
        return tuple(out)
    begins: dict[int, list] = {}
    for r, s in first.items():
        begins.setdefault(s, []).append(r)
    buffers = []
    for node in plan.nodes:
        for r in begins.get(node.step, ()):
            if plan.tensors[r].nbytes:
                starts = {}
                for w in writers[r]:
                    starts.setdefault(plan.nodes[w].stream, w)
                starts.pop(node.stream)
                buffers.append(Buffer(len(buffers), ("tensor", r), align_up(plan.tensors[r].nbytes),
                                      first[r], last[r], node.stream, r not in read,
                                      free_at(uses[r], node.stream, last[r]), tuple(starts.items())))
        if node.launch is not None and not node.no_task:
            for k, w in enumerate(node.launch.workspaces):
                if w.nbytes:
                    buffers.append(Buffer(len(buffers), ("workspace", node.step, k), align_up(w.nbytes),
                                          node.step, node.step, node.stream, True,
                                          free_at((node.step,), node.stream, node.step)))
    return Lifetimes(tuple(buffers), MappingProxyType(dict(enumerate(root))), MappingProxyType(seg),
                     MappingProxyType(first), MappingProxyType(last), len(plan.nodes),
                     MappingProxyType(parts))


def _happens_before(plan):
    from ..schedule.events import happens_before
    return happens_before([n.stream for n in plan.nodes], plan.events)


def live_lower_bound(buffers, steps: int) -> int:
    """No assigner can use fewer bytes: the heaviest set of requests that pairwise conflict we find.

    On one stream that is exact: the max over steps of the bytes alive there (a never-ending life lasts to
    the last step). Across streams, requests alive at one step need not conflict (events may order them)
    while requests of parallel branches conflict though their steps are far apart. So at each of the
    busiest steps a greedy clique (largest first, each joining when it conflicts with all taken) starts
    from the requests alive there and then grows with any other request: every clique is a valid bound.
    The requests that may join are the ones conflicting with every member (a ConflictIndex: conflicts.py).
    """
    if not buffers:
        return 0
    delta = np.zeros(steps + 2, np.int64)
    for b in buffers:
        delta[b.begin] += b.size
        delta[min(b.end, steps) + 1] -= b.size
    live = np.cumsum(delta)[:steps + 1]
    if not any(b.free_at for b in buffers):
        return int(live.max())
    by_size = sorted(buffers, key=lambda b: -b.size)
    index = ConflictIndex(buffers)
    for b in buffers:
        index.add(b)
    best, mates = 0, {}  # mates: id(b) -> ids of the requests conflicting with b (asked once)
    for t in np.argsort(-live, kind="stable")[:CLIQUE_STEPS]:
        alive = [b for b in by_size if b.begin <= t <= b.end]
        clique, joinable = [], None  # joinable: the requests conflicting with every one taken (None: any)
        for b in alive + by_size:
            if joinable is None or id(b) in joinable:
                clique.append(b)
                if id(b) not in mates:
                    mates[id(b)] = {id(c) for c in index.conflicting(b)}
                joinable = mates[id(b)] if joinable is None else joinable & mates[id(b)]
        best = max(best, sum(b.size for b in clique))
    return best


def no_reuse_bytes(buffers) -> int:
    return sum(b.size for b in buffers)
