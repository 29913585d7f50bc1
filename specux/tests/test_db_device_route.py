"""power_to_db / amplitude_to_db through the public functions on a device backend (``backend=``; a cupy array
or a torch CUDA tensor takes the same route on cuda), and the refusals: a ref the device cannot compute, a
dtype it does not take, a tensor that requires grad (which the host path used to detach without a word), a
dask array with a device backend. The kernels themselves are checked in test_features_device_fused.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from specux_test_support import device_dtypes, rel_err, tolerance

import specux
from specux._backends import generated
from specux.errors import UnsupportedOperationError

rng = np.random.default_rng(7)


def _power(shape=(2, 33, 40), dtype="float32"):
    return (rng.standard_normal(shape) ** 2 * 10.0 ** rng.uniform(-9, 2, shape)).astype(dtype)


CASES = [
    # (public, ref, amin, top_db)
    (specux.power_to_db, 1.0, 1e-10, 80.0),
    (specux.power_to_db, np.max, 1e-10, 60.0),
    (specux.power_to_db, np.amax, 1e-10, None),
    (specux.amplitude_to_db, 2.0, 1e-5, 80.0),
    (specux.amplitude_to_db, np.max, 1e-5, 40.0),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_public_db_on_a_device_backend_matches_the_cpu(opencl, case):
    public, ref, amin, top_db = CASES[case]
    for dtype in device_dtypes(opencl, ("float32", "float64")):
        x = _power(dtype=dtype)
        got = public(x, ref=ref, amin=amin, top_db=top_db, backend="opencl")
        want = public(x, ref=ref, amin=amin, top_db=top_db, backend="cpu")
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
        assert rel_err(got, want) <= tolerance("melspectrogram", dtype), (CASES[case], dtype)


def test_device_db_keeps_the_callers_library_and_warns_on_complex(opencl):
    x = _power()
    got = specux.power_to_db(torch.from_numpy(x), ref=np.max, backend="opencl")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    z = (x * np.exp(1j * rng.uniform(0, 6.3, x.shape))).astype(np.complex64)
    with pytest.warns(UserWarning, match="S is complex"):
        got = specux.amplitude_to_db(z, ref=np.max, backend="opencl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = specux.amplitude_to_db(z, ref=np.max)
    assert rel_err(got, want) <= tolerance("melspectrogram", "float32")


def test_device_db_float16_is_stored_as_half_and_returned_in_float32(opencl):
    x = _power().astype(np.float16)
    got = specux.power_to_db(x, ref=np.max, backend="opencl")
    assert got.dtype == np.float32
    want = specux.power_to_db(x.astype(np.float32), ref=np.max)
    assert rel_err(got, want) <= tolerance("melspectrogram", "float32")


def test_host_input_with_auto_stays_on_the_cpu(monkeypatch):
    def no_upload(*args, **kwargs):
        raise AssertionError("a host input with backend='auto' was sent to a device")

    monkeypatch.setattr(generated, "host_call", no_upload)
    x = _power()
    np.testing.assert_array_equal(specux.power_to_db(x), specux.power_to_db(x, backend="cpu"))
    specux.amplitude_to_db(torch.from_numpy(x))


def test_device_db_refuses_what_it_cannot_compute(opencl):
    x = _power()
    with pytest.raises(ValueError, match=r"ref must be a number or np\.max"):
        specux.power_to_db(x, ref=np.median, backend="opencl")
    with pytest.raises(TypeError, match="S on the opencl backend must be"):
        specux.power_to_db(x.astype(np.int32), backend="opencl")
    with pytest.raises(TypeError, match="backend must be a str"):
        specux.amplitude_to_db(x, backend=1)
    with pytest.raises(ValueError, match="backend must be 'auto' or one of"):
        specux.power_to_db(x, backend="gpu")


@pytest.mark.parametrize("backend", ["auto", "cpu", "opencl"])
@pytest.mark.parametrize("public", [specux.power_to_db, specux.amplitude_to_db])
def test_a_tensor_that_requires_grad_is_refused_not_detached(opencl, public, backend):
    t = torch.from_numpy(_power()).requires_grad_()
    with pytest.raises(UnsupportedOperationError, match="gradients are not available"):
        public(t, backend=backend)
    with torch.no_grad():  # without grad mode the conversion is plain data: allowed
        assert public(t, backend=backend).shape == t.shape


def test_dask_db_refuses_a_device_backend():
    da = pytest.importorskip("dask.array")
    S = da.from_array(_power(), chunks=(1, 33, 20))
    with pytest.raises(ValueError, match="dask array: backend must be 'auto' or 'cpu'"):
        specux.power_to_db(S, backend="opencl")
    want = specux.power_to_db(S.compute())
    np.testing.assert_allclose(specux.power_to_db(S, backend="cpu").compute(), want)


def test_backends_list_the_db_conversions(opencl):
    rows = {info.name: info for info in specux.backends()}
    for op in ("power_to_db", "amplitude_to_db"):
        assert op in rows["cpu"].ops and op in rows["opencl"].ops
    assert "opencl" in specux.power_to_db.__doc__.split("Returns")[1]
