"""specux on a ``dask.distributed.LocalCluster`` (2 worker processes): mel / mfcc / cqt of dask arrays equal
the in-memory results, and bench/featurise_to_zarr.py featurises a directory of WAV files into a Zarr store,
survives a worker killed mid-run, and on a rerun skips the files already complete (and only those).

One cluster for the module: starting worker processes and importing specux in them is most of the time.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

import specux

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
zarr = pytest.importorskip("zarr")
wavfile = pytest.importorskip("scipy.io.wavfile")

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))  # before the cluster starts: spawned workers take this sys.path
import featurise_to_zarr as fz  # noqa: E402

SR = 16000
PARAMS = {
    "mel": {"n_fft": 512, "hop_length": 256, "n_mels": 40},
    "mfcc": {"n_fft": 512, "hop_length": 256, "n_mels": 40, "n_mfcc": 13},
    "cqt": {"hop_length": 256, "n_bins": 36, "fmin": 110.0},
}
#: float32 results relative to their largest magnitude (see test_dask_ops.py)
TOL = 2e-6


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
    )
    with cluster, distributed.Client(cluster) as c:
        yield c


def _close(got, ref, what):
    err = float(np.abs(np.asarray(got) - ref).max()) / float(np.abs(ref).max())
    assert err <= TOL, f"{what}: relative error {err:.3g}"


def _clip(i: int, seconds: float = 1.5) -> np.ndarray:
    t = np.arange(int(SR * seconds)) / SR
    noise = np.random.default_rng(i).standard_normal(t.size)
    return (0.4 * np.sin(2 * np.pi * (150 + 90 * i) * t) + 0.05 * noise).astype(np.float32)


def test_features_on_the_cluster_equal_in_memory(client):
    y = np.stack([_clip(i) for i in range(3)])
    d = da.from_array(y, chunks=(2, (7001, 300, 16699)))
    transforms = {"mel": specux.melspectrogram, "mfcc": specux.mfcc, "cqt": specux.cqt}
    lazy = [fn(d, sr=SR, **PARAMS[name]) for name, fn in transforms.items()]
    for got, (name, fn) in zip(client.gather(client.compute(lazy)), transforms.items()):
        _close(got, fn(y, sr=SR, **PARAMS[name]), name)


@pytest.fixture
def audio_dir(tmp_path):
    for i in range(4):
        wavfile.write(str(tmp_path / f"clip{i}.wav"), SR, (_clip(i) * 32767).astype(np.int16))
    return tmp_path


def _check_store(store, paths):
    group = zarr.open_group(str(store), mode="r")
    for path in paths:
        assert fz.is_complete(store, path.stem), path.stem
        y = fz.read_mono(path)
        for name, transform in fz._TRANSFORMS.items():
            _close(group[path.stem][name][:], getattr(specux, transform)(y, sr=SR, **PARAMS[name]), name)


def test_featurise_survives_a_killed_worker_and_resumes(client, audio_dir, tmp_path):
    paths = sorted(audio_dir.glob("*.wav"))
    store = tmp_path / "features.zarr"
    # a first job stopped after two files (as if killed): a rerun does the rest, and only the rest
    first = fz.featurise(paths[:2], store, client=client, params=PARAMS, chunk_seconds=0.4)
    assert sorted(first) == ["clip0", "clip1"]  # in the order they finish
    killed = []

    def kill_a_worker(name):
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys] or list(
            client.scheduler_info()["workers"]
        )
        # killed outright (SIGKILL), on a task boundary: one file has just finished, others are running
        pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
        os.kill(pid, signal.SIGKILL)
        killed.append(busy[0])

    done = fz.featurise(
        paths, store, client=client, params=PARAMS, chunk_seconds=0.4, on_file_done=kill_a_worker
    )
    assert killed and sorted(done) == ["clip2", "clip3"]
    _check_store(store, paths)
    # a group left half-written (no completion marker) is redone; complete ones are skipped
    zarr.open_group(str(store), mode="a")["clip1"].attrs["complete"] = False
    assert fz.featurise(paths, store, client=client, params=PARAMS, chunk_seconds=0.4) == ["clip1"]
    assert fz.featurise(paths, store, client=client, params=PARAMS) == []
    _check_store(store, paths[1:2])
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed one


def test_featurise_without_a_client(audio_dir, tmp_path):
    paths = sorted(audio_dir.glob("*.wav"))[:2]
    store = tmp_path / "local.zarr"
    assert fz.featurise(paths, store, params=PARAMS, chunk_seconds=0.3) == ["clip0", "clip1"]
    _check_store(store, paths)
    with pytest.raises(ValueError, match="share the name"):
        fz.featurise([paths[0], tmp_path / "other" / paths[0].name], tmp_path / "x.zarr", params=PARAMS)
