"""magnify_file(memory=...) on the float32 backends: laplacian_ideal's bands on disk run by the backend's own
stages (within 1 of its in-memory output), and the phase ideal pipelines' rule where a backend has no
bounded route (a ValueError naming memory and backend, never a silent switch)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import vidmag
from vidmag import _out_of_core, io, tiles
from vidmag.files import magnify_file
from vidmag.params import make_plan

PARAMS = dict(alpha=10.0, lambda_c=8.0, fl=0.5, fh=3.0, chrom_attenuation=0.5)

#: Just above the fixed overhead: no whole-clip stack fits, which forces the bounded route.
TINY = tiles.OVERHEAD_BYTES + 1000

BACKENDS = ["opencl", "torch", "vulkan"]

# a backend that cannot run here skips its cases, or fails them where VIDMAG_REQUIRE_BACKENDS names it
pytestmark = pytest.mark.usefixtures("backend_param_runs")


@pytest.fixture
def clip_file(make_clip_file):
    return make_clip_file(T=16, H=40, W=56)


def _frames(path):
    return np.stack(list(io.read_frames(path))).astype(np.int16)


def _leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("."))


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_bands_on_disk_equal_the_backends_in_memory_run(tmp_path, make_clip, monkeypatch, backend, compat):
    """The route's frames against vidmag.pipelines.run on the same backend, no codec in between; blocks
    of 7 pixels' series (many per level, a short last one)."""
    monkeypatch.setattr(_out_of_core, "_BLOCK_VALUES", 16 * 21)
    clip = make_clip(T=16, H=40, W=56)
    plan = make_plan("laplacian_ideal", fs=30.0, compat=compat, params=PARAMS, frame_shape=clip.shape[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        memory = np.stack(list(vidmag.pipelines.run(lambda: iter(clip), fs=30.0, pipeline="laplacian_ideal",
                                                    backend=backend, compat=compat, **PARAMS)))
        work = tmp_path / "work"
        work.mkdir()
        bounded = np.stack(list(_out_of_core.laplacian_on_device(plan, lambda: iter(clip), str(work),
                                                                 backend)))
    assert bounded.shape == memory.shape
    assert np.abs(bounded.astype(np.int16) - memory).max() <= 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_magnify_file_takes_the_route_over_budget(tmp_path, clip_file, backend):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        memory = magnify_file(clip_file, str(out_dir / "memory.mp4"), pipeline="laplacian_ideal",
                              backend=backend, quality=0, audio=False, **PARAMS)
        bounded = magnify_file(clip_file, str(out_dir / "bounded.mp4"), pipeline="laplacian_ideal",
                               backend=backend, quality=0, audio=False, memory=TINY, **PARAMS)
    assert (memory.route, bounded.route) == ("in memory", "bands on disk")
    assert bounded.backend == memory.backend == backend and bounded.frames == memory.frames
    assert np.abs(_frames(bounded.output) - _frames(memory.output)).max() <= 1
    assert _leftovers(out_dir) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_temporaries_after_a_failure(tmp_path, clip_file, monkeypatch, backend):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    seen = []
    real = _out_of_core._device_laplacian

    def failing(*args, **kwargs):
        for i, frame in enumerate(real(*args, **kwargs)):
            if i == 3:  # in the second pass: the band files exist
                seen.append(_leftovers(out_dir))
                raise RuntimeError("boom")
            yield frame

    monkeypatch.setattr(_out_of_core, "_device_laplacian", failing)
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="boom"):
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        magnify_file(clip_file, str(out_dir / "x.mp4"), pipeline="laplacian_ideal", backend=backend,
                     audio=False, memory=TINY, **PARAMS)
    assert seen and any(name.startswith(".vidmag-work-") for name in seen[0])
    assert _leftovers(out_dir) == [] and not (out_dir / "x.mp4").exists()


def test_every_backend_has_laplacian_ideals_route():
    assert _out_of_core.ROUTES["laplacian_ideal"] is None


def _phase(pipeline, backend, **params):
    return pytest.param(pipeline, backend, dict(alpha=10.0, fl=0.5, fh=3.0, sigma=2.0, **params))


PHASE = [_phase("riesz_ideal", "opencl"), _phase("riesz_ideal", "torch"),
         _phase("steerable_ideal", "torch", orientations=4, bands_per_octave=1, attenuate_other_freq=False)]


@pytest.mark.parametrize(("pipeline", "backend", "params"), PHASE)
def test_phase_pipeline_over_budget_without_a_route_is_refused(tmp_path, clip_file, monkeypatch, pipeline,
                                                                backend, params):
    """Where a backend has no bounded route for a pipeline (every backend that runs the phase pipelines has
    one now: a table that names cpu alone stands for one without), no silent switch to the cpu route: the
    error names memory, the backend, and the backend with the route; nothing is written."""
    monkeypatch.setitem(_out_of_core.ROUTES, pipeline, ("cpu",))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(ValueError, match=r"^memory: .*backend 'cpu'") as error:
        magnify_file(clip_file, str(out_dir / "x.mp4"), pipeline=pipeline, backend=backend, audio=False,
                     memory=TINY, **params)
    assert f"backend {backend!r}" in str(error.value)
    assert os.listdir(out_dir) == []


def test_phase_pipeline_under_auto_follows_the_same_rule(tmp_path, clip_file, monkeypatch):
    """"auto" is resolved first; if it picks a backend without the route, the same error (naming it)."""
    params = dict(alpha=10.0, fl=0.5, fh=3.0, sigma=2.0)
    resolved, _ = vidmag.pipelines.select_backend("auto", "riesz_ideal")
    if resolved == "cpu":
        pytest.skip("auto picks cpu here, which has the route")
    monkeypatch.setitem(_out_of_core.ROUTES, "riesz_ideal", ("cpu",))
    with pytest.raises(ValueError, match=rf"^memory: riesz_ideal on backend {resolved!r}"):
        magnify_file(clip_file, str(tmp_path / "x.mp4"), pipeline="riesz_ideal", backend="auto",
                     audio=False, memory=TINY, **params)
    assert not (tmp_path / "x.mp4").exists()


def test_cli_memory_on_a_device_backend(tmp_path, clip_file, capsys, monkeypatch, require_backend):
    """`vidmag magnify --memory` takes laplacian_ideal's and riesz_ideal's routes on opencl; below the phase
    route's floor riesz_ideal is refused with the memory error (exit status 2), writing nothing."""
    from vidmag.cli import main

    require_backend("opencl")

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    common = ["--backend", "opencl", "--no-audio", "--memory", str(TINY), "--fl", "0.5", "--fh", "3",
              "--alpha", "10"]
    laplacian = ["magnify", clip_file, "-o", str(out_dir / "lap.mp4"), "--pipeline", "laplacian_ideal",
                 "--lambda-c", "8", "--chrom-attenuation", "0.5", *common]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        assert main(laplacian) == 0
    assert os.listdir(out_dir) == ["lap.mp4"]
    capsys.readouterr()
    riesz = ["magnify", clip_file, "-o", str(out_dir / "riesz.mp4"), "--pipeline", "riesz_ideal", "--sigma",
             "2", *common]
    assert main(riesz) == 2
    err = capsys.readouterr().err
    assert "memory" in err and "too small" in err
    assert os.listdir(out_dir) == ["lap.mp4"]
    monkeypatch.setattr(_out_of_core, "_BLOCK_VALUES", 100)  # a floor under the tiny clip's estimate
    plan = make_plan("riesz_ideal", fs=30.0, compat=None, params=dict(alpha=10.0, fl=0.5, fh=3.0, sigma=2.0),
                     frame_shape=(40, 56, 3), n_frames=16)
    floor, whole = _out_of_core.phase_floor(plan, 16), tiles.working_set(plan, 16, backend="opencl")
    assert floor < whole
    riesz[riesz.index(str(TINY))] = str((floor + whole) // 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        assert main(riesz) == 0
    assert sorted(os.listdir(out_dir)) == ["lap.mp4", "riesz.mp4"]
