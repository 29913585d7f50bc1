"""Reference stft / istft: a loop over frames with numpy.fft."""

from __future__ import annotations

import numpy as np

from specux._validate import IstftParams, StftParams


def apply_output(D: np.ndarray, output: str) -> np.ndarray:
    """Turn a complex spectrogram into the requested output mode."""
    if output == "complex":
        return D
    if output == "magnitude":
        return np.abs(D)
    if output == "power":
        return np.abs(D) ** 2
    return np.stack([D.real, D.imag], axis=-1)


def stft(y: np.ndarray, p: StftParams) -> np.ndarray:
    """(..., L) real -> (..., 1 + n_fft // 2, n_frames) in ``p.output`` mode, precision ``p.dtype``."""
    y = np.asarray(y, dtype=p.dtype)
    if p.center:
        pad = [(0, 0)] * (y.ndim - 1) + [(p.n_fft // 2, p.n_fft // 2)]
        y = np.pad(y, pad, mode=p.pad_mode)
    cdtype = np.result_type(y.dtype, np.complex64)
    D = np.zeros((*y.shape[:-1], p.n_fft // 2 + 1, p.n_frames), dtype=cdtype)
    window = p.window.astype(p.dtype)
    for t in range(p.n_frames):
        frame = y[..., t * p.hop_length : t * p.hop_length + p.n_fft]
        D[..., :, t] = np.fft.rfft(frame * window, axis=-1)
    return apply_output(D, p.output)


def window_sumsquare(window: np.ndarray, n_frames: int, hop_length: int, dtype: str) -> np.ndarray:
    """Sum over frames of the squared window placed every ``hop_length`` samples."""
    n_fft = window.shape[-1]
    out = np.zeros(n_fft + hop_length * (n_frames - 1), dtype=dtype)
    sq = (window**2).astype(dtype)
    for t in range(n_frames):
        out[t * hop_length : t * hop_length + n_fft] += sq
    return out


def istft(D: np.ndarray, p: IstftParams) -> tuple[np.ndarray, np.ndarray]:
    """(..., 1 + n_fft // 2, T) complex -> ((..., out_length) real, the window sum-square used).

    Overlap-add of windowed inverse FFTs, divided by the squared-window sum wherever it exceeds tiny(dtype).
    """
    D = np.asarray(D)[..., : p.n_frames]
    window = p.window.astype(p.dtype)
    full = np.zeros((*D.shape[:-2], p.n_fft + p.hop_length * (p.n_frames - 1)), dtype=p.dtype)
    for t in range(p.n_frames):
        frame = np.fft.irfft(D[..., :, t], n=p.n_fft, axis=-1).astype(p.dtype)
        full[..., t * p.hop_length : t * p.hop_length + p.n_fft] += frame * window
    wss = window_sumsquare(p.window, p.n_frames, p.hop_length, p.dtype)
    start = p.n_fft // 2 if p.center else 0
    y = np.zeros((*D.shape[:-2], p.out_length), dtype=p.dtype)
    w = np.zeros(p.out_length, dtype=p.dtype)
    piece = full[..., start : start + p.out_length]
    y[..., : piece.shape[-1]] = piece
    wpiece = wss[start : start + p.out_length]
    w[: wpiece.shape[-1]] = wpiece
    ok = w > np.finfo(p.dtype).tiny
    y[..., ok] /= w[ok]
    return y, w
