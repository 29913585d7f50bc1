"""NumPy reference of the constant-Q / variable-Q transforms: plain loops, float64, no memoisation.

Two references:

:func:`vqt`
    librosa 0.11's multirate algorithm step by step: per octave, the FFT of every centred frame (window of
    ones) times the frequency-domain basis, then downsampling by two while the hop is even. This is the
    oracle for ``specux.vqt`` and is itself checked against ``librosa.vqt``.
:func:`vqt_direct`
    The definition without any FFT or resampling: the response of filter k at frame t is the inner product of
    the signal around sample ``t * hop_length`` with the time-domain filter. ``specux.vqt(..., res_type=None,
    sparsity=0)`` must match it closely.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.fft

from specux._filters import constant_q as cqf
from specux._resample import downsample


def _bank(sr: float, n_bins: int, fmin: float, bins_per_octave: int, intervals: Any, tuning: float):
    fmin = fmin * 2.0 ** (tuning / bins_per_octave)
    freqs = cqf.cq_frequencies(n_bins, fmin=fmin, bins_per_octave=bins_per_octave, intervals=intervals)
    alpha = cqf.equal_temperament_alpha(bins_per_octave) if n_bins == 1 else cqf.relative_bandwidth(freqs)
    return freqs, alpha


def _centred_frames(x: np.ndarray, n_fft: int, hop: int, pad_mode: str) -> np.ndarray:
    """Frames (n_frames, n_fft) of ``x`` padded by ``n_fft // 2`` on both sides; frame t starts at t * hop."""
    padded = np.pad(x, n_fft // 2, mode=pad_mode)
    n_frames = 1 + (padded.size - n_fft) // hop
    return np.stack([padded[t * hop : t * hop + n_fft] for t in range(n_frames)])


def vqt(
    y: np.ndarray,
    *,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    n_bins: int = 84,
    intervals: Any = "equal",
    gamma: float | None = None,
    bins_per_octave: int = 12,
    tuning: float = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    sparsity: float = 0.01,
    window: Any = "hann",
    scale: bool = True,
    pad_mode: str = "constant",
    res_type: str | None = "soxr_hq",
) -> np.ndarray:
    """Multirate variable-Q transform of a 1-D signal, computed step by step (see the module docstring).

    Parameters are those of :func:`specux.vqt` (``tuning`` must be a number); ``res_type=None`` keeps every
    octave at the full rate and uses the two-sided basis (all FFT bins), which makes it the direct computation
    of :func:`vqt_direct` when ``sparsity=0``.

    Returns
    -------
    ndarray, shape (n_bins, n_frames), complex128
    """
    if not isinstance(intervals, str):
        bins_per_octave = len(intervals)
    # Python floats, as the public functions take them: a numpy float32 sr would make this arithmetic
    # single precision (the reference is float64 throughout)
    sr, tuning, filter_scale = float(sr), float(tuning), float(filter_scale)
    gamma = None if gamma is None else float(gamma)
    fmin = cqf.c1_hz() if fmin is None else float(fmin)
    freqs, alpha = _bank(sr, n_bins, fmin, bins_per_octave, intervals, tuning)
    _, cutoff = cqf.wavelet_lengths(
        freqs=freqs, sr=sr, window=window, filter_scale=filter_scale, gamma=gamma, alpha=alpha
    )
    cqf.check_nyquist(cutoff, sr, float(freqs[-1]))
    n_octaves = math.ceil(n_bins / bins_per_octave)
    n_filters = min(bins_per_octave, n_bins)

    x = np.asarray(y, dtype=np.float64)
    hop = hop_length
    if res_type is not None:
        # early downsampling: halve while the bank leaves an octave of headroom below Nyquist and the hop
        # keeps enough factors of two for the octaves that follow
        by_bandwidth = max(0, math.ceil(math.log2(sr / 2 / cutoff)) - 2)
        twos = 0
        while hop % (2 ** (twos + 1)) == 0:
            twos += 1
        count = min(by_bandwidth, max(0, twos - n_octaves + 1))
        if count > 0:
            factor = 2**count
            x = downsample(x[None, :], factor, res_type)[0]
            if not scale:
                x = x * np.sqrt(factor)
            sr, hop = sr / factor, hop // factor

    responses = []  # (first row, response) per octave
    my_x, my_sr, my_hop = x, sr, hop
    for i in range(n_octaves):
        stop = n_bins - n_filters * i
        start = max(0, stop - n_filters)
        oct_alpha = alpha[start:stop] if alpha.size > 1 else alpha
        filters, lengths = cqf.wavelet(
            freqs=freqs[start:stop],
            sr=my_sr,
            window=window,
            filter_scale=filter_scale,
            pad_fft=True,
            norm=norm,
            dtype=np.complex128,
            gamma=gamma,
            alpha=oct_alpha,
        )
        n_fft = filters.shape[1]
        scaled = filters * (lengths[:, None] / n_fft)
        frames = _centred_frames(my_x, n_fft, my_hop, pad_mode)
        if res_type is None:
            # no resampling: all n_fft bins, so that basis times spectrum is the filter's inner product
            basis = cqf._sparsify_rows(np.fft.fft(scaled, axis=1), sparsity)
            spectra = np.fft.fft(frames, axis=1)
        else:
            # librosa's one-sided basis; the entries kept are chosen on its single-precision version
            half = n_fft // 2 + 1
            basis = np.fft.fft(scaled, axis=1)[:, :half]
            if sparsity > 0:
                single = filters.astype(np.complex64)
                single *= lengths[:, None] / n_fft
                keep = cqf._sparsify_mask(scipy.fft.fft(single, axis=1)[:, :half], sparsity)
                basis = np.where(keep, basis, 0)
            spectra = np.fft.rfft(frames, axis=1)
        basis = basis * np.sqrt(sr / my_sr)
        responses.append((start, basis @ spectra.T))
        if res_type is not None and my_hop % 2 == 0:
            my_hop //= 2
            my_sr /= 2.0
            my_x = downsample(my_x[None, :], 2, res_type)[0]

    n_frames = min(r.shape[1] for _, r in responses)
    out = np.zeros((n_bins, n_frames), dtype=np.complex128)
    for start, r in responses:
        out[start : start + r.shape[0]] = r[:, :n_frames]
    if scale:
        lengths, _ = cqf.wavelet_lengths(
            freqs=freqs, sr=sr, window=window, filter_scale=filter_scale, gamma=gamma, alpha=alpha
        )
        out /= np.sqrt(lengths)[:, None]
    return out


def vqt_direct(
    y: np.ndarray,
    *,
    sr: float = 22050,
    hop_length: int = 512,
    fmin: float | None = None,
    n_bins: int = 84,
    intervals: Any = "equal",
    gamma: float | None = None,
    bins_per_octave: int = 12,
    tuning: float = 0.0,
    filter_scale: float = 1,
    norm: float | None = 1,
    window: Any = "hann",
    scale: bool = True,
    pad_mode: str = "constant",
    n_frames: int | None = None,
) -> np.ndarray:
    """Variable-Q transform by direct inner products at the full rate: no FFT, sparsity or resampling.

    ``C[k, t] = L_k * sum_j h_k[j] * x[t * hop_length + c_k - j]``, where ``h_k`` is filter k of
    :func:`specux.filters.wavelet` (``ceil(L_k)`` samples, normalised by ``norm``), ``c_k = len(h_k) -
    len(h_k) // 2`` puts the filter's centre on sample ``t * hop_length``, and ``x`` is extended beyond its
    ends by ``pad_mode``; with ``scale`` the result is divided by ``sqrt(L_k)``. The multirate algorithm
    computes this product through FFTs of centred frames; summing over non-negative frequencies only and
    sparsifying the basis are its approximations.

    Returns
    -------
    ndarray, shape (n_bins, n_frames), complex128
        ``n_frames`` defaults to ``1 + len(y) // hop_length``.
    """
    if not isinstance(intervals, str):
        bins_per_octave = len(intervals)
    # Python floats, as the public functions take them: a numpy float32 sr would make this arithmetic
    # single precision (the reference is float64 throughout)
    sr, tuning, filter_scale = float(sr), float(tuning), float(filter_scale)
    gamma = None if gamma is None else float(gamma)
    fmin = cqf.c1_hz() if fmin is None else float(fmin)
    freqs, alpha = _bank(sr, n_bins, fmin, bins_per_octave, intervals, tuning)
    _, cutoff = cqf.wavelet_lengths(
        freqs=freqs, sr=sr, window=window, filter_scale=filter_scale, gamma=gamma, alpha=alpha
    )
    cqf.check_nyquist(cutoff, sr, float(freqs[-1]))
    x = np.asarray(y, dtype=np.float64)
    n_frames = 1 + x.size // hop_length if n_frames is None else n_frames
    out = np.zeros((n_bins, n_frames), dtype=np.complex128)
    for k in range(n_bins):
        filters, lengths = cqf.wavelet(
            freqs=freqs[k : k + 1],
            sr=sr,
            window=window,
            filter_scale=filter_scale,
            pad_fft=False,
            norm=norm,
            dtype=np.complex128,
            gamma=gamma,
            alpha=alpha[k : k + 1] if alpha.size > 1 else alpha,
        )
        h, length = filters[0], float(lengths[0])
        c = h.size - h.size // 2
        margin = h.size + hop_length * n_frames
        ext = np.pad(x, margin, mode=pad_mode)
        # row t holds x[t * hop + c - j] for j = 0 .. len(h) - 1
        index = margin + hop_length * np.arange(n_frames)[:, None] + c - np.arange(h.size)[None, :]
        out[k] = length * (ext[index] @ h)
        if scale:
            out[k] /= np.sqrt(length)
    return out
