"""The stages the pipelines are written in, over each tier of the contract.

The pipelines of :mod:`vidmag.backend.generic` are written once, in these stages: upload a batch of frames,
build its Gaussian down stack or the Laplacian bands of the kept levels, band-pass a stack or scan a band
through the streaming filter, collapse the filtered bands, render the output bytes. Each stage has two forms:

- :class:`PrimitiveStages`, over the sixteen primitives (tier 1): the reference's own order of operations,
  step for step, so the NumPy reference backend computes exactly what the reference functions compute;
- :class:`FusedStages`, over the fused tier (tier 2): the same stages as tap maps straight from the frame
  bytes, a scan, a projection and one render pass, with the colour matrices folded into the render.

The two are equal in exact arithmetic; in float32 they agree within the conformance rule (every output byte
within 1), which ``vidmag/tests/test_contract_tiers.py`` checks stage by stage.

Signals between stages are in each form's own colour space, ``space`` (a 3 x 3 matrix: YIQ = ``space`` times
the signal's value): YIQ for the primitives, byte-space RGB (``RGB_TO_YIQ / 255``) for the fused tier. Only
the render looks at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from vidmag._reference.colour import RGB_TO_YIQ, YIQ_TO_RGB_EXACT, YIQ_TO_RGB_MIT
from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend import spatial_taps
from vidmag.backend.operations import FusedOperations, Operations
from vidmag.backend.output import HostOutput
from vidmag.params import PHASE_BACKENDS, Plan

__all__ = [
    "FusedStages",
    "PrimitiveStages",
    "TemporalFilter",
    "contiguous_span",
    "kept_levels",
    "output_matrices",
]

#: Float values per batch for primitives that do not say (``batch_values``): about one 544 x 960 frame.
DEFAULT_BATCH_VALUES = 2**21


def kept_levels(plan: Plan) -> list[int]:
    """The Laplacian levels with a gain other than 0, finest first.

    A band with gain 0 contributes exactly 0 to the collapsed signal, so it is neither built nor kept. The
    finest band (level 0) always has gain 0 (``_reference.gains.level_gains``), which the stages rely on:
    the signal they collapse stops at level 1 and the render does the last expand.
    """
    kept = [level for level, gain in enumerate(plan.gains) if gain != 0.0]
    if kept and kept[0] == 0:  # cannot happen with the reference's gains; say so rather than drop a band
        raise AssertionError("level 0 has a gain; the stages collapse to level 1 only")
    return kept


class TemporalFilter(NamedTuple):
    """The filter of a streaming pipeline: two first-order low-passes, output ``lp1 - lp2``.

    Attributes
    ----------
    kind : {"butterworth", "iir"}
    high, low : tuple
        Butterworth: (b0, b1, a0, a1) of LP(fh) and of LP(fl); iir: ``(r1,)`` and ``(r2,)``.
    """

    kind: str
    high: tuple
    low: tuple

    @classmethod
    def of(cls, plan: Plan) -> TemporalFilter:
        """The filter of ``plan`` (laplacian_butterworth or laplacian_iir)."""
        p = plan.params
        if plan.pipeline == "laplacian_iir":
            return cls("iir", (p["r1"],), (p["r2"],))
        if plan.pipeline == "laplacian_butterworth":
            high = tuple(butterworth_lowpass(p["fh"], plan.fs, mit=plan.mit))
            low = tuple(butterworth_lowpass(p["fl"], plan.fs, mit=plan.mit))
            return cls("butterworth", high, low)
        if plan.phase:  # run by the backends' own code (vidmag.backend.phase.PhaseBackend)
            raise ValueError(
                f"{plan.pipeline} is a phase-based pipeline: it runs on backend "
                f"{', '.join(repr(b) for b in PHASE_BACKENDS[plan.pipeline])} (backend='auto' picks one), "
                "not through these stages"
            )
        raise ValueError(f"{plan.pipeline} has no streaming filter")

    def coefficients(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """(c_y, c_x, c_xp) of each low-pass, for :meth:`FusedOperations.first_order_scan`."""
        if self.kind == "iir":
            (r1,), (r2,) = self.high, self.low
            return (1.0 - r1, r1, 0.0), (1.0 - r2, r2, 0.0)

        def one(b0, b1, a0, a1):
            return (-a1 / a0, b0 / a0, b1 / a0)

        return one(*self.high), one(*self.low)


def output_matrices(
    mit: bool, space: np.ndarray, gain: float, chroma: float
) -> tuple[np.ndarray, np.ndarray]:
    """(C, E) of :meth:`FusedOperations.render`: C takes the frame's bytes to RGB in [0, 1] through YIQ and
    back; E takes a signal in ``space`` to RGB in [0, 1], times ``gain`` and I, Q times ``chroma`` too."""
    inverse = YIQ_TO_RGB_MIT if mit else YIQ_TO_RGB_EXACT
    return inverse @ RGB_TO_YIQ / 255.0, inverse @ np.diag([gain, gain * chroma, gain * chroma]) @ space


def contiguous_span(frames: Sequence[np.ndarray]) -> np.ndarray | None:
    """The frames as one (n, H, W, 3) view when each directly follows the one before in memory (the slices
    of one clip array), else None: a device that shares the host's memory can then read them where they are.
    Only writeable frames count (a buffer over read-only memory would be a promise broken)."""
    first = frames[0]
    if not (first.flags.c_contiguous and first.flags.writeable):
        return None
    start = first.__array_interface__["data"][0]
    for i, frame in enumerate(frames[1:], start=1):
        address = frame.__array_interface__["data"][0]
        if not (frame.flags.c_contiguous and address == start + i * first.nbytes):
            return None
    strides = (first.nbytes, *first.strides)
    return np.lib.stride_tricks.as_strided(first, shape=(len(frames), *first.shape), strides=strides)


def _stack_group(group: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    return group if isinstance(group, np.ndarray) else np.stack(group)


class _Gained:
    """A band-passed stack whose frames are scaled by a gain when taken (the reference scales them then)."""

    def __init__(self, stack: Any, gain: float) -> None:
        self.stack, self.gain = stack, gain


class PrimitiveStages:
    """The stages over the sixteen primitives, in the reference's order of operations.

    Parameters
    ----------
    ops : Operations
        The primitives.
    """

    #: Signals are YIQ.
    space = np.eye(3)

    def __init__(self, ops: Operations) -> None:
        self.ops = ops
        # The YIQ of the last batch uploaded: the bands and the render of one batch both start from it, and
        # the reference converts each batch once.
        self._yiq: tuple[Any, Any] | None = None

    def writing_into(self, into: HostOutput) -> PrimitiveStages:
        """These stages: the primitives' output is on the device, downloaded; the caller copies it."""
        return self

    def output_slot(self, n: int) -> None:
        """No slots: see :meth:`FusedStages.output_slot`."""
        return None

    def batch_frames(self, plan: Plan) -> int:
        values = getattr(self.ops, "batch_values", DEFAULT_BATCH_VALUES)
        return max(1, values // (plan.height * plan.width * 3))

    def upload(self, group: Sequence[np.ndarray] | Any) -> Any:
        if isinstance(group, (list, tuple, np.ndarray)):
            return self.ops.upload(_stack_group(group))
        return group  # already the backend's own batch

    def download(self, frames: Any) -> np.ndarray:
        return self.ops.download(frames)

    def yiq(self, frames: Any) -> Any:
        if self._yiq is None or self._yiq[0] is not frames:
            self._yiq = (frames, self.ops.rgb_to_yiq(frames))
        return self._yiq[1]

    def gaussian_down(self, frames: Any, level: int) -> Any:
        image = self.yiq(frames)
        for _ in range(level):
            image = self.ops.gaussian_reduce(image)
        return image

    def bands(self, frames: Any, plan: Plan, kept: list[int], *, scratch: bool) -> dict[int, Any]:
        ops, sizes = self.ops, plan.level_sizes
        bands, image = {}, self.yiq(frames)
        for level in range(max(kept) + 1):
            low = ops.pyramid_reduce(image)
            if level in kept:
                bands[level] = ops.subtract(image, ops.pyramid_expand(low, sizes[level]))
            image = low
        return bands

    def concat(self, pieces: list) -> Any:
        return self.ops.concat_frames(pieces)

    def take(self, stack: Any, start: int, stop: int) -> Any:
        if isinstance(stack, _Gained):
            return self.ops.scale(self.ops.take_frames(stack.stack, start, stop), stack.gain, stack.gain)
        return self.ops.take_frames(stack, start, stop)

    def bandpass(self, stack: Any, fl: float, fh: float, fs: float, *, mit: bool, gain: float) -> Any:
        out = self.ops.ideal_bandpass(stack, fl, fh, fs, mit=mit)
        return out if gain == 1.0 else _Gained(out, gain)  # x * 1.0 is x: nothing to scale

    def _step(self, filt: TemporalFilter, state: Any, band: Any) -> tuple[Any, Any]:
        if filt.kind == "iir":
            return self.ops.iir_step(state, band, filt.high[0], filt.low[0])
        return self.ops.butterworth_step(state, band, filt.high, filt.low)

    def scan_state(self, first: Any, filt: TemporalFilter) -> list:
        return [self._step(filt, None, first)[1]]

    def scan(self, state: list, band: Any, filt: TemporalFilter, gain: float) -> Any:
        filtered, state[0] = self._step(filt, state[0], band)
        return self.ops.scale(filtered, gain, gain)

    def collapse(self, filtered: dict[int, Any], plan: Plan) -> Any:
        sizes, top = plan.level_sizes, max(filtered)
        image = filtered[top]
        for level in range(top - 1, 0, -1):
            image = self.ops.pyramid_expand(image, sizes[level])
            if level in filtered:
                image = self.ops.add(image, filtered[level])
        return image

    def render(
        self, frames: Any, signal: Any | None, plan: Plan, *, kind: str, gain: float, chroma: float
    ) -> Any:
        ops, total = self.ops, self.yiq(frames)
        self._yiq = None
        if signal is not None:
            if kind == "bicubic":  # the Gaussian pipeline scales the small signal, then resizes it
                signal = ops.scale(ops.scale(signal, gain, gain), 1.0, chroma)
                signal = ops.resize_bicubic(signal, (plan.height, plan.width))
            else:  # the Laplacian ones expand the collapsed signal to level 0, then scale it
                signal = ops.scale(ops.pyramid_expand(signal, plan.level_sizes[0]), gain, gain * chroma)
            total = ops.add(total, signal)
        return ops.yiq_to_rgb_uint8(total, mit=plan.mit)


class FusedStages:
    """The stages over the fused tier: tap maps from the bytes, one scan or projection, one render pass.

    Parameters
    ----------
    fused : FusedOperations
        The fused tier.
    into : HostOutput, optional
        The caller's output array, for a tier whose render writes host memory (``renders_into_host``): the
        render then writes each batch into its place there (see :meth:`writing_into`).

    Notes
    -----
    The buffers of one batch are ``scratch`` ones, reused from batch to batch (a device then never touches
    fresh memory per batch), except what outlives the batch: the bands that start the filter states, and the
    bands or down-sampled images an ideal pipeline keeps for the whole clip. The collapse and the render
    write into scratch buffers of the bands that have the same shapes and are dead by then, which bounds the
    memory a batch holds.
    """

    #: Signals are in byte space: RGB 0 .. 255 (YIQ = RGB_TO_YIQ / 255 times them).
    space = RGB_TO_YIQ / 255.0

    def __init__(self, fused: FusedOperations, into: HostOutput | None = None) -> None:
        self.fused = fused
        self.into = into

    def writing_into(self, into: HostOutput) -> FusedStages:
        """Stages for one run whose output goes into ``into``, where the tier's render can write there
        (``renders_into_host``); else these stages (the caller copies the frames)."""
        if not getattr(self.fused, "renders_into_host", False):
            return self
        return FusedStages(self.fused, into)

    def output_slot(self, n: int) -> np.ndarray | None:
        """The slots of the run's next ``n`` output frames in the caller's array, or None when the output
        does not go there. Every frame of the run takes its slot, in order."""
        return None if self.into is None else self.into.take(n)

    def batch_frames(self, plan: Plan) -> int:
        return max(1, int(self.fused.batch_frames(plan)))

    def upload(self, group: Sequence[np.ndarray] | Any) -> Any:
        return self.fused.upload_frames(group)

    def download(self, frames: Any) -> np.ndarray:
        return self.fused.download(frames)

    def gaussian_down(self, frames: Any, level: int) -> Any:
        # the whole down stack as one composed map per axis (about 4 * 2^level taps): along the height first,
        # straight from the bytes, which leaves an image 2^level times shorter for the width
        f = self.fused
        h, w = frames.shape[1:3]
        rows = f.map_axis(frames, spatial_taps.gaussian_down(h, level), 1, scratch="down-cols")
        return f.map_axis(rows, spatial_taps.gaussian_down(w, level), 2)

    def bands(self, frames: Any, plan: Plan, kept: list[int], *, scratch: bool) -> dict[int, Any]:
        f, sizes, top = self.fused, plan.level_sizes, max(kept)
        # the levels in between are always scratch buffers; the bands themselves too unless they must outlive
        # the batch (a filter state's start, an ideal pipeline's stack)
        # level 1 from the bytes, along the height first: the vertical pass reads the bytes and the
        # horizontal one runs on half the rows (the order of two linear maps changes only float32 rounding)
        image = f.map_axis(frames, spatial_taps.reduce(sizes[0][0], "laplacian"), 1, scratch="rows0")
        image = f.map_axis(image, spatial_taps.reduce(sizes[0][1], "laplacian"), 2, scratch="low1")
        out = {}
        for level in range(1, top + 1):
            (h, w), (h_low, w_low) = sizes[level], sizes[level + 1]
            low = f.map_axis(image, spatial_taps.reduce(w, "laplacian"), 2, scratch=f"rows{level}")
            low = f.map_axis(low, spatial_taps.reduce(h, "laplacian"), 1, scratch=f"low{level + 1}")
            if level in kept:
                up = f.map_axis(low, spatial_taps.expand(w_low, w), 2, scratch=f"up{level}")
                out[level] = f.map_axis(up, spatial_taps.expand(h_low, h), 1, other=image, sign=-1,
                                        scratch=f"band{level}" if scratch else None)
            image = low
        return out

    def concat(self, pieces: list) -> Any:
        return self.fused.concat_frames(pieces)

    def take(self, stack: Any, start: int, stop: int) -> Any:
        return self.fused.take_frames(stack, start, stop)

    def bandpass(self, stack: Any, fl: float, fh: float, fs: float, *, mit: bool, gain: float) -> Any:
        return self.fused.bandpass(stack, fl, fh, fs, mit=mit, gains=(gain, gain, gain))

    def scan_state(self, first: Any, filt: TemporalFilter) -> Any:
        return self.fused.scan_state(first)

    def scan(self, state: Any, band: Any, filt: TemporalFilter, gain: float) -> Any:
        c1, c2 = filt.coefficients()
        return self.fused.first_order_scan(state, band, c1, c2, gain)

    def collapse(self, filtered: dict[int, Any], plan: Plan) -> Any:
        f, sizes, top = self.fused, plan.level_sizes, max(filtered)
        signal = filtered[top]
        for level in range(top - 1, 0, -1):
            (h, w), (h_low, w_low) = sizes[level], sizes[level + 1]
            up = f.map_axis(signal, spatial_taps.expand(w_low, w), 2, scratch=f"up{level}")
            other = filtered.get(level)
            signal = f.map_axis(
                up, spatial_taps.expand(h_low, h), 1, other=other, sign=1, scratch=f"low{level}"
            )
        return signal

    def render(
        self, frames: Any, signal: Any | None, plan: Plan, *, kind: str, gain: float, chroma: float
    ) -> Any:
        f, H, W = self.fused, plan.height, plan.width
        c_mat, e_mat = output_matrices(plan.mit, self.space, gain, chroma)
        slot = self.output_slot(frames.shape[0])
        into = {} if slot is None else {"into": slot}
        if signal is None:
            return f.render(frames, None, None, c_mat, np.zeros((3, 3)), **into)
        h, w = signal.shape[1:3]
        if kind == "bicubic":
            # a signal 2^level times smaller than the frame: E is applied to it here, so the render adds an
            # RGB signal (a cheaper pass per output pixel); widened at its own height, resampled along the
            # height in the render
            rgb = f.apply_matrix(signal, e_mat)
            wide = f.map_axis(rgb, spatial_taps.bicubic(w, W), 2, scratch="render-wide")
            return f.render(frames, wide, spatial_taps.bicubic(h, H), c_mat, np.eye(3), **into)
        # the widened level-1 signal has the shape of "rows0" of the bands (level 0 reduced along the height
        # only), dead by now: sharing it saves a full-width float buffer per batch
        wide = f.map_axis(signal, spatial_taps.expand(w, W), 2, scratch="rows0")
        return f.render(frames, wide, spatial_taps.expand(h, H), c_mat, e_mat, **into)
