"""The reference's spatial filters against SPEC-vidmag.md: pyramid build / collapse, level count, binom5
reduce and expand (reflect1, the n = 5 upConv tap), the Gaussian down stack."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vidmag._reference import pyramid


@pytest.mark.parametrize("shape", [(48, 64), (37, 29), (20, 160), (40, 45), (33, 10)])
def test_build_then_collapse_is_exact(shape):
    rng = np.random.default_rng(1)
    image = rng.normal(size=(2, *shape, 3))
    levels = pyramid.pyramid_levels(*shape)
    bands = pyramid.build_laplacian(image, levels)
    assert [b.shape[1:3] for b in bands] == pyramid.level_sizes(*shape, levels)
    np.testing.assert_allclose(pyramid.collapse_laplacian(bands), image, rtol=0, atol=1e-12)


def test_level_count_and_coarsest_size_for_baby():
    assert pyramid.pyramid_levels(544, 960) == 8
    assert pyramid.level_sizes(544, 960, 8)[-1] == (5, 8)
    assert pyramid.max_pyramid_height(4, 100) == 0
    assert pyramid.pyramid_levels(10, 10) == 3


def test_gaussian_down_stack_size_for_face():
    image = np.zeros((592, 528, 3))
    assert pyramid.gaussian_down(image, 4).shape == (37, 33, 3)


def test_kernels():
    assert math.isclose(pyramid.BINOM5.sum(), math.sqrt(2), rel_tol=1e-15)
    assert pyramid.GAUSS5.sum() == 1.0


def _pad_reduce(x, kernel, axis):
    # An independent statement: numpy's "reflect" padding is reflect1 too; sum the five taps by hand.
    x = np.moveaxis(x, axis, 0)
    padded = np.pad(x, [(2, 2)] + [(0, 0)] * (x.ndim - 1), mode="reflect")
    n = x.shape[0]
    out = sum(kernel[k] * padded[k : k + n] for k in range(5))
    return np.moveaxis(out[::2], 0, axis)


def test_reduce_orders_and_borders_match_a_direct_sum():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 23, 18, 3))
    lap = _pad_reduce(_pad_reduce(x, pyramid.BINOM5, 2), pyramid.BINOM5, 1)  # horizontal, then vertical
    np.testing.assert_allclose(pyramid.laplacian_reduce(x), lap, rtol=0, atol=1e-13)
    gau = _pad_reduce(_pad_reduce(x, pyramid.GAUSS5, 1), pyramid.GAUSS5, 2)  # vertical, then horizontal
    np.testing.assert_allclose(pyramid.gaussian_reduce(x), gau, rtol=0, atol=1e-13)
    assert pyramid.laplacian_reduce(x).shape == (3, 12, 9, 3)


def test_reduce_by_hand_at_the_border():
    x = np.array([1.0, 2.0, 7.0, 3.0, 5.0, 11.0])[None, :, None, None]  # one column of 6 rows
    out = pyramid.gaussian_reduce(np.repeat(x, 5, axis=2))[0, :, 0, 0]
    # sample 0 sees (x2 x1 | x0 x1 x2) mirrored without repeating x0; the last one (x3 x4 | x5 x4 x3)
    f = np.array([1, 4, 6, 4, 1]) / 16
    assert out[0] == pytest.approx(f @ [7, 2, 1, 2, 7])
    assert out[1] == pytest.approx(f @ [1, 2, 7, 3, 5])
    assert out[2] == pytest.approx(f @ [7, 3, 5, 11, 5])


def _expand_1d(y, n):
    """Independent statement of upConv along one axis: zero-stuff, mirror, correlate; no n = 5 quirk."""
    stuffed = np.zeros(n)
    stuffed[0::2] = y
    padded = np.pad(stuffed, 2, mode="reflect")
    return sum(pyramid.BINOM5[k] * padded[k : k + n] for k in range(5))


@pytest.mark.parametrize("n", [6, 7, 9, 10, 15])
def test_expand_matches_zero_stuffed_correlation(n):
    y = np.random.default_rng(n).normal(size=(n + 1) // 2)
    got = pyramid._upsample_correlate(y[:, None], n, 0)[:, 0]
    np.testing.assert_allclose(got, _expand_1d(y, n), rtol=0, atol=1e-14)


def test_expand_to_five_drops_a_tap():
    y = np.array([2.0, 3.0, 5.0])
    got = pyramid._upsample_correlate(y[:, None], 5, 0)[:, 0]
    plain = _expand_1d(y, 5)
    f = pyramid.BINOM5
    np.testing.assert_allclose(got[:4], plain[:4], rtol=0, atol=1e-15)
    assert got[4] == pytest.approx(f[0] * y[1] + f[2] * y[2], rel=1e-15)
    assert plain[4] == pytest.approx(2 * f[0] * y[1] + f[2] * y[2], rel=1e-15)  # what the quirk drops


def test_expand_is_vertical_then_horizontal_to_explicit_size():
    rng = np.random.default_rng(3)
    coarse = rng.normal(size=(1, 5, 4, 3))
    got = pyramid.laplacian_expand(coarse, (9, 8))
    assert got.shape == (1, 9, 8, 3)
    rows = np.apply_along_axis(_expand_1d, 1, coarse, 9)
    both = np.apply_along_axis(_expand_1d, 2, rows, 8)
    np.testing.assert_allclose(got, both, rtol=0, atol=1e-13)


def test_side_of_five_times_power_of_two_uses_the_quirk_and_still_collapses():
    image = np.random.default_rng(4).normal(size=(20, 160, 3))
    levels = pyramid.pyramid_levels(20, 160)
    assert (5, 40) in pyramid.level_sizes(20, 160, levels)[:-1]  # a 5-row level is expanded into
    bands = pyramid.build_laplacian(image, levels)
    np.testing.assert_allclose(pyramid.collapse_laplacian(bands), image, rtol=0, atol=1e-12)
