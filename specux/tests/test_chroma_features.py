"""specux.chroma_stft and specux.chroma_cqt against librosa 0.11 and the NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

import specux
from specux._reference import chroma as ref

librosa = pytest.importorskip("librosa")

pytestmark = pytest.mark.filterwarnings("ignore:n_fft=.*is too large:UserWarning")

SR = 22050

#: (comparison, real precision) -> largest relative error accepted (max |a - b| / max |b|)
TOL = {
    ("chroma_stft", "float32"): 1e-5,
    ("chroma_stft", "float64"): 1e-12,
    # through cqt: librosa's single-precision filter rounding (see test_cqt_transform)
    ("chroma_cqt", "float32"): 2e-5,
    ("chroma_cqt", "float64"): 1e-6,
}


def check(error_table, op, peer, got, expected, dtype):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    err = error_table.record(op, peer, float(np.abs(got - expected).max() / np.abs(expected).max()))
    tol = TOL[(op, np.dtype(dtype).name)]
    assert err <= tol, f"{op} vs {peer}: relative error {err:.3e} > {tol:.1e}"


def chord(seconds=1.0, detune=0.0, dtype=np.float64):
    t = np.arange(int(seconds * SR)) / SR
    y = sum(np.sin(2 * np.pi * specux.note_to_hz(n) * 2 ** (detune / 12) * t) for n in ("C4", "E4", "G4"))
    y = y + 0.05 * np.random.default_rng(1).standard_normal(t.size)
    return y.astype(dtype)


STFT_CASES = [
    {},
    {"tuning": 0.0, "n_chroma": 24, "norm": 2, "hop_length": 300, "n_fft": 1024},
    {"center": False, "octwidth": None, "base_c": False, "window": "hamming", "win_length": 1500},
    {"pad_mode": "reflect", "norm": None, "ctroct": 4.0, "tuning": 0.25},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_chroma_stft_matches_librosa(case, dtype, error_table):
    kw = STFT_CASES[case]
    y = chord(detune=0.2, dtype=dtype)
    check(
        error_table,
        "chroma_stft",
        "librosa",
        specux.chroma_stft(y, sr=SR, **kw),
        librosa.feature.chroma_stft(y=y, sr=SR, **kw),
        dtype,
    )


def test_chroma_stft_from_a_power_spectrogram_matches_reference():
    y = chord()
    S = np.abs(librosa.stft(y, n_fft=1024)) ** 2
    got = specux.chroma_stft(S=S, sr=SR, tuning=0.1)
    np.testing.assert_allclose(
        got, librosa.feature.chroma_stft(S=S, sr=SR, tuning=0.1), rtol=1e-12, atol=1e-14
    )
    bank = ref.chroma_filter(sr=SR, n_fft=1024, tuning=0.1)
    np.testing.assert_allclose(got, ref.chroma_from_power(S, bank.astype(np.float32), np.inf), rtol=1e-6)


def test_chroma_stft_of_a_chord_peaks_at_its_notes():
    C = specux.chroma_stft(chord(), sr=SR).mean(axis=-1)
    assert set(np.argsort(C)[-3:]) == {0, 4, 7}  # C, E, G


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"tuning": 0.0, "bins_per_octave": 24, "n_octaves": 6, "norm": 2, "hop_length": 256},
        {"fmin": 40.0, "threshold": 0.1, "window": np.array([0.25, 1.0, 0.25]), "tuning": 0.0},
        {"bins_per_octave": None, "n_chroma": 12, "tuning": 0.0},
    ],
)
def test_chroma_cqt_matches_librosa(kw, dtype, error_table):
    y = chord(detune=-0.15, dtype=dtype)
    check(
        error_table,
        "chroma_cqt",
        "librosa (soxr_hq)",
        specux.chroma_cqt(y, sr=SR, **kw),
        librosa.feature.chroma_cqt(y=y, sr=SR, **kw),
        dtype,
    )


def test_chroma_cqt_from_a_given_cqt_and_its_notes():
    y = chord()
    C = np.abs(librosa.cqt(y, sr=SR, n_bins=252, bins_per_octave=36))
    got = specux.chroma_cqt(C=C, sr=SR)
    np.testing.assert_allclose(got, librosa.feature.chroma_cqt(C=C, sr=SR), rtol=1e-6, atol=1e-7)
    assert set(np.argsort(got.mean(axis=-1))[-3:]) == {0, 4, 7}


def test_batch_dimensions_and_torch():
    y = np.stack([chord(0.5), chord(0.5, detune=0.3)])
    for func in (specux.chroma_stft, specux.chroma_cqt):
        got = func(y, sr=SR, tuning=0.0)
        for i in range(2):
            np.testing.assert_allclose(got[i], func(y[i], sr=SR, tuning=0.0), rtol=1e-12, atol=1e-14)
    torch = pytest.importorskip("torch")
    yt = torch.from_numpy(y.astype(np.float32))
    for func in (specux.chroma_stft, specux.chroma_cqt):
        out = func(yt, sr=SR, tuning=0.0)
        assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
        np.testing.assert_array_equal(out.numpy(), func(y.astype(np.float32), sr=SR, tuning=0.0))


def test_bad_inputs_raise_clear_errors():
    y = chord(0.3)
    with pytest.raises(ValueError, match="either y"):
        specux.chroma_stft(sr=SR)
    with pytest.raises(ValueError, match="either y"):
        specux.chroma_cqt(sr=SR)
    with pytest.raises(ValueError, match="multiple of n_chroma"):
        specux.chroma_cqt(y, sr=SR, bins_per_octave=30)
    with pytest.raises(ValueError, match="cqt_mode"):
        specux.chroma_cqt(y, sr=SR, cqt_mode="hybrid")
    with pytest.raises(TypeError, match="float32 or float64"):
        specux.chroma_stft(np.arange(5000), sr=SR)
    with pytest.raises(ValueError, match="norm"):
        specux.chroma_stft(y, sr=SR, norm=-2, tuning=0.0)


def test_non_finite_frames_propagate():
    y = chord(0.5)
    y[4000] = np.nan
    C = specux.chroma_stft(y, sr=SR, tuning=0.0)
    frame = round(4000 / 512)
    assert np.isnan(C[:, frame]).all() and np.isfinite(C[:, 0]).all() and np.isfinite(C[:, -1]).all()
