"""The constant-Q filter helpers in specux.filters against librosa 0.11's (librosa.filters)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from specux import filters
from specux._filters import constant_q as cqf
from specux._reference import chroma as ref_chroma

librosa = pytest.importorskip("librosa")


@pytest.mark.parametrize(
    "window",
    [
        "hann",
        "hamming",
        "blackman",
        "triang",
        "bartlett",
        "nuttall",
        "cosine",
        "boxcar",
        "blackmanharris",
        "parzen",
        "bohman",
        "barthann",
    ],
)
def test_window_bandwidth_matches_librosa(window):
    assert filters.window_bandwidth(window) == pytest.approx(
        librosa.filters.window_bandwidth(window), rel=1e-12
    )


def test_window_bandwidth_of_unnamed_windows():
    assert filters.window_bandwidth(("kaiser", 8.0)) == pytest.approx(
        librosa.filters.window_bandwidth(("kaiser", 8.0)), rel=1e-3
    )
    assert filters.window_bandwidth(np.ones) == pytest.approx(1.0)

    def squared_hann(n):
        return np.hanning(n + 1)[:-1] ** 2

    assert filters.window_bandwidth(squared_hann) == pytest.approx(
        librosa.filters.window_bandwidth(squared_hann), rel=1e-12
    )
    with pytest.raises(ValueError, match="window"):
        filters.window_bandwidth("no-such-window")


@pytest.mark.parametrize("n_bins,bpo,fmin", [(84, 12, 32.70319566257483), (100, 24, 55.0), (7, 36, 440.0)])
def test_frequencies_and_relative_bandwidths_match_librosa(n_bins, bpo, fmin):
    freqs = filters.cq_frequencies(n_bins, fmin=fmin, bins_per_octave=bpo)
    np.testing.assert_array_equal(
        freqs, librosa.interval_frequencies(n_bins, fmin=fmin, intervals="equal", bins_per_octave=bpo)
    )
    np.testing.assert_allclose(
        freqs, librosa.cqt_frequencies(n_bins, fmin=fmin, bins_per_octave=bpo), rtol=1e-14
    )
    np.testing.assert_array_equal(
        filters.relative_bandwidth(freqs), librosa.filters._relative_bandwidth(freqs=freqs)
    )


def test_interval_frequencies_from_ratios_match_librosa():
    ratios = [1.0, 1.2, 1.5]
    np.testing.assert_array_equal(
        filters.cq_frequencies(8, fmin=55.0, intervals=ratios),
        librosa.interval_frequencies(8, fmin=55.0, intervals=ratios),
    )


@pytest.mark.parametrize("gamma", [0.0, None, 12.5])
@pytest.mark.parametrize("window,filter_scale", [("hann", 1.0), ("hamming", 0.5), ("blackman", 2.0)])
def test_wavelet_lengths_match_librosa(gamma, window, filter_scale):
    freqs = librosa.cqt_frequencies(60, fmin=40.0, bins_per_octave=12)
    got, cutoff = filters.wavelet_lengths(
        freqs=freqs, sr=22050, window=window, filter_scale=filter_scale, gamma=gamma
    )
    expected, expected_cutoff = librosa.filters.wavelet_lengths(
        freqs=freqs, sr=22050, window=window, filter_scale=filter_scale, gamma=gamma
    )
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert cutoff == pytest.approx(expected_cutoff, rel=1e-14)


@pytest.mark.parametrize("norm", [1, 2, np.inf, None])
@pytest.mark.parametrize("gamma,window", [(0.0, "hann"), (None, "hann"), (4.0, "hamming")])
def test_wavelet_filters_match_librosa(norm, gamma, window):
    freqs = librosa.cqt_frequencies(36, fmin=110.0, bins_per_octave=12)
    got, lengths = filters.wavelet(
        freqs=freqs, sr=22050, window=window, norm=norm, gamma=gamma, dtype=np.complex128
    )
    expected, expected_lengths = librosa.filters.wavelet(
        freqs=freqs, sr=22050, window=window, norm=norm, gamma=gamma, dtype=np.complex128
    )
    assert got.shape == expected.shape
    np.testing.assert_allclose(lengths, expected_lengths, rtol=1e-14)
    # librosa builds its phasors with numba's cos / sin: last-bit differences only
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15 * np.abs(expected).max())


def test_wavelet_without_fft_padding():
    freqs = librosa.cqt_frequencies(12, fmin=220.0)
    got, _ = filters.wavelet(freqs=freqs, sr=16000, pad_fft=False)
    expected, _ = librosa.filters.wavelet(freqs=freqs, sr=16000, pad_fft=False)
    assert got.shape == expected.shape and got.dtype == np.complex64
    np.testing.assert_allclose(got, expected, atol=1e-7)


def test_wavelet_filter_has_unit_l1_norm_and_centre_frequency():
    freqs = np.array([440.0, 880.0])
    bank, _ = filters.wavelet(freqs=freqs, sr=8000, dtype=np.complex128)
    np.testing.assert_allclose(np.abs(bank).sum(axis=1), 1.0, rtol=1e-12)
    spectrum = np.abs(np.fft.fft(bank, axis=1))
    peak_hz = np.argmax(spectrum, axis=1) * 8000 / bank.shape[1]
    np.testing.assert_allclose(peak_hz, freqs, atol=8000 / bank.shape[1])


def test_constant_q_and_lengths_match_librosa():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        expected, expected_lengths = librosa.filters.constant_q(sr=22050, n_bins=48, fmin=65.0)
        expected_only = librosa.filters.constant_q_lengths(sr=22050, fmin=65.0, n_bins=48)
    got, lengths = filters.constant_q(sr=22050, n_bins=48, fmin=65.0)
    np.testing.assert_allclose(lengths, expected_lengths, rtol=1e-14)
    np.testing.assert_allclose(
        filters.constant_q_lengths(sr=22050, fmin=65.0, n_bins=48), expected_only, rtol=1e-14
    )
    np.testing.assert_allclose(got, expected, atol=1e-7)


def test_constant_q_lengths_checks_nyquist_and_arguments():
    with pytest.raises(ValueError, match="Nyquist"):
        filters.constant_q_lengths(sr=8000, fmin=1000.0, n_bins=40)
    with pytest.raises(ValueError, match="fmin"):
        filters.constant_q_lengths(sr=8000, fmin=0.0)
    with pytest.raises(ValueError, match="n_bins"):
        filters.constant_q_lengths(sr=8000, fmin=50.0, n_bins=0)
    with pytest.raises(ValueError, match="filter_scale"):
        filters.wavelet_lengths(freqs=[100.0, 200.0], sr=8000, filter_scale=0)
    with pytest.raises(ValueError, match="ascending"):
        filters.wavelet_lengths(freqs=[200.0, 100.0], sr=8000)


@pytest.mark.parametrize(
    "n_input,kw",
    [
        (84, {}),
        (252, {"bins_per_octave": 36}),
        (100, {"bins_per_octave": 24, "fmin": 55.0, "base_c": False}),
        (50, {"bins_per_octave": 48, "n_chroma": 24, "fmin": 40.0}),
        (30, {"bins_per_octave": 36, "n_chroma": 12, "fmin": 27.5}),
    ],
)
def test_cq_to_chroma_matches_librosa_and_reference(n_input, kw):
    got = filters.cq_to_chroma(n_input, **kw)
    np.testing.assert_array_equal(got, librosa.filters.cq_to_chroma(n_input, **kw))
    ref_kw = {k: v for k, v in kw.items() if k != "window"}
    np.testing.assert_array_equal(got, ref_chroma.cq_to_chroma(n_input, **ref_kw))


def test_cq_to_chroma_window_and_errors():
    window = np.array([0.5, 1.0, 0.5])
    np.testing.assert_allclose(
        filters.cq_to_chroma(36, bins_per_octave=36, window=window),
        librosa.filters.cq_to_chroma(36, bins_per_octave=36, window=window),
    )
    with pytest.raises(ValueError, match="multiple of n_chroma"):
        filters.cq_to_chroma(84, bins_per_octave=18, n_chroma=12)


def test_frequency_domain_basis_is_memoised_and_read_only():
    freqs = librosa.cqt_frequencies(12, fmin=1000.0)
    alpha = filters.relative_bandwidth(freqs)
    kw = dict(
        sr=22050,
        freqs=freqs,
        alpha=alpha,
        filter_scale=1.0,
        norm=1,
        sparsity=0.01,
        window="hann",
        gamma=0.0,
        dtype=np.complex64,
    )
    a, n_fft = cqf.vqt_fft_basis(**kw)
    b, _ = cqf.vqt_fft_basis(**kw)
    assert a is b and not a.flags.writeable and a.shape == (12, n_fft // 2 + 1)
    # about 1% of each row's L1 mass is discarded
    full, _ = cqf.vqt_fft_basis(**{**kw, "sparsity": 0.0})
    dropped = 1 - np.abs(a).sum(axis=1) / np.abs(full).sum(axis=1)
    assert np.all(dropped <= 0.0101) and np.all(dropped > 0.001)
