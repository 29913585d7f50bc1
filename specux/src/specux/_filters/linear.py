"""Linear-frequency triangular filter bank (torchaudio.functional.linear_fbanks), used by lfcc."""

from __future__ import annotations

import functools

import numpy as np

from specux import _memory, _validate
from specux._filters.mel import _linspace_f32, _triangles_f32

__all__ = ["linear"]


@functools.lru_cache(maxsize=32)
def _linear_cached(sr: int, n_fft: int, n_filter: int, f_min: float, f_max: float) -> np.ndarray:
    all_freqs = _linspace_f32(0.0, float(sr // 2), n_fft // 2 + 1)
    f_pts = _linspace_f32(f_min, f_max, n_filter + 2)
    weights = np.ascontiguousarray(_triangles_f32(all_freqs, f_pts), dtype=np.float32)
    weights.flags.writeable = False
    return weights


def linear(
    *, sr: int, n_fft: int, n_filter: int = 128, f_min: float = 0.0, f_max: float | None = None
) -> np.ndarray:
    """Triangular filters equally spaced in Hz, as torchaudio's ``linear_fbanks`` (unnormalised, peak 1).

    Parameters
    ----------
    sr : int
        Sampling rate, Hz.
    n_fft : int
        FFT length; the bank covers ``1 + n_fft // 2`` bins placed at ``linspace(0, sr // 2)`` as torchaudio
        does.
    n_filter : int
        Number of filters.
    f_min, f_max : float, Hz
        Edges of the bank; ``f_max=None``: ``sr // 2``. ``f_max`` above ``sr / 2`` is an error.

    Returns
    -------
    numpy.ndarray, shape (n_filter, 1 + n_fft // 2), float32, read-only (cached)

    Backends: host only (the bank feeds every backend).

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.linear(sr=16000, n_fft=400, n_filter=64).shape
    (64, 201)
    """
    sr = _validate.real(sr, "sr", "linear")
    if not sr > 0:
        raise ValueError(f"linear: sr must be positive; got {sr}")
    n_fft = _validate.positive_int(n_fft, "n_fft", "linear")
    n_filter = _validate.positive_int(n_filter, "n_filter", "linear")
    f_min = _validate.real(f_min, "f_min", "linear")
    f_max = float(sr // 2) if f_max is None else _validate.real(f_max, "f_max", "linear")
    if not 0 <= f_min < f_max:
        raise ValueError(f"linear: need 0 <= f_min < f_max; got f_min={f_min}, f_max={f_max}")
    if f_max > sr / 2:
        raise ValueError(f"linear: f_max={f_max} Hz is above the Nyquist frequency sr / 2 = {sr / 2} Hz")
    # the triangles are built from a few (1 + n_fft // 2, n_filter + 2) float32 arrays at once
    _memory.check(
        5 * 4 * (n_filter + 2) * (n_fft // 2 + 1),
        public="linear",
        parameter="n_filter",
        subject=f"a bank of n_filter={n_filter} filters over the {n_fft // 2 + 1} bins of n_fft={n_fft}",
        advice="use fewer n_filter or a smaller n_fft",
    )
    return _linear_cached(int(sr), n_fft, n_filter, f_min, f_max)
