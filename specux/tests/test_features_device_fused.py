"""The fused power-and-bank path of the device features (specux._runtime.feature_exec.FUSED): the bank kernel
reads the stft's complex spectrum and takes its modulus as it loads, so the power spectrogram is never
written. On the ``opencl`` backend (PoCL in CI), against the CPU backend for every bank norm / htk / power /
n_mels edge case the path covers, against the unfused chain (a modulus kernel, then the bank), and the
unfused chain itself against the CPU, which stays the route of S inputs. Then power_to_db / amplitude_to_db
of device arrays (feature_exec.to_db) against specux.convert for every ref / amin / top_db case, NaN, an
infinite peak, complex and signed inputs, float16 storage and the refusal of a NaN ``ref=np.max``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from specux_test_support import device_dtypes, reference_dtype, rel_err, tolerance

import specux
from specux._codegen import feature_kernels as fk
from specux._codegen import spectral_kernels as sk
from specux._runtime import device_array as da
from specux._runtime import feature_exec as fx
from specux._runtime import spectral_exec as se

rng = np.random.default_rng(20261202)


def _compare(op, got, want, dtype, what):
    ref = reference_dtype(dtype)
    assert got.dtype == np.dtype(ref), (what, got.dtype)
    err = rel_err(got, want)
    assert err <= tolerance(op, ref), f"{op} {what}: relative error {err:.2e} > {tolerance(op, ref):.0e}"


@pytest.fixture
def no_modulus_pass(monkeypatch):
    """Fails any chain that still writes the power spectrogram with the separate modulus kernel."""

    def refuse(*args, **kwargs):
        raise AssertionError("the fused chain launched the modulus kernel")

    monkeypatch.setattr(se, "_modulus", refuse)


MEL_CASES = [
    # (signal shape, options): every bank norm and scale, power 1 / 2 / other, n_mels edges
    ((2, 2400), {"sr": 16000, "n_fft": 512, "hop_length": 160, "n_mels": 80}),
    ((2400,), {"sr": 16000, "n_fft": 512, "hop_length": 160, "n_mels": 80, "htk": True, "norm": None}),
    ((2, 2000), {"sr": 22050, "n_fft": 400, "n_mels": 40, "norm": "slaney", "power": 1.0}),
    ((1, 2000), {"sr": 22050, "n_fft": 512, "n_mels": 40, "norm": 2.0, "power": 1.5}),
    ((3, 1500), {"sr": 16000, "n_fft": 256, "n_mels": 1}),
    ((2, 1500), {"sr": 16000, "n_fft": 256, "n_mels": 128}),  # empty filters: more bands than bins
    ((2, 1800), {"compat": "torchaudio", "n_mels": 40, "power": 1.0}),
    ((2, 2, 1800), {"sr": 16000, "n_fft": 512, "n_mels": 64, "fmin": 100.0, "fmax": 6000.0, "center": False}),
]


def _both(op, y, dtype, kw):
    fn = getattr(specux, op)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # empty mel filters warn on both backends alike
        got = fn(y, backend="opencl", **kw)
        want = fn(y.astype(reference_dtype(dtype)), backend="cpu", **kw)
    return got, want


@pytest.mark.parametrize("case", range(len(MEL_CASES)))
def test_fused_melspectrogram_matches_cpu(opencl, no_modulus_pass, case):
    shape, kw = MEL_CASES[case]
    for dtype in device_dtypes(opencl):
        y = rng.standard_normal(shape).astype(dtype)
        got, want = _both("melspectrogram", y, dtype, kw)
        _compare("melspectrogram", got, want, dtype, f"{dtype} {shape} {kw}")


CHAIN_CASES = [
    # the dB / log store and the DCT after the fused bank, and chroma's bank with its column norm
    ("mfcc", (2, 1800), {"sr": 16000, "n_fft": 512, "n_mels": 40, "n_mfcc": 13, "lifter": 22.0}),
    ("mfcc", (2, 2, 1500), {"compat": "torchaudio", "n_mels": 40, "n_mfcc": 20, "top_db": 30.0}),
    ("mfcc", (1600,), {"sr": 16000, "n_fft": 512, "n_mels": 40, "top_db": None, "power": 1.0}),
    ("mfcc", (2, 1600), {"sr": 16000, "n_fft": 512, "n_mels": 40, "htk": True, "norm": None, "power": 1.5}),
    ("lfcc", (2, 1600), {"n_filter": 40, "n_lfcc": 20}),
    ("lfcc", (1600,), {"n_filter": 40, "n_lfcc": 20, "log_lf": True, "norm": None, "power": 1.0}),
    ("chroma_stft", (2, 4000), {"sr": 22050, "n_fft": 1024, "tuning": 0.0}),
    ("chroma_stft", (4000,), {"sr": 22050, "n_fft": 1024, "tuning": 0.0, "norm": None, "n_chroma": 24}),
]


@pytest.mark.parametrize("case", range(len(CHAIN_CASES)))
def test_fused_chains_match_cpu(opencl, no_modulus_pass, case):
    op, shape, kw = CHAIN_CASES[case]
    dtypes = device_dtypes(opencl)
    dtype = dtypes[case % len(dtypes)]
    y = rng.standard_normal(shape).astype(dtype)
    if case == 0:
        y[0, 700:760] = np.nan  # frames touching a NaN
    got, want = _both(op, y, dtype, kw)
    _compare(op, got, want, dtype, f"{dtype} {shape} {kw}")


@pytest.mark.parametrize("case", [0, 2, 3, 5])
def test_unfused_chain_still_matches_cpu_and_the_fused_one(opencl, monkeypatch, case):
    shape, kw = MEL_CASES[case]
    y = rng.standard_normal(shape).astype("float32")
    fused, want = _both("melspectrogram", y, "float32", kw)
    monkeypatch.setattr(fx, "FUSED", False)
    unfused, _ = _both("melspectrogram", y, "float32", kw)
    _compare("melspectrogram", unfused, want, "float32", f"unfused {shape} {kw}")
    # the same expressions in the same order: only the compiler's contractions may differ
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-6 * float(np.max(np.abs(unfused))))


def test_s_inputs_take_the_real_bank(opencl, no_modulus_pass):
    S = np.abs(rng.standard_normal((2, 257, 20))).astype("float32") ** 2
    got = specux.melspectrogram(S=S, sr=16000, n_mels=40, backend="opencl")
    want = specux.melspectrogram(S=S, sr=16000, n_mels=40, backend="cpu")
    _compare("melspectrogram", got, want, "float32", "S")


def test_apply_refuses_a_complex_input_without_a_modulus_and_the_reverse(opencl):
    rt = opencl.runtime
    X = da.upload(rt, np.zeros((1, 5, 3), np.complex64))
    S = da.upload(rt, np.zeros((1, 5, 3), np.float32))
    mat = fx.sparse(rt, np.ones((2, 5)), "f32")
    with pytest.raises(ValueError, match="modulus"):
        fx.apply(rt, X, mat)
    with pytest.raises(ValueError, match="modulus"):
        fx.apply(rt, S, mat, modulus=sk.MOD_POWER2)


def test_cover_has_the_fused_variants():
    specs = [s for s in fk.cover(("f32", "f64")) if isinstance(s, fk.BankSpec) and s.modulus >= 0]
    kinds = {(s.prec, s.modulus, s.post) for s in specs}
    for prec in ("f32", "f64"):
        for kind in (sk.MOD_ABS, sk.MOD_POWER2, sk.MOD_POWER):
            assert (prec, kind, fk.POST_NONE) in kinds
        for post in (fk.POST_DB, fk.POST_LOG):
            assert (prec, sk.MOD_POWER2, post) in kinds


# -- power_to_db / amplitude_to_db of device arrays (feature_exec.to_db) ------------------------------------


def _to_db(opencl, x, amplitude, ref, amin, top_db):
    rt = opencl.runtime
    p = fx.DbParams(amplitude, None if ref is np.max else ref, amin, top_db)
    return da.download(rt, fx.to_db(rt, (da.upload(rt, x),), p))


DB_CASES = [
    # (amplitude, ref, amin, top_db, what the input holds)
    (False, 1.0, 1e-10, 80.0, "wide"),
    (False, np.max, 1e-10, 60.0, "wide"),
    (False, -2.0, 1e-10, None, "wide"),  # the reference's sign is dropped
    (False, 1e-20, 1e-10, 0.0, "wide"),  # a reference below amin is floored at amin; top_db 0
    (False, 1.0, 1e-10, 80.0, "nan"),  # NaN stays NaN and does not poison the floor
    (False, 1.0, 1e-10, 80.0, "inf"),  # an infinite peak: no floor
    (False, np.max, 1e-10, 80.0, "complex"),
    (True, 1.0, 1e-5, 80.0, "signed"),
    (True, np.max, 1e-5, 40.0, "signed"),
    (True, np.max, 1e-5, None, "complex"),
    (False, np.max, 1e-10, 80.0, "long"),  # several chunks in the reductions
]


def _db_input(kind, dtype, rng_):
    shape = (3, 40, 33)
    if kind == "long":
        shape = (4, 257, 400)
    x = rng_.standard_normal(shape) ** 2 * 10.0 ** rng_.uniform(-12, 3, shape)
    if kind == "signed":
        x = x * np.sign(rng_.standard_normal(shape))
    if kind == "complex":
        x = x * np.exp(2j * np.pi * rng_.uniform(size=shape))
        return x.astype(np.result_type(dtype, np.complex64))
    x = x.astype(dtype)
    if kind == "nan":
        x[1, 3, :] = np.nan
    if kind == "inf":
        x[0, 0, 0] = np.inf
    return x


@pytest.mark.parametrize("case", range(len(DB_CASES)))
def test_device_db_matches_the_host_conversion(opencl, case):
    amplitude, ref, amin, top_db, kind = DB_CASES[case]
    public = specux.amplitude_to_db if amplitude else specux.power_to_db
    for dtype in device_dtypes(opencl, ("float32", "float64")):
        x = _db_input(kind, dtype, rng)
        got = _to_db(opencl, x, amplitude, ref, amin, top_db)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # complex input warns on the host
            want = public(x, ref=ref, amin=amin, top_db=top_db)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        finite = np.isfinite(want)
        err = np.max(np.abs(got[finite] - want[finite])) / np.max(np.abs(want[finite]))
        assert err <= tolerance("melspectrogram", dtype), f"{DB_CASES[case]} {dtype}: {err:.2e}"


def test_device_db_float16_storage_and_empty(opencl):
    x = _db_input("wide", "float16", rng)
    got = _to_db(opencl, x, False, np.max, 1e-10, 80.0)
    want = specux.power_to_db(x.astype(np.float32), ref=np.max, top_db=80.0)
    assert got.dtype == np.float32
    assert np.max(np.abs(got - want)) / np.max(np.abs(want)) <= tolerance("melspectrogram", "float32")
    assert _to_db(opencl, np.zeros((0, 5), np.float32), False, 1.0, 1e-10, 80.0).shape == (0, 5)


def test_device_db_refuses_a_nan_max_reference_as_the_host_does(opencl):
    x = _db_input("nan", "float32", rng)
    with pytest.raises(ValueError, match="returned nan"):
        specux.power_to_db(x, ref=np.max)
    with pytest.raises(ValueError, match="returned nan"):
        _to_db(opencl, x, False, np.max, 1e-10, 80.0)


def test_db_exec_functions_named_as_the_public_ones(opencl):
    rt = opencl.runtime
    x = da.upload(rt, _db_input("signed", "float32", rng))
    p = fx.DbParams(True, 1.0, 1e-5, 80.0)
    np.testing.assert_array_equal(
        da.download(rt, fx.amplitude_to_db(rt, (x,), p)), da.download(rt, fx.to_db(rt, (x,), p))
    )
    with pytest.raises(ValueError, match="amplitude"):
        fx.power_to_db(rt, (x,), p)
    with pytest.raises(ValueError, match="amplitude"):
        fx.amplitude_to_db(rt, (x,), fx.DbParams(False, 1.0, 1e-10, 80.0))
