"""Help choosing the temporal band: the spectrum of a clip, its peaks named, a recommended fl / fh, and the
capture warnings of the MIT advice (inter-frame codecs, mains flicker aliased into the band).

Two signals. ``kind="colour"`` (for the colour pipeline, gaussian_ideal): the mean RGB of a region over time.
``kind="motion"`` (for the motion pipelines): the intensity of a spatial band-pass of the luminance
(difference of Gaussians, sigma 1 and 2 pixels, after block means that bring the frame to at most 256
pixels a side) at points of a grid of at most 128 x 128; to first order a small motion d(t)
changes it by ``-grad . d(t)``, so its spectrum, averaged over the points, is the spectrum of the local
motions, weighted by the texture's contrast. ``kind="auto"`` takes the one whose strongest peak stands out
more.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import ndimage, signal

from vidmag.evaluate.clip import check_roi
from vidmag.evaluate.metrics import LUMA
from vidmag.params import check_frames, check_fs, check_integer, check_number

__all__ = [
    "BAND_SHARE",
    "CODEC_DIVISORS",
    "FLICKER_HZ",
    "INTRA_CODECS",
    "MAX_PEAKS",
    "MOTION_GRID",
    "PEAK_DB",
    "Peak",
    "Suggestion",
    "aliased",
    "flicker_warnings",
    "suggest",
]

#: Flicker of lights on 50 Hz and 60 Hz mains: twice the mains frequency.
FLICKER_HZ = (100.0, 120.0)

#: Codecs that code every frame on its own (intra-only): they add no temporal artefacts of their own.
INTRA_CODECS = frozenset({"rawvideo", "mjpeg", "png", "ffv1", "prores", "dnxhd", "huffyuv", "utvideo",
                          "jpeg2000", "tiff", "bmp", "qtrle", "v210", "r210", "magicyuv"})

#: Largest grid of points the motion signal is sampled at (per side).
MOTION_GRID = 128

#: Half-width of the recommended band: this share of the peak's frequency, and at least twice the
#: spectrum's resolution.
BAND_SHARE = 0.2

#: Peaks kept: this many strongest, each at least this many dB above the spectrum's median.
MAX_PEAKS, PEAK_DB = 5, 6.0


@dataclass(frozen=True)
class Peak:
    """A peak of the spectrum: frequency (Hz), power above the spectrum's median (dB) and what it may be.

    Attributes
    ----------
    frequency : float
        Hz.
    db : float
        Power above the spectrum's median, dB.
    name : str
        What the peak may be (``"pulse range"``, a mains-flicker alias, a codec rhythm ...); empty when
        nothing is known.

    Examples
    --------
    >>> from vidmag.suggest import Peak
    >>> Peak(1.2, 18.3, "pulse range").describe()
    '1.20 Hz = 72 bpm (pulse range), +18.3 dB'
    """

    frequency: float
    db: float
    name: str

    def describe(self) -> str:
        """``"1.02 Hz = 61 bpm (pulse range), +18.3 dB"``."""
        bpm = f" = {self.frequency * 60:.0f} bpm" if self.frequency < 4 else ""
        what = f" ({self.name})" if self.name else ""
        return f"{self.frequency:.2f} Hz{bpm}{what}, +{self.db:.1f} dB"


@dataclass
class Suggestion:
    """What :func:`suggest` found.

    Attributes
    ----------
    fs : float
        Sampling rate, Hz.
    kind : str
        ``"colour"`` or ``"motion"``: the signal analysed.
    frequencies, power : ndarray
        The Welch spectrum (power in arbitrary units per Hz).
    peaks : list of Peak
        Strongest first.
    fl, fh : float or None
        The recommended band (None when no peak stands out).
    rule : str
        How fl and fh were chosen.
    warnings : list of str
        Capture warnings (codec, mains flicker).
    codec : str or None
        The video codec, when read from a file.
    source : str
        The file, or ``"array"``.

    Examples
    --------
    >>> from vidmag import synthetic
    >>> from vidmag.suggest import suggest
    >>> scene = synthetic.scene(64, 48, bpm=72.0, seconds=6.0, pulse_amplitude=4.0)
    >>> found = suggest(list(scene), scene.fs, roi=scene.roi, kind="colour")
    >>> found.kind, found.source, found.codec, found.warnings
    ('colour', 'array', None, [])
    >>> print(found.report())
    array: colour spectrum at fs 30 Hz
    peaks:
      1.20 Hz = 72 bpm (pulse range), +...
    recommended band: --fl 0.532 --fh 1.87 (centred on the strongest peak ...)
    """

    fs: float
    kind: str
    frequencies: np.ndarray
    power: np.ndarray
    peaks: list[Peak]
    fl: float | None
    fh: float | None
    rule: str
    warnings: list[str] = field(default_factory=list)
    codec: str | None = None
    source: str = "array"

    def report(self) -> str:
        """The peaks, the recommendation and the warnings as text."""
        lines = [f"{self.source}: {self.kind} spectrum at fs {self.fs:g} Hz"
                 + (f", codec {self.codec}" if self.codec else ""), "peaks:"]
        lines += [f"  {p.describe()}" for p in self.peaks] or ["  none stands out"]
        if self.fl is not None:
            lines.append(f"recommended band: --fl {self.fl:.3g} --fh {self.fh:.3g}  ({self.rule})")
        else:
            lines.append("recommended band: none (no peak stands out; give fl / fh from what you expect)")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines) + "\n"

    def plot(self, path: str | os.PathLike) -> None:
        """Write the spectrum, its peaks, the recommended band and any mains-flicker alias to `path` (any
        format matplotlib writes, by its suffix), under a temporary name renamed when complete."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from vidmag.io import atomic_output

        fig, axis = plt.subplots(figsize=(8, 4))
        floor = np.median(self.power[1:]) if len(self.power) > 1 else 1.0
        axis.plot(self.frequencies, 10 * np.log10(np.maximum(self.power, 1e-300) / floor), color="C0")
        for peak in self.peaks:
            axis.annotate(f"{peak.frequency:.2f} Hz", (peak.frequency, peak.db), fontsize=8,
                          textcoords="offset points", xytext=(0, 4), ha="center")
        if self.fl is not None:
            axis.axvspan(self.fl, self.fh, color="C2", alpha=0.2,
                         label=f"fl {self.fl:.3g} - fh {self.fh:.3g} Hz")
        for flicker in FLICKER_HZ:
            alias = aliased(flicker, self.fs)
            if 0 < alias < self.fs / 2:
                axis.axvline(alias, color="C3", linestyle=":",
                             label=f"{flicker:g} Hz flicker -> {alias:.3g} Hz")
        axis.set_xlabel("frequency (Hz)")
        axis.set_ylabel("power above median (dB)")
        axis.set_title(f"{self.kind} spectrum, {os.path.basename(self.source)}")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
        fig.tight_layout()
        suffix = os.path.splitext(os.fspath(path))[1].lstrip(".") or "png"
        with atomic_output(path) as tmp:
            fig.savefig(tmp, format=suffix, dpi=100)
        plt.close(fig)


def aliased(frequency: float, fs: float) -> float:
    """The frequency a sinusoid at `frequency` Hz shows when sampled at `fs` Hz: ``|f - k fs|`` with k the
    nearest whole number to ``f / fs`` (so in [0, fs / 2]).

    Parameters
    ----------
    frequency : float
        The sinusoid's frequency, Hz.
    fs : float
        Sampling rate, Hz.

    Returns
    -------
    float
        The alias, Hz.

    Examples
    --------
    >>> from vidmag.suggest import aliased
    >>> aliased(100.0, 30.0), aliased(120.0, 25.0)
    (10.0, 5.0)
    """
    frequency, fs = check_number("frequency", frequency), check_fs(fs)
    k = round(frequency / fs)
    return abs(frequency - k * fs)


def flicker_warnings(fs: float, fl: float | None, fh: float | None) -> list[str]:
    """A warning for each mains flicker (100 Hz, 120 Hz) that sampling at `fs` aliases into [fl, fh].

    Parameters
    ----------
    fs : float
        Sampling rate, Hz.
    fl, fh : float or None
        The band, Hz; either None: no band, no warning.

    Returns
    -------
    list of str
        One sentence per flicker aliased into the band (empty when none is).

    Examples
    --------
    >>> from vidmag.suggest import flicker_warnings
    >>> flicker_warnings(30.0, 0.8, 2.0)
    []
    >>> flicker_warnings(30.0, 5.0, 15.0)
    ['lights on 50 Hz mains flicker at 100 Hz, which a 30 fps capture aliases to |100 - 3 x 30| = 10 Hz, ...']
    """
    fs = check_fs(fs)
    fl = None if fl is None else check_number("fl", fl)
    fh = None if fh is None else check_number("fh", fh)
    out = []
    if fl is None or fh is None:
        return out
    for flicker in FLICKER_HZ:
        k = round(flicker / fs)
        alias = abs(flicker - k * fs)
        if fl <= alias <= fh:
            out.append(
                f"lights on {flicker / 2:g} Hz mains flicker at {flicker:g} Hz, which a {fs:g} fps capture "
                f"aliases to |{flicker:g} - {k} x {fs:g}| = {alias:.3g} Hz, inside the band {fl:.3g} - "
                f"{fh:.3g} Hz: "
                "light the scene with DC or daylight, or capture at a rate that puts the alias outside"
            )
    return out


#: Rhythms of an inter-frame codec's frame pattern (the alternation of frame types and quality): fs / n.
CODEC_DIVISORS = (2, 3, 4)


def _name(frequency: float, fs: float, resolution: float, inter: bool) -> str:
    for flicker in FLICKER_HZ:
        alias = aliased(flicker, fs)
        # an alias at 0 Hz is a constant, not a peak
        if alias >= 1.5 * resolution and abs(frequency - alias) <= 1.5 * resolution:
            return f"mains flicker alias ({flicker:g} Hz at {fs:g} fps)"
    if inter:
        for n in CODEC_DIVISORS:
            if abs(frequency - fs / n) <= 1.5 * resolution:
                return f"codec artefact: frame-pattern rhythm at fs / {n}"
    if 0.7 <= frequency <= 4.0:
        return "pulse range"
    if 0.1 <= frequency < 0.7:
        return "breathing range"
    return ""


def _load(clip: Any, max_frames: int | None
          ) -> tuple[Callable[[], Iterator[np.ndarray]], str, float | None, str | None, bool]:
    """(frames, name, container rate, codec, whether the codec predicts frames from others)."""
    if isinstance(clip, (str, bytes, os.PathLike)):
        from vidmag import io

        info = io.probe(clip)
        read = io.frame_source(clip)
        inter = info.codec not in INTRA_CODECS and _has_predicted_frames(info.path)
        def frames() -> Iterator[np.ndarray]:
            return io.first_frames(read(), max_frames)

        return frames, os.fspath(clip), float(info.fps), info.codec, inter
    frames = check_frames("frames", clip)[:max_frames]
    return (lambda: iter(frames)), "array", None, None, False


def _has_predicted_frames(path: str, look: int = 60) -> bool:
    """Whether any of the first `look` frames is not a key frame (the codec predicts it from others)."""
    import av

    with av.open(path) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if not frame.key_frame:
                return True
            if index + 1 >= look:
                break
    return False


def _signals(source: Callable[[], Iterator[np.ndarray]], roi: tuple[int, int, int, int] | None
             ) -> tuple[np.ndarray, np.ndarray]:
    """(colour: (T, 3) mean RGB of the region, motion: (T, P) band-passed luminance at P grid points)."""
    colour, motion = [], []
    for frame in source():
        if roi is not None:
            x, y, w, h = roi
            frame = frame[y:y + h, x:x + w]
        colour.append(frame.reshape(-1, 3).mean(axis=0, dtype=np.float64))
        # block means down to at most twice the grid, so the band-pass costs the same on any frame size
        factor = max(1, math.ceil(max(frame.shape[:2]) / (2 * MOTION_GRID)))
        h, w = (frame.shape[0] // factor) * factor, (frame.shape[1] // factor) * factor
        luma = frame[:h, :w].astype(np.float32) @ LUMA.astype(np.float32)
        if factor > 1:
            luma = luma.reshape(h // factor, factor, w, ).sum(axis=1)
            luma = luma.reshape(h // factor, w // factor, factor).sum(axis=2) / factor**2
        band = ndimage.gaussian_filter(luma, 1.0) - ndimage.gaussian_filter(luma, 2.0)
        step_y = max(1, math.ceil(band.shape[0] / MOTION_GRID))
        step_x = max(1, math.ceil(band.shape[1] / MOTION_GRID))
        motion.append(band[::step_y, ::step_x].astype(np.float32).ravel())
    return np.array(colour), np.array(motion)


def _spectrum(x: np.ndarray, fs: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Welch spectrum of each column of `x` (T, n), summed over columns: (frequencies, power, resolution).

    Segments of half the clip (the whole clip below 64 frames), 50 % overlap, Hann window, linear trend
    removed, zero-padded to 8 times the segment so that a peak's position is read finer than the
    resolution fs / segment.
    """
    n = len(x)
    segment = n if n < 64 else n // 2
    nfft = 1 << math.ceil(math.log2(8 * segment))
    freqs, power = signal.welch(x, fs=fs, nperseg=segment, nfft=nfft, detrend="linear", axis=0)
    return freqs, power.reshape(len(freqs), -1).sum(axis=1), fs / segment


def _peaks(freqs: np.ndarray, power: np.ndarray, fs: float, resolution: float, inter: bool) -> list[Peak]:
    usable = freqs >= 2 * resolution  # the lowest bins hold the trend, not a rhythm
    floor = float(np.median(power[usable])) if usable.any() else 1.0
    db = 10 * np.log10(np.maximum(power, 1e-300) / max(floor, 1e-300))
    found, _ = signal.find_peaks(np.where(usable, db, -np.inf), height=PEAK_DB,
                                 distance=max(1, int(resolution / (freqs[1] - freqs[0]))))
    # a true maximum of the spectrum, not the edge of the usable range on a falling trend
    found = [i for i in found if 0 < i < len(freqs) - 1 and db[i - 1] <= db[i] >= db[i + 1]]
    found = sorted(found, key=lambda i: -db[i])[:MAX_PEAKS]
    out = []
    for i in found:
        f = float(freqs[i])
        a, b, c = db[i - 1], db[i], db[i + 1]  # parabola through the peak and its neighbours, in dB
        if a - 2 * b + c < 0:
            f += 0.5 * (a - c) / (a - 2 * b + c) * float(freqs[1] - freqs[0])
        out.append(Peak(f, float(db[i]), _name(f, fs, resolution, inter)))
    return out


def suggest(
    frames: Any,
    fs: float | None = None,
    *,
    roi: Any = None,
    kind: str = "auto",
    max_frames: int | None = None,
) -> Suggestion:
    """Suggest a temporal band for a clip: its spectrum, the peaks named, fl / fh and capture warnings.

    Parameters
    ----------
    frames : str, os.PathLike or ndarray
        A video file, or uint8 RGB frames (T, H, W, 3).
    fs : float, optional
        Sampling rate in Hz; None: the container's frame rate (required for an array).
    roi : (x, y, w, h) or str, optional
        Region to analyse, in pixels (``"x,y,w,h"`` too); None: the whole frame.
    kind : {"auto", "colour", "motion"}
        The signal: the region's mean colour, or the band-passed luminance at grid points (see the module).
        ``"auto"``: the one whose strongest peak (flicker aliases and codec rhythms aside) stands higher
        above its spectrum's median.
    max_frames : int, optional
        Read at most this many frames.

    Returns
    -------
    Suggestion
        The spectrum, its peaks, the recommended band (or None) and the warnings.

    Notes
    -----
    The band is centred on the strongest peak that is not a mains-flicker alias or a codec rhythm (fs / 2,
    fs / 3, fs / 4 in an inter-frame coded clip): ``fl = f - h``,
    ``fh = f + h`` with ``h = max(0.2 f, 2 fs / segment)``, fl at least one resolution step above 0, fh
    below fs / 2. Warnings: an inter-frame codec (H.264, HEVC, ...: a frame among the first 60 that is not
    a key frame) adds temporal artefacts of its own; mains flicker (100 Hz, 120 Hz) aliased to
    ``|f - k fs|`` inside the band. Runs on the host (NumPy, SciPy).

    Examples
    --------
    A face whose colour pulses at 72 beats per minute (1.2 Hz):

    >>> from vidmag import synthetic
    >>> from vidmag.suggest import suggest
    >>> scene = synthetic.scene(64, 48, bpm=72.0, seconds=6.0, pulse_amplitude=4.0)
    >>> found = suggest(list(scene), scene.fs, roi=scene.roi, kind="colour")
    >>> [round(float(f), 2) for f in (found.peaks[0].frequency, found.fl, found.fh)]
    [1.2, 0.53, 1.87]
    """
    if kind not in ("auto", "colour", "motion"):
        raise ValueError(f"kind must be 'auto', 'colour' or 'motion', got {kind!r}")
    if max_frames is not None:
        max_frames = check_integer("max_frames", max_frames)
        if max_frames < 16:
            raise ValueError(f"max_frames must be >= 16 or None, got {max_frames}")
    source, name, rate, codec, inter = _load(frames, max_frames)
    if fs is None:
        if rate is None:
            raise TypeError("fs: give the sampling rate in Hz for frames held in an array")
        fs = rate
    fs = check_fs(fs)
    first = next(iter(source()), None)
    if first is None:
        raise ValueError("frames: the clip has no frames")
    roi = check_roi("roi", roi, *first.shape[:2])
    colour, motion = _signals(source, roi)
    if len(colour) < 16:
        raise ValueError(f"frames: a spectrum needs at least 16 frames, got {len(colour)}")
    spectra = {}
    for which, values in (("colour", colour), ("motion", motion)):
        if kind in (which, "auto"):
            freqs, power, resolution = _spectrum(values, fs)
            spectra[which] = (freqs, power, resolution, _peaks(freqs, power, fs, resolution, inter))

    def strongest(peaks: list[Peak]) -> Peak | None:
        return next((p for p in peaks if not p.name.startswith(("mains", "codec"))), None)

    if kind == "auto":
        kind = max(spectra, key=lambda k: getattr(strongest(spectra[k][3]), "db", -math.inf))
    freqs, power, resolution, peaks = spectra[kind]
    main = strongest(peaks)
    fl = fh = None
    rule = (f"centred on the strongest peak that is not a flicker alias or codec rhythm: f -/+ "
            f"max({BAND_SHARE:g} f, 2 x resolution {resolution:.3g} Hz)")
    if main is not None:
        half = max(BAND_SHARE * main.frequency, 2 * resolution)
        fl = max(main.frequency - half, resolution)
        fh = min(main.frequency + half, 0.49 * fs)
    notes = []
    if inter:
        notes.append(
            f"the clip is coded with {codec}, an inter-frame codec: its motion-compensated prediction and "
            "quantisation add temporal signals that magnification amplifies (capture uncompressed or "
            "intra-only, e.g. MJPEG or FFV1, or at a high bit rate)"
        )
    notes += flicker_warnings(fs, fl, fh)
    return Suggestion(fs, kind, freqs, power, peaks, fl, fh, rule, notes, codec, name)
