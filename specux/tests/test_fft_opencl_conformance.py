"""specux.fft on the ``opencl`` backend (PoCL in CI) against numpy.fft: every function, size, axis and norm.

Errors are relative L2 (``||got - want|| / ||want||``) against numpy evaluated in float64 on the same input,
so the bound measures specux's own rounding: 1e-5 for float32, 1e-12 for float64.

Cost: every length is its own kernel, and PoCL spends about 0.4 s building a program plus 1-1.5 s generating
code at a kernel's first launch. The sweeps therefore build with ``-cl-opt-disable``
(``KERNELKIT_OPENCL_OPTIONS``), which cuts the first-launch cost about sixfold; the same sources built with
the default options are spot-checked in :func:`test_default_build_options_spot_check`. Kernels are reused
across tests through the runtime's caches.
"""

from __future__ import annotations

import numpy as np
import pytest

import specux.fft as sfft

NORMS = [None, "backward", "ortho", "forward"]
TOL = {"float32": 1e-5, "float64": 1e-12}
DTYPES = ["float32", "float64"]
rng = np.random.default_rng(20261129)


def l2(got, want) -> float:
    got = np.asarray(got, dtype=np.complex128)
    want = np.asarray(want, dtype=np.complex128)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = np.linalg.norm(want)
    diff = np.linalg.norm(got - want)
    return float(diff / scale) if scale > 0 else float(diff)


def _real(shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _cplx(shape, dtype):
    cdtype = np.result_type(dtype, np.complex64)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(cdtype)


def _check(name, arg, dtype, **kw):
    """specux.fft.<name> on opencl against numpy.fft.<name> on the float64 / complex128 copy of ``arg``."""
    got = getattr(sfft, name)(arg, backend="opencl", **kw)
    wide = arg.astype(np.complex128 if np.iscomplexobj(arg) else np.float64)
    want = getattr(np.fft, name)(wide, **kw)
    expected_dtype = np.result_type(want.dtype, np.complex64 if np.iscomplexobj(want) else np.float32)
    if dtype == "float32":
        expected_dtype = np.complex64 if np.iscomplexobj(want) else np.float32
    assert got.dtype == expected_dtype, (name, got.dtype, expected_dtype)
    err = l2(got, want)
    assert err <= TOL[dtype], f"{name}{kw} n={arg.shape}: relative L2 error {err:.2e} > {TOL[dtype]:.0e}"
    return err


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_size_1_to_128_every_function_and_norm(opencl, dtype):
    if dtype not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {dtype}")
    for n in range(1, 129):
        x = _real((3, n), dtype)
        z = _cplx((3, n), dtype)
        half = _cplx((3, n // 2 + 1), dtype)
        # the norm is only the store's scale factor: every norm at a few lengths, one per length elsewhere
        norms = NORMS if n in (1, 2, 7, 16, 17, 60, 127, 128) else [NORMS[n % 4]]
        for norm in norms:
            _check("fft", z, dtype, norm=norm)
            _check("ifft", z, dtype, norm=norm)
            _check("rfft", x, dtype, norm=norm)
            _check("ihfft", x, dtype, norm=norm)
            _check("irfft", half, dtype, n=n, norm=norm)
            _check("hfft", half, dtype, n=n, norm=norm)


@pytest.mark.parametrize("dtype", DTYPES)
def test_powers_of_two_up_to_2_pow_20(opencl, dtype):
    if dtype not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {dtype}")
    for k in range(0, 21):
        n = 2**k
        batch = max(1, 2**15 // n)
        z = _cplx((batch, n), dtype)
        x = _real((batch, n), dtype)
        _check("fft", z, dtype)
        _check("ifft", z, dtype, norm="ortho")
        _check("rfft", x, dtype)
        _check("irfft", sfft.rfft(x, backend="opencl"), dtype, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_primes_through_bluestein_including_100003(opencl, dtype):
    if dtype not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {dtype}")
    for n in (131, 509, 4099, 65537, 100003):
        batch = 2 if n > 10000 else 3
        z = _cplx((batch, n), dtype)
        x = _real((batch, n), dtype)
        _check("fft", z, dtype)
        _check("ifft", z, dtype, norm="forward")
        _check("rfft", x, dtype, norm="ortho")
        _check("irfft", _cplx((batch, n // 2 + 1), dtype), dtype, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_products_of_small_primes_local_and_four_step(opencl, dtype):
    if dtype not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {dtype}")
    # 2310 = 2*3*5*7*11 and 3003 = 3*7*11*13 use every odd radix; 6000, 30030 and 194481 = 21**4 pass one
    # block and go through the four-step pipeline
    for n in (360, 1000, 2310, 3003, 6000, 30030, 194481):
        batch = 2
        z = _cplx((batch, n), dtype)
        x = _real((batch, n), dtype)
        _check("fft", z, dtype)
        _check("ifft", z, dtype)
        _check("rfft", x, dtype)
        _check("irfft", _cplx((batch, n // 2 + 1), dtype), dtype, n=n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_axis_of_batched_arrays_and_nd_functions(opencl, dtype):
    if dtype not in opencl.dtypes:
        pytest.skip(f"this OpenCL device has no {dtype}")
    z = _cplx((4, 6, 10), dtype)
    x = _real((4, 6, 10), dtype)
    for axis in (0, 1, 2, -1, -2):
        for norm in NORMS:
            _check("fft", z, dtype, axis=axis, norm=norm)
            _check("ifft", z, dtype, axis=axis, norm=norm)
            _check("rfft", x, dtype, axis=axis, norm=norm)
            _check("irfft", z, dtype, axis=axis, norm=norm)
            _check("hfft", z, dtype, axis=axis, norm=norm)
            _check("ihfft", x, dtype, axis=axis, norm=norm)
    # a Bluestein length (17) and a four-step length (5000, 4500) on a middle axis
    _check("fft", _cplx((2, 17, 3), dtype), dtype, axis=1)
    _check("rfft", _real((2, 5000, 3), dtype), dtype, axis=1)
    _check("irfft", _cplx((3, 2251, 2), dtype), dtype, axis=1, n=4500)
    for norm in NORMS:
        for name in ("fft2", "ifft2", "fftn", "ifftn"):
            _check(name, z, dtype, norm=norm)
        for name in ("rfft2", "rfftn"):
            _check(name, x, dtype, norm=norm)
        for name in ("irfft2", "irfftn"):
            _check(name, z, dtype, norm=norm)
    _check("fftn", z, dtype, s=(3, 7), axes=(0, 2))
    _check("rfftn", x, dtype, s=(5, 9), axes=(2, 1))
    _check("irfftn", z, dtype, s=(4, 11), axes=(1, 2))


def test_non_contiguous_inputs(opencl):
    z = _cplx((6, 40), "float64")
    _check("fft", z[:, ::2], "float64")
    _check("fft", z.T, "float64", axis=0)
    _check("rfft", _real((40, 6), "float32").T, "float32")


def test_half_storage_input(opencl):
    """float16 real input is loaded as half and computed in float32: float32 accuracy on the half values."""
    for n in (16, 100, 17, 1000, 5000):
        x = _real((3, n), "float16")
        got = sfft.rfft(x, backend="opencl")
        assert got.dtype == np.complex64
        err = l2(got, np.fft.rfft(x.astype(np.float64)))
        assert err <= 1e-5, (n, err)


def test_half_storage_both_ways_through_the_runtime(opencl):
    """Complex half in and out (torch's complex32 layout): results within half's rounding of the exact DFT."""
    from specux._runtime import fft_exec

    rt = opencl.runtime
    for n in (64, 60, 17, 6000):
        z = _cplx((2, n), "float32").astype(np.complex64)
        pairs = z.view(np.float32).astype(np.float16)  # interleaved (re, im) halves
        call = fft_exec.resolve("c2c", (2, n), 1, n, "f16", "f16", False, 1.0)
        src = rt.upload(pairs)
        dst = rt.alloc(pairs.nbytes)
        fft_exec.execute(rt, call.plan, src, dst, call.io)
        out = rt.download(dst, np.empty_like(pairs))
        got = out.astype(np.float32).view(np.complex64)
        want = np.fft.fft(pairs.astype(np.float64).view(np.complex128), axis=1)
        err = l2(got, want)
        # half keeps 11 significant bits: about 2.4e-4 relative rounding per stored value
        assert err <= 1e-3, (n, err)
        assert err > 0  # the output really went through half


def test_empty_and_length_one(opencl):
    assert sfft.fft(np.zeros((0, 4), np.complex64), backend="opencl").shape == (0, 4)
    x = _cplx((5, 1), "float32")
    np.testing.assert_allclose(sfft.fft(x, backend="opencl"), x, rtol=1e-7)


def test_default_build_options_spot_check(require_backend, monkeypatch):
    """The optimised PoCL build of one kernel of each plan shape: local, four-step and Bluestein."""
    require_backend("opencl")
    monkeypatch.delenv("KERNELKIT_OPENCL_OPTIONS", raising=False)
    for n in (60, 6000, 101):
        for dtype in DTYPES:
            _check("fft", _cplx((2, n), dtype), dtype)
            _check("irfft", _cplx((2, n // 2 + 1), dtype), dtype, n=n)
