"""The ideal temporal band-pass as a projection onto the kept DFT bins (pure NumPy, float64 tables).

The reference filters by FFT: keep a set of bins, invert, take the real part. For a real series x of n samples
that is the linear map ``out[t] = (1 / n) sum_{k kept} sum_s x[s] cos(2 pi k (t - s) / n)``, and a bin k and
its mirror n - k contribute the same term. So with, for each distinct kept frequency ``k' = min(k, n - k)``,
the analysis columns ``cos(2 pi k' s / n)``, ``sin(2 pi k' s / n)`` and synthesis columns weighted by
``(number of kept bins among k', n - k') / n``, the filter is two small matrix products: ``coefficients =
analysis^T x`` then ``out = synthesis coefficients``. A device runs that with two plain kernels (or two
matmuls), needs no FFT, and costs about 4 n m per series for m kept frequencies (2 for face's preset). When
more bins are kept than dropped, the same sum over all bins is the identity, so the filter is ``x`` minus the
projection onto the dropped bins, which is the cheaper form.

Two more exact rewrites keep float32 accurate: every series is shifted by its first sample x0 before the
products (a constant passes only through bin 0, so ``out = ... + x0`` when bin 0 is kept, ``+ 0`` when not),
which removes the large DC part from the sums.

Which bins are kept follows ``vidmag._reference.temporal.ideal_bandpass`` exactly (the same comparisons on
the same float64 frequencies).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

__all__ = ["BandpassBasis", "bandpass_basis", "kept_bins"]


class BandpassBasis(NamedTuple):
    """Tables of the projection for one clip length and band.

    With ``d = x - x[0]`` (each series shifted by its first sample), the band-pass of x of shape (n, ...) is
    ``identity * d + synthesis @ (analysis.T @ d) + keeps_dc * x[0]``.

    Attributes
    ----------
    analysis : ndarray, float64, shape (n, m)
    synthesis : ndarray, float64, shape (n, m)
        Negated when ``identity`` is 1 (the product is then the part taken away).
    identity : float
        1.0 when the tables project onto the dropped bins (more bins kept than dropped), else 0.0.
    keeps_dc : float
        1.0 when bin 0 is kept, else 0.0.
    """

    analysis: np.ndarray
    synthesis: np.ndarray
    identity: float
    keeps_dc: float

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The band-pass of ``x`` (n, ...) through these tables, in float64 (a check of the tables)."""
        x = np.asarray(x, dtype=np.float64)
        d = (x - x[:1]).reshape(x.shape[0], -1)
        out = (
            self.identity * d + self.synthesis @ (self.analysis.T @ d) + self.keeps_dc * x[:1].reshape(1, -1)
        )
        return out.reshape(x.shape)


def kept_bins(n: int, fl: float, fh: float, fs: float, *, mit: bool) -> np.ndarray:
    """The DFT bins (0 .. n - 1) the reference's ideal band-pass keeps, as a sorted int array."""
    if mit:
        freq = np.arange(n) / n * fs
        return np.flatnonzero((freq > fl) & (freq < fh))
    freq = np.arange(n // 2 + 1) / n * fs
    half = np.flatnonzero((freq >= fl) & (freq <= fh))
    mirrored = (n - half[(half > 0) & (2 * half != n)]) % n
    return np.unique(np.concatenate([half, mirrored]))


def _columns(bins: np.ndarray, n: int, sign: float) -> tuple[list, list]:
    folded = np.minimum(bins, n - bins)
    freqs, counts = np.unique(folded, return_counts=True)
    s = np.arange(n)
    cols_a, cols_s = [], []
    for k, count in zip(freqs, counts):
        # (k * s) mod n keeps the argument of cos / sin small, so the tables are exact to float64 rounding.
        angle = 2.0 * np.pi * ((int(k) * s) % n) / n
        cols_a.append(np.cos(angle))
        cols_s.append(np.cos(angle) * (sign * count / n))
        if 0 < k and 2 * k != n:  # sin vanishes at k = 0 and k = n / 2
            cols_a.append(np.sin(angle))
            cols_s.append(np.sin(angle) * (sign * count / n))
    return cols_a, cols_s


@lru_cache(maxsize=32)
def bandpass_basis(n: int, fl: float, fh: float, fs: float, mit: bool) -> BandpassBasis:
    """Projection tables of the ideal band-pass for ``n`` frames at ``fs`` Hz (see the module docstring)."""
    bins = kept_bins(n, fl, fh, fs, mit=mit)
    keeps_dc = 1.0 if (bins.size and bins[0] == 0) else 0.0
    cols_a, cols_s = _columns(bins, n, 1.0)
    identity = 0.0
    if len(cols_a) > n // 2:  # the dropped bins may need fewer columns
        other_a, other_s = _columns(np.setdiff1d(np.arange(n), bins), n, -1.0)
        if len(other_a) < len(cols_a):
            cols_a, cols_s, identity = other_a, other_s, 1.0
    if not cols_a:
        empty = np.zeros((n, 0))
        return BandpassBasis(empty, empty.copy(), identity, keeps_dc)
    return BandpassBasis(np.stack(cols_a, axis=1), np.stack(cols_s, axis=1), identity, keeps_dc)
