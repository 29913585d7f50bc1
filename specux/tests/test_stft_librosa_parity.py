"""specux.stft / istft against librosa 0.11, torch.stft and specux's own NumPy reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import specux
from specux._reference import stft as ref
from specux._spec.stft import istft_validate, stft_validate

librosa = pytest.importorskip("librosa")

SR = 8000


def signals(dtype="float64") -> dict[str, np.ndarray]:
    t = np.arange(4000) / SR
    rng = np.random.default_rng(7)
    return {
        "sine": np.sin(2 * np.pi * 440 * t).astype(dtype),
        "chirp": np.sin(2 * np.pi * (100 + 1500 * t) * t).astype(dtype),
        "noise": rng.standard_normal((2, 3, 4000)).astype(dtype),  # batch dimensions
    }


PARAMS = [
    dict(n_fft=512),
    dict(n_fft=511, hop_length=100),  # odd n_fft, non-power-of-two hop
    dict(n_fft=400, hop_length=123, win_length=300, window="hamming"),
    dict(n_fft=256, hop_length=64, center=False),
    dict(n_fft=300, hop_length=75, pad_mode="reflect"),
    dict(n_fft=257, hop_length=50, window=("kaiser", 8.0), pad_mode="reflect"),
    dict(n_fft=128, hop_length=37, win_length=101, window=("tukey", 0.3), center=False),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", PARAMS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_stft_matches_librosa(kw, dtype, compare):
    for y in signals(dtype).values():
        got = specux.stft(y, **kw)
        want = librosa.stft(y, **kw)
        assert got.dtype == want.dtype and got.shape == want.shape
        compare("stft", "librosa 0.11", got, want, dtype=dtype)


@pytest.mark.parametrize("kw", PARAMS[:5], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_stft_matches_reference(kw, compare):
    y = signals()["noise"]
    p = stft_validate(y, **kw)
    compare("stft", "specux reference", specux.stft(y, **kw, backend="cpu"), ref.stft(y, p))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", PARAMS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_istft_matches_librosa(kw, dtype, compare):
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    for y in signals(dtype).values():
        D = librosa.stft(y, **kw)
        for length in (None, y.shape[-1], y.shape[-1] - 37, y.shape[-1] + 50):
            got = specux.istft(D, length=length, **ikw)
            want = librosa.istft(D, length=length, **ikw)
            assert got.dtype == want.dtype and got.shape == want.shape
            if dtype == "float32":
                # where the squared-window sum is tiny (first samples without centring) float32 rounding is
                # amplified by the division in both libraries; compare where the sum is >= 1e-3
                p = istft_validate(D, length=length, **ikw)
                wss = ref.istft(D, p)[1]
                keep = wss >= 1e-3
                got, want = got[..., keep], want[..., keep]
            compare("istft", "librosa 0.11", got, want, dtype=dtype)


def test_istft_matches_reference(compare):
    y = signals()["noise"]
    for kw in PARAMS[:4]:
        D = specux.stft(y, **kw)
        ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
        p = istft_validate(D, length=4000, **ikw)
        compare("istft", "specux reference", specux.istft(D, length=4000, **ikw), ref.istft(D, p)[0])


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_fft=512),
        dict(n_fft=511, hop_length=100),
        dict(n_fft=400, hop_length=200, window="hamming"),
        dict(n_fft=256, hop_length=64, win_length=200, window="blackman"),
    ],
)
def test_round_trip_reconstructs_signal(kw):
    y = signals()["noise"]
    back = specux.istft(specux.stft(y, **kw), length=y.shape[-1], **kw)
    np.testing.assert_allclose(back, y, rtol=0, atol=1e-10)
    y32 = y.astype(np.float32)
    back32 = specux.istft(specux.stft(y32, **kw), length=y.shape[-1], **kw)
    assert back32.dtype == np.float32
    np.testing.assert_allclose(back32, y32, rtol=0, atol=2e-5)


def test_strict_nola_raises_with_positions():
    y = signals()["sine"]
    D = specux.stft(y, n_fft=256, hop_length=256, window="hann", center=True)
    with pytest.raises(
        specux.NolaError, match=r"NOLA.*15 of 3840 output samples \(positions 128, 384, "
    ) as info:
        specux.istft(D, hop_length=256, nola="raise")
    assert "hop_length" in str(info.value)
    # the default never raises, and leaves the unrecoverable samples undivided (finite)
    out = specux.istft(D, hop_length=256)
    assert np.isfinite(out).all()
    # a NOLA pair passes the strict check
    D2 = specux.stft(y, n_fft=256, hop_length=64)
    np.testing.assert_allclose(specux.istft(D2, hop_length=64, nola="raise", length=4000), y, atol=1e-10)


def test_output_modes(compare):
    y = signals()["noise"]
    D = specux.stft(y, n_fft=300, hop_length=70)
    compare(
        "stft", "specux complex mode", specux.stft(y, n_fft=300, hop_length=70, output="magnitude"), np.abs(D)
    )
    compare(
        "stft",
        "specux complex mode",
        specux.stft(y, n_fft=300, hop_length=70, output="power"),
        np.abs(D) ** 2,
    )
    ri = specux.stft(y, n_fft=300, hop_length=70, output="real_imag")
    assert ri.shape == (*D.shape, 2) and ri.dtype == np.float64
    np.testing.assert_array_equal(ri[..., 0], D.real)
    np.testing.assert_array_equal(ri[..., 1], D.imag)
    assert specux.stft(y.astype(np.float32), n_fft=64, output="power").dtype == np.float32


def test_matches_torch_stft_with_torch_conventions():
    torch = pytest.importorskip("torch")
    y = torch.randn(3, 5000, dtype=torch.float64)
    win = torch.hann_window(400, dtype=torch.float64)
    want = torch.stft(
        y, 400, hop_length=100, window=win, center=True, pad_mode="reflect", return_complex=True
    )
    got = specux.stft(y, n_fft=400, hop_length=100, pad_mode="reflect")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.complex128
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)
    back = specux.istft(got, hop_length=100, length=5000)
    assert isinstance(back, torch.Tensor)
    np.testing.assert_allclose(back.numpy(), y.numpy(), atol=1e-10)


def test_bad_input_names_the_parameter():
    y = np.zeros(1000)
    with pytest.raises(
        ValueError, match="n_fft=2048 is larger than the signal length 1000 with center=False"
    ):
        specux.stft(y, center=False)
    with pytest.raises(ValueError, match="hop_length must be >= 1"):
        specux.stft(y, n_fft=256, hop_length=0)
    with pytest.raises(ValueError, match="hop_length must be >= 1"):
        specux.stft(y, n_fft=256, hop_length=-4)
    with pytest.raises(TypeError, match="hop_length must be an int"):
        specux.stft(y, n_fft=256, hop_length=2.5)
    with pytest.raises(ValueError, match="win_length=300 must be <= n_fft=256"):
        specux.stft(y, n_fft=256, win_length=300)
    with pytest.raises(ValueError, match="y is empty"):
        specux.stft(np.zeros((3, 0)), n_fft=256)
    with pytest.raises(TypeError, match="int16; accepted dtypes on this backend: float32, float64"):
        specux.stft(np.zeros(1000, np.int16), n_fft=256)
    with pytest.raises(TypeError, match="float16; accepted dtypes on this backend: float32, float64"):
        specux.stft(np.zeros(1000, np.float16), n_fft=256)
    with pytest.raises(TypeError, match="complex128"):
        specux.stft(np.zeros(1000, np.complex128), n_fft=256)
    with pytest.raises(ValueError, match="pad_mode must be one of"):
        specux.stft(y, n_fft=256, pad_mode="mirror")
    with pytest.raises(ValueError, match="output must be one of"):
        specux.stft(y, n_fft=256, output="phase")
    with pytest.raises(ValueError, match="window: invalid window specification"):
        specux.stft(y, n_fft=256, window="no-such-window")
    with pytest.raises(ValueError, match="length must be 256"):
        specux.stft(y, n_fft=256, window=np.ones(100))
    with pytest.raises(ValueError, match="n_fft=300 needs 151 frequency bins"):
        specux.istft(np.zeros((129, 10), np.complex64), n_fft=300)
    with pytest.raises(ValueError, match="nola must be one of"):
        specux.istft(np.zeros((129, 10), np.complex64), nola="strict")
    with pytest.raises(TypeError, match="stft_matrix has dtype int64"):
        specux.istft(np.zeros((129, 10), np.int64))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = specux.stft(np.ones(100), n_fft=256)  # centred: allowed, with a warning (as librosa)
    assert out.shape == (129, 2) and any("larger than the signal length" in str(w.message) for w in caught)


def test_non_finite_values_stay_in_their_frames():
    y = signals()["sine"].copy()
    y[2000] = np.nan
    D = specux.stft(y, n_fft=256, hop_length=64)
    bad = np.isnan(D).any(axis=0)
    frames_with_nan = {t for t in range(D.shape[-1]) if t * 64 - 128 <= 2000 < t * 64 + 128}
    assert set(np.flatnonzero(bad)) == frames_with_nan
    y[2000] = np.inf
    D = specux.stft(y, n_fft=256, hop_length=64)
    assert np.isfinite(D[:, 0]).all() and not np.isfinite(D).all()
    back = specux.istft(specux.stft(y, n_fft=256, hop_length=64), hop_length=64)
    assert np.isfinite(back[:1500]).all()


def test_fixture_wav_round_trip(ref_data, compare):
    y, _ = librosa.load(ref_data / "test1_22050.wav", sr=None, mono=True, duration=1.0)
    D = specux.stft(y, n_fft=1024, hop_length=256)
    compare("stft", "librosa 0.11", D, librosa.stft(y, n_fft=1024, hop_length=256), dtype="float32")
    np.testing.assert_allclose(specux.istft(D, hop_length=256, length=len(y)), y, atol=2e-5)


def test_dtype_argument_sets_the_precision(compare):
    y = signals("float32")["chirp"]
    D = specux.stft(y, n_fft=256, dtype=np.complex128)
    assert D.dtype == np.complex128
    compare("stft", "librosa 0.11", D, librosa.stft(y.astype(np.float64), n_fft=256), dtype="float64")
    back = specux.istft(D, dtype=np.float32, length=y.shape[-1])
    assert back.dtype == np.float32
    with pytest.raises(TypeError, match=r"dtype=float16 is not supported"):
        specux.stft(y, n_fft=256, dtype=np.float16)
