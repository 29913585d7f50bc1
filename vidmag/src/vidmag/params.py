"""Parameter validation of the pipelines (the four linear ones and the four phase-based ones), done once, up
front, before any work.

:func:`check_parameters` checks what can be checked without frames (names, types, ranges that depend only
on ``fs`` and the semantics); :func:`make_plan` adds the checks that need the frame size and, when known, the
frame count, and returns the :class:`Plan` every backend runs from. Unknown or missing parameters, and
values of the wrong type (a string or a bool where a number belongs), are a ``TypeError`` naming them; bad
values a ``ValueError`` naming the parameter and the allowed range. :func:`check_number`,
:func:`check_integer` and :func:`check_bool` are the rules for numbers and flags that every public function
of vidmag applies.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from vidmag._reference.gains import level_gains
from vidmag._reference.pipelines import MIT_UNREAD_TAIL
from vidmag._reference.pyramid import level_sizes, max_pyramid_height, pyramid_levels

#: Parameters of each pipeline, in the order the MIT functions take them.
PIPELINE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "gaussian_ideal": ("alpha", "level", "fl", "fh", "chrom_attenuation"),
    "laplacian_ideal": ("alpha", "lambda_c", "fl", "fh", "chrom_attenuation"),
    "laplacian_butterworth": ("alpha", "lambda_c", "fl", "fh", "chrom_attenuation"),
    "laplacian_iir": ("alpha", "lambda_c", "r1", "r2", "chrom_attenuation"),
    # phase-based (luminance only: chrominance passes through, so no chrom_attenuation)
    "riesz_ideal": ("alpha", "fl", "fh", "sigma"),
    "riesz_butterworth": ("alpha", "fl", "fh", "sigma"),
    "riesz_iir": ("alpha", "r1", "r2", "sigma"),
    "steerable_ideal": (
        "alpha", "fl", "fh", "sigma", "orientations", "bands_per_octave", "attenuate_other_freq",
    ),
}

#: The phase-based pipelines (Riesz pyramid, complex steerable pyramid).
PHASE_PIPELINES = ("riesz_ideal", "riesz_butterworth", "riesz_iir", "steerable_ideal")

#: The backends that run each phase-based pipeline, in the order backend="auto" tries them. The Riesz ones
#: follow the registry's order (the GPU-only backends first; torch only where it has a GPU, see
#: vidmag.pipelines); opencl before vulkan: on a processor PoCL runs them several times faster than
#: lavapipe (docs/vidmag/phase.md has the numbers).
PHASE_BACKENDS: dict[str, tuple[str, ...]] = {
    "riesz_ideal": ("cuda", "metal", "torch", "opencl", "vulkan", "cpu"),
    "riesz_butterworth": ("cuda", "metal", "torch", "opencl", "vulkan", "cpu"),
    "riesz_iir": ("cuda", "metal", "torch", "opencl", "vulkan", "cpu"),
    "steerable_ideal": ("torch", "cpu"),
}

#: The pipelines with a causal Butterworth filter (fl > 0, fh < fs / 2).
_BUTTERWORTH = ("laplacian_butterworth", "riesz_butterworth")

#: The most orientations steerable_ideal takes (the MIT code uses 4 and 8).
MAX_ORIENTATIONS = 16

#: The pipelines that can run on a live stream: their temporal filters are causal (each output frame needs
#: only the frames up to it). The ideal ones filter each pixel's whole series at once (an FFT along time).
STREAMING_PIPELINES = ("laplacian_butterworth", "laplacian_iir", "riesz_butterworth", "riesz_iir")

#: The names ``compat`` accepts.
COMPAT_MODES = (None, "mit")

#: Smallest frame side the pipelines accept: one 5-tap blur-and-halve step needs 5 samples.
MIN_SIDE = 5

#: Smallest side of the Laplacian pipelines: below it the pyramid has fewer than three levels, and the
#: finest and coarsest bands (the only ones left) are never amplified.
MIN_SIDE_LAPLACIAN = 10


def check_number(name: str, value: Any) -> float:
    """`value` as a float, if it is a finite real number; the one rule for numbers throughout vidmag.

    Python ``int`` and ``float``, numpy integer and floating scalars (``np.int64(30)``, ``np.float32(0.5)``)
    and other real numbers (``fractions.Fraction``) are numbers. Strings are not (``"30"`` is refused, never
    converted), nor are ``bool`` and numpy bools (a flag given where a number belongs is a mistake), nor
    arrays.

    Raises
    ------
    TypeError
        `value` is not a real number; the message names `name`.
    ValueError
        `value` is NaN or infinite.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number (int, float or a numpy number), got {type(value).__name__} {value!r}"
        )
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return number


def check_integer(name: str, value: Any) -> int:
    """`value` as an int, if it is a number (see :func:`check_number`) with an integral value.

    ``3``, ``np.int64(3)`` and ``3.0`` are accepted; ``3.5`` is a ``ValueError``, ``"3"`` a ``TypeError``.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    number = check_number(name, value)
    if not number.is_integer():
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(number)


def check_fs(value: Any) -> float:
    """`value` as a capture rate in Hz: a number (see :func:`check_number`) above 0.

    ``30``, ``np.int64(30)`` and ``29.97`` are accepted; ``0`` or ``-1`` is a ``ValueError``, ``"30"`` a
    ``TypeError``, each naming fs.
    """
    fs = check_number("fs", value)
    if fs <= 0:
        raise ValueError(f"fs must be > 0 Hz, got {fs}")
    return fs


def check_bool(name: str, value: Any) -> bool:
    """`value` as a bool, if it is ``True``/``False`` or a numpy bool.

    Anything else, ``0``/``1`` and the strings ``"yes"``/``"no"``/``"False"`` included, is refused: a string
    is always truthy, so taking it would silently turn ``"no"`` into yes.

    Raises
    ------
    TypeError
        `value` is not a bool; the message names `name`.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)



def check_frames(name: str, value: Any) -> np.ndarray:
    """`value` as uint8 RGB frames (T, H, W, 3): an array, or what :func:`numpy.asarray` makes one of.

    For the functions that take "a video path or uint8 frames" once the path has been ruled out.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message (``"frames"``, ``"clip"``).
    value : object
        The frames as given: a numpy array, a list of frames, a tensor in host memory.

    Returns
    -------
    numpy.ndarray
        uint8, shape (T, H, W, 3) (``value`` itself when it is one).

    Raises
    ------
    TypeError
        `value` is neither a path nor numbers in an array (None, a number, a dict, strings); the message
        names `name` and what it takes.
    ValueError
        An array of another dtype or shape, or frames of unequal sizes; the message names `name`.

    Examples
    --------
    >>> import numpy as np
    >>> check_frames("frames", np.zeros((2, 8, 8, 3), np.uint8)).shape
    (2, 8, 8, 3)
    >>> try:
    ...     check_frames("frames", None)
    ... except TypeError as error:
    ...     print(error)
    frames must be a video path (str, bytes or os.PathLike) or uint8 frames (T, H, W, 3), got NoneType None
    """
    import reprlib

    takes = "a video path (str, bytes or os.PathLike) or uint8 frames (T, H, W, 3)"
    try:
        frames = np.asarray(value)
    except (TypeError, ValueError) as error:  # frames of unequal sizes, a tensor on a device
        raise ValueError(f"{name} must be {takes}: {error}") from None
    if frames.ndim == 0 or frames.dtype.kind not in "biufc":
        raise TypeError(f"{name} must be {takes}, got {type(value).__name__} {reprlib.repr(value)}")
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"{name} must be {takes}, got {frames.dtype} {frames.shape}")
    return frames


def check_parameters(pipeline: str, fs: Any, compat: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Check the pipeline name, ``fs``, ``compat`` and the pipeline's parameters; return them normalised.

    Raises
    ------
    TypeError
        An unknown or missing parameter (named).
    ValueError
        A value out of range (the parameter and the allowed range are named).
    """
    if pipeline not in PIPELINE_PARAMETERS:
        raise ValueError(f"pipeline must be one of {', '.join(PIPELINE_PARAMETERS)}; got {pipeline!r}")
    if compat not in COMPAT_MODES:
        raise ValueError(f"compat must be None (default semantics) or 'mit', got {compat!r}")
    expected = PIPELINE_PARAMETERS[pipeline]
    unknown = sorted(set(params) - set(expected))
    if unknown:
        raise TypeError(
            f"{pipeline} got unexpected parameter(s) {', '.join(unknown)}; it takes {', '.join(expected)}"
        )
    missing = [p for p in expected if p not in params]
    if missing:
        raise TypeError(f"{pipeline} is missing required parameter(s) {', '.join(missing)}")
    fs = check_fs(fs)
    out: dict[str, Any] = {}
    alpha = check_number("alpha", params["alpha"])
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    out["alpha"] = alpha
    if "chrom_attenuation" in expected:
        ca = check_number("chrom_attenuation", params["chrom_attenuation"])
        if ca < 0:
            raise ValueError(f"chrom_attenuation must be >= 0, got {ca}")
        out["chrom_attenuation"] = ca
    if pipeline in PHASE_PIPELINES:
        out.update(_check_phase(pipeline, compat, params))
    if "lambda_c" in expected:
        lambda_c = check_number("lambda_c", params["lambda_c"])
        if lambda_c <= 0:
            raise ValueError(f"lambda_c must be > 0 pixels, got {lambda_c}")
        out["lambda_c"] = lambda_c
    if "level" in expected:
        level = params["level"]
        try:
            checked_level = check_integer("level", level)
        except ValueError:
            raise ValueError(f"level must be an integer >= 1, got {level!r}") from None
        if checked_level < 1:
            raise ValueError(f"level must be an integer >= 1, got {level!r}")
        out["level"] = checked_level
    if "fl" in expected:
        out.update(_check_band(pipeline, fs, compat, params["fl"], params["fh"]))
    if "r1" in expected:
        r1, r2 = check_number("r1", params["r1"]), check_number("r2", params["r2"])
        for name, r in (("r1", r1), ("r2", r2)):
            if not 0 < r <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {r}")
        if r2 >= r1:
            raise ValueError(f"r2 must be < r1 = {r1} (r1 sets the higher cut-off), got {r2}")
        out.update(r1=r1, r2=r2)
    return {"fs": fs, **out}


def _check_phase(pipeline: str, compat: str | None, params: dict[str, Any]) -> dict[str, Any]:
    """sigma, and steerable_ideal's orientations, bands_per_octave, attenuate_other_freq."""
    # compat="mit" on the Riesz pipelines (no MIT code: the ICCP 2014 paper gives pseudocode) takes only what
    # both MIT codes share, Octave's 5-decimal ntsc2rgb matrix; on steerable_ideal it is phaseAmplify's filter
    sigma = check_number("sigma", params["sigma"])
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0 pixels (0: no amplitude-weighted smoothing), got {sigma}")
    out: dict[str, Any] = {"sigma": sigma}
    if pipeline == "steerable_ideal":
        value = params["orientations"]
        try:
            orientations = check_integer("orientations", value)
        except ValueError:
            orientations = 0
        if not 1 <= orientations <= MAX_ORIENTATIONS:
            raise ValueError(f"orientations must be an integer from 1 to {MAX_ORIENTATIONS}, got {value!r}")
        value = params["bands_per_octave"]
        try:
            bands = check_integer("bands_per_octave", value)
        except ValueError:
            bands = 0
        if bands not in (1, 2):
            raise ValueError(f"bands_per_octave must be 1 (octave) or 2 (half-octave), got {value!r}")
        out.update(orientations=orientations, bands_per_octave=bands,
                   attenuate_other_freq=check_bool("attenuate_other_freq", params["attenuate_other_freq"]))
    return out


def _check_band(pipeline: str, fs: float, compat: str | None, fl: Any, fh: Any) -> dict[str, float]:
    fl, fh = check_number("fl", fl), check_number("fh", fh)
    # the MIT phase code's FIR filter (fir1) needs 0 < fl and fh < fs / 2 like a Butterworth one
    butter = pipeline in _BUTTERWORTH or (pipeline == "steerable_ideal" and compat == "mit")
    if fl < 0 or (butter and fl == 0):
        raise ValueError(f"fl must be {'> 0' if butter else '>= 0'} Hz, got {fl}")
    if fl >= fh:
        raise ValueError(f"fl must be < fh; got fl = {fl} Hz, fh = {fh} Hz")
    if compat == "mit" and pipeline not in PHASE_PIPELINES:
        # butter(1, f / fs) needs Wn = f / fs < 1; the MIT ideal filter reads any band of bins 0 .. n - 1.
        if butter and fh >= fs:
            raise ValueError(f"fh must be < fs = {fs} Hz under compat='mit' (butter(1, fh / fs)), got {fh}")
        if not butter and fh > fs:
            raise ValueError(f"fh must be <= fs = {fs} Hz, got {fh}")
    elif butter and fh >= fs / 2:
        raise ValueError(f"fh must be < fs / 2 = {fs / 2} Hz (the Nyquist frequency), got {fh}")
    elif not butter and fh > fs / 2:
        raise ValueError(f"fh must be <= fs / 2 = {fs / 2} Hz (the Nyquist frequency), got {fh}")
    return {"fl": fl, "fh": fh}


def min_frames(pipeline: str, compat: str | None) -> int:
    """Fewest input frames a pipeline accepts: 1, or under ``compat="mit"`` enough for one output frame."""
    if compat != "mit" or pipeline in PHASE_PIPELINES:
        return 1
    return MIT_UNREAD_TAIL + (2 if pipeline == "laplacian_ideal" else 1)


def output_frames(pipeline: str, compat: str | None, n_frames: int) -> int:
    """Number of output frames for ``n_frames`` input frames (the MIT phase code writes them all)."""
    if compat != "mit" or pipeline in PHASE_PIPELINES:
        return n_frames
    return n_frames - MIT_UNREAD_TAIL - (1 if pipeline == "laplacian_ideal" else 0)


def check_frame_count(pipeline: str, compat: str | None, n_frames: int) -> None:
    """Raise ``ValueError`` (naming ``frames``) if ``n_frames`` is too few for the pipeline."""
    need = min_frames(pipeline, compat)
    if n_frames < need:
        why = " (the MIT code leaves the last 10 unread)" if need > 1 else ""
        raise ValueError(f"frames: {pipeline} needs at least {need} frame(s){why}, got {n_frames}")


@dataclass(frozen=True)
class Plan:
    """A validated run: what a backend needs to execute one pipeline on frames of one size.

    Attributes
    ----------
    pipeline : str
    fs : float
        Sampling rate in Hz.
    compat : None or "mit"
    params : dict
        The pipeline's parameters, normalised (floats; ``level`` an int).
    height, width : int
        Frame size in pixels.
    n_frames : int or None
        Input frame count when known in advance.
    batch : int or None
        The most frames one call to the device works on: a stream splits a larger push into pieces of this
        many frames (the latency bound); ``None`` leaves it to the backend (its memory budget per batch).
    """

    pipeline: str
    fs: float
    compat: str | None
    params: dict[str, Any]
    height: int
    width: int
    n_frames: int | None = None
    batch: int | None = None

    @property
    def streams(self) -> bool:
        """Whether the pipeline can run on a live stream, frame by frame (``backend.open(plan)``): True for
        laplacian_butterworth, laplacian_iir, riesz_butterworth and riesz_iir, False for the ideal pipelines,
        which need the whole clip."""
        return self.pipeline in STREAMING_PIPELINES

    @property
    def phase(self) -> bool:
        """Whether the pipeline is a phase-based one (Riesz or complex steerable pyramid)."""
        return self.pipeline in PHASE_PIPELINES

    @property
    def mit(self) -> bool:
        """True under ``compat="mit"``."""
        return self.compat == "mit"

    @cached_property
    def levels(self) -> int:
        """Laplacian pyramid levels of a frame (bands including the residual)."""
        return pyramid_levels(self.height, self.width)

    @cached_property
    def level_sizes(self) -> list[tuple[int, int]]:
        """(h, w) of each Laplacian level, finest first."""
        return level_sizes(self.height, self.width, self.levels)

    @cached_property
    def gains(self) -> list[float]:
        """Per-level gains of the Laplacian pipelines, finest first."""
        p = self.params
        return level_gains(self.height, self.width, self.levels, p["alpha"], p["lambda_c"])


def make_plan(
    pipeline: str,
    *,
    fs: Any,
    compat: Any,
    params: dict[str, Any],
    frame_shape: tuple[int, ...],
    n_frames: int | None = None,
    batch: int | None = None,
) -> Plan:
    """Validate everything about a run and return its :class:`Plan`.

    Parameters
    ----------
    frame_shape : tuple
        Shape of one frame, (H, W, 3).
    n_frames : int, optional
        Number of input frames, when known; checked against the pipeline's minimum.
    batch : int, optional
        Most frames per device call of a stream (>= 1); ``None``: the backend's choice.
    """
    checked = check_parameters(pipeline, fs, compat, params)
    fs = checked.pop("fs")
    if len(frame_shape) != 3 or frame_shape[2] != 3:
        raise ValueError(f"frames must be RGB of shape (H, W, 3) per frame, got {tuple(frame_shape)}")
    H, W = int(frame_shape[0]), int(frame_shape[1])
    need = MIN_SIDE if pipeline == "gaussian_ideal" else MIN_SIDE_LAPLACIAN
    if min(H, W) < need:
        raise ValueError(f"frames of {H} x {W} are too small: {pipeline} needs both sides >= {need} pixels")
    if pipeline == "gaussian_ideal":
        deepest = max_pyramid_height(H, W)
        if checked["level"] > deepest:
            raise ValueError(
                f"level must be between 1 and {deepest} for {H} x {W} frames, got {checked['level']}"
            )
    if n_frames is not None:
        n_frames = check_integer("n_frames", n_frames)
        check_frame_count(pipeline, compat, n_frames)
    if batch is not None:
        batch = check_integer("batch", batch)
        if batch < 1:
            raise ValueError(f"batch must be an integer >= 1 (frames per device call) or None, got {batch}")
    return Plan(pipeline, fs, compat, checked, H, W, n_frames, batch)
