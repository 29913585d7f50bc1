"""Paths as users give them (bytes, None, /proc, a pipe); errors name what was given."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction

import av
import numpy as np
import pytest

import vidmag
from vidmag import io, pipelines
from vidmag.cli import main

IIR = {"pipeline": "laplacian_iir", "alpha": 10.0, "lambda_c": 16.0, "r1": 0.4, "r2": 0.05,
       "chrom_attenuation": 0.1}


def clip_bytes(tmp_path, n=12, height=32, width=48) -> bytes:
    path = tmp_path / "made.mkv"
    yy, xx = np.mgrid[0:height, 0:width]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for t in range(n):
            grey = (128 + 60 * np.sin((xx + 0.5 * np.sin(t / 2)) / 6) * np.cos(yy / 8)).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(np.repeat(grey[..., None], 3, axis=2), format="rgb24")
            frame.pts = t
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    data = path.read_bytes()
    path.unlink()
    return data


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "clip.mkv"
    path.write_bytes(clip_bytes(tmp_path))
    return path


def test_bytes_paths_are_paths(src, tmp_path):
    out = tmp_path / "out.mp4"
    result = vidmag.magnify_file(os.fsencode(src), os.fsencode(out), backend="cpu", **IIR)
    assert result.output == str(out) and isinstance(result.output, str)
    assert result.frames == 12
    assert io.probe(os.fsencode(out)).n_frames == 12
    assert len(list(io.read_frames(os.fsencode(out)))) == 12
    assert io.check_destination(os.fsencode(out), suffixes=(".mp4",)) == str(out)


@pytest.mark.parametrize("bad", [None, 3, ["clip.mp4"], np.zeros(3)])
def test_src_and_dst_that_are_not_paths_are_named(src, tmp_path, bad):
    with pytest.raises(TypeError, match=r"^src must be a path \(str, bytes or os.PathLike\)"):
        vidmag.magnify_file(bad, tmp_path / "out.mp4", backend="cpu", **IIR)
    with pytest.raises(TypeError, match=r"^dst must be a path"):
        vidmag.magnify_file(src, bad, backend="cpu", **IIR)
    assert sorted(os.listdir(tmp_path)) == ["clip.mkv"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_unwritable_system_directory_names_the_given_path(src, tmp_path, capsys):
    # /proc passes the access test for root, and creating a file there fails: the message used to give the
    # name of the temporary file instead of the destination.
    with pytest.raises(OSError) as caught:
        vidmag.magnify_file(src, "/proc/x.mp4", backend="cpu", **IIR)
    message = str(caught.value)
    assert "'/proc" in message and ".tmp" not in message and "dst" in message
    code = main(["magnify", str(src), "-o", "/proc/x.mp4", "--preset", "baby", "--backend", "cpu", "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "'/proc" in err and ".tmp" not in err and len(err.strip().splitlines()) == 1


def test_atomic_output_errors_name_the_destination(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.mp4.abcd.tmp.mp4"))

    monkeypatch.setattr(io.tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as caught, io.atomic_output(tmp_path / "out.mp4"):
        pass
    assert str(tmp_path / "out.mp4") in str(caught.value) and ".tmp" not in str(caught.value)
    assert caught.value.errno == 13


def test_run_says_what_a_source_must_be(clip):
    with pytest.raises(TypeError, match=r"source must be a callable .*vidmag\.magnify"):
        pipelines.run(clip, fs=30.0, **IIR)
    with pytest.raises(TypeError, match="source"):
        pipelines.run(lambda: 5, fs=30.0, **IIR)


# Run in a child process: opening a FIFO that no one writes blocks, so a regression (a probe that opens it)
# must end in a timeout of the child, not hang the test session.
FIFO_CALLS = """
import sys
import vidmag
from vidmag import io
fifo, out = sys.argv[1], sys.argv[2]
iir = dict(pipeline="laplacian_iir", alpha=10.0, lambda_c=16.0, r1=0.4, r2=0.05, chrom_attenuation=0.1)
for call in (
    lambda: vidmag.magnify_file(fifo, out, backend="cpu", **iir),
    lambda: vidmag.magnify_file(fifo, out, preset="face", backend="cpu"),
    lambda: io.probe(fifo),
    lambda: io.frame_source(fifo),
):
    try:
        call()
        print("accepted")
    except ValueError as error:
        print("refused:", error)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_is_refused_up_front_without_opening_it(tmp_path):
    fifo = tmp_path / "clip.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.mp4"
    done = subprocess.run([sys.executable, "-c", FIFO_CALLS, str(fifo), str(out)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith("refused: ") for line in lines), done.stdout
    assert all("is a pipe" in line and "can be read only once" in line for line in lines)
    done = subprocess.run([sys.executable, "-m", "vidmag.cli", "magnify", str(fifo), "-o", str(out),
                           "--preset", "baby"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "is a pipe" in done.stderr and done.stderr.count("\n") == 1
    assert os.listdir(tmp_path) == ["clip.fifo"]


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd")
def test_process_substitution_path_is_refused_with_its_reason(tmp_path, capsys):
    # What a shell gives for <(cat clip.mkv): /dev/fd/N, the read end of a pipe.
    data = clip_bytes(tmp_path, n=4, height=16, width=16)
    assert len(data) < 60000  # fits in the pipe's buffer, so no writer has to wait
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
        os.close(write_end)
        path = f"/dev/fd/{read_end}"
        with pytest.raises(ValueError, match="is a pipe"):
            vidmag.magnify_file(path, tmp_path / "out.mp4", backend="cpu", **IIR)
        code = main(["magnify", path, "-o", str(tmp_path / "out.mp4"), "--preset", "baby", "-q"])
        err = capsys.readouterr().err
        assert code == 2 and "is a pipe" in err and "save it to a file" in err
    finally:
        os.close(read_end)
    assert os.listdir(tmp_path) == []


def test_a_pipe_may_still_be_read_once(tmp_path):
    # read_frames makes one pass, which a pipe allows.
    data = clip_bytes(tmp_path, n=4, height=16, width=16)
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
        os.close(write_end)
        frames = list(io.read_frames(f"/dev/fd/{read_end}"))
    finally:
        os.close(read_end)
    assert len(frames) == 4 and frames[0].shape == (16, 16, 3)


@pytest.mark.skipif(sys.platform != "linux", reason="character device path is Linux's")
def test_a_device_is_refused():
    with pytest.raises(ValueError, match="is a device"):
        io.probe("/dev/null")
