"""vidmag.tiles: tiles with the pyramid's halo give the whole-clip output byte for byte (cpu backend)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import vidmag
from vidmag import tiles
from vidmag._reference import pyramid, resize
from vidmag.params import make_plan

PARAMS = {
    "gaussian_ideal": dict(alpha=50.0, level=2, fl=0.5, fh=3.0, chrom_attenuation=1.0),
    "laplacian_ideal": dict(alpha=10.0, lambda_c=8.0, fl=0.5, fh=3.0, chrom_attenuation=0.5),
    "laplacian_butterworth": dict(alpha=10.0, lambda_c=8.0, fl=0.5, fh=3.0, chrom_attenuation=0.5),
    "laplacian_iir": dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5),
}


def _both(clip, pipeline, compat=None, tile=32, **override):
    params = {**PARAMS[pipeline], **override}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        whole = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", compat=compat, **params)
        tiled = tiles.magnify_tiled(clip, fs=30.0, pipeline=pipeline, backend="cpu", compat=compat, tile=tile,
                                    **params)
    return whole, tiled


@pytest.mark.parametrize("pipeline", list(PARAMS))
def test_tiled_equals_whole_clip(make_clip, pipeline):
    clip = make_clip(T=40, H=96, W=80)
    whole, tiled = _both(clip, pipeline)
    assert tiled.dtype == np.uint8 and tiled.shape == whole.shape
    np.testing.assert_array_equal(tiled, whole)


@pytest.mark.parametrize("pipeline", ["gaussian_ideal", "laplacian_ideal"])
def test_tiled_equals_whole_clip_mit(make_clip, pipeline):
    clip = make_clip(T=40, H=96, W=80, seed=1)
    whole, tiled = _both(clip, pipeline, compat="mit")
    assert len(tiled) == len(whole) == (29 if pipeline == "laplacian_ideal" else 30)
    np.testing.assert_array_equal(tiled, whole)


def test_gaussian_tiles_really_are_partial(make_clip):
    """At level 2 the halo is 20 pixels: tiles of 32 read less than the frame, border tiles included."""
    plan = make_plan("gaussian_ideal", fs=30.0, compat=None, params=PARAMS["gaussian_ideal"],
                     frame_shape=(96, 80, 3))
    laid = tiles.plan_tiles(plan, tile=32)
    assert len(laid) == 9
    assert all(t.region_shape[0] < 96 and t.region_shape[1] < 80 for t in laid)
    covered = np.zeros((96, 80), dtype=int)
    for t in laid:
        covered[t.core] += 1
        assert t.ry0 % 4 == 0 and t.rx0 % 4 == 0 and t.y0 % 4 == 0
    assert (covered == 1).all()
    # a tile size that is not a multiple of the alignment is rounded up to one
    assert {t.y1 - t.y0 for t in tiles.plan_tiles(plan, tile=(30, 30))} == {32}


def test_odd_sizes_and_small_tiles(make_clip):
    clip = make_clip(T=24, H=93, W=77, seed=2)
    for pipeline in ("laplacian_ideal", "gaussian_ideal"):
        whole, tiled = _both(clip, pipeline, tile=8)
        np.testing.assert_array_equal(tiled, whole)
    # gaussian at level 1: 93 and 77 are odd, so neither side is split (the enlargement's scale is not 2)
    plan = make_plan("gaussian_ideal", fs=30.0, compat=None, params={**PARAMS["gaussian_ideal"], "level": 1},
                     frame_shape=(93, 77, 3))
    geo = tiles.geometry(plan)
    assert not geo.split_rows and not geo.split_cols and "multiple" in geo.why
    assert len(tiles.plan_tiles(plan, tile=8)) == 1


def test_gaussian_split_on_one_axis_only(make_clip):
    """96 rows split (a multiple of 4), 78 columns not: the columns span the frame."""
    clip = make_clip(T=20, H=96, W=78, seed=3)
    whole, tiled = _both(clip, "gaussian_ideal", tile=16)
    np.testing.assert_array_equal(tiled, whole)
    plan = make_plan("gaussian_ideal", fs=30.0, compat=None, params=PARAMS["gaussian_ideal"],
                     frame_shape=(96, 78, 3))
    laid = tiles.plan_tiles(plan, tile=16)
    assert len(laid) == 6 and all(t.x0 == 0 and t.x1 == 78 for t in laid)


def test_laplacian_reach_formula():
    """An impulse reaches at most 2**(top + 3) - 4 pixels through bands 1..top (and the bound is not loose by
    more than a quarter)."""
    n, c = 256, 128
    for top in (1, 2, 3):
        image = np.zeros((1, n, n, 1))
        image[0, c, c, 0] = 1.0
        bands = pyramid.build_laplacian(image, top + 2)
        kept = [band if 1 <= k <= top else np.zeros_like(band) for k, band in enumerate(bands)]
        ys, xs = np.nonzero(np.abs(pyramid.collapse_laplacian(kept)[0, :, :, 0]) > 1e-15)
        measured = max(np.abs(ys - c).max(), np.abs(xs - c).max())
        bound = 2 ** (top + 3) - 4
        assert 0.75 * bound <= measured <= bound


def test_gaussian_reach_formula():
    """Down stack then bicubic enlargement by 2**L reaches at most 4.5 * 2**L - 2 pixels, whatever the phase
    of the pixel on the decimation grid."""
    n = 128
    for level in (1, 2, 3):
        s = 2**level
        worst = 0
        for c in range(64, 64 + s):
            image = np.zeros((1, n, n, 1))
            image[0, c, c, 0] = 1.0
            out = resize.resize_bicubic(pyramid.gaussian_down(image, level), (n, n))
            ys, _ = np.nonzero(np.abs(out[0, :, :, 0]) > 1e-15)
            worst = max(worst, np.abs(ys - c).max())
        assert 4.5 * s - 2 - 2 <= worst <= 4.5 * s - 2
        plan = make_plan("gaussian_ideal", fs=30.0, compat=None,
                         params={**PARAMS["gaussian_ideal"], "level": level}, frame_shape=(n, n, 3))
        geo = tiles.geometry(plan)
        assert geo.align == s and geo.halo % s == 0 and geo.halo >= 4.5 * s - 2


def test_laplacian_halo_spans_the_short_side():
    """With the MIT pyramid depth the amplified bands reach further than the frame's short side: the tiles of
    a Laplacian pipeline cannot read less than whole rows or columns (reported in docs/vidmag/memory.md)."""
    for H, W in ((96, 80), (480, 640), (1080, 1920)):
        plan = make_plan("laplacian_ideal", fs=30.0, compat=None, params=PARAMS["laplacian_ideal"],
                         frame_shape=(H, W, 3))
        geo = tiles.geometry(plan)
        assert geo.align + 2 * geo.halo >= min(H, W)  # the smallest tile's region


def test_phase_pipelines_run_as_one_tile(make_clip):
    params = dict(alpha=5.0, fl=0.5, fh=3.0, sigma=1.0)
    plan = make_plan("riesz_ideal", fs=30.0, compat=None, params=params, frame_shape=(48, 64, 3))
    assert len(tiles.plan_tiles(plan, tile=16)) == 1
    clip = make_clip(T=12, H=48, W=64)
    whole = vidmag.magnify(clip, fs=30.0, pipeline="riesz_ideal", backend="cpu", **params)
    tiled = tiles.magnify_tiled(clip, fs=30.0, pipeline="riesz_ideal", backend="cpu", tile=16, **params)
    np.testing.assert_array_equal(tiled, whole)


def test_frame_source_and_out(make_clip):
    clip = make_clip(T=16, H=48, W=64)
    out = np.zeros_like(clip)
    whole, _ = _both(clip, "gaussian_ideal", tile=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        got = tiles.magnify_tiled(lambda: iter(clip), fs=30.0, pipeline="gaussian_ideal", backend="cpu",
                                  tile=16, out=out, **PARAMS["gaussian_ideal"])
    assert got is out
    np.testing.assert_array_equal(out, whole)


def test_saturation_warning_is_the_clips(make_clip):
    clip = make_clip(T=20, H=48, W=64)
    with pytest.warns(vidmag.SaturationWarning):
        tiles.magnify_tiled(clip, fs=30.0, pipeline="gaussian_ideal", backend="cpu", tile=16,
                            **{**PARAMS["gaussian_ideal"], "alpha": 5000.0})


def test_bad_arguments():
    plan_tuple = ("gaussian_ideal", 48, 64, {"fs": 30.0, **PARAMS["gaussian_ideal"]})
    assert len(tiles.plan_tiles(plan_tuple, tile=16)) == 12
    with pytest.raises(ValueError, match="tile"):
        tiles.plan_tiles(plan_tuple, tile=0)
    with pytest.raises(TypeError, match="tile"):
        tiles.plan_tiles(plan_tuple, tile="16")
    with pytest.raises(TypeError, match="fs"):
        tiles.plan_tiles(("gaussian_ideal", 48, 64, PARAMS["gaussian_ideal"]), tile=16)
    with pytest.raises(ValueError, match="out"):
        tiles.magnify_tiled(np.zeros((4, 48, 64, 3), np.uint8), fs=30.0, pipeline="gaussian_ideal", tile=16,
                            out=np.zeros((3, 48, 64, 3), np.uint8), **PARAMS["gaussian_ideal"])


def test_parse_size_and_default_budget():
    assert tiles.parse_size("2GB") == 2 * 10**9
    assert tiles.parse_size("500MB") == 500 * 10**6
    assert tiles.parse_size("1.5GiB") == int(1.5 * 2**30)
    assert tiles.parse_size("800M") == 800 * 2**20
    assert tiles.parse_size(12345) == 12345
    for bad in ("lots", "-1GB", "0"):
        with pytest.raises(ValueError, match="memory"):
            tiles.parse_size(bad)
    with pytest.raises(TypeError, match="memory"):
        tiles.parse_size(2.5)
    assert tiles.default_memory_budget() > 0
