"""Tuning estimation: how far a recording's pitches sit from the A440 equal-tempered grid (librosa 0.11).

:func:`piptrack` finds spectral peaks per frame with parabolic interpolation; :func:`estimate_tuning` keeps
the peaks whose magnitude reaches the median and passes their frequencies to :func:`pitch_tuning`, which
takes the mode of a histogram of their deviations from the nearest bin. These are the fronts (validation,
dispatch, a signal's spectrogram); the kernels are the CPU backend's (:mod:`specux._backends.cpu.tuning`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from specux import _arrays, _memory, _validate
from specux._backend_doc import backends_doc
from specux._backends.cpu import tuning as kernels
from specux._backends.cpu.tuning import FMAX, FMIN, N_FFT, RESOLUTION, THRESHOLD
from specux._dask import dask_route
from specux._dispatch import prepare
from specux.ops.stft import stft

__all__ = ["estimate_tuning", "piptrack", "pitch_tuning"]


@backends_doc("pitch_tuning")
@dask_route("pitch_tuning")
def pitch_tuning(frequencies: Any, *, resolution: float = RESOLUTION, bins_per_octave: int = 12) -> float:
    """Tuning deviation of a set of frequencies from A440 equal temperament, in fractions of a bin.

    Each frequency's offset from the nearest bin (``bins_per_octave`` bins per octave, A440 grid) is taken in
    [-0.5, 0.5); the result is the left edge of the most populated histogram bin of width ``resolution``.

    Parameters
    ----------
    frequencies : array-like of float, Hz
        Frequencies; values <= 0 are ignored.
    resolution : float in (0, 1)
        Histogram bin width in fractions of a bin.
    bins_per_octave : int > 0
        Bins per octave of the grid.

    Returns
    -------
    float
        Deviation in [-0.5, 0.5) fractions of a bin; 0.0 (with a warning) when no frequency is positive.

    Notes
    -----
    {backends} Autograd / torch.compile: not applicable (returns a
    Python float).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> freqs = 440.0 * 2 ** (np.array([0.1, 2.1, 4.1]) / 12)   # every pitch 10 cents sharp
    >>> round(specux.pitch_tuning(freqs), 2)
    0.1
    """
    resolution, bins_per_octave = _check_grid(resolution, bins_per_octave, "pitch_tuning")
    freqs = np.atleast_1d(_arrays.to_numpy(frequencies))
    return kernels.pitch_histogram(freqs, resolution, bins_per_octave)


def _check_grid(resolution: Any, bins_per_octave: Any, public: str) -> tuple[float, int]:
    """resolution in (0, 1) and bins_per_octave >= 1, checked (and the histogram's size guarded)."""
    resolution = _validate.real(resolution, "resolution", public)
    if not 0 < resolution < 1:
        raise ValueError(f"{public}: resolution must be in (0, 1); got {resolution!r}")
    bins_per_octave = _validate.positive_int(bins_per_octave, "bins_per_octave", public)
    # the histogram's edges and counts
    _memory.check(
        16 * (math.ceil(1.0 / resolution) + 1),
        public=public,
        parameter="resolution",
        value=resolution,
        advice="use a larger resolution",
    )
    return resolution, bins_per_octave


def magnitude_spectrogram(
    y: Any,
    S: Any,
    n_fft: int | None,
    hop_length: int | None,
    win_length: int | None,
    window: Any,
    center: bool,
    pad_mode: str,
    power: float,
    public: str,
) -> tuple[np.ndarray, int]:
    """(|STFT(y)| ** power, n_fft), or ``S`` with ``n_fft`` inferred from its frequency axis."""
    if S is not None:
        S = _arrays.to_numpy(S)
        _validate.spectrogram_shape(S, public)
        return S, kernels.spectrogram_n_fft(S, n_fft)
    if y is None:
        raise ValueError(f"{public}: pass either y (a signal) or S (a spectrogram)")
    if n_fft is None:
        raise ValueError(f"{public}: n_fft must be a positive integer when y is given; got None")
    # the magnitude first, then the power, as librosa computes it (|D| ** 2 rather than re**2 + im**2)
    mag = stft(
        _arrays.to_numpy(y),
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        output="magnitude",
        backend="cpu",
    )
    return (mag if power == 1 else mag**power), n_fft


@backends_doc("piptrack")
def piptrack(
    y: Any = None,
    *,
    sr: float = 22050,
    S: Any = None,
    n_fft: int | None = N_FFT,
    hop_length: int | None = None,
    fmin: float = FMIN,
    fmax: float = FMAX,
    threshold: float = THRESHOLD,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    ref: float | Any = None,
    backend: str = "auto",
) -> tuple[Any, Any]:
    """Pitch tracking by parabolically interpolated peaks of a magnitude spectrogram.

    In each frame, bins between ``fmin`` and ``fmax`` that are local maxima of the magnitude (after zeroing
    magnitudes at or below ``threshold * ref``) become peaks; a parabola through each peak and its neighbours
    refines its frequency and magnitude.

    Parameters
    ----------
    y : ndarray or torch.Tensor, shape (..., n), or None
        Signal; used when ``S`` is None.
    sr : float > 0
        Sampling rate in Hz.
    S : ndarray, shape (..., 1 + n_fft // 2, n_frames), or None
        Magnitude (or power) spectrogram; its absolute value is used.
    n_fft : int or None
        FFT size; inferred from ``S`` when it does not match ``S``'s frequency axis.
    hop_length, win_length, window, center, pad_mode
        STFT parameters for ``y`` (see :func:`specux.stft`; hop None means ``win_length // 4``).
    fmin, fmax : float, Hz
        Frequency range searched (``fmax`` is capped at ``sr / 2``).
    threshold : float
        Peaks must exceed ``threshold * ref``.
    ref : float, callable or None
        Reference magnitude: None means each frame's maximum; a callable is applied as ``ref(S, axis=-2)``.
    backend : {"auto", "cpu", ...}
        Only "cpu" serves this function.

    Returns
    -------
    pitches, magnitudes : ndarray, shape (..., 1 + n_fft // 2, n_frames)
        Interpolated frequency in Hz and magnitude at each peak, 0 elsewhere. Same library as the input.

    Notes
    -----
    {backends} Autograd: not supported. torch.compile: not supported.
    """
    src = y if S is None else S
    prepare(src, backend, "stft", "piptrack")  # served wherever stft is
    sr = _validate.positive_float(sr, "sr", "piptrack")
    fmin = _validate.real(fmin, "fmin", "piptrack", finite=False)
    fmax = _validate.real(fmax, "fmax", "piptrack", finite=False)
    threshold = _validate.real(threshold, "threshold", "piptrack", finite=False)
    S_, n_fft = magnitude_spectrogram(
        y, S, n_fft, hop_length, win_length, window, center, pad_mode, 1.0, "piptrack"
    )
    pitches, mags = kernels.piptrack_numpy(S_, sr, n_fft, fmin, fmax, threshold, ref)
    return _arrays.like(pitches, src), _arrays.like(mags, src)


@backends_doc("estimate_tuning")
@dask_route("estimate_tuning")
def estimate_tuning(
    y: Any = None,
    *,
    sr: float = 22050,
    S: Any = None,
    n_fft: int | None = N_FFT,
    resolution: float = RESOLUTION,
    bins_per_octave: int = 12,
    backend: str = "auto",
    **piptrack_kwargs: Any,
) -> float:
    """Estimate the tuning of a signal (or spectrogram) as a deviation from A440 in fractions of a bin.

    Peaks found by :func:`piptrack` whose magnitude is at least the median peak magnitude vote with their
    frequencies in :func:`pitch_tuning`. All batch channels are pooled into one estimate.

    Parameters
    ----------
    y : ndarray or torch.Tensor, shape (..., n), or None
        Signal; used when ``S`` is None.
    sr : float > 0
        Sampling rate in Hz.
    S : ndarray, shape (..., 1 + n_fft // 2, n_frames), or None
        Magnitude spectrogram.
    n_fft : int or None
        FFT size (inferred from ``S`` when it does not match).
    resolution : float in (0, 1)
        Resolution of the estimate in fractions of a bin.
    bins_per_octave : int > 0
        Bins per octave of the grid the deviation is measured against.
    backend : {"auto", "cpu", ...}
        Only "cpu" serves this function.
    **piptrack_kwargs
        hop_length, fmin, fmax, threshold, win_length, window, center, pad_mode, ref: see :func:`piptrack`.

    Returns
    -------
    float
        Tuning deviation in [-0.5, 0.5) fractions of a bin.

    Notes
    -----
    {backends} Autograd / torch.compile: not applicable (returns a
    Python float).

    Examples
    --------
    >>> import numpy as np
    >>> import specux
    >>> sr = 22050
    >>> y = np.sin(2 * np.pi * 440.0 * 2 ** (0.2 / 12) * np.arange(sr) / sr)   # A4, 20 cents sharp
    >>> round(specux.estimate_tuning(y=y, sr=sr), 1)
    0.2
    """
    resolution, bins_per_octave = _check_grid(resolution, bins_per_octave, "estimate_tuning")
    pitch, mag = piptrack(y, sr=sr, S=S, n_fft=n_fft, backend=backend, **piptrack_kwargs)
    pitch, mag = _arrays.to_numpy(pitch), _arrays.to_numpy(mag)
    return kernels.estimate_from_peaks(pitch, mag, resolution, bins_per_octave)
