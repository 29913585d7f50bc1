"""CPU <-> CUDA gradient parity of the specux ops: one loss on a CUDA tensor and on its CPU copy must give the
same gradients (to float32 rounding).

Runs wherever torch sees a CUDA device, the specux ``cuda`` backend is available and it registers CUDA kernels
for the ops a loss uses; elsewhere each test is a skip with the reason (an unavailable ``cuda`` backend is a
failure when ``cuda`` is listed in ``SPECUX_REQUIRE_BACKENDS``, the conftest rule).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import specux  # noqa: E402
import specux.torch  # noqa: E402


def _require_cuda(require_backend, ops: tuple[str, ...]) -> None:
    # the specux backend first: unavailable is a skip with its reason, or a failure where CI requires it
    require_backend("cuda")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device (torch.cuda.is_available() is False)")
    missing = [
        op for op in ops if not torch._C._dispatch_has_kernel_for_dispatch_key(f"specux::{op}", "CUDA")
    ]
    if missing:
        pytest.skip(f"the specux cuda backend registers no CUDA kernel for {', '.join(missing)} yet")


def tones(n: int = 4000) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    t = torch.arange(n) / 16000.0
    return torch.sin(2 * math.pi * 440 * t) + 0.1 * torch.randn(2, n, generator=g)


#: the specux ops each loss runs on CUDA tensors (the device ops of specux.torch._device_op for the signal
#: transforms, the FFT family's own ops)
OPS = {
    "stft_magnitude": ("stft_device",),
    "stft_power": ("stft_device",),
    "istft": ("stft_device", "istft_device"),
    "melspectrogram": ("melspectrogram_device",),
    "mfcc": ("mfcc_device",),
    "lfcc": ("lfcc_device",),
    "cqt": ("cqt_device",),
    "chroma_stft": ("chroma_stft_device",),
    "chroma_cqt": ("chroma_cqt_device",),
    "fftconvolve": ("fftconvolve_device",),
    "rfft": ("r2c",),
    "fft": ("c2c",),
    "irfft": ("r2c", "c2r"),
    "rfft2": ("r2c", "c2c"),
}

LOSSES = {
    "stft_magnitude": lambda x: specux.stft(x, n_fft=512, hop_length=128, output="magnitude").sum(),
    "stft_power": lambda x: specux.stft(x, n_fft=400, hop_length=100, output="power").mean(),
    "istft": lambda x: specux.istft(specux.stft(x, n_fft=256, hop_length=64), hop_length=64).pow(2).sum(),
    "melspectrogram": lambda x: specux.melspectrogram(x, sr=16000, n_fft=512, n_mels=40).log1p().sum(),
    "mfcc": lambda x: specux.mfcc(x, sr=16000, n_fft=512, n_mels=40).sum(),
    "lfcc": lambda x: specux.lfcc(x, sample_rate=16000).sum(),
    "cqt": lambda x: specux.cqt(x, sr=16000, fmin=110.0, n_bins=24, res_type=None).abs().sum(),
    "chroma_stft": lambda x: specux.chroma_stft(x, sr=16000, n_fft=512, tuning=0.0).sum(),
    "chroma_cqt": lambda x: specux.chroma_cqt(
        x, sr=16000, hop_length=128, fmin=110.0, n_octaves=2, tuning=0.0, res_type="polyphase"
    ).pow(2).sum(),
    "fftconvolve": lambda x: specux.fftconvolve(x, x[..., :64], mode="same", axes=-1).pow(2).sum(),
    "rfft": lambda x: specux.fft.rfft(x, norm="ortho").abs().sum(),
    "fft": lambda x: specux.fft.fft(x, n=1000).abs().pow(2).mean(),
    "irfft": lambda x: specux.fft.irfft(specux.fft.rfft(x) * 0.5, n=3999).pow(2).sum(),
    "rfft2": lambda x: specux.fft.rfft2(x.reshape(2, 40, 100)).abs().sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_cuda_gradient_matches_cpu(name: str, require_backend) -> None:
    _require_cuda(require_backend, OPS[name])
    loss = LOSSES[name]
    x_cpu = tones().requires_grad_()
    loss(x_cpu).backward()
    x_gpu = tones().cuda().requires_grad_()
    loss(x_gpu).backward()
    assert x_gpu.grad.device.type == "cuda"
    torch.testing.assert_close(
        x_gpu.grad.cpu(), x_cpu.grad, rtol=1e-4, atol=1e-4 * x_cpu.grad.abs().max().item()
    )
