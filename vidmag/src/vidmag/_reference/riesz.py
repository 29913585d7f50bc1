"""The Riesz pyramid of Wadhwa et al. (ICCP 2014), phase-based magnification frame by frame.

Which pyramid: **our Laplacian pyramid** (:mod:`vidmag._reference.pyramid`: binom5, ``reflect1`` borders, the
``buildLpyr`` level count), not the paper's compact hand-tuned one, with the paper's **3-tap approximate Riesz
transform**: per level, ``R1`` (along x, the columns) and ``R2`` (along y, the rows) are the band correlated
with ``[0.5, 0, -0.5]``, i.e. ``R1(x) = (b(x - 1) - b(x + 1)) / 2``, whose response ``-i sin(w)`` approximates
the ideal ``-i sign(w)`` for the octave a level holds (it is exact in direction, and the phase shift uses the
same taps both ways, so the convention of its sign cancels out of the result).

Per pixel of a level, the band and its two Riesz components ``(I, R1, R2)`` form a quaternion; the motion
signal is the quaternionic phase ``(phi cos theta, phi sin theta)``. As in the paper's appendix it is obtained
by accumulating, frame after frame, the phase *difference* given by the product of the current quaternion with
the previous frame's conjugate (which stays in ``(-pi, pi]`` per step, so the accumulated phase does not wrap
however far the level's phase travels); frame 0's phase is 0, and a step is faded out where it has no
limit (a coefficient near 0, a step near pi: :func:`step_fade`). The accumulated phase is band-passed in time
(per component), smoothed by an amplitude-weighted Gaussian (``sigma`` pixels at the level's own resolution; 0
turns it off), multiplied by ``alpha`` and applied as a rotation of the band:

``out = cos(|v|) I - sin(|v|) (v_x R1 + v_y R2) / |v|``,  v = alpha * smoothed phase,

the real part of ``exp(v) q``. For ``I = A cos(w x - w d)`` that is ``A cos(w (x - d - alpha d_f))``: a motion
``d`` whose band-passed part is ``d_f`` comes out moved by ``d + alpha d_f`` ((1 + alpha) d for a motion in
the band). Every level but the residual (the coarsest) is processed; the residual is kept.

Only luminance is processed (Y of YIQ, as the MIT phase code); I and Q pass through. ``mit=True`` takes
Octave's 5-decimal YIQ -> RGB matrix, the one convention both MIT codes share (there is no MIT Riesz code).
Time is the leading axis. docs/vidmag/phase.md has the checks and their figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
from scipy.ndimage import correlate1d

from vidmag._reference.colour import rgb_to_yiq, yiq_to_rgb_uint8
from vidmag._reference.pyramid import build_laplacian, collapse_laplacian, pyramid_levels
from vidmag._reference.temporal import butterworth_lowpass, butterworth_step, ideal_bandpass, iir_step

#: The paper's approximate Riesz transform taps (a correlation along x for R1, along y for R2).
RIESZ_TAPS = np.array([0.5, 0.0, -0.5])

#: The temporal filters of the Riesz pipelines.
TEMPORAL_KINDS = ("ideal", "butterworth", "iir")


def riesz_transform(band: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 3-tap approximate Riesz transform of a band (..., h, w): (R1 along x, R2 along y), mirror
    borders."""
    return (correlate1d(band, RIESZ_TAPS, axis=-1, mode="mirror"),
            correlate1d(band, RIESZ_TAPS, axis=-2, mode="mirror"))


def gaussian_taps(sigma: float) -> np.ndarray:
    """Normalised Gaussian taps of standard deviation ``sigma`` over +-ceil(2 sigma) (the MIT code's
    kernel spans ceil(4 sigma) samples; this is its odd, centred counterpart)."""
    radius = max(1, math.ceil(2.0 * sigma))
    k = np.arange(-radius, radius + 1, dtype=np.float64)
    taps = np.exp(-(k**2) / (2.0 * sigma**2))
    return taps / taps.sum()


def gaussian_blur(x: np.ndarray, sigma: float, *, mode: str = "mirror") -> np.ndarray:
    """Separable Gaussian blur of (..., h, w) over the last two axes (``mode`` as scipy.ndimage)."""
    taps = gaussian_taps(sigma)
    return correlate1d(correlate1d(x, taps, axis=-1, mode=mode), taps, axis=-2, mode=mode)


def amplitude_weighted_blur(
    x: np.ndarray, amplitude: np.ndarray, sigma: float, *, mode: str = "mirror"
) -> np.ndarray:
    """``blur(x * amplitude) / blur(amplitude)``: a phase smoothed where the band is strong; ``sigma = 0``
    returns ``x``."""
    if sigma == 0:
        return x
    weight = amplitude + 1e-12  # a flat region (amplitude 0) divides 0 by a tiny number, not by 0
    return gaussian_blur(x * weight, sigma, mode=mode) / gaussian_blur(weight, sigma, mode=mode)


class Quaternion(NamedTuple):
    """The band and its Riesz components at one level: ``I + i R1 + j R2`` per pixel."""

    real: np.ndarray
    x: np.ndarray
    y: np.ndarray


#: The coefficient magnitude (luminance in [0, 1]) below which a phase step fades out (:func:`step_fade`):
#: 1e-4 is 0.026 grey levels, two to three decades above the float32 rounding of a band (1e-7 to 1e-6).
PHASE_EPSILON = 1e-4

#: The power of ``sin^2(theta / 2)`` in the fade of steps near pi (:func:`step_fade`): 16 leaves steps up to
#: 1.5 rad within 1e-5 of themselves.
PI_FADE_POWER = 16


def step_fade(
    current: Quaternion, previous: Quaternion, real: np.ndarray, magnitude: np.ndarray, *,
    where: Callable[..., Any] = np.where,
) -> np.ndarray:
    """The factor in [0, 1] by which :func:`phase_difference` fades a phase step where it is undefined.

    The step ``theta u`` of ``q = current * conj(previous)`` (``theta`` in [0, pi], ``u`` the unit
    orientation of q's vector part) has no limit at two kinds of points, where rounding alone picks the
    answer, and the accumulated phase keeps whatever it picked for every later frame (the temporal filter
    then passes it on to frames where the band is strong, magnified by alpha):

    - a coefficient of magnitude 0 (a flat or exactly cancelling region): the step of a zero quaternion is
      0 / 0; float32 rounding of the band (1e-7 to 1e-6) gives it any value in [0, pi];
    - ``theta = pi`` (the band changed sign): every orientation ``u`` gives the same ``exp(pi u) = -1``, and
      the rounding of q's vector part picks one (with a vector part of exactly 0 the step was 0).

    The factor is ``g(|current|) g(|previous|) (1 - sin^2(theta / 2)^k)``, ``g(m) = m^4 / (m^4 + eps^4)``
    (``eps`` = :data:`PHASE_EPSILON`, ``k`` = :data:`PI_FADE_POWER`): the step becomes a continuous function
    of the quaternions, 0 at both kinds of points, with a derivative bounded by about ``1 / eps`` and ``k``,
    so float32 and float64 agree to their rounding times that bound. Where it matters little: above 10 eps
    (0.26 grey levels) g is within 1e-4 of 1, and ``sin^2(theta / 2)^16`` is below 1e-5 for steps up to
    1.5 rad (a step near pi, half a period of the band's wave in one frame, is no motion a phase can tell).

    Parameters
    ----------
    current, previous : Quaternion
        The two frames' quaternions.
    real, magnitude : numpy.ndarray
        q's real part and ``|q| = |current| |previous|``.
    where : callable, optional
        ``where(condition, x, y)`` of the arrays' library (``torch.where`` for the torch backend's tensors);
        the rest is arithmetic any array library does.

    Returns
    -------
    numpy.ndarray
        The factor, of the inputs' shape.

    See Also
    --------
    phase_difference : the step it fades.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag._reference.riesz import Quaternion, step_fade
    >>> one, flip = Quaternion(np.array(1.0), np.array(0.0), np.array(0.0)), np.array(-1.0)
    >>> float(step_fade(one, one, np.array(1.0), np.array(1.0))), float(step_fade(one, one, flip, -flip))
    (1.0, 0.0)
    """
    eps4 = PHASE_EPSILON**4
    nc = current.real * current.real + current.x * current.x + current.y * current.y
    npr = previous.real * previous.real + previous.x * previous.x + previous.y * previous.y
    gate = (nc * nc / (nc * nc + eps4)) * (npr * npr / (npr * npr + eps4))
    # sin^2(theta / 2) = (1 - cos theta) / 2 without a trigonometric call; 0 where q is 0 (the gate is 0)
    positive = magnitude > 0
    half = where(positive, (magnitude - real) / (2.0 * where(positive, magnitude, 1.0)), 0.0)
    return gate * (1.0 - half**PI_FADE_POWER)


def phase_difference(current: Quaternion, previous: Quaternion) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(phase difference times cos and sin of its orientation, amplitude) of ``current * conj(previous)``.

    The difference lies in [0, pi] times a unit orientation, faded where it is undefined (a coefficient of
    magnitude near 0, a difference near pi: :func:`step_fade`), so each component lies in [-pi, pi]; the
    amplitude is ``sqrt(|current| |previous|)``. Where the product's vector part is 0 the difference is 0; a
    zero quaternion gives 0 as well."""
    real = current.real * previous.real + current.x * previous.x + current.y * previous.y
    qx = previous.real * current.x - current.real * previous.x
    qy = previous.real * current.y - current.real * previous.y
    vector = np.sqrt(qx * qx + qy * qy)
    magnitude = np.sqrt(real * real + vector * vector)
    difference = np.arctan2(vector, real)  # = acos(real / |q|), stable near 0 and pi
    safe = np.where(vector > 0, vector, 1.0)
    scale = np.where(vector > 0, difference / safe, 0.0) * step_fade(current, previous, real, magnitude)
    return qx * scale, qy * scale, np.sqrt(magnitude)


def phase_shift(q: Quaternion, phase_cos: np.ndarray, phase_sin: np.ndarray) -> np.ndarray:
    """Real part of ``exp(v) q`` with v = (phase_cos, phase_sin): ``cos|v| I - sin|v| (v . R) / |v|``."""
    magnitude = np.sqrt(phase_cos * phase_cos + phase_sin * phase_sin)
    # sin|v| / |v| -> 1 as |v| -> 0: v = 0 gives the band itself, bit for bit
    safe = np.where(magnitude > 0, magnitude, 1.0)
    sinc = np.where(magnitude > 0, np.sin(magnitude) / safe, 1.0)
    return np.cos(magnitude) * q.real - sinc * (phase_cos * q.x + phase_sin * q.y)


def analyse(luma: np.ndarray, levels: int) -> tuple[list[Quaternion], np.ndarray]:
    """The Riesz pyramid of a luminance image (h, w) or batch (n, h, w): (a quaternion per processed level,
    finest first; the residual)."""
    bands = [b[..., 0] for b in build_laplacian(luma[..., None], levels)]
    return [Quaternion(b, *riesz_transform(b)) for b in bands[:-1]], bands[-1]


def synthesise(bands: list[np.ndarray], residual: np.ndarray) -> np.ndarray:
    """Collapse processed bands (finest first) and the residual into a luminance image."""
    return collapse_laplacian([b[..., None] for b in bands] + [residual[..., None]])[..., 0]


class _LowPassPair:
    """The streaming band-pass ``LP_high - LP_low`` of one signal (two first-order low-passes), started at the
    first value it sees (whose output is 0)."""

    def __init__(self, kind: str, fs: float, fl: float | None, fh: float | None, r1: float | None,
                 r2: float | None):
        self.kind = kind
        self.retune(fs, fl, fh, r1, r2)
        self.state: tuple | None = None

    def retune(self, fs: float, fl: float | None, fh: float | None, r1: float | None,
               r2: float | None) -> None:
        """New coefficients for the same kind of filter; the state (values of the signal) carries over."""
        if self.kind == "butterworth":
            self.high = butterworth_lowpass(fh, fs, mit=False)
            self.low = butterworth_lowpass(fl, fs, mit=False)
        else:
            self.r1, self.r2 = r1, r2

    def step(self, x: np.ndarray) -> np.ndarray:
        if self.state is None:
            self.state = (x, x, x) if self.kind == "butterworth" else (x, x)
            return np.zeros_like(x)
        if self.kind == "butterworth":
            high, low, prev = self.state
            high = butterworth_step(high, x, prev, self.high)
            low = butterworth_step(low, x, prev, self.low)
            self.state = (high, low, x)
        else:
            high, low = iir_step(self.state[0], x, self.r1), iir_step(self.state[1], x, self.r2)
            self.state = (high, low)
        return high - low


class PhaseTracker:
    """Accumulates each level's quaternionic phase frame after frame (frame 0's phase is 0)."""

    def __init__(self) -> None:
        self.previous: list[Quaternion] | None = None
        self.phase: list[tuple[np.ndarray, np.ndarray]] | None = None

    def update(
        self, quaternions: list[Quaternion]
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
        """The accumulated (phase cos, phase sin) and the amplitude of each level of the next frame."""
        previous = self.previous if self.previous is not None else quaternions
        steps = [phase_difference(q, p) for q, p in zip(quaternions, previous)]
        if self.phase is None:
            self.phase = [(np.zeros_like(q.real), np.zeros_like(q.real)) for q in quaternions]
        else:
            self.phase = [(c + dc, s + ds) for (c, s), (dc, ds, _) in zip(self.phase, steps)]
        self.previous = quaternions
        return self.phase, [a for _, _, a in steps]


def _magnified_luma(quaternions, residual, filtered, amplitudes, alpha, sigma) -> np.ndarray:
    shifted = []
    for q, (pc, ps), amplitude in zip(quaternions, filtered, amplitudes):
        if sigma != 0:  # amplitude_weighted_blur of both components, the weight's blur computed once
            weight = amplitude + 1e-12
            norm = gaussian_blur(weight, sigma)
            pc, ps = gaussian_blur(pc * weight, sigma) / norm, gaussian_blur(ps * weight, sigma) / norm
        shifted.append(phase_shift(q, alpha * pc, alpha * ps))
    return synthesise(shifted, residual)


def _render(yiq: np.ndarray, luma: np.ndarray, mit: bool) -> np.ndarray:
    out = yiq.copy()
    out[..., 0] = luma
    return yiq_to_rgb_uint8(out, mit=mit)


class RieszStream:
    """riesz_butterworth / riesz_iir frame by frame: ``push(frame) -> frame`` (uint8 (H, W, 3) RGB).

    Frame 0 starts every state and comes out as its input bytes (as the streaming linear pipelines do); each
    later frame is magnified using only the frames up to it.
    """

    def __init__(self, kind: str, *, fs: float, alpha: float, sigma: float, fl: float | None = None,
                 fh: float | None = None, r1: float | None = None, r2: float | None = None,
                 mit: bool = False):
        if kind not in ("butterworth", "iir"):
            raise ValueError(f"kind must be 'butterworth' or 'iir' (the causal filters), got {kind!r}")
        self.kind, self.fs, self.alpha, self.sigma, self.mit = kind, fs, alpha, sigma, mit
        self.band = (fl, fh, r1, r2)
        self.tracker = PhaseTracker()
        self.filters: list[tuple[_LowPassPair, _LowPassPair]] | None = None
        self.levels: int | None = None

    def push(self, frame: np.ndarray) -> np.ndarray:
        yiq = rgb_to_yiq(frame)
        if self.levels is None:
            self.levels = pyramid_levels(*frame.shape[:2])
        quaternions, residual = analyse(yiq[..., 0], self.levels)
        phase, amplitudes = self.tracker.update(quaternions)
        if self.filters is None:
            self.filters = [(self._pair(), self._pair()) for _ in quaternions]
            for (fc, fsn), (pc, ps) in zip(self.filters, phase):
                fc.step(pc), fsn.step(ps)
            return np.array(frame, dtype=np.uint8)
        filtered = [(fc.step(pc), fsn.step(ps)) for (fc, fsn), (pc, ps) in zip(self.filters, phase)]
        luma = _magnified_luma(quaternions, residual, filtered, amplitudes, self.alpha, self.sigma)
        return _render(yiq, luma, self.mit)

    def retune(self, *, alpha: float, sigma: float, fl: float | None = None, fh: float | None = None,
               r1: float | None = None, r2: float | None = None) -> None:
        """Change the parameters between two frames, keeping the accumulated phase and the filters' state.

        alpha and sigma act after the filters, so the frames after the change are exactly those of a stream
        run with the new values from its start; a new band re-designs the filters, which go on from the
        state the old ones left (as the linear streaming pipelines do).
        """
        self.alpha, self.sigma, self.band = alpha, sigma, (fl, fh, r1, r2)
        for pair in self.filters or []:
            for f in pair:
                f.retune(self.fs, fl, fh, r1, r2)

    def _pair(self) -> _LowPassPair:
        return _LowPassPair(self.kind, self.fs, *self.band)


def riesz_ideal_frames(
    source, *, fs: float, alpha: float, fl: float, fh: float, sigma: float, mit: bool = False
) -> Iterator[np.ndarray]:
    """riesz_ideal over a frame source read twice: ``source()`` gives a fresh iterator of uint8 frames.

    Pass 1 keeps only each level's accumulated phase (two floats per pyramid coefficient per frame) and
    band-passes it over the clip (the unit-gain ideal filter, fl <= |f| <= fh); pass 2 re-reads the frames and
    applies the shift. Yields uint8 (H, W, 3) frames, all T of them, frame 0 amplified like any other.
    """
    tracker, kept, levels = PhaseTracker(), None, None
    for frame in source():
        if levels is None:
            levels = pyramid_levels(*frame.shape[:2])
        quaternions, _ = analyse(rgb_to_yiq(frame)[..., 0], levels)
        phase, _ = tracker.update(quaternions)
        if kept is None:
            kept = [([], []) for _ in phase]
        for (cs, ss), (pc, ps) in zip(kept, phase):
            cs.append(pc)
            ss.append(ps)
    if kept is None:
        return
    filtered = [(ideal_bandpass(np.stack(cs), fl, fh, fs, mit=False), ideal_bandpass(np.stack(ss), fl, fh, fs,
                 mit=False)) for cs, ss in kept]
    del kept
    tracker = PhaseTracker()  # the amplitudes again (they need the previous frame)
    for t, frame in enumerate(source()):
        yiq = rgb_to_yiq(frame)
        quaternions, residual = analyse(yiq[..., 0], levels)
        _, amplitudes = tracker.update(quaternions)
        at_t = [(c[t], s[t]) for c, s in filtered]
        yield _render(yiq, _magnified_luma(quaternions, residual, at_t, amplitudes, alpha, sigma), mit)


def riesz_magnify(frames: np.ndarray, *, kind: str, fs: float, alpha: float, sigma: float,
                  fl: float | None = None, fh: float | None = None, r1: float | None = None,
                  r2: float | None = None, mit: bool = False) -> np.ndarray:
    """A whole clip (T, H, W, 3) uint8 through riesz_ideal, riesz_butterworth or riesz_iir: (T, H, W, 3)
    uint8.

    ``kind`` is ``"ideal"`` (``fl``, ``fh``), ``"butterworth"`` (``fl``, ``fh`` in Hz, ``fl > 0``) or
    ``"iir"`` (``r1 > r2``); ``mit``: Octave's 5-decimal YIQ -> RGB matrix (the only MIT convention the Riesz
    pipelines take: there is no MIT Riesz code). Parameters are assumed valid (``vidmag.params`` checks them).
    """
    frames = np.asarray(frames)
    if kind == "ideal":
        return np.stack(list(riesz_ideal_frames(lambda: iter(frames), fs=fs, alpha=alpha, fl=fl, fh=fh,
                                                sigma=sigma, mit=mit)))
    stream = RieszStream(kind, fs=fs, alpha=alpha, sigma=sigma, fl=fl, fh=fh, r1=r1, r2=r2, mit=mit)
    return np.stack([stream.push(f) for f in frames])


