"""specux.fftconvolve on the generated kernels (``backend="opencl"``, PoCL in CI) against the CPU backend and
scipy.signal.fftconvolve: both precisions, real / complex / mixed inputs, 1-D, N-D, one axis, broadcast axes,
no convolved axis, non-contiguous inputs, every mode including the swapped "valid", and the overlap-save path
of :mod:`specux._runtime.convolve_exec` at both sides of its thresholds, over several chunks, with its
temporaries bounded by the chunk rather than the long input.

The overlap-save thresholds are lowered (monkeypatched) in most of those tests so that the path runs on short
signals and few FFT lengths; one test keeps the shipped constants. Kernels build with ``-cl-opt-disable``
(PoCL's first build of each one costs ~1 s otherwise).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import specux
from specux._codegen import convolve_kernels as ck
from specux._runtime import convolve_exec as ce
from specux._runtime import device_array as da
from specux._spec.convolve import fftconvolve_validate

rng = np.random.default_rng(20261201)
MODES = ["full", "same", "valid"]


@pytest.fixture
def opencl(require_backend, monkeypatch):
    monkeypatch.setenv("KERNELKIT_OPENCL_OPTIONS", "-cl-opt-disable")
    backend = require_backend("opencl")
    if "fftconvolve" not in backend.ops:
        pytest.fail("the opencl backend does not list fftconvolve although convolve_exec exists")
    return backend


@pytest.fixture
def paths(monkeypatch):
    """Which path each call took: a list of "os" / "direct" / "broadcast"."""
    taken: list[str] = []
    for name, tag in (("_overlap_save", "os"), ("_direct", "direct"), ("_broadcast", "broadcast")):
        original = getattr(ce, name)

        def spy(*args, _original=original, _tag=tag):
            taken.append(_tag)
            return _original(*args)

        monkeypatch.setattr(ce, name, spy)
    return taken


def _r(shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _c(shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _check(compare, in1, in2, mode="full", axes=None, scipy_too=True):
    """opencl against the cpu backend (and scipy), within TOLERANCES["fftconvolve"] of the precision."""
    got = specux.fftconvolve(in1, in2, mode, axes, backend="opencl")
    want = specux.fftconvolve(in1, in2, mode, axes, backend="cpu")
    assert isinstance(got, np.ndarray)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    compare("fftconvolve", "cpu", got, want)
    if scipy_too:
        compare("fftconvolve", "scipy", got, scipy.signal.fftconvolve(in1, in2, mode=mode, axes=axes))
    return got


# (shape1, shape2, axes, complex1, complex2): every structural case of the direct and broadcast paths
CASES = [
    ((100,), (7,), None, False, False),  # 1-D
    ((7,), (100,), None, False, False),  # "valid" swaps the inputs
    ((1,), (9,), None, False, False),  # a length-1 input: its axis broadcasts, no axis is convolved
    ((12, 13), (5, 4), None, False, False),  # 2-D, axes=None
    ((6, 40), (6, 9), 1, False, False),  # batched, one axis
    ((3, 50), (1, 9), -1, False, True),  # broadcast over the batch axis, real * complex
    ((4, 1, 20), (1, 5, 11), (1, 2), True, False),  # axis 1 given but size 1 there: broadcasts
    ((6, 7, 8), (3, 7, 5), (0, 2), True, True),  # two axes of three, complex
    ((5, 6), (5, 1), 1, False, False),  # the only given axis broadcasts: the pure product
    ((3, 1, 4), (1, 2, 4), (0, 1), True, False),  # no convolved axis, broadcasting both ways
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("s1,s2,axes,c1,c2", CASES, ids=str)
def test_every_shape_class_and_mode_matches_cpu_and_scipy(
    compare, opencl, s1, s2, axes, c1, c2, dtype, paths
):
    cdtype = np.result_type(dtype, np.complex64)
    a = _c(s1, cdtype) if c1 else _r(s1, dtype)
    b = _c(s2, cdtype) if c2 else _r(s2, dtype)
    for mode in MODES:
        _check(compare, a, b, mode, axes)
    p = fftconvolve_validate(a, b, mode="full", axes=axes)
    assert set(paths) == ({"broadcast"} if not p.axes else {"direct"})


def test_mixed_precisions_compute_in_the_result_dtype(compare, opencl):
    """float32 with float64 (or complex128) computes in float64, as the cpu backend does (scipy transforms
    the float32 input in single precision, so it is no float64 reference here)."""
    a = _r((40,), np.float32)
    b = _r((9,), np.float64)
    assert _check(compare, a, b, scipy_too=False).dtype == np.float64
    assert _check(compare, _c((30,), np.complex64), _r((5,), np.float32)).dtype == np.complex64
    got = _check(compare, _r((30,), np.float32), _c((5,), np.complex128), "same", scipy_too=False)
    assert got.dtype == np.complex128


def test_non_contiguous_inputs(compare, opencl):
    base = _r((40, 30))
    a = base[::2, ::3]  # strided view
    b = _r((9, 4)).T  # transposed
    _check(compare, a, b)
    _check(compare, a, _r((10, 6)).T, "same", axes=0)
    _check(compare, np.asfortranarray(_c((12, 10))), b[:, :3], "valid")


def test_results_do_not_depend_on_the_transform_length_choice(compare, opencl):
    """Lengths whose 7-smooth padding differs (prime, power of two, 7^k + 1) all match."""
    for n in (97, 128, 344, 1000):
        _check(compare, _r(n), _r(13))


def test_every_launched_kernel_is_in_the_cover(compare, opencl, small_os, monkeypatch):
    """What the NVRTC and MSL checks compile (``cover``) holds every kernel the exec launches."""
    from specux._runtime import launch as launch_module

    launched = set()
    original = launch_module.launch  # every family's kernels go through it (launch_items too)

    def spy(rt, render, spec, n_groups, args):
        if render is ck.render:
            launched.add(spec)
        return original(rt, render, spec, n_groups, args)

    monkeypatch.setattr(launch_module, "launch", spy)
    r32, r64, c64, c128 = _r(300, np.float32), _r(9), _c(300, np.complex64), _c(9)
    for a, b in ((r32, r32[:9]), (r64, r32), (c64, r32[:9]), (r32, c128), (c128, c64[:300])):
        for axes in (None, 0):
            _check(compare, a, b, "same", axes, scipy_too=False)
            _check(compare, a[:, None], b[None, :], "full", 0, scipy_too=False)  # pure broadcast product
            _check(compare, a[:20], b, "full", axes, scipy_too=False)  # direct
    cover = set(ck.cover(("f16", "f32", "f64")))
    assert launched and launched <= cover, launched - cover


# -- overlap-save -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_overlap_save_every_mode_and_order(compare, opencl, small_os, paths, dtype):
    x, h = _r(1000, dtype), _r(17, dtype)
    for mode in MODES:
        _check(compare, x, h, mode)
        _check(compare, h, x, mode)  # the short input first: "valid" swaps, "same" keeps the short output
    assert paths == ["os"] * 6


def test_overlap_save_batched_broadcast_and_complex(compare, opencl, small_os, paths):
    for mode in MODES:
        _check(compare, _r((3, 1000)), _c((1, 31)), mode, axes=1)  # batch broadcast, real * complex
        # a leading convolved axis, broadcasting after it
        _check(compare, _r((700, 2, 1)), _r((5, 1, 3)), mode, axes=0)
        _check(compare, _c((2, 1, 600), np.complex64), _c((1, 3, 20), np.complex64), mode, axes=-1)
        _check(compare, _r((2, 700)).T, _r((9, 1)), mode, axes=0)  # non-contiguous long input
    assert paths == ["os"] * 12


def test_overlap_save_thresholds_both_sides(compare, opencl, small_os, paths):
    """At the length threshold, at the ratio threshold, and just below each: the two paths agree."""
    h = _r(32)
    for n, path in ((256, "os"), (255, "direct"), (320, "os")):
        _check(compare, _r(n), h, "full")
        assert paths.pop() == path, n
    # ratio: long >= OS_RATIO * short
    for m, path in ((40, "os"), (41, "direct")):
        _check(compare, _r(320), _r(m), "same")
        assert paths.pop() == path, m
    # a block no shorter than the direct transform buys nothing: direct
    assert ce.block_length(32) < ce.smooth_length(256 + 31)
    assert not paths


def test_overlap_save_frame_and_chunk_boundaries(compare, opencl, small_os, monkeypatch, paths):
    """Outputs of exactly k frames, k frames and one sample, one sample short; one chunk and many."""
    m = 15
    length = ce.block_length(m)
    step = length - m + 1
    h = _r(m)
    for chunk in (10**9, length, 3 * length):
        monkeypatch.setattr(ce, "OS_CHUNK", chunk)
        for frames in (6, 7):  # long inputs of 285 points and more: above OS_MIN_LONG
            for extra in (-1, 0, 1):
                n_out = frames * step + extra
                _check(compare, _r(n_out - m + 1), h, "full", scipy_too=False)  # full: n_out points
                _check(compare, _r(n_out + m - 1), h, "valid", scipy_too=False)  # valid: n_out points
    assert set(paths) == {"os"}


def test_overlap_save_temporaries_are_bounded_by_the_chunk(compare, opencl, small_os, monkeypatch):
    """No device allocation but the inputs and the result grows with the long input."""
    rt = opencl.runtime
    sizes: list[int] = []
    original = rt.alloc

    def alloc(nbytes):
        sizes.append(int(nbytes))
        return original(nbytes)

    monkeypatch.setattr(rt, "alloc", alloc)
    x, h = _r(20000, np.float32), _r(16, np.float32)
    for mode in ("full", "valid"):
        sizes.clear()
        got = specux.fftconvolve(x, h, mode, backend="opencl")
        result = got.nbytes
        assert got.size >= 19985 and result in sizes
        temporaries = [s for s in sizes if s not in (result, x.nbytes, h.nbytes)]
        # a chunk holds OS_CHUNK real samples: frames, spectra, product, inverse (8 bytes per complex)
        bound = 4 * 8 * max(ce.OS_CHUNK, ce.block_length(16))
        assert temporaries and max(temporaries) <= bound < x.nbytes, (max(temporaries), bound)
        compare("fftconvolve", "scipy", got, scipy.signal.fftconvolve(x, h, mode))


def test_overlap_save_with_the_shipped_thresholds(compare, opencl, paths):
    x, h = _r(ce.OS_MIN_LONG + 3001, np.float32), _r(101, np.float32)
    _check(compare, x, h, "same")
    assert paths == ["os"]


# -- what the kernels refuse, and half storage ------------------------------------------------------------


def test_more_dimensions_than_the_kernels_walk_is_refused_naming_the_inputs(compare, opencl):
    shape = (1,) * ck.MAX_RANK + (3,)
    with pytest.raises(ValueError, match=rf"in1 and in2 have {ck.MAX_RANK + 1} dimensions.*at most"):
        specux.fftconvolve(np.ones(shape), np.ones(shape), backend="opencl")
    full = (1,) * (ck.MAX_RANK - 1) + (5,)
    _check(compare, np.ones(full) * 2, _r(full), "full")  # the largest rank works


def test_float64_on_a_device_without_it_is_refused(compare, opencl, monkeypatch):
    monkeypatch.setattr(opencl.runtime, "fp64", False)
    with pytest.raises(TypeError, match="needs float64 on the device"):
        specux.fftconvolve(_r(10), _r(3), backend="opencl")


@pytest.mark.parametrize("overlap_save", [False, True])
def test_half_storage_is_read_as_float32(compare, opencl, small_os, overlap_save):
    """The public front takes no float16 for fftconvolve; the kernels read half storage as float32 all the
    same (the exec with float16 device arrays and a float32 result, as a device tensor would arrive)."""
    n = 1000 if overlap_save else 100
    a16, b16 = _r((2, n), np.float16), _r((1, 11), np.float16)
    p = fftconvolve_validate(a16.astype(np.float32), b16.astype(np.float32), mode="same", axes=1)
    assert ce.use_overlap_save(p, a16.shape, b16.shape) == overlap_save
    rt = opencl.runtime
    out = ce.fftconvolve(rt, (da.upload(rt, a16), da.upload(rt, b16)), p)
    got = da.download(rt, out)
    want = scipy.signal.fftconvolve(a16.astype(np.float64), b16.astype(np.float64), "same", axes=1)
    assert got.dtype == np.float32
    compare("fftconvolve", "scipy", got, want)


def test_integer_inputs_are_promoted_to_float64(compare, opencl):
    a = np.arange(20)
    b = np.array([1, 2, 3])
    _check(compare, a, b)


def test_smooth_lengths():
    def smooth(n):
        for f in (2, 3, 5, 7):
            while n % f == 0:
                n //= f
        return n == 1

    expected = [next(m for m in range(n, 2 * n + 2) if smooth(m)) for n in range(1, 3000)]
    assert [ce.smooth_length(n) for n in range(1, 3000)] == expected
    n = 2**20 + 1
    assert ce.smooth_length(n) == next(m for m in range(n, 2 * n) if smooth(m))
