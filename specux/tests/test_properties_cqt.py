"""Property tests of cqt / vqt / chroma_cqt and the filter banks (hypothesis), kept small so they stay fast.

Signals are 1-D or 2-D, 200 to 1500 samples, float32 or float64 (contiguous, reversed or strided), at 8 to 16
kHz; banks of 1 to 36 bins from 100 Hz up with 6, 12 or 24 bins per octave, whose top stays below a quarter of
the sample rate; hop lengths odd and even; every res_type, norm, pad_mode and window kind; for vqt a gamma or
explicit intervals. Properties: the cpu backend gives the NumPy reference's result
(``specux._reference.cqt.vqt`` row by row, and for chroma_cqt its magnitude folded by
``specux._reference.chroma``) within ``TOLERANCES``; a non-contiguous signal gives the result of its
contiguous copy; a bad parameter raises ValueError or TypeError naming it. The filter banks of
``specux.filters`` equal their references and name their bad parameters too.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
import scipy.signal as scipy_signal

import specux
from specux._reference import chroma as ref_chroma
from specux._reference import cqt as ref_cqt

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:n_fft=.*is too large:UserWarning"),
    pytest.mark.filterwarnings("ignore::specux.errors.EmptyFilterWarning"),
]

#: a constant-Q call costs up to a few tenths of a second (filters of thousands of taps): a third of the
#: examples of the profile in force
FEWER = settings(max_examples=max(5, settings.default.max_examples // 3))
SRS = (8000, 11025.0, np.int64(16000), np.float32(8000.0))


@st.composite
def signals(draw, max_ndim=2):
    rows = draw(st.sampled_from(((), (1,), (2,)))) if max_ndim > 1 else ()
    n = draw(st.integers(200, 1500))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layout = draw(st.sampled_from(("contiguous", "reversed", "strided")))
    t = np.arange(2 * n)
    x = np.sin(2 * np.pi * draw(st.sampled_from((0.02, 0.05, 0.11))) * t) + 0.3 * rng.standard_normal(
        (*rows, 2 * n)
    )
    x = x.astype(draw(st.sampled_from(("float32", "float64"))))
    if layout == "reversed":
        return x[..., n:][..., ::-1]
    if layout == "strided":
        return x[..., ::2]
    return x[..., :n]


@st.composite
def bank(draw):
    """sr, fmin, bins_per_octave and n_bins of a bank whose top bin is at most sr / 4."""
    sr = draw(st.sampled_from(SRS))
    fmin = draw(st.sampled_from((100.0, 220.0, 400, np.float64(1000.0))))
    bpo = draw(st.sampled_from((6, 12, 24, np.int64(12))))
    top = int(bpo * math.log2(float(sr) / 4 / float(fmin))) + 1
    return {"sr": sr, "fmin": fmin, "bins_per_octave": bpo, "n_bins": draw(st.integers(1, min(36, top)))}


def rows(y: np.ndarray) -> list[np.ndarray]:
    return [y] if y.ndim == 1 else list(y)


def stacked(y: np.ndarray, per_row) -> np.ndarray:
    out = [per_row(r) for r in rows(y)]
    return out[0] if y.ndim == 1 else np.stack(out)


def raises_naming(parameter: str, call, *args, **kwargs) -> Exception:
    """``call(*args, **kwargs)`` raises ValueError or TypeError (nothing else) naming ``parameter``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert re.search(parameter, str(error)), (
            f"{type(error).__name__}: {error!s} does not name {parameter}"
        )
        return error
    raise AssertionError(f"no error for {parameter} in {getattr(call, '__name__', call)}({kwargs})")


# --- cqt / vqt ----------------------------------------------------------------------------------------------


@st.composite
def vqt_kwargs(draw, variable: bool):
    kw = {
        **draw(bank()),
        "hop_length": draw(st.sampled_from((32, 64, 100, 33, np.int32(128)))),
        "tuning": draw(st.sampled_from((0.0, 0.3, -0.25))),
        "filter_scale": draw(st.sampled_from((1, 0.5, 1.5))),
        "norm": draw(st.sampled_from((1, 2.0, np.inf, None))),
        "sparsity": draw(st.sampled_from((0.01, 0.0, 0.3))),
        "window": draw(st.sampled_from(("hann", "hamming", ("kaiser", 6.0)))),
        "scale": draw(st.booleans()),
        "pad_mode": draw(st.sampled_from(("constant", "reflect", "edge", "symmetric", "wrap"))),
        "res_type": draw(st.sampled_from(("soxr_hq", "polyphase", None))),
    }
    if variable:
        kw["gamma"] = draw(st.sampled_from((None, 0, 5.0, 20)))
        if draw(st.booleans()):
            bpo = int(kw["bins_per_octave"])
            kw["intervals"] = list(2.0 ** (np.sort(np.random.default_rng(bpo).uniform(0, 1, bpo))))
            kw["intervals"][0] = 1.0
    return kw


@FEWER
@given(signals(), st.booleans(), st.data())
def test_cqt_and_vqt_match_reference(compare, y, variable, data):
    kw = data.draw(vqt_kwargs(variable))
    name = "vqt" if variable else "cqt"
    got = getattr(specux, name)(y, **kw, backend="cpu")
    assert got.dtype == (np.complex64 if y.dtype == np.float32 else np.complex128)
    fixed = {"gamma": 0} if name == "cqt" else {}
    want = stacked(y, lambda r: ref_cqt.vqt(r, **kw, **fixed))
    compare("vqt", "specux reference", got, want, dtype=y.dtype.name)
    if not y.flags.c_contiguous:
        dense = getattr(specux, name)(np.ascontiguousarray(y), **kw)
        compare("vqt", "contiguous copy", got, dense, dtype=y.dtype.name)


BAD_CQT = {
    "sr": (0, -1.0, float("nan"), "8000", True),
    "hop_length": (0, -64, 64.0, "64", True),
    "fmin": (0, -100.0, float("nan"), "100", True, 3000.0),  # 3000 Hz: the bank passes Nyquist
    "n_bins": (0, -1, 12.0, "12", True, 200),  # 200 bins: past Nyquist
    "bins_per_octave": (0, 12.0, "12", True),
    "tuning": (float("nan"), "0", True),
    "filter_scale": (0, -1.0, float("nan"), "1", True),
    "norm": (-1, "1", True),
    "sparsity": (-0.1, 1, 1.5, "0.01", True),
    "window": ("nope", None, ("kaiser",)),
    "scale": ("no", 1, None),
    "pad_mode": ("zeros", None, True),
    "res_type": ("x", 1, True, "kaiser_best"),
    "dtype": (np.float32, "int16", "float64"),
    "backend": ("gpu", None),
}


@pytest.mark.parametrize("name", sorted(BAD_CQT))
@given(st.data())
def test_cqt_bad_parameters_are_named(name, data):
    y = np.random.default_rng(4).standard_normal(600)
    bad = data.draw(st.sampled_from(BAD_CQT[name]))
    kw = {"sr": 8000, "fmin": 200.0, "n_bins": 12, "hop_length": 64, name: bad}
    pattern = r"\bn_bins\b.*\bfmin\b|\bfmin\b.*\bn_bins\b" if bad in (3000.0, 200) else rf"\b{name}\b"
    raises_naming(pattern, specux.cqt, y, **kw)
    raises_naming(pattern, specux.vqt, y, **kw)


def test_cqt_unreadable_dtype_is_named():
    raises_naming(r"\bdtype\b", specux.cqt, np.zeros(600), sr=8000, fmin=200.0, n_bins=12, dtype="abc")


@pytest.mark.parametrize("func", (specux.cqt, specux.vqt), ids=lambda f: f.__name__)
@given(st.sampled_from(("abc", 5, object(), [1, 2], "float32", np.int16, "complex256")))
def test_cqt_bad_dtype_names_dtype_and_the_choices(func, dtype):
    with pytest.raises(TypeError, match=r"dtype must be None, complex64 or complex128; got"):
        func(np.zeros(600), sr=8000, fmin=200.0, n_bins=12, dtype=dtype)


@given(st.sampled_from(((-1.0,), ("a",), (), (3.0,), (1.0, 2.5))), st.sampled_from((None, -1.0, "1")))
def test_vqt_bad_intervals_and_gamma_are_named(intervals, gamma):
    y = np.random.default_rng(5).standard_normal(600)
    kw = {"sr": 8000, "fmin": 200.0, "n_bins": 6, "hop_length": 64}
    raises_naming(r"\bintervals\b", specux.vqt, y, intervals=list(intervals), **kw)
    if gamma is not None:
        raises_naming(r"\bgamma\b", specux.vqt, y, gamma=gamma, **kw)


@given(st.sampled_from(("int16", "complex64", "float16", "U1")), st.sampled_from(((600,), (0,), (), (2, 0))))
def test_cqt_bad_signals_are_named(dtype, shape):
    raises_naming(r"\by\b", specux.cqt, np.zeros(shape, dtype), sr=8000, fmin=200.0, n_bins=12)


# --- chroma_cqt ---------------------------------------------------------------------------------------------


@FEWER
@given(signals(), st.data())
def test_chroma_cqt_matches_reference(compare, y, data):
    n_chroma = data.draw(st.sampled_from((12, 6, 3)))
    bpo = n_chroma * data.draw(st.sampled_from((1, 2)))
    sr = data.draw(st.sampled_from(SRS))
    fmin = data.draw(st.sampled_from((100.0, 220.0, 261.6)))
    n_octaves = data.draw(st.integers(1, max(1, int(math.log2(float(sr) / 4 / fmin)))))
    kw = {
        "sr": sr,
        "fmin": fmin,
        "hop_length": data.draw(st.sampled_from((64, 33, 128))),
        "n_chroma": n_chroma,
        "bins_per_octave": bpo,
        "n_octaves": n_octaves,
        "tuning": data.draw(st.sampled_from((0.0, 0.2))),
        "norm": data.draw(st.sampled_from((np.inf, 2, 1.0, None))),
        "threshold": data.draw(st.sampled_from((0.0, 0.05, None))),
        "res_type": data.draw(st.sampled_from(("soxr_hq", "polyphase"))),
    }
    got = specux.chroma_cqt(y, **kw, backend="cpu")
    n_bins = n_octaves * bpo
    fold = ref_chroma.cq_to_chroma(n_bins, bins_per_octave=bpo, n_chroma=n_chroma, fmin=fmin)
    cq = {k: kw[k] for k in ("sr", "fmin", "hop_length", "bins_per_octave", "tuning", "res_type")}
    magnitude = stacked(y, lambda r: np.abs(ref_cqt.vqt(r, n_bins=n_bins, gamma=0, **cq)))
    chroma = fold @ magnitude
    if kw["threshold"] is not None:
        chroma[chroma < kw["threshold"]] = 0.0
    want = ref_chroma.normalize_columns(chroma, kw["norm"])
    compare("chroma_cqt", "specux reference", got, want, dtype=y.dtype.name)
    if not y.flags.c_contiguous:
        dense = specux.chroma_cqt(np.ascontiguousarray(y), **kw)
        compare("chroma_cqt", "contiguous copy", got, dense, dtype=y.dtype.name)


BAD_CHROMA_CQT = {
    "sr": (0, float("nan"), "8000", True),
    "hop_length": (0, 2.5, "64"),
    "fmin": (-5.0, "100", True),
    "norm": (-1.0, "inf", True),
    "threshold": ("x", True),
    "tuning": (float("nan"), "0"),
    "n_chroma": (0, 12.0, "12"),
    "n_octaves": (0, -1, 2.0, "2"),
    "bins_per_octave": (13, 0, 12.5, "12"),
    "cqt_mode": ("hybrid", None, True),
    "res_type": ("x", 3),
}


@pytest.mark.parametrize("name", sorted(BAD_CHROMA_CQT))
@given(st.data())
def test_chroma_cqt_bad_parameters_are_named(name, data):
    y = np.random.default_rng(6).standard_normal(600)
    bad = data.draw(st.sampled_from(BAD_CHROMA_CQT[name]))
    kw = {"sr": 8000, "fmin": 200.0, "n_octaves": 2, "hop_length": 64, "tuning": 0.0, name: bad}
    raises_naming(rf"\b{name}\b", specux.chroma_cqt, y, **kw)


def test_chroma_cqt_bad_window_is_named():
    y = np.random.default_rng(6).standard_normal(600)
    raises_naming(
        r"\bwindow\b", specux.chroma_cqt, y, sr=8000, fmin=200.0, n_octaves=2, tuning=0.0, window="x"
    )


BAD_CHROMA_WINDOWS = ("x", "hann", 3.0, np.ones((2, 3)), np.array([]), [1.0, np.nan], ["a", "b"], [True])


@given(st.sampled_from(BAD_CHROMA_WINDOWS), st.booleans())
def test_chroma_cqt_windows_that_are_not_1d_arrays_of_numbers_are_named(window, given_c):
    # checked before the constant-Q transform is computed, with C given or not
    y = np.random.default_rng(6).standard_normal(600)
    kw = {"C": np.ones((24, 3))} if given_c else {"hop_length": 64}
    error = raises_naming(
        r"^chroma_cqt: window must be None or a non-empty 1-D array of finite real numbers",
        specux.chroma_cqt,
        None if given_c else y,
        sr=8000,
        fmin=200.0,
        n_octaves=2,
        tuning=0.0,
        bins_per_octave=12,
        window=window,
        **kw,
    )
    assert "Unsupported type" not in str(error)
    raises_naming(r"^cq_to_chroma: window\b", specux.filters.cq_to_chroma, 24, window=window)


def test_chroma_cqt_window_of_numbers_is_convolved():
    C = np.random.default_rng(7).random((24, 3))
    flat = specux.filters.cq_to_chroma(24)
    got = specux.filters.cq_to_chroma(24, window=[1, 2, 1])
    np.testing.assert_allclose(got, scipy_signal.convolve(flat, np.atleast_2d([1, 2, 1]), mode="same"))
    # a tuple, a list and an array are the same window
    kw = {"C": C, "sr": 8000, "fmin": 200.0, "tuning": 0.0, "bins_per_octave": 12}
    np.testing.assert_array_equal(
        specux.chroma_cqt(window=(1, 2, 1), **kw), specux.chroma_cqt(window=np.array([1.0, 2.0, 1.0]), **kw)
    )


# --- filter banks -------------------------------------------------------------------------------------------


@given(
    st.sampled_from(SRS),
    st.integers(2, 96),
    st.sampled_from((1, 3, 12, 24)),
    st.sampled_from((0.0, 0.3, -0.5)),
    st.sampled_from((5.0, 3)),
    st.sampled_from((2, None, 0.7)),
    st.sampled_from((2, 1, np.inf, None)),
    st.booleans(),
)
def test_chroma_bank_matches_reference(sr, n_fft, n_chroma, tuning, ctroct, octwidth, norm, base_c):
    kw = dict(sr=sr, n_fft=n_fft, n_chroma=n_chroma, tuning=tuning, ctroct=ctroct, octwidth=octwidth)
    got = specux.filters.chroma(**kw, norm=norm, base_c=base_c, dtype=np.float64)
    want = ref_chroma.chroma_filter(**{**kw, "sr": float(sr)}, norm=norm, base_c=base_c)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)  # test_chroma_filters' float64 bound


@given(
    st.integers(1, 100),
    st.sampled_from((12, 24, 36)),
    st.sampled_from((12, 6, 3)),
    st.sampled_from((None, 32.7, 440.0)),
    st.booleans(),
)
def test_cq_to_chroma_matches_reference(n_input, bpo, n_chroma, fmin, base_c):
    if bpo % n_chroma:
        return
    got = specux.filters.cq_to_chroma(
        n_input, bins_per_octave=bpo, n_chroma=n_chroma, fmin=fmin, base_c=base_c
    )
    kw = {} if fmin is None else {"fmin": fmin}
    want = ref_chroma.cq_to_chroma(n_input, bins_per_octave=bpo, n_chroma=n_chroma, base_c=base_c, **kw)
    np.testing.assert_array_equal(got, want)


#: (bank, valid keyword arguments, parameter -> bad values)
BAD_BANKS = {
    "mel": (
        {"sr": 8000, "n_fft": 64, "n_mels": 8},
        {
            "sr": (0, -1, "8000", True, None),
            "n_fft": (0, 2.5, "64", True),
            "n_mels": (0, 8.0, "8", True),
            "fmin": (-1.0, 4000.0, "0", True),
            "fmax": (4000.5, 0.0, "4000", True),
            "htk": ("no", 1, None),
            "norm": ("x", -1, True),
        },
    ),
    "chroma": (
        {"sr": 8000, "n_fft": 64},
        {
            "sr": (0, "8000", True),
            "n_fft": (0, 2.5, "64"),
            "n_chroma": (0, "12", 12.0),
            "tuning": (float("nan"), "0"),
            "ctroct": ("5", float("nan")),
            "octwidth": (0, -1.0, "2"),
            "norm": ("2", True),
            "base_c": ("yes", 1),
        },
    ),
    "linear": (
        {"sr": 8000, "n_fft": 64, "n_filter": 8},
        {
            "sr": (0, "8000", True),
            "n_fft": (0, "64"),
            "n_filter": (0, 8.0, "8"),
            "f_min": (-1.0, "0", 4000.0),
            "f_max": (4000.5, 0.0, "4000"),
        },
    ),
    "constant_q": (
        {"sr": 8000, "fmin": 200.0, "n_bins": 12},
        {
            "sr": (0, "8000", True),
            "fmin": (0, -1.0, "200"),
            "n_bins": (0, 12.0, "12"),
            "bins_per_octave": (0, "12"),
            "filter_scale": (0, "1"),
            "norm": (-1,),  # "1": a bug, see test_constant_q_string_norm_is_named
            "pad_fft": ("yes", 1),
            "window": ("nope", None),
        },
    ),
    "get_window": (
        {"window": "hann", "Nx": 16},
        {"Nx": (0, -1, 16.0, "16", True), "window": ("nope", None, ("kaiser",), {}), "fftbins": ("no", 1)},
    ),
}
BANK_CASES = [(bank, name) for bank, (_, bad) in BAD_BANKS.items() for name in bad]


@pytest.mark.parametrize(("bank", "name"), BANK_CASES, ids=[f"{b}-{n}" for b, n in BANK_CASES])
@given(st.data())
def test_filter_bank_bad_parameters_are_named(bank, name, data):
    valid, bad = BAD_BANKS[bank]
    kw = {**valid, name: data.draw(st.sampled_from(bad[name]))}
    func = getattr(specux.filters, bank)
    if bank == "get_window":
        raises_naming(rf"\b{name}\b", func, kw.pop("window"), kw.pop("Nx"), **kw)
    else:
        raises_naming(rf"\b{name}\b", func, **kw)


def test_constant_q_string_norm_is_named():
    raises_naming(r"\bnorm\b", specux.filters.constant_q, sr=8000, fmin=200.0, n_bins=12, norm="1")


@given(
    st.sampled_from(("1", "inf", True, [1], -1, -0.5, float("nan"), 1j)), st.sampled_from(("cq", "wavelet"))
)
def test_filter_bank_bad_norm_names_norm_and_the_choices(norm, bank):
    if bank == "cq":
        call, kw = specux.filters.constant_q, {"sr": 8000, "fmin": 200.0, "n_bins": 12}
    else:
        call, kw = specux.filters.wavelet, {"freqs": np.array([200.0, 300.0]), "sr": 8000}
    raises_naming(r"\bnorm must be None, inf, -inf, 0 or a positive number; got", call, norm=norm, **kw)


@given(st.sampled_from((None, 1, 2, 0.5, 0, np.inf, -np.inf, np.float32(2))))
def test_filter_bank_good_norms_are_served(norm):
    filters, _ = specux.filters.constant_q(sr=8000, fmin=200.0, n_bins=12, norm=norm)
    assert filters.shape[0] == 12 and np.all(np.isfinite(filters))
