"""librosa's MATLAB-generated fixtures (shared/ref/librosa-test-data), used as librosa 0.11 used them.

STFT, raw overlap-add, mel filter banks and the Hz <-> mel / octave conversions, with np.allclose's tolerances
(rtol 1e-5, atol 1e-8). The chroma filter bank fixtures are tested with the chroma module.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.io.wavfile

import specux
from specux._backends.cpu.stft import _overlap_add
from specux.errors import EmptyFilterWarning

scipy_signal = pytest.importorskip("scipy.signal")


def _files(ref_data: Path, pattern: str) -> list[Path]:
    files = sorted(ref_data.glob(pattern))
    assert files, f"no fixtures match {pattern} in {ref_data}"
    return files


def _load_wav(path: Path) -> np.ndarray:
    """As librosa.load(sr=None, mono=True): int16 PCM scaled by 1/32768 in float32, channels averaged."""
    _, data = scipy.io.wavfile.read(path)
    y = data.astype(np.float32) / np.float32(32768.0)
    return y.mean(axis=1, dtype=np.float32) if y.ndim == 2 else y


def test_stft_fixtures(ref_data, error_table):
    """librosa's call on the fixture wav. MATLAB computed in double, so np.allclose (atol 1e-8 on every bin)
    is applied to the float64 path; the float32 path (scipy.fft's single-precision kernels, whose rounding is
    about
    2e-6 of the frame's scale) is held to the float32 STFT tolerance relative to the largest bin."""
    for path in _files(ref_data, "core-stft-*.mat"):
        d = scipy.io.loadmat(path)
        y32 = _load_wav(ref_data / Path(str(d["wavfile"][0])).name)
        n_fft = int(d["nfft"][0, 0])
        hann_w = int(d["hann_w"][0, 0])
        kw = dict(
            n_fft=n_fft,
            hop_length=int(d["hop_length"][0, 0]),
            win_length=hann_w or n_fft,
            window="hann" if hann_w else np.ones(n_fft),
            center=False,
        )
        expected = d["D"].conj()  # MATLAB's sign convention
        D = specux.stft(y32.astype(np.float64), **kw)
        assert D.shape == expected.shape, path.name
        assert np.allclose(D, expected), path.name
        error_table.record(
            "stft [float64]", "librosa MATLAB fixtures", np.abs(D - expected).max() / np.abs(expected).max()
        )
        D32 = specux.stft(y32, **kw)
        assert D32.dtype == np.complex64
        err = np.abs(D32 - expected).max() / np.abs(expected).max()
        error_table.record("stft [float32]", "librosa MATLAB fixtures", err)
        assert err <= 1e-5, path.name  # TOLERANCES[("stft", "float32")]


def test_overlap_add_fixtures(ref_data):
    """core-istft: plain overlap-add of windowed irfft frames (Hann scaled by 2/3), no window-sum division."""
    for path in _files(ref_data, "core-istft-*.mat"):
        d = scipy.io.loadmat(path)
        n_fft, hop, hann_w = (int(d[k][0, 0]) for k in ("nfft", "hop_length", "hann_w"))
        window = scipy_signal.get_window("hann", n_fft) * (2.0 / 3.0) if hann_w else np.ones(n_fft)
        frames = specux.fft.irfft(d["D"].conj().T, n=n_fft) * window
        y = _overlap_add(frames[None], hop)[0]
        expected = d["Dinv"][0]
        assert y.shape == expected.shape, path.name
        assert np.allclose(y, expected), path.name


def test_mel_filterbank_fixtures(ref_data, error_table):
    paths = _files(ref_data, "feature-melfb-*.mat") + _files(ref_data, "feature-melfbnorm-*.mat")
    for path in paths:
        d = scipy.io.loadmat(path)
        norm = "slaney"
        if "norm" in d and d["norm"].size == 0:
            norm = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyFilterWarning)  # many fixtures have more filters than bins
            wts = specux.filters.mel(
                sr=float(d["sr"][0, 0]),
                n_fft=int(d["nfft"][0, 0]),
                n_mels=int(d["nfilts"][0, 0]),
                fmin=float(d["fmin"][0, 0]),
                fmax=float(d["fmax"][0, 0]),
                htk=bool(d["htk"][0, 0]),
                norm=norm,
            )
        # ours holds only the non-negative frequencies; the fixtures pad with zeros to n_fft columns
        wts = np.pad(wts, [(0, 0), (0, int(d["nfft"][0, 0]) // 2 - 1)])
        assert wts.shape == d["wts"].shape, path.name
        assert np.allclose(wts, d["wts"]), path.name
        error_table.record(
            "filters.mel [float32]",
            "librosa MATLAB fixtures",
            np.abs(wts - d["wts"]).max() / np.abs(d["wts"]).max(),
        )


def test_empty_filters_warn(ref_data):
    d = scipy.io.loadmat(ref_data / "feature-melfb-017.mat")  # 120 filters over 129 bins below 2 kHz
    with pytest.warns(EmptyFilterWarning, match=r"of n_mels=120 filters are empty"):
        specux.filters.mel(sr=float(d["sr"][0, 0]), n_fft=int(d["nfft"][0, 0]), n_mels=120, fmax=2000.0)


@pytest.mark.parametrize("kind", ["hz_to_mel", "mel_to_hz"])
def test_mel_conversion_fixtures(ref_data, kind):
    fn = getattr(specux, kind)
    for path in _files(ref_data, f"feature-{kind}-*.mat"):
        d = scipy.io.loadmat(path)
        got = fn(d["f"].astype(float), htk=bool(d["htk"][0, 0]))
        assert np.allclose(got, d["result"]), path.name


def test_hz_to_octs_fixtures(ref_data):
    for path in _files(ref_data, "feature-hz_to_octs-*.mat"):
        d = scipy.io.loadmat(path)
        assert np.allclose(specux.hz_to_octs(d["f"].astype(float)), d["result"]), path.name
