"""Featurise a directory of audio files (mel, mfcc, cqt) into a Zarr store on a Dask cluster, resumably.

Each file is read lazily as a dask array chunked along time, its features are specux transforms of that
array (lazy graphs whose chunks overlap by what each transform needs), and the features of one file are
written as one Zarr group. A group is marked complete (its ``complete`` attribute) only after all of its
arrays are written, so a rerun skips the files already complete and redoes any half-written one: a killed
worker's tasks are rerun by Dask on the others, and a killed job is finished by running it again.

Run it on a local cluster::

    python bench/featurise_to_zarr.py AUDIO_DIR features.zarr --workers 2

or on an existing cluster with ``--scheduler tcp://host:8786``. Needs ``specux[dask]`` and ``zarr``; reads
16-bit or float WAV files (``scipy.io.wavfile``).
"""

from __future__ import annotations

import argparse
import sys
import wave
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np

import specux

#: the features and their specux arguments (besides ``sr``); ``mfcc`` and ``melspectrogram`` share the stft
DEFAULT_FEATURES: dict[str, dict[str, Any]] = {
    "mel": {"n_fft": 2048, "hop_length": 512, "n_mels": 128},
    "mfcc": {"n_fft": 2048, "hop_length": 512, "n_mels": 128, "n_mfcc": 20},
    "cqt": {"hop_length": 512, "n_bins": 84},
}
_TRANSFORMS = {"mel": "melspectrogram", "mfcc": "mfcc", "cqt": "cqt"}


def wav_info(path: str | Path) -> tuple[int, int, int]:
    """``(sample rate, frames, channels)`` of a WAV file, from its header (nothing else is read)."""
    try:
        with wave.open(str(path), "rb") as w:
            return w.getframerate(), w.getnframes(), w.getnchannels()
    except wave.Error:  # float WAV (format 3): the wave module reads only PCM headers
        from scipy.io import wavfile

        sr, data = wavfile.read(str(path), mmap=True)
        return sr, data.shape[0], 1 if data.ndim == 1 else data.shape[1]


def read_mono(path: str | Path) -> np.ndarray:
    """The file's samples as float32 mono in [-1, 1] (channels averaged)."""
    from scipy.io import wavfile

    _, data = wavfile.read(str(path))
    if data.dtype.kind == "i":
        data = data / float(np.iinfo(data.dtype).max + 1)
    elif data.dtype.kind == "u":  # 8-bit WAV is unsigned
        data = (data.astype(np.float64) - 128.0) / 128.0
    if data.ndim == 2:
        data = data.mean(axis=1)
    return np.ascontiguousarray(data, dtype=np.float32)


def lazy_signal(path: str | Path, chunk: int) -> tuple[da.Array, int]:
    """``(signal, sr)``: the file as a lazy float32 dask array of ``chunk``-sample chunks."""
    sr, frames, _ = wav_info(path)
    y = da.from_delayed(dask.delayed(read_mono)(str(path)), shape=(frames,), dtype=np.float32)
    return y.rechunk(chunk), sr


def features(y: da.Array, sr: int, params: dict[str, dict[str, Any]]) -> dict[str, da.Array]:
    """The specux features of a lazy signal (lazy too)."""
    return {name: getattr(specux, _TRANSFORMS[name])(y, sr=sr, **kw) for name, kw in params.items()}


def _write(store: str, key: str, value: np.ndarray) -> str:
    """Write ``value`` as the array ``key`` of the Zarr store (overwriting a half-written one); runs on a
    worker."""
    import zarr

    name, feature = key.split("/")
    zarr.open_group(store, mode="a")[name].create_array(feature, data=value, overwrite=True)
    return key


def is_complete(store: str | Path, name: str) -> bool:
    """Whether the store holds the complete group of file ``name``."""
    import zarr

    try:
        group = zarr.open_group(str(store), mode="r")
        return name in group and bool(group[name].attrs.get("complete", False))
    except FileNotFoundError:
        return False


def _mark_complete(store: str, name: str, sr: int, path: str) -> None:
    import zarr

    group = zarr.open_group(store, mode="a")
    group[name].attrs.update({"complete": True, "sr": sr, "source": path})


def featurise(
    paths: Iterable[str | Path],
    store: str | Path,
    *,
    client: Any = None,
    params: dict[str, dict[str, Any]] | None = None,
    chunk_seconds: float = 10.0,
    on_file_done: Any = None,
) -> list[str]:
    """Featurise ``paths`` into the Zarr ``store``; return the names (file stems) computed by this call, in
    the order they were completed.

    Parameters
    ----------
    paths : iterable of path
        WAV files; each becomes the group ``<stem>`` of the store, with one array per feature.
    store : path
        The Zarr store (a directory), created if absent. Groups already complete are skipped.
    client : dask.distributed.Client or None
        Where to compute. ``None``: dask's current scheduler, file by file.
    params : dict or None
        Feature name (``"mel"``, ``"mfcc"``, ``"cqt"``) to specux arguments.
        ``None``: :data:`DEFAULT_FEATURES`.
    chunk_seconds : float
        Length of the signal's chunks along time (each chunk one task of each transform).
    on_file_done : callable or None
        Called with each name as its group is marked complete (progress, or a test's hook).
    """
    import zarr

    store = str(store)
    paths = sorted(map(Path, paths))
    stems = [p.stem for p in paths]
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice:  # before anything is written
        raise ValueError(f"featurise: files share the name(s) {twice}; the store keys groups by file name")
    root = zarr.open_group(store, mode="a")  # the store and each file's group exist before any worker writes
    params = DEFAULT_FEATURES if params is None else params
    todo = []
    for path in paths:
        if is_complete(store, path.stem):
            continue
        root.require_group(path.stem)
        sr, _, _ = wav_info(path)
        y, sr = lazy_signal(path, max(1, int(chunk_seconds * sr)))
        feats = features(y, sr, params)
        writes = [dask.delayed(_write)(store, f"{path.stem}/{k}", v.rechunk(-1)) for k, v in feats.items()]
        todo.append((path.stem, sr, str(path), writes))
    done = []
    if client is None:
        for name, sr, path, writes in todo:
            dask.compute(*writes)
            _mark_complete(store, name, sr, path)
            done.append(name)
            if on_file_done is not None:
                on_file_done(name)
        return done
    from dask.distributed import as_completed

    if __name__ != "__main__":
        # this file is no installed module: the workers get a copy (of an existing cluster too), so that they
        # need only specux and zarr installed (run as a script, its functions travel by value anyway)
        client.upload_file(__file__)
    futures = {
        client.compute(dask.delayed(list)(writes)): (name, sr, path) for name, sr, path, writes in todo
    }
    for future in as_completed(futures):
        future.result()  # raises the file's error, if any
        name, sr, path = futures[future]
        _mark_complete(store, name, sr, path)
        done.append(name)
        if on_file_done is not None:
            on_file_done(name)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("audio_dir", type=Path)
    parser.add_argument("store", type=Path)
    parser.add_argument("--scheduler", help="address of an existing cluster (tcp://host:8786)")
    parser.add_argument("--workers", type=int, default=2, help="local cluster size without --scheduler")
    parser.add_argument("--chunk-seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    from dask.distributed import Client, LocalCluster

    paths = sorted(args.audio_dir.glob("*.wav"))
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        client = Client(LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True))
    with client:
        done = featurise(
            paths,
            args.store,
            client=client,
            chunk_seconds=args.chunk_seconds,
            on_file_done=lambda name: print("done", name, flush=True),
        )
    print(f"{len(done)} file(s) featurised, {len(paths) - len(done)} already complete in {args.store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
