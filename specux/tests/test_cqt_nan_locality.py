"""NaN and inf stay local in the constant-Q transforms with every resampler (issue 14).

libsoxr filters block by block through FFTs, so one NaN made a whole block of each resampled signal NaN
(about 830 samples for a "soxr_hq" halving: every sample of a low octave's signal of a few seconds).
specux now resamples the non-finite samples as zeros and writes NaN where the resampler's filter reaches
them (taps above 1e-7 of the peak). The extent documented in
docs/specux/constant-q.md ("Non-finite input") is checked here: in octave k the NaN frames are those whose
window meets ``[p + L_k, p + H_k]``, the reach accumulated over the k halvings before it.
"""

from __future__ import annotations

import numpy as np
import pytest

import specux
from specux._backends.cpu.cqt import octave_bases, vqt_plan
from specux._resample import RES_TYPES, SOXR_QUALITIES, downsample
from specux._resample_linear import _reach, linear_form, nonfinite_reach
from specux._spec.cqt import validate_vqt

pytest.importorskip("soxr")

_SR, _N, _POS, _HOP = 16000, 48000, 24000, 512


def _params(y, res_type):
    kw = dict(
        sr=_SR, hop_length=_HOP, fmin=None, n_bins=84, intervals="equal", gamma=0, bins_per_octave=12,
        tuning=0.0, filter_scale=1, norm=1, sparsity=0.01, window="hann", scale=True, pad_mode="constant",
        res_type=res_type, dtype=None,
    )
    return validate_vqt(y, "cqt", **kw)[1]


def _expected_nan_frames(p, n_frames):
    """Per octave, the frames whose window meets the samples that the NaN at _POS reaches (bool per frame)."""
    plan = vqt_plan(p)
    bases = octave_bases(p, plan)
    lo = hi = 0.0  # reach in samples of the full rate
    rate = 1  # full-rate samples per sample of the current signal
    if plan.early_factor > 1:
        a, b, _ = _reach(plan.early_factor, p.res_type)
        lo, hi, rate = lo + a, hi + b, plan.early_factor
    out = []
    for i, (octave, (_, n_fft)) in enumerate(zip(plan.octaves, bases)):
        if i > 0 and octave.sr != plan.octaves[i - 1].sr:
            a, b, _ = _reach(2, p.res_type)
            lo, hi, rate = lo + a * rate, hi + b * rate, rate * 2
        t = np.arange(n_frames) * _HOP
        start, end = t - (n_fft // 2) * rate, t + (n_fft - n_fft // 2) * rate
        # one sample of the current rate of slack on each side: its grid rounds the positions
        out.append((start <= _POS + hi + rate) & (end >= _POS + lo - rate))
    return plan, out


@pytest.mark.parametrize("res_type", [*RES_TYPES, None])
def test_one_nan_stays_local(res_type):
    # the issue's case: y[24000] = nan in 3 s at 16 kHz made bins 0-11 NaN in every frame with "soxr_hq"
    rng = np.random.default_rng(0)
    y = rng.standard_normal(_N)
    y[_POS] = np.nan
    C = specux.cqt(y, sr=_SR, res_type=res_type)
    nan = np.isnan(C)
    # the lowest octave is no longer NaN everywhere, and every bin has some NaN frames (near the NaN)
    assert not nan[:12].all(axis=1).any()
    assert nan.any(axis=1).all()
    if res_type is not None:
        plan, expected = _expected_nan_frames(_params(y, res_type), C.shape[-1])
        for octave, frames in zip(plan.octaves, expected):
            got = nan[octave.rows]
            assert not (got & ~frames[None, :]).any(), octave.rows
    # the finite values are those of the signal with a zero in place of the NaN, to libsoxr's precision
    y0 = np.where(np.isnan(y), 0.0, y)
    C0 = specux.cqt(y0, sr=_SR, res_type=res_type)
    finite = ~nan
    assert np.abs(C[finite] - C0[finite]).max() <= 1e-6 * np.abs(C0).max()


def test_nan_issue_numbers_soxr_hq():
    # what the docs state for the issue's case: the NaN frames of each octave (94 frames in all)
    rng = np.random.default_rng(0)
    y = rng.standard_normal(_N).astype(np.float32)
    y[_POS] = np.nan
    nan = np.isnan(specux.cqt(y, sr=_SR))
    per_octave = [int(nan[r].any(axis=0).sum()) for r in (slice(72, 84), slice(0, 12))]
    assert per_octave[0] <= 2  # top octave: the frames that contain the NaN
    assert per_octave[1] < nan.shape[1]  # lowest: local (it was every frame)
    # within an octave every bin has the same NaN frames (the frame product spreads a NaN over its bins)
    assert (nan[:12] == nan[:12].any(axis=0)).all()


def test_inf_and_batch_and_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    y = rng.standard_normal((3, 20000))
    y[0, 5000] = np.inf
    y[2, 123] = np.nan
    C = specux.cqt(y, sr=_SR, n_bins=60, hop_length=256)
    # row 1 is finite and equals its own transform; rows 0 and 2 are NaN only locally
    assert np.isfinite(C[1]).all()
    np.testing.assert_array_equal(C[1], specux.cqt(y[1], sr=_SR, n_bins=60, hop_length=256))
    for r in (0, 2):
        assert (~np.isfinite(C[r])).any() and not (~np.isfinite(C[r, :12])).all(axis=1).any()
    # the torch path (its own forward) gives the same values and the same NaN
    Ct = specux.cqt(torch.from_numpy(y), sr=_SR, n_bins=60, hop_length=256).numpy()
    np.testing.assert_array_equal(np.isfinite(Ct), np.isfinite(C))
    ok = np.isfinite(C)
    assert np.abs(Ct[ok] - C[ok]).max() <= 1e-12 * np.abs(C[ok]).max()


@pytest.mark.parametrize("res_type", SOXR_QUALITIES)
@pytest.mark.parametrize("factor", [2, 4, 8])
@pytest.mark.parametrize("n", [300, 5000])
def test_resampler_nonfinite_reach(res_type, factor, n):
    # downsample(local_nonfinite=True): NaN exactly where the filter reaches a non-finite input, elsewhere the
    # output of the signal with zeros in their place; the filter's weight outside the reach is below 1e-7
    x = np.random.default_rng(n + factor).standard_normal((2, n))
    x[0, n // 3] = np.nan
    x[1, 5] = -np.inf
    out = downsample(x, factor, res_type, local_nonfinite=True)
    bad = ~np.isfinite(x)
    reach = nonfinite_reach(bad, factor, res_type)
    np.testing.assert_array_equal(np.isnan(out), reach)
    zeroed = downsample(np.where(bad, 0.0, x), factor, res_type)
    np.testing.assert_array_equal(out[~reach], zeroed[~reach])
    impulses = downsample(bad.astype(np.float64), factor, res_type)
    # (the impulse responses are the taps times sqrt(factor))
    peak = np.abs(linear_form(factor, res_type).taps).max() * np.sqrt(factor)
    assert np.abs(impulses[~reach]).max(initial=0.0) <= 2e-7 * peak
