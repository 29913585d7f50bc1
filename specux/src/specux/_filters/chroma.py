"""The chroma filter bank: a map from STFT bins to pitch classes (librosa 0.11 ``filters.chroma``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from specux import _memory, _validate
from specux._normalize import normalize

__all__ = ["chroma"]


def chroma(
    *,
    sr: float,
    n_fft: int,
    n_chroma: int = 12,
    tuning: float = 0.0,
    ctroct: float = 5.0,
    octwidth: float | None = 2,
    norm: float | None = 2,
    base_c: bool = True,
    dtype: Any = np.float32,
) -> np.ndarray:
    """Filter bank mapping ``1 + n_fft // 2`` STFT bins onto ``n_chroma`` pitch classes.

    Each FFT bin ``f > 0`` is placed at ``n_chroma * log2(f / (A440 / 16))`` chroma bins, with ``A440 = 440 *
    2 ** (tuning / n_chroma)``; every pitch class receives a Gaussian bump of that distance (wrapped to one
    octave, width set by the bin's spacing), each column is normalised by ``norm``, then weighted by a
    Gaussian over octaves centred on ``ctroct`` with standard deviation ``octwidth`` octaves.

    Parameters
    ----------
    sr : float > 0
        Sampling rate in Hz.
    n_fft : int > 0
        FFT size.
    n_chroma : int > 0
        Number of pitch classes.
    tuning : float
        Tuning deviation from A440 in fractions of a chroma bin.
    ctroct : float
        Centre of the octave weighting, in octaves above A0 = 27.5 Hz (5.0: 880 Hz).
    octwidth : float > 0 or None
        Width of the octave weighting in octaves; None leaves all octaves unweighted.
    norm : float or None
        Column normalisation before the octave weighting (2: unit L2 norm; see ``librosa.util.normalize``).
    base_c : bool
        Row 0 is C when True, A when False.
    dtype : float dtype
        Output dtype.

    Returns
    -------
    ndarray, shape (n_chroma, 1 + n_fft // 2), read-only (memoised)

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.chroma(sr=22050, n_fft=2048).shape
    (12, 1025)
    """
    n_fft = _validate.positive_int(n_fft, "n_fft", "chroma")
    n_chroma = _validate.positive_int(n_chroma, "n_chroma", "chroma")
    sr = _validate.real(sr, "sr", "chroma")
    if not sr > 0:
        raise ValueError(f"chroma: sr must be > 0; got {sr}")
    tuning = _validate.real(tuning, "tuning", "chroma")
    ctroct = _validate.real(ctroct, "ctroct", "chroma")
    octwidth = _validate.optional_real(octwidth, "octwidth", "chroma")
    if octwidth is not None and not octwidth > 0:
        raise ValueError(f"chroma: octwidth must be > 0 or None; got {octwidth}")
    if norm is not None:
        _validate.real(norm, "norm", "chroma", finite=False)
    base_c = _validate.flag(base_c, "base_c", "chroma")
    # distances, weights and their normalisation: a few (n_chroma, n_fft) float64 arrays at once
    _memory.check(
        6 * 8 * n_chroma * n_fft,
        public="chroma",
        parameter="n_chroma",
        subject=f"a bank of n_chroma={n_chroma} rows over the bins of n_fft={n_fft}",
        advice="use fewer n_chroma or a smaller n_fft",
    )
    return _chroma_cached(sr, n_fft, n_chroma, tuning, ctroct, octwidth, norm, base_c, np.dtype(dtype).name)


@functools.lru_cache(maxsize=64)
def _chroma_cached(
    sr: float,
    n_fft: int,
    n_chroma: int,
    tuning: float,
    ctroct: float,
    octwidth: float | None,
    norm: float | None,
    base_c: bool,
    dtype_name: str,
) -> np.ndarray:
    a440 = 440.0 * 2.0 ** (tuning / n_chroma)
    freqs = np.linspace(0, sr, n_fft, endpoint=False)[1:]
    bins = n_chroma * np.log2(freqs / (a440 / 16))
    # the DC bin is placed 1.5 octaves below bin 1 so that it spreads broadly across pitch classes
    bins = np.concatenate(([bins[0] - 1.5 * n_chroma], bins))
    bin_width = np.concatenate((np.maximum(np.diff(bins), 1.0), [1.0]))

    half = np.round(n_chroma / 2.0)
    # distance of every bin to every pitch class, wrapped into [-half, n_chroma - half); the 10 * n_chroma
    # offset keeps the remainder's argument positive
    dist = np.subtract.outer(bins, np.arange(n_chroma, dtype=np.float64)).T
    dist = np.remainder(dist + half + 10 * n_chroma, n_chroma) - half
    weights = np.exp(-0.5 * (2 * dist / bin_width[None, :]) ** 2)
    weights = normalize(weights, norm=norm, axis=0)
    if octwidth is not None:
        weights = weights * np.exp(-0.5 * ((bins / n_chroma - ctroct) / octwidth) ** 2)[None, :]
    if base_c:
        weights = np.roll(weights, -3 * (n_chroma // 12), axis=0)
    out = np.ascontiguousarray(weights[:, : 1 + n_fft // 2], dtype=dtype_name)
    out.setflags(write=False)
    return out
