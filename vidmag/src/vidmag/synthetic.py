"""A synthetic live scene: a textured background and a skin-coloured face whose colour pulses at a known rate.

It stands in for a camera wherever one is missing (the ``synthetic`` live source, the pulse tests, demos):
every frame is made from arrays computed once, so that a 640 x 480 frame costs about a millisecond.

What a frame holds:

- a background texture (smooth colour blotches and a fine grain), fixed by ``seed``;
- an elliptic "face" of skin colour with soft shading and a fine skin texture, whose colour pulses at ``bpm``
  along the blood-volume-pulse direction: relative to the skin colour, the change is the normalised signature
  :data:`PULSE_SIGNATURE` (mostly green, less red and blue, as de Haan & van Leest, Physiol. Meas. 35, 2014,
  measured). POS and CHROM rely on that direction; its size is ``pulse_amplitude`` grey levels of green at
  the face's centre (the fundamental; a second harmonic a quarter as large gives the wave a physiological
  shape);
- with ``motion > 0``, a slow sway of the whole picture by up to ``motion`` pixels (whole pixels, at 0.23 and
  0.31 Hz) and a slow lighting change (a 4 % intensity swing at 0.13 Hz);
- Gaussian sensor noise of ``noise`` grey levels, then rounding to 8 bits. The noise of a frame is a run of a
  longer noise sequence taken at a random offset (so each pixel's noise changes from frame to frame; drawing
  fresh noise for every frame would cost ten times the rest of the frame).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy import ndimage

from vidmag.params import check_integer, check_number

__all__ = ["PULSE_SIGNATURE", "SKIN_RGB", "Scene", "face_roi", "scene"]

#: Relative (AC / DC) colour change of the blood-volume pulse, (R, G, B), unit length; the values de Haan &
#: van Leest (2014) report for a standard camera under white light.
PULSE_SIGNATURE = np.array([0.33, 0.77, 0.53])
#: Skin colour at the centre of the face, grey levels (R, G, B).
SKIN_RGB = np.array([200.0, 150.0, 122.0])

#: Share of the pulse's second harmonic (relative to the fundamental): a pulse wave is not a sinusoid.
_HARMONIC = 0.25
#: Sway frequencies (Hz, vertical and horizontal) and the lighting swing (Hz, relative depth) under motion.
_SWAY_HZ = (0.23, 0.31)
_LIGHT_HZ, _LIGHT_DEPTH = 0.13, 0.04
#: Extra samples of the noise sequence beyond one frame: the offsets a frame's noise run can take.
_NOISE_PAD = 1 << 16
_MIN_SIDE = 32
_MAX_SIDE = 8192
_MAX_NOISE = 64.0
_MAX_AMPLITUDE = 32.0
_MIN_BPM, _MAX_BPM = 20.0, 300.0


def _geometry(width: int, height: int) -> tuple[float, float, float, float]:
    # Centre and semi-axes of the face ellipse, a head-like 3:4 oval filling about half the frame's height.
    ry = 0.28 * height
    rx = min(0.75 * ry, 0.3 * width)
    return width / 2.0, 0.48 * height, rx, ry


def face_roi(width: int, height: int) -> tuple[int, int, int, int]:
    """The face's bounding rectangle at rest, ``(x, y, w, h)`` in pixels (x, y: top-left corner).

    The rectangle a face detector would give: it holds the whole ellipse and a little background at its
    corners. Under ``motion`` the face moves within ``motion`` pixels of it.

    Parameters
    ----------
    width, height : int
        Frame size, pixels (see :func:`scene`).

    Returns
    -------
    tuple of int
        ``(x, y, w, h)``, inside the frame.

    Examples
    --------
    >>> from vidmag import synthetic
    >>> synthetic.face_roi(640, 480)
    (219, 95, 202, 270)
    """
    width, height = _check_size(width, height)
    cx, cy, rx, ry = _geometry(width, height)
    x0, y0 = math.floor(cx - rx), math.floor(cy - ry)
    x1, y1 = math.ceil(cx + rx), math.ceil(cy + ry)
    return x0, y0, x1 - x0, y1 - y0


def _check_size(width: object, height: object) -> tuple[int, int]:
    width, height = check_integer("width", width), check_integer("height", height)
    for name, value in (("width", width), ("height", height)):
        if not _MIN_SIDE <= value <= _MAX_SIDE:
            raise ValueError(f"{name} must be {_MIN_SIDE} to {_MAX_SIDE} pixels, got {value}")
    return width, height


class Scene(Iterator[np.ndarray]):
    """The frames of :func:`scene`, an iterator of uint8 (H, W, 3) RGB arrays, with the scene's truth.

    Attributes
    ----------
    width, height : int
        Frame size, pixels.
    fs : float
        Frame rate, Hz (the frames' time stamps are ``k / fs``).
    bpm : float
        The true pulse rate, beats per minute.
    pulse_hz : float
        The same in Hz (``bpm / 60``).
    roi : tuple of int
        The face's rectangle at rest, ``(x, y, w, h)`` (:func:`face_roi`).
    n_frames : int or None
        Number of frames the scene yields; None when endless.
    frame_index : int
        Index of the next frame.

    Examples
    --------
    >>> from vidmag import synthetic
    >>> frames = synthetic.scene(64, 48, n_frames=3)
    >>> frames.bpm, frames.pulse_hz, frames.roi, len(frames)
    (72.0, 1.2, (21, 9, 22, 28), 3)
    >>> first = next(frames)
    >>> first.shape, first.dtype, frames.frame_index
    ((48, 64, 3), dtype('uint8'), 1)
    >>> len(list(frames))  # the frames left
    2
    """

    def __init__(
        self, width: int, height: int, fs: float, bpm: float, n_frames: int | None, noise: float,
        motion: float, seed: int, pulse_amplitude: float,
    ) -> None:
        self.width, self.height, self.fs, self.bpm = width, height, fs, bpm
        self.pulse_hz = bpm / 60.0
        self.roi = face_roi(width, height)
        self.n_frames = n_frames
        self.frame_index = 0
        self._noise, self._motion, self._amplitude = noise, motion, pulse_amplitude
        rng = np.random.default_rng(seed)
        self._margin = margin = math.ceil(motion)
        canvas_h, canvas_w = height + 2 * margin, width + 2 * margin
        # The picture, drawn once on a canvas larger than the frame by the sway on each side; a frame is a
        # window of it. +0.5 so that truncation to uint8 rounds.
        canvas = _background(rng, canvas_h, canvas_w)
        cx, cy, rx, ry = _geometry(width, height)
        x, y, w, h = self.roi
        box = (slice(y + margin, y + margin + h), slice(x + margin, x + margin + w))
        rows = (np.arange(y, y + h) + 0.5 - cy)[:, None] / ry
        cols = (np.arange(x, x + w) + 0.5 - cx)[None, :] / rx
        radius = np.sqrt(rows**2 + cols**2)
        # A soft edge about 1.5 px wide, so that a moving face does not flicker along its outline.
        coverage = np.clip((1.0 - radius) * min(rx, ry) / 1.5 + 0.5, 0.0, 1.0)[..., None]
        shading = 0.78 + 0.22 * np.clip(1.0 - radius**2, 0.0, 1.0)[..., None]
        grain = 1.0 + 0.02 * ndimage.gaussian_filter(rng.standard_normal((h, w)), 1.0)[..., None]
        skin = SKIN_RGB * shading * grain
        canvas[box] = canvas[box] * (1.0 - coverage) + skin * coverage
        self._canvas = (canvas + 0.5).astype(np.float32)
        # Pulse: a relative change along PULSE_SIGNATURE of the local skin colour, scaled to
        # pulse_amplitude grey levels of green at the centre (where skin green is SKIN_RGB[1]).
        relative = PULSE_SIGNATURE / PULSE_SIGNATURE[1] * (pulse_amplitude / SKIN_RGB[1])
        self._pulse_map = (coverage * skin * relative).astype(np.float32)
        self._pulse_box = (y, x, h, w)
        self._noise_field = None
        noise_peak = 0.0
        if noise > 0:
            # Flat, so that every frame's run of it is contiguous (a strided window adds at half the speed).
            size = height * width * 3 + _NOISE_PAD
            self._noise_field = rng.standard_normal(size, dtype=np.float32) * np.float32(noise)
            noise_peak = float(np.abs(self._noise_field).max())
        # Clipping costs a pass over the frame; skip it when no value can leave 0 .. 255 anyway.
        light = 1.0 + (_LIGHT_DEPTH if motion > 0 else 0.0)
        pulse_peak = float(np.abs(self._pulse_map).max()) * (1.0 + _HARMONIC) * light
        low = float(self._canvas.min()) * (2.0 - light) - pulse_peak - noise_peak
        high = float(self._canvas.max()) * light + pulse_peak + noise_peak
        self._clip = low < 0.0 or high > 255.75
        self._offsets = np.random.default_rng(rng.integers(2**63))
        self._buffer = np.empty((height, width, 3), np.float32)
        self._scratch = np.empty((h, w, 3), np.float32)

    def __next__(self) -> np.ndarray:
        if self.n_frames is not None and self.frame_index >= self.n_frames:
            raise StopIteration
        t = self.frame_index / self.fs
        self.frame_index += 1
        buf, m = self._buffer, self._margin
        dy = dx = 0
        gain = 1.0
        if self._motion > 0:
            dy = round(self._motion * math.sin(2 * math.pi * _SWAY_HZ[0] * t))
            dx = round(self._motion * math.sin(2 * math.pi * _SWAY_HZ[1] * t + 1.0))
            gain = 1.0 + _LIGHT_DEPTH * math.sin(2 * math.pi * _LIGHT_HZ * t)
        view = self._canvas[m + dy : m + dy + self.height, m + dx : m + dx + self.width]
        if gain != 1.0:
            np.multiply(view, np.float32(gain), out=buf)
        else:
            np.copyto(buf, view)
        phase = 2 * math.pi * self.pulse_hz * t
        wave = math.sin(phase) + _HARMONIC * math.sin(2 * phase + 0.6)
        if self._amplitude > 0:
            y, x, h, w = self._pulse_box
            # The face sits at its rest place minus the window's offset.
            region = buf[y - dy : y - dy + h, x - dx : x - dx + w]
            np.multiply(self._pulse_map, np.float32(wave * gain), out=self._scratch)
            region += self._scratch
        if self._noise_field is not None:
            start = int(self._offsets.integers(0, _NOISE_PAD + 1))
            buf += self._noise_field[start : start + buf.size].reshape(buf.shape)
        if self._clip:
            np.clip(buf, 0.0, 255.75, out=buf)
        return buf.astype(np.uint8)

    def __iter__(self) -> Scene:
        return self

    def __len__(self) -> int:
        if self.n_frames is None:
            raise TypeError("an endless scene (neither seconds nor n_frames given) has no length")
        return self.n_frames


def _background(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    # Colour blotches about a tenth of the frame across (drawn coarse, then smoothly enlarged, which is far
    # cheaper than blurring a full-size field), plus a fine static grain.
    step = 16
    coarse = rng.standard_normal((height // step + 4, width // step + 4, 3))
    coarse = ndimage.gaussian_filter(coarse, (1.5, 1.5, 0))
    zoomed = ndimage.zoom(coarse, (step, step, 1), order=1, prefilter=False)[:height, :width]
    # Bounded (tanh), so that with moderate noise no pixel reaches 0 or 255 and frames need no clipping.
    zoomed = 2.0 * np.tanh(zoomed / (2.0 * max(float(zoomed.std()), 1e-6)))
    # Mostly light and shade, a little colour (a room, not a rainbow).
    luminance = zoomed.mean(axis=-1, keepdims=True) * math.sqrt(3.0)
    tint = zoomed - luminance / math.sqrt(3.0)
    base = np.array([96.0, 100.0, 108.0])
    grain = np.clip(rng.standard_normal((height, width, 1)), -3.0, 3.0) * 3.0
    return base + 24.0 * luminance + 8.0 * tint + grain


def scene(
    width: int = 640,
    height: int = 480,
    *,
    fs: float = 30.0,
    bpm: float = 72.0,
    seconds: float | None = None,
    n_frames: int | None = None,
    noise: float = 2.0,
    motion: float = 0.0,
    seed: int = 0,
    pulse_amplitude: float = 1.0,
) -> Scene:
    """Frames of a synthetic scene with a face whose colour pulses at ``bpm``.

    Parameters
    ----------
    width, height : int
        Frame size, pixels, each 32 to 8192.
    fs : float
        Frame rate, Hz, > 0 and at most 1000: frame ``k`` shows the scene at time ``k / fs``.
    bpm : float
        Pulse rate, beats per minute, 20 to 300, and below the Nyquist rate (``bpm / 60 < fs / 2``).
    seconds : float, optional
        Length of the scene, s (> 0; ``round(seconds * fs)`` frames, at least one).
    n_frames : int, optional
        Length of the scene in frames (>= 1). Give at most one of `seconds` and `n_frames`; with neither, the
        scene is endless.
    noise : float
        Standard deviation of the sensor noise, grey levels, 0 to 64.
    motion : float
        Amplitude of the sway, pixels, >= 0 and at most a tenth of the smaller side; 0 keeps the scene still
        and its lighting constant.
    seed : int
        Seed (>= 0) of the textures and of the noise: the same arguments give the same frames.
    pulse_amplitude : float
        Amplitude of the pulse's fundamental in green at the centre of the face, grey levels, 0 to 32.

    Returns
    -------
    Scene
        An iterator of uint8 (height, width, 3) RGB frames, each a new array; its attributes hold the truth
        (``bpm``, ``pulse_hz``, ``roi``, ``fs``).

    Raises
    ------
    TypeError
        A parameter is not a number; the message names it.
    ValueError
        A parameter is out of range; the message names it and the allowed range.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag import synthetic
    >>> frames = np.stack(list(synthetic.scene(64, 48, fs=30.0, bpm=90.0, seconds=0.2, seed=1)))
    >>> frames.shape, frames.dtype
    ((6, 48, 64, 3), dtype('uint8'))
    >>> again = np.stack(list(synthetic.scene(64, 48, fs=30.0, bpm=90.0, seconds=0.2, seed=1)))
    >>> bool(np.array_equal(frames, again))  # the same arguments give the same frames
    True
    """
    width, height = _check_size(width, height)
    fs = check_number("fs", fs)
    if not 0 < fs <= 1000:
        raise ValueError(f"fs must be > 0 and <= 1000 Hz, got {fs}")
    bpm = check_number("bpm", bpm)
    if not _MIN_BPM <= bpm <= _MAX_BPM:
        raise ValueError(f"bpm must be {_MIN_BPM:g} to {_MAX_BPM:g} beats per minute, got {bpm}")
    if bpm / 60.0 >= fs / 2:
        raise ValueError(
            f"bpm must be < 30 * fs = {30 * fs:g} (below the Nyquist rate at fs = {fs} Hz), got {bpm}"
        )
    if seconds is not None and n_frames is not None:
        raise ValueError("give at most one of seconds and n_frames")
    if seconds is not None:
        seconds = check_number("seconds", seconds)
        if seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        n_frames = round(seconds * fs)
        if n_frames < 1:
            raise ValueError(f"seconds * fs must give at least one frame, got {seconds} s at {fs} Hz")
    elif n_frames is not None:
        n_frames = check_integer("n_frames", n_frames)
        if n_frames < 1:
            raise ValueError(f"n_frames must be >= 1, got {n_frames}")
    noise = check_number("noise", noise)
    if not 0 <= noise <= _MAX_NOISE:
        raise ValueError(f"noise must be 0 to {_MAX_NOISE:g} grey levels, got {noise}")
    motion = check_number("motion", motion)
    limit = min(width, height) / 10
    if not 0 <= motion <= limit:
        raise ValueError(f"motion must be 0 to {limit:g} pixels (a tenth of the smaller side), got {motion}")
    seed = check_integer("seed", seed)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    pulse_amplitude = check_number("pulse_amplitude", pulse_amplitude)
    if not 0 <= pulse_amplitude <= _MAX_AMPLITUDE:
        raise ValueError(
            f"pulse_amplitude must be 0 to {_MAX_AMPLITUDE:g} grey levels, got {pulse_amplitude}"
        )
    return Scene(width, height, fs, bpm, n_frames, noise, motion, seed, pulse_amplitude)
