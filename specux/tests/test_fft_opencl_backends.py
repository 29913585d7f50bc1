"""specux.backends() names every generated backend with a precise reason when it cannot run; strict
selection."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import specux
import specux.fft as sfft
from specux.errors import BackendUnavailableError


def _rows():
    return {b.name: b for b in specux.backends()}


def test_every_generated_backend_is_listed_with_a_reason_or_ops():
    rows = _rows()
    for name in ("cuda", "metal", "opencl"):
        row = rows[name]
        assert row.unavailable_reason != "not built yet", name
        if row.available:
            assert row.unavailable_reason is None and "fft" in row.ops
        else:
            assert row.unavailable_reason and row.ops == ()


def test_metal_reason_names_the_platform():
    if sys.platform == "darwin":
        pytest.skip("on macOS the metal reason depends on pyobjc and the GPU")
    assert _rows()["metal"].unavailable_reason == f"Metal needs macOS (this is {sys.platform})"


def test_cuda_reason_is_specific_when_unavailable():
    row = _rows()["cuda"]
    if row.available:
        pytest.skip("a CUDA device is present")
    reason = row.unavailable_reason
    assert any(
        key in reason
        for key in ("cuda-bindings is not installed", "libcuda not found", "cuInit failed", "NVRTC")
    ), reason


def test_named_unavailable_backend_raises_with_the_reason():
    rows = _rows()
    for name in ("cuda", "metal"):
        if not rows[name].available:
            with pytest.raises(BackendUnavailableError, match="is unavailable") as info:
                sfft.fft(np.ones(8, np.complex64), backend=name)
            assert info.value.reason == rows[name].unavailable_reason


def test_opencl_serves_the_fft_family(require_backend):
    backend = require_backend("opencl")
    assert backend.name == "opencl" and "fft" in backend.ops
    assert {"float16", "float32"} <= backend.dtypes
    assert not backend.owns(np.ones(3))
