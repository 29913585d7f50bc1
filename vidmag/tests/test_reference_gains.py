"""Per-level gains of the Laplacian pipelines against SPEC-vidmag.md's examples."""

from __future__ import annotations

import numpy as np

from vidmag._reference.gains import level_gains
from vidmag._reference.pyramid import pyramid_levels


def test_baby_gains():
    levels = pyramid_levels(544, 960)
    got = level_gains(544, 960, levels, alpha=10, lambda_c=16)
    np.testing.assert_allclose(got, [0, 5.9021, 10, 10, 10, 10, 10, 0], rtol=1e-4, atol=0)


def test_face2_gains():
    levels = pyramid_levels(718, 570)
    got = level_gains(718, 570, levels, alpha=20, lambda_c=80)
    np.testing.assert_allclose(got, [0, 0.50673, 3.0135, 8.0269, 18.054, 20, 20, 0], rtol=1e-4, atol=0)


def test_gain_can_be_negative_when_the_wavelength_is_below_cutoff():
    got = level_gains(64, 48, pyramid_levels(64, 48), alpha=10, lambda_c=100)
    assert got[0] == 0 and got[-1] == 0
    assert min(got[1:-1]) < 0
