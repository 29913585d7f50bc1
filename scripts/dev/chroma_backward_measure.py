"""Count and time the work of chroma_stft's device autograd, or melspectrogram's, mfcc's or lfcc's
(docs/specux/torch.md, Devices).

Runs ``specux.<op>`` of a torch CPU tensor that requires grad (chroma_stft with ``tuning=None``, estimated;
the others with their defaults) on a device backend, forward then backward, and prints for each pass the
device stfts run (the signal framed, windowed and transformed: ``spectral_exec._spectrum``), the host tuning
estimates, and the median and best wall times over ``--repeat`` runs after one warm-up. Run it on two
checkouts to compare them. Usage::

    python scripts/dev/chroma_backward_measure.py [--op chroma_stft] [--backend opencl] [--shape 4 110250]
        [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import specux
from specux._runtime import spectral_exec as se

try:  # the device op's estimate: the cpu backend's kernel since it moved out of specux.ops.tuning
    from specux._backends.cpu import tuning

    ESTIMATE = "estimate_from_spectrogram"
except ImportError:  # a checkout from before the move (the script compares two checkouts)
    from specux.ops import tuning

    ESTIMATE = "estimate_tuning"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ops = ["chroma_stft", "melspectrogram", "mfcc", "lfcc"]
    parser.add_argument("--op", default="chroma_stft", choices=ops)
    parser.add_argument("--backend", default="opencl", choices=["opencl", "cuda", "metal"])
    parser.add_argument("--shape", type=int, nargs="+", default=[4, 110250])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sr", type=float, default=22050.0)
    args = parser.parse_args()
    counts = {"stft": 0, "estimate": 0}
    spectrum, estimate = se._spectrum, getattr(tuning, ESTIMATE)

    def counted_spectrum(*a, **kw):
        counts["stft"] += 1
        return spectrum(*a, **kw)

    def counted_estimate(*a, **kw):
        counts["estimate"] += 1
        return estimate(*a, **kw)

    se._spectrum = counted_spectrum
    setattr(tuning, ESTIMATE, counted_estimate)
    call = {
        "chroma_stft": lambda x: specux.chroma_stft(x, sr=args.sr, tuning=None, backend=args.backend),
        "melspectrogram": lambda x: specux.melspectrogram(x, sr=args.sr, backend=args.backend),
        "mfcc": lambda x: specux.mfcc(x, sr=args.sr, backend=args.backend),
        "lfcc": lambda x: specux.lfcc(x, sample_rate=int(args.sr), backend=args.backend),
    }[args.op]
    y = torch.randn(*args.shape, generator=torch.Generator().manual_seed(0))
    device = "cuda" if args.backend == "cuda" else "cpu"
    times: dict[str, list[float]] = {"forward": [], "backward": []}
    seen: dict[str, dict[str, int]] = {}
    for run in range(args.repeat + 1):
        x = y.to(device).requires_grad_()
        for name in ("forward", "backward"):
            counts.update(stft=0, estimate=0)
            start = time.perf_counter()
            if name == "forward":
                out = call(x)
            else:
                out.backward(torch.ones_like(out))
            if device == "cuda":
                torch.cuda.synchronize()
            if run:  # the first run compiles the kernels
                times[name].append(time.perf_counter() - start)
            seen[name] = dict(counts)
    label = f"{args.op} {tuple(args.shape)}{' tuning=None' * (args.op == 'chroma_stft')} {args.backend}"
    for name in ("forward", "backward"):
        print(
            f"{label} {name}: "
            f"{seen[name]['stft']} stft, {seen[name]['estimate']} tuning estimate; over {args.repeat} runs "
            f"median {statistics.median(times[name]) * 1e3:.1f} ms, best {min(times[name]) * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
