"""Analytic backward of chroma_stft and chroma_cqt with respect to the signal, on numpy arrays: the adjoint of
the per-frame normalisation, the transposed bank (or fold), then the adjoint of the spectrogram (the power
stft, or the modulus of the constant-Q transform)."""

from __future__ import annotations

from typing import Any

import numpy as np

from specux._backends.cpu import adjoint_cq
from specux._backends.cpu.adjoint_features import normalize_backward, power_grad
from specux._backends.cpu.adjoint_stft import spectrum_adjoint, spectrum_tf
from specux._backends.cpu.chroma import fold
from specux._validate import StftParams, VqtParams


def chroma_stft_backward(
    g: np.ndarray, x: np.ndarray, p: StftParams, power: np.ndarray, B: np.ndarray, norm: Any
) -> np.ndarray:
    """Gradient with respect to the signal ``x`` of :func:`.chroma.chroma_from_power` of its power stft
    (parameters ``p``, the spectrogram ``power`` already computed), given the gradient ``g`` of the output."""
    Bc = B.astype(np.result_type(B.dtype, power.dtype), copy=False)
    raw = np.matmul(Bc, power)
    g_raw = normalize_backward(raw, g, norm, axis=-2)
    gP = np.matmul(Bc.T, g_raw).astype(power.dtype, copy=False)  # (..., F, T)
    X = spectrum_tf(x, p)  # (B, T, F)
    gX = power_grad(X, gP.reshape(-1, *gP.shape[-2:]).swapaxes(-1, -2), 2.0)
    return spectrum_adjoint(gX, p).reshape(x.shape).astype(p.dtype, copy=False)


def chroma_cqt_backward(
    grad: np.ndarray,
    x: np.ndarray,
    p: VqtParams,
    bases: list[tuple[np.ndarray, int]],
    M: np.ndarray,
    threshold: float,
    norm: Any,
) -> np.ndarray:
    """Gradient with respect to the signal ``x`` of :func:`.chroma.chroma_from_cq` of ``|vqt(x)|`` (the
    octaves' weights ``bases``), given the gradient ``grad`` of the output; zero where the threshold cut."""
    C = adjoint_cq.forward(x, p, bases)
    mag = np.abs(C)
    chroma = fold(M, mag)
    kept = chroma >= threshold
    chroma[~kept] = 0.0
    g = normalize_backward(chroma, grad, norm, axis=-2) * kept
    gmag = np.matmul(M.astype(g.dtype, copy=False).T, g).astype(mag.dtype, copy=False)
    gC = np.where(mag > 0, gmag * C / np.where(mag > 0, mag, 1), 0)
    return adjoint_cq.adjoint(gC, x.shape[-1], p, bases).astype(x.dtype, copy=False)
