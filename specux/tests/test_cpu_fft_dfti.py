"""The torch engine's direct path (specux._cpu_fft: MKL's DFTI functions from torch's own library, called on
the numpy buffers): found wherever torch is built with MKL, within the stft tolerance of scipy for every
layout the stft blocks hand it (strided output views, non-contiguous and overlapping inputs, empty
batches), each frame's numbers independent of how many frames share a call, descriptors per thread."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest
import scipy.fft

from specux import _cpu_fft

torch = pytest.importorskip("torch", reason="torch is not installed: the torch engine cannot be checked")
if not torch.backends.mkl.is_available():
    pytest.skip("this torch is built without MKL: its FFT library is pocketfft, no DFTI",
                allow_module_level=True)

TOL = {np.float32: 2e-6, np.float64: 1e-13}


@pytest.fixture(scope="module")
def lib():
    found = _cpu_fft._dfti()
    assert found is not None, "torch is built with MKL, but libtorch_cpu's DFTI functions were not found"
    return found


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-300))


def _complex(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [512, 400, 511, 1, 2])
def test_forward_and_inverse_agree_with_scipy(lib, dtype, n):
    x = np.random.default_rng(n).standard_normal((37, n)).astype(dtype)
    out = np.empty((37, n // 2 + 1), _complex(dtype))
    _cpu_fft._dfti_run(lib, x, out, n, forward=True)
    want = scipy.fft.rfft(x, axis=-1)
    assert _rel(out, want) < TOL[dtype]
    back = np.empty_like(x)
    _cpu_fft._dfti_run(lib, want.astype(out.dtype), back, n, forward=False)  # unscaled, like norm="forward"
    assert _rel(back, scipy.fft.irfft(want, n, axis=-1, norm="forward")) < TOL[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_and_transposed_layouts(lib, dtype):
    rng = np.random.default_rng(1)
    n = 256
    base = rng.standard_normal((40, 2 * n)).astype(dtype)
    x = base[::2, ::2]  # element stride 2, row distance 4n
    want = scipy.fft.rfft(x, axis=-1)
    out_t = np.empty((n // 2 + 1, 20), _complex(dtype)).T  # transposed view: element stride 20
    _cpu_fft._dfti_run(lib, x, out_t, n, forward=True)
    assert _rel(out_t, want) < TOL[dtype]
    # a 3-D output whose rows cannot be one strided 2-D view: written through a buffer
    out3 = np.empty((4, 5, 2 * (n // 2 + 1)), _complex(dtype))[:, :, ::2]
    _cpu_fft._dfti_run(lib, x.reshape(4, 5, n), out3, n, forward=True)
    assert _rel(out3.reshape(20, -1), want) < TOL[dtype]
    # byte-swapped input: copied to native order first
    swapped = x.astype(x.dtype.newbyteorder(">"))
    out = np.empty((20, n // 2 + 1), _complex(dtype))
    _cpu_fft._dfti_run(lib, swapped, out, n, forward=True)
    assert _rel(out, want) < TOL[dtype]


def test_an_input_overlapping_the_output_is_copied_first(lib):
    n = 64
    buf = np.random.default_rng(2).standard_normal((8, n + 2)).astype(np.float32)
    x = buf[:, :n].copy()
    want = scipy.fft.rfft(x, axis=-1)
    # the inverse's output over its own input's memory: out of place means no overlap, so it is copied
    spectra = np.empty((8, n // 2 + 1), np.complex64)
    spectra[...] = want
    real_view = spectra.view(np.float32)[:, :n]
    _cpu_fft._dfti_run(lib, spectra, real_view, n, forward=False)
    assert _rel(real_view, np.fft.irfft(want, n, axis=-1) * n) < 2e-6


def test_no_rows_is_nothing_to_do(lib):
    out = np.empty((0, 5), np.complex64)
    _cpu_fft._dfti_run(lib, np.empty((0, 8), np.float32), out, 8, forward=True)
    assert out.shape == (0, 5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_frames_numbers_do_not_depend_on_the_batch(lib, dtype):
    # the stft's blocks may cut the frames anywhere: its results must not depend on where
    x = np.random.default_rng(3).standard_normal((300, 512)).astype(dtype)
    whole = np.empty((300, 257), _complex(dtype))
    _cpu_fft._dfti_run(lib, x, whole, 512, forward=True)
    for size in (1, 7, 64):
        parts = np.empty_like(whole)
        for i in range(0, 300, size):
            _cpu_fft._dfti_run(lib, x[i : i + size], parts[i : i + size], 512, forward=True)
        np.testing.assert_array_equal(parts, whole)


def test_threads_run_their_own_descriptors(lib):
    x = np.random.default_rng(4).standard_normal((8, 200, 384)).astype(np.float32)
    want = scipy.fft.rfft(x, axis=-1)

    def one(i: int) -> np.ndarray:
        out = np.empty((200, 193), np.complex64)
        for _ in range(5):
            _cpu_fft._dfti_run(lib, x[i], out, 384, forward=True)
        return out

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = np.stack(list(pool.map(one, range(8))))
    assert _rel(got, want) < 2e-6


def test_the_descriptor_cache_is_bounded(lib, monkeypatch):
    monkeypatch.setattr(_cpu_fft, "_DFTI_PLANS", 3)
    x = np.random.default_rng(5).standard_normal((10, 64)).astype(np.float32)
    for rows in range(1, 11):
        out = np.empty((rows, 33), np.complex64)
        _cpu_fft._dfti_run(lib, x[:rows], out, 64, forward=True)
        assert _rel(out, scipy.fft.rfft(x[:rows], axis=-1)) < 2e-6
    assert len(_cpu_fft._tls.dfti_plans) <= 3
