"""Featurising audio files (mel, mfcc, cqt into a Zarr store) on a Dask LocalCluster against a plain loop.

The files are generated here (WAV, 22050 Hz, tones and noise) in a temporary directory. The plain loop reads
each file, computes the three features with specux on numpy and writes them to a Zarr store. The cluster
runs bench/featurise_to_zarr.py (specux on dask arrays, one task per time chunk and transform) on
``LocalCluster(n_workers=w, threads_per_worker=1, processes=True)`` for each ``w`` of ``--workers``, after an
untimed warm-up that starts the workers and imports specux in them. Printed: seconds, the speed-up over the
loop and the speed-up per worker, and the largest difference between the cluster's features and the loop's
(relative to each feature's largest magnitude). ``--out PATH`` (or ``--json PATH``) writes the same, with the
machine, the library versions and the command.

    python bench/specux_dask.py            # 24 files of 20 s, 1 and 2 workers
    python bench/specux_dask.py --quick    # 4 files of 2 s: a smoke run
    python bench/specux_dask.py --out bench/results/specux_dask.json
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _common and featurise_to_zarr, also for workers
import _common
import featurise_to_zarr as fz

import specux

SR = 22050
#: bench/featurise_to_zarr.py itself: ``client.upload_file`` re-imports the module in this process (the
#: LocalCluster's scheduler runs here) from the scheduler's scratch directory, which goes with the cluster
FZ_FILE = Path(fz.__file__).resolve()


def _featurise_module():
    """featurise_to_zarr loaded from bench/ for a new cluster (whose upload_file reads the module's file)."""
    if Path(fz.__file__).resolve() == FZ_FILE:
        return fz
    spec = importlib.util.spec_from_file_location("featurise_to_zarr", FZ_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_files(directory: Path, count: int, seconds: float) -> list[Path]:
    """``count`` WAV files of ``seconds`` each: a few tones and a little noise, 16-bit."""
    from scipy.io import wavfile

    t = np.arange(int(SR * seconds)) / SR
    paths = []
    for i in range(count):
        rng = np.random.default_rng(i)
        y = sum(0.2 * np.sin(2 * np.pi * f * t) for f in rng.uniform(80, 4000, size=3))
        y = y + 0.02 * rng.standard_normal(t.size)
        path = directory / f"clip{i:04d}.wav"
        wavfile.write(str(path), SR, (np.clip(y, -1, 1) * 32767).astype(np.int16))
        paths.append(path)
    return paths


def plain_loop(paths: Sequence[Path], store: Path, params: dict) -> None:
    """The baseline: file by file, specux on numpy, the same arrays written to a Zarr store."""
    import zarr

    root = zarr.open_group(str(store), mode="w")
    for path in paths:
        y = fz.read_mono(path)
        group = root.create_group(path.stem)
        for name, kw in params.items():
            group.create_array(name, data=getattr(specux, fz._TRANSFORMS[name])(y, sr=SR, **kw))
        group.attrs["complete"] = True


def largest_difference(store_a: Path, store_b: Path, paths: Sequence[Path], params: dict) -> float:
    import zarr

    a, b = zarr.open_group(str(store_a), mode="r"), zarr.open_group(str(store_b), mode="r")
    worst = 0.0
    for path in paths:
        for name in params:
            x, ref = a[path.stem][name][:], b[path.stem][name][:]
            worst = max(worst, float(np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-30)))
    return worst


def run(count: int, seconds: float, workers: Sequence[int], chunk_seconds: float) -> dict:
    from dask.distributed import Client, LocalCluster

    params = fz.DEFAULT_FEATURES
    where = _common.machine()  # before the runs: its load average is the one they started under
    with tempfile.TemporaryDirectory(prefix="specux_dask_") as tmp:
        tmp = Path(tmp)
        (tmp / "audio").mkdir()
        paths = make_files(tmp / "audio", count, seconds)
        plain_loop(paths[:1], tmp / "warm.zarr", params)  # first-call costs (filter banks, FFT plans) untimed
        t0 = time.perf_counter()
        plain_loop(paths, tmp / "loop.zarr", params)
        loop_s = time.perf_counter() - t0
        rows = []
        for w in workers:
            cluster = LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=":0")
            with cluster, Client(cluster) as client:
                featurise = _featurise_module().featurise
                featurise(paths[:w], tmp / f"warm{w}.zarr", client=client, chunk_seconds=chunk_seconds)
                t0 = time.perf_counter()
                featurise(paths, tmp / f"cluster{w}.zarr", client=client, chunk_seconds=chunk_seconds)
                seconds_w = time.perf_counter() - t0
            err = largest_difference(tmp / f"cluster{w}.zarr", tmp / "loop.zarr", paths, params)
            speedup = loop_s / seconds_w
            rows.append(
                {
                    "workers": w,
                    "seconds": seconds_w,
                    "speedup": speedup,
                    "per_worker": speedup / w,
                    "max_rel_err": err,
                }
            )
    return {
        "files": count,
        "seconds_each": seconds,
        "chunk_seconds": chunk_seconds,
        "features": params,
        "loop_seconds": loop_s,
        "cluster": rows,
        "machine": _common.finish_machine(where),
        "versions": _common.versions(["specux", "dask", "distributed", "zarr", "numpy"]),
    }


def table(result: dict) -> str:
    """The markdown table of a run (what :func:`run` returns): one row per cluster size."""
    header = ("workers", "seconds", "speed-up", "speed-up per worker", "max rel. diff")
    rows = [
        (
            r["workers"],
            f"{r['seconds']:.2f}",
            f"{r['speedup']:.2f}x",
            f"{r['per_worker']:.2f}x",
            f"{r['max_rel_err']:.1e}",
        )
        for r in result["cluster"]
    ]
    return _common.markdown_table(header, rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 files of 2 s (a smoke run)")
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None, help="length of each file")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--chunk-seconds", type=float, default=None, help="time chunk of each file's array")
    parser.add_argument("--out", "--json", dest="out", type=Path, default=None,
                        help="write the results as JSON to this path")
    args = parser.parse_args(argv)
    count = (4 if args.quick else 24) if args.files is None else args.files
    seconds = (2.0 if args.quick else 20.0) if args.seconds is None else args.seconds
    chunk = (1.0 if args.quick else 10.0) if args.chunk_seconds is None else args.chunk_seconds
    if count < 1 or seconds <= 0 or chunk <= 0 or min(args.workers) < 1:
        parser.error("--files, --seconds, --chunk-seconds and --workers must be positive")
    result = run(count, seconds, args.workers, chunk)
    loop = result["loop_seconds"]
    print(f"{count} files of {seconds:g} s (mel, mfcc, cqt into Zarr); plain loop {loop:.2f} s")
    print(table(result))
    if args.out is not None:
        result["command"] = _common.command_line(__file__, argv)
        print("wrote", _common.write_json(args.out, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
