"""specux.estimate_tuning / pitch_tuning / piptrack against librosa 0.11, and recovery of known detunings."""

from __future__ import annotations

import numpy as np
import pytest

import specux
from specux.ops.tuning import piptrack

librosa = pytest.importorskip("librosa")

SR = 22050


def tones(detune: float, seconds: float = 1.5, dtype=np.float64, notes=("A4", "E5", "C4")) -> np.ndarray:
    """Notes shifted by ``detune`` semitones, each with an octave harmonic, plus a little noise."""
    t = np.arange(int(seconds * SR)) / SR
    y = np.zeros_like(t)
    for note in notes:
        f = specux.note_to_hz(note) * 2 ** (detune / 12)
        y += np.sin(2 * np.pi * f * t) + 0.3 * np.sin(2 * np.pi * 2 * f * t)
    y += 0.01 * np.random.default_rng(7).standard_normal(t.size)
    return y.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("detune", [0.0, 0.2, -0.13, 0.41])
@pytest.mark.parametrize("bins_per_octave", [12, 36])
def test_estimate_tuning_matches_librosa(detune, dtype, bins_per_octave):
    y = tones(detune, dtype=dtype)
    got = specux.estimate_tuning(y, sr=SR, bins_per_octave=bins_per_octave)
    assert isinstance(got, float)
    assert got == librosa.estimate_tuning(y=y, sr=SR, bins_per_octave=bins_per_octave)


@pytest.mark.parametrize("detune", [0.2, -0.3, 0.1, 0.37])
def test_estimate_tuning_recovers_a_known_detune(detune):
    t = np.arange(int(1.5 * SR)) / SR
    y = sum(np.sin(2 * np.pi * specux.note_to_hz(n) * 2 ** (detune / 12) * t) for n in ("A5", "C6", "G5"))
    # long frames resolve the peaks finely enough for the 0.01-bin histogram
    assert specux.estimate_tuning(y, sr=SR, n_fft=8192) == pytest.approx(detune, abs=0.0151)
    assert specux.estimate_tuning(y, sr=SR) == pytest.approx(detune, abs=0.0301)


def test_estimate_tuning_from_a_spectrogram_and_options():
    y = tones(0.25)
    S = np.abs(librosa.stft(y, n_fft=4096, hop_length=1024))
    kw = {"n_fft": 4096, "resolution": 0.05, "fmin": 100.0, "fmax": 2000.0, "threshold": 0.2}
    assert specux.estimate_tuning(S=S, sr=SR, **kw) == librosa.estimate_tuning(S=S, sr=SR, **kw)
    assert specux.estimate_tuning(y, sr=SR, hop_length=256, n_fft=1024) == librosa.estimate_tuning(
        y=y, sr=SR, hop_length=256, n_fft=1024
    )


@pytest.mark.parametrize("ref", [None, 0.5, np.mean])
def test_piptrack_matches_librosa(ref):
    y = tones(0.1, seconds=0.5)
    pitches, mags = piptrack(y, sr=SR, ref=ref)
    expected_pitches, expected_mags = librosa.piptrack(y=y, sr=SR, ref=ref)
    np.testing.assert_array_equal(pitches > 0, expected_pitches > 0)
    np.testing.assert_allclose(pitches, expected_pitches, rtol=1e-12)
    np.testing.assert_allclose(mags, expected_mags, rtol=1e-10, atol=1e-12)


def test_pitch_tuning_matches_librosa_and_handles_no_pitches():
    freqs = np.random.default_rng(0).uniform(80, 2000, 400)
    for bpo, res in [(12, 0.01), (24, 0.05), (36, 0.02)]:
        assert specux.pitch_tuning(freqs, resolution=res, bins_per_octave=bpo) == librosa.pitch_tuning(
            freqs, resolution=res, bins_per_octave=bpo
        )
    assert specux.pitch_tuning(440.0 * 2 ** (np.array([0.2, 0.21, 0.2, -0.4]) / 12)) == pytest.approx(0.2)
    with pytest.warns(UserWarning, match="no positive frequencies"):
        assert specux.pitch_tuning([0.0, -3.0]) == 0.0
    with pytest.warns(UserWarning):
        assert specux.estimate_tuning(np.zeros(4096), sr=SR) == 0.0


def test_estimate_tuning_pools_batch_channels_and_accepts_torch():
    y = np.stack([tones(0.2, 1.0), tones(0.2, 1.0, notes=("G3",))])
    assert specux.estimate_tuning(y, sr=SR) == librosa.estimate_tuning(y=y, sr=SR)
    torch = pytest.importorskip("torch")
    assert specux.estimate_tuning(torch.from_numpy(y), sr=SR) == specux.estimate_tuning(y, sr=SR)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="resolution"):
        specux.pitch_tuning([440.0], resolution=0)
    with pytest.raises(ValueError, match="bins_per_octave"):
        specux.pitch_tuning([440.0], bins_per_octave=0)
    with pytest.raises(ValueError, match="either y"):
        specux.estimate_tuning(sr=SR)


@pytest.mark.parametrize(
    "call",
    [
        lambda S: specux.estimate_tuning(S=S, sr=22050),
        lambda S: specux.chroma_stft(S=S, sr=22050),
    ],
    ids=["estimate_tuning", "chroma_stft"],
)
def test_a_one_bin_spectrogram_is_refused_naming_s(call):
    """One frequency bin infers n_fft = 0: it used to divide by zero deep inside."""
    with pytest.raises(ValueError, match=r"S must have shape .* with at least 2 frequency bins"):
        call(np.ones((1, 5)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_fft, bins_per_octave", [(256, 12), (255, 24), (2048, 12), (1024, 36)])
def test_the_chroma_ops_kernel_is_estimate_tuning_of_the_spectrogram(n_fft, bins_per_octave, dtype):
    """The cpu backend's estimate that chroma_stft's torch ops call for tuning=None (no dispatch) is the
    public function's number bit for bit, with its defaults, also where n_fft is inferred from S (255:
    128 bins give n_fft 254, 2048: the default matches)."""
    from specux._backends.cpu.tuning import estimate_from_spectrogram

    y = tones(0.27, seconds=1.0, dtype=dtype)
    S = np.abs(specux.stft(y, n_fft=n_fft, hop_length=n_fft // 4, backend="cpu")) ** 2
    got = estimate_from_spectrogram(S, sr=SR, bins_per_octave=bins_per_octave)
    assert isinstance(got, float)
    assert got == specux.estimate_tuning(S=S, sr=SR, bins_per_octave=bins_per_octave)
    assert got == librosa.estimate_tuning(S=S, sr=SR, bins_per_octave=bins_per_octave)
