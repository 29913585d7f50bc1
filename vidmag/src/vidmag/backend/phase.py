"""The phase-based pipelines on a backend: :class:`PhaseBackend` routes their plans to the backend's own
implementation, and :class:`PhaseStream` is the live stream of riesz_butterworth and riesz_iir.

A backend that runs them is a :class:`PhaseBackend` made with ``frames(plan, source)`` (a whole run: host
uint8 frames out) and ``stream(plan)`` (an object with ``push(frame) -> frame`` and ``retune(plan)``) for the
pipelines it names; the cpu backend runs all four from the references, torch all four, opencl the three
Riesz ones (the table is :data:`vidmag.params.PHASE_BACKENDS`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag.backend.generic import Backend
from vidmag.backend.output import HostOutput
from vidmag.backend.registry import BackendUnavailableError
from vidmag.backend.stream import SaturationCount
from vidmag.params import PHASE_BACKENDS, Plan

Source = Callable[[], Iterator[np.ndarray]]


class PhaseStream:
    """A live stream of riesz_butterworth / riesz_iir, with the interface of
    :class:`vidmag.backend.stream.Stream`: ``push`` one frame (H, W, 3), a batch (n, H, W, 3) or a list of
    frames, get as many magnified frames back; frame 0 comes out as its input bytes. Its frames equal the
    whole-clip run's on the same backend. Like a Stream it counts the bytes at 0 or 255 pushed and returned
    (``saturation``) and gives the :class:`vidmag.SaturationWarning` of :func:`vidmag.magnify` at the first
    close.
    """

    def __init__(self, plan: Plan, pusher: Any, *, name: str):
        self.plan, self.name = plan, name
        self.batch = plan.batch or 1
        self.frames_pushed = 0
        self._pusher: Any = pusher
        self.saturation: SaturationCount | None = SaturationCount(plan.params["alpha"])

    @property
    def closed(self) -> bool:
        return self._pusher is None

    def push(self, frames: Any) -> np.ndarray:
        if self._pusher is None:
            raise ValueError(f"push on a closed stream ({self.plan.pipeline} on backend {self.name!r})")
        shape = (self.plan.height, self.plan.width, 3)
        single = isinstance(frames, np.ndarray) and frames.ndim == 3
        group = [np.asarray(f) for f in (frames[None] if single else frames)]
        for i, f in enumerate(group):
            if f.dtype != np.uint8 or f.shape != shape:
                raise ValueError(f"frames: frame {i} must be uint8 {shape}, got {f.dtype} {f.shape}")
        out = np.empty((len(group), *shape), dtype=np.uint8)
        for i, frame in enumerate(group):
            out[i] = self._pusher.push(frame)
            self.frames_pushed += 1
        if self.saturation is not None:
            self.saturation.add(group, out)
        return out[0] if single else out

    def retune(self, plan: Plan) -> bool:
        """Take a new plan of the same pipeline and frame size between two frames, keeping the accumulated
        phase and the filters' state: alpha and sigma act after the filters, so the frames after the change
        are exactly those of a stream run with the new values from its start; a new band re-designs the
        filters, which go on from the state the old ones left. Returns False (nothing changed) for a plan of
        another pipeline, size or semantics, or a closed stream."""
        same = (plan.pipeline, plan.height, plan.width, plan.compat) == (
            self.plan.pipeline, self.plan.height, self.plan.width, self.plan.compat)
        if self._pusher is None or not same:
            return False
        self._pusher.retune(plan)
        self.plan = plan
        if self.saturation is not None:
            self.saturation.retune(plan.params["alpha"])
        return True

    def close(self) -> None:
        """End the stream; the SaturationWarning, if any, at the first close. Closing twice is fine."""
        self._close(stacklevel=3)

    def _close(self, stacklevel: int) -> None:
        if self._pusher is not None:
            self._pusher = None
            if self.saturation is not None:
                self.saturation.verdict(stacklevel=stacklevel + 1)

    def __enter__(self) -> PhaseStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close(stacklevel=3)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.frames_pushed} frames pushed"
        size = f"{self.plan.height}x{self.plan.width}"
        return f"<vidmag Stream {self.plan.pipeline} on {self.name!r}, {size}, {state}>"


class PhaseBackend(Backend):
    """A backend that also runs phase-based pipelines of its own (``pipelines``) with ``frames`` and
    ``stream``; the linear pipelines run as on any :class:`~vidmag.backend.generic.Backend`.

    ``steps(plan)``, for the ideal pipelines named in ``bounded``, gives the device's side of the
    bounded-memory route (:func:`vidmag._out_of_core.phase_on_device`): an object with ``phases(source)``
    (each frame's phase series values, downloaded), ``bandpass(block)`` (a (T, width) block of series
    filtered on the device) and ``frames(source, at)`` (the frames rendered with ``at(t)``, frame t's
    filtered values)."""

    def __init__(self, base: Backend, *, pipelines: tuple[str, ...], frames: Callable[[Plan, Source], Any],
                 stream: Callable[[Plan], Any], steps: Callable[[Plan], Any] | None = None,
                 bounded: tuple[str, ...] = ()):
        super().__init__(base.name, base.operations, dict(base._replaced), base.fused)
        self.phase_pipelines = pipelines
        self._phase_frames, self._phase_stream = frames, stream
        self._steps, self.bounded_pipelines = steps, bounded

    def phase_steps(self, plan: Plan) -> Any:
        """The device's steps of `plan`'s bounded-memory route (see the class); a
        :class:`~vidmag.backend.registry.BackendUnavailableError` for a pipeline without them here."""
        self._check(plan)
        if self._steps is None or plan.pipeline not in self.bounded_pipelines:
            raise BackendUnavailableError(
                f"backend {self.name!r} has no device steps for {plan.pipeline}'s bounded-memory route")
        return self._steps(plan)

    def _check(self, plan: Plan) -> None:
        if plan.pipeline not in self.phase_pipelines:
            runs = ", ".join(PHASE_BACKENDS[plan.pipeline])
            raise BackendUnavailableError(f"backend {self.name!r} does not run {plan.pipeline}: {runs} does")

    def run(self, plan: Plan, source: Source, *, into: HostOutput | None = None) -> Iterator[np.ndarray]:
        if plan.phase:  # the phase pipelines write their own frames (``into`` is for the linear ones)
            self._check(plan)
            return self._phase_frames(plan, source)
        return super().run(plan, source, into=into)

    def open(self, plan: Plan) -> Any:
        if plan.phase:
            self._check(plan)
            if not plan.streams:
                raise ValueError(
                    f"{plan.pipeline} cannot stream: its ideal band-pass filters each coefficient's phase "
                    "over the whole clip, so no output frame exists before the last input frame has arrived; "
                    "for a live stream use riesz_butterworth or riesz_iir"
                )
            return PhaseStream(plan, self._phase_stream(plan), name=self.name)
        return super().open(plan)
