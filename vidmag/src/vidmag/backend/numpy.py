"""The ``cpu`` backend's primitives: NumPy, float64, each a call into the reference (``vidmag._reference``).

This is the oracle every other backend is compared with, so it adds nothing to the reference's maths: it
only batches, and works the whole-clip band-pass in pieces of pixels, on a stack kept as the batches it was
built from, so that its memory stays at one copy of the filtered levels.

It also runs the phase-based pipelines (riesz_*, steerable_ideal) straight from their references
(``_reference.riesz``, ``_reference.steerable``), through :class:`vidmag.backend.phase.PhaseBackend`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag._reference import colour, pyramid, resize, riesz, steerable, temporal
from vidmag.backend.generic import Backend, bind
from vidmag.backend.phase import PhaseBackend
from vidmag.params import PHASE_PIPELINES, Plan

#: Complex values one piece of the band-pass may hold (2**21 complex128 = 32 MiB).
_BANDPASS_PIECE = 2**21


class FrameStack:
    """A whole-clip stack (T, h, w, 3) kept as the batches it was built from.

    Joining the batches would need the clip twice in memory for a moment; instead the band-pass gathers each
    piece of pixels' time series across the batches, filters it and writes it back.
    """

    def __init__(self, batches: list[np.ndarray]):
        self.batches = [np.ascontiguousarray(b) for b in batches]
        self.starts = [0]
        for b in self.batches:
            self.starts.append(self.starts[-1] + len(b))
        self.values_per_frame = int(np.prod(self.batches[0].shape[1:]))

    def __len__(self) -> int:
        return self.starts[-1]

    def take(self, start: int, stop: int) -> np.ndarray:
        """Frames ``start:stop`` as one array (a view when they lie in one batch)."""
        parts = []
        for batch, first in zip(self.batches, self.starts):
            lo, hi = max(start, first), min(stop, first + len(batch))
            if lo < hi:
                parts.append(batch[lo - first : hi - first])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def series(self, values: slice) -> np.ndarray:
        """The time series of a range of the flattened (h, w, 3) values: (T, n_values)."""
        return np.concatenate([b.reshape(len(b), -1)[:, values] for b in self.batches])

    def set_series(self, values: slice, series: np.ndarray) -> None:
        """Write back what :meth:`series` read."""
        for batch, first in zip(self.batches, self.starts):
            batch.reshape(len(batch), -1)[:, values] = series[first : first + len(batch)]


class NumpyOperations:
    """The primitives of :class:`vidmag.backend.operations.Operations` on NumPy float64 arrays."""

    #: Float values per batch of frames: about one 544 x 960 frame, so the streaming pipelines stay small.
    batch_values = 2**21

    def upload(self, frames: np.ndarray) -> np.ndarray:
        return np.asarray(frames, dtype=np.uint8)

    def download(self, frames: np.ndarray) -> np.ndarray:
        return np.asarray(frames, dtype=np.uint8)

    def rgb_to_yiq(self, frames: np.ndarray) -> np.ndarray:
        return colour.rgb_to_yiq(frames)

    def yiq_to_rgb_uint8(self, frames: np.ndarray, *, mit: bool) -> np.ndarray:
        return colour.yiq_to_rgb_uint8(frames, mit=mit)

    def pyramid_reduce(self, frames: np.ndarray) -> np.ndarray:
        return pyramid.laplacian_reduce(frames)

    def pyramid_expand(self, frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        return pyramid.laplacian_expand(frames, size)

    def gaussian_reduce(self, frames: np.ndarray) -> np.ndarray:
        return pyramid.gaussian_reduce(frames)

    def resize_bicubic(self, frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        return resize.resize_bicubic(frames, size)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    def subtract(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a - b

    def scale(self, frames: np.ndarray, luma: float, chroma: float) -> np.ndarray:
        return frames * np.array([luma, chroma, chroma])

    def concat_frames(self, batches: list[np.ndarray]) -> FrameStack:
        stack = FrameStack(batches)
        batches.clear()
        return stack

    # A plain (T, h, w, 3) array is accepted as a stack too (one batch).

    def take_frames(self, stack: FrameStack | np.ndarray, start: int, stop: int) -> np.ndarray:
        return stack.take(start, stop) if isinstance(stack, FrameStack) else stack[start:stop]

    def ideal_bandpass(
        self, stack: FrameStack | np.ndarray, fl: float, fh: float, fs: float, *, mit: bool
    ) -> FrameStack | np.ndarray:
        pieces = stack if isinstance(stack, FrameStack) else FrameStack([stack])
        step = max(1, _BANDPASS_PIECE // max(len(pieces), 1))
        for c in range(0, pieces.values_per_frame, step):
            values = slice(c, c + step)
            pieces.set_series(values, temporal.ideal_bandpass(pieces.series(values), fl, fh, fs, mit=mit))
        return stack if isinstance(stack, FrameStack) else pieces.take(0, len(pieces))

    def butterworth_step(self, state: Any, frames: np.ndarray, high: tuple, low: tuple) -> tuple[Any, Any]:
        hi, lo = temporal.FirstOrder(*high), temporal.FirstOrder(*low)
        out = np.empty_like(frames)
        for i, x in enumerate(frames):
            if state is None:  # the first frame starts every state; stepping it would change its bits
                state = (x, x, x)
                out[i] = 0.0
                continue
            lp_high, lp_low, prev = state
            lp_high = temporal.butterworth_step(lp_high, x, prev, hi)
            lp_low = temporal.butterworth_step(lp_low, x, prev, lo)
            state = (lp_high, lp_low, x)
            out[i] = lp_high - lp_low
        return out, state

    def iir_step(self, state: Any, frames: np.ndarray, r1: float, r2: float) -> tuple[Any, Any]:
        out = np.empty_like(frames)
        for i, x in enumerate(frames):
            if state is None:
                state = (x, x)
                out[i] = 0.0
                continue
            lp1 = temporal.iir_step(state[0], x, r1)
            lp2 = temporal.iir_step(state[1], x, r2)
            state = (lp1, lp2)
            out[i] = lp1 - lp2
        return out, state


class _ReferenceRiesz:
    """The reference's :class:`~vidmag._reference.riesz.RieszStream` of a plan, retuned by plans."""

    def __init__(self, plan: Plan) -> None:
        p = plan.params
        kind = "butterworth" if plan.pipeline == "riesz_butterworth" else "iir"
        self.stream = riesz.RieszStream(kind, fs=plan.fs, alpha=p["alpha"], sigma=p["sigma"], mit=plan.mit,
                                        **_band(p))

    def push(self, frame: np.ndarray) -> np.ndarray:
        return self.stream.push(frame)

    def retune(self, plan: Plan) -> None:
        p = plan.params
        self.stream.retune(alpha=p["alpha"], sigma=p["sigma"], **_band(p))


def _band(params: dict[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in ("fl", "fh", "r1", "r2") if k in params}


def phase_frames(plan: Plan, source: Callable[[], Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
    """A phase-based pipeline over a frame source: uint8 (H, W, 3) frames out, one per frame in.

    riesz_butterworth / riesz_iir read the frames once, as the stream does; riesz_ideal twice (it keeps the
    accumulated phase of the clip); steerable_ideal, the slow reference, holds the whole clip.
    """
    p = plan.params
    if plan.pipeline in ("riesz_butterworth", "riesz_iir"):
        stream = _ReferenceRiesz(plan)
        return (stream.push(frame) for frame in source())
    if plan.pipeline == "riesz_ideal":
        return riesz.riesz_ideal_frames(source, fs=plan.fs, alpha=p["alpha"], fl=p["fl"], fh=p["fh"],
                                        sigma=p["sigma"], mit=plan.mit)
    if plan.pipeline == "steerable_ideal":
        return iter(steerable.steerable_magnify(np.stack(list(source())), fs=plan.fs, mit=plan.mit, **p))
    raise ValueError(f"{plan.pipeline} is not a phase-based pipeline")


def probe() -> str | None:
    """The cpu backend runs wherever NumPy does."""
    return None


def create() -> Backend:
    """The cpu backend: the generic pipelines over :class:`NumpyOperations`, the phase-based ones from their
    references."""
    return PhaseBackend(bind(NumpyOperations(), name="cpu"), pipelines=PHASE_PIPELINES, frames=phase_frames,
                        stream=_ReferenceRiesz)
