"""riesz_ideal and steerable_ideal over a memory budget on the float32 backends: the phase series in
time-major float32 files, every step the backend's own (``vidmag._out_of_core.phase_on_device``), equal to
the backend's in-memory run; magnify_file takes that route over the budget on the backend it was given,
refuses a budget below the route's floor, and leaves nothing behind after success, an error or Ctrl-C."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vidmag
from vidmag import _out_of_core, io, tiles
from vidmag.files import magnify_file
from vidmag.params import make_plan

from .conftest import require_backend_or_skip

# random small clips at alpha 10 clip a little; the warning is test_pipelines_saturation.py's subject
# (and a backend that cannot run here skips its cases, or fails them where VIDMAG_REQUIRE_BACKENDS names it)
pytestmark = [pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning"),
              pytest.mark.usefixtures("backend_param_runs")]

T, H, W = 16, 40, 56

RIESZ = dict(alpha=10.0, fl=0.5, fh=3.0, sigma=2.0)
STEERABLE = dict(alpha=10.0, fl=0.5, fh=3.0, sigma=2.0, orientations=4, bands_per_octave=1,
                 attenuate_other_freq=False)


def _case(pipeline, backend, params):
    return pytest.param(pipeline, backend, params, id=f"{pipeline}-{backend}")


#: Every float32 backend here that runs a phase ideal pipeline (cuda and metal run riesz_ideal through the
#: same driver as vulkan, vidmag.backend.kernels.riesz; they have no device on this project's CI).
CASES = [_case("riesz_ideal", "opencl", RIESZ), _case("riesz_ideal", "vulkan", RIESZ),
         _case("riesz_ideal", "torch", RIESZ), _case("steerable_ideal", "torch", STEERABLE),
         _case("steerable_ideal", "torch", {**STEERABLE, "orientations": 8, "bands_per_octave": 2,
                                            "attenuate_other_freq": True})]


@pytest.fixture
def small_blocks(monkeypatch):
    """Band-pass blocks of 16 x 6 values: each file is filtered in many blocks, a short last one, their
    borders inside a level's (band's) row and across the cos / sin halves of a Riesz file."""
    monkeypatch.setattr(_out_of_core, "_BLOCK_VALUES", 100)


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize(("pipeline", "backend", "params"), CASES)
def test_phase_on_device_equals_the_backends_in_memory_run(tmp_path, make_clip, small_blocks, pipeline,
                                                            backend, params, compat):
    clip = make_clip(T=T, H=H, W=W)
    memory = np.stack(list(vidmag.pipelines.run(lambda: iter(clip), fs=30.0, pipeline=pipeline,
                                                backend=backend, compat=compat, **params)))
    plan = make_plan(pipeline, fs=30.0, compat=compat, params=params, frame_shape=clip.shape[1:])
    done = []
    work = tmp_path / "work"
    work.mkdir()
    bounded = np.stack(list(_out_of_core.phase_on_device(plan, lambda: iter(clip), str(work), backend,
                                                         done.append)))
    assert bounded.shape == memory.shape == clip.shape
    assert np.abs(memory.astype(np.int16) - clip).max() > 1  # the run magnified something
    if backend == "torch":  # the promise: a batched FFT library may order a series' sums otherwise
        assert np.abs(bounded.astype(np.int16) - memory).max() <= 1
    else:  # one work item sums one value's series: the block's width cannot change it
        np.testing.assert_array_equal(bounded, memory)
    assert done == list(range(1, T + 1))
    assert sorted(os.listdir(work)) == sorted(f"phase{i}.f32" for i in range(len(os.listdir(work))))


@pytest.mark.parametrize(("pipeline", "params"), [("riesz_ideal", RIESZ), ("steerable_ideal", STEERABLE)])
def test_torch_route_runs_both_passes_under_the_bounded_heap_on_the_cpu(tmp_path, make_clip, monkeypatch,
                                                                         pipeline, params):
    """On the CPU the torch steps enter vidmag.backend.host_heap.bounded_heap for each pass (glibc's mmap
    threshold fixed, set back after; the C library faked here), and the frames are those of the in-memory
    run as above."""
    from vidmag.backend import host_heap

    name, backend = require_backend_or_skip("torch")
    plan = make_plan(pipeline, fs=30.0, compat=None, params=params, frame_shape=(H, W, 3))
    device = backend.phase_steps(plan).ops.device
    if device.type != "cpu":
        pytest.skip(f"the torch backend runs on {device} here, not the CPU")
    calls = []

    class Libc:
        def mallopt(self, param, value):
            calls.append(("mallopt", param, value))

        def malloc_trim(self, pad):
            calls.append(("malloc_trim", pad))

    monkeypatch.setattr(host_heap, "glibc", Libc)
    clip = make_clip(T=T, H=H, W=W)
    memory = np.stack(list(vidmag.pipelines.run(lambda: iter(clip), fs=30.0, pipeline=pipeline,
                                                backend=name, **params)))
    assert calls == []  # the in-memory run is not the route's
    bounded = np.stack(list(_out_of_core.phase_on_device(plan, lambda: iter(clip), str(tmp_path), name)))
    assert np.abs(bounded.astype(np.int16) - memory).max() <= 1
    one_pass = [("malloc_trim", 0), ("mallopt", -3, host_heap.MMAP_THRESHOLD),
                ("mallopt", -3, host_heap.GLIBC_DEFAULT_THRESHOLD), ("malloc_trim", 0)]
    assert calls == one_pass * 2  # the phases' pass and the render's


@pytest.fixture
def clip_file(make_clip_file):
    return make_clip_file(T=T, H=H, W=W)


def _budget_between(pipeline, backend, params):
    """A budget over the route's floor and under the backend's in-memory estimate: it forces the route."""
    plan = make_plan(pipeline, fs=30.0, compat=None, params=params, frame_shape=(H, W, 3), n_frames=T)
    floor, whole = _out_of_core.phase_floor(plan, T), tiles.working_set(plan, T, backend=backend)
    assert floor < whole
    return (floor + whole) // 2


def _frames(path):
    return np.stack(list(io.read_frames(path))).astype(np.int16)


def _leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("."))


@pytest.mark.parametrize(("pipeline", "backend", "params"), CASES[:4])
def test_magnify_file_takes_the_route_on_the_given_backend(tmp_path, clip_file, small_blocks, pipeline,
                                                           backend, params):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    memory = magnify_file(clip_file, str(out_dir / "memory.mp4"), pipeline=pipeline, backend=backend,
                          quality=0, audio=False, **params)
    budget = _budget_between(pipeline, backend, params)
    bounded = magnify_file(clip_file, str(out_dir / "bounded.mp4"), pipeline=pipeline, backend=backend,
                           quality=0, audio=False, memory=budget, **params)
    assert (memory.route, bounded.route) == ("in memory", "phase on disk")
    assert bounded.backend == memory.backend == backend  # never switched to the cpu route
    assert bounded.frames == memory.frames == T
    assert np.abs(_frames(bounded.output) - _frames(memory.output)).max() <= 1
    assert _leftovers(out_dir) == []


def test_auto_keeps_its_choice_and_takes_that_backends_route(tmp_path, clip_file, small_blocks):
    resolved, _ = vidmag.pipelines.select_backend("auto", "riesz_ideal")
    result = magnify_file(clip_file, str(tmp_path / "x.mp4"), pipeline="riesz_ideal", backend="auto",
                          audio=False, memory=_budget_between("riesz_ideal", resolved, RIESZ), **RIESZ)
    assert (result.backend, result.route) == (resolved, "phase on disk")


@pytest.mark.parametrize(("pipeline", "backend", "params"), CASES[:4])
def test_a_budget_below_the_floor_is_refused_naming_memory(tmp_path, clip_file, pipeline, backend, params):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dst = out_dir / "out.mp4"
    with pytest.raises(ValueError, match=r"^memory: .*too small.*give memory=\d+MiB"):
        magnify_file(clip_file, str(dst), pipeline=pipeline, backend=backend, audio=False,
                     memory=tiles.OVERHEAD_BYTES + 1000, **params)
    assert not dst.exists() and os.listdir(out_dir) == []


@pytest.mark.parametrize("error", [RuntimeError("disk gone"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
@pytest.mark.parametrize(("pipeline", "backend", "params"), CASES[:4])
def test_nothing_left_after_an_interruption_in_the_second_pass(tmp_path, clip_file, small_blocks, monkeypatch,
                                                                pipeline, backend, params, error):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    seen = []
    real = _out_of_core._SeriesFiles.frame

    def failing(self, i, t):
        if t == 3:  # the files are written and filtered, three frames are encoded
            seen.append((_leftovers(out_dir), os.listdir(os.path.dirname(self.paths[i]))))
            raise error
        return real(self, i, t)

    monkeypatch.setattr(_out_of_core._SeriesFiles, "frame", failing)
    with pytest.raises(type(error)):
        magnify_file(clip_file, str(out_dir / "x.mp4"), pipeline=pipeline, backend=backend, audio=False,
                     memory=_budget_between(pipeline, backend, params), **params)
    (hidden, files), = seen
    assert any(name.startswith(".vidmag-work-") for name in hidden) and "phase0.f32" in files
    assert _leftovers(out_dir) == [] and os.listdir(out_dir) == []


def test_every_backend_that_runs_a_phase_ideal_pipeline_has_its_route():
    from vidmag.params import PHASE_BACKENDS

    for pipeline in ("riesz_ideal", "steerable_ideal"):
        assert _out_of_core.ROUTES[pipeline] == PHASE_BACKENDS[pipeline]
