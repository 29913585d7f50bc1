"""The reference's colour handling against SPEC-vidmag.md: YIQ matrices, round trip, output handling and
rounding."""

from __future__ import annotations

import numpy as np
import pytest

from vidmag._reference import colour


def _all_rgb_sample(n=200_000, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3), dtype=np.uint8)


def test_forward_matrix_is_ntsc():
    yiq = colour.rgb_to_yiq(np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255]], dtype=np.uint8))
    np.testing.assert_allclose(yiq.T, colour.RGB_TO_YIQ, rtol=0, atol=1e-15)


def test_round_trip_exact_inverse_is_identity():
    rgb = _all_rgb_sample()
    back = colour.yiq_to_rgb_uint8(colour.rgb_to_yiq(rgb), mit=False)
    np.testing.assert_array_equal(back, rgb)


def test_mit_inverse_differs_rarely_by_at_most_one():
    # on arbitrary YIQ values (as amplification produces) the 5-decimal matrix moves a few values by one level
    rgb = np.random.default_rng(1).random((400_000, 3))
    yiq = np.stack([rgb @ row for row in colour.RGB_TO_YIQ], axis=-1)
    mit = colour.yiq_to_rgb_uint8(yiq, mit=True).astype(int)
    exact = colour.yiq_to_rgb_uint8(yiq, mit=False).astype(int)
    diff = np.abs(mit - exact)
    assert diff.max() == 1
    assert 1e-6 < (diff > 0).mean() < 1e-3
    np.testing.assert_allclose(colour.YIQ_TO_RGB_MIT, colour.YIQ_TO_RGB_EXACT, rtol=0, atol=5e-6)


def test_output_handling_keeps_hue():
    rgb = np.array([[1.5, 0.75, -0.2], [0.2, 0.4, 0.6], [-0.1, -0.3, 0.5]])
    out = colour.fit_to_unit_range(rgb)
    np.testing.assert_allclose(out, [[1.0, 0.5, 0.0], [0.2, 0.4, 0.6], [0.0, 0.0, 0.5]], rtol=0, atol=1e-15)


def test_uint8_rounds_half_away_from_zero():
    # values whose product with 255 is exactly a half-integer in float64, among them even ones that
    # round-half-to-even would send down
    ties = [k + 0.5 for k in range(255) if (k + 0.5) / 255 * 255 == k + 0.5]
    assert any(int(t) % 2 == 0 for t in ties)
    x = np.array([t / 255 for t in ties])
    np.testing.assert_array_equal(colour.to_uint8(x), [int(t) + 1 for t in ties])
    np.testing.assert_array_equal(colour.to_uint8(np.array([0.0, 1.0, 1.2, -0.1])), [0, 255, 255, 0])


def test_rgb_to_yiq_requires_bytes():
    with pytest.raises(TypeError, match="uint8"):
        colour.rgb_to_yiq(np.zeros((2, 3)))
