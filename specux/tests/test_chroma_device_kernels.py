"""specux.chroma_stft on the opencl backend (PoCL in CI) against the cpu backend: signals with the tuning
given or estimated (on the host, from the device's spectrogram), a given S, every norm, batches, strided
input, a NaN frame; and the column-norm kernel against librosa.util.normalize's rules."""

from __future__ import annotations

import numpy as np
import pytest
from specux_test_support import device_dtypes, rel_err, tolerance

import specux
from specux._normalize import normalize
from specux._runtime import device_array as da
from specux._runtime import feature_exec

rng = np.random.default_rng(20261204)
NORMS = [np.inf, -np.inf, 0, 1, 2, 1.5, None]


def _close(got, want, dtype, what):
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    err = rel_err(got, want)
    assert err <= tolerance("melspectrogram", dtype), f"chroma_stft {what}: relative error {err:.2e}"


@pytest.mark.parametrize("norm", NORMS, ids=[str(n) for n in NORMS])
def test_chroma_of_a_signal_matches_cpu_for_every_norm(opencl, norm):
    for dtype in device_dtypes(opencl, ("float32", "float64")):
        y = rng.standard_normal((2, 6000)).astype(dtype)
        kw = dict(sr=16000, n_fft=512, hop_length=128, tuning=0.0, norm=norm)
        got = specux.chroma_stft(y, backend="opencl", **kw)
        _close(got, specux.chroma_stft(y, backend="cpu", **kw), dtype, f"{dtype} norm={norm}")


@pytest.mark.parametrize(
    "kw",
    [
        dict(),  # tuning estimated on the host
        dict(tuning=0.2, n_chroma=24, ctroct=4.0, octwidth=None, base_c=False),
        dict(tuning=-0.1, n_fft=400, hop_length=160, win_length=300, window="hamming", pad_mode="reflect"),
        dict(tuning=0.0, center=False, n_fft=1024, hop_length=256),
    ],
    ids=["estimated tuning", "bank options", "torchaudio-like framing", "center off"],
)
def test_chroma_options_match_cpu(opencl, kw):
    y = rng.standard_normal((3, 9000)).astype(np.float32)
    args = dict(sr=22050, **kw)
    _close(specux.chroma_stft(y, backend="opencl", **args), specux.chroma_stft(y, backend="cpu", **args),
           "float32", str(kw))


def test_chroma_of_s_batched_strided_and_a_nan_frame(opencl):
    S = np.abs(rng.standard_normal((2, 257, 40))) ** 2
    kw = dict(sr=16000, tuning=0.0)
    _close(specux.chroma_stft(S=S, backend="opencl", **kw), specux.chroma_stft(S=S, backend="cpu", **kw),
           "float64", "S")
    y = rng.standard_normal((2, 2, 12000)).astype(np.float32)[..., ::2]  # not contiguous
    y[0, 1, 2000] = np.nan
    args = dict(sr=16000, n_fft=512, hop_length=128, tuning=0.0)
    got, want = specux.chroma_stft(y, backend="opencl", **args), specux.chroma_stft(y, backend="cpu", **args)
    assert np.isnan(want).any()
    _close(got, want, "float32", "strided with a NaN")


@pytest.mark.parametrize("norm", [np.inf, -np.inf, 0, 1, 3])
def test_column_norm_kernel_follows_librosa_rules(opencl, norm):
    x = rng.standard_normal((2, 12, 9))
    x[0, :, 3] = 0.0  # a silent frame: below the threshold, left as it is
    x[1, 5, 4] = 0.0
    x[1, 2, 6] = np.nan
    rt = opencl.runtime
    buf = da.upload(rt, x)
    feature_exec.column_norm(rt, buf, norm)
    got = da.download(rt, buf)
    want = normalize(x, norm=norm, axis=-2)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12, atol=0)
