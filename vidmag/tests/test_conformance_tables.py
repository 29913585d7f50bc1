"""The host-side tables the accelerated backends run on agree with the reference exactly (float64).

``spatial_taps`` turns each spatial filter into (index, weight) tables and ``bandpass_basis`` the ideal
band-pass into a projection; both are pure NumPy, so they are checked here to float64 rounding, on every size
class that has its own border case.
"""

from __future__ import annotations

import numpy as np
import pytest

from vidmag._reference import pyramid, resize, temporal
from vidmag.backend import spatial_taps
from vidmag.backend.bandpass_basis import bandpass_basis, kept_bins


def _apply(taps: spatial_taps.Taps, x: np.ndarray) -> np.ndarray:
    """Apply a table along axis 0 of x."""
    return np.einsum("ok,ok...->o...", taps.weight, x[taps.index])


@pytest.mark.parametrize("n", [3, 4, 5, 6, 9, 10, 17, 40, 41])
def test_reduce_tables(n):
    x = np.random.default_rng(n).standard_normal((n, 4))
    for kind, kernel in (("laplacian", pyramid.BINOM5), ("gaussian", pyramid.GAUSS5)):
        expected = pyramid._correlate_keep_even(x, kernel, 0)
        np.testing.assert_allclose(_apply(spatial_taps.reduce(n, kind), x), expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("n", [5, 6, 9, 10, 11, 20, 40, 41])
def test_expand_tables_include_the_dropped_tap_at_five(n):
    coarse = np.random.default_rng(n).standard_normal(((n + 1) // 2, 4))
    expected = pyramid._upsample_correlate(coarse, n, 0)
    np.testing.assert_allclose(_apply(spatial_taps.expand(len(coarse), n), coarse), expected, atol=1e-14)


def test_expand_rejects_sizes_that_do_not_pair():
    with pytest.raises(ValueError, match="ceil"):
        spatial_taps.expand(4, 10)


@pytest.mark.parametrize(("n", "level"), [(592, 4), (37, 2), (11, 3)])
def test_composed_gaussian_down(n, level):
    x = np.random.default_rng(level).standard_normal((n, 3))
    expected = x
    for _ in range(level):
        expected = pyramid._correlate_keep_even(expected, pyramid.GAUSS5, 0)
    np.testing.assert_allclose(_apply(spatial_taps.gaussian_down(n, level), x), expected, atol=1e-13)


@pytest.mark.parametrize(("n_in", "n_out"), [(37, 592), (5, 80), (3, 11), (6, 6)])
def test_bicubic_tables(n_in, n_out):
    x = np.random.default_rng(n_out).standard_normal((n_in, 3))
    expected = resize._resize_axis(x, n_out, 0)
    np.testing.assert_allclose(_apply(spatial_taps.bicubic(n_in, n_out), x), expected, atol=1e-14)


@pytest.mark.parametrize("mit", [False, True])
@pytest.mark.parametrize("band", [(50 / 60, 1.0), (0.0, 3.0), (0.4, 15.0), (3.0, 20.0), (0.0, 15.0)])
@pytest.mark.parametrize("n", [1, 2, 40, 41, 301])
def test_bandpass_projection_equals_the_fft_filter(n, band, mit):
    x = 5.0 + np.random.default_rng(n).standard_normal((n, 6))
    basis = bandpass_basis(n, *band, 30.0, mit)
    expected = temporal.ideal_bandpass(x, *band, 30.0, mit=mit)
    np.testing.assert_allclose(basis.apply(x), expected, rtol=0, atol=1e-12)
    # no more columns than needed: never more than the kept bins, nor the dropped ones, need
    kept = kept_bins(n, *band, 30.0, mit=mit).size
    assert basis.analysis.shape[1] <= 2 * min(kept, n - kept) + 2
