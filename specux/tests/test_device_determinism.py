"""``specux.deterministic(True)`` on a device backend: the torch device ops' backward (the adjoint kernels)
gives the same bits run after run.

The device adjoints are gathers in a fixed order (no atomics), so this holds with the switch off too; the test
runs both ways, on PoCL in CI (the CUDA counterpart is ``scripts/dev/gpu_check.py autograd``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import specux  # noqa: E402

SR = 8000

LOSSES = {
    "stft": lambda x: specux.stft(x, n_fft=256, hop_length=64, backend="opencl").abs().sum(),
    # x is a signal; istft's input is its complex spectrum, which then requires grad (see _input)
    "istft": lambda D: specux.istft(D, hop_length=64, backend="opencl").pow(2).sum(),
    "melspectrogram": lambda x: specux.melspectrogram(
        x, sr=SR, n_fft=256, hop_length=64, n_mels=20, backend="opencl"
    ).log1p().sum(),
    "mfcc": lambda x: specux.mfcc(x, sr=SR, n_fft=256, n_mels=20, n_mfcc=13, backend="opencl").sum(),
    "lfcc": lambda x: specux.lfcc(
        x, sample_rate=SR, n_fft=256, n_filter=24, n_lfcc=10, backend="opencl"
    ).sum(),
    "cqt": lambda x: specux.cqt(
        x, sr=SR, hop_length=64, fmin=100.0, n_bins=24, res_type="polyphase", backend="opencl"
    ).abs().sum(),
}


def _input(name: str) -> torch.Tensor:
    y = torch.randn(3, 4000, generator=torch.Generator().manual_seed(7))
    return specux.stft(y, n_fft=256, hop_length=64) if name == "istft" else y


@pytest.mark.parametrize("switch", [True, False])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_device_backward_repeats_bit_for_bit(opencl, name, switch) -> None:
    base = _input(name)
    grads = []
    with specux.deterministic(switch):
        for _ in range(3):
            x = base.clone().requires_grad_()
            LOSSES[name](x).backward()
            grads.append(x.grad)
    assert grads[0].dtype == base.dtype and torch.isfinite(grads[0]).all() and grads[0].abs().max() > 0
    assert all(torch.equal(g, grads[0]) for g in grads[1:])
