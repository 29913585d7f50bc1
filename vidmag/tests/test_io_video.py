"""Decode / encode with vidmag.io: round trips, odd sizes, pixel formats, frame rates, audio, bad files."""

from __future__ import annotations

import os
import stat
from fractions import Fraction

import av
import numpy as np
import pytest

from vidmag import io


def smooth_frames(n: int, height: int, width: int) -> list[np.ndarray]:
    """Moving colour gradients: content H.264 codes well, so the round-trip bound is meaningful."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    frames = []
    for t in range(n):
        r = 128 + 80 * np.sin(xx / 9 + t / 4) * np.cos(yy / 7)
        g = 110 + 60 * np.cos(xx / 13 - t / 5)
        b = 90 + 50 * np.sin(yy / 11 + t / 6)
        frames.append(np.clip(np.stack([r, g, b], axis=-1), 0, 255).round().astype(np.uint8))
    return frames


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0**2 / mse)) if mse > 0 else float("inf")


def write_clip(path, frames, fps=Fraction(30), *, codec="libx264", pix_fmt="yuv420p", in_format="rgb24"):
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = pix_fmt
        if codec == "libx264":
            stream.options = {"crf": "0"}
        for i, array in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(array, format=in_format)
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_clip_with_audio(path, frames, fps, audio_codec: str, audio_seconds: float, rate: int = 16000):
    """A clip with an H.264 video stream and a mono audio stream of the given codec and length."""
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=fps)
        video.height, video.width = frames[0].shape[:2]
        video.pix_fmt = "yuv420p"
        audio = container.add_stream(audio_codec, rate=rate)
        audio.layout = "mono"
        tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(int(audio_seconds * rate)) / rate)
        sample_format = "s16" if audio_codec.startswith("pcm_s16") else "fltp"
        if sample_format == "s16":
            tone = (tone * 32767).astype(np.int16)
        else:
            tone = tone.astype(np.float32)
        for i, array in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(array, format="rgb24")
            frame.pts = i
            for packet in video.encode(frame):
                container.mux(packet)
        for packet in video.encode():
            container.mux(packet)
        for start in range(0, tone.size, 1024):
            piece = tone[None, start : start + 1024]
            chunk = av.AudioFrame.from_ndarray(piece, format=sample_format, layout="mono")
            chunk.sample_rate = rate
            chunk.pts = start
            for packet in audio.encode(chunk):
                container.mux(packet)
        for packet in audio.encode():
            container.mux(packet)


def stream_seconds(path, kind: str) -> float:
    """Duration of the first stream of `kind` ("video" or "audio"), from its decoded frames."""
    with av.open(str(path)) as container:
        stream = getattr(container.streams, kind)[0]
        if kind == "audio":
            samples = sum(frame.samples for frame in container.decode(stream))
            return samples / stream.codec_context.sample_rate
        count = sum(1 for _ in container.decode(stream))
        return count / float(stream.average_rate)


def encode(path, frames, fps=Fraction(30), **kwargs) -> io.VideoWriter:
    height, width = frames[0].shape[:2]
    with io.VideoWriter(path, width=width, height=height, fps=fps, **kwargs) as writer:
        for frame in frames:
            writer.write(frame)
    return writer


@pytest.mark.parametrize(("height", "width"), [(48, 64), (49, 65), (48, 65), (49, 64)])
def test_round_trip_keeps_every_frame_and_the_picture(tmp_path, height, width):
    frames = smooth_frames(24, height, width)
    path = tmp_path / "out.mp4"
    writer = encode(path, frames)
    assert writer.frames_written == 24
    decoded = list(io.read_frames(path))
    assert len(decoded) == 24
    # Odd sizes are padded to even by repeating the last row / column (decision documented in io.py).
    assert decoded[0].shape == (height + height % 2, width + width % 2, 3)
    assert writer.encoded_size == (width + width % 2, height + height % 2)
    # CRF 18 with 4:2:0 chroma gives 37-46 dB on this content; a channel swap, a flip or a frame off by one
    # gives under 25 dB.
    for index, (original, back) in enumerate(zip(frames, decoded)):
        assert psnr(original, back[:height, :width]) > 35.0
        if index:
            assert psnr(frames[index - 1], back[:height, :width]) < 30.0
    if width % 2:
        edge = decoded[5][:height, width].astype(int) - decoded[5][:height, width - 1].astype(int)
        assert np.abs(edge).mean() < 2.0  # a copy of its neighbour, up to coding noise
    if height % 2:
        edge = decoded[5][height, :width].astype(int) - decoded[5][height - 1, :width].astype(int)
        assert np.abs(edge).mean() < 2.0


def test_quality_zero_is_near_lossless_and_high_crf_is_worse(tmp_path):
    frames = smooth_frames(6, 48, 64)
    encode(tmp_path / "q0.mp4", frames, quality=0)
    encode(tmp_path / "q40.mp4", frames, quality=40)
    best = min(psnr(a, b) for a, b in zip(frames, io.read_frames(tmp_path / "q0.mp4")))
    worst = min(psnr(a, b) for a, b in zip(frames, io.read_frames(tmp_path / "q40.mp4")))
    # CRF 0 is lossless in YUV; only the RGB <-> YUV 4:2:0 conversion is left.
    assert best > 40.0
    assert worst < best - 5.0
    assert os.path.getsize(tmp_path / "q40.mp4") < os.path.getsize(tmp_path / "q0.mp4")


@pytest.mark.parametrize("fps", [Fraction(30), Fraction(25), Fraction(30000, 1001), Fraction(600)])
def test_frame_rate_is_kept_exactly(tmp_path, fps):
    path = tmp_path / "rate.mp4"
    encode(path, smooth_frames(10, 32, 32), fps=fps)
    info = io.probe(path)
    assert info.fps == fps
    assert info.n_frames == 10


def test_probe_describes_a_clip(tmp_path):
    path = tmp_path / "clip.mp4"
    write_clip(path, smooth_frames(12, 48, 64), fps=Fraction(25))
    info = io.probe(path)
    assert (info.width, info.height, info.fps, info.n_frames) == (64, 48, Fraction(25), 12)
    assert info.codec == "h264"
    assert info.audio_codec is None


def test_grayscale_source_is_converted_to_rgb(tmp_path):
    # FFV1 stores 8-bit grey losslessly, so the values coming back are exactly the ones written.
    levels = [10, 50, 90, 130, 170, 210]
    frames = [np.full((48, 64), value, np.uint8) for value in levels]
    frames[2][10:20, 30:40] = 255
    path = tmp_path / "grey.mkv"
    write_clip(path, frames, codec="ffv1", pix_fmt="gray", in_format="gray")
    assert io.probe(path).pix_fmt == "gray"
    decoded = list(io.read_frames(path))
    assert len(decoded) == len(levels)
    for grey, rgb in zip(frames, decoded):
        assert rgb.dtype == np.uint8 and rgb.shape == (48, 64, 3)
        for channel in range(3):
            np.testing.assert_array_equal(rgb[..., channel], grey)


@pytest.mark.parametrize("pix_fmt", ["yuv444p", "yuv422p"])
def test_other_pixel_formats_decode_to_rgb(tmp_path, pix_fmt):
    frames = smooth_frames(8, 48, 64)
    path = tmp_path / f"{pix_fmt}.mkv"
    write_clip(path, frames, pix_fmt=pix_fmt)
    assert io.probe(path).pix_fmt == pix_fmt
    decoded = list(io.read_frames(path))
    assert len(decoded) == 8
    assert min(psnr(a, b) for a, b in zip(frames, decoded)) > 35.0


def test_frame_source_gives_a_fresh_pass_each_call(tmp_path):
    path = tmp_path / "clip.mp4"
    write_clip(path, smooth_frames(7, 32, 48))
    source = io.frame_source(path)
    first_pass = list(source())
    second_pass = list(source())
    assert len(first_pass) == len(second_pass) == 7
    for a, b in zip(first_pass, second_pass):
        np.testing.assert_array_equal(a, b)


def test_aac_audio_is_copied_and_cut_at_the_video_end(tmp_path):
    src = tmp_path / "with_aac.mp4"
    write_clip_with_audio(src, smooth_frames(30, 48, 64), Fraction(30), "aac", audio_seconds=1.0)
    assert io.probe(src).audio_codec == "aac"
    out = tmp_path / "out.mp4"
    writer = encode(out, list(io.read_frames(src)), audio_from=src)
    assert writer.has_audio
    with av.open(str(out)) as container:
        assert container.streams.audio[0].codec_context.name == "aac"
    assert stream_seconds(out, "audio") == pytest.approx(stream_seconds(out, "video"), abs=0.1)
    # Packets are copied, not re-encoded: the decoded samples are identical.
    with av.open(str(src)) as a, av.open(str(out)) as b:
        original = np.concatenate([f.to_ndarray() for f in a.decode(audio=0)], axis=1)
        copied = np.concatenate([f.to_ndarray() for f in b.decode(audio=0)], axis=1)
    n = min(original.shape[1], copied.shape[1])
    assert n > 0.9 * 16000
    np.testing.assert_array_equal(original[:, :n], copied[:, :n])

    # Half the frames: the audio is cut to about half a second too.
    half = tmp_path / "half.mp4"
    encode(half, list(io.read_frames(src))[:15], audio_from=src)
    assert stream_seconds(half, "audio") == pytest.approx(0.5, abs=0.1)


def test_audio_that_mp4_cannot_hold_is_transcoded_to_aac(tmp_path):
    src = tmp_path / "with_pcm.mkv"
    write_clip_with_audio(src, smooth_frames(25, 48, 64), Fraction(25), "pcm_s16le", audio_seconds=1.0)
    assert io.probe(src).audio_codec == "pcm_s16le"
    out = tmp_path / "out.mp4"
    writer = encode(out, list(io.read_frames(src)), fps=Fraction(25), audio_from=src)
    assert writer.has_audio
    with av.open(str(out)) as container:
        assert container.streams.audio[0].codec_context.name == "aac"
        samples = np.concatenate([f.to_ndarray() for f in container.decode(audio=0)], axis=1)[0]
    assert stream_seconds(out, "audio") == pytest.approx(1.0, abs=0.1)
    # The tone survives: its spectrum peaks at 440 Hz.
    spectrum = np.abs(np.fft.rfft(samples[2000:14000]))
    peak_hz = np.argmax(spectrum) * 16000 / 12000
    assert peak_hz == pytest.approx(440, abs=3)


def test_no_audio_source_gives_no_audio_stream(tmp_path):
    src = tmp_path / "silent.mp4"
    write_clip(src, smooth_frames(5, 32, 32))
    out = tmp_path / "out.mp4"
    assert not encode(out, list(io.read_frames(src)), audio_from=src).has_audio
    with av.open(str(out)) as container:
        assert not container.streams.audio


def test_writer_rejects_frames_of_the_wrong_shape(tmp_path):
    with io.VideoWriter(tmp_path / "x.mp4", width=64, height=48, fps=Fraction(30)) as writer:
        with pytest.raises(ValueError, match="frame"):
            writer.write(np.zeros((48, 63, 3), np.uint8))
        with pytest.raises(ValueError, match="frame"):
            writer.write(np.zeros((48, 64, 3), np.float32))
        writer.write(np.zeros((48, 64, 3), np.uint8))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="src"):
        io.probe(tmp_path / "nope.mp4")
    with pytest.raises(FileNotFoundError, match="src"):
        next(io.read_frames(tmp_path / "nope.mp4"))


def test_corrupt_file(tmp_path):
    path = tmp_path / "corrupt.mp4"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(io.VideoFormatError, match="src"):
        io.probe(path)


def test_truncated_file_is_an_error_or_a_shorter_clip(tmp_path):
    # An mp4 cut in half loses its index (moov at the end): FFmpeg cannot read it at all.
    path = tmp_path / "clip.mp4"
    write_clip(path, smooth_frames(20, 48, 64))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(io.VideoFormatError):
        io.probe(path)


def write_empty_clip(path) -> None:
    """A file with a video stream that holds no frame (and a short silent audio stream)."""
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=30)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = container.add_stream("aac", rate=16000)
        audio.layout = "mono"
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate, frame.pts = 16000, 0
        for packet in [*audio.encode(frame), *audio.encode()]:
            container.mux(packet)


def test_empty_and_audio_only_files(tmp_path):
    # Matroska keeps the frameless video track; MP4 drops a track without samples.
    empty = tmp_path / "empty.mkv"
    write_empty_clip(empty)
    with pytest.raises(io.VideoFormatError, match="no video frames"):
        io.probe(empty)
    empty_mp4 = tmp_path / "empty.mp4"
    write_empty_clip(empty_mp4)
    with pytest.raises(io.VideoFormatError, match="no video stream"):
        io.probe(empty_mp4)
    zero_bytes = tmp_path / "zero.mp4"
    zero_bytes.write_bytes(b"")
    with pytest.raises(io.VideoFormatError):
        io.probe(zero_bytes)
    audio_only = tmp_path / "tone.m4a"
    with av.open(str(audio_only), "w") as container:
        stream = container.add_stream("aac", rate=16000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate, frame.pts = 16000, 0
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    with pytest.raises(io.VideoFormatError, match="no video stream"):
        io.probe(audio_only)


def test_pad_to_even():
    frame = np.arange(3 * 5 * 3, dtype=np.uint8).reshape(3, 5, 3)
    padded = io.pad_to_even(frame)
    assert padded.shape == (4, 6, 3)
    np.testing.assert_array_equal(padded[:3, :5], frame)
    np.testing.assert_array_equal(padded[3, :5], frame[2])
    np.testing.assert_array_equal(padded[:3, 5], frame[:, 4])
    even = np.zeros((4, 6, 3), np.uint8)
    assert io.pad_to_even(even) is even


def test_check_destination(tmp_path):
    assert io.check_destination(tmp_path / "a.mp4") == str(tmp_path / "a.mp4")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        io.check_destination(tmp_path / "missing" / "a.mp4")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        io.check_destination(tmp_path / "file" / "a.mp4")
    with pytest.raises(IsADirectoryError):
        io.check_destination(tmp_path)
    with pytest.raises(ValueError, match=r"\.mp4"):
        io.check_destination(tmp_path / "a.avi", suffixes=(".mp4",))
    assert not (tmp_path / "a.mp4").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_check_destination_read_only_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(PermissionError, match="not writable"):
            io.check_destination(locked / "a.mp4")
    finally:
        locked.chmod(stat.S_IRWXU)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_atomic_output_leaves_nothing_on_failure(tmp_path, error):
    dst = tmp_path / "out.mp4"
    with pytest.raises(error):
        with io.atomic_output(dst) as tmp:
            assert os.path.dirname(tmp) == str(tmp_path)
            with open(tmp, "wb") as handle:
                handle.write(b"partial")
            raise error()
    assert os.listdir(tmp_path) == []


def test_atomic_output_keeps_an_existing_file_on_failure_and_replaces_it_on_success(tmp_path):
    dst = tmp_path / "out.mp4"
    dst.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with io.atomic_output(dst) as tmp:
            open(tmp, "wb").close()
            raise RuntimeError
    assert dst.read_bytes() == b"old"
    with io.atomic_output(dst) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(b"new")
    assert dst.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["out.mp4"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(dst).st_mode) == 0o666 & ~umask


FACE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "clips", "face.mp4")


@pytest.mark.skipif(not os.path.exists(FACE), reason="sample clip ../shared/data/clips/face.mp4 not present")
def test_real_clip_first_frames_with_its_audio(tmp_path):
    # face.mp4: H.264 528 x 592 at 30 fps with a stereo AAC track, as found in the wild.
    info = io.probe(FACE)
    assert (info.width, info.height, info.fps, info.audio_codec) == (528, 592, Fraction(30), "aac")
    frames = []
    for frame in io.read_frames(FACE):
        frames.append(frame)
        if len(frames) == 9:
            break
    out = tmp_path / "face9.mp4"
    writer = encode(out, frames, fps=info.fps, audio_from=FACE, encoder_preset="ultrafast")
    assert writer.has_audio
    assert len(list(io.read_frames(out))) == 9
    assert stream_seconds(out, "audio") == pytest.approx(0.3, abs=0.05)
    with av.open(str(out)) as container:
        assert container.streams.audio[0].codec_context.channels == 2
