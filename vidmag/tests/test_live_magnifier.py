"""vidmag.live.Magnifier: a feed pushed frame by frame equals the whole-clip run, parameter changes between
frames (exact for alpha, a settling re-design for the band), what it refuses, presets in their streaming
form, and its statistics (their fields only: tests never look at times)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import vidmag
from vidmag.backend.registry import BackendUnavailableError
from vidmag.live import LIVE_PRESETS, Magnifier, live_preset_params

STREAMING = ("laplacian_butterworth", "laplacian_iir")


def _feed(magnifier: Magnifier, frames) -> np.ndarray:
    return np.stack([magnifier.push(frame) for frame in frames])


def _within_one(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape and got.dtype == np.uint8
    assert np.abs(got.astype(np.int16) - expected).max() <= 1


@pytest.mark.parametrize("pipeline", STREAMING)
@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_a_feed_pushed_frame_by_frame_equals_the_whole_clip(backend, pipeline, clip, synthetic_params,
                                                            require_backend):
    require_backend(backend)
    params = synthetic_params[pipeline]
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=backend, **params)
    with Magnifier(pipeline, fs=30.0, backend=backend, **params) as magnifier:
        got = _feed(magnifier, clip)
        assert magnifier.shape == clip.shape[1:] and magnifier.backend == backend
    _within_one(got, expected)
    np.testing.assert_array_equal(got[0], clip[0])  # frame 0 starts the filters and comes out as it went in


@pytest.mark.parametrize("pipeline", STREAMING)
@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_an_alpha_change_keeps_the_filter_state_exactly(backend, pipeline, clip, synthetic_params,
                                                        require_backend):
    require_backend(backend)
    params = synthetic_params[pipeline]
    changed = {**params, "alpha": 25.0, "chrom_attenuation": 0.2}
    expected = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend=backend, **changed)
    with Magnifier(pipeline, fs=30.0, backend=backend, **params) as magnifier:
        before = _feed(magnifier, clip[:10])
        now = magnifier.set_params(alpha=25.0, chrom_attenuation=0.2)
        after = _feed(magnifier, clip[10:])
    assert now["alpha"] == 25.0 and magnifier.params == now
    # the frames after the change are those of a feed run with the new values from its start
    _within_one(after, expected[10:])
    assert np.abs(before[1:].astype(np.int16) - expected[1:10]).max() > 1  # and the old ones were not


@pytest.mark.parametrize("pipeline, change", [
    ("laplacian_butterworth", {"fl": 0.5, "fh": 4.0}),
    ("laplacian_iir", {"r1": 0.5, "r2": 0.1}),
])
def test_a_band_change_settles_on_the_new_band_without_a_restart(pipeline, change, make_clip,
                                                                 synthetic_params):
    clip = make_clip(T=90)
    params = synthetic_params[pipeline]
    old = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", **params)
    new = vidmag.magnify(clip, fs=30.0, pipeline=pipeline, backend="cpu", **{**params, **change})
    with Magnifier(pipeline, fs=30.0, backend="cpu", **params) as magnifier:
        got = _feed(magnifier, clip[:20])
        magnifier.set_params(**change)
        got = np.concatenate([got, _feed(magnifier, clip[20:])])
    np.testing.assert_array_equal(got[:20], old[:20])
    error = np.abs(got.astype(np.int16) - new).reshape(len(clip), -1)
    assert error[20:30].max() > 1 and not np.array_equal(got[20], clip[20])  # a transient, not a restart
    assert error[-10:].max() <= 1  # two seconds later: the new band's output


def test_raising_alpha_from_zero_restarts_the_filters(clip, synthetic_params):
    params = {**synthetic_params["laplacian_iir"], "alpha": 0.0}
    with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **params) as magnifier:
        _feed(magnifier, clip[:5])
        magnifier.set_params(alpha=10.0)
        got = _feed(magnifier, clip[5:])
    expected = vidmag.magnify(clip[5:], fs=30.0, pipeline="laplacian_iir", backend="cpu",
                              **synthetic_params["laplacian_iir"])
    _within_one(got, expected)  # a fresh start at the change: its first frame is its input


def test_lowering_alpha_to_zero_and_back_keeps_the_state(clip, synthetic_params):
    params = synthetic_params["laplacian_butterworth"]
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_butterworth", backend="cpu", **params)
    with Magnifier("laplacian_butterworth", fs=30.0, backend="cpu", **params) as magnifier:
        _feed(magnifier, clip[:8])
        magnifier.set_params(alpha=0.0)
        _feed(magnifier, clip[8:12])
        magnifier.set_params(alpha=params["alpha"])
        got = _feed(magnifier, clip[12:])
    _within_one(got, expected[12:])


def test_bad_parameter_changes_are_refused_and_change_nothing(clip, synthetic_params):
    params = synthetic_params["laplacian_butterworth"]
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_butterworth", backend="cpu", **params)
    with Magnifier("laplacian_butterworth", fs=30.0, backend="cpu", **params) as magnifier:
        got = [magnifier.push(clip[0])]
        for change, error, match in [
            ({"fh": 15.0}, ValueError, "fh must be < fs / 2"),
            ({"fl": 5.0}, ValueError, "fl must be < fh"),
            ({"alpha": -1}, ValueError, "alpha must be >= 0"),
            ({"alpha": "20"}, TypeError, "alpha must be a number"),
            ({"r1": 0.4}, TypeError, "unexpected parameter.*r1"),
        ]:
            with pytest.raises(error, match=match):
                magnifier.set_params(**change)
        assert magnifier.params == {**params, "alpha": 10.0}
        got += [magnifier.push(frame) for frame in clip[1:]]
    np.testing.assert_array_equal(np.stack(got), expected)


def test_parameters_set_before_the_first_frame_are_those_it_opens_with(clip, synthetic_params):
    params = synthetic_params["laplacian_iir"]
    expected = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu",
                              **{**params, "alpha": 4.0})
    with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **params) as magnifier:
        magnifier.set_params(alpha=4.0)
        _within_one(_feed(magnifier, clip), expected)


def test_frames_of_another_size_or_kind_are_refused(clip, synthetic_params):
    with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **synthetic_params["laplacian_iir"]) as m:
        m.push(clip[0])
        with pytest.raises(ValueError, match=r"frame: frame 1 is 47 x 64 .* 48 x 64, fixed by its first"):
            m.push(clip[1, :-1])
        for bad in (clip[1].astype(np.float32), clip[1, ..., :2], clip[:2], list(clip[1])):
            with pytest.raises(ValueError, match=r"frame must be a uint8 .H, W, 3. RGB array"):
                m.push(bad)
        assert m.stats.frames == 1
        m.push(clip[1])
    with pytest.raises(ValueError, match="closed Magnifier"):
        m.push(clip[2])
    m.close()  # twice is fine
    with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **synthetic_params["laplacian_iir"]) as m:
        with pytest.raises(ValueError, match="too small"):
            m.push(clip[0, :8, :8])


@pytest.mark.parametrize("pipeline", ["gaussian_ideal", "laplacian_ideal"])
def test_ideal_pipelines_cannot_stream_and_it_is_said_up_front(pipeline, synthetic_params):
    with pytest.raises(ValueError, match=rf"^{pipeline} cannot stream: .*whole clip.*laplacian_butterworth"):
        Magnifier(pipeline, fs=30.0, backend="cpu", **synthetic_params[pipeline])


def test_everything_else_is_checked_before_any_frame(synthetic_params):
    params = synthetic_params["laplacian_iir"]
    with pytest.raises(TypeError, match="needs preset= or pipeline="):
        Magnifier(fs=30.0, **params)
    with pytest.raises(TypeError, match=r"unexpected parameter.*fl"):
        Magnifier("laplacian_iir", fs=30.0, fl=1.0, **params)
    with pytest.raises(TypeError, match=r"missing required parameter.*alpha"):
        Magnifier("laplacian_iir", fs=30.0, **{k: v for k, v in params.items() if k != "alpha"})
    with pytest.raises(ValueError, match="fs must be > 0"):
        Magnifier("laplacian_iir", fs=0.0, **params)
    with pytest.raises(ValueError, match="pipeline must be one of"):
        Magnifier("laplacian_fft", fs=30.0, **params)
    with pytest.raises(BackendUnavailableError, match="cuda"):
        Magnifier("laplacian_iir", fs=30.0, backend="cuda", **params)


def test_presets_run_in_their_streaming_form(clip):
    magnifier = Magnifier(preset="face", fs=30.0, backend="cpu", alpha=20.0)
    pipeline, params = live_preset_params("face")
    assert magnifier.pipeline == pipeline == "laplacian_butterworth"
    assert magnifier.params == {**params, "alpha": 20.0}
    # the colour presets' band spans two octaves around the paper's (50 to 60 bpm), 72 bpm inside
    assert params["fl"] * 60 < 50 and params["fh"] * 60 > 72
    assert params["fh"] / params["fl"] == pytest.approx(4)
    assert magnifier.push(clip[0]).shape == clip.shape[1:]
    assert set(LIVE_PRESETS) >= {"face", "face2_colour", "baby", "wrist", "face2_motion"}
    assert LIVE_PRESETS["baby"] == ("laplacian_iir", vidmag.PRESETS["baby"].params)
    with pytest.raises(ValueError, match=r"'guitar_e' .laplacian_ideal. has no streaming form"):
        Magnifier(preset="guitar_e", fs=30.0)
    with pytest.raises(ValueError, match="no streaming form under compat='mit'"):
        Magnifier(preset="face", fs=30.0, compat="mit")
    with pytest.raises(ValueError, match="preset 'face' runs 'laplacian_butterworth' on a stream"):
        Magnifier("laplacian_iir", preset="face", fs=30.0)
    with pytest.raises(ValueError, match="preset must be one of"):
        Magnifier(preset="nope", fs=30.0)
    assert Magnifier(preset="baby", fs=30.0, compat="mit", backend="cpu").params["alpha"] == 10.0


def test_stats_count_frames_and_time_pushes(clip, synthetic_params):
    with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **synthetic_params["laplacian_iir"]) as m:
        assert m.stats.as_dict() == {"frames": 0, "fps": 0.0, "latency_ms": 0.0, "latency_p99_ms": 0.0}
        _feed(m, clip[:5])
        stats = m.stats
    assert stats.frames == 5 and stats.fps > 0
    assert 0 < stats.latency_ms <= stats.latency_p99_ms
    assert repr(m) == "<vidmag.live.Magnifier laplacian_iir on 'cpu', 48x64, closed>"


def test_a_phase_stream_keeps_its_phase_through_an_alpha_change(clip):
    # the phase pipelines' streams (riesz_*, cpu backend) keep the accumulated phase and the filters' state:
    # alpha acts after the filters, so the frames after the change are those of a feed run with the new
    # alpha from its start
    phase = [p for p in vidmag.PRESETS.values()
             if p.pipeline.startswith("riesz_") and p.pipeline in vidmag.params.STREAMING_PIPELINES]
    if not phase:
        pytest.skip("no streaming phase pipeline with a preset in this build")
    preset = phase[0]
    changed = {**preset.params, "alpha": preset.params["alpha"] / 2}
    with Magnifier(preset=preset.name, fs=30.0, backend="cpu") as magnifier:
        _feed(magnifier, clip[:4])
        magnifier.set_params(alpha=changed["alpha"])
        got = _feed(magnifier, clip[4:8])
    expected = vidmag.magnify(clip[:8], fs=30.0, pipeline=preset.pipeline, backend="cpu", **changed)[4:8]
    _within_one(got, expected)


def test_auto_picks_a_backend_that_runs_a_phase_pipeline(clip):
    # "auto" is chosen per pipeline: for a phase pipeline among vidmag.params.PHASE_BACKENDS's backends, not
    # the first backend overall
    preset = next(p for p in vidmag.PRESETS.values() if p.pipeline in vidmag.params.PHASE_PIPELINES
                  and p.pipeline in vidmag.params.STREAMING_PIPELINES)
    with Magnifier(preset=preset.name, fs=30.0) as magnifier:
        assert magnifier.backend in vidmag.params.PHASE_BACKENDS[preset.pipeline]
        got = _feed(magnifier, clip[:4])
    expected = vidmag.magnify(clip[:4], fs=30.0, pipeline=preset.pipeline, backend=magnifier.backend,
                              **preset.params)
    _within_one(got, expected)


def test_a_saturating_alpha_warns_when_the_feed_is_closed(clip, synthetic_params):
    # issue 19 item 7: alpha = 1e9 clipped most of a live feed's bytes without a word; the rule of
    # vidmag.magnify (SaturationWarning when the feed ends), for the alpha in force since its last change
    params = synthetic_params["laplacian_iir"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", vidmag.SaturationWarning)
        with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **params) as magnifier:
            _feed(magnifier, clip)  # a moderate alpha: silent
        with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **{**params, "alpha": 1e9}) as magnifier:
            _feed(magnifier, clip[:12])
            magnifier.set_params(alpha=params["alpha"])  # the verdict is about the alpha now in force
            _feed(magnifier, clip[12:])
    with pytest.warns(vidmag.SaturationWarning, match=r"alpha = 1e\+09 saturates the output"):
        with Magnifier("laplacian_iir", fs=30.0, backend="cpu", **{**params, "alpha": 1e9}) as magnifier:
            _feed(magnifier, clip)
    with warnings.catch_warnings():
        warnings.simplefilter("error", vidmag.SaturationWarning)
        magnifier.close()  # closing twice warns once
