"""An output that is the input file (any spelling, a symbolic or a hard link) is refused before any write."""

from __future__ import annotations

import os
from fractions import Fraction

import av
import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.cli import main

IIR = {"pipeline": "laplacian_iir", "alpha": 10.0, "lambda_c": 16.0, "r1": 0.4, "r2": 0.05,
       "chrom_attenuation": 0.1}


def write_clip(path, n=12, height=32, width=48):
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
    return path


@pytest.fixture
def src(tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    return write_clip(directory / "clip.mp4")


def listing(directory):
    return sorted(os.listdir(directory))


def spellings(src, tmp_path):
    """Ways of naming the source file as the destination, each made in `tmp_path`."""
    symlink = tmp_path / "in" / "link.mp4"
    symlink.symlink_to(src)
    hardlink = tmp_path / "in" / "hard.mp4"
    os.link(src, hardlink)
    alias = tmp_path / "alias"
    alias.symlink_to(tmp_path / "in", target_is_directory=True)
    return {
        "same": src,
        "str": str(src),
        "dotdot": str(tmp_path / "in" / "." / ".." / "in" / "clip.mp4"),
        "symlink": symlink,
        "hardlink": hardlink,
        "directory-symlink": alias / "clip.mp4",
        "bytes": os.fsencode(str(src)),
    }


@pytest.mark.parametrize(
    "spelling", ["same", "str", "dotdot", "symlink", "hardlink", "directory-symlink", "bytes"]
)
@pytest.mark.parametrize("preset", [None, "face"])  # face: an ideal pipeline, which reads the input twice
def test_magnify_file_refuses_its_own_input(src, tmp_path, spelling, preset):
    dst = spellings(src, tmp_path)[spelling]
    original = src.read_bytes()
    before = listing(tmp_path / "in")
    kwargs = {"preset": preset} if preset else dict(IIR)
    with pytest.raises(ValueError, match=r"dst: the output \(-o/--output\).*is the input file"):
        vidmag.magnify_file(src, dst, backend="cpu", **kwargs)
    assert src.read_bytes() == original
    assert listing(tmp_path / "in") == before  # no temporary left, the links untouched
    assert os.path.islink(tmp_path / "in" / "link.mp4")


def test_relative_spelling_from_another_directory(src, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "in")
    original = src.read_bytes()
    with pytest.raises(ValueError, match="is the input file"):
        vidmag.magnify_file("clip.mp4", "./../in/clip.mp4", backend="cpu", **IIR)
    assert src.read_bytes() == original


def test_a_different_file_of_the_same_name_is_written(src, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    original = src.read_bytes()
    result = vidmag.magnify_file(src, out_dir / "clip.mp4", backend="cpu", **IIR)
    assert result.frames == 12
    assert src.read_bytes() == original
    # A copy of the input (another inode) may be replaced: it is not the input.
    copy = out_dir / "copy.mp4"
    copy.write_bytes(original)
    vidmag.magnify_file(src, copy, backend="cpu", **IIR)
    assert copy.read_bytes() != original and src.read_bytes() == original


def test_check_not_source():
    assert io.check_not_source("/no/such/source.mp4", "/no/such/source.mp4") is None  # nothing to lose


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink", "hardlink"])
def test_command_exits_2_and_keeps_the_input(src, tmp_path, capsys, spelling):
    dst = spellings(src, tmp_path)[spelling]
    original = src.read_bytes()
    before = listing(tmp_path / "in")
    code = main(["magnify", str(src), "-o", os.fspath(dst), "--preset", "baby", "--backend", "cpu", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "-o" in lines[0] and "is the input file" in lines[0], err
    assert "Traceback" not in err
    assert src.read_bytes() == original
    assert listing(tmp_path / "in") == before
