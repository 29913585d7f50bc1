"""The complex steerable pyramid and phase-based magnification of Wadhwa et al. (SIGGRAPH 2013): the slow
reference.

The pyramid is built in the frequency domain, as the MIT phase code's ``getFilters`` describes it (facts, our
code): on the centred polar grid of an h x w spectrum (radius 1 at half the sampling rate), radial masks from
``getRadialMaskPair`` (``himask = |cos(clip(log2 r - log2 r_k, -twidth, 0) * pi / (2 twidth))|``, ``lomask =
sqrt(1 - himask^2)``) at radii ``r_k = 2^0, 2^-step, ..., 2^-ht`` (step 1 for an octave pyramid, twidth 1;
step 0.5 for half-octave, twidth 0.75), ``ht = floor(log2(min(h, w))) - 2``; each band is a radial ring times
one of ``orientations`` analytic angular masks ``2 sqrt(c) cos(theta - theta_b)^(K-1)`` on one half plane,
halved; the first filter is the high-pass residual, the last the low-pass residual. The filters form a tight
frame (high-pass^2 + low-pass^2 + the sum over bands of 2 |F|^2, real part taken, is 1), so a pyramid with
nothing changed collapses to its input. Each band is computed on the smallest centred crop of the spectrum
that holds its filter (``sigma`` of the smoothing is in pixels of that crop, as in the MIT code).

Magnification, per band coefficient: the phase relative to frame 0 (wrapped to [-pi, pi), the MIT code's
``mod(pi + phase - phase_0, 2 pi) - pi``), band-passed in time over the clip, smoothed with an
amplitude-weighted Gaussian (circular borders, like the spectrum), times alpha, applied as ``exp(i alpha
dphi)`` to the band; with ``attenuate_other_freq`` the band's phase is first reset to frame 0's (so motion
outside the pass band is removed, and motion in it comes out alpha times, not 1 + alpha times, as large).
Luminance only (Y of YIQ).

Temporal filter: by default the unit-gain ideal band-pass (``fl <= |f| <= fh``, :func:`ideal_bandpass` of the
linear pipelines' default semantics); ``mit=True`` takes the MIT phase code's ``FIRWindowBP``: a
Hamming-window FIR of order T (``fir1(T, [fl, fh] / (fs / 2))``, its last tap dropped) applied circularly
through the FFT, and drops the high-pass residual as ``phaseAmplify`` does. Both pass the band with gain about
1: unlike the linear MIT code's ideal filter (gain 0.5, which is why the linear presets halve the paper's
alpha), the phase code's alpha is taken as it is under both semantics. """

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from vidmag._reference.colour import rgb_to_yiq, yiq_to_rgb_uint8
from vidmag._reference.riesz import amplitude_weighted_blur
from vidmag._reference.temporal import ideal_bandpass


def max_height(h: int, w: int) -> int:
    """``maxSCFpyrHt``: floor(log2(min(h, w))) - 2, the number of octaves below the top."""
    return math.floor(math.log2(min(h, w))) - 2


class Band(NamedTuple):
    """One filter of the pyramid: its values on the crop ``rows`` x ``cols`` of the centred spectrum."""

    filter: np.ndarray
    rows: slice
    cols: slice


def _polar_grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """(angle, radius) of the centred (fftshifted) spectrum; radius 1 at half the sampling rate."""
    cy, cx = h // 2, w // 2
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    y, x = (yy - cy) / (h / 2), (xx - cx) / (w / 2)
    radius = np.hypot(x, y)
    radius[cy, cx] = radius[cy, cx - 1] if w > 1 else 1.0  # log2(0) avoided, as the MIT grid does
    return np.arctan2(y, x), radius


def _radial_pair(r: float, radius: np.ndarray, twidth: float) -> tuple[np.ndarray, np.ndarray]:
    log_rad = np.clip(np.log2(radius) - math.log2(r), -twidth, 0.0)
    high = np.abs(np.cos(log_rad * math.pi / (2.0 * twidth)))
    return high, np.sqrt(1.0 - high**2)


def _angle_mask(b: int, orientations: int, angle: np.ndarray) -> np.ndarray:
    order = orientations - 1
    const = 2.0 ** (2 * order) * math.factorial(order) ** 2 / (orientations * math.factorial(2 * order))
    a = np.mod(math.pi + angle - math.pi * b / orientations, 2 * math.pi) - math.pi
    return 2.0 * math.sqrt(const) * np.cos(a) ** order * (np.abs(a) < math.pi / 2)


def _crop(mask: np.ndarray) -> tuple[slice, slice]:
    """The smallest crop centred on the zero frequency that holds every non-zero value (odd sides), or the
    whole spectrum when that does not fit."""
    h, w = mask.shape
    out = []
    for axis, n in ((1, h), (0, w)):
        used = np.nonzero(mask.any(axis=axis))[0]
        centre = n // 2
        half = int(max(centre - used.min(), used.max() - centre))
        out.append(slice(centre - half, centre + half + 1) if centre - half >= 0 and centre + half < n
                   else slice(0, n))
    return out[0], out[1]


def filter_bank(h: int, w: int, orientations: int, bands_per_octave: int) -> tuple[Band, ...]:
    """The pyramid's filters: (high-pass residual, the bands coarse-wards with ``orientations`` each, low-pass
    residual), each cropped (:class:`Band`), float64, built anew on each call: for callers that keep only part
    of them (their sizes, or a float32 copy on a device) and need not hold the float64 bank (26 MB at
    960 x 544 with 4 orientations) in :func:`filters`' cache for the process's life."""
    step, twidth = (1.0, 1.0) if bands_per_octave == 1 else (0.5, 0.75)
    ht = max_height(h, w)
    radii = 2.0 ** -np.arange(0.0, ht + step / 2, step)
    angle, radius = _polar_grid(h, w)
    high, low_prev = _radial_pair(radii[0], radius, twidth)
    bands = [_cropped(high)]
    for r in radii[1:]:
        high, low = _radial_pair(r, radius, twidth)
        ring = high * low_prev
        bands.extend(_cropped(ring * _angle_mask(b, orientations, angle) / 2.0) for b in range(orientations))
        low_prev = low
    bands.append(_cropped(low_prev))
    return tuple(bands)


#: :func:`filter_bank`, memoised: the references call it once per clip and the cpu routes on both passes.
filters = lru_cache(maxsize=16)(filter_bank)


def _cropped(mask: np.ndarray) -> Band:
    """``mask`` on its crop (:func:`_crop`), copied: a view would keep the whole h x w mask alive in
    :func:`filters`' cache (30 of them, 120 MB, at 960 x 544 with 4 orientations)."""
    rows, cols = _crop(mask)
    return Band(mask[rows, cols].copy(), rows, cols)


def spectrum(luma: np.ndarray) -> np.ndarray:
    """The centred spectrum of an image (h, w)."""
    return np.fft.fftshift(np.fft.fft2(luma))


def build_band(spec: np.ndarray, band: Band) -> np.ndarray:
    """The complex band (on its crop's grid) of a centred spectrum."""
    return np.fft.ifft2(np.fft.ifftshift(band.filter * spec[band.rows, band.cols]))


def add_band(out: np.ndarray, coefficients: np.ndarray, band: Band) -> None:
    """Add a (modified) complex band's contribution, ``2 F * spectrum``, into the centred spectrum ``out``."""
    out[band.rows, band.cols] += 2.0 * band.filter * np.fft.fftshift(np.fft.fft2(coefficients))


def add_residual(out: np.ndarray, spec: np.ndarray, band: Band) -> None:
    """Add a real residual (high- or low-pass) unchanged: ``F^2 * spectrum``."""
    out[band.rows, band.cols] += band.filter**2 * spec[band.rows, band.cols]


def collapse(out: np.ndarray) -> np.ndarray:
    """The image of a centred spectrum (real part)."""
    return np.real(np.fft.ifft2(np.fft.ifftshift(out)))


def fir_window_bandpass(x: np.ndarray, fl: float, fh: float, fs: float) -> np.ndarray:
    """The MIT phase code's ``FIRWindowBP`` along axis 0: ``fir1(n, [fl fh] / (fs / 2))`` (Hamming window,
    n + 1 taps, unit gain at the band's centre) with its last tap dropped, applied circularly by FFT, real
    part.

    Needs 0 < fl < fh < fs / 2.
    """
    from scipy.signal import firwin

    n = x.shape[0]
    taps = firwin(n + 1, [fl / (fs / 2.0), fh / (fs / 2.0)], pass_zero=False, window="hamming")[:n]
    transfer = np.fft.fft(np.fft.ifftshift(taps)).reshape((n,) + (1,) * (x.ndim - 1))
    return np.real(np.fft.ifft(np.fft.fft(x, axis=0) * transfer, axis=0))


def steerable_magnify(
    frames: np.ndarray,
    *,
    fs: float,
    alpha: float,
    fl: float,
    fh: float,
    sigma: float,
    orientations: int,
    bands_per_octave: int,
    attenuate_other_freq: bool,
    mit: bool = False,
) -> np.ndarray:
    """steerable_ideal on a whole clip (T, H, W, 3) uint8 -> (T, H, W, 3) uint8. Parameters assumed valid."""
    frames = np.asarray(frames)
    T, H, W = frames.shape[:3]
    yiq = [rgb_to_yiq(f) for f in frames]
    specs = [spectrum(f[..., 0]) for f in yiq]
    bank = filters(H, W, orientations, bands_per_octave)
    out = np.zeros((T, H, W), dtype=np.complex128)
    for band in bank[1:-1]:
        coefficients = np.stack([build_band(s, band) for s in specs])
        reference = np.angle(coefficients[0])
        delta = np.mod(math.pi + np.angle(coefficients) - reference, 2 * math.pi) - math.pi
        if mit:
            delta = fir_window_bandpass(delta, fl, fh, fs)
        else:
            delta = ideal_bandpass(delta, fl, fh, fs, mit=False)
        for t in range(T):
            amplitude = np.abs(coefficients[t])
            phase = alpha * amplitude_weighted_blur(delta[t], amplitude, sigma, mode="wrap")
            base = amplitude * np.exp(1j * reference) if attenuate_other_freq else coefficients[t]
            add_band(out[t], np.exp(1j * phase) * base, band)
    result = np.empty(frames.shape, dtype=np.uint8)
    for t in range(T):
        add_residual(out[t], specs[t], bank[-1])
        if not mit:
            add_residual(out[t], specs[t], bank[0])
        frame = yiq[t].copy()
        frame[..., 0] = collapse(out[t])
        result[t] = yiq_to_rgb_uint8(frame, mit=mit)
    return result
