"""specux.mfcc against librosa and torchaudio (compat), specux.lfcc against torchaudio, and both against the
NumPy reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import specux
from specux._reference import cepstral as ref
from specux._spec.features import dct_matrix, mel_validate
from specux._validate import CepstralParams

librosa = pytest.importorskip("librosa")
SR = 16000


def signals(dtype="float64") -> list[np.ndarray]:
    t = np.arange(6000) / SR
    rng = np.random.default_rng(11)
    # a little noise under the tones keeps every band well above float32 rounding: decibels of bands at the
    # rounding level (which a pure tone leaves within top_db of its peak) compare noise with noise
    floor = 1e-3 * rng.standard_normal(6000)
    return [
        (np.sin(2 * np.pi * 700 * t) + floor).astype(dtype),
        (np.sin(2 * np.pi * (80 + 2500 * t) * t) + floor).astype(dtype),
        (0.1 * rng.standard_normal((2, 6000))).astype(dtype),
    ]


PARAMS = [
    dict(),
    dict(n_mfcc=13, lifter=22, n_fft=512, hop_length=160),
    dict(n_mfcc=30, dct_type=3, norm=None, n_mels=64, htk=True, center=False),
    dict(n_mfcc=20, dct_type=1, norm="ortho", n_mels=40, n_fft=1023, hop_length=200, lifter=10),
    dict(n_mfcc=20, dct_type=2, norm=None, n_mels=40, pad_mode="reflect"),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "kw", PARAMS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()) or "defaults"
)
def test_mfcc_matches_librosa(kw, dtype, compare):
    for y in signals(dtype):
        got = specux.mfcc(y, sr=SR, **kw)
        want = librosa.feature.mfcc(y=y, sr=SR, **kw)
        assert got.shape == want.shape and got.dtype == np.dtype(dtype)
        key = "mfcc_vs_librosa" if dtype == "float64" else "mfcc"
        compare("mfcc", "librosa 0.11", got, want, tol_key=key, dtype=dtype)


def test_mfcc_from_log_mel_and_top_db(compare):
    mel = librosa.feature.melspectrogram(y=signals()[2], sr=SR, n_mels=40)
    S = librosa.power_to_db(mel)
    compare("mfcc", "librosa 0.11", specux.mfcc(S=S, n_mfcc=13), librosa.feature.mfcc(S=S, n_mfcc=13))
    for top_db in (None, 40.0):
        want = librosa.feature.mfcc(S=librosa.power_to_db(mel, top_db=top_db), n_mfcc=13)
        got = specux.mfcc(signals()[2], sr=SR, n_mels=40, n_mfcc=13, top_db=top_db)
        compare("mfcc", "librosa 0.11", got, want, tol_key="mfcc_vs_librosa")


def test_mfcc_matches_reference(compare):
    y = signals()[2]
    mel_p = mel_validate(
        y,
        from_spectrogram=False,
        sr=SR,
        n_fft=512,
        hop_length=128,
        win_length=None,
        window="hann",
        center=True,
        pad_mode=None,
        power=2.0,
        n_mels=40,
        fmin=0.0,
        fmax=None,
        htk=None,
        norm="auto",
        compat=None,
    )
    for dct_type, norm, lifter in [(2, "ortho", 0.0), (2, None, 22.0), (1, "ortho", 0.0), (3, None, 5.0)]:
        p = CepstralParams(
            mel_p, 13, dct_type, norm, lifter, "power_to_db", 80.0, dct_matrix(13, 40, dct_type, norm, lifter)
        )
        got = specux.mfcc(
            y,
            sr=SR,
            n_fft=512,
            hop_length=128,
            n_mels=40,
            n_mfcc=13,
            dct_type=dct_type,
            norm=norm,
            lifter=lifter,
            backend="cpu",
        )
        compare("mfcc", "specux reference", got, ref.cepstrum(y, p))


@pytest.mark.parametrize(
    "kw",
    [dict(), dict(n_mfcc=13, n_mels=40, n_fft=512), dict(sr=8000, n_mfcc=20, n_mels=32, f_max=3500.0)],
    ids=str,
)
def test_mfcc_compat_torchaudio(kw, compare):
    torch = pytest.importorskip("torch")
    torchaudio = pytest.importorskip("torchaudio")
    melkw = {k: v for k, v in kw.items() if k in ("n_mels", "n_fft", "f_max")}
    ta = torchaudio.transforms.MFCC(
        sample_rate=kw.get("sr", 16000), n_mfcc=kw.get("n_mfcc", 40), melkwargs=melkw
    )
    ours = {("fmax" if k == "f_max" else k): v for k, v in kw.items()}
    for y in signals("float32"):
        yt = torch.tensor(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            want = ta(yt)
            got = specux.mfcc(yt, compat="torchaudio", **ours)
        assert isinstance(got, torch.Tensor) and got.shape == want.shape
        compare("mfcc compat=torchaudio", "torchaudio", got, want, tol_key="mfcc_vs_torchaudio")
    # torchaudio's top_db floor is per item of a 4-D input, over the whole of a 3-D one
    y4 = torch.tensor(np.stack([signals("float32")[2], 1e-3 * signals("float32")[2]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        compare(
            "mfcc compat=torchaudio",
            "torchaudio",
            specux.mfcc(y4, compat="torchaudio", **ours),
            ta(y4),
            tol_key="mfcc_vs_torchaudio",
        )


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(n_filter=64, n_lfcc=20, f_max=6000.0),
        dict(log_lf=True, n_filter=40, n_lfcc=13),
        dict(norm=None, n_fft=512, hop_length=128),
        dict(sample_rate=8000, n_filter=48, f_min=100.0),
        dict(n_fft=400, win_length=300, center=False, power=1.0),
    ],
    ids=str,
)
def test_lfcc_matches_torchaudio(kw, compare):
    torch = pytest.importorskip("torch")
    torchaudio = pytest.importorskip("torchaudio")
    spec_names = ("n_fft", "win_length", "hop_length", "center", "power", "pad_mode")
    speckw = {k: v for k, v in kw.items() if k in spec_names}
    ta = torchaudio.transforms.LFCC(**{k: v for k, v in kw.items() if k not in spec_names}, speckwargs=speckw)
    for y in signals("float32"):
        yt = torch.tensor(y)
        got = specux.lfcc(yt, **kw)
        want = ta(yt)
        assert isinstance(got, torch.Tensor) and got.shape == want.shape
        compare("lfcc", "torchaudio", got, want, tol_key="lfcc_vs_torchaudio")


def test_lfcc_matches_reference(compare):
    y = signals()[2]
    got = specux.lfcc(y, n_filter=48, n_lfcc=20)
    from specux._filters.linear import linear
    from specux._spec.stft import stft_validate
    from specux._validate import MelParams

    stft_p = stft_validate(y, n_fft=400, hop_length=200, pad_mode="reflect")
    p = CepstralParams(
        MelParams(stft_p, 2.0, linear(sr=16000, n_fft=400, n_filter=48).astype(np.float64), "float64"),
        20,
        2,
        "ortho",
        0.0,
        "torchaudio_db",
        80.0,
        dct_matrix(20, 48, 2, "ortho", 0.0),
    )
    compare("lfcc", "specux reference", got, ref.cepstrum(y, p))


def test_bad_input():
    y = signals()[0]
    with pytest.raises(ValueError, match="n_mfcc=50 must be <= the number of mel bands"):
        specux.mfcc(y, n_mels=40, n_mfcc=50)
    with pytest.raises(ValueError, match="lifter must be a non-negative"):
        specux.mfcc(y, lifter=-1)
    with pytest.raises(ValueError, match="dct_type must be one of 1, 2, 3"):
        specux.mfcc(y, dct_type=4)
    with pytest.raises(ValueError, match="norm must be one of None, 'ortho'"):
        specux.mfcc(y, norm="forward")
    with pytest.raises(ValueError, match="n_lfcc=50 must be <= n_filter=40"):
        specux.lfcc(y, n_filter=40, n_lfcc=50)
    with pytest.raises(ValueError, match="dct_type must be one of 2"):
        specux.lfcc(y, dct_type=3)
    with pytest.raises(ValueError, match=r"f_max=9000\.0 Hz is above the Nyquist"):
        specux.lfcc(y, f_max=9000.0)
    with pytest.raises(TypeError, match="float16"):
        specux.lfcc(y.astype(np.float16))


def test_nan_frames_do_not_poison_others():
    y = signals()[1].copy()
    y[3000] = np.nan
    M = specux.mfcc(y, sr=SR, n_fft=256, hop_length=64, n_mels=32, n_mfcc=13)
    bad = np.isnan(M).any(axis=0)
    assert 0 < bad.sum() <= 5 and np.isfinite(M[:, ~bad]).all()
    clean = specux.mfcc(signals()[1], sr=SR, n_fft=256, hop_length=64, n_mels=32, n_mfcc=13)
    np.testing.assert_allclose(M[:, ~bad], clean[:, ~bad], rtol=1e-9, atol=1e-9)
