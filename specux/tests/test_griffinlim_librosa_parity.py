"""specux.griffinlim against librosa.griffinlim (same seed, same result within float rounding), on torch
tensors (same numbers, gradients), on opencl (the CPU's numbers within float32 rounding), and its checks."""

from __future__ import annotations

import numpy as np
import pytest
from specux_test_support import rel_err

import specux

librosa = pytest.importorskip("librosa")

# Griffin-Lim feeds each iterate's rounding into the next, so float32 differences grow with n_iter: about
# 1e-6 of the peak per iteration here (8 iterations: <= 2e-5 seen), while float64 stays near 1e-13.
TOL = {"float32": 1e-4, "float64": 1e-10}


def clip(n: int = 4000, dtype=np.float64, channels: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(1)
    t = np.arange(n) / 8000
    y = np.sin(2 * np.pi * 440 * t) + 0.3 * rng.standard_normal(n if channels is None else (channels, n))
    return y.astype(dtype)


CASES = [
    {},
    {"hop_length": 32, "win_length": 192},
    {"center": False},
    {"momentum": 0.0, "init": None},
    {"pad_mode": "reflect", "length": 4000},
    {"window": ("kaiser", 8.0), "momentum": 0.5},
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: ",".join(kw) or "defaults")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_librosa(kw, dtype):
    y = clip(dtype=dtype)
    stft_kw = {k: kw[k] for k in ("hop_length", "win_length", "window", "center") if k in kw}
    S = np.abs(librosa.stft(y, n_fft=256, **stft_kw))
    want = librosa.griffinlim(S, n_iter=8, n_fft=256, random_state=0, **kw)
    got = specux.griffinlim(S, n_iter=8, n_fft=256, random_state=0, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert rel_err(got, want) <= TOL[dtype]


def test_batch_generator_and_dtype():
    y = clip(channels=2)
    S = np.abs(librosa.stft(y, n_fft=256))
    want = librosa.griffinlim(S, n_iter=4, random_state=np.random.default_rng(3), dtype=np.float32)
    got = specux.griffinlim(S, n_iter=4, random_state=np.random.default_rng(3), dtype=np.float32)
    assert got.shape == want.shape == (2, 3968) and got.dtype == np.float32
    assert rel_err(got, want) <= TOL["float32"]


def test_recovers_a_consistent_spectrogram():
    y = clip(8000)
    S = np.abs(specux.stft(y, n_fft=256))
    out = specux.griffinlim(S, n_fft=256, n_iter=32, random_state=0, length=len(y))
    # the spectral convergence improves on the random start by far
    start = specux.griffinlim(S, n_fft=256, n_iter=0, random_state=0, length=len(y))
    err = lambda z: np.linalg.norm(np.abs(specux.stft(z, n_fft=256)) - S) / np.linalg.norm(S)  # noqa: E731
    assert err(out) < 0.5 * err(start)


def test_torch_same_numbers_and_gradients():
    torch = pytest.importorskip("torch")
    S = np.abs(specux.stft(clip(600), n_fft=64, hop_length=16))
    want = specux.griffinlim(S, n_fft=64, hop_length=16, n_iter=4, random_state=0)
    St = torch.from_numpy(S).requires_grad_()
    got = specux.griffinlim(St, n_fft=64, hop_length=16, n_iter=4, random_state=0)
    assert isinstance(got, torch.Tensor) and rel_err(got.detach().numpy(), want) <= TOL["float64"]
    small = torch.from_numpy(np.abs(specux.stft(clip(120), n_fft=32, hop_length=8))).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda s: specux.griffinlim(s, n_fft=32, hop_length=8, n_iter=2, random_state=0), (small,)
    )


def test_opencl_matches_cpu(opencl):
    y = clip(dtype=np.float32)
    S = np.abs(specux.stft(y, n_fft=256, hop_length=64))
    want = specux.griffinlim(S, n_fft=256, hop_length=64, n_iter=8, random_state=0, backend="cpu")
    got = specux.griffinlim(S, n_fft=256, hop_length=64, n_iter=8, random_state=0, backend="opencl")
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert rel_err(got, want) <= TOL["float32"]


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"n_iter": -1}, ValueError, "n_iter"),
        ({"n_iter": 2.0}, TypeError, "n_iter"),
        ({"momentum": -0.1}, ValueError, "momentum"),
        ({"init": "zeros"}, ValueError, "init"),
        ({"random_state": "seed"}, TypeError, "random_state"),
        ({"length": 100}, ValueError, "length"),
        ({"n_fft": 100}, ValueError, "n_fft"),
        ({"hop_length": 0}, ValueError, "hop_length"),
        ({"pad_mode": "mirror"}, ValueError, "pad_mode"),
    ],
)
def test_bad_input_names_the_parameter(kw, error, match):
    S = np.ones((129, 20))
    with pytest.raises(error, match=f"griffinlim: .*{match}"):
        specux.griffinlim(S, **kw)


def test_bad_spectrogram_and_momentum_warning():
    with pytest.raises(TypeError, match="griffinlim: S has dtype complex128"):
        specux.griffinlim(np.ones((129, 20), dtype=complex))
    with pytest.raises(ValueError, match="griffinlim: S must have at least 2"):
        specux.griffinlim(np.ones(129))
    with pytest.warns(UserWarning, match="momentum=1.5 > 1"):
        specux.griffinlim(np.ones((129, 20)), n_iter=1, momentum=1.5)
