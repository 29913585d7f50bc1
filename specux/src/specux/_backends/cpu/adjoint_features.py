"""Analytic backward of the spectral features (melspectrogram, mfcc, lfcc, chroma), on NumPy arrays.

Each feature is a chain ``y -> X = stft(y) -> |X| ** power -> filter bank -> [log] -> [DCT] -> [normalise]``;
the backward runs the transposed chain: ``D^T``, the derivative of the logarithm (including the ``top_db``
floor, whose gradient flows to the maximum it is measured from), ``basis^T``, ``power |X| ** (power - 2) X``
and the adjoint of the STFT (:func:`specux._backends.cpu.adjoint_stft.spectrum_adjoint`).
"""

from __future__ import annotations

import math

import numpy as np

from specux._backends.cpu.adjoint_stft import frames_adjoint, frames_to_signal, spectrum_tf, window_grad
from specux._backends.cpu.features import _bank_spectrogram, _log
from specux._backends.cpu.stft import _power_tf, spectrum_blocks
from specux._threads import single_threaded_blas
from specux._validate import CepstralParams, MelParams

_LN10 = math.log(10.0)


def power_grad(X: np.ndarray, gP: np.ndarray, power: float) -> np.ndarray:
    """Gradient with respect to complex ``X`` of ``|X| ** power`` given the gradient ``gP`` of the result.

    ``power |X| ** (power - 2) X gP``; 0 where ``X = 0`` (the subgradient for power <= 1, the gradient for
    power > 1).
    """
    if power == 2.0:
        return (2.0 * gP) * X
    mag = np.abs(X)
    nz = mag > 0
    safe = np.where(nz, mag, 1)
    factor = np.where(nz, power * safe ** (power - 2.0), 0).astype(mag.dtype, copy=False)
    return (gP * factor) * X


def bank_backward(g: np.ndarray, y: np.ndarray, p: MelParams) -> np.ndarray:
    """Gradient of ``basis @ |stft(y)| ** power`` with respect to ``y`` (..., L), given ``g`` (..., bands,
    T).

    Block by block of frames, as the forward computes them
    (:func:`specux._backends.cpu.stft.spectrum_blocks`): the spectrum, the gradient of the power, then of
    the frames, while the block is in cache; only the frames' gradients are kept for the overlap-add.
    """
    basis = p.basis.astype(p.dtype, copy=False)
    x = np.asarray(y, dtype=p.dtype).reshape(-1, y.shape[-1])
    B, T = x.shape[0], p.stft.n_frames
    gb = np.asarray(g, dtype=p.dtype).reshape(B, -1, T)  # (B, bands, T)
    frames = np.empty((B, T, p.stft.n_fft), dtype=p.dtype)

    def block(b: int, t0: int, X: np.ndarray) -> None:
        t1 = t0 + X.shape[0]
        gP = gb[b, :, t0:t1].T @ basis  # (frames, F)
        frames[b, t0:t1] = frames_adjoint(power_grad(X, gP, p.power), p.stft, workers=1)

    with single_threaded_blas():
        spectrum_blocks(x, p.stft, block)
    return frames_to_signal(frames, p.stft).reshape(y.shape)


def bank_constant_grads(
    g: np.ndarray, y: np.ndarray, p: MelParams, need_window: bool, need_basis: bool
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Gradients of ``basis @ |stft(y)| ** power`` with respect to the window (n_fft,) and the basis
    (bands, F), given ``g`` (..., bands, T); None for what is not needed.

    basis: ``sum over items and frames of g[b, :, t] P[b, t, :]`` with ``P = |X| ** power``; window: the
    spectrum's gradient ``power_grad(X, basis^T g)`` taken back to the window (:func:`window_grad`).
    """
    basis = p.basis.astype(p.dtype, copy=False)
    X = spectrum_tf(y, p.stft)  # (B, T, F)
    B, T, F = X.shape
    gb = np.asarray(g, dtype=p.dtype).reshape(B, -1, T)  # (B, bands, T)
    g_basis = g_window = None
    if need_basis:
        P = _power_tf(X, p.power)
        g_basis = gb.transpose(1, 0, 2).reshape(-1, B * T) @ P.reshape(B * T, F)
    if need_window:
        gP = (gb.swapaxes(-1, -2).reshape(B * T, -1) @ basis).reshape(B, T, F)
        g_window = window_grad(power_grad(X, gP, p.power), y, p.stft)
    return g_window, g_basis


def cepstral_constant_grads(
    g: np.ndarray, y: np.ndarray, p: CepstralParams, needs: tuple[bool, bool, bool]
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Gradients of ``dct @ log(basis @ |stft(y)| ** power)`` with respect to (window, basis, dct)."""
    need_window, need_basis, need_dct = needs
    bands = _bank_spectrogram(y, p.mel)
    gd = np.asarray(g, dtype=bands.dtype)
    g_dct = None
    if need_dct:
        logged = _log(bands, p)  # (..., bands, T)
        n = logged.shape[-2]
        g_dct = gd.swapaxes(-1, -2).reshape(-1, gd.shape[-2]).T @ logged.swapaxes(-1, -2).reshape(-1, n)
    g_window = g_basis = None
    if need_window or need_basis:
        D = p.dct.astype(bands.dtype, copy=False)
        g_bands = log_backward(bands, np.matmul(D.T, gd), p)
        g_window, g_basis = bank_constant_grads(g_bands, y, p.mel, need_window, need_basis)
    return g_window, g_basis, g_dct


def _floor_grad(db: np.ndarray, g: np.ndarray, top_db: float | None, groups: int) -> np.ndarray:
    """Gradient through ``max(db, peak - top_db)`` per group of ``db`` (rows after reshaping to ``groups``).

    Values lifted to the floor take it from the group's peak, so their gradient goes to the peak's position
    (the first maximum, as ``np.nanargmax`` finds it).
    """
    if top_db is None:
        return g
    d = db.reshape(groups, -1)
    gg = np.array(g.reshape(groups, -1))
    with np.errstate(invalid="ignore"):
        if np.isnan(d).all():
            return g
        peak = np.nanmax(d, axis=1, keepdims=True)
        clamped = d < (peak - top_db).astype(d.dtype)
    moved = np.where(clamped, gg, 0).sum(axis=1)
    gg[clamped] = 0
    finite = np.isfinite(peak[:, 0])
    rows = np.flatnonzero(finite)
    gg[rows, np.nanargmax(np.where(np.isnan(d[rows]), -np.inf, d[rows]), axis=1)] += moved[rows]
    return gg.reshape(g.shape)


def log_backward(bands: np.ndarray, g: np.ndarray, p: CepstralParams) -> np.ndarray:
    """Gradient of the cepstral logarithm (``p.log``) with respect to the filter-bank energies ``bands``."""
    if p.log == "log":
        return g / (bands + bands.dtype.type(1e-6))
    amin = bands.dtype.type(1e-10)
    db = 10.0 * np.log10(np.maximum(bands, amin))
    if p.log == "power_to_db":
        gdb = _floor_grad(db, g, p.top_db, 1)  # librosa: one maximum over the whole array
    elif p.log == "torchaudio_db":
        packed = db.shape[-3] if db.ndim > 2 else 1
        gdb = _floor_grad(db, g, p.top_db, db.size // (packed * db.shape[-2] * db.shape[-1]))
    else:
        raise ValueError(f"no gradient for the cepstral log mode {p.log!r}")
    above = bands > amin
    return np.where(above, gdb * (10.0 / _LN10) / np.where(above, bands, 1), 0).astype(
        bands.dtype, copy=False
    )


def cepstral_backward(g: np.ndarray, y: np.ndarray, p: CepstralParams) -> np.ndarray:
    """Gradient of ``dct @ log(basis @ |stft(y)| ** power)`` with respect to ``y``."""
    bands = _bank_spectrogram(y, p.mel)
    D = p.dct.astype(bands.dtype, copy=False)
    g_log = np.matmul(D.T, np.asarray(g, dtype=bands.dtype))
    g_bands = log_backward(bands, g_log, p)
    return bank_backward(g_bands, y, p.mel)


def normalize_backward(S: np.ndarray, g: np.ndarray, norm: float | None, axis: int = -2) -> np.ndarray:
    """Gradient of :func:`specux._normalize.normalize` (default threshold) of real ``S`` along ``axis``.

    ``y = S / l(S)``: ``g / l - (sum g S) / l**2 * dl/dS``; slices whose norm is below the threshold (left
    unchanged by the forward) pass ``g`` through.
    """
    if norm is None:
        return g
    S = np.asarray(S)
    tiny = np.finfo(np.result_type(S.dtype, np.float32)).tiny
    mag = np.abs(S)
    sign = np.sign(S)
    if norm == np.inf or norm == -np.inf:
        pick = np.argmax(mag, axis=axis) if norm == np.inf else np.argmin(mag, axis=axis)
        length = np.take_along_axis(mag, np.expand_dims(pick, axis), axis)
        dl = np.zeros_like(S)
        np.put_along_axis(
            dl, np.expand_dims(pick, axis), np.take_along_axis(sign, np.expand_dims(pick, axis), axis), axis
        )
    elif norm == 0:
        length = np.sum(mag > 0, axis=axis, keepdims=True).astype(S.dtype)
        dl = np.zeros_like(S)
    elif norm > 0:
        length = np.sum(mag**norm, axis=axis, keepdims=True) ** (1.0 / norm)
        safe = np.where(length > 0, length, 1)
        dl = sign * (mag / safe) ** (norm - 1.0)
    else:
        raise ValueError(f"norm must be None, inf, -inf, 0 or a positive number; got {norm!r}")
    small = length < tiny
    L = np.where(small, 1, length)
    inner = np.sum(g * S, axis=axis, keepdims=True)
    out = g / L - inner / (L * L) * dl
    return np.where(small, g, out).astype(S.dtype, copy=False)
