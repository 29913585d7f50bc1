"""The live magnifier: frames pushed in one at a time, each magnified frame back before the next comes.

:class:`Magnifier` is a :class:`vidmag.backend.stream.Stream` (``vidmag.open_stream``) opened on the first
frame's size, with what a live feed needs on top: presets in their streaming form, parameters that change
between frames (the viewer's sliders) and a running account of speed and latency.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidmag.backend.stream import SaturationCount, Stream
from vidmag.live.presets import live_preset_params
from vidmag.params import STREAMING_PIPELINES, check_parameters, make_plan

__all__ = ["Magnifier", "MagnifierStats"]

#: How many of the latest pushes the statistics cover.
STATS_WINDOW = 300


@dataclass(frozen=True)
class MagnifierStats:
    """Speed and latency of a :class:`Magnifier` over its latest pushes (at most :data:`STATS_WINDOW`).

    Attributes
    ----------
    frames : int
        Frames pushed since the magnifier was made (all of them, not only the window's).
    fps : float
        Frames per second of wall-clock time over the window: from the start of its first push to the end
        of its last (what a live feed gets out, waiting for frames included). 0.0 before two pushes.
    latency_ms : float
        Median time one push took, in milliseconds (0.0 before the first).
    latency_p99_ms : float
        99th percentile of the push times, in milliseconds.

    Examples
    --------
    >>> stats = MagnifierStats(frames=90, fps=29.9, latency_ms=4.2, latency_p99_ms=6.0)
    >>> stats.as_dict()["fps"]
    29.9
    """

    frames: int
    fps: float
    latency_ms: float
    latency_p99_ms: float

    def as_dict(self) -> dict[str, Any]:
        """The four numbers as a dict, keyed by attribute name."""
        return {"frames": self.frames, "fps": self.fps, "latency_ms": self.latency_ms,
                "latency_p99_ms": self.latency_p99_ms}


def _resolve(preset: str | None, pipeline: str | None, compat: str | None,
             params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if preset is not None:
        preset_pipeline, preset_values = live_preset_params(preset, compat)
        if pipeline is not None and pipeline != preset_pipeline:
            raise ValueError(
                f"pipeline: preset {preset!r} runs {preset_pipeline!r} on a stream; got "
                f"pipeline={pipeline!r} "
                "(give a preset or a pipeline, not two different ones)"
            )
        return preset_pipeline, {**preset_values, **params}
    if pipeline is None:
        raise TypeError("Magnifier() needs preset= or pipeline=")
    return pipeline, dict(params)


class Magnifier:
    """Magnify a live feed frame by frame: ``push(frame)`` returns the magnified frame, with no look-ahead.

    Parameters
    ----------
    pipeline : str, optional
        A streaming pipeline, ``"laplacian_butterworth"`` or ``"laplacian_iir"``; or give `preset`.
    fs : float
        Frame rate of the feed in Hz (the temporal filters' sampling rate; laplacian_iir does not use it).
        A preset's own fs (the capture rate of the paper's clip) is not used: the feed's rate is the truth.
    backend : str
        ``"auto"`` or a backend name (``vidmag backends``); a named backend that cannot run raises here.
    compat : None or "mit"
        As :func:`vidmag.magnify`.
    preset : str, optional
        A name from ``vidmag.PRESETS``, in its streaming form (``vidmag.live.presets``: the colour presets
        run as laplacian_butterworth over a band two octaves wide). `params` override single values.
    **params
        The pipeline's parameters (``alpha``, ``lambda_c``, ``fl``, ``fh`` or ``r1``, ``r2``,
        ``chrom_attenuation``), validated here, before any frame, as :func:`vidmag.magnify` validates them;
        what depends on the frame size is checked at the first push.

    Attributes
    ----------
    pipeline : str
    params : dict
        The current parameters (validated, as floats).
    backend : str
        The backend that runs (``"auto"`` resolved).
    fs : float
    shape : tuple or None
        (H, W, 3) of the feed, fixed by the first push; None before it.

    Raises
    ------
    TypeError
        Neither `pipeline` nor `preset`; an unknown, missing or mistyped parameter.
    ValueError
        An ideal pipeline (they cannot stream: their band-pass needs the whole clip), a preset without a
        streaming form, a value out of range (the message names the parameter).
    vidmag.backend.BackendUnavailableError
        The named backend cannot run here.

    Notes
    -----
    Frame 0 comes out as its input bytes (it starts the filters, as in the whole-clip run); the frames of a
    feed pushed one by one equal ``vidmag.magnify`` of the same frames as a clip (the same backend, the
    same parameters), within one grey level. :meth:`set_params` says what a parameter change does to the
    filters. Backends: all (``vidmag.backend``).

    Examples
    --------
    >>> import numpy as np
    >>> frames = np.random.default_rng(0).integers(96, 160, (3, 48, 64, 3), dtype=np.uint8)
    >>> with Magnifier("laplacian_iir", fs=30, backend="cpu", alpha=10, lambda_c=16, r1=0.4, r2=0.05,
    ...                chrom_attenuation=0.1) as magnifier:
    ...     out = [magnifier.push(frame) for frame in frames]
    >>> out[2].shape, magnifier.stats.frames
    ((48, 64, 3), 3)
    """

    def __init__(self, pipeline: str | None = None, *, fs: float, backend: str = "auto",
                 compat: str | None = None, preset: str | None = None, **params: Any) -> None:
        pipeline, params = _resolve(preset, pipeline, compat, params)
        checked = check_parameters(pipeline, fs, compat, params)
        if pipeline not in STREAMING_PIPELINES:
            raise ValueError(
                f"{pipeline} cannot stream: its ideal band-pass filters each pixel's series over the whole "
                "clip, so no output frame exists before the last input frame; on a live feed use "
                f"{' or '.join(STREAMING_PIPELINES)} (or a preset: the colour ones run in a streaming form)"
            )
        self.fs = checked.pop("fs")
        self.pipeline, self.compat, self.params = pipeline, compat, checked
        from vidmag.pipelines import select_backend

        # per pipeline: "auto" for a phase pipeline takes a backend that runs it, not the first overall
        self.backend, _ = select_backend(backend, pipeline)
        self.shape: tuple[int, int, int] | None = None
        self._stream: Stream | None = None
        self._closed = False
        self._frames = 0
        self._starts: deque[float] = deque(maxlen=STATS_WINDOW)
        self._latencies: deque[float] = deque(maxlen=STATS_WINDOW)
        self._last_end = 0.0
        # what the feed was pushed and gave back since the last alpha change, across the streams it opens:
        # the SaturationWarning of vidmag.magnify, given when the feed is closed
        self._saturation = SaturationCount(self.params["alpha"])

    # -- frames ------------------------------------------------------------------------------------------

    def push(self, frame: np.ndarray) -> np.ndarray:
        """Magnify the next frame of the feed.

        Parameters
        ----------
        frame : ndarray, uint8, shape (H, W, 3)
            RGB. Every frame has the size of the first one pushed.

        Returns
        -------
        ndarray, uint8, shape (H, W, 3)
            The magnified frame (a new array).

        Raises
        ------
        ValueError
            The magnifier is closed; `frame` is not a uint8 (H, W, 3) array, or not of the first frame's
            size (the message names both sizes), or the first frame is too small for the pipeline.
        """
        if self._closed:
            raise ValueError(f"push on a closed Magnifier ({self.pipeline} on backend {self.backend!r})")
        if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.ndim != 3 \
                or frame.shape[2] != 3:
            got = f"{getattr(frame, 'dtype', type(frame).__name__)} {getattr(frame, 'shape', '')}"
            raise ValueError(f"frame must be a uint8 (H, W, 3) RGB array, got {got}")
        if self.shape is not None and frame.shape != self.shape:
            raise ValueError(
                f"frame: frame {self._frames} is {frame.shape[0]} x {frame.shape[1]} (H x W); this feed's "
                f"frames are {self.shape[0]} x {self.shape[1]}, fixed by its first frame (open a new "
                "Magnifier for another size)"
            )
        start = time.perf_counter()
        if self._stream is None:
            self._stream = self._open(frame.shape)
        out = self._stream.push(frame)
        end = time.perf_counter()
        self._saturation.add(frame, out)
        self._starts.append(start)
        self._latencies.append(end - start)
        self._last_end = end
        self._frames += 1
        return out

    def _open(self, shape: tuple[int, ...]) -> Stream:
        from vidmag.pipelines import open_stream

        stream = open_stream(shape, fs=self.fs, pipeline=self.pipeline, backend=self.backend,
                             compat=self.compat, **self.params)
        stream.saturation = None  # counted here instead, across the streams a feed opens (self._saturation)
        self.shape = (int(shape[0]), int(shape[1]), 3)
        return stream

    # -- parameters --------------------------------------------------------------------------------------

    def set_params(self, **changes: Any) -> dict[str, Any]:
        """Change parameters between two frames; the next push uses them.

        Parameters
        ----------
        **changes
            Any of the pipeline's parameters (``alpha``, ``lambda_c``, ``chrom_attenuation``, and ``fl``,
            ``fh`` or ``r1``, ``r2``), validated together with the unchanged ones exactly as the pipeline's
            parameters are: on an error nothing changes.

        Returns
        -------
        dict
            The parameters now in force.

        Raises
        ------
        TypeError, ValueError
            An unknown parameter, a value of the wrong type or out of range (named).

        Notes
        -----
        The filter state is kept through every change, so the picture never jumps:

        - ``alpha``, ``lambda_c``, ``chrom_attenuation``: exact. The filters run on the unamplified
          Laplacian bands and the gains are applied after them, so the frames after the change are exactly
          those of a feed magnified with the new values from its start.
        - ``fl``, ``fh`` (laplacian_butterworth), ``r1``, ``r2`` (laplacian_iir): the filters are
          re-designed for the new band and start from the state the old ones left (their two low-passed
          bands and the previous band), which are values of the signal, not of the filter. The output then
          moves towards that of a feed filtered with the new band from its start as the slower low-pass
          settles (a time constant of about ``1 / (2 pi fl)`` seconds, or ``1 / (r2 fs)``); there is no
          restart and no flash.
        - A change restarts the filters when it turns on a pyramid level that had no gain so far (raising
          ``alpha`` from 0): that level has no state to continue. The next frame then comes out as its
          input bytes, like a feed's first frame.
        - The phase pipelines' streams (riesz_*) keep their accumulated phase and filter state the same
          way: alpha and sigma act after the filters (exact), a band change re-designs the filters.
        """
        merged = {**self.params, **changes}
        checked = check_parameters(self.pipeline, self.fs, self.compat, merged)
        checked.pop("fs")
        if self._stream is not None:
            plan = make_plan(self.pipeline, fs=self.fs, compat=self.compat, params=checked,
                             frame_shape=self.shape, batch=self._stream.plan.batch)
            # both kinds of stream (Stream, and the phase pipelines' PhaseStream) keep their state through
            # a change they can take; retune() says False for one they cannot, and then the stream restarts
            if not self._stream.retune(plan):
                self._stream.close()
                self._stream = None  # the next push opens a fresh stream of the same size
        self._saturation.retune(checked["alpha"])  # the verdict at close is about the alpha in force
        self.params = checked
        return dict(checked)

    # -- account -----------------------------------------------------------------------------------------

    @property
    def stats(self) -> MagnifierStats:
        """:class:`MagnifierStats`: frames pushed, frames/s and push latency (median, p99) in ms."""
        latencies = np.asarray(self._latencies)
        if latencies.size == 0:
            return MagnifierStats(self._frames, 0.0, 0.0, 0.0)
        span = self._last_end - self._starts[0]
        fps = len(self._starts) / span if len(self._starts) > 1 and span > 0 else 0.0
        median, p99 = np.percentile(latencies, [50, 99]) * 1e3
        return MagnifierStats(self._frames, float(fps), float(median), float(p99))

    # -- life cycle --------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End the feed: wait for the device and drop the filter state. Closing twice is fine.

        Warns
        -----
        vidmag.SaturationWarning
            The frames since the last change of ``alpha`` were clipped at 0 or 255 much more than their
            input (the rule of :func:`vidmag.magnify`); given once, at the first close.
        """
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if not self._closed:
            self._saturation.verdict(stacklevel=3)  # the warning points at the caller of close()
        self._closed = True

    def __enter__(self) -> Magnifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        size = "no frame yet" if self.shape is None else f"{self.shape[0]}x{self.shape[1]}"
        state = "closed" if self._closed else f"{self._frames} frames"
        return f"<vidmag.live.Magnifier {self.pipeline} on {self.backend!r}, {size}, {state}>"

