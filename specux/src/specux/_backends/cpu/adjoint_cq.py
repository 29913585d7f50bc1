"""Constant-Q / variable-Q kernels with explicit per-octave weights, and their analytic backward (NumPy).

The forward is :func:`.cqt.vqt_cpu` with the per-octave frame weights taken as arguments (so that an
``nn.Module`` can own them as buffers): each octave's response is ``frames(x_octave) @ Wc`` with ``Wc`` the
weights (real and imaginary parts in interleaved columns) viewed as complex. Without resampling
(``res_type=None``) every octave reads the same signal, so the transform is linear in ``y`` with adjoint ``sum
over octaves of unpad(overlap_add(Re(g @ Wc^H)))``. With a resampler (a soxr quality or ``"polyphase"``) the
octaves read the signal downsampled (early, then by two per octave); every such step is linear, written out in
:mod:`specux._resample_linear` (measured from libsoxr itself for the soxr qualities), whose adjoint carries
each octave's gradient back up the chain.
"""

from __future__ import annotations

import math

import numpy as np

from specux._backends.cpu.adjoint_frames import overlap_add, unpad
from specux._backends.cpu.cqt import (
    _n_frames,
    _octave_response,
    _octave_signals,
    early_signal,
    octave_frames,
    vqt_plan,
)
from specux._resample import SOXR_QUALITIES
from specux._resample_linear import downsample_adjoint
from specux._validate import VqtParams


def _octave_inputs(y: np.ndarray, p: VqtParams, bases: list[tuple[np.ndarray, int]]):
    """(signals read by each octave (B, n_octave), output frame count T) for ``y`` (..., n)."""
    plan = vqt_plan(p)
    signals = list(_octave_signals(early_signal(y, p, plan), plan, p.res_type))
    if p.res_type in SOXR_QUALITIES and not np.isfinite(signals[-1]).all():
        # a non-finite input, spread over whole blocks by libsoxr: again with it kept local (as vqt_cpu)
        signals = list(_octave_signals(early_signal(y, p, plan, local=True), plan, p.res_type, local=True))
    T = min(_n_frames(s.shape[-1], n_fft, o.hop) for s, (_, n_fft), o in zip(signals, bases, plan.octaves))
    return signals, T


def forward(y: np.ndarray, p: VqtParams, bases: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """vqt of ``y`` (..., n) with the given per-octave weights -> (..., n_bins, n_frames) complex."""
    plan = vqt_plan(p)
    rdtype = np.finfo(np.dtype(p.dtype)).dtype
    lead = y.shape[:-1]
    signals, T = _octave_inputs(y, p, bases)
    out = np.empty((signals[0].shape[0], p.n_bins, T), dtype=np.dtype(p.dtype))
    for s, (weights, n_fft), octave in zip(signals, bases, plan.octaves):
        _octave_response(
            s, np.asarray(weights, dtype=rdtype), n_fft, octave.hop, p.pad_mode, T, out[:, octave.rows]
        )
    return out.reshape(*lead, p.n_bins, T)


def weights_grad(
    g: np.ndarray, y: np.ndarray, p: VqtParams, bases: list[tuple[np.ndarray, int]], needs: list[bool]
) -> list[np.ndarray | None]:
    """Gradients of the per-octave frame weights (n_fft, 2 k) given ``g`` (..., n_bins, T), None where not
    needed.

    An octave's responses are ``frames @ (W[:, 0::2] + i W[:, 1::2])`` with real frames, so the gradient of
    the real and imaginary columns is ``frames^T Re(g)`` and ``frames^T Im(g)``: ``frames^T`` times ``g``
    viewed as interleaved reals, summed over the batch.
    """
    plan = vqt_plan(p)
    rdtype = np.finfo(np.dtype(p.dtype)).dtype
    signals, T = _octave_inputs(y, p, bases)
    G = np.asarray(g).reshape(-1, *g.shape[-2:])
    out: list[np.ndarray | None] = []
    for s, (_, n_fft), octave, need in zip(signals, bases, plan.octaves, needs):
        if not need:
            out.append(None)
            continue
        frames = octave_frames(s, n_fft, octave.hop, p.pad_mode, T)  # (B, T, n_fft)
        go = np.ascontiguousarray(G[:, octave.rows, :T].swapaxes(1, 2), dtype=np.dtype(p.dtype))  # (B, T, k)
        gv = go.view(rdtype)  # (B, T, 2 k): real and imaginary parts interleaved, as the weights' columns
        out.append(np.einsum("btn,btc->nc", frames, gv))
    return out


def adjoint(g: np.ndarray, n: int, p: VqtParams, bases: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Adjoint of :func:`forward`: complex (..., n_bins, T) -> real (..., n)."""
    plan = vqt_plan(p)
    rdtype = np.finfo(np.dtype(p.dtype)).dtype
    lead = g.shape[:-2]
    G = np.asarray(g).reshape(-1, *g.shape[-2:])
    # lengths of the signal each octave reads (the forward's downsampling chain)
    lengths = []
    length = math.ceil(n / plan.early_factor) if plan.early_factor > 1 else n
    for i, octave in enumerate(plan.octaves):
        if i > 0 and octave.sr != plan.octaves[i - 1].sr:
            length = math.ceil(length / 2)
        lengths.append(length)
    grads = []
    for (weights, n_fft), octave, length in zip(bases, plan.octaves, lengths):
        # columns 2j, 2j + 1 are filter j's real and imaginary parts: the weights viewed as complex, Wc, give
        # responses frames @ Wc, whose adjoint for real frames is Re(g @ Wc^H)
        Wc = np.ascontiguousarray(weights, dtype=rdtype).view(G.dtype)
        go = G[:, octave.rows, :].swapaxes(1, 2)  # (B, T, k)
        frames = (go @ Wc.conj().T).real  # (B, T, n_fft)
        pad = n_fft // 2
        padded = overlap_add(np.ascontiguousarray(frames, dtype=rdtype), octave.hop, length + 2 * pad)
        grads.append(unpad(padded, length, pad, p.pad_mode))
    # back up the chain: an octave that halved the rate passes its gradient through the resampler's adjoint
    for i in range(len(grads) - 1, 0, -1):
        if plan.octaves[i].sr != plan.octaves[i - 1].sr:
            grads[i - 1] = grads[i - 1] + downsample_adjoint(grads[i], lengths[i - 1], 2, p.res_type)
        else:
            grads[i - 1] = grads[i - 1] + grads[i]
    grad = grads[0]
    if plan.early_factor > 1:
        if not p.scale:
            grad = grad * rdtype.type(np.sqrt(plan.early_factor))
        grad = downsample_adjoint(grad, n, plan.early_factor, p.res_type)
    return grad.astype(rdtype, copy=False).reshape(*lead, n)
