"""The synthetic live scene: frames, determinism, the truth it reports, and its parameter checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vidmag import synthetic


def _inner(roi):
    # The middle half of the face's rectangle: skin only, even under a few pixels of sway.
    x, y, w, h = roi
    return slice(y + h // 4, y + 3 * h // 4), slice(x + w // 4, x + 3 * w // 4)


def _peak_bpm(series, fs):
    series = series - series.mean()
    spectrum = np.abs(np.fft.rfft(series * np.hanning(len(series))))
    freqs = np.fft.rfftfreq(len(series), 1 / fs)
    band = freqs >= 0.5
    return 60 * freqs[band][np.argmax(spectrum[band])]


def test_frames_shape_dtype_and_length():
    scene = synthetic.scene(96, 64, n_frames=5)
    frames = list(scene)
    assert len(frames) == 5 == len(scene)
    assert all(f.shape == (64, 96, 3) and f.dtype == np.uint8 for f in frames)
    # Each frame is its own array: keeping one is safe while the scene goes on.
    assert not np.shares_memory(frames[0], frames[1])
    assert len(synthetic.scene(64, 48, fs=20.0, seconds=1.5)) == 30


def test_endless_without_a_length():
    scene = synthetic.scene(64, 48)
    assert scene.n_frames is None
    assert len(list(itertools.islice(scene, 40))) == 40
    with pytest.raises(TypeError, match="endless"):
        len(scene)


def test_same_seed_same_frames_other_seed_other_frames():
    a = np.stack(list(synthetic.scene(64, 48, n_frames=4, seed=3, motion=2.0)))
    b = np.stack(list(synthetic.scene(64, 48, n_frames=4, seed=3, motion=2.0)))
    c = np.stack(list(synthetic.scene(64, 48, n_frames=4, seed=4, motion=2.0)))
    np.testing.assert_array_equal(a, b)
    assert np.mean(a != c) > 0.5


def test_face_roi_holds_a_skin_coloured_patch():
    width, height = 160, 120
    x, y, w, h = synthetic.face_roi(width, height)
    assert 0 <= x and x + w <= width and 0 <= y and y + h <= height
    scene = synthetic.scene(width, height, n_frames=1, noise=0.0, pulse_amplitude=0.0)
    assert scene.roi == (x, y, w, h)
    frame = next(scene).astype(float)
    skin = frame[_inner(scene.roi)].mean(axis=(0, 1))
    # Skin: red over green over blue, and near SKIN_RGB at the face's middle.
    assert skin[0] > skin[1] > skin[2]
    np.testing.assert_allclose(skin, synthetic.SKIN_RGB, rtol=0.12)


@pytest.mark.parametrize("bpm", [48.0, 72.0, 120.0, 180.0])
def test_patch_mean_pulses_at_bpm(bpm):
    fs = 30.0
    scene = synthetic.scene(96, 72, fs=fs, bpm=bpm, seconds=10.0, noise=2.0)
    assert scene.bpm == bpm and scene.pulse_hz == pytest.approx(bpm / 60)
    frames = np.stack(list(scene)).astype(float)
    green = frames[(slice(None), *_inner(scene.roi), 1)].mean(axis=(1, 2))
    assert _peak_bpm(green, fs) == pytest.approx(bpm, abs=3.0)


def test_pulse_is_mostly_green_of_the_given_amplitude():
    scene = synthetic.scene(128, 96, seconds=10.0, bpm=72.0, noise=2.0, pulse_amplitude=1.5)
    frames = np.stack(list(scene)).astype(float)
    means = frames[(slice(None), *_inner(scene.roi))].mean(axis=(1, 2))
    t = np.arange(len(means)) / scene.fs
    # Amplitude of the fundamental in each channel (an exact bin: 12 cycles in 10 s).
    basis = np.exp(-2j * np.pi * scene.pulse_hz * t)
    amplitude = 2 * np.abs(((means - means.mean(axis=0)) * basis[:, None]).mean(axis=0))
    red, green, blue = amplitude
    assert green > red and green > blue
    # Shading makes the inner region a little darker than the centre, so a little less than 1.5.
    assert green == pytest.approx(1.5, rel=0.12)


def test_motion_moves_the_picture_and_changes_the_lighting():
    still = np.stack(list(synthetic.scene(96, 72, seconds=4.0, noise=0.0, pulse_amplitude=0.0)))
    moving = np.stack(list(synthetic.scene(96, 72, seconds=4.0, noise=0.0, pulse_amplitude=0.0, motion=4.0)))
    assert np.all(still == still[0])
    assert np.mean(moving[0] != moving[-1]) > 0.3
    brightness = moving.reshape(len(moving), -1).mean(axis=1)
    assert brightness.max() - brightness.min() > 1.0


def test_noise_has_the_given_spread():
    quiet = next(synthetic.scene(96, 72, n_frames=1, noise=0.0, pulse_amplitude=0.0)).astype(float)
    noisy = next(synthetic.scene(96, 72, n_frames=1, noise=4.0, pulse_amplitude=0.0)).astype(float)
    assert np.std(noisy - quiet) == pytest.approx(4.0, rel=0.1)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"width": 16}, ValueError, "width must be 32 to 8192"),
        ({"height": 10_000}, ValueError, "height must be 32 to 8192"),
        ({"width": 64.5}, ValueError, "width must be an integer"),
        ({"fs": 0.0}, ValueError, "fs must be > 0"),
        ({"fs": "30"}, TypeError, "fs must be a number"),
        ({"bpm": 10.0}, ValueError, "bpm must be 20 to 300"),
        ({"bpm": 200.0, "fs": 6.0}, ValueError, "below the Nyquist rate"),
        ({"seconds": 1.0, "n_frames": 30}, ValueError, "at most one of seconds and n_frames"),
        ({"seconds": -1.0}, ValueError, "seconds must be > 0"),
        ({"seconds": 0.01}, ValueError, "at least one frame"),
        ({"n_frames": 0}, ValueError, "n_frames must be >= 1"),
        ({"noise": -1.0}, ValueError, "noise must be 0 to 64"),
        ({"motion": 50.0}, ValueError, "motion must be 0 to 4.8 pixels"),
        ({"motion": -1.0}, ValueError, "motion must be 0 to"),
        ({"seed": -1}, ValueError, "seed must be >= 0"),
        ({"pulse_amplitude": 100.0}, ValueError, "pulse_amplitude must be 0 to 32"),
        ({"pulse_amplitude": True}, TypeError, "pulse_amplitude must be a number"),
    ],
)
def test_parameters_are_checked_when_called(kwargs, error, match):
    args = {"width": 64, "height": 48, **kwargs}
    # Checked at the call, not at the first frame.
    with pytest.raises(error, match=match):
        synthetic.scene(**args)


def test_face_roi_checks_its_size():
    with pytest.raises(ValueError, match="width must be 32 to 8192"):
        synthetic.face_roi(8, 48)
