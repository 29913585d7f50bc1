"""Bytes autograd holds between forward and backward for specux's device ops and torchaudio's transforms.

Every tensor autograd saves in the forward is seen by a ``torch.autograd.graph.saved_tensors_hooks`` pack
hook; the script sums their storages (each once) for the same transform of the same signal: torchaudio's
``Spectrogram`` (power 2), ``MelSpectrogram``, ``MFCC`` and ``LFCC`` and specux's melspectrogram, mfcc and
lfcc on a device backend (docs/specux/torch.md, Devices, says what the device ops save). Needs torchaudio.
Usage::

    python scripts/dev/autograd_held_memory.py [--backend opencl] [--shape 4 110250]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch


def held(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> int:
    """Bytes of the distinct storages autograd saves while ``fn(x)`` runs."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    return sum(seen.values())


def main() -> None:
    import torchaudio

    import specux

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="opencl", choices=["opencl", "cuda", "metal"])
    parser.add_argument("--shape", type=int, nargs="+", default=[4, 110250])
    args = parser.parse_args()
    sr, stft = 22050, dict(n_fft=2048, hop_length=512)
    x = torch.randn(*args.shape, requires_grad=True)
    if args.backend == "cuda":
        x = x.detach().cuda().requires_grad_()
    window = torch.hann_window(2048, device=x.device)
    spectrum = torch.stft(x.detach(), **stft, window=window, return_complex=True)
    ta = torchaudio.transforms
    rows = [
        ("torchaudio Spectrogram(power=2)", ta.Spectrogram(**stft)),
        ("torchaudio MelSpectrogram", ta.MelSpectrogram(sample_rate=sr, **stft)),
        ("torchaudio MFCC", ta.MFCC(sample_rate=sr, melkwargs=stft)),
        ("torchaudio LFCC", ta.LFCC(sample_rate=sr, speckwargs=stft)),
        ("specux melspectrogram", lambda y: specux.melspectrogram(y, sr=sr, backend=args.backend, **stft)),
        ("specux mfcc", lambda y: specux.mfcc(y, sr=sr, backend=args.backend, **stft)),
        ("specux lfcc", lambda y: specux.lfcc(y, sample_rate=sr, backend=args.backend, **stft)),
    ]
    print(f"signal {x.numel() * 4 / 1e6:.1f} MB, its complex spectrum {spectrum.numel() * 8 / 1e6:.1f} MB")
    for name, fn in rows:
        fn = fn.to(x.device) if isinstance(fn, torch.nn.Module) else fn
        print(f"{name}: autograd holds {held(fn, x) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
