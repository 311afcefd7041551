"""Attention (opsets 23-25): softmax(Q K^T * scale + bias) V, one query row at a time, with its KV cache.

The node as the spec builds it: Q, K, V in 4-D [batch, heads, seq, head] or 3-D [batch, seq, heads*head]
(read through strides, no transposes); past_key/past_value concatenated before K/V into present_key/
present_value (4-D; workspaces when the node does not ask for them); group-query attention (q head h reads
kv head h // (q_heads / kv_heads)); the additive bias of each score built on the fly from the mask (float:
added; bool: 0 or -inf; past its last column: -inf), the causal frontier j <= i + offset and the sliding
window around i + offset (offset: past length, or nonpad_kv_seqlen[b] - q_seq, or 0), and keys past
nonpad_kv_seqlen[b]; softcap before the bias. A row whose bias is -inf everywhere gives zeros (Y and
the softmax output mode). qk_matmul_output: mode 0/1 the scaled (softcapped) scores, 2 with the bias,
3 the probabilities.
Q and K are each scaled by sqrt(scale) before their dot product, as the reference does, so scores keep
its rounding. One row's scores live in a workspace (the general path, `attention`).

The plain case (no past, no nonpad_kv_seqlen, no qk output, no softcap or window, the mask covering every
key) and ge::Attention (fuse_attention's node for an exporter's decomposed attention) run `attention_blocks`:
tasks of (batch, head, block of QB query rows), cut over the AI cores; per task S = Q K^T and Y = P V are
two calls of gemm.py's gemm_block (K^T copied once per (batch, kv head) into the block's workspace; Q, V and
Y read and written in place through their row strides), the softmax on the S tile between them (scale,
additive or boolean mask, causal frontier). Every element is computed by the same chain whatever the task
split, so results are bitwise equal for every core count. ge::Attention reads Q, K and V through a layout
permutation (q_perm, k_perm, v_perm: the input axes holding batch, head, seq and head dim; the head dim
last in memory), so the exporter's head-split Transposes need not run, and writes Y through y_perm (the
head-merge Transpose). nan_guard: probabilities that are NaN become 0, the exporter's
Where(IsNaN(Softmax), 0, Softmax); without it a row masked everywhere gives NaN, as Softmax does.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .fastmath import exp as fast_exp
from .gemm import MIN_BLOCK_MACS, gemm_block, workspace
from .reduce import U
from .registry import KernelContext, Launch, TensorSpec, register
from .softmax import _row_fold
from .tiling import block_dim_for, block_range

_NEG = -np.inf


@njit(inline="always")
def _mask_bias(m, zero):
    """A mask value as an additive bias: bool True 0 and False -inf; a float as it is."""
    if isinstance(m, (bool, np.bool_)):
        return zero if m else type(zero)(_NEG)
    return type(zero)(m)


@njit(nogil=True, cache=True, error_model="numpy")
def _attention(q, k, v, mask, pk_in, pv_in, nonpad, y, pk, pv, qk, row, dims, qs, ks, vs, ys, ms, flags, scale,
               softcap):
    """dims: B, Hq, Hkv, Sq, Skv, P (past), dh, dv, Lm (mask columns), left, right, mode;
    qs/ks/vs/ys: (batch, head, seq) strides; ms: the mask's 4 broadcast strides;
    flags: has_mask, has_past, has_nonpad, causal, has_qk."""
    B, Hq, Hkv, Sq, Skv, P, dh, dv, Lm, left, right, mode = (dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                                            dims[6], dims[7], dims[8], dims[9], dims[10], dims[11])
    has_mask, has_past, has_nonpad, causal, has_qk = flags[0], flags[1], flags[2], flags[3], flags[4]
    L = P + Skv
    zero = y.dtype.type(0)
    # present_key / present_value: [B, Hkv, L, d]
    for b in range(B):
        for h in range(Hkv):
            for j in range(L):
                ok, ov = ((b * Hkv + h) * L + j) * dh, ((b * Hkv + h) * L + j) * dv
                if j < P:
                    sk, sv = ((b * Hkv + h) * P + j) * dh, ((b * Hkv + h) * P + j) * dv
                    pk[ok:ok + dh] = pk_in[sk:sk + dh]
                    pv[ov:ov + dv] = pv_in[sv:sv + dv]
                else:
                    sk = b * ks[0] + h * ks[1] + (j - P) * ks[2]
                    sv = b * vs[0] + h * vs[1] + (j - P) * vs[2]
                    pk[ok:ok + dh] = k[sk:sk + dh]
                    pv[ov:ov + dv] = v[sv:sv + dv]
    sc = y.dtype.type(math.sqrt(scale))
    cap = y.dtype.type(softcap)
    group = Hq // Hkv
    for b in range(B):
        offset = P if has_past else (nonpad[b] - Sq if has_nonpad else 0)
        limit = min(nonpad[b], L) if has_nonpad else L
        for h in range(Hq):
            hk = h // group
            for i in range(Sq):
                qo = b * qs[0] + h * qs[1] + i * qs[2]
                masked_row = True
                top = _NEG
                for j in range(L):
                    ko = ((b * Hkv + hk) * L + j) * dh
                    s = zero
                    for t in range(dh):
                        s += (q[qo + t] * sc) * (pk[ko + t] * sc)
                    if softcap > 0:
                        s = cap * math.tanh(s / cap)
                    bias = zero
                    if has_mask:
                        if j < Lm:
                            m = mask[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]]
                            bias = _mask_bias(m, zero)
                        else:
                            bias = _NEG
                    if causal and j > i + offset:
                        bias = _NEG
                    if left >= 0 and i + offset - j > left or right >= 0 and j - (i + offset) > right:
                        bias = _NEG
                    if j >= limit:
                        bias = _NEG
                    if bias != _NEG:
                        masked_row = False
                    if has_qk and mode < 2:
                        qk[((b * Hq + h) * Sq + i) * L + j] = s
                    s = s + bias
                    if has_qk and mode == 2:
                        qk[((b * Hq + h) * Sq + i) * L + j] = s
                    row[j] = s
                    top = max(top, s)
                total = zero
                if top == _NEG:
                    top = zero
                for j in range(L):
                    e = y.dtype.type(math.exp(row[j] - top))
                    row[j] = e
                    total += e
                if total == 0:
                    total = y.dtype.type(1)
                for j in range(L):
                    row[j] = zero if masked_row else row[j] / total
                    if has_qk and mode == 3:
                        qk[((b * Hq + h) * Sq + i) * L + j] = row[j]
                yo = b * ys[0] + h * ys[1] + i * ys[2]
                y[yo:yo + dv] = zero
                for j in range(L):
                    p = row[j]
                    vo = ((b * Hkv + hk) * L + j) * dv
                    for t in range(dv):
                        y[yo + t] += p * pv[vo + t]


@njit(nogil=True, cache=True)
def attention(q, k, v, mask, pk_in, pv_in, y, pk, pv, qk, row, nonpad, dims, qs, ks, vs, ys, ms, flags, scale,
              softcap):
    """A node without nonpad_kv_seqlen (the int64 workspace `nonpad` stands in, never read)."""
    _attention(q, k, v, mask, pk_in, pv_in, nonpad, y, pk, pv, qk, row, dims, qs, ks, vs, ys, ms, flags, scale,
               softcap)


@njit(nogil=True, cache=True)
def attention_nonpad(q, k, v, mask, pk_in, pv_in, nonpad, y, pk, pv, qk, row, unused, dims, qs, ks, vs, ys, ms,
                     flags, scale, softcap):
    """A node with nonpad_kv_seqlen (int64 [batch])."""
    _attention(q, k, v, mask, pk_in, pv_in, nonpad, y, pk, pv, qk, row, dims, qs, ks, vs, ys, ms, flags, scale,
               softcap)


def _dims(ctx: KernelContext):
    q, k, v = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    if q.dtype not in (np.float32, np.float64) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ctx.error(f"Q, K and V must all be float32 or float64, got {q.dtype}, {k.dtype}, {v.dtype}")
    rank = len(q.shape)
    if rank not in (3, 4) or len(k.shape) != rank or len(v.shape) != rank:
        raise ctx.error(f"Q, K and V must all be 3-D or all 4-D, got {q.shape}, {k.shape}, {v.shape}")
    if rank == 4:
        B, Hq, Sq, dh = q.shape
        _, Hkv, Skv, dk = k.shape
        dv = v.shape[3]
        qs, ks, vs = (Hq * Sq * dh, Sq * dh, dh), (Hkv * Skv * dh, Skv * dh, dh), (Hkv * Skv * dv, Skv * dv, dv)
        ok = k.shape[0] == B and v.shape[:3] == (B, Hkv, Skv)
    else:
        Hq, Hkv = int(ctx.attr("q_num_heads", 0)), int(ctx.attr("kv_num_heads", 0))
        if Hq <= 0 or Hkv <= 0:
            raise ctx.error("3-D inputs need the attributes q_num_heads and kv_num_heads")
        B, Sq, hq = q.shape
        _, Skv, hk = k.shape
        dh, dk, dv = hq // Hq, hk // Hkv, v.shape[2] // Hkv
        qs, ks, vs = (Sq * hq, dh, hq), (Skv * hk, dk, hk), (Skv * v.shape[2], dv, v.shape[2])
        ok = hq % Hq == 0 and hk % Hkv == 0 and v.shape[2] % Hkv == 0 and k.shape[0] == B and v.shape[:2] == (B, Skv)
    if not ok or dk != dh or Hq % Hkv:
        raise ctx.error(f"Q {q.shape}, K {k.shape} and V {v.shape} do not fit together (q heads a multiple of kv "
                        "heads, equal batch, kv length and q/k head size)")
    P = 0
    if ctx.has(4) or ctx.has(5):
        if not (ctx.has(4) and ctx.has(5)):
            raise ctx.error("past_key and past_value must be given together")
        P = ctx.inputs[4].shape[2]
        if tuple(ctx.inputs[4].shape) != (B, Hkv, P, dh) or tuple(ctx.inputs[5].shape) != (B, Hkv, P, dv):
            raise ctx.error(f"past_key {ctx.inputs[4].shape} / past_value {ctx.inputs[5].shape} are not "
                            f"[{B}, {Hkv}, past, {dh}] / [{B}, {Hkv}, past, {dv}]")
    return rank, B, Hq, Hkv, Sq, Skv, P, dh, dv, qs, ks, vs


def _outputs(ctx, rank, B, Hq, Hkv, Sq, Skv, P, dh, dv):
    dt, L = ctx.inputs[0].dtype, P + Skv
    y = (B, Hq, Sq, dv) if rank == 4 else (B, Sq, Hq * dv)
    return [TensorSpec(s, dt) for s in (y, (B, Hkv, L, dh), (B, Hkv, L, dv), (B, Hq, Sq, L))]


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    d = _dims(ctx)
    if ctx.n_outputs > 4:
        raise ctx.error(f"Attention has at most 4 outputs, the node declares {ctx.n_outputs}")
    return _outputs(ctx, *d[:9])[:ctx.n_outputs]


def _mask_strides(ctx, B, Hq, Sq):
    """(columns, 4 strides) of the mask broadcast to [B, Hq, Sq, columns] (right-aligned)."""
    shape = tuple(ctx.inputs[3].shape)
    if not 1 <= len(shape) <= 4:
        raise ctx.error(f"attn_mask of rank {len(shape)}: ranks 1-4 broadcast to [batch, heads, q, kv]")
    full = (1,) * (4 - len(shape)) + shape
    strides, s = [0, 0, 0, 0], 1
    for a in range(3, -1, -1):
        if full[a] != 1 and a < 3 and full[a] != (B, Hq, Sq)[a]:
            raise ctx.error(f"attn_mask {shape} does not broadcast to [{B}, {Hq}, {Sq}, kv]")
        strides[a] = s if full[a] != 1 or a == 3 else 0
        s *= full[a]
    return full[3], np.array(strides, np.int64)


def _prepare(ctx: KernelContext) -> Launch:
    rank, B, Hq, Hkv, Sq, Skv, P, dh, dv, qs, ks, vs = _dims(ctx)
    plain = not (P or ctx.has(6) or ctx.n_outputs > 1 or float(ctx.attr("softcap", 0.0)) > 0 or
                 int(ctx.attr("left_window_size", -1)) >= 0 or int(ctx.attr("right_window_size", -1)) >= 0)
    if plain and (not ctx.has(3) or tuple(ctx.inputs[3].shape)[-1:] == (Skv,)):
        ys = (Hq * Sq * dv, Sq * dv, dv) if rank == 4 else (Sq * Hq * dv, dv, Hq * dv)
        return _blocks_launch(ctx, B, Hq, Hkv, Sq, Skv, dh, dv, qs, ks, vs, ys,
                              float(ctx.attr("scale", 1.0 / math.sqrt(dh))), int(ctx.attr("is_causal", 0)), True)
    specs = _outputs(ctx, rank, B, Hq, Hkv, Sq, Skv, P, dh, dv)
    dt, L = ctx.inputs[0].dtype, P + Skv
    ys = (Hq * Sq * dv, Sq * dv, dv) if rank == 4 else (Sq * Hq * dv, dv, Hq * dv)
    Lm, ms = (0, np.zeros(4, np.int64))
    if ctx.has(3):
        if ctx.inputs[3].dtype not in (dt, np.bool_):
            raise ctx.error(f"attn_mask has dtype {ctx.inputs[3].dtype}: bool or {dt}")
        Lm, ms = _mask_strides(ctx, B, Hq, Sq)
        if Lm > L:
            raise ctx.error(f"attn_mask has {Lm} columns, more than the {L} keys")
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise ctx.error(f"qk_matmul_output_mode must be 0-3, got {mode}")
    dims = np.array([B, Hq, Hkv, Sq, Skv, P, dh, dv, Lm, int(ctx.attr("left_window_size", -1)),
                     int(ctx.attr("right_window_size", -1)), mode], np.int64)
    flags = np.array([ctx.has(3), ctx.has(4), ctx.has(6), int(ctx.attr("is_causal", 0)), ctx.n_outputs > 3],
                     np.int64)
    scale = float(ctx.attr("scale", 1.0 / math.sqrt(dh)))
    missing = [TensorSpec((specs[k].size if k < 3 else 1,), dt) for k in range(ctx.n_outputs, 4)]
    ws = (*missing, TensorSpec((max(L, 1),), dt))
    args = (dims, np.array(qs, np.int64), np.array(ks, np.int64), np.array(vs, np.int64), np.array(ys, np.int64),
            ms, flags, scale, float(ctx.attr("softcap", 0.0)))
    inputs = (0, 1, 2, *[(i if ctx.has(i) else 0) for i in (3, 4, 5)])
    if ctx.has(6):
        if tuple(ctx.inputs[6].shape) != (B,) or ctx.inputs[6].dtype != np.int64:
            raise ctx.error(f"nonpad_kv_seqlen must be int64 [{B}], got {ctx.inputs[6].dtype}{ctx.inputs[6].shape}")
        if P:
            raise ctx.error("nonpad_kv_seqlen cannot be combined with past_key/past_value")
        return Launch(attention_nonpad, args, (*ws, TensorSpec((1,), np.int64)), inputs=inputs + (6,))
    return Launch(attention, args, (*ws, TensorSpec((B,), np.int64)), inputs=inputs)


register("Attention", infer=_infer, since=23)(_prepare)


# -- attention_blocks: the GEMM-shaped path ---------------------------------------------------------

QB = 64  # query rows per task: S is a QB x Skv tile


@njit(nogil=True, cache=True, error_model="numpy")
def _softmax_rows(s, rows, L, i0, mask, mo, ms, has_mask, causal, offset, guard, scale):
    """Row r of s[:rows*L] (query i0 + r): p = softmax(s * scale + bias) in place; bias from the mask at
    mask[mo + i*ms[2] + j*ms[3]] and the causal frontier j <= i + offset. Each step a loop of its own that
    LLVM vectorizes (one scalar loop with the mask, frontier and max inside it took 3x the two GEMMs), the
    max and the sum as softmax.py's rows fold them, so probabilities are Softmax's own bits."""
    zero = s.dtype.type(0)
    sc = s.dtype.type(scale)
    neg = s.dtype.type(_NEG)
    uL = U(L)
    for r in range(rows):
        o = U(r * L)
        i = i0 + r
        if has_mask:
            mb, st = U(mo + i * ms[2]), U(ms[3])
            if st == 1:
                for j in range(uL):
                    s[o + j] = s[o + j] * sc + _mask_bias(mask[mb + j], zero)
            else:
                for j in range(uL):
                    s[o + j] = s[o + j] * sc + _mask_bias(mask[mb + j * st], zero)
        else:
            for j in range(uL):
                s[o + j] = s[o + j] * sc
        if causal:
            for j in range(max(0, i + offset + 1), L):
                s[o + U(j)] = neg
        top = _row_fold(s, o, uL, True)
        for j in range(uL):
            s[o + j] = fast_exp(s[o + j] - top)
        inv = s.dtype.type(1) / _row_fold(s, o, uL, False)
        if guard:
            for j in range(uL):
                p = s[o + j] * inv
                s[o + j] = zero if p != p else p
        else:
            for j in range(uL):
                s[o + j] *= inv


@njit(nogil=True, cache=True)
def _transpose_k(k, kb, ks2, kt, Skv, dh):
    """kt [dh, Skv] = K^T of the Skv rows of dh at k[kb + j*ks2:]. Row by row of K, unless kt's rows are
    2 KiB or more apart: then each column's stores fall into a few L1 sets, and kt's rows are filled one
    after the other instead (seq 512, 64 x 512: 63 -> 21 us; 1024: 250 -> 68; 128: 4.9 us row by row, 7.7
    so; CPU time, one core)."""
    if Skv * kt.itemsize >= 2048:
        for d in range(dh):
            o = d * Skv
            for j in range(Skv):
                kt[o + j] = k[kb + j * ks2 + d]
    else:
        for j in range(Skv):
            ko = kb + j * ks2
            for d in range(dh):
                kt[d * Skv + j] = k[ko + d]


@njit(nogil=True, cache=True)
def attention_blocks(q, k, v, mask, y, ws, dims, qs, ks, vs, ys, ms, flags, scale, block_idx, block_dim):
    """dims: B, Hq, Hkv, Sq, Skv, dh, dv, causal offset, per-block workspace; q/k/v/ys: (batch, head, seq)
    strides (head dim contiguous); ms: the mask's 4 broadcast strides; flags: has_mask, causal, nan_guard.
    Block block_idx's tasks (batch, head, QB query rows)."""
    B, Hq, Hkv, Sq, Skv, dh, dv, offset, per = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], \
        dims[7], dims[8]
    has_mask, causal, guard = flags[0], flags[1], flags[2]
    nqb = (Sq + QB - 1) // QB
    t0, t1 = block_range(B * Hq * nqb, 1, block_idx, block_dim)
    w = ws[block_idx * per:(block_idx + 1) * per]
    kt = w[:dh * Skv]                       # K^T of the task's (batch, kv head): [dh, Skv]
    s = w[dh * Skv:dh * Skv + QB * Skv]     # the score / probability tile: [QB, Skv]
    gw = w[dh * Skv + QB * Skv:]            # gemm_block's workspace
    brow = np.empty(0, np.int64)
    group = Hq // Hkv
    last = -1
    for t in range(t0, t1):
        b, h, qb = t // (Hq * nqb), (t // nqb) % Hq, t % nqb
        hk = h // group
        if b * Hkv + hk != last:
            last = b * Hkv + hk
            _transpose_k(k, b * ks[0] + hk * ks[1], ks[2], kt, Skv, dh)
        i0 = qb * QB
        rows = min(QB, Sq - i0)
        qo = b * qs[0] + h * qs[1] + i0 * qs[2]
        gemm_block(q[qo:], kt, brow, Skv, s, Skv, dh, qs[2], 1, False, 0, rows, 0, Skv, gw, True)
        _softmax_rows(s, rows, Skv, i0, mask, b * ms[0] + h * ms[1], ms, has_mask, causal, offset, guard, scale)
        vo, yo = b * vs[0] + hk * vs[1], b * ys[0] + h * ys[1] + i0 * ys[2]
        gemm_block(s, v[vo:], brow, vs[2], y[yo:], ys[2], Skv, Skv, 1, False, 0, rows, 0, dv, gw, True)


def _blocks_launch(ctx, B, Hq, Hkv, Sq, Skv, dh, dv, qs, ks, vs, ys, scale, causal, guard, offset=0) -> Launch:
    dt = ctx.inputs[0].dtype
    Lm, ms = (0, np.zeros(4, np.int64))
    if ctx.has(3):
        if ctx.inputs[3].dtype not in (dt, np.bool_):
            raise ctx.error(f"attn_mask has dtype {ctx.inputs[3].dtype}: bool or {dt}")
        Lm, ms = _mask_strides(ctx, B, Hq, Sq)
        if Lm != Skv:
            raise ctx.error(f"attn_mask has {Lm} columns for {Skv} keys")
    rows = min(QB, Sq)
    per = dh * Skv + QB * Skv + max(workspace(rows, Skv, dh, dt, True, Skv), workspace(rows, dv, Skv, dt, True,
                                                                                         ys[2]), 1) + 16
    nqb = -(-Sq // QB)
    bd = block_dim_for(B * Hq * nqb, ctx.cores, -(-MIN_BLOCK_MACS // max(1, rows * Skv * (dh + dv))))
    dims = np.array([B, Hq, Hkv, Sq, Skv, dh, dv, offset, per], np.int64)   # per: + a line no neighbour writes
    flags = np.array([ctx.has(3), causal, guard], np.int64)
    args = (dims, np.array(qs, np.int64), np.array(ks, np.int64), np.array(vs, np.int64), np.array(ys, np.int64),
            ms, flags, float(scale))
    return Launch(attention_blocks, args, (TensorSpec((bd * per,), dt),), inputs=(0, 1, 2, 3 if ctx.has(3) else 0),
                  tiled=True, block_dim=bd)


# -- ge::Attention: fuse_attention's node ------------------------------------------------------------

def _perm(ctx, name: str) -> tuple:
    p = tuple(int(a) for a in ctx.attr(name, (0, 1, 2, 3)))
    if sorted(p) != [0, 1, 2, 3]:
        raise ctx.error(f"{name} {list(p)} is not a permutation of 4 axes")
    return p


def _logical(ctx, i: int, name: str):
    """(shape [batch, heads, seq, dim], (batch, head, seq) strides) of input i read through its perm."""
    x, p = ctx.inputs[i], _perm(ctx, name)
    if len(x.shape) != 4:
        raise ctx.error(f"input {i} has shape {list(x.shape)}: ge::Attention reads 4-D Q, K, V")
    if p[3] != 3:
        raise ctx.error(f"{name} {list(p)}: the head dim must be the last axis in memory")
    strides = [int(np.prod(x.shape[a + 1:], dtype=np.int64)) for a in range(4)]
    return tuple(x.shape[a] for a in p), (strides[p[0]], strides[p[1]], strides[p[2]])


def _ge_dims(ctx: KernelContext):
    q, k, v = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    if q.dtype not in (np.float32, np.float64) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ctx.error(f"Q, K and V must all be float32 or float64, got {q.dtype}, {k.dtype}, {v.dtype}")
    (B, Hq, Sq, dh), qs = _logical(ctx, 0, "q_perm")
    (Bk, Hkv, Skv, dk), ks = _logical(ctx, 1, "k_perm")
    (Bv, Hv, Sv, dv), vs = _logical(ctx, 2, "v_perm")
    if Bk != B or Bv != B or Hv != Hkv or Sv != Skv or dk != dh or Hkv < 1 or Hq % Hkv:
        raise ctx.error(f"Q {list(q.shape)}, K {list(k.shape)} and V {list(v.shape)} do not fit together")
    ys, yshape = _y_layout(ctx, (B, Hq, Sq, dv))
    return B, Hq, Hkv, Sq, Skv, dh, dv, qs, ks, vs, ys, yshape


def _y_layout(ctx, logical: tuple) -> tuple:
    """Y's (batch, head, seq) strides and shape for its logical [batch, heads, seq, dim] through y_perm."""
    yp = _perm(ctx, "y_perm")
    if yp[3] != 3:
        raise ctx.error(f"y_perm {list(yp)}: the head dim must stay last")
    yshape = tuple(logical[a] for a in yp)
    strides = [int(np.prod(yshape[a + 1:], dtype=np.int64)) for a in range(4)]
    return tuple(strides[yp.index(a)] for a in range(3)), yshape


def _infer_ge(ctx: KernelContext) -> list[TensorSpec]:
    d = _ge_dims(ctx)
    return [TensorSpec(d[-1], ctx.inputs[0].dtype)]


def _prepare_ge(ctx: KernelContext) -> Launch:
    B, Hq, Hkv, Sq, Skv, dh, dv, qs, ks, vs, ys, _ = _ge_dims(ctx)
    return _blocks_launch(ctx, B, Hq, Hkv, Sq, Skv, dh, dv, qs, ks, vs, ys, float(ctx.attr("scale", 1.0)),
                          int(ctx.attr("is_causal", 0)), int(ctx.attr("nan_guard", 0)), Skv - Sq)


register("Attention", domain="ge", infer=_infer_ge)(_prepare_ge)
