#!/usr/bin/env python
"""Make the figure of docs/specux/parameters.md: one signal's spectrogram at three STFT sizes.

The signal (2 s at 16 kHz, synthesised, no data needed): two steady tones 50 Hz apart (1000 and 1050 Hz)
and two clicks 30 ms apart (at 1.00 and 1.03 s). ``specux.stft`` (Hann window, ``hop_length = n_fft // 4``)
at n_fft 256, 1024 and 4096 shows the trade-off: the short window separates the clicks and merges the tones,
the long one separates the tones and smears the clicks. The PNG is written to a temporary name and renamed
when complete; the settings and the machine are printed for the page.

    python scripts/dev/stft_resolution.py [--out docs/specux/img/stft-resolution.png]
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

import numpy as np

import specux

ROOT = Path(__file__).resolve().parents[2]
SR = 16000
SIZES = (256, 1024, 4096)


def test_signal(sr: int = SR, seconds: float = 2.0) -> np.ndarray:
    """Two tones (1000, 1050 Hz) and two clicks (1.00 s, 1.03 s), float32."""
    t = np.arange(int(sr * seconds)) / sr
    y = 0.5 * np.sin(2 * np.pi * 1000 * t) + 0.5 * np.sin(2 * np.pi * 1050 * t)
    for at in (1.00, 1.03):
        y[int(at * sr)] += 20.0
    return y.astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "specux" / "img" / "stft-resolution.png")
    args = parser.parse_args(argv)
    if not args.out.parent.is_dir():
        parser.error(f"--out: directory {args.out.parent} does not exist")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = test_signal()
    fig, axes = plt.subplots(1, len(SIZES), figsize=(10, 3.4), sharey=True)
    for axis, n_fft in zip(axes, SIZES):
        hop = n_fft // 4
        power = specux.stft(y, n_fft=n_fft, hop_length=hop, output="power", backend="cpu")
        db = specux.power_to_db(power, ref=np.max, top_db=60.0)
        freqs = np.arange(power.shape[0]) * SR / n_fft
        times = np.arange(power.shape[1]) * hop / SR
        keep = freqs <= 2000
        axis.pcolormesh(times, freqs[keep], db[keep], shading="nearest", cmap="magma")
        axis.set_xlim(0.8, 1.25)
        axis.set_ylim(800, 1250)
        window_ms, bin_hz = 1000 * n_fft / SR, SR / n_fft
        axis.set_title(f"n_fft {n_fft}, hop {hop}\n{window_ms:.0f} ms window, bins {bin_hz:.1f} Hz",
                       fontsize=9)
        axis.set_xlabel("time (s)")
    axes[0].set_ylabel("frequency (Hz)")
    fig.suptitle("tones at 1000 and 1050 Hz, clicks at 1.00 and 1.03 s (sr 16 kHz, Hann)", fontsize=10)
    fig.tight_layout()
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    fig.savefig(tmp, format="png", dpi=80)
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes) on "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, specux {specux.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
