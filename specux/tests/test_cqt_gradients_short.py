"""Gradients of the constant-Q transforms with every resampler: float64 gradcheck on short signals (a few
hundred samples, shorter than the longest filter), longer ones and many octaves, and dot-product tests of the
resamplers' adjoints alone (issue 14).

libsoxr's qualities other than "soxr_vhq" compute in single precision even for float64 signals, so their
output is linear only to about 1e-7 of its peak: a central difference with gradcheck's default step (1e-6)
measures that rounding divided by the step (an error of 0.2 at a Jacobian entry of 0.1 for ``(1, 600)``
against 2e-3 at a step of 1e-4 and 2e-5 at 1e-2, shrinking as 1 / step), not the derivative. Those
resamplers are checked with a larger step, on the transform itself (linear: any step is exact up to
rounding) and on its magnitude.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("soxr")

import specux  # noqa: E402
from specux._resample import RES_TYPES, downsample  # noqa: E402
from specux._resample_linear import downsample_adjoint  # noqa: E402

#: resamplers whose output is computed in double precision (gradcheck's default step works)
_DOUBLE = ("soxr_vhq", "polyphase", None)
_ALL = (*RES_TYPES, None)
#: gradcheck's fast mode (random projections of the Jacobian: the full one takes minutes); the few inputs at
#: the signal's ends that only the resampler's start-up correction weighs are checked one by one below
FAST = True


def _cqt(x, res_type, n_bins=24, fmin=100.0, gamma=0.0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short signals: "the longest filter is longer ..."
        return specux.vqt(
            x, sr=8000, hop_length=64, fmin=fmin, n_bins=n_bins, bins_per_octave=12, gamma=gamma,
            res_type=res_type,
        )


def _gradcheck(fn, x, res_type):
    if res_type in _DOUBLE:
        return torch.autograd.gradcheck(fn, (x,), fast_mode=FAST)
    # single-precision libsoxr: a step at which its rounding (1e-7 of the peak) does not dominate
    return torch.autograd.gradcheck(fn, (x,), eps=1e-2, atol=2e-4, rtol=1e-3, fast_mode=FAST)


@pytest.mark.parametrize("res_type", _ALL)
@pytest.mark.parametrize(
    "n, n_bins, fmin",
    [(300, 24, 100.0), (600, 24, 100.0), (1500, 24, 100.0), (3000, 48, 100.0), (4000, 60, 50.0)],
    ids=["300-2oct", "600-2oct", "1500-2oct", "3000-4oct", "4000-5oct"],
)
def test_cqt_abs_gradcheck(res_type, n, n_bins, fmin):
    # the case: |cqt| of a float64 batch, sr=8000, hop 64, from 100 Hz
    x = torch.randn(2, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n)).requires_grad_()
    assert _gradcheck(lambda z: _cqt(z, res_type, n_bins, fmin).abs(), x, res_type)


@pytest.mark.parametrize("res_type", _ALL)
@pytest.mark.parametrize("gamma", [0.0, None], ids=["cqt", "vqt"])
def test_transform_gradcheck_short(res_type, gamma):
    # the complex transform is linear: its finite differences are exact at any step
    x = torch.randn(1, 400, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).requires_grad_()
    fn = lambda z: _cqt(z, res_type, 36, 100.0, gamma)  # noqa: E731
    if res_type in _DOUBLE:
        assert torch.autograd.gradcheck(fn, (x,), fast_mode=FAST)
    else:
        assert torch.autograd.gradcheck(fn, (x,), eps=0.5, atol=1e-5, rtol=1e-4, fast_mode=FAST)


@pytest.mark.parametrize("res_type", _ALL)
@pytest.mark.parametrize("n, n_bins", [(300, 24), (1501, 12)], ids=["early4", "early8"])
def test_gradient_at_the_ends(res_type, n, n_bins):
    # each of the first and last 24 inputs on its own: (J^T g)[j] against the central difference along e_j
    # of <g, cqt(x)> (linear, so exact at any step up to rounding); 24 and 12 bins from 100 Hz downsample
    # early by 4 and 8, whose libsoxr start-up weighs the first inputs differently
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(1, n, dtype=torch.float64, generator=gen)
    fn = lambda z: _cqt(z, res_type, n_bins, 100.0)  # noqa: E731
    xg = x.clone().requires_grad_()
    out = fn(xg)
    g = torch.randn(out.shape, dtype=out.dtype, generator=gen)
    (grad,) = torch.autograd.grad(torch.real(torch.sum(out * g.conj())), xg)
    step = 1e-6 if res_type in _DOUBLE else 0.5
    for j in [*range(24), *range(n - 24, n)]:
        e = torch.zeros_like(x)
        e[0, j] = step
        numerical = torch.real(torch.sum((fn(x + e) - fn(x - e)) * g.conj())) / (2 * step)
        # single-precision libsoxr: its rounding, about 1e-7 of the peak per output, summed against g
        peak = float(out.detach().abs().max())
        noise = 0.0 if res_type in _DOUBLE else 1e-6 * float(g.norm()) * peak / step
        assert abs(float(grad[0, j]) - float(numerical)) <= 1e-7 + noise + 1e-6 * abs(float(numerical)), j


@pytest.mark.parametrize("res_type", [r for r in _ALL if r is not None])
def test_chroma_cqt_gradcheck_short(res_type):
    x = torch.randn(1, 800, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).requires_grad_()

    def fn(z):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return specux.chroma_cqt(
                z, sr=8000, hop_length=64, fmin=100.0, n_octaves=2, bins_per_octave=12, norm=None, tuning=0.0,
                res_type=res_type,
            )

    assert _gradcheck(fn, x, res_type)


def _dot_tolerance(res_type):
    # single-precision libsoxr: the measured form is exact to libsoxr's own rounding
    return 1e-12 if res_type == "polyphase" else (1e-8 if res_type == "soxr_vhq" else 2e-6)


@pytest.mark.parametrize("res_type", RES_TYPES)
@pytest.mark.parametrize("factor", [2, 4, 8])
@pytest.mark.parametrize("n", [1, 7, 40, 301, 600, 3001])
def test_resampler_adjoint_dot_product(res_type, factor, n):
    # <A x, g> = <x, A^T g> for the resampler alone, on every length class: shorter than the factor, shorter
    # than the filter, and long
    rng = np.random.default_rng(factor * 10_000 + n)
    x = rng.standard_normal((3, n))
    ax = downsample(x, factor, res_type)
    g = rng.standard_normal(ax.shape)
    lhs = float(np.sum(ax * g))
    rhs = float(np.sum(x * downsample_adjoint(g, n, factor, res_type)))
    scale = np.linalg.norm(ax) * np.linalg.norm(g)
    assert abs(lhs - rhs) <= _dot_tolerance(res_type) * scale


@pytest.mark.parametrize("res_type", RES_TYPES)
@pytest.mark.parametrize("factor", [2, 4])
def test_resampler_adjoint_every_entry_short(res_type, factor):
    # the adjoint's matrix is the transpose of the resampler's, entry by entry, at both ends of a short signal
    n = 301
    A = downsample(np.eye(n), factor, res_type).T  # (n_out, n): row m = output m's weights
    At = downsample_adjoint(np.eye(A.shape[0]), n, factor, res_type)
    peak = np.abs(A).max()
    assert np.abs(A - At).max() <= 10 * _dot_tolerance(res_type) * peak
