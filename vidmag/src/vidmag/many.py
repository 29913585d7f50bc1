"""Many clips on Dask: :func:`magnify_files` runs :func:`vidmag.files.magnify_file` on every input, on the
workers of a ``dask.distributed`` cluster (a local one by default), and reports each clip's result or error.

Dask is the scheduler (the ``dask`` extra: ``pip install -e "./vidmag[dask]"`` from a checkout); vidmag only
lays out the outputs, submits one task per clip, and gathers. Each output is written atomically by
magnify_file on the worker (a temporary name, renamed when complete), so a failed or killed clip leaves
nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from vidmag import io
from vidmag.params import check_bool, check_integer

__all__ = ["ClipResult", "magnify_files", "output_paths"]


@dataclass(frozen=True)
class ClipResult:
    """What happened to one clip of :func:`magnify_files`.

    Attributes
    ----------
    input : str
        The clip, as given.
    output : str
        Where its result was to be written (absolute).
    result : vidmag.files.MagnifyResult or None
        magnify_file's result; None when the clip failed.
    error : str or None
        ``"ErrorType: message"`` when the clip failed (nothing was written for it); None when it succeeded.

    Examples
    --------
    >>> from vidmag.many import ClipResult
    >>> failed = ClipResult("a.mp4", "/clips/out/a-magnified.mp4", None, "ValueError: fs: give fs= (Hz)")
    >>> failed.ok, failed.result
    (False, None)
    """

    input: str
    output: str
    result: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the clip was written."""
        return self.error is None


def output_paths(inputs: Sequence[str], out_dir: str, *, suffix: str = "-magnified",
                 extension: str = ".mp4") -> list[str]:
    """``out_dir/<stem><suffix><extension>`` for each input, refusing clashes before anything runs.

    Parameters
    ----------
    inputs : sequence of str
        The clips' paths (they need not exist; those that do are checked against every output).
    out_dir : str
        Directory of the outputs (made absolute).
    suffix : str
        Appended to each input's stem.
    extension : str
        The outputs' suffix, one of :data:`vidmag.io.CONTAINER_FOR_SUFFIX`'s keys.

    Returns
    -------
    list of str
        Absolute output paths, in the order of `inputs`.

    Raises
    ------
    ValueError
        Two inputs map to the same output, or an output is one of the inputs (any spelling or link); the
        message names both.

    Examples
    --------
    >>> from vidmag.many import output_paths
    >>> output_paths(["a.mp4", "clips/b.mov"], "out")
    ['.../out/a-magnified.mp4', '.../out/b-magnified.mp4']
    >>> output_paths(["day1/a.mp4", "day2/a.mp4"], "out")
    Traceback (most recent call last):
    ...
    ValueError: inputs: 'day1/a.mp4' and 'day2/a.mp4' both map to '.../out/a-magnified.mp4' ...
    """
    # str, bytes or os.PathLike, as magnify_files takes them (bytes used to fail in os.path.join)
    inputs = [io.as_path("inputs", src) for src in inputs]
    out_dir = io.as_path("out_dir", out_dir)
    if not isinstance(suffix, str):
        raise TypeError(f"suffix must be a string, got {type(suffix).__name__}")
    if extension.lower() not in io.CONTAINER_FOR_SUFFIX:
        raise ValueError(f"extension must be one of {', '.join(io.CONTAINER_FOR_SUFFIX)}, got {extension!r}")
    outputs, seen = [], {}
    for src in inputs:
        stem = os.path.splitext(os.path.basename(src))[0]
        dst = os.path.abspath(os.path.join(out_dir, f"{stem}{suffix}{extension}"))
        key = os.path.normcase(os.path.realpath(dst))
        if key in seen:
            raise ValueError(f"inputs: {seen[key]!r} and {src!r} both map to {dst!r} (give --suffix, or "
                             "rename one)")
        seen[key] = src
        outputs.append(dst)
    for dst in outputs:
        for src in inputs:
            if os.path.exists(src):
                io.check_not_source(src, dst)  # a ValueError naming both
    return outputs


def _magnify_one(src: str, dst: str, options: dict[str, Any]) -> ClipResult:
    """Run on a worker: one clip; its error is kept, not raised, so the other clips go on."""
    from vidmag.files import magnify_file

    try:
        result = magnify_file(src, dst, progress=False, **options)
    except Exception as error:  # reported in the clip's result
        return ClipResult(src, dst, None, f"{type(error).__name__}: {error}")
    return ClipResult(src, dst, result, None)


def _check_options(options: dict[str, Any]) -> None:
    """The checks magnify_file would make on every clip that need no clip: bad options fail up front."""
    from vidmag.backend import registry
    from vidmag.files import _check_encoder_preset, _check_max_frames, _check_quality, _resolve_pipeline
    from vidmag.params import check_parameters
    from vidmag.tiles import parse_size

    params = {k: v for k, v in options.items() if k not in _FILE_OPTIONS}
    preset, pipeline = options.get("preset"), options.get("pipeline")
    fs, compat = options.get("fs"), options.get("compat")
    # without a clip the container rate is unknown: a rate high enough that only the rate-free checks bite
    name, fs_hz, merged = _resolve_pipeline(preset, pipeline, fs, compat, params, Fraction(10**6))
    check_parameters(name, fs_hz, compat, merged)
    if options.get("memory") is not None:
        parse_size(options["memory"], "memory")
    _check_max_frames(options.get("max_frames"))
    # magnify_file's own options, each checked as it checks them: a bad one fails here, once, and not as
    # every clip's error after the cluster has started and out_dir exists
    if "quality" in options:
        _check_quality(options["quality"])
    if "encoder_preset" in options:
        _check_encoder_preset(options["encoder_preset"])
    for flag in ("side_by_side", "audio"):
        if flag in options:
            check_bool(flag, options[flag])
    backend = options.get("backend", "auto")
    # the name only, by the registry's own rule and message: whether it can run is the workers' business
    # (they may have a GPU this machine lacks)
    if not (isinstance(backend, str) and backend == "auto"):
        registry._spec(backend)


#: magnify_file's keywords that are not pipeline parameters.
_FILE_OPTIONS = ("preset", "pipeline", "fs", "compat", "backend", "quality", "encoder_preset", "side_by_side",
                 "audio", "memory", "max_frames")


def magnify_files(
    inputs: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool | Callable[[int, int], None] = True,
    suffix: str = "-magnified",
    **magnify_options: Any,
) -> list[ClipResult]:
    """Magnify many clips on a Dask cluster, one task per clip.

    Parameters
    ----------
    inputs : iterable of path
        The clips.
    out_dir : path
        Directory of the outputs (created if missing): ``out_dir/<stem><suffix>.mp4`` per clip.
    client : dask.distributed.Client, optional
        A client to use (not closed here).
    scheduler : str, optional
        Address of an existing scheduler, ``"tcp://host:port"``, when `client` is None. Both None: a
        ``LocalCluster`` of `workers` processes with one thread each, closed at the end.
    workers : int, optional
        Workers of the local cluster (None: Dask's choice, one per core). Only without `client`/`scheduler`.
    progress : bool or callable
        True: a bar over all clips on stderr; a callable gets ``(clips done, clips)`` after each.
    suffix : str
        Appended to each input's stem.
    **magnify_options
        :func:`vidmag.files.magnify_file`'s keywords (preset, pipeline, fs, backend, compat, quality,
        memory, max_frames, the pipeline's parameters ...), the same for every clip.

    Returns
    -------
    list of ClipResult
        In the order of `inputs`; a failed clip has its error and no output, the others are finished.

    Raises
    ------
    TypeError, ValueError
        Bad options (checked before any clip runs), no inputs, two inputs with one output, an output that
        is an input.
    ImportError
        dask.distributed is not installed (the ``dask`` extra).

    Notes
    -----
    Backends: whichever `backend` names, on each worker.

    Examples
    --------
    Two short clips and a missing one, on an in-process Dask client (threads, no worker processes):

    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from dask.distributed import Client
    >>> from vidmag import io, many
    >>> rng = np.random.default_rng(0)
    >>> for name in ("a.mp4", "b.mp4"):
    ...     with io.VideoWriter(name, width=64, height=48, fps=Fraction(30)) as writer:
    ...         for frame in rng.integers(100, 140, size=(8, 48, 64, 3), dtype=np.uint8):
    ...             writer.write(frame)
    >>> with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
    ...     results = many.magnify_files(["a.mp4", "b.mp4", "missing.mp4"], "out", client=client,
    ...                                  progress=False, pipeline="laplacian_iir", backend="cpu", alpha=10,
    ...                                  lambda_c=16, r1=0.4, r2=0.05, chrom_attenuation=0.1)
    >>> [(r.input, r.ok) for r in results]
    [('a.mp4', True), ('b.mp4', True), ('missing.mp4', False)]
    >>> results[0].result.frames, results[2].error
    (8, "FileNotFoundError: src: no such file: 'missing.mp4'")
    """
    inputs = [io.as_path("inputs", src) for src in inputs]
    if not inputs:
        raise ValueError("inputs: no clips given")
    out_dir = io.as_path("out_dir", out_dir)
    if not callable(progress):
        try:
            progress = check_bool("progress", progress)  # numpy bools too
        except TypeError:
            raise TypeError(f"progress must be True, False or a callable, got {type(progress).__name__} "
                            f"{progress!r}") from None
    if workers is not None:
        workers = check_integer("workers", workers)  # the one rule for numbers: np.int64(2), 2.0 too
        if workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if client is not None and scheduler is not None:
        raise ValueError("give client or scheduler, not both")
    if "progress" in magnify_options or "dst" in magnify_options:
        raise TypeError("magnify_files() sets each clip's dst and progress itself")
    _check_options(magnify_options)
    outputs = output_paths(inputs, out_dir, suffix=suffix)
    try:  # before out_dir is made: without Dask nothing is created
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as error:
        raise ImportError(
            "magnify_files needs dask.distributed, in vidmag's 'dask' extra: "
            "pip install -e \"./vidmag[dask]\" from a checkout (or pip install \"dask[distributed]\")"
        ) from error
    os.makedirs(out_dir, exist_ok=True)

    owned: list[Any] = []
    try:
        if client is None:
            if scheduler is not None:
                client = Client(scheduler)
            else:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None)
                owned.append(cluster)
                client = Client(cluster)
            owned.insert(0, client)
        futures = {
            client.submit(_magnify_one, src, dst, magnify_options, pure=False): i
            for i, (src, dst) in enumerate(zip(inputs, outputs))
        }
        results: list[ClipResult | None] = [None] * len(inputs)
        bar = None
        if progress is True:
            from vidmag._progress import ProgressBar

            bar = ProgressBar(total=len(inputs), label="clips")
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                i = futures[future]
                if future.status == "error":  # the task itself died (a killed worker, an unpicklable result)
                    error = future.exception()
                    results[i] = ClipResult(inputs[i], outputs[i], None, f"{type(error).__name__}: {error}")
                else:
                    results[i] = future.result()
                if bar is not None:
                    bar(done)
                elif callable(progress):
                    progress(done, len(inputs))
        finally:
            if bar is not None:
                bar.close()
    finally:
        for thing in owned:
            thing.close()
    return [r for r in results if r is not None]
