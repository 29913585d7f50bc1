"""Property tests of the stft-based features, fftconvolve and the decibel conversions (hypothesis).

melspectrogram, mfcc, lfcc and chroma_stft on 1-D to 3-D float32 / float64 signals of 1 to 300 samples (noise,
silence, a sine, an impulse, a loud signal; contiguous, reversed, strided or Fortran-ordered), with n_fft 2 to
64, every valid hop / window / centering / pad_mode, n_mels / n_filter / n_chroma from 1, fmin / fmax
anywhere in 0 .. sr / 2, every norm, and the cepstral options. fftconvolve on 1-D to 3-D real or complex
inputs of sides 1 to 7 with every mode and axes choice; power_to_db / amplitude_to_db on arrays of any shape.

Properties: the cpu backend gives the NumPy reference's result (``specux._reference``, with the parameters the
public function resolves) within ``TOLERANCES``; a non-contiguous input gives the result of its contiguous
copy; a bad parameter raises ValueError or TypeError naming it (never another exception).
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest

import specux
from specux._reference import cepstral as ref_cepstral
from specux._reference import chroma as ref_chroma
from specux._reference import mel as ref_mel
from specux._reference import stft as ref_stft
from specux._reference.convolve import fftconvolve as direct_convolve
from specux._spec.convolve import fftconvolve_validate
from specux._spec.features import lfcc_validate, mel_validate, mfcc_validate
from specux._spec.stft import stft_validate
from specux.errors import EmptyFilterWarning

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*is larger than the signal length:UserWarning"),
    # many bands over few FFT bins leave some empty (rows of zeros, as librosa and torchaudio): that is
    # the documented behaviour, which the reference shares
    pytest.mark.filterwarnings("ignore::specux.errors.EmptyFilterWarning"),
]

PAD_MODES = ("constant", "reflect", "edge", "symmetric", "wrap")
KINDS = ("noise", "zeros", "sine", "impulse", "loud")
LAYOUTS = ("contiguous", "reversed", "strided", "fortran")
SRS = (8000, 16000.0, 22050, np.float32(11025.0), np.int64(44100))


def fill(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    n = shape[-1]
    if kind == "zeros":
        return np.zeros(shape)
    if kind == "sine":
        return np.broadcast_to(np.sin(0.3 * np.arange(n) + 0.2), shape).copy()
    if kind == "impulse":
        x = np.zeros(shape)
        x[..., n // 2] = 1.0
        return x
    return rng.standard_normal(shape) * (1e4 if kind == "loud" else 1.0)


@st.composite
def signals(draw, max_length=300, max_ndim=3, min_length=1):
    """(..., L) real signals of a drawn dtype, content and memory layout."""
    ndim = draw(st.integers(1, max_ndim))
    shape = (*draw(st.lists(st.integers(1, 3), min_size=ndim - 1, max_size=ndim - 1)),)
    shape += (draw(st.integers(min_length, max_length)),)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(KINDS))
    layout = draw(st.sampled_from(LAYOUTS))
    if layout == "strided":
        x = fill(rng, (*shape[:-1], 2 * shape[-1]), kind)[..., ::2]
    else:
        x = fill(rng, shape, kind)
    x = x.astype(draw(st.sampled_from(("float32", "float64"))))
    if layout == "reversed":
        x = x[..., ::-1]
    elif layout == "fortran":
        x = np.asfortranarray(x)
    return x


@st.composite
def frame_kwargs(draw, length: int, pad_modes=PAD_MODES):
    """Valid framing parameters (n_fft, hop_length, win_length, window, center, pad_mode)."""
    center = draw(st.booleans())
    n_fft = draw(st.integers(2, 64 if center else max(2, min(64, length))))
    if not center and n_fft > length:
        center = True
    return {
        "n_fft": n_fft,
        "hop_length": draw(st.integers(1, 2 * n_fft)),
        "win_length": draw(st.none() | st.integers(1, n_fft)),
        "window": draw(st.sampled_from(("hann", "hamming", ("kaiser", 6.0), "boxcar", 3.5))),
        "center": center,
        "pad_mode": draw(st.sampled_from(pad_modes)),
    }


@st.composite
def band(draw, sr: float):
    """(fmin, fmax) with 0 <= fmin < fmax <= sr / 2 (fmax None: sr / 2)."""
    nyquist = float(sr) / 2
    fmin = draw(st.sampled_from((0.0, 0.0, 20.0, nyquist / 3, np.float64(100.0))))
    fmax = draw(st.sampled_from((None, nyquist, nyquist * 0.75, fmin + 1.0)))
    return fmin, fmax


def defaults(func) -> dict:
    """The keyword defaults of a public function (one place where they are spelled: its signature)."""
    return {
        k: v.default
        for k, v in inspect.signature(func).parameters.items()
        if v.default is not inspect.Parameter.empty and k not in ("y", "S", "waveform", "backend")
    }


def precision(x: np.ndarray) -> str:
    return np.dtype(x.dtype).name


def same_as_contiguous(compare, op, func, x, kw, dtype):
    if not x.flags.c_contiguous:
        compare(op, "contiguous copy", func(x, **kw), func(np.ascontiguousarray(x), **kw), dtype=dtype)


def raises_naming(parameter: str, call, *args, **kwargs) -> Exception:
    """``call(*args, **kwargs)`` raises ValueError or TypeError (nothing else) naming ``parameter``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyFilterWarning)
            call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert re.search(parameter, str(error)), (
            f"{type(error).__name__}: {error!s} does not name {parameter}"
        )
        return error
    raise AssertionError(f"no error for {parameter} in {getattr(call, '__name__', call)}({kwargs})")


# --- melspectrogram / mfcc / lfcc ---------------------------------------------------------------------------


@st.composite
def mel_kwargs(draw, length: int):
    sr = draw(st.sampled_from(SRS))
    fmin, fmax = draw(band(sr))
    return {
        **draw(frame_kwargs(length)),
        "sr": sr,
        "power": draw(st.sampled_from((2.0, 1.0, 0.5, 3))),
        "n_mels": draw(st.integers(1, 40)),
        "fmin": fmin,
        "fmax": fmax,
        "htk": draw(st.sampled_from((None, True, False, np.True_))),
        "norm": draw(st.sampled_from(("auto", "slaney", None, 1.0, 2, np.inf))),
    }


@given(st.data())
def test_melspectrogram_matches_reference(compare, data):
    y = data.draw(signals())
    kw = data.draw(mel_kwargs(y.shape[-1]))
    got = specux.melspectrogram(y, **kw, backend="cpu")
    p = mel_validate(y, from_spectrogram=False, **{**defaults(specux.melspectrogram), **kw})
    assert got.dtype == y.dtype
    compare("melspectrogram", "specux reference", got, ref_mel.melspectrogram(y, p), dtype=precision(y))
    same_as_contiguous(compare, "melspectrogram", specux.melspectrogram, y, kw, precision(y))


@given(st.data())
def test_melspectrogram_of_a_spectrogram_matches_reference(compare, data):
    y = data.draw(signals(min_length=64))
    n_fft = data.draw(st.sampled_from((2, 15, 32, 63)))
    S = np.abs(specux.stft(np.ascontiguousarray(y), n_fft=n_fft, hop_length=16)) ** 2
    if data.draw(st.booleans()):
        S = S[..., ::-1]  # frames in reverse order: negative strides
    # the spectrogram's bins mean n_fft = 2 * (bins - 1): an odd n_fft cannot be given with S (librosa
    # assumes it too; specux checks it)
    given_n_fft = data.draw(st.sampled_from((None, 2 * (n_fft // 2))))
    kw = {"sr": 16000, "n_mels": data.draw(st.integers(1, 24)), "n_fft": given_n_fft}
    got = specux.melspectrogram(S=S, **kw)
    p = mel_validate(S, from_spectrogram=True, **{**defaults(specux.melspectrogram), **kw})
    compare("melspectrogram", "specux reference", got, ref_mel.melspectrogram(S, p), dtype=precision(y))


@given(st.data())
def test_mfcc_matches_reference(compare, data):
    y = data.draw(signals())
    kw = data.draw(mel_kwargs(y.shape[-1]))
    kw["mel_norm"] = kw.pop("norm")
    kw.update(
        n_mfcc=data.draw(st.none() | st.integers(1, kw["n_mels"])),
        dct_type=data.draw(st.sampled_from((1, 2, 3))),
        norm=data.draw(st.sampled_from((None, "ortho"))),
        lifter=data.draw(st.sampled_from((0.0, 0, 1.5, 22))),
        top_db=data.draw(st.sampled_from((None, 80.0, 0.0, 40))),
    )
    if kw["n_mfcc"] is None and kw["n_mels"] < 20:
        kw["n_mfcc"] = kw["n_mels"]  # the default n_mfcc=20 needs 20 bands (else an error, checked below)
    if kw["dct_type"] == 1 and kw["n_mels"] < 2:
        kw["n_mels"] = 2  # a type-1 DCT needs two points
    got = specux.mfcc(y, **kw, backend="cpu")
    p = mfcc_validate(y, from_spectrogram=False, **{**defaults(specux.mfcc), **kw})
    compare("mfcc", "specux reference", got, ref_cepstral.cepstrum(y, p), dtype=precision(y))
    same_as_contiguous(compare, "mfcc", specux.mfcc, y, kw, precision(y))


@given(st.data())
def test_lfcc_matches_reference(compare, data):
    y = data.draw(signals())
    frame = data.draw(frame_kwargs(y.shape[-1]))
    sample_rate = data.draw(st.sampled_from((8000, 16000, np.int32(22050), 11025.0)))
    f_min, f_max = data.draw(band(sample_rate))
    n_filter = data.draw(st.integers(1, 40))
    kw = {
        **frame,
        "sample_rate": sample_rate,
        "f_min": f_min,
        "f_max": f_max,
        "n_filter": n_filter,
        "n_lfcc": data.draw(st.integers(1, n_filter)),
        "norm": data.draw(st.sampled_from((None, "ortho"))),
        "log_lf": data.draw(st.booleans()),
        "power": data.draw(st.sampled_from((2.0, 1.0))),
    }
    got = specux.lfcc(y, **kw, backend="cpu")
    p = lfcc_validate(y, **{**defaults(specux.lfcc), **kw})
    compare("lfcc", "specux reference", got, ref_cepstral.cepstrum(y, p), dtype=precision(y))
    same_as_contiguous(compare, "lfcc", specux.lfcc, y, kw, precision(y))


BAD_MEL = {
    "sr": (0, -8000, float("nan"), float("inf"), "16000", True),  # None: the default
    "n_fft": (0, -1, 2.5, "16", True),
    "hop_length": (0, -3, 1.5, "4", True),
    "power": (0, -2.0, float("nan"), "2", True),
    "n_mels": (0, -1, 2.5, "40", True, None),
    "fmin": (-1.0, 4000.0, 5000.0, float("nan"), "0", True),  # sr 8000: fmin must be below fmax = 4000
    "fmax": (4000.5, 8000.0, 0.0, -1.0, float("nan"), "4000", True),
    "htk": ("no", "True", 0, 1),
    "norm": ("x", "", -1, 0, True, "ortho"),
    "compat": ("x", "librosa", True, ""),
    "center": ("False", 0, None),
    "pad_mode": ("zeros", True, 1),
    "window": ("nope", ("kaiser",), np.ones(3)),
    "backend": ("gpu", None),
}


@pytest.mark.parametrize("name", sorted(BAD_MEL))
@given(st.data())
def test_melspectrogram_bad_parameters_are_named(name, data):
    y = (
        np.random.default_rng(0)
        .standard_normal((2, 400))
        .astype(data.draw(st.sampled_from(("float32", "float64"))))
    )
    kw = {"sr": 8000, "n_fft": 16, "n_mels": 8, name: data.draw(st.sampled_from(BAD_MEL[name]))}
    raises_naming(rf"\b{name}\b", specux.melspectrogram, y, **kw)
    # mfcc takes the same parameters (the mel norm is mel_norm there), with the same rules
    kw = {("mel_norm" if k == "norm" else k): v for k, v in kw.items()}
    raises_naming(rf"\b{name}\b", specux.mfcc, y, n_mfcc=4, **kw)


BAD_MFCC = {
    "n_mfcc": (0, -1, 9, 2.0, "4", True),  # 8 bands: n_mfcc <= 8
    "dct_type": (0, 4, 2.0, "2", True),
    "norm": ("forward", "", 1, True),
    "lifter": (-1.0, float("nan"), "1", True),
    "top_db": (-1.0, float("nan"), "80", True),
}


@pytest.mark.parametrize("name", sorted(BAD_MFCC))
@given(st.data())
def test_mfcc_bad_parameters_are_named(name, data):
    y = np.random.default_rng(1).standard_normal(400)
    bad = data.draw(st.sampled_from(BAD_MFCC[name]))
    kw = {"sr": 8000, "n_fft": 16, "n_mels": 8, "n_mfcc": 4, name: bad}
    raises_naming(rf"\b{name}\b", specux.mfcc, y, **kw)


BAD_LFCC = {
    "sample_rate": (0, -1, float("nan"), "16000", True, None),
    "n_filter": (0, -1, 2.5, "8", True),
    "n_lfcc": (0, 9, 2.0, "4", True),  # n_filter 8
    "f_min": (-1.0, 8000.0, float("nan"), "0", True),
    "f_max": (8000.5, 0.0, float("nan"), "8000", True),
    "dct_type": (1, 3, "2", True),
    "norm": ("forward", 1, True),
    "log_lf": ("no", 0, 1, None),
    "n_fft": (0, 2.5, "16", True),
    "win_length": (0, 17, "8"),
    "hop_length": (0, 1.5, "4"),
    "power": (0, -1.0, "2", True),
    "center": ("yes", 1),
    "pad_mode": ("zeros", None),
}


@pytest.mark.parametrize("name", sorted(BAD_LFCC))
@given(st.data())
def test_lfcc_bad_parameters_are_named(name, data):
    y = np.random.default_rng(2).standard_normal((3, 400)).astype(np.float32)
    bad = data.draw(st.sampled_from(BAD_LFCC[name]))
    raises_naming(rf"\b{name}\b", specux.lfcc, y, **{"n_fft": 16, "n_filter": 8, "n_lfcc": 4, name: bad})


@given(
    st.sampled_from((specux.melspectrogram, specux.mfcc)),
    st.sampled_from(("int16", "complex64", "float16", "U1")),
)
def test_feature_signal_dtypes_are_named(func, dtype):
    raises_naming(r"\by\b", func, np.zeros(400, dtype), sr=8000, n_fft=16, n_mels=8)


@given(st.sampled_from((2**31, 2**24)), st.sampled_from(("melspectrogram", "mfcc", "lfcc")))
def test_huge_n_fft_is_refused_before_allocating(n_fft, name):
    y = np.zeros(16000, np.float32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECUX_MEMORY_LIMIT", "64M")
        error = raises_naming(r"\bn_fft\b", getattr(specux, name), y, n_fft=n_fft)
    assert isinstance(error, specux.MemoryLimitError)


# --- chroma_stft --------------------------------------------------------------------------------------------


@given(st.data())
def test_chroma_stft_matches_reference(compare, data):
    y = data.draw(signals(max_ndim=2))
    frame = data.draw(frame_kwargs(y.shape[-1]))
    kw = {
        **frame,
        "sr": data.draw(st.sampled_from(SRS)),
        "tuning": data.draw(st.sampled_from((0.0, -0.5, 0.25, np.float32(0.1)))),
        "n_chroma": data.draw(st.sampled_from((1, 3, 12, 24, 7))),
        "ctroct": data.draw(st.sampled_from((5.0, 3, 6.5))),
        "octwidth": data.draw(st.sampled_from((2, None, 0.5))),
        "base_c": data.draw(st.booleans()),
        "norm": data.draw(st.sampled_from((np.inf, -np.inf, 0, 1, 2.0, None))),
    }
    got = specux.chroma_stft(y, **kw, backend="cpu")
    p = stft_validate(y, **{k: kw[k] for k in frame})
    power = np.abs(ref_stft.stft(y, p)) ** 2
    bank = ref_chroma.chroma_filter(
        sr=float(kw["sr"]),
        n_fft=kw["n_fft"],
        n_chroma=kw["n_chroma"],
        tuning=float(kw["tuning"]),
        ctroct=float(kw["ctroct"]),
        octwidth=kw["octwidth"],
        base_c=kw["base_c"],
    ).astype(np.float32)  # the bank is float32, as librosa's (a float64 signal meets float32 weights)
    compare(
        "chroma_stft",
        "specux reference",
        got,
        ref_chroma.chroma_from_power(power, bank, kw["norm"]),
        dtype=precision(y),
    )
    same_as_contiguous(compare, "chroma_stft", specux.chroma_stft, y, kw, precision(y))


BAD_CHROMA = {
    "sr": (0, -1.0, float("nan"), "22050", True),
    "n_chroma": (0, -12, 12.0, "12", True),
    "tuning": (float("nan"), float("inf"), "0", True),
    "ctroct": (float("nan"), "5", True),
    "octwidth": (0, -1.0, "2", True),
    "base_c": ("no", 1, None),
    "norm": (-1.0, "inf", True),
    "n_fft": (0, 2.5, "16", True),
    "hop_length": (0, 2.5, "4"),
    "center": ("no", 0),
    "pad_mode": ("zeros", None),
}


@pytest.mark.parametrize("name", sorted(BAD_CHROMA))
@given(st.data())
def test_chroma_stft_bad_parameters_are_named(name, data):
    y = np.random.default_rng(3).standard_normal(600)
    bad = data.draw(st.sampled_from(BAD_CHROMA[name]))
    raises_naming(rf"\b{name}\b", specux.chroma_stft, y, **{"n_fft": 64, "tuning": 0.0, name: bad})


def test_chroma_stft_of_a_one_bin_spectrogram_names_s():
    raises_naming(r"\bS\b", specux.chroma_stft, S=np.ones((1, 3)), tuning=0.0)


@given(st.sampled_from(((0, 3), (1, 1), (2, 1, 4), (5,), ())), st.sampled_from((0.0, None)))
def test_chroma_stft_of_a_spectrogram_without_two_bins_names_s(shape, tuning):
    # without tuning the estimate runs first on the spectrogram: S must be checked before it too
    error = raises_naming(r"\bS\b", specux.chroma_stft, S=np.ones(shape), tuning=tuning)
    assert "n_fft must be >= 1" not in str(error)


def test_chroma_stft_of_a_two_bin_spectrogram_is_served():
    # 2 bins: n_fft = 2, the smallest spectrogram the check lets through, still computed
    assert specux.chroma_stft(S=np.ones((2, 3)), tuning=0.0).shape == (12, 3)


# --- fftconvolve --------------------------------------------------------------------------------------------


@st.composite
def convolve_call(draw):
    ndim = draw(st.integers(1, 3))
    side = st.integers(1, 7 if ndim == 1 else 4)
    s1 = [draw(side) for _ in range(ndim)]
    s2 = [draw(side) for _ in range(ndim)]
    axes = draw(
        st.none()
        | st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim, unique_by=lambda a: a % ndim)
    )
    conv = range(ndim) if axes is None else {a % ndim for a in axes}
    for a in range(ndim):  # axes not convolved must match or broadcast
        if a not in conv and s1[a] != s2[a] and 1 not in (s1[a], s2[a]):
            s2[a] = s1[a]
    mode = draw(st.sampled_from(("full", "same", "valid")))
    if mode == "valid":  # one input at least as large as the other along every convolved axis
        for a in conv:
            s1[a], s2[a] = max(s1[a], s2[a]), min(s1[a], s2[a])
        if draw(st.booleans()):
            s1, s2 = s2, s1
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pair = []
    for shape in (s1, s2):
        dtype = draw(st.sampled_from(("float32", "float64", "complex64", "complex128", "int32", "bool")))
        x = rng.standard_normal([2 * s for s in shape]) + (1j * rng.standard_normal([2 * s for s in shape]))
        x = x if dtype.startswith("complex") else x.real
        x = (x > 0) if dtype == "bool" else x.astype(dtype) if dtype != "int32" else (10 * x).astype(dtype)
        view = draw(st.sampled_from(("dense", "reversed", "strided")))
        sl = tuple(slice(None, s) for s in shape)
        if view == "reversed":
            sl = tuple(slice(s - 1, None, -1) for s in shape)
        elif view == "strided":
            sl = tuple(slice(None, 2 * s, 2) for s in shape)
        pair.append(x[sl])
    return pair[0], pair[1], mode, axes


@given(convolve_call())
def test_fftconvolve_matches_reference(compare, call):
    a, b, mode, axes = call
    got = specux.fftconvolve(a, b, mode, axes, backend="cpu")
    p = fftconvolve_validate(a, b, mode=mode, axes=axes)
    want = direct_convolve(*((b, a) if p.swapped else (a, b)), p)
    assert got.dtype == np.dtype(p.dtype) and got.shape == p.out_shape
    real = np.dtype(p.dtype).name.replace("complex64", "float32").replace("complex128", "float64")
    compare("fftconvolve", "specux reference (direct sum)", got, want, dtype=real)
    if not (a.flags.c_contiguous and b.flags.c_contiguous):
        dense = specux.fftconvolve(np.ascontiguousarray(a), np.ascontiguousarray(b), mode, axes)
        compare("fftconvolve", "contiguous copy", got, dense, dtype=real)


BAD_CONVOLVE = {
    "mode": ("x", "FULL", None, 1, True),
    "axes": (5, -3, 1.0, "0", [0, 0], [], [0.5]),
    "backend": ("gpu", None),
}


@pytest.mark.parametrize("name", sorted(BAD_CONVOLVE))
@given(st.data())
def test_fftconvolve_bad_parameters_are_named(name, data):
    bad = data.draw(st.sampled_from(BAD_CONVOLVE[name]))
    pattern = r"\bax[ie]s\b" if name == "axes" else rf"\b{name}\b"
    raises_naming(pattern, specux.fftconvolve, np.ones((2, 5)), np.ones((2, 3)), **{name: bad})


@given(st.sampled_from(((5,), (2, 5), (0,), ())), st.sampled_from(((3,), (2, 3, 1), (0,))))
def test_fftconvolve_bad_shapes_name_the_inputs(s1, s2):
    if len(s1) == len(s2) and 0 not in s1 + s2 and s1:
        return  # a valid pair
    raises_naming(r"\bin[12]\b", specux.fftconvolve, np.ones(s1), np.ones(s2))


# --- decibels -----------------------------------------------------------------------------------------------


@given(st.data())
def test_decibels_match_librosa(data):
    librosa = pytest.importorskip("librosa")
    name = data.draw(st.sampled_from(("power_to_db", "amplitude_to_db")))
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    S = rng.random(shape) ** 4 * data.draw(st.sampled_from((1.0, 1e-12, 1e6)))
    S[rng.random(shape) < 0.2] = 0.0
    if data.draw(st.booleans()) and S.ndim > 1:
        S = S[::-1, ::2] if S.shape[1] > 1 else S[::-1]
    kw = {
        "ref": data.draw(st.sampled_from((1.0, np.max, 0.3, 2, np.median))),
        "amin": data.draw(st.sampled_from((1e-10, 1e-5, np.float64(1e-3)))),
        "top_db": data.draw(st.sampled_from((80.0, None, 0.0, 40))),
    }
    got = getattr(specux, name)(S, **kw)
    assert got.dtype == np.float64 and got.shape == S.shape
    # test_convert_librosa_parity's bound for the decibel conversions
    np.testing.assert_allclose(got, getattr(librosa, name)(S, **kw), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got, getattr(specux, name)(np.ascontiguousarray(S), **kw))
    got32 = getattr(specux, name)(S.astype(np.float32), **kw)
    assert got32.dtype == np.float32
    if not callable(kw["ref"]):
        # a numpy number means the same as the Python number (librosa takes the log of a float32 ref in
        # float32, specux in float64: compared with specux itself, not librosa)
        np.testing.assert_array_equal(
            getattr(specux, name)(S, **{**kw, "ref": np.float32(kw["ref"])}),
            getattr(specux, name)(S, **{**kw, "ref": float(np.float32(kw["ref"]))}),
        )


BAD_DB = {
    "ref": ("1", None, True, [1.0]),
    "amin": (0, -1e-10, float("nan"), "1e-10", True, None),
    "top_db": (-1.0, float("nan"), "80", True),
}


@pytest.mark.parametrize("name", sorted(BAD_DB))
@given(st.sampled_from(("power_to_db", "amplitude_to_db")), st.data())
def test_decibels_bad_parameters_are_named(name, func, data):
    bad = data.draw(st.sampled_from(BAD_DB[name]))
    raises_naming(rf"\b{name}\b", getattr(specux, func), np.ones((3, 4)), **{name: bad})


def test_decibels_of_strings_name_s():
    raises_naming(r"\bS\b", specux.power_to_db, np.array(["a", "b"]))


def test_decibels_callable_ref_of_a_non_number_names_ref():
    raises_naming(r"\bref\b", specux.power_to_db, np.ones((3, 4)), ref=lambda S: "x")


@given(
    st.sampled_from(("power_to_db", "amplitude_to_db")),
    st.sampled_from((lambda S: "x", lambda S: None, lambda S: np.ones(3), lambda S: True, lambda S: 1j)),
)
def test_decibels_callable_ref_must_give_one_real_number(func, ref):
    raises_naming(r"\bref\b", getattr(specux, func), np.ones((3, 4)), ref=ref)


@given(
    st.sampled_from(("power_to_db", "amplitude_to_db")),
    st.sampled_from((float("nan"), np.float32("nan"), np.array(np.nan), lambda S: np.nan, np.max)),
)
def test_decibels_nan_ref_is_named(func, ref):
    # max(amin, nan) took amin as the reference without a word (librosa's output is all NaN): refused,
    # whether given or computed (np.max of an array holding NaN)
    S = np.array([[1.0, np.nan], [0.5, 2.0]])
    error = raises_naming(r"\bref\b", getattr(specux, func), S, ref=ref)
    assert isinstance(error, ValueError) and "nan" in str(error)
    assert np.isnan(S[0, 1]) and S[1, 1] == 2.0  # the input is left as it was


@given(
    st.sampled_from(("power_to_db", "amplitude_to_db")),
    st.sampled_from((-1.0, -0.3, -2, 0.0, -0.0, np.inf, -np.inf, np.float64(-0.5))),
    st.sampled_from((80.0, None)),
)
def test_decibels_use_the_magnitude_of_ref_as_librosa(func, ref, top_db):
    # librosa 0.11 takes abs(ref) of a number, then floors it at amin (ref=0 is the floor): the same rule,
    # so a negative, zero or infinite ref means what it means there (a float32 ref is not compared:
    # librosa takes its log in float32, see test_decibels_match_librosa)
    librosa = pytest.importorskip("librosa")
    S = np.array([[1.0, 0.25, 0.0], [4.0, 1e-3, 2.0]])
    got = getattr(specux, func)(S, ref=ref, top_db=top_db)
    np.testing.assert_allclose(got, getattr(librosa, func)(S, ref=ref, top_db=top_db), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got, getattr(specux, func)(S, ref=abs(float(ref)), top_db=top_db))


@given(
    st.sampled_from(("power_to_db", "amplitude_to_db")),
    st.sampled_from((np.array(["1", "2"]), np.array([1.0, None]), [["a"]], np.array([b"x"]))),
)
def test_decibels_of_non_numbers_name_s(func, S):
    raises_naming(r"\bS\b", getattr(specux, func), S)
