"""Property tests of the generated operations on the opencl backend (PoCL in CI) against the cpu backend.

hypothesis draws what a caller can give: signals 1-D to 3-D of 1 to 300 samples, float32 or float64, laid
out contiguous, reversed or strided; n_fft from a small set of lengths (odd, even, a power of two, one needing
Bluestein: few distinct lengths keep PoCL's kernel builds bounded), any hop and win_length, every window
kind, both centerings, every pad mode and output; istft of the stft with any length; melspectrogram and mfcc
with small banks; fftconvolve of random shapes over random axes in every mode. Property: the same result as
``backend="cpu"`` within ``TOLERANCES`` (relative to the largest reference value), NaN positions equal.
"""

from __future__ import annotations

import numpy as np
import pytest
from specux_test_support import rel_err, tolerance

import specux

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*is larger than the signal length:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*squared window:UserWarning"),
]

N_FFTS = (1, 7, 16, 30, 64, 67)  # 67: a prime above the butterflies' radices, so Bluestein
PAD_MODES = ("constant", "reflect", "edge", "symmetric", "wrap")
OUTPUTS = ("complex", "magnitude", "power", "real_imag")
EXAMPLES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def signals(draw, min_length=1, max_length=300, max_ndim=3, dtypes=("float32", "float64")):
    ndim = draw(st.integers(1, max_ndim))
    shape = (*draw(st.lists(st.integers(1, 3), min_size=ndim - 1, max_size=ndim - 1)),)
    shape += (draw(st.integers(min_length, max_length)),)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layout = draw(st.sampled_from(("contiguous", "reversed", "strided")))
    full = (*shape[:-1], 2 * shape[-1]) if layout == "strided" else shape
    x = rng.standard_normal(full)
    x = x.astype(draw(st.sampled_from(dtypes)))
    if layout == "strided":
        x = x[..., ::2]
    elif layout == "reversed":
        x = x[..., ::-1]
    return x


@st.composite
def windows(draw, win_length: int):
    kind = draw(st.sampled_from(("name", "tuple", "array")))
    if kind == "name":
        return draw(st.sampled_from(("hann", "hamming", "boxcar", "triang")))
    if kind == "tuple":
        return draw(st.sampled_from((("kaiser", 8.0), ("tukey", 0.3))))
    return np.random.default_rng(win_length).uniform(0.1, 1.0, win_length)


@st.composite
def stft_cases(draw):
    y = draw(signals())
    center = draw(st.booleans())
    choices = [n for n in N_FFTS if center or n <= y.shape[-1]]
    assume(choices)
    n_fft = draw(st.sampled_from(choices))
    win_length = draw(st.none() | st.integers(1, n_fft))
    kw = {
        "n_fft": n_fft,
        "hop_length": draw(st.none() | st.integers(1, 2 * n_fft + 3)),
        "win_length": win_length,
        "window": draw(windows(n_fft if win_length is None else win_length)),
        "center": center,
        "pad_mode": draw(st.sampled_from(PAD_MODES)),
    }
    return y, kw


def _close(op, got, want, dtype):
    err = rel_err(got, want)
    assert err <= tolerance(op, dtype), f"{op}: relative error {err:.3g}"


@EXAMPLES
@given(case=stft_cases(), output=st.sampled_from(OUTPUTS))
def test_stft_on_opencl_is_the_cpu_backends(opencl, case, output):
    y, kw = case
    got = specux.stft(y, output=output, backend="opencl", **kw)
    want = specux.stft(y, output=output, backend="cpu", **kw)
    assert got.dtype == want.dtype
    _close("stft", got, want, y.dtype)


@EXAMPLES
@given(case=stft_cases(), extra=st.integers(-20, 20))
def test_istft_on_opencl_is_the_cpu_backends(opencl, case, extra):
    y, kw = case
    kw.pop("pad_mode")
    D = specux.stft(y, backend="cpu", **kw)
    length = max(1, y.shape[-1] + extra)
    got = specux.istft(D, length=length, backend="opencl", **kw)
    want = specux.istft(D, length=length, backend="cpu", **kw)
    # where the squared-window sum is tiny the division magnifies rounding: compare only where it is not
    from specux._backends.cpu.stft import _window_sumsquare
    from specux._spec.stft import istft_validate

    p = istft_validate(D, length=length, **kw)
    wsum = _window_sumsquare(p)
    start = p.n_fft // 2 if p.center else 0
    w = np.zeros(length)
    seg = wsum[start : start + length]
    w[: seg.shape[0]] = seg
    ok = w > 1e-3 * max(float(w.max()), 1e-30)
    assume(ok.any())
    _close("istft", got[..., ok], want[..., ok], y.dtype)


@EXAMPLES
@given(y=signals(min_length=64, max_length=600), n_fft=st.sampled_from((64, 100, 128)),
       n_mels=st.integers(4, 24), power=st.sampled_from((1.0, 2.0)), op=st.sampled_from(("mel", "mfcc")))
def test_features_on_opencl_are_the_cpu_backends(opencl, y, n_fft, n_mels, power, op):
    kw = dict(sr=8000, n_fft=n_fft, hop_length=n_fft // 4, n_mels=n_mels, power=power)
    if op == "mel":
        got = specux.melspectrogram(y, backend="opencl", **kw)
        want = specux.melspectrogram(y, backend="cpu", **kw)
        _close("melspectrogram", got, want, y.dtype)
    else:
        kw["n_mfcc"] = min(13, n_mels)
        got = specux.mfcc(y, backend="opencl", **kw)
        want = specux.mfcc(y, backend="cpu", **kw)
        _close("mfcc", got, want, y.dtype)


@st.composite
def convolve_cases(draw):
    ndim = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    s1, s2 = [], []
    for _ in range(ndim):
        kind = draw(st.sampled_from(("both", "broadcast1", "broadcast2")))
        n1, n2 = draw(st.integers(1, 40)), draw(st.integers(1, 40))
        if kind == "broadcast1":
            n1 = 1
        elif kind == "broadcast2":
            n2 = 1
        s1.append(n1)
        s2.append(n2)
    dtype = draw(st.sampled_from(("float32", "float64", "complex64")))
    a = rng.standard_normal(s1).astype(dtype)
    b = rng.standard_normal(s2).astype(dtype)
    axes = draw(st.none() | st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    mode = draw(st.sampled_from(("full", "same", "valid")))
    return a, b, axes, mode


@EXAMPLES
@given(case=convolve_cases())
def test_fftconvolve_on_opencl_is_the_cpu_backends(opencl, case):
    a, b, axes, mode = case
    try:
        want = specux.fftconvolve(a, b, mode=mode, axes=axes, backend="cpu")
    except ValueError:
        assume(False)  # shapes that the mode or the axes refuse are the cpu tests' business
    got = specux.fftconvolve(a, b, mode=mode, axes=axes, backend="opencl")
    assert got.shape == want.shape and got.dtype == want.dtype
    real = np.dtype(a.dtype).name.replace("complex64", "float32")
    _close("fftconvolve", got, want, real)
