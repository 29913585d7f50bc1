"""specux.melspectrogram against librosa, torchaudio (compat="torchaudio") and specux's NumPy reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import specux
from specux._reference import mel as ref
from specux._spec.features import mel_validate
from specux.errors import EmptyFilterWarning

librosa = pytest.importorskip("librosa")
SR = 16000


def signals(dtype="float64") -> list[np.ndarray]:
    t = np.arange(6000) / SR
    rng = np.random.default_rng(3)
    return [
        np.sin(2 * np.pi * 1000 * t).astype(dtype),
        np.sin(2 * np.pi * (50 + 3000 * t) * t).astype(dtype),
        rng.standard_normal((2, 2, 6000)).astype(dtype),
    ]


PARAMS = [
    dict(),
    dict(n_fft=511, hop_length=100, htk=True, norm=None),
    dict(n_fft=1024, hop_length=300, n_mels=40, fmin=100.0, fmax=6000.0, center=False),
    dict(n_fft=400, hop_length=160, n_mels=64, pad_mode="reflect", power=1.0, window="hamming"),
    dict(n_fft=512, hop_length=128, n_mels=32, norm=2.0, win_length=400),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "kw", PARAMS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()) or "defaults"
)
def test_melspectrogram_matches_librosa(kw, dtype, compare):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for y in signals(dtype):
            got = specux.melspectrogram(y, sr=SR, **kw)
            want = librosa.feature.melspectrogram(y=y, sr=SR, **kw)
            assert got.shape == want.shape and got.dtype == np.dtype(dtype)
            key = "melspectrogram_vs_librosa" if dtype == "float64" else "melspectrogram"
            compare("melspectrogram", "librosa 0.11", got, want, tol_key=key, dtype=dtype)


def test_melspectrogram_from_spectrogram(compare):
    y = signals()[2]
    S = np.abs(librosa.stft(y, n_fft=512, hop_length=128)) ** 2
    got = specux.melspectrogram(S=S, sr=SR, n_mels=40)
    want = librosa.feature.melspectrogram(S=S, sr=SR, n_mels=40)
    compare("melspectrogram", "librosa 0.11", got, want, tol_key="melspectrogram_vs_librosa")
    with pytest.raises(ValueError, match="exactly one of y"):
        specux.melspectrogram(y, S=S)
    with pytest.raises(ValueError, match="means n_fft=512; got n_fft=1024"):
        specux.melspectrogram(S=S, n_fft=1024)


@pytest.mark.parametrize("kw", PARAMS[:3], ids=str)
def test_melspectrogram_matches_reference(kw, compare):
    y = signals()[2]
    p = mel_validate(
        y,
        from_spectrogram=False,
        sr=SR,
        n_fft=kw.get("n_fft"),
        hop_length=kw.get("hop_length"),
        win_length=None,
        window="hann",
        center=kw.get("center", True),
        pad_mode=None,
        power=2.0,
        n_mels=kw.get("n_mels", 128),
        fmin=kw.get("fmin", 0.0),
        fmax=kw.get("fmax"),
        htk=kw.get("htk"),
        norm=kw.get("norm", "auto"),
        compat=None,
    )
    compare(
        "melspectrogram",
        "specux reference",
        specux.melspectrogram(y, sr=SR, **kw, backend="cpu"),
        ref.melspectrogram(y, p),
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(n_fft=512, hop_length=100, n_mels=64),
        dict(sr=22050, n_fft=1024, win_length=800, n_mels=80),
        dict(n_mels=40, fmin=20.0, fmax=7000.0, norm="slaney", htk=False),
        dict(center=False, power=1.0),
    ],
    ids=str,
)
def test_compat_torchaudio_melspectrogram(kw, compare):
    torch = pytest.importorskip("torch")
    torchaudio = pytest.importorskip("torchaudio")
    ta_names = {"sr": "sample_rate", "fmin": "f_min", "fmax": "f_max"}
    ta_kw = {ta_names.get(k, k): v for k, v in kw.items() if k != "htk"}
    if "htk" in kw:
        ta_kw["mel_scale"] = "htk" if kw["htk"] else "slaney"
    y = torch.tensor(signals("float32")[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = torchaudio.transforms.MelSpectrogram(**ta_kw)(y)
        got = specux.melspectrogram(y, compat="torchaudio", **kw)
    assert isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == torch.float32
    compare(
        "melspectrogram compat=torchaudio", "torchaudio", got, want, tol_key="melspectrogram_vs_torchaudio"
    )


def test_torchaudio_filter_bank_matches():
    torchaudio = pytest.importorskip("torchaudio")
    for sr, n_fft, n_mels, htk, norm in [
        (16000, 400, 128, True, None),
        (22050, 1024, 80, False, "slaney"),
        (8001, 256, 20, True, "slaney"),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            want = (
                torchaudio.functional.melscale_fbanks(
                    n_fft // 2 + 1, 0.0, float(sr // 2), n_mels, sr, norm, "htk" if htk else "slaney"
                )
                .numpy()
                .T
            )
            got = specux.filters.mel_torchaudio(sr=sr, n_fft=n_fft, n_mels=n_mels, htk=htk, norm=norm)
        # float32 emulation: torch.linspace's rounding differs from ours by 1 ulp at a few points, and the
        # triangle slopes (differences of nearby float32 frequencies) amplify that to ~1e-5 of the peak weight
        assert np.abs(got - want).max() <= 5e-5 * np.abs(want).max()


def test_bad_input():
    y = np.zeros(4000)
    with pytest.raises(ValueError, match=r"fmax=9000\.0 Hz is above the Nyquist frequency"):
        specux.melspectrogram(y, sr=16000, fmax=9000.0)
    with pytest.raises(ValueError, match="n_mels must be >= 1"):
        specux.melspectrogram(y, sr=16000, n_mels=0)
    with pytest.raises(ValueError, match="compat must be one of"):
        specux.melspectrogram(y, compat="kaldi")
    with pytest.raises(ValueError, match="power must be a positive"):
        specux.melspectrogram(y, power=0)
    with pytest.raises(ValueError, match="melspectrogram: norm must be"):
        specux.melspectrogram(y, norm="l2")
    with pytest.raises(TypeError, match="int32; accepted dtypes"):
        specux.melspectrogram(np.zeros(4000, np.int32))
    with pytest.raises(ValueError, match="y is empty"):
        specux.melspectrogram(np.zeros((2, 0)))
    with pytest.warns(EmptyFilterWarning, match="n_mels=256"):
        specux.melspectrogram(y, sr=16000, n_fft=256, n_mels=256)


def test_non_finite_frames_only():
    y = signals()[0].copy()
    y[3000] = np.nan
    M = specux.melspectrogram(y, sr=SR, n_fft=256, hop_length=64, n_mels=32)
    bad_frames = np.flatnonzero(np.isnan(M).any(axis=0))
    assert 0 < bad_frames.size <= 256 // 64 + 1
    assert np.isfinite(np.delete(M, bad_frames, axis=1)).all()


def test_torch_cpu_tensor_in_torch_out():
    torch = pytest.importorskip("torch")
    y = torch.randn(2, 4000)
    out = specux.melspectrogram(y, sr=SR, n_fft=512, hop_length=128, n_mels=40)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_allclose(
        out.numpy(), specux.melspectrogram(y.numpy(), sr=SR, n_fft=512, hop_length=128, n_mels=40), rtol=1e-6
    )
