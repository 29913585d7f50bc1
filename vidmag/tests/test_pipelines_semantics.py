"""The four pipelines through the public API: both semantics, every MIT quirk, and the bounded-memory
contract of ``vidmag.pipelines.run`` (streaming pipelines read ahead O(1) frames; ideal ones read twice)."""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag import pipelines
from vidmag._reference import colour
from vidmag._reference import pipelines as reference

PIPELINES = ["gaussian_ideal", "laplacian_ideal", "laplacian_butterworth", "laplacian_iir"]
STREAMING = ["laplacian_butterworth", "laplacian_iir"]


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("name", PIPELINES)
def test_cpu_backend_equals_whole_clip_reference(name, compat, clip, synthetic_params):
    p = synthetic_params[name]
    got = vidmag.magnify(clip, fs=30, pipeline=name, backend="cpu", compat=compat, **p)
    want = reference.PIPELINES[name](clip, fs=30, mit=compat == "mit", **p)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("name", "mit_frames"), [
    ("gaussian_ideal", 14), ("laplacian_ideal", 13), ("laplacian_butterworth", 14), ("laplacian_iir", 14)])
def test_output_frame_counts(name, mit_frames, clip, synthetic_params):
    p = synthetic_params[name]
    assert len(vidmag.magnify(clip, fs=30, pipeline=name, backend="cpu", **p)) == 24
    assert len(vidmag.magnify(clip, fs=30, pipeline=name, backend="cpu", compat="mit", **p)) == mit_frames


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("name", STREAMING)
def test_streaming_frame_0_is_the_input_bytes(name, compat, clip, synthetic_params):
    out = vidmag.magnify(clip, fs=30, pipeline=name, backend="cpu", compat=compat, **synthetic_params[name])
    np.testing.assert_array_equal(out[0], clip[0])
    round_trip = colour.yiq_to_rgb_uint8(colour.rgb_to_yiq(clip[1]), mit=compat == "mit")
    assert not np.array_equal(out[1], round_trip)


def test_gaussian_frame_0_is_amplified(clip, synthetic_params):
    for compat in (None, "mit"):
        out = vidmag.magnify(clip, fs=30, pipeline="gaussian_ideal", backend="cpu", compat=compat,
                             **synthetic_params["gaussian_ideal"])
        assert np.abs(out[0].astype(int) - clip[0]).max() >= 2


def test_laplacian_ideal_lags_one_frame_under_mit(clip, synthetic_params):
    p = dict(synthetic_params["laplacian_ideal"], alpha=0.0, lambda_c=1e-9)  # every gain 0: no signal
    mit = vidmag.magnify(clip, fs=30, pipeline="laplacian_ideal", backend="cpu", compat="mit", **p)
    np.testing.assert_array_equal(mit, colour.yiq_to_rgb_uint8(colour.rgb_to_yiq(clip[1:14]), mit=True))
    default = vidmag.magnify(clip, fs=30, pipeline="laplacian_ideal", backend="cpu", **p)
    np.testing.assert_array_equal(default, clip)  # exact inverse: the round trip keeps the bytes


def test_mit_reads_only_the_first_t_minus_10_frames(clip, synthetic_params):
    p = synthetic_params["gaussian_ideal"]
    changed = clip.copy()
    changed[-10:] = 255 - changed[-10:]
    a = vidmag.magnify(clip, fs=30, pipeline="gaussian_ideal", backend="cpu", compat="mit", **p)
    b = vidmag.magnify(changed, fs=30, pipeline="gaussian_ideal", backend="cpu", compat="mit", **p)
    np.testing.assert_array_equal(a, b)
    c = vidmag.magnify(changed, fs=30, pipeline="gaussian_ideal", backend="cpu", **p)
    d = vidmag.magnify(clip, fs=30, pipeline="gaussian_ideal", backend="cpu", **p)
    assert not np.array_equal(c[:14], d[:14])


def test_mit_ideal_is_half_the_default_gain():
    # A pure in-band pulse on a flat patch: the MIT filter passes half of it, so the default semantics with
    # alpha halved gives (nearly) the same frames. Frames 0 .. T - 11 of a clip whose length makes the same
    # FFT bins in both.
    T, fs = 40, 30.0
    t = np.arange(T) / fs
    base = np.full((T, 32, 32, 3), 120.0)
    base[..., 0] += 1.0 * np.sin(2 * np.pi * 3.0 * t)[:, None, None]
    clip = np.round(base).astype(np.uint8)
    p = dict(level=2, fl=2.0, fh=4.0, chrom_attenuation=1.0)
    mit = vidmag.magnify(clip, fs=fs, pipeline="gaussian_ideal", backend="cpu", compat="mit", alpha=40, **p)
    default = vidmag.magnify(clip[:30], fs=fs, pipeline="gaussian_ideal", backend="cpu", alpha=20, **p)
    assert np.abs(mit.astype(int) - default).max() <= 1
    assert np.abs(mit.astype(int) - clip[:30]).max() >= 10


def test_float_input_equals_uint8_input(clip, synthetic_params):
    p = synthetic_params["laplacian_iir"]
    a = vidmag.magnify(clip, fs=30, pipeline="laplacian_iir", backend="cpu", **p)
    b = vidmag.magnify(clip.astype(np.float32) / 255, fs=30, pipeline="laplacian_iir", backend="cpu", **p)
    np.testing.assert_array_equal(a, b)


class CountingSource:
    """A source that counts its calls and how far its iterators have been read."""

    def __init__(self, frames):
        self.frames = frames
        self.calls = 0
        self.read = 0

    def __call__(self):
        self.calls += 1
        self.read = 0
        for frame in self.frames:
            self.read += 1
            yield frame


@pytest.mark.parametrize("compat", [None, "mit"])
@pytest.mark.parametrize("name", STREAMING)
def test_streaming_reads_one_pass_with_bounded_look_ahead(name, compat, clip, synthetic_params,
                                                          monkeypatch):
    from vidmag.backend.numpy import NumpyOperations

    batch = 3  # frames per batch (the cpu backend sizes batches by values; make it 3 frames here)
    monkeypatch.setattr(NumpyOperations, "batch_values", batch * clip[0].size)
    source = CountingSource(clip)
    frames = pipelines.run(source, fs=30, pipeline=name, backend="cpu", compat=compat,
                           **synthetic_params[name])
    assert source.calls == 1  # run reads frame 0 to validate, before returning
    ahead = 10 if compat == "mit" else 0
    for i, _ in enumerate(frames, start=1):
        assert source.read <= i + batch + ahead
    assert source.calls == 1


@pytest.mark.parametrize("name", ["gaussian_ideal", "laplacian_ideal"])
def test_ideal_reads_the_source_twice(name, clip, synthetic_params):
    source = CountingSource(clip)
    out = list(pipelines.run(source, fs=30, pipeline=name, backend="cpu", **synthetic_params[name]))
    assert source.calls == 2 and len(out) == 24


def test_run_validates_before_returning(clip, synthetic_params):
    p = dict(synthetic_params["laplacian_iir"], r1=2.0)
    with pytest.raises(ValueError, match="r1"):
        pipelines.run(lambda: iter(clip), fs=30, pipeline="laplacian_iir", backend="cpu", **p)
    with pytest.raises(ValueError, match="empty"):
        pipelines.run(lambda: iter([]), fs=30, pipeline="laplacian_iir", backend="cpu",
                      **synthetic_params["laplacian_iir"])


def test_run_reports_progress_and_too_short_mit_stream(clip, synthetic_params):
    seen = []
    p = synthetic_params["laplacian_butterworth"]
    out = list(pipelines.run(lambda: iter(clip), fs=30, pipeline="laplacian_butterworth", backend="cpu",
                             progress=seen.append, **p))
    assert seen == list(range(1, 25)) and len(out) == 24
    frames = pipelines.run(lambda: iter(clip[:9]), fs=30, pipeline="laplacian_butterworth", backend="cpu",
                           compat="mit", **p)
    with pytest.raises(ValueError, match="at least 11"):
        list(frames)


def test_run_rejects_a_frame_of_another_size(clip, synthetic_params):
    frames = [*clip[:5], clip[5, :40]]
    out = pipelines.run(lambda: iter(frames), fs=30, pipeline="laplacian_iir", backend="cpu",
                        **synthetic_params["laplacian_iir"])
    with pytest.raises(ValueError, match="frame 5"):
        list(out)


def test_odd_sizes_and_a_side_of_five_times_a_power_of_two(synthetic_params, make_clip):
    for H, W in ((37, 29), (20, 41)):
        clip = make_clip(T=14, H=H, W=W, seed=H)
        for name in PIPELINES:
            p = dict(synthetic_params[name], **({"level": 1} if name == "gaussian_ideal" else {}))
            got = vidmag.magnify(clip, fs=30, pipeline=name, backend="cpu", compat="mit", **p)
            want = reference.PIPELINES[name](clip, fs=30, mit=True, **p)
            np.testing.assert_array_equal(got, want)
