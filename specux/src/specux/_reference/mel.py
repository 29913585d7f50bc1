"""Reference mel spectrogram: the reference power spectrogram times the float64 bank, one band at a time."""

from __future__ import annotations

import numpy as np

from specux._reference.stft import stft
from specux._validate import MelParams


def melspectrogram(x: np.ndarray, p: MelParams) -> np.ndarray:
    """(..., L) signal (or (..., F, T) spectrogram when ``p.stft`` is None) -> (..., n_bands, T)."""
    if p.stft is None:
        S = np.asarray(x, dtype=np.float64)
    else:
        D = stft(np.asarray(x, dtype=np.float64), p.stft.__class__(**{**p.stft.__dict__, "dtype": "float64"}))
        S = np.abs(D) ** p.power
    bands = [np.sum(p.basis[m][:, None] * S, axis=-2) for m in range(p.basis.shape[0])]
    return np.stack(bands, axis=-2)
