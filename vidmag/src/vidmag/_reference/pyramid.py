"""Spatial filters of the reference (matlabPyrTools 1.4 as the MIT code uses them).

Images are float64 arrays whose two spatial axes are the third- and second-last: (..., h, w, c), so one call
handles one frame (h, w, 3) or a batch of frames (n, h, w, 3). Every filter is separable, with ``reflect1``
borders: the signal is mirrored about its edge sample without repeating it (numpy's ``mode="reflect"``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.ndimage import correlate1d

#: matlabPyrTools' ``binom5``: sqrt(2) [1 4 6 4 1] / 16, unnormalised (sum sqrt(2)): the Laplacian kernel.
BINOM5 = math.sqrt(2.0) * np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0

#: The Gaussian down stack's kernel (``blurDn`` normalises binom5 to sum 1).
GAUSS5 = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0

#: Axis numbers of the spatial dimensions in an (..., h, w, c) array.
ROWS, COLS = -3, -2


def _correlate_reflect1(x: np.ndarray, kernel: np.ndarray, axis: int) -> np.ndarray:
    """Correlate along ``axis`` with a 5-tap kernel centred on its middle tap, ``reflect1`` borders.

    SciPy's ``mode="mirror"`` is exactly reflect1 (d c b | a b c d | c b a).
    """
    return correlate1d(x, kernel, axis=axis, mode="mirror")


def _correlate_keep_even(x: np.ndarray, kernel: np.ndarray, axis: int) -> np.ndarray:
    """Correlate a length-n signal with a 5-tap kernel (reflect1 borders) and keep outputs 0, 2, 4, ...

    The result has ceil(n / 2) samples along ``axis``.
    """
    full = _correlate_reflect1(x, kernel, axis)
    keep = [slice(None)] * x.ndim
    keep[axis] = slice(0, None, 2)
    return full[tuple(keep)]


def _upsample_correlate(x: np.ndarray, n: int, axis: int) -> np.ndarray:
    """matlabPyrTools ``upConv`` with binom5 along one axis, to an explicit length ``n``.

    The coarse samples go to positions 0, 2, 4, ... of a length-n signal with zeros between; that signal is
    mirrored about its first and last samples and correlated with binom5 (symmetric, so also convolved).
    The compiled upConv drops a tap when n = 5: its last output is ``f0 * y1 + f2 * y2``; reproduced here.
    """
    x = np.moveaxis(x, axis, 0)
    m = x.shape[0]
    if m != (n + 1) // 2:
        raise ValueError(f"cannot expand {m} samples to {n} (needs ceil(n / 2) = {m})")
    stuffed = np.zeros((n, *x.shape[1:]), dtype=np.float64)
    stuffed[0::2] = x
    out = _correlate_reflect1(stuffed, BINOM5, 0)
    if n == 5:
        out[4] = BINOM5[0] * x[1] + BINOM5[2] * x[2]
    return np.moveaxis(out, 0, axis)


def laplacian_reduce(image: np.ndarray) -> np.ndarray:
    """One Laplacian reduce: binom5 and keep even samples, horizontally then vertically.

    (..., h, w, c) -> (..., ceil(h / 2), ceil(w / 2), c).
    """
    return _correlate_keep_even(_correlate_keep_even(image, BINOM5, COLS), BINOM5, ROWS)


def laplacian_expand(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """One Laplacian expand to the finer level's explicit ``size`` = (h, w): vertically, then horizontally.

    (..., ceil(h / 2), ceil(w / 2), c) -> (..., h, w, c).
    """
    h, w = size
    return _upsample_correlate(_upsample_correlate(image, h, ROWS), w, COLS)


def gaussian_reduce(image: np.ndarray) -> np.ndarray:
    """One ``blurDn`` step: [1 4 6 4 1] / 16 and keep even samples, vertically then horizontally."""
    return _correlate_keep_even(_correlate_keep_even(image, GAUSS5, ROWS), GAUSS5, COLS)


def gaussian_down(image: np.ndarray, level: int) -> np.ndarray:
    """``blurDnClr(image, level)``: ``level`` blur-and-halve steps, keeping only the last image."""
    for _ in range(level):
        image = gaussian_reduce(image)
    return image


def max_pyramid_height(h: int, w: int) -> int:
    """matlabPyrTools ``maxPyrHt`` for a 5-tap filter.

    0 if min(h, w) < 5, else 1 + maxPyrHt(h // 2, w // 2).
    """
    height = 0
    while min(h, w) >= 5:
        height += 1
        h, w = h // 2, w // 2
    return height


def pyramid_levels(h: int, w: int) -> int:
    """Number of levels of ``buildLpyr(image, 'auto')`` for an h x w image: 1 + maxPyrHt(h, w)."""
    return 1 + max_pyramid_height(h, w)


def level_sizes(h: int, w: int, levels: int) -> list[tuple[int, int]]:
    """Sizes (h, w) of the pyramid's levels, finest first: each is the ceiling half of the one before."""
    sizes = [(h, w)]
    for _ in range(levels - 1):
        h, w = (h + 1) // 2, (w + 1) // 2
        sizes.append((h, w))
    return sizes


def build_laplacian(image: np.ndarray, levels: int) -> list[np.ndarray]:
    """``buildLpyr``: the Laplacian pyramid, finest band first, the coarsest (residual) image last.

    Each band is ``image - expand(reduce(image))`` at its level.
    """
    bands = []
    for _ in range(levels - 1):
        low = laplacian_reduce(image)
        bands.append(image - laplacian_expand(low, image.shape[-3:-1]))
        image = low
    bands.append(image)
    return bands


def collapse_laplacian(bands: list[np.ndarray]) -> np.ndarray:
    """``reconLpyr``: from the coarsest band to the finest, expand and add the band."""
    image = bands[-1]
    for band in reversed(bands[:-1]):
        image = laplacian_expand(image, band.shape[-3:-1]) + band
    return image
