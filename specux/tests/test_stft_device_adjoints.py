"""The adjoint kernels of stft and istft (specux._runtime.spectral_exec.stft_adjoint / istft_adjoint) on the
``opencl`` backend (PoCL in CI).

- the dot-product test ``<A x, y> = <x, A^T y>`` (real inner product, complex values as (re, im) pairs) with
  ``A`` the device forward, float32 and float64: stft over every pad_mode (also on signals shorter than the
  pad, where the padding's transpose folds several times), center off, win_length < n_fft, odd n_fft,
  hop > n_fft, batched; istft with length shorter and longer than the frames give, center off, a window
  that violates NOLA (the undivided samples), unused trailing frames (zero gradient);
- the same gradients against the CPU backend's adjoints (:mod:`specux._backends.cpu.adjoint_stft`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from specux_test_support import rel_err, tolerance

from specux._backends.cpu.adjoint_stft import istft_adjoint as cpu_istft_adjoint
from specux._backends.cpu.adjoint_stft import spectrum_adjoint, stft_backward
from specux._runtime import device_array as da
from specux._runtime import spectral_exec as sx
from specux._spec.stft import istft_validate, stft_validate

rng = np.random.default_rng(20261203)
#: relative mismatch allowed in the dot-product test, by precision
DOT_TOL = {"float32": 2e-5, "float64": 1e-12}
CDTYPE = {"float32": np.complex64, "float64": np.complex128}


def _precisions(backend):
    return [d for d in ("float32", "float64") if d in backend.dtypes]


def _inner(a, b) -> float:
    """Real inner product, complex values as (re, im) pairs, in float64."""
    a, b = np.asarray(a), np.asarray(b)
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        return float(np.sum(a.real * b.real + a.imag * b.imag))
    return float(np.sum(a.astype(np.float64) * b.astype(np.float64)))


def _check_dot(lhs: float, rhs: float, dtype: str, what: str) -> None:
    err = abs(lhs - rhs) / max(abs(lhs), abs(rhs))
    assert err <= DOT_TOL[dtype], f"{what}: <Ax, y> = {lhs!r}, <x, A^T y> = {rhs!r} ({err:.1e})"


def _complex(shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(CDTYPE[dtype])


STFT_CASES = [
    # (shape of y, options)
    ((2, 300), {"n_fft": 64}),
    ((2, 300), {"n_fft": 63, "hop_length": 20, "win_length": 40, "pad_mode": "reflect"}),
    ((3, 200), {"n_fft": 64, "hop_length": 16, "pad_mode": "edge"}),
    ((2, 300), {"n_fft": 64, "hop_length": 80, "pad_mode": "symmetric"}),
    ((2, 3, 250), {"n_fft": 48, "hop_length": 12, "pad_mode": "wrap"}),
    ((2, 300), {"n_fft": 64, "hop_length": 7, "center": False, "win_length": 50}),
    # shorter than the pad: reflect / symmetric / wrap fold several times
    ((2, 5), {"n_fft": 64, "hop_length": 3, "pad_mode": "reflect"}),
    ((2, 9), {"n_fft": 64, "hop_length": 3, "pad_mode": "symmetric"}),
    ((2, 7), {"n_fft": 64, "hop_length": 3, "pad_mode": "wrap"}),
]


def _stft_params(shape, dtype, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # n_fft > L
        return stft_validate(np.zeros(shape, dtype), accepted=("float32", "float64"), **kw)


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_adjoint_dot_product(opencl, case):
    shape, kw = STFT_CASES[case]
    rt = opencl.runtime
    for dtype in _precisions(opencl):
        p = _stft_params(shape, dtype, kw)
        F = p.n_fft // 2 + 1
        x = rng.standard_normal(shape).astype(dtype)
        y = _complex((*shape[:-1], F, p.n_frames), dtype)
        Ax = da.download(rt, sx.stft(rt, (da.upload(rt, x),), p))
        ATy = da.download(rt, sx.stft_adjoint(rt, da.upload(rt, y), p))
        assert ATy.shape == shape and ATy.dtype == np.dtype(dtype)
        _check_dot(_inner(Ax, y), _inner(x, ATy), dtype, f"stft {dtype} {shape} {kw}")
        # the CPU backend's adjoint, (B, T, F) layout
        want = spectrum_adjoint(y.reshape(-1, F, p.n_frames).swapaxes(-1, -2), p).reshape(shape)
        assert rel_err(ATy, want) <= tolerance("stft", dtype), (dtype, kw)


@pytest.mark.parametrize("case", [1, 4, 6])
def test_stft_adjoint_with_direct_frames_layout(opencl, monkeypatch, case):
    """The (B, n_fft, T) frames route the transposed one replaced (spectral_exec.FRAMES_TRANSPOSED False)
    gives the CPU's adjoint too, and the same numbers as the transposed route up to rounding."""
    shape, kw = STFT_CASES[case]
    rt = opencl.runtime
    p = _stft_params(shape, "float32", kw)
    F = p.n_fft // 2 + 1
    y = _complex((*shape[:-1], F, p.n_frames), "float32")
    transposed = da.download(rt, sx.stft_adjoint(rt, da.upload(rt, y), p))
    monkeypatch.setattr(sx, "FRAMES_TRANSPOSED", False)
    direct = da.download(rt, sx.stft_adjoint(rt, da.upload(rt, y), p))
    want = spectrum_adjoint(y.reshape(-1, F, p.n_frames).swapaxes(-1, -2), p).reshape(shape)
    assert rel_err(direct, want) <= tolerance("stft", "float32"), kw
    assert rel_err(transposed, direct) <= tolerance("stft", "float32"), kw


def test_stft_adjoint_takes_real_imag_pairs(opencl):
    rt = opencl.runtime
    p = _stft_params((2, 300), "float32", {"n_fft": 64, "pad_mode": "reflect"})
    y = _complex((2, 33, p.n_frames), "float32")
    pairs = np.ascontiguousarray(y.view(np.float32).reshape(2, 33, p.n_frames, 2))
    a = da.download(rt, sx.stft_adjoint(rt, da.upload(rt, y), p))
    b = da.download(rt, sx.stft_adjoint(rt, da.upload(rt, pairs), p))
    assert np.array_equal(a, b)


ISTFT_CASES = [
    # (batch, frames of the input, options)
    ((2,), 30, {"n_fft": 64, "hop_length": 16}),
    ((2,), 30, {"n_fft": 63, "hop_length": 20, "win_length": 40, "length": 400}),  # shorter: frames unused
    ((2, 3), 30, {"n_fft": 64, "hop_length": 16, "center": False, "length": 700}),  # longer: zero-padded
    ((2,), 12, {"n_fft": 64, "hop_length": 80}),  # not NOLA: samples left undivided
]


@pytest.mark.parametrize("case", range(len(ISTFT_CASES)))
def test_istft_adjoint_dot_product(opencl, case):
    batch, frames, kw = ISTFT_CASES[case]
    rt = opencl.runtime
    F = kw["n_fft"] // 2 + 1
    for dtype in _precisions(opencl):
        p = istft_validate(
            np.zeros((*batch, F, frames), CDTYPE[dtype]), accepted=("float32", "float64"), **kw
        )
        X = _complex((*batch, F, frames), dtype)
        y = rng.standard_normal((*batch, p.out_length)).astype(dtype)
        Ax = da.download(rt, sx.istft(rt, (da.upload(rt, X),), p))
        ATy = da.download(rt, sx.istft_adjoint(rt, da.upload(rt, y), p, frames_in=frames))
        assert ATy.shape == X.shape and ATy.dtype == X.dtype
        assert not ATy[..., p.n_frames :].any()
        # istft reads only the real part of bin 0 (and of bin n_fft / 2): its adjoint has no imaginary part
        # there, so the pairs inner product is exact
        _check_dot(_inner(Ax, y), _inner(X, ATy), dtype, f"istft {dtype} {batch} {kw}")
        want = cpu_istft_adjoint(y, p, F, frames)
        assert rel_err(ATy, want) <= tolerance("istft", dtype), (dtype, kw)


@pytest.mark.parametrize("output", ["magnitude", "power", "complex", "real_imag"])
def test_stft_backward_of_every_output_mode_matches_cpu(opencl, output):
    """magnitude / power recompute the spectrum on the device; a zero signal (|X| = 0) gets zero gradient
    there."""
    rt = opencl.runtime
    shape = (2, 3, 300)
    for dtype in _precisions(opencl):
        kw = {"n_fft": 64, "hop_length": 16, "pad_mode": "reflect", "output": output}
        p = _stft_params(shape, dtype, kw)
        F = p.n_fft // 2 + 1
        y = rng.standard_normal(shape).astype(dtype)
        y[1, 2] = 0.0  # every frame of this signal is zero
        if output in ("magnitude", "power"):
            g = rng.standard_normal((*shape[:-1], F, p.n_frames)).astype(dtype)
        elif output == "complex":
            g = _complex((*shape[:-1], F, p.n_frames), dtype)
        else:
            g = rng.standard_normal((*shape[:-1], F, p.n_frames, 2)).astype(dtype)
        got = da.download(rt, sx.stft_backward(rt, da.upload(rt, g), da.upload(rt, y), p))
        want = stft_backward(g, y, p, shape[:-1])
        assert got.shape == shape
        if output in ("magnitude", "power"):
            assert not got[1, 2].any()
        assert rel_err(got, want) <= tolerance("stft", dtype), (dtype, output)
