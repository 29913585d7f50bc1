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


@pytest.fixture
def fresh_opencl(monkeypatch, tmp_path):
    """kernelkit.opencl and specux's registry with no verdicts yet, and an empty kernel cache; the real
    verdicts and runtimes (which other tests use) come back afterwards."""
    pytest.importorskip("pyopencl")
    from kernelkit import opencl
    from specux._backends import registry

    for name, value in (("_reports", None), ("_probe_failure", None), ("_devices", {}), ("_runtimes", {})):
        monkeypatch.setattr(opencl, name, value)
    monkeypatch.setattr(registry, "_probed", {})
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path))
    yield opencl
    for rt in opencl._runtimes.values():
        rt.close()


def _host_fft_runs_on(backend_name: str) -> None:
    from specux._backends import registry

    x = np.random.default_rng(4).standard_normal((2, 32)).astype(np.complex64)
    assert registry.select(x, "auto", "fft").name == backend_name
    got = sfft.fft(x)
    assert np.linalg.norm(got - np.fft.fft(x)) / np.linalg.norm(np.fft.fft(x)) <= 1e-5


def test_a_device_whose_build_fails_makes_opencl_unavailable_with_the_reason(fresh_opencl, monkeypatch):
    """The wheel's PoCL on an AMD Zen 5 lists the processor and fails every build; specux must say opencl
    cannot run, and why, instead of failing mid-run."""
    opencl = fresh_opencl
    log = "error: unknown target CPU 'generic'"

    def fail_build(self, program):
        return False, None, log

    def fail_load(self, binary, program):
        raise AssertionError("nothing was cached, so nothing can be loaded")

    monkeypatch.setattr(opencl.OpenCLRuntime, "_build", fail_build)
    monkeypatch.setattr(opencl.OpenCLRuntime, "_load", fail_load)
    reason = opencl.probe()
    assert reason is not None and log in reason and "pocl-opencl-icd" in reason
    row = _rows()["opencl"]
    assert not row.available and row.unavailable_reason == reason and row.ops == ()
    with pytest.raises(BackendUnavailableError, match="unknown target CPU") as info:
        sfft.fft(np.ones(8, np.complex64), backend="opencl")
    assert info.value.reason == reason
    _host_fft_runs_on("cuda" if _rows()["cuda"].available else "cpu")


@pytest.mark.parametrize("value", ["7:3", "first"])
def test_an_opencl_device_variable_naming_no_device_is_a_reason_not_a_move(fresh_opencl, monkeypatch, value):
    monkeypatch.setenv("KERNELKIT_OPENCL_DEVICE", value)
    reason = fresh_opencl.probe()
    assert reason is not None and f"KERNELKIT_OPENCL_DEVICE={value!r}" in reason
    row = _rows()["opencl"]
    assert not row.available and row.unavailable_reason == reason
    with pytest.raises(BackendUnavailableError, match="KERNELKIT_OPENCL_DEVICE"):
        sfft.fft(np.ones(8, np.complex64), backend="opencl")
