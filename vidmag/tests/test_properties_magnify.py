"""Property tests of vidmag.magnify (hypothesis): every pipeline, every backend here, bad input.

Clips are tiny (8 to 40 frames of 8 to 40 pixels a side, odd sizes included) uint8 RGB: noise, or a texture
with a pulse and a sub-pixel drift (something to amplify); laid out contiguous, reversed in time (negative
strides), every second pixel of a larger clip, with the channels reversed, or in Fortran order. Parameters
range over each pipeline's valid values (alpha from 0, level up to the frame's pyramid height, lambda_c,
chrom_attenuation, the band up to the Nyquist frequency, or up to fs under ``compat="mit"``, r1 / r2), with
``fs`` an int, a float, a numpy number or a Fraction.

Properties:

- every backend that runs here gives the reference's result (the ``cpu`` backend, NumPy) within 1 grey level,
  with the same shape and dtype: the rule of test_conformance_pipelines.py;
- a non-contiguous clip gives the result of its contiguous copy (within the same 1 level);
- a parameter just outside its range, of the wrong type, unknown or missing raises ValueError or TypeError
  whose message names it; so do clips of the wrong shape, dtype or size.
"""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

import vidmag
from vidmag.backend import registry
from vidmag.params import PHASE_PIPELINES, PIPELINE_PARAMETERS
from vidmag.pipelines import SaturationWarning

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

# the linear pipelines; the phase-based ones (other parameters, no MIT frame quirks) are covered by
# test_phase_pipelines.py
PIPELINES = tuple(p for p in PIPELINE_PARAMETERS if p not in PHASE_PIPELINES)
#: every backend but the reference: one that cannot run here is skipped with its reason (a failure for those
#: VIDMAG_REQUIRE_BACKENDS names); vulkan (lavapipe in CI) was missing from this list
BACKENDS = tuple(name for name in registry.names() if name != "cpu")
FS = (30, 30.0, 25.0, np.float32(24.0), np.int64(15), Fraction(30000, 1001), 12.5)
#: the MIT code leaves the last 10 frames unread (one more for laplacian_ideal)
MIT_FRAMES = {"laplacian_ideal": 12}
LAYOUTS = ("contiguous", "time_reversed", "strided", "bgr", "fortran")


def _max_level(h: int, w: int) -> int:
    level = 0
    while min(h, w) >= 5:
        level, h, w = level + 1, h // 2, w // 2
    return level


@st.composite
def clips(draw, pipeline: str, min_frames: int = 8):
    """(T, H, W, 3) uint8 of a drawn size, content and memory layout."""
    T = draw(st.integers(min_frames, 40))
    side = 10 if pipeline != "gaussian_ideal" else 8  # the Laplacian pipelines need 10 pixels a side
    H, W = draw(st.integers(side, 40)), draw(st.integers(side, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layout = draw(st.sampled_from(LAYOUTS))
    shape = (T, 2 * H, 2 * W, 3) if layout == "strided" else (T, H, W, 3)
    if draw(st.booleans()):
        clip = rng.integers(0, 256, shape)
    else:
        t = np.arange(shape[0])[:, None, None] / 30.0
        yy, xx = np.mgrid[0 : shape[1], 0 : shape[2]]
        texture = np.sin(0.35 * (xx + 0.4 * np.sin(2 * np.pi * 2 * t))) * np.cos(0.23 * yy)
        base = 128 + 60 * texture + 3 * np.sin(2 * np.pi * 2 * t)
        clip = base[..., None] + np.array([10.0, 0.0, -10.0]) + rng.normal(0, 0.7, shape)
    clip = np.clip(np.round(clip), 0, 255).astype(np.uint8)
    if layout == "time_reversed":
        clip = clip[::-1]
    elif layout == "strided":
        clip = clip[:, ::2, ::2]
    elif layout == "bgr":
        clip = clip[..., ::-1]
    elif layout == "fortran":
        clip = np.asfortranarray(clip)
    return clip


@st.composite
def band(draw, pipeline: str, fs: float, compat: str | None):
    """(fl, fh) valid for the pipeline: 0 <= fl < fh <= fs / 2 (fl > 0 and fh < fs / 2 for Butterworth;
    fs in place of fs / 2 under compat="mit")."""
    top = float(fs) if compat == "mit" else float(fs) / 2
    butter = pipeline == "laplacian_butterworth"
    fh = draw(st.floats(0.05 * top, top, exclude_max=butter))
    fl = draw(st.floats(0.0, fh, exclude_max=True, exclude_min=butter) | st.just(0.1 * fh))
    return fl, fh


@st.composite
def calls(draw, pipeline: str | None = None):
    """(clip, keyword arguments of magnify) for a valid call."""
    pipeline = pipeline or draw(st.sampled_from(PIPELINES))
    compat = draw(st.sampled_from((None, "mit")))
    min_frames = MIT_FRAMES.get(pipeline, 11) if compat == "mit" else 8
    clip = draw(clips(pipeline, min_frames))
    fs = draw(st.sampled_from(FS))
    kw = {
        "fs": fs,
        "pipeline": pipeline,
        "compat": compat,
        "alpha": draw(st.sampled_from((0, 0.0, 5.0, 20, 50.0, np.float32(10.0), 150.0)) | st.floats(0, 100)),
        "chrom_attenuation": draw(st.sampled_from((0, 0.1, 0.5, 1.0, 2.0, np.float64(1.0)))),
    }
    names = PIPELINE_PARAMETERS[pipeline]
    if "level" in names:
        kw["level"] = draw(st.integers(1, _max_level(*clip.shape[1:3])))
        if draw(st.booleans()):
            kw["level"] = np.int64(kw["level"]) if draw(st.booleans()) else float(kw["level"])
    if "lambda_c" in names:
        kw["lambda_c"] = draw(st.sampled_from((0.5, 8.0, 16, 80.0, np.float32(4.0))) | st.floats(0.01, 100))
    if "fl" in names:
        kw["fl"], kw["fh"] = draw(band(pipeline, fs, compat))
    if "r1" in names:
        r1 = draw(st.floats(0.01, 1.0))
        kw["r1"], kw["r2"] = r1, draw(st.floats(0.0, r1, exclude_min=True, exclude_max=True))
    return clip, kw


def differs_by_at_most_one(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == np.uint8 and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
    where = np.unravel_index(diff.argmax(), diff.shape) if diff.size else None
    assert diff.max(initial=0) <= 1, f"{what}: {int(diff.max())} grey levels off at {where}"


@pytest.mark.parametrize("pipeline", PIPELINES)
@given(st.data())
def test_reference_of_a_non_contiguous_clip_is_that_of_its_copy(pipeline, data):
    clip, kw = data.draw(calls(pipeline))
    got = vidmag.magnify(clip, backend="cpu", **kw)
    unread = 0 if kw["compat"] is None else 11 if pipeline == "laplacian_ideal" else 10
    assert got.shape == (clip.shape[0] - unread, *clip.shape[1:])
    if not clip.flags.c_contiguous:
        differs_by_at_most_one(got, vidmag.magnify(np.ascontiguousarray(clip), backend="cpu", **kw), "copy")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pipeline", PIPELINES)
@given(st.data())
def test_backends_match_the_reference(backend_check, backend, pipeline, data):
    backend_check(backend)
    clip, kw = data.draw(calls(pipeline))
    want = vidmag.magnify(np.ascontiguousarray(clip), backend="cpu", **kw)
    differs_by_at_most_one(vidmag.magnify(clip, backend=backend, **kw), want, backend)


# --- bad input ----------------------------------------------------------------------------------------------

VALID = {
    "gaussian_ideal": {"alpha": 20.0, "level": 2, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5},
    "laplacian_ideal": {"alpha": 10.0, "lambda_c": 8.0, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5},
    "laplacian_butterworth": {"alpha": 10.0, "lambda_c": 8.0, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5},
    "laplacian_iir": {"alpha": 10.0, "lambda_c": 8.0, "r1": 0.4, "r2": 0.05, "chrom_attenuation": 0.5},
}
NOT_NUMBERS = ("10", None, True, np.bool_(False), [1.0], b"1")
NOT_FINITE = (float("nan"), float("inf"), -float("inf"), np.float32("nan"))


def bad_values(name: str, pipeline: str, fs: float, compat: str | None) -> tuple:
    """Values of ``name`` just outside its range, non-finite or not numbers."""
    nyquist = float(fs) if compat == "mit" else float(fs) / 2
    butter = pipeline == "laplacian_butterworth"
    out = {
        "fs": (0, -30, -1e-9, np.float64(0.0)),
        "alpha": (-1, -1e-9, np.float32(-0.5)),
        "chrom_attenuation": (-0.1, -1e-12),
        "lambda_c": (0, 0.0, -8.0),
        "level": (0, -1, 2.5, 99),
        "fl": (-0.1, -1e-12, 3.0, 5.0) + ((0.0,) if butter else ()),  # fh is 3 Hz: fl must be below it
        "fh": (1.0, 0.5, np.nextafter(nyquist, math.inf), 2 * nyquist) + ((nyquist,) if butter else ()),
        "r1": (0, 1.0 + 1e-9, -0.4, 0.05),  # r2 is 0.05: r1 must be above it
        "r2": (0, -0.05, 0.4, 0.5),  # r1 is 0.4
    }[name]
    return out + NOT_FINITE + NOT_NUMBERS if name not in ("level",) else out + NOT_FINITE[:2] + NOT_NUMBERS


def raises_naming(parameter: str, call, *args, **kwargs) -> Exception:
    """``call(*args, **kwargs)`` raises ValueError or TypeError (nothing else) naming ``parameter``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SaturationWarning)
            call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert re.search(parameter, str(error)), (
            f"{type(error).__name__}: {error!s} does not name {parameter}"
        )
        return error
    raise AssertionError(f"no error for {parameter} in {getattr(call, '__name__', call)}({kwargs})")


def small_clip(T: int = 12, H: int = 20, W: int = 23) -> np.ndarray:
    return np.random.default_rng(T * H * W).integers(0, 256, (T, H, W, 3), dtype=np.uint8)


CASES = [(p, name) for p in PIPELINES for name in ("fs", *PIPELINE_PARAMETERS[p])]


@pytest.mark.parametrize(("pipeline", "name"), CASES, ids=[f"{p}-{n}" for p, n in CASES])
@given(st.sampled_from((None, "mit")), st.sampled_from((30, 24.0, np.float32(25.0))), st.data())
def test_bad_parameters_are_named(pipeline, name, compat, fs, data):
    bad = data.draw(st.sampled_from(bad_values(name, pipeline, fs, compat)))
    kw = {"fs": fs, "pipeline": pipeline, "compat": compat, **VALID[pipeline], name: bad}
    raises_naming(rf"\b{name}\b", vidmag.magnify, small_clip(), **kw)


@given(st.sampled_from(PIPELINES), st.data())
def test_unknown_and_missing_parameters_are_named(pipeline, data):
    params = dict(VALID[pipeline])
    if data.draw(st.booleans()):
        name = data.draw(st.sampled_from(("level", "lambda_c", "r1", "fl", "beta", "alpha_", "fps")))
        if name in params:
            return
        params[name] = 1.0
    else:
        name = data.draw(st.sampled_from(sorted(params)))
        del params[name]
    raises_naming(rf"\b{name}\b", vidmag.magnify, small_clip(), fs=30, pipeline=pipeline, **params)


BAD_CALL = {
    "pipeline": ("gaussian", "", None, 1, "Laplacian_IIR"),
    "compat": ("MIT", "matlab", True, 1, ""),
    "progress": ("no", "yes", 0, 1, None),
    "backend": ("gpu", "", "CPU", None, 0),
}


@pytest.mark.parametrize("name", sorted(BAD_CALL))
@given(st.sampled_from(PIPELINES), st.data())
def test_bad_call_options_are_named(name, pipeline, data):
    kw = {"fs": 30, "pipeline": pipeline, **VALID[pipeline], name: data.draw(st.sampled_from(BAD_CALL[name]))}
    raises_naming(rf"\b{name}\b", vidmag.magnify, small_clip(), **kw)


@given(
    st.sampled_from(PIPELINES),
    st.sampled_from(
        (
            ("shape", (12, 20, 23)),
            ("shape", (12, 20, 23, 4)),
            ("shape", (20, 23, 3)),
            ("shape", (2, 12, 20, 23, 3)),
            ("empty", (0, 20, 23, 3)),
            ("tiny", (12, 4, 23, 3)),
            ("tiny", (12, 23, 4, 3)),
            ("laplacian_tiny", (12, 9, 30, 3)),
            ("dtype", "int16"),
            ("dtype", "float_range"),
            ("dtype", "nan"),
            ("dtype", "U1"),
            ("mit_short", (10, 20, 23, 3)),
        )
    ),
)
def test_bad_clips_are_named(pipeline, case):
    kind, spec = case
    if kind == "dtype":
        clip = small_clip().astype(np.float32) / 255
        if spec == "int16":
            clip = small_clip().astype(np.int16)
        elif spec == "float_range":
            clip = clip * 2
        elif spec == "nan":
            clip[3, 4, 5, 1] = np.nan
        elif spec == "U1":
            clip = np.full((12, 20, 23, 3), "a")
    else:
        clip = np.zeros(spec, np.uint8)
    compat = "mit" if kind == "mit_short" else None
    if kind == "laplacian_tiny" and pipeline == "gaussian_ideal":
        return  # 9 pixels are enough for the Gaussian pipeline
    raises_naming(
        r"\bframes?\b", vidmag.magnify, clip, fs=30, pipeline=pipeline, compat=compat, **VALID[pipeline]
    )
