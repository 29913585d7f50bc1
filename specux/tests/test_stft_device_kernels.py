"""stft and istft as generated kernels (specux._codegen.spectral_kernels, run by
specux._runtime.spectral_exec) on the ``opencl`` backend (PoCL in CI), against the CPU backend.

- stft through the public function with ``backend="opencl"`` against ``backend="cpu"``: float32, float64 and
  float16 storage (compared with the CPU on the same half values widened), every pad_mode (also on signals
  shorter than the pad, where reflect / symmetric / wrap fold repeatedly as numpy.pad does), center on and
  off, win_length < n_fft, odd and non-power-of-two n_fft, hop > n_fft, 1-D, (2, 3, L) batched and
  non-contiguous signals, every output mode, a NaN sample (it reaches only the frames that cover it);
- :func:`specux._runtime.spectral_exec.spectrogram` (what the filter-bank features build on) for powers 1, 2
  and 1.5;
- istft: length shorter and longer than the frames give, unused trailing frames, center off, win_length <
  n_fft, odd n_fft, batched and non-contiguous spectra, complex128 in for float32 out, a real (zero-phase)
  spectrum, and ``nola="raise"`` raising the CPU's NolaError, message and positions included.

Sweeps build with ``-cl-opt-disable``; the cases are chosen to cover every option and kernel variety (a few
FFT lengths, so few FFT plans to build) rather than their product.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from specux_test_support import device_dtypes, reference_dtype, rel_err, tolerance

import specux
from specux._backends.cpu.stft import _power_tf
from specux._runtime import device_array as da
from specux._runtime import spectral_exec as sx
from specux._spec.stft import stft_validate
from specux.errors import NolaError

rng = np.random.default_rng(20261202)


def _compare(op, got, want, dtype, what):
    ref = reference_dtype(dtype)
    assert got.dtype == np.asarray(want).dtype, (what, got.dtype, want.dtype)
    assert np.dtype(got.dtype).name in (ref, {"float32": "complex64", "float64": "complex128"}[ref]), what
    err = rel_err(got, want)
    assert err <= tolerance(op, ref), f"{op} {what}: relative error {err:.2e} > {tolerance(op, ref):.0e}"


def _quiet(fn, *args, **kw):
    """Call without the questionable-input warnings (n_fft > L, a real istft input): the CPU side warns
    the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kw)


# -- stft ----------------------------------------------------------------------------------------------------

STFT_CASES = [
    # (shape of y, options): together every pad_mode, output, center, win_length < n_fft, hop > n_fft, odd
    # and non-power-of-two n_fft
    ((1000,), {"n_fft": 64}),
    ((2, 3, 1000), {"n_fft": 400, "hop_length": 160, "pad_mode": "reflect", "output": "magnitude"}),
    ((2, 700), {"n_fft": 63, "win_length": 40, "hop_length": 20, "pad_mode": "symmetric", "output": "power"}),
    ((3, 500), {"n_fft": 64, "hop_length": 80, "pad_mode": "wrap", "output": "real_imag"}),
    ((2, 1000), {"n_fft": 64, "hop_length": 16, "center": False, "win_length": 50}),
    ((2, 3, 600), {"n_fft": 400, "hop_length": 100, "pad_mode": "edge", "output": "real_imag"}),
]


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_matches_cpu(opencl, case):
    shape, kw = STFT_CASES[case]
    for dtype in device_dtypes(opencl):
        y = rng.standard_normal(shape).astype(dtype)
        got = specux.stft(y, backend="opencl", **kw)
        want = specux.stft(y.astype(reference_dtype(dtype)), backend="cpu", **kw)
        _compare("stft", got, want, dtype, f"{dtype} {shape} {kw}")


@pytest.mark.parametrize("pad_mode", ["constant", "reflect", "edge", "symmetric", "wrap"])
def test_stft_of_signals_shorter_than_the_pad_folds_as_numpy_pad(opencl, pad_mode):
    """n_fft // 2 = 32 padded samples on signals of 5 and 20: reflect / symmetric / wrap fold repeatedly."""
    for length, dtype in ((5, "float32"), (20, device_dtypes(opencl)[-1])):
        y = rng.standard_normal((2, length)).astype(dtype)
        kw = {"n_fft": 64, "hop_length": 3, "pad_mode": pad_mode}
        got = _quiet(specux.stft, y, backend="opencl", **kw)
        want = _quiet(specux.stft, y.astype(reference_dtype(dtype)), backend="cpu", **kw)
        _compare("stft", got, want, dtype, f"{pad_mode} L={length} {dtype}")


def test_stft_non_contiguous_and_a_nan_sample(opencl):
    base = rng.standard_normal((3, 2000)).astype(np.float32)
    y = base[:, ::2]  # (3, 1000), strided
    y[1, 500] = np.nan
    kw = {"n_fft": 64, "hop_length": 16, "pad_mode": "reflect"}
    got = specux.stft(y, backend="opencl", **kw)
    want = specux.stft(y, backend="cpu", **kw)
    nan_frames = np.isnan(got).any(axis=-2)
    assert nan_frames[1].sum() == 4 and not nan_frames[[0, 2]].any()  # the frames covering sample 500
    _compare("stft", got, want, "float32", "non-contiguous, NaN sample")
    # the transposed view of a (L, 2) array
    y2 = rng.standard_normal((1000, 2)).T
    _compare("stft", specux.stft(y2, n_fft=64, backend="opencl"), specux.stft(y2, n_fft=64), "float64", "y.T")


def test_nan_outside_the_window_support_stays_out(opencl):
    """win_length < n_fft: samples outside the window's support are zeros, not NaN * 0."""
    y = rng.standard_normal(256).astype(np.float32)
    y[0] = np.nan  # frame 0 of center=False holds it at n = 0, outside the support 16 .. 48
    kw = {"n_fft": 64, "win_length": 32, "hop_length": 64, "center": False}
    got = specux.stft(y, backend="opencl", **kw)
    want = specux.stft(y, backend="cpu", **kw)
    assert not np.isnan(want).any()
    _compare("stft", got, want, "float32", "NaN outside the support")


@pytest.mark.parametrize("power", [1.0, 2.0, 1.5])
def test_spectrogram_for_the_features(opencl, power):
    rt = opencl.runtime
    for dtype in device_dtypes(opencl):
        y = rng.standard_normal((2, 3, 900)).astype(dtype)
        p = stft_validate(y, n_fft=400, hop_length=160, accepted=tuple(sorted(opencl.dtypes)))
        got = da.download(rt, sx.spectrogram(rt, da.upload(rt, y), p, power))
        ref = reference_dtype(dtype)
        X = specux.stft(y.astype(ref), n_fft=400, hop_length=160, backend="cpu")
        want = _power_tf(X, power)
        assert got.shape == (2, 3, 201, p.n_frames) and got.dtype == np.dtype(ref)
        assert rel_err(got, want) <= tolerance("stft", ref), (dtype, power)


# -- istft ---------------------------------------------------------------------------------------------------

ISTFT_CASES = [
    # (batch, options of the forward, options of the inverse only)
    ((), {"n_fft": 64, "hop_length": 16}, {}),
    ((2, 3), {"n_fft": 400, "hop_length": 100}, {"length": 900}),  # shorter than the frames give
    ((2,), {"n_fft": 63, "hop_length": 20, "win_length": 40}, {"length": 1500}),  # longer: zero-padded
    ((2,), {"n_fft": 64, "hop_length": 16, "center": False}, {}),
    ((3,), {"n_fft": 64, "hop_length": 16}, {"length": 500}),  # of 1000 samples' frames: unused frames
]


@pytest.mark.parametrize("case", range(len(ISTFT_CASES)))
def test_istft_matches_cpu(opencl, case):
    batch, kw, inverse_only = ISTFT_CASES[case]
    for dtype in device_dtypes(opencl):
        ref = reference_dtype(dtype)
        y = rng.standard_normal((*batch, 1000)).astype(ref)
        D = specux.stft(y, backend="cpu", **kw)
        D = D + (0.1j * rng.standard_normal(D.shape)).astype(D.dtype)  # also imaginary DC / Nyquist parts
        kw_inv = {**kw, **inverse_only}
        got = specux.istft(D, backend="opencl", dtype=dtype, **kw_inv)
        want = specux.istft(D, backend="cpu", dtype=ref, **kw_inv)
        _compare("istft", got, want, dtype, f"{dtype} {batch} {kw_inv}")


@pytest.mark.parametrize("transposed", [True, False])
def test_istft_frames_layouts_match_cpu(opencl, monkeypatch, transposed):
    """The transposed route (spectrum (B, T, F), frames (B, T, n_fft), coalesced gather) and the direct one
    ((B, n_fft, T) frames): both the CPU's numbers, across tile edges (F and T not multiples of 32), odd
    n_fft, unused trailing frames and a real spectrum."""
    monkeypatch.setattr(sx, "FRAMES_TRANSPOSED", transposed)
    cases = [
        ((2,), {"n_fft": 100, "hop_length": 25}, {}),
        ((3,), {"n_fft": 63, "hop_length": 20, "win_length": 40}, {"length": 1500}),
        ((2, 2), {"n_fft": 64, "hop_length": 16}, {"length": 500}),
    ]
    for batch, kw, inverse_only in cases:
        for dtype in device_dtypes(opencl, ("float32", "float64")):
            y = rng.standard_normal((*batch, 1000)).astype(dtype)
            D = specux.stft(y, backend="cpu", **kw)
            kw_inv = {**kw, **inverse_only}
            got = specux.istft(D, backend="opencl", **kw_inv)
            _compare("istft", got, specux.istft(D, backend="cpu", **kw_inv), dtype, f"{batch} {kw_inv}")
    real = np.abs(D).astype(np.float32)
    got = _quiet(specux.istft, real, backend="opencl", **kw_inv)
    want = _quiet(specux.istft, real, backend="cpu", **kw_inv)
    _compare("istft", got, want, "float32", "real spectrum")


def test_istft_casts_non_contiguous_and_real_spectra(opencl):
    y = rng.standard_normal((2, 1000))
    D = specux.stft(y, n_fft=64, hop_length=16, backend="cpu")  # complex128
    strided = np.concatenate([D, D], axis=-1)[..., ::2]  # same frames, not contiguous
    got = specux.istft(strided, n_fft=64, hop_length=16, dtype=np.float32, backend="opencl")
    want = specux.istft(strided, n_fft=64, hop_length=16, dtype=np.float32, backend="cpu")
    _compare("istft", got, want, "float32", "complex128 in, float32 out, strided")
    magnitude = np.abs(D).astype(np.float32)
    for real in (magnitude, magnitude.astype(np.float16)):
        got = _quiet(specux.istft, real, n_fft=64, hop_length=16, backend="opencl")
        want = _quiet(specux.istft, real.astype(np.float32), n_fft=64, hop_length=16, backend="cpu")
        _compare("istft", got, want, real.dtype.name, f"real {real.dtype} spectrum")


def test_istft_nola_raise_names_the_cpu_positions(opencl):
    """hop 80 > n_fft 64: samples between the frames get no window; the message is the CPU's."""
    D = specux.stft(rng.standard_normal(1000).astype(np.float32), n_fft=64, hop_length=80, backend="cpu")
    messages = []
    for backend in ("cpu", "opencl"):
        with pytest.raises(NolaError) as info:
            specux.istft(D, n_fft=64, hop_length=80, nola="raise", backend=backend)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "positions 32, 33" in messages[1]
    # a NOLA window passes, and nola="ignore" leaves those samples undivided as the CPU does (a boxcar: hann's
    # tapering sums there would divide the two FFTs' rounding by nearly zero)
    specux.istft(D[..., :5], n_fft=64, hop_length=16, nola="raise", backend="opencl")
    kw = {"n_fft": 64, "hop_length": 80, "window": "boxcar"}
    got = specux.istft(D, backend="opencl", **kw)
    _compare("istft", got, specux.istft(D, backend="cpu", **kw), "float32", "ignore")


def test_stft_istft_round_trip_on_the_device(opencl):
    y = rng.standard_normal((2, 3, 4000)).astype(np.float32)
    D = specux.stft(y, n_fft=512, hop_length=128, backend="opencl")
    back = specux.istft(D, n_fft=512, hop_length=128, length=4000, backend="opencl")
    assert rel_err(back, y) <= 1e-5


def test_istft_window_sum_is_made_once_per_parameters(opencl, monkeypatch):
    from specux._backends.cpu import stft as stft_mod

    made = []
    real = stft_mod._window_sumsquare

    def counting(p):
        made.append((p.n_frames, p.out_length))
        return real(p)

    monkeypatch.setattr(stft_mod, "_window_sumsquare", counting)
    opencl.runtime.clear_caches()
    D = specux.stft(rng.standard_normal((2, 3000)).astype("float32"), n_fft=256, hop_length=64)
    want = specux.istft(D, hop_length=64, backend="cpu")
    for _ in range(3):
        got = specux.istft(D, hop_length=64, backend="opencl")
        _compare("istft", got, want, "float32", "cached window sum")
    specux.istft(D, hop_length=64, length=2500, backend="opencl")  # another length: another table
    assert len(made) == 2, made
