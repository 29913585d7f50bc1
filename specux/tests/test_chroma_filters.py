"""The chroma filter bank against librosa's MATLAB fixtures, librosa 0.11 and the element-wise reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io

from specux import filters
from specux._reference import chroma as ref

librosa = pytest.importorskip("librosa")


def _fixture_files(ref_data):
    files = sorted(ref_data.glob("feature-chromafb-*.mat"))
    assert files, "no feature-chromafb fixtures found"
    return files


def test_chroma_bank_matches_matlab_fixtures(ref_data, error_table):
    """librosa's own test: tuning from a440, octwidth 0 -> None, norm 2, base_c False, np.allclose."""
    worst = 0.0
    for path in _fixture_files(ref_data):
        data = scipy.io.loadmat(path, squeeze_me=True)
        n_chroma = int(data["nchroma"])
        tuning = n_chroma * (np.log2(float(data["a440"])) - np.log2(440.0))
        octwidth = None if float(data["octwidth"]) == 0 else float(data["octwidth"])
        got = filters.chroma(
            sr=float(data["sr"]),
            n_fft=int(data["nfft"]),
            n_chroma=n_chroma,
            tuning=tuning,
            ctroct=float(data["ctroct"]),
            octwidth=octwidth,
            norm=2,
            base_c=False,
        )
        expected = data["wts"][:, : got.shape[1]]
        assert np.allclose(got, expected), path.name
        worst = max(worst, float(np.abs(got - expected).max() / np.abs(expected).max()))
    error_table.record("filters.chroma", "MATLAB fixtures", worst)


@pytest.mark.parametrize(
    "kw",
    [
        {"sr": 22050, "n_fft": 2048},
        {"sr": 8000, "n_fft": 255, "n_chroma": 24, "tuning": 0.3, "octwidth": None, "base_c": False},
        {"sr": 44100, "n_fft": 512, "n_chroma": 7, "norm": np.inf, "ctroct": 4.0},
        {"sr": 16000, "n_fft": 1024, "norm": None, "tuning": -0.2},
    ],
)
def test_chroma_bank_matches_librosa_and_reference(kw):
    got = filters.chroma(**kw)
    assert got.dtype == np.float32 and got.shape == (kw.get("n_chroma", 12), 1 + kw["n_fft"] // 2)
    np.testing.assert_array_equal(got, librosa.filters.chroma(**kw))
    got64 = filters.chroma(**kw, dtype=np.float64)
    np.testing.assert_allclose(got64, ref.chroma_filter(**kw), rtol=1e-12, atol=1e-14)


def test_chroma_bank_is_memoised_and_read_only():
    a = filters.chroma(sr=22050, n_fft=2048)
    assert a is filters.chroma(sr=22050, n_fft=2048) and not a.flags.writeable


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"n_fft": 0}, "n_fft"),
        ({"n_chroma": 0}, "n_chroma"),
        ({"sr": -1.0}, "sr"),
        ({"octwidth": 0.0}, "octwidth"),
    ],
)
def test_chroma_bank_rejects_bad_arguments(kw, match):
    args = {"sr": 22050, "n_fft": 2048, **kw}
    with pytest.raises(ValueError, match=match):
        filters.chroma(**args)
