"""Integer-factor upsampling for the inverse constant-Q transform, and its adjoint (for gradients).

``librosa.icqt`` brings each octave's signal back to the full rate with ``librosa.resample(y, orig_sr=1,
target_sr=factor, res_type=..., scale=False, fix=False)``; :func:`upsample` computes the same numbers:

``"soxr_*"``
    ``soxr.resample(row, 1, factor, quality)`` row by row (libsoxr returns ``factor * n`` samples).
``"polyphase"``
    ``scipy.signal.resample_poly(rows, factor, 1)`` (``factor * n`` samples).

Both are linear, and (as the downsamplers of :mod:`specux._resample_linear`) shift-invariant with period
``factor`` away from the start of the signal: ``y[j] = sum_m x[m] K[j - factor m - k0] + (H x)[j]``, with taps
``K`` at offset ``k0`` measured from the resampler's response to one impulse far from the ends, and a start-up
correction ``H`` of the first outputs: libsoxr upsamples by 8 or more in stages whose start is not one filter
(the first ~100 outputs), which ``H`` holds as measured responses minus the filter's; by 2 and 4, and for
scipy, it is nil. The end behaves as zero padding. :func:`upsample_adjoint` is the transpose of that form.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.signal

#: outputs of the measured start-up correction; libsoxr's reaches about 110 outputs (factors 8 to 64)
_HEAD_ROWS = 256
#: beyond this fraction of the peak, measured taps are libsoxr's own rounding, not its filter
_TAP_FLOOR = 1e-9


def upsample(y: np.ndarray, factor: int, res_type: str) -> np.ndarray:
    """Rows ``y`` (batch, n), float32 / float64, from rate 1 to rate ``factor`` -> (batch, factor * n), same
    dtype (librosa's ``resample(..., scale=False, fix=False)``)."""
    if factor == 1:
        return y
    if res_type == "polyphase":
        out = scipy.signal.resample_poly(y, factor, 1, axis=-1)
        return np.asarray(out, dtype=y.dtype)
    import soxr

    rows = [soxr.resample(np.ascontiguousarray(r), 1, factor, quality=res_type) for r in y]
    if not rows:
        return np.zeros((0, factor * y.shape[-1]), y.dtype)
    return np.stack(rows).astype(y.dtype, copy=False)


@dataclass(frozen=True)
class UpsampleForm:
    """One upsampler written out (see the module docstring)."""

    factor: int
    taps: np.ndarray
    k0: int
    head: np.ndarray  # (rows, columns): correction of the first outputs by the first inputs


def _impulses(factor: int, res_type: str, n_in: int, positions: np.ndarray) -> np.ndarray:
    """The upsampler's outputs (factor * n_in, len(positions)) for one unit impulse per column."""
    x = np.zeros((positions.size, n_in))
    x[np.arange(positions.size), positions] = 1.0
    if res_type == "polyphase":
        return scipy.signal.resample_poly(x, factor, 1, axis=-1).T
    import soxr

    step = max(1, (1 << 21) // (factor * n_in))
    parts = [
        soxr.resample(x[i : i + step].T.copy(), 1, factor, quality=res_type) for i in range(0, len(x), step)
    ]
    return np.concatenate(parts, axis=1)


@functools.cache
def upsample_form(factor: int, res_type: str) -> UpsampleForm:
    """The :class:`UpsampleForm` of ``upsample(., factor, res_type)`` (measured once per process)."""
    p = max(4096, 2000 + 2 * factor)
    y = _impulses(factor, res_type, 2 * p, np.array([p]))[:, 0]
    keep = np.flatnonzero(np.abs(y) > _TAP_FLOOR * np.abs(y).max())
    taps = y[keep[0] : keep[-1] + 1].copy()
    k0 = int(keep[0]) - factor * p
    head = np.zeros((0, 0))
    if res_type != "polyphase" and factor >= 8:
        # every input whose filter reaches the first _HEAD_ROWS outputs
        cols = (_HEAD_ROWS - k0) // factor + 1
        measured = _impulses(factor, res_type, cols, np.arange(cols))[:_HEAD_ROWS]
        j = np.arange(_HEAD_ROWS)[:, None] - factor * np.arange(cols)[None, :] - k0
        inside = (j >= 0) & (j < taps.size)
        model = np.where(inside, taps[np.clip(j, 0, taps.size - 1)], 0.0)
        head = measured - model
    return UpsampleForm(factor, taps, k0, head)


def upsample_adjoint(g: np.ndarray, n_in: int, factor: int, res_type: str) -> np.ndarray:
    """Adjoint of :func:`upsample` on rows of ``n_in`` samples: ``g`` (rows, factor * n_in) -> (rows, n_in),
    same dtype: ``x_g[m] = sum_j g[j] K[j - factor m - k0]`` plus ``H^T g``."""
    if factor == 1:
        return g
    form = upsample_form(factor, res_type)
    dtype = g.dtype
    taps = form.taps.astype(dtype)
    # the correlation c[s] = sum_i K[i] g[s + i] is entry s + len(K) - 1 of the convolution with the
    # reversed taps; the adjoint reads it at s = factor m + k0
    z = scipy.signal.oaconvolve(g, taps[::-1][None, :], axes=-1)
    idx = factor * np.arange(n_in) + form.k0 + taps.size - 1
    ok = (idx >= 0) & (idx < z.shape[-1])
    out = np.zeros((g.shape[0], n_in), dtype)
    out[:, ok] = z[:, idx[ok]]
    if form.head.size:
        r = min(form.head.shape[0], g.shape[1])
        c = min(form.head.shape[1], n_in)
        out[:, :c] += (g[:, :r] @ form.head[:r, :c].astype(dtype)).astype(dtype, copy=False)
    return out


def _model_rows(taps: np.ndarray, k0: int, factor: int, rows: int, cols: int) -> np.ndarray:
    """The first ``rows`` outputs' weights (rows, cols) on the first ``cols`` inputs of the plain FIR form."""
    j = np.arange(rows)[:, None] - factor * np.arange(cols)[None, :] - k0
    inside = (j >= 0) & (j < taps.size)
    return np.where(inside, taps[np.clip(j, 0, taps.size - 1)], 0.0)


@functools.cache
def trimmed_form(factor: int, res_type: str, floor: float) -> UpsampleForm:
    """:func:`upsample_form` with its taps cut to the span above ``floor`` times their peak (the tails below
    are libsoxr's own float32 rounding, about 1e-8 of the peak, at up to ten times the filter's length) and
    its start-up correction ``head`` rewritten for the cut taps, so that ``head`` plus the cut filter's first
    rows are the measured first rows again (for factors of 8 and more; by 2 and 4 ``head`` stays nil)."""
    form = upsample_form(factor, res_type)
    t = np.abs(form.taps)
    keep = np.flatnonzero(t > floor * t.max())
    taps = form.taps[keep[0] : keep[-1] + 1].copy()
    k0 = form.k0 + int(keep[0])
    head = form.head
    if head.size:
        rows, cols = head.shape
        head = (
            head
            + _model_rows(form.taps, form.k0, factor, rows, cols)
            - _model_rows(taps, k0, factor, rows, cols)
        )
    return UpsampleForm(factor, taps, k0, head)
