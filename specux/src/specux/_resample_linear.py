"""The downsamplers of :mod:`specux._resample` as explicit linear maps, and their adjoints (for gradients).

A downsampler by ``f`` is linear and shift-invariant with period ``f`` away from the start of the signal, so
(before its ``sqrt(f)`` scaling) it is

    y[m] = sum_j t[j] x[f m - k0 - j] + sum_n H[m, n] x[n]     for m < count(n_in), else 0,

with ``x`` zero outside ``[0, n_in)``: a filter ``t`` at offset ``k0``, a small correction ``H`` of the first
outputs by the first inputs, and a count of outputs. For ``"polyphase"`` (scipy's ``resample_poly``) the taps
are scipy's Kaiser-windowed design, ``H`` is empty and the count is ``ceil(n_in / f)``. For the soxr qualities
everything is measured from libsoxr itself:

- the taps are the responses to one impulse per phase, far from the ends;
- libsoxr decimates by 4 or more in stages whose start-up is not one filter: over about the first 90 outputs
  the first ~4 f inputs weigh differently, and ``H`` holds that difference (responses to impulses at the first
  inputs, minus the filter's); by 2 it is nil;
- libsoxr returns ``round(n_in / f)`` samples (halves up), which the caller pads with zeros to
  ``ceil(n_in / f)``;
- its output on a signal equals its output on the signal followed by zeros, cut to length, so one measured
  form serves every length.

The tests check the form against the resamplers on every length up to 40 and on long signals: agreement is at
libsoxr's own precision (about 2.5e-7 of the peak for ``"soxr_hq"``, which computes in single precision).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.signal

from specux._resample import SOXR_QUALITIES

#: rows and columns (in units of the factor) of the measured start-up correction; libsoxr's reaches about 93
#: rows and 4 f columns (measured for factors 4 to 64)
_HEAD_ROWS = 128
_HEAD_COLUMNS_PER_FACTOR = 8
#: beyond this fraction of the peak, measured taps are libsoxr's own rounding, not its filter
_TAP_FLOOR = 1e-9


@dataclass(frozen=True)
class LinearForm:
    """One downsampler written out (see the module docstring)."""

    factor: int
    taps: np.ndarray
    k0: int
    head: np.ndarray  # (rows, columns): correction of the first outputs by the first inputs
    rounds: bool  # True: round(n_in / factor) outputs (libsoxr); False: ceil (scipy)

    def count(self, n_in: int) -> int:
        """Outputs the resampler itself computes for ``n_in`` inputs (the rest are zero padding)."""
        f = self.factor
        return (2 * n_in + f) // (2 * f) if self.rounds else -(-n_in // f)


@functools.cache
def linear_form(factor: int, res_type: str) -> LinearForm:
    """The :class:`LinearForm` of ``downsample(., factor, res_type)`` (computed once per process)."""
    if res_type == "polyphase":
        half_len = 10 * factor
        h = scipy.signal.firwin(2 * half_len + 1, 1.0 / factor, window=("kaiser", 5.0))
        n_pre_pad = factor - half_len % factor
        skip = (half_len + n_pre_pad) // factor
        taps = np.concatenate([np.zeros(n_pre_pad), h])
        return LinearForm(factor, taps, -factor * skip, np.zeros((0, 0)), rounds=False)
    if res_type not in SOXR_QUALITIES:
        raise ValueError(f"no linear form for res_type={res_type!r}")
    taps, k0 = _soxr_taps(factor, res_type)
    return LinearForm(factor, taps, k0, _soxr_head(factor, res_type, taps, k0), rounds=True)


def _soxr(x: np.ndarray, factor: int, quality: str) -> np.ndarray:
    """libsoxr on the columns of ``x`` (samples, channels), in chunks of channels to bound the memory."""
    import soxr

    step = max(1, (1 << 22) // x.shape[0])
    parts = [
        soxr.resample(x[:, i : i + step], factor, 1, quality=quality) for i in range(0, x.shape[1], step)
    ]
    return np.concatenate(parts, axis=1)


def _soxr_taps(factor: int, quality: str) -> tuple[np.ndarray, int]:
    # an impulse at p + r gives y[m] = K[factor m - p - r]: one impulse per phase r yields every tap once
    p = max(8192, 400 * factor)
    x = np.zeros((2 * p, factor))
    x[p + np.arange(factor), np.arange(factor)] = 1.0
    y = _soxr(x, factor, quality)
    taps = np.zeros(2 * p + factor)
    k = factor * np.arange(y.shape[0])[:, None] - p - np.arange(factor)[None, :]
    taps[k + p + factor - 1] = y
    keep = np.flatnonzero(np.abs(taps) > _TAP_FLOOR * np.abs(taps).max())
    return taps[keep[0] : keep[-1] + 1].copy(), int(keep[0]) - p - factor + 1


def _soxr_head(factor: int, quality: str, taps: np.ndarray, k0: int) -> np.ndarray:
    rows, cols = _HEAD_ROWS, _HEAD_COLUMNS_PER_FACTOR * factor
    n = factor * (rows + 1) + cols - k0
    x = np.zeros((n, cols))
    x[np.arange(cols), np.arange(cols)] = 1.0
    measured = _soxr(x, factor, quality)[:rows]  # (rows, cols): row m, column n = d y[m] / d x[n]
    j = factor * np.arange(rows)[:, None] - k0 - np.arange(cols)[None, :]
    inside = (j >= 0) & (j < taps.size)
    model = np.where(inside, taps[np.clip(j, 0, taps.size - 1)], 0.0)
    head = measured - model
    if np.abs(head).max() <= 1e-6 * np.abs(taps).max():
        # no start-up transient (factor 2): what is left is rounding
        return np.zeros((0, 0))
    return head


#: for NaN and inf, a libsoxr filter ends where its taps fall below this fraction of the peak: below it the
#: measured taps of the single-precision qualities are libsoxr's float32 rounding, spread over an FFT block
#: (for "soxr_hq" halving the filter spans +-191 inputs at 1e-7 and the rounding +-1600 at 1e-8), and the
#: double-precision "soxr_vhq" filter's tail (+-240 to +-263 inputs) weighs less than its float32 results'
#: rounding
_REACH_FLOOR = 1e-7


@functools.cache
def _reach(factor: int, res_type: str) -> tuple[int, int, np.ndarray]:
    """(lo, hi, head): output m reaches input n when lo <= factor m - n <= hi, and for the first outputs
    where ``head[m, n]`` (bool, rows x columns of the start-up correction) is set."""
    form = linear_form(factor, res_type)
    taps = np.abs(form.taps)
    floor = 0.0 if res_type == "polyphase" else _REACH_FLOOR * taps.max()
    keep = np.flatnonzero(taps > floor)
    head = np.abs(form.head) > max(floor, _TAP_FLOOR * taps.max())
    return form.k0 + int(keep[0]), form.k0 + int(keep[-1]), head


def nonfinite_reach(bad: np.ndarray, factor: int, res_type: str) -> np.ndarray:
    """Which outputs of ``downsample(., factor, res_type)`` reach a flagged input.

    ``bad`` (rows, n_in) bool -> (rows, ceil(n_in / factor)) bool: output m is flagged when the resampler's
    filter (its taps above 1e-7 of the peak for the soxr qualities, all of them for ``"polyphase"``) or its
    start-up correction reaches a flagged input. Outputs past the
    resampler's count are padding and never flagged.
    """
    lo, hi, head = _reach(factor, res_type)
    rows, n_in = bad.shape
    n_out = -(-n_in // factor)
    count = min(n_out, linear_form(factor, res_type).count(n_in))
    marks = np.zeros((rows, n_out + 1), np.int64)
    r, n = np.nonzero(bad)
    # output m reaches n when factor m - hi <= n ... : m in [ceil((n + lo) / f), floor((n + hi) / f)]
    first = np.clip(-(-(n + lo) // factor), 0, count)
    last = np.clip((n + hi) // factor + 1, 0, count)
    np.add.at(marks, (r, first), 1)
    np.add.at(marks, (r, last), -1)
    out = np.cumsum(marks, axis=1)[:, :n_out] > 0
    if head.size:
        cols = min(head.shape[1], n_in)
        hr = min(head.shape[0], count)
        out[:, :hr] |= (bad[:, :cols].astype(np.int64) @ head[:hr, :cols].T.astype(np.int64)) > 0
    return out


def downsample_adjoint(g: np.ndarray, n_in: int, factor: int, res_type: str) -> np.ndarray:
    """Adjoint of ``specux._resample.downsample(., factor, res_type)`` on rows of ``n_in`` samples.

    ``g`` (rows, ceil(n_in / factor)) -> (rows, n_in), same dtype. The filter part's adjoint is ``g``
    upsampled by ``factor`` and correlated with the taps; the head part's is ``H^T g``.
    """
    form = linear_form(factor, res_type)
    dtype = g.dtype
    rows = g.shape[0]
    g = g[:, : form.count(n_in)]  # outputs past the resampler's count are padding, independent of x
    up = np.zeros((rows, factor * g.shape[1]), dtype)
    up[:, ::factor] = g
    taps = form.taps
    # full convolution with the reversed taps: entry n + k0 + len(taps) - 1 is sum_i up[i] t[i - k0 - n]
    z = scipy.signal.oaconvolve(up, taps[::-1].astype(dtype)[None, :], axes=-1)
    start = form.k0 + taps.size - 1
    out = np.zeros((rows, n_in), dtype)
    lo, hi = max(0, -start), min(n_in, z.shape[-1] - start)
    if hi > lo:
        out[:, lo:hi] = z[:, start + lo : start + hi]
    if form.head.size:
        r = min(form.head.shape[0], g.shape[1])
        c = min(form.head.shape[1], n_in)
        out[:, :c] += (g[:, :r] @ form.head[:r, :c].astype(dtype)).astype(dtype, copy=False)
    return out * dtype.type(np.sqrt(factor))
