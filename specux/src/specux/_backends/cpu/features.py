"""The CPU kernels of the filter-bank features: melspectrogram (and the linear bank of lfcc), mfcc and
lfcc, plain functions on numpy arrays taking the validated parameters (:class:`specux._validate.MelParams`,
:class:`~specux._validate.CepstralParams`).

The power spectrogram is multiplied by the bank block by block of frames as :func:`.stft.spectrum_blocks`
writes them; the cepstral chain is bank, logarithm, DCT. The adjoints are in :mod:`.adjoint_features`.
"""

from __future__ import annotations

import numpy as np

from specux._backends.cpu.stft import _power_tf, spectrum_blocks
from specux._linalg import apply_along_rows
from specux._threads import single_threaded_blas
from specux._validate import CepstralParams, MelParams
from specux.convert import _power_to_db_numpy


def _bank_spectrogram(x: np.ndarray, p: MelParams) -> np.ndarray:
    """(..., L) signal or (..., F, T) spectrogram -> (..., n_bands, T) filter-bank energies."""
    basis = p.basis.astype(p.dtype, copy=False)
    if p.stft is None:
        return apply_along_rows(basis, np.asarray(x, dtype=p.dtype))
    y = np.asarray(x, dtype=p.dtype)
    batch = y.shape[:-1]
    y = y.reshape(-1, y.shape[-1])
    basis_t = np.ascontiguousarray(basis.T)
    out = np.empty((y.shape[0], p.stft.n_frames, basis.shape[0]), dtype=p.dtype)  # (B, T, bands)

    def bands(b: int, t0: int, X: np.ndarray) -> None:
        # power and bank product on the block the FFT just wrote, while it is in cache
        np.matmul(_power_tf(X, p.power), basis_t, out=out[b, t0 : t0 + X.shape[0]])

    # the blocks run on the pool's threads: one BLAS thread each
    with single_threaded_blas():
        spectrum_blocks(y, p.stft, bands)
    return out.reshape(batch + out.shape[1:]).swapaxes(-1, -2)


def _melspectrogram_numpy(x: np.ndarray, p: MelParams) -> np.ndarray:
    """melspectrogram on numpy (the cpu backend's implementation)."""
    return _bank_spectrogram(x, p)


def _torchaudio_db(x: np.ndarray, top_db: float | None) -> np.ndarray:
    """torchaudio's AmplitudeToDB('power'): 10 log10(max(x, 1e-10)); the top_db floor is taken per item of the
    input reshaped to (-1, C, F, T) with C = shape[-3] for inputs of 3 or more dimensions (torchaudio's
    rule)."""
    db = 10.0 * np.log10(np.maximum(x, x.dtype.type(1e-10)))
    if top_db is None or db.size == 0:
        return db
    packed = db.shape[-3] if db.ndim > 2 else 1
    groups = db.reshape(-1, packed * db.shape[-2] * db.shape[-1])
    with np.errstate(invalid="ignore"):
        peak = (
            np.nanmax(groups, axis=1, keepdims=True)
            if np.isnan(groups).any()
            else groups.max(1, keepdims=True)
        )
    return np.maximum(groups, (peak - top_db).astype(db.dtype)).reshape(db.shape)


def _log(x: np.ndarray, p: CepstralParams) -> np.ndarray:
    if p.log == "power_to_db":
        return _power_to_db_numpy(x, 1.0, 1e-10, p.top_db)
    if p.log == "torchaudio_db":
        return _torchaudio_db(x, p.top_db)
    if p.log == "log":
        return np.log(x + x.dtype.type(1e-6))
    return x  # "none": the input is already logarithmic (mfcc with S=)


def _cepstrum(x: np.ndarray, p: CepstralParams) -> np.ndarray:
    bands = _bank_spectrogram(x, p.mel) if p.mel.stft is not None else np.asarray(x, dtype=p.mel.dtype)
    logged = _log(bands, p)
    D = p.dct.astype(logged.dtype, copy=False)
    return apply_along_rows(D, logged)


def _mfcc_numpy(x: np.ndarray, p: CepstralParams) -> np.ndarray:
    """mfcc on numpy (the cpu backend's implementation)."""
    return _cepstrum(x, p)


def _lfcc_numpy(x: np.ndarray, p: CepstralParams) -> np.ndarray:
    """lfcc on numpy (the cpu backend's implementation)."""
    return _cepstrum(x, p)
