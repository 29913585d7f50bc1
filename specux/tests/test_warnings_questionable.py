"""Questionable input gets a word (issue 19, item 7): istft of a real array and the decibel conversions of a
complex one warn; complex transforms of float16 on half-storage backends return complex64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import specux


def _spectrum() -> np.ndarray:
    y = np.random.default_rng(3).standard_normal(4000).astype(np.float32)
    return specux.stft(y, n_fft=256, hop_length=64)


def test_istft_of_a_real_array_warns_and_takes_zero_phase():
    mag = np.abs(_spectrum())
    with pytest.warns(UserWarning, match=r"istft: stft_matrix is real \(float32\).*zero phase"):
        got = specux.istft(mag, hop_length=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = specux.istft(mag.astype(np.complex64), hop_length=64)
    np.testing.assert_array_equal(got, want)


def test_istft_of_a_complex_array_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        specux.istft(_spectrum(), hop_length=64)


def test_the_warning_points_at_the_caller():
    with pytest.warns(UserWarning) as record:
        specux.istft(np.abs(_spectrum()), hop_length=64)
    assert record[0].filename == __file__


@pytest.mark.parametrize("func", [specux.amplitude_to_db, specux.power_to_db], ids=lambda f: f.__name__)
def test_decibels_of_a_complex_array_warn_and_use_the_magnitude(func):
    D = _spectrum()
    with pytest.warns(UserWarning, match=rf"{func.__name__}: S is complex \(complex64\); only its magnitude"):
        got = func(D)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = func(np.abs(D))  # as librosa: the magnitude, for power_to_db too
    np.testing.assert_array_equal(got, want)


def test_decibels_of_a_complex_tensor_warn():
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning, match="amplitude_to_db: S is complex"):
        out = specux.amplitude_to_db(torch.ones(4, dtype=torch.complex64))
    assert isinstance(out, torch.Tensor)


@pytest.mark.parametrize(
    "name,args",
    [
        ("fft", {}),
        ("ifft", {}),
        ("fft", {"n": 12}),
        ("fftn", {}),
        ("fft2", {}),
        ("irfft", {}),
        ("hfft", {}),
        ("rfft", {}),
        ("ihfft", {}),
    ],
)
def test_complex_transforms_of_float16_on_opencl_return_complex64(require_backend, name, args):
    require_backend("opencl")
    x = np.arange(16, dtype=np.float16).reshape(2, 8) / 7
    got = getattr(specux.fft, name)(x, **args, backend="opencl")
    want = getattr(np.fft, name)(x.astype(np.float32), **args)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_the_call_of_the_issue(require_backend):
    require_backend("opencl")
    x = np.arange(8, dtype=np.float16)
    got = specux.fft.fft(x, backend="opencl")
    assert got.dtype == np.complex64 == np.fft.fft(x).dtype
    np.testing.assert_allclose(got, np.fft.fft(x.astype(np.float64)), rtol=1e-5, atol=1e-4)


def test_float16_is_still_refused_on_the_cpu_backend():
    with pytest.raises(TypeError, match="float16"):
        specux.fft.fft(np.arange(8, dtype=np.float16), backend="cpu")
