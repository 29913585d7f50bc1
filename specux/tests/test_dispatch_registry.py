"""Backend registry and dispatch: availability reasons, "auto" routing, strict named backends, array
libraries."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import specux
from specux._backends import registry
from specux._backends.base import Backend


def test_backends_lists_every_backend_in_order_with_reasons():
    rows = specux.backends()
    assert [r.name for r in rows] == ["cuda", "metal", "opencl", "cpu"]
    for r in rows:
        assert r.available == (r.unavailable_reason is None)
        if not r.available:
            assert r.unavailable_reason and r.ops == ()
    cpu = rows[-1]
    assert cpu.available and {"fft", "stft", "istft", "melspectrogram", "mfcc", "lfcc", "fftconvolve"} <= set(
        cpu.ops
    )
    assert isinstance(registry.get("cpu"), Backend)


def test_unknown_backend_name_lists_the_names():
    with pytest.raises(ValueError, match="'cuda', 'metal', 'opencl', 'cpu'; got 'tpu'"):
        specux.stft(np.zeros(4096), backend="tpu")
    with pytest.raises(ValueError, match="got 'gpu'"):
        specux.fft.fft(np.zeros(8), backend="gpu")
    with pytest.raises(TypeError, match="backend must be a str"):
        specux.stft(np.zeros(4096), backend=None)


def test_named_unavailable_backend_raises_with_reason():
    unavailable = [r for r in specux.backends() if not r.available]
    if not unavailable:
        pytest.skip("every backend is available on this machine")
    for row in unavailable:
        with pytest.raises(specux.BackendUnavailableError, match=f"'{row.name}' is unavailable: ") as info:
            specux.fft.rfft(np.zeros(16), backend=row.name)
        assert info.value.reason == row.unavailable_reason and row.unavailable_reason in str(info.value)


def test_missing_module_reports_not_built_yet(monkeypatch):
    monkeypatch.setattr(registry, "NAMES", (*registry.NAMES, "vulkan"))
    monkeypatch.delitem(registry._probed, "vulkan", raising=False)
    try:
        assert registry._load("vulkan") == ("not built yet", None)
    finally:
        registry._probed.pop("vulkan", None)


class _FakeGpu:
    """A stand-in GPU backend that serves only the FFT family and owns nothing."""

    name = "cuda"
    ops = frozenset({"fft"})
    dtypes = frozenset({"float16", "float32", "float64"})

    def owns(self, x):
        return False

    def c2c(self, x, axis, inverse, scale):
        return (
            np.fft.ifft(x, axis=axis, norm="forward") * scale if inverse else np.fft.fft(x, axis=axis) * scale
        )

    def r2c(self, x, axis, scale):
        return np.fft.rfft(x, axis=axis) * scale

    def c2r(self, x, axis, n, scale):
        return np.fft.irfft(x, n=n, axis=axis, norm="forward") * scale


@pytest.fixture
def fake_cuda(monkeypatch):
    monkeypatch.setitem(registry._probed, "cuda", (None, _FakeGpu()))
    return registry._probed["cuda"][1]


def test_auto_with_numpy_prefers_cuda_only_for_operations_it_serves(fake_cuda):
    x = np.random.default_rng(0).standard_normal(64)
    assert registry.select(x, "auto", "fft") is fake_cuda
    assert registry.select(x, "auto", "stft").name == "cpu"
    np.testing.assert_allclose(specux.fft.rfft(x), np.fft.rfft(x))
    with pytest.raises(
        specux.UnsupportedOperationError,
        match=r"does not provide this operation; it is served by: (opencl, )?cpu$",
    ):
        specux.stft(x, n_fft=16, backend="cuda")


def test_auto_with_numpy_picks_cpu_here():
    if registry._load("cuda")[0] is None:
        pytest.skip("a CUDA device is present: auto picks cuda for numpy here")
    assert registry.select(np.zeros(8), "auto", "fft").name == "cpu"
    assert registry.select(np.zeros(8), "auto", "melspectrogram").name == "cpu"


def test_backend_without_an_operation_names_the_servers(require_backend):
    backend = require_backend("opencl")
    assert "estimate_tuning" not in backend.ops  # computed on the host only
    with pytest.raises(
        specux.UnsupportedOperationError,
        match=r"'opencl' does not provide this operation; it is served by: .*cpu",
    ):
        registry.select(np.zeros(4096), "opencl", "estimate_tuning", "specux.estimate_tuning")


def test_named_backend_is_strict_about_device_arrays():
    torch = pytest.importorskip("torch")
    t = torch.zeros(4096, device="meta")  # a tensor that is not in host memory
    with pytest.raises(specux.UnsupportedOperationError, match="without copying it through the host"):
        specux.stft(t, backend="cpu")
    with pytest.raises(
        specux.UnsupportedOperationError, match="no specux backend serves arrays on device 'meta'"
    ):
        specux.fft.fft(t)


def test_torch_cpu_tensors_come_back_as_torch_tensors():
    torch = pytest.importorskip("torch")
    y = torch.randn(2, 3000)
    D = specux.stft(y, n_fft=256, backend="cpu")
    assert isinstance(D, torch.Tensor) and D.dtype == torch.complex64 and D.shape == (2, 129, 47)
    np.testing.assert_allclose(D.numpy(), specux.stft(y.numpy(), n_fft=256), rtol=1e-6, atol=1e-6)
    back = specux.istft(D, length=3000)
    assert isinstance(back, torch.Tensor) and back.dtype == torch.float32
    for fn in (specux.melspectrogram, specux.mfcc, specux.lfcc):
        assert isinstance(fn(y), torch.Tensor)
    assert isinstance(specux.power_to_db(torch.rand(3, 4)), torch.Tensor)


def test_tensors_requiring_grad_are_differentiated_not_detached():
    torch = pytest.importorskip("torch")
    y = torch.randn(2000, requires_grad=True)
    # torch CPU tensors run through the specux custom ops (specux.torch): the gradient flows
    specux.stft(y, n_fft=256, output="power").sum().backward()
    assert y.grad is not None and y.grad.abs().sum() > 0
    with torch.no_grad():
        assert isinstance(specux.stft(y, n_fft=256), torch.Tensor)


def test_importing_specux_imports_no_gpu_library_nor_torch():
    gpu = "('torch', 'cupy', 'pyopencl', 'cuda', 'Metal')"
    code = (
        f"import sys, numpy as np, specux; print(sorted(m for m in {gpu} if m in sys.modules)); "
        # running with "auto" probes the cuda backend (which may load its driver bindings), never torch/cupy
        "specux.stft(np.zeros(4096)); specux.fft.fft(np.ones(8)); "
        "print(sorted(m for m in ('torch', 'cupy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "[]"], out.stdout + out.stderr


PUBLIC_OPS = {
    "stft": "stft", "istft": "istft", "melspectrogram": "melspectrogram", "mfcc": "mfcc", "lfcc": "lfcc",
    "fftconvolve": "fftconvolve", "cqt": "cqt", "vqt": "vqt", "chroma_stft": "chroma_stft",
    "chroma_cqt": "chroma_cqt", "estimate_tuning": "estimate_tuning", "pitch_tuning": "pitch_tuning",
}


@pytest.mark.parametrize("name,op", sorted(PUBLIC_OPS.items()))
def test_the_backends_line_of_each_docstring_is_the_registrys(name, op):
    doc = getattr(specux, name).__doc__
    assert "{backends}" not in doc
    assert registry.backends_line(op) in doc


def test_declared_backends_follow_what_the_build_has():
    assert registry.declared("fft") == ("cuda", "metal", "opencl", "cpu")
    assert registry.declared("chroma_stft") == ("cuda", "metal", "opencl", "cpu")
    assert registry.declared("chroma_cqt") == ("cuda", "metal", "opencl", "cpu")
    assert registry.declared("estimate_tuning") == ("cpu",)
    assert "cpu" in registry.declared("stft")
    line = registry.backends_line("fft")
    assert line.startswith("Backends: cuda (numpy and cupy arrays, torch CUDA tensors)")


def test_the_cpu_row_lists_the_host_only_functions():
    (cpu,) = [b for b in specux.backends() if b.name == "cpu"]
    for name in ("chroma_stft", "chroma_cqt", "estimate_tuning", "pitch_tuning", "piptrack"):
        assert name in cpu.ops
