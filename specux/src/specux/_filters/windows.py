"""Analysis windows: scipy-style specifications, padded to the FFT length, memoised."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.signal

from specux import _checks, _memory

__all__ = ["get_window", "pad_center", "window_for"]

_CACHE_SIZE = 64


def _hashable(window: Any) -> bool:
    try:
        hash(window)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _scipy_window(window: str | tuple | float, Nx: int, fftbins: bool) -> np.ndarray:
    out = np.asarray(scipy.signal.get_window(window, Nx, fftbins=fftbins), dtype=np.float64)
    out.flags.writeable = False
    return out


def _real_values(values: Any, what: str) -> np.ndarray:
    """``values`` as float64 when numpy holds them as real numbers (ints or floats); strings, bools, complex
    and objects are a ValueError naming window (numpy would say "could not convert string to float", or
    parse "1.0" silently, or drop an imaginary part with only a warning)."""
    try:
        out = np.asarray(values)
    except ValueError:  # ragged nesting (a TypeError, e.g. of a CUDA tensor, says why itself)
        out = None
    if out is None or out.dtype.kind not in "iuf":
        got = "ragged sequence" if out is None else f"dtype {out.dtype}"
        raise ValueError(f"window: {what} must hold real numbers (ints or floats); got {got}")
    return out.astype(np.float64)


def get_window(window: Any, Nx: int, *, fftbins: bool = True) -> np.ndarray:
    """A window of length ``Nx`` (librosa's / scipy.signal's specification).

    Parameters
    ----------
    window : str, tuple, float, callable or array_like
        A scipy.signal window name (``"hann"``, ``"hamming"``, ...), a tuple with parameters
        (``("kaiser", 8.0)``, ``("tukey", 0.25)``), a number (Kaiser beta), a callable ``f(Nx) -> array``, or
        the window itself (an array of length ``Nx``).
    Nx : int
        Window length in samples (>= 1).
    fftbins : bool
        True: periodic window (for spectral analysis); False: symmetric.

    Returns
    -------
    numpy.ndarray, shape (Nx,), float64
        Read-only for named windows (the result is cached); callables and arrays give fresh arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> w = filters.get_window("hann", 8)
    >>> w.round(3).tolist()
    [0.0, 0.146, 0.5, 0.854, 1.0, 0.854, 0.5, 0.146]
    >>> filters.get_window(("kaiser", 8.0), 16).shape
    (16,)
    """
    if isinstance(Nx, bool) or not isinstance(Nx, (int, np.integer)):
        raise TypeError(f"get_window: Nx must be a positive int; got {Nx!r} of type {type(Nx).__name__}")
    if Nx < 1:
        raise ValueError(f"get_window: Nx must be a positive int; got {Nx!r}")
    Nx = int(Nx)
    fftbins = _checks.flag(fftbins, "fftbins", "get_window")
    # scipy builds the window from a few float64 arrays of Nx points
    _memory.check(3 * 8 * Nx, public="get_window", parameter="Nx", value=Nx)
    if callable(window):
        out = _real_values(window(Nx), "the values a callable window returns")
        if out.shape != (Nx,):
            raise ValueError(f"window: callable returned shape {out.shape}, expected ({Nx},)")
        return out
    if isinstance(window, (str, tuple)) or np.isscalar(window):
        if not _hashable(window):
            raise ValueError(f"window: invalid window specification {window!r}")
        try:
            return _scipy_window(window, Nx, bool(fftbins))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"window: invalid window specification {window!r}: {exc}") from None
    if isinstance(window, (np.ndarray, list)) or hasattr(window, "__array__"):
        out = _real_values(window, "an array window")
        if out.shape != (Nx,):
            raise ValueError(f"window: array window has shape {out.shape}; its length must be {Nx}")
        return out
    raise ValueError(f"window: invalid window specification {window!r}")


def pad_center(data: np.ndarray, size: int) -> np.ndarray:
    """Zero-pad a 1-D array to ``size``, centred (``(size - len) // 2`` zeros on the left), as librosa
    does.

    Parameters
    ----------
    data : numpy.ndarray, shape (..., n)
        The array, padded along its last axis.
    size : int
        Length after padding (>= n; a ValueError otherwise).

    Returns
    -------
    numpy.ndarray, shape (..., size)

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.pad_center(np.ones(2), size=6).tolist()
    [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    """
    n = data.shape[-1]
    if n > size:
        raise ValueError(f"pad_center: target size ({size}) must be at least the input size ({n})")
    lpad = (size - n) // 2
    return np.pad(data, (lpad, size - n - lpad))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _cached_window_for(window: Any, win_length: int, n_fft: int) -> np.ndarray:
    out = pad_center(get_window(window, win_length, fftbins=True), n_fft)
    out.flags.writeable = False
    return out


def window_for(window: Any, win_length: int, n_fft: int) -> np.ndarray:
    """The periodic analysis window of ``win_length`` centred in ``n_fft`` samples, float64, read-only."""
    if isinstance(window, (str, tuple)) or (np.isscalar(window) and _hashable(window)):
        return _cached_window_for(window, win_length, n_fft)
    out = pad_center(get_window(window, win_length, fftbins=True), n_fft)
    out.flags.writeable = False
    return out
