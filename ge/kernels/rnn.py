"""RNN, GRU and LSTM on the GEMM core: one GEMM for the input projection of all steps, then the recurrence.

One kernel, `_recurrence`, serves the three ops (kind RNN/GRU/LSTM), both layouts and every direction; a
direction is one block (bidirectional: two, on two AI cores when the plan has them). Per direction:
  Step 1: W [G*H, I] and R [G*H, H] transposed into the workspace (gemm_block reads B as [K, N] rows);
  Step 2: XW = X @ W^T for all T*B rows at once (gemm_block, packed: the bulk of the work at large T);
  Step 3: per time step, HR = H @ R^T (gemm_block on the B rows of H: one 8-row tile at batch 8), then the
          gates fused row by row: XW + HR + biases, clip, each gate's activation over its contiguous H
          columns (the activation is picked outside the loop, so the loop vectorizes with fastmath's exp).
  GRU without linear_before_reset needs (r * H) @ R_h^T after r: its step runs two GEMMs (z/r columns,
  then the h columns on r * H).
Sequence lengths: batch row b runs steps 0..len[b]-1 (a reverse direction from t = len[b]-1 down), its
Y rows past len[b] are zero and Y_h/Y_c hold its state after its last step.
Activations (attribute `activations`, with activation_alpha/beta consumed in order by the functions that
take them, ONNX's defaults otherwise) are codes in an int64 array; alphas and betas travel as the int64
bits of their float64 values (kernel args are ints, floats and int64 arrays).
Omitted trailing outputs (Y_h, Y_c) are workspaces of the same size, so one signature serves every node;
an absent B / initial_h / initial_c / P is stood in for by X (never read). sequence_lens, int32, needs its
own entry (`recurrence_lens`), so nodes without it do not compile an int32 variant.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .activation import _elu, _hard_sigmoid, _leaky_relu, _sigmoid, _softplus, _softsign, _tanh
from .gemm import gemm_block, gemm_blocks, k_depth, pack_elems
from .registry import KernelContext, Launch, TensorSpec, register
from .transpose2d import transpose2d

RNN, GRU, LSTM = 0, 1, 2
GATES = {RNN: 1, GRU: 3, LSTM: 4}
FORWARD, REVERSE, BIDIRECTIONAL = 0, 1, 2
(RELU, TANH, SIGMOID, AFFINE, LEAKY_RELU, THRESHOLDED_RELU, SCALED_TANH, HARD_SIGMOID, ELU, SOFTSIGN,
 SOFTPLUS) = range(11)
# name: (code, default alpha or None when it takes none, default beta or None)
ACTIVATIONS = {"relu": (RELU, None, None), "tanh": (TANH, None, None), "sigmoid": (SIGMOID, None, None),
               "affine": (AFFINE, 1.0, 0.0), "leakyrelu": (LEAKY_RELU, 0.01, None),
               "thresholdedrelu": (THRESHOLDED_RELU, 1.0, None), "scaledtanh": (SCALED_TANH, 1.0, 1.0),
               "hardsigmoid": (HARD_SIGMOID, 0.2, 0.5), "elu": (ELU, 1.0, None), "softsign": (SOFTSIGN, None, None),
               "softplus": (SOFTPLUS, None, None)}
DEFAULTS = {RNN: ("Tanh",), GRU: ("Sigmoid", "Tanh"), LSTM: ("Sigmoid", "Tanh", "Tanh")}


@njit(nogil=True, cache=True, error_model="numpy")
def _activate(v, code, alpha, beta):
    """v = act(v) in place; the function picked once, outside the loop."""
    p, q = v.dtype.type(alpha), v.dtype.type(beta)
    z = v.dtype.type(0)
    if code == SIGMOID:
        for i in range(v.size):
            v[i] = _sigmoid(v[i], p, q)
    elif code == TANH:
        for i in range(v.size):
            v[i] = _tanh(v[i], p, q)
    elif code == RELU:
        for i in range(v.size):
            v[i] = max(v[i], z)
    elif code == AFFINE:
        for i in range(v.size):
            v[i] = p * v[i] + q
    elif code == LEAKY_RELU:
        for i in range(v.size):
            v[i] = _leaky_relu(v[i], p, q)
    elif code == THRESHOLDED_RELU:
        for i in range(v.size):
            v[i] = v[i] if v[i] > p else z
    elif code == SCALED_TANH:
        for i in range(v.size):
            v[i] = p * _tanh(q * v[i], p, q)
    elif code == HARD_SIGMOID:
        for i in range(v.size):
            v[i] = _hard_sigmoid(v[i], p, q)
    elif code == ELU:
        for i in range(v.size):
            v[i] = _elu(v[i], p, q)
    elif code == SOFTSIGN:
        for i in range(v.size):
            v[i] = _softsign(v[i], p, q)
    else:
        for i in range(v.size):
            v[i] = _softplus(v[i], p, q)


@njit(nogil=True, cache=True, error_model="numpy")
def _clip(v, clip):
    for i in range(v.size):
        v[i] = min(max(v[i], -clip), clip)


@njit(nogil=True, cache=True, error_model="numpy")
def _gates(g, hr, bw, br, p, h, c, tmp, kind, H, has_p, lbr, input_forget, clip, acts, al, be):
    """One batch row's step: g (its XW row, G*H) gets HR and the biases, then the gates; h and c (this row's
    state) updated in place, except GRU's h (its r * h goes to tmp for the second GEMM, _gru_state ends it)."""
    n = 2 * H if kind == 1 else g.size
    for j in range(n):
        g[j] += hr[j] + bw[j] + br[j]
    if kind == 0:
        if clip > 0:
            _clip(g, clip)
        _activate(g, acts[0], al[0], be[0])
        h[:] = g
        return
    if kind == 1:
        gzr, gr, gh, hrh, bwh, brh = g[0:2 * H], g[H:2 * H], g[2 * H:3 * H], hr[2 * H:3 * H], bw[2 * H:], br[2 * H:]
        if clip > 0:
            _clip(gzr, clip)
        _activate(gzr, acts[0], al[0], be[0])
        if lbr:
            for j in range(H):
                gh[j] += bwh[j] + gr[j] * (hrh[j] + brh[j])
        else:
            for j in range(H):
                tmp[j] = gr[j] * h[j]
        return
    gi, go, gf, gc = g[0:H], g[H:2 * H], g[2 * H:3 * H], g[3 * H:4 * H]
    if has_p:  # peepholes on i and f from C(t-1)
        pi, pf = p[0:H], p[2 * H:3 * H]
        for j in range(H):
            gi[j] += pi[j] * c[j]
            gf[j] += pf[j] * c[j]
    if clip > 0:
        _clip(gi, clip)
        _clip(gf, clip)
        _clip(gc, clip)
        if not has_p:
            _clip(go, clip)
    _activate(gi, acts[0], al[0], be[0])
    _activate(gc, acts[1], al[1], be[1])
    if input_forget:
        one = g.dtype.type(1)
        for j in range(H):
            c[j] = (one - gi[j]) * c[j] + gi[j] * gc[j]
    else:
        _activate(gf, acts[0], al[0], be[0])
        for j in range(H):
            c[j] = gf[j] * c[j] + gi[j] * gc[j]
    if has_p:  # o's peephole reads C(t), then its clip
        po = p[H:2 * H]
        for j in range(H):
            go[j] += po[j] * c[j]
        if clip > 0:
            _clip(go, clip)
    _activate(go, acts[0], al[0], be[0])
    tmp[:] = c
    _activate(tmp, acts[2], al[2], be[2])
    for j in range(H):
        h[j] = go[j] * tmp[j]


@njit(nogil=True, cache=True, error_model="numpy")
def _gru_state(g, hr, bw, br, h, H, lbr, clip, act, alpha, beta):
    """GRU's h~ = g(...) and H = (1 - z) h~ + z H for one batch row (after _gates and the second GEMM)."""
    gz, gh = g[0:H], g[2 * H:3 * H]
    if not lbr:
        hrh, bwh, brh = hr[2 * H:3 * H], bw[2 * H:3 * H], br[2 * H:3 * H]
        for j in range(H):
            gh[j] += hrh[j] + bwh[j] + brh[j]
    if clip > 0:
        _clip(gh, clip)
    _activate(gh, act, alpha, beta)
    one = g.dtype.type(1)
    for j in range(H):
        h[j] = (one - gz[j]) * gh[j] + gz[j] * h[j]


@njit(nogil=True, cache=True, error_model="numpy")
def _recurrence(x, w, r, bias, h0, c0, p, y, yh, yc, ws, lens, kind, T, B, I, H, D, layout, packed,
                has_b, has_h0, has_c0, has_p, direction, lbr, input_forget, clip, acts, alphas, betas, block_idx,
                block_dim):
    """The whole node for directions block_idx, block_idx + block_dim, ... (see the module doc)."""
    G = 1 if kind == 0 else (3 if kind == 1 else 4)
    GH = G * H
    al, be = alphas.view(np.float64), betas.view(np.float64)
    per = ws.size // D
    kc = k_depth(H)  # the recurrent GEMM's k blocks (its workspace: one panel)
    empty = np.empty(0, np.int64)
    zero = x.dtype.type(0)
    for d in range(block_idx, D, block_dim):
        s0 = d * per
        wt = ws[s0:s0 + I * GH]  # the transposed weights, when not packed
        rt = ws[s0 + I * GH:s0 + (I + H) * GH]
        s0 += 0 if packed else (I + H) * GH
        xw = ws[s0:s0 + T * B * GH]
        s0 += T * B * GH
        hr = ws[s0:s0 + B * GH]
        s0 += B * GH
        bw = ws[s0:s0 + GH]
        br = ws[s0 + GH:s0 + 2 * GH]
        s0 += 2 * GH
        hs = ws[s0:s0 + B * H]
        cs = ws[s0 + B * H:s0 + 2 * B * H]
        tmp = ws[s0 + 2 * B * H:s0 + 3 * B * H]
        s0 += 3 * B * H
        gw = ws[s0:(d + 1) * per]
        ln = lens[d * B:(d + 1) * B]
        rev = direction == 1 or d == 1
        # Step 1: the weights as gemm_block's B (transposed by pack_rnn_weights, else here), the biases,
        # the initial state
        if packed:
            wt, rt = w[d * GH * I:(d + 1) * GH * I], r[d * GH * H:(d + 1) * GH * H]
        else:
            transpose2d(w[d * GH * I:(d + 1) * GH * I], wt, 1, GH, I, 0, 1)
            transpose2d(r[d * GH * H:(d + 1) * GH * H], rt, 1, GH, H, 0, 1)
        for j in range(GH):
            bw[j] = bias[d * 2 * GH + j] if has_b else zero
            br[j] = bias[d * 2 * GH + GH + j] if has_b else zero
        for b in range(B):
            o = (d * B + b) * H if layout == 0 else (b * D + d) * H
            for j in range(H):
                hs[b * H + j] = h0[o + j] if has_h0 else zero
                cs[b * H + j] = c0[o + j] if has_c0 and kind == 2 else zero
        # Step 2: the input projection of every step, X's rows in its own order
        gemm_block(x[0:T * B * I], wt, empty, GH, xw, GH, I, I, 1, False, 0, T * B, 0, GH, gw, True)
        # Y rows past a sequence's end are zeros
        for b in range(B):
            for t in range(ln[b], T):
                o = ((t * D + d) * B + b) * H if layout == 0 else ((b * T + t) * D + d) * H
                y[o:o + H] = zero
        # Step 3: the recurrence (slices per gate, so every loop counts from 0 and vectorizes)
        for s in range(T):
            gemm_block(hs, rt, empty, GH, hr, GH, H, H, 1, False, 0, B, 0, GH if kind != 1 or lbr else 2 * H,
                       gw[0:kc * 32], False)
            for b in range(B):
                if s < ln[b]:
                    t = ln[b] - 1 - s if rev else s
                    row = (t * B + b if layout == 0 else b * T + t) * GH
                    _gates(xw[row:row + GH], hr[b * GH:(b + 1) * GH], bw, br, p[d * 3 * H:(d + 1) * 3 * H],
                           hs[b * H:(b + 1) * H], cs[b * H:(b + 1) * H], tmp[b * H:(b + 1) * H], kind, H,
                           has_p, lbr, input_forget, clip, acts[d * 3:d * 3 + 3], al[d * 3:d * 3 + 3],
                           be[d * 3:d * 3 + 3])
            if kind == 1:  # GRU's candidate h~ and the new state
                if not lbr:
                    gemm_block(tmp, rt, empty, GH, hr, GH, H, H, 1, False, 0, B, 2 * H, 3 * H, gw[0:kc * 32],
                               False)
                for b in range(B):
                    if s < ln[b]:
                        t = ln[b] - 1 - s if rev else s
                        row = (t * B + b if layout == 0 else b * T + t) * GH
                        _gru_state(xw[row:row + GH], hr[b * GH:(b + 1) * GH], bw, br, hs[b * H:(b + 1) * H], H,
                                   lbr, clip, acts[d * 3 + 1], al[d * 3 + 1], be[d * 3 + 1])
            for b in range(B):  # this step's Y rows
                if s < ln[b]:
                    t = ln[b] - 1 - s if rev else s
                    o = ((t * D + d) * B + b) * H if layout == 0 else ((b * T + t) * D + d) * H
                    y[o:o + H] = hs[b * H:(b + 1) * H]
        for b in range(B):
            o = (d * B + b) * H if layout == 0 else (b * D + d) * H
            yh[o:o + H] = hs[b * H:(b + 1) * H]
            if kind == 2:
                yc[o:o + H] = cs[b * H:(b + 1) * H]


@njit(nogil=True, cache=True)
def recurrence(x, w, r, bias, h0, c0, p, y, yh, yc, ws, lens, kind, T, B, I, H, D, layout, packed, has_b,
               has_h0, has_c0, has_p, direction, lbr, input_forget, clip, acts, alphas, betas, block_idx, block_dim):
    """A node without sequence_lens: every sequence runs all T steps."""
    for d in range(block_idx, D, block_dim):
        lens[d * B:(d + 1) * B] = T
    _recurrence(x, w, r, bias, h0, c0, p, y, yh, yc, ws, lens, kind, T, B, I, H, D, layout, packed, has_b,
                has_h0, has_c0, has_p, direction, lbr, input_forget, clip, acts, alphas, betas, block_idx, block_dim)


@njit(nogil=True, cache=True)
def recurrence_lens(x, w, r, bias, h0, c0, p, seq, y, yh, yc, ws, lens, kind, T, B, I, H, D, layout, packed,
                    has_b, has_h0, has_c0, has_p, direction, lbr, input_forget, clip, acts, alphas, betas, block_idx,
                    block_dim):
    """A node with sequence_lens (int32 [B], each in [0, T]: checked by the caller's run)."""
    for d in range(block_idx, D, block_dim):
        for b in range(B):
            lens[d * B + b] = min(max(np.int64(seq[b]), 0), T)
    _recurrence(x, w, r, bias, h0, c0, p, y, yh, yc, ws, lens, kind, T, B, I, H, D, layout, packed, has_b,
                has_h0, has_c0, has_p, direction, lbr, input_forget, clip, acts, alphas, betas, block_idx, block_dim)


# -- host side ----------------------------------------------------------------------------------------

_KINDS = {"RNN": RNN, "GRU": GRU, "LSTM": LSTM}
_DIRECTIONS = {"forward": FORWARD, "reverse": REVERSE, "bidirectional": BIDIRECTIONAL}


def _dims(ctx: KernelContext):
    """(kind, T, B, I, H, D, layout) after checking the inputs' shapes against each other."""
    kind = _KINDS[ctx.op_type]
    G = GATES[kind]
    x, w, r = ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]
    if x.dtype not in (np.float32, np.float64) or w.dtype != x.dtype or r.dtype != x.dtype:
        raise ctx.error(f"X, W and R must all be float32 or float64, got {x.dtype}, {w.dtype}, {r.dtype}")
    if len(x.shape) != 3 or len(w.shape) != 3 or len(r.shape) != 3:
        raise ctx.error(f"X, W and R must have rank 3, got {x.shape}, {w.shape}, {r.shape}")
    layout = int(ctx.attr("layout", 0))
    direction = ctx.attr("direction", "forward")
    if layout not in (0, 1) or direction not in _DIRECTIONS:
        raise ctx.error(f"layout must be 0 or 1 and direction forward, reverse or bidirectional, got "
                        f"{layout} and {direction!r}")
    T, B, I = x.shape if layout == 0 else (x.shape[1], x.shape[0], x.shape[2])
    D = 2 if direction == "bidirectional" else 1
    packed = int(ctx.attr("weights_kn", 0))  # W [D, I, G*H] and R [D, H, G*H] (pack_rnn_weights)
    H = int(ctx.attr("hidden_size", r.shape[1] if packed else r.shape[2]))
    want = {1: (D, I, G * H) if packed else (D, G * H, I), 2: (D, H, G * H) if packed else (D, G * H, H), 3: (D, 2 * G * H), 4: (B,),
            5: (D, B, H) if layout == 0 else (B, D, H), 6: (D, B, H) if layout == 0 else (B, D, H), 7: (D, 3 * H)}
    for i, shape in want.items():
        if ctx.has(i) and tuple(ctx.inputs[i].shape) != shape:
            raise ctx.error(f"input {i} has shape {ctx.inputs[i].shape}, expected {shape} "
                            f"(T={T}, batch={B}, input={I}, hidden={H}, directions={D})")
        if ctx.has(i) and ctx.inputs[i].dtype != (np.int32 if i == 4 else x.dtype):
            raise ctx.error(f"input {i} has dtype {ctx.inputs[i].dtype}")
    if ctx.has(6) and kind != LSTM or ctx.has(7) and kind != LSTM:
        raise ctx.error("only LSTM takes initial_c and P")
    return kind, T, B, I, H, D, layout


def _out_specs(ctx, T, B, H, D, layout, n):
    dt = ctx.inputs[0].dtype
    y = (T, D, B, H) if layout == 0 else (B, T, D, H)
    state = (D, B, H) if layout == 0 else (B, D, H)
    return [TensorSpec(s, dt) for s in (y, state, state)[:n]]


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    kind, T, B, I, H, D, layout = _dims(ctx)
    n = 3 if kind == LSTM else 2
    if ctx.n_outputs > n:
        raise ctx.error(f"{ctx.op_type} has at most {n} outputs, the node declares {ctx.n_outputs}")
    return _out_specs(ctx, T, B, H, D, layout, ctx.n_outputs)


def _activations(ctx: KernelContext, kind: int, D: int):
    """(codes, alpha bits, beta bits): 3 slots per direction, alphas/betas consumed in order by the
    functions that take them (ONNX's defaults past the lists' ends)."""
    names = ctx.attr("activations", None) or DEFAULTS[kind] * D
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    if len(names) != len(DEFAULTS[kind]) * D:
        raise ctx.error(f"activations lists {len(names)} functions, {ctx.op_type} with {D} direction(s) needs "
                        f"{len(DEFAULTS[kind]) * D}")
    alphas, betas = list(ctx.attr("activation_alpha", []) or []), list(ctx.attr("activation_beta", []) or [])
    codes, al, be = np.zeros(3 * D, np.int64), np.zeros(3 * D), np.zeros(3 * D)
    per = len(DEFAULTS[kind])
    for k, name in enumerate(names):
        if name.lower() not in ACTIVATIONS:
            raise ctx.error(f"activation {name!r} is not one of {', '.join(sorted(ACTIVATIONS))}")
        code, a, b = ACTIVATIONS[name.lower()]
        slot = (k // per) * 3 + k % per
        codes[slot] = code
        al[slot] = alphas.pop(0) if a is not None and alphas else (a or 0.0)
        be[slot] = betas.pop(0) if b is not None and betas else (b or 0.0)
    return codes, al.view(np.int64), be.view(np.int64)


def _prepare(ctx: KernelContext) -> Launch:
    kind, T, B, I, H, D, layout = _dims(ctx)
    dt = ctx.inputs[0].dtype
    G = GATES[kind]
    GH = G * H
    proj = int(pack_elems(T * B, GH, I, GH, dt.itemsize, True))
    packed = int(ctx.attr("weights_kn", 0))
    per = (0 if packed else I * GH + H * GH) + T * B * GH + B * GH + 2 * GH + 3 * B * H + max(proj, k_depth(H) * 32)
    specs = _out_specs(ctx, T, B, H, D, layout, 3)
    missing = [TensorSpec((specs[k].size if kind == LSTM or k < 2 else 1,), dt) for k in range(ctx.n_outputs, 3)]
    codes, al, be = _activations(ctx, kind, D)
    clip = float(ctx.attr("clip", 0.0) or 0.0)
    bd = min(D, gemm_blocks(D * T * B * GH * (I + H), ctx.cores))
    args = (kind, T, B, I, H, D, layout, packed, int(ctx.has(3)), int(ctx.has(5)), int(ctx.has(6)), int(ctx.has(7)),
            _DIRECTIONS[ctx.attr("direction", "forward")], int(ctx.attr("linear_before_reset", 0)),
            int(ctx.attr("input_forget", 0)), clip, codes, al, be)
    inputs = (0, 1, 2, *[(i if ctx.has(i) else 0) for i in (3, 5, 6, 7)])
    fn = recurrence
    if ctx.has(4):
        fn, inputs = recurrence_lens, inputs + (4,)
    return Launch(fn, args, (*missing, TensorSpec((D * per,), dt), TensorSpec((D * B,), np.int64)),
                  inputs=inputs, tiled=True, block_dim=bd)


register(["RNN", "GRU", "LSTM"], infer=_infer, since=7)(_prepare)
register(["RNN", "GRU", "LSTM"], infer=_infer, domain="ge")(_prepare)  # weights_kn: pack_rnn_weights
