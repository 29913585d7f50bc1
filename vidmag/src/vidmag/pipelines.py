"""The public entry points of magnification: :func:`magnify` (an array in, an array out), :func:`run` (a
frame source in, an iterator of frames out, in bounded memory) and :func:`open_stream` (a live stream:
frames pushed in, as many frames out).

Both validate everything before any work, choose the backend, apply the semantics' frame bookkeeping (the MIT
code leaves the last 10 frames unread) and hand the frames to the backend's pipeline.
"""

from __future__ import annotations

import itertools
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vidmag import backend as _backend
from vidmag._reference.colour import to_uint8
from vidmag._reference.pipelines import MIT_UNREAD_TAIL
from vidmag.backend import registry
from vidmag.backend.output import HostOutput
from vidmag.backend.stream import Stream
from vidmag.params import (
    PHASE_BACKENDS,
    PHASE_PIPELINES,
    PIPELINE_PARAMETERS,
    check_bool,
    check_frame_count,
    make_plan,
    output_frames,
)

#: The pipelines, by vidmag name: the four linear (Eulerian) ones and the four phase-based ones.
PIPELINES = tuple(PIPELINE_PARAMETERS)


def _auto_runs(name: str) -> bool:
    """Whether "auto" takes backend ``name`` for a phase-based pipeline: it can run here, and for torch and
    vulkan, on a graphics processor (on the processor, torch runs the Riesz steps several times slower than
    the NumPy reference, many small tensor operations per pyramid level, and lavapipe's Vulkan 5-7 times)."""
    if registry.unavailable_reason(name) is not None:
        return False
    if name == "torch":
        return registry.backend_module("torch").default_device() != "cpu"
    if name == "vulkan" and registry.pinned_by("vulkan") is None:
        # on a processor's Vulkan driver (lavapipe) the Riesz kernels ran 5-7 times slower than the NumPy
        # reference (docs/vidmag/phase.md); a pinned device is the user's choice and is kept
        from kernelkit import vulkan as kk_vulkan

        report, _ = kk_vulkan.choose()
        return report is not None and report.kind != "cpu"
    return True


def _pinned_and_broken(name: str) -> bool:
    """Whether "auto" must stop at backend ``name`` although it cannot run: its device is pinned (selecting
    it then raises the reason, as ``vidmag.backend.select("auto")`` does for the other pipelines)."""
    return registry.unavailable_reason(name) is not None and registry.pinned_by(name) is not None


def select_backend(backend: str, pipeline: str):
    """``vidmag.backend.select``, for a pipeline: the phase-based ones run on the backends
    :data:`vidmag.params.PHASE_BACKENDS` names for them, of which "auto" takes the first that can run here
    (torch only with a graphics processor) and, as ``vidmag.backend.select``, never passes over a backend
    whose device the user pinned; any other backend named for them is an error that names those that run
    them."""
    if pipeline in PHASE_PIPELINES:
        # the registry's table is the set of backends (a build or a test may hold fewer rows)
        runs = tuple(b for b in PHASE_BACKENDS[pipeline] if b in registry.names())
        if backend == "auto":
            backend = next((b for b in runs if _auto_runs(b) or _pinned_and_broken(b)), runs[-1])
            reason, pin = registry.unavailable_reason(backend), registry.pinned_by(backend)
            if reason is not None and pin is not None:
                raise _backend.BackendUnavailableError(
                    f"backend {backend!r} cannot run here: {reason} ({pin} pins its device; backend='auto' "
                    f"does not move on to another backend for {pipeline} while {pin.partition('=')[0]} is "
                    "set: correct it or unset it)"
                )
        elif backend in registry.names() and backend not in runs:
            raise _backend.BackendUnavailableError(
                f"backend {backend!r} does not run {pipeline}: the backends that run it are "
                f"{', '.join(runs)} (backend='auto' picks the first that can run here)"
            )
    return _backend.select(backend)

#: :class:`SaturationWarning` is given when the share of output bytes at 0 or 255 exceeds the input's share
#: by more than this (a fraction of all bytes: 0.01 is one percentage point).
SATURATION_LIMIT = 0.01


class SaturationWarning(UserWarning):
    """The magnification clipped much of the output at 0 or 255: `alpha` is too large for this clip.

    Clipped bytes have lost the amplified variation (and colour, when only some channels clip). The rule,
    the numbers behind it and what not to expect from it are on the semantics page of the documentation.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import vidmag
    >>> frames = np.random.default_rng(0).integers(100, 140, size=(16, 32, 32, 3), dtype=np.uint8)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     out = vidmag.magnify(frames, fs=30.0, pipeline="gaussian_ideal", backend="cpu", alpha=5000,
    ...                          level=2, fl=1.0, fh=3.0, chrom_attenuation=1.0)
    >>> [w.category.__name__ for w in caught]
    ['SaturationWarning']
    >>> print(caught[0].message)
    alpha = 5000 saturates the output: ...% of its bytes are clipped at 0 or 255, against 0.0% of the input...
    """


#: The saturation count reads every 16th row of each frame: the rule wants a share, which a sixteenth of the
#: rows (still tens of thousands of bytes per frame) estimates well. Every fourth row cost 45 ms on 150
#: frames of face.mp4 (input and output counted), a sixth of the OpenCL backend's whole run; this costs 10.
_ROW_STEP = 16


def _clipped(frame: np.ndarray) -> tuple[int, int]:
    """(bytes at 0 or 255, bytes looked at) in the counted rows of one uint8 (H, W, 3) frame."""
    rows = frame[::_ROW_STEP]
    # 0 and 255 are the two bytes that wrap to 255 and 254 when 1 is taken away: one pass instead of two
    return int(np.count_nonzero(rows - np.uint8(1) >= 254)), rows.size


def _warn_if_saturated(
    alpha: float, in_clipped: int, in_bytes: int, out_clipped: int, out_bytes: int, *, stacklevel: int = 2
) -> None:
    """The SaturationWarning, when the output's share of bytes at 0 or 255 exceeds the input's by more than
    :data:`SATURATION_LIMIT`; ``stacklevel`` counts from the caller (2: the caller's caller)."""
    if not in_bytes or not out_bytes:
        return
    before, after = in_clipped / in_bytes, out_clipped / out_bytes
    if after - before > SATURATION_LIMIT:
        warnings.warn(
            SaturationWarning(
                f"alpha = {alpha:g} saturates the output: {after:.1%} of its bytes are clipped at 0 or 255, "
                f"against {before:.1%} of the input's; the amplified variation is lost there (lower alpha, "
                "or chrom_attenuation for colour)"
            ),
            stacklevel=stacklevel + 1,
        )


def _drop_last(frames: Iterator[np.ndarray], count: int) -> Iterator[np.ndarray]:
    """Yield all but the last ``count`` frames, holding ``count`` frames of look-ahead."""
    ahead: deque[np.ndarray] = deque()
    for frame in frames:
        ahead.append(frame)
        if len(ahead) > count:
            yield ahead.popleft()


def _checked(frames: Iterator[Any], shape: tuple[int, int, int]) -> Iterator[np.ndarray]:
    for i, frame in enumerate(frames):
        if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.shape != shape:
            got = f"{getattr(frame, 'dtype', type(frame).__name__)} {getattr(frame, 'shape', '')}"
            raise ValueError(f"frames: frame {i} must be uint8 of shape {shape} like frame 0, got {got}")
        yield frame


def run(
    source: Callable[[], Iterator[np.ndarray]],
    *,
    fs: float,
    pipeline: str,
    backend: str = "auto",
    compat: str | None = None,
    progress: Callable[[int], Any] | None = None,
    n_frames: int | None = None,
    **params: Any,
) -> Iterator[np.ndarray]:
    """Magnify a stream of frames in bounded memory.

    Parameters
    ----------
    source : callable
        ``source()`` returns a fresh iterator of the input frames, uint8 (H, W, 3) RGB, each time it is
        called. The streaming pipelines (laplacian_butterworth, laplacian_iir) call it once and hold O(1)
        frames; the ideal ones call it twice (it must give the same frames both times) and hold only the
        pyramid levels (or down-sampled images) they filter.
    fs : float
        Sampling rate of the frames in Hz (the capture rate; the iir pipeline does not use it).
    pipeline : str
        ``"gaussian_ideal"``, ``"laplacian_ideal"``, ``"laplacian_butterworth"``, ``"laplacian_iir"``
        (linear), or the phase-based ``"riesz_ideal"``, ``"riesz_butterworth"``, ``"riesz_iir"``,
        ``"steerable_ideal"`` (luminance only; the backends of :data:`vidmag.params.PHASE_BACKENDS` run them
        and ``backend="auto"`` picks the first that can run here, torch only with a graphics processor).
    backend : str
        ``"auto"`` or a backend name (see ``vidmag.backend.select``).
    compat : None or "mit"
        ``None``: the default semantics (T frames out); ``"mit"``: the MIT code's output exactly, quirks
        included, taking the paper's literal parameter values.
    progress : callable, optional
        Called with the number of output frames produced so far, after each frame.
    n_frames : int, optional
        Number of input frames, if known: checked up front against the pipeline's minimum (otherwise the
        check happens when the stream ends) and useful to a progress display.
    **params
        The pipeline's parameters: ``alpha``, ``level`` (gaussian), ``lambda_c`` (laplacian), ``fl``, ``fh``
        (ideal and butterworth, Hz), ``r1``, ``r2`` (iir), ``chrom_attenuation`` (linear pipelines); ``sigma``
        (phase pipelines: the amplitude-weighted smoothing of the phase, pixels), ``orientations``,
        ``bands_per_octave`` (1 or 2), ``attenuate_other_freq`` (steerable_ideal). See docs/vidmag/phase.md.

    Returns
    -------
    iterator of ndarray, uint8, shape (H, W, 3)
        The output frames in order: as many as the input (default semantics), T - 10 (``compat="mit"``) or
        T - 11 (``compat="mit"``, laplacian_ideal).

    Raises
    ------
    TypeError
        An unknown or missing parameter, a value of the wrong type, a `source` that is not callable.
    ValueError
        A bad value, an empty source, frames too small or of the wrong shape / dtype.
    BackendUnavailableError
        The named backend cannot run here.

    Warns
    -----
    SaturationWarning
        When the stream ends, if the share of output bytes at 0 or 255 exceeds the share of input bytes at
        0 or 255 by more than :data:`SATURATION_LIMIT` (one percentage point): `alpha` is too large.

    Notes
    -----
    All validation happens in this call, before the iterator is returned; it reads the first frame.
    Backends: all (``vidmag.backend``).
    """
    return _run(source, fs=fs, pipeline=pipeline, backend=backend, compat=compat, progress=progress,
                n_frames=n_frames, into=None, **params)


def _run(
    source: Callable[[], Iterator[np.ndarray]],
    *,
    fs: float,
    pipeline: str,
    backend: str,
    compat: str | None,
    progress: Callable[[int], Any] | None,
    n_frames: int | None,
    into: HostOutput | None,
    **params: Any,
) -> Iterator[np.ndarray]:
    """:func:`run`, whose backend may write the output frames straight into ``into`` (see
    :class:`vidmag.backend.output.HostOutput`; the frames yielded are then views of its array)."""
    if not callable(source):
        hint = " (for a clip held in an array, use vidmag.magnify)" if hasattr(source, "shape") else ""
        raise TypeError(
            "source must be a callable that returns a fresh iterator of uint8 (H, W, 3) frames each time it "
            f"is called, such as lambda: iter(frames) or vidmag.io.frame_source(path); got "
            f"{type(source).__name__}{hint}"
        )
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, got {type(progress).__name__} {progress!r}")
    try:
        frames = iter(source())
    except TypeError as error:
        raise TypeError(f"source() must return an iterable of frames: {error}") from None
    first = next(frames, None)
    if first is None:
        raise ValueError("frames: the source gave no frames (empty clip)")
    first = np.asarray(first)
    if first.dtype != np.uint8 or first.ndim != 3:
        raise ValueError(f"frames must be uint8 (H, W, 3) RGB, got {first.dtype} of shape {first.shape}")
    plan = make_plan(
        pipeline, fs=fs, compat=compat, params=params, frame_shape=first.shape, n_frames=n_frames
    )
    _, chosen = select_backend(backend, plan.pipeline)
    calls = [0]
    counts: list[int] = []

    def frames_read() -> Iterator[np.ndarray]:
        nonlocal frames
        calls[0] += 1
        if calls[0] == 1:
            stream, frames = itertools.chain([first], frames), None
        else:
            stream = iter(source())
        count = 0
        for frame in _checked(stream, first.shape):
            count += 1
            yield frame
        check_frame_count(plan.pipeline, plan.compat, count)
        if counts and count != counts[0]:
            raise RuntimeError(
                f"source gave {counts[0]} frames on its first call and {count} on call {calls[0]}"
            )
        counts.append(count)

    # Bytes at 0 or 255, of the input (its first pass, what the backend reads) and of the output.
    clipped = {"in": 0, "in_bytes": 0, "out": 0, "out_bytes": 0}
    passes = [0]

    def counted(stream: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        for frame in stream:
            count, size = _clipped(frame)
            clipped["in"] += count
            clipped["in_bytes"] += size
            yield frame

    def semantic_source() -> Iterator[np.ndarray]:
        passes[0] += 1
        # the MIT phase code reads every frame; the linear MIT code leaves the last 10 unread
        unread = plan.mit and not plan.phase
        stream = _drop_last(frames_read(), MIT_UNREAD_TAIL) if unread else frames_read()
        return counted(stream) if passes[0] == 1 else stream

    def produce() -> Iterator[np.ndarray]:
        frames_out = chosen.run(plan, semantic_source, into=into)
        for done, frame in enumerate(frames_out, start=1):
            count, size = _clipped(frame)
            clipped["out"] += count
            clipped["out_bytes"] += size
            yield frame
            if progress is not None:
                progress(done)
        _warn_if_saturated(plan.params["alpha"], clipped["in"], clipped["in_bytes"], clipped["out"],
                           clipped["out_bytes"])

    return produce()


def _as_uint8(frames: Any) -> np.ndarray:
    """(T, H, W, 3) uint8, or float in [0, 1] quantised to the nearest 8-bit level."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"frames must have shape (T, H, W, 3), got {frames.shape}")
    if frames.dtype == np.uint8:
        return frames
    if not np.issubdtype(frames.dtype, np.floating):
        raise ValueError(f"frames must be uint8 or float in [0, 1], got dtype {frames.dtype}")
    out = np.empty(frames.shape, dtype=np.uint8)
    for i, frame in enumerate(frames):  # frame by frame: no float64 copy of the whole clip
        if not (np.all(np.isfinite(frame)) and frame.min() >= 0.0 and frame.max() <= 1.0):
            raise ValueError(f"frames: float frames must be finite and within [0, 1] (frame {i} is not)")
        out[i] = to_uint8(frame)
    return out


def magnify(
    frames: Any,
    *,
    fs: float,
    pipeline: str,
    backend: str = "auto",
    compat: str | None = None,
    progress: bool = False,
    **params: Any,
) -> Any:
    """Magnify a clip held in memory.

    Parameters
    ----------
    frames : ndarray, shape (T, H, W, 3)
        RGB frames, uint8, or float in [0, 1] (quantised to 8 bits, ``round(x * 255)``, as a video would be).
    fs, pipeline, backend, compat, **params
        As :func:`run`.
    progress : bool
        Draw a progress bar with frames/s on stderr (``True``/``False`` or a numpy bool; anything else is a
        TypeError).

    Returns
    -------
    ndarray, uint8, shape (T', H, W, 3)
        T' = T under the default semantics; T - 10 under ``compat="mit"`` (T - 11 for laplacian_ideal).

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As :func:`run`; everything is checked before any work.

    Warns
    -----
    SaturationWarning
        As :func:`run`: the output is clipped at 0 or 255 much more than the input.

    Notes
    -----
    Backends: all (``vidmag.backend``). An array of a backend's own library is routed to it by the registry
    (``vidmag.backend.owner``): a torch tensor runs on the torch backend (``backend="auto"`` or ``"torch"``)
    on the tensor's device and comes back as a uint8 tensor there (no progress bar is drawn); a CPU tensor
    may also be given to any other backend, which returns a numpy array. A GPU tensor is never copied
    through the host for another backend: that is an error.

    Examples
    --------
    >>> import numpy as np
    >>> import vidmag
    >>> frames = np.random.default_rng(0).integers(100, 140, size=(16, 32, 32, 3), dtype=np.uint8)
    >>> out = vidmag.magnify(frames, fs=30.0, pipeline="laplacian_iir", backend="cpu", alpha=10, lambda_c=16,
    ...                      r1=0.4, r2=0.05, chrom_attenuation=0.1)
    >>> out.shape, out.dtype
    ((16, 32, 32, 3), dtype('uint8'))
    """
    progress = check_bool("progress", progress)
    owner = _backend.owner(frames)  # looks in sys.modules; imports no library
    if owner is not None and pipeline in PHASE_PIPELINES and backend in ("auto", owner):
        raise ValueError(
            f"pipeline {pipeline} takes NumPy frames only (it runs on {', '.join(PHASE_BACKENDS[pipeline])} "
            f"from host frames), not a clip held by {owner}: pass a NumPy array, or name the backend "
            "(backend='cpu') for a tensor in host memory"
        )
    if owner is not None:
        module = registry.backend_module(owner)
        if backend in ("auto", owner):
            out = module.magnify_owned(frames, fs=fs, pipeline=pipeline, compat=compat, **params)
            _warn_if_saturated(float(params["alpha"]), *module.count_clipped(frames, _ROW_STEP),
                               *module.count_clipped(out, _ROW_STEP))
            return out
        frames = module.to_host(frames, backend=backend)
    clip = _as_uint8(frames)
    T = clip.shape[0]
    if T == 0:
        raise ValueError("frames: the clip is empty (T = 0)")
    bar = None
    if progress:
        from vidmag._progress import ProgressBar

        bar = ProgressBar(total=output_frames(pipeline, compat, T))
    # _run() validates everything before it returns, so nothing below starts on bad input; a backend that
    # can writes the frames straight into `out` (no copy here), the others' frames are copied in
    into = HostOutput()
    frames_out = _run(lambda: iter(clip), fs=fs, pipeline=pipeline, backend=backend, compat=compat,
                      progress=bar, n_frames=T, into=into, **params)
    out = into.array = np.empty((output_frames(pipeline, compat, T), *clip.shape[1:]), dtype=np.uint8)
    count = 0
    for count, frame in enumerate(frames_out, start=1):
        if not into.holds(frame, count - 1):
            out[count - 1] = frame
    if count != len(out):
        raise RuntimeError(f"backend produced {count} frames, expected {len(out)}")
    return out


def open_stream(
    frame_shape: tuple[int, ...],
    *,
    fs: float,
    pipeline: str,
    backend: str = "auto",
    compat: str | None = None,
    batch: int | None = None,
    **params: Any,
) -> Stream:
    """Open a live stream of a streaming pipeline: push frames, get as many magnified frames back.

    Parameters
    ----------
    frame_shape : tuple of int
        Shape of every frame, (H, W, 3).
    fs, pipeline, backend, compat, **params
        As :func:`run`; ``pipeline`` must be one that streams: ``"laplacian_butterworth"``,
        ``"laplacian_iir"``, ``"riesz_butterworth"`` or ``"riesz_iir"`` (the last two on the backends of
        :data:`vidmag.params.PHASE_BACKENDS`).
    batch : int, optional
        The most frames one device call works on (a larger push is done in pieces of this many); ``None``:
        the backend's batch size. Smaller bounds the latency of a large push, not of a single frame.

    Returns
    -------
    vidmag.backend.stream.Stream
        ``stream.push(frames)`` takes one uint8 frame (H, W, 3), a batch (n, H, W, 3) or a list of frames
        and returns as many magnified frames, one for one, with no look-ahead; ``stream.close()`` ends it
        (or use it as a context manager). Frame 0 of the stream comes out as its input bytes, as in the
        whole-clip run, whose frames the stream's equal.

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As :func:`run`; a ``ValueError`` too for an ideal pipeline, which cannot stream (its band-pass needs
        the whole clip), naming it.

    Warns
    -----
    SaturationWarning
        At the stream's first close (``close()`` or the end of its ``with`` block), when the frames pushed
        since the last change of ``alpha`` came back clipped at 0 or 255 much more than they went in (the
        rule of :func:`magnify`).

    Examples
    --------
    >>> with open_stream((480, 640, 3), fs=30, pipeline="laplacian_iir", alpha=10, lambda_c=16,
    ...                  r1=0.4, r2=0.05, chrom_attenuation=0.1) as stream:   # doctest: +SKIP
    ...     for frame in camera():
    ...         show(stream.push(frame))

    Notes
    -----
    Backends: all (``vidmag.backend``).
    """
    if not isinstance(frame_shape, (tuple, list)) or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in frame_shape
    ):
        raise TypeError(f"frame_shape must be a tuple of ints (H, W, 3), got {frame_shape!r}")
    plan = make_plan(pipeline, fs=fs, compat=compat, params=params, frame_shape=tuple(frame_shape),
                     batch=batch)
    _, chosen = select_backend(backend, plan.pipeline)
    return chosen.open(plan)
