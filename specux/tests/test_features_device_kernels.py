"""melspectrogram, mfcc and lfcc as generated kernels (specux._codegen.feature_kernels, run by
specux._runtime.feature_exec) on the ``opencl`` backend (PoCL in CI), against the CPU backend.

- the public functions with ``backend="opencl"`` against ``backend="cpu"`` (float32, float64, float16 storage
  compared with the CPU on the same half values widened), S and y inputs, every bank norm and compat, batched,
  unbatched and non-contiguous inputs, a NaN frame;
- the logarithm and top_db stages through the exec module with every log mode and floor rule (the CPU's
  :func:`specux._backends.cpu.features._cepstrum` on the same parameters), including NaN and infinite peaks;
- the adjoints: the bank's transpose and the logarithm stage by the dot-product test ``<A x, y> = <x, A^T y>``
  and against the CPU backend's backward (:func:`specux._backends.cpu.adjoint_features.log_backward`).

Sweeps build with ``-cl-opt-disable`` (PoCL's first build of each kernel then costs well under a second); the
kernels here are few (one bank template, two reductions, one elementwise adjoint), so the sweep is over
options, not kernels.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from specux_test_support import device_dtypes, reference_dtype, rel_err, tolerance

import specux
from specux._backends.cpu.adjoint_features import log_backward
from specux._backends.cpu.features import _cepstrum, _log
from specux._codegen import feature_kernels as fk
from specux._runtime import device_array as da
from specux._runtime import feature_exec as fx
from specux._spec.features import dct_matrix
from specux._validate import CepstralParams, MelParams

rng = np.random.default_rng(20261201)


def _power_spec(shape, dtype):
    """A power spectrogram with a wide dynamic range (so the top_db floor bites), exactly representable in
    ``dtype`` (half values widened give the CPU the same input)."""
    S = rng.standard_normal(shape) ** 2 * 10.0 ** rng.uniform(-6, 2, shape)
    return S.astype(dtype)


def _compare(op, got, want, dtype, what):
    ref = reference_dtype(dtype)
    assert got.dtype == np.dtype(ref), (what, got.dtype)
    err = rel_err(got, want)
    assert err <= tolerance(op, ref), f"{op} {what}: relative error {err:.2e} > {tolerance(op, ref):.0e}"


# -- the public functions -----------------------------------------------------------------------------------


MEL_CASES = [
    # (shape of S, bank options)
    ((2, 3, 257, 40), {"sr": 22050}),
    ((257, 33), {"sr": 16000, "htk": True, "norm": None}),
    ((4, 257, 17), {"compat": "torchaudio"}),
    ((1, 257, 9), {"sr": 16000, "htk": True, "norm": "slaney", "fmin": 50.0, "fmax": 7000.0}),
]


@pytest.mark.parametrize("case", range(len(MEL_CASES)))
def test_melspectrogram_of_s_matches_cpu(opencl, case):
    shape, kw = MEL_CASES[case]
    for dtype in device_dtypes(opencl):
        S = _power_spec(shape, dtype)
        got = specux.melspectrogram(S=S, n_mels=40, backend="opencl", **kw)
        want = specux.melspectrogram(S=S.astype(reference_dtype(dtype)), n_mels=40, backend="cpu", **kw)
        _compare("melspectrogram", got, want, dtype, f"{dtype} {shape} {kw}")


def test_melspectrogram_non_contiguous_s_and_a_nan_frame(opencl):
    base = _power_spec((3, 40, 257), "float32")
    S = base.swapaxes(-1, -2)  # (3, 257, 40), not contiguous
    S[1, :, 7] = np.nan
    got = specux.melspectrogram(S=S, sr=22050, n_mels=40, backend="opencl")
    want = specux.melspectrogram(S=S, sr=22050, n_mels=40, backend="cpu")
    assert np.isnan(got[1, :, 7]).all() and not np.isnan(np.delete(got, 7, axis=-1)).any()
    _compare("melspectrogram", got, want, "float32", "non-contiguous, NaN frame")


def test_mfcc_of_s_every_dct_type_norm_and_lifter(opencl):
    dtypes = device_dtypes(opencl)
    for i, (dct_type, norm, lifter) in enumerate(
        (t, n, lf) for t in (1, 2, 3) for n in (None, "ortho") for lf in (0.0, 22.0)
    ):
        dtype = dtypes[i % len(dtypes)]
        shape = [(2, 40, 11), (40, 11), (2, 2, 40, 5)][i % 3]
        S = (10.0 * np.log10(_power_spec(shape, "float64"))).astype(dtype)
        kw = {"n_mfcc": 13, "dct_type": dct_type, "norm": norm, "lifter": lifter}
        got = specux.mfcc(S=S, backend="opencl", **kw)
        want = specux.mfcc(S=S.astype(reference_dtype(dtype)), backend="cpu", **kw)
        _compare("mfcc", got, want, dtype, f"{dtype} {shape} {kw}")


# -- the logarithm and floor stages, through the exec module -----------------------------------------------


def _cepstral_params(n_bands, log, top_db, dtype, dct_type=2, norm="ortho", lifter=0.0, n_coeffs=12):
    mel = MelParams(None, 2.0, np.eye(n_bands), dtype)
    dct = dct_matrix(n_coeffs, n_bands, dct_type, norm, lifter)
    return CepstralParams(mel, n_coeffs, dct_type, norm, lifter, log, top_db, dct)


def _run(opencl, fn, x, p):
    rt = opencl.runtime
    out = fn(rt, (da.upload(rt, x),), p)
    return da.download(rt, out)


LOG_CASES = [
    # (log mode, top_db, shape of the bands)
    ("power_to_db", 80.0, (2, 3, 24, 30)),
    ("power_to_db", 10.0, (24, 30)),
    ("power_to_db", None, (3, 24, 30)),
    ("torchaudio_db", 80.0, (2, 3, 24, 30)),
    ("torchaudio_db", 10.0, (24, 30)),
    ("torchaudio_db", 5.0, (4, 24, 30)),
    ("torchaudio_db", None, (2, 24, 30)),
    ("log", 80.0, (2, 24, 30)),
]


@pytest.mark.parametrize("case", range(len(LOG_CASES)))
def test_log_floor_and_dct_stages_match_cpu(opencl, case):
    log, top_db, shape = LOG_CASES[case]
    for dtype in device_dtypes(opencl):
        x = _power_spec(shape, dtype)
        x[(0,) * (len(shape) - 2) + (slice(None), 4)] = np.nan  # a NaN frame
        ref = reference_dtype(dtype)
        p = _cepstral_params(shape[-2], log, top_db, dtype)
        got = _run(opencl, fx.mfcc, x, p)
        want = _cepstrum(x.astype(ref), replace(p, mel=replace(p.mel, dtype=ref)))
        _compare("mfcc", got, want, dtype, f"{log} top_db={top_db} {dtype} {shape}")
        got = _run(opencl, fx.lfcc, x, p)
        _compare("lfcc", got, want, dtype, f"{log} top_db={top_db} {dtype} {shape}")


@pytest.mark.parametrize("log", ["power_to_db", "torchaudio_db"])
def test_non_finite_peaks_follow_each_rule(opencl, log):
    """An infinite band: librosa's rule applies no floor, torchaudio's lifts the item to +inf; an all-NaN
    item keeps its NaN and floors nothing else. The floored dB values themselves (the DCT's input) against
    the CPU's logarithm stage."""
    rt = opencl.runtime
    x = _power_spec((3, 16, 12), "float32")
    x[0, 3, 5] = np.inf
    x[2] = np.nan
    p = _cepstral_params(16, log, 20.0, "float32", n_coeffs=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the all-NaN item's nanmax
        want = _log(x, p)
    identity = fx.sparse(rt, np.eye(16), "f32")
    db = fx.apply(rt, da.upload(rt, x), identity, fk.POST_DB, fx.AMIN, 0.0)
    floor = fx.top_db_floor(rt, db, fx._rule(p), p.top_db)
    got = da.download(rt, fx.apply(rt, db, identity, floor=floor))
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    assert np.allclose(got[finite], want[finite], rtol=1e-5, atol=1e-4)


# -- signal inputs (the stft on the device) ----------------------------------------------------------------


def test_features_of_signals_match_cpu(opencl):
    dtypes = device_dtypes(opencl)
    calls = [
        ("melspectrogram", (2, 2000), {"sr": 16000, "n_fft": 512, "hop_length": 128, "n_mels": 40}),
        ("melspectrogram", (1500,), {"compat": "torchaudio", "n_mels": 40, "power": 1.0}),
        ("melspectrogram", (3, 1200), {"sr": 22050, "n_fft": 400, "htk": True, "norm": None, "n_mels": 32}),
        ("mfcc", (2, 1800), {"sr": 16000, "n_fft": 512, "n_mels": 40, "n_mfcc": 13, "lifter": 22.0}),
        ("mfcc", (2, 2, 1500), {"compat": "torchaudio", "n_mels": 40, "n_mfcc": 20, "top_db": 30.0}),
        ("mfcc", (1600,), {"sr": 16000, "n_fft": 512, "n_mels": 40, "top_db": None, "dct_type": 3}),
        ("mfcc", (2, 1600), {"sr": 16000, "n_fft": 512, "n_mels": 40, "dct_type": 1, "norm": None,
                             "power": 1.0}),
        ("lfcc", (2, 1600), {"n_filter": 40, "n_lfcc": 20}),
        ("lfcc", (1600,), {"n_filter": 40, "n_lfcc": 20, "log_lf": True, "norm": None, "power": 1.0}),
    ]
    for i, (op, shape, kw) in enumerate(calls):
        dtype = dtypes[i % len(dtypes)]
        y = rng.standard_normal(shape).astype(dtype)
        if i == 3:
            y[0, 700:760] = np.nan  # frames touching a NaN
        if i == 6:
            y = np.repeat(y, 2, axis=-1)[..., ::2]  # not contiguous
        fn = getattr(specux, op)
        got = fn(y, backend="opencl", **kw)
        want = fn(y.astype(reference_dtype(dtype)), backend="cpu", **kw)
        _compare(op, got, want, dtype, f"{dtype} {shape} {kw}")


# -- adjoints ---------------------------------------------------------------------------------------------


def _dot(a, b) -> float:
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


@pytest.mark.parametrize("which", ["mel", "dct"])
def test_bank_adjoint_dot_product(opencl, which):
    from specux.filters import mel

    M = mel(sr=16000, n_fft=512, n_mels=40) if which == "mel" else dct_matrix(13, 40, 2, "ortho", 22.0)
    rt = opencl.runtime
    for dtype in device_dtypes(opencl, ("float32", "float64")):
        x = rng.standard_normal((2, M.shape[1], 9)).astype(dtype)
        y = rng.standard_normal((2, M.shape[0], 9)).astype(dtype)
        ax = da.download(rt, fx.apply(rt, da.upload(rt, x), fx.sparse(rt, M, da.STORAGE[dtype])))
        aty = da.download(rt, fx.bank_adjoint(rt, da.upload(rt, y), M))
        assert rel_err(aty, np.matmul(M.T, y.astype(np.float64))) <= tolerance("melspectrogram", dtype) * 10
        lhs, rhs = _dot(ax, y), _dot(x, aty)
        scale = np.sqrt(_dot(ax, ax) * _dot(y, y))
        assert abs(lhs - rhs) <= 1e-5 * scale if dtype == "float32" else abs(lhs - rhs) <= 1e-12 * scale


def _log_jvp(x, dx, p):
    """The derivative of the logarithm stage of ``p`` at ``x`` along ``dx`` (NumPy, float64): the floor's
    lifted values follow their group's first peak."""
    if p.log == "log":
        return dx / (x + 1e-6)
    above = x > 1e-10
    ddb = np.where(above, dx * (10 / np.log(10)) / np.where(above, x, 1), 0)
    if p.top_db is None:
        return ddb
    db = 10 * np.log10(np.maximum(x, 1e-10))
    n_items = 1 if p.log == "power_to_db" else x.size // (x.shape[-3] * x.shape[-2] * x.shape[-1])
    d, dd = db.reshape(n_items, -1), ddb.reshape(n_items, -1)
    at = np.argmax(d, axis=1)
    floor = d[np.arange(n_items), at] - p.top_db
    peak_d = dd[np.arange(n_items), at]
    return np.where(d < floor[:, None], peak_d[:, None], dd).reshape(x.shape)


@pytest.mark.parametrize(
    "log,top_db", [("power_to_db", 20.0), ("torchaudio_db", 20.0), ("torchaudio_db", None), ("log", None)]
)
def test_log_adjoint_dot_product_and_cpu_backward(opencl, log, top_db):
    rt = opencl.runtime
    for dtype in device_dtypes(opencl, ("float32", "float64")):
        x = _power_spec((2, 3, 16, 10), dtype)
        x[0, 0, 2, 3] = 0.0  # below amin: no gradient
        p = _cepstral_params(16, log, top_db, dtype)
        g = rng.standard_normal(x.shape).astype(dtype)
        got = da.download(rt, fx.log_adjoint(rt, da.upload(rt, x), da.upload(rt, g), p))
        want = log_backward(x, g, p)
        assert rel_err(got, want) <= tolerance("mfcc", dtype), (log, top_db, dtype)
        dx = rng.standard_normal(x.shape)
        jdx = _log_jvp(x.astype(np.float64), dx, p)
        lhs, rhs = _dot(jdx, g), _dot(dx, got)
        assert abs(lhs - rhs) <= tolerance("mfcc", dtype) * np.sqrt(_dot(jdx, jdx) * _dot(g, g)), (log, dtype)


def test_features_adjoint_matches_the_cpu_chain(opencl):
    """Gradient with respect to S of mfcc computed from a power spectrogram: D^T, the dB floor's adjoint,
    the bank's transpose, against the same chain on NumPy."""
    from specux.filters import mel

    rt = opencl.runtime
    basis = mel(sr=16000, n_fft=512, n_mels=40)
    S = _power_spec((2, 257, 12), "float64").astype("float32")
    g = rng.standard_normal((2, 13, 12)).astype("float32")
    p = CepstralParams(
        MelParams(None, 2.0, basis, "float32"), 13, 2, "ortho", 0.0, "power_to_db", 30.0,
        dct_matrix(13, 40, 2, "ortho", 0.0),
    )
    got = da.download(rt, fx.features_adjoint(rt, da.upload(rt, S), da.upload(rt, g), p))
    bands = np.matmul(basis.astype(np.float32), S)
    g_bands = log_backward(bands, np.matmul(p.dct.T.astype(np.float32), g), p)
    want = np.matmul(basis.T.astype(np.float32), g_bands)
    assert rel_err(got, want) <= tolerance("mfcc", "float32")
    mel_p = MelParams(None, 2.0, basis, "float32")
    g_mel = rng.standard_normal((2, 40, 12)).astype("float32")
    got = da.download(rt, fx.features_adjoint(rt, da.upload(rt, S), da.upload(rt, g_mel), mel_p))
    assert rel_err(got, np.matmul(basis.T, g_mel)) <= tolerance("melspectrogram", "float32")


# -- host-side structure (no device) ------------------------------------------------------------------------


def test_sparse_tables_rebuild_the_dense_matrix_and_its_transpose():
    from specux.filters import mel

    M = mel(sr=22050, n_fft=512, n_mels=40)
    off, first, w = fx.bank_rows(M)
    dense = np.zeros_like(M)
    for r in range(M.shape[0]):
        n = off[r + 1] - off[r]
        dense[r, first[r] : first[r] + n] = w[off[r] : off[r + 1]]
        assert n <= 2 + np.count_nonzero(M[r])  # a triangle: its support only
    assert np.array_equal(dense, M)
    off, rows, w = fx.bank_columns(M)
    dense = np.zeros_like(M)
    for k in range(M.shape[1]):
        dense[rows[off[k] : off[k + 1]], k] = w[off[k] : off[k + 1]]
        assert off[k + 1] - off[k] <= 2  # a bin touches at most two triangles
    assert np.array_equal(dense, M)
    empty = np.zeros((3, 5))
    empty[1, 2] = 1.0
    off, first, w = fx.bank_rows(empty)
    assert off.tolist() == [0, 0, 1, 1] and first[1] == 2


def test_cover_has_no_double_below_float64():
    from kernelkit.dialects import METAL, OPENCL

    specs = fk.cover(("f16", "f32"))
    kinds = {fk.BankSpec, fk.ReduceMaxSpec, fk.ReduceClampedSpec, fk.LogAdjointSpec, fk.ColumnNormSpec}
    kinds |= {fk.DbSpec, fk.FloorSpec, fk.ColumnNormAdjointSpec}
    assert {type(s) for s in specs} == kinds
    for spec in specs:
        assert "double" not in fk.render(spec, METAL).source
        assert "double" not in fk.render(spec, OPENCL).source
    assert any(s.prec == "f64" for s in fk.cover(("f64",)))
