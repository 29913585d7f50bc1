"""Constant-Q and variable-Q filter bases: centre frequencies, filter lengths, time-domain filters, and the
frequency-domain (FFT) basis that ``specux.vqt`` multiplies with short-time spectra.

Pure NumPy. Definitions follow librosa 0.11 (``librosa.filters.wavelet`` / ``wavelet_lengths`` /
``constant_q`` / ``cq_to_chroma``) so that results agree with it; see ``docs/specux/constant-q.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.fft
import scipy.signal

from specux import _memory, _validate
from specux._filters.windows import get_window
from specux.convert import hz_to_midi, midi_to_hz

__all__ = [
    "constant_q",
    "constant_q_lengths",
    "cq_frequencies",
    "cq_to_chroma",
    "relative_bandwidth",
    "wavelet",
    "wavelet_lengths",
    "window_bandwidth",
]

#: MIDI note number of C1, the default lowest frequency of the constant-Q transforms
C1_MIDI = 24

#: ERB(f) = ERB_OFFSET_HZ + ERB_SLOPE * f (Glasberg & Moore 1990), used for gamma=None
ERB_OFFSET_HZ = 24.7
ERB_SLOPE = 0.108


def c1_hz() -> float:
    """Frequency of C1 in Hz (A4 = 440 Hz, equal temperament): about 32.70 Hz."""
    return float(midi_to_hz(C1_MIDI))


def _window_values(window: Any, n: int) -> np.ndarray:
    """Periodic window samples from a librosa / scipy style specification (name, tuple, callable, ...)."""
    if isinstance(window, _Unhashable):
        window = window.value
    return get_window(window, n, fftbins=True)


def _window_key(window: Any) -> Any:
    if hasattr(window, "__name__"):
        return window.__name__
    if isinstance(window, (str, tuple)):
        return window
    return None


@functools.lru_cache(maxsize=64)
def _named_window_bandwidth(window: str | tuple) -> float | None:
    """Bandwidth of a window scipy knows by this name (None if it does not)."""
    # A long symmetric window approximates the continuous window's equivalent noise bandwidth; 8193 points
    # reproduces the values librosa tabulates for its named windows to ~1e-15.
    try:
        win = scipy.signal.get_window(window, 8193, fftbins=False)
    except (ValueError, TypeError):
        return None
    return 8193 * float(np.sum(win**2)) / (float(np.sum(win)) ** 2 + np.finfo(np.float64).tiny)


def window_bandwidth(window: Any, n: int = 1000) -> float:
    """Equivalent noise bandwidth of a window, in FFT bins.

    ``n * sum(w**2) / sum(w)**2``: 1.5 for Hann, 1 for a rectangle.

    Parameters
    ----------
    window : str, tuple, float, callable or ndarray
        Window specification (see ``scipy.signal.get_window``).
    n : int
        Number of samples used for windows that are not named (callables, arrays of that length).

    Returns
    -------
    float
        Bandwidth in bins (dimensionless).

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> round(float(filters.window_bandwidth("hann")), 2)   # equivalent noise bandwidth, in bins
    1.5
    """
    key = _window_key(window)
    if isinstance(key, (str, tuple)):
        bandwidth = _named_window_bandwidth(key)
        if bandwidth is not None:
            return bandwidth
    win = _window_values(window, n)
    return n * float(np.sum(win**2)) / (float(np.sum(win)) ** 2 + np.finfo(np.float64).tiny)


def cq_frequencies(
    n_bins: int,
    *,
    fmin: float,
    bins_per_octave: int = 12,
    intervals: str | Sequence[float] = "equal",
) -> np.ndarray:
    """Centre frequencies of a constant-Q / variable-Q filter bank.

    Parameters
    ----------
    n_bins : int > 0
        Number of frequencies.
    fmin : float > 0
        Lowest frequency in Hz.
    bins_per_octave : int > 0
        Frequencies per octave for ``intervals="equal"``.
    intervals : "equal" or sequence of float in [1, 2)
        ``"equal"``: equal temperament, ``fmin * 2 ** (k / bins_per_octave)``. A sequence of ratios gives one
        octave of intervals that is repeated (its length replaces ``bins_per_octave``).

    Returns
    -------
    ndarray, shape (n_bins,), float64
        Frequencies in Hz, ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.cq_frequencies(3, fmin=440.0, bins_per_octave=12).round(2).tolist()
    [440.0, 466.16, 493.88]
    """
    n_bins = _validate.positive_int(n_bins, "n_bins", "cq_frequencies")
    fmin = _validate.real(fmin, "fmin", "cq_frequencies")
    # the octaves' multipliers, the ratios, their products and the sorted copy
    _memory.check(4 * 8 * n_bins, public="cq_frequencies", parameter="n_bins", value=n_bins)
    if isinstance(intervals, str):
        if intervals != "equal":
            raise ValueError(
                f"intervals must be 'equal' or a sequence of ratios in [1, 2); got {intervals!r} "
                "(just-intonation presets are not supported)"
            )
        bins_per_octave = _validate.positive_int(bins_per_octave, "bins_per_octave", "cq_frequencies")
        ratios = 2.0 ** (np.arange(bins_per_octave, dtype=np.float64) / bins_per_octave)
    else:
        ratios = np.asarray(intervals, dtype=np.float64).ravel()
        if ratios.size == 0 or np.any(ratios < 1) or np.any(ratios >= 2):
            raise ValueError(f"intervals: ratios must lie in [1, 2); got {ratios}")
    n_octaves = math.ceil(n_bins / ratios.size)
    # octave multiplier times ratio, then sorted: the same float operations as librosa's interval_frequencies
    all_ratios = np.multiply.outer(2.0 ** np.arange(n_octaves), ratios).ravel()[:n_bins]
    return np.sort(all_ratios) * fmin


def relative_bandwidth(freqs: np.ndarray) -> np.ndarray:
    """Relative bandwidth ``alpha`` of each filter from the local spacing of the centre frequencies.

    ``alpha = (2 ** (2 / b) - 1) / (2 ** (2 / b) + 1)`` with ``b`` the local number of bins per octave
    (one-sided difference at the ends, centred difference inside).

    Parameters
    ----------
    freqs : ndarray, shape (n,), n >= 2
        Ascending centre frequencies in Hz.

    Returns
    -------
    ndarray, shape (n,)
        Dimensionless relative bandwidths.

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> freqs = filters.cq_frequencies(4, fmin=110.0)
    >>> filters.relative_bandwidth(freqs).round(4).tolist()   # constant Q: one bandwidth
    [0.0577, 0.0577, 0.0577, 0.0577]
    """
    freqs = np.asarray(freqs, dtype=np.float64)
    if freqs.size < 2:
        raise ValueError(f"relative_bandwidth needs 2 or more frequencies; got {freqs.size}")
    logf = np.log2(freqs)
    bpo = np.empty_like(freqs)
    bpo[0] = 1 / (logf[1] - logf[0])
    bpo[-1] = 1 / (logf[-1] - logf[-2])
    bpo[1:-1] = 2 / (logf[2:] - logf[:-2])
    return (2.0 ** (2 / bpo) - 1) / (2.0 ** (2 / bpo) + 1)


def equal_temperament_alpha(bins_per_octave: int) -> np.ndarray:
    """Relative bandwidth of an equal-tempered bank with ``bins_per_octave`` bins, as a 1-element array."""
    r2 = 2.0 ** (2.0 / bins_per_octave)
    return np.atleast_1d((r2 - 1) / (r2 + 1))


def wavelet_lengths(
    *,
    freqs: np.ndarray,
    sr: float = 22050,
    window: Any = "hann",
    filter_scale: float = 1,
    gamma: float | None = 0,
    alpha: float | np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Filter lengths (in samples) of a variable-Q bank and the highest frequency any filter reaches.

    ``Q = filter_scale / alpha``; ``length = Q * sr / (f + gamma / alpha)``; the cut-off is
    ``max(f * (1 + window_bandwidth / (2 Q)) + gamma / 2)``. ``gamma=None`` sets gamma from the ERB scale,
    ``gamma = 24.7 * alpha / 0.108``.

    Parameters
    ----------
    freqs : ndarray, shape (n,)
        Ascending, positive centre frequencies in Hz.
    sr : float > 0
        Sampling rate in Hz.
    window : window specification
        Window of the filters; its bandwidth enters the cut-off.
    filter_scale : float > 0
        Multiplies every length (Q).
    gamma : float >= 0 or None
        Bandwidth offset in Hz (0: constant-Q).
    alpha : float or ndarray or None
        Relative bandwidths; derived from ``freqs`` when None.

    Returns
    -------
    lengths : ndarray, shape (n,), float64
        Fractional filter lengths in samples.
    cutoff : float
        Highest frequency reached by the bank, in Hz.

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> freqs = filters.cq_frequencies(12, fmin=110.0)
    >>> lengths, f_cutoff = filters.wavelet_lengths(freqs=freqs, sr=22050)
    >>> lengths.shape, bool(f_cutoff > freqs[-1])
    ((12,), True)
    """
    freqs = np.asarray(freqs, dtype=np.float64)
    sr = _validate.real(sr, "sr", "wavelet_lengths")
    filter_scale = _validate.real(filter_scale, "filter_scale", "wavelet_lengths")
    gamma = _validate.optional_real(gamma, "gamma", "wavelet_lengths")
    if filter_scale <= 0:
        raise ValueError(f"filter_scale must be > 0; got {filter_scale}")
    if gamma is not None and gamma < 0:
        raise ValueError(f"gamma must be >= 0 or None; got {gamma}")
    if np.any(freqs <= 0):
        raise ValueError("frequencies must be strictly positive (check fmin)")
    if freqs.size > 1 and np.any(freqs[:-1] > freqs[1:]):
        raise ValueError("frequencies must be in ascending order")
    alpha_arr = relative_bandwidth(freqs) if alpha is None else np.asarray(alpha, dtype=np.float64)
    gamma_ = alpha_arr * ERB_OFFSET_HZ / ERB_SLOPE if gamma is None else gamma
    Q = float(filter_scale) / alpha_arr
    cutoff = float(np.max(freqs * (1 + 0.5 * window_bandwidth(window) / Q) + 0.5 * gamma_))
    lengths = Q * sr / (freqs + gamma_ / alpha_arr)
    return np.asarray(lengths, dtype=np.float64), cutoff


#: the per-filter normalisations :func:`_normalize_vector` knows
NORMS = "None, inf, -inf, 0 or a positive number"


def check_norm(norm: Any, public: str) -> float | None:
    """``norm`` of a filter bank as a float (or None): a number >= 0 or -inf; anything else raises naming
    it, before any filter is built (a string reached a comparison with an int deep inside)."""
    if norm is None:
        return None
    if not _validate.is_number(norm):
        raise TypeError(f"{public}: norm must be {NORMS}; got {norm!r} of type {type(norm).__name__}")
    value = float(norm)
    if not (value >= 0 or value == -np.inf):
        raise ValueError(f"{public}: norm must be {NORMS}; got {norm!r}")
    return value


def check_chroma_window(window: Any, public: str) -> np.ndarray | None:
    """The window ``cq_to_chroma`` convolves across the constant-Q bins: None, or a non-empty 1-D array of
    finite real numbers (scipy's convolve says only "Unsupported type" of a string)."""
    if window is None:
        return None
    allowed = "None or a non-empty 1-D array of finite real numbers"
    values = None
    if isinstance(window, (np.ndarray, list, tuple)) or hasattr(window, "__array__"):
        try:
            values = np.asarray(window)
        except ValueError:  # ragged nesting (a TypeError, e.g. of a CUDA tensor, says why itself)
            values = None
    if values is None or values.dtype.kind not in "iuf":
        raise TypeError(
            f"{public}: window must be {allowed}; got {window!r:.60} of type {type(window).__name__}"
        )
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{public}: window must be {allowed}; got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{public}: window must be {allowed}; it holds non-finite values")
    return values


def _normalize_vector(x: np.ndarray, norm: float | None) -> np.ndarray:
    """Scale a vector to unit ``norm`` (inf, -inf, 0 or p > 0); vectors of negligible norm are left alone."""
    if norm is None:
        return x
    mag = np.abs(x)
    if norm == np.inf:
        length = mag.max()
    elif norm == -np.inf:
        length = mag.min()
    elif norm == 0:
        length = float(np.count_nonzero(mag))
    elif norm > 0:
        length = np.sum(mag**norm) ** (1.0 / norm)
    else:
        raise ValueError(f"norm must be None, inf, -inf, 0 or > 0; got {norm!r}")
    if length < np.finfo(x.real.dtype).tiny:
        return x
    return x / length


def _fractional_window(window: Any, length: float) -> np.ndarray:
    """The window of ``floor(length)`` samples, zero-padded to ``ceil(length)``."""
    n_min, n_max = math.floor(length), math.ceil(length)
    win = np.zeros(n_max, dtype=np.float64)
    win[:n_min] = _window_values(window, n_min)
    return win


def _centre_pad(x: np.ndarray, size: int) -> np.ndarray:
    lpad = (size - x.size) // 2
    out = np.zeros(size, dtype=x.dtype)
    out[lpad : lpad + x.size] = x
    return out


def wavelet(
    *,
    freqs: np.ndarray,
    sr: float = 22050,
    window: Any = "hann",
    filter_scale: float = 1,
    pad_fft: bool = True,
    norm: float | None = 1,
    dtype: Any = np.complex64,
    gamma: float | None = 0,
    alpha: float | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Time-domain variable-Q filters: windowed complex exponentials, each centred in a common frame.

    Filter k is ``w(n) exp(2 pi i f_k n / sr)`` for ``n`` in ``[-L_k / 2, L_k / 2)`` (``ceil(L_k)`` samples,
    the window over the first ``floor(L_k)``), normalised to unit ``norm``, centred in ``max(L)`` samples (the
    next power of two when ``pad_fft``).

    Parameters
    ----------
    freqs, sr, window, filter_scale, gamma, alpha
        As :func:`wavelet_lengths`.
    pad_fft : bool
        Pad the frame to a power of two.
    norm : float or None
        Per-filter normalisation (1: L1, 2: L2, inf: peak, None: none).
    dtype : complex dtype
        Output dtype.

    Returns
    -------
    filters : ndarray, shape (n, frame), complex
        One filter per row.
    lengths : ndarray, shape (n,), float64
        Fractional length of each filter in samples.

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> freqs = filters.cq_frequencies(12, fmin=110.0)
    >>> basis, lengths = filters.wavelet(freqs=freqs, sr=22050)
    >>> basis.shape[0], lengths.shape
    (12, (12,))
    """
    norm = check_norm(norm, "wavelet")
    freqs = np.asarray(freqs, dtype=np.float64)
    lengths, _ = wavelet_lengths(
        freqs=freqs, sr=sr, window=window, filter_scale=filter_scale, gamma=gamma, alpha=alpha
    )
    max_len = float(np.max(lengths))
    pad_fft = _validate.flag(pad_fft, "pad_fft", "wavelet")
    frame = 2 ** math.ceil(math.log2(max_len)) if pad_fft else math.ceil(max_len)
    # the filters, and each filter's samples, phases and window as it is built
    _memory.check(
        freqs.size * frame * np.dtype(dtype).itemsize + 6 * 16 * math.ceil(max_len),
        public="wavelet",
        parameter="freqs",
        value=f"{freqs.size} frequencies from {float(freqs.min()):g} Hz",
        detail=f"filters of up to {math.ceil(max_len)} samples at sr={sr:g}, filter_scale={filter_scale:g}",
        advice="raise the lowest frequency (fmin), lower filter_scale or sr, or use fewer bins",
    )
    out = np.zeros((freqs.size, frame), dtype=dtype)
    for k, (length, freq) in enumerate(zip(lengths, freqs)):
        # sample times -L/2 .. L/2 - 1 in steps of 1 (floor division as in Python's // on floats)
        n = np.arange(-length // 2, length // 2, dtype=np.float64)
        angle = n * 2 * np.pi * freq / sr
        sig = (np.cos(angle) + 1j * np.sin(angle)) * _fractional_window(window, n.size)
        out[k] = _centre_pad(_normalize_vector(sig, norm), frame)
    return out, lengths


def constant_q_lengths(
    *,
    sr: float,
    fmin: float,
    n_bins: int = 84,
    bins_per_octave: int = 12,
    window: Any = "hann",
    filter_scale: float = 1,
    gamma: float = 0,
) -> np.ndarray:
    """Lengths in samples of the filters of a constant-Q bank starting at ``fmin``.

    Parameters
    ----------
    sr : float > 0
        Sampling rate in Hz.
    fmin : float > 0
        Lowest centre frequency in Hz.
    n_bins : int > 0
        Number of filters.
    bins_per_octave : int > 0
        Filters per octave.
    window : window specification
        Filter window (its bandwidth sets the Nyquist check).
    filter_scale : float > 0
        Length multiplier.
    gamma : float >= 0
        Bandwidth offset in Hz.

    Returns
    -------
    ndarray, shape (n_bins,), float64
        Fractional lengths in samples.

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> lengths = filters.constant_q_lengths(sr=22050, fmin=32.70, n_bins=24)
    >>> bool(lengths[0] > lengths[-1])   # low notes need long filters
    True
    """
    _check_bank(fmin=fmin, n_bins=n_bins, bins_per_octave=bins_per_octave)
    freqs = cq_frequencies(n_bins, fmin=fmin, bins_per_octave=bins_per_octave)
    alpha = equal_temperament_alpha(bins_per_octave)
    lengths, cutoff = wavelet_lengths(
        freqs=freqs, sr=sr, window=window, filter_scale=filter_scale, gamma=gamma, alpha=alpha
    )
    check_nyquist(cutoff, sr, float(freqs[-1]))
    return lengths


def constant_q(
    *,
    sr: float,
    fmin: float | None = None,
    n_bins: int = 84,
    bins_per_octave: int = 12,
    window: Any = "hann",
    filter_scale: float = 1,
    pad_fft: bool = True,
    norm: float | None = 1,
    dtype: Any = np.complex64,
    gamma: float = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Time-domain constant-Q filter bank (see :func:`wavelet`).

    Parameters
    ----------
    sr : float > 0
        Sampling rate in Hz.
    fmin : float > 0 or None
        Lowest centre frequency in Hz; None means C1 (about 32.70 Hz).
    n_bins, bins_per_octave, window, filter_scale, gamma
        As :func:`constant_q_lengths`.
    pad_fft, norm, dtype
        As :func:`wavelet`.

    Returns
    -------
    filters : ndarray, shape (n_bins, frame), complex
    lengths : ndarray, shape (n_bins,), float64

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> basis, lengths = filters.constant_q(sr=22050, n_bins=24)
    >>> basis.shape[0], lengths.shape
    (24, (24,))
    """
    norm = check_norm(norm, "constant_q")
    fmin = c1_hz() if fmin is None else fmin
    lengths = constant_q_lengths(
        sr=sr,
        fmin=fmin,
        n_bins=n_bins,
        bins_per_octave=bins_per_octave,
        window=window,
        filter_scale=filter_scale,
        gamma=gamma,
    )
    freqs = cq_frequencies(n_bins, fmin=fmin, bins_per_octave=bins_per_octave)
    filters, _ = wavelet(
        freqs=freqs,
        sr=sr,
        window=window,
        filter_scale=filter_scale,
        pad_fft=pad_fft,
        norm=norm,
        dtype=dtype,
        gamma=gamma,
        alpha=equal_temperament_alpha(bins_per_octave),
    )
    return filters, lengths


def _check_bank(*, fmin: float, n_bins: int, bins_per_octave: int) -> None:
    fmin = _validate.real(fmin, "fmin", "constant_q", finite=False)
    if not np.isfinite(fmin) or fmin <= 0:
        raise ValueError(f"fmin must be a positive frequency in Hz; got {fmin}")
    _validate.positive_int(n_bins, "n_bins", "constant_q")
    _validate.positive_int(bins_per_octave, "bins_per_octave", "constant_q")


def check_nyquist(cutoff: float, sr: float, fmax: float) -> None:
    """Raise ValueError when the filter bank reaches above the Nyquist frequency ``sr / 2``."""
    if cutoff > sr / 2.0:
        raise ValueError(
            f"the highest filter (centre {fmax:.2f} Hz) reaches {cutoff:.2f} Hz, above the Nyquist frequency "
            f"{sr / 2.0:g} Hz of sr={sr:g}: reduce n_bins, fmin or filter_scale, or raise sr"
        )


def cq_to_chroma(
    n_input: int,
    *,
    bins_per_octave: int = 12,
    n_chroma: int = 12,
    fmin: float | None = None,
    window: np.ndarray | None = None,
    base_c: bool = True,
    dtype: Any = np.float32,
) -> np.ndarray:
    """Matrix folding constant-Q bins into pitch classes.

    Each group of ``bins_per_octave / n_chroma`` adjacent bins, centred on a pitch class, maps to that class
    in every octave; rows are rotated so that row 0 is C (``base_c``) or A.

    Parameters
    ----------
    n_input : int > 0
        Number of constant-Q bins.
    bins_per_octave : int > 0
        Constant-Q bins per octave; a multiple of ``n_chroma``.
    n_chroma : int > 0
        Number of pitch classes.
    fmin : float or None
        Frequency of constant-Q bin 0 in Hz; None means C1.
    window : ndarray or None
        Optional 1-D window convolved along the input axis of each row.
    base_c : bool
        Row 0 is C when True, A when False.
    dtype : float dtype
        Output dtype.

    Returns
    -------
    ndarray, shape (n_chroma, n_input)

    Examples
    --------
    >>> import numpy as np
    >>> from specux import filters
    >>> filters.cq_to_chroma(84).shape   # 7 octaves of semitones folded to 12 pitch classes
    (12, 84)
    """
    n_input = _validate.positive_int(n_input, "n_input", "cq_to_chroma")
    bins_per_octave = _validate.positive_int(bins_per_octave, "bins_per_octave", "cq_to_chroma")
    n_chroma = _validate.positive_int(n_chroma, "n_chroma", "cq_to_chroma")
    base_c = _validate.flag(base_c, "base_c", "cq_to_chroma")
    window = check_chroma_window(window, "cq_to_chroma")
    if bins_per_octave % n_chroma != 0:
        raise ValueError(
            f"bins_per_octave={bins_per_octave} must be an integer multiple of n_chroma={n_chroma}"
        )
    # one octave's map, its tiling and the rolled copy, in float64, then the cast
    _memory.check(
        8 * n_chroma * (3 * n_input + 2 * bins_per_octave),
        public="cq_to_chroma",
        parameter="n_input",
        subject=f"a map of n_chroma={n_chroma} rows over n_input={n_input} constant-Q bins",
        advice="use fewer n_input or n_chroma",
    )
    n_merge = bins_per_octave // n_chroma
    fmin = c1_hz() if fmin is None else _validate.real(fmin, "fmin", "cq_to_chroma")
    one_octave = np.roll(np.repeat(np.eye(n_chroma), n_merge, axis=1), -(n_merge // 2), axis=1)
    n_octaves = math.ceil(n_input / bins_per_octave)
    fold = np.tile(one_octave, n_octaves)[:, :n_input]
    midi_0 = np.mod(hz_to_midi(fmin), 12)
    roll = midi_0 if base_c else midi_0 - 9
    fold = np.roll(fold, int(np.round(roll * (n_chroma / 12.0))), axis=0).astype(dtype)
    if window is not None:
        fold = scipy.signal.convolve(fold, np.atleast_2d(window), mode="same")
    return fold


# --- the frequency-domain basis used by specux.vqt (memoised)
# -------------------------------------------------


def octave_column_scale(sr: float, octave_sr: float, lengths: np.ndarray, scale: bool) -> np.ndarray:
    """The per-filter factor an octave's basis is multiplied by, as librosa does: ``sqrt(sr / octave_sr)``
    (the downsampler multiplied the signal by sqrt(2) per halving), and ``1 / sqrt(length)`` when
    ``scale``. ``lengths`` are the octave's filter lengths at the full rate. The CPU and the device
    transforms take it from here."""
    column_scale = np.full(np.shape(lengths), np.sqrt(sr / octave_sr))
    if scale:
        column_scale /= np.sqrt(lengths)
    return column_scale


def _sparsify_mask(basis: np.ndarray, quantile: float) -> np.ndarray:
    """True for the entries kept when, in each row, the smallest-magnitude entries whose total stays below
    ``quantile`` of the row's L1 mass are discarded."""
    mags = np.abs(basis)
    norms = np.sum(mags, axis=1, keepdims=True)
    mag_sort = np.sort(mags, axis=1)
    cumulative = np.cumsum(mag_sort / norms, axis=1)
    threshold_idx = np.argmin(cumulative < quantile, axis=1)
    thresholds = mag_sort[np.arange(basis.shape[0]), threshold_idx][:, None]
    return mags >= thresholds


def _sparsify_rows(basis: np.ndarray, quantile: float) -> np.ndarray:
    """``basis`` with the entries outside :func:`_sparsify_mask` set to zero."""
    if quantile == 0:
        return basis
    return np.where(_sparsify_mask(basis, quantile), basis, 0)


@functools.lru_cache(maxsize=128)
def _vqt_fft_basis_cached(
    sr: float,
    freqs: tuple[float, ...],
    alpha: tuple[float, ...],
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: Any,
    gamma: float | None,
    dtype_name: str,
    two_sided: bool,
) -> tuple[np.ndarray, int]:
    basis, lengths = wavelet(
        freqs=np.asarray(freqs),
        sr=sr,
        window=window,
        filter_scale=filter_scale,
        pad_fft=True,
        norm=norm,
        dtype=np.complex128,
        gamma=gamma,
        alpha=np.asarray(alpha),
    )
    n_fft = basis.shape[1]
    fft_basis = np.fft.fft(basis * (lengths[:, None] / n_fft), axis=1)
    if two_sided:
        # every bin: the product with a frame's full spectrum is exactly the time-domain inner product
        if sparsity > 0:
            fft_basis = _sparsify_rows(fft_basis, sparsity)
    elif sparsity > 0:
        half = n_fft // 2 + 1
        fft_basis = fft_basis[:, :half]
        # Which entries survive is a discrete choice that rounding can flip where many entries have nearly the
        # threshold magnitude (flat side lobes, e.g. Hamming). librosa makes it on a basis computed in single
        # precision (with scipy.fft) whatever the output precision; make it on the same single-precision
        # basis so that both keep the same entries, and keep the values in full precision.
        single = basis.astype(np.complex64)
        single *= lengths[:, None] / n_fft
        keep = _sparsify_mask(scipy.fft.fft(single, axis=1)[:, :half], sparsity)
        fft_basis = np.where(keep, fft_basis, 0)
    else:
        fft_basis = fft_basis[:, : n_fft // 2 + 1]
    fft_basis = fft_basis.astype(dtype_name)
    fft_basis.setflags(write=False)
    return fft_basis, n_fft


def vqt_fft_basis(
    *,
    sr: float,
    freqs: np.ndarray,
    alpha: np.ndarray,
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: Any,
    gamma: float | None,
    dtype: Any,
    two_sided: bool = False,
) -> tuple[np.ndarray, int]:
    """One octave's frequency-domain basis: FFT of the length-scaled filters (non-negative frequencies only,
    as librosa, unless ``two_sided``).

    Parameters
    ----------
    sr : float
        Sampling rate of the signal this octave is computed at, in Hz.
    freqs, alpha : ndarray, shape (k,)
        Centre frequencies (Hz) and relative bandwidths of the octave's filters.
    filter_scale, norm, window, gamma
        As :func:`wavelet`.
    sparsity : float in [0, 1)
        Fraction of each row's L1 mass discarded, smallest entries first (0 keeps everything).
    dtype : complex dtype
        Precision of the basis.
    two_sided : bool
        Keep all ``n_fft`` bins: the product with a frame's full spectrum then equals the time-domain inner
        product with the filter exactly (with ``sparsity=0``).

    Returns
    -------
    basis : ndarray, shape (k, n_fft // 2 + 1) or (k, n_fft) when two-sided, complex, read-only (memoised)
    n_fft : int
        FFT size (a power of two at least the longest filter).
    """
    window_key = window if isinstance(window, (str, tuple, float, int)) else _Unhashable(window)
    return _vqt_fft_basis_cached(
        float(sr),
        tuple(float(f) for f in freqs),
        tuple(float(a) for a in np.atleast_1d(alpha)),
        float(filter_scale),
        norm,
        float(sparsity),
        window_key,
        gamma,
        np.dtype(dtype).name,
        bool(two_sided),
    )


class _Unhashable:
    """Wraps a window given as an array or callable so that the memo keys on its identity, not its value."""

    def __init__(self, value: Any):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable) and other.value is self.value

    def __call__(self, n: int) -> np.ndarray:
        return get_window(self.value, n, fftbins=True)


@functools.lru_cache(maxsize=128)
def _vqt_frame_weights_cached(
    sr: float,
    freqs: tuple[float, ...],
    alpha: tuple[float, ...],
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: Any,
    gamma: float | None,
    dtype_name: str,
    two_sided: bool,
    column_scale: tuple[float, ...],
) -> tuple[np.ndarray, int]:
    basis, n_fft = _vqt_fft_basis_cached(
        sr, freqs, alpha, filter_scale, norm, sparsity, window, gamma, dtype_name, two_sided
    )
    # sum_f B[k, f] * (sum_m x[m] e^{-2 pi i f m / N}) over the basis's bins equals sum_m x[m] E[m, k] with
    # E[:, k] the length-N DFT of B[k] zero-extended to N bins
    full = np.zeros((basis.shape[0], n_fft), dtype=np.complex128)
    full[:, : basis.shape[1]] = basis
    E = np.fft.fft(full, axis=1).T * np.asarray(column_scale)[None, :]
    # real and imaginary parts interleaved: a frame times these weights is the responses as complex numbers
    weights = np.ascontiguousarray(E.astype(dtype_name)).view(np.finfo(np.dtype(dtype_name)).dtype)
    weights.setflags(write=False)
    return weights, n_fft


def vqt_frame_weights(
    *,
    sr: float,
    freqs: np.ndarray,
    alpha: np.ndarray,
    filter_scale: float,
    norm: float | None,
    sparsity: float,
    window: Any,
    gamma: float | None,
    dtype: Any,
    column_scale: np.ndarray,
    two_sided: bool = False,
) -> tuple[np.ndarray, int]:
    """The basis of :func:`vqt_fft_basis` moved to the time domain, for one real matrix product per octave.

    Multiplying an unwindowed frame of ``n_fft`` samples by these weights gives the same responses as its
    FFT times the frequency-domain basis (the transforms are linear), without the FFT.

    Parameters
    ----------
    sr, freqs, alpha, filter_scale, norm, sparsity, window, gamma, dtype, two_sided
        As :func:`vqt_fft_basis`.
    column_scale : ndarray, shape (k,)
        Factor applied to each filter's response (rate compensation and length scaling).

    Returns
    -------
    weights : ndarray, shape (n_fft, 2 k), real of ``dtype``'s precision, read-only (memoised)
        Columns ``2 j`` and ``2 j + 1`` give the real and imaginary parts of filter j's response, so that the
        product with frames can be viewed as complex.
    n_fft : int
        Frame length in samples.
    """
    window_key = window if isinstance(window, (str, tuple, float, int)) else _Unhashable(window)
    return _vqt_frame_weights_cached(
        float(sr),
        tuple(float(f) for f in freqs),
        tuple(float(a) for a in np.atleast_1d(alpha)),
        float(filter_scale),
        norm,
        float(sparsity),
        window_key,
        gamma,
        np.dtype(dtype).name,
        bool(two_sided),
        tuple(float(c) for c in column_scale),
    )
