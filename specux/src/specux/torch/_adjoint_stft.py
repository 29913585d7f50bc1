"""Analytic backward of stft (every output mode) and istft, on NumPy arrays.

stft is ``rfft(window * frame(pad(y)))``; its adjoint runs the same steps transposed: the one-sided inverse
real FFT adjoint per frame, times the window, a deterministic overlap-add (:func:`overlap_add`), and the
adjoint of the centre padding. istft (``overlap-add(window * irfft(D)) / wsum``) is linear in ``D``; its
adjoint divides by the squared-window sum, frames (a gather), multiplies by the window and applies the adjoint
of ``irfft``.
"""

from __future__ import annotations

import numpy as np

from specux._validate import IstftParams, StftParams
from specux.ops.stft import _raw_frames, _spectrum_tf, _window_sumsquare, spectrum_blocks
from specux.torch._adjoint_frames import c2r_adjoint, frame, overlap_add, r2c_adjoint, unpad


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
    """Adjoint of :func:`spectrum_tf` (linear in the signal): complex (B, T, F) -> real (B, L)."""
    return frames_to_signal(frames_adjoint(G_tf, p), p)


def stft_backward(
    grad: np.ndarray, y: np.ndarray | None, p: StftParams, batch: tuple[int, ...]
) -> np.ndarray:
    """Gradient of stft with respect to ``y`` (shape ``batch + (L,)``), given the gradient of its output.

    The ``power`` and ``magnitude`` outputs need the spectrum again: it is recomputed block by block of frames
    (:func:`specux.ops.stft.spectrum_blocks`) and taken back to the frames' gradients while in cache.
    """
    if p.output in ("complex", "real_imag"):
        return spectrum_adjoint(complex_grad_tf(grad, y, p, p.output), p).reshape((*batch, p.length))
    x = np.asarray(y, dtype=p.dtype).reshape(-1, p.length)
    g = np.asarray(grad).reshape(-1, p.n_fft // 2 + 1, p.n_frames)
    frames = np.empty((x.shape[0], p.n_frames, p.n_fft), dtype=p.dtype)

    def block(b: int, t0: int, X: np.ndarray) -> None:
        t1 = t0 + X.shape[0]
        frames[b, t0:t1] = frames_adjoint(_modulus_grad(g[b, :, t0:t1].T, X, p.output), p, workers=1)

    spectrum_blocks(x, p, block)
    return frames_to_signal(frames, p).reshape((*batch, p.length))


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
    """istft on numpy (the CPU kernel of specux.ops.stft)."""
    from specux.ops.stft import _istft_numpy

    return _istft_numpy(D, p)
