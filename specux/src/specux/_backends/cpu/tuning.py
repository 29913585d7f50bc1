"""The CPU kernels of tuning estimation (librosa 0.11), on numpy arrays: :func:`piptrack_numpy` finds the
spectral peaks of each frame with parabolic interpolation, :func:`estimate_from_peaks` keeps the peaks whose
magnitude reaches the median and passes their frequencies to :func:`pitch_histogram`, which takes the mode
of a histogram of their deviations from the nearest bin.

The fronts (:mod:`specux.ops.tuning`) validate the arguments, dispatch, and compute a signal's spectrogram;
the chroma ops that estimate the tuning of their own power spectrogram (``tuning=None``: the torch ops' and
the fronts') call :func:`estimate_from_spectrogram`. Nothing here imports torch.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from specux import _memory

#: the defaults of :func:`specux.estimate_tuning` and :func:`specux.piptrack`, spelled once: the public
#: signatures take them from here, and so does :func:`estimate_from_spectrogram` (librosa's chroma_stft
#: leaves them at their defaults too)
N_FFT = 2048
RESOLUTION = 0.01
FMIN = 150.0
FMAX = 4000.0
THRESHOLD = 0.1

__all__ = [
    "estimate_from_peaks",
    "estimate_from_spectrogram",
    "piptrack_numpy",
    "pitch_histogram",
    "spectrogram_n_fft",
]


def pitch_histogram(freqs: np.ndarray, resolution: float, bins_per_octave: int) -> float:
    """:func:`specux.pitch_tuning` of the 1-D frequencies ``freqs`` (Hz; values <= 0 ignored) with checked
    ``resolution`` and ``bins_per_octave``: the left edge of the most populated histogram bin of their
    offsets from the nearest bin; 0.0 with a warning when no frequency is positive."""
    freqs = freqs[freqs > 0]
    if freqs.size == 0:
        warnings.warn(
            "pitch_tuning: no positive frequencies to estimate tuning from; returning 0.0", stacklevel=3
        )
        return 0.0
    # bins above A0 = 27.5 Hz, in the input's precision as librosa computes it
    residual = np.mod(bins_per_octave * np.log2(freqs / (440.0 / 16)), 1.0)
    residual[residual >= 0.5] -= 1.0
    edges = np.linspace(-0.5, 0.5, math.ceil(1.0 / resolution) + 1)
    counts, _ = np.histogram(residual, edges)
    return float(edges[np.argmax(counts)])


def _parabolic_shift(S: np.ndarray) -> np.ndarray:
    """Offset (in bins, along axis -2) of the vertex of the parabola through each bin and its two
    neighbours."""
    shift = np.zeros_like(S)
    below, centre, above = S[..., :-2, :], S[..., 1:-1, :], S[..., 2:, :]
    a = above + below - 2 * centre
    b = (above - below) / 2
    # a vertex more than one bin away is not a local peak: no shift there (and no division by a == 0)
    ok = np.abs(b) < np.abs(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift[..., 1:-1, :] = np.where(ok, -b / np.where(ok, a, 1), 0)
    return shift


def _local_max(S: np.ndarray) -> np.ndarray:
    """True where a bin exceeds the bin below and is at least the bin above (axis -2); the top bin needs only
    to exceed its neighbour, the bottom bin is never a maximum."""
    peak = np.zeros(S.shape, dtype=bool)
    peak[..., 1:-1, :] = (S[..., 1:-1, :] > S[..., :-2, :]) & (S[..., 1:-1, :] >= S[..., 2:, :])
    peak[..., -1, :] = S[..., -1, :] > S[..., -2, :]
    return peak


def spectrogram_n_fft(S: np.ndarray, n_fft: int | None) -> int:
    """``n_fft``, or ``2 * (F - 1)`` where it is None or does not match the ``F`` rows of ``S``
    (..., F, T)."""
    if n_fft is None or n_fft // 2 + 1 != S.shape[-2]:
        n_fft = 2 * (S.shape[-2] - 1)
    return n_fft


def piptrack_numpy(
    S: np.ndarray, sr: float, n_fft: int, fmin: float, fmax: float, threshold: float, ref: Any
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`specux.piptrack` of the magnitude (or power) spectrogram ``S`` (..., 1 + n_fft // 2, T) with
    checked parameters: (pitches, magnitudes), each of ``S``'s shape and precision, 0 off the peaks."""
    # the gradient, shift, peaks and the two results: about ten arrays the size of the spectrogram
    _memory.check(
        10 * S.nbytes,
        public="piptrack",
        parameter="n_fft",
        value=n_fft,
        detail=f"peak picking on a spectrogram of shape {S.shape}",
        advice="use a smaller n_fft or a larger hop_length, or pass a shorter signal",
    )
    S_ = np.abs(S)
    fmin = max(fmin, 0.0)
    fmax = min(fmax, sr / 2)
    freqs = np.fft.rfftfreq(n_fft, d=1.0 / sr)

    slope = np.gradient(S_, axis=-2)
    shift = _parabolic_shift(S_)
    in_range = ((fmin <= freqs) & (freqs < fmax))[:, None]
    if ref is None:
        ref_value = threshold * np.max(S_, axis=-2, keepdims=True)
    elif callable(ref):
        ref_value = np.expand_dims(threshold * ref(S_, axis=-2), -2)
    else:
        ref_value = np.abs(ref)
    peaks = in_range & _local_max(S_ * (S_ > ref_value))
    bin_index = np.arange(S_.shape[-2], dtype=S_.dtype)[:, None]
    pitches = np.where(peaks, (bin_index + shift) * S_.dtype.type(float(sr) / n_fft), 0).astype(S_.dtype)
    mags = np.where(peaks, S_ + 0.5 * slope * shift, 0).astype(S_.dtype)
    return pitches, mags


def estimate_from_peaks(pitch: np.ndarray, mag: np.ndarray, resolution: float, bins_per_octave: int) -> float:
    """:func:`specux.estimate_tuning` of piptrack's ``pitch`` and ``mag``: the peaks whose magnitude is at
    least the median peak magnitude vote with their frequencies (:func:`pitch_histogram`)."""
    voiced = pitch > 0
    threshold = np.median(mag[voiced]) if voiced.any() else 0.0
    return pitch_histogram(pitch[(mag >= threshold) & voiced], resolution, bins_per_octave)


def estimate_from_spectrogram(S: np.ndarray, *, sr: float, bins_per_octave: int) -> float:
    """``specux.estimate_tuning(S=S, sr=sr, bins_per_octave=bins_per_octave)`` (every other argument at its
    default, as librosa's chroma_stft calls it) of a numpy spectrogram ``S`` (..., F, T) that the caller
    computed and checked, with ``sr`` and ``bins_per_octave`` checked: the same number, without the
    fronts' dispatch."""
    sr = float(sr)
    pitch, mag = piptrack_numpy(S, sr, spectrogram_n_fft(S, N_FFT), FMIN, FMAX, THRESHOLD, None)
    return estimate_from_peaks(pitch, mag, RESOLUTION, bins_per_octave)
