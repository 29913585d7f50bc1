"""Magnify a video file into another: decode, magnify and encode, streaming frame by frame."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from vidmag import io
from vidmag.params import check_bool, check_integer, check_number
from vidmag.tiles import choose_tile, default_memory_budget, parse_size, working_set

__all__ = ["MagnifyResult", "magnify_file"]

_X264_PRESETS = (
    "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow",
)


@dataclass(frozen=True)
class MagnifyResult:
    """What :func:`magnify_file` did.

    Attributes
    ----------
    output : str
        Absolute path of the file written.
    frames : int
        Number of frames written.
    width, height : int
        Size of the magnified frames in pixels (twice the source width with ``side_by_side``).
    encoded_width, encoded_height : int
        Size stored in the file: odd sizes are padded to even for H.264 4:2:0.
    fps : fractions.Fraction
        Frame rate of the output (always the source's container rate), frames per second.
    pipeline : str
        The pipeline that ran.
    backend : str
        The backend that ran (``"auto"`` resolved to its choice).
    seconds : float
        Wall-clock time of the whole call, decoding and encoding included.
    audio : bool
        Whether an audio track was carried over.
    route : str
        How the whole-clip stack was held: ``"in memory"``, ``"bands on disk"`` (laplacian_ideal over the
        memory budget, on any backend), ``"tiles of H x W"`` (gaussian_ideal over it) or ``"phase on disk"``
        (riesz_ideal and steerable_ideal over it, on every backend that runs them).

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> import vidmag
    >>> from vidmag import io
    >>> rng = np.random.default_rng(0)
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in rng.integers(100, 140, size=(24, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> result = vidmag.magnify_file("clip.mp4", "clip-out.mp4", pipeline="laplacian_iir", backend="cpu",
    ...                              alpha=10, lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1)
    >>> result.width, result.height, result.fps, result.pipeline
    (96, 64, Fraction(30, 1), 'laplacian_iir')
    """

    output: str
    frames: int
    width: int
    height: int
    encoded_width: int
    encoded_height: int
    fps: Fraction
    pipeline: str
    backend: str
    seconds: float
    audio: bool
    route: str = "in memory"

    @property
    def frames_per_second(self) -> float:
        """Throughput of the whole call: frames written per wall-clock second."""
        return self.frames / self.seconds if self.seconds > 0 else float("inf")

    def summary(self) -> str:
        """One line: frames, resolution, backend, seconds and frames/s."""
        size = f"{self.width}x{self.height}"
        if (self.encoded_width, self.encoded_height) != (self.width, self.height):
            size += f" (encoded {self.encoded_width}x{self.encoded_height})"
        return (
            f"{self.frames} frames, {size}, {float(self.fps):g} fps, pipeline {self.pipeline}, "
            f"backend {self.backend}, {self.seconds:.2f} s, {self.frames_per_second:.1f} frames/s"
            f" -> {self.output}"
        )


def _resolve_pipeline(
    preset: str | None,
    pipeline: str | None,
    fs: float | None,
    compat: str | None,
    params: dict[str, Any],
    container_fps: Fraction,
) -> tuple[str, float, dict[str, Any]]:
    from vidmag import presets as _presets

    if preset is not None:
        if preset not in _presets.PRESETS:
            names = ", ".join(_presets.PRESETS)
            raise ValueError(f"preset: unknown preset {preset!r}; choose one of {names}")
        preset_pipeline, preset_fs, preset_params = _presets.preset_params(preset, compat)
        if pipeline is not None and pipeline != preset_pipeline:
            raise ValueError(
                f"pipeline: preset {preset!r} uses {preset_pipeline!r}; got pipeline={pipeline!r} "
                "(give a preset or a pipeline, not two different ones)"
            )
        merged = {**preset_params, **params}
        return preset_pipeline, float(preset_fs) if fs is None else fs, merged
    if pipeline is None:
        raise TypeError("magnify_file() needs preset= or pipeline=")
    return pipeline, float(container_fps) if fs is None else fs, dict(params)


# Pipelines that read the whole clip once before the first output frame exists.
_TWO_PASS = ("gaussian_ideal", "laplacian_ideal")


class _Progress:
    """What magnify_file reports while it works.

    A callable `progress` gets the number of output frames done. With ``progress=True`` a bar is drawn on
    stderr, and for the two-pass pipelines a first bar shows the reading pass, which otherwise would show
    nothing for half of the run. Nothing is drawn until the work is under way, so a run that fails its
    checks prints only its error.
    """

    def __init__(self, progress: bool | Callable[[int], None], pipeline: str, n_frames: int | None,
                 expected: int | None, label: str) -> None:
        self._callback = progress if callable(progress) else None
        self._bars: dict[str, Any] = {}
        self._used: set[str] = set()
        self._make_write_bar: Callable[[], Any] | None = None
        if progress and self._callback is None:
            from vidmag._progress import ProgressBar

            def make_write_bar() -> Any:
                return ProgressBar(total=expected, label=label)

            if pipeline in _TWO_PASS:
                self._bars["read"] = ProgressBar(total=n_frames, label=f"{label} (reading)")
                self._make_write_bar = make_write_bar  # its clock starts when the reading ends
            else:
                self._bars["write"] = make_write_bar()

    def wrap_source(self, source: Callable[[], Iterator[np.ndarray]]) -> Callable[[], Iterator[np.ndarray]]:
        """`source`, reporting the frames of its first pass to the reading bar (if there is one)."""
        if "read" not in self._bars:
            return source
        calls = [0]

        def counted() -> Iterator[np.ndarray]:
            calls[0] += 1
            first_pass = calls[0] == 1
            for done, frame in enumerate(source(), start=1):
                # From frame 2: the checks that read frame 1 have passed by then.
                if first_pass and done > 1:
                    self._update("read", done)
                yield frame
            if first_pass:
                self._finish("read")

        return counted

    def output_frame(self, done: int) -> None:
        """The callback for ``pipelines.run``: `done` output frames so far."""
        if self._callback is not None:
            self._callback(done)
        if "read" in self._bars:
            self._finish("read")
        if "write" in self._bars:
            self._update("write", done)

    def _update(self, which: str, done: int) -> None:
        self._used.add(which)
        self._bars[which](done)

    def _finish(self, which: str) -> None:
        if which in self._used:
            self._bars[which].close()
        if which == "read" and self._make_write_bar is not None:
            self._bars["write"] = self._make_write_bar()
            self._make_write_bar = None

    def close(self) -> None:
        """End the bars that were drawn (closing a bar twice is harmless)."""
        for which in self._used:
            self._bars[which].close()


def magnify_file(
    src: str | bytes | os.PathLike,
    dst: str | bytes | os.PathLike,
    *,
    preset: str | None = None,
    pipeline: str | None = None,
    fs: float | None = None,
    backend: str = "auto",
    compat: str | None = None,
    quality: int = 18,
    encoder_preset: str = "medium",
    side_by_side: bool = False,
    audio: bool = True,
    progress: bool | Callable[[int], None] = False,
    memory: int | str | None = None,
    max_frames: int | None = None,
    **params: Any,
) -> MagnifyResult:
    """Magnify a video file and write the result as H.264.

    The clip is streamed: frames are decoded, magnified and encoded one at a time (the ideal pipelines read
    the file twice instead of holding it), so memory does not grow with the clip's length.

    Parameters
    ----------
    src : str, bytes or os.PathLike
        Any video file FFmpeg decodes. Every pixel format (grayscale included) is converted to 8-bit RGB. It
        must be a regular file: it is read more than once, which a pipe (``<(...)``, a FIFO) cannot be. A
        still image (PNG, JPEG) is refused: it has no frame rate.
    dst : str, bytes or os.PathLike
        Output file, ending in ``.mp4`` (or ``.m4v``, ``.mov``, ``.mkv``). Its directory must exist, and it
        must not be `src` (under any spelling, symbolic or hard link: refused before anything is written).
        It is written under a temporary name in that directory and renamed when complete: on any failure
        (bad parameter, unreadable input, encoder error, KeyboardInterrupt) neither `dst` nor a temporary is
        left behind, and an existing `dst` is left untouched.
    preset : str or None
        A name from ``vidmag.PRESETS`` (``"face"``, ``"baby"``, ...): pipeline, fs and parameters of the
        paper's result for that clip. Keyword `params` override single parameters of the preset.
    pipeline : str or None
        ``"gaussian_ideal"``, ``"laplacian_ideal"``, ``"laplacian_butterworth"`` or ``"laplacian_iir"``;
        required when `preset` is None.
    fs : float or None
        Sampling rate of the frames in Hz, used by the temporal filters. None: the preset's fs, else the
        container's frame rate. The output's frame rate is always the source container's rate. Numbers
        here and in `params` may be Python or numpy numbers; strings are refused.
    backend : str
        ``"auto"`` or a backend name (see ``vidmag backends``); a named backend that cannot run raises.
    compat : {None, "mit"}
        None: default semantics, every input frame comes out. ``"mit"``: the MIT code's output, quirks and
        frame counts included (see the semantics page).
    quality : int
        x264 constant rate factor, 0 (lossless) to 51; lower is better and larger. 18 looks lossless on
        most clips.
    encoder_preset : str
        x264 speed preset, ``"ultrafast"`` to ``"veryslow"``.
    side_by_side : bool
        Write input and output next to each other (input on the left), each frame twice as wide.
    audio : bool
        Carry the source's first audio track over (copied when the codec fits the container, else
        transcoded to AAC). Cut where the video ends.
    progress : bool or callable
        True: a progress bar on stderr. A callable is called with the number of frames done.
        The flags take ``True``/``False`` (or numpy bools) only: ``"no"`` is a TypeError, not a yes.
    memory : int, str or None
        Memory budget for the whole-clip pipelines, in bytes or as ``"2GB"``, ``"500MB"``, ``"1.5GiB"``
        (see :func:`vidmag.tiles.parse_size`). None: :func:`vidmag.tiles.default_memory_budget` (half the
        available memory with psutil, else half the physical memory). When the estimate
        (:func:`vidmag.tiles.working_set`: frames x filtered pixels x 3 x bytes per value) exceeds it,
        laplacian_ideal (any backend) keeps its band stacks in time-major files, riesz_ideal and
        steerable_ideal (cpu backend) their phase series, and gaussian_ideal runs in spatial tiles from a
        decoded copy of the clip, all in a hidden temporary directory next to `dst` that is removed on
        success, error and KeyboardInterrupt. The output is the in-memory run's byte for byte on the cpu
        backend, within 1 grey level on the others. The streaming pipelines do not grow with the clip.
        riesz_ideal and steerable_ideal over the budget on a backend other than cpu (named, or the one
        "auto" chose) raise a ValueError naming memory and the backend: the backend is never switched
        silently. A budget too small for even the phase route's one frame of work is a ValueError naming
        memory.
    max_frames : int or None
        Magnify only the first `max_frames` frames of `src` (a positive integer under the one rule for
        numbers, :func:`vidmag.params.check_integer`: an ``int``, a numpy integer or an integral float such as
        ``8.0``; a bool or a string is a TypeError, ``8.5`` or 0 a ValueError, each naming max_frames). None:
        every frame. The run is the one of a clip that ends there: the ideal pipelines' passes, the memory
        estimate that chooses the route, the progress bar's total and the audio (cut where the video ends) all
        see `max_frames` frames, and `side_by_side` pairs them with the first `max_frames` source frames. A
        clip shorter than `max_frames` runs whole. The streaming pipelines' first `max_frames` output frames
        are those of the full run; the ideal pipelines' are not (their temporal filter sees only the frames
        kept).
    **params
        The pipeline's parameters: ``alpha``, ``level``, ``lambda_c``, ``fl``, ``fh``, ``r1``, ``r2``,
        ``chrom_attenuation`` (see :func:`vidmag.magnify`).

    Returns
    -------
    MagnifyResult
        Frames written, frame size, frame rate, backend, wall-clock seconds and frames/s, output path.

    Raises
    ------
    FileNotFoundError
        `src` or `dst`'s directory does not exist.
    vidmag.io.VideoFormatError
        `src` is not a decodable video, has no frames or is a still image (a ValueError).
    TypeError, ValueError
        A missing, unknown, mistyped or out-of-range parameter; `dst` is `src`; `src` is a pipe; a phase
        ideal pipeline over the `memory` budget on a backend without its bounded route. The message names
        the parameter.

    Warns
    -----
    vidmag.SaturationWarning
        `alpha` is so large that the output is clipped at 0 or 255 far more than the input (see
        :func:`vidmag.pipelines.run`).
    vidmag.backend.BackendUnavailableError
        The named backend cannot run here; the message says why.

    Notes
    -----
    H.264 in 4:2:0 needs even frame sizes: an odd height or width is padded by repeating the last row or
    column (a 65 x 49 result is stored as 66 x 50); nothing is cropped.

    Backends: whichever `backend` names; decoding and encoding run on the CPU (FFmpeg through PyAV).

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> import vidmag
    >>> from vidmag import io
    >>> rng = np.random.default_rng(0)
    >>> with io.VideoWriter("clip.mp4", width=96, height=64, fps=Fraction(30)) as writer:
    ...     for frame in rng.integers(100, 140, size=(24, 64, 96, 3), dtype=np.uint8):
    ...         writer.write(frame)
    >>> result = vidmag.magnify_file("clip.mp4", "clip-out.mp4", pipeline="laplacian_iir", backend="cpu",
    ...                              alpha=10, lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1)
    >>> result.frames, result.backend, io.probe("clip-out.mp4").n_frames
    (24, 'cpu', 24)
    """
    start = time.perf_counter()
    src = io.as_path("src", src)
    dst = io.as_path("dst", dst)
    quality = _check_quality(quality)
    _check_encoder_preset(encoder_preset)
    side_by_side = check_bool("side_by_side", side_by_side)
    audio = check_bool("audio", audio)
    max_frames = _check_max_frames(max_frames)
    if not callable(progress):
        progress = check_bool("progress", progress)
    if fs is not None:
        fs = check_number("fs", fs)
    out_path = io.check_destination(dst, suffixes=tuple(io.CONTAINER_FOR_SUFFIX))
    container_format = io.CONTAINER_FOR_SUFFIX[os.path.splitext(out_path)[1].lower()]
    io.check_not_source(src, dst)
    info = io.probe(src)  # refuses a pipe before opening it, and a still image
    pipeline_name, fs_hz, run_params = _resolve_pipeline(preset, pipeline, fs, compat, params, info.fps)
    n_frames = info.n_frames
    if max_frames is not None and n_frames is not None:
        n_frames = min(n_frames, max_frames)

    # Imported here: vidmag/__init__.py imports this module, and these import the package.
    from vidmag import pipelines as _pipelines
    from vidmag.params import output_frames

    budget = default_memory_budget() if memory is None else parse_size(memory, "memory")
    backend_name, _ = _pipelines.select_backend(backend, pipeline_name)  # "auto" for the pipeline at hand
    frames_of_src = _first_frames(io.frame_source(src), max_frames)
    route = _bounded_route(frames_of_src, n_frames, info, pipeline_name, backend_name, fs_hz, compat,
                           run_params, budget)
    expected = output_frames(pipeline_name, compat, n_frames) if n_frames else None
    report = _Progress(progress, pipeline_name, n_frames, expected, os.path.basename(out_path))
    source = report.wrap_source(frames_of_src)
    magnified: Iterator[np.ndarray] | None = None
    originals: Iterator[np.ndarray] | None = None
    workdir: str | None = None
    try:
        if route is None:
            magnified = _pipelines.run(
                source,
                fs=fs_hz,
                pipeline=pipeline_name,
                backend=backend_name,
                compat=compat,
                progress=report.output_frame,
                n_frames=n_frames,
                **run_params,
            )
        else:
            # next to dst: on the disk the caller chose for the output
            workdir = tempfile.mkdtemp(prefix=".vidmag-work-", dir=os.path.dirname(out_path))
            magnified = route(source, workdir, report.output_frame)
        # The first frame is computed before any file exists, so whatever the pipeline only finds out
        # from the data (frame too small for the level, too few frames) fails with nothing to clean up.
        first = next(magnified, None)
        if first is None:
            raise ValueError(f"src: {src!r}: the pipeline produced no frames from this clip")
        height, width = first.shape[:2]
        if side_by_side:
            originals = io.read_frames(src)
            width *= 2
        # atomic_output gets the path as given, so that its errors name what the caller wrote.
        with io.atomic_output(dst) as tmp, io.VideoWriter(
            tmp,
            width=width,
            height=height,
            fps=info.fps,
            quality=quality,
            container_format=container_format,
            audio_from=src if audio and info.audio_codec else None,
            encoder_preset=encoder_preset,
        ) as writer:
            frame: np.ndarray | None = first
            while frame is not None:
                if originals is not None:
                    frame = np.concatenate([_next_original(originals), frame], axis=1)
                writer.write(frame)
                frame = next(magnified, None)
            frames, has_audio = writer.frames_written, writer.has_audio
            encoded_width, encoded_height = writer.encoded_size
    finally:
        for iterator in (magnified, originals):
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
        report.close()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    return MagnifyResult(
        output=out_path,
        frames=frames,
        width=width,
        height=height,
        encoded_width=encoded_width,
        encoded_height=encoded_height,
        fps=info.fps,
        pipeline=pipeline_name,
        backend=backend_name,
        seconds=time.perf_counter() - start,
        audio=has_audio,
        route=getattr(route, "name", "in memory"),
    )


def _bounded_route(source: Callable[[], Iterator[np.ndarray]], n_frames: int | None, info: io.VideoInfo,
                   pipeline: str, backend: str, fs: float, compat: str | None, params: dict[str, Any],
                   budget: int) -> Any:
    """The bounded-memory route of this run, or None when it runs in memory (it fits, or has none).

    `source` gives the frames the run magnifies and `n_frames` their count when the container states it
    (both already cut to ``max_frames``). The route is a callable ``(source, workdir, progress) -> iterator
    of frames`` with a ``name``.
    """
    from vidmag import _out_of_core
    from vidmag.params import make_plan

    if pipeline not in _out_of_core.ROUTES:
        return None  # a streaming pipeline: it holds O(1) frames
    plan = make_plan(pipeline, fs=fs, compat=compat, params=params, frame_shape=(info.height, info.width, 3),
                     n_frames=n_frames)
    n_frames = n_frames if n_frames else sum(1 for _ in source())
    if working_set(plan, n_frames, backend=backend) <= budget:
        return None
    backends = _out_of_core.ROUTES[pipeline]
    if backends is not None and backend not in backends:
        # no silent switch of backend, not even under "auto" (which resolved to `backend` here): the
        # caller chooses between the backend in memory (a larger budget) and the backend with the route
        need = working_set(plan, n_frames, backend=backend)
        raise ValueError(
            f"memory: {pipeline} on backend {backend!r} needs about {need} bytes in memory, over the budget "
            f"of {budget} bytes, and has no bounded-memory route on that backend; the bounded route "
            f"(phase on disk) runs on backend {', '.join(repr(b) for b in backends)}: give "
            f"backend={backends[0]!r}, or memory={math.ceil(need / 2**20)}MiB or more to run on {backend!r}")
    if pipeline in ("riesz_ideal", "steerable_ideal"):
        # a ValueError naming memory if it cannot fit
        return _out_of_core.phase_route(plan, n_frames, budget, backend)
    if pipeline == "laplacian_ideal":
        def route(source, workdir, progress):
            if backend == "cpu":  # float64, the reference's order: the in-memory run's bytes
                return _out_of_core.laplacian_on_disk(plan, source, workdir, progress)
            return _out_of_core.laplacian_on_device(plan, source, workdir, backend, progress)

        route.name = "bands on disk"
        return route
    tile = choose_tile(plan, n_frames, budget, backend=backend) or (plan.height, plan.width)

    def tiled(source, workdir, progress):
        return _out_of_core.gaussian_tiled(plan, source, workdir, tile, backend=backend, progress=progress)

    tiled.name = f"tiles of {tile[0]} x {tile[1]}"
    return tiled


def _first_frames(source: Callable[[], Iterator[np.ndarray]],
                  max_frames: int | None) -> Callable[[], Iterator[np.ndarray]]:
    """`source`, each pass of it ending after `max_frames` frames (None: `source` itself)."""
    if max_frames is None:
        return source

    def first() -> Iterator[np.ndarray]:
        # the decoder is closed when the pass stops early, not whenever the iterator is collected
        yield from io.first_frames(source(), max_frames)

    return first


def _check_max_frames(max_frames: Any) -> int | None:
    if max_frames is None:
        return None
    # The one rule for numbers (vidmag.params.check_integer, as evaluate's max_frames): an int, a numpy
    # integer or an integral float (8.0) is taken; a string ("8"), a bool (True would be one frame) is a
    # TypeError, a non-integral number (8.5) a ValueError.
    rule = "max_frames must be a positive integer (int, numpy integer or integral float such as 8.0) or None"
    try:
        value = check_integer("max_frames", max_frames)
    except TypeError:
        raise TypeError(f"{rule}, got {type(max_frames).__name__} {max_frames!r}") from None
    except ValueError:
        raise ValueError(f"{rule}, got {max_frames!r}") from None
    if value < 1:
        raise ValueError(f"{rule}, got {max_frames!r}")
    return value


def _next_original(originals: Iterator[np.ndarray]) -> np.ndarray:
    frame = next(originals, None)
    if frame is None:
        raise RuntimeError("side_by_side: the pipeline returned more frames than the source holds")
    return frame


def _check_encoder_preset(encoder_preset: Any) -> str:
    if not isinstance(encoder_preset, str) or encoder_preset not in _X264_PRESETS:
        raise ValueError(f"encoder_preset: {encoder_preset!r} is not one of {', '.join(_X264_PRESETS)}")
    return encoder_preset


def _check_quality(quality: int) -> int:
    message = f"quality: x264 CRF must be an integer from 0 (lossless) to 51, got {quality!r}"
    try:
        value = check_integer("quality", quality)  # a TypeError for a string or a bool
    except ValueError:
        raise ValueError(message) from None
    if not 0 <= value <= 51:
        raise ValueError(message)
    return value
