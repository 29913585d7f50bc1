"""The stft's adjoint (the gradient of specux::stft) runs in blocks of output samples spread over the cores;
its numbers must be those of the whole-batch computation (the one-sided FFT's adjoint of every frame, the
window, the fixed-order overlap-add, the adjoint of the padding), bit for bit, for every output mode."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specux._backends.cpu import adjoint_stft as _adjoint_stft
from specux._backends.cpu import stft as stft_module
from specux._backends.cpu.adjoint_stft import frames_adjoint, frames_to_signal, spectrum_tf
from specux._spec.stft import stft_validate
from specux._validate import PAD_MODES

FRAMES = [(512, 160, None), (511, 100, None), (64, 16, 33), (300, 299, None), (8, 20, None), (256, 64, None)]
LENGTHS = [5, 64, 65, 300, 4001]
CASES = [
    (frame, mode, n)
    for frame, mode, n in itertools.product(FRAMES, (*PAD_MODES, "no centring"), LENGTHS)
    if mode != "no centring" or n >= frame[0]
]


def _params(case: int, dtype) -> object:
    (n_fft, hop, win_length), mode, n = CASES[case]
    kw = dict(n_fft=n_fft, hop_length=hop, win_length=win_length, window="hamming")
    if mode == "no centring":
        kw["center"] = False
    else:
        kw["pad_mode"] = mode
    x = np.random.default_rng(case).standard_normal((3, n)).astype(dtype)
    return stft_validate(x, **kw)


@pytest.mark.filterwarnings("ignore:stft. n_fft=.*larger than the signal")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: "{}-{}-{}".format(*CASES[i]))
def test_blocks_give_the_whole_batch_numbers(monkeypatch, case, dtype):
    p = _params(case, dtype)
    shape = (3, p.n_frames, p.n_fft // 2 + 1)
    rng = np.random.default_rng(case + 1)
    cdtype = np.result_type(dtype, np.complex64)
    G = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(cdtype)
    want = frames_to_signal(frames_adjoint(G, p), p)
    # small blocks: many tasks, and the frames shared by neighbouring tasks
    monkeypatch.setattr(stft_module, "_STFT_BLOCK_BYTES", 1 << 10)
    got = _adjoint_stft.spectrum_adjoint(G, p)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # a gradient laid out (B, F, T), as the transposed view of a (..., F, T) array, reads the same
    Gt = np.ascontiguousarray(G.swapaxes(-1, -2)).swapaxes(-1, -2)
    np.testing.assert_array_equal(_adjoint_stft.spectrum_adjoint(Gt, p), want)


@pytest.mark.parametrize("output", ["power", "magnitude"])
def test_modulus_outputs_give_the_whole_batch_numbers(monkeypatch, output):
    x = np.random.default_rng(5).standard_normal((2, 3000)).astype(np.float32)
    p = stft_validate(x, n_fft=256, hop_length=100, output=output, pad_mode="reflect")
    g = np.random.default_rng(6).standard_normal((2, 129, p.n_frames)).astype(np.float32)
    X = spectrum_tf(x, p)
    G = _adjoint_stft._modulus_grad(g.swapaxes(-1, -2), X, output)
    want = frames_to_signal(frames_adjoint(G, p), p)
    monkeypatch.setattr(stft_module, "_STFT_BLOCK_BYTES", 1 << 12)
    got = _adjoint_stft.stft_backward(g, x, p, (2,))
    np.testing.assert_array_equal(got, want)


def test_public_irfft_gives_the_same_numbers(monkeypatch):
    x = np.random.default_rng(7).standard_normal((2, 5000))
    p = stft_validate(x, n_fft=400, hop_length=100)
    G = spectrum_tf(x, p)
    direct = _adjoint_stft.spectrum_adjoint(G, p)
    monkeypatch.setattr(stft_module, "_pocketfft_c2r", lambda: None)
    np.testing.assert_array_equal(_adjoint_stft.spectrum_adjoint(G, p), direct)


def test_the_gradient_is_left_alone():
    x = np.random.default_rng(8).standard_normal((2, 3000)).astype(np.float32)
    p = stft_validate(x, n_fft=256, hop_length=64)
    G = spectrum_tf(x, p)
    before = G.copy()
    _adjoint_stft.spectrum_adjoint(G, p)
    np.testing.assert_array_equal(G, before)
