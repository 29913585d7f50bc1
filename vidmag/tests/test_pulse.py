"""The pulse readout: each method on synthetic scenes of known rate (still and moving), the streaming meter,
the quality index, the parameter checks, and the paper's face clip."""

from __future__ import annotations

import os

import numpy as np
import pytest

from vidmag import pulse, synthetic

FS = 30.0
RATES = (48.0, 72.0, 120.0, 180.0)
FACE_CLIP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "clips", "face.mp4")
# The forehead of face.mp4 (528 x 592): between the hairline and the glasses, clear of the hair at the sides.
FACE_FOREHEAD = (150, 70, 220, 100)


def _clip(bpm, *, motion=0.0, seconds=10.0, seed=0, **kwargs):
    scene = synthetic.scene(160, 120, fs=FS, bpm=bpm, seconds=seconds, noise=2.0, motion=motion, seed=seed,
                            **kwargs)
    return np.stack(list(scene)), scene


@pytest.fixture(scope="module")
def clips():
    # One clip per rate, still and moving, shared by the three methods' tests.
    return {(bpm, motion): _clip(bpm, motion=motion, seed=int(bpm)) for bpm in RATES for motion in (0.0, 4.0)}


@pytest.mark.parametrize("method", pulse.METHODS)
@pytest.mark.parametrize("motion", [0.0, 4.0], ids=["still", "moving"])
@pytest.mark.parametrize("bpm", RATES)
def test_each_method_recovers_the_rate(clips, method, motion, bpm):
    frames, scene = clips[(bpm, motion)]
    # The face's rectangle, as a detector would give it: the ellipse and some background at its corners.
    result = pulse.estimate(frames, FS, scene.roi, method)
    assert result.bpm == pytest.approx(bpm, abs=3.0)
    assert result.quality_db > 3.0
    assert result.method == method and result.roi == scene.roi and result.fs == FS
    assert result.signal.shape == (len(frames),) and result.trace.shape == (len(frames), 3)
    assert result.bpm_series.shape == result.quality_series.shape == result.times.shape == (1,)


def test_sliding_windows_give_a_series(clips):
    frames, scene = clips[(72.0, 4.0)]
    result = pulse.estimate(frames, FS, scene.roi, window=6.0, step=1.0)
    # Windows of 180 frames every 30 frames over 300 frames: starts 0, 30, ..., 120.
    np.testing.assert_allclose(result.times, (np.arange(5) * 30 + 89.5) / FS)
    np.testing.assert_allclose(result.bpm_series, 72.0, atol=3.0)
    assert np.all(result.quality_series > 0)


def test_frames_as_an_iterable_floats_and_a_roi_callable(clips):
    frames, scene = clips[(120.0, 0.0)]
    reference = pulse.estimate(frames, FS, scene.roi)
    from_iterable = pulse.estimate(iter(list(frames)), FS, scene.roi)
    np.testing.assert_allclose(from_iterable.trace, reference.trace, rtol=1e-12)
    # Any positive scale of the frames gives the same rate (the methods divide by the mean colour).
    scaled = pulse.estimate(frames.astype(np.float32) / 255, FS, scene.roi)
    assert scaled.bpm == pytest.approx(reference.bpm, abs=0.01)
    seen = []

    def detector(frame):
        seen.append(frame.shape)
        return scene.roi

    found = pulse.estimate(frames, FS, detector)
    assert seen == [frames.shape[1:]] and found.roi == scene.roi
    assert found.bpm == pytest.approx(reference.bpm)


def test_quality_separates_a_pulse_from_noise(clips):
    frames, scene = clips[(72.0, 0.0)]
    with_pulse = pulse.estimate(frames, FS, scene.roi)
    without, _ = _clip(72.0, pulse_amplitude=0.0)
    noise_only = pulse.estimate(without, FS, scene.roi)
    assert with_pulse.quality_db > noise_only.quality_db + 10.0


def test_heart_rate_refines_between_bins():
    t = np.arange(300) / FS
    hz = 1.2345
    bpm, quality = pulse.heart_rate(np.sin(2 * np.pi * hz * t), FS)
    assert bpm == pytest.approx(60 * hz, abs=0.1)
    assert quality > 20.0


def test_flat_signal_reads_as_no_rate():
    bpm, quality = pulse.heart_rate(np.zeros(300), FS)
    assert np.isnan(bpm) and quality == -np.inf
    black = np.zeros((120, 16, 16, 3), np.uint8)
    result = pulse.estimate(black, FS)
    assert np.isnan(result.bpm) and result.quality_db == -np.inf


@pytest.mark.parametrize("method", pulse.METHODS)
def test_meter_readings_converge_to_the_truth(method):
    scene = synthetic.scene(160, 120, fs=FS, bpm=90.0, seconds=12.0, motion=4.0, seed=5)
    meter = pulse.PulseMeter(FS, roi=scene.roi, method=method, window_s=8.0, update_s=1.0)
    frames, readings = [], []
    for frame in scene:
        frames.append(frame)
        reading = meter.push(frame)
        if reading is not None:
            readings.append((len(frames), reading))
    # The first reading on the frame that fills the window, then one a second: frames 240, 270, ..., 360.
    assert [n for n, _ in readings] == [240, 270, 300, 330, 360]
    for n, reading in readings:
        assert reading.bpm == pytest.approx(90.0, abs=3.0)
        assert reading.time == pytest.approx((n - 1) / FS)
        assert reading.trace.shape == (240, 3) and reading.signal.shape == (240,)
        assert reading.method == method and reading.fs == FS
    # A reading is the offline estimate of the same window.
    n, last = readings[-1]
    offline = pulse.estimate(np.stack(frames[n - 240 : n]), FS, scene.roi, method)
    np.testing.assert_allclose(last.trace, offline.trace, rtol=1e-12)
    assert last.bpm == pytest.approx(offline.bpm, rel=1e-9)
    assert meter.last_reading is last and meter.frames_seen == 360


def test_meter_reset_starts_over():
    scene = synthetic.scene(64, 48, fs=FS, n_frames=100)
    meter = pulse.PulseMeter(FS, window_s=3.0)
    assert all(meter.push(frame) is None for frame in [next(scene) for _ in range(89)])
    assert meter.push(next(scene)) is not None
    meter.reset()
    assert meter.frames_seen == 0 and meter.push(next(scene)) is None


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "ica"}, ValueError, "method must be one of 'pos', 'chrom', 'green'; got 'ica'"),
        ({"fs": 0.0}, ValueError, "fs must be > 0"),
        ({"fs": "30"}, TypeError, "fs must be a number"),
        ({"band": (0.7, 20.0)}, ValueError, r"band must satisfy 0 < low < high < fs / 2 = 15 Hz"),
        ({"band": (0.0, 4.0)}, ValueError, "band must satisfy"),
        ({"band": (3.0, 2.0)}, ValueError, "band must satisfy"),
        ({"band": (1.0,)}, ValueError, "band must be a pair"),
        ({"band": 1.0}, TypeError, "band must be a pair"),
        ({"roi": (100, 10, 80, 20)}, ValueError, r"must lie inside the 160 x 120 frame"),
        ({"roi": (-1, 0, 10, 10)}, ValueError, "needs x, y >= 0 and w, h >= 1"),
        ({"roi": (0, 0, 0, 10)}, ValueError, "needs x, y >= 0 and w, h >= 1"),
        ({"roi": (0, 0, 10.5, 10)}, TypeError, "roi must be a rectangle of four integers"),
        ({"roi": (0, 0, 10)}, TypeError, "roi must be a rectangle of four integers"),
        ({"roi": "forehead"}, ValueError, "roi as a string must be 'face'"),
        ({"roi": b"face"}, TypeError, "roi must be None, a rectangle .* a callable or 'face'"),
        ({"roi": lambda frame: None}, ValueError, "the roi callable returned an unusable region"),
        ({"roi": lambda frame: (0, 0, 500, 10)}, ValueError, "the roi callable returned an unusable region"),
        ({"window": 20.0}, ValueError, r"window must be 2\.86667 to 10 s"),
        ({"window": 1.0}, ValueError, r"window must be 2\.86667 to 10 s"),
        ({"window": 5.0, "step": 0.01}, ValueError, "step must be at least one frame"),
        ({"step": 1.0}, ValueError, "step needs window"),
    ],
)
def test_estimate_checks_its_parameters(clips, kwargs, error, match):
    frames, _ = clips[(72.0, 0.0)]
    args = {"fs": FS, **kwargs}
    with pytest.raises(error, match=match):
        pulse.estimate(frames, **args)


def test_estimate_checks_the_frames():
    with pytest.raises(ValueError, match=r"too few frames for one estimate: 60 given, at least 86 needed"):
        pulse.estimate(np.zeros((60, 8, 8, 3), np.uint8), FS)
    with pytest.raises(ValueError, match=r"frames must have shape \(T, H, W, 3\)"):
        pulse.estimate(np.zeros((100, 8, 8)), FS)
    with pytest.raises(ValueError, match="at least one frame"):
        pulse.estimate(iter([]), FS)
    with pytest.raises(ValueError, match=r"frames\[1\] has shape \(9, 8, 3\), but the earlier frames had"):
        pulse.estimate(iter([np.zeros((8, 8, 3)), np.zeros((9, 8, 3))]), FS)
    with pytest.raises(TypeError, match="frames must be an array"):
        pulse.estimate(3, FS)


def test_trace_functions_check_the_trace():
    t = np.arange(150) / FS
    trace = 100 + np.stack([0.3, 1.0, 0.5]) * np.sin(2 * np.pi * 1.5 * t)[:, None]
    for method in pulse.METHODS:
        assert pulse.pulse_signal(trace, FS, method).shape == (150,)
        result = pulse.from_trace(trace, FS, method)
        assert result.bpm == pytest.approx(90.0, abs=1.0) and result.roi is None
    with pytest.raises(ValueError, match=r"trace must have shape \(T, 3\)"):
        pulse.pulse_signal(trace[:, :2], FS)
    with pytest.raises(ValueError, match="must be finite"):
        pulse.pulse_signal(np.where(t[:, None] > 1, trace, np.nan), FS)
    with pytest.raises(ValueError, match="too few frames"):
        pulse.from_trace(trace[:50], FS)
    with pytest.raises(ValueError, match=r"pulse must be a signal of shape \(T,\)"):
        pulse.heart_rate(np.zeros((10, 2)), FS)


def test_meter_checks_its_parameters():
    with pytest.raises(ValueError, match=r"window_s must be at least 2.8\d* s \(86 frames"):
        pulse.PulseMeter(FS, window_s=2.0)
    with pytest.raises(ValueError, match="update_s must be at least one frame"):
        pulse.PulseMeter(FS, update_s=0.001)
    with pytest.raises(ValueError, match="method must be one of"):
        pulse.PulseMeter(FS, method="pbv")
    with pytest.raises(ValueError, match="band must satisfy"):
        pulse.PulseMeter(10.0, band=(0.7, 6.0))
    with pytest.raises(TypeError, match="roi must be a rectangle of four integers"):
        pulse.PulseMeter(FS, roi=(1, 2, 3))
    meter = pulse.PulseMeter(FS, roi=(0, 0, 50, 50))
    with pytest.raises(ValueError, match="must lie inside the 40 x 30 frame"):
        meter.push(np.zeros((30, 40, 3), np.uint8))
    meter = pulse.PulseMeter(FS)
    meter.push(np.zeros((30, 40, 3), np.uint8))
    with pytest.raises(ValueError, match=r"frame has shape \(30, 41, 3\), but the earlier frames had"):
        meter.push(np.zeros((30, 41, 3), np.uint8))
    with pytest.raises(ValueError, match=r"frame must be an RGB frame of shape \(H, W, 3\)"):
        meter.push(np.zeros((30, 40), np.uint8))
    # A failed push loses nothing: the meter goes on where it was.
    assert meter.frames_seen == 1


def test_face_clip_reads_a_plausible_rate():
    if not os.path.exists(FACE_CLIP):
        pytest.skip(f"the paper's face clip is not here ({FACE_CLIP})")
    from vidmag import io

    info = io.probe(FACE_CLIP)
    assert (info.width, info.height) == (528, 592)
    fs = float(info.fps)
    # Read once; the three methods share the forehead's colour trace.
    trace, roi = pulse.roi_means(io.read_frames(FACE_CLIP), FACE_FOREHEAD)
    assert roi == FACE_FOREHEAD and trace.shape == (info.n_frames, 3)
    for method in pulse.METHODS:
        result = pulse.from_trace(trace, fs, method)
        print(f"face.mp4 forehead {method}: {result.bpm:.1f} bpm, quality {result.quality_db:.1f} dB")
        # The paper reports a heart rate of 50 to 60 bpm for this subject.
        assert 40.0 <= result.bpm <= 100.0
        assert result.quality_db > 3.0


def test_docstring_examples_run():
    import doctest

    failures, tried = doctest.testmod(pulse, verbose=False)
    assert tried > 0 and failures == 0


def test_min_frames_checks_its_arguments():
    # issue 19 item 5: the one rule for numbers; min_frames("30") used to fail inside math.ceil
    assert pulse.min_frames(np.int64(30)) == pulse.min_frames(30.0) == 86
    assert pulse.min_frames(30.0, band=(np.float32(1.0), 4)) == 60
    with pytest.raises(TypeError, match=r"^fs must be a number"):
        pulse.min_frames("30")
    with pytest.raises(ValueError, match=r"^fs must be > 0 Hz"):
        pulse.min_frames(0.0)
    with pytest.raises(TypeError, match=r"^band\[0\] must be a number"):
        pulse.min_frames(30.0, band=("0.7", 4.0))
    with pytest.raises(ValueError, match=r"^band must satisfy"):
        pulse.min_frames(30.0, band=(0.0, 4.0))  # used to be a ZeroDivisionError
