"""The quality report of a real clip: what can be measured without a ground truth.

Noise amplification in static regions (temporal standard deviation of the output's luminance over the
input's, where nothing moves), temporal flicker (the frame-to-frame change of the mean luminance) and the
share of clipped bytes, for one pipeline run on the clip. The clip is streamed: memory holds a few per-pixel
sums, not the clip.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from vidmag.evaluate.metrics import LUMA
from vidmag.params import check_frames, check_integer, check_number

#: Share of the pixels taken as static when no region is given: those of least input temporal variance.
STATIC_FRACTION = 0.1


@dataclass(frozen=True)
class ClipReport:
    """What :func:`clip_report` measured.

    Attributes
    ----------
    source : str
        The file, or ``"array"``.
    pipeline : str
    fs : float
    params : dict
        The pipeline's parameters.
    frames : int
        Output frames measured.
    static_region : str
        ``"x,y,w,h"`` given, or how the automatic region was chosen.
    static_pixels : int
        Pixels in the static region.
    input_noise, output_noise : float
        Root mean temporal variance of the luminance in the static region, grey levels.
    noise_amplification : float
        ``output_noise / input_noise`` (NaN when the input does not vary there at all).
    input_flicker, output_flicker : float
        Mean absolute change of the frame's mean luminance from one frame to the next, grey levels.
    flicker_ratio : float
        ``output_flicker / input_flicker`` (NaN when the input's mean luminance never changes).
    input_clipped, output_clipped : float
        Share of bytes at 0 or 255.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag.evaluate import clip_report
    >>> frames = np.random.default_rng(0).integers(100, 140, size=(16, 64, 64, 3), dtype=np.uint8)
    >>> report = clip_report(frames, preset="face")
    >>> report.source, report.pipeline, report.fs, report.frames
    ('array', 'gaussian_ideal', 30.0, 16)
    >>> print(report.table())
    clip array: 16 frames, pipeline gaussian_ideal at fs 30 Hz (alpha=25, ...)
    static region: automatic: the 10% of pixels whose input luminance varies least (410 pixels)
    ...
    """

    source: str
    pipeline: str
    fs: float
    params: dict[str, Any]
    frames: int
    static_region: str
    static_pixels: int
    input_noise: float
    output_noise: float
    noise_amplification: float
    input_flicker: float
    output_flicker: float
    flicker_ratio: float
    input_clipped: float
    output_clipped: float

    def table(self) -> str:
        """The report as text."""
        values = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in self.params.items())
        rows = [
            ("measure", "input", "output", "output / input"),
            ("static-region noise (grey levels)", f"{self.input_noise:.3f}", f"{self.output_noise:.3f}",
             f"{self.noise_amplification:.2f}"),
            ("flicker: mean |change of mean luminance| (grey levels)", f"{self.input_flicker:.3f}",
             f"{self.output_flicker:.3f}", f"{self.flicker_ratio:.2f}"),
            ("clipped bytes (0 or 255)", f"{self.input_clipped:.3%}", f"{self.output_clipped:.3%}", ""),
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [f"clip {self.source}: {self.frames} frames, pipeline {self.pipeline} at fs {self.fs:g} Hz "
                 f"({values})",
                 f"static region: {self.static_region} ({self.static_pixels} pixels)", ""]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (NaN as None)."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)


def check_roi(name: str, roi: Any, height: int, width: int) -> tuple[int, int, int, int] | None:
    """`roi` ``(x, y, w, h)`` in pixels (or ``"x,y,w,h"``) as ints, checked to lie inside the frame."""
    if roi is None:
        return None
    if isinstance(roi, str):
        parts = roi.split(",")
        try:
            roi = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"{name} must be x,y,w,h in whole pixels, got {roi!r}") from None
    if not isinstance(roi, Sequence) or len(roi) != 4:
        raise ValueError(f"{name} must be (x, y, w, h) in pixels, got {roi!r}")
    x, y, w, h = (check_integer(name, v) for v in roi)
    if x < 0 or y < 0 or w < 1 or h < 1 or x + w > width or y + h > height:
        raise ValueError(f"{name} = ({x}, {y}, {w}, {h}) must lie inside the {width} x {height} frame "
                         "(x, y >= 0, w, h >= 1, x + w <= width, y + h <= height)")
    return x, y, w, h


def _source(clip: Any, max_frames: int | None
            ) -> tuple[Callable[[], Iterator[np.ndarray]], str, float | None]:
    """(a source of frames, its name, the container's rate or None)."""
    if isinstance(clip, (str, bytes, os.PathLike)):
        from vidmag import io

        info = io.probe(clip)
        read = io.frame_source(clip)
        return (lambda: io.first_frames(read(), max_frames)), os.fspath(clip), float(info.fps)
    frames = check_frames("clip", clip)[:max_frames]
    return (lambda: iter(frames)), "array", None


def clip_report(
    clip: Any,
    *,
    preset: str | None = None,
    pipeline: str | None = None,
    fs: float | None = None,
    roi_static: Any = None,
    static_fraction: float = STATIC_FRACTION,
    backend: str = "auto",
    compat: str | None = None,
    max_frames: int | None = None,
    **params: Any,
) -> ClipReport:
    """Magnify a clip and report what needs no ground truth.

    Parameters
    ----------
    clip : str, os.PathLike or ndarray
        A video file, or uint8 frames (T, H, W, 3).
    preset, pipeline, fs, compat, **params
        As :func:`vidmag.magnify_file`: a preset, or a pipeline and its parameters. `fs` None: the
        preset's, else the container's frame rate (required for an array without a preset).
    roi_static : (x, y, w, h) or str, optional
        A region of the frame (pixels) where nothing moves or changes. None: the `static_fraction` of the
        pixels whose input luminance varies least over time.
    static_fraction : float
        Share of the pixels the automatic static region takes, in (0, 1].
    backend : str
        As :func:`vidmag.magnify`.
    max_frames : int, optional
        Read at most this many frames.

    Returns
    -------
    ClipReport
        The measures, with the pipeline and parameters that ran.

    Notes
    -----
    Noise amplification is the root mean temporal variance of the output's luminance over the input's in
    the static region: 1 means the pipeline added nothing there; a linear pipeline amplifies the noise
    inside its pass band by up to 1 + alpha. Flicker is the mean over frames of ``|mean Y(t) - mean Y(t-1)|``.
    Backends: all.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag.evaluate import clip_report
    >>> frames = np.random.default_rng(0).integers(100, 140, size=(16, 64, 64, 3), dtype=np.uint8)
    >>> report = clip_report(frames, pipeline="gaussian_ideal", fs=30.0, alpha=10.0, level=2, fl=1.0, fh=2.0,
    ...                      chrom_attenuation=1.0)
    >>> report.pipeline, report.frames, report.input_clipped, report.output_clipped
    ('gaussian_ideal', 16, 0.0, 0.0)
    >>> report.noise_amplification >= 1.0
    True
    """
    from vidmag.files import _resolve_pipeline
    from vidmag.pipelines import SaturationWarning, run

    if max_frames is not None:
        max_frames = check_integer("max_frames", max_frames)
        if max_frames < 2:
            raise ValueError(f"max_frames must be >= 2 (flicker needs two frames) or None, got {max_frames}")
    static_fraction = check_number("static_fraction", static_fraction)
    if not 0 < static_fraction <= 1:
        raise ValueError(f"static_fraction must be in (0, 1], got {static_fraction}")
    source, name, container_fps = _source(clip, max_frames)
    if fs is None and preset is None and container_fps is None:
        raise TypeError("fs: give fs= (Hz) for frames held in an array, or a preset")
    if fs is not None:
        fs = check_number("fs", fs)
    chosen, rate, merged = _resolve_pipeline(preset, pipeline, fs, compat, dict(params),
                                             container_fps or 1.0)
    first = next(iter(source()), None)
    if first is None:
        raise ValueError("clip: no frames")
    height, width = first.shape[:2]
    roi = check_roi("roi_static", roi_static, height, width)
    sums = {key: np.zeros((height, width)) for key in ("in", "in2", "out", "out2")}
    means: dict[str, list[float]] = {"in": [], "out": []}
    clipped = {"in": 0, "out": 0}
    count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SaturationWarning)  # clipping is measured and reported instead
        outputs = run(source, fs=rate, pipeline=chosen, backend=backend, compat=compat, **merged)
        for out, inp in zip(outputs, source()):
            count += 1
            for key, frame in (("in", inp), ("out", out)):
                y = frame.astype(np.float64) @ LUMA
                sums[key] += y
                sums[key + "2"] += y * y
                means[key].append(float(y.mean()))
                clipped[key] += int(np.count_nonzero((frame == 0) | (frame == 255)))
    if count < 2:
        raise ValueError(f"clip: the report needs at least 2 output frames, got {count}")
    variance = {key: np.maximum(sums[key + "2"] / count - (sums[key] / count) ** 2, 0.0)
                for key in ("in", "out")}
    if roi is not None:
        x, y, w, h = roi
        mask = np.zeros((height, width), dtype=bool)
        mask[y:y + h, x:x + w] = True
        region = f"{x},{y},{w},{h} (given)"
    else:
        # the pixels of least input variance; ties broken by position, so the choice is reproducible
        order = np.argsort(variance["in"], axis=None, kind="stable")
        mask = np.zeros(height * width, dtype=bool)
        mask[order[: max(1, round(static_fraction * height * width))]] = True
        mask = mask.reshape(height, width)
        region = f"automatic: the {static_fraction:.0%} of pixels whose input luminance varies least"
    noise_in = math.sqrt(float(variance["in"][mask].mean()))
    noise_out = math.sqrt(float(variance["out"][mask].mean()))
    flicker_in = float(np.mean(np.abs(np.diff(means["in"]))))
    flicker_out = float(np.mean(np.abs(np.diff(means["out"]))))
    size = count * height * width * 3
    return ClipReport(
        source=name, pipeline=chosen, fs=float(rate), params=merged, frames=count, static_region=region,
        static_pixels=int(mask.sum()), input_noise=noise_in, output_noise=noise_out,
        noise_amplification=noise_out / noise_in if noise_in > 0 else math.nan,
        input_flicker=flicker_in, output_flicker=flicker_out,
        flicker_ratio=flicker_out / flicker_in if flicker_in > 0 else math.nan,
        input_clipped=clipped["in"] / size, output_clipped=clipped["out"] / size,
    )
