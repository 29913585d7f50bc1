"""specux.icqt against librosa.icqt (issue 14): every resampler, both precisions, scale on and off, batches
and length; bad arguments name the parameter; backend="opencl" runs it (soxr_qq refused there, naming
res_type); a cqt -> icqt round trip.

librosa builds its inverse basis in complex64 whatever the precision of C, and libsoxr's qualities other than
"soxr_vhq" compute in single precision: the agreement is float32 rounding (measured 1e-8 to 4e-7 of the peak,
bounded here by 1e-6) for every resampler, complex64 and complex128 alike.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

librosa = pytest.importorskip("librosa")
pytest.importorskip("soxr")

import specux  # noqa: E402
from specux._resample import RES_TYPES  # noqa: E402

SR = 8000
KW = dict(sr=SR, hop_length=128, fmin=60.0, bins_per_octave=12)
N_BINS = 48


def _signal(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SR
    tones = 0.4 * np.sin(2 * np.pi * 440.0 * t) + 0.2 * np.sin(2 * np.pi * 97.0 * t)
    return tones + 0.05 * rng.standard_normal(n)


def _cqt(y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return librosa.cqt(y, n_bins=N_BINS, **{**KW, **kw})


def _rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.abs(b).max())


@pytest.mark.parametrize("res_type", RES_TYPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_librosa_every_resampler(res_type, dtype):
    C = _cqt(_signal().astype(dtype), res_type=res_type)
    ours = specux.icqt(C, **KW, res_type=res_type)
    theirs = librosa.icqt(C, **KW, res_type=res_type)
    assert ours.shape == theirs.shape
    # librosa returns float64 here (its scale factors promote); specux keeps the precision of C
    assert ours.dtype == (np.float32 if dtype == np.float32 else np.float64)
    assert _rel(ours, theirs) < 1e-6


@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("length", [None, 5000, 7000])
def test_scale_length_and_odd_octave_split(scale, length):
    # 30 bins: librosa's inverse groups octaves from the bottom (12 + 12 + 6), the forward from the top
    kw = dict(KW, hop_length=96)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        C = librosa.cqt(_signal(), n_bins=30, scale=scale, res_type="polyphase", **kw)
    ours = specux.icqt(C, **kw, scale=scale, length=length, res_type="polyphase")
    theirs = librosa.icqt(C, **kw, scale=scale, length=length, res_type="polyphase")
    assert ours.shape == theirs.shape
    assert _rel(ours, theirs) < 1e-6


def test_batch_rows_match_one_by_one():
    y = np.stack([_signal(seed=s) for s in range(3)]).reshape(3, 1, -1)
    C = _cqt(y, res_type="soxr_hq")  # (3, 1, n_bins, T)
    batch = specux.icqt(C, **KW, length=6000)
    assert batch.shape == (3, 1, 6000)
    for i in range(3):
        one = librosa.icqt(C[i, 0], **KW, length=6000)
        assert _rel(batch[i, 0], one) < 1e-6


def test_sparsity_window_tuning_and_filter_scale():
    kw = dict(KW, sparsity=0.0, window="hamming", tuning=0.3, filter_scale=0.8, norm=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        C = librosa.cqt(_signal(), n_bins=36, **kw)
    assert _rel(specux.icqt(C, **kw), librosa.icqt(C, **kw)) < 1e-6


def test_torch_tensor_in_torch_tensor_out():
    torch = pytest.importorskip("torch")
    C = _cqt(_signal().astype(np.float32), res_type="polyphase")
    out = specux.icqt(torch.from_numpy(C), **KW, res_type="polyphase")
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), specux.icqt(C, **KW, res_type="polyphase"), rtol=0, atol=1e-6)


def test_round_trip_error():
    # tones well inside the bank (60 Hz to 1.9 kHz): away from the ends the reconstruction error is 0.6 %
    # (the inverse is not exact: tones near the bank's edges or between bins come back with errors of 1-20 %)
    t = np.arange(8000) / SR
    y = sum(a * np.sin(2 * np.pi * f * t + p) for a, f, p in ((0.4, 440, 0), (0.2, 150, 1), (0.3, 700, 2)))
    kw = dict(KW, hop_length=64)
    C = specux.cqt(y, n_bins=60, **kw)
    y_hat = specux.icqt(C, length=y.size, **kw)
    mid = slice(1500, -1500)
    err = np.linalg.norm(y_hat[mid] - y[mid]) / np.linalg.norm(y[mid])
    assert err < 0.02
    # scale=False on both sides is the same inverse
    C0 = specux.cqt(y, n_bins=60, scale=False, **kw)
    np.testing.assert_allclose(specux.icqt(C0, length=y.size, scale=False, **kw), y_hat, atol=1e-9 * 2)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(hop_length=0), "hop_length"),
        (dict(hop_length=12.5), "hop_length"),
        (dict(sr=-1), "sr"),
        (dict(res_type="kaiser_best"), "res_type must be one of 'soxr_vhq'"),
        (dict(res_type=None), "res_type"),
        (dict(sparsity=1.0), "sparsity"),
        (dict(length=0), "length"),
        (dict(scale="yes"), "scale"),
        (dict(fmin=-5.0), "fmin"),
        (dict(dtype=np.complex64), "dtype"),
        (dict(fmin=3000.0), "Nyquist"),
    ],
)
def test_bad_arguments_name_the_parameter(kw, match):
    C = np.ones((24, 10), np.complex64)
    args = {**KW, **kw}
    with pytest.raises((ValueError, TypeError), match=match):
        specux.icqt(C, **args)


def test_bad_input_shape_and_dtype():
    with pytest.raises(ValueError, match="C must have shape"):
        specux.icqt(np.ones(10, np.complex64), **KW)
    with pytest.raises(TypeError, match="C must be complex64 or complex128"):
        specux.icqt(np.ones((12, 4), np.int32), **KW)


def test_device_backend_serves_icqt_and_refuses_soxr_qq_naming_cpu():
    """icqt runs on opencl (test_icqt_device_kernels.py checks its numbers); libsoxr's cubic "soxr_qq" has
    no device filter and is refused naming res_type and backend='cpu'."""
    C = np.ones((24, 10), np.complex64)
    try:
        y = specux.icqt(C, **KW, backend="opencl")
    except specux.BackendUnavailableError:
        pytest.skip("no OpenCL here")
    assert y.shape == (KW["hop_length"] * 9,) and y.dtype == np.float32
    with pytest.raises(ValueError, match=r"res_type.*cpu"):
        specux.icqt(C, **KW, res_type="soxr_qq", backend="opencl")
