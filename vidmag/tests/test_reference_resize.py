"""The reference's bicubic resize (Octave imresize: Keys a = -0.5, MATLAB mapping, half-sample mirror)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from vidmag._reference.resize import bicubic_taps, keys_weight, resize_bicubic


def _one_axis(values, n_out):
    return resize_bicubic(np.asarray(values, float)[:, None, None], (n_out, 1))[:, 0, 0]


def test_small_case_by_hand():
    # [0, 1] to 4 samples: positions 0.75, 1.25, 1.75, 2.25 (1-based); Keys weights at the tap offsets are
    # (-0.0234375, 0.2265625, 0.8671875, -0.0703125) and mirrored taps 0 -> 1, -1 -> 2, 3 -> 2, 4 -> 1.
    np.testing.assert_array_equal(_one_axis([0.0, 1.0], 4), [-0.09375, 0.203125, 0.796875, 1.09375])


def test_keys_kernel_values():
    np.testing.assert_array_equal(keys_weight(np.array([0.0, 1.0, 2.0, 0.5, 1.5])),
                                  [1.0, 0.0, 0.0, 0.5625, -0.0625])


@pytest.mark.parametrize(("n_in", "n_out"), [(37, 592), (5, 9), (33, 528), (7, 7), (4, 13)])
def test_constant_stays_constant(n_in, n_out):
    out = resize_bicubic(np.full((2, n_in, 3, 3), 0.3), (n_out, 5))
    np.testing.assert_allclose(out, 0.3, rtol=0, atol=1e-15)


def test_linear_ramp_is_reproduced_in_the_interior():
    n_in, n_out = 12, 40
    out = _one_axis(np.arange(n_in) * 0.5 + 2.0, n_out)
    s = n_out / n_in
    x = 0.5 + 1 / (2 * s) + np.arange(n_out) / s  # 1-based input position of each output sample
    interior = (x >= 2) & (x <= n_in - 1)
    np.testing.assert_allclose(out[interior], ((x - 1) * 0.5 + 2.0)[interior], rtol=0, atol=1e-13)


def test_scale_one_is_identity():
    image = np.random.default_rng(0).random((9, 11, 3))
    np.testing.assert_allclose(resize_bicubic(image, (9, 11)), image, rtol=0, atol=1e-15)


def test_direct_formula_per_pixel():
    """An independent per-pixel evaluation of the documented formula, rows and columns together."""
    rng = np.random.default_rng(5)
    image = rng.random((5, 6))
    H, W = 11, 14

    def mirror(t, n):  # 1-based, half-sample
        while t < 1 or t > n:
            t = 1 - t if t < 1 else 2 * n + 1 - t
        return t

    def w(d):
        d = abs(d)
        if d <= 1:
            return 1.5 * d**3 - 2.5 * d**2 + 1
        return -0.5 * d**3 + 2.5 * d**2 - 4 * d + 2 if d < 2 else 0.0

    expected = np.zeros((H, W))
    for i in range(H):
        y = 0.5 + 5 / (2 * H) + i * 5 / H
        for j in range(W):
            x = 0.5 + 6 / (2 * W) + j * 6 / W
            total = 0.0
            for ty in range(int(np.floor(y)) - 1, int(np.floor(y)) + 3):
                for tx in range(int(np.floor(x)) - 1, int(np.floor(x)) + 3):
                    total += w(ty - y) * w(tx - x) * image[mirror(ty, 5) - 1, mirror(tx, 6) - 1]
            expected[i, j] = total
    got = resize_bicubic(image[:, :, None], (H, W))[:, :, 0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13)


def test_interior_agrees_with_pillow():
    # Pillow's bicubic is also Keys a = -0.5 on pixel centres; it treats borders differently, so compare
    # the interior only (float32 inside Pillow).
    image = np.random.default_rng(6).random((10, 12)).astype(np.float32)
    H, W = 40, 36
    ours = resize_bicubic(image.astype(np.float64)[:, :, None], (H, W))[:, :, 0]
    pil = np.asarray(Image.fromarray(image, mode="F").resize((W, H), Image.BICUBIC))
    np.testing.assert_allclose(ours[6:-6, 6:-6], pil[6:-6, 6:-6], rtol=0, atol=2e-5)


def test_taps_mirror_into_range():
    index, weight = bicubic_taps(3, 12)
    assert index.min() == 0 and index.max() == 2
    np.testing.assert_allclose(weight.sum(axis=1), 1.0, rtol=0, atol=1e-15)
