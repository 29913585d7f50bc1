"""The four pipelines written once over the primitives, and :func:`bind`, which makes a backend of them.

A pipeline here is a generator function ``(operations, plan, source) -> iterator of uint8 (H, W, 3)
frames``. ``source()`` returns a fresh iterator of the input frames (uint8 (H, W, 3) RGB) each time it is
called, already reduced to the frames the semantics reads (``vidmag.pipelines.run`` drops the MIT code's
unread tail). The streaming pipelines call it once and hold one batch of frames; the ideal ones call it twice
(pass 1 keeps only the pyramid levels or the down-sampled images they filter, pass 2 re-reads the frames to
add the signal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from vidmag._reference.temporal import butterworth_lowpass
from vidmag.backend.operations import PRIMITIVES, Operations
from vidmag.params import Plan

Source = Callable[[], Iterator[np.ndarray]]
Pipeline = Callable[[Operations, Plan, Source], Iterator[np.ndarray]]


def _batch_frames(ops: Operations, plan: Plan) -> int:
    values = getattr(ops, "batch_values", 2**21)
    return max(1, values // (plan.height * plan.width * 3))


def _batches(frames: Iterable[np.ndarray], size: int) -> Iterator[np.ndarray]:
    batch: list[np.ndarray] = []
    for frame in frames:
        batch.append(frame)
        if len(batch) == size:
            yield np.stack(batch)
            batch = []
    if batch:
        yield np.stack(batch)


def _kept_levels(plan: Plan) -> list[int]:
    # A band with gain 0 contributes exactly 0 to the collapsed signal, so it is neither built nor kept.
    return [level for level, gain in enumerate(plan.gains) if gain != 0.0]


def _bands(ops: Operations, yiq: Any, plan: Plan, kept: list[int]) -> dict[int, Any]:
    """The Laplacian bands of the levels in ``kept`` (only those are computed)."""
    sizes = plan.level_sizes
    bands = {}
    image = yiq
    for level in range(max(kept) + 1):
        low = ops.pyramid_reduce(image)
        if level in kept:
            bands[level] = ops.subtract(image, ops.pyramid_expand(low, sizes[level]))
        image = low
    return bands


def _signal(ops: Operations, plan: Plan, filtered: dict[int, Any]) -> Any:
    """Collapse the gained bands (the others are 0) and attenuate chrominance: the YIQ signal to add."""
    sizes, gains = plan.level_sizes, plan.gains
    top = max(filtered)
    image = ops.scale(filtered[top], gains[top], gains[top])
    for level in range(top - 1, -1, -1):
        image = ops.pyramid_expand(image, sizes[level])
        if level in filtered:
            image = ops.add(image, ops.scale(filtered[level], gains[level], gains[level]))
    return ops.scale(image, 1.0, plan.params["chrom_attenuation"])


def _render(ops: Operations, plan: Plan, yiq: Any, signal: Any | None) -> Iterator[np.ndarray]:
    total = yiq if signal is None else ops.add(yiq, signal)
    yield from ops.download(ops.yiq_to_rgb_uint8(total, mit=plan.mit))


def gaussian_ideal(ops: Operations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """Gaussian down stack, ideal band-pass over the clip, times alpha, bicubic back to full size, added."""
    p, size = plan.params, _batch_frames(ops, plan)
    down = []
    for batch in _batches(source(), size):
        image = ops.rgb_to_yiq(ops.upload(batch))
        for _ in range(p["level"]):
            image = ops.gaussian_reduce(image)
        down.append(image)
    if not down:
        return
    stack = ops.ideal_bandpass(ops.concat_frames(down), p["fl"], p["fh"], plan.fs, mit=plan.mit)
    start = 0
    for batch in _batches(source(), size):
        yiq = ops.rgb_to_yiq(ops.upload(batch))
        signal = ops.take_frames(stack, start, start + len(batch))
        signal = ops.scale(ops.scale(signal, p["alpha"], p["alpha"]), 1.0, p["chrom_attenuation"])
        yield from _render(ops, plan, yiq, ops.resize_bicubic(signal, (plan.height, plan.width)))
        start += len(batch)


def laplacian_ideal(ops: Operations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """Laplacian bands of the clip, ideal band-pass per kept level, per-level gains, collapsed and added.

    Under ``compat="mit"`` output j is input frame j + 1 plus the signal of frame j (one frame fewer).
    """
    p, size, kept = plan.params, _batch_frames(ops, plan), _kept_levels(plan)
    stacks: dict[int, Any] = {}
    if kept:
        pieces: dict[int, list] = {level: [] for level in kept}
        for batch in _batches(source(), size):
            for level, band in _bands(ops, ops.rgb_to_yiq(ops.upload(batch)), plan, kept).items():
                pieces[level].append(band)
        if not pieces[kept[0]]:
            return
        for level in kept:
            stack = ops.concat_frames(pieces.pop(level))
            stacks[level] = ops.ideal_bandpass(stack, p["fl"], p["fh"], plan.fs, mit=plan.mit)
    frames = source()
    if plan.mit:
        next(frames, None)  # the MIT code's one-frame lag
    start = 0
    for batch in _batches(frames, size):
        yiq = ops.rgb_to_yiq(ops.upload(batch))
        signal = None
        if stacks:
            parts = {level: ops.take_frames(s, start, start + len(batch)) for level, s in stacks.items()}
            signal = _signal(ops, plan, parts)
        yield from _render(ops, plan, yiq, signal)
        start += len(batch)


def _streaming(ops: Operations, plan: Plan, source: Source, step: Callable) -> Iterator[np.ndarray]:
    """Frame 0 starts every filter state and is written as its input bytes; then batch by batch."""
    size, kept = _batch_frames(ops, plan), _kept_levels(plan)
    frames = source()
    first = next(frames, None)
    if first is None:
        return
    states: dict[int, Any] = {}
    if kept:
        bands = _bands(ops, ops.rgb_to_yiq(ops.upload(first[None])), plan, kept)
        states = {level: step(None, band)[1] for level, band in bands.items()}
    yield np.array(first, dtype=np.uint8)
    for batch in _batches(frames, size):
        yiq = ops.rgb_to_yiq(ops.upload(batch))
        signal = None
        if kept:
            filtered = {}
            for level, band in _bands(ops, yiq, plan, kept).items():
                filtered[level], states[level] = step(states[level], band)
            signal = _signal(ops, plan, filtered)
        yield from _render(ops, plan, yiq, signal)


def laplacian_butterworth(ops: Operations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """Laplacian pyramid per frame, Butterworth band-pass LP(fh) - LP(fl) on each kept level, streamed."""
    p = plan.params
    high = tuple(butterworth_lowpass(p["fh"], plan.fs, mit=plan.mit))
    low = tuple(butterworth_lowpass(p["fl"], plan.fs, mit=plan.mit))
    return _streaming(ops, plan, source, lambda state, x: ops.butterworth_step(state, x, high, low))


def laplacian_iir(ops: Operations, plan: Plan, source: Source) -> Iterator[np.ndarray]:
    """Laplacian pyramid per frame, the MIT IIR band-pass on each kept level, streamed."""
    p = plan.params
    return _streaming(ops, plan, source, lambda state, x: ops.iir_step(state, x, p["r1"], p["r2"]))


#: The generic pipelines by name.
PIPELINES: dict[str, Pipeline] = {
    "gaussian_ideal": gaussian_ideal,
    "laplacian_ideal": laplacian_ideal,
    "laplacian_butterworth": laplacian_butterworth,
    "laplacian_iir": laplacian_iir,
}


class Backend:
    """A runnable backend: primitives plus, optionally, whole pipelines that replace the generic ones.

    Attributes
    ----------
    name : str
    operations : Operations
    overrides : dict
        Pipeline name -> callable ``(plan, source) -> iterator of uint8 (H, W, 3) frames``.
    """

    def __init__(self, name: str, operations: Operations, overrides: dict[str, Callable] | None = None):
        self.name = name
        self.operations = operations
        self.overrides = dict(overrides or {})

    def run(self, plan: Plan, source: Source) -> Iterator[np.ndarray]:
        """Run ``plan.pipeline`` on the frames ``source()`` yields; returns an iterator of uint8 frames.

        When the operations have a ``synchronize()`` (a device with a queue), a run that ends early (an
        exception, a KeyboardInterrupt, the caller closing the iterator) first waits for the device to finish
        what was enqueued, and only then lets go of the buffers that work reads and writes.
        """
        override = self.overrides.get(plan.pipeline)
        if override is not None:
            frames = override(plan, source)
        else:
            frames = PIPELINES[plan.pipeline](self.operations, plan, source)
        synchronize = getattr(self.operations, "synchronize", None)
        return frames if synchronize is None else _drained(frames, synchronize)

    def __repr__(self) -> str:
        return f"<vidmag backend {self.name!r} over {type(self.operations).__name__}>"


def _drained(frames: Iterator[np.ndarray], synchronize: Callable[[], None]) -> Iterator[np.ndarray]:
    """``frames``, draining the device's queue before the pipeline's generator is released when it ends early.

    Why: an interrupt between two launches leaves kernels in flight, and the generator's frames (which the
    exception's traceback keeps alive until here) hold the buffers they use, host memory wrapped as device
    buffers (``USE_HOST_PTR``) among them. Released first, a kernel still running writes into freed memory:
    a crash after the "interrupted" message. The pipeline is closed only once the queue is empty.
    """
    try:
        # not `yield from`: that would close the pipeline on GeneratorExit before the queue is drained
        for frame in frames:  # noqa: UP028
            yield frame
    except BaseException:  # KeyboardInterrupt and GeneratorExit included: that is the point
        synchronize()
        raise
    finally:
        close = getattr(frames, "close", None)
        if close is not None:
            close()


def bind(
    operations: Operations, *, name: str | None = None, overrides: dict[str, Callable] | None = None
) -> Backend:
    """Make a backend of a set of primitive operations: all four pipelines run on it.

    Parameters
    ----------
    operations : Operations
        An object with every method of :class:`vidmag.backend.operations.Operations`.
    name : str, optional
        The backend's name; ``None`` uses the operations' class name.
    overrides : dict, optional
        Pipelines the backend implements itself, by name, each a callable ``(plan, source)`` returning an
        iterator of uint8 (H, W, 3) frames; the others are the generic ones.

    Returns
    -------
    Backend
    """
    missing = [op for op in PRIMITIVES if not callable(getattr(operations, op, None))]
    if missing:
        raise TypeError(f"operations lacks the primitive(s) {', '.join(missing)}")
    unknown = sorted(set(overrides or {}) - set(PIPELINES))
    if unknown:
        raise ValueError(
            f"overrides names unknown pipeline(s) {', '.join(unknown)}; known: {', '.join(PIPELINES)}"
        )
    return Backend(name or type(operations).__name__, operations, overrides)
