"""Analytic backward of stft (every output mode) and istft, on NumPy arrays.

stft is ``rfft(window * frame(pad(y)))``; its adjoint runs the same steps transposed: the one-sided inverse
real FFT adjoint per frame, times the window, a deterministic overlap-add (:func:`overlap_add`), and the
adjoint of the centre padding. istft (``overlap-add(window * irfft(D)) / wsum``) is linear in ``D``; its
adjoint divides by the squared-window sum, frames (a gather), multiplies by the window and applies the adjoint
of ``irfft``.
"""

from __future__ import annotations

import numpy as np

from specux._backends.cpu import stft as _stft
from specux._backends.cpu.adjoint_frames import (
    INDEX_PAD_MODES,
    c2r_adjoint,
    frame,
    overlap_add,
    r2c_adjoint,
    unpad,
)
from specux._backends.cpu.stft import (
    _istft_numpy,
    _raw_frames,
    _spectrum_tf,
    _window_sumsquare,
    spectrum_blocks,
)
from specux._threads import for_each
from specux._validate import IstftParams, StftParams


def _padded_length(p: StftParams) -> int:
    return p.length + 2 * (p.n_fft // 2) if p.center else p.length


def spectrum_tf(y: np.ndarray, p: StftParams) -> np.ndarray:
    """(..., L) -> complex spectra (B, T, F) of the flattened batch (the forward's own layout)."""
    y = np.asarray(y, dtype=p.dtype)
    return _spectrum_tf(y.reshape(-1, y.shape[-1]), p)


def complex_grad_tf(grad: np.ndarray, y: np.ndarray | None, p: StftParams, output: str) -> np.ndarray:
    """The gradient with respect to the complex spectrum, (B, T, F), from the gradient of ``output``.

    ``complex``: the gradient itself; ``real_imag``: ``g[..., 0] + i g[..., 1]``; ``magnitude``:
    ``g X / |X|`` (0 where ``X = 0``, the subgradient of ``|.|`` there); ``power``: ``2 g X``.
    """
    F = p.n_fft // 2 + 1
    if output == "real_imag":
        g = grad[..., 0] + 1j * grad[..., 1]
        g = g.astype(np.result_type(p.dtype, np.complex64), copy=False)
    else:
        g = grad
    g = g.reshape(-1, F, p.n_frames).swapaxes(-1, -2)
    if output in ("complex", "real_imag"):
        return g
    return _modulus_grad(g, spectrum_tf(y, p), output)


def _modulus_grad(g: np.ndarray, X: np.ndarray, output: str) -> np.ndarray:
    """Gradient with respect to ``X`` of ``|X| ** 2`` (``power``) or ``|X|`` (``magnitude``), given ``g``."""
    if output == "power":
        return (2.0 * g) * X
    mag = np.abs(X)
    safe = np.where(mag > 0, mag, 1)
    return np.where(mag > 0, g * (X / safe), 0)


def window_grad(G_tf: np.ndarray, y: np.ndarray, p: StftParams) -> np.ndarray:
    """Gradient of the ``n_fft``-long window, given the gradient ``G_tf`` (B, T, F) of the complex spectrum.

    Frame ``t`` is ``w * f_t``, so ``dL/dw[n] = sum over items and frames of f_t[n] r_t[n]`` with ``r_t`` the
    gradient of the windowed frame (the one-sided FFT's adjoint of ``G_tf``). Samples outside a shorter
    window's support (``win_length < n_fft``) do not reach the forward, so their gradient is 0.
    """
    frames_grad = r2c_adjoint(G_tf, p.n_fft, axis=-1)
    y = np.asarray(y, dtype=p.dtype)
    raw = _raw_frames(y.reshape(-1, y.shape[-1]), p)
    gw = np.einsum("btn,btn->n", raw, frames_grad.astype(p.dtype, copy=False))
    if p.win_length < p.n_fft:
        lo = (p.n_fft - p.win_length) // 2
        gw[:lo] = 0
        gw[lo + p.win_length :] = 0
    return gw


def frames_adjoint(G: np.ndarray, p: StftParams, workers: int = -1) -> np.ndarray:
    """Gradient of the raw frames (..., n_fft) given the gradient ``G`` (..., F) of their spectra: the
    one-sided FFT's adjoint times the window."""
    frames = r2c_adjoint(G, p.n_fft, axis=-1, workers=workers).astype(p.dtype, copy=False)
    frames *= p.window.astype(p.dtype)
    return frames


def frames_to_signal(frames: np.ndarray, p: StftParams) -> np.ndarray:
    """Adjoint of framing the (padded) signal: frame gradients (B, T, n_fft) -> signal gradient (B, L)."""
    padded = overlap_add(frames, p.hop_length, _padded_length(p))
    pad = p.n_fft // 2 if p.center else 0
    return unpad(padded, p.length, pad, p.pad_mode)


def spectrum_adjoint(G_tf: np.ndarray, p: StftParams) -> np.ndarray:
    """Adjoint of :func:`spectrum_tf` (linear in the signal): complex (B, T, F) -> real (B, L).

    The numbers of ``frames_to_signal(frames_adjoint(G_tf, p), p)`` (the adjoint of the one-sided FFT, the
    window, :func:`overlap_add` and :func:`unpad`, each over the whole batch), computed in blocks of output
    samples spread over the cores, as the forward and istft run (:func:`.stft._istft_blocks`):
    each task owns ``hop``-sample rows ``m0 .. m1`` of the padded signal's gradient, transforms the frames
    that reach them (the first ``chunks - 1`` of them also belong to the previous task), and adds them up in a
    buffer that stays in cache in :func:`overlap_add`'s order, so no two tasks write the same samples. (All at
    once, 16 x 160000 samples: 60 ms, most of it passes over memory; in blocks, 2 cores: about 20 ms.)
    """
    if p.pad_mode not in ("constant", *INDEX_PAD_MODES):
        unpad(np.zeros((1, 1)), 1, 1, p.pad_mode)  # its error for a mode without a gradient
    B, T, F = G_tf.shape
    N, hop, L = p.n_fft, p.hop_length, p.length
    c = -(-N // hop)
    pad = N // 2 if p.center else 0
    Lp = _padded_length(p)
    R = min(T + c - 1, -(-Lp // hop))  # rows of the padded gradient that frames reach and the cut keeps
    window = p.window.astype(p.dtype)
    rdtype = np.empty(0, G_tf.dtype).real.dtype
    out = np.empty((B, L), dtype=p.dtype)
    # the padded gradient's samples outside the signal: added back onto the samples they copy (unpad)
    sides = np.zeros((B, 2 * pad), dtype=p.dtype) if pad and p.pad_mode != "constant" else None
    last = N // 2 if N % 2 == 0 else None
    per_task = max(c, _stft.block_rows(B, R, N, np.dtype(p.dtype).itemsize))
    # the window repeated over a few rows, as the forward multiplies its frames (spectrum_blocks): the same
    # products, without NumPy's slower broadcast of one row over the block
    tile = _stft.window_tile(window, per_task + c - 1)

    def run(span: list[tuple[int, int]]) -> None:
        h = np.empty((per_task + c - 1, F), dtype=G_tf.dtype)
        frames = np.empty((per_task + c - 1, N), dtype=rdtype)
        for b, m0 in span:
            m1 = min(R, m0 + per_task)
            f0, f1 = max(0, m0 - c + 1), min(T, m1)
            n = f1 - f0
            # r2c_adjoint: bins that stand for a conjugate pair halved, then the unscaled inverse
            np.copyto(h[:n], G_tf[b, f0:f1])
            h[:n, 1:last] *= 0.5
            _stft.irfft_into(h[:n], N, frames[:n])
            fr = frames[:n].astype(p.dtype, copy=False)
            _stft._times_tile(fr, tile)
            acc = np.zeros((m1 - m0, hop), dtype=p.dtype)
            for j in range(c):
                seg = fr[:, j * hop : (j + 1) * hop]
                ta, tb = max(f0, m0 - j), min(f1, m1 - j)
                if ta < tb:
                    acc[ta + j - m0 : tb + j - m0, : seg.shape[-1]] += seg[ta - f0 : tb - f0]
            flat = acc.reshape(-1)
            a, z = m0 * hop, min(m1 * hop, Lp)
            ka, kz = max(a, pad), min(z, pad + L)
            if ka < kz:
                out[b, ka - pad : kz - pad] = flat[ka - a : kz - a]
            if sides is not None:
                if a < pad:
                    sides[b, a : min(z, pad)] = flat[: min(z, pad) - a]
                ra = max(a, pad + L)
                if ra < z:
                    sides[b, pad + ra - (pad + L) : pad + z - (pad + L)] = flat[ra - a : z - a]

    jobs = [(b, m0) for b in range(B) for m0 in range(0, R, per_task)]
    for_each(run, _stft.spans(jobs, min(4 * _stft.cores(), len(jobs) // 4)))
    covered = R * hop - pad  # samples of the signal past those no frame reaches: zero
    if covered < L:
        out[:, max(0, covered) :] = 0
    if sides is not None:
        index = np.pad(np.arange(L), (pad, pad), mode=p.pad_mode)
        np.add.at(out, (slice(None), index[np.r_[0:pad, pad + L : L + 2 * pad]]), sides)
    return out


def stft_backward(
    grad: np.ndarray, y: np.ndarray | None, p: StftParams, batch: tuple[int, ...]
) -> np.ndarray:
    """Gradient of stft with respect to ``y`` (shape ``batch + (L,)``), given the gradient of its output.

    The ``power`` and ``magnitude`` outputs need the spectrum again: it is recomputed block by block of frames
    (:func:`.stft.spectrum_blocks`) and turned into the spectrum's gradient while in cache.
    """
    if p.output in ("complex", "real_imag"):
        return spectrum_adjoint(complex_grad_tf(grad, y, p, p.output), p).reshape((*batch, p.length))
    x = np.asarray(y, dtype=p.dtype).reshape(-1, p.length)
    g = np.asarray(grad).reshape(-1, p.n_fft // 2 + 1, p.n_frames)
    G = np.empty((x.shape[0], p.n_frames, p.n_fft // 2 + 1), dtype=np.result_type(g.dtype, np.complex64))

    def block(b: int, t0: int, X: np.ndarray) -> None:
        t1 = t0 + X.shape[0]
        G[b, t0:t1] = _modulus_grad(g[b, :, t0:t1].T, X, p.output)

    spectrum_blocks(x, p, block)
    return spectrum_adjoint(G, p).reshape((*batch, p.length))


def istft_adjoint(grad: np.ndarray, p: IstftParams, n_bins: int, frames_in: int) -> np.ndarray:
    """Adjoint of istft: real (..., out_length) -> complex (..., n_bins, frames_in).

    Frames past ``p.n_frames`` (not used by the forward) get zero gradient.
    """
    batch = grad.shape[:-1]
    g = np.asarray(grad, dtype=p.dtype).reshape(-1, p.out_length)
    start = p.n_fft // 2 if p.center else 0
    total = p.n_fft + p.hop_length * (p.n_frames - 1)
    wsum = _window_sumsquare(p)
    wsum_out = np.zeros(p.out_length, p.dtype)
    piece = wsum[start : start + p.out_length]
    wsum_out[: piece.size] = piece
    ok = wsum_out > np.finfo(p.dtype).tiny
    g = np.where(ok, g / np.where(ok, wsum_out, 1), g)
    # adjoint of "keep samples start .. start + out_length of the overlap-add (zero past its end)"
    full = np.zeros((g.shape[0], total), p.dtype)
    kept = max(0, min(p.out_length, total - start))
    full[:, start : start + kept] = g[:, :kept]
    frames = frame(full, p.n_fft, p.hop_length, p.n_frames) * p.window.astype(p.dtype)
    # the forward's irfft has norm "backward" (1 / n_fft)
    G = c2r_adjoint(frames, n_bins, axis=-1) / p.n_fft
    out = np.zeros((g.shape[0], n_bins, frames_in), G.dtype)
    out[:, :, : p.n_frames] = G.swapaxes(-1, -2)
    return out.reshape((*batch, n_bins, frames_in))


def istft_forward(D: np.ndarray, p: IstftParams) -> np.ndarray:
    """istft on numpy (the CPU kernel of :mod:`specux._backends.cpu.stft`)."""
    return _istft_numpy(D, p)
