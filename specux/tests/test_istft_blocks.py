"""The CPU istft runs in blocks of output samples spread over the cores; its numbers must be those of the
plain whole-signal computation (one inverse FFT over all frames, window, overlap-add, divide by the summed
squared windows where that sum is above tiny), bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.fft

import specux
from specux._backends.cpu import stft as stft_module
from specux._backends.cpu.stft import _fit, _overlap_add, _window_sumsquare
from specux._spec.stft import istft_validate


def whole_signal_istft(D: np.ndarray, **kw) -> np.ndarray:
    p = istft_validate(D, **kw)
    D = D.reshape(-1, *D.shape[-2:])[..., : p.n_frames].astype(np.result_type(p.dtype, np.complex64))
    start = p.n_fft // 2 if p.center else 0
    frames = scipy.fft.irfft(D.swapaxes(-1, -2), n=p.n_fft, axis=-1)
    frames *= p.window.astype(p.dtype)
    y = np.array(_fit(_overlap_add(frames, p.hop_length), start, p.out_length))
    wsum = _fit(_window_sumsquare(p), start, p.out_length)
    ok = wsum > np.finfo(p.dtype).tiny
    y[:, ok] /= wsum[ok]
    return y


CASES = [
    (frame, center, n, length)
    for frame, center, n, length in itertools.product(
        [(512, 128, None), (511, 100, None), (64, 16, 32), (2048, 512, None), (300, 299, None)],
        [True, False],
        [40, 700, 20_000],
        [None, "short", "long"],
    )
    # frames that leave samples to invert: a whole frame without centring, two frames with it
    if (n >= frame[0] if not center else n >= frame[1])
]


@pytest.mark.filterwarnings("ignore:stft. n_fft=.*larger than the signal")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_blocks_give_the_whole_signal_numbers(monkeypatch, case, dtype):
    (n_fft, hop, win_length), center, n, length = CASES[case]
    # small blocks: many tasks, and the frames shared between neighbouring tasks
    monkeypatch.setattr(stft_module, "_BLOCK_BYTES", 1 << 14)
    x = np.random.default_rng(case).standard_normal((3, n)).astype(dtype)
    D = specux.stft(x, n_fft=n_fft, hop_length=hop, win_length=win_length, center=center)
    kw = dict(n_fft=n_fft, hop_length=hop, win_length=win_length, center=center)
    kw["length"] = {None: None, "short": max(1, n // 2), "long": n + 3 * hop}[length]
    expected = whole_signal_istft(D, **kw)
    got = specux.istft(D, **kw, backend="cpu")
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n_frames", [1, 5, 9, 10, 5000])
def test_window_sums_kept_as_a_few_rows_are_those_of_every_frame(n_frames):
    # the summed squared windows are stored as a short run of frames; every sample must match the sum of
    # the squared window over all frames, added in the same order
    p = istft_validate(np.zeros((257, n_frames), np.complex64), n_fft=512, hop_length=100, window="hamming",
                       center=False)
    sq = (p.window**2).astype(p.dtype)
    expected = _overlap_add(np.broadcast_to(sq, (1, n_frames, 512)), 100)[0]
    np.testing.assert_array_equal(_window_sumsquare(p), expected)


def test_strict_nola_still_names_the_positions_past_the_frames():
    D = specux.stft(np.ones(4000), n_fft=512, hop_length=128)
    with pytest.raises(specux.NolaError, match="positions"):
        specux.istft(D, n_fft=512, hop_length=128, length=4000 + 1000, nola="raise")
