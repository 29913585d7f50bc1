"""vidmag.magnify_files / vidmag magnify-many on a dask.distributed LocalCluster (2 workers, 1 thread)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from vidmag import io
from vidmag.cli import main
from vidmag.many import magnify_files, output_paths

distributed = pytest.importorskip("dask.distributed")

IIR = dict(pipeline="laplacian_iir", alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5)
IIR_ARGS = ["--pipeline", "laplacian_iir", "--alpha", "10", "--lambda-c", "8", "--r1", "0.4", "--r2", "0.05",
            "--chrom-attenuation", "0.5", "--backend", "cpu"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture
def clips(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for name in ("one", "two"):
        path = str(tmp_path / f"{name}.mp4")
        with io.VideoWriter(path, width=64, height=48, fps=30) as writer:
            for _ in range(20):
                writer.write(rng.integers(60, 200, (48, 64, 3), dtype=np.uint8))
        paths.append(path)
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8)
    paths.insert(1, str(corrupt))
    return paths


def _written(directory):
    return sorted(os.listdir(directory))


def test_two_written_one_reported(tmp_path, clips, client):
    out = tmp_path / "out"
    seen = []
    results = magnify_files(clips, out, client=client, backend="cpu", audio=False,
                            progress=lambda done, total: seen.append((done, total)), **IIR)
    assert [r.input for r in results] == clips
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].result is None and "corrupt.mp4" in results[1].error
    assert results[0].result.frames == 20 and results[2].result.frames == 20
    assert _written(out) == ["one-magnified.mp4", "two-magnified.mp4"]  # no temporary of the failed clip
    assert seen[-1] == (3, 3) and len(seen) == 3
    assert len(list(io.read_frames(results[0].output))) == 20


def test_cli_exit_1_and_one_line_per_failure(tmp_path, clips, client, capsys):
    out = tmp_path / "cli"
    status = main(["magnify-many", *clips, "--out-dir", str(out), "--scheduler", client.scheduler.address,
                   "--suffix=-x", "--no-audio", *IIR_ARGS])
    captured = capsys.readouterr()
    assert status == 1
    failures = [line for line in captured.err.splitlines() if "failed:" in line]
    assert len(failures) == 1 and "corrupt.mp4" in failures[0]
    assert _written(out) == ["one-x.mp4", "two-x.mp4"]
    assert "2 of 3 clips" in captured.out


def test_cli_local_cluster_all_good(tmp_path, clips, capsys):
    out = tmp_path / "local"
    good = [clips[0], clips[2]]
    assert main(["magnify-many", *good, "--out-dir", str(out), "--workers", "2", "-q", "--no-audio",
                 *IIR_ARGS]) == 0
    assert _written(out) == ["one-magnified.mp4", "two-magnified.mp4"]


def test_cli_max_frames(tmp_path, clips, client, capsys):
    out = tmp_path / "short"
    assert main(["magnify-many", clips[0], clips[2], "--out-dir", str(out), "--scheduler",
                 client.scheduler.address, "--max-frames", "6", "--no-audio", *IIR_ARGS]) == 0
    # each clip's line starts "6 frames, " (a bare "6 frames" also matched a speed such as "116 frames/s")
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("6 frames, ") for line in lines) == 2, lines
    assert [io.probe(out / name).n_frames for name in _written(out)] == [6, 6]


@pytest.mark.parametrize("extra, message", [
    ([], "--preset NAME or --pipeline"),
    (["--pipeline", "laplacian_iir", "--alpha", "-1", "--lambda-c", "8", "--r1", "0.4", "--r2", "0.05",
      "--chrom-attenuation", "0.5"], "alpha"),
    ([*IIR_ARGS, "--workers", "0"], "--workers"),
    ([*IIR_ARGS, "--memory", "lots"], "memory"),
    ([*IIR_ARGS, "--max-frames", "0"], "max_frames"),
    (["--pipeline", "laplacian_iir"], "missing"),
])
def test_bad_options_exit_2(tmp_path, clips, capsys, extra, message):
    out = tmp_path / "bad"
    assert main(["magnify-many", clips[0], "--out-dir", str(out), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_refuses_clashing_outputs(tmp_path, clips, capsys):
    sub = tmp_path / "sub"
    sub.mkdir()
    twin = sub / "one.mp4"
    twin.write_bytes(open(clips[0], "rb").read())
    assert main(["magnify-many", clips[0], str(twin), "--out-dir", str(tmp_path / "o"), *IIR_ARGS]) == 2
    assert "both map to" in capsys.readouterr().err
    # an output that is an input: same directory, empty suffix
    with pytest.raises(ValueError, match=r"src|same"):
        output_paths([clips[0]], str(tmp_path), suffix="")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("options", "error", "name"), [
    ({"side_by_side": "no"}, TypeError, "side_by_side"),
    ({"audio": "no"}, TypeError, "audio"),
    ({"audio": 0}, TypeError, "audio"),
    ({"quality": "18"}, TypeError, "quality"),
    ({"quality": 99}, ValueError, "quality"),
    ({"encoder_preset": "fastest"}, ValueError, "encoder_preset"),
    ({"backend": "gpu"}, ValueError, "backend"),
    ({"fs": "30"}, TypeError, "fs"),
    ({"max_frames": 8.5}, ValueError, "max_frames"),
    ({"workers": 0}, ValueError, "workers"),
    ({"workers": "2"}, TypeError, "workers"),
    ({"progress": "yes"}, TypeError, "progress"),
], ids=lambda v: repr(v) if not isinstance(v, type) else v.__name__)
def test_bad_file_options_are_refused_before_any_clip_runs(tmp_path, clips, options, error, name):
    # issue 19 items 3-5: every option magnify_file would refuse is refused here up front (no cluster, no
    # directory), not once per clip as each clip's error
    out = tmp_path / "out"
    with pytest.raises(error, match=name):
        magnify_files(clips, out, **{"backend": "cpu", "audio": False, "progress": False, **IIR, **options})
    assert not out.exists()


def test_numpy_bools_and_numbers_are_taken(tmp_path, clips, client):
    # the one rule: numpy bools for the flags, numpy and integral numbers for the numbers
    results = magnify_files(clips[:1], tmp_path / "out", client=client, backend="cpu", progress=np.False_,
                            audio=np.False_, side_by_side=np.True_, quality=np.int64(20), max_frames=6.0,
                            **IIR)
    assert results[0].ok and results[0].result.frames == 6 and results[0].result.width == 128


def test_without_dask_the_error_names_the_extra_and_creates_nothing(tmp_path, clips, monkeypatch, capsys):
    # issue 19, Installing: the install hint names the extra under our own name; out_dir is not made first
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    out = tmp_path / "out"
    with pytest.raises(ImportError, match=r'dask\.distributed.*pip install -e "\./vidmag\[dask\]"'):
        magnify_files(clips, out, backend="cpu", progress=False, **IIR)
    assert main(["magnify-many", *clips, "--out-dir", str(out), *IIR_ARGS]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "vidmag[dask]" in err
    assert not out.exists()


def test_output_paths_take_bytes_and_path_like(tmp_path, clips):
    # issue 19 item 6: a bytes path is a path ("Can't mix strings and bytes in path components" before)
    want = output_paths(clips[:1], str(tmp_path / "o"))
    assert output_paths([os.fsencode(clips[0])], os.fsencode(tmp_path / "o")) == want
    assert output_paths([tmp_path / os.path.basename(clips[0])], tmp_path / "o") == want
    with pytest.raises(TypeError, match=r"^out_dir must be a path"):
        output_paths(clips[:1], None)
