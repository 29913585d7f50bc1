"""A still image given as a video is refused: FFmpeg reads it as one frame at an invented 25 fps."""

from __future__ import annotations

import os
import shutil
from fractions import Fraction

import av
import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.cli import main

IIR = {"pipeline": "laplacian_iir", "alpha": 10.0, "lambda_c": 16.0, "r1": 0.4, "r2": 0.05,
       "chrom_attenuation": 0.1}


def picture(height=48, width=64) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width]
    grey = (128 + 60 * np.sin(xx / 6) * np.cos(yy / 8)).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=2)


def write_image(path, codec: str, pix_fmt: str):
    """One picture through FFmpeg's image muxer, as an image editor would save it."""
    with av.open(str(path), "w", format="image2") as container:
        stream = container.add_stream(codec, rate=1)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        frame = av.VideoFrame.from_ndarray(picture(), format="rgb24")
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    return path


def write_frames_of(path, codec: str, pix_fmt: str, n: int):
    """`n` pictures of an image codec in a video container (QuickTime), at 30 fps."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=Fraction(30))
        stream.width, stream.height, stream.pix_fmt = 64, 48, pix_fmt
        for t in range(n):
            flicker = (picture() + t % 3).astype(np.uint8)  # a small change; motion of pixels would saturate
            frame = av.VideoFrame.from_ndarray(flicker, format="rgb24")
            frame.pts = t
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


@pytest.fixture(params=[("png", "rgb24", ".png"), ("mjpeg", "yuvj420p", ".jpg")], ids=["png", "jpeg"])
def image(request, tmp_path):
    codec, pix_fmt, suffix = request.param
    directory = tmp_path / "in"
    directory.mkdir()
    return write_image(directory / f"still{suffix}", codec, pix_fmt)


def test_probe_refuses_a_still_image(image):
    assert image.read_bytes()[:4] == b"\x89PNG" or image.read_bytes()[:2] == b"\xff\xd8"  # PNG, JPEG
    with pytest.raises(io.VideoFormatError, match=r"is a still image.*not a video"):
        io.probe(image)


def test_magnify_file_refuses_a_still_image_and_writes_nothing(image, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(io.VideoFormatError, match="still image"):
        vidmag.magnify_file(image, out_dir / "out.mp4", backend="cpu", **IIR)
    # Named like a video, it is still an image: the content decides, not the name.
    disguised = shutil.copy(image, tmp_path / "in" / "clip.mp4")
    with pytest.raises(io.VideoFormatError, match="still image"):
        vidmag.magnify_file(disguised, out_dir / "out.mp4", backend="cpu", **IIR)
    assert os.listdir(out_dir) == []


def test_command_exits_1_with_one_line(image, tmp_path, capsys):
    code = main(["magnify", str(image), "-o", str(tmp_path / "out.mp4"), "--preset", "baby", "-q"])
    err = capsys.readouterr().err
    assert code == 1 and "still image" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.mp4").exists()


def test_one_picture_of_an_image_codec_in_a_video_container_is_refused(tmp_path):
    one = write_frames_of(tmp_path / "one.mov", "png", "rgb24", 1)
    with pytest.raises(io.VideoFormatError, match="still image"):
        io.probe(one)


@pytest.mark.parametrize(("codec", "pix_fmt"), [("png", "rgb24"), ("mjpeg", "yuvj420p")])
def test_a_video_of_an_image_codec_is_a_video(tmp_path, codec, pix_fmt):
    # Motion JPEG and PNG video: many pictures at a real frame rate.
    clip = write_frames_of(tmp_path / "clip.mov", codec, pix_fmt, 12)
    info = io.probe(clip)
    assert info.codec == codec and info.fps == Fraction(30)
    result = vidmag.magnify_file(clip, tmp_path / "out.mp4", backend="cpu", **IIR)
    assert result.frames == 12
