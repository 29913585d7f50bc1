"""vidmag.suggest and ``vidmag suggest``: peaks of synthetic rhythms found and named, the band, the capture
warnings (inter-frame codec, mains flicker aliased into the band), the plot and the command's exit codes."""

from __future__ import annotations

import os
from fractions import Fraction

import av
import numpy as np
import pytest

from vidmag import io
from vidmag.cli import main
from vidmag.suggest import aliased, flicker_warnings, suggest

FACE = "../shared/data/clips/face.mp4"


def _pulse(f: float, fs: float = 30.0, seconds: float = 10.0, size: int = 16, amplitude: float = 2.0, seed=0):
    """Grey frames whose colour varies at `f` Hz by `amplitude` grey levels (red twice as much), noisy."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * fs)) / fs
    wave = amplitude * np.sin(2 * np.pi * f * t)[:, None, None, None] * np.array([2.0, 1.0, 0.5])
    frames = 120 + wave + rng.normal(0, 1.0, (len(t), size, size, 3))
    return np.clip(np.round(frames), 0, 255).astype(np.uint8)


def _moving(f: float, fs: float = 30.0, seconds: float = 10.0, size: int = 32):
    """A texture moving sideways by 0.3 px at `f` Hz."""
    t = np.arange(round(seconds * fs)) / fs
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    shift = 0.3 * np.sin(2 * np.pi * f * t)[:, None, None]
    grey = 128 + 50 * np.sin((xx[None] + shift) / 2.5) * np.cos(yy[None] / 3.5)
    return np.clip(np.round(grey), 0, 255).astype(np.uint8)[..., None].repeat(3, axis=-1)


def test_a_pulse_is_found_and_the_band_contains_it():
    result = suggest(_pulse(1.2), 30.0, kind="colour")
    top = result.peaks[0]
    assert top.frequency == pytest.approx(1.2, abs=0.05)
    assert "72 bpm" in top.describe() and top.name == "pulse range"
    assert result.fl < 1.2 < result.fh
    assert result.warnings == []  # an array: no codec; 100 Hz at 30 fps aliases to 10 Hz, outside the band
    assert "recommended band: --fl" in result.report()


def test_a_motion_is_found_in_the_motion_spectrum_and_auto_picks_it():
    frames = _moving(2.5)
    result = suggest(frames, 30.0, kind="motion")
    assert result.peaks[0].frequency == pytest.approx(2.5, abs=0.05)
    assert result.fl < 2.5 < result.fh
    assert suggest(frames, 30.0).kind == "motion"  # the mean colour of a moving texture barely changes


def test_the_region_of_interest_is_what_is_analysed():
    frames = _pulse(1.2, size=32)
    frames[:, :, 16:] = _pulse(2.0, size=32, seed=1)[:, :, 16:]
    assert suggest(frames, 30.0, roi=(16, 0, 16, 32), kind="colour").peaks[0].frequency == pytest.approx(
        2.0, abs=0.05)
    assert suggest(frames, 30.0, roi="0,0,16,32", kind="colour").peaks[0].frequency == pytest.approx(
        1.2, abs=0.05)


def test_mains_flicker_alias_at_29_fps():
    # 100 Hz flicker (50 Hz mains) sampled at 29 fps: k = round(100 / 29) = 3, |100 - 87| = 13 Hz;
    # 120 Hz: k = 4, |120 - 116| = 4 Hz
    assert aliased(100.0, 29.0) == pytest.approx(13.0)
    assert aliased(120.0, 29.0) == pytest.approx(4.0)
    assert aliased(120.0, 30.0) == 0.0
    (warning,) = flicker_warnings(29.0, 11.0, 14.0)
    assert "|100 - 3 x 29| = 13 Hz" in warning
    assert flicker_warnings(29.0, 5.0, 12.0) == []


def test_a_flicker_peak_is_named_and_a_band_around_it_warns():
    frames = _pulse(13.0, fs=29.0, seconds=8.0)  # the alias of 100 Hz flicker at 29 fps
    frames[:] = np.clip(frames.astype(int) + _pulse(11.6, fs=29.0, seconds=8.0, seed=3).astype(int) - 120,
                        0, 255).astype(np.uint8)
    result = suggest(frames, 29.0, kind="colour")
    names = {round(p.frequency): p.name for p in result.peaks}
    assert names[13] == "mains flicker alias (100 Hz at 29 fps)"
    # the band is centred on the rhythm that is not the alias (11.6 Hz), and reaches 13 Hz: a warning
    assert result.fl < 11.6 < result.fh and result.fl <= 13.0 <= result.fh
    assert any("13 Hz" in w and "inside the band" in w for w in result.warnings)


@pytest.mark.skipif(not os.path.exists(FACE), reason="sample clip ../shared/data/clips/face.mp4 not present")
def test_the_codec_warning_for_face_mp4():
    result = suggest(FACE, roi=(230, 120, 80, 60), max_frames=48)
    assert result.codec == "h264" and result.fs == 30
    assert any("h264" in w and "inter-frame" in w for w in result.warnings)


def test_an_intra_only_clip_gets_no_codec_warning(tmp_path):
    path = tmp_path / "intra.mkv"
    frames = _pulse(1.2, seconds=2.0)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mjpeg", rate=Fraction(30))
        stream.width, stream.height, stream.pix_fmt = 16, 16, "yuvj444p"
        for t, frame in enumerate(frames):
            video = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video.pts = t
            for packet in stream.encode(video):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    result = suggest(path, kind="colour")
    assert result.codec == "mjpeg"
    assert not any("inter-frame" in w for w in result.warnings)


def test_bad_arguments_name_the_parameter():
    frames = _pulse(1.2, seconds=2.0)
    with pytest.raises(ValueError, match="kind"):
        suggest(frames, 30.0, kind="sound")
    with pytest.raises(TypeError, match="fs"):
        suggest(frames)
    with pytest.raises(ValueError, match="roi"):
        suggest(frames, 30.0, roi=(10, 10, 10, 10))
    with pytest.raises(ValueError, match="at least 16 frames"):
        suggest(frames[:10], 30.0)


TAKES = r"must be a video path \(str, bytes or os\.PathLike\) or uint8 frames \(T, H, W, 3\)"


@pytest.mark.parametrize("bad", [None, 3, {"frames": 1}, object(), ["a.mp4", "b.mp4"]],
                         ids=["None", "int", "dict", "object", "list-of-str"])
def test_frames_of_the_wrong_type_are_a_type_error_naming_frames(bad):
    # issue 19: suggest(None) was a ValueError ending in "got object ()"
    with pytest.raises(TypeError, match=rf"^frames {TAKES}, got {type(bad).__name__} "):
        suggest(bad, 30.0)


def test_frames_of_the_wrong_dtype_or_shape_are_a_value_error_naming_frames():
    frames = _pulse(1.2, seconds=2.0)
    with pytest.raises(ValueError, match=rf"^frames {TAKES}, got float64 \({len(frames)}, "):
        suggest(frames.astype(float), 30.0)
    with pytest.raises(ValueError, match=rf"^frames {TAKES}, got uint8 \({len(frames)}, \d+, \d+\)$"):
        suggest(frames[..., 0], 30.0)
    with pytest.raises(ValueError, match=rf"^frames {TAKES}: "):  # frames of unequal sizes
        suggest([frames[0], frames[1, :8]], 30.0)
    assert suggest(list(frames), 30.0).fs == 30.0  # a list of frames is frames


def _mp4(path, frames, fs=30):
    # H.264 through the library's own writer (yuv420p, as a camera's file would be)
    with io.VideoWriter(path, width=frames.shape[2], height=frames.shape[1], fps=Fraction(fs)) as writer:
        for frame in frames:
            writer.write(frame)


def test_command_prints_peaks_band_warnings_and_writes_the_plot(tmp_path, capsys):
    clip = tmp_path / "pulse.mp4"
    _mp4(clip, _pulse(1.2, amplitude=4.0))
    plot = tmp_path / "spectrum.png"
    code = main(["suggest", str(clip), "--kind", "colour", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert code == 0
    assert "peaks:" in out and "1.2" in out and "recommended band: --fl" in out
    assert "warning: the clip is coded with h264" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, named", [
    (["--kind", "sound"], "--kind"),
    (["--plot", "out.gif"], "--plot"),
    (["--roi", "1,2,3"], "roi"),
    (["--max-frames", "many"], "--max-frames"),
])
def test_command_bad_options_exit_2_naming_them(tmp_path, capsys, argv, named):
    clip = tmp_path / "pulse.mp4"
    _mp4(clip, _pulse(1.2, seconds=1.0))
    code = main(["suggest", str(clip), *argv])
    assert code == 2 and named in capsys.readouterr().err


def test_command_missing_clip_exits_1(tmp_path, capsys):
    assert main(["suggest", str(tmp_path / "none.mp4")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_aliased_and_flicker_warnings_follow_the_one_rule_for_numbers():
    # issue 19 item 5: numpy numbers taken, strings and bools a TypeError naming the parameter (they used to
    # fail inside the arithmetic: "unsupported operand type(s) for /: 'str' and 'int'")
    assert aliased(np.float32(100.0), np.int64(29)) == pytest.approx(13.0)
    assert flicker_warnings(np.int64(29), np.float32(11.0), 14) == flicker_warnings(29.0, 11.0, 14.0)
    for call, name in (
        (lambda: aliased("100", 29.0), "frequency"),
        (lambda: aliased(100.0, "29"), "fs"),
        (lambda: aliased(100.0, True), "fs"),
        (lambda: flicker_warnings("29", 11.0, 14.0), "fs"),
        (lambda: flicker_warnings(29.0, "11", 14.0), "fl"),
        (lambda: flicker_warnings(29.0, 11.0, "14"), "fh"),
    ):
        with pytest.raises(TypeError, match=rf"^{name} must be a number"):
            call()
    for call in (lambda: aliased(100.0, 0.0), lambda: flicker_warnings(-30.0, 1.0, 2.0)):
        with pytest.raises(ValueError, match=r"^fs must be > 0 Hz"):
            call()
