"""The CPU kernels of chroma_stft and chroma_cqt after their spectrograms: the filter bank (or constant-Q
fold), the threshold and the per-frame normalisation, on numpy arrays. The fronts (:mod:`specux.ops.chroma`)
and the torch ops compute the spectrogram and the tuning first; the adjoints are in :mod:`.adjoint_chroma`."""

from __future__ import annotations

from typing import Any

import numpy as np

from specux._normalize import normalize


def chroma_from_power(power: np.ndarray, bank: np.ndarray, norm: Any) -> np.ndarray:
    """``bank`` (n_chroma, F) applied to the power spectrogram (..., F, T), each frame normalised by
    ``norm``: (..., n_chroma, T), in the precision of ``bank`` and ``power`` together."""
    raw = np.matmul(bank.astype(np.result_type(bank.dtype, power.dtype), copy=False), power)
    return normalize(raw, norm=norm, axis=-2)


def fold(M: np.ndarray, mag: np.ndarray) -> np.ndarray:
    """The constant-Q magnitudes (..., n_bins, T) folded onto the pitch classes by ``M`` (n_chroma,
    n_bins)."""
    return np.matmul(M.astype(np.result_type(M.dtype, mag.dtype), copy=False), mag)


def chroma_from_cq(mag: np.ndarray, M: np.ndarray, threshold: float | None, norm: Any) -> np.ndarray:
    """chroma_cqt of constant-Q magnitudes ``mag`` (..., n_bins, T): the fold by ``M``, values below
    ``threshold`` set to zero (None: none), each frame normalised by ``norm``."""
    chroma = fold(M, mag)
    if threshold is not None:
        chroma[chroma < threshold] = 0.0
    return normalize(chroma, norm=norm, axis=-2)
