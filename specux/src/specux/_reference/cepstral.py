"""Reference MFCC / LFCC: bank energies, decibels, and the DCT written out from its definition (float64)."""

from __future__ import annotations

import numpy as np

from specux._reference.mel import melspectrogram
from specux._validate import CepstralParams


def dct_matrix(n_out: int, n_in: int, dct_type: int, norm: str | None) -> np.ndarray:
    """scipy's DCT-I / II / III along an axis of length ``n_in`` as a matrix (first ``n_out`` rows)."""
    N = n_in
    k = np.arange(n_out)[:, None]
    j = np.arange(N)[None, :]
    if dct_type == 2:
        M = 2.0 * np.cos(np.pi * k * (2 * j + 1) / (2 * N))
        if norm == "ortho":
            M = M * np.where(k == 0, np.sqrt(1.0 / (4 * N)), np.sqrt(1.0 / (2 * N)))
    elif dct_type == 3:
        M = 2.0 * np.cos(np.pi * (2 * k + 1) * j / (2 * N))
        M[:, 0] = 1.0
        if norm == "ortho":
            M = M / np.sqrt(2 * N)
            M[:, 0] = 1.0 / np.sqrt(N)
    else:  # type 1, over N - 1 intervals
        if norm == "ortho":
            ends = np.where((j == 0) | (j == N - 1), 1 / np.sqrt(2), 1.0)
            M = np.sqrt(2.0 / (N - 1)) * np.where((k == 0) | (k == N - 1), 1 / np.sqrt(2), 1.0) * ends
            M = M * np.cos(np.pi * k * j / (N - 1))
        else:
            M = 2.0 * np.cos(np.pi * k * j / (N - 1))
            M[:, 0] = 1.0
            M[:, -1] = np.where(k[:, 0] % 2 == 0, 1.0, -1.0)
    return M


def cepstrum(x: np.ndarray, p: CepstralParams) -> np.ndarray:
    """mfcc / lfcc from the parameters: bank energies -> log -> DCT -> lifter, all in float64."""
    E = melspectrogram(x, p.mel) if p.mel.stft is not None else np.asarray(x, dtype=np.float64)
    if p.log in ("power_to_db", "torchaudio_db"):
        L = 10.0 * np.log10(np.maximum(E, 1e-10))
        if p.top_db is not None:
            if p.log == "power_to_db":
                L = np.maximum(L, np.nanmax(L) - p.top_db)
            else:
                packed = L.shape[-3] if L.ndim > 2 else 1
                G = L.reshape(-1, packed, *L.shape[-2:])
                L = np.maximum(G, np.nanmax(G, axis=(1, 2, 3), keepdims=True) - p.top_db).reshape(L.shape)
    elif p.log == "log":
        L = np.log(E + 1e-6)
    else:
        L = E
    M = dct_matrix(p.n_coeffs, L.shape[-2], p.dct_type, p.norm) @ L
    if p.lifter > 0:
        n = np.arange(1, p.n_coeffs + 1)
        M = M * (1 + (p.lifter / 2) * np.sin(np.pi * n / p.lifter))[:, None]
    return M
