"""torch.compile(fullgraph=True) on models calling several specux ops: no graph breaks, forward and backward.

fullgraph=True raises on any graph break, so a passing compile is the check. Most cases use the "aot_eager"
backend (it traces forward and backward through AOTAutograd, with the ops' fake kernels, without generating
code); one case runs the real inductor compiler once.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import specux.torch as st  # noqa: E402
from specux.torch import _route  # noqa: E402

ops = torch.ops.specux


def tones(batch: int = 2, n: int = 1600, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(n) / 8000.0
    return torch.sin(2 * math.pi * 440 * t) + 0.1 * torch.randn(batch, n, generator=g)


class Frontend(torch.nn.Module):
    """A model touching the module wrappers, the public-function route and the FFT family."""

    def __init__(self) -> None:
        super().__init__()
        self.mel = st.MelSpectrogram(sr=8000, n_fft=256, hop_length=64, n_mels=16)
        self.mfcc = st.MFCC(sr=8000, n_fft=256, hop_length=64, n_mels=16, n_mfcc=8)
        self.chroma = st.Chroma(sr=8000, n_fft=256, hop_length=64, tuning=0.0)
        self.head = torch.nn.Linear(16 + 8 + 12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = torch.cat([torch.log(self.mel(x) + 1e-6), self.mfcc(x), self.chroma(x)], dim=-2).mean(-1)
        X = _route.call(
            "stft",
            x,
            n_fft=128,
            hop_length=32,
            win_length=None,
            window="hann",
            center=True,
            dtype=None,
            pad_mode="reflect",
            output="complex",
            backend="auto",
        )
        back = _route.call(
            "istft",
            X,
            hop_length=32,
            win_length=None,
            n_fft=None,
            window="hann",
            center=True,
            dtype=None,
            length=x.shape[-1],
            nola="ignore",
            backend="auto",
        )
        spec = _route.call("fft.rfft", back, norm="ortho")
        conv = _route.call("fftconvolve", x, x[..., :16], "same", [1], backend="auto")
        return self.head(feats).sum() + 1e-3 * (spec.abs() ** 2).sum() + 1e-3 * conv.pow(2).sum()


def _eager_and_compiled(model: torch.nn.Module, x: torch.Tensor, backend: str):
    xe = x.clone().requires_grad_()
    model(xe).backward()
    xc = x.clone().requires_grad_()
    compiled = torch.compile(model, fullgraph=True, backend=backend, dynamic=False)
    out = compiled(xc)
    out.backward()
    return xe.grad, xc.grad


def test_model_compiles_whole_forward_and_backward() -> None:
    torch._dynamo.reset()
    ge, gc = _eager_and_compiled(Frontend(), tones(), "aot_eager")
    torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-5)


def test_remaining_ops_compile() -> None:
    """Ops the model above does not reach: constant-Q, lfcc, chroma_cqt, the other stft outputs, c2c, c2r."""
    torch._dynamo.reset()

    def fn(x: torch.Tensor) -> torch.Tensor:
        C = ops.cqt(x, [], 8000.0, 64, 110.0, 24, 12, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", None)
        V = ops.vqt(
            x, [], 8000.0, 64, 110.0, 24, None, None, 12, 0.0, 1.0, 1.0, 0.01, "hann", True, "constant", None
        )
        P = ops.stft(x, None, "hann", 128, 32, None, True, "constant", "power")
        R = ops.stft(x, None, "hann", 128, 32, None, False, "constant", "real_imag")
        F = _route.call("fft.fft", x[..., :64], n=None, axis=-1, norm=None)
        B = _route.call("fft.irfft", F[..., :33], n=64, axis=-1, norm="ortho")
        L = ops.lfcc(
            x,
            None,
            None,
            None,
            "hann",
            8000,
            16,
            0.0,
            None,
            8,
            2,
            "ortho",
            False,
            256,
            None,
            None,
            2.0,
            True,
            "reflect",
        )
        K = ops.chroma_cqt(x, [], None, 8000.0, 64, 110.0, math.inf, 0.0, 0.0, 12, 2, 24, None)
        extra = V.abs().sum() + P.sqrt().sum() + R.pow(2).sum() * 1e-3 + F.abs().sum() + B.pow(2).sum()
        return C.abs().sum() + L.sum() + K.sum() + extra

    x = tones(n=2000)
    xe = x.clone().requires_grad_()
    fn(xe).backward()
    xc = x.clone().requires_grad_()
    torch.compile(fn, fullgraph=True, backend="aot_eager", dynamic=False)(xc).backward()
    torch.testing.assert_close(xc.grad, xe.grad, rtol=1e-4, atol=1e-5)


def test_inductor_compiles_stft_magnitude_training_step() -> None:
    """One real inductor compile (the default backend): generated code around the opaque specux ops."""
    torch._dynamo.reset()
    stft = st.STFT(n_fft=128, hop_length=32, output="magnitude")

    def step(x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(stft(x)).pow(2).mean()

    ge, gc = _eager_and_compiled(_Wrap(step), tones(), "inductor")
    torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-6)


class _Wrap(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def test_changing_signal_lengths_keep_eager_results() -> None:
    torch._dynamo.reset()
    mel = st.MelSpectrogram(sr=8000, n_fft=256, hop_length=64, n_mels=16)
    compiled = torch.compile(mel, fullgraph=True, backend="aot_eager")
    for n in (1600, 2000, 2500):
        x = tones(n=n)
        torch.testing.assert_close(compiled(x), mel(x), rtol=0, atol=0)
