"""Colour conversion of the reference: RGB <-> YIQ (NTSC) and the MIT output handling.

Arrays have the colour channel last: (..., 3).
"""

from __future__ import annotations

import numpy as np

#: RGB -> YIQ (NTSC), rows Y, I, Q.
RGB_TO_YIQ = np.array(
    [
        [0.299, 0.587, 0.114],
        [0.596, -0.274, -0.322],
        [0.211, -0.523, 0.312],
    ]
)

#: YIQ -> RGB rounded to 5 decimals, as Octave's ``ntsc2rgb`` uses it (``compat="mit"``).
YIQ_TO_RGB_MIT = np.array(
    [
        [1.0, 0.95617, 0.62143],
        [1.0, -0.27269, -0.64681],
        [1.0, -1.10374, 1.70062],
    ]
)

#: The exact inverse of :data:`RGB_TO_YIQ` (default semantics).
YIQ_TO_RGB_EXACT = np.linalg.inv(RGB_TO_YIQ)


def _apply_matrix(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    # Written out term by term so the summation order is fixed (a BLAS call may reorder or fuse it).
    x = np.asarray(x, dtype=np.float64)
    planes = [np.ascontiguousarray(x[..., k]) for k in range(3)]
    out = np.empty(x.shape, dtype=np.float64)
    for row in range(3):
        acc = m[row, 0] * planes[0]
        acc += m[row, 1] * planes[1]
        acc += m[row, 2] * planes[2]
        out[..., row] = acc
    return out


def rgb_to_yiq(rgb: np.ndarray) -> np.ndarray:
    """Convert 8-bit RGB to float64 YIQ.

    Parameters
    ----------
    rgb : ndarray, uint8, shape (..., 3)
        RGB bytes; they are scaled to [0, 1] by ``x / 255`` first (MATLAB's ``im2double``).

    Returns
    -------
    ndarray, float64, shape (..., 3)
        Y, I, Q.
    """
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8:
        raise TypeError(f"rgb must be uint8, got {rgb.dtype}")
    return _apply_matrix(RGB_TO_YIQ, rgb.astype(np.float64) / 255.0)




def yiq_to_rgb(yiq: np.ndarray, *, mit: bool) -> np.ndarray:
    """Convert YIQ to RGB (float64, not clamped).

    ``mit=True`` uses the 5-decimal matrix of Octave's ``ntsc2rgb``, ``mit=False`` the exact inverse.
    """
    return _apply_matrix(YIQ_TO_RGB_MIT if mit else YIQ_TO_RGB_EXACT, yiq)


def fit_to_unit_range(rgb: np.ndarray) -> np.ndarray:
    """The MIT output handling: negative values become 0, then any pixel with a channel above 1 is
    divided by its largest channel (which keeps the hue). Shape (..., 3), float64."""
    rgb = np.maximum(np.asarray(rgb, dtype=np.float64), 0.0)
    peak = np.maximum(np.maximum(rgb[..., 0], rgb[..., 1]), rgb[..., 2])
    over = peak > 1.0
    if over.any():
        rgb[over] /= peak[over][:, None]
    return rgb


def to_uint8(x: np.ndarray) -> np.ndarray:
    """``uint8(x * 255)`` as MATLAB does it: round half away from zero, saturate to [0, 255].

    Parameters
    ----------
    x : ndarray, float64
        Values in [0, 1] (others saturate).
    """
    v = np.asarray(x, dtype=np.float64) * 255.0
    np.clip(v, 0.0, 255.0, out=v)
    whole = np.floor(v)
    v -= whole  # v - floor(v) is exact in float64, so the tie test is exact (floor(v + 0.5) is not)
    whole += v >= 0.5
    return whole.astype(np.uint8)


def yiq_to_rgb_uint8(yiq: np.ndarray, *, mit: bool) -> np.ndarray:
    """YIQ to 8-bit RGB with the MIT output handling: matrix, :func:`fit_to_unit_range`, :func:`to_uint8`.

    Parameters
    ----------
    yiq : ndarray, float, shape (..., 3)
    mit : bool
        The 5-decimal inverse matrix (``compat="mit"``) instead of the exact one.

    Returns
    -------
    ndarray, uint8, shape (..., 3)
    """
    return to_uint8(fit_to_unit_range(yiq_to_rgb(yiq, mit=mit)))
