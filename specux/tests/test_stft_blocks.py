"""The CPU stft frames the signal without padding all of it, windows and transforms blocks of frames on the
pool's threads and has the FFT write into the output; its numbers must be those of the plain computation (pad
the whole signal, frame it, window every frame, one real FFT over all frames), bit for bit, whatever the
block size, pad mode, signal length or FFT entry point."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.fft

import specux
from specux._backends.cpu import stft as stft_module
from specux._backends.cpu.stft import _frames
from specux._spec.stft import stft_validate
from specux._validate import PAD_MODES


def whole_signal_stft(y: np.ndarray, **kw) -> np.ndarray:
    p = stft_validate(y, **kw)
    x = np.asarray(y, dtype=p.dtype).reshape(-1, y.shape[-1])
    X = scipy.fft.rfft(_frames(x, p), axis=-1)  # (B, T, F)
    return X.reshape((*y.shape[:-1], *X.shape[1:])).swapaxes(-1, -2)


FRAMES = [(512, 160, None), (511, 100, None), (64, 16, 33), (300, 299, None), (8, 20, None), (1, 1, None)]
LENGTHS = [1, 5, 63, 64, 65, 300, 1000, 4001]
CASES = [
    (frame, mode, n)
    for frame, mode, n in itertools.product(FRAMES, (*PAD_MODES, "no centring"), LENGTHS)
    if mode != "no centring" or n >= frame[0]
]


@pytest.mark.filterwarnings("ignore:stft. n_fft=.*larger than the signal")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: "{}-{}-{}".format(*CASES[i]))
def test_blocks_give_the_whole_signal_numbers(monkeypatch, case, dtype):
    (n_fft, hop, win_length), mode, n = CASES[case]
    # small blocks: many of them, some straddling the frames that reach into the padding
    monkeypatch.setattr(stft_module, "_STFT_BLOCK_BYTES", 1 << 10)
    x = np.random.default_rng(case).standard_normal((3, n)).astype(dtype)
    kw = dict(n_fft=n_fft, hop_length=hop, win_length=win_length, window="hamming")
    if mode == "no centring":
        kw["center"] = False
    else:
        kw["pad_mode"] = mode
    got = specux.stft(x, **kw, backend="cpu")
    np.testing.assert_array_equal(got, whole_signal_stft(x, **kw))


@pytest.mark.parametrize("block_bytes", [1 << 10, 1 << 14, 1 << 18, 1 << 24])
def test_block_size_does_not_change_the_numbers(monkeypatch, block_bytes):
    x = np.random.default_rng(1).standard_normal((2, 3, 20_000)).astype(np.float32)
    want = whole_signal_stft(x, n_fft=512, hop_length=160)
    monkeypatch.setattr(stft_module, "_STFT_BLOCK_BYTES", block_bytes)
    np.testing.assert_array_equal(specux.stft(x, n_fft=512, hop_length=160), want)


def test_public_rfft_gives_the_same_numbers(monkeypatch):
    # without scipy's pocketfft entry point that writes into the output, the public scipy.fft.rfft is used
    x = np.random.default_rng(2).standard_normal((4, 9000))
    kw = dict(n_fft=400, hop_length=100, pad_mode="reflect")
    direct = specux.stft(x, **kw)
    monkeypatch.setattr(stft_module, "_pocketfft_r2c", lambda: None)
    np.testing.assert_array_equal(specux.stft(x, **kw), direct)
    np.testing.assert_array_equal(direct, whole_signal_stft(x, **kw))


@pytest.mark.parametrize("output", ["magnitude", "power", "real_imag"])
def test_other_outputs_come_from_the_same_spectrum(output):
    x = np.random.default_rng(3).standard_normal((2, 7000)).astype(np.float32)
    D = whole_signal_stft(x, n_fft=256, hop_length=64)
    want = {"magnitude": np.abs(D), "power": D.real**2 + D.imag**2,
            "real_imag": np.stack([D.real, D.imag], axis=-1)}[output]
    got = specux.stft(x, n_fft=256, hop_length=64, output=output)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * float(np.abs(want).max()))


def test_input_is_left_alone():
    x = np.random.default_rng(4).standard_normal((2, 5000)).astype(np.float32)
    before = x.copy()
    specux.stft(x, n_fft=512, hop_length=128, pad_mode="reflect")
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 64, 100])
@pytest.mark.parametrize("columns", [slice(None), slice(3, 40)])
def test_the_window_tile_multiplies_every_row_once(n, columns):
    """A block is windowed a tile's rows at a time, then the rest: every row multiplied once by the window,
    bit for bit the broadcast product, also in a view of the block's middle columns (win_length < n_fft)."""
    rng = np.random.default_rng(n)
    block = rng.standard_normal((max(n, 1), 48)).astype(np.float32)[:n]
    window = rng.standard_normal(48).astype(np.float32)[columns]
    want = block[:, columns] * window
    tile = np.ascontiguousarray(np.broadcast_to(window, (stft_module._TILE_ROWS, window.size)))
    rows = block[:, columns]
    stft_module._times_tile(rows, tile)
    np.testing.assert_array_equal(block[:, columns], want)
