"""The Riesz pipelines of the float32 backends on crops of the sample clips: on opencl (PoCL here), vulkan
(lavapipe here) and torch every output byte within 1 grey level of the float64 reference (``backend="cpu"``).

These crops hold phase steps with no limit (a coefficient near 0, a step near pi), where rounding alone
picked the step until vidmag._reference.riesz.step_fade faded it: before that fade the same runs came out 2
to 6 levels off on every one of these backends (baby.mp4: riesz_butterworth 4 to 6, riesz_iir 2 to 3;
face.mp4: riesz_ideal 2 to 3).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import vidmag

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

# alpha 15 to 20 on these crops clips a little; the warning is another test module's subject
pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

BACKENDS = ("opencl", "vulkan", "torch")

#: case -> (clip, frames, pipeline); every crop is the top-left 64 x 96 of the clip, run with RIESZ_PARAMS
CASES = {
    "baby_butterworth": ("baby.mp4", 8, "riesz_butterworth"),
    "baby_iir": ("baby.mp4", 8, "riesz_iir"),
    "face_ideal": ("face.mp4", 40, "riesz_ideal"),
}


@functools.cache
def _crop(name: str, T: int) -> np.ndarray:
    return support.sample_crop(name, T=T, H=64, W=96, centre=False)


@functools.cache
def _reference(case: str) -> np.ndarray:
    name, T, pipeline = CASES[case]
    return vidmag.magnify(_crop(name, T), fs=30, pipeline=pipeline, backend="cpu",
                          **support.RIESZ_PARAMS[pipeline])


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_within_one_level_of_the_reference_on_a_sample_clip(require_backend, backend, case):
    require_backend(backend)
    name, T, pipeline = CASES[case]
    clip = _crop(name, T)
    want = _reference(case)
    assert np.abs(want.astype(int) - clip).max() > 4  # the parameters magnify: not a round trip
    got = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend=backend, **support.RIESZ_PARAMS[pipeline])
    support.within_one(got, want)
