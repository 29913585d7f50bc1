"""magnify_file(memory=...): over the budget, the whole-clip pipelines run out of core with the same output,
and leave no temporary behind (after success, an error, or an interrupt)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import vidmag
from vidmag import _out_of_core, io, tiles
from vidmag.files import magnify_file

PARAMS = {
    "gaussian_ideal": dict(alpha=20.0, level=2, fl=0.5, fh=3.0, chrom_attenuation=1.0),
    "laplacian_ideal": dict(alpha=10.0, lambda_c=8.0, fl=0.5, fh=3.0, chrom_attenuation=0.5),
}

#: Just above the fixed overhead: a few hundred bytes per frame of stack are allowed, which forces tiles.
TINY = tiles.OVERHEAD_BYTES + 60_000


@pytest.fixture
def clip_file(make_clip_file):
    return make_clip_file(T=20, H=48, W=64)


def _frames(path):
    return np.stack(list(io.read_frames(path)))


def _leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith("."))


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("pipeline", list(PARAMS))
def test_over_budget_equals_in_memory(tmp_path, clip_file, pipeline, compat):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        warnings.simplefilter("ignore", ResourceWarning)
        memory = magnify_file(clip_file, str(out_dir / "memory.mp4"), pipeline=pipeline, backend="cpu",
                              compat=compat, quality=0, audio=False, **PARAMS[pipeline])
        bounded = magnify_file(clip_file, str(out_dir / "bounded.mp4"), pipeline=pipeline, backend="cpu",
                               compat=compat, quality=0, audio=False, memory=TINY, **PARAMS[pipeline])
    assert memory.route == "in memory"
    if pipeline == "laplacian_ideal":
        assert bounded.route == "bands on disk"
    else:
        assert bounded.route.startswith("tiles of") and bounded.route != "tiles of 48 x 64"
    assert bounded.frames == memory.frames
    np.testing.assert_array_equal(_frames(bounded.output), _frames(memory.output))
    assert _leftovers(out_dir) == []


def test_gaussian_tiles_fit_the_budget():
    plan = vidmag.params.make_plan("gaussian_ideal", fs=30.0, compat=None, params=PARAMS["gaussian_ideal"],
                                   frame_shape=(96, 128, 3))
    assert tiles.choose_tile(plan, 100, 10**12) is None  # fits: no tiles
    budget = tiles.OVERHEAD_BYTES + 100 * 20 * 20 * 3 * 8
    tile = tiles.choose_tile(plan, 100, budget)
    biggest = max(tiles.plan_tiles(plan, tile=tile), key=lambda t: t.region_shape[0] * t.region_shape[1])
    assert tiles.working_set(plan, 100, biggest.region_shape) <= budget
    assert tiles.working_set(plan, 100) > budget


@pytest.mark.parametrize("pipeline", list(PARAMS))
def test_no_temporaries_after_a_failure(tmp_path, clip_file, monkeypatch, pipeline):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    seen = []

    def failing(*args, **kwargs):
        seen.append(_leftovers(out_dir))  # the work directory exists now
        raise KeyboardInterrupt

    name = "laplacian_on_disk" if pipeline == "laplacian_ideal" else "gaussian_tiled"
    real = getattr(_out_of_core, name)

    def wrapped(*args, **kwargs):
        for i, frame in enumerate(real(*args, **kwargs)):
            if i == 3:
                failing()
            yield frame

    monkeypatch.setattr(_out_of_core, name, wrapped)
    with warnings.catch_warnings(), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("ignore")
        magnify_file(clip_file, str(out_dir / "x.mp4"), pipeline=pipeline, backend="cpu", audio=False,
                     memory=TINY, **PARAMS[pipeline])
    assert seen and any(name.startswith(".vidmag-work-") for name in seen[0])
    assert _leftovers(out_dir) == [] and not (out_dir / "x.mp4").exists()


def test_bad_memory_values(tmp_path, clip_file):
    for bad, error in (("lots", ValueError), ("0GB", ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="memory"):
            magnify_file(clip_file, str(tmp_path / "x.mp4"), pipeline="laplacian_ideal", memory=bad,
                         **PARAMS["laplacian_ideal"])
    assert not (tmp_path / "x.mp4").exists()


def test_streaming_pipelines_ignore_the_budget(tmp_path, clip_file):
    result = magnify_file(clip_file, str(tmp_path / "x.mp4"), pipeline="laplacian_iir", backend="cpu",
                          audio=False, memory=TINY, alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05,
                          chrom_attenuation=0.5)
    assert result.route == "in memory"


def test_cli_memory_option(tmp_path, clip_file, capsys):
    from vidmag.cli import main

    out = str(tmp_path / "cli.mp4")
    args = ["magnify", clip_file, "-o", out, "--pipeline", "laplacian_ideal", "--alpha", "10", "--lambda-c",
            "8", "--fl", "0.5", "--fh", "3", "--chrom-attenuation", "0.5", "--backend", "cpu", "--no-audio"]
    assert main([*args, "--memory", str(TINY)]) == 0
    assert os.path.exists(out) and _leftovers(tmp_path) == []
    assert main([*args, "--memory", "lots"]) == 2
    assert "memory" in capsys.readouterr().err


def test_band_pass_blocks_do_not_change_a_bit(tmp_path, clip_file, monkeypatch):
    """Blocks of 7 values' series (many per level, a short last one) give the in-memory output."""
    monkeypatch.setattr(_out_of_core, "_BLOCK_VALUES", 20 * 7)
    params = PARAMS["laplacian_ideal"]
    memory = magnify_file(clip_file, str(tmp_path / "memory.mp4"), pipeline="laplacian_ideal", backend="cpu",
                          quality=0, audio=False, **params)
    bounded = magnify_file(clip_file, str(tmp_path / "bounded.mp4"), pipeline="laplacian_ideal",
                           backend="cpu", quality=0, audio=False, memory=TINY, **params)
    assert bounded.route == "bands on disk"
    np.testing.assert_array_equal(_frames(bounded.output), _frames(memory.output))
