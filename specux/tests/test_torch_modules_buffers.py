"""specux.torch's nn.Module wrappers: buffers registered, moved by .to(), results equal the functional API."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import specux  # noqa: E402
import specux.torch as st  # noqa: E402

SR = 8000


def tones(batch: int = 2, n: int = 2400) -> np.ndarray:
    t = np.arange(n) / SR
    rng = np.random.default_rng(3)
    return (np.sin(2 * math.pi * 440 * t) + 0.2 * rng.standard_normal((batch, n))).astype(np.float64)


CASES = [
    # (module factory, expected buffer names, functional reference on numpy float64)
    (
        lambda **kw: st.STFT(n_fft=256, hop_length=64, **kw),
        {"window"},
        lambda y: specux.stft(y, n_fft=256, hop_length=64),
    ),
    (
        lambda **kw: st.STFT(
            n_fft=200, hop_length=50, win_length=150, window="hamming", output="power", **kw
        ),
        {"window"},
        lambda y: specux.stft(y, n_fft=200, hop_length=50, win_length=150, window="hamming", output="power"),
    ),
    (
        lambda **kw: st.MelSpectrogram(sr=SR, n_fft=256, hop_length=64, n_mels=20, **kw),
        {"window", "mel_basis"},
        lambda y: specux.melspectrogram(y, sr=SR, n_fft=256, hop_length=64, n_mels=20),
    ),
    (
        lambda **kw: st.MelSpectrogram(sr=SR, n_mels=20, compat="torchaudio", **kw),
        {"window", "mel_basis"},
        lambda y: specux.melspectrogram(y, sr=SR, n_mels=20, compat="torchaudio"),
    ),
    (
        lambda **kw: st.MFCC(sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=10, lifter=5, **kw),
        {"window", "mel_basis", "dct"},
        lambda y: specux.mfcc(y, sr=SR, n_fft=256, hop_length=64, n_mels=20, n_mfcc=10, lifter=5),
    ),
    (
        lambda **kw: st.LFCC(sample_rate=SR, n_fft=256, n_filter=24, n_lfcc=12, **kw),
        {"window", "filter_bank", "dct"},
        lambda y: specux.lfcc(y, sample_rate=SR, n_fft=256, n_filter=24, n_lfcc=12),
    ),
    (
        lambda **kw: st.CQT(sr=SR, hop_length=64, fmin=110.0, n_bins=24, res_type=None, **kw),
        {"weights_0", "weights_1"},
        lambda y: specux.cqt(y, sr=SR, hop_length=64, fmin=110.0, n_bins=24, res_type=None),
    ),
    (
        lambda **kw: st.VQT(sr=SR, hop_length=64, fmin=110.0, n_bins=24, res_type=None, **kw),
        {"weights_0", "weights_1"},
        lambda y: specux.vqt(y, sr=SR, hop_length=64, fmin=110.0, n_bins=24, res_type=None),
    ),
    (
        lambda **kw: st.Chroma(sr=SR, n_fft=256, hop_length=64, tuning=0.0, **kw),
        {"window", "chroma_bank"},
        lambda y: specux.chroma_stft(y, sr=SR, n_fft=256, hop_length=64, tuning=0.0),
    ),
    (
        lambda **kw: st.Chroma(
            "cqt", sr=SR, hop_length=64, fmin=110.0, n_octaves=2, tuning=0.0, res_type=None, **kw
        ),
        {"fold", "weights_0", "weights_1"},
        lambda y: specux.chroma_cqt(
            y, sr=SR, hop_length=64, fmin=110.0, n_octaves=2, tuning=0.0, res_type=None
        ),
    ),
]
IDS = [
    "stft",
    "stft_power",
    "mel",
    "mel_torchaudio",
    "mfcc",
    "lfcc",
    "cqt",
    "vqt",
    "chroma_stft",
    "chroma_cqt",
]


@pytest.mark.parametrize(("make", "buffers", "reference"), CASES, ids=IDS)
def test_buffers_move_with_to_and_results_match_functional(make, buffers, reference) -> None:
    module = make()
    names = {name for name, b in module.named_buffers() if b is not None}
    assert names == buffers
    assert set(module.state_dict()) == buffers
    assert all(b.dtype == torch.float32 for b in module.buffers())
    module = module.to(torch.float64)
    assert all(b.dtype == torch.float64 for b in module.buffers())
    y = tones()
    want = reference(y)
    # moved buffers keep their float32 rounding: agreement to float32 precision
    got = module(torch.from_numpy(y))
    assert (
        got.dtype
        == {np.dtype("float64"): torch.float64, np.dtype("complex128"): torch.complex128}[want.dtype]
    )
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # built in float64: the functional result
    exact = make(dtype=torch.float64)
    assert all(b.dtype == torch.float64 for b in exact.buffers())
    np.testing.assert_allclose(
        exact(torch.from_numpy(y)).numpy(), want, rtol=1e-9, atol=1e-9 * np.abs(want).max()
    )


@pytest.mark.parametrize(("make", "buffers", "reference"), CASES[:6], ids=IDS[:6])
def test_float32_modules_match_functional(make, buffers, reference) -> None:
    y = tones().astype(np.float32)
    got = make()(torch.from_numpy(y))
    want = reference(y)
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-4, atol=2e-5 * np.abs(want).max())


def test_istft_module_inverts_stft_module() -> None:
    y = torch.from_numpy(tones())
    stft = st.STFT(n_fft=256, hop_length=64, dtype=torch.float64)
    istft = st.ISTFT(256, hop_length=64, dtype=torch.float64)
    assert {n for n, _ in istft.named_buffers()} == {"window"}
    back = istft(stft(y), length=y.shape[-1])
    torch.testing.assert_close(back, y, rtol=1e-9, atol=1e-9)


def test_low_precision_buffer_with_float64_signal_is_refused() -> None:
    with pytest.raises(TypeError, match=r"module\.to"):
        st.MelSpectrogram(sr=SR, n_fft=256, n_mels=20)(torch.from_numpy(tones()))


def test_unknown_argument_names_the_accepted_ones() -> None:
    with pytest.raises(TypeError, match="n_mels"):
        st.MelSpectrogram(n_mel=40)


def test_modules_need_a_numeric_tuning_for_their_buffers() -> None:
    with pytest.raises(ValueError, match="tuning"):
        st.CQT(sr=SR, tuning=None)
    chroma = st.Chroma(sr=SR, n_fft=256, hop_length=64)  # tuning=None: estimated per call, no bank buffer
    assert {n for n, b in chroma.named_buffers() if b is not None} == {"window"}
    y = tones()
    np.testing.assert_allclose(
        st.Chroma(sr=SR, n_fft=256, hop_length=64, dtype=torch.float64)(torch.from_numpy(y)).numpy(),
        specux.chroma_stft(y, sr=SR, n_fft=256, hop_length=64),
        rtol=1e-9,
        atol=1e-12,
    )


def test_module_gradients_flow_to_the_signal() -> None:
    y = torch.from_numpy(tones()).requires_grad_()
    st.MFCC(sr=SR, n_fft=256, hop_length=64, n_mels=20).double()(y).sum().backward()
    assert y.grad is not None and torch.isfinite(y.grad).all() and y.grad.abs().sum() > 0


@pytest.mark.parametrize(("make", "buffers", "reference"), CASES, ids=IDS)
def test_modules_compile_with_their_buffers(make, buffers, reference) -> None:
    """The buffers reach the ops as tensors: the fake kernels see them and the graph has no break."""
    torch._dynamo.reset()
    module = make(dtype=torch.float64)
    y = torch.from_numpy(tones(n=1600))
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager", dynamic=False)
    torch.testing.assert_close(compiled(y), module(y), rtol=0, atol=0)
