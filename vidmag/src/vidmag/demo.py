"""A self-contained demonstration: synthesise a clip with changes too small to see, magnify them, measure.

The clip (160 x 120, 10 s at 30 fps by default) holds two things:

- on the left, a skin-coloured patch whose colour pulses at 1.2 Hz with an amplitude under half a grey level
  (the size of the colour change blood flow makes in a face);
- on the right, a vertical dark/light edge vibrating by 0.2 pixel at 2 Hz.

Camera-like noise (1 grey level RMS) is added before rounding to 8 bits. The noise dithers the sub-level
pulse, so the pulse survives quantisation in the mean over the patch, as it does in a real recording.

The colour is magnified with ``gaussian_ideal`` and the motion with ``laplacian_butterworth``; each result is
written next to the input as an mp4, and the patch's mean colour and its spectrum, before and after, are
plotted to a PNG with the spectral peak marked.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.special import erf

from vidmag import io
from vidmag.params import check_integer, check_number

__all__ = [
    "MAX_SECONDS",
    "MIN_SECONDS",
    "DemoClip",
    "DemoResult",
    "PulseMeasurement",
    "measure_edge_vibration",
    "measure_pulse",
    "run_demo",
    "synthesise",
]

#: Shortest clip :func:`run_demo` makes, s: three periods of the 1.2 Hz pulse. The spectrum's bins are then
#: at most 0.4 Hz apart, so the measured peaks land within 0.2 Hz of the pulse and of the 2 Hz vibration,
#: clear of the drift below 0.3 Hz; shorter clips give peaks a bin away from the truth, and a fraction of a
#: second gives no pulse at all.
MIN_SECONDS = 2.5
#: Longest clip :func:`run_demo` makes, s: the demo holds the clip and both results in memory (about 5 MB
#: per second at 30 fps, so some 0.3 GB at this length, on top of the libraries).
MAX_SECONDS = 60.0

#: Colour direction of the pulse, grey levels per unit amplitude (red leads, as with blood volume).
PULSE_RGB = np.array([1.0, 0.55, 0.4])
SKIN_RGB = np.array([224.0, 172.0, 140.0])
BACKGROUND_RGB = np.array([70.0, 78.0, 92.0])
EDGE_DARK, EDGE_LIGHT = 60.0, 200.0
EDGE_BLUR_PX = 1.5


@dataclass(frozen=True)
class DemoClip:
    """A synthetic clip and where its signals are.

    Attributes
    ----------
    frames : numpy.ndarray
        uint8 (T, H, W, 3) RGB.
    fs : float
        Frame rate, Hz.
    patch : tuple of slice
        (rows, columns) of the pulsing patch's interior, where the colour is measured.
    edge_rows, edge_columns : slice
        The window around the vibrating edge, where its position is measured.
    pulse_hz, pulse_amplitude : float
        Frequency (Hz) and amplitude (grey levels, red channel) of the colour pulse.
    vibration_hz, vibration_px : float
        Frequency (Hz) and amplitude (pixels) of the edge's vibration.

    Examples
    --------
    >>> from vidmag import demo
    >>> clip = demo.synthesise(seconds=5.0)
    >>> clip.pulse_hz, clip.vibration_hz, clip.frames.dtype
    (1.2, 2.0, dtype('uint8'))
    """

    frames: np.ndarray
    fs: float
    patch: tuple[slice, slice]
    edge_rows: slice
    edge_columns: slice
    pulse_hz: float
    pulse_amplitude: float
    vibration_hz: float
    vibration_px: float


def synthesise(
    *,
    seconds: float = 10.0,
    fs: float = 30.0,
    height: int = 120,
    width: int = 160,
    pulse_hz: float = 1.2,
    pulse_amplitude: float = 0.4,
    vibration_hz: float = 2.0,
    vibration_px: float = 0.2,
    noise: float = 1.0,
    seed: int = 0,
) -> DemoClip:
    """Synthesise the demonstration clip.

    Parameters
    ----------
    seconds : float
        Length of the clip, s.
    fs : float
        Frame rate, Hz.
    height, width : int
        Frame size, pixels.
    pulse_hz, pulse_amplitude : float
        The colour pulse: frequency in Hz and amplitude in grey levels of the red channel (green and blue
        follow ``PULSE_RGB``).
    vibration_hz, vibration_px : float
        The edge's vibration: frequency in Hz and amplitude in pixels.
    noise : float
        Standard deviation of the Gaussian noise added before rounding, grey levels.
    seed : int
        Seed of the noise.

    Returns
    -------
    DemoClip

    Raises
    ------
    TypeError
        A parameter is not a number (strings are refused); the message names it.
    ValueError
        A parameter is out of range: `seconds`, `fs` and the amplitudes must be > 0 (`noise` >= 0),
        the clip must have at least one frame, and the frame at least 16 x 32 pixels (patch and edge).

    Examples
    --------
    >>> from vidmag import demo
    >>> clip = demo.synthesise(seconds=5.0)
    >>> clip.frames.shape, clip.fs, clip.pulse_hz
    ((150, 120, 160, 3), 30.0, 1.2)
    """
    seconds, fs = _positive("seconds", seconds), _positive("fs", fs)
    height, width = check_integer("height", height), check_integer("width", width)
    if height < 16 or width < 32:
        raise ValueError(f"height and width must be at least 16 and 32 pixels, got {height} x {width}")
    pulse_hz, vibration_hz = _positive("pulse_hz", pulse_hz), _positive("vibration_hz", vibration_hz)
    pulse_amplitude = check_number("pulse_amplitude", pulse_amplitude)
    vibration_px = check_number("vibration_px", vibration_px)
    noise = check_number("noise", noise)
    if noise < 0:
        raise ValueError(f"noise must be >= 0 grey levels, got {noise}")
    seed = check_integer("seed", seed)
    n_frames = round(seconds * fs)
    if n_frames < 1:
        raise ValueError(f"seconds * fs must give at least one frame, got {seconds} s at {fs} Hz")
    t = np.arange(n_frames) / fs
    rng = np.random.default_rng(seed)
    rows = np.arange(height)[:, None]
    cols = np.arange(width)[None, :]

    # Patch: a square on the left half, with a margin wide enough for the blur of a 3-level Gaussian stack.
    side = min(height, width // 2) * 3 // 5
    top, left = (height - side) // 2, (width // 2 - side) // 2
    in_patch = (rows >= top) & (rows < top + side) & (cols >= left) & (cols < left + side)
    margin = side // 3
    patch = (slice(top + margin, top + side - margin), slice(left + margin, left + side - margin))

    # Edge: vertical, in the right half, a step blurred by a Gaussian (as a lens does), so a sub-pixel shift
    # changes the pixels near it smoothly and its position can be read back to a small fraction of a pixel.
    edge_x0 = width * 3 // 4
    edge_rows = slice(height // 6, height - height // 6)
    edge_columns = slice(width // 2 + 8, width - 4)

    frames = np.empty((n_frames, height, width, 3), np.uint8)
    for k in range(n_frames):
        image = np.empty((height, width, 3))
        image[:] = BACKGROUND_RGB
        pulse = pulse_amplitude * np.sin(2 * np.pi * pulse_hz * t[k])
        image[in_patch] = SKIN_RGB + pulse * PULSE_RGB
        x0 = edge_x0 + vibration_px * np.sin(2 * np.pi * vibration_hz * t[k])
        light = 0.5 * (1 + erf((cols + 0.5 - x0) / (EDGE_BLUR_PX * np.sqrt(2))))
        on_edge = (cols >= width // 2) & (rows >= edge_rows.start - 8) & (rows < edge_rows.stop + 8)
        edge_value = np.broadcast_to(EDGE_DARK + (EDGE_LIGHT - EDGE_DARK) * light, (height, width))
        image[on_edge] = edge_value[on_edge][:, None]
        image += rng.normal(0.0, noise, image.shape)
        frames[k] = np.clip(np.round(image), 0, 255).astype(np.uint8)
    return DemoClip(
        frames=frames,
        fs=fs,
        patch=patch,
        edge_rows=edge_rows,
        edge_columns=edge_columns,
        pulse_hz=pulse_hz,
        pulse_amplitude=pulse_amplitude,
        vibration_hz=vibration_hz,
        vibration_px=vibration_px,
    )


@dataclass(frozen=True)
class PulseMeasurement:
    """A periodic signal's strongest spectral component.

    Attributes
    ----------
    signal : numpy.ndarray
        (T,) the measured series (mean colour, or edge position), with its mean removed.
    frequencies : numpy.ndarray
        (T // 2 + 1,) frequencies of the spectrum, Hz.
    amplitude_spectrum : numpy.ndarray
        (T // 2 + 1,) amplitude of each frequency's sinusoid (a unit sine gives 1 at its frequency).
    peak_hz : float
        Frequency of the largest amplitude above 0.3 Hz, Hz.
    peak_amplitude : float
        Its amplitude, in the signal's unit.

    Examples
    --------
    >>> from vidmag import demo
    >>> clip = demo.synthesise(seconds=5.0)
    >>> round(demo.measure_pulse(clip.frames, clip.patch, clip.fs).peak_hz, 2)   # the 1.2 Hz pulse
    1.2
    """

    signal: np.ndarray
    frequencies: np.ndarray
    amplitude_spectrum: np.ndarray
    peak_hz: float
    peak_amplitude: float


def _peak(series: np.ndarray, fs: float) -> PulseMeasurement:
    series = np.asarray(series, np.float64)
    series = series - series.mean()
    spectrum = np.abs(np.fft.rfft(series)) * 2 / len(series)
    frequencies = np.fft.rfftfreq(len(series), 1 / fs)
    search = frequencies > 0.3  # ignore drift
    index = int(np.flatnonzero(search)[np.argmax(spectrum[search])])
    return PulseMeasurement(series, frequencies, spectrum, float(frequencies[index]), float(spectrum[index]))


def measure_pulse(
    frames: np.ndarray, patch: tuple[slice, slice], fs: float, channel: int = 0
) -> PulseMeasurement:
    """Spectral peak of one channel's mean over a region.

    Parameters
    ----------
    frames : numpy.ndarray
        (T, H, W, 3) RGB frames.
    patch : tuple of slice
        (rows, columns) of the region.
    fs : float
        Frame rate, Hz.
    channel : int
        0, 1, 2 for R, G, B.

    Returns
    -------
    PulseMeasurement
        Amplitudes in grey levels.

    Examples
    --------
    >>> from vidmag import demo
    >>> clip = demo.synthesise(seconds=5.0)
    >>> round(demo.measure_pulse(clip.frames, clip.patch, clip.fs).peak_hz, 2)   # the 1.2 Hz pulse
    1.2
    """
    region = np.asarray(frames)[:, patch[0], patch[1], channel].astype(np.float64)
    return _peak(region.mean(axis=(1, 2)), fs)


def measure_edge_vibration(frames: np.ndarray, rows: slice, columns: slice, fs: float) -> PulseMeasurement:
    """Spectral peak of a vertical dark-to-light edge's horizontal position.

    The position is where the window's mean row profile crosses half-way between the dark and the light
    level, interpolated linearly between the two pixels around the crossing (the crossing nearest the
    window's centre when ringing makes several).

    Parameters
    ----------
    frames : numpy.ndarray
        (T, H, W, 3) RGB frames.
    rows, columns : slice
        The window around the edge: dark on its left, light on its right.
    fs : float
        Frame rate, Hz.

    Returns
    -------
    PulseMeasurement
        Amplitudes in pixels.

    Examples
    --------
    >>> from vidmag import demo
    >>> clip = demo.synthesise(seconds=5.0)
    >>> round(demo.measure_edge_vibration(clip.frames, clip.edge_rows, clip.edge_columns, clip.fs).peak_hz, 2)
    2.0
    """
    profiles = np.asarray(frames)[:, rows, columns, :].astype(np.float64).mean(axis=(1, 3))
    middle = (EDGE_DARK + EDGE_LIGHT) / 2
    positions = np.empty(len(profiles))
    for k, profile in enumerate(profiles):
        rising = np.flatnonzero((profile[:-1] < middle) & (profile[1:] >= middle))
        if rising.size == 0:
            raise ValueError("measure_edge_vibration: no dark-to-light edge in the window")
        i = rising[np.argmin(np.abs(rising - len(profile) / 2))]
        positions[k] = i + (middle - profile[i]) / (profile[i + 1] - profile[i])
    return _peak(positions, fs)


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` wrote and measured.

    Attributes
    ----------
    colour_video, motion_video, plot : str
        Paths of the two side-by-side mp4 files (input left, output right) and of the PNG plot.
    pulse_before, pulse_after : PulseMeasurement
        The patch's red channel, in the input and after colour magnification.
    vibration_before, vibration_after : PulseMeasurement
        The edge's position, in the input and after motion magnification.
    colour_alpha : float
        The colour magnification's alpha; the pulse's expected gain is ``1 + colour_alpha``.
    backend : str
        The backend that magnified.
    seconds : float
        Wall-clock time of the two magnifications, s.

    Examples
    --------
    >>> import dataclasses
    >>> from vidmag import demo
    >>> [field.name for field in dataclasses.fields(demo.DemoResult)][:3]   # what demo.run_demo returns
    ['colour_video', 'motion_video', 'plot']
    """

    colour_video: str
    motion_video: str
    plot: str
    pulse_before: PulseMeasurement
    pulse_after: PulseMeasurement
    vibration_before: PulseMeasurement
    vibration_after: PulseMeasurement
    colour_alpha: float
    backend: str
    seconds: float

    @property
    def pulse_gain(self) -> float:
        """Measured amplitude gain of the colour pulse."""
        return self.pulse_after.peak_amplitude / self.pulse_before.peak_amplitude

    @property
    def vibration_gain(self) -> float:
        """Measured amplitude gain of the edge's vibration."""
        return self.vibration_after.peak_amplitude / self.vibration_before.peak_amplitude

    def report(self) -> str:
        """A few lines for a person: files written and what was measured."""
        before, after = self.pulse_before.peak_amplitude, self.pulse_after.peak_amplitude
        moved, magnified = self.vibration_before.peak_amplitude, self.vibration_after.peak_amplitude
        return "\n".join(
            [
                f"wrote {self.colour_video}  (colour: input | magnified)",
                f"wrote {self.motion_video}  (motion: input | magnified)",
                f"wrote {self.plot}  (mean colour of the patch and its spectrum)",
                f"colour pulse: peak at {self.pulse_after.peak_hz:.2f} Hz, "
                f"{before:.3f} -> {after:.2f} grey levels "
                f"(gain {self.pulse_gain:.1f}, expected {1 + self.colour_alpha:g})",
                f"edge vibration: peak at {self.vibration_after.peak_hz:.2f} Hz, "
                f"{moved:.3f} -> {magnified:.2f} px "
                f"(gain {self.vibration_gain:.1f})",
                f"magnified on backend {self.backend} in {self.seconds:.1f} s",
            ]
        )


def _write_side_by_side(path: str, before: np.ndarray, after: np.ndarray, fs: float) -> None:
    height, width = before.shape[1:3]
    with io.atomic_output(path) as tmp, io.VideoWriter(
        tmp, width=2 * width, height=height, fps=Fraction(fs).limit_denominator(1001), quality=16
    ) as writer:
        for left, right in zip(before, after):
            writer.write(np.concatenate([left, right], axis=1))


def _plot(path: str, clip: DemoClip, before: PulseMeasurement, after: PulseMeasurement, alpha: float) -> None:
    # Figure + Agg canvas directly, not pyplot: no global backend is switched in the caller's process.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 6.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(2, 2)
    t = np.arange(len(before.signal)) / clip.fs
    for column, (measure, title) in enumerate([(before, "input"), (after, f"magnified (alpha {alpha:g})")]):
        series_axes, spectrum_axes = axes[0, column], axes[1, column]
        series_axes.plot(t, measure.signal, color="tab:red", linewidth=1)
        series_axes.set_title(f"{title}: mean red of the patch")
        series_axes.set_xlabel("time (s)")
        series_axes.set_ylabel("grey levels (mean removed)")
        series_axes.grid(alpha=0.3)
        spectrum_axes.plot(measure.frequencies, measure.amplitude_spectrum, color="tab:blue", linewidth=1)
        spectrum_axes.plot(measure.peak_hz, measure.peak_amplitude, "o", color="tab:orange")
        spectrum_axes.annotate(
            f"{measure.peak_hz:.2f} Hz, {measure.peak_amplitude:.3g} grey levels",
            (measure.peak_hz, measure.peak_amplitude),
            textcoords="offset points",
            xytext=(10, -4),
        )
        spectrum_axes.set_title(f"{title}: amplitude spectrum")
        spectrum_axes.set_xlabel("frequency (Hz)")
        spectrum_axes.set_ylabel("amplitude (grey levels)")
        spectrum_axes.set_xlim(0, clip.fs / 2)
        spectrum_axes.grid(alpha=0.3)
    figure.suptitle(
        f"Synthetic pulse: {clip.pulse_amplitude:g} grey levels at {clip.pulse_hz:g} Hz, "
        f"gain {after.peak_amplitude / before.peak_amplitude:.1f} (expected {1 + alpha:g})"
    )
    with io.atomic_output(path) as tmp:
        figure.savefig(tmp, format="png", dpi=100)


def _positive(name: str, value: object) -> float:
    number = check_number(name, value)
    if number <= 0:
        raise ValueError(f"{name} must be > 0, got {number}")
    return number


def run_demo(
    out_dir: str | bytes | os.PathLike = "demo-output",
    *,
    seconds: float = 10.0,
    backend: str = "auto",
    colour_alpha: float = 50.0,
    motion_alpha: float = 30.0,
) -> DemoResult:
    """Synthesise the demonstration clip, magnify its colour and its motion, write videos and a plot.

    Every argument is checked before anything is created: on bad input no directory or file is made.

    Parameters
    ----------
    out_dir : str, bytes or os.PathLike
        Directory for ``colour.mp4``, ``motion.mp4`` and ``pulse.png``; created if missing (with its
        parents). If it exists it must be a directory, and those three names in it must not be directories;
        files of those names are replaced.
    seconds : float
        Length of the synthetic clip, s (at 30 fps), from :data:`MIN_SECONDS` (2.5, what the pulse
        measurement needs) to :data:`MAX_SECONDS` (60, to keep the memory used small).
    backend : str
        Backend for the magnification (``"auto"`` or a name from ``vidmag backends``).
    colour_alpha : float
        Amplification of the colour pulse (``gaussian_ideal``, pass band 0.9-1.5 Hz, default semantics:
        the pulse's amplitude is multiplied by ``1 + colour_alpha``), >= 0.
    motion_alpha : float
        Amplification of the edge's motion (``laplacian_butterworth``, 1.5-2.5 Hz, lambda_c 16), >= 0.

    Returns
    -------
    DemoResult

    Raises
    ------
    TypeError
        `out_dir` is not a path, `backend` not a string, a number is not a number (strings are refused).
    ValueError
        `seconds` is not finite or outside its range, an alpha is negative or not finite, `backend` is not
        a backend's name.
    NotADirectoryError, IsADirectoryError
        `out_dir` (or a parent) is a file, or an output name in it is a directory.
    vidmag.backend.BackendUnavailableError
        The named backend cannot run here.

    Examples
    --------
    >>> from vidmag import demo
    >>> result = demo.run_demo("demo-output", seconds=demo.MIN_SECONDS, backend="cpu")
    >>> before, after = result.pulse_before, result.pulse_after
    >>> round(after.peak_hz, 2), after.peak_amplitude > 10 * before.peak_amplitude
    (1.2, True)
    """
    from vidmag import magnify
    from vidmag.backend import select

    out_dir = io.as_path("out_dir", out_dir)
    seconds = check_number("seconds", seconds)
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ValueError(
            f"seconds must be from {MIN_SECONDS:g} (three periods of the 1.2 Hz pulse, the least its "
            f"measurement needs) to {MAX_SECONDS:g} (the clip is held in memory), got {seconds:g}"
        )
    colour_alpha = check_number("colour_alpha", colour_alpha)
    motion_alpha = check_number("motion_alpha", motion_alpha)
    for name, alpha in (("colour_alpha", colour_alpha), ("motion_alpha", motion_alpha)):
        if alpha < 0:
            raise ValueError(f"{name} must be >= 0, got {alpha:g}")
    if not isinstance(backend, str):
        raise TypeError(
            f"backend must be a string ('auto' or a backend's name), got {type(backend).__name__}"
        )
    backend, _ = select(backend)
    colour_video = os.path.join(out_dir, "colour.mp4")
    motion_video = os.path.join(out_dir, "motion.mp4")
    plot = os.path.join(out_dir, "pulse.png")
    _check_out_dir(out_dir, (colour_video, motion_video, plot))
    os.makedirs(out_dir, exist_ok=True)
    clip = synthesise(seconds=seconds)
    start = time.perf_counter()
    colour = magnify(
        clip.frames, fs=clip.fs, pipeline="gaussian_ideal", backend=backend,
        alpha=colour_alpha, level=3, fl=0.9, fh=1.5, chrom_attenuation=1.0,
    )
    motion = magnify(
        clip.frames, fs=clip.fs, pipeline="laplacian_butterworth", backend=backend,
        alpha=motion_alpha, lambda_c=16.0, fl=1.5, fh=2.5, chrom_attenuation=0.0,
    )
    elapsed = time.perf_counter() - start
    _write_side_by_side(colour_video, clip.frames, colour, clip.fs)
    _write_side_by_side(motion_video, clip.frames, motion, clip.fs)
    pulse_before = measure_pulse(clip.frames, clip.patch, clip.fs)
    pulse_after = measure_pulse(colour, clip.patch, clip.fs)
    _plot(plot, clip, pulse_before, pulse_after, colour_alpha)
    return DemoResult(
        colour_video=colour_video,
        motion_video=motion_video,
        plot=plot,
        pulse_before=pulse_before,
        pulse_after=pulse_after,
        vibration_before=measure_edge_vibration(clip.frames, clip.edge_rows, clip.edge_columns, clip.fs),
        vibration_after=measure_edge_vibration(motion, clip.edge_rows, clip.edge_columns, clip.fs),
        colour_alpha=colour_alpha,
        backend=backend,
        seconds=elapsed,
    )


def _check_out_dir(out_dir: str, outputs: tuple[str, ...]) -> None:
    """What ``os.makedirs`` and the writes would trip over, found before anything is created."""
    existing = os.path.abspath(out_dir)
    while not os.path.exists(existing):  # the deepest part of the path that exists must be a directory
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise NotADirectoryError(f"out_dir: {existing!r} is a file, not a directory (out_dir {out_dir!r})")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"out_dir: {existing!r} is not writable")
    for path in outputs:
        if os.path.isdir(path):
            raise IsADirectoryError(f"out_dir: {path!r} is a directory; the demo writes a file of that name")
