"""Fourier transforms and the mel filter bank: DFT (opsets 17 and 20), STFT, MelWeightMatrix.

- DFT: the signal axis is seen as (outer, n, inner) with a last component of 1 (real) or 2 (complex);
  each output bin is a direct sum over the signal, its twiddles from one table of n_fft cosines and sines
  (O(n^2): the node cases and audio front ends use short axes; a radix-2 FFT is left for when a model
  needs long ones). dft_length pads or truncates the signal as numpy.fft does; onesided keeps bins
  0..n/2; the inverse divides by n, and inverse + onesided is numpy's irfft (the spectrum is extended
  by Hermitian symmetry and the real part kept: a real output, last component 1).
- STFT: frames of frame_length every frame_step samples, times the window, then the same sum per frame.
- MelWeightMatrix: the band edges are computed on the host from the inputs' values with the reference's
  numpy expressions (the floor division of frequencies by the sample rate is sensitive to the float
  type of each step), the kernel lays the triangles.
Sums run in float64 and are stored once in the output's type. One block each (small sizes).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..ir.dtypes import HALF, from_onnx
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .strided import DTYPES, int_values

FLOATS = (np.float32, np.float64)


@njit(nogil=True, cache=True)
def _twiddles(n):
    c, s = np.empty(max(n, 1), np.float64), np.empty(max(n, 1), np.float64)
    for j in range(n):
        c[j], s[j] = math.cos(2.0 * math.pi * j / n), math.sin(2.0 * math.pi * j / n)
    return c, s


@njit(nogil=True, cache=True)
def dft(x, out, outer, n_in, inner, comp, n_fft, n_out, inverse, real_out):
    """out[o, k, i] = sum_t x[o, t, i] e^(-+2 pi i k t / n_fft) (/ n_fft when inverse)."""
    c, s = _twiddles(n_fft)
    sign = 1.0 if inverse else -1.0
    scale = 1.0 / n_fft if inverse else 1.0
    oc = 1 if real_out else 2
    half = n_fft // 2
    for o in range(outer):
        for i in range(inner):
            for k in range(n_out):
                re, im = 0.0, 0.0
                for t in range(n_fft):
                    if real_out:  # irfft: bin t of the full spectrum from the one-sided input
                        src, conj = (t, 1.0) if t <= half else (n_fft - t, -1.0)
                    else:
                        src, conj = t, 1.0
                    if src >= n_in:
                        continue
                    p = ((o * n_in + src) * inner + i) * comp
                    a = np.float64(x[p])
                    b = conj * x[p + 1] if comp == 2 else 0.0
                    j = (k * t) % n_fft
                    wr, wi = c[j], sign * s[j]
                    re += a * wr - b * wi
                    im += a * wi + b * wr
                q = ((o * n_out + k) * inner + i) * oc
                out[q] = re * scale
                if not real_out:
                    out[q + 1] = im * scale


def _dft_view(ctx: KernelContext):
    """(outer, n_in, inner, comp, n_fft, n_out, inverse, real_out) and the axis."""
    x = ctx.inputs[0]
    ctx.require_dtype(0, FLOATS)
    comp = x.shape[-1] if x.shape else 0
    if len(x.shape) < 2 or comp not in (1, 2):
        raise ctx.error(f"input must be (..., signal..., 1 or 2), got shape {x.shape}")
    if ctx.opset >= 20:
        axis = int_values(ctx, 2)[0] if ctx.has(2) else -2
    else:
        axis = ctx.attr("axis", 1)
    axis = normalize_axis(ctx, axis, len(x.shape))
    if axis == len(x.shape) - 1:
        raise ctx.error("axis is the real/imaginary axis")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    n_in = x.shape[axis]
    if ctx.has(1):
        n_fft = int_values(ctx, 1)[0]
    else:
        n_fft = 2 * (n_in - 1) if inverse and onesided else n_in
    if n_fft < 1:
        raise ctx.error(f"dft_length must be positive, got {n_fft}")
    real_out = inverse and onesided
    n_out = n_fft // 2 + 1 if onesided and not inverse else n_fft
    return (math.prod(x.shape[:axis]), n_in, math.prod(x.shape[axis + 1:-1]), comp, n_fft, n_out,
            int(inverse), int(real_out)), axis


def _infer_dft(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    (_, _, _, _, _, n_out, _, real_out), axis = _dft_view(ctx)
    return [TensorSpec(x.shape[:axis] + (n_out,) + x.shape[axis + 1:-1] + (1 if real_out else 2,), x.dtype)]


@register("DFT", infer=_infer_dft, value_inputs=(1, 2), since=17)
def _prepare_dft(ctx: KernelContext) -> Launch:
    return Launch(dft, _dft_view(ctx)[0], inputs=(0,))


# -- STFT -------------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def stft(x, window, out, length, comp, step, frame, frames, bins, has_window):
    """out[b, f, k] = sum_t x[b, f * step + t] window[t] e^(-2 pi i k t / frame) (window 1 without one)."""
    c, s = _twiddles(frame)
    batch = out.size // max(frames * bins * 2, 1)
    for b in range(batch):
        for f in range(frames):
            for k in range(bins):
                re, im = 0.0, 0.0
                for t in range(frame):
                    p = (b * length + f * step + t) * comp
                    w = np.float64(window[t]) if has_window else 1.0
                    a, v = w * x[p], w * x[p + 1] if comp == 2 else 0.0
                    j = (k * t) % frame
                    re += a * c[j] + v * s[j]
                    im += v * c[j] - a * s[j]
                q = ((b * frames + f) * bins + k) * 2
                out[q], out[q + 1] = re, im


def _stft_view(ctx: KernelContext):
    """(length, comp, step, frame, frames, bins)."""
    x = ctx.inputs[0]
    ctx.require_dtype(0, FLOATS)
    if len(x.shape) != 3 or x.shape[2] not in (1, 2):
        raise ctx.error(f"signal must be (batch, length, 1 or 2), got {x.shape}")
    step = int_values(ctx, 1)[0]
    if ctx.has(3):
        frame = int_values(ctx, 3)[0]
    else:
        frame = ctx.inputs[2].shape[0] if ctx.has(2) else x.shape[1]
    if ctx.has(2) and ctx.inputs[2].shape != (frame,):
        raise ctx.error(f"window has shape {ctx.inputs[2].shape}, frame_length is {frame}")
    if step < 1 or not 1 <= frame <= x.shape[1]:
        raise ctx.error(f"frame_step {step} and frame_length {frame} do not fit a signal of {x.shape[1]}")
    onesided = bool(ctx.attr("onesided", 1))
    if onesided and x.shape[2] == 2:
        raise ctx.error("onesided needs a real signal")
    bins = frame // 2 + 1 if onesided else frame
    return x.shape[1], x.shape[2], step, frame, 1 + (x.shape[1] - frame) // step, bins


def _infer_stft(ctx: KernelContext) -> list[TensorSpec]:
    _, _, _, _, frames, bins = _stft_view(ctx)
    x = ctx.inputs[0]
    return [TensorSpec((x.shape[0], frames, bins, 2), x.dtype)]


@register("STFT", infer=_infer_stft, value_inputs=(1, 3), since=17)
def _prepare_stft(ctx: KernelContext) -> Launch:
    # no window: the signal stands in (never read), so one specialization serves both
    return Launch(stft, (*_stft_view(ctx), int(ctx.has(2))), inputs=(0, 2 if ctx.has(2) else 0))


# -- MelWeightMatrix --------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def mel_weight_matrix(out, edges, mels):
    """out[j, i]: the triangle of mel band i over spectrogram bin j, rising edges[i]..edges[i+1], falling to
    edges[i+2]."""
    out[:] = 0
    for i in range(mels):
        lo, mid, hi = edges[i], edges[i + 1], edges[i + 2]
        if mid == lo:
            out[mid * mels + i] = 1.0
        else:
            for j in range(lo, mid + 1):
                out[j * mels + i] = (j - lo) / (mid - lo)
        for j in range(mid, hi):
            out[j * mels + i] = (hi - j) / (hi - mid)


def _mel_edges(ctx: KernelContext) -> np.ndarray:
    """The band edges as the reference computes them (numpy on the inputs' own types)."""
    mels, dft_length, rate, low, high = (np.asarray(ctx.value(i)).reshape(()) for i in range(5))
    log10 = np.log(10)
    low_mel, high_mel = 2595 * np.log1p(low / 700) / log10, 2595 * np.log1p(high / 700) / log10
    step = (high_mel - low_mel) / (int(mels) + 2)
    hz = 700 * np.expm1((np.arange(0, int(mels) + 2) * step + low_mel) / 2595 * log10)
    return (((dft_length + 1) * hz) // rate).astype(np.int64)


def _infer_mel(ctx: KernelContext) -> list[TensorSpec]:
    for i in range(3):
        ctx.require_dtype(i, (np.int32, np.int64))
    mels, dft_length = int_values(ctx, 0)[0], int_values(ctx, 1)[0]
    bins = dft_length // 2 + 1
    edges = _mel_edges(ctx)
    if mels < 1 or dft_length < 1 or int_values(ctx, 2)[0] < 1 or edges.min() < 0 or edges.max() >= bins:
        raise ctx.error(f"num_mel_bins {mels}, dft_length {dft_length}, the sample rate and the edges give "
                        "bands outside the spectrogram")
    dtype = from_onnx(int(ctx.attr("output_datatype", 1)), f"output_datatype of MelWeightMatrix '{ctx.name}'")
    if np.dtype(dtype) not in DTYPES or np.dtype(dtype) in HALF:  # the kernel stores numbers, not 16-bit floats
        raise ctx.error(f"output_datatype {np.dtype(dtype)} is not supported")
    return [TensorSpec((bins, mels), dtype)]


@register("MelWeightMatrix", infer=_infer_mel, value_inputs=(0, 1, 2, 3, 4), since=17)
def _prepare_mel(ctx: KernelContext) -> Launch:
    return Launch(mel_weight_matrix, (_mel_edges(ctx), int_values(ctx, 0)[0]), inputs=())
