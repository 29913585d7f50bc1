"""A signal shorter than the longest constant-Q filter warns, as stft warns for ``n_fft`` longer than the
signal (issue 14): same class (UserWarning), same wording pattern, for cqt, vqt and chroma_cqt with numpy and
torch inputs; a long enough signal does not warn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import specux

pytest.importorskip("soxr")

_PATTERN = (
    r"the longest filter \(\d+ samples, at [\d.]+ Hz\) is longer than the signal length 50; the frames are "
    r"mostly padding"
)


def _signal(n, torch_input):
    y = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    if torch_input:
        torch = pytest.importorskip("torch")
        return torch.from_numpy(y)
    return y


@pytest.mark.parametrize("torch_input", [False, True], ids=["numpy", "torch"])
@pytest.mark.parametrize("public", ["cqt", "vqt"])
def test_short_signal_warns(public, torch_input):
    y = _signal(50, torch_input)
    with pytest.warns(UserWarning, match=rf"^{public}: {_PATTERN}$"):
        getattr(specux, public)(y, sr=16000, n_bins=48)


@pytest.mark.parametrize("torch_input", [False, True], ids=["numpy", "torch"])
def test_chroma_cqt_short_signal_warns(torch_input):
    y = _signal(50, torch_input)
    # numpy chroma_cqt computes its transform through specux.cqt, which names itself
    with pytest.warns(UserWarning, match=rf"^(chroma_cqt|cqt): {_PATTERN}$"):
        specux.chroma_cqt(y, sr=16000, n_octaves=4, tuning=0.0)


def test_wording_follows_stft():
    with pytest.warns(UserWarning, match=r"^stft: n_fft=2048 is larger than the signal length 50; the frames "
                      r"are mostly padding$"):
        specux.stft(_signal(50, False))


@pytest.mark.parametrize("torch_input", [False, True], ids=["numpy", "torch"])
def test_long_signal_does_not_warn(torch_input):
    # the longest filter at 16 kHz from C1 with 48 bins: about 8480 samples
    y = _signal(9000, torch_input)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        specux.cqt(y, sr=16000, n_bins=48)
        specux.vqt(y, sr=16000, n_bins=48)
