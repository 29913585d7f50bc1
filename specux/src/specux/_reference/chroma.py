"""NumPy reference of the chroma filter banks and chroma features: element by element, float64, no
memoisation.

The oracles for :func:`specux.filters.chroma`, :func:`specux.filters.cq_to_chroma`, :func:`specux.chroma_stft`
and the folding step of :func:`specux.chroma_cqt`; they are checked against librosa and the MATLAB fixtures.
"""

from __future__ import annotations

import math

import numpy as np


def chroma_filter(
    *,
    sr: float,
    n_fft: int,
    n_chroma: int = 12,
    tuning: float = 0.0,
    ctroct: float = 5.0,
    octwidth: float | None = 2,
    norm: float | None = 2,
    base_c: bool = True,
) -> np.ndarray:
    """Chroma filter bank, shape (n_chroma, 1 + n_fft // 2), float64, computed one weight at a time.

    FFT bin j > 0 at ``j * sr / n_fft`` Hz sits at ``p_j = n_chroma * log2(f / (A440 / 16))`` chroma bins
    (``A440 = 440 * 2 ** (tuning / n_chroma)``); bin 0 sits 1.5 octaves below bin 1. The weight of pitch class
    c is ``exp(-0.5 * (2 d / w_j) ** 2)`` with ``d`` the distance from ``p_j`` to c wrapped into one octave
    and ``w_j = max(p_{j+1} - p_j, 1)`` (1 for the last bin); columns are normalised by ``norm``, weighted by
    ``exp(-0.5 ((p_j / n_chroma - ctroct) / octwidth) ** 2)``, and rows rotated so that row 0 is C
    (``base_c``).
    """
    a440 = 440.0 * 2.0 ** (tuning / n_chroma)
    position = np.zeros(n_fft)
    for j in range(1, n_fft):
        position[j] = n_chroma * math.log2((j * sr / n_fft) / (a440 / 16))
    position[0] = position[1] - 1.5 * n_chroma
    width = np.ones(n_fft)
    for j in range(n_fft - 1):
        width[j] = max(position[j + 1] - position[j], 1.0)
    half = round(n_chroma / 2.0)
    bank = np.zeros((n_chroma, n_fft))
    for j in range(n_fft):
        for c in range(n_chroma):
            d = (position[j] - c + half + 10 * n_chroma) % n_chroma - half
            bank[c, j] = math.exp(-0.5 * (2 * d / width[j]) ** 2)
        if norm is not None:
            column = bank[:, j]
            length = (
                np.max(np.abs(column)) if norm == np.inf else np.sum(np.abs(column) ** norm) ** (1 / norm)
            )
            if length >= np.finfo(np.float64).tiny:
                bank[:, j] = column / length
        if octwidth is not None:
            bank[:, j] *= math.exp(-0.5 * ((position[j] / n_chroma - ctroct) / octwidth) ** 2)
    if base_c:
        shift = 3 * (n_chroma // 12)
        bank = np.concatenate([bank[shift:], bank[:shift]], axis=0)
    return bank[:, : 1 + n_fft // 2]


def cq_to_chroma(
    n_input: int,
    *,
    bins_per_octave: int = 12,
    n_chroma: int = 12,
    fmin: float = 32.70319566257483,
    base_c: bool = True,
) -> np.ndarray:
    """Folding matrix (n_chroma, n_input): constant-Q bin i belongs to the pitch class nearest its pitch.

    With ``m = bins_per_octave / n_chroma`` bins per class, class g of each octave collects the ``m`` bins
    that start ``m // 2`` bins below its own bin ``g * m`` (wrapping around the octave); rows are then rotated
    by the pitch class of ``fmin`` (counted from C when ``base_c``, else from A).
    """
    n_merge = bins_per_octave // n_chroma
    midi_0 = (12 * (math.log2(fmin) - math.log2(440.0)) + 69) % 12
    rotation = round((midi_0 if base_c else midi_0 - 9) * n_chroma / 12.0)
    fold = np.zeros((n_chroma, n_input))
    for i in range(n_input):
        # position of bin i within its octave, shifted so that each group of n_merge is centred on its class
        group = ((i + n_merge // 2) % bins_per_octave) // n_merge
        fold[(group + rotation) % n_chroma, i] = 1.0
    return fold


def normalize_columns(X: np.ndarray, norm: float | None) -> np.ndarray:
    """Each column (axis -2 slice of the last two axes) divided by its ``norm`` unless that is below tiny."""
    if norm is None:
        return X.copy()
    out = np.array(X, dtype=np.float64)
    tiny = np.finfo(np.float64).tiny
    for idx in np.ndindex(*out.shape[:-2], out.shape[-1]):
        lead, t = idx[:-1], idx[-1]
        column = out[(*lead, slice(None), t)]
        mag = np.abs(column)
        if norm == np.inf:
            length = mag.max()
        elif norm == -np.inf:
            length = mag.min()
        elif norm == 0:
            length = float(np.count_nonzero(mag))
        else:
            length = np.sum(mag**norm) ** (1.0 / norm)
        if length >= tiny:
            out[(*lead, slice(None), t)] = column / length
    return out


def chroma_from_power(power: np.ndarray, bank: np.ndarray, norm: float | None) -> np.ndarray:
    """``bank @ power`` per frame, then per-frame normalisation: chroma_stft's last two steps."""
    raw = np.einsum("cf,...ft->...ct", bank.astype(np.float64), power.astype(np.float64))
    return normalize_columns(raw, norm)
