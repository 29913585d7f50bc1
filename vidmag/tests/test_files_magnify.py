"""vidmag.magnify_file: whole files in, H.264 out; every failure leaves nothing behind."""

from __future__ import annotations

import os
from fractions import Fraction

import av
import numpy as np
import pytest

import vidmag
from vidmag import io
from vidmag.backend import BackendUnavailableError

IIR = {"pipeline": "laplacian_iir", "alpha": 10.0, "lambda_c": 16.0, "r1": 0.4, "r2": 0.05,
       "chrom_attenuation": 0.1}


def moving_frames(n: int, height: int, width: int, seed: int = 0) -> np.ndarray:
    """Smooth moving texture with a small flicker: something for every pipeline to amplify."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    phase = rng.uniform(0, 2 * np.pi, 3)
    frames = np.empty((n, height, width, 3), np.uint8)
    for t in range(n):
        shift = 0.5 * np.sin(2 * np.pi * t / 12)
        flicker = 2.0 * np.sin(2 * np.pi * t / 8)
        channels = [
            120 + 60 * np.sin((xx + shift) / (5 + 2 * c) + phase[c]) * np.cos(yy / (7 + c)) + flicker
            for c in range(3)
        ]
        frames[t] = np.clip(np.stack(channels, -1), 0, 255).round().astype(np.uint8)
    return frames


def write_clip(path, frames, fps=Fraction(30), codec="libx264", pix_fmt="yuv420p", in_format="rgb24",
               audio_seconds: float | None = None):
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = pix_fmt
        if codec == "libx264":
            stream.options = {"crf": "0"}
        audio = None
        if audio_seconds is not None:
            audio = container.add_stream("aac", rate=16000)
            audio.layout = "mono"
        for i, array in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(array), format=in_format)
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
        if audio is not None:
            n = int(audio_seconds * 16000)
            tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(n) / 16000)).astype(np.float32)
            for start in range(0, n, 1024):
                piece = tone[None, start : start + 1024]
                chunk = av.AudioFrame.from_ndarray(piece, format="fltp", layout="mono")
                chunk.sample_rate, chunk.pts = 16000, start
                for packet in audio.encode(chunk):
                    container.mux(packet)
            for packet in audio.encode():
                container.mux(packet)
    return path


def decoded(path) -> np.ndarray:
    return np.stack(list(io.read_frames(path)))


def psnr(a, b) -> float:
    mse = np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)
    return float(10 * np.log10(255.0**2 / mse)) if mse > 0 else float("inf")


@pytest.fixture
def dirs(tmp_path):
    """(source directory, empty output directory)."""
    src_dir, out_dir = tmp_path / "in", tmp_path / "out"
    src_dir.mkdir()
    out_dir.mkdir()
    return src_dir, out_dir


@pytest.fixture
def clip(dirs):
    return write_clip(dirs[0] / "clip.mp4", moving_frames(24, 48, 64), fps=Fraction(25))


def test_every_frame_out_at_the_source_rate_and_equal_to_magnify(dirs, clip):
    out = dirs[1] / "out.mp4"
    result = vidmag.magnify_file(clip, out, backend="cpu", quality=10, **IIR)
    assert os.listdir(dirs[1]) == ["out.mp4"]
    assert result.output == str(out)
    assert (result.frames, result.width, result.height) == (24, 64, 48)
    assert result.fps == Fraction(25) and result.backend == "cpu" and result.pipeline == "laplacian_iir"
    assert result.seconds > 0 and result.frames_per_second > 0
    assert not result.audio
    info = io.probe(out)
    assert (info.width, info.height, info.fps, info.n_frames) == (64, 48, Fraction(25), 24)
    # The file holds what vidmag.magnify makes of the same decoded frames (up to the H.264 coding).
    source = decoded(clip)
    params = {k: v for k, v in IIR.items() if k != "pipeline"}
    expected = vidmag.magnify(source, fs=25.0, pipeline="laplacian_iir", backend="cpu", **params)
    got = decoded(out)
    assert got.shape == expected.shape
    assert psnr(got, expected) > 38.0
    assert psnr(source, expected) < psnr(got, expected) - 3  # the magnification is visible in the file


def test_summary_line(dirs, clip):
    result = vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", **IIR)
    line = result.summary()
    assert "\n" not in line
    for part in ("24 frames", "64x48", "backend cpu", " s,", "frames/s", "out.mp4"):
        assert part in line


def test_preset_supplies_pipeline_fs_and_parameters(dirs):
    # 30 fps container, face preset (gaussian_ideal, level 4 fits 64 x 48): its pass band 0.83-1 Hz.
    frames = moving_frames(30, 48, 64)
    src = write_clip(dirs[0] / "clip.mp4", frames)
    result = vidmag.magnify_file(src, dirs[1] / "a.mp4", preset="face", backend="cpu")
    assert result.pipeline == "gaussian_ideal" and result.frames == 30
    _, fs, params = vidmag.presets.preset_params("face", None)
    expected = vidmag.magnify(decoded(src), fs=fs, pipeline="gaussian_ideal", backend="cpu", **params)
    assert psnr(decoded(dirs[1] / "a.mp4"), expected) > 35.0
    # A keyword overrides one parameter of the preset.
    vidmag.magnify_file(src, dirs[1] / "b.mp4", preset="face", backend="cpu", alpha=0.0)
    assert psnr(decoded(dirs[1] / "b.mp4"), decoded(src)) > 40.0


def test_fs_defaults_to_the_container_rate(dirs, clip):
    # 25 fps: a Butterworth cut-off of 12.6 Hz is above Nyquist unless fs is given.
    butter = {"pipeline": "laplacian_butterworth", "alpha": 5.0, "lambda_c": 16.0, "fl": 1.0, "fh": 12.6,
              "chrom_attenuation": 0.0}
    with pytest.raises(ValueError, match="fh"):
        vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", **butter)
    assert os.listdir(dirs[1]) == []
    result = vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", fs=30.0, **butter)
    assert result.fps == Fraction(25)  # fs is the filters' rate; the file keeps the container's


def test_mit_semantics_frame_count(dirs, clip):
    result = vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", compat="mit", **IIR)
    assert result.frames == 14
    assert io.probe(dirs[1] / "out.mp4").n_frames == 14


@pytest.mark.parametrize(("height", "width"), [(49, 65), (48, 65), (49, 64)])
def test_odd_frame_sizes_are_padded_to_even(dirs, height, width):
    frames = moving_frames(12, height, width)
    # FFV1 keeps the odd size exactly, which H.264 4:2:0 cannot.
    src = write_clip(dirs[0] / "odd.mkv", frames, codec="ffv1", pix_fmt="yuv444p")
    result = vidmag.magnify_file(src, dirs[1] / "out.mp4", backend="cpu", **IIR)
    assert (result.width, result.height) == (width, height)
    assert (result.encoded_width, result.encoded_height) == (width + width % 2, height + height % 2)
    got = decoded(dirs[1] / "out.mp4")
    assert got.shape == (12, height + height % 2, width + width % 2, 3)
    params = {k: v for k, v in IIR.items() if k != "pipeline"}
    expected = vidmag.magnify(decoded(src), fs=30.0, pipeline="laplacian_iir", backend="cpu", **params)
    assert psnr(got[:, :height, :width], expected) > 35.0
    assert "encoded" in result.summary()


def test_grayscale_source(dirs):
    grey = moving_frames(12, 48, 64)[..., 1]
    src = write_clip(dirs[0] / "grey.mkv", list(grey), codec="ffv1", pix_fmt="gray", in_format="gray")
    assert io.probe(src).pix_fmt == "gray"
    result = vidmag.magnify_file(src, dirs[1] / "out.mp4", backend="cpu", **IIR)
    assert result.frames == 12
    got = decoded(dirs[1] / "out.mp4")
    # Grey in, grey out (chroma attenuation does not create colour out of none), up to YUV rounding.
    assert np.abs(got[..., 0].astype(int) - got[..., 2].astype(int)).max() <= 3


def test_audio_is_carried_over(dirs):
    src = write_clip(dirs[0] / "talk.mp4", moving_frames(30, 48, 64), audio_seconds=1.0)
    result = vidmag.magnify_file(src, dirs[1] / "out.mp4", backend="cpu", **IIR)
    assert result.audio
    with av.open(str(dirs[1] / "out.mp4")) as container:
        stream = container.streams.audio[0]
        assert stream.codec_context.name == "aac"
        samples = sum(frame.samples for frame in container.decode(stream))
    assert samples / 16000 == pytest.approx(1.0, abs=0.1)
    vidmag.magnify_file(src, dirs[1] / "mute.mp4", backend="cpu", audio=False, **IIR)
    with av.open(str(dirs[1] / "mute.mp4")) as container:
        assert not container.streams.audio


def test_side_by_side(dirs, clip):
    result = vidmag.magnify_file(
        clip, dirs[1] / "out.mp4", backend="cpu", side_by_side=True, quality=10, **IIR
    )
    assert (result.width, result.height, result.frames) == (128, 48, 24)
    got = decoded(dirs[1] / "out.mp4")
    source = decoded(clip)
    params = {k: v for k, v in IIR.items() if k != "pipeline"}
    expected = vidmag.magnify(source, fs=25.0, pipeline="laplacian_iir", backend="cpu", **params)
    assert psnr(got[:, :, :64], source) > 38.0
    assert psnr(got[:, :, 64:], expected) > 38.0


@pytest.mark.parametrize("suffix", [".mov", ".mkv", ".m4v"])
def test_other_containers(dirs, clip, suffix):
    out = dirs[1] / f"out{suffix}"
    assert vidmag.magnify_file(clip, out, backend="cpu", **IIR).frames == 24
    assert io.probe(out).n_frames in (24, None)
    assert len(list(io.read_frames(out))) == 24


def test_existing_destination_is_replaced(dirs, clip):
    out = dirs[1] / "out.mp4"
    out.write_bytes(b"old")
    vidmag.magnify_file(clip, out, backend="cpu", **IIR)
    assert io.probe(out).n_frames == 24
    assert os.listdir(dirs[1]) == ["out.mp4"]


def one_pixel_clip(path):
    return write_clip(path, [np.full((1, 1, 3), 10 * i, np.uint8) for i in range(5)], codec="ffv1",
                      pix_fmt="yuv444p")


def empty_clip(path):
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=30)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = container.add_stream("aac", rate=16000)
        audio.layout = "mono"
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate, frame.pts = 16000, 0
        for packet in [*audio.encode(frame), *audio.encode()]:
            container.mux(packet)
    return path


def corrupt_clip(directory):
    path = directory / "corrupt.mp4"
    path.write_bytes(np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    return path


@pytest.mark.parametrize(
    ("make_source", "error", "match"),
    [
        (lambda d: d / "missing.mp4", FileNotFoundError, "src"),
        (corrupt_clip, io.VideoFormatError, "src"),
        (lambda d: empty_clip(d / "empty.mkv"), io.VideoFormatError, "no video frames"),
        (lambda d: one_pixel_clip(d / "one.mkv"), ValueError, "too small"),
        (lambda d: d, IsADirectoryError, "src"),
    ],
    ids=["missing", "corrupt", "empty", "1x1", "directory"],
)
def test_bad_sources_leave_no_file(dirs, make_source, error, match):
    src = make_source(dirs[0])
    with pytest.raises(error, match=match):
        vidmag.magnify_file(src, dirs[1] / "out.mp4", backend="cpu", **IIR)
    assert os.listdir(dirs[1]) == []


def test_one_pixel_frames_fail_for_every_pipeline(dirs):
    src = one_pixel_clip(dirs[0] / "one.mkv")
    for preset in ("face", "baby", "face2_motion", "guitar_e"):
        with pytest.raises(ValueError, match="too small"):
            vidmag.magnify_file(src, dirs[1] / "out.mp4", preset=preset, backend="cpu", fs=1200.0)
    assert os.listdir(dirs[1]) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pipeline": "laplacian_iir", "alpha": 10.0, "lambda_c": 16.0, "r1": 0.4, "r2": 0.05}, TypeError,
         "chrom_attenuation"),
        ({**IIR, "bogus": 1.0}, TypeError, "bogus"),
        ({"pipeline": "laplacian_butterworth", "alpha": 10.0, "lambda_c": 16.0, "fl": 3.0, "fh": 2.0,
          "chrom_attenuation": 0.0}, ValueError, "fl"),
        ({"pipeline": "gaussian_ideal", "alpha": 10.0, "level": 9, "fl": 1.0, "fh": 2.0,
          "chrom_attenuation": 1.0}, ValueError, "level"),
        ({"pipeline": "sharpen"}, ValueError, "pipeline"),
        ({"preset": "nope"}, ValueError, "preset"),
        ({"preset": "baby", "pipeline": "gaussian_ideal"}, ValueError, "pipeline"),
        ({}, TypeError, "preset= or pipeline="),
        ({**IIR, "quality": 52}, ValueError, "quality"),
        ({**IIR, "quality": 1.5}, ValueError, "quality"),
        ({**IIR, "encoder_preset": "fastest"}, ValueError, "encoder_preset"),
        ({**IIR, "compat": "matlab"}, ValueError, "compat"),
        ({**IIR, "backend": "abacus"}, ValueError, "backend"),
        ({**IIR, "backend": "cuda"}, BackendUnavailableError, "cuda"),
    ],
    ids=["missing", "unknown", "fl>=fh", "level", "pipeline", "preset", "preset+pipeline", "neither",
         "quality-range", "quality-type", "encoder-preset", "compat", "backend-name", "backend-unavailable"],
)
def test_bad_parameters_leave_no_file(dirs, clip, kwargs, error, match):
    kwargs = {"backend": "cpu", **kwargs}
    with pytest.raises(error, match=match):
        vidmag.magnify_file(clip, dirs[1] / "out.mp4", **kwargs)
    assert os.listdir(dirs[1]) == []


def test_unwritable_destinations(dirs, clip):
    with pytest.raises(FileNotFoundError, match="dst"):
        vidmag.magnify_file(clip, dirs[1] / "no" / "such" / "dir" / "out.mp4", backend="cpu", **IIR)
    (dirs[1] / "a_file").write_text("x")
    with pytest.raises(NotADirectoryError, match="dst"):
        vidmag.magnify_file(clip, dirs[1] / "a_file" / "out.mp4", backend="cpu", **IIR)
    with pytest.raises(IsADirectoryError, match="dst"):
        vidmag.magnify_file(clip, dirs[1], backend="cpu", **IIR)
    with pytest.raises(ValueError, match="dst"):
        vidmag.magnify_file(clip, dirs[1] / "out.avi", backend="cpu", **IIR)
    assert os.listdir(dirs[1]) == ["a_file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only directory")
def test_read_only_destination(dirs, clip):
    locked = dirs[1] / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="dst"):
            vidmag.magnify_file(clip, locked / "out.mp4", backend="cpu", **IIR)
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, RuntimeError])
def test_interrupted_run_leaves_nothing_and_keeps_an_old_file(dirs, clip, interruption):
    out = dirs[1] / "out.mp4"
    out.write_bytes(b"previous result")

    def stop_at_frame_10(done: int) -> None:
        if done == 10:
            raise interruption("stop")

    with pytest.raises(interruption):
        vidmag.magnify_file(clip, out, backend="cpu", progress=stop_at_frame_10, **IIR)
    assert os.listdir(dirs[1]) == ["out.mp4"]
    assert out.read_bytes() == b"previous result"


def test_encoder_failure_leaves_nothing(dirs, clip, monkeypatch):
    def broken_write(self, frame):
        raise av.error.InvalidDataError(1094995529, "encoder exploded")

    monkeypatch.setattr(io.VideoWriter, "write", broken_write)
    with pytest.raises(av.error.FFmpegError):
        vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", **IIR)
    assert os.listdir(dirs[1]) == []


def test_progress_callback_counts_every_frame(dirs, clip):
    seen: list[int] = []
    vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", progress=seen.append, **IIR)
    assert seen == list(range(1, 25))


def test_progress_bar_on_stderr(dirs, clip, capsys):
    vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", progress=True, **IIR)
    err = capsys.readouterr().err
    assert "24/24" in err and err.endswith("\n")


def test_two_pass_pipelines_show_the_reading_pass(dirs, clip, capsys):
    seen: list[int] = []
    vidmag.magnify_file(clip, dirs[1] / "a.mp4", preset="face", backend="cpu", progress=seen.append)
    assert seen == list(range(1, 25))
    capsys.readouterr()
    vidmag.magnify_file(clip, dirs[1] / "b.mp4", preset="face", backend="cpu", progress=True)
    # Each bar redraws its line after a carriage return and ends it with a newline.
    lines = [line.split("\r")[-1] for line in capsys.readouterr().err.split("\n") if line]
    assert len(lines) == 2
    assert lines[0].startswith("b.mp4 (reading) [") and "24/24" in lines[0]
    assert lines[1].startswith("b.mp4 [") and "24/24" in lines[1]


def test_failed_checks_draw_no_progress_bar(dirs, clip, capsys):
    with pytest.raises(ValueError, match="level"):
        vidmag.magnify_file(clip, dirs[1] / "out.mp4", preset="face", level=9, backend="cpu", progress=True)
    assert capsys.readouterr().err == ""


def test_unwritable_directory_is_refused_before_any_work(dirs, clip, monkeypatch):
    # Root ignores permission bits, so the refusal is checked here through the access test it relies on.
    real_access = os.access
    monkeypatch.setattr(io.os, "access", lambda path, mode: False if str(path) == str(dirs[1]) else
                        real_access(path, mode))
    with pytest.raises(PermissionError, match="not writable"):
        vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", **IIR)
    assert os.listdir(dirs[1]) == []


def test_output_may_not_replace_its_own_input(dirs, clip):
    # Writing the result over the source would lose the source: refused before anything is written
    # (every spelling and link of it: test_files_same_path.py).
    original = clip.read_bytes()
    with pytest.raises(ValueError, match="is the input file"):
        vidmag.magnify_file(clip, clip, preset="face", backend="cpu")
    assert clip.read_bytes() == original
    assert sorted(os.listdir(dirs[0])) == ["clip.mp4"]


# -- max_frames: the first N frames only ------------------------------------------------------------------


def test_max_frames_writes_the_first_frames_of_the_full_run(dirs, clip):
    # laplacian_iir streams: its first 8 frames are those of the whole clip's run. quality=0 is lossless
    # x264, so the two files decode to the same bytes where the frames are the same.
    full = vidmag.magnify_file(clip, dirs[1] / "full.mp4", backend="cpu", quality=0, **IIR)
    short = vidmag.magnify_file(clip, dirs[1] / "short.mp4", backend="cpu", quality=0, max_frames=8, **IIR)
    assert (full.frames, short.frames) == (24, 8)
    assert io.probe(dirs[1] / "short.mp4").n_frames == 8
    got = decoded(dirs[1] / "short.mp4")
    assert got.shape == (8, 48, 64, 3)
    np.testing.assert_array_equal(got, decoded(dirs[1] / "full.mp4")[:8])


def test_max_frames_numpy_integer_and_longer_than_the_clip(dirs, clip):
    result = vidmag.magnify_file(clip, dirs[1] / "a.mp4", backend="cpu", max_frames=np.int64(5), **IIR)
    assert result.frames == 5
    # a clip shorter than max_frames runs whole
    assert vidmag.magnify_file(clip, dirs[1] / "b.mp4", backend="cpu", max_frames=100, **IIR).frames == 24


def test_max_frames_is_a_clip_that_ends_there_for_the_ideal_pipelines(dirs, clip, capsys):
    # The two passes of laplacian_ideal both stop at max_frames: the result is that of a clip of the first 10
    # frames (written losslessly in RGB, FFV1 bgr0), not the first 10 frames of the whole clip's result;
    # and both progress bars count to 10.
    params = {"pipeline": "laplacian_ideal", "alpha": 10.0, "lambda_c": 16.0, "fl": 1.0, "fh": 3.0,
              "chrom_attenuation": 0.5}
    first_ten = write_clip(dirs[0] / "ten.mkv", decoded(clip)[:10], fps=Fraction(25), codec="ffv1",
                           pix_fmt="bgr0")
    np.testing.assert_array_equal(decoded(first_ten), decoded(clip)[:10])
    result = vidmag.magnify_file(clip, dirs[1] / "cut.mp4", backend="cpu", quality=0, max_frames=10,
                                 progress=True, **params)
    assert result.frames == 10 and result.route == "in memory"
    lines = [line.split("\r")[-1] for line in capsys.readouterr().err.split("\n") if line]
    assert len(lines) == 2 and all("10/10" in line for line in lines), lines
    vidmag.magnify_file(first_ten, dirs[1] / "ten.mp4", backend="cpu", quality=0, **params)
    vidmag.magnify_file(clip, dirs[1] / "full.mp4", backend="cpu", quality=0, **params)
    got = decoded(dirs[1] / "cut.mp4")
    np.testing.assert_array_equal(got, decoded(dirs[1] / "ten.mp4"))
    assert not np.array_equal(got, decoded(dirs[1] / "full.mp4")[:10])


def test_max_frames_on_the_bounded_memory_route(dirs, clip):
    # Over a tiny budget laplacian_ideal keeps its bands on disk (byte for byte the in-memory run on cpu):
    # the route sees the 10 frames too.
    params = {"alpha": 10.0, "lambda_c": 16.0, "fl": 1.0, "fh": 3.0, "chrom_attenuation": 0.5}
    common = dict(pipeline="laplacian_ideal", backend="cpu", quality=0, max_frames=10, **params)
    bounded = vidmag.magnify_file(clip, dirs[1] / "disk.mp4", memory=1, **common)
    in_memory = vidmag.magnify_file(clip, dirs[1] / "ram.mp4", **common)
    assert bounded.route == "bands on disk" and in_memory.route == "in memory"
    assert bounded.frames == in_memory.frames == 10
    np.testing.assert_array_equal(decoded(dirs[1] / "disk.mp4"), decoded(dirs[1] / "ram.mp4"))
    assert sorted(os.listdir(dirs[1])) == ["disk.mp4", "ram.mp4"]  # the work directory is gone


def test_max_frames_with_side_by_side_and_audio(dirs):
    src = write_clip(dirs[0] / "talk.mp4", moving_frames(30, 48, 64), audio_seconds=1.0)
    result = vidmag.magnify_file(src, dirs[1] / "out.mp4", backend="cpu", side_by_side=True, quality=0,
                                 max_frames=9, **IIR)
    assert (result.frames, result.width, result.height) == (9, 128, 48) and result.audio
    got = decoded(dirs[1] / "out.mp4")
    assert got.shape == (9, 48, 128, 3)
    assert psnr(got[:, :, :64], decoded(src)[:9]) > 40.0  # the first 9 source frames on the left
    with av.open(str(dirs[1] / "out.mp4")) as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
    # cut where the 9 frames end (0.3 s), to within one AAC packet of 1024 samples
    assert samples / 16000 == pytest.approx(9 / 30, abs=0.07)


@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), (-3, ValueError), (0.0, ValueError), (True, TypeError), (np.bool_(True), TypeError),
     (8.5, ValueError), (float("nan"), ValueError), ("8", TypeError)],
    ids=["zero", "negative", "zero-float", "bool", "numpy-bool", "non-integral-float", "nan", "str"],
)
def test_bad_max_frames_is_refused_up_front(dirs, clip, value, error):
    # Up front: before the source is even opened (a missing source would be a FileNotFoundError).
    for src in (clip, dirs[0] / "missing.mp4"):
        with pytest.raises(error, match=r"max_frames must be a positive integer .*or None"):
            vidmag.magnify_file(src, dirs[1] / "out.mp4", backend="cpu", max_frames=value, **IIR)
    assert os.listdir(dirs[1]) == []


@pytest.mark.parametrize("value", [8.0, np.int64(8), np.float32(8.0)],
                         ids=["float", "numpy-int", "numpy-float"])
def test_max_frames_follows_the_one_rule_for_numbers(dirs, clip, value):
    # issue 19 item 5: max_frames takes what vidmag.params.check_integer takes (evaluate's max_frames too):
    # an integral float or a numpy number is the integer it holds.
    result = vidmag.magnify_file(clip, dirs[1] / "out.mp4", backend="cpu", max_frames=value, **IIR)
    assert result.frames == 8 and type(result.frames) is int
    assert decoded(dirs[1] / "out.mp4").shape[0] == 8
