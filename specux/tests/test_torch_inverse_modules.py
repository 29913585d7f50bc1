"""specux.torch.GriffinLim and InverseMelScale against torchaudio's modules: signatures and defaults,
results, gradients, torch.compile(fullgraph=True), bad input."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
torchaudio = pytest.importorskip("torchaudio")

import specux.torch as st  # noqa: E402

# GriffinLim: torch.stft / istft and specux's round differently, and each iterate carries that into the next:
# over 32 iterations 1e-12 (float64) and 8e-4 (float32) of the peak were seen
GL_TOL = {torch.float64: 1e-9, torch.float32: 3e-3}
# InverseMelScale: the bank is torchaudio's within 1.3e-5 (float32 emulation; test_mel_peer_parity), the
# least-squares solution within 5e-6 of the peak seen
INV_TOL = 1e-4


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def spectrogram(dtype=torch.float64, n_fft: int = 400, **kw) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    t = torch.arange(4000, dtype=torch.float64) / 16000
    y = torch.sin(2 * torch.pi * 440 * t) + 0.3 * torch.randn(2, 4000, generator=g, dtype=torch.float64)
    return torchaudio.transforms.Spectrogram(n_fft=n_fft, **kw).to(dtype)(y.to(dtype))


@pytest.mark.parametrize("cls", ["GriffinLim", "InverseMelScale"])
def test_signature_and_defaults_are_torchaudios(cls):
    ours = inspect.signature(getattr(st, cls)).parameters
    theirs = inspect.signature(getattr(torchaudio.transforms, cls)).parameters
    assert list(ours) == list(theirs)
    assert {k: p.default for k, p in ours.items()} == {k: p.default for k, p in theirs.items()}


CASES = [
    {"rand_init": False},
    {"rand_init": True},
    {"rand_init": False, "win_length": 320, "hop_length": 80, "momentum": 0.0},
    {"rand_init": False, "power": 1.0, "length": 4000, "n_iter": 8},
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
def test_griffinlim_matches_torchaudio(kw, dtype):
    spec_kw = {k: kw[k] for k in ("win_length", "hop_length", "power") if k in kw}
    S = spectrogram(dtype, **spec_kw)
    theirs = torchaudio.transforms.GriffinLim(n_fft=400, **kw).to(dtype)
    ours = st.GriffinLim(n_fft=400, **kw).to(dtype)
    torch.manual_seed(5)  # the random start is torch.rand of the complex dtype in both
    want = theirs(S)
    torch.manual_seed(5)
    got = ours(S)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert rel(got, want) <= GL_TOL[dtype]


def test_griffinlim_gradients_and_compile():
    S = spectrogram(n_fft=32, hop_length=8)[:1, :, :6].clone()
    module = st.GriffinLim(n_fft=32, hop_length=8, n_iter=2, rand_init=False).to(torch.float64)
    assert torch.autograd.gradcheck(module, (S.clone().requires_grad_(),), fast_mode=True)
    torch._dynamo.reset()
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager", dynamic=False)
    xe, xc = S.clone().requires_grad_(), S.clone().requires_grad_()
    module(xe).pow(2).sum().backward()
    out = compiled(xc)
    out.pow(2).sum().backward()
    torch.testing.assert_close(out, module(S))
    torch.testing.assert_close(xc.grad, xe.grad)


@pytest.mark.parametrize(
    "kw",
    [
        {"n_stft": 257, "n_mels": 64},
        {"n_stft": 513, "n_mels": 80, "sample_rate": 22050, "f_min": 30.0, "f_max": 8000.0},
        {"n_stft": 257, "n_mels": 40, "norm": "slaney", "mel_scale": "slaney", "driver": "gelsd"},
    ],
)
def test_inverse_mel_scale_matches_torchaudio(kw):
    theirs = torchaudio.transforms.InverseMelScale(**kw)
    ours = st.InverseMelScale(**kw)
    assert ours.fb.shape == theirs.fb.shape and ours.fb.dtype == theirs.fb.dtype
    n_fft = 2 * (kw["n_stft"] - 1)
    y = torch.randn(2, 8000, generator=torch.Generator().manual_seed(1))
    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=kw.get("sample_rate", 16000),
        n_fft=n_fft,
        n_mels=kw["n_mels"],
        f_min=kw.get("f_min", 0.0),
        f_max=kw.get("f_max"),
        norm=kw.get("norm"),
        mel_scale=kw.get("mel_scale", "htk"),
    )(y)
    want, got = theirs(mel), ours(mel)
    assert got.shape == want.shape == (2, kw["n_stft"], mel.shape[-1])
    assert rel(got, want) <= INV_TOL


def test_inverse_mel_scale_gradients():
    module = st.InverseMelScale(n_stft=65, n_mels=16, sample_rate=8000).to(torch.float64)
    mel = torch.rand(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) + 0.5
    assert torch.autograd.gradcheck(module, (mel.requires_grad_(),), fast_mode=True)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match=r"GriffinLim: momentum must be in \[0, 1\)"):
        st.GriffinLim(momentum=1.0)
    with pytest.raises(ValueError, match="GriffinLim: win_length=500 must be <= n_fft=400"):
        st.GriffinLim(win_length=500)
    with pytest.raises(TypeError, match="GriffinLim: rand_init must be a bool"):
        st.GriffinLim(rand_init="yes")
    with pytest.raises(ValueError, match=r"GriffinLim: specgram must have shape \(\.\.\., 201, frames\)"):
        st.GriffinLim()(torch.ones(2, 100, 5))
    with pytest.raises(ValueError, match="InverseMelScale: driver must be one of"):
        st.InverseMelScale(n_stft=201, driver="qr")
    with pytest.raises(ValueError, match=r"InverseMelScale: f_min=9000\.0 must be <= f_max=8000\.0"):
        st.InverseMelScale(n_stft=201, f_min=9000.0)
    with pytest.raises(ValueError, match="InverseMelScale: mel_scale must be one of"):
        st.InverseMelScale(n_stft=201, mel_scale="mel")
    with pytest.raises(ValueError, match=r"InverseMelScale: melspec must have shape \(\.\.\., 64, time\)"):
        st.InverseMelScale(n_stft=257, n_mels=64)(torch.ones(32, 5))
