"""The torch path checks what the numpy path checks, with the same errors (issue 19, items 2, 4, 5, 7).

A torch CPU tensor goes through ``specux.torch._route`` to the ``torch.ops.specux`` ops, whose schemas take
ints, floats, bools and strings: a flag given as a string (``center="False"``) or a number given as one
(``n_fft="256"``) used to be refused there with a RuntimeError naming no parameter, or read as a number
(``float("16000")``). The route now checks every scalar argument with the numpy path's helpers first, runs the
memory guard before an FFT of a tensor allocates, and warns, as numpy does, when istft gets a real tensor.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import specux
from specux.errors import MemoryLimitError

torch = pytest.importorskip("torch")


def _signal(n: int = 4000) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(n).astype(np.float32)


#: (name, call on y, TypeError or ValueError expected); each the same on numpy arrays and tensors
BAD = [
    ("stft center str", lambda y: specux.stft(y, n_fft=256, center="False"), TypeError, "center"),
    ("stft n_fft str", lambda y: specux.stft(y, n_fft="256"), TypeError, "n_fft"),
    ("stft hop float", lambda y: specux.stft(y, n_fft=256, hop_length=64.0), TypeError, "hop_length"),
    ("stft win_length str", lambda y: specux.stft(y, n_fft=256, win_length="128"), TypeError, "win_length"),
    ("stft pad_mode int", lambda y: specux.stft(y, n_fft=256, pad_mode=0), ValueError, "pad_mode"),
    ("stft output None", lambda y: specux.stft(y, n_fft=256, output=None), ValueError, "output"),
    ("stft n_fft 0", lambda y: specux.stft(y, n_fft=0), ValueError, "n_fft"),
    (
        "istft center str",
        lambda y: specux.istft(specux.stft(y, n_fft=256), center="no"),
        TypeError,
        "center",
    ),
    (
        "istft length str",
        lambda y: specux.istft(specux.stft(y, n_fft=256), length="4000"),
        TypeError,
        "length",
    ),
    (
        "istft nola bool",
        lambda y: specux.istft(specux.stft(y, n_fft=256), nola=True),
        TypeError,
        "nola",
    ),
    ("mel sr str", lambda y: specux.melspectrogram(y, sr="16000", n_fft=256), TypeError, "sr"),
    ("mel htk str", lambda y: specux.melspectrogram(y, sr=16000, n_fft=256, htk="no"), TypeError, "htk"),
    (
        "mel n_mels float",
        lambda y: specux.melspectrogram(y, sr=16000, n_fft=256, n_mels=40.0),
        TypeError,
        "n_mels",
    ),
    ("mel power str", lambda y: specux.melspectrogram(y, sr=16000, n_fft=256, power="2"), TypeError, "power"),
    # a numeric string must not travel through the op schema's text and come back as a number
    ("mel norm str", lambda y: specux.melspectrogram(y, sr=16000, n_fft=256, norm="2"), ValueError, "norm"),
    (
        "mfcc mel_norm str",
        lambda y: specux.mfcc(y, sr=16000, n_fft=256, mel_norm="2"),
        ValueError,
        "mel_norm",
    ),
    (
        "mfcc dct_type float",
        lambda y: specux.mfcc(y, sr=16000, n_fft=256, dct_type=2.0),
        TypeError,
        "dct_type",
    ),
    ("mfcc lifter str", lambda y: specux.mfcc(y, sr=16000, n_fft=256, lifter="1"), TypeError, "lifter"),
    ("lfcc sample_rate str", lambda y: specux.lfcc(y, sample_rate="16000"), TypeError, "sample_rate"),
    ("lfcc log_lf str", lambda y: specux.lfcc(y, log_lf="yes"), TypeError, "log_lf"),
    ("cqt sr str", lambda y: specux.cqt(y, sr="22050", n_bins=12), TypeError, "sr"),
    ("cqt scale str", lambda y: specux.cqt(y, sr=22050, n_bins=12, scale="no"), TypeError, "scale"),
    (
        "chroma_stft base_c str",
        lambda y: specux.chroma_stft(y, sr=16000, n_fft=256, tuning=0.0, base_c="yes"),
        TypeError,
        "base_c",
    ),
    (
        "chroma_stft norm str",
        lambda y: specux.chroma_stft(y, sr=16000, n_fft=256, tuning=0.0, norm="2"),
        TypeError,
        "norm",
    ),
    ("fft n str", lambda y: specux.fft.fft(y, n="16"), TypeError, "n"),
    ("fft axis str", lambda y: specux.fft.rfft(y, axis="0"), TypeError, "axis"),
    ("fft n 0", lambda y: specux.fft.fft(y, n=0), ValueError, "n"),
    ("fftconvolve mode", lambda y: specux.fftconvolve(y, y[:16], mode="middle"), ValueError, "mode"),
]


def _error(call, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short-signal warnings of some cases
        try:
            call(x)
        except Exception as exc:  # the type is what is compared
            return exc
    return None


@pytest.mark.parametrize("name,call,kind,parameter", BAD, ids=[b[0] for b in BAD])
def test_a_tensor_gets_the_error_a_numpy_array_gets(name, call, kind, parameter):
    y = _signal()
    want = _error(call, y)
    got = _error(call, torch.from_numpy(y))
    assert type(want) is kind, f"numpy path: {want!r}"
    assert type(got) is kind, f"torch path: {got!r}"
    assert parameter in str(got)
    assert str(got) == str(want)


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_fft=np.int64(256), hop_length=np.int32(64)),
        dict(n_fft=256, center=np.bool_(False)),
        dict(n_fft=256, win_length=np.int16(200)),
    ],
    ids=["numpy ints", "numpy bool", "numpy int16"],
)
def test_numpy_scalars_are_taken_on_tensors_too(kw):
    y = _signal()
    got = specux.stft(torch.from_numpy(y), **kw)
    np.testing.assert_allclose(got.numpy(), specux.stft(y, **kw), rtol=1e-6, atol=1e-5)


def test_numpy_numbers_reach_features_as_python_numbers():
    y = _signal()
    kw = dict(sr=np.float32(16000), n_fft=np.int64(256), n_mels=np.int64(20), fmin=np.float64(30.0))
    got = specux.melspectrogram(torch.from_numpy(y), **kw)
    np.testing.assert_allclose(got.numpy(), specux.melspectrogram(y, **kw), rtol=1e-5, atol=1e-6)


def test_a_float_sample_rate_reaches_lfcc():
    # numpy takes any positive number for sample_rate; the op's schema took only an int
    y = _signal()
    got = specux.lfcc(torch.from_numpy(y), sample_rate=16000.5, n_fft=256, n_filter=32, n_lfcc=8)
    want = specux.lfcc(y, sample_rate=16000.5, n_fft=256, n_filter=32, n_lfcc=8)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


# --- the memory guard of specux.fft on tensors -------------------------------------------------------------

LIMIT = 1 << 20


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setenv("SPECUX_MEMORY_LIMIT", "1M")


GUARDED = [
    ("fft n", lambda: specux.fft.fft(torch.zeros(16000), n=1 << 22), "n"),
    ("ifft n", lambda: specux.fft.ifft(torch.zeros(16000, dtype=torch.complex64), n=1 << 22), "n"),
    ("rfft n", lambda: specux.fft.rfft(torch.zeros(16000), n=1 << 23), "n"),
    ("irfft n", lambda: specux.fft.irfft(torch.ones(8, dtype=torch.complex64), n=1 << 23), "n"),
    ("hfft n", lambda: specux.fft.hfft(torch.ones(8, dtype=torch.complex64), n=1 << 23), "n"),
    ("ihfft n", lambda: specux.fft.ihfft(torch.zeros(16000), n=1 << 23), "n"),
    ("fftn s", lambda: specux.fft.fftn(torch.ones(4, 4), s=(2048, 2048)), "s"),
    ("rfft2 s", lambda: specux.fft.rfft2(torch.ones(4, 4), s=(4096, 4096)), "s"),
    ("irfftn s", lambda: specux.fft.irfftn(torch.ones(4, 4, dtype=torch.complex128), s=(2048, 2048)), "s"),
]


@pytest.mark.parametrize("name,call,parameter", GUARDED, ids=[g[0] for g in GUARDED])
def test_tensor_ffts_too_large_for_the_limit_raise_before_allocating(small_limit, name, call, parameter):
    with pytest.raises(MemoryLimitError) as info:
        call()
    err = info.value
    assert err.parameter == parameter
    assert err.available == LIMIT and err.needed > LIMIT
    assert "SPECUX_MEMORY_LIMIT" in str(err) and str(err).startswith("specux.fft.")


_ISSUE_CALL = """
import resource
# a net under the guard: were it missing, torch would fail to allocate here instead of the machine running out
# of memory (the call asks for 16 GiB)
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
import torch
import specux
from specux.errors import MemoryLimitError
try:
    specux.fft.fft(torch.zeros(16000), n=2**31)
except MemoryLimitError as err:
    print("refused", err.parameter)
except Exception as err:
    print("failed otherwise:", type(err).__name__, err)
else:
    print("ran")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="caps the child's address space")
def test_the_tensor_fft_of_the_issue_is_refused():
    env = {**os.environ, "SPECUX_MEMORY_LIMIT": "4G", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    code = textwrap.dedent(_ISSUE_CALL)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:1] == ["refused n"], done.stdout + done.stderr


def test_tensor_and_array_ffts_report_the_same_sizes(small_limit):
    errors = []
    for x in (np.zeros(16000, np.float32), torch.zeros(16000)):
        with pytest.raises(MemoryLimitError) as info:
            specux.fft.rfft(x, n=1 << 22)
        errors.append(info.value)
    assert errors[0].needed == errors[1].needed
    assert str(errors[0]) == str(errors[1])


def test_tensor_ffts_within_the_limit_run(monkeypatch):
    monkeypatch.setenv("SPECUX_MEMORY_LIMIT", "64M")
    x = torch.from_numpy(_signal(16000))
    got = specux.fft.fft(x, n=1 << 16)
    assert got.shape == (1 << 16,)
    np.testing.assert_allclose(got.numpy(), np.fft.fft(x.numpy(), n=1 << 16), rtol=1e-5, atol=1e-3)


# --- istft of a real tensor ---------------------------------------------------------------------------------


def test_istft_of_a_real_tensor_warns_as_numpy_and_takes_zero_phase():
    y = torch.from_numpy(_signal())
    mag = specux.stft(y, n_fft=256, hop_length=64).abs()
    with pytest.warns(UserWarning, match=r"istft: stft_matrix is real \(float32\).*zero phase") as record:
        got = specux.istft(mag, hop_length=64)
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = specux.istft(mag.to(torch.complex64), hop_length=64)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_istft_of_a_complex_tensor_does_not_warn():
    D = specux.stft(torch.from_numpy(_signal()), n_fft=256, hop_length=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        specux.istft(D, hop_length=64)


def test_istft_of_a_real_tensor_still_differentiates():
    y = torch.from_numpy(_signal()).requires_grad_()
    mag = specux.stft(y, n_fft=256, hop_length=64).abs()
    with pytest.warns(UserWarning, match="zero phase"):
        specux.istft(mag, hop_length=64).sum().backward()
    assert y.grad is not None and torch.isfinite(y.grad).all()
