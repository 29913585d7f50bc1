"""Streaming as an object: :class:`Stream` (``backend.open(plan)``) and the filter state it holds.

A stream magnifies a live sequence of frames: ``push(frames)`` takes one frame or a few and returns as many
magnified frames, one for one, with no look-ahead. The streaming pipelines (laplacian_butterworth,
laplacian_iir) have causal temporal filters, so each output frame depends only on the frames pushed up to it;
the stream holds their state (two low-passes and the previous input, per kept pyramid level) between pushes.
The whole-clip run of those pipelines is a stream too, fed batch by batch (:meth:`Stream.feed`), so a
stream's output equals the whole-clip run of the same backend (bitwise where the backend computes each frame
the same way whatever the batch: the NumPy reference and the OpenCL kernels; within one rounding step
elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vidmag.backend.stages import TemporalFilter, kept_levels
from vidmag.params import Plan

__all__ = ["FilterState", "SaturationCount", "Stream", "refuse_stream"]


def refuse_stream(plan: Plan) -> ValueError:
    """The error for a pipeline that cannot stream (the ideal ones), naming it and saying why.

    Parameters
    ----------
    plan : Plan
        The plan of the pipeline that was asked to stream.

    Returns
    -------
    ValueError
        For the caller to raise.

    Examples
    --------
    >>> import vidmag
    >>> try:   # the ideal band-pass needs the whole clip: no stream
    ...     vidmag.open_stream((64, 96, 3), fs=30, pipeline="gaussian_ideal", backend="cpu",
    ...                        alpha=10, level=2, fl=0.8, fh=1.0, chrom_attenuation=1)
    ... except ValueError:
    ...     print("refused")
    refused
    """
    return ValueError(
        f"{plan.pipeline} cannot stream: its ideal band-pass filters each pixel's series over the whole clip "
        "(an FFT along time), so no output frame exists before the last input frame has arrived; for a live "
        "stream use laplacian_butterworth or laplacian_iir, for a clip vidmag.magnify or "
        "vidmag.pipelines.run"
    )


class SaturationCount:
    """What a live stream was pushed and gave back, counted for the :class:`vidmag.SaturationWarning`.

    The bytes at 0 or 255 in the input and in the output (every 16th row, as :func:`vidmag.magnify` counts
    them) since the last change of ``alpha``: a stream has no end but its close, where :meth:`verdict` gives
    the warning of :func:`vidmag.magnify` for the alpha in force.

    Parameters
    ----------
    alpha : float
        The stream's alpha.

    Examples
    --------
    >>> import numpy as np
    >>> count = SaturationCount(alpha=10.0)
    >>> count.add(np.full((2, 32, 32, 3), 128, np.uint8), np.full((2, 32, 32, 3), 255, np.uint8))
    >>> count.counts   # input clipped, input counted, output clipped, output counted
    [0, 384, 384, 384]
    >>> count.retune(alpha=5.0)   # another alpha: the verdict is about it alone
    >>> count.counts
    [0, 0, 0, 0]
    """

    def __init__(self, alpha: float) -> None:
        self.alpha = float(alpha)
        self.counts = [0, 0, 0, 0]

    def add(self, frames_in: Any, frames_out: Any) -> None:
        """Count one push: its frames (one (H, W, 3), a batch, a list, or the backend's (n, H, W, 3) array)
        and the frames it returned."""
        for i, frames in ((0, frames_in), (2, frames_out)):
            clipped, looked_at = _count_clipped(frames)
            self.counts[i] += clipped
            self.counts[i + 1] += looked_at

    def retune(self, alpha: float) -> None:
        """The stream goes on with ``alpha``: a new alpha starts the count again."""
        if float(alpha) != self.alpha:
            self.alpha, self.counts = float(alpha), [0, 0, 0, 0]

    def verdict(self, stacklevel: int = 2) -> None:
        """Warn (:class:`vidmag.SaturationWarning`) when the output counted is clipped much more than the
        input, by the rule of :func:`vidmag.magnify`; ``stacklevel`` as :func:`warnings.warn`'s, from here."""
        from vidmag.pipelines import _warn_if_saturated  # imported where used: pipelines imports this module

        _warn_if_saturated(self.alpha, *self.counts, stacklevel=stacklevel)


def _count_clipped(frames: Any) -> tuple[int, int]:
    from vidmag.backend import registry
    from vidmag.pipelines import _ROW_STEP, _clipped

    if isinstance(frames, np.ndarray) and frames.ndim == 3:
        return _clipped(frames)
    if isinstance(frames, (list, tuple, np.ndarray)):
        totals = [_clipped(np.asarray(frame)) for frame in frames]
        return sum(c for c, _ in totals), sum(n for _, n in totals)
    owner = registry.owner(frames)  # a backend's own (n, H, W, 3) array: that backend counts it
    if owner is None:
        raise TypeError(f"frames: cannot count the bytes of a {type(frames).__name__}")
    return registry.backend_module(owner).count_clipped(frames, _ROW_STEP)


def first_frame(stages: Any, group: Sequence[np.ndarray]) -> np.ndarray:
    """Frame 0 of a stream, which comes out as its input bytes: (1, H, W, 3), a copy of ``group[0]``, in its
    slot of the caller's output array when the run writes there (``stages.output_slot``)."""
    slot = stages.output_slot(1)
    if slot is None:
        return np.array(group[0], dtype=np.uint8)[None]
    slot[0] = group[0]
    return slot


class FilterState:
    """The state of a streaming pipeline between batches, and the step that advances it.

    ``push(group)`` takes consecutive frames, either a list of host uint8 (H, W, 3) frames or a uint8 batch
    in the stages' own array type, and returns the output batches for them, in order: frame 0 of the stream
    starts every filter state and comes out as its own input bytes (as the MIT code writes it); every later
    frame is magnified.

    Parameters
    ----------
    stages : PrimitiveStages or FusedStages
    plan : Plan
        A streaming pipeline's plan.

    Examples
    --------
    >>> import numpy as np
    >>> from vidmag.backend import select
    >>> from vidmag.backend.stream import FilterState
    >>> from vidmag.params import make_plan
    >>> plan = make_plan("laplacian_iir", fs=30, compat=None, frame_shape=(64, 96, 3),
    ...                  params=dict(alpha=10, lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1))
    >>> state = FilterState(select("cpu")[1].stages, plan)
    >>> batches = state.push([np.full((64, 96, 3), 128, np.uint8) for _ in range(3)])
    >>> [b.shape for b in batches]   # frame 0 on its own (its input bytes), then the magnified frames
    [(1, 64, 96, 3), (2, 64, 96, 3)]
    """

    def __init__(self, stages: Any, plan: Plan) -> None:
        self.stages, self.plan = stages, plan
        self.filter = TemporalFilter.of(plan)
        self.kept = kept_levels(plan)
        self.states: dict[int, Any] | None = None  # None until frame 0 has been seen
        #: False while a push is changing the states: a push that fails then has left them half-updated
        self.consistent = True

    def push(self, group: Sequence[np.ndarray] | Any) -> list[Any]:
        stages, plan, kept = self.stages, self.plan, self.kept
        out: list[Any] = []
        if self.states is None:
            first = stages.upload(group[:1])  # refuses frames the device cannot take, before any change
            self.consistent = False
            self.states = {}
            if kept:
                bands = stages.bands(first, plan, kept, scratch=False)
                self.states = {lv: stages.scan_state(band, self.filter) for lv, band in bands.items()}
            # frame 0 is written as its input bytes (on the host when it came from there)
            out.append(first_frame(stages, group) if isinstance(group, list) else first)
            self.consistent = True
            group = group[1:]
            if len(group) == 0:
                return out
        frames = stages.upload(group)
        self.consistent = False
        signal = None
        if kept:
            filtered = {
                level: stages.scan(self.states[level], band, self.filter, plan.gains[level])
                for level, band in stages.bands(frames, plan, kept, scratch=True).items()
            }
            signal = stages.collapse(filtered, plan)
        ca = plan.params["chrom_attenuation"]
        out.append(stages.render(frames, signal, plan, kind="expand", gain=1.0, chroma=ca))
        self.consistent = True
        return out


class Stream:
    """A streaming pipeline running on one backend: ``push`` frames in, get as many magnified frames out.

    Made by ``backend.open(plan)`` (or :func:`vidmag.pipelines.open_stream`). Use it as a context manager, or
    call :meth:`close` when done; :meth:`retune` changes its parameters between pushes.

    Parameters
    ----------
    stages : PrimitiveStages or FusedStages
    plan : Plan
        A streaming pipeline's plan.
    name : str
        The backend's name (for messages).
    synchronize : callable or None
        Waits for the device; called before a failed push lets go of its buffers, and at :meth:`close`.
    state : FilterState, optional
        The filter state and the step that advances it, for a backend that runs the stages its own way
        (the opencl backend's per-level kernels); by default ``FilterState(stages, plan)``.

    Attributes
    ----------
    plan : Plan
    batch : int
        The most frames one device call works on: a larger push is done in pieces of this many frames
        (``plan.batch`` if set, else the backend's batch size).
    frames_pushed : int
        Frames pushed so far.

    Notes
    -----
    Frame 0 of a stream starts every filter state and comes out as its input bytes, as in the whole-clip
    run. Under ``compat="mit"`` a stream computes what the MIT code computes for each frame (its colour
    matrix, its Butterworth cut-offs); the MIT code's habit of leaving the last 10 frames of a file unread
    belongs to a finished clip, which a stream does not have.

    Examples
    --------
    >>> import numpy as np
    >>> import vidmag
    >>> frames = np.full((4, 64, 96, 3), 128, dtype=np.uint8)
    >>> with vidmag.open_stream((64, 96, 3), fs=30, pipeline="laplacian_iir", backend="cpu",
    ...                         alpha=10, lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1) as stream:
    ...     out = stream.push(frames)
    ...     pushed = stream.frames_pushed
    >>> out.shape, pushed
    ((4, 64, 96, 3), 4)
    """

    def __init__(self, stages: Any, plan: Plan, *, name: str, synchronize: Callable[[], None] | None,
                 state: FilterState | None = None):
        if not plan.streams:
            raise refuse_stream(plan)
        self.plan = plan
        self.name = name
        self.batch = plan.batch or stages.batch_frames(plan)
        self.frames_pushed = 0
        self._stages = stages
        # a backend with its own way through the stages (fused per-level kernels) brings its own state
        self._state: FilterState | None = state if state is not None else FilterState(stages, plan)
        self._synchronize = synchronize
        self._failed: BaseException | None = None
        #: the count behind the SaturationWarning given at :meth:`close`; None: no verdict (a caller that
        #: counts for itself, as :class:`vidmag.live.Magnifier` across the streams it opens)
        self.saturation: SaturationCount | None = SaturationCount(plan.params["alpha"])

    @property
    def closed(self) -> bool:
        return self._state is None

    def push(self, frames: Any) -> Any:
        """Magnify the next frames of the stream.

        Parameters
        ----------
        frames : ndarray or sequence of ndarray or the backend's array
            uint8 RGB: one frame (H, W, 3), a batch (n, H, W, 3) or a list of (H, W, 3) frames, of the plan's
            frame size; a backend whose own arrays callers hold (torch) also takes a uint8 (n, H, W, 3) one.

        Returns
        -------
        ndarray, uint8
            As many frames as were pushed, in order: (H, W, 3) for one frame given as (H, W, 3), else
            (n, H, W, 3); a backend array for a backend array pushed.

        Raises
        ------
        ValueError
            The stream is closed, or the frames are not uint8 frames of the plan's size.
        TypeError
            The backend cannot take this kind of array (the stream is left as it was).
        RuntimeError
            An earlier push failed part-way (an interrupt, a device error): the filter state is lost.

        Notes
        -----
        The bytes at 0 or 255 of what is pushed and returned are counted (every 16th row) for the
        :class:`vidmag.SaturationWarning` given at :meth:`close`; :meth:`feed` counts nothing.
        """
        if self._state is None:
            raise ValueError(f"push on a closed stream ({self.plan.pipeline} on backend {self.name!r})")
        group, single, host = self._checked(frames)
        if len(group) == 0:
            return np.empty((0, self.plan.height, self.plan.width, 3), np.uint8)
        pieces = self.feed(group)
        if host:
            out = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        else:
            out = self._stages.concat(pieces)  # a copy even of one piece: never a view of the caller's array
        if self.saturation is not None:
            self.saturation.add(group, out)
        return out[0] if host and single else out

    def feed(self, group: Sequence[np.ndarray] | Any) -> list[Any]:
        """:meth:`push` without the checks and without joining: the output batches, in order.

        ``group``: a list of host uint8 (H, W, 3) frames of the plan's size (returned batches are NumPy
        arrays), or a uint8 batch in the backend's array type (returned batches are in it too, and may be
        views of it). The whole-clip runs of the streaming pipelines are this, batch after batch.
        """
        if self._state is None:
            raise ValueError(f"push on a closed stream ({self.plan.pipeline} on backend {self.name!r})")
        if self._failed is not None:
            raise RuntimeError(
                f"the stream stopped at a failed push ({type(self._failed).__name__}: {self._failed}); its "
                "filter state is lost: open a new stream"
            )
        host = isinstance(group, list)
        pieces: list[Any] = []
        state = self._state
        try:
            for start in range(0, len(group), self.batch):
                for piece in state.push(group[start : start + self.batch]):
                    pieces.append(self._host(piece) if host else piece)
        except BaseException as error:  # KeyboardInterrupt included: drain before the buffers go
            if self._synchronize is not None:
                self._synchronize()
            if not state.consistent or pieces:
                self._failed = error  # frames went through the filters: their state moved on
            raise
        self.frames_pushed += len(group)
        return pieces

    def retune(self, plan: Plan) -> bool:
        """Go on with a new plan of the same pipeline and frame size, keeping the filter state.

        The next push uses ``plan``. Gains (``alpha``, ``lambda_c``, ``chrom_attenuation``) are applied
        after the filters, so a change of them alone is exact: the frames after it are those of a stream
        run with the new values from its start. A new band (``fl``, ``fh``, ``r1``, ``r2``) re-designs the
        filters, which start from the state the old ones left (the low-passed bands and the previous band,
        values of the signal, not of the filter). Every level the stream has a state for keeps running,
        even one whose gain is now 0 (its band then adds exactly 0).

        Parameters
        ----------
        plan : Plan
            A plan of ``self.plan.pipeline`` for frames of the same size.

        Returns
        -------
        bool
            False, with the stream unchanged, when the state cannot carry over: the plan is of another
            pipeline or frame size, or amplifies a level the stream has no state for (raising alpha from
            0), or the stream has failed or is closed. Open a new stream then.
        """
        if plan.pipeline != self.plan.pipeline or (plan.height, plan.width) != (self.plan.height,
                                                                                self.plan.width):
            return False
        state = self._state
        if state is None or self._failed is not None:
            return False
        kept = kept_levels(plan)
        if state.states is not None:
            have = set(state.states)
            if not set(kept) <= have:
                return False
            kept = sorted(have)
        filt = TemporalFilter.of(plan)  # raises before anything changes
        state.kept, state.plan, state.filter = kept, plan, filt
        self.plan = plan
        if self.saturation is not None:
            self.saturation.retune(plan.params["alpha"])  # the verdict at close is about the alpha in force
        return True

    def _host(self, piece: Any) -> np.ndarray:
        return piece if isinstance(piece, np.ndarray) else self._stages.download(piece)

    def _checked(self, frames: Any) -> tuple[Any, bool, bool]:
        """(frames as a list of host frames or a device batch, given as one frame?, on the host?)."""
        shape = (self.plan.height, self.plan.width, 3)
        if isinstance(frames, (list, tuple)):
            group = [np.asarray(f) for f in frames]
            for i, f in enumerate(group):
                if f.dtype != np.uint8 or f.shape != shape:
                    raise ValueError(f"frames: frame {i} must be uint8 {shape}, got {f.dtype} {f.shape}")
            return group, False, True
        if isinstance(frames, np.ndarray):
            if frames.dtype != np.uint8 or frames.shape[-3:] != shape or frames.ndim not in (3, 4):
                raise ValueError(
                    f"frames must be uint8 of shape {shape} or (n, {', '.join(map(str, shape))}), got "
                    f"{frames.dtype} {frames.shape}"
                )
            single = frames.ndim == 3
            return (list(frames[None]) if single else list(frames)), single, True
        got = tuple(getattr(frames, "shape", ()))
        if len(got) != 4 or got[1:] != shape:
            raise ValueError(
                f"frames must be uint8 frames of shape {shape}: one, a batch (n, ...) or a list; got "
                f"{type(frames).__name__} of shape {got}"
            )
        return frames, False, False  # the backend's own array: upload_frames checks its type and dtype

    def close(self) -> None:
        """End the stream: wait for the device, drop the filter state. Closing twice is fine.

        Warns
        -----
        vidmag.SaturationWarning
            The frames pushed since the last change of ``alpha`` came back clipped at 0 or 255 much more
            than they went in (the rule of :func:`vidmag.magnify`); given once, at the first close.
        """
        self._close(stacklevel=3)

    def _close(self, stacklevel: int) -> None:
        # stacklevel as warnings.warn's, from here: 3 is the caller of close() or the with statement
        if self._state is not None:
            if self._synchronize is not None:
                self._synchronize()
            self._state = None
            if self.saturation is not None:
                self.saturation.verdict(stacklevel=stacklevel + 1)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close(stacklevel=3)  # the warning points at the with statement

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.frames_pushed} frames pushed"
        size = f"{self.plan.height}x{self.plan.width}"
        return f"<vidmag Stream {self.plan.pipeline} on {self.name!r}, {size}, {state}>"
