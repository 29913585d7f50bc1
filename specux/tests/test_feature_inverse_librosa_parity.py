"""mel_to_stft, mel_to_audio, mfcc_to_mel and mfcc_to_audio against librosa.feature.inverse, their torch paths
and their checks."""

from __future__ import annotations

import numpy as np
import pytest
from specux_test_support import rel_err

import specux

librosa = pytest.importorskip("librosa")

# mel_to_stft runs librosa's solver (bounded L-BFGS from the clipped pseudo-inverse, librosa's blocks); the
# differences are rounding (matrix products for einsum, the bank built in float64) that the optimiser's path
# carries along: 2e-6 (float32) and 2e-10 (float64) of the peak seen for 2 s at 22.05 kHz
NNLS_TOL = {"float32": 2e-5, "float64": 1e-8}
# mfcc_to_mel is the same arithmetic as librosa's (scipy's idct, numpy's power)
MFCC_TOL = {"float32": 1e-6, "float64": 1e-12}


def noise(n: int, dtype="float64", channels: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(2)
    return rng.standard_normal(n if channels is None else (channels, n)).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mel_to_stft_matches_librosa(dtype):
    M = librosa.feature.melspectrogram(y=noise(4000, dtype), sr=8000, n_fft=256, hop_length=128, n_mels=40)
    want = librosa.feature.inverse.mel_to_stft(M, sr=8000, n_fft=256)
    got = specux.mel_to_stft(M, sr=8000, n_fft=256)
    assert got.dtype == want.dtype and got.shape == want.shape == (129, 32)
    assert rel_err(got, want) <= NNLS_TOL[dtype]


def test_mel_to_stft_blocks_batch_and_bank_options(monkeypatch):
    # librosa solves blocks of MAX_MEM_BLOCK bytes / (channels * n_mels * itemsize) frames: shrink the block
    # (in both) so that 2 channels x 32 bands of float64 are solved in blocks of 16 frames
    import librosa.util._nnls

    from specux.ops import inverse

    monkeypatch.setattr(librosa.util._nnls, "MAX_MEM_BLOCK", 2 * 32 * 8 * 16)
    monkeypatch.setattr(inverse, "_NNLS_BLOCK_BYTES", 2 * 32 * 8 * 16)
    y = noise(60 * 32, channels=2)
    kw = {"fmin": 100.0, "fmax": 3500.0, "htk": True, "norm": None}
    M = librosa.feature.melspectrogram(y=y, sr=8000, n_fft=256, hop_length=32, n_mels=32, power=1.0, **kw)
    assert M.shape[-1] > 3 * 16
    want = librosa.feature.inverse.mel_to_stft(M, sr=8000, n_fft=256, power=1.0, **kw)
    got = specux.mel_to_stft(M, sr=8000, n_fft=256, power=1.0, **kw)
    assert rel_err(got, want) <= NNLS_TOL["float64"]


@pytest.fixture
def seeded(monkeypatch):
    """librosa's mel_to_audio draws its start from an unseeded ``np.random.default_rng()``, as specux's does:
    seed that call for both."""
    make = np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: make(7 if seed is None else seed))


def test_mel_to_audio_matches_librosa(seeded):
    M = librosa.feature.melspectrogram(y=noise(4000, "float32"), sr=8000, n_fft=256, hop_length=64, n_mels=32)
    kw = {"sr": 8000, "n_fft": 256, "hop_length": 64, "n_iter": 4, "length": 4000}
    want = librosa.feature.inverse.mel_to_audio(M, **kw)
    got = specux.mel_to_audio(M, **kw)
    assert got.dtype == want.dtype == np.float32 and got.shape == (4000,)
    assert rel_err(got, want) <= 1e-4


CEPSTRA = [
    {},
    {"lifter": 22},
    {"dct_type": 3, "norm": None},
    {"dct_type": 1, "norm": None, "ref": 2.0},
]


@pytest.mark.parametrize("kw", CEPSTRA, ids=lambda kw: ",".join(kw) or "defaults")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mfcc_to_mel_matches_librosa(kw, dtype):
    mf_kw = {k: kw[k] for k in ("lifter", "dct_type", "norm") if k in kw}
    C = librosa.feature.mfcc(y=noise(8000, dtype), sr=8000, n_fft=256, n_mels=48, n_mfcc=24, **mf_kw)
    want = librosa.feature.inverse.mfcc_to_mel(C, n_mels=48, **kw)
    got = specux.mfcc_to_mel(C, n_mels=48, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape == (48, C.shape[-1])
    assert rel_err(got, want) <= MFCC_TOL[dtype]


def test_mfcc_to_mel_torch_same_numbers_and_gradients():
    torch = pytest.importorskip("torch")
    C = specux.mfcc(noise(4000), sr=8000, n_fft=256, n_mels=32, n_mfcc=13, lifter=10)
    want = specux.mfcc_to_mel(C, n_mels=32, lifter=10)
    Ct = torch.from_numpy(C).requires_grad_()
    got = specux.mfcc_to_mel(Ct, n_mels=32, lifter=10)
    assert isinstance(got, torch.Tensor) and rel_err(got.detach().numpy(), want) <= 1e-12
    small = torch.from_numpy(C[:, :3] / 10).requires_grad_()
    assert torch.autograd.gradcheck(lambda c: specux.mfcc_to_mel(c, n_mels=16, lifter=10), (small,))


def test_mfcc_to_audio_matches_librosa(seeded):
    C = librosa.feature.mfcc(y=noise(4000, "float32"), sr=8000, n_fft=256, hop_length=64, n_mels=32)
    kw = {"n_mels": 32, "sr": 8000, "n_fft": 256, "hop_length": 64, "n_iter": 2}
    want = librosa.feature.inverse.mfcc_to_audio(C, **kw)
    got = specux.mfcc_to_audio(C, **kw)
    assert got.shape == want.shape and rel_err(got, want) <= 1e-4


def test_bad_input_names_the_parameter():
    torch = pytest.importorskip("torch")
    M = np.ones((32, 10))
    with pytest.raises(TypeError, match=r"mel_to_stft: unknown mel filter bank argument.*fmn"):
        specux.mel_to_stft(M, sr=8000, n_fft=256, fmn=10.0)
    with pytest.raises(ValueError, match="mel_to_stft: power"):
        specux.mel_to_stft(M, sr=8000, n_fft=256, power=0)
    with pytest.raises(TypeError, match="mel_to_stft: M has dtype complex128"):
        specux.mel_to_stft(M.astype(complex), sr=8000, n_fft=256)
    with pytest.raises(specux.UnsupportedOperationError, match="mel_to_stft: no gradient"):
        specux.mel_to_stft(torch.ones(32, 10, requires_grad=True), sr=8000, n_fft=256)
    with pytest.raises(ValueError, match="mfcc_to_mel: lifter must be >= 0"):
        specux.mfcc_to_mel(M, lifter=-1)
    with pytest.raises(ValueError, match="mfcc_to_mel: dct_type"):
        specux.mfcc_to_mel(M, dct_type=4)
    with pytest.raises(ValueError, match="mfcc_to_mel: n_mels"):
        specux.mfcc_to_mel(M, n_mels=0)
    with pytest.raises(ValueError, match="mfcc_to_mel: norm"):
        specux.mfcc_to_mel(M, norm="forward")
