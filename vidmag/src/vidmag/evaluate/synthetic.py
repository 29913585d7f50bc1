"""The synthetic quality protocol of Oh et al. (ECCV 2018), as Axial-mm (ECCV 2024) re-released it.

A band-limited random texture is translated by a sub-pixel motion that varies sinusoidally in time, and each
pipeline magnifies the clip; the ground truth is the same texture translated by M times the motion (M, the
*magnification*, is the protocol's alpha: the ground truth moves M times as far as the input). Two tests: the
motion test (motion amplitudes 0.04 to 1 pixel, no added noise) and the noise test (0.05 pixel under additive
Gaussian noise of 0.01 to 100 grey levels), each at every M. Measures: PSNR and SSIM of the output's
luminance against the ground truth (mean over frames), and the measured magnification: the amplitude of the
output's translation (phase correlation refined by least squares) over the input's.

The pipelines add alpha times the band-passed motion to the motion already there (Wu et al. 2012: the
output moves (1 + alpha g) times as far, g the temporal filter's gain at the motion's frequency), so each is
run with ``alpha = (M - 1) / g`` and, in its linear range, moves the texture M times as far as the input.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq

from vidmag.evaluate.metrics import fourier_shift, luminance, measure_shift, psnr, ssim
from vidmag.params import PIPELINE_PARAMETERS, check_integer, check_number, make_plan

#: Motion amplitudes of the motion test in pixels (the list of the Axial-mm evaluation script, 15 modes).
MOTIONS = (0.04, 0.05, 0.063, 0.079, 0.10, 0.13, 0.16, 0.20, 0.25, 0.32, 0.40, 0.50, 0.63, 0.79, 1.00)

#: Noise levels of the noise test in grey levels: 10 ** (-2 + 0.2 k), k = 0 .. 20 (its 21 modes).
NOISES = tuple(float(f"{10 ** (-2 + 0.2 * k):.3g}") for k in range(21))

#: Motion amplitude of the noise test in pixels.
NOISE_MOTION = 0.05

#: Magnifications M (the ground truth moves M times as far as the input).
ALPHAS = (5.0, 10.0, 20.0, 50.0, 100.0)

#: Sampling rate of the synthetic clips in Hz; the motion's frequency is about a tenth of it.
FS = 30.0

#: The texture's spatial band in cycles per pixel (wavelengths 16 to 48 pixels): inside the Laplacian levels
#: that get the full alpha with lambda_c = 8, and far below the Nyquist frequency, so the Fourier shift is
#: exact.
TEXTURE_BAND = (1 / 48, 1 / 16)

#: Mean and standard deviation of the texture in grey levels.
TEXTURE_MEAN, TEXTURE_STD = 128.0, 25.0

#: Ratio of the band edges to the motion's frequency, in the bilinear transform's warped frequency:
#: tan(pi fh / fs) = 6 tan(pi f / fs) = 36 tan(pi fl / fs). The first-order Butterworth band-pass
#: LP(fh) - LP(fl) then passes f with zero phase and gain (36 - 1) / (36 + 1).
BAND_RATIO = 6.0

#: Cut-off wavelength of the Laplacian pipelines in the protocol (pixels), and the Gaussian level.
LAMBDA_C, LEVEL = 8.0, 4

#: The quick protocol (``vidmag evaluate --quick``, the tests).
QUICK = dict(size=64, frames=40, motions=(0.05, 0.5), noises=(0.1, 10.0), alphas=(10.0, 50.0))


def temporal_kind(pipeline: str) -> str:
    """The temporal filter of a pipeline, read from its name (``<spatial>_<temporal>``): ideal,
    butterworth or iir."""
    suffix = pipeline.rsplit("_", 1)[-1]
    if suffix not in ("ideal", "butterworth", "iir"):
        raise ValueError(f"pipeline {pipeline!r}: no temporal filter named in it (ideal, butterworth, iir)")
    return suffix


def pipeline_kind(pipeline: str) -> str:
    """``"colour"`` for the pipelines that magnify colour changes (gaussian_*), ``"motion"`` otherwise."""
    return "colour" if pipeline.startswith("gaussian_") else "motion"


@dataclass(frozen=True)
class Protocol:
    """The settings of one run of the protocol (all derived from size, frames and fs).

    Attributes
    ----------
    size : int
        Frames are size x size pixels.
    frames : int
        Frames per clip.
    fs : float
        Sampling rate, Hz.
    f : float
        Frequency of the motion, Hz: ``cycles * fs / frames`` with ``cycles = round(frames / 10)``, a whole
        number of periods in the clip, so the ideal filters see it on one FFT bin.
    fl, fh : float
        Pass band given to the ideal and Butterworth pipelines (see :data:`BAND_RATIO`).
    r1, r2 : float
        Weights of the iir pipelines: r2 has the pole of the Butterworth's low-pass at fl, r1 is solved for a
        zero phase at f.
    warmup : int
        Leading frames left out of every measure, while the causal filters settle (three time constants of
        the slowest pole, at most half the clip).
    margin : int
        Pixels left out on each side in every measure (the pipelines' border handling).
    """

    size: int
    frames: int
    fs: float
    f: float
    fl: float
    fh: float
    r1: float
    r2: float
    warmup: int
    margin: int

    def gain(self, pipeline: str) -> float:
        """Gain of the pipeline's temporal filter at f (the response is real there)."""
        kind = temporal_kind(pipeline)
        if kind == "ideal":
            return 1.0
        omega = 2 * math.pi * self.f / self.fs
        if kind == "butterworth":
            return (BAND_RATIO**2 - 1) / (BAND_RATIO**2 + 1)
        return abs(_iir_response(self.r1, self.r2, omega))


def _iir_response(r1: float, r2: float, omega: float) -> complex:
    z = complex(math.cos(omega), -math.sin(omega))
    return r1 / (1 - (1 - r1) * z) - r2 / (1 - (1 - r2) * z)


def make_protocol(size: int, frames: int, fs: float = FS) -> Protocol:
    """The :class:`Protocol` for frames of size x size and a clip of `frames` frames at `fs` Hz."""
    cycles = max(1, round(frames / 10))
    f = cycles * fs / frames
    t = math.tan(math.pi * f / fs)
    fl = fs / math.pi * math.atan(t / BAND_RATIO)
    fh = fs / math.pi * math.atan(t * BAND_RATIO)
    tl = math.tan(math.pi * fl / fs)
    r2 = 2 * tl / (1 + tl)  # the pole (1 - tl) / (1 + tl) of butter(1) at fl
    omega = 2 * math.pi * f / fs
    r1 = brentq(lambda r: math.atan2(_iir_response(r, r2, omega).imag, _iir_response(r, r2, omega).real),
                r2 + 1e-6, 1.0)
    slowest = (1 - tl) / (1 + tl)
    warmup = min(math.ceil(3 / -math.log(slowest)), frames // 2)
    return Protocol(size, frames, fs, f, fl, fh, r1, r2, warmup, max(4, size // 16))


def texture(size: int, seed: int = 0) -> np.ndarray:
    """The protocol's scene: a periodic random texture of size x size, band-limited to :data:`TEXTURE_BAND`,
    mean 128 and standard deviation 25 grey levels (float64; the same for the same seed)."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.fft2(rng.standard_normal((size, size)))
    radius = np.hypot(np.fft.fftfreq(size)[:, None], np.fft.fftfreq(size)[None, :])
    spectrum *= (radius >= TEXTURE_BAND[0]) & (radius <= TEXTURE_BAND[1])
    scene = np.real(np.fft.ifft2(spectrum))
    return TEXTURE_MEAN + TEXTURE_STD * (scene - scene.mean()) / scene.std()


def clip(scene: np.ndarray, displacement: np.ndarray, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """The scene moved right by `displacement[t]` pixels in frame t, plus Gaussian noise of `noise` grey
    levels (the same on the three channels), rounded and clipped to uint8 RGB, shape (T, H, W, 3)."""
    rng = np.random.default_rng(seed + 1)
    out = np.empty((len(displacement), *scene.shape, 3), dtype=np.uint8)
    for t, d in enumerate(displacement):
        frame = fourier_shift(scene, float(d), 0.0)
        if noise > 0:
            frame = frame + rng.normal(0.0, noise, frame.shape)
        out[t] = np.clip(np.round(frame), 0, 255).astype(np.uint8)[..., None]
    return out


def evaluation_parameters(pipeline: str, protocol: Protocol, magnification: float) -> dict[str, Any]:
    """The parameters the protocol gives `pipeline` for a magnification M.

    alpha = (M - 1) / g (g: :meth:`Protocol.gain`), ``fl``/``fh``/``r1``/``r2`` from the protocol,
    ``lambda_c`` = 8 pixels, ``level`` = 4 (or the deepest level the frame size allows),
    ``chrom_attenuation`` = 1 (the scene is grey: it has no chrominance to attenuate); for the phase-based
    pipelines ``sigma`` = 2 pixels, ``orientations`` = 4, ``bands_per_octave`` = 1,
    ``attenuate_other_freq`` = False. A parameter not named here takes the value of the first preset of that
    pipeline.

    Raises
    ------
    LookupError
        A parameter with no value here and no preset of the pipeline to take it from (named).
    """
    from vidmag._reference.pyramid import max_pyramid_height
    from vidmag.presets import PRESETS

    known = {
        "alpha": (magnification - 1) / protocol.gain(pipeline),
        "fl": protocol.fl, "fh": protocol.fh, "r1": protocol.r1, "r2": protocol.r2,
        "lambda_c": LAMBDA_C, "level": min(LEVEL, max_pyramid_height(protocol.size, protocol.size)),
        "chrom_attenuation": 1.0,
        # the phase-based pipelines: amplitude-weighted smoothing of the phase over 2 pixels, an octave
        # pyramid of 4 orientations, no attenuation of the other frequencies (the magnified motion is kept)
        "sigma": 2.0, "orientations": 4, "bands_per_octave": 1, "attenuate_other_freq": False,
    }
    presets = [p for p in PRESETS.values() if p.pipeline == pipeline]
    params = {}
    for name in PIPELINE_PARAMETERS[pipeline]:
        if name in known:
            params[name] = known[name]
        elif presets:
            params[name] = presets[0].params[name]
        else:
            raise LookupError(
                f"{pipeline}: no protocol value for parameter {name!r} and no preset to take it from"
            )
    return params


@dataclass(frozen=True)
class Case:
    """One pipeline on one clip of the protocol.

    Attributes
    ----------
    pipeline : str
        A pipeline name, or ``"input"`` (the input itself against the ground truth, for reference).
    kind : str
        ``"motion"``, ``"colour"`` or ``"input"``.
    test : str
        ``"motion"`` or ``"noise"``.
    motion : float
        Amplitude of the input's motion, pixels.
    noise : float
        Standard deviation of the added noise, grey levels.
    magnification : float
        M, the requested magnification (the ground truth moves M times as far as the input).
    alpha : float
        The alpha the pipeline was run with, (M - 1) / g.
    psnr, ssim : float
        Against the ground truth, on luminance, mean over the measured frames.
    measured : float
        Amplitude of the output's translation over the input's (at the motion's frequency).
    phase : float
        Phase of the output's translation relative to the input's, degrees (0: in step).
    clipped : float
        Share of output bytes at 0 or 255.

    Examples
    --------
    >>> from vidmag.evaluate import synthetic_report
    >>> report = synthetic_report(["gaussian_ideal"], size=32, frames=20, motions=(0.5,), noises=(1.0,),
    ...                           alphas=(10.0,))
    >>> case = report.select(pipeline="gaussian_ideal", test="motion")[0]
    >>> case.kind, case.motion, case.magnification, case.alpha
    ('colour', 0.5, 10.0, 9.0)
    >>> case.psnr > 20, 0 < case.ssim <= 1
    (True, True)
    """

    pipeline: str
    kind: str
    test: str
    motion: float
    noise: float
    magnification: float
    alpha: float
    psnr: float
    ssim: float
    measured: float
    phase: float
    clipped: float


def sinusoid_fit(values: np.ndarray, t: np.ndarray, f: float) -> tuple[float, float]:
    """(amplitude, phase in degrees) of the sinusoid at `f` Hz in `values` sampled at times `t` (s),
    by least squares on ``c + a sin(2 pi f t) + b cos(2 pi f t)``; phase 0 is in step with sin."""
    w = 2 * np.pi * f * t
    basis = np.stack([np.ones_like(t), np.sin(w), np.cos(w)], axis=1)
    (_, a, b), *_ = np.linalg.lstsq(basis, values, rcond=None)
    return float(math.hypot(a, b)), float(math.degrees(math.atan2(b, a)))


def ground_truth(scene: np.ndarray, truth: np.ndarray, protocol: Protocol) -> np.ndarray:
    """The ground-truth luminance of the measured frames (after the warm-up), cropped by the margin:
    `scene` moved right by ``truth[t]`` pixels, float64 grey levels."""
    m = protocol.margin
    return np.stack([fourier_shift(scene, float(truth[t]), 0.0)[m:protocol.size - m, m:protocol.size - m]
                     for t in range(protocol.warmup, len(truth))])


def score(output: np.ndarray, scene: np.ndarray, expected: np.ndarray, protocol: Protocol,
          motion: float) -> tuple[float, float, float, float, float]:
    """(PSNR, SSIM, measured magnification, phase, clipped share) of the uint8 RGB `output` frames against
    the ground truth `expected` (:func:`ground_truth`), over the frames after the warm-up.

    The measured magnification is the amplitude at the motion's frequency of the output's horizontal
    translation (:func:`~vidmag.evaluate.metrics.measure_shift` against the scene, frame by frame) over the
    input's amplitude `motion`; the phase is that translation's phase against the input's (degrees).
    """
    m = protocol.margin
    inner = (slice(m, protocol.size - m), slice(m, protocol.size - m))
    psnrs, ssims, shifts = [], [], []
    for t, truth in zip(range(protocol.warmup, len(output)), expected):
        y = luminance(output[t])
        psnrs.append(psnr(y[inner], truth))
        ssims.append(ssim(y[inner], truth))
        shifts.append(measure_shift(y, scene, margin=m)[0])
    times = np.arange(protocol.warmup, len(output)) / protocol.fs
    amplitude, phase = sinusoid_fit(np.array(shifts), times, protocol.f)
    clipped = float(np.mean((output == 0) | (output == 255)))
    return float(np.mean(psnrs)), float(np.mean(ssims)), amplitude / motion, phase, clipped


def _floats(name: str, values: Any, low: float, low_ok: bool) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise TypeError(f"{name} must be a non-empty sequence of numbers, got {values!r}")
    out = tuple(check_number(name, v) for v in values)
    for v in out:
        if v < low or (v == low and not low_ok):
            raise ValueError(f"{name}: every value must be {'>=' if low_ok else '>'} {low:g}, got {v:g}")
    return out


def check_pipelines(pipelines: Any) -> tuple[str, ...]:
    """`pipelines` as a tuple of names (None: every pipeline of :data:`vidmag.params.PIPELINE_PARAMETERS`)."""
    if pipelines is None:
        return tuple(PIPELINE_PARAMETERS)
    if isinstance(pipelines, str):
        pipelines = [pipelines]
    names = tuple(pipelines)
    unknown = [p for p in names if p not in PIPELINE_PARAMETERS]
    if unknown or not names:
        raise ValueError(
            f"pipelines must name one or more of {', '.join(PIPELINE_PARAMETERS)}; "
            f"got {', '.join(map(str, unknown)) or 'none'}"
        )
    return names


def synthetic_report(
    pipelines: Sequence[str] | None = None,
    *,
    size: int = 96,
    frames: int = 60,
    motions: Sequence[float] = MOTIONS,
    noises: Sequence[float] = NOISES,
    alphas: Sequence[float] = ALPHAS,
    backend: str = "cpu",
    seed: int = 0,
    progress: Any = None,
) -> Report:
    """Run the synthetic protocol on `pipelines` and return the :class:`Report`.

    Parameters
    ----------
    pipelines : sequence of str, optional
        Pipeline names; None: every pipeline of :data:`vidmag.params.PIPELINE_PARAMETERS`.
    size : int
        Frames of size x size pixels, 32 to 1024.
    frames : int
        Frames per clip, 20 to 1000 (the motion makes ``round(frames / 10)`` periods).
    motions : sequence of float
        Motion amplitudes of the motion test, pixels (> 0); default the 15 of Oh et al., 0.04 to 1.
    noises : sequence of float
        Noise levels of the noise test (at 0.05 pixel), grey levels (>= 0); default 21, 0.01 to 100.
    alphas : sequence of float
        Magnifications M (>= 1): the ground truth moves M times as far as the input.
    backend : str
        The backend the pipelines run on.
    seed : int
        Seed of the texture and the noise.
    progress : callable, optional
        Called with (done, total) after each clip.

    Returns
    -------
    Report
        Every case, the settings, the parameters each pipeline ran with and the pipelines skipped.

    Notes
    -----
    A pipeline the protocol has no parameters for, that refuses the frame size, or that `backend` does not
    run (the phase-based pipelines run on cpu only), is listed in ``Report.skipped`` with the reason instead
    of failing the run. A backend that cannot run at all still raises. Backends: all.

    Examples
    --------
    A tiny run (the tests' :data:`QUICK` protocol is larger; the full one takes minutes):

    >>> from vidmag.evaluate import synthetic_report
    >>> report = synthetic_report(["gaussian_ideal"], size=32, frames=20, motions=(0.5,), noises=(1.0,),
    ...                           alphas=(10.0,))
    >>> report.pipelines(), len(report.cases), report.skipped
    (['input', 'gaussian_ideal'], 4, {})
    >>> print(report.table())
    synthetic protocol: 32 x 32 px, 20 frames at 30 Hz, motion at 3 Hz ...
    pipeline        kind    M   PSNR dB  SSIM    measured M (0.5 px)  noise 1: PSNR dB  SSIM
    input           input   10  ...
    gaussian_ideal  colour  10  ...
    """
    from vidmag.backend.registry import BackendUnavailableError
    from vidmag.pipelines import SaturationWarning, magnify

    names = check_pipelines(pipelines)
    size = check_integer("size", size)
    if not 32 <= size <= 1024:
        raise ValueError(f"size must be between 32 and 1024 pixels, got {size}")
    frames = check_integer("frames", frames)
    if not 20 <= frames <= 1000:
        raise ValueError(f"frames must be between 20 and 1000, got {frames}")
    motions = _floats("motions", motions, 0.0, False)
    noises = _floats("noises", noises, 0.0, True)
    alphas = _floats("alphas", alphas, 1.0, True)
    seed = check_integer("seed", seed)
    protocol = make_protocol(size, frames)
    scene = texture(size, seed)
    params: dict[str, dict[str, dict[str, float]]] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            params[name] = {f"{m:g}": evaluation_parameters(name, protocol, m) for m in alphas}
            for p in params[name].values():
                make_plan(name, fs=protocol.fs, compat=None, params=p, frame_shape=(size, size, 3),
                          n_frames=frames)
        except (LookupError, ValueError, TypeError) as error:
            skipped[name] = str(error)
            params.pop(name, None)
    runs = [("motion", m, 0.0) for m in motions] + [("noise", NOISE_MOTION, s) for s in noises]
    total, done = len(runs) * len(alphas), 0
    phase = 2 * np.pi * protocol.f * np.arange(frames) / protocol.fs
    cases: list[Case] = []
    for index, (test, motion, noise) in enumerate(runs):
        displacement = motion * np.sin(phase)
        clip_ = clip(scene, displacement, noise, seed=seed + index)
        for m in alphas:
            expected = ground_truth(scene, m * displacement, protocol)
            cases.append(Case("input", "input", test, motion, noise, m, 0.0,
                              *score(clip_, scene, expected, protocol, motion)))
            for name in list(params):
                p = params[name][f"{m:g}"]
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", SaturationWarning)  # clipping is measured instead
                        out = magnify(clip_, fs=protocol.fs, pipeline=name, backend=backend, **p)
                except BackendUnavailableError as error:
                    # raised before any work, on the pipeline's first clip: no case of it is recorded yet
                    skipped[name] = str(error)
                    del params[name]
                    continue
                cases.append(Case(name, pipeline_kind(name), test, motion, noise, m, p["alpha"],
                                  *score(out, scene, expected, protocol, motion)))
            done += 1
            if progress is not None:
                progress(done, total)
    settings = {**asdict(protocol), "motions": motions, "noises": noises, "alphas": alphas,
                "noise_motion": NOISE_MOTION, "backend": backend, "seed": seed,
                "texture_band": TEXTURE_BAND, "texture_mean": TEXTURE_MEAN, "texture_std": TEXTURE_STD,
                "gains": {name: protocol.gain(name) for name in params}}
    return Report(settings, cases, params, skipped)


def _number(value: float) -> float | str | None:
    # JSON has no inf or NaN: identical images give PSNR inf, written as the string "inf".
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _nearest(values: Sequence[float], target: float) -> float:
    return min(values, key=lambda v: (abs(math.log(v / target)) if v > 0 else math.inf, v))


@dataclass
class Report:
    """What :func:`synthetic_report` measured.

    Attributes
    ----------
    protocol : dict
        The settings (:class:`Protocol`'s fields, the motions, noises, magnifications, backend, seed, the
        texture, each pipeline's temporal gain at the motion's frequency).
    cases : list of Case
        One per pipeline (and the input), test, motion or noise level, and magnification.
    params : dict
        Pipeline -> magnification -> the parameters it ran with.
    skipped : dict
        Pipeline -> why the protocol could not run it.

    Examples
    --------
    >>> from vidmag.evaluate import synthetic_report
    >>> report = synthetic_report(["gaussian_ideal"], size=32, frames=20, motions=(0.5,), noises=(1.0,),
    ...                           alphas=(10.0,))
    >>> report.protocol["size"], report.protocol["alphas"], list(report.params)
    (32, (10.0,), ['gaussian_ideal'])
    >>> [row["pipeline"] for row in report.summary_rows()]
    ['input', 'gaussian_ideal']
    >>> report.skipped  # nothing refused
    {}
    """

    protocol: dict[str, Any]
    cases: list[Case]
    params: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def pipelines(self) -> list[str]:
        """The pipelines measured, "input" first, in run order."""
        return list(dict.fromkeys(c.pipeline for c in self.cases))

    def select(self, **where: Any) -> list[Case]:
        """The cases whose fields equal `where` (``select(pipeline="laplacian_iir", test="noise")``)."""
        return [c for c in self.cases if all(getattr(c, k) == v for k, v in where.items())]

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per pipeline and magnification: the motion test's mean PSNR and SSIM over motions and its
        measured magnification at the motion nearest 0.05 pixel; the noise test's PSNR and SSIM at the noise
        level nearest 1 grey level."""
        motions = self.protocol["motions"]
        noises = self.protocol["noises"]
        at_motion = _nearest(motions, 0.05)
        at_noise = _nearest([n for n in noises if n > 0] or noises, 1.0)
        rows = []
        for name in self.pipelines():
            for m in self.protocol["alphas"]:
                moving = self.select(pipeline=name, test="motion", magnification=m)
                one = self.select(pipeline=name, test="motion", magnification=m, motion=at_motion)
                noisy = self.select(pipeline=name, test="noise", magnification=m, noise=at_noise)
                rows.append({
                    "pipeline": name, "kind": moving[0].kind, "M": m,
                    "psnr": float(np.mean([c.psnr for c in moving])),
                    "ssim": float(np.mean([c.ssim for c in moving])),
                    "measured_motion": at_motion, "measured": one[0].measured,
                    "noise": at_noise, "noise_psnr": noisy[0].psnr, "noise_ssim": noisy[0].ssim,
                })
        return rows

    def table(self, full: bool = False) -> str:
        """The report as text: the summary table, and with ``full=True`` every case."""
        p = self.protocol
        lines = [
            f"synthetic protocol: {p['size']} x {p['size']} px, {p['frames']} frames at {p['fs']:g} Hz, "
            f"motion at {p['f']:.3g} Hz (measured after {p['warmup']} frames, {p['margin']} px border left "
            "out), "
            f"backend {p['backend']}",
            "M: requested magnification (the ground truth moves M times as far as the input); "
            "PSNR/SSIM on luminance against it, mean over frames",
            "",
        ]
        rows = self.summary_rows()
        if rows:
            header = ("pipeline", "kind", "M", "PSNR dB", "SSIM",
                      f"measured M ({rows[0]['measured_motion']:g} px)",
                      f"noise {rows[0]['noise']:g}: PSNR dB", "SSIM")
            body = [(r["pipeline"], r["kind"], f"{r['M']:g}", f"{r['psnr']:.2f}", f"{r['ssim']:.4f}",
                     f"{r['measured']:.2f}", f"{r['noise_psnr']:.2f}", f"{r['noise_ssim']:.4f}")
                    for r in rows]
            lines += _columns(header, body)
            lines.append("(PSNR, SSIM: motion test, mean over its motions; measured M: output motion / input "
                         "motion at the motion named; noise: the noise test at that level, 0.05 px motion)")
        for name, why in self.skipped.items():
            lines.append(f"skipped {name}: {why}")
        if full:
            lines += ["", "every case:"]
            header = ("pipeline", "test", "motion px", "noise", "M", "alpha", "PSNR dB", "SSIM", "measured M",
                      "phase deg", "clipped")
            body = [(c.pipeline, c.test, f"{c.motion:g}", f"{c.noise:g}", f"{c.magnification:g}",
                     f"{c.alpha:.4g}", f"{c.psnr:.2f}", f"{c.ssim:.4f}", f"{c.measured:.3f}",
                     f"{c.phase:.1f}", f"{c.clipped:.3%}") for c in self.cases]
            lines += _columns(header, body)
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (non-finite numbers: PSNR inf as "inf", NaN as None)."""
        cases = [{k: _number(v) if isinstance(v, float) else v for k, v in asdict(c).items()}
                 for c in self.cases]
        return {"protocol": self.protocol, "params": self.params, "skipped": self.skipped, "cases": cases,
                "summary": [{k: _number(v) if isinstance(v, float) else v for k, v in r.items()}
                            for r in self.summary_rows()]}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def plot(self, path: str | os.PathLike) -> None:
        """Write a figure: PSNR against noise and against motion at the magnification nearest 20, and
        measured against requested magnification at the motion nearest 0.05 pixel, per pipeline.

        The file (any format matplotlib writes, by its suffix) is written under a temporary name and renamed.
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from vidmag.io import atomic_output

        m20 = _nearest(self.protocol["alphas"], 20.0)
        at_motion = _nearest(self.protocol["motions"], 0.05)
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        # tab10 without its grey, which the input's dotted black line would be confused with
        colours = iter([c for i, c in enumerate(plt.get_cmap("tab10").colors) if i != 7] * 2)
        for name in self.pipelines():
            style = (dict(linestyle=":", color="black") if name == "input" else dict(color=next(colours)))
            noisy = sorted(self.select(pipeline=name, test="noise", magnification=m20), key=lambda c: c.noise)
            axes[0].plot([c.noise for c in noisy], [c.psnr for c in noisy], marker="o", label=name, **style)
            moving = sorted(self.select(pipeline=name, test="motion", magnification=m20),
                            key=lambda c: c.motion)
            axes[1].plot([c.motion for c in moving], [c.psnr for c in moving], marker="o", label=name,
                         **style)
            if name != "input":
                one = sorted(self.select(pipeline=name, test="motion", motion=at_motion),
                             key=lambda c: c.magnification)
                axes[2].plot([c.magnification for c in one], [c.measured for c in one], marker="o",
                             label=name, **style)
        alphas = self.protocol["alphas"]
        axes[2].plot(alphas, alphas, color="black", linewidth=0.8, label="requested")
        titles = (f"noise test ({NOISE_MOTION:g} px), M = {m20:g}", f"motion test, M = {m20:g}",
                  f"measured magnification, motion {at_motion:g} px")
        labels = (("noise sigma (grey levels)", "PSNR (dB)"), ("motion amplitude (px)", "PSNR (dB)"),
                  ("requested M", "measured M"))
        for axis, title, (xl, yl) in zip(axes, titles, labels):
            axis.set_title(title)
            axis.set_xlabel(xl)
            axis.set_ylabel(yl)
            axis.set_xscale("log")
            axis.grid(True, alpha=0.3)
        axes[2].set_yscale("log")
        axes[0].legend(fontsize=8)
        axes[2].legend(fontsize=8)
        fig.tight_layout()
        suffix = os.path.splitext(os.fspath(path))[1].lstrip(".") or "png"
        with atomic_output(path) as tmp:
            fig.savefig(tmp, format=suffix, dpi=100)
        plt.close(fig)


def _columns(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *body]]
