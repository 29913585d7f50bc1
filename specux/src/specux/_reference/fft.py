"""Reference DFTs straight from the definition (O(n^2) matrix products, float64 / complex128 arithmetic)."""

from __future__ import annotations

import numpy as np


def dft(x: np.ndarray, axis: int = -1, inverse: bool = False) -> np.ndarray:
    """Unnormalised DFT along ``axis``: ``X[k] = sum_j x[j] exp(-+2 pi i j k / n)``."""
    x = np.moveaxis(np.asarray(x, dtype=np.complex128), axis, -1)
    n = x.shape[-1]
    jk = np.outer(np.arange(n), np.arange(n)) % n  # reduce before scaling: exact phases for every n
    W = np.exp((2j if inverse else -2j) * np.pi * jk / n)
    return np.moveaxis(x @ W, -1, axis)


def rdft(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Bins ``0 .. n // 2`` of the DFT of real ``x``."""
    X = dft(x, axis)
    n = X.shape[axis]
    return np.take(X, np.arange(n // 2 + 1), axis=axis)


def irdft(X: np.ndarray, n: int, axis: int = -1) -> np.ndarray:
    """Unnormalised inverse DFT of a half spectrum with ``n // 2 + 1`` bins: rebuild the full Hermitian
    spectrum.

    As numpy does, only the real part of bin 0 (and of bin n / 2 for even n) is used.
    """
    X = np.moveaxis(np.asarray(X, dtype=np.complex128), axis, -1).copy()
    X[..., 0] = X[..., 0].real
    if n % 2 == 0:
        X[..., -1] = X[..., -1].real
    tail = np.conj(X[..., 1 : (n + 1) // 2][..., ::-1])
    full = np.concatenate([X, tail], axis=-1)
    return np.moveaxis(dft(full, -1, inverse=True).real, -1, axis)
