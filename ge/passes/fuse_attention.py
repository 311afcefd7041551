"""fuse_attention: the scaled dot-product attention exporters write out op by op becomes one ge::Attention.

    Q' = Transpose..(Q) [* c1]      K' = Transpose..(K) [* c2]      (the head split; K' is K^T)
    S = MatMul(Q', K') [/ c3 | * c3] [+ mask]
    P = Softmax[axis=-1](S)  [then Where(IsNaN(P), 0, P): the exporter's guard for rows masked everywhere]
    Y = MatMul(P, Transpose..(V)) [-> Transpose[0, 2, 1, 3]]       (the head merge)
        -> Y = ge::Attention[scale = c1 c2 / c3, q_perm, k_perm, v_perm, y_perm, nan_guard](Q, K, V, mask)

The forms of the committed exports (tests/fixtures/transformers): torch.onnx's TorchScript exporter on
transformers' SDPA path (BERT, GPT-2: sqrt of the scale on Q and on K^T, the mask added, the NaN guard),
the eager path (scores / sqrt(d), the mask added). One node: attention.py's attention_blocks, Q K^T and P V
as GEMM blocks with the softmax on the tile between them, no S or P written to memory, no head-split or
head-merge copies (Q, K, V and Y read and written through the perms). onnxruntime's Attention /
MultiHeadAttention fusions and GE's FlashAttentionScore are the anchors.

Algorithm, one sweep in order:
  Step 1: match from each Softmax over the last axis of a 4-D float tensor: forwards the optional guard
          and the MatMul with V (and a head-merge Transpose keeping the head dim last), backwards the
          optional mask Add (a float mask whose last dim is not a broadcast 1), the optional scalar Div /
          Mul and the Q K^T MatMul; from each MatMul operand back through Transposes (their perms
          composed) and scalar Muls (their product is the scale) to the tensors read. Every removed
          value is read only inside the pattern and is no graph output; a Transpose or Mul with other
          readers stays for them (read through, not removed).
  Step 2: replace the matched nodes by one ge::Attention named after the Softmax, keeping the output name.
Limits: the dynamo exporter's K^T (Reshape to 3-D, Transpose, Reshape back) and a boolean mask in a Where
stay op by op; the operands' head dim must be the last axis in memory (it is, after every head split).
Invariant: outputs change by float rounding only (the scale is applied once to Q K^T, not to Q and K).
"""
from __future__ import annotations

from ..kernels.registry import is_registered
from .pattern import is_float, only_reader, producer, replace_pattern


def _scalar(v) -> float | None:
    c = None if v is None else v.const
    return float(c.reshape(())) if c is not None and c.size == 1 and c.dtype.kind == "f" else None


def _walk(graph, v, reader, cur, nodes):
    """Back from `v` (read by `reader`) through Transposes and scalar Mul/Div: (tensor, perm, scale).
    `cur[i]`: the axis of the current tensor holding logical axis i. Nodes whose outputs only the chain
    reads go to `nodes` until the first one read elsewhere."""
    scale, owned = 1.0, True
    while v.producer is not None and v.producer.domain == "" and v not in graph.inputs:
        p = v.producer
        owned = owned and only_reader(graph, v, reader)
        if p.op_type == "Transpose" and len(p.inputs) == 1 and v.shape is not None and len(v.shape) == 4:
            perm = list(p.attrs.get("perm", [3, 2, 1, 0]))
            cur, nxt = [perm[c] for c in cur], p.inputs[0]
        elif p.op_type in ("Mul", "Div") and len(p.inputs) == 2:
            c = _scalar(p.inputs[1])
            if c is not None:
                scale, nxt = (scale * c if p.op_type == "Mul" else scale / c), p.inputs[0]
            elif p.op_type == "Mul" and _scalar(p.inputs[0]) is not None:
                scale, nxt = scale * _scalar(p.inputs[0]), p.inputs[1]
            else:
                break
        else:
            break
        if owned:
            nodes.append(p)
        v, reader = nxt, p
    return v, cur, scale


def _operand(graph, v, reader, cur, nodes):
    root, perm, scale = _walk(graph, v, reader, cur, nodes)
    ok = root.shape is not None and len(root.shape) == 4 and perm[3] == 3 and is_float(root) and scale != 0
    return (root, perm, scale) if ok else None


def _forward(graph, sm):
    """(guard nodes, P V MatMul, head-merge Transpose or None) after the Softmax; else None."""
    p = sm.outputs[0]
    guard = []
    users = {u.op_type: u for u in p.users}
    if len(p.users) == 2 and set(users) == {"IsNaN", "Where"} and p not in graph.outputs:
        isnan, where = users["IsNaN"], users["Where"]
        zero = _scalar(where.inputs[1])
        if not (isnan.domain == where.domain == "" and only_reader(graph, isnan.outputs[0], where) and
                where.inputs[0] is isnan.outputs[0] and where.inputs[2] is p and zero == 0.0):
            return None
        guard, p = [isnan, where], where.outputs[0]
    if len(p.users) != 1 or p in graph.outputs:
        return None
    pv = p.users[0]
    if pv.op_type != "MatMul" or pv.domain != "" or pv.inputs[0] is not p or pv.inputs[1] is p:
        return None
    out, merge = pv.outputs[0], None
    t = out.users[0] if len(out.users) == 1 and out not in graph.outputs else None
    if t is not None and t.op_type == "Transpose" and t.domain == "" and list(t.attrs.get("perm", []))[3:] == [3]:
        merge = t
    return guard, pv, merge


def _backward(graph, sm):
    """(nodes, Q K^T MatMul, mask or None, score scale) before the Softmax; else None."""
    x, nodes, mask = sm.inputs[0], [], None
    add = producer(x, ("Add",))
    if add is not None and only_reader(graph, x, sm) and len(add.inputs) == 2:
        for s, m in (add.inputs, add.inputs[::-1]):
            if producer(s, ("MatMul", "Mul", "Div")) is not None and s is not m:
                mask, x, nodes = m, s, [add]
                break
    reader = nodes[0] if nodes else sm
    scale = 1.0
    p = producer(x, ("Mul", "Div"))
    if p is not None and only_reader(graph, x, reader) and _scalar(p.inputs[1]) is not None:
        c = _scalar(p.inputs[1])
        scale = c if p.op_type == "Mul" else 1.0 / c
        nodes.append(p)
        x, reader = p.inputs[0], p
    qk = producer(x, ("MatMul",))
    if qk is None or not only_reader(graph, x, reader) or scale == 0:
        return None
    if mask is not None and (not is_float(mask) or mask.dtype != x.dtype or mask.shape is None or
                             not 1 <= len(mask.shape) <= 4 or mask.shape[-1] == 1):
        return None
    return nodes + [qk], qk, mask, scale


def _match(graph, sm):
    x = sm.inputs[0]
    axis = sm.attrs.get("axis", -1 if graph.opset >= 13 else 1)
    if x is None or x.shape is None or len(x.shape) != 4 or axis not in (-1, 3) or not is_float(x):
        return None
    fwd, bwd = _forward(graph, sm), _backward(graph, sm)
    if fwd is None or bwd is None:
        return None
    (guard, pv, merge), (before, qk, mask, scale) = fwd, bwd
    nodes = before + [sm] + guard + [pv] + ([merge] if merge else [])
    q = _operand(graph, qk.inputs[0], qk, [0, 1, 2, 3], nodes)
    k = _operand(graph, qk.inputs[1], qk, [0, 1, 3, 2], nodes)   # the MatMul reads K^T
    v = _operand(graph, pv.inputs[1], pv, [0, 1, 2, 3], nodes)
    if q is None or k is None or v is None or qk.inputs[0] is qk.inputs[1]:
        return None
    if len({id(n) for n in nodes}) != len(nodes) or not (q[0].dtype == k[0].dtype == v[0].dtype == x.dtype):
        return None
    y_perm = list(merge.attrs["perm"]) if merge else [0, 1, 2, 3]
    attrs = {"scale": scale * q[2] * k[2], "q_perm": q[1], "k_perm": k[1], "v_perm": v[1], "y_perm": y_perm,
             "nan_guard": int(bool(guard))}
    return nodes, [q[0], k[0], v[0], mask], attrs, (merge or pv)


def fuse_attention(graph) -> bool:
    if not is_registered("Attention", "ge"):
        return False
    changed = False
    for sm in list(graph.nodes):
        if sm.op_type != "Softmax" or sm.domain != "" or sm not in graph.nodes:
            continue
        # Step 1: match
        found = _match(graph, sm)
        if found is None:
            continue
        nodes, inputs, attrs, last = found
        # Step 2: one node
        graph.opsets.setdefault("ge", 1)
        replace_pattern(graph, nodes, "Attention", inputs, attrs, "ge", name=sm.name, results=list(last.outputs))
        changed = True
    return changed
