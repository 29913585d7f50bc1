"""Property tests of specux.stft / istft (hypothesis): the NumPy reference, every layout, bad input.

Signals are 1-D to 4-D (batch axes in front), 1 to 200 samples, float32 or float64, noise, silence, a sine, an
impulse or a loud (1e4) signal, laid out contiguous, reversed or every second sample along the time axis,
reversed along a batch axis or in Fortran order. Parameters range over what a caller can give: n_fft 1 to 64
(odd included), hop_length and win_length None or any valid value, every window kind (names, tuples, a
Kaiser beta, an array, a callable), both centerings, every pad_mode and output, the dtype override.

Properties: the cpu backend (the only one serving these here) gives the reference's result
(``specux._reference.stft`` with the same resolved parameters) within ``TOLERANCES``; a non-contiguous input
gives the result of its contiguous copy; each bad parameter raises ValueError or TypeError naming it, and a
size too large for ``SPECUX_MEMORY_LIMIT`` (set small) a MemoryLimitError naming the parameter that sets it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import specux
from specux._reference import stft as ref
from specux._spec.stft import istft_validate, stft_validate
from specux.errors import NolaError

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# n_fft longer than a centred signal is allowed with a warning (the frames are mostly padding)
pytestmark = pytest.mark.filterwarnings("ignore:.*is larger than the signal length:UserWarning")

PAD_MODES = ("constant", "reflect", "edge", "symmetric", "wrap")
OUTPUTS = ("complex", "magnitude", "power", "real_imag")
LAYOUTS = ("contiguous", "reversed", "strided", "batch_reversed", "fortran")
KINDS = ("noise", "zeros", "sine", "impulse", "loud")


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
def signals(draw, max_length=200, max_ndim=4, dtypes=("float32", "float64"), min_length=1):
    """(..., L) real signals of a drawn dtype, content and memory layout."""
    ndim = draw(st.integers(1, max_ndim))
    shape = (*draw(st.lists(st.integers(1, 3), min_size=ndim - 1, max_size=ndim - 1)),)
    shape += (draw(st.integers(min_length, max_length)),)
    dtype = draw(st.sampled_from(dtypes))
    layout = draw(st.sampled_from(LAYOUTS))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(KINDS))
    if layout == "strided":
        x = fill(rng, (*shape[:-1], 2 * shape[-1]), kind)[..., ::2]
    else:
        x = fill(rng, shape, kind)
    x = x.astype(dtype)
    if layout == "reversed":
        x = x[..., ::-1]
    elif layout == "batch_reversed" and ndim > 1:
        x = x[::-1]
    elif layout == "fortran":
        x = np.asfortranarray(x)
    return x


@st.composite
def windows(draw, win_length: int):
    kind = draw(st.sampled_from(("name", "tuple", "beta", "array", "callable")))
    if kind == "name":
        return draw(st.sampled_from(("hann", "hamming", "blackman", "boxcar", "triang", "cosine")))
    if kind == "tuple":
        return draw(st.sampled_from((("kaiser", 8.0), ("tukey", 0.3), ("gaussian", 3.0))))
    if kind == "beta":
        return draw(st.floats(0.0, 20.0))
    if kind == "array":
        return np.random.default_rng(win_length).uniform(0.1, 1.0, win_length)
    return np.hamming


@st.composite
def stft_kwargs(draw, length: int):
    """Valid stft parameters for a signal of ``length`` samples."""
    center = draw(st.booleans())
    n_fft = draw(st.integers(1, 64 if center else min(64, length)))
    win_length = draw(st.none() | st.integers(1, n_fft))
    kw = {
        "n_fft": n_fft,
        "hop_length": draw(st.none() | st.integers(1, 2 * n_fft + 3)),
        "win_length": win_length,
        "window": draw(windows(n_fft if win_length is None else win_length)),
        "center": center,
        "pad_mode": draw(st.sampled_from(PAD_MODES)),
        "output": draw(st.sampled_from(OUTPUTS)),
        "dtype": draw(st.sampled_from((None, np.complex64, np.complex128))),
    }
    return kw


def raises_naming(parameter: str, call, *args, **kwargs) -> Exception:
    """``call(*args, **kwargs)`` raises ValueError or TypeError (nothing else) naming ``parameter``."""
    try:
        call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert re.search(parameter, str(error)), (
            f"{type(error).__name__}: {error!s} does not name {parameter}"
        )
        return error
    raise AssertionError(f"no error for {parameter} in {getattr(call, '__name__', call)}({kwargs})")


# --- valid input --------------------------------------------------------------------------------------------


@given(st.data())
def test_stft_matches_reference(compare, data):
    y = data.draw(signals())
    kw = data.draw(stft_kwargs(y.shape[-1]))
    got = specux.stft(y, **kw, backend="cpu")
    p = stft_validate(y, **kw)
    compare("stft", "specux reference", got, ref.stft(y, p), dtype=p.dtype)
    if not y.flags.c_contiguous:
        compare("stft", "contiguous copy", got, specux.stft(np.ascontiguousarray(y), **kw), dtype=p.dtype)


@given(st.data())
def test_istft_matches_reference(compare, data):
    n_fft = data.draw(st.integers(1, 48))
    frames = data.draw(st.integers(1, 12))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    dtype = data.draw(st.sampled_from((np.complex64, np.complex128)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = (*batch, n_fft // 2 + 1, frames)
    D = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if data.draw(st.booleans()):  # a reversed time axis (negative strides)
        D = D[..., ::-1]
    win_length = data.draw(st.none() | st.integers(1, n_fft))
    kw = {
        # n_fft may be left out where the bins determine it (even n_fft)
        "n_fft": n_fft if n_fft % 2 or data.draw(st.booleans()) else None,
        "hop_length": data.draw(st.none() | st.integers(1, n_fft)),
        "win_length": win_length,
        "window": data.draw(windows(n_fft if win_length is None else win_length)),
        "center": data.draw(st.booleans()),
        "length": data.draw(st.none() | st.integers(1, 300)),
        "nola": data.draw(st.sampled_from(("ignore", "raise"))),
    }
    if kw["n_fft"] is None:
        assume(n_fft >= 2)  # one bin: n_fft cannot be derived (an error, checked below)
    if kw["length"] is None and kw["center"]:
        hop = kw["hop_length"] or max((win_length or n_fft) // 4, 1)
        assume(n_fft + hop * (frames - 1) - 2 * (n_fft // 2) >= 1)  # else no samples are left (an error)
    p = istft_validate(D, **kw)
    want, wss = ref.istft(D, p)
    try:
        got = specux.istft(D, **kw, backend="cpu")
    except NolaError:
        # raised only where the window's squared sum vanishes at a requested sample
        assert kw["nola"] == "raise" and not (wss > np.finfo(p.dtype).tiny).all()
        return
    if kw["nola"] == "raise":
        assert (wss > np.finfo(p.dtype).tiny).all()
    assert got.dtype == np.dtype(p.dtype)
    compare("istft", "specux reference", got, want, dtype=p.dtype)
    if not D.flags.c_contiguous:
        compare("istft", "contiguous copy", got, specux.istft(np.ascontiguousarray(D), **kw), dtype=p.dtype)


# --- bad input ----------------------------------------------------------------------------------------------

#: parameter -> values just outside its range or of the wrong type (for a signal of 100 samples, n_fft 16)
BAD_STFT = {
    "n_fft": (0, -1, 2.5, np.float64(16.0), "16", True, None, [16]),
    "hop_length": (0, -4, 1.5, "4", True, np.float32(4)),
    "win_length": (0, 17, 2.0, "8", True),
    "window": (
        "nope",
        "",
        ("kaiser",),
        ("tukey", "a"),
        {},
        None,
        np.ones(15),
        np.ones((4, 4)),
        lambda n: 1.0,
    ),
    "center": ("False", "no", 0, 1, None, np.array([True])),
    "pad_mode": ("zeros", "", "CONSTANT", None, True, 0),
    "output": ("abs", "", None, True, "Complex"),
    "dtype": ("float16", np.int32, "int8", "abc", "bool"),
    "backend": ("gpu", "", "CPU", None, 0),
}


@pytest.mark.parametrize("name", sorted(BAD_STFT))
@given(signals(max_length=100, min_length=100), st.data())
def test_stft_bad_parameters_are_named(name, y, data):
    bad = data.draw(st.sampled_from(BAD_STFT[name]))
    raises_naming(rf"\b{name}\b", specux.stft, y, **{"n_fft": 16, name: bad})


def test_window_of_strings_is_named():
    with pytest.raises(ValueError, match=r"\bwindow\b"):
        specux.stft(np.zeros(100), n_fft=16, window=np.array(["a"] * 16))


@given(
    st.sampled_from(
        (
            np.array(["1.0"] * 16),  # numpy would parse these silently
            np.ones(16, dtype=bool),
            np.ones(16, dtype=complex),  # numpy would drop the imaginary part with only a warning
            np.array([1.0] * 15 + [None]),
            [[1.0]] * 15 + [[1.0, 2.0]],  # ragged
            lambda n: ["a"] * n,  # a callable's values are checked alike
            lambda n: np.ones(n, dtype=complex),
        )
    )
)
def test_window_of_non_real_values_is_named(window):
    with pytest.raises(ValueError, match=r"^window: .*must hold real numbers"):
        specux.stft(np.zeros(100), n_fft=16, window=window)
    with pytest.raises(ValueError, match=r"^window: .*must hold real numbers"):
        specux.filters.get_window(window, 16)


def test_window_of_ints_is_served_as_floats():
    got = specux.filters.get_window(np.arange(16), 16)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.arange(16.0))


@given(st.sampled_from(("int64", "int8", "bool", "complex64", "complex128", "float16", "object", "U2")))
def test_stft_bad_signal_dtypes_are_named(dtype):
    raises_naming(r"\by\b", specux.stft, np.zeros((2, 100), dtype), n_fft=16)


@given(st.sampled_from(((), (0,), (3, 0), (0, 100))))
def test_stft_empty_or_scalar_signal_is_named(shape):
    raises_naming(r"\by\b", specux.stft, np.zeros(shape, np.float32), n_fft=16)


@given(st.integers(1, 63), st.integers(0, 64))
def test_stft_frame_longer_than_uncentred_signal_is_named(length, extra):
    raises_naming(r"\bn_fft\b", specux.stft, np.zeros(length), n_fft=length + 1 + extra, center=False)


@given(st.sampled_from(((2**31, None, 16000), (2**24, None, 16000), (512, 1, 400_000))))
def test_stft_huge_sizes_are_refused_before_allocating(case):
    n_fft, hop, length = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECUX_MEMORY_LIMIT", "64M")
        error = raises_naming(
            r"\bn_fft\b" if hop is None else r"\bhop_length\b",
            specux.stft,
            np.zeros(length, np.float32),
            n_fft=n_fft,
            hop_length=hop,
        )
    assert isinstance(error, specux.MemoryLimitError)


BAD_ISTFT = {
    "n_fft": (0, -2, 15, 18, 16.0, "16", True),  # 9 bins mean n_fft 16 or 17
    "hop_length": (0, -1, 2.5, "4", True),
    "win_length": (0, 18, 3.0, "x"),
    "window": ("nope", ("kaiser",), np.ones(3), {}),
    "center": ("True", 1, None),
    "length": (0, -5, 2.0, "100", True),
    "nola": ("warn", "", None, True),
    "dtype": ("float16", "abc", np.int16),
    "backend": ("gpu", None),
}


@pytest.mark.parametrize("name", sorted(BAD_ISTFT))
@given(st.data())
def test_istft_bad_parameters_are_named(name, data):
    bad = data.draw(st.sampled_from(BAD_ISTFT[name]))
    D = np.ones((9, 6), np.complex64)
    raises_naming(rf"\b{name}\b", specux.istft, D, **{"n_fft": 16, name: bad})


@given(st.sampled_from(((9,), (0, 4), (9, 0), (1, 4), ())), st.sampled_from(("complex64", "int32", "U1")))
def test_istft_bad_matrices_are_named(shape, dtype):
    raises_naming(r"\bstft_matrix\b", specux.istft, np.ones(shape, dtype))


@given(st.sampled_from((2**24, 2**31, 2**40)))
def test_istft_huge_length_is_refused_before_allocating(length):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECUX_MEMORY_LIMIT", "64M")
        error = raises_naming(r"\blength\b", specux.istft, np.ones((9, 4), np.complex64), length=length)
    assert isinstance(error, specux.MemoryLimitError)
