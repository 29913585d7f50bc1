"""Messages name the parameter the caller gave (issue 19, item 6), not one of an inner function."""

from __future__ import annotations

import numpy as np
import pytest

import specux


def _y(n: int = 4000) -> np.ndarray:
    return np.random.default_rng(2).standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("n_chroma", [0, -3])
def test_chroma_stft_names_n_chroma(n_chroma):
    with pytest.raises(ValueError, match=rf"^chroma_stft: n_chroma must be >= 1; got {n_chroma}$"):
        specux.chroma_stft(_y(), sr=22050, n_chroma=n_chroma)


def test_chroma_stft_checks_before_estimating_the_tuning():
    # the tuning estimate is passed bins_per_octave=n_chroma: its name must not leak into the message
    with pytest.raises(ValueError) as info:
        specux.chroma_stft(_y(), sr=22050, n_chroma=0)
    assert "pitch_tuning" not in str(info.value) and "bins_per_octave" not in str(info.value)
    with pytest.raises(ValueError, match="chroma_stft: octwidth"):
        specux.chroma_stft(_y(), sr=22050, octwidth=0.0)
    with pytest.raises(ValueError, match="chroma_stft: norm"):
        specux.chroma_stft(_y(), sr=22050, norm=-1.0)


@pytest.mark.parametrize("sample_rate", [0, -16000, float("inf")])
def test_lfcc_names_sample_rate(sample_rate):
    with pytest.raises(ValueError, match=r"^lfcc: sample_rate must be a positive finite number") as info:
        specux.lfcc(_y(), sample_rate=sample_rate)
    assert "sr " not in str(info.value)


def test_lfcc_names_its_own_band_edges():
    with pytest.raises(TypeError, match="lfcc: f_min must be a number"):
        specux.lfcc(_y(), f_min="0")
    with pytest.raises(TypeError, match="lfcc: f_max must be a number"):
        specux.lfcc(_y(), f_max="8000")


@pytest.mark.parametrize("func", [specux.fft.fftfreq, specux.fft.rfftfreq], ids=lambda f: f.__name__)
def test_fftfreq_names_a_zero_spacing(func):
    with pytest.raises(ValueError, match=rf"^{func.__name__}: the sample spacing d must be non-zero"):
        func(10, d=0)
    with pytest.raises(ValueError, match=r"d must be a finite number"):
        func(10, d=float("nan"))
    np.testing.assert_array_equal(func(10, d=-0.5), getattr(np.fft, func.__name__)(10, d=-0.5))


def test_fftn_names_s_for_a_bad_size():
    with pytest.raises(TypeError, match="fftn: s must be an int"):
        specux.fft.fftn(np.ones((4, 4)), s=(4, 2.5))
    with pytest.raises(ValueError, match="fftn: invalid number of FFT data points s=0"):
        specux.fft.fftn(np.ones((4, 4)), s=(4, 0))


def test_melspectrogram_names_itself_for_frame_parameters():
    with pytest.raises(ValueError, match=r"^melspectrogram: hop_length must be >= 1"):
        specux.melspectrogram(_y(), sr=16000, hop_length=0)
    with pytest.raises(ValueError, match=r"^lfcc: win_length=500 must be <= n_fft=400"):
        specux.lfcc(_y(), win_length=500)


def test_cqt_and_vqt_name_a_dtype_numpy_cannot_read():
    for func in (specux.cqt, specux.vqt):
        name = func.__name__
        with pytest.raises(
            TypeError, match=rf"^{name}: dtype must be None, complex64 or complex128; got 'abc'$"
        ):
            func(np.zeros(600), sr=8000, fmin=200.0, n_bins=12, dtype="abc")


def test_constant_q_names_a_string_norm():
    for kw in ({"norm": "1"}, {"norm": -1}):
        with pytest.raises(
            (TypeError, ValueError), match=r"^constant_q: norm must be None, inf, -inf, 0 or a"
        ):
            specux.filters.constant_q(sr=8000, fmin=200.0, n_bins=12, **kw)
    with pytest.raises(
        TypeError, match=r"^cqt: norm must be None, inf, -inf, 0 or a positive number; got '1'"
    ):
        specux.cqt(_y(600), sr=8000, fmin=200.0, n_bins=12, norm="1")


def test_chroma_cqt_names_window_before_the_transform():
    with pytest.raises(TypeError, match=r"^chroma_cqt: window must be None or a non-empty 1-D array"):
        specux.chroma_cqt(_y(600), sr=8000, fmin=200.0, n_octaves=2, tuning=0.0, window="x")


def test_chroma_stft_names_s_not_n_fft_for_a_one_bin_spectrogram():
    with pytest.raises(
        ValueError, match=r"^chroma_stft: S must have shape .* at least 2 frequency bins"
    ) as info:
        specux.chroma_stft(S=np.ones((1, 3)), tuning=0.0)
    assert "n_fft must be" not in str(info.value)


def test_decibels_name_s_and_ref():
    with pytest.raises(TypeError, match=r"^power_to_db: S must be an array of numbers"):
        specux.power_to_db(np.array(["a", "b"]))
    with pytest.raises(TypeError, match=r"^amplitude_to_db: ref, a callable, must return a real number"):
        specux.amplitude_to_db(np.ones(4), ref=lambda S: "x")
    with pytest.raises(ValueError, match=r"^power_to_db: ref must be a callable or a number, not nan"):
        specux.power_to_db(np.ones(4), ref=float("nan"))


def test_stft_names_a_window_of_strings():
    with pytest.raises(ValueError, match=r"^window: an array window must hold real numbers .*got dtype <U1$"):
        specux.stft(np.zeros(100), n_fft=16, window=np.array(["a"] * 16))
