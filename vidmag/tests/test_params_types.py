"""One rule for flags and numbers across vidmag's public functions.

Flags take True/False (numpy bools too); anything else, strings first, is a TypeError naming the flag: a
string is truthy, so ``side_by_side="no"`` used to mean yes. Numbers take Python and numpy numbers;
strings and bools are a TypeError naming the parameter.
"""

from __future__ import annotations

import os
from fractions import Fraction

import av
import numpy as np
import pytest

import vidmag
from vidmag import pipelines
from vidmag.params import check_bool, check_integer, check_number

IIR = dict(alpha=10.0, lambda_c=8.0, r1=0.4, r2=0.05, chrom_attenuation=0.5)
GAUSS = dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=0.5)
FILE_IIR = {"pipeline": "laplacian_iir", **IIR}


@pytest.fixture
def src(tmp_path, clip):
    path = tmp_path / "clip.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(30))
        stream.height, stream.width = clip.shape[1:3]
        stream.pix_fmt = "yuv420p"
        for i, array in enumerate(clip[:12]):
            frame = av.VideoFrame.from_ndarray(array, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def test_helpers():
    for value in (3, 3.5, np.int64(3), np.float32(0.5), np.uint8(7), Fraction(30000, 1001)):
        assert check_number("x", value) == float(value)
        assert type(check_number("x", value)) is float
    for value in ("3", b"3", True, np.True_, None, [3], np.array([3.0]), 1j):
        with pytest.raises(TypeError, match="x must be a number"):
            check_number("x", value)
    for value in (np.nan, np.float32(np.inf), -np.inf):
        with pytest.raises(ValueError, match="x must be a finite number"):
            check_number("x", value)
    assert check_integer("n", np.int64(4)) == 4 and check_integer("n", 4.0) == 4
    assert type(check_integer("n", np.int32(4))) is int
    with pytest.raises(ValueError, match="n must be an integer"):
        check_integer("n", 4.5)
    with pytest.raises(TypeError, match="n must be a number"):
        check_integer("n", "4")
    assert check_bool("f", np.False_) is False and check_bool("f", True) is True
    for value in ("no", "False", "", 0, 1, None, np.int64(1), [True]):
        with pytest.raises(TypeError, match="f must be True or False"):
            check_bool("f", value)


@pytest.mark.parametrize(("name", "value"), [
    ("fs", np.int64(30)), ("fs", np.float32(30.0)), ("alpha", np.float32(10.0)), ("lambda_c", np.int64(8)),
    ("r1", np.float32(0.375)), ("r2", np.float64(0.05)), ("chrom_attenuation", np.float32(0.5)),
])
def test_numpy_numbers_give_the_python_numbers_result(clip, name, value):
    kwargs = {"fs": 30.0, **IIR}
    expected = vidmag.magnify(clip, pipeline="laplacian_iir", backend="cpu", **{**kwargs, name: float(value)})
    got = vidmag.magnify(clip, pipeline="laplacian_iir", backend="cpu", **{**kwargs, name: value})
    np.testing.assert_array_equal(got, expected)  # the same float reaches the same code


def test_numpy_level_and_band(clip):
    expected = vidmag.magnify(clip, fs=30.0, pipeline="gaussian_ideal", backend="cpu", **GAUSS)
    got = vidmag.magnify(clip, fs=np.int64(30), pipeline="gaussian_ideal", backend="cpu",
                         **{**GAUSS, "level": np.int64(2), "fl": np.float32(1.5), "fh": np.float32(2.5)})
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", ["fs", "alpha", "lambda_c", "r1", "r2", "chrom_attenuation"])
@pytest.mark.parametrize("value", ["30", True, None, [1.0]])
def test_non_numbers_are_type_errors_naming_the_parameter(clip, name, value):
    kwargs = {"fs": 30.0, **IIR, name: value}
    with pytest.raises(TypeError, match=name):
        vidmag.magnify(clip, pipeline="laplacian_iir", backend="cpu", **kwargs)


@pytest.mark.parametrize("name", ["level", "fl", "fh"])
def test_strings_are_refused_for_the_band_and_level(clip, name):
    with pytest.raises(TypeError, match=name):
        vidmag.magnify(clip, fs=30.0, pipeline="gaussian_ideal", backend="cpu", **{**GAUSS, name: "2"})


def test_magnify_progress_is_a_flag(clip):
    for bad in ("yes", "no", 1, None):
        with pytest.raises(TypeError, match="progress"):
            vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu", progress=bad, **IIR)
    out = vidmag.magnify(clip, fs=30.0, pipeline="laplacian_iir", backend="cpu", progress=np.False_, **IIR)
    assert out.shape == clip.shape


def test_run_progress_is_a_callable_or_none(clip):
    with pytest.raises(TypeError, match="progress"):
        pipelines.run(lambda: iter(clip), fs=30.0, pipeline="laplacian_iir", progress="yes", **IIR)
    with pytest.raises(TypeError, match="n_frames"):
        pipelines.run(lambda: iter(clip), fs=30.0, pipeline="laplacian_iir", n_frames="24", **IIR)


@pytest.mark.parametrize("flag", ["side_by_side", "audio", "progress"])
@pytest.mark.parametrize("value", ["no", "False", "yes", 0, 1, None])
def test_magnify_file_flags_refuse_anything_but_bools(src, tmp_path, flag, value):
    out = tmp_path / "out.mp4"
    with pytest.raises(TypeError, match=flag):
        vidmag.magnify_file(src, out, backend="cpu", **{**FILE_IIR, flag: value})
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["clip.mp4"]


def test_magnify_file_takes_numpy_bools_numbers_and_a_progress_callable(src, tmp_path):
    seen: list[int] = []
    result = vidmag.magnify_file(
        src, tmp_path / "out.mp4", backend="cpu", side_by_side=np.False_, audio=np.True_,
        progress=seen.append, fs=np.int64(30), quality=np.int64(18),
        **{**FILE_IIR, "alpha": np.float32(10.0)},
    )
    assert (result.width, result.frames) == (64, 12) and seen == list(range(1, 13))
    wide = vidmag.magnify_file(src, tmp_path / "wide.mp4", backend="cpu", side_by_side=np.True_, **FILE_IIR)
    assert wide.width == 128


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"fs": "30"}, "fs"),
    ({"fs": True}, "fs"),
    ({"quality": "18"}, "quality"),
    ({"quality": True}, "quality"),
    ({"alpha": "10"}, "alpha"),
])
def test_magnify_file_numbers_refuse_strings(src, tmp_path, kwargs, name):
    out = tmp_path / "out.mp4"
    with pytest.raises(TypeError, match=name):
        vidmag.magnify_file(src, out, backend="cpu", **{**FILE_IIR, **kwargs})
    assert not out.exists()


def test_magnify_file_preset_with_string_fs_is_refused(src, tmp_path):
    # Through a preset, fs was converted with float(): "30" passed as 30 Hz.
    with pytest.raises(TypeError, match="fs"):
        vidmag.magnify_file(src, tmp_path / "out.mp4", preset="baby", fs="30", backend="cpu")
