"""Mel filter banks: librosa's (Slaney or HTK scale) and torchaudio's variant of the HTK bank."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from specux import _memory, _validate
from specux.convert import hz_to_mel, mel_to_hz
from specux.errors import EmptyFilterWarning, user_stacklevel

__all__ = ["mel", "mel_frequencies", "mel_torchaudio"]

_CACHE_SIZE = 32


def mel_frequencies(
    n_mels: int = 128, *, fmin: float = 0.0, fmax: float = 11025.0, htk: bool = False
) -> np.ndarray:
    """``n_mels`` frequencies (Hz) equally spaced on the mel scale from ``fmin`` to ``fmax``.

    Parameters
    ----------
    n_mels : int
        Number of frequencies (>= 0).
    fmin, fmax : float, Hz
        The first and the last frequency.
    htk : bool
        HTK's mel scale instead of Slaney's.

    Returns
    -------
    numpy.ndarray, shape (n_mels,), float64, Hz

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.mel_frequencies(5, fmin=0.0, fmax=1000.0).round(1).tolist()   # linear below 1 kHz
    [0.0, 250.0, 500.0, 750.0, 1000.0]
    """
    n_mels = _validate.positive_int(n_mels, "n_mels", "mel_frequencies", minimum=0)
    fmin = _validate.real(fmin, "fmin", "mel_frequencies")
    fmax = _validate.real(fmax, "fmax", "mel_frequencies")
    htk = _validate.flag(htk, "htk", "mel_frequencies")
    _memory.check(3 * 8 * n_mels, public="mel_frequencies", parameter="n_mels", value=n_mels)
    mels = np.linspace(hz_to_mel(fmin, htk=htk), hz_to_mel(fmax, htk=htk), n_mels)
    return np.asarray(mel_to_hz(mels, htk=htk))


def _check(
    public: str, sr: Any, n_fft: Any, n_mels: Any, fmin: Any, fmax: Any, htk: Any, top: Callable
) -> tuple[float, int, int, float, float, bool]:
    """The bank's arguments checked and converted; ``fmax=None`` becomes ``top(sr)``."""
    sr = _validate.real(sr, "sr", public)
    if not sr > 0:
        raise ValueError(f"{public}: sr must be positive; got {sr}")
    n_fft = _validate.positive_int(n_fft, "n_fft", public)
    n_mels = _validate.positive_int(n_mels, "n_mels", public)
    fmin = _validate.real(fmin, "fmin", public)
    fmax = top(sr) if fmax is None else _validate.real(fmax, "fmax", public)
    htk = _validate.flag(htk, "htk", public)
    if not 0 <= fmin < fmax:
        raise ValueError(f"{public}: need 0 <= fmin < fmax; got fmin={fmin}, fmax={fmax}")
    if fmax > sr / 2 * (1 + 1e-12):
        raise ValueError(f"{public}: fmax={fmax} Hz is above the Nyquist frequency sr / 2 = {sr / 2} Hz")
    # the triangles are built from a few (n_mels + 2, 1 + n_fft // 2) float64 arrays at once
    _memory.check(
        5 * 8 * (n_mels + 2) * (n_fft // 2 + 1),
        public=public,
        parameter="n_mels",
        subject=f"a bank of n_mels={n_mels} filters over the {n_fft // 2 + 1} bins of n_fft={n_fft}",
        advice="use fewer n_mels or a smaller n_fft",
    )
    return sr, n_fft, n_mels, fmin, fmax, htk


def _warn_empty(weights: np.ndarray, n_mels: int, n_fft: int) -> None:
    empty = np.flatnonzero(~(weights.max(axis=1) > 0))
    if empty.size:
        warnings.warn(
            f"mel filter bank: {empty.size} of n_mels={n_mels} filters are empty (channels "
            f"{', '.join(map(str, empty[:8]))}{', ...' if empty.size > 8 else ''}): they fall between the "
            f"rfft bins of n_fft={n_fft}; reduce n_mels, raise n_fft or widen fmin..fmax",
            EmptyFilterWarning,
            stacklevel=user_stacklevel(),
        )


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _mel_cached(
    sr: float, n_fft: int, n_mels: int, fmin: float, fmax: float, htk: bool, norm: Any
) -> np.ndarray:
    fftfreqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
    mel_f = mel_frequencies(n_mels + 2, fmin=fmin, fmax=fmax, htk=htk)
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    if norm == "slaney":
        weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    elif norm is not None:
        lengths = np.linalg.norm(weights, ord=norm, axis=1, keepdims=True)
        weights = np.divide(weights, lengths, out=np.zeros_like(weights), where=lengths > 0)
    weights.flags.writeable = False
    return weights


def _norm_arg(norm: Any) -> Any:
    """The bank's norm: :func:`specux._validate.mel_norm`'s rules, without the fronts' "auto"."""
    return _validate.mel_norm(norm, "norm", "mel", auto=False)


def mel(
    *,
    sr: float,
    n_fft: int,
    n_mels: int = 128,
    fmin: float = 0.0,
    fmax: float | None = None,
    htk: bool = False,
    norm: str | float | None = "slaney",
    dtype: Any = np.float32,
) -> np.ndarray:
    """Mel filter bank (librosa.filters.mel): triangles on the mel scale over the rfft bins.

    Parameters
    ----------
    sr : float
        Sampling rate, Hz.
    n_fft : int
        FFT length; the bank covers its ``1 + n_fft // 2`` bins.
    n_mels : int
        Number of filters.
    fmin, fmax : float, Hz
        Lowest and highest edge of the bank. ``fmax=None``: ``sr / 2``. ``fmax`` above ``sr / 2`` is an error.
    htk : bool
        HTK mel scale instead of Slaney's.
    norm : None, "slaney" or float
        ``"slaney"``: filter ``i`` times ``2 / (f[i+2] - f[i])`` (constant energy per band); a number ``p``:
        unit ``p``-norm rows; ``None``: peak 1.
    dtype : numpy dtype
        Output dtype (built in float64, then cast).

    Returns
    -------
    numpy.ndarray, shape (n_mels, 1 + n_fft // 2)
        Read-only (cached). Filters that cover no bin give an :class:`specux.errors.EmptyFilterWarning`.

    Backends: host only (the banks feed every backend).

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> M = filters.mel(sr=22050, n_fft=2048, n_mels=64)
    >>> M.shape, M.dtype
    ((64, 1025), dtype('float32'))
    """
    sr, n_fft, n_mels, fmin, fmax, htk = _check("mel", sr, n_fft, n_mels, fmin, fmax, htk, lambda r: r / 2)
    weights = _mel_cached(sr, n_fft, n_mels, fmin, fmax, htk, _norm_arg(norm))
    _warn_empty(weights, n_mels, n_fft)
    out = weights.astype(dtype, copy=False)
    if out is not weights:
        out.flags.writeable = False
    return out


def _triangles_f32(all_freqs: np.ndarray, f_pts: np.ndarray) -> np.ndarray:
    """torchaudio's triangular bank in float32 arithmetic; shape (n_filters, n_freqs)."""
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts[None, :] - all_freqs[:, None]
    down = (np.float32(-1.0) * slopes[:, :-2]) / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return np.maximum(np.float32(0.0), np.minimum(down, up)).T


def _linspace_f32(start: float, end: float, steps: int) -> np.ndarray:
    """torch.linspace in float32: the first half counts up from ``start``, the second half down from
    ``end``."""
    if steps == 1:
        return np.array([start], dtype=np.float32)
    step = (np.float32(end) - np.float32(start)) / np.float32(steps - 1)  # float32 throughout, as torch
    i = np.arange(steps)
    half = steps // 2
    up = np.float32(start) + step * i[:half].astype(np.float32)
    down = np.float32(end) - step * (steps - 1 - i[half:]).astype(np.float32)
    return np.concatenate([up, down]).astype(np.float32)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _mel_torchaudio_cached(sr: int, n_fft: int, n_mels: int, fmin: float, fmax: float, htk: bool, norm: Any):
    all_freqs = _linspace_f32(0.0, float(sr // 2), n_fft // 2 + 1)
    m_min = 2595.0 * math.log10(1.0 + fmin / 700.0) if htk else float(hz_to_mel(fmin))
    m_max = 2595.0 * math.log10(1.0 + fmax / 700.0) if htk else float(hz_to_mel(fmax))
    m_pts = _linspace_f32(m_min, m_max, n_mels + 2)
    if htk:
        f_pts = np.float32(700.0) * (np.float32(10.0) ** (m_pts / np.float32(2595.0)) - np.float32(1.0))
    else:  # Slaney, evaluated in float32 as torchaudio does
        f_sp, min_log_mel = np.float32(200.0 / 3), np.float32(1000.0 / (200.0 / 3))
        logstep = np.float32(math.log(6.4) / 27.0)
        f_pts = np.where(
            m_pts >= min_log_mel,
            np.float32(1000.0) * np.exp(logstep * (m_pts - min_log_mel)),
            f_sp * m_pts,
        )
    f_pts = f_pts.astype(np.float32)
    weights = _triangles_f32(all_freqs, f_pts)
    if norm == "slaney":
        weights = weights * (np.float32(2.0) / (f_pts[2:] - f_pts[:-2]))[:, None]
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    weights.flags.writeable = False
    return weights


def mel_torchaudio(
    *,
    sr: int,
    n_fft: int,
    n_mels: int = 128,
    fmin: float = 0.0,
    fmax: float | None = None,
    htk: bool = True,
    norm: str | None = None,
) -> np.ndarray:
    """The mel bank torchaudio.functional.melscale_fbanks builds, transposed to (n_mels, 1 + n_fft // 2).

    Differences from :func:`mel`: the bin frequencies are ``linspace(0, sr // 2, 1 + n_fft // 2)`` (not
    ``rfftfreq``), everything is computed in float32, ``fmax=None`` means ``sr // 2``, and the defaults are
    torchaudio's (HTK scale, no normalisation).

    Parameters
    ----------
    sr : int
        Sampling rate, Hz.
    n_fft : int
        FFT length: the bank has ``1 + n_fft // 2`` columns.
    n_mels : int
        Number of filters.
    fmin, fmax : float, Hz
        Band edges. ``fmax=None``: ``sr // 2``.
    htk : bool
        HTK's mel scale (torchaudio's ``mel_scale="htk"``) or Slaney's (``"slaney"``).
    norm : {None, "slaney"}
        ``"slaney"`` scales each filter by 2 / its width in Hz (area normalisation), as torchaudio's ``norm``.

    Returns
    -------
    numpy.ndarray, shape (n_mels, 1 + n_fft // 2), float32, read-only

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.mel_torchaudio(sr=16000, n_fft=400, n_mels=40).shape
    (40, 201)
    """
    sr, n_fft, n_mels, fmin, fmax, htk = _check(
        "mel_torchaudio", sr, n_fft, n_mels, fmin, fmax, htk, lambda r: float(r // 2)
    )
    if not (norm is None or (isinstance(norm, str) and norm == "slaney")):
        raise ValueError(f"mel_torchaudio: norm must be None or 'slaney'; got {norm!r}")
    weights = _mel_torchaudio_cached(int(sr), n_fft, n_mels, fmin, fmax, htk, norm)
    _warn_empty(weights, n_mels, n_fft)
    return weights
