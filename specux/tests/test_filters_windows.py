"""specux.filters: windows (scipy / librosa specifications) and the caching of banks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import specux

librosa = pytest.importorskip("librosa")


@pytest.mark.parametrize(
    "window",
    [
        "hann",
        "hamming",
        "blackman",
        ("kaiser", 8.0),
        ("tukey", 0.25),
        4.0,
        ("gaussian", 7.0),
        "boxcar",
        "triang",
    ],
)
@pytest.mark.parametrize("n", [1, 2, 7, 64, 255])
def test_named_windows_match_scipy_and_librosa(window, n):
    for fftbins in (True, False):
        got = specux.filters.get_window(window, n, fftbins=fftbins)
        np.testing.assert_array_equal(got, scipy.signal.get_window(window, n, fftbins=fftbins))
        np.testing.assert_array_equal(got, librosa.filters.get_window(window, n, fftbins=fftbins))


def test_callables_and_arrays():
    np.testing.assert_array_equal(specux.filters.get_window(np.hanning, 9), np.hanning(9))
    arr = np.linspace(0, 1, 6)
    np.testing.assert_array_equal(specux.filters.get_window(arr, 6), arr)
    np.testing.assert_array_equal(specux.filters.get_window(list(arr), 6), arr)
    with pytest.raises(ValueError, match="its length must be 5"):
        specux.filters.get_window(arr, 5)
    with pytest.raises(ValueError, match="callable returned shape"):
        specux.filters.get_window(lambda n: np.ones(n + 1), 5)
    with pytest.raises(ValueError, match="invalid window specification"):
        specux.filters.get_window("nope", 8)
    with pytest.raises(ValueError, match="Nx must be a positive int"):
        specux.filters.get_window("hann", 0)


def test_cached_banks_are_read_only_and_bounded():
    w = specux.filters.get_window("hann", 32)
    assert not w.flags.writeable
    m = specux.filters.mel(sr=16000, n_fft=512, n_mels=40)
    assert not m.flags.writeable and m.dtype == np.float32
    assert specux.filters.mel(sr=16000, n_fft=512, n_mels=40) is not None
    from specux._filters import mel as melmod
    from specux._filters import windows

    assert melmod._mel_cached.cache_info().maxsize is not None
    assert windows._scipy_window.cache_info().maxsize is not None


def test_mel_bank_matches_librosa_including_p_norms():
    for kw in (
        dict(),
        dict(htk=True, norm=None),
        dict(norm=1.0, n_mels=40),
        dict(norm=np.inf, fmin=300.0),
        dict(n_mels=64, fmax=7000.0, dtype=np.float64),
    ):
        np.testing.assert_allclose(
            specux.filters.mel(sr=16000, n_fft=1024, **kw),
            librosa.filters.mel(sr=16000, n_fft=1024, **kw),
            rtol=1e-6,
            atol=1e-9,
        )
    with pytest.raises(ValueError, match=r"fmax=9000\.0 Hz is above the Nyquist"):
        specux.filters.mel(sr=16000, n_fft=512, fmax=9000.0)
    with pytest.raises(ValueError, match="need 0 <= fmin < fmax"):
        specux.filters.mel(sr=16000, n_fft=512, fmin=5000.0, fmax=4000.0)


def test_linear_bank_matches_torchaudio():
    torchaudio = pytest.importorskip("torchaudio")
    for sr, n_fft, n_filter, f_min, f_max in ((16000, 400, 128, 0.0, None), (8000, 256, 20, 100.0, 3000.0)):
        want = torchaudio.functional.linear_fbanks(
            n_fft // 2 + 1, f_min, float(f_max or sr // 2), n_filter, sr
        )
        got = specux.filters.linear(sr=sr, n_fft=n_fft, n_filter=n_filter, f_min=f_min, f_max=f_max)
        assert np.abs(got - want.numpy().T).max() <= 5e-5 * np.abs(want.numpy()).max()


def test_filters_module_exports_the_banks():
    for name in ("get_window", "mel", "linear", "chroma", "constant_q", "constant_q_lengths"):
        assert callable(getattr(specux.filters, name)), name
