"""Dump, or compare bit for bit, the outputs and gradients of specux's device autograd and of the tuning
estimate, to check that a refactoring changed no number.

``dump`` runs, on a device backend (PoCL's OpenCL by default), the device ops of torch CPU tensors that
require grad (stft magnitude and power, melspectrogram power 1 and 2, mfcc with and without top_db and its
torchaudio form, lfcc with the dB and the natural logarithm, chroma_stft with an estimated and a given
tuning), each with :data:`specux._runtime.feature_exec.FUSED` on and off, in float32 and float64, and the
CPU tuning functions (piptrack, estimate_tuning, pitch_tuning, and chroma_stft's CPU op, which estimates
the tuning inside), and saves every array to an ``.npz``. ``compare`` lists the arrays that differ between
two dumps (by bytes, so NaNs compare too). Run ``dump`` on the tree before a change and on the tree after
(``PYTHONPATH`` picks the tree), then ``compare``. Usage::

    python scripts/dev/device_autograd_bitwise.py dump before.npz [--backend opencl]
    python scripts/dev/device_autograd_bitwise.py compare before.npz after.npz
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable

import numpy as np

SR = 8000


def _run(res: dict, key: str, fn: Callable, y) -> None:
    import torch

    x = y.detach().clone().requires_grad_()
    out = fn(x)
    W = torch.randn(*out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype)
    (g,) = torch.autograd.grad((out * W).sum(), x)
    res[f"{key}/out"] = out.detach().numpy()
    res[f"{key}/grad"] = g.numpy()


def _device(res: dict, backend: str) -> None:
    import torch

    import specux
    from specux._runtime import feature_exec as fe

    stft = dict(n_fft=256, hop_length=64)
    calls: dict[str, Callable] = {
        "mel-p2": lambda x: specux.melspectrogram(x, sr=SR, n_mels=20, backend=backend, **stft),
        "mel-p1": lambda x: specux.melspectrogram(x, sr=SR, n_mels=20, power=1.0, backend=backend, **stft),
        "mfcc": lambda x: specux.mfcc(x, sr=SR, n_mels=20, n_mfcc=13, backend=backend, **stft),
        "mfcc-nofloor-p1": lambda x: specux.mfcc(
            x, sr=SR, n_mels=20, n_mfcc=13, top_db=None, power=1.0, lifter=4.0, backend=backend, **stft
        ),
        "mfcc-torchaudio": lambda x: specux.mfcc(
            x, sr=SR, n_mels=20, n_mfcc=13, compat="torchaudio", backend=backend, **stft
        ),
        "lfcc-db": lambda x: specux.lfcc(
            x, sample_rate=SR, n_filter=24, n_lfcc=12, n_fft=256, backend=backend
        ),
        "lfcc-log-p1": lambda x: specux.lfcc(
            x, sample_rate=SR, n_filter=24, n_lfcc=12, n_fft=200, hop_length=50, log_lf=True, power=1.0,
            backend=backend,
        ),
        "stft-magnitude": lambda x: specux.stft(x, output="magnitude", backend=backend, **stft),
        "stft-power": lambda x: specux.stft(x, output="power", backend=backend, **stft),
        "chroma-estimated": lambda x: specux.chroma_stft(x, sr=SR, tuning=None, backend=backend, **stft),
        "chroma-given": lambda x: specux.chroma_stft(x, sr=SR, tuning=0.1, norm=2, backend=backend, **stft),
    }
    fused = fe.FUSED
    try:
        for on in (True, False):
            fe.FUSED = on
            for dtype in (torch.float32, torch.float64):
                y = torch.randn(2, 3000, generator=torch.Generator().manual_seed(0), dtype=dtype)
                for name, fn in calls.items():
                    _run(res, f"{name}/fused={on}/{dtype}", fn, y)
                _run(res, f"mfcc-3d/fused={on}/{dtype}", calls["mfcc-torchaudio"], y.reshape(2, 1, 3000))
    finally:
        fe.FUSED = fused


def _tuning(res: dict) -> None:
    import torch

    import specux
    from specux.ops.tuning import piptrack

    rng = np.random.default_rng(3)
    t = np.arange(SR) / SR
    tone = np.sin(2 * np.pi * 440.0 * 2 ** (0.23 / 12) * t) + 0.1 * rng.standard_normal(SR)
    for dtype in (np.float32, np.float64):
        y = tone.astype(dtype)
        S = np.abs(specux.stft(y, n_fft=512, backend="cpu")).astype(dtype)
        pitches, mags = piptrack(y, sr=SR, n_fft=512)
        res[f"piptrack/y/{dtype.__name__}"] = np.stack([pitches, mags])
        pitches, mags = piptrack(S=S, sr=SR, threshold=0.2, ref=np.mean, fmin=100.0)
        res[f"piptrack/S/{dtype.__name__}"] = np.stack([pitches, mags])
        res[f"estimate/y/{dtype.__name__}"] = np.array(specux.estimate_tuning(y, sr=SR, n_fft=1024))
        res[f"estimate/S/{dtype.__name__}"] = np.array(
            specux.estimate_tuning(S=S**2, sr=SR, bins_per_octave=24, resolution=0.02)
        )
        freqs = 440.0 * 2 ** (rng.random(50) / 12)
        res[f"pitch_tuning/{dtype.__name__}"] = np.array(specux.pitch_tuning(freqs))
    # chroma_stft's CPU torch op estimates the tuning inside (specux.torch._ops_cq)
    y = torch.tensor(tone[None, :4000])
    _run(res, "chroma-cpu-op", lambda x: specux.chroma_stft(x, sr=SR, n_fft=256, tuning=None), y)


def dump(path: str, backend: str) -> None:
    import specux

    print("specux from", specux.__file__, file=sys.stderr)
    res: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _device(res, backend)
        _tuning(res)
    np.savez(path, **res)
    print(f"{len(res)} arrays -> {path}", file=sys.stderr)


def compare(before: str, after: str) -> int:
    a, b = np.load(before), np.load(after)
    differ = sorted(set(a.files) ^ set(b.files))
    for key in sorted(set(a.files) & set(b.files)):
        x, y = a[key], b[key]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            differ.append(key)
    print(f"{len(set(a.files) & set(b.files))} arrays in both; {len(differ)} differ: {differ}")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("path")
    d.add_argument("--backend", default="opencl", choices=["opencl", "cuda", "metal"])
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.path, args.backend)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
