#!/usr/bin/env python
"""Make the pictures of the gallery (docs/vidmag/gallery.md) and of docs/vidmag/parameters.md.

Gallery mode (the default): every sample clip of ``--clips`` (the paper's clips, ``../shared/data/clips``)
is magnified with every preset that names it (``vidmag.PRESETS``: a preset's note starts with its clip's
file name; baby2, subway and camera have no clip there), on the first ``--frames`` frames at full resolution.
For each clip and preset it writes into ``--out``:

- ``CLIP-PRESET-before.png`` and ``-after.png``: the frame where the output departs most from the input;
- ``CLIP-PRESET-side-by-side.png``: that frame, input left and output right, over the space-time slice of
  each (one column of pixels over time, rows down and frames across: motion shows as a wavy edge);
- ``CLIP-PRESET-preview.webp``: an animated side-by-side preview, downscaled, at most ``--preview-seconds``;
- ``CLIP-PRESET-spectrum.png``: the spectrum of the input and of the output (``vidmag.suggest``'s Welch
  spectrum: the region's mean colour for the colour preset, the band-passed luminance for the motion ones),
  the preset's band shaded;
- ``CLIP-PRESET-pulse.png`` (the colour presets of face.mp4 and face2.mp4): the forehead's green trace
  before and after, and the heart rate ``vidmag.pulse.estimate`` reads from each;

and ``gallery.json`` and ``gallery.md`` (a Markdown fragment): each picture with the command that made it,
the equivalent ``vidmag magnify`` command for the whole clip, the machine (lscpu's model name) and the date.

``--parameters``: the pictures of the parameter page instead, one clip at several values of one parameter
(alpha, lambda_c, chrom_attenuation, r1 / r2 and sigma on the baby's chest; the band on the face's pulse),
plus the frequency response of the IIR pairs, as ``param-NAME.png``, listed in the same two files.

``--stills DIR`` (e.g. ``docs/vidmag/img``) also writes the small PNGs the pages show without running this
script: ``gallery-CLIP-PRESET.png`` (the side-by-side frame, one preset per clip: ``STILL_PRESETS``) in
gallery mode (and the pulse and spectrum plots of two: ``STILL_PLOTS``), ``param-NAME.png`` with
``--parameters``, each fitted under 100 KB (fewer colours, then smaller) so that they can be committed.

``--quick``: one clip (face.mp4), one preset (face), 24 frames of a 96 x 96 crop: the smoke test.

Why ``site-assets/gallery/`` and not a folder under docs/: mkdocs copies whatever lies under docs/ into the
site, and a link from a page to a picture that only exists after this script ran would break the strict
build on a fresh checkout. So the full output (large: the previews, every clip and preset) stays outside the
docs, git-ignored, and the pages show only the small stills committed under docs/vidmag/img/. Every file is
written under a temporary name and renamed when complete; nothing else is written.

    python scripts/dev/gallery.py [--clips ../shared/data/clips] [--out FOLDER] [--frames 150]
                                  [--only PRESET ...] [--parameters] [--stills docs/vidmag/img] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

import vidmag
from vidmag import pulse
from vidmag.evaluate.metrics import luminance
from vidmag.io import read_frames
from vidmag.suggest import suggest

ROOT = Path(__file__).resolve().parents[2]
CLIPS = ROOT.parent / "shared" / "data" / "clips"
OUT = ROOT / "site-assets" / "gallery"

#: Height in pixels of the caption strip above each panel.
CAPTION = 16
#: Largest PNG that ``--stills`` writes, bytes (the pages' committed pictures stay small: a dozen of them
#: stay under 1.5 MB).
STILL_LIMIT = 100_000
#: The presets whose still ``--stills`` writes in gallery mode: one per clip, a handful in all.
STILL_PRESETS = ("face", "face2_motion", "baby", "wrist", "guitar_e", "shadow")
#: The plots ``--stills`` also writes (``gallery-CLIP-PRESET-KIND.png``): the pulse, a spectrum of each kind.
STILL_PLOTS = {"face": ("pulse", "spectrum"), "baby": ("spectrum",)}
#: The forehead of each face clip, (x, y, w, h): the region of the colour spectrum and of the pulse plot
#: (face.mp4's is docs/vidmag/pulse.md's).
FOREHEAD = {"face.mp4": (150, 70, 220, 100), "face2.mp4": (170, 110, 220, 110)}
#: The region the parameter page's sweeps crop from baby.mp4: the chest (as scripts/dev/phase_pictures.py).
CHEST = (350, 160, 208, 156)


# --- what to run --------------------------------------------------------------------------------------------


def preset_clips(clips: Path) -> list[tuple[str, str]]:
    """``(clip file name, preset name)`` for every preset whose clip is in ``clips``, in the presets' order.

    A preset names its clip at the start of its note (``"face.mp4: pulse colour ..."``).
    """
    pairs = []
    for name, preset in vidmag.PRESETS.items():
        found = re.match(r"(\w+\.mp4)", preset.note)
        if found and (clips / found[1]).is_file():
            pairs.append((found[1], name))
    return pairs


def machine() -> str:
    """The processor's model name as lscpu gives it (else what the platform module knows)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    model = re.search(r"^Model name:\s*(.+)$", text, flags=re.MULTILINE)
    cores = os.cpu_count()
    name = model[1].strip() if model else (platform.processor() or platform.machine() or "unknown")
    return f"{name}, {cores} cores" if cores else name


def read_clip(path: Path, frames: int, crop: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The first ``frames`` frames of ``path`` (cropped to ``crop`` = x, y, w, h) as (T, H, W, 3) uint8."""
    out = []
    for frame in read_frames(path):
        if crop is not None:
            x, y, w, h = crop
            if frame.shape[0] < y + h or frame.shape[1] < x + w:
                raise ValueError(f"crop {crop} does not fit in {path.name}'s {frame.shape[1]} x "
                                 f"{frame.shape[0]} frames")
            frame = frame[y:y + h, x:x + w]
        out.append(np.ascontiguousarray(frame))
        if len(out) == frames:
            break
    if not out:
        raise ValueError(f"{path} has no frames")
    return np.stack(out)


# --- pictures -----------------------------------------------------------------------------------------------


def most_changed_frame(before: np.ndarray, after: np.ndarray) -> int:
    """Index of the frame whose luminance departs most from the input's (mean absolute difference)."""
    return int(np.abs(luminance(after) - luminance(before)).mean(axis=(1, 2)).argmax())


def most_changed_column(before: np.ndarray, after: np.ndarray) -> int:
    """The column whose luminance departs most from the input's, over all frames: where the change is."""
    return int(np.abs(luminance(after) - luminance(before)).mean(axis=(0, 1)).argmax())


def space_time_slice(clip: np.ndarray, column: int) -> np.ndarray:
    """One column of pixels over time, (H, T, 3): rows down, frames across."""
    return np.ascontiguousarray(clip[:, :, column].transpose(1, 0, 2))


def panel(image: np.ndarray | Image.Image, caption: str) -> Image.Image:
    """``image`` under a white strip carrying ``caption``."""
    image = image if isinstance(image, Image.Image) else Image.fromarray(image)
    out = Image.new("RGB", (image.width, image.height + CAPTION), "white")
    out.paste(image, (0, CAPTION))
    ImageDraw.Draw(out).text((3, 2), caption, fill="black", font=ImageFont.load_default())
    return out


def row(panels: list[Image.Image], gap: int = 4) -> Image.Image:
    """The panels left to right, tops aligned, on white."""
    out = Image.new("RGB", (sum(p.width for p in panels) + gap * (len(panels) - 1),
                            max(p.height for p in panels)), "white")
    x = 0
    for p in panels:
        out.paste(p, (x, 0))
        x += p.width + gap
    return out


def stack(images: list[Image.Image], gap: int = 4) -> Image.Image:
    """The images top to bottom, left aligned, on white."""
    out = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images)
                            + gap * (len(images) - 1)), "white")
    y = 0
    for image in images:
        out.paste(image, (0, y))
        y += image.height + gap
    return out


def shrink(image: Image.Image, width: int) -> Image.Image:
    """``image`` scaled down to at most ``width`` pixels wide (never up)."""
    if image.width <= width:
        return image
    return image.resize((width, max(1, round(image.height * width / image.width))), Image.LANCZOS)


def _replace(tmp: Path, path: Path) -> None:
    os.replace(tmp, path)


def save_png(image: Image.Image, path: Path, limit: int | None = None) -> int:
    """Write ``image`` as PNG to ``path`` (a temporary name, renamed when complete); return its size.

    With ``limit`` the file is fitted under ``limit`` bytes: 256, then 128 colours, then 0.85 of the size,
    as many times as needed.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    candidate, colours = image, None
    while True:
        out = candidate if colours is None else candidate.quantize(colours, method=Image.Quantize.MEDIANCUT)
        out.save(tmp, format="PNG", optimize=True)
        size = tmp.stat().st_size
        if limit is None or size <= limit:
            break
        if colours is None:
            colours = 256
        elif colours == 256:
            colours = 128
        else:
            candidate = shrink(candidate, int(candidate.width * 0.85))
    _replace(tmp, path)
    return size


def save_preview(before: np.ndarray, after: np.ndarray, path: Path, rate: float, seconds: float,
                 width: int) -> int:
    """An animated WebP of input | output, ``width`` pixels wide, about 10 frames per second of the clip's
    playback ``rate``, at most ``seconds`` long; return its size."""
    step = max(1, round(rate / 10))
    count = max(1, min(len(before), int(seconds * rate)))
    frames = [shrink(row([Image.fromarray(b), Image.fromarray(a)]), width)
              for b, a in zip(before[:count:step], after[:count:step])]
    tmp = path.with_name(f".{path.name}.tmp")
    frames[0].save(tmp, format="WEBP", save_all=True, append_images=frames[1:],
                   duration=round(1000 * step / rate), loop=0, quality=70, method=4)
    size = tmp.stat().st_size
    _replace(tmp, path)
    return size


def widen(image: np.ndarray, width: int) -> Image.Image:
    """A space-time slice stretched along time to ``width`` pixels (nearest: each frame a few columns)."""
    picture = Image.fromarray(image)
    return picture.resize((max(width, picture.width), picture.height), Image.NEAREST)


def side_by_side(before: np.ndarray, after: np.ndarray, label: str) -> Image.Image:
    """The most changed frame, input | output, over the space-time slice of each at the most changed column
    (stretched along time to the frame's width)."""
    t, column = most_changed_frame(before, after), most_changed_column(before, after)
    width = before.shape[2]
    frames = row([panel(before[t], f"input, frame {t}"), panel(after[t], label)])
    slices = row([panel(widen(space_time_slice(before, column), width), f"column {column} over time ->"),
                  panel(widen(space_time_slice(after, column), width), "output, same column")])
    return stack([frames, slices])


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save_figure(fig, path: Path) -> int:
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", dpi=80)
    _pyplot().close(fig)
    size = tmp.stat().st_size
    _replace(tmp, path)
    return size


def iir_response(r1: float, r2: float, fs: float, freqs: np.ndarray) -> np.ndarray:
    """Magnitude of the laplacian_iir / riesz_iir temporal filter at ``freqs`` Hz: the difference of two
    first-order low-passes ``lp = (1 - r) lp + r x`` (``vidmag.backend.operations.iir_step``)."""
    z = np.exp(-2j * np.pi * np.asarray(freqs) / fs)
    return np.abs(r1 / (1 - (1 - r1) * z) - r2 / (1 - (1 - r2) * z))


def iir_band(r1: float, r2: float, fs: float) -> tuple[float, float, float]:
    """``(low, peak, high)`` Hz of the IIR pair: where its gain is highest and where it falls to 1/sqrt(2)
    of that on either side."""
    freqs = np.linspace(0, fs / 2, 20001)
    gain = iir_response(r1, r2, fs, freqs)
    top = int(gain.argmax())
    inside = gain >= gain[top] / math.sqrt(2)
    low = top
    while low > 0 and inside[low - 1]:
        low -= 1
    high = top
    while high < len(freqs) - 1 and inside[high + 1]:
        high += 1
    half = gain[top] / math.sqrt(2)

    def crossing(i: int, j: int) -> float:  # linear between the samples either side of the half-power gain
        if gain[i] == gain[j]:
            return float(freqs[i])
        return float(freqs[i] + (half - gain[i]) * (freqs[j] - freqs[i]) / (gain[j] - gain[i]))

    return (crossing(low - 1, low) if low > 0 else 0.0), float(freqs[top]), \
        (crossing(high, high + 1) if high < len(freqs) - 1 else float(freqs[-1]))


def band_of(params: dict, fs: float) -> tuple[float, float] | None:
    """The temporal pass band of a parameter set, Hz (the IIR pair's half-power band)."""
    if "fl" in params:
        return float(params["fl"]), float(params["fh"])
    if "r1" in params:
        low, _, high = iir_band(params["r1"], params["r2"], fs)
        return low, high
    return None


def spectrum_plot(before: np.ndarray, after: np.ndarray, fs: float, kind: str, roi, band, title: str,
                  path: Path) -> int:
    """The Welch spectrum (``vidmag.suggest``) of input and output, the band shaded; return the size."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(7, 3.2))
    for clip, label, colour in ((before, "input", "C0"), (after, "output", "C3")):
        found = suggest(clip, fs, roi=roi, kind=kind)
        axis.semilogy(found.frequencies, np.maximum(found.power, 1e-30), color=colour, label=label, lw=1)
    if band is not None:
        axis.axvspan(*band, color="C2", alpha=0.2, label=f"band {band[0]:.3g}-{band[1]:.3g} Hz")
    axis.set_xlim(0, fs / 2)
    axis.set_xlabel("frequency (Hz)")
    axis.set_ylabel(f"{kind} power (a.u./Hz)")
    axis.set_title(title, fontsize=10)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    fig.tight_layout()
    return _save_figure(fig, path)


def pulse_plot(before: np.ndarray, after: np.ndarray, fs: float, roi, title: str,
               path: Path) -> tuple[int, dict]:
    """The region's green trace before and after, and the heart rate read from each; return size and rates."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(7, 3.2))
    rates = {}
    seconds = np.arange(len(before)) / fs
    for clip, label, colour in ((before, "input", "C0"), (after, "output", "C3")):
        found = pulse.estimate(clip, fs, roi=roi, method="pos")
        rates[label] = {"bpm": round(found.bpm, 1), "quality_db": round(found.quality_db, 1)}
        green = found.trace[:, 1] - found.trace[:, 1].mean()
        axis.plot(seconds, green, color=colour, lw=1,
                  label=f"{label}: {found.bpm:.0f} bpm, quality {found.quality_db:.1f} dB")
    axis.set_xlabel("time (s)")
    axis.set_ylabel("forehead mean green - its mean")
    axis.set_title(title, fontsize=10)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    fig.tight_layout()
    return _save_figure(fig, path), rates


# --- gallery mode -------------------------------------------------------------------------------------------


def magnify(clip: np.ndarray, pipeline: str, fs: float, params: dict,
            backend: str) -> tuple[np.ndarray, float]:
    """``vidmag.magnify`` of ``clip`` and the seconds it took (a SaturationWarning is not an error here)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vidmag.SaturationWarning)
        out = vidmag.magnify(clip, fs=fs, pipeline=pipeline, backend=backend, **params)
    return out, time.perf_counter() - start


def gallery_item(clips: Path, clip_name: str, preset_name: str, args: argparse.Namespace) -> dict:
    """Magnify one clip with one preset and write its pictures; return its manifest entry."""
    preset = vidmag.PRESETS[preset_name]
    clip = read_clip(clips / clip_name, args.frames, args.crop)
    out, seconds = magnify(clip, preset.pipeline, preset.fs, preset.params, args.backend)
    stem = f"{Path(clip_name).stem}-{preset_name}"
    files = {}
    t = most_changed_frame(clip, out)
    for which, frames in (("before", clip), ("after", out)):
        name = f"{stem}-{which}.png"
        save_png(Image.fromarray(frames[t]), args.out / name)
        files[which] = name
    label = f"{preset_name} ({preset.pipeline}, alpha {preset.params['alpha']:g})"
    picture = side_by_side(clip, out, label)
    files["side_by_side"] = f"{stem}-side-by-side.png"
    save_png(picture, args.out / files["side_by_side"])
    rate = 30.0  # the sample clips play at 30 frames/s (guitar: 29.97, captured at 600)
    files["preview"] = f"{stem}-preview.webp"
    save_preview(clip, out, args.out / files["preview"], rate, args.preview_seconds, args.preview_width)
    colour = preset.pipeline == "gaussian_ideal"
    roi = FOREHEAD.get(clip_name) if colour and args.crop is None else None
    kind = "colour" if colour else "motion"
    band = band_of(preset.params, preset.fs)
    files["spectrum"] = f"{stem}-spectrum.png"
    spectrum_plot(clip, out, preset.fs, kind, roi, band,
                  f"{clip_name}, {preset_name}: {kind} spectrum" + (f", region {roi}" if roi else ""),
                  args.out / files["spectrum"])
    entry = {
        "clip": clip_name, "preset": preset_name, "pipeline": preset.pipeline, "fs": preset.fs,
        "params": preset.params, "frames": len(clip), "size": [clip.shape[2], clip.shape[1]],
        "crop": args.crop, "backend": args.backend, "seconds": round(seconds, 2), "frame_shown": t,
        "files": files,
        "vidmag_command": shlex.join(["vidmag", "magnify", f"../shared/data/clips/{clip_name}", "-o",
                                      f"{stem}.mp4", "--preset", preset_name, "--side-by-side"]),
    }
    if roi is not None and len(clip) >= pulse.min_frames(preset.fs):
        files["pulse"] = f"{stem}-pulse.png"
        title = f"{clip_name}, {preset_name}: forehead {roi}"
        _, entry["pulse"] = pulse_plot(clip, out, preset.fs, roi, title, args.out / files["pulse"])
    if args.stills is not None and (preset_name in STILL_PRESETS or args.quick):
        files["still"] = f"gallery-{stem}.png"
        entry["still_bytes"] = save_png(shrink(picture, args.still_width), args.stills / files["still"],
                                        STILL_LIMIT)
        for kind in STILL_PLOTS.get(preset_name, ()):
            if kind in files:
                files[f"still_{kind}"] = f"gallery-{stem}-{kind}.png"
                with Image.open(args.out / files[kind]) as plot:
                    save_png(plot.convert("RGB"), args.stills / files[f"still_{kind}"], STILL_LIMIT)
    return entry


# --- parameters mode ----------------------------------------------------------------------------------------

#: The baby's breathing (preset baby) on the chest region: the base of the sweeps below.
BABY = {"alpha": 10.0, "lambda_c": 16.0, "r1": 0.4, "r2": 0.05, "chrom_attenuation": 0.1}
#: name -> (pipeline, base parameters, the values swept, the caption of one value).
SWEEPS = {
    "alpha": ("laplacian_iir", BABY, [{"alpha": a} for a in (5, 10, 20, 40)], "alpha {alpha:g}"),
    "lambda_c": ("laplacian_iir", {**BABY, "alpha": 20.0}, [{"lambda_c": v} for v in (4, 16, 64)],
                 "alpha 20, lambda_c {lambda_c:g}"),
    "chrom_attenuation": ("laplacian_iir", {**BABY, "alpha": 30.0},
                          [{"chrom_attenuation": v} for v in (0, 0.1, 1)],
                          "alpha 30, chrom_att. {chrom_attenuation:g}"),
    "r1_r2": ("laplacian_iir", {**BABY, "alpha": 20.0},
              [{"r1": 0.4, "r2": 0.05}, {"r1": 0.1, "r2": 0.02}, {"r1": 0.8, "r2": 0.4}],
              "r1 {r1:g}, r2 {r2:g}"),
    "sigma": ("riesz_iir", {"alpha": 20.0, "r1": 0.4, "r2": 0.04, "sigma": 5.0},
              [{"sigma": s} for s in (0, 2, 5)], "riesz_iir, sigma {sigma:g}"),
}
#: The face's pulse (preset face) at three bands: on the heart rate, wide, and off it.
BANDS = [(50 / 60, 1.0), (0.5, 3.0), (2.0, 3.0)]
FACE = {"alpha": 25.0, "level": 4, "chrom_attenuation": 1.0}


def sweep_picture(clip: np.ndarray, pipeline: str, base: dict, values: list[dict], caption: str,
                  backend: str) -> tuple[Image.Image, dict]:
    """Frames and space-time slices of ``clip`` magnified at each value: the frame and column are those where
    the first value's output departs most from the input, the same for every value."""
    outputs = [magnify(clip, pipeline, 30.0, {**base, **value}, backend)[0] for value in values]
    t, column = most_changed_frame(clip, outputs[0]), most_changed_column(clip, outputs[0])
    frames = [panel(clip[t], f"input, frame {t}")]
    slices = [panel(space_time_slice(clip, column), f"column {column}")]
    for value, out in zip(values, outputs):
        text = caption.format(**{**base, **value})
        frames.append(panel(out[t], text))
        slices.append(panel(space_time_slice(out, column), text))
    return stack([row(frames), row(slices)]), {"frame_shown": t, "column": column}


def band_picture(clip: np.ndarray, roi, backend: str, fs: float = 30.0):
    """The face's forehead green trace, input and output, at each of :data:`BANDS` (matplotlib figure)."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(BANDS), 1, figsize=(7, 1.9 * len(BANDS)), sharex=True)
    x, y, w, h = roi
    seconds = np.arange(len(clip)) / fs
    green_in = clip[:, y:y + h, x:x + w, 1].mean(axis=(1, 2))
    for axis, (fl, fh) in zip(axes, BANDS):
        out, _ = magnify(clip, "gaussian_ideal", fs, {**FACE, "fl": fl, "fh": fh}, backend)
        green = out[:, y:y + h, x:x + w, 1].mean(axis=(1, 2))
        axis.plot(seconds, green_in - green_in.mean(), color="C0", lw=1, label="input")
        axis.plot(seconds, green - green.mean(), color="C3", lw=1,
                  label=f"output, fl {fl:.3g}, fh {fh:.3g} Hz")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    axes[len(BANDS) // 2].set_ylabel("forehead mean green - its mean")
    fig.suptitle("face.mp4, gaussian_ideal, alpha 25, level 4: three bands", fontsize=10)
    fig.tight_layout()
    return fig


def iir_picture(pairs: list[dict], fs: float = 30.0):
    """The gain of the IIR temporal filter for each (r1, r2) pair, its half-power band marked."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(7, 3.2))
    freqs = np.linspace(0, fs / 2, 2000)
    for i, pair in enumerate(pairs):
        low, peak, high = iir_band(pair["r1"], pair["r2"], fs)
        label = f"r1 {pair['r1']:g}, r2 {pair['r2']:g}: peak {peak:.2f} Hz, band {low:.2f}-{high:.2f} Hz"
        axis.plot(freqs, iir_response(pair["r1"], pair["r2"], fs, freqs), color=f"C{i}", label=label)
    axis.set_xscale("symlog", linthresh=0.1)
    axis.set_xlim(0, fs / 2)
    axis.set_xlabel("frequency (Hz), at fs 30")
    axis.set_ylabel("gain")
    axis.set_title("laplacian_iir / riesz_iir temporal filter: lp(r1) - lp(r2)", fontsize=10)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    fig.tight_layout()
    return fig


def parameter_items(clips: Path, args: argparse.Namespace) -> list[dict]:
    """Write the parameter page's pictures; return their manifest entries."""
    entries = []
    chest = None if args.quick else CHEST
    frames = args.frames
    baby = read_clip(clips / ("face.mp4" if args.quick else "baby.mp4"), frames, args.crop or chest)
    names = ["alpha"] if args.quick else [*SWEEPS, "band", "iir_response"]
    for name in names:
        path = f"param-{name}.png"
        if name in SWEEPS:
            pipeline, base, values, caption = SWEEPS[name]
            picture, where = sweep_picture(baby, pipeline, base, values, caption, args.backend)
            entry = {"name": name, "clip": "baby.mp4", "crop": args.crop or chest, "frames": len(baby),
                     "pipeline": pipeline, "base": base, "values": values, **where}
            save_png(picture, args.out / path)
            if args.stills is not None:
                entry["still_bytes"] = save_png(picture, args.stills / path, STILL_LIMIT)
        else:
            if name == "band":
                face = read_clip(clips / "face.mp4", frames)
                fig = band_picture(face, FOREHEAD["face.mp4"], args.backend)
                entry = {"name": name, "clip": "face.mp4", "frames": len(face), "pipeline": "gaussian_ideal",
                         "base": FACE, "values": [{"fl": fl, "fh": fh} for fl, fh in BANDS],
                         "roi": FOREHEAD["face.mp4"]}
            else:
                fig = iir_picture(SWEEPS["r1_r2"][2])
                entry = {"name": name, "values": SWEEPS["r1_r2"][2],
                         "bands": [iir_band(p["r1"], p["r2"], 30.0) for p in SWEEPS["r1_r2"][2]]}
            for folder in [args.out] + ([args.stills] if args.stills is not None else []):
                tmp = folder / f".{path}.tmp"
                fig.savefig(tmp, format="png", dpi=80)
                _replace(tmp, folder / path)
                if folder == args.stills:
                    entry["still_bytes"] = (folder / path).stat().st_size
            _pyplot().close(fig)
        entry["files"] = {"picture": path}
        entries.append(entry)
    return entries


# --- the manifest -------------------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    _replace(tmp, path)


def fragment(meta: dict, entries: list[dict]) -> str:
    """The manifest as Markdown: one line per picture, the command, machine and date once."""
    lines = [f"Made by `{meta['command']}` on {meta['machine']}, {meta['date']} (vidmag {meta['vidmag']}, "
             f"backend {meta['backend']}).", ""]
    for entry in entries:
        what = entry.get("preset") or entry["name"]
        files = ", ".join(f"[{key}]({name})" for key, name in entry["files"].items()
                          if not key.startswith("still"))
        extra = f"; the whole clip: `{entry['vidmag_command']}`" if "vidmag_command" in entry else ""
        frames = entry.get("frames", "-")
        lines.append(f"- **{entry.get('clip', '')} {what}** ({frames} frames): {files}{extra}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=Path, default=CLIPS, help="folder of the sample clips")
    parser.add_argument("--out", type=Path, default=None,
                        help="build folder, created, outside docs/ (default site-assets/gallery; with "
                             "--parameters site-assets/parameters, with --quick site-assets/gallery-quick)")
    parser.add_argument("--frames", type=int, default=150, help="frames read from each clip")
    parser.add_argument("--only", nargs="+", metavar="PRESET", help="these presets only (gallery mode)")
    parser.add_argument("--backend", default="auto", help="vidmag backend (default auto)")
    parser.add_argument("--parameters", action="store_true", help="the parameter page's pictures instead")
    parser.add_argument("--stills", type=Path, default=None,
                        help="also write the small committed PNGs here (e.g. docs/vidmag/img)")
    parser.add_argument("--still-width", type=int, default=480, help="width of a gallery still, pixels")
    parser.add_argument("--preview-seconds", type=float, default=3.0)
    parser.add_argument("--preview-width", type=int, default=480)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: face.mp4 with preset face (or alpha), 24 frames of a 96 x 96 crop")
    args = parser.parse_args(argv)
    if args.out is None:  # each mode its own folder: a quick run does not replace the full gallery's manifest
        name = "gallery-quick" if args.quick else "parameters" if args.parameters else "gallery"
        args.out = OUT.with_name(name)
    args.crop = None
    if args.quick:
        args.frames, args.crop, args.only = 24, (150, 70, 96, 96), ["face"]
    if args.frames < 16:
        parser.error(f"--frames must be >= 16 (a spectrum needs 16 frames), got {args.frames}")
    if not args.clips.is_dir():
        parser.error(f"--clips: directory {args.clips} does not exist")
    out = args.out.resolve()
    if out == ROOT / "docs" or ROOT / "docs" in out.parents:
        parser.error(f"--out {args.out} is under docs/: mkdocs would publish the build there and its links "
                     "would break the strict build on a checkout without it; use a folder outside docs/")
    if args.stills is not None and not args.stills.is_dir():
        parser.error(f"--stills: directory {args.stills} does not exist")
    pairs = preset_clips(args.clips)
    if args.only:
        unknown = sorted(set(args.only) - set(vidmag.PRESETS))
        if unknown:
            parser.error(f"--only: unknown preset(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(vidmag.PRESETS)}")
        pairs = [(c, p) for c, p in pairs if p in args.only]
    if not args.parameters and not pairs:
        parser.error(f"--clips {args.clips}: no clip of the presets asked for is there")
    if args.parameters and not (args.clips / ("face.mp4" if args.quick else "baby.mp4")).is_file():
        parser.error(f"--parameters needs baby.mp4 and face.mp4 in {args.clips}")
    args.out.mkdir(parents=True, exist_ok=True)

    meta = {
        "command": shlex.join(["python", "scripts/dev/gallery.py", *argv]),
        "machine": machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "vidmag": vidmag.__version__,
        "backend": args.backend,
        "frames": args.frames,
    }
    if args.parameters:
        entries = parameter_items(args.clips, args)
    else:
        entries = []
        for clip_name, preset_name in pairs:
            entry = gallery_item(args.clips, clip_name, preset_name, args)
            print(f"{clip_name} {preset_name}: {entry['frames']} frames in {entry['seconds']} s", flush=True)
            entries.append(entry)
    manifest = json.dumps({**meta, "items": entries}, indent=1, default=list)
    write_text(args.out / "gallery.json", manifest + "\n")
    write_text(args.out / "gallery.md", fragment(meta, entries))
    count = sum(len(e["files"]) for e in entries)
    print(f"wrote {count} pictures and gallery.json, gallery.md to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
