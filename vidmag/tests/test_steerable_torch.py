"""steerable_ideal on the torch backend (``vidmag.backend.torch_steerable``): within 1 grey level of the NumPy
reference (float32 against float64), octave and half-octave, with and without ``attenuate_other_freq``, under
both semantics; run through ``vidmag.magnify`` and ``magnify_file`` with ``backend="torch"``."""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.files import magnify_file
from vidmag.params import PHASE_BACKENDS

# random small clips at alpha 10 clip a little; the warning is test_pipelines_saturation.py's subject
pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

PARAMS = dict(alpha=10.0, fl=1.5, fh=2.5, sigma=2.0, orientations=4, bands_per_octave=1,
              attenuate_other_freq=False)


def _differences(clip, compat=None, **changed):
    params = {**PARAMS, **changed}
    want = vidmag.magnify(clip, fs=30, pipeline="steerable_ideal", backend="cpu", compat=compat, **params)
    got = vidmag.magnify(clip, fs=30, pipeline="steerable_ideal", backend="torch", compat=compat, **params)
    assert isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == np.uint8
    return np.abs(got.astype(int) - want)


@pytest.mark.parametrize("attenuate", [False, True])
@pytest.mark.parametrize(("bands_per_octave", "orientations"), [(1, 4), (2, 8)])
def test_torch_is_within_one_level_of_the_reference(require_backend, make_clip, bands_per_octave,
                                                    orientations, attenuate):
    require_backend("torch")
    clip = make_clip(T=16, H=32, W=40)
    for alpha in (10.0, 50.0):
        d = _differences(clip, alpha=alpha, bands_per_octave=bands_per_octave, orientations=orientations,
                         attenuate_other_freq=attenuate)
        assert d.max() <= 1
    assert np.mean(d > 0) < 0.01  # float rounding at a few bytes, not a different result


@pytest.mark.parametrize("attenuate", [False, True])
def test_torch_under_the_mit_semantics(require_backend, make_clip, attenuate):
    """compat="mit": the FIRWindowBP filter of the phase, no high-pass residual, the 5-decimal matrix."""
    require_backend("torch")
    clip = make_clip(T=16, H=32, W=40, seed=1)
    assert _differences(clip, compat="mit", fl=1.0, fh=3.0, attenuate_other_freq=attenuate).max() <= 1


def test_torch_runs_it_and_auto_picks_it_only_with_a_graphics_processor(require_backend, tmp_path, make_clip):
    require_backend("torch")
    from vidmag.backend import registry
    from vidmag.pipelines import select_backend

    assert PHASE_BACKENDS["steerable_ideal"] == ("torch", "cpu")
    torch_gpu = registry.backend_module("torch").default_device() != "cpu"
    assert select_backend("auto", "steerable_ideal")[0] == ("torch" if torch_gpu else "cpu")
    clip = make_clip(T=12, H=32, W=32)
    src, dst = str(tmp_path / "in.mp4"), str(tmp_path / "out.mp4")
    with io.VideoWriter(src, width=32, height=32, fps=30, quality=0) as writer:
        for frame in clip:
            writer.write(frame)
    result = magnify_file(src, dst, pipeline="steerable_ideal", backend="torch", audio=False, **PARAMS)
    assert (result.backend, result.frames, result.route) == ("torch", 12, "in memory")


def test_it_still_cannot_stream_on_torch(require_backend):
    require_backend("torch")
    with pytest.raises(ValueError, match=r"steerable_ideal cannot stream"):
        vidmag.open_stream((32, 40, 3), fs=30, pipeline="steerable_ideal", backend="torch", **PARAMS)
