"""The four pipelines written once, and :func:`bind`, which makes a backend of a tier of operations.

A pipeline here is a generator function ``(stages, plan, groups) -> iterator of uint8 output batches``, over
the stages of :mod:`vidmag.backend.stages` (the same code runs over the primitives or over the fused tier).
``groups(skip)`` returns a fresh iterator of consecutive input frames from frame ``skip`` on, in groups of at
most ``stages.batch_frames(plan)``: lists of host uint8 (H, W, 3) frames (or batches already on the device,
for a backend whose arrays callers hold), already reduced to the frames the semantics reads
(``vidmag.pipelines.run`` drops the MIT code's unread tail). The streaming pipelines read the frames once,
through a :class:`~vidmag.backend.stream.Stream`, exactly as a live stream runs;
the ideal ones read them twice (pass 1 keeps only the pyramid levels or the down-sampled images they filter,
pass 2 re-reads the frames to add the signal). Output batches are uint8 (n, H, W, 3), on the host or in the
backend's array type.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from vidmag.backend.operations import FUSED, PRIMITIVES, FusedOperations, Operations
from vidmag.backend.output import HostOutput
from vidmag.backend.stages import FusedStages, PrimitiveStages, kept_levels
from vidmag.backend.stream import Stream, refuse_stream
from vidmag.params import Plan

__all__ = ["PIPELINES", "Backend", "bind", "groups_of"]

Source = Callable[[], Iterator[np.ndarray]]
Groups = Callable[[int], Iterator[Any]]
Pipeline = Callable[[Any, Plan, Groups], Iterator[Any]]


def groups_of(frames: Iterable[np.ndarray], size: int, skip: int = 0) -> Iterator[list[np.ndarray]]:
    """Consecutive frames in lists of at most ``size``, after dropping the first ``skip``.

    Parameters
    ----------
    frames : iterable
        The frames, read one at a time.
    size : int
        Most frames per list.
    skip : int
        Frames dropped from the start.

    Yields
    ------
    list
        Up to ``size`` consecutive frames; only the last list may be shorter.

    Examples
    --------
    >>> from vidmag.backend import generic
    >>> [len(group) for group in generic.groups_of(range(10), 4, skip=1)]
    [4, 4, 1]
    """
    group: list[np.ndarray] = []
    for i, frame in enumerate(frames):
        if i < skip:
            continue
        group.append(frame)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def gaussian_ideal(stages: Any, plan: Plan, groups: Groups) -> Iterator[Any]:
    """Gaussian down stack, ideal band-pass over the clip, times alpha, bicubic back to full size, added."""
    p = plan.params
    pieces = [stages.gaussian_down(stages.upload(group), p["level"]) for group in groups(0)]
    if not pieces:
        return
    stack = stages.bandpass(stages.concat(pieces), p["fl"], p["fh"], plan.fs, mit=plan.mit, gain=1.0)
    start = 0
    for group in groups(0):
        frames = stages.upload(group)
        n = frames.shape[0]
        signal = stages.take(stack, start, start + n)
        yield stages.render(
            frames, signal, plan, kind="bicubic", gain=p["alpha"], chroma=p["chrom_attenuation"]
        )
        start += n


def laplacian_ideal(stages: Any, plan: Plan, groups: Groups) -> Iterator[Any]:
    """Laplacian bands of the clip, ideal band-pass per kept level, per-level gains, collapsed and added.

    Under ``compat="mit"`` output j is input frame j + 1 plus the signal of frame j (one frame fewer).
    """
    p, kept = plan.params, kept_levels(plan)
    stacks: dict[int, Any] = {}
    if kept:
        pieces: dict[int, list] = {level: [] for level in kept}
        for group in groups(0):
            for level, band in stages.bands(stages.upload(group), plan, kept, scratch=False).items():
                pieces[level].append(band)
        if not pieces[kept[0]]:
            return
        for level in kept:
            stacks[level] = stages.bandpass(
                stages.concat(pieces.pop(level)), p["fl"], p["fh"], plan.fs, mit=plan.mit,
                gain=plan.gains[level],
            )
    start = 0
    for group in groups(1 if plan.mit else 0):  # the MIT code's one-frame lag
        frames = stages.upload(group)
        n = frames.shape[0]
        signal = None
        if stacks:
            signal = stages.collapse({lv: stages.take(s, start, start + n) for lv, s in stacks.items()}, plan)
        yield stages.render(frames, signal, plan, kind="expand", gain=1.0, chroma=p["chrom_attenuation"])
        start += n


def _streaming(stages: Any, plan: Plan, groups: Groups) -> Iterator[Any]:
    """A :class:`~vidmag.backend.stream.Stream` fed the clip batch by batch (the run that holds it drains
    the device when it ends early)."""
    stream = Stream(stages, plan, name="whole clip", synchronize=None)
    for group in groups(0):
        yield from stream.feed(group)
    stream.close()


def laplacian_butterworth(stages: Any, plan: Plan, groups: Groups) -> Iterator[Any]:
    """Laplacian pyramid per frame, Butterworth band-pass LP(fh) - LP(fl) on each kept level, streamed."""
    return _streaming(stages, plan, groups)


def laplacian_iir(stages: Any, plan: Plan, groups: Groups) -> Iterator[Any]:
    """Laplacian pyramid per frame, the MIT IIR band-pass on each kept level, streamed."""
    return _streaming(stages, plan, groups)


#: The pipelines by name.
PIPELINES: dict[str, Pipeline] = {
    "gaussian_ideal": gaussian_ideal,
    "laplacian_ideal": laplacian_ideal,
    "laplacian_butterworth": laplacian_butterworth,
    "laplacian_iir": laplacian_iir,
}


class Backend:
    """A runnable backend: primitives, optionally the fused tier, optionally whole pipelines of its own.

    Attributes
    ----------
    name : str
    operations : Operations
        The primitives.
    fused : FusedOperations or None
        The fused tier, when the backend has one: the pipelines then run over it.
    stages : PrimitiveStages or FusedStages
        What the pipelines run over.

    Examples
    --------
    >>> from vidmag.backend import generic
    >>> from vidmag.backend.numpy import NumpyOperations
    >>> backend = generic.bind(NumpyOperations(), name="mine")
    >>> backend.name, backend.fused is None
    ('mine', True)
    """

    def __init__(
        self,
        name: str,
        operations: Operations,
        overrides: dict[str, Callable] | None = None,
        fused: FusedOperations | None = None,
    ):
        self.name = name
        self.operations = operations
        self.fused = fused
        self.stages = FusedStages(fused) if fused is not None else PrimitiveStages(operations)
        self._replaced = dict(overrides or {})

    @property
    def overrides(self) -> dict[str, Callable]:
        """Pipeline name -> callable ``(plan, source) -> iterator of uint8 (H, W, 3) frames``, for every
        pipeline this backend does not run through its primitives alone: those it replaces outright, and,
        with a fused tier, all the others (run over the fused tier). Empty for a primitives-only backend."""
        if self.fused is None:
            return dict(self._replaced)
        runs = {name: functools.partial(self._frames, PIPELINES[name]) for name in PIPELINES}
        return {**runs, **self._replaced}

    def run(self, plan: Plan, source: Source, *, into: HostOutput | None = None) -> Iterator[np.ndarray]:
        """Run ``plan.pipeline`` on the frames ``source()`` yields; returns an iterator of uint8 frames.

        ``into``: the caller's output array (:class:`~vidmag.backend.output.HostOutput`). A fused tier whose
        render writes host memory (``renders_into_host``) writes the output there, and the frames yielded
        are views of it; so does a pipeline override that takes an ``into`` keyword. Otherwise it is
        ignored (the caller copies the frames).

        When the operations have a ``synchronize()`` (a device with a queue), a run that ends early (an
        exception, a KeyboardInterrupt, the caller closing the iterator) first waits for the device to finish
        what was enqueued, and only then lets go of the buffers that work reads and writes.
        """
        replaced = self._replaced.get(plan.pipeline)
        if replaced is not None:
            takes = into is not None and "into" in inspect.signature(replaced).parameters
            frames = replaced(plan, source, into=into) if takes else replaced(plan, source)
        else:
            frames = self._frames(PIPELINES[plan.pipeline], plan, source, into)
        synchronize = self._synchronizer()
        return frames if synchronize is None else _drained(frames, synchronize)

    def open(self, plan: Plan) -> Stream:
        """A :class:`~vidmag.backend.stream.Stream` of ``plan`` (a streaming pipeline) on this backend.

        Raises
        ------
        ValueError
            ``plan.pipeline`` cannot stream (gaussian_ideal, laplacian_ideal: they need the whole clip); the
            message names it and says why.
        """
        if not plan.streams:
            raise refuse_stream(plan)
        return Stream(self.stages, plan, name=self.name, synchronize=self._synchronizer())

    def _synchronizer(self) -> Callable[[], None] | None:
        for tier in (self.fused, self.operations):
            synchronize = getattr(tier, "synchronize", None)
            if synchronize is not None:
                return synchronize
        return None

    def _frames(
        self, pipeline: Pipeline, plan: Plan, source: Source, into: HostOutput | None = None
    ) -> Iterator[np.ndarray]:
        stages = self.stages if into is None else self.stages.writing_into(into)
        size = stages.batch_frames(plan)
        for out in pipeline(stages, plan, lambda skip: groups_of(source(), size, skip)):
            yield from out if isinstance(out, np.ndarray) else stages.download(out)

    def __repr__(self) -> str:
        tiers = type(self.operations).__name__
        if self.fused is not None:
            tiers += f" + {type(self.fused).__name__}"
        return f"<vidmag backend {self.name!r} over {tiers}>"


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


def _missing(tier: Any, names: tuple[str, ...]) -> list[str]:
    return [op for op in names if not callable(getattr(tier, op, None))]


def bind(
    operations: Operations,
    *,
    name: str | None = None,
    overrides: dict[str, Callable] | None = None,
    fused: FusedOperations | None = None,
) -> Backend:
    """Make a backend of a set of operations: all four pipelines run on it, whole clip and streamed.

    Parameters
    ----------
    operations : Operations
        An object with every primitive of :class:`vidmag.backend.operations.Operations`.
    name : str, optional
        The backend's name; ``None`` uses the operations' class name.
    overrides : dict, optional
        Pipelines the backend implements itself, by name, each a callable ``(plan, source)`` returning an
        iterator of uint8 (H, W, 3) frames; the others are the generic ones. (A whole-clip replacement only:
        a stream of it runs the generic pipeline.)
    fused : FusedOperations, optional
        The fused tier (every operation of :class:`vidmag.backend.operations.FusedOperations`): the
        pipelines then run over it instead of over the primitives.

    Returns
    -------
    Backend

    Raises
    ------
    TypeError
        ``operations`` lacks a primitive, or ``fused`` an operation of the fused tier (named).
    ValueError
        ``overrides`` names a pipeline that does not exist.

    Examples
    --------
    >>> from vidmag.backend import generic
    >>> from vidmag.backend.numpy import NumpyOperations
    >>> backend = generic.bind(NumpyOperations(), name="mine")
    >>> backend.name, backend.fused is None
    ('mine', True)
    """
    missing = _missing(operations, PRIMITIVES)
    if missing:
        raise TypeError(f"operations lacks the primitive(s) {', '.join(missing)}")
    if fused is not None:
        missing = _missing(fused, FUSED)
        if missing:
            raise TypeError(f"fused lacks the fused-tier operation(s) {', '.join(missing)}")
    unknown = sorted(set(overrides or {}) - set(PIPELINES))
    if unknown:
        raise ValueError(
            f"overrides names unknown pipeline(s) {', '.join(unknown)}; known: {', '.join(PIPELINES)}"
        )
    return Backend(name or type(operations).__name__, operations, overrides, fused)
