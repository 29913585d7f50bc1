"""Property tests of specux.fft (hypothesis): every backend here against numpy.fft, every layout, bad input.

Inputs: 1-D to 4-D arrays with sides 1 to 9 (odd sizes and length 1 included), float32 / float64 / complex64 /
complex128 / int64 (promoted to float64, as numpy does) and, on backends that store half, float16; laid out
contiguous, reversed along an axis (negative strides), every second element along an axis, transposed or in
Fortran order. Properties:

- the result equals numpy.fft's on the float64 / complex128 copy of the input within ``TOLERANCES["fft"]`` of
  the input's precision, with numpy's shape and specux's dtype rule (complex64 / float32 out for single or
  half precision in);
- a non-contiguous input gives the result of its contiguous copy (within the same tolerance);
- a bad ``n`` / ``s``, ``axis`` / ``axes``, ``norm``, dtype or backend raises ValueError or TypeError whose
  message names it, and a size too large for the memory limit (``SPECUX_MEMORY_LIMIT``, set small) raises
  :class:`specux.MemoryLimitError` naming it, before anything is allocated.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import specux
import specux.fft as sfft

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ONE_D = ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")
#: transforms that take real input only
REAL_IN = ("rfft", "ihfft", "rfftn", "rfft2")
#: transforms with real output
REAL_OUT = ("irfft", "hfft", "irfftn", "irfft2")
NORMS = (None, "backward", "ortho", "forward")
LAYOUTS = ("contiguous", "reversed", "strided", "transposed", "fortran")
#: PoCL builds a kernel per length, function and precision (a few tenths of a second each, cold): the OpenCL
#: properties draw lengths from a short list, so the kernels are built once and reused across examples
OPENCL_SIDES = (1, 2, 3, 5, 8, 12)


@st.composite
def arrays(draw, dtypes=("float32", "float64", "complex64", "complex128", "int64"), sides=None, max_ndim=4):
    """(array, layout): an array of a drawn shape, dtype and memory layout, filled from a drawn seed."""
    ndim = draw(st.integers(1, max_ndim))
    side = st.sampled_from(sides) if sides else st.integers(1, 9 if ndim <= 2 else 5)
    shape = tuple(draw(st.lists(side, min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    layout = draw(st.sampled_from(LAYOUTS))
    axis = draw(st.integers(0, ndim - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def fill(s):
        if dtype.kind == "i":
            return rng.integers(-100, 100, s).astype(dtype)
        x = rng.standard_normal(s)
        if dtype.kind == "c":
            x = x + 1j * rng.standard_normal(s)
        return x.astype(dtype)

    if layout == "reversed":
        x = np.flip(fill(shape), axis)
    elif layout == "strided":
        wide = list(shape)
        wide[axis] *= 2
        x = fill(tuple(wide))[(slice(None),) * axis + (slice(None, None, 2),)]
    elif layout == "transposed":
        x = fill(shape[::-1]).T
    elif layout == "fortran":
        x = np.asfortranarray(fill(shape))
    else:
        x = fill(shape)
    assert x.shape == shape
    return x, layout


def precision(x: np.ndarray) -> str:
    """The precision specux computes ``x`` in: float32 for single and half, float64 otherwise."""
    return "float32" if x.dtype in (np.float16, np.float32, np.complex64) else "float64"


def expected_dtype(name: str, x: np.ndarray) -> np.dtype:
    single = precision(x) == "float32"
    if name in REAL_OUT:
        return np.dtype(np.float32 if single else np.float64)
    return np.dtype(np.complex64 if single else np.complex128)


def widened(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def check(compare, name, x, kw, backend):
    """specux.fft.<name>(x, **kw) on ``backend`` against numpy.fft on the widened copy, and against the
    result of the contiguous copy when ``x`` is not contiguous."""
    got = getattr(sfft, name)(x, **kw, backend=backend)
    want = getattr(np.fft, name)(widened(x), **kw)
    assert got.shape == want.shape, (name, kw, got.shape, want.shape)
    assert got.dtype == expected_dtype(name, x), (name, x.dtype, got.dtype)
    compare("fft", f"numpy.fft ({backend})", got, want, dtype=precision(x))
    if not x.flags.c_contiguous:
        dense = getattr(sfft, name)(np.ascontiguousarray(x), **kw, backend=backend)
        compare("fft", f"contiguous copy ({backend})", got, dense, dtype=precision(x))


@st.composite
def one_d_call(draw, sides=None, dtypes=None):
    name = draw(st.sampled_from(ONE_D))
    kinds = dtypes or (
        ("float32", "float64", "int64")
        if name in REAL_IN
        else ("float32", "float64", "complex64", "complex128", "int64")
    )
    x, _ = draw(arrays(dtypes=kinds, sides=sides))
    kw = {"axis": draw(st.integers(-x.ndim, x.ndim - 1)), "norm": draw(st.sampled_from(NORMS))}
    if draw(st.booleans()):
        kw["n"] = draw(st.sampled_from(sides) if sides else st.integers(1, 12))
    elif name in REAL_OUT and x.shape[kw["axis"]] == 1:
        kw["n"] = 1  # the default output length 2 * (1 - 1) = 0 is an error (numpy's too)
    return name, x, kw


@st.composite
def n_d_call(draw, sides=None, dtypes=None):
    name = draw(st.sampled_from(N_D))
    kinds = dtypes or (
        ("float32", "float64", "int64")
        if name in REAL_IN
        else ("float32", "float64", "complex64", "complex128", "int64")
    )
    two = name.endswith("2")
    x, _ = draw(arrays(dtypes=kinds, sides=sides))
    if two and x.ndim < 2:
        x = x[:, None] if draw(st.booleans()) else x[None, :]
    kw: dict = {"norm": draw(st.sampled_from(NORMS))}
    if two:
        axes = [-2, -1]
    else:
        axes = draw(
            st.lists(
                st.integers(-x.ndim, x.ndim - 1), min_size=1, max_size=x.ndim, unique_by=lambda a: a % x.ndim
            )
        )
    if draw(st.booleans()):
        kw["axes"] = axes
    elif not two:
        axes = list(range(x.ndim))  # the default: every axis
    if draw(st.booleans()):
        size = st.sampled_from(sides) if sides else st.integers(1, 6)
        kw["s"] = [draw(size) for _ in axes]
    elif name.startswith("irfft") and x.shape[axes[-1]] == 1:
        kw["s"] = [x.shape[a] for a in axes[:-1]] + [1]  # as in one_d_call: no 0-length default
    if "s" in kw and "axes" not in kw and not two:
        kw["axes"] = axes  # numpy 2 deprecates s without axes
    return name, x, kw


@pytest.fixture(scope="module")
def opencl(backend_check):
    # the same quick build options as the OpenCL conformance sweeps (their kernels are then reused here)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELKIT_OPENCL_OPTIONS", "-cl-opt-disable")
        yield backend_check("opencl")


@given(one_d_call())
def test_one_dimensional_cpu_matches_numpy(compare, call):
    name, x, kw = call
    check(compare, name, x, kw, "cpu")


@given(n_d_call())
def test_n_dimensional_cpu_matches_numpy(compare, call):
    name, x, kw = call
    check(compare, name, x, kw, "cpu")


@given(one_d_call(sides=OPENCL_SIDES, dtypes=("float16", "float32", "float64", "int64")), st.booleans())
def test_one_dimensional_opencl_matches_numpy(opencl, compare, call, make_complex):
    name, x, kw = call
    if make_complex and name not in REAL_IN and x.dtype != np.float16:
        x = x * (1 - 0.5j)  # complex input of the same layout (numpy has no complex half)
    if precision(x) not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {precision(x)}")
    check(compare, name, x, kw, "opencl")


@given(n_d_call(sides=OPENCL_SIDES, dtypes=("float16", "float32", "float64")))
def test_n_dimensional_opencl_matches_numpy(opencl, compare, call):
    name, x, kw = call
    if precision(x) not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {precision(x)}")
    check(compare, name, x, kw, "opencl")


# --- bad input ----------------------------------------------------------------------------------------------

#: values that are not an int; with the parameter they go to, each must be a TypeError (or a ValueError)
NOT_INTS = (2.5, 4.0, "8", True, np.float64(3.0), [4], None)


def raises_naming(parameter: str, call, *args, **kwargs) -> Exception:
    """``call(*args, **kwargs)`` raises ValueError or TypeError (nothing else) and the message names
    ``parameter`` (a regular expression)."""
    try:
        call(*args, **kwargs)
    except (ValueError, TypeError) as error:
        assert re.search(parameter, str(error)), (
            f"{type(error).__name__}: {error!s} does not name {parameter}"
        )
        return error
    raise AssertionError(f"no error for {parameter} in {getattr(call, '__name__', call)}({kwargs})")


@given(st.sampled_from(ONE_D), arrays(max_ndim=3), st.data())
def test_one_dimensional_bad_parameters_are_named(name, drawn, data):
    x, _ = drawn
    if name in REAL_IN and np.iscomplexobj(x):
        x = x.real.copy()
    call = getattr(sfft, name)
    # everything but the parameter under test is valid (irfft / hfft of one bin need an explicit n)
    valid = {"n": 4} if name in REAL_OUT else {}
    which = data.draw(st.sampled_from(("n", "axis", "norm", "backend")))
    if which == "n":
        bad = data.draw(st.sampled_from((0, -1, -(2**40), *NOT_INTS[:-1])))  # n=None is the default
        raises_naming(r"\bn\b", call, x, n=bad)
    elif which == "axis":
        bad = data.draw(st.sampled_from((x.ndim, -x.ndim - 1, 2**31, 0.0, "0", None, True)))
        raises_naming(r"\baxis\b", call, x, axis=bad, **valid)
    elif which == "norm":
        bad = data.draw(st.sampled_from(("ORTHO", "", "none", 1, True, b"ortho")))
        raises_naming(r"\bnorm\b", call, x, norm=bad, **valid)
    else:
        bad = data.draw(st.sampled_from(("gpu", "", "CPU", 0, None)))
        raises_naming(r"backend", call, x, backend=bad, **valid)


@given(st.sampled_from(N_D), arrays(max_ndim=3), st.data())
def test_n_dimensional_bad_parameters_are_named(name, drawn, data):
    x, _ = drawn
    if name in REAL_IN and np.iscomplexobj(x):
        x = x.real.copy()
    if name.endswith("2") and x.ndim < 2:
        x = x[None]
    call = getattr(sfft, name)
    which = data.draw(st.sampled_from(("s", "axes", "s_and_axes")))
    if which == "s":
        bad = data.draw(st.sampled_from((0, -2, 2.5, "4", True)))
        raises_naming(r"\bs\b", call, x, s=[bad] * 2, axes=[-2, -1] if x.ndim >= 2 else [0, 0])
    elif which == "axes":
        bad = data.draw(st.sampled_from((x.ndim, -x.ndim - 1, 1.0, "0")))
        raises_naming(r"\bax[ie]s\b", call, x, axes=[bad])
    else:
        raises_naming(r"\bs\b.*\baxes\b", call, x, s=[*[2, 2, 2][: x.ndim], 2], axes=list(range(x.ndim)))


@given(st.sampled_from(ONE_D + N_D), st.sampled_from(("U3", "O", "datetime64[s]", "float16")))
def test_unsupported_dtypes_on_cpu_name_the_dtype(name, dtype):
    raises_naming(r"dtype", getattr(sfft, name), np.zeros((2, 4), dtype), backend="cpu")


@given(st.sampled_from(("fft", "rfft", "irfft", "ifft")), st.sampled_from((2**31, 2**40, 3 * 2**33)))
def test_huge_n_is_refused_before_allocating(name, n):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECUX_MEMORY_LIMIT", "64M")
        error = raises_naming(r"\bn\b", getattr(sfft, name), np.zeros(16, np.float32), n=n)
    assert isinstance(error, specux.MemoryLimitError)


@given(st.sampled_from(("fftn", "rfftn", "irfftn", "ifft2")), st.sampled_from((2**16, 2**20)))
def test_huge_s_is_refused_before_allocating(name, n):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECUX_MEMORY_LIMIT", "64M")
        error = raises_naming(
            r"\bs\b", getattr(sfft, name), np.zeros((4, 4), np.float32), s=(n, n), axes=(0, 1)
        )
    assert isinstance(error, specux.MemoryLimitError)


@given(
    st.sampled_from(("fftfreq", "rfftfreq")),
    st.integers(1, 50),
    st.floats(-10, 10, allow_nan=False).filter(lambda d: abs(d) > 1e-6),
)
def test_fftfreq_matches_numpy(name, n, d):
    np.testing.assert_allclose(getattr(sfft, name)(n, d=d), getattr(np.fft, name)(n, d=d), rtol=1e-15)


@given(st.sampled_from(("fftfreq", "rfftfreq")), st.data())
def test_fftfreq_bad_parameters_are_named(name, data):
    which = data.draw(st.sampled_from(("n", "d")))
    if which == "n":
        raises_naming(
            r"\bn\b", getattr(sfft, name), data.draw(st.sampled_from((0, -3, 2.5, "4", True, None)))
        )
    else:
        bad = data.draw(st.sampled_from((0, 0.0, float("nan"), float("inf"), "1", None, True)))
        raises_naming(r"\bd\b", getattr(sfft, name), 8, d=bad)
