"""Property tests of vidmag.magnify_file (hypothesis): a bad call leaves nothing behind.

A tiny clip (12 frames of 22 x 26, and one of 7 frames) is written once with vidmag.io. Each example calls
magnify_file into a fresh folder with one bad parameter (out of range, wrong type, unknown, missing; of the
pipeline or of the file options: quality, encoder_preset, side_by_side, audio, progress, preset, dst's suffix)
or with a clip the pipeline cannot take (too few frames for ``compat="mit"``, a level deeper than the frame's
pyramid), sometimes onto an existing ``dst``. Properties: the call raises ValueError or TypeError naming the
parameter; afterwards the folder holds exactly what it held before (no output, no temporary), and an existing
``dst`` has its old bytes.
"""

from __future__ import annotations

import os
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.params import PHASE_PIPELINES, PIPELINE_PARAMETERS
from vidmag.pipelines import SaturationWarning

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("av")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

# the linear pipelines; the phase-based ones (other parameters, no MIT frame quirks) are covered by
# test_phase_pipelines.py
PIPELINES = tuple(p for p in PIPELINE_PARAMETERS if p not in PHASE_PIPELINES)
VALID = {
    "gaussian_ideal": {"alpha": 20.0, "level": 2, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5},
    "laplacian_ideal": {"alpha": 10.0, "lambda_c": 8.0, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5},
    "laplacian_butterworth": {"alpha": 10.0, "lambda_c": 8.0, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5},
    "laplacian_iir": {"alpha": 10.0, "lambda_c": 8.0, "r1": 0.4, "r2": 0.05, "chrom_attenuation": 0.5},
}
#: parameter -> bad values (the container rate is 30 fps, so fs defaults to 30 and Nyquist is 15 Hz)
BAD_PARAMS = {
    "fs": (0, -30.0, float("nan"), "30", True),
    "alpha": (-1.0, float("inf"), "10", None),
    "chrom_attenuation": (-0.5, float("nan"), "0"),
    "level": (0, 2.5, 9, "2"),  # 22 x 26 frames have a pyramid of 3 levels
    "lambda_c": (0, -1.0, "8"),
    "fl": (-1.0, 3.0, "1"),
    "fh": (15.5, 0.5, float("nan"), "3"),
    "r1": (0, 1.5, 0.01, "0.4"),
    "r2": (0, 0.4, "0.05"),
}
BAD_OPTIONS = {
    "quality": (-1, 52, 18.5, "18", True, None),
    "encoder_preset": ("fastest", "", None, 1),
    "side_by_side": ("no", 1, None),
    "audio": ("no", 0, "False"),
    "progress": ("no", 1, "yes"),
    "preset": ("nope", 1),
    "compat": ("MIT", 1),
    "backend": ("gpu", ""),
    "pipeline": ("gaussian", 1),
}


def write_clip(path, frames: np.ndarray) -> None:
    with io.VideoWriter(
        path, width=frames.shape[2], height=frames.shape[1], fps=Fraction(30), quality=0
    ) as w:
        for frame in frames:
            w.write(frame)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, str]:
    """The clips, in a folder of their own (written once, read by every example)."""
    folder = tmp_path_factory.mktemp("sources")
    rng = np.random.default_rng(0)
    out = {}
    for name, T in (("clip", 12), ("short", 7)):
        path = str(folder / f"{name}.mp4")
        write_clip(path, rng.integers(60, 200, (T, 22, 26, 3), dtype=np.uint8))
        out[name] = path
    return out


def snapshot(folder) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def leaves_nothing(parameter: str, folder, existing: bool, call, *args, **kwargs) -> None:
    """``call`` raises ValueError or TypeError naming ``parameter``, and ``folder`` is as it was."""
    dst = folder / "out.mp4"
    if existing:
        dst.write_bytes(b"an older output that must survive")
    before = snapshot(folder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SaturationWarning)
            call(*args, dst=str(dst), **kwargs)
    except (ValueError, TypeError) as error:
        assert re.search(parameter, str(error)), (
            f"{type(error).__name__}: {error!s} does not name {parameter}"
        )
    else:
        raise AssertionError(f"no error for {parameter} in magnify_file({kwargs})")
    assert snapshot(folder) == before, "magnify_file left a partial output, a temporary or changed dst"


CASES = [(p, name) for p in PIPELINES for name in ("fs", *PIPELINE_PARAMETERS[p])]


@pytest.mark.parametrize(("pipeline", "name"), CASES, ids=[f"{p}-{n}" for p, n in CASES])
@given(st.data(), st.booleans())
def test_bad_parameters_leave_nothing(sources, tmp_path_factory, pipeline, name, data, existing):
    bad = data.draw(st.sampled_from(BAD_PARAMS[name]))
    kw = {"pipeline": pipeline, **VALID[pipeline], name: bad}
    folder = tmp_path_factory.mktemp("out")
    leaves_nothing(rf"\b{name}\b", folder, existing, vidmag.magnify_file, sources["clip"], **kw)


@pytest.mark.parametrize("name", sorted(BAD_OPTIONS))
@given(st.sampled_from(PIPELINES), st.data(), st.booleans())
def test_bad_options_leave_nothing(sources, tmp_path_factory, name, pipeline, data, existing):
    kw = {"pipeline": pipeline, **VALID[pipeline], name: data.draw(st.sampled_from(BAD_OPTIONS[name]))}
    folder = tmp_path_factory.mktemp("out")
    leaves_nothing(rf"\b{name}\b", folder, existing, vidmag.magnify_file, sources["clip"], **kw)


@given(st.sampled_from(PIPELINES), st.data(), st.booleans())
def test_unknown_or_missing_parameters_leave_nothing(sources, tmp_path_factory, pipeline, data, existing):
    params = dict(VALID[pipeline])
    if data.draw(st.booleans()):
        name = data.draw(st.sampled_from(sorted(params)))
        del params[name]
    else:
        name = data.draw(st.sampled_from(("beta", "fps", "levels")))
        params[name] = 1
    folder = tmp_path_factory.mktemp("out")
    leaves_nothing(
        rf"\b{name}\b", folder, existing, vidmag.magnify_file, sources["clip"], pipeline=pipeline, **params
    )


@given(st.sampled_from(PIPELINES), st.booleans())
def test_clips_the_pipeline_cannot_take_leave_nothing(sources, tmp_path_factory, pipeline, existing):
    """Found only from the file: 7 frames are too few under compat="mit"; level 3 is the deepest for 22 x 26
    (checked on the first frame, before any output exists)."""
    folder = tmp_path_factory.mktemp("out")
    leaves_nothing(
        r"\bframes?\b",
        folder,
        existing,
        vidmag.magnify_file,
        sources["short"],
        pipeline=pipeline,
        compat="mit",
        **VALID[pipeline],
    )
    if pipeline == "gaussian_ideal":
        leaves_nothing(
            r"\blevel\b",
            folder,
            existing,
            vidmag.magnify_file,
            sources["clip"],
            pipeline=pipeline,
            **{**VALID[pipeline], "level": 4},
        )


@given(st.sampled_from((".avi", ".png", "", ".mp4.part", ".MP3")), st.booleans())
def test_bad_destination_suffix_leaves_nothing(sources, tmp_path_factory, suffix, existing):
    folder = tmp_path_factory.mktemp("out")
    dst = folder / f"out{suffix}"
    if existing:
        dst.write_bytes(b"keep")
    before = snapshot(folder)
    with pytest.raises(ValueError, match=r"\bdst\b"):
        vidmag.magnify_file(sources["clip"], str(dst), pipeline="laplacian_iir", **VALID["laplacian_iir"])
    assert snapshot(folder) == before
