"""The bicubic resize of the reference: Octave's ``imresize(x, [H W])`` with its default bicubic kernel.

Keys' cubic convolution (a = -0.5), MATLAB's pixel-centre mapping, taps outside the image mirrored by half a
sample, weights not renormalised. Used by the Gaussian pipeline to bring the band-passed down stack back to
full size (always an enlargement, so no anti-aliasing question arises).
"""

from __future__ import annotations

import numpy as np

from vidmag._reference.pyramid import COLS, ROWS

KEYS_A = -0.5


def keys_weight(d: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution kernel with a = -0.5, at offsets ``d`` (in samples)."""
    a = KEYS_A
    d = np.abs(np.asarray(d, dtype=np.float64))
    near = (a + 2.0) * d**3 - (a + 3.0) * d**2 + 1.0
    far = a * d**3 - 5.0 * a * d**2 + 8.0 * a * d - 4.0 * a
    return np.where(d <= 1.0, near, np.where(d < 2.0, far, 0.0))


def bicubic_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights of a bicubic resize from ``n_in`` to ``n_out`` samples along one axis.

    Returns
    -------
    index : ndarray, int, shape (n_out, 4)
        0-based source samples, already mirrored into [0, n_in).
    weight : ndarray, float64, shape (n_out, 4)
    """
    s = n_out / n_in
    k = np.arange(n_out, dtype=np.float64)
    x = 0.5 + 1.0 / (2.0 * s) + k / s  # 1-based sample position in the input
    taps = np.floor(x)[:, None] + np.arange(-1.0, 3.0)[None, :]
    weight = keys_weight(taps - x[:, None])
    # Half-sample mirror, 1-based: 0 -> 1, -1 -> 2, n + 1 -> n, n + 2 -> n - 1.
    period = 2 * n_in
    t = np.mod(taps.astype(np.int64) - 1, period)
    index = np.where(t < n_in, t, period - 1 - t)
    return index, weight


def _resize_axis(x: np.ndarray, n_out: int, axis: int) -> np.ndarray:
    index, weight = bicubic_taps(x.shape[axis], n_out)
    x = np.moveaxis(x, axis, 0)
    w = weight.reshape(weight.shape + (1,) * (x.ndim - 1))
    out = w[:, 0] * x[index[:, 0]]
    for j in range(1, 4):
        out = out + w[:, j] * x[index[:, j]]
    return np.moveaxis(out, 0, axis)


def resize_bicubic(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize the spatial axes of an (..., h, w, c) float array to ``size`` = (H, W), rows first.

    Returns
    -------
    ndarray, float64, shape (..., H, W, c)
    """
    h, w = size
    return _resize_axis(_resize_axis(np.asarray(image, dtype=np.float64), h, ROWS), w, COLS)
