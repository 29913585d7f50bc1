"""Heart rate from the colour of a region of a video: POS, CHROM and the green channel, with a quality index.

The light a face reflects changes with the blood volume under the skin, by a fraction of a percent per
heartbeat, most in green. The mean colour of a region of interest (ROI), frame by frame, is the "trace"; a
method turns the trace into one pulse signal; the heart rate is the strongest frequency of that signal within
a band (0.7 to 4 Hz, 42 to 240 beats per minute, by default) and the quality index says how much of the band's
power lies at that rate and its first harmonic.

Methods (``method=``):

``"pos"``
    Plane-Orthogonal-to-Skin (Wang, den Brinker, Stuijk & de Haan, "Algorithmic principles of remote PPG",
    IEEE TBME 64(7), 2017): in windows of 1.6 s, sliding by one frame, the trace is divided by its mean,
    projected onto the plane orthogonal to the skin tone (``G - B`` and ``-2R + G + B``), the two
    projections are combined with the ratio of their spreads (``h = S1 + (std S1 / std S2) S2``), and the
    windows' zero-mean results are overlap-added.
``"chrom"``
    Chrominance (de Haan & Jeanne, "Robust pulse rate from chrominance-based rPPG", IEEE TBME 60(10), 2013):
    the trace divided by its running mean (1.6 s) gives ``X = 3R - 2G`` and ``Y = 1.5R + G - 1.5B``, both
    band-passed; in Hann windows of 1.6 s with half overlap ``S = X - (std X / std Y) Y``, overlap-added.
``"green"``
    The green channel divided by its mean (Verkruysse, Svaasand & Nelson, Opt. Express 16(26), 2008).

Every pulse signal is band-passed (Butterworth, order 3, forward and backward) to ``band`` before its
spectrum is read. The rate is the peak of the Hann-windowed, zero-padded spectrum within the band, refined
between bins by a parabola through the log magnitudes. The quality index is de Haan & Jeanne's SNR with the
estimated rate in place of a reference: the power within ``max(0.1 Hz, 2 / duration)`` of the rate and of
twice the rate, over the rest of the band's power, in dB (the half-width covers the Hann window's main lobe).

The region of interest (``roi=``) is a rectangle ``(x, y, w, h)``; a callable that finds one in the first
frame (a detector of your choice); or ``"face"``: a face found by OpenCV's Haar cascade (vidmag's optional
``face`` extra, ``pip install -e "./vidmag[face]"``), its largest on the first frame, re-detected every second
and smoothed, and the forehead above its brows read (:mod:`vidmag.face` says why the forehead, and how the
region follows the face). A :class:`vidmag.face.FaceTracker` made with other settings (the cheeks, another
detection period) may be given in its place. Offline, a clip whose first frame shows no face is refused
(:class:`vidmag.face.FaceNotFoundError`); a live :class:`PulseMeter` waits for a face instead. Neither ever
reads the whole frame in place of a face.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from scipy import signal as sps

from vidmag.face import FaceNotFoundError, FaceTracker
from vidmag.params import check_fs, check_number

__all__ = [
    "METHODS",
    "PulseEstimate",
    "PulseMeter",
    "PulseReading",
    "estimate",
    "from_trace",
    "heart_rate",
    "min_frames",
    "pulse_signal",
    "roi_means",
]

#: The pulse methods, in the order of the rPPG benchmarks' preference.
METHODS = ("pos", "chrom", "green")
#: Length of the methods' short windows, s (both papers' 1.6 s: 32 frames at 20 frames/s).
METHOD_WINDOW_S = 1.6
_BAND_ORDER = 3
_MIN_HALF_WIDTH_HZ = 0.1

# The value of ``roi=`` that finds and follows a face (:class:`vidmag.face.FaceTracker`).
_FACE = "face"

#: A region: a rectangle (x, y, w, h), a callable that finds one in a frame, "face" or a
#: :class:`vidmag.face.FaceTracker` (a face followed through the frames), or None (the whole frame).
Roi = Union[  # noqa: UP007
    tuple[int, int, int, int], Callable[[np.ndarray], tuple[int, int, int, int]], str, FaceTracker, None
]


@dataclass(frozen=True)
class PulseEstimate:
    """The heart rate of a clip, and how it was read.

    Attributes
    ----------
    bpm : float
        Heart rate over the whole clip, beats per minute (NaN when the signal is flat, e.g. a black region).
    quality_db : float
        The SNR of the peak and its first harmonic against the rest of the band, dB (-inf for a flat signal).
    signal : numpy.ndarray
        (T,) the band-passed pulse signal, float64, one sample per frame.
    trace : numpy.ndarray
        (T, 3) the region's mean colour (R, G, B) per frame, in the frames' units.
    fs : float
        Frame rate, Hz.
    method : str
        One of :data:`METHODS`.
    roi : tuple of int or None
        The region ``(x, y, w, h)`` that was read (for a face followed through the clip, its region on the
        first frame); None when the estimate was made from a trace (:func:`from_trace`).
    times : numpy.ndarray
        (K,) centre of each analysis window, s from the first frame. Without ``window``, one entry: the clip.
    bpm_series, quality_series : numpy.ndarray
        (K,) the rate and the quality of each window.
    roi_track : numpy.ndarray or None
        (T, 4) int, the region read at each frame, when it followed a face (``roi="face"``); else None.

    Examples
    --------
    >>> from vidmag import pulse, synthetic
    >>> scene = synthetic.scene(64, 48, bpm=72.0, seconds=6.0, noise=0.0)
    >>> result = pulse.estimate(scene, scene.fs, roi=scene.roi, window=4.0)
    >>> round(result.bpm), result.method, result.roi
    (72, 'pos', (21, 9, 22, 28))
    >>> result.trace.shape, result.signal.shape, result.bpm_series.shape
    ((180, 3), (180,), (3,))
    """

    bpm: float
    quality_db: float
    signal: np.ndarray
    trace: np.ndarray
    fs: float
    method: str
    roi: tuple[int, int, int, int] | None
    times: np.ndarray
    bpm_series: np.ndarray
    quality_series: np.ndarray
    roi_track: np.ndarray | None = None


@dataclass(frozen=True)
class PulseReading:
    """One reading of a :class:`PulseMeter`: the rate over its last window.

    Attributes
    ----------
    bpm, quality_db : float
        As in :class:`PulseEstimate`, over the window.
    time : float
        Time of the newest frame in the window, s from the first frame pushed (``(n - 1) / fs``).
    trace : numpy.ndarray
        (N, 3) the region's mean colour over the window (the colour signal to plot), oldest first.
    signal : numpy.ndarray
        (N,) the window's band-passed pulse signal.
    fs : float
        Frame rate, Hz.
    method : str
        One of :data:`METHODS`.

    Examples
    --------
    >>> from vidmag import pulse, synthetic
    >>> scene = synthetic.scene(64, 48, bpm=72.0, seconds=5.0, noise=0.0)
    >>> meter = pulse.PulseMeter(scene.fs, roi=scene.roi, window_s=4.0)
    >>> reading = [r for r in map(meter.push, scene) if r is not None][-1]
    >>> round(reading.bpm), round(reading.time, 2), reading.trace.shape
    (72, 4.97, (120, 3))
    """

    bpm: float
    quality_db: float
    time: float
    trace: np.ndarray
    signal: np.ndarray
    fs: float
    method: str


# --- checks -----------------------------------------------------------------------------------------------


def _check_method(method: Any) -> str:
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(repr(m) for m in METHODS)}; got {method!r}")
    return method


def _check_band(band: Any, fs: float) -> tuple[float, float]:
    if isinstance(band, (str, bytes)) or not isinstance(band, Iterable):
        raise TypeError(f"band must be a pair (low, high) of frequencies in Hz, got {band!r}")
    band = tuple(band)
    if len(band) != 2:
        raise ValueError(f"band must be a pair (low, high) of frequencies in Hz, got {band!r}")
    low, high = check_number("band[0]", band[0]), check_number("band[1]", band[1])
    if not 0 < low < high < fs / 2:
        raise ValueError(
            f"band must satisfy 0 < low < high < fs / 2 = {fs / 2:g} Hz (the Nyquist frequency), "
            f"got ({low:g}, {high:g})"
        )
    return low, high


def _face_tracker(roi: Any) -> FaceTracker | None:
    """The tracker `roi` asks for ("face": a new one with the defaults), or None for any other region."""
    if isinstance(roi, FaceTracker):
        return roi
    if isinstance(roi, str):
        if roi != _FACE:
            raise ValueError(
                f"roi as a string must be {_FACE!r} (a face found and followed; needs the face extra), "
                f"got {roi!r}"
            )
        return FaceTracker()
    return None


def _roi_form(roi: Any) -> tuple[int, int, int, int]:
    # A rectangle's form, before any frame says whether it fits.
    if isinstance(roi, (str, bytes)) or not isinstance(roi, Iterable):
        raise TypeError(
            f"roi must be None, a rectangle (x, y, w, h) in pixels, a callable or {_FACE!r}, got {roi!r}"
        )
    values = tuple(roi)
    if len(values) != 4 or not all(
        isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in values
    ):
        raise TypeError(f"roi must be a rectangle of four integers (x, y, w, h), got {roi!r}")
    x, y, w, h = (int(v) for v in values)
    if w < 1 or h < 1 or x < 0 or y < 0:
        raise ValueError(f"roi (x, y, w, h) = {(x, y, w, h)} needs x, y >= 0 and w, h >= 1")
    return x, y, w, h


def _check_roi(roi: Any, frame: np.ndarray) -> tuple[int, int, int, int]:
    height, width = frame.shape[:2]
    if roi is None:
        return 0, 0, width, height
    if callable(roi):
        found = roi(frame)
        try:
            if found is None or callable(found):
                raise TypeError(f"expected a rectangle (x, y, w, h), got {found!r}")
            return _check_roi(found, frame)
        except (TypeError, ValueError) as error:
            raise ValueError(f"the roi callable returned an unusable region: {error}") from None
    x, y, w, h = _roi_form(roi)
    if x + w > width or y + h > height:
        raise ValueError(
            f"roi (x, y, w, h) = {(x, y, w, h)} must lie inside the {width} x {height} frame "
            f"(x + w <= {width}, y + h <= {height})"
        )
    return x, y, w, h


def _check_frame(frame: Any, name: str, shape: tuple[int, ...] | None) -> np.ndarray:
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"{name} must be an RGB frame of shape (H, W, 3), got shape {frame.shape}")
    if not (np.issubdtype(frame.dtype, np.integer) or np.issubdtype(frame.dtype, np.floating)):
        raise TypeError(f"{name} must hold integers or floats, got dtype {frame.dtype}")
    if shape is not None and frame.shape != shape:
        raise ValueError(f"{name} has shape {frame.shape}, but the earlier frames had {shape}")
    return frame


def min_frames(fs: float, band: tuple[float, float] = (0.7, 4.0)) -> int:
    """Fewest frames one estimate needs: a method window (1.6 s) and two cycles of the band's low edge.

    Parameters
    ----------
    fs : float
        Frame rate, Hz.
    band : pair of float
        Pass band, Hz (as in :func:`estimate`); only its low edge counts.

    Returns
    -------
    int
        ``max(ceil(1.6 * fs) + 1, ceil(2 * fs / band[0]))``.

    Examples
    --------
    >>> from vidmag import pulse
    >>> pulse.min_frames(30.0)
    86
    >>> pulse.min_frames(30.0, band=(1.0, 4.0))
    60
    """
    fs = check_fs(fs)
    band = _check_band(band, fs)
    return max(math.ceil(METHOD_WINDOW_S * fs) + 1, math.ceil(2.0 * fs / band[0]))


# --- the trace ---------------------------------------------------------------------------------------------


def roi_means(
    frames: np.ndarray | Iterable[np.ndarray], roi: Roi = None, *, fs: float | None = None
) -> tuple[np.ndarray, tuple]:
    """The region's mean colour per frame.

    Parameters
    ----------
    frames : numpy.ndarray or iterable of numpy.ndarray
        (T, H, W, 3) RGB, integers or floats, or an iterable of (H, W, 3) frames (read one at a time, so a
        clip need not be held in memory: ``vidmag.io.read_frames(path)`` will do).
    roi : tuple of int, callable, "face" or vidmag.face.FaceTracker, optional
        ``(x, y, w, h)`` in pixels (x, y: top-left corner); a callable ``frame -> (x, y, w, h)`` called on
        the first frame; ``"face"`` or a :class:`~vidmag.face.FaceTracker`: the patch of a face followed
        from frame to frame (needs `fs`). None: the whole frame.
    fs : float, optional
        Frame rate, Hz; needed only to follow a face (its re-detections are so many seconds apart).

    Returns
    -------
    trace : numpy.ndarray
        (T, 3) float64.
    roi : tuple of int
        The rectangle read (of a face followed: on the first frame).

    Raises
    ------
    vidmag.face.FaceNotFoundError
        ``roi="face"`` and the detector finds no face in the first frame (a ValueError).
    ImportError
        ``roi="face"`` without the ``face`` extra (the message says how to install it).

    See Also
    --------
    estimate : the rate from these means.
    vidmag.face.FaceTracker : how a face is followed.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import pulse
    >>> frames = np.full((4, 6, 8, 3), 100, dtype=np.uint8)
    >>> frames[:, 2:4, 2:6, 1] = 200  # a green patch
    >>> trace, rect = pulse.roi_means(frames, roi=(2, 2, 4, 2))
    >>> trace.shape, rect
    ((4, 3), (2, 2, 4, 2))
    >>> trace[0]
    array([100., 200., 100.])
    """
    trace, rect, _ = _trace(frames, roi, fs)
    return trace, rect


def _trace(
    frames: np.ndarray | Iterable[np.ndarray], roi: Roi, fs: float | None
) -> tuple[np.ndarray, tuple[int, int, int, int], np.ndarray | None]:
    """(T, 3) means, the first frame's rectangle, and the (T, 4) rectangles of a face followed (else None)."""
    tracker = _face_tracker(roi)
    if tracker is not None:
        if fs is None:
            raise ValueError("roi='face' needs fs, the frame rate: the face is re-detected every few seconds")
        fs = check_fs(fs)
        tracker.reset()
    if isinstance(frames, np.ndarray):
        if frames.ndim != 4 or frames.shape[3] != 3:
            raise ValueError(f"frames must have shape (T, H, W, 3), got {frames.shape}")
        if frames.shape[0] == 0:
            raise ValueError("frames must hold at least one frame, got none")
        _check_frame(frames[0], "frames[0]", None)
        if tracker is None:
            rect = _check_roi(roi, frames[0])
            x, y, w, h = rect
            return frames[:, y : y + h, x : x + w].mean(axis=(1, 2), dtype=np.float64), rect, None
    elif isinstance(frames, (str, bytes)) or not isinstance(frames, Iterable):
        raise TypeError(f"frames must be an array (T, H, W, 3) or an iterable of frames, got {type(frames)}")
    means: list[np.ndarray] = []
    track: list[tuple[int, int, int, int]] = []
    shape = None
    rect = (0, 0, 0, 0)
    for k, frame in enumerate(frames):
        frame = _check_frame(frame, f"frames[{k}]", shape)
        if tracker is not None:
            found = tracker.update(frame, k / fs)
            if found is None:
                raise FaceNotFoundError(
                    "roi='face': the face detector (OpenCV's frontal-face Haar cascade) found no face in "
                    "the first frame; give the region as a rectangle (x, y, w, h), or a clip that starts on "
                    "a face"
                )
            x, y, w, h = found
            track.append(found)
        if shape is None:
            shape = frame.shape
            rect = _check_roi(roi, frame) if tracker is None else track[0]
            x, y, w, h = rect
        means.append(frame[y : y + h, x : x + w].mean(axis=(0, 1), dtype=np.float64))
    if not means:
        raise ValueError("frames must hold at least one frame, got none")
    return np.stack(means), rect, (np.array(track, dtype=np.int64) if tracker is not None else None)


# --- methods -----------------------------------------------------------------------------------------------


def _normalise(trace: np.ndarray) -> np.ndarray:
    # Divide by the mean; a channel with zero mean (a black region) has no pulse to read: it stays zero.
    mean = trace.mean(axis=0)
    return np.divide(trace, mean, out=np.zeros_like(trace), where=mean > 0)


def _band_pass(x: np.ndarray, fs: float, band: tuple[float, float]) -> np.ndarray:
    sos = sps.butter(_BAND_ORDER, band, btype="bandpass", fs=fs, output="sos")
    x = x - x.mean(axis=0)
    # The default padding (three filter lengths) would exceed a clip of a few seconds.
    return sps.sosfiltfilt(sos, x, axis=0, padlen=min(3 * (2 * len(sos) + 1), x.shape[0] - 1))


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sa, sb = a.std(axis=-1), b.std(axis=-1)
    return np.divide(sa, sb, out=np.zeros_like(sa), where=sb > 0)


def _pos(trace: np.ndarray, fs: float) -> np.ndarray:
    n = trace.shape[0]
    length = min(math.ceil(METHOD_WINDOW_S * fs), n)
    windows = np.lib.stride_tricks.sliding_window_view(trace, length, axis=0)  # (n - length + 1, 3, length)
    mean = windows.mean(axis=-1, keepdims=True)
    normal = np.divide(windows, mean, out=np.zeros_like(windows), where=mean > 0)
    s1 = normal[:, 1] - normal[:, 2]
    s2 = -2.0 * normal[:, 0] + normal[:, 1] + normal[:, 2]
    h = s1 + _ratio(s1, s2)[:, None] * s2
    h -= h.mean(axis=-1, keepdims=True)
    out = np.zeros(n)
    count = h.shape[0]
    for j in range(length):  # overlap-add: window m covers frames m .. m + length - 1
        out[j : j + count] += h[:, j]
    return out


def _chrom(trace: np.ndarray, fs: float, band: tuple[float, float]) -> np.ndarray:
    n = trace.shape[0]
    length = min(2 * math.ceil(METHOD_WINDOW_S * fs / 2), n - n % 2)
    hop = length // 2
    # Running mean over a method window (edges: the mean over what exists), so that a slow change of
    # lighting does not bend the normalised trace.
    kernel = np.ones(length)
    counts = np.convolve(np.ones(n), kernel, mode="same")
    running = np.stack([np.convolve(trace[:, c], kernel, mode="same") for c in range(3)], axis=1)
    running /= counts[:, None]
    normal = np.divide(trace, running, out=np.zeros_like(trace), where=running > 0)
    x = 3.0 * normal[:, 0] - 2.0 * normal[:, 1]
    y = 1.5 * normal[:, 0] + normal[:, 1] - 1.5 * normal[:, 2]
    xf, yf = _band_pass(np.stack([x, y], axis=1), fs, band).T
    taper = sps.get_window("hann", length)  # periodic: half-overlapped windows sum to one
    out = np.zeros(n)
    for start in range(0, n - length + 1, hop):
        seg = slice(start, start + length)
        alpha = _ratio(xf[seg], yf[seg])
        out[seg] += (xf[seg] - alpha * yf[seg]) * taper
    return out


def pulse_signal(
    trace: np.ndarray, fs: float, method: str = "pos", *, band: tuple[float, float] = (0.7, 4.0)
) -> np.ndarray:
    """The band-passed pulse signal of a colour trace.

    Parameters
    ----------
    trace : numpy.ndarray
        (T, 3) the region's mean colour (R, G, B) per frame, any positive units.
    fs : float
        Frame rate, Hz.
    method : {"pos", "chrom", "green"}
        See the module's description.
    band : pair of float
        Pass band, Hz, ``0 < low < high < fs / 2``.

    Returns
    -------
    numpy.ndarray
        (T,) float64.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import pulse
    >>> fs, t = 30.0, np.arange(300) / 30.0
    >>> wave = np.sin(2 * np.pi * 1.2 * t)  # 72 beats per minute
    >>> trace = np.stack([150 + 0.3 * wave, 120 + 0.8 * wave, 100 + 0.5 * wave], axis=1)
    >>> signal = pulse.pulse_signal(trace, fs, "chrom")
    >>> signal.shape, signal.dtype
    ((300,), dtype('float64'))
    """
    fs = check_fs(fs)
    method = _check_method(method)
    band = _check_band(band, fs)
    trace = _check_trace(trace, fs, band)
    return _pulse_signal(trace, fs, method, band)


def _check_trace(trace: Any, fs: float, band: tuple[float, float]) -> np.ndarray:
    trace = np.asarray(trace, dtype=np.float64)
    if trace.ndim != 2 or trace.shape[1] != 3:
        raise ValueError(f"trace must have shape (T, 3), got {trace.shape}")
    need = min_frames(fs, band)
    if trace.shape[0] < need:
        raise ValueError(
            f"too few frames for one estimate: {trace.shape[0]} given, at least {need} needed at "
            f"fs = {fs:g} Hz (a {METHOD_WINDOW_S} s method window and two cycles of the band's low edge, "
            f"{band[0]:g} Hz)"
        )
    if not np.all(np.isfinite(trace)):
        raise ValueError("trace (the region's mean colour) must be finite; it holds NaN or infinity")
    return trace


def _pulse_signal(trace: np.ndarray, fs: float, method: str, band: tuple[float, float]) -> np.ndarray:
    if method == "pos":
        raw = _pos(trace, fs)
    elif method == "chrom":
        raw = _chrom(trace, fs, band)
    else:
        raw = _normalise(trace)[:, 1] - 1.0
    return _band_pass(raw, fs, band)


# --- rate and quality --------------------------------------------------------------------------------------


def heart_rate(
    pulse: np.ndarray, fs: float, *, band: tuple[float, float] = (0.7, 4.0)
) -> tuple[float, float]:
    """The rate and the quality index of a pulse signal.

    Parameters
    ----------
    pulse : numpy.ndarray
        (T,) pulse signal (band-passed or not).
    fs : float
        Sampling rate, Hz.
    band : pair of float
        Where to look for the peak, Hz, ``0 < low < high < fs / 2``.

    Returns
    -------
    bpm : float
        The spectral peak within the band, beats per minute, refined between bins; NaN for a flat signal.
    quality_db : float
        Power within ``max(0.1 Hz, 2 / duration)`` of the peak and of its first harmonic over the rest of the
        band's power, dB; -inf for a flat signal, +inf when nothing else is in the band.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import pulse
    >>> t = np.arange(300) / 30.0
    >>> bpm, quality_db = pulse.heart_rate(np.sin(2 * np.pi * 1.2 * t), 30.0)
    >>> round(bpm, 1), quality_db > 10
    (72.0, True)
    """
    fs = check_fs(fs)
    band = _check_band(band, fs)
    pulse = np.asarray(pulse, dtype=np.float64)
    if pulse.ndim != 1 or pulse.shape[0] < 4:
        raise ValueError(f"pulse must be a signal of shape (T,) with T >= 4, got shape {pulse.shape}")
    n = pulse.shape[0]
    n_fft = max(4096, 1 << math.ceil(math.log2(8 * n)))
    spectrum = np.abs(np.fft.rfft((pulse - pulse.mean()) * np.hanning(n), n_fft))
    freqs = np.fft.rfftfreq(n_fft, 1.0 / fs)
    inside = np.flatnonzero((freqs >= band[0]) & (freqs <= band[1]))
    power = spectrum[inside] ** 2
    if not np.any(power > 0):
        return math.nan, -math.inf
    k = int(np.argmax(power))
    peak = freqs[inside[k]]
    if 0 < k < len(inside) - 1 and np.all(power[k - 1 : k + 2] > 0):
        # A parabola through the log magnitudes of the peak bin and its neighbours.
        a, b, c = np.log(power[k - 1 : k + 2])
        denominator = a - 2 * b + c
        if denominator < 0:
            peak += 0.5 * (a - c) / denominator * (freqs[1] - freqs[0])
    half = max(_MIN_HALF_WIDTH_HZ, 2.0 / (n / fs))
    f = freqs[inside]
    near = (np.abs(f - peak) <= half) | (np.abs(f - 2 * peak) <= half)
    signal_power, rest = float(power[near].sum()), float(power[~near].sum())
    quality = math.inf if rest == 0 else 10.0 * math.log10(signal_power / rest)
    return 60.0 * float(peak), quality


# --- offline -----------------------------------------------------------------------------------------------


def from_trace(
    trace: np.ndarray,
    fs: float,
    method: str = "pos",
    *,
    band: tuple[float, float] = (0.7, 4.0),
    window: float | None = None,
    step: float | None = None,
    roi: tuple[int, int, int, int] | None = None,
) -> PulseEstimate:
    """:func:`estimate` from a colour trace already taken: (T, 3) mean colours, e.g. from :func:`roi_means`.

    Parameters
    ----------
    trace : numpy.ndarray
        (T, 3) the region's mean colour (R, G, B) per frame, finite, at least :func:`min_frames` frames.
    fs : float
        Frame rate, Hz.
    method : {"pos", "chrom", "green"}
        See the module's description.
    band : pair of float
        Pass band and search range of the rate, Hz, ``0 < low < high < fs / 2``.
    window : float, optional
        Length of sliding analysis windows, s; None: no windows. As in :func:`estimate`.
    step : float, optional
        Hop between windows, s; None: 1 s. Only with `window`.
    roi : tuple of int, optional
        The region the trace was taken from; only recorded in the result.

    Returns
    -------
    PulseEstimate
        With ``roi`` as given.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import pulse
    >>> t = np.arange(300) / 30.0
    >>> wave = np.sin(2 * np.pi * 1.2 * t)  # 72 beats per minute
    >>> trace = np.stack([150 + 0.3 * wave, 120 + 0.8 * wave, 100 + 0.5 * wave], axis=1)
    >>> result = pulse.from_trace(trace, 30.0, window=5.0, step=2.5)
    >>> round(result.bpm), result.times
    (72, array([2.48333333, 4.98333333, 7.48333333]))
    """
    fs = check_fs(fs)
    method = _check_method(method)
    band = _check_band(band, fs)
    trace = _check_trace(trace, fs, band)
    n = trace.shape[0]
    windows: list[tuple[int, int]] = [(0, n)]
    if window is not None:
        window = check_number("window", window)
        length = round(window * fs)
        need = min_frames(fs, band)
        if not need <= length <= n:
            raise ValueError(
                f"window must be {need / fs:g} to {n / fs:g} s (a method window and two cycles of "
                f"{band[0]:g} Hz, up to the clip's length), got {window:g}"
            )
        step = 1.0 if step is None else check_number("step", step)
        hop = round(step * fs)
        if hop < 1:
            raise ValueError(f"step must be at least one frame, 1 / fs = {1 / fs:g} s, got {step:g}")
        windows = [(start, start + length) for start in range(0, n - length + 1, hop)]
    elif step is not None:
        raise ValueError("step needs window: without a window the clip is read as a whole")
    pulse = _pulse_signal(trace, fs, method, band)
    bpm, quality = heart_rate(pulse, fs, band=band)
    if window is None:
        series = [(bpm, quality)]
    else:
        series = [heart_rate(_pulse_signal(trace[a:b], fs, method, band), fs, band=band) for a, b in windows]
    return PulseEstimate(
        bpm=bpm,
        quality_db=quality,
        signal=pulse,
        trace=trace,
        fs=fs,
        method=method,
        roi=roi,
        times=np.array([(a + b - 1) / 2 / fs for a, b in windows]),
        bpm_series=np.array([s[0] for s in series]),
        quality_series=np.array([s[1] for s in series]),
    )


def estimate(
    frames: np.ndarray | Iterable[np.ndarray],
    fs: float,
    roi: Roi = None,
    method: str = "pos",
    *,
    band: tuple[float, float] = (0.7, 4.0),
    window: float | None = None,
    step: float | None = None,
) -> PulseEstimate:
    """Heart rate of a clip from the colour of a region of its frames.

    Parameters
    ----------
    frames : numpy.ndarray or iterable of numpy.ndarray
        (T, H, W, 3) RGB, uint8 or float (any positive scale), or an iterable of (H, W, 3) frames, read one
        at a time (``vidmag.io.read_frames(path)``). At least :func:`min_frames` frames (about 3 s at the
        default band: two cycles of its low edge).
    fs : float
        Frame rate, Hz.
    roi : tuple of int, callable, "face" or vidmag.face.FaceTracker, optional
        The region ``(x, y, w, h)`` in pixels (x, y: top-left corner), inside the frame; a callable
        ``frame -> (x, y, w, h)`` (a detector of your own) called on the first frame; or ``"face"``: the
        forehead of the largest face on the first frame, followed through the clip (the ``face`` extra;
        :class:`vidmag.face.FaceTracker` for other settings, and the module's description for the choice of
        patch). None: the whole frame, which works only when the frame is mostly skin.
    method : {"pos", "chrom", "green"}
        See the module's description.
    band : pair of float
        Pass band and search range of the rate, Hz, ``0 < low < high < fs / 2``; the default (0.7, 4.0) is
        42 to 240 beats per minute.
    window : float, optional
        Length of sliding analysis windows, s; None: no windows (``times`` and the series have one entry).
        The overall ``bpm`` is read from the whole clip either way.
    step : float, optional
        Hop between windows, s (at least one frame); None: 1 s. Only with `window`.

    Returns
    -------
    PulseEstimate

    Raises
    ------
    TypeError
        A parameter of the wrong type (named).
    ValueError
        A parameter out of range (named, with the range): an unknown method, a band outside (0, fs / 2), a
        region outside the frame, too few frames for one estimate, a window longer than the clip; with
        ``roi="face"``, no face in the first frame (:class:`vidmag.face.FaceNotFoundError`).
    ImportError
        ``roi="face"`` without the ``face`` extra; the message gives ``pip install -e "./vidmag[face]"``.

    Notes
    -----
    NumPy on the CPU only, no autograd or torch.compile (the work is a trace of three numbers per frame);
    frames of other libraries are read through ``numpy.asarray``, so a GPU tensor must be brought to the host
    first.

    Examples
    --------
    >>> from vidmag import pulse, synthetic
    >>> scene = synthetic.scene(64, 48, bpm=72.0, seconds=6.0, noise=0.0)
    >>> result = pulse.estimate(scene, scene.fs, roi=scene.roi)
    >>> round(result.bpm), result.quality_db > 10, result.times
    (72, True, array([2.98333333]))
    """
    fs = check_fs(fs)
    method = _check_method(method)
    band = _check_band(band, fs)
    trace, rect, track = _trace(frames, roi, fs)
    result = from_trace(trace, fs, method, band=band, window=window, step=step, roi=rect)
    return result if track is None else dataclasses.replace(result, roi_track=track)


# --- streaming ---------------------------------------------------------------------------------------------


class PulseMeter:
    """Heart rate of a live stream, read every `update_s` seconds over the last `window_s` seconds.

    Per frame only the region's mean colour is taken (a few microseconds for a face-sized region) and kept
    in a ring of `window_s` seconds; every `update_s` seconds, once the ring is full, the method runs over it
    (:func:`from_trace` of the window) and :meth:`push` returns a :class:`PulseReading`.

    With ``roi="face"`` (or a :class:`vidmag.face.FaceTracker`) the region follows the face: the detector
    runs on the first frame and every second after, and the region moves only when the face does
    (:mod:`vidmag.face`). By default each detection runs in :meth:`push`, on the frame it is due on (a few
    tens of milliseconds of that push, and the same readings on every run of the same frames); with
    ``background_detection=True`` (a live feed, as ``vidmag live --pulse face`` runs it) every detection after
    the first runs on a worker thread and is taken by the first push after it finished, so no push waits for
    one. :meth:`close` (or leaving a ``with`` block) stops that thread; an exception in it is raised by the
    next :meth:`push` or by :meth:`close`. Until a face is found the meter takes no frames (it
    looks again every quarter of a second) and returns no reading: it never reads the whole frame instead.
    When a face found before is lost, the last region is kept and :meth:`roi_status` says ``"lost"``.

    Parameters
    ----------
    fs : float
        Frame rate of the stream, Hz.
    roi : tuple of int, callable, "face" or vidmag.face.FaceTracker, optional
        As in :func:`estimate`; a rectangle is checked against (or a callable called on) the first frame
        pushed. None: the whole frame.
    method : {"pos", "chrom", "green"}
        See the module's description.
    window_s : float
        Length of the window a reading covers, s; at least :func:`min_frames` frames.
    update_s : float
        Time between readings, s, at least one frame.
    band : pair of float
        As in :func:`estimate`.
    background_detection : bool
        For a face followed: run its re-detections off :meth:`push`, on a worker thread (see above). False:
        in :meth:`push`, on the frame due. Other regions ignore it.

    Raises
    ------
    ImportError
        ``roi="face"`` without the ``face`` extra (the message gives the command that installs it).

    See Also
    --------
    estimate : the same over a whole clip.
    vidmag.face.FaceTracker : how a face is followed.

    Examples
    --------
    >>> from vidmag import pulse, synthetic
    >>> scene = synthetic.scene(160, 120, bpm=72.0, seconds=12.0)
    >>> meter = pulse.PulseMeter(scene.fs, roi=scene.roi)
    >>> readings = [r for r in map(meter.push, scene) if r is not None]
    >>> round(readings[-1].bpm)
    72
    >>> meter.roi_status()
    {'source': 'rectangle', 'roi': [54, 23, 52, 69]}
    """

    def __init__(
        self,
        fs: float,
        roi: Roi = None,
        method: str = "pos",
        window_s: float = 8.0,
        update_s: float = 1.0,
        *,
        band: tuple[float, float] = (0.7, 4.0),
        background_detection: bool = False,
    ) -> None:
        self.fs = check_fs(fs)
        self.method = _check_method(method)
        self.band = _check_band(band, self.fs)
        window_s = check_number("window_s", window_s)
        self.window_frames = round(window_s * self.fs)
        need = min_frames(self.fs, self.band)
        if self.window_frames < need:
            raise ValueError(
                f"window_s must be at least {need / self.fs:g} s ({need} frames at fs = {self.fs:g} Hz: "
                f"a method window and two cycles of {self.band[0]:g} Hz), got {window_s:g}"
            )
        update_s = check_number("update_s", update_s)
        self.update_frames = round(update_s * self.fs)
        if self.update_frames < 1:
            raise ValueError(
                f"update_s must be at least one frame, 1 / fs = {1 / self.fs:g} s, got {update_s:g}"
            )
        self._tracker = _face_tracker(roi)
        if self._tracker is None and roi is not None and not callable(roi):
            roi = _roi_form(roi)  # its form now; whether it fits the frames, at the first one
        self._roi_spec = roi
        if not isinstance(background_detection, (bool, np.bool_)):
            raise TypeError(f"background_detection must be True or False, got {background_detection!r}")
        self.background_detection = bool(background_detection)
        self.reset()

    def __enter__(self) -> PulseMeter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker thread of a face's background detections (if any), waiting for the one in flight.

        Raises
        ------
        Exception
            What the last background detection raised, if no :meth:`push` raised it yet.

        Examples
        --------
        >>> from vidmag import face, pulse
        >>> tracker = face.FaceTracker(detector=lambda frame: [(40, 82, 394, 394)])
        >>> with pulse.PulseMeter(30.0, roi=tracker, background_detection=True) as meter:
        ...     pass  # push the feed's frames
        """
        if self._tracker is not None:
            self._tracker.close()

    def reset(self) -> None:
        """Forget every frame pushed (the region is checked or found again on the next frame)."""
        self._ring = np.zeros((self.window_frames, 3))
        #: Frames taken into the readings (while a face is searched for, frames are pushed but not taken).
        self.frames_seen = 0
        self.frames_pushed = 0
        self.roi: tuple[int, int, int, int] | None = None
        self._shape: tuple[int, ...] | None = None
        self.last_reading: PulseReading | None = None
        if self._tracker is not None:
            self._tracker.reset()

    def roi_status(self) -> dict[str, Any]:
        """Where the meter reads, for a status display.

        Returns
        -------
        dict
            ``source``: ``"frame"`` (roi None), ``"rectangle"``, ``"callable"`` or ``"face"``; ``roi``: the
            rectangle ``[x, y, w, h]`` read now, or None before the first frame (or before a face is found).
            For a face, also the tracker's ``region``, ``state`` (``"searching"``, ``"tracking"`` or
            ``"lost"``), ``face`` (its box) and ``last_seen`` (s): :meth:`vidmag.face.FaceTracker.describe`.
        """
        if self._tracker is not None:
            described = self._tracker.describe()
            return {"source": described.pop("source"), "roi": None if self.roi is None else list(self.roi),
                    **described}
        spec = self._roi_spec
        source = "frame" if spec is None else "callable" if callable(spec) else "rectangle"
        return {"source": source, "roi": None if self.roi is None else list(self.roi)}

    def push(self, frame: np.ndarray) -> PulseReading | None:
        """Take one frame; return a reading when one is due, else None.

        Parameters
        ----------
        frame : numpy.ndarray
            (H, W, 3) RGB, integers or floats; every frame the shape of the first.

        Returns
        -------
        PulseReading or None
            A reading on the frame that fills the window and then every `update_s` seconds (None too while
            a face is searched for).

        Raises
        ------
        Exception
            With ``background_detection``, what the detector raised in the background detection taken now.
        """
        frame = _check_frame(frame, "frame", self._shape)
        if self._tracker is not None:
            self._shape = frame.shape
            self.frames_pushed += 1
            self.roi = self._tracker.update(frame, (self.frames_pushed - 1) / self.fs,
                                            background=self.background_detection)
            if self.roi is None:
                return None  # no face yet: nothing to read
        else:
            if self._shape is None:
                self.roi = _check_roi(self._roi_spec, frame)
                self._shape = frame.shape
            self.frames_pushed += 1
        x, y, w, h = self.roi
        self._ring[self.frames_seen % self.window_frames] = frame[y : y + h, x : x + w].mean(
            axis=(0, 1), dtype=np.float64
        )
        self.frames_seen += 1
        due = self.frames_seen - self.window_frames
        if due < 0 or due % self.update_frames:
            return None
        trace = np.roll(self._ring, -(self.frames_seen % self.window_frames), axis=0)
        pulse = _pulse_signal(trace, self.fs, self.method, self.band)
        bpm, quality = heart_rate(pulse, self.fs, band=self.band)
        self.last_reading = PulseReading(
            bpm=bpm,
            quality_db=quality,
            time=(self.frames_pushed - 1) / self.fs,
            trace=trace,
            signal=pulse,
            fs=self.fs,
            method=self.method,
        )
        return self.last_reading

