#!/usr/bin/env python
"""Make the pictures of docs/vidmag/phase.md: one clip magnified by a linear and by a phase-based pipeline.

A region of a sample clip (default: the baby's chest in ``baby.mp4``, 208 x 156 pixels, the first 150
frames) is magnified twice on the cpu backend (the NumPy reference), with the same alpha and the same
temporal band: ``laplacian_butterworth`` and ``riesz_butterworth``. Two PNGs are written:

- ``phase-frames.png``: one frame of the input, the linear output and the Riesz output side by side (the
  frame where the Riesz output's luminance is furthest from the input's), the sliced column marked;
- ``phase-slices.png``: the space-time slice of each (one column of pixels over time: rows down, frames
  across), the figure of the papers where motion shows as a wavy edge and noise as speckle.

It also prints, for each output, the root mean temporal variance of the luminance in the 10 % of the
region's pixels whose input varies least (as ``vidmag evaluate CLIP`` measures static-region noise), and the
settings, so that the page can say what was run. The clips are read from ``--clips``; nothing is written
but the two PNGs (each to a temporary name, renamed when complete).

    python scripts/dev/phase_pictures.py [--clips /work/shared/data/clips] [--out docs/vidmag/img]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

import vidmag
from vidmag.evaluate.metrics import luminance
from vidmag.io import read_frames

ROOT = Path(__file__).resolve().parents[2]

#: Height in pixels of the caption strip above each panel.
CAPTION = 16


def _box(text: str) -> tuple[int, int, int, int]:
    value = [int(v) for v in text.split(",")]
    if len(value) != 4 or min(value) < 0:
        raise argparse.ArgumentTypeError(f"expected X,Y,W,H (four non-negative integers), got {text!r}")
    return value[0], value[1], value[2], value[3]


def read_region(path: Path, roi: tuple[int, int, int, int], frames: int) -> np.ndarray:
    """The first ``frames`` frames of ``path`` cropped to ``roi``, as a (T, H, W, 3) uint8 array."""
    x, y, w, h = roi
    out = []
    for frame in read_frames(path):
        if frame.shape[0] < y + h or frame.shape[1] < x + w:
            raise ValueError(f"roi {roi} does not fit in the clip's frames of "
                             f"{frame.shape[1]} x {frame.shape[0]} pixels")
        out.append(frame[y:y + h, x:x + w].copy())
        if len(out) == frames:
            break
    if len(out) < frames:
        raise ValueError(f"{path} has {len(out)} frames, fewer than the {frames} asked for")
    return np.stack(out)


def static_noise(clip: np.ndarray, static: np.ndarray) -> float:
    """Root mean temporal variance of the luminance over the pixels where ``static`` is true."""
    return float(np.sqrt(luminance(clip).var(axis=0)[static].mean()))


def edge_travel(luma: np.ndarray, column: int, settle: int, reach: int = 30) -> float:
    """Peak-to-peak travel, in rows, of the darkest point of ``luma[:, :, column]`` after frame ``settle``.

    The darkest point is searched within ``reach`` rows of the input's darkest row in frame 0 and refined by
    a parabola through its three samples. It is a rough measure of the visible motion of an edge, not of the
    motion a pipeline computed: a linear output that fails to move the edge shows little travel.
    """
    rows = luma.shape[1]
    centre = int(luma[0, :, column].argmin())
    lo, hi = max(centre - reach, 0), min(centre + reach, rows)
    where = []
    for t in range(settle, luma.shape[0]):
        segment = luma[t, lo:hi, column]
        i = int(segment.argmin())
        step = 0.0
        if 0 < i < len(segment) - 1:
            a, b, c = segment[i - 1], segment[i], segment[i + 1]
            if a - 2 * b + c > 0:
                step = 0.5 * (a - c) / (a - 2 * b + c)
        where.append(lo + i + step)
    return float(np.ptp(where))


def panel(image: np.ndarray, caption: str, font: ImageFont.ImageFont) -> Image.Image:
    """``image`` under a white strip carrying ``caption``."""
    h, w = image.shape[:2]
    out = Image.new("RGB", (w, h + CAPTION), "white")
    out.paste(Image.fromarray(image), (0, CAPTION))
    ImageDraw.Draw(out).text((3, 2), caption, fill="black", font=font)
    return out


def row(panels: list[Image.Image], gap: int = 4) -> Image.Image:
    width = sum(p.width for p in panels) + gap * (len(panels) - 1)
    out = Image.new("RGB", (width, max(p.height for p in panels)), "white")
    x = 0
    for p in panels:
        out.paste(p, (x, 0))
        x += p.width + gap
    return out


def save_png(image: Image.Image, path: Path) -> None:
    """Write ``image`` to a temporary name beside ``path``, then rename it (nothing half-written is left)."""
    tmp = path.with_name(f".{path.name}.tmp")
    image.save(tmp, format="PNG", optimize=True)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=Path, default=Path("/work/shared/data/clips"))
    parser.add_argument("--clip", default="baby.mp4")
    parser.add_argument("--roi", type=_box, default=(350, 160, 208, 156), help="X,Y,W,H of the region")
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--fs", type=float, default=30.0)
    parser.add_argument("--alpha", type=float, default=20.0)
    parser.add_argument("--fl", type=float, default=0.2)
    parser.add_argument("--fh", type=float, default=0.95)
    parser.add_argument("--lambda-c", type=float, default=16.0)
    parser.add_argument("--chrom-attenuation", type=float, default=0.1)
    parser.add_argument("--sigma", type=float, default=2.0)
    parser.add_argument("--column", type=int, default=None,
                        help="column of the region to slice; default: the one where the Riesz output "
                             "differs most from the input")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "vidmag" / "img")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out: directory {args.out} does not exist")

    clip = read_region(args.clips / args.clip, args.roi, args.frames)
    band = {"alpha": args.alpha, "fl": args.fl, "fh": args.fh}
    linear = vidmag.magnify(clip, fs=args.fs, pipeline="laplacian_butterworth", backend="cpu",
                            lambda_c=args.lambda_c, chrom_attenuation=args.chrom_attenuation, **band)
    riesz = vidmag.magnify(clip, fs=args.fs, pipeline="riesz_butterworth", backend="cpu",
                           sigma=args.sigma, **band)

    y_in, y_rz = luminance(clip), luminance(riesz)
    if args.column is None:
        # The column where the Riesz output departs most from the input: where the magnified motion is.
        column = int(np.abs(y_rz - y_in).mean(axis=(0, 1)).argmax())
    else:
        column = args.column
    if not 0 <= column < clip.shape[2]:
        parser.error(f"--column must be in 0 .. {clip.shape[2] - 1}, got {column}")
    frame = int(np.abs(y_rz - y_in).mean(axis=(1, 2)).argmax())

    font = ImageFont.load_default()
    x, y, w, h = args.roi
    shown = clip[frame].copy()
    shown[:, column] = (255, 0, 0)  # the sliced column, on the input only
    frames_png = row([panel(shown, f"input, frame {frame}", font),
                      panel(linear[frame], "laplacian_butterworth", font),
                      panel(riesz[frame], "riesz_butterworth", font)])
    # A slice is (H, T, 3): rows down, time across.
    slices_png = row([panel(np.ascontiguousarray(c[:, :, column].transpose(1, 0, 2)), name, font)
                      for c, name in ((clip, "input"), (linear, "laplacian_butterworth"),
                                      (riesz, "riesz_butterworth"))])
    save_png(frames_png, args.out / "phase-frames.png")
    save_png(slices_png, args.out / "phase-slices.png")

    variation = y_in.var(axis=0)
    static = variation <= np.quantile(variation, 0.1)
    print(f"{args.clip}: region x {x} y {y}, {w} x {h} px, frames 0-{args.frames - 1} at {args.fs:g} Hz; "
          f"alpha {args.alpha:g}, fl {args.fl:g} Hz, fh {args.fh:g} Hz; laplacian_butterworth lambda_c "
          f"{args.lambda_c:g}, chrom_attenuation {args.chrom_attenuation:g}; "
          f"riesz_butterworth sigma {args.sigma:g}")
    print(f"frame shown: {frame}; column sliced: {column} (x {x + column} in the clip)")
    print("static-region noise (grey levels, 10% least-varying pixels of the region): "
          f"input {static_noise(clip, static):.3f}, "
          f"laplacian_butterworth {static_noise(linear, static):.3f}, "
          f"riesz_butterworth {static_noise(riesz, static):.3f}")
    settle = min(40, args.frames // 2)
    travel = [edge_travel(luminance(c), column, settle) for c in (clip, linear, riesz)]
    print(f"travel of the darkest point near the sliced column's main edge after frame {settle} (rows, "
          f"peak to peak): input {travel[0]:.1f}, laplacian_butterworth {travel[1]:.1f}, "
          f"riesz_butterworth {travel[2]:.1f}")
    for name in ("phase-frames.png", "phase-slices.png"):
        print(f"wrote {args.out / name} ({(args.out / name).stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
