"""Temporal filters of the reference: the ideal band-pass and the first-order Butterworth and IIR low-passes.

Time is the leading axis of every array.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


def ideal_bandpass(x: np.ndarray, fl: float, fh: float, fs: float, *, mit: bool) -> np.ndarray:
    """Ideal band-pass along axis 0 by FFT.

    Parameters
    ----------
    x : ndarray, float64, shape (n, ...)
        n samples taken at ``fs`` Hz.
    fl, fh : float
        Band edges in Hz.
    fs : float
        Sampling rate in Hz.
    mit : bool
        ``False`` (default semantics): keep every frequency with fl <= |f| <= fh, both signs, so the pass band
        has unit gain. ``True`` (the MIT code): keep FFT bins k = 0 .. n - 1 whose k / n * fs lies strictly
        between fl and fh (no wrap-around), then take the real part of the inverse FFT, so a band below
        fs / 2 passes with gain 0.5.

    Returns
    -------
    ndarray, float64, shape (n, ...)
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    shape = (n,) + (1,) * (x.ndim - 1)
    if mit:
        freq = np.arange(n) / n * fs
        keep = (freq > fl) & (freq < fh)
        spectrum = np.fft.fft(x, axis=0) * keep.reshape(shape)
        return np.real(np.fft.ifft(spectrum, axis=0))
    freq = np.arange(n // 2 + 1) / n * fs
    keep = (freq >= fl) & (freq <= fh)
    spectrum = np.fft.rfft(x, axis=0) * keep.reshape((n // 2 + 1, *shape[1:]))
    return np.fft.irfft(spectrum, n=n, axis=0)


class FirstOrder(NamedTuple):
    """Coefficients of a first-order filter y = (-a1 y_prev + b0 x + b1 x_prev) / a0."""

    b0: float
    b1: float
    a0: float
    a1: float


def butterworth_lowpass(f: float, fs: float, *, mit: bool) -> FirstOrder:
    """First-order Butterworth low-pass (bilinear transform), as MATLAB's ``butter(1, Wn)``.

    ``Wn = f / fs`` under ``mit=True`` (the MIT code's call, which MATLAB reads as a fraction of Nyquist, so
    the real cut-off is f / 2 Hz); ``Wn = f / (fs / 2)`` under the default semantics (cut-off at f Hz).
    With t = tan(pi Wn / 2): b0 = b1 = t / (1 + t), a0 = 1, a1 = (t - 1) / (t + 1).
    """
    wn = f / fs if mit else f / (fs / 2.0)
    t = math.tan(math.pi * wn / 2.0)
    return FirstOrder(b0=t / (1.0 + t), b1=t / (1.0 + t), a0=1.0, a1=(t - 1.0) / (t + 1.0))


def butterworth_step(y: np.ndarray, x: np.ndarray, x_prev: np.ndarray, c: FirstOrder) -> np.ndarray:
    """One step of a first-order low-pass: (-a1 y + b0 x + b1 x_prev) / a0, in that order."""
    return (-c.a1 * y + c.b0 * x + c.b1 * x_prev) / c.a0


def iir_step(y: np.ndarray, x: np.ndarray, r: float) -> np.ndarray:
    """One step of the MIT IIR low-pass: (1 - r) y + r x."""
    return (1.0 - r) * y + r * x
