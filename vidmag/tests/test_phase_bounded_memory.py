"""riesz_ideal and steerable_ideal over a memory budget: their phase series in time-major files
(``vidmag._out_of_core.riesz_on_disk`` / ``steerable_on_disk``) give the in-memory run's bytes, magnify_file
takes that route when the clip does not fit, and a budget too small for even one frame's work is refused
naming memory, with nothing left behind."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vidmag
from vidmag import _out_of_core, io, tiles
from vidmag.files import magnify_file
from vidmag.params import make_plan

# random small clips at alpha 10 clip a little; the warning is test_pipelines_saturation.py's subject
pytestmark = pytest.mark.filterwarnings("ignore::vidmag.pipelines.SaturationWarning")

T, H, W = 16, 32, 40

STEERABLE = dict(alpha=10.0, fl=1.5, fh=2.5, sigma=2.0, orientations=4, bands_per_octave=1,
                 attenuate_other_freq=False)
CASES = [
    ("riesz_ideal", None, dict(alpha=10.0, fl=1.5, fh=2.5, sigma=2.0)),
    ("riesz_ideal", "mit", dict(alpha=20.0, fl=1.0, fh=3.0, sigma=0.0)),
    ("steerable_ideal", None, STEERABLE),
    ("steerable_ideal", "mit", STEERABLE),
    ("steerable_ideal", None, {**STEERABLE, "orientations": 8, "bands_per_octave": 2,
                               "attenuate_other_freq": True}),
]


@pytest.fixture
def small_blocks(monkeypatch):
    """Band-pass blocks of 100 values: each file is filtered in many blocks, their borders inside a frame's
    row, so a block that mixed or dropped values would show."""
    monkeypatch.setattr(_out_of_core, "_BLOCK_VALUES", 100)


def _route(pipeline):
    return _out_of_core.riesz_on_disk if pipeline == "riesz_ideal" else _out_of_core.steerable_on_disk


@pytest.mark.parametrize(("pipeline", "compat", "params"), CASES)
def test_on_disk_equals_in_memory_byte_for_byte(tmp_path, make_clip, small_blocks, pipeline, compat, params):
    clip = make_clip(T=T, H=H, W=W)
    want = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", compat=compat, **params)
    plan = make_plan(pipeline, fs=30.0, compat=compat, params=params, frame_shape=clip.shape[1:], n_frames=T)
    done = []
    got = np.stack(list(_route(pipeline)(plan, lambda: iter(clip), str(tmp_path), done.append)))
    np.testing.assert_array_equal(got, want)
    assert done == list(range(1, T + 1))


@pytest.fixture
def clip_file(make_clip_file):
    return make_clip_file(T=T, H=H, W=W)


def _budget_between(pipeline, params):
    """A budget over the route's floor and under the in-memory estimate: it forces the route."""
    plan = make_plan(pipeline, fs=30.0, compat=None, params=params, frame_shape=(H, W, 3), n_frames=T)
    floor, whole = _out_of_core.phase_floor(plan, T), tiles.working_set(plan, T)
    assert floor < whole
    return (floor + whole) // 2


def _frames(path):
    return np.stack(list(io.read_frames(path)))


def _leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("."))


@pytest.mark.parametrize(("pipeline", "params"), [(p, kw) for p, compat, kw in CASES[::2]])
def test_magnify_file_takes_the_route_over_budget(tmp_path, clip_file, small_blocks, pipeline, params):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    memory = magnify_file(clip_file, str(out_dir / "memory.mp4"), pipeline=pipeline, backend="cpu",
                          quality=0, audio=False, **params)
    bounded = magnify_file(clip_file, str(out_dir / "bounded.mp4"), pipeline=pipeline, backend="cpu",
                           quality=0, audio=False, memory=_budget_between(pipeline, params), **params)
    assert (memory.route, bounded.route) == ("in memory", "phase on disk")
    assert bounded.frames == memory.frames == T
    np.testing.assert_array_equal(_frames(bounded.output), _frames(memory.output))
    assert _leftovers(out_dir) == []


@pytest.mark.parametrize("pipeline", ["riesz_ideal", "steerable_ideal"])
def test_a_budget_below_one_frame_of_work_is_refused_naming_memory(tmp_path, clip_file, pipeline):
    params = CASES[0][2] if pipeline == "riesz_ideal" else STEERABLE
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dst = out_dir / "out.mp4"
    with pytest.raises(ValueError, match=r"^memory: .*too small.*give memory=\d+MiB"):
        magnify_file(clip_file, str(dst), pipeline=pipeline, backend="cpu", audio=False, memory="1MB",
                     **params)
    assert not dst.exists() and os.listdir(out_dir) == []


def test_no_temporaries_after_a_failure_in_the_second_pass(tmp_path, clip_file, small_blocks, monkeypatch):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    workdirs = []
    real = _out_of_core._SeriesFiles.frame

    def failing(self, i, t):
        workdirs.append(os.path.dirname(self.paths[i]))
        if t == 3:
            raise OSError("disk gone")
        return real(self, i, t)

    monkeypatch.setattr(_out_of_core._SeriesFiles, "frame", failing)
    with pytest.raises(OSError, match="disk gone"):
        magnify_file(clip_file, str(out_dir / "out.mp4"), pipeline="steerable_ideal", backend="cpu",
                     audio=False, memory=_budget_between("steerable_ideal", STEERABLE), **STEERABLE)
    assert workdirs and not os.path.exists(workdirs[0])
    assert os.listdir(out_dir) == []


def test_the_floor_does_not_grow_with_the_clip_as_the_in_memory_estimate_does():
    assert "cpu" in _out_of_core.ROUTES["riesz_ideal"] and "cpu" in _out_of_core.ROUTES["steerable_ideal"]
    for pipeline, params in (("riesz_ideal", CASES[0][2]), ("steerable_ideal", STEERABLE)):
        plan = make_plan(pipeline, fs=30.0, compat=None, params=params, frame_shape=(544, 960, 3))
        floors = [_out_of_core.phase_floor(plan, n) for n in (300, 3_000, 30_000)]
        assert max(floors) - min(floors) < 2**20  # one block of at most _BLOCK_VALUES values whatever T
        assert tiles.working_set(plan, 300) > 10 * floors[0]
