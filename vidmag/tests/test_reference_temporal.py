"""The reference's temporal filters: ideal band-pass and first-order Butterworth / IIR, both semantics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from vidmag._reference import temporal
from vidmag.backend.numpy import NumpyOperations


def _sine(f, fs, n, phase=0.3):
    return np.sin(2 * np.pi * f * np.arange(n) / fs + phase)


@pytest.mark.parametrize(("f", "default_gain", "mit_gain"),
                         [(2.0, 1.0, 0.5), (5.0, 0.0, 0.0), (1 / 3, 0.0, 0.0)])
def test_ideal_response(f, default_gain, mit_gain):
    fs, n = 30.0, 90  # 2, 5 and 1/3 Hz all fall on FFT bins
    x = _sine(f, fs, n)[:, None] * np.ones((1, 4))
    default = temporal.ideal_bandpass(x, 1.5, 2.5, fs, mit=False)
    mit = temporal.ideal_bandpass(x, 1.5, 2.5, fs, mit=True)
    np.testing.assert_allclose(default, default_gain * x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(mit, mit_gain * x, rtol=0, atol=1e-12)


def test_ideal_removes_dc_and_band_edges_differ():
    fs, n = 30.0, 60
    x = 3.0 + _sine(2.0, fs, n)
    # band exactly [2, 3] Hz: the default keeps the 2 Hz bin (closed band), the MIT filter does not (strict)
    np.testing.assert_allclose(temporal.ideal_bandpass(x, 2.0, 3.0, fs, mit=False), x - 3.0, atol=1e-12)
    np.testing.assert_allclose(temporal.ideal_bandpass(x, 2.0, 3.0, fs, mit=True), 0.0, atol=1e-12)


def test_mit_ideal_has_no_wrap_around():
    # bins k / n * fs in (14, 17) Hz at fs = 30: 15 Hz (Nyquist, full) and 16 Hz, i.e. the negative side of
    # 14 Hz (half); a direct DFT statement of the MIT mask says the same
    fs, n = 30.0, 30
    x = np.random.default_rng(0).normal(size=n)
    k = np.arange(n)
    keep = (k / n * fs > 14) & (k / n * fs < 17)
    dft = np.exp(-2j * np.pi * np.outer(k, k) / n)
    expected = np.real(np.conj(dft) @ ((dft @ x) * keep)) / n
    np.testing.assert_allclose(temporal.ideal_bandpass(x, 14, 17, fs, mit=True), expected, atol=1e-12)


def test_numpy_backend_bandpass_in_pieces_equals_reference(monkeypatch):
    import vidmag.backend.numpy as numpy_backend

    monkeypatch.setattr(numpy_backend, "_BANDPASS_PIECE", 50)  # force many pieces of pixels
    clip = np.random.default_rng(1).normal(size=(20, 6, 7, 3))
    ops = NumpyOperations()
    for mit in (False, True):
        want = temporal.ideal_bandpass(clip, 1.0, 4.0, 30.0, mit=mit)
        batches = [clip[0:3].copy(), clip[3:11, :, :, :].copy(), clip[11:20:1][:, ::1].copy()]
        stack = ops.ideal_bandpass(ops.concat_frames(batches), 1.0, 4.0, 30.0, mit=mit)
        assert batches == []  # the stack took them over
        np.testing.assert_array_equal(ops.take_frames(stack, 0, 20), want)
        np.testing.assert_array_equal(ops.take_frames(stack, 2, 12), want[2:12])  # across three batches
        np.testing.assert_array_equal(ops.take_frames(stack, 4, 6), want[4:6])
        whole = ops.ideal_bandpass(clip.copy(), 1.0, 4.0, 30.0, mit=mit)  # a plain array is a stack too
        np.testing.assert_array_equal(whole, want)


def test_butterworth_coefficients_mit_match_spec():
    c = temporal.butterworth_lowpass(0.4, 30, mit=True)
    np.testing.assert_allclose([c.b0, c.b1, c.a0, c.a1], [0.020517239, 0.020517239, 1, -0.95896552],
                               atol=1e-8)
    c = temporal.butterworth_lowpass(3.0, 30, mit=True)
    np.testing.assert_allclose([c.b0, c.b1, c.a0, c.a1], [0.13672874, 0.13672874, 1, -0.72654253],
                               atol=1e-8)


@pytest.mark.parametrize("mit", [False, True])
@pytest.mark.parametrize("f", [0.4, 3.0, 10.0])
def test_butterworth_coefficients_match_scipy(f, mit):
    fs = 30.0
    b, a = signal.butter(1, f / fs if mit else f / (fs / 2))
    c = temporal.butterworth_lowpass(f, fs, mit=mit)
    np.testing.assert_allclose([c.b0, c.b1], b, rtol=1e-12)
    np.testing.assert_allclose([c.a0, c.a1], a, rtol=1e-12)


def _run_lowpass_pair(step_pair, x):
    """Run a two-low-pass band-pass over a 1-D series, starting every state at x[0] (output 0 there)."""
    out = np.zeros_like(x)
    state = (x[0], x[0], x[0])
    for i in range(1, len(x)):
        state = step_pair(state, x[i])
        out[i] = state[0] - state[1]
    return out


def _measured_gain(y, f, fs):
    tail = slice(len(y) // 2, None)  # past the start-up transient
    t = np.arange(len(y))[tail] / fs
    basis = np.stack([np.sin(2 * np.pi * f * t), np.cos(2 * np.pi * f * t)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, y[tail], rcond=None)
    return float(np.hypot(*coef))


def _first_order_response(c, f, fs):
    z = np.exp(-2j * np.pi * f / fs)
    return (c.b0 + c.b1 * z) / (c.a0 + c.a1 * z)


@pytest.mark.parametrize("mit", [False, True])
@pytest.mark.parametrize("f", [0.1, 1.0, 2.0, 6.0, 12.0])
def test_butterworth_bandpass_response(f, mit):
    fs, fl, fh = 30.0, 0.5, 4.0
    lo, hi = temporal.butterworth_lowpass(fl, fs, mit=mit), temporal.butterworth_lowpass(fh, fs, mit=mit)

    def step(state, x):
        a, b, prev = state
        return temporal.butterworth_step(a, x, prev, hi), temporal.butterworth_step(b, x, prev, lo), x

    y = _run_lowpass_pair(step, _sine(f, fs, 3000))
    analytic = abs(_first_order_response(hi, f, fs) - _first_order_response(lo, f, fs))
    assert _measured_gain(y, f, fs) == pytest.approx(analytic, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("mit", [False, True])
def test_butterworth_cutoff_is_minus_3_db_where_the_semantics_says(mit):
    fs, f = 30.0, 3.0
    c = temporal.butterworth_lowpass(f, fs, mit=mit)
    at = f / 2 if mit else f  # MATLAB reads f / fs as a fraction of Nyquist
    assert abs(_first_order_response(c, at, fs)) == pytest.approx(1 / np.sqrt(2), rel=1e-12)


@pytest.mark.parametrize("f", [0.2, 1.0, 3.0, 10.0])
def test_iir_bandpass_response(f):
    fs, r1, r2 = 30.0, 0.4, 0.05

    def step(state, x):
        return temporal.iir_step(state[0], x, r1), temporal.iir_step(state[1], x, r2), x

    y = _run_lowpass_pair(step, _sine(f, fs, 3000))
    z = np.exp(-2j * np.pi * f / fs)
    analytic = abs(r1 / (1 - (1 - r1) * z) - r2 / (1 - (1 - r2) * z))
    assert _measured_gain(y, f, fs) == pytest.approx(analytic, rel=1e-3, abs=1e-4)


def test_numpy_backend_steps_equal_reference_loop():
    x = np.random.default_rng(2).normal(size=(12, 3, 4, 3))
    ops = NumpyOperations()
    hi = tuple(temporal.butterworth_lowpass(4.0, 30, mit=False))
    lo = tuple(temporal.butterworth_lowpass(0.5, 30, mit=False))
    first, state = ops.butterworth_step(None, x[:5], hi, lo)
    rest, _ = ops.butterworth_step(state, x[5:], hi, lo)
    got = np.concatenate([first, rest])
    a = b = prev = x[0]
    assert not got[0].any()
    for i in range(1, 12):
        a = temporal.butterworth_step(a, x[i], prev, temporal.FirstOrder(*hi))
        b = temporal.butterworth_step(b, x[i], prev, temporal.FirstOrder(*lo))
        prev = x[i]
        np.testing.assert_array_equal(got[i], a - b)
    iir, _ = ops.iir_step(None, x, 0.4, 0.05)
    p = q = x[0]
    for i in range(1, 12):
        p, q = temporal.iir_step(p, x[i], 0.4), temporal.iir_step(q, x[i], 0.05)
        np.testing.assert_array_equal(iir[i], p - q)
