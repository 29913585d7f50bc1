"""The demonstration: the synthetic pulse exists in the 8-bit data and comes back magnified as predicted."""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag import demo, io

ALPHA = 50.0


@pytest.fixture(scope="module")
def clip():
    # 5 s at 30 fps: 1.2 Hz and 2 Hz fall exactly on spectral bins (6 and 10 cycles).
    return demo.synthesise(seconds=5.0)


def test_clip_shape_and_signals(clip):
    assert clip.frames.shape == (150, 120, 160, 3) and clip.frames.dtype == np.uint8
    pulse = demo.measure_pulse(clip.frames, clip.patch, clip.fs)
    assert pulse.peak_hz == pytest.approx(1.2)
    # Under half a grey level, yet present in the 8-bit data thanks to the noise's dither.
    assert clip.pulse_amplitude < 0.5
    assert pulse.peak_amplitude == pytest.approx(clip.pulse_amplitude, rel=0.1)
    edge = demo.measure_edge_vibration(clip.frames, clip.edge_rows, clip.edge_columns, clip.fs)
    assert edge.peak_hz == pytest.approx(2.0)
    assert edge.peak_amplitude == pytest.approx(clip.vibration_px, rel=0.15)


def test_without_dither_rounding_erases_the_pulse():
    # The control: the same clip without noise rounds the pulse away, so the dither is what keeps it.
    quiet = demo.synthesise(seconds=5.0, noise=0.0)
    pulse = demo.measure_pulse(quiet.frames, quiet.patch, quiet.fs)
    assert pulse.peak_amplitude < 0.05


def test_colour_pulse_is_magnified_by_one_plus_alpha(clip):
    colour = vidmag.magnify(
        clip.frames, fs=clip.fs, pipeline="gaussian_ideal", backend="cpu",
        alpha=ALPHA, level=3, fl=0.9, fh=1.5, chrom_attenuation=1.0,
    )
    for channel in range(3):
        after = demo.measure_pulse(colour, clip.patch, clip.fs, channel=channel)
        assert after.peak_hz == pytest.approx(clip.pulse_hz)
        true_amplitude = clip.pulse_amplitude * demo.PULSE_RGB[channel]
        # Default semantics: unit gain in the pass band, so the pulse comes out (1 + alpha) times larger.
        assert after.peak_amplitude == pytest.approx((1 + ALPHA) * true_amplitude, rel=0.05)
    # Outside the pass band nothing is amplified: the edge's 2 Hz vibration keeps its size.
    edge = demo.measure_edge_vibration(colour, clip.edge_rows, clip.edge_columns, clip.fs)
    assert edge.peak_amplitude == pytest.approx(clip.vibration_px, rel=0.2)


def test_edge_vibration_is_magnified(clip):
    motion = vidmag.magnify(
        clip.frames, fs=clip.fs, pipeline="laplacian_butterworth", backend="cpu",
        alpha=30.0, lambda_c=16.0, fl=1.5, fh=2.5, chrom_attenuation=0.0,
    )
    before = demo.measure_edge_vibration(clip.frames, clip.edge_rows, clip.edge_columns, clip.fs)
    after = demo.measure_edge_vibration(motion, clip.edge_rows, clip.edge_columns, clip.fs)
    assert after.peak_hz == pytest.approx(clip.vibration_hz)
    assert after.peak_amplitude > 3 * before.peak_amplitude


def test_run_demo_writes_videos_and_plot(tmp_path):
    result = demo.run_demo(tmp_path / "out", seconds=5.0, backend="cpu")
    for path in (result.colour_video, result.motion_video):
        info = io.probe(path)
        assert (info.width, info.height, info.n_frames) == (320, 120, 150)
        assert float(info.fps) == 30.0
    with open(result.plot, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["colour.mp4", "motion.mp4", "pulse.png"]
    assert result.pulse_after.peak_hz == pytest.approx(1.2)
    assert result.pulse_gain == pytest.approx(1 + result.colour_alpha, rel=0.1)
    assert result.vibration_gain > 3
    report = result.report()
    assert "1.20 Hz" in report and "pulse.png" in report and "backend cpu" in report
    # The right half of the colour video is the magnified clip: its patch pulses (1 + alpha) times larger.
    frames = np.stack(list(io.read_frames(result.colour_video)))
    clip = demo.synthesise(seconds=5.0)
    rows, cols = clip.patch
    right = (rows, slice(cols.start + 160, cols.stop + 160))
    written = demo.measure_pulse(frames, right, 30.0)
    assert written.peak_amplitude == pytest.approx((1 + result.colour_alpha) * clip.pulse_amplitude, rel=0.1)
