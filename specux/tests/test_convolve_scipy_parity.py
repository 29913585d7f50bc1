"""specux.fftconvolve against scipy.signal.fftconvolve and the direct-summation reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import specux
from specux._reference.convolve import fftconvolve as direct
from specux._spec.convolve import fftconvolve_validate

rng = np.random.default_rng(5)
MODES = ["full", "same", "valid"]


def _r(shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _c(shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


CASES = [
    ((100,), (7,), None),
    ((7,), (100,), None),  # "valid" swaps the inputs, as scipy does
    ((1,), (9,), None),
    ((3, 50), (1, 9), -1),  # broadcasting over the batch axis
    ((4, 1, 40), (1, 5, 11), 2),
    ((12, 13), (5, 4), None),  # 2-D
    ((6, 7, 8), (3, 7, 5), (0, 2)),
    ((6, 7, 8), (6, 1, 5), [2, 1]),
    ((30,), (30,), 0),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("s1,s2,axes", CASES, ids=str)
def test_real_and_complex_match_scipy(s1, s2, axes, mode, compare):
    for a, b in ((_r(s1), _r(s2)), (_c(s1), _r(s2)), (_c(s1), _c(s2))):
        want = scipy.signal.fftconvolve(a, b, mode=mode, axes=axes)
        got = specux.fftconvolve(a, b, mode=mode, axes=axes)
        assert got.shape == want.shape and got.dtype == want.dtype
        compare("fftconvolve", "scipy.signal", got, want)


@pytest.mark.parametrize("mode", MODES)
def test_matches_direct_reference(mode, compare):
    for s1, s2, axes in CASES[:6]:
        a, b = _c(s1), _c(s2)
        p = fftconvolve_validate(a, b, mode=mode, axes=axes)
        pair = (b, a) if p.swapped else (a, b)
        compare(
            "fftconvolve",
            "specux reference (direct sum)",
            specux.fftconvolve(a, b, mode, axes),
            direct(*pair, p),
        )


def test_float32_stays_float32(compare):
    a, b = _r((3, 400), np.float32), _r((3, 31), np.float32)
    got = specux.fftconvolve(a, b, "same", axes=-1)
    assert got.dtype == np.float32
    compare(
        "fftconvolve", "scipy.signal", got, scipy.signal.fftconvolve(a, b, "same", axes=-1), dtype="float32"
    )
    assert specux.fftconvolve(np.arange(5), np.ones(3)).dtype == np.float64


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(2, 64), torch.randn(2, 9)
    out = specux.fftconvolve(a, b, "valid", axes=1)
    assert isinstance(out, torch.Tensor) and out.shape == (2, 56)
    np.testing.assert_allclose(
        out.numpy(), scipy.signal.fftconvolve(a.numpy(), b.numpy(), "valid", axes=1), rtol=1e-4, atol=1e-5
    )


def test_bad_input():
    with pytest.raises(ValueError, match="mode must be one of 'full', 'same', 'valid'"):
        specux.fftconvolve(np.ones(4), np.ones(2), "circular")
    with pytest.raises(ValueError, match="same number of dimensions"):
        specux.fftconvolve(np.ones((2, 4)), np.ones(2))
    with pytest.raises(ValueError, match="empty input"):
        specux.fftconvolve(np.ones(0), np.ones(2))
    with pytest.raises(ValueError, match="incompatible shapes"):
        specux.fftconvolve(np.ones((3, 8)), np.ones((2, 4)), axes=1)
    with pytest.raises(ValueError, match="one input must be at least as large"):
        specux.fftconvolve(np.ones((3, 8)), np.ones((4, 4)), "valid")
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        specux.fftconvolve(np.ones((3, 8)), np.ones((3, 4)), axes=3)
    with pytest.raises(TypeError, match="float16"):
        specux.fftconvolve(np.ones(8, np.float16), np.ones(3))


def test_nan_spreads_only_where_it_overlaps():
    a = _r((2, 64))
    a[0, 10] = np.nan
    out = specux.fftconvolve(a, _r((2, 5)), axes=1)
    assert np.isfinite(out[1]).all() and np.isnan(out[0]).any()
