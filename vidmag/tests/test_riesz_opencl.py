"""The Riesz pipelines on the opencl backend (vidmag.backend.opencl.riesz): within 1 grey level of the NumPy
reference on a synthetic clip and a crop of a sample clip, whole clip and streamed; the stream equal to the
whole-clip run; retune mid-stream as torch's and the reference's streams do it; the live Magnifier on it; and
the linear pipelines' streams still on the backend's fused filter state."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import vidmag
from vidmag.params import PHASE_BACKENDS, make_plan

# the shared helpers (vidmag/tests/_backend_support.py), by path: pytest imports with --import-mode=importlib
_SUPPORT = Path(__file__).with_name("_backend_support.py")
_spec = importlib.util.spec_from_file_location("_backend_support", _SUPPORT)
support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support)

# small random-looking clips at alpha 10 to 20 clip a little; the warning is another test module's subject
pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

PARAMS = support.RIESZ_PARAMS


# baby.mp4, whose crop here has a phase step with no limit: before riesz.step_fade faded such steps, rounding
# alone picked them and one pixel of riesz_iir came out 2 levels off in float32 (torch and opencl alike); now
# every byte is within 1 (face.mp4's crop was within 1 either way). test_riesz_real_clips.py has larger crops
def _sample_crop() -> np.ndarray:
    return support.sample_crop("baby.mp4", T=10, H=40, W=52)


@pytest.fixture
def clip_of(make_clip):
    """``clip_of(kind)``: a small synthetic clip (sub-pixel drift and a pulse; 40 x 52: its coarsest
    processed level is 7 pixels wide, below the 8 of the vector kernels) or a crop of a sample clip."""

    def make(kind: str) -> np.ndarray:
        return make_clip(T=10, H=40, W=52, seed=3) if kind == "synthetic" else _sample_crop()

    return make


_within_one = support.within_one


@pytest.mark.parametrize("kind", ["synthetic", "sample"])
@pytest.mark.parametrize("pipeline", ["riesz_butterworth", "riesz_iir", "riesz_ideal"])
def test_opencl_matches_the_reference_within_one_level(require_backend, clip_of, kind, pipeline):
    require_backend("opencl")
    clip = clip_of(kind)
    params = PARAMS[pipeline]
    want = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cpu", **params)
    assert np.abs(want.astype(int) - clip).max() > 4  # the parameters magnify: not a round trip
    got = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="opencl", **params)
    _within_one(got, want)
    if pipeline == "riesz_ideal":
        return
    with vidmag.open_stream(clip.shape[1:], fs=30, pipeline=pipeline, backend="opencl", **params) as stream:
        streamed = np.stack([stream.push(frame) for frame in clip])
    # the same kernels in the same order, one frame at a time either way: the same bytes
    assert np.array_equal(streamed, got)
    assert np.array_equal(streamed[0], clip[0])


@pytest.mark.parametrize(("pipeline", "changes"), [("riesz_iir", dict(sigma=0.0)),
                                                   ("riesz_butterworth", dict(sigma=4.0)),
                                                   ("riesz_ideal", dict(sigma=0.0))])
@pytest.mark.parametrize("compat", [None, "mit"])
def test_no_blur_a_wide_blur_and_the_mit_matrix(require_backend, make_clip, pipeline, changes, compat):
    # sigma 0 skips the blur (the shift divides by 1); a blur wider than the coarse levels mirrors again
    require_backend("opencl")
    clip = make_clip(T=8, H=24, W=36, seed=5)
    params = {**PARAMS[pipeline], **changes}
    want = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="cpu", compat=compat, **params)
    got = vidmag.magnify(clip, fs=30, pipeline=pipeline, backend="opencl", compat=compat, **params)
    _within_one(got, want)


def test_pushes_of_any_size_equal_the_whole_clip_run(require_backend, make_clip):
    require_backend("opencl")
    clip = make_clip(T=9, H=24, W=36, seed=1)
    params = PARAMS["riesz_iir"]
    whole = vidmag.magnify(clip, fs=30, pipeline="riesz_iir", backend="opencl", **params)
    opened = vidmag.open_stream(clip.shape[1:], fs=30, pipeline="riesz_iir", backend="opencl", **params)
    with opened as stream:
        pieces = [stream.push(clip[0])[None], stream.push(clip[1:5]), stream.push(list(clip[5:]))]
        assert stream.frames_pushed == 9
    assert np.array_equal(np.concatenate(pieces), whole)


def test_retune_mid_stream_as_torch_and_the_reference_do(require_backend, make_clip):
    require_backend("opencl")
    clip = make_clip(T=10, H=24, W=36, seed=2)
    params = PARAMS["riesz_butterworth"]
    stream = vidmag.open_stream(clip.shape[1:], fs=30, pipeline="riesz_butterworth", backend="opencl",
                                **params)
    support.check_retune(stream, clip, "opencl", 7)
    other = make_plan("riesz_iir", fs=30, compat=None, params=PARAMS["riesz_iir"], frame_shape=clip.shape[1:])
    assert not stream.retune(other)  # another pipeline: nothing changes
    stream.close()


def test_the_live_magnifier_runs_on_opencl(require_backend, make_clip):
    require_backend("opencl")
    support.check_live_magnifier("opencl", make_clip(T=8, H=24, W=36, seed=4))


def test_auto_prefers_opencl_to_cpu_and_linear_streams_keep_the_fused_state(require_backend, make_clip):
    from vidmag.backend.opencl.streaming import FusedFilterState

    require_backend("opencl")
    for pipeline in ("riesz_ideal", "riesz_butterworth", "riesz_iir"):
        runs = PHASE_BACKENDS[pipeline]
        assert runs.index("opencl") < runs.index("cpu")
    assert "opencl" not in PHASE_BACKENDS["steerable_ideal"]
    # the phase wrapper hands the linear pipelines' streams to the opencl backend's own (fused) streams
    clip = make_clip(T=4, H=24, W=36)
    params = dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5)
    with vidmag.open_stream(clip.shape[1:], fs=30, pipeline="laplacian_iir", backend="opencl", **params) as s:
        assert isinstance(s._state, FusedFilterState)
        s.push(clip)


@pytest.mark.parametrize("shape", [(10, 80), (80, 10), (31, 17)])
def test_narrow_and_odd_frames(require_backend, shape):
    # the smallest frames the pipelines take, one side long: the 8-pixel kernels' borders and row tails, and
    # the one-pixel kernels of levels narrower than 8
    require_backend("opencl")
    support.check_narrow_and_odd_frames("opencl", shape)
