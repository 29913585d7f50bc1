"""Bad input to ``vidmag.magnify`` fails up front with the right error type, naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

import vidmag
from vidmag.params import check_parameters

BUTTER = dict(alpha=10.0, lambda_c=16.0, fl=0.5, fh=3.0, chrom_attenuation=0.1)
GAUSS = dict(alpha=20.0, level=2, fl=1.5, fh=2.5, chrom_attenuation=1.0)
IIR = dict(alpha=10.0, lambda_c=16.0, r1=0.4, r2=0.05, chrom_attenuation=0.1)


def _run(frames, pipeline="laplacian_butterworth", compat=None, fs=30.0, **params):
    return vidmag.magnify(frames, fs=fs, pipeline=pipeline, backend="cpu", compat=compat, **params)


@pytest.fixture(scope="module")
def frames():
    return np.full((12, 32, 40, 3), 100, dtype=np.uint8)


def test_unknown_parameter_is_a_type_error_naming_it(frames):
    with pytest.raises(TypeError, match="level"):
        _run(frames, **BUTTER, level=3)
    with pytest.raises(TypeError, match="r1"):
        _run(frames, pipeline="gaussian_ideal", **GAUSS, r1=0.4)


def test_missing_parameter_is_a_type_error_naming_it(frames):
    params = dict(BUTTER)
    del params["lambda_c"]
    with pytest.raises(TypeError, match="lambda_c"):
        _run(frames, **params)


@pytest.mark.parametrize(("pipeline", "change", "name"), [
    ("laplacian_butterworth", {"fl": 3.0, "fh": 3.0}, "fl"),
    ("laplacian_butterworth", {"fh": 15.0}, "fh"),
    ("laplacian_butterworth", {"fl": 0.0}, "fl"),
    ("gaussian_ideal", {"fh": 16.0}, "fh"),
    ("gaussian_ideal", {"level": 9}, "level"),
    ("gaussian_ideal", {"level": 0}, "level"),
    ("gaussian_ideal", {"level": 1.5}, "level"),
    ("laplacian_butterworth", {"alpha": -1.0}, "alpha"),
    ("laplacian_butterworth", {"alpha": float("nan")}, "alpha"),
    ("laplacian_butterworth", {"chrom_attenuation": -0.1}, "chrom_attenuation"),
    ("laplacian_butterworth", {"lambda_c": 0.0}, "lambda_c"),
    ("laplacian_iir", {"r1": 0.0}, "r1"),
    ("laplacian_iir", {"r1": 1.5}, "r1"),
    ("laplacian_iir", {"r2": 0.5}, "r2"),
])
def test_bad_values_are_value_errors_naming_the_parameter(frames, pipeline, change, name):
    base = {"laplacian_butterworth": BUTTER, "gaussian_ideal": GAUSS, "laplacian_iir": IIR}[pipeline]
    with pytest.raises(ValueError, match=name):
        _run(frames, pipeline=pipeline, **{**base, **change})


def test_level_error_gives_the_allowed_range(frames):
    with pytest.raises(ValueError, match=r"between 1 and 3"):
        _run(frames, pipeline="gaussian_ideal", **{**GAUSS, "level": 4})


def test_nyquist_limit_depends_on_semantics(frames):
    # fh = 20 Hz at fs = 30: above Nyquist in Hz, but butter(1, 20 / 30) is fine for the MIT code
    with pytest.raises(ValueError, match="Nyquist"):
        _run(frames, **{**BUTTER, "fh": 20.0})
    assert len(_run(np.full((12, 32, 40, 3), 9, np.uint8), compat="mit", **{**BUTTER, "fh": 20.0})) == 2
    with pytest.raises(ValueError, match="fh"):
        _run(frames, compat="mit", **{**BUTTER, "fh": 30.0})


def test_fs_pipeline_compat_backend(frames):
    with pytest.raises(ValueError, match="fs"):
        _run(frames, fs=0.0, **BUTTER)
    with pytest.raises(ValueError, match="pipeline"):
        _run(frames, pipeline="laplacian_fir", **BUTTER)
    with pytest.raises(ValueError, match="compat"):
        _run(frames, compat="matlab", **BUTTER)
    with pytest.raises(ValueError, match="backend"):
        vidmag.magnify(frames, fs=30, pipeline="laplacian_iir", backend="tpu", **IIR)


@pytest.mark.parametrize(("bad", "match"), [
    (np.zeros((0, 32, 40, 3), np.uint8), "empty"),
    (np.zeros((5, 1, 1, 3), np.uint8), "too small"),
    (np.zeros((5, 8, 40, 3), np.uint8), "too small"),
    (np.zeros((5, 32, 40), np.uint8), "shape"),
    (np.zeros((5, 32, 40, 4), np.uint8), "shape"),
    (np.zeros((5, 32, 40, 3), np.int16), "dtype"),
    (np.full((5, 32, 40, 3), 1.5), r"\[0, 1\]"),
])
def test_bad_frames(bad, match):
    with pytest.raises(ValueError, match=match):
        _run(bad, pipeline="laplacian_iir", **IIR)


def test_mit_needs_more_than_ten_frames():
    frames = np.full((11, 32, 40, 3), 100, dtype=np.uint8)
    assert len(_run(frames, compat="mit", **BUTTER)) == 1
    with pytest.raises(ValueError, match="at least 12"):
        _run(frames, pipeline="laplacian_ideal", compat="mit",
             **{k: v for k, v in BUTTER.items()})
    with pytest.raises(ValueError, match="frames"):
        _run(frames[:10], compat="mit", **BUTTER)


def test_check_parameters_normalises():
    out = check_parameters("gaussian_ideal", 30, None, {**GAUSS, "level": 2.0, "alpha": 5})
    assert out["level"] == 2 and isinstance(out["level"], int) and out["alpha"] == 5.0
